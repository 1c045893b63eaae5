/* The I/O queues of a ublk device: one thread each.
 *
 * A queue thread owns an io_uring made with IORING_SETUP_SQE128 (a
 * URING_CMD carries its struct ublksrv_io_cmd in the big SQE) and a
 * struct raid_queue of its own.  It starts by sending the kernel one
 * UBLK_IO_FETCH_REQ per tag, each naming that tag's buffer (the classic
 * copy mode: the kernel copies a write's data into the buffer before it
 * hands the request over, and a read's data out of it when we commit).
 * When a FETCH completes, the tag's request is described in the shared
 * descriptor array (mmap of /dev/ublkcN): op, flags, sector, length.  It
 * goes to the array with raid_aio_*(); when the array completes it, the
 * tag goes back to the kernel with UBLK_IO_COMMIT_AND_FETCH_REQ, which
 * carries the result and asks for the tag's next request in one command.
 *
 * One thread, one wait: the ring also holds a poll of raid_queue_fd()
 * (re-armed after each raid_queue_run()) and one of the device's stop
 * eventfd.  So io_uring_submit_and_wait() sleeps until the kernel hands a
 * request over, the array completes one, or the device is stopping.
 *
 * The kernel runs every command of a queue on the thread that sent its
 * first FETCH (ubq_daemon): this thread, from start to end.
 *
 * Stopping: ublk.c sends STOP_DEV first (the kernel removes the disk,
 * waiting for the requests in flight, which this thread keeps serving),
 * then writes the stop eventfd.  The thread submits what commits it has
 * left, waits for the array to finish anything still running on its
 * raid_queue, and closes its ring: that cancels the FETCHes still pending
 * (older kernels complete them with UBLK_IO_RES_ABORT at STOP_DEV). */
#include <config.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "raidd.h"
#include "ublk-internal.h"

/* user_data of the two polls; a tag's is its number. */
#define UD_RAID_POLL (1ull << 32)
#define UD_STOP_POLL ((1ull << 32) + 1)

static struct io_uring_sqe *
get_sqe(struct ublk_queue *q)
{
  struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

  if (sqe == NULL) {            /* full: send what is there, then take one */
    io_uring_submit(&q->ring);
    sqe = io_uring_get_sqe(&q->ring);
  }
  return sqe;
}

/* Send tag T to the kernel: FETCH (the first time) or COMMIT_AND_FETCH
 * with RESULT. */
static void
send_tag(struct ublk_tag *t, bool commit, int result)
{
  struct ublk_queue *q = t->q;
  struct io_uring_sqe *sqe = get_sqe(q);
  struct ublksrv_io_cmd *cmd;

  if (sqe == NULL) {            /* cannot happen: the ring has room for every tag */
    log_err("ublkb%d: queue %u: no room in the ring for tag %u", q->dev->id, q->id, t->tag);
    return;
  }
  sqe128_clear(sqe);
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = q->dev->cdev;
  if (q->dev->legacy)
    sqe->cmd_op = commit ? UBLK_IO_COMMIT_AND_FETCH_REQ : UBLK_IO_FETCH_REQ;
  else
    sqe->cmd_op = commit ? UBLK_U_IO_COMMIT_AND_FETCH_REQ : UBLK_U_IO_FETCH_REQ;
  sqe->user_data = t->tag;
  cmd = sqe128_cmd(sqe);
  cmd->q_id = q->id;
  cmd->tag = t->tag;
  cmd->result = result;
  cmd->addr = (uintptr_t)t->buf;
  t->in_kernel = true;
}

static void
poll_fd(struct ublk_queue *q, int fd, uint64_t ud)
{
  struct io_uring_sqe *sqe = get_sqe(q);

  if (sqe == NULL)
    return;
  io_uring_prep_poll_add(sqe, fd, POLLIN);
  sqe->user_data = ud;
}

/* The array completed tag T's request. */
static void
done(void *opaque, int result)
{
  struct ublk_tag *t = opaque;

  t->serving = false;
  t->q->serving--;
  if (result == 0 && (t->op == UBLK_IO_OP_READ || t->op == UBLK_IO_OP_WRITE))
    result = (int)t->len;
  send_tag(t, true, result);
}

/* The kernel handed tag T a request: give it to the array. */
static void
serve(struct ublk_tag *t)
{
  struct ublk_queue *q = t->q;
  const struct ublksrv_io_desc *iod = &q->iods[t->tag];
  struct raid_array *a = export_array(q->dev->e);
  uint64_t off = iod->start_sector << 9;
  unsigned flags = (iod->op_flags & UBLK_IO_F_FUA) ? RAID_REQ_FUA : 0;
  int rc;

  t->op = ublksrv_get_op(iod);
  t->len = iod->nr_sectors << 9;
  if (t->op != UBLK_IO_OP_READ && t->op != UBLK_IO_OP_FLUSH && export_readonly(q->dev->e))
    rc = -EROFS;
  else if ((t->op == UBLK_IO_OP_READ || t->op == UBLK_IO_OP_WRITE) && t->len > UBLK_MAX_IO)
    rc = -EINVAL;               /* above max_sectors: the kernel splits first */
  else {
    switch (t->op) {
    case UBLK_IO_OP_READ:
      rc = raid_aio_read(q->rq, a, t->buf, t->len, off, done, t);
      break;
    case UBLK_IO_OP_WRITE:
      rc = raid_aio_write(q->rq, a, t->buf, t->len, off, flags, done, t);
      break;
    case UBLK_IO_OP_FLUSH:
      rc = raid_aio_flush(q->rq, a, done, t);
      break;
    case UBLK_IO_OP_DISCARD:
      rc = raid_aio_discard(q->rq, a, t->len, off, done, t);
      break;
    case UBLK_IO_OP_WRITE_ZEROES:
      rc = raid_aio_write_zeroes(q->rq, a, t->len, off, flags, done, t);
      break;
    default:
      rc = -EOPNOTSUPP;
      break;
    }
  }
  if (rc == 0) {
    t->serving = true;
    q->serving++;
  }
  else
    send_tag(t, true, rc);
}

/* Set up: the descriptors, the ring, the raid queue, the buffers, one
 * FETCH per tag.  0 or -errno (logged). */
static int
setup(struct ublk_queue *q)
{
  struct ublk_dev *d = q->dev;
  long page = sysconf(_SC_PAGESIZE);
  size_t max_cmd = ((size_t)UBLK_MAX_QUEUE_DEPTH * sizeof(struct ublksrv_io_desc) + page - 1)
                   / page * page;
  void *p;
  unsigned i;
  int rc;

  q->iods_len = ((size_t)d->depth * sizeof(struct ublksrv_io_desc) + page - 1) / page * page;
  p = mmap(NULL, q->iods_len, PROT_READ, MAP_SHARED | MAP_POPULATE, d->cdev,
           UBLKSRV_CMD_BUF_OFFSET + (off_t)q->id * max_cmd);
  if (p == MAP_FAILED) {
    rc = -errno;
    log_err("ublkb%d: queue %u: cannot map its descriptors: %m", d->id, q->id);
    return rc;
  }
  q->iods = p;
  /* Every tag in the kernel at once, the two polls, room to spare. */
  rc = io_uring_queue_init(2 * d->depth + 8, &q->ring, IORING_SETUP_SQE128);
  if (rc < 0) {
    log_err("ublkb%d: queue %u: io_uring_queue_init: %s", d->id, q->id, strerror(-rc));
    return rc;
  }
  q->have_ring = true;
  if ((rc = raid_queue_new(256, &q->rq)) < 0) {
    log_err("ublkb%d: queue %u: %s", d->id, q->id, raid_get_error());
    return rc;
  }
  q->tags = calloc(d->depth, sizeof *q->tags);
  if (q->tags == NULL)
    return -ENOMEM;
  for (i = 0; i < d->depth; i++) {
    q->tags[i].q = q;
    q->tags[i].tag = i;
    if ((rc = posix_memalign(&q->tags[i].buf, (size_t)page, UBLK_MAX_IO)) != 0) {
      q->tags[i].buf = NULL;
      log_err("ublkb%d: queue %u: no memory for the buffers", d->id, q->id);
      return -rc;
    }
  }
  for (i = 0; i < d->depth; i++)
    send_tag(&q->tags[i], false, -1);
  poll_fd(q, raid_queue_fd(q->rq), UD_RAID_POLL);
  poll_fd(q, d->stop_fd, UD_STOP_POLL);
  rc = io_uring_submit(&q->ring);
  if (rc < 0) {
    log_err("ublkb%d: queue %u: cannot send its fetch commands: %s", d->id, q->id,
            strerror(-rc));
    return rc;
  }
  return 0;
}

static void *
queue_thread(void *arg)
{
  struct ublk_queue *q = arg;
  struct ublk_dev *d = q->dev;
  bool stopping = false, raid_armed = true;
  struct io_uring_cqe *cqe;
  unsigned head, n;
  int rc;

  q->err = setup(q);
  pthread_mutex_lock(&d->lock);
  d->ready++;
  pthread_cond_broadcast(&d->cond);
  pthread_mutex_unlock(&d->lock);
  if (q->err < 0)
    return NULL;

  for (;;) {
    rc = io_uring_submit_and_wait(&q->ring, 1);
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      log_err("ublkb%d: queue %u: io_uring: %s; the queue stops", d->id, q->id, strerror(-rc));
      break;
    }
    n = 0;
    io_uring_for_each_cqe(&q->ring, head, cqe) {
      n++;
      if (cqe->user_data == UD_RAID_POLL)
        raid_armed = false;
      else if (cqe->user_data == UD_STOP_POLL)
        stopping = true;
      else if (cqe->user_data < d->depth) {
        struct ublk_tag *t = &q->tags[cqe->user_data];

        t->in_kernel = false;
        /* Handing the device over: a request that comes now stays with
         * the kernel, which gives it to the next raidd (REISSUE). */
        if (cqe->res == UBLK_IO_RES_OK && !(stopping && atomic_load(&d->handover)))
          serve(t);
        else if (cqe->res != UBLK_IO_RES_ABORT && !stopping)
          log_warn("ublkb%d: queue %u: tag %u: the kernel refused a command: %s", d->id,
                   q->id, t->tag, strerror(-cqe->res));
      }
    }
    io_uring_cq_advance(&q->ring, n);
    while ((rc = raid_queue_run(q->rq, 0)) > 0)
      ;
    if (rc < 0)
      log_err("ublkb%d: queue %u: raid_queue_run: %s", d->id, q->id, raid_get_error());
    if (stopping && q->serving == 0 && raid_queue_in_flight(q->rq) == 0)
      break;
    if (!raid_armed) {
      poll_fd(q, raid_queue_fd(q->rq), UD_RAID_POLL);
      raid_armed = true;
    }
  }
  io_uring_submit(&q->ring);    /* the last commits */
  /* Only this thread may run its raid queue: finish what is on it. */
  while (raid_queue_in_flight(q->rq) > 0 && raid_queue_run(q->rq, 1) >= 0)
    ;
  io_uring_submit(&q->ring);
  return NULL;
}

int
ublk_queue_start(struct ublk_queue *q)
{
  int rc = pthread_create(&q->thread, NULL, queue_thread, q);

  if (rc != 0)
    return -rc;
  q->started = true;
  return 0;
}

void
ublk_queue_join(struct ublk_queue *q)
{
  unsigned i;

  if (q->started)
    pthread_join(q->thread, NULL);
  q->started = false;
  if (q->have_ring)
    io_uring_queue_exit(&q->ring);    /* cancels the FETCHes still pending */
  q->have_ring = false;
  if (q->rq && raid_queue_in_flight(q->rq) == 0)
    raid_queue_free(q->rq);
  else if (q->rq)
    log_err("ublkb%d: queue %u: requests still in flight on its raid queue: kept",
            q->dev->id, q->id);
  q->rq = NULL;
  if (q->iods)
    munmap((void *)q->iods, q->iods_len);
  q->iods = NULL;
  if (q->tags)
    for (i = 0; i < q->dev->depth; i++)
      free(q->tags[i].buf);
  free(q->tags);
  q->tags = NULL;
}
