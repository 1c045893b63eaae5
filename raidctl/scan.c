/* Finding members on the system's block devices, and assembling from them:
 *   examine --scan                         (examine.c prints what is found)
 *   assemble --scan [NAME] [--timeout S] [--no-degraded] [--readonly] [--force]
 *
 * Devices are enumerated with libudev (the "block" subsystem, from sysfs,
 * so no udevd is needed), those libblkid calls linux_raid_member are read
 * (read-only) and grouped by set UUID.
 *
 * assemble --scan is md's boot-time assembly with its last-resort timer
 * (mdadm-last-resort@.timer): an array whose active members are all there
 * is started at once; one that misses some is waited for, rescanning every
 * second, for --timeout seconds (30, md's), and then started degraded if
 * it can run, loudly, unless --no-degraded.  An array raidd runs already
 * takes back its members that were missing when it started and have
 * returned (raidd's "incremental" verb, raid_array_readd_check()): they
 * are rebuilt.  With --force, each array is assembled as assemble --force
 * does (members behind taken back when the others cannot run it). */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <blkid.h>
#include <json-c/json.h>
#include <libudev.h>

#include "raidctl.h"

#define ARRAY_SIZE(a) (sizeof (a) / sizeof ((a)[0]))

int
read_superblock(const char *path, struct raid_superblock *sb)
{
  struct raid_member *m;
  int r;

  r = raid_member_open(path, RAID_MEMBER_READONLY | RAID_MEMBER_BUFFERED, &m);
  if (r < 0)
    return r;
  r = raid_superblock_read(m, sb);
  raid_member_close(m);
  return r;
}

static bool
is_raid_member(const char *devnode)
{
  blkid_probe pr = blkid_new_probe_from_filename(devnode);
  const char *type = NULL;
  bool yes = false;

  if (pr == NULL)
    return false;
  blkid_probe_enable_superblocks(pr, 1);
  blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
  if (blkid_do_safeprobe(pr) == 0 &&
      blkid_probe_lookup_value(pr, "TYPE", &type, NULL) == 0)
    yes = strcmp(type, "linux_raid_member") == 0;
  blkid_free_probe(pr);
  return yes;
}

int
scan_members(struct scanned **out, size_t *nout)
{
  struct udev *udev = udev_new();
  struct udev_enumerate *en;
  struct udev_list_entry *e;
  struct scanned *found = NULL;
  size_t n = 0;

  *out = NULL;
  *nout = 0;
  if (udev == NULL) {
    error("libudev: cannot start");
    return -1;
  }
  en = udev_enumerate_new(udev);
  udev_enumerate_add_match_subsystem(en, "block");
  udev_enumerate_scan_devices(en);
  udev_list_entry_foreach(e, udev_enumerate_get_list_entry(en)) {
    struct udev_device *d = udev_device_new_from_syspath(udev, udev_list_entry_get_name(e));
    const char *node = d ? udev_device_get_devnode(d) : NULL;

    if (node && is_raid_member(node)) {
      struct scanned *f = realloc(found, (n + 1) * sizeof *found);

      if (f == NULL)
        abort();
      found = f;
      if (read_superblock(node, &found[n].sb) == 0) {
        found[n].path = strdup(node);
        n++;
      }
      else if (opt.verbose > 1)
        info("%s: %s", node, raid_get_error());
    }
    else if (node && opt.verbose > 1)
      info("%s: not an md version-1 member", node);
    udev_device_unref(d);
  }
  udev_enumerate_unref(en);
  udev_unref(udev);
  *out = found;
  *nout = n;
  return 0;
}

void
scan_free(struct scanned *s, size_t n)
{
  size_t i;

  for (i = 0; i < n; i++)
    free(s[i].path);
  free(s);
}

/* ---- assemble --scan ------------------------------------------------------------ */

static const char *
short_name(const char *set_name)
{
  const char *colon = strchr(set_name, ':');
  return colon ? colon + 1 : set_name;
}

static bool
array_has_member(json_object *a, const char *path)
{
  json_object *ms = jget(a, "members");
  size_t i, n = ms ? json_object_array_length(ms) : 0;

  for (i = 0; i < n; i++) {
    const char *p = json_object_get_string(jget(json_object_array_get_idx(ms, i), "path"));
    if (p && strcmp(p, path) == 0)
      return true;
  }
  return false;
}

/* One array found on the devices. */
struct group {
  uint8_t uuid[16];
  char name[64];
  char *paths[RAID_MAX_MEMBERS * 2];
  unsigned n;
  unsigned expected, present;   /* active roles: last recorded, here and current */
  bool done;
};

/* Group the devices by set UUID; count the roles the freshest superblock
 * calls active and how many of them are here with current events. */
static unsigned
group_members(struct scanned *s, size_t ns, const char *only, struct group *g, unsigned max)
{
  unsigned ng = 0, i, k;
  size_t j;

  for (j = 0; j < ns; j++) {
    const char *name = short_name(s[j].sb.set_name);

    if (only && strcmp(only, name) != 0)
      continue;
    for (i = 0; i < ng && memcmp(g[i].uuid, s[j].sb.set_uuid, 16) != 0; i++)
      ;
    if (i == ng) {
      if (ng == max)
        continue;
      memset(&g[ng], 0, sizeof g[ng]);
      memcpy(g[ng].uuid, s[j].sb.set_uuid, 16);
      snprintf(g[ng].name, sizeof g[ng].name, "%s", name);
      ng++;
    }
    if (g[i].n < ARRAY_SIZE(g[i].paths))
      g[i].paths[g[i].n++] = s[j].path;
  }
  for (i = 0; i < ng; i++) {
    const struct raid_superblock *fresh = NULL;
    bool active[RAID_MAX_MEMBERS] = { false }, here[RAID_MAX_MEMBERS] = { false };

    for (k = 0; k < g[i].n; k++)
      for (j = 0; j < ns; j++)
        if (s[j].path == g[i].paths[k] && (!fresh || s[j].sb.events > fresh->events))
          fresh = &s[j].sb;
    for (k = 0; k < fresh->max_dev; k++)
      if (fresh->dev_roles[k] < fresh->raid_disks && fresh->dev_roles[k] < RAID_MAX_MEMBERS)
        active[fresh->dev_roles[k]] = true;
    for (k = 0; k < g[i].n; k++)
      for (j = 0; j < ns; j++) {
        const struct raid_superblock *sb = &s[j].sb;
        unsigned role;

        /* Current, or one update behind as raid_array_assemble() takes it. */
        if (s[j].path != g[i].paths[k] || sb->dev_number >= fresh->max_dev ||
            (sb->events != fresh->events && !raid_superblock_one_behind(sb, fresh)))
          continue;
        role = fresh->dev_roles[sb->dev_number];
        if (role < fresh->raid_disks && role < RAID_MAX_MEMBERS)
          here[role] = true;
      }
    for (k = 0; k < RAID_MAX_MEMBERS; k++) {
      g[i].expected += active[k];
      g[i].present += active[k] && here[k];
    }
  }
  return ng;
}

int
assemble_scan(const char *only, int timeout, bool no_degraded, bool readonly,
              bool force)
{
  uint8_t handled[64][16];      /* arrays dealt with: not again on a rescan */
  unsigned nhandled = 0;
  struct group g[64];
  struct scanned *s = NULL;
  size_t ns = 0;
  unsigned ng = 0, i, k, left;
  time_t start = time(NULL);
  bool said_waiting = false, any = false;
  int status = EXIT_OK;

  for (;;) {
    json_object *req, *st;

    scan_free(s, ns);
    if (scan_members(&s, &ns) < 0)
      return EXIT_FAIL;
    req = json_object_new_object();
    json_object_object_add(req, "verb", json_object_new_string("status"));
    st = raidd_call(req);
    json_object_put(req);
    if (st == NULL) {
      scan_free(s, ns);
      return EXIT_FAIL;
    }
    ng = group_members(s, ns, only, g, ARRAY_SIZE(g));
    left = 0;
    for (i = 0; i < ng; i++) {
      char uuid[40];
      json_object *a;

      for (k = 0; k < nhandled && memcmp(handled[k], g[i].uuid, 16) != 0; k++)
        ;
      if (k < nhandled) {
        g[i].done = true;
        continue;
      }
      uuid_format(g[i].uuid, uuid);
      if ((a = status_array(st, "uuid", uuid)) != NULL) {
        /* Running: members of it that are back are taken back. */
        for (k = 0; k < g[i].n; k++) {
          json_object *r;

          if (array_has_member(a, g[i].paths[k]))
            continue;
          req = json_object_new_object();
          json_object_object_add(req, "verb", json_object_new_string("incremental"));
          json_object_object_add(req, "member", json_object_new_string(g[i].paths[k]));
          r = raidd_call(req);          /* prints why not */
          json_object_put(req);
          if (r && opt.json)
            scan_report_readd(g[i].paths[k], r);
          else if (r && json_object_get_boolean(jget(r, "already")))
            printf("raidctl: %s: %s is back in it already\n",
                   json_object_get_string(jget(r, "name")), g[i].paths[k]);
          else if (r)
            printf("raidctl: %s: re-added %s in role %d; it is being rebuilt\n",
                   json_object_get_string(jget(r, "name")), g[i].paths[k],
                   json_object_get_int(jget(r, "role")));
          json_object_put(r);
        }
        any = true;
        g[i].done = true;
        if (nhandled < ARRAY_SIZE(handled))
          memcpy(handled[nhandled++], g[i].uuid, 16);
        continue;
      }
      if (g[i].present < g[i].expected) {
        left++;
        continue;
      }
      any = true;
      g[i].done = true;
      if (nhandled < ARRAY_SIZE(handled))
        memcpy(handled[nhandled++], g[i].uuid, 16);
      if (assemble_in_raidd(g[i].name, g[i].paths, (int)g[i].n, false, readonly,
                            force) != EXIT_OK)
        status = EXIT_FAIL;
    }
    json_object_put(st);
    if (left == 0 || time(NULL) - start >= timeout)
      break;
    if (!said_waiting) {
      for (i = 0; i < ng; i++)
        if (!g[i].done)
          info("%s: %u of %u members present; waiting up to %d s for the others "
               "(--timeout)", g[i].name, g[i].present, g[i].expected, timeout);
      said_waiting = true;
    }
    sleep(1);
  }

  /* The last resort: start what can run without its missing members. */
  for (i = 0; i < ng; i++) {
    if (g[i].done)
      continue;
    any = true;
    if (no_degraded) {
      warning("%s: only %u of %u members present; not started (--no-degraded)",
              g[i].name, g[i].present, g[i].expected);
      status = EXIT_FAIL;
      continue;
    }
    warning("%s: only %u of %u members present after %d s; starting it DEGRADED "
            "(last resort)", g[i].name, g[i].present, g[i].expected, timeout);
    if (assemble_in_raidd(g[i].name, g[i].paths, (int)g[i].n, true, readonly,
                          force) != EXIT_OK)
      status = EXIT_FAIL;
  }
  scan_free(s, ns);
  if (!any) {
    if (only)
      error("no members of an array named %s found on the block devices", only);
    else
      info("no md members found on the block devices");
    return only ? EXIT_FAIL : EXIT_OK;
  }
  return status;
}
