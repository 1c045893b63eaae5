/* Arrays as block devices through ublk (Linux >= 6.0, ublk_drv): the
 * devices' lifecycle, and the control verbs "ublk" and "unublk".
 *
 *   {"verb": "ublk", "name": NAME}                  -> {"ok": true, "device": "/dev/ublkbN"}
 *   {"verb": "unublk", "name": NAME, "force": false}
 *
 * A device is made through /dev/ublk-control, one io_uring URING_CMD
 * (IORING_SETUP_SQE128, the struct ublksrv_ctrl_cmd in the SQE) per step:
 *   ADD_DEV     the kernel allocates /dev/ublkcN (our end) with
 *               nr_hw_queues = raidd --threads and queue_depth =
 *               --ublk-queue-depth, each request at most UBLK_MAX_IO
 *   SET_PARAMS  the array's geometry (see set_params())
 *   the queue threads start (ublk-queue.c) and fetch every tag
 *   START_DEV   the kernel adds /dev/ublkbN (it waits for every FETCH)
 * and undone by
 *   STOP_DEV    /dev/ublkbN goes, after the requests in flight completed
 *   the queue threads end (their rings close: the FETCHes are cancelled)
 *   DEL_DEV     /dev/ublkcN goes (the kernel waits until we closed it)
 *
 * Each device holds a reference to its export (export_get()) for its
 * life: "raidctl stop" deletes an unused device with its array, refuses
 * one in use (assemble.c), or with --force deletes it first.  raidd's
 * shutdown (ublk_stop_all()), before it stops the arrays, deletes every
 * device not in use, and hands over those in use: their queues finish
 * what they serve and stop, the kernel holds every other request, and
 * the next raidd takes the device back (ublk-recover.c).
 *
 * Opcodes: the ioctl-encoded ones (UBLK_U_CMD_*, Linux >= 6.3) first; a
 * kernel that refuses ADD_DEV that way gets the legacy ones, for that
 * device and all it does (ublk-internal.h). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "raidd.h"
#include "control.h"
#include "ublk-internal.h"

static unsigned cfg_queues = 1, cfg_depth = UBLK_DEFAULT_QUEUE_DEPTH;
static pthread_mutex_t devs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ublk_dev *devs;

void
ublk_configure(unsigned queues, unsigned depth, const char *control)
{
  cfg_queues = queues ? queues : 1;
  cfg_depth = depth ? depth : UBLK_DEFAULT_QUEUE_DEPTH;
  ublk_records_dir(control);
}

uint64_t
ublk_array_tag(const struct export *e, uint8_t uuid[16])
{
  struct raid_superblock sb;
  uint64_t a, b;

  memset(uuid, 0, 16);
  if (raid_array_superblock(export_array(e), &sb) < 0)
    return 0;
  memcpy(uuid, sb.set_uuid, 16);
  memcpy(&a, uuid, 8);
  memcpy(&b, uuid + 8, 8);
  return a ^ b;
}

int
ublk_ctrl(const struct ublk_dev *d, unsigned legacy_op, unsigned op, uint32_t dev_id,
     uint64_t data0, void *addr, uint16_t len)
{
  struct io_uring ring;
  struct io_uring_sqe *sqe;
  struct io_uring_cqe *cqe;
  struct ublksrv_ctrl_cmd *c;
  int fd, rc;

  fd = open(UBLK_CONTROL, O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  rc = io_uring_queue_init(4, &ring, IORING_SETUP_SQE128);
  if (rc < 0) {
    close(fd);
    return rc;
  }
  sqe = io_uring_get_sqe(&ring);
  sqe128_clear(sqe);
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = fd;
  sqe->cmd_op = d->legacy ? legacy_op : op;
  c = sqe128_cmd(sqe);
  c->dev_id = dev_id;
  c->queue_id = (uint16_t)-1;
  c->data[0] = data0;
  c->addr = (uintptr_t)addr;
  c->len = len;
  rc = io_uring_submit_and_wait(&ring, 1);
  if (rc >= 0) {
    while ((rc = io_uring_wait_cqe(&ring, &cqe)) == -EINTR)
      ;
    if (rc == 0) {
      rc = cqe->res;
      io_uring_cqe_seen(&ring, cqe);
    }
  }
  io_uring_queue_exit(&ring);
  close(fd);
  return rc;
}

/* Log2 of a power of two. */
static uint8_t
shift_of(uint64_t v)
{
  uint8_t s = 0;

  while (v > 1) {
    v >>= 1;
    s++;
  }
  return s;
}

/* The largest power of two that divides V (V > 0). */
static uint64_t
pow2_part(uint64_t v)
{
  return v & -v;
}

/* What the device advertises, from the array:
 *   logical block size   the array's (its members' largest)
 *   physical block size  4096, or the logical one when larger (as NBD's
 *                        preferred block size, nbd_export_block_sizes())
 *   io_min               the chunk (RAID 0, 5, 10), else the physical size
 *   io_opt               the full data stripe, chunk x data members; ublk
 *                        takes a power of two, so when the stripe is not
 *                        one, the largest power of two dividing it
 *   discard              not on RAID 5, nor read-only (as NBD's SEND_TRIM)
 *   write zeroes         unless read-only (as NBD's SEND_WRITE_ZEROES)
 *   volatile cache, FUA  flush and FUA reach every member (as NBD's)
 *   read-only            for an array assembled --readonly */
void
ublk_fill_params(const struct export *e, struct ublk_params *p)
{
  struct raid_array *a = export_array(e);
  uint32_t lbs = raid_array_logical_block_size(a), pbs;
  uint64_t io_min, io_opt;
  int level = raid_array_level(a);

  if (lbs < 512 || (lbs & (lbs - 1)) || lbs > 4096)
    lbs = 512;
  pbs = lbs > 4096 ? lbs : 4096;
  if (level == RAID_LEVEL_0 || level == RAID_LEVEL_5 || level == RAID_LEVEL_10) {
    io_min = raid_array_chunk_size(a);
    io_opt = pow2_part(raid_array_stripe_width(a));
  }
  else
    io_min = io_opt = pbs;
  if (io_min < pbs || (io_min & (io_min - 1)))
    io_min = pbs;
  if (io_opt < io_min)
    io_opt = io_min;

  memset(p, 0, sizeof *p);
  p->len = sizeof *p;
  p->types = UBLK_PARAM_TYPE_BASIC;
  p->basic.attrs = UBLK_ATTR_VOLATILE_CACHE | UBLK_ATTR_FUA;
  if (export_readonly(e))
    p->basic.attrs |= UBLK_ATTR_READ_ONLY;
  p->basic.logical_bs_shift = shift_of(lbs);
  p->basic.physical_bs_shift = shift_of(pbs);
  p->basic.io_min_shift = shift_of(io_min);
  p->basic.io_opt_shift = shift_of(io_opt);
  p->basic.max_sectors = UBLK_MAX_IO >> 9;
  p->basic.dev_sectors = raid_array_size(a) >> 9;
  if (!export_readonly(e)) {
    p->types |= UBLK_PARAM_TYPE_DISCARD;
    p->discard.discard_granularity = pbs;
    p->discard.max_discard_segments = 1;
    if (level != RAID_LEVEL_5)
      p->discard.max_discard_sectors = 1u << 21;     /* 1 GiB */
    p->discard.max_write_zeroes_sectors = 1u << 21;
  }
}

void
ublk_teardown(struct ublk_dev *d, int step)
{
  unsigned i;
  int rc;

  if (step >= 3 && (rc = UCMD(d, STOP_DEV, d->id, 0, NULL, 0)) < 0)
    log_warn("ublkb%d: STOP_DEV: %s", d->id, strerror(-rc));
  if (d->stop_fd >= 0 && eventfd_write(d->stop_fd, 1) < 0)
    log_warn("ublkb%d: cannot tell its queues to stop: %m", d->id);
  for (i = 0; d->queues && i < d->nr_queues; i++)
    ublk_queue_join(&d->queues[i]);
  if (d->cdev >= 0)
    close(d->cdev);
  if (step >= 1 && (rc = UCMD(d, DEL_DEV, d->id, 0, NULL, 0)) < 0)
    log_warn("ublkb%d: DEL_DEV: %s", d->id, strerror(-rc));
  if (step >= 1)
    ublk_record_remove(d->id);
  if (d->stop_fd >= 0)
    close(d->stop_fd);
  free(d->queues);
  pthread_mutex_destroy(&d->lock);
  pthread_cond_destroy(&d->cond);
  export_put(d->e);
  free(d);
}

struct ublk_dev *
ublk_dev_new(struct export *e)
{
  struct ublk_dev *d = calloc(1, sizeof *d);

  if (d == NULL) {
    export_put(e);
    return NULL;
  }
  d->e = e;
  d->cdev = d->stop_fd = -1;
  d->id = -1;
  pthread_mutex_init(&d->lock, NULL);
  pthread_cond_init(&d->cond, NULL);
  return d;
}

int
ublk_run_queues(struct ublk_dev *d, char *err, size_t errlen)
{
  char path[64];
  unsigned i;
  int rc, tries;

  /* The kernel made /dev/ublkcN with the device; devtmpfs (or udev) may
   * take a moment to show it. */
  snprintf(path, sizeof path, "/dev/ublkc%d", d->id);
  for (tries = 0; (d->cdev = open(path, O_RDWR | O_CLOEXEC)) < 0 && errno == ENOENT &&
       tries < 50; tries++)
    usleep(20000);
  if (d->cdev < 0) {
    snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return -1;
  }
  d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  d->queues = calloc(d->nr_queues, sizeof *d->queues);
  if (d->stop_fd < 0 || d->queues == NULL) {
    snprintf(err, errlen, "out of memory (or file descriptors)");
    return -1;
  }
  for (i = 0; i < d->nr_queues; i++) {
    d->queues[i].dev = d;
    d->queues[i].id = i;
    if ((rc = ublk_queue_start(&d->queues[i])) < 0) {
      snprintf(err, errlen, "cannot start a thread for ublk queue %u: %s", i, strerror(-rc));
      return -1;
    }
  }
  pthread_mutex_lock(&d->lock);
  while (d->ready < d->nr_queues)
    pthread_cond_wait(&d->cond, &d->lock);
  pthread_mutex_unlock(&d->lock);
  for (i = 0; i < d->nr_queues; i++)
    if (d->queues[i].err < 0) {
      snprintf(err, errlen, "ublk device %d: queue %u could not start: %s (see raidd's log)",
               d->id, i, strerror(-d->queues[i].err));
      return -1;
    }
  return 0;
}

/* A ublk device for E (whose reference it takes): 0 with *DP, or -1 with
 * ERR saying why (E's reference dropped).  It is made with
 * UBLK_F_USER_RECOVERY and UBLK_F_USER_RECOVERY_REISSUE, its record
 * written as soon as it has a number (ublk-recover.c). */
static int
create(struct export *e, struct ublk_dev **dp, char *err, size_t errlen)
{
  struct ublksrv_ctrl_dev_info info;
  struct ublk_params params;
  struct ublk_dev *d;
  uint8_t uuid[16];
  uint64_t tag = ublk_array_tag(e, uuid);
  int rc, step = 0;

  if ((d = ublk_dev_new(e)) == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }

  /* The ioctl-encoded opcodes first; a kernel that knows only the legacy
   * ones refuses them, and gets those. */
  for (int legacy = 0; legacy < 2; legacy++) {
    d->legacy = legacy;
    memset(&info, 0, sizeof info);
    info.nr_hw_queues = cfg_queues;
    info.queue_depth = cfg_depth;
    info.max_io_buf_bytes = UBLK_MAX_IO;
    info.dev_id = (uint32_t)-1;
    info.flags = UBLK_F_USER_RECOVERY | UBLK_F_USER_RECOVERY_REISSUE;
    info.ublksrv_flags = tag;
    rc = UCMD(d, ADD_DEV, (uint32_t)-1, 0, &info, sizeof info);
    if (rc >= 0 || rc == -EPERM || rc == -EEXIST || rc == -ENOMEM || rc == -ENODEV)
      break;
  }
  if (rc < 0) {
    snprintf(err, errlen, "cannot create a ublk device for %s: ADD_DEV: %s",
             export_name(e), strerror(-rc));
    goto fail;
  }
  step = 1;
  d->id = (int)info.dev_id;
  d->nr_queues = info.nr_hw_queues;
  d->depth = info.queue_depth;
  if (info.max_io_buf_bytes < UBLK_MAX_IO) {
    snprintf(err, errlen, "ublk device %d takes requests of %u bytes at most: raidd needs %u",
             d->id, info.max_io_buf_bytes, UBLK_MAX_IO);
    goto fail;
  }
  if ((info.flags & (UBLK_F_USER_RECOVERY | UBLK_F_USER_RECOVERY_REISSUE)) !=
      (UBLK_F_USER_RECOVERY | UBLK_F_USER_RECOVERY_REISSUE))
    log_warn("ublkb%d: this kernel does not keep the device when raidd is killed "
             "(no UBLK_F_USER_RECOVERY_REISSUE)", d->id);
  else
    d->recoverable = ublk_record_write(d, uuid) == 0;

  ublk_fill_params(e, &params);
  if ((rc = UCMD(d, SET_PARAMS, d->id, 0, &params, sizeof params)) < 0) {
    snprintf(err, errlen, "ublk device %d: SET_PARAMS: %s", d->id, strerror(-rc));
    goto fail;
  }
  step = 2;
  if (ublk_run_queues(d, err, errlen) < 0)
    goto fail;
  /* The kernel adds /dev/ublkbN once every tag was fetched; reading its
   * partition table goes through our queues already. */
  if ((rc = UCMD(d, START_DEV, d->id, (uint64_t)getpid(), NULL, 0)) < 0) {
    snprintf(err, errlen, "ublk device %d: START_DEV: %s", d->id, strerror(-rc));
    goto fail;
  }
  *dp = d;
  return 0;

fail:
  ublk_teardown(d, step);
  return -1;
}

bool
ublk_available(char *err, size_t errlen)
{
  if (access(UBLK_CONTROL, F_OK) == 0)
    return true;
  snprintf(err, errlen, "ublk is not available: no %s (modprobe ublk_drv; needs Linux >= 6.0)",
           UBLK_CONTROL);
  return false;
}

int
ublk_dev_of(const struct export *e)
{
  struct ublk_dev *d;
  int id = -1;

  pthread_mutex_lock(&devs_lock);
  for (d = devs; d; d = d->next)
    if (d->e == e) {
      id = d->id;
      break;
    }
  pthread_mutex_unlock(&devs_lock);
  return id;
}

void
ublk_list_add(struct ublk_dev *d)
{
  pthread_mutex_lock(&devs_lock);
  d->next = devs;
  devs = d;
  pthread_mutex_unlock(&devs_lock);
}

/* Take E's device out of the list: it, or NULL. */
static struct ublk_dev *
unlist(const struct export *e)
{
  struct ublk_dev **pp, *d = NULL;

  pthread_mutex_lock(&devs_lock);
  for (pp = &devs; *pp; pp = &(*pp)->next)
    if ((*pp)->e == e) {
      d = *pp;
      *pp = d->next;
      break;
    }
  pthread_mutex_unlock(&devs_lock);
  return d;
}

int
ublk_remove(struct export *e, bool force, char *err, size_t errlen)
{
  struct ublk_dev *d;
  char path[64];
  int id = ublk_dev_of(e);

  if (id < 0) {
    snprintf(err, errlen, "array %s has no ublk device", export_name(e));
    return -1;
  }
  /* Mounted, or held by another exclusive user (a file system, md, LVM):
   * the kernel would let us pull the device from under it. */
  snprintf(path, sizeof path, "/dev/ublkb%d", id);
  if (!force && blockdev_in_use(path)) {
    snprintf(err, errlen, "%s (array %s) is in use (mounted?): unmount it first, "
             "or use --force", path, export_name(e));
    return -1;
  }
  d = unlist(e);
  if (d == NULL) {
    snprintf(err, errlen, "array %s has no ublk device", export_name(e));
    return -1;
  }
  ublk_teardown(d, 3);
  log_event(RAID_LOG_INFO, export_name(e), NULL, "ublk-removed", "%s: %s removed",
            export_name(e), path);
  return 0;
}

void
ublk_stop_all(void)
{
  struct ublk_dev *d;
  char name[256], path[64];
  int id;

  for (;;) {
    pthread_mutex_lock(&devs_lock);
    d = devs;
    if (d)
      devs = d->next;
    pthread_mutex_unlock(&devs_lock);
    if (d == NULL)
      return;
    id = d->id;
    snprintf(name, sizeof name, "%s", export_name(d->e));
    snprintf(path, sizeof path, "/dev/ublkb%d", id);
    /* A device in use (mounted, held) is not deleted, which would wait
     * for it to be let go: it is handed over, as a killed raidd leaves
     * it, and the next raidd takes it back (a restart, an upgrade). */
    if (d->recoverable && blockdev_in_use(path)) {
      atomic_store(&d->handover, true);
      ublk_teardown(d, 0);
      log_event(RAID_LOG_INFO, name, NULL, "ublk-left",
                "%s: %s is in use: left to the next raidd, which takes it back when it "
                "assembles %s (the kernel holds its requests until then)", name, path, name);
      continue;
    }
    ublk_teardown(d, 3);
    log_info("%s: %s removed", name, path);
  }
}

/* ---- the control verbs ------------------------------------------------------ */

json_object *
do_ublk(json_object *req)
{
  const char *name = ctl_get_string(req, "name");
  struct ublk_dev *d;
  struct export *e;
  char err[512], dev[64];
  json_object *r;
  int id, rc;

  if ((e = export_get(name)) == NULL)
    return ctl_fail("array %s is not running", name);
  if ((id = ublk_dev_of(e)) >= 0) {
    export_put(e);
    return ctl_fail("array %s already has a ublk device: /dev/ublkb%d", name, id);
  }
  if (!ublk_available(err, sizeof err)) {
    export_put(e);
    return ctl_fail("%s", err);
  }
  if (raid_array_is_failed(export_array(e))) {
    export_put(e);
    return ctl_fail("array %s has failed: no block device for it", name);
  }
  /* The device a killed raidd left for this array, if there is one;
   * else (or when it could not be taken back, and was deleted) a new one. */
  rc = ublk_recover(e, &d, err, sizeof err);      /* takes E unless it returns 0 */
  if (rc < 0)
    return ctl_fail("%s", err);
  if (rc == 0 && create(e, &d, err, sizeof err) < 0) {   /* takes E */
    log_err("%s: %s", name, err);
    return ctl_fail("%s", err);
  }
  snprintf(dev, sizeof dev, "/dev/ublkb%d", d->id);
  if (rc == 0) {
    ublk_list_add(d);
    log_event(RAID_LOG_INFO, name, NULL, "ublk-added",
              "%s: served as %s (%u queue%s of %u requests)", name, dev, d->nr_queues,
              d->nr_queues == 1 ? "" : "s", d->depth);
  }
  r = ctl_ok();
  json_object_object_add(r, "name", json_object_new_string(name));
  json_object_object_add(r, "device", json_object_new_string(dev));
  if (rc > 0)
    json_object_object_add(r, "recovered", json_object_new_boolean(true));
  return r;
}

json_object *
do_unublk(json_object *req)
{
  const char *name = ctl_get_string(req, "name");
  struct export *e;
  char err[512];
  int rc;

  if ((e = export_get(name)) == NULL)
    return ctl_fail("array %s is not running", name);
  rc = ublk_remove(e, ctl_get_bool(req, "force"), err, sizeof err);
  export_put(e);
  return rc < 0 ? ctl_fail("%s", err) : ctl_ok();
}
