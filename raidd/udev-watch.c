/* Members whose block device disappears are failed, as md does when a
 * disk is pulled: a libudev monitor on the kernel's uevents for the
 * "block" subsystem, on a thread of its own.  A "remove" event carries the
 * device number; every running array holding a member on that device
 * fails it (spares and replacements are removed).  The kernel source is
 * used rather than udevd's so that it works where no udevd runs (CI,
 * containers); the events are the same.
 *
 * An "add" or "change" event (a disk plugged in, a loop device attached,
 * a partition table reread) may bring back a member of a running array
 * that started without it: incremental.c decides, from the device's
 * superblock read through a read-only open, and re-adds it (md's udev
 * rule runs mdadm --incremental for such devices); or, for an array of
 * the configuration file that does not run yet, boot.c starts it once all
 * its members are there. */
#include <config.h>

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <sys/sysmacros.h>

#include <libudev.h>

#include "raidd.h"
#include "control.h"
#include "udev-watch.h"
#include "boot.h"
#include "events.h"

static struct udev *udev;
static struct udev_monitor *mon;
static pthread_t thread;
static int stop_pipe[2] = { -1, -1 };
static bool running;
static bool re_add;

struct gone {
  uint64_t devnum;
  const char *devname;
};

static void
fail_on_array(struct export *e, void *opaque)
{
  struct gone *g = opaque;
  struct raid_array *a = export_array(e);
  struct raid_member_info info[RAID_MAX_MEMBERS * 3];
  char names[RAID_MAX_MEMBERS * 3][256];
  int roles[RAID_MAX_MEMBERS * 3], states[RAID_MAX_MEMBERS * 3];
  unsigned i, n, k = 0;

  /* Copy first: failing or removing changes the list. */
  n = raid_array_members(a, info, RAID_MAX_MEMBERS * 3);
  for (i = 0; i < n && i < RAID_MAX_MEMBERS * 3; i++)
    if (info[i].name && info[i].devnum == g->devnum) {
      snprintf(names[k], sizeof names[k], "%s", info[i].name);
      roles[k] = info[i].role;
      states[k++] = info[i].state;
    }
  for (i = 0; i < k; i++) {
    bool drop = states[i] == RAID_MEMBER_SPARE || states[i] == RAID_MEMBER_REPLACEMENT;

    log_warn("%s: member %s (%u:%u, %s) was removed from the system; %s",
             export_name(e), names[i], major(g->devnum), minor(g->devnum),
             g->devname ? g->devname : "?", drop ? "removing it" : "failing it");
    events_post("DeviceDisappeared", export_name(e), names[i]);
    if (drop)
      raid_array_remove_member(a, names[i], 0);
    else if (roles[i] >= 0 && states[i] != RAID_MEMBER_FAULTY)
      raid_array_fail_member(a, roles[i]);
  }
}

static void
is_degraded(struct export *e, void *opaque)
{
  if (raid_array_degraded(export_array(e)) > 0)
    *(bool *)opaque = true;
}

/* A device appeared or changed: if it is a member that was missing when
 * its running array started, put it back.  What can be found out without
 * control_lock is (whether any array misses a member, the device's
 * superblock, its array): a device that hangs stalls this thread, not the
 * control socket.  Anything else is none of our business (quiet). */
static void
came_back(struct udev_device *d)
{
  const char *devnode = udev_device_get_devnode(d);
  const char *devtype = udev_device_get_devtype(d);
  char array[64] = "", err[1024];
  struct raid_superblock *sb;
  bool degraded = false;
  int role;

  if (devnode == NULL || devtype == NULL ||
      (strcmp(devtype, "disk") != 0 && strcmp(devtype, "partition") != 0))
    return;
  if (re_add)
    exports_foreach(is_degraded, &degraded);
  if ((!degraded && !boot_configured()) || member_in_use(devnode) != NULL)
    return;
  sb = malloc(sizeof *sb);
  if (sb == NULL)
    return;
  /* Read-only, past the page cache: what the writer of the device put there. */
  if (raid_superblock_read_path(devnode, 0, sb) == 0) {
    if (array_of_superblock(sb, array, sizeof array) == 0) {
      control_lock();
      if (re_add &&
          member_return(devnode, true, array, sizeof array, &role, err, sizeof err) < 0 &&
          array[0])
        log_warn("%s: %s", array, err);   /* ours, but not taken back */
      control_unlock();
    }
    else
      boot_device_appeared(devnode, sb);   /* of a configured array not running? */
  }
  free(sb);
}

static void *
watch_thread(void *arg)
{
  struct pollfd p[2] = {
    { .fd = udev_monitor_get_fd(mon), .events = POLLIN },
    { .fd = stop_pipe[0], .events = POLLIN },
  };

  for (;;) {
    struct udev_device *d;
    const char *action;

    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (p[1].revents)
      break;
    if (!(p[0].revents & POLLIN))
      continue;
    d = udev_monitor_receive_device(mon);
    if (d == NULL)
      continue;
    action = udev_device_get_action(d) ? udev_device_get_action(d) : "";
    if (strcmp(action, "remove") == 0 && major(udev_device_get_devnum(d)) != 0) {
      struct gone g = { udev_device_get_devnum(d), udev_device_get_devnode(d) };
      exports_foreach(fail_on_array, &g);
    }
    else if (strcmp(action, "add") == 0 || strcmp(action, "change") == 0)
      came_back(d);
    udev_device_unref(d);
  }
  return NULL;
}

int
udev_watch_start(bool readd)
{
  int err;

  re_add = readd;
  udev = udev_new();
  if (udev == NULL)
    return -ENOMEM;
  mon = udev_monitor_new_from_netlink(udev, "kernel");
  if (mon == NULL ||
      udev_monitor_filter_add_match_subsystem_devtype(mon, "block", NULL) < 0 ||
      udev_monitor_enable_receiving(mon) < 0 || pipe(stop_pipe) < 0) {
    log_warn("udev: cannot watch for removed devices: %m; members that "
             "disappear are failed only when their I/O fails");
    udev_watch_stop();
    return -EIO;
  }
  if ((err = pthread_create(&thread, NULL, watch_thread, NULL)) != 0) {
    udev_watch_stop();
    return -err;
  }
  running = true;
  return 0;
}

void
udev_watch_stop(void)
{
  if (stop_pipe[1] >= 0) {
    if (running && write(stop_pipe[1], "x", 1) == 1)
      pthread_join(thread, NULL);
    running = false;
    close(stop_pipe[0]);
    close(stop_pipe[1]);
    stop_pipe[0] = stop_pipe[1] = -1;
  }
  if (mon)
    udev_monitor_unref(mon);
  if (udev)
    udev_unref(udev);
  mon = NULL;
  udev = NULL;
}
