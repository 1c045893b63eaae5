/* ublk devices that outlive raidd: their records, and taking them back.
 *
 * Every device is made with UBLK_F_USER_RECOVERY and
 * UBLK_F_USER_RECOVERY_REISSUE (ublk.c's create()).  When raidd dies
 * without deleting it (kill -9, a crash), the kernel keeps the device: it
 * requeues the requests raidd held, quiesces the disk (state
 * UBLK_S_DEV_QUIESCED) and holds every new request, so a file system
 * mounted on /dev/ublkbN only waits.  The next raidd takes the device
 * back for the same array:
 *   GET_DEV_INFO          the device is still there, quiesced, and is the
 *                         array's (the fingerprint below)
 *   GET_PARAMS            its size and block size are still the array's
 *   START_USER_RECOVERY   refused (EBUSY) until the dead raidd's
 *                         /dev/ublkcN is closed: retried
 *   the queue threads     open /dev/ublkcN, map the descriptors, FETCH
 *                         every tag (ublk-queue.c, as for a new device)
 *   END_USER_RECOVERY     with our PID: the kernel reissues the held
 *                         requests to us, and the device is live again.
 *
 * What ties a device to its array is a record, one file a device in
 * DIR/ublk (DIR: the control socket's directory, /run/raidd by default),
 * named ublkbN, holding the array's set UUID and its name:
 *   uuid 0123abcd:...:...:...
 *   name md0
 * written when the device is added, removed when it is deleted on purpose
 * (unublk, stop, raidd's SIGTERM, a failed start).  The kernel keeps a
 * fingerprint of the same UUID with the device (ublksrv_flags, which it
 * stores and never reads), so a record can never hand one array the
 * device of another, nor a device another program made under a number
 * that was ours once.
 *
 * The device comes back when its array is assembled (ublk_assembled(),
 * from the control socket's "assemble", which raidctl assemble and the
 * configured arrays at raidd's start go through) or on "raidctl ublk
 * NAME".  A record whose device is gone is removed; a device that cannot
 * be taken back (stopped already, its geometry no longer the array's, a
 * step refused) is deleted, loudly, so that a new one can be made; one
 * still served by a live process is left alone. */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "raidd.h"
#include "control.h"
#include "ublk-internal.h"

/* How long a killed raidd's device may take to be quiesced: the kernel
 * does it at once when raidd's rings close, or, when every request was in
 * raidd's hands, at the requests' timeout (30 s). */
#define QUIESCE_WAIT_MS 45000

static char records[4096];      /* DIR/ublk; empty: no records kept */

static void
uuid_format(const uint8_t u[16], char *buf, size_t len)
{
  snprintf(buf, len, "%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x",
           u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
           u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

static int
uuid_parse(const char *s, uint8_t u[16])
{
  unsigned i = 0, v;

  while (*s && i < 16) {
    if (*s == ':') {
      s++;
      continue;
    }
    if (sscanf(s, "%2x", &v) != 1)
      return -1;
    u[i++] = (uint8_t)v;
    s += 2;
  }
  return i == 16 ? 0 : -1;
}

/* Record ID's file: its UUID and array name.  0, or -1 (no such record,
 * or not one of ours). */
static int
record_read(int id, uint8_t uuid[16], char *name, size_t namelen)
{
  char path[4200], line[512], *nl;
  bool have_uuid = false;
  FILE *f;

  snprintf(path, sizeof path, "%s/ublkb%d", records, id);
  if ((f = fopen(path, "re")) == NULL)
    return -1;
  snprintf(name, namelen, "?");
  while (fgets(line, sizeof line, f)) {
    if ((nl = strchr(line, '\n')))
      *nl = '\0';
    if (strncmp(line, "uuid ", 5) == 0)
      have_uuid = uuid_parse(line + 5, uuid) == 0;
    else if (strncmp(line, "name ", 5) == 0)
      snprintf(name, namelen, "%.255s", line + 5);
  }
  fclose(f);
  return have_uuid ? 0 : -1;
}

int
ublk_record_write(const struct ublk_dev *d, const uint8_t uuid[16])
{
  char path[4200], tmp[4300], u[40];
  FILE *f;

  if (records[0] == '\0')
    return 0;
  if (mkdir(records, 0755) < 0 && errno != EEXIST) {
    log_warn("ublkb%d: cannot create %s for its record: %m; the device will not "
             "outlive raidd", d->id, records);
    return -1;
  }
  snprintf(path, sizeof path, "%s/ublkb%d", records, d->id);
  snprintf(tmp, sizeof tmp, "%s.new", path);
  uuid_format(uuid, u, sizeof u);
  if ((f = fopen(tmp, "we")) == NULL ||
      fprintf(f, "uuid %s\nname %s\n", u, export_name(d->e)) < 0 ||
      fclose(f) != 0 || rename(tmp, path) < 0) {
    log_warn("ublkb%d: cannot write its record %s: %m; the device will not outlive raidd",
             d->id, path);
    unlink(tmp);
    return -1;
  }
  return 0;
}

void
ublk_record_remove(int id)
{
  char path[4200];

  if (records[0] == '\0' || id < 0)
    return;
  snprintf(path, sizeof path, "%s/ublkb%d", records, id);
  if (unlink(path) < 0 && errno != ENOENT)
    log_warn("cannot remove %s: %m", path);
}

/* GET_DEV_INFO for device ID, PROBE->legacy found on the way: 0 or -errno. */
static int
dev_info(struct ublk_dev *probe, int id, struct ublksrv_ctrl_dev_info *info)
{
  int rc = -EINVAL;

  for (int legacy = 0; legacy < 2; legacy++) {
    probe->legacy = legacy;
    memset(info, 0, sizeof *info);
    rc = UCMD(probe, GET_DEV_INFO, id, 0, info, sizeof *info);
    if (rc >= 0 || rc == -ENODEV || rc == -EPERM)
      break;
  }
  return rc;
}

/* The record whose UUID is UUID: its device number, NAME the array name
 * it holds; -1 when none. */
static int
record_find(const uint8_t uuid[16], char *name, size_t namelen)
{
  struct dirent *de;
  uint8_t u[16];
  DIR *dir;
  int id, found = -1;
  char c;

  if (records[0] == '\0' || (dir = opendir(records)) == NULL)
    return -1;
  while (found < 0 && (de = readdir(dir)) != NULL)
    if (sscanf(de->d_name, "ublkb%d%c", &id, &c) == 1 && id >= 0 &&
        record_read(id, u, name, namelen) == 0 && memcmp(u, uuid, 16) == 0)
      found = id;
  closedir(dir);
  return found;
}

/* Delete device ID that cannot be taken back, its record with it. */
static void
give_up(struct ublk_dev *probe, int id, const char *array, const char *why)
{
  int rc = UCMD(probe, DEL_DEV, id, 0, NULL, 0);

  if (rc < 0 && rc != -ENODEV)
    log_err("%s: /dev/ublkb%d, left by a raidd that did not stop, cannot be recovered (%s), "
            "nor deleted: DEL_DEV: %s", array, id, why, strerror(-rc));
  else
    log_err("%s: /dev/ublkb%d, left by a raidd that did not stop, cannot be recovered (%s): "
            "deleted; what was mounted on it saw errors", array, id, why);
  ublk_record_remove(id);
}

static int64_t
now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
ublk_recover(struct export *e, struct ublk_dev **dp, char *err, size_t errlen)
{
  struct ublksrv_ctrl_dev_info info;
  struct ublk_params have, want;
  struct ublk_dev probe = { .id = -1 }, *d;
  const char *name = export_name(e);
  char recname[256];
  uint8_t uuid[16];
  uint64_t tag = ublk_array_tag(e, uuid);
  int64_t deadline = now_ms() + QUIESCE_WAIT_MS;
  int id, rc;

  if (tag == 0 || (id = record_find(uuid, recname, sizeof recname)) < 0)
    return 0;
  for (;;) {
    if ((rc = dev_info(&probe, id, &info)) == -ENODEV) {
      log_info("%s: the record of /dev/ublkb%d (array %s) is stale: no such device any "
               "more; removed", name, id, recname);
      ublk_record_remove(id);
      return 0;
    }
    if (rc < 0) {
      log_warn("%s: cannot ask the kernel about /dev/ublkb%d: GET_DEV_INFO: %s; its "
               "record is removed, the device left alone", name, id, strerror(-rc));
      ublk_record_remove(id);
      return 0;
    }
    if (info.ublksrv_flags != tag || !(info.flags & UBLK_F_USER_RECOVERY)) {
      log_warn("%s: /dev/ublkb%d is not the device raidd made for this array (another "
               "program's?): its record is removed, the device left alone", name, id);
      ublk_record_remove(id);
      return 0;
    }
    if (info.state == UBLK_S_DEV_DEAD) {
      give_up(&probe, id, name, "it was stopped");
      return 0;
    }
    if (info.state == UBLK_S_DEV_QUIESCED) {
      /* Still the array's size and block size? */
      ublk_fill_params(e, &want);
      memset(&have, 0, sizeof have);
      have.len = sizeof have;
      if ((rc = UCMD(&probe, GET_PARAMS, id, 0, &have, sizeof have)) < 0 ||
          have.basic.dev_sectors != want.basic.dev_sectors ||
          have.basic.logical_bs_shift != want.basic.logical_bs_shift) {
        give_up(&probe, id, name, rc < 0 ? "GET_PARAMS failed"
                : "its size or block size is no longer the array's");
        return 0;
      }
      rc = UCMD(&probe, START_USER_RECOVERY, id, 0, NULL, 0);
      if (rc == 0)
        break;
      if (rc != -EBUSY) {
        snprintf(err, errlen, "START_USER_RECOVERY: %s", strerror(-rc));
        give_up(&probe, id, name, err);
        return 0;
      }
      /* The dead raidd's /dev/ublkcN is not closed yet. */
    }
    if (now_ms() > deadline) {
      log_err("%s: /dev/ublkb%d is %s by PID %d after %d s: not taken back; its record is "
              "removed, the device left alone", name, id,
              info.state == UBLK_S_DEV_LIVE ? "still served" : "still held open",
              info.ublksrv_pid, QUIESCE_WAIT_MS / 1000);
      ublk_record_remove(id);
      return 0;
    }
    usleep(50000);
  }

  /* Ours again: the queues, as for a new device, then the kernel hands
   * the held requests over. */
  if (export_readonly(e) && !(have.basic.attrs & UBLK_ATTR_READ_ONLY))
    log_warn("%s: /dev/ublkb%d was writable and the array is read-only now: writes to it "
             "fail", name, id);
  if ((d = ublk_dev_new(e)) == NULL) {
    snprintf(err, errlen, "out of memory");
    UCMD(&probe, DEL_DEV, id, 0, NULL, 0);
    ublk_record_remove(id);
    return -1;
  }
  d->id = id;
  d->recoverable = true;
  d->legacy = probe.legacy;
  d->nr_queues = info.nr_hw_queues;
  d->depth = info.queue_depth;
  if (ublk_run_queues(d, err, errlen) < 0 ||
      ((rc = UCMD(d, END_USER_RECOVERY, id, (uint64_t)getpid(), NULL, 0)) < 0 &&
       snprintf(err, errlen, "END_USER_RECOVERY: %s", strerror(-rc)) > 0)) {
    char why[512];

    snprintf(why, sizeof why, "%s", err);
    ublk_teardown(d, 3);        /* drops E */
    log_err("%s: /dev/ublkb%d, left by a raidd that did not stop, could not be recovered "
            "(%s): deleted", name, id, why);
    snprintf(err, errlen, "/dev/ublkb%d, left by a raidd that did not stop, could not be "
             "recovered (%s): deleted; raidctl ublk %s makes a new one", id, why, name);
    return -1;
  }
  ublk_list_add(d);
  log_event(RAID_LOG_INFO, name, NULL, "ublk-recovered",
            "%s: /dev/ublkb%d recovered: served again (%u queue%s of %u requests), the "
            "requests held since the last raidd died reissued", name, id, d->nr_queues,
            d->nr_queues == 1 ? "" : "s", d->depth);
  *dp = d;
  return 1;
}

void
ublk_assembled(const char *name, json_object *reply)
{
  struct ublk_dev *d;
  struct export *e;
  char err[512], dev[64];
  int rc;

  if (records[0] == '\0' || access(UBLK_CONTROL, F_OK) < 0 ||
      (e = export_get(name)) == NULL)
    return;
  if (ublk_dev_of(e) >= 0 || raid_array_is_failed(export_array(e))) {
    export_put(e);
    return;
  }
  rc = ublk_recover(e, &d, err, sizeof err);      /* takes E unless it returns 0 */
  if (rc == 0)
    export_put(e);
  if (rc <= 0)
    return;
  snprintf(dev, sizeof dev, "/dev/ublkb%d", d->id);
  json_object_object_add(reply, "device", json_object_new_string(dev));
  json_object_object_add(reply, "recovered", json_object_new_boolean(true));
}

/* At raidd's start: say which devices wait for their array, forget the
 * records of those that are gone. */
static void
records_check(void)
{
  struct ublksrv_ctrl_dev_info info;
  struct ublk_dev probe = { .id = -1 };
  struct dirent *de;
  char name[256], c, u[40];
  uint8_t uuid[16];
  DIR *dir;
  int id, rc;

  if (access(UBLK_CONTROL, F_OK) < 0 || (dir = opendir(records)) == NULL)
    return;
  while ((de = readdir(dir)) != NULL) {
    if (sscanf(de->d_name, "ublkb%d%c", &id, &c) != 1 || id < 0 ||
        record_read(id, uuid, name, sizeof name) < 0)
      continue;
    uuid_format(uuid, u, sizeof u);
    if ((rc = dev_info(&probe, id, &info)) == -ENODEV) {
      log_info("ublk: the record of /dev/ublkb%d (array %s) is stale: no such device any "
               "more; removed", id, name);
      ublk_record_remove(id);
    }
    else if (rc == 0)
      log_info("ublk: /dev/ublkb%d, left by a raidd that did not stop, waits for array %s "
               "(UUID %s): it is taken back when the array is assembled", id, name, u);
  }
  closedir(dir);
}

void
ublk_records_dir(const char *control)
{
  const char *slash = control ? strrchr(control, '/') : NULL;

  if (slash == NULL)
    snprintf(records, sizeof records, "ublk");
  else if (slash == control)
    snprintf(records, sizeof records, "/ublk");
  else
    snprintf(records, sizeof records, "%.*s/ublk", (int)(slash - control), control);
  records_check();
}
