/* Internals shared by ublk.c (the devices' lifecycle) and ublk-queue.c
 * (their I/O queues).  The public face is the ublk_* section of raidd.h. */
#ifndef RAIDD_UBLK_INTERNAL_H
#define RAIDD_UBLK_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
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
#ifndef UBLK_U_CMD_START_USER_RECOVERY
#define UBLK_U_CMD_GET_DEV_INFO _IOR('u', UBLK_CMD_GET_DEV_INFO, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_GET_PARAMS _IOR('u', UBLK_CMD_GET_PARAMS, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_START_USER_RECOVERY \
  _IOWR('u', UBLK_CMD_START_USER_RECOVERY, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_END_USER_RECOVERY \
  _IOWR('u', UBLK_CMD_END_USER_RECOVERY, struct ublksrv_ctrl_cmd)
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
  bool recoverable;             /* made with USER_RECOVERY_REISSUE, its record written */
  atomic_bool handover;         /* stopping to be taken back by the next raidd: the
                                 * queues serve no new request, the kernel holds it */
};

/* ---- ublk.c ----------------------------------------------------------------- */
/* One control command on device DEV_ID (D says which opcodes): the
 * kernel's result, 0 or -errno. */
int ublk_ctrl(const struct ublk_dev *d, unsigned legacy_op, unsigned op, uint32_t dev_id,
              uint64_t data0, void *addr, uint16_t len);
#define UCMD(d, OP, ...) ublk_ctrl(d, UBLK_CMD_##OP, UBLK_U_CMD_##OP, __VA_ARGS__)
/* A device structure for E (its reference taken over), not yet a kernel
 * device: NULL when out of memory (E's reference dropped). */
struct ublk_dev *ublk_dev_new(struct export *e);
/* What the device advertises for E (ADD_DEV's SET_PARAMS). */
void ublk_fill_params(const struct export *e, struct ublk_params *p);
/* Open /dev/ublkcN, start D's queue threads (each maps its descriptors
 * and fetches every tag) and wait until they are ready: 0, or -1 with
 * ERR (then teardown with step 2). */
int ublk_run_queues(struct ublk_dev *d, char *err, size_t errlen);
/* Undo from STEP down (3 started, 2 queues running, 1 added): frees D,
 * drops its export reference, removes its record once deleted.  STEP 0
 * with D's queues running is the handover (ublk_stop_all()): they stop,
 * the kernel device and its record stay. */
void ublk_teardown(struct ublk_dev *d, int step);
/* Put D in the list of raidd's devices. */
void ublk_list_add(struct ublk_dev *d);
/* The fingerprint of E's array kept in the kernel with its device
 * (ublksrv_flags, which the kernel keeps and never reads): the set UUID
 * folded to 64 bits.  Sets UUID (16 bytes) too; 0 when E has no superblock. */
uint64_t ublk_array_tag(const struct export *e, uint8_t uuid[16]);

/* ---- ublk-recover.c ------------------------------------------------------- */
/* The directory of the records: DIR/ublk, DIR the control socket's. */
void ublk_records_dir(const char *control);
/* Write D's record (its array's set UUID and name): 0, or -1 (logged). */
int ublk_record_write(const struct ublk_dev *d, const uint8_t uuid[16]);
/* Remove device ID's record (if there is one). */
void ublk_record_remove(int id);
/* Take back the device a killed raidd left for E's array, if its record
 * says there is one: 1 with *DP (E's reference taken, D listed), 0 when
 * there is none to take (E's reference left alone), -1 with ERR when
 * there was one and it could not be recovered (deleted; E's reference
 * dropped). */
int ublk_recover(struct export *e, struct ublk_dev **dp, char *err, size_t errlen);

/* ---- ublk-queue.c ---------------------------------------------------------- */
/* Start queue Q's thread: it maps its descriptors, sends a FETCH_REQ per
 * tag, says it is ready (dev->ready, Q->err) and serves requests until
 * dev->stop_fd reads and nothing is in flight.  0 or -errno. */
int ublk_queue_start(struct ublk_queue *q);
/* Join Q's thread (after writing dev->stop_fd) and free what it holds. */
void ublk_queue_join(struct ublk_queue *q);

#endif
