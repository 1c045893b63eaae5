/* Internals shared by ublk.c (the devices' lifecycle) and ublk-queue.c
 * (their I/O queues).  The public face is the ublk_* section of raidd.h. */
#ifndef RAIDD_UBLK_INTERNAL_H
#define RAIDD_UBLK_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/ublk_cmd.h>
#include <liburing.h>

#include "raidd.h"

/* Debian 12's linux/ublk_cmd.h is 6.1's: the legacy opcodes only.  The
 * ioctl-encoded ones (Linux >= 6.3; the only ones a kernel built without
 * CONFIG_BLKDEV_UBLK_LEGACY_OPCODES accepts) are the same numbers wrapped
 * in _IOWR('u', NR, struct), defined here when the header lacks them. */
#ifndef UBLK_U_CMD_ADD_DEV
#define UBLK_U_CMD_ADD_DEV _IOWR('u', UBLK_CMD_ADD_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_DEL_DEV _IOWR('u', UBLK_CMD_DEL_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_START_DEV _IOWR('u', UBLK_CMD_START_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_STOP_DEV _IOWR('u', UBLK_CMD_STOP_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_SET_PARAMS _IOWR('u', UBLK_CMD_SET_PARAMS, struct ublksrv_ctrl_cmd)
#endif
#ifndef UBLK_U_IO_FETCH_REQ
#define UBLK_U_IO_FETCH_REQ _IOWR('u', UBLK_IO_FETCH_REQ, struct ublksrv_io_cmd)
#define UBLK_U_IO_COMMIT_AND_FETCH_REQ \
  _IOWR('u', UBLK_IO_COMMIT_AND_FETCH_REQ, struct ublksrv_io_cmd)
#endif

#define UBLK_CONTROL "/dev/ublk-control"
#define UBLK_MAX_IO (512u << 10)   /* bytes of one request: each tag's buffer */

struct ublk_dev;

/* A big SQE (IORING_SETUP_SQE128): 128 bytes, the command's 80 from
 * sqe->cmd on.  liburing declares cmd as an array of 0 and GCC then sees
 * every byte past 64 as out of bounds: the pointer goes through an empty
 * asm, which GCC cannot see through. */
static inline void *
sqe128_bytes(struct io_uring_sqe *sqe)
{
  void *p = sqe;

  __asm__("" : "+r"(p));
  return p;
}

static inline void
sqe128_clear(struct io_uring_sqe *sqe)
{
  memset(sqe128_bytes(sqe), 0, 2 * sizeof *sqe);
}

static inline void *
sqe128_cmd(struct io_uring_sqe *sqe)
{
  return (char *)sqe128_bytes(sqe) + offsetof(struct io_uring_sqe, cmd);
}

/* One tag: a request slot of a queue, with its buffer. */
struct ublk_tag {
  struct ublk_queue *q;
  unsigned tag;
  void *buf;                    /* UBLK_MAX_IO bytes, the kernel copies in/out */
  bool in_kernel;               /* a FETCH or COMMIT_AND_FETCH is pending */
  bool serving;                 /* handed to the array, not yet committed */
  uint8_t op;                   /* the request's UBLK_IO_OP_* */
  uint32_t len;                 /* its bytes */
};

/* One queue: a thread, its io_uring (the ublk commands and a poll of the
 * raid queue's fd), its raid_queue, the kernel's descriptors of its tags. */
struct ublk_queue {
  struct ublk_dev *dev;
  unsigned id;
  pthread_t thread;
  bool started;
  struct io_uring ring;
  bool have_ring;
  struct raid_queue *rq;
  const struct ublksrv_io_desc *iods;   /* mmap of /dev/ublkcN */
  size_t iods_len;
  struct ublk_tag *tags;
  unsigned serving;             /* tags handed to the array */
  int err;                      /* setup: 0 or -errno */
};

struct ublk_dev {
  struct ublk_dev *next;
  struct export *e;             /* a reference, held for the device's life */
  int id;                       /* N of /dev/ublkbN */
  int cdev;                     /* /dev/ublkcN */
  bool legacy;                  /* the kernel takes the legacy opcodes only */
  unsigned nr_queues, depth;
  struct ublk_queue *queues;
  int stop_fd;                  /* eventfd: the queues end when it reads */
  pthread_mutex_t lock;         /* ready, below */
  pthread_cond_t cond;
  unsigned ready;               /* queues set up (or failed: their err) */
};

/* ---- ublk-queue.c ---------------------------------------------------------- */
/* Start queue Q's thread: it maps its descriptors, sends a FETCH_REQ per
 * tag, says it is ready (dev->ready, Q->err) and serves requests until
 * dev->stop_fd reads and nothing is in flight.  0 or -errno. */
int ublk_queue_start(struct ublk_queue *q);
/* Join Q's thread (after writing dev->stop_fd) and free what it holds. */
void ublk_queue_join(struct ublk_queue *q);

#endif
