/* libraid internals: one section per source file. */
#ifndef RAID_INTERNAL_H
#define RAID_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <pthread.h>

#include <liburing.h>

#include "raid/raid.h"

#define SECTOR_SHIFT 9
#define ARRAY_SIZE(a) (sizeof (a) / sizeof ((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define IS_POWER_OF_2(x) ((x) != 0 && ((x) & ((x) - 1)) == 0)

/* Alignment of every buffer the library allocates (O_DIRECT and ISA-L). */
#define RAID_BUF_ALIGN 4096

#define EXPORT __attribute__((visibility("default")))

/* ---- error.c ----------------------------------------------------------- */

/* Record ERRNUM (positive) and a formatted message for the calling thread;
 * returns -ERRNUM so callers can write "return set_error (EINVAL, ...);". */
int set_error(int errnum, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

/* ---- log.c ------------------------------------------------------------- */

void raid_log(int priority, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));
/* Like raid_log() but at most a few messages per second per call site
 * (KEY is a static counter of the call site), for the I/O path. */
struct ratelimit {
  _Atomic uint64_t window;      /* second the counter belongs to */
  _Atomic unsigned count;
};
void raid_log_ratelimited(struct ratelimit *rl, int priority, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* ---- queue.c ----------------------------------------------------------- */

/* Everything that completes through a queue starts with a task: io_uring
 * user_data, deferred completions and messages posted from other threads
 * all point at one.  FN runs on the queue's thread with the result. */
struct qtask {
  void (*fn)(struct qtask *t, int res);
  struct qtask *next;
  int res;
};

struct raid_queue {
  struct io_uring ring;
  int wake_fd;                   /* eventfd: other threads post here */
  int notify_fd;                 /* eventfd signalled on every CQE */
  bool wake_armed;               /* a poll on wake_fd is in the ring */
  struct qtask wake_task;
  uint64_t wake_buf;
  unsigned ring_in_flight;       /* SQEs submitted or prepared */
  struct qtask *ready_head, *ready_tail;  /* deferred completions */
  pthread_mutex_t post_lock;     /* guards posted_* */
  struct qtask *posted_head, *posted_tail;
  unsigned user_in_flight;       /* raid_aio_* requests not yet done */
  unsigned user_completed;       /* counter, for raid_queue_run() */
};

/* An SQE from Q's ring, submitting what is queued when the ring is full.
 * Never NULL.  Set its user_data with queue_sqe_task(). */
struct io_uring_sqe *queue_get_sqe(struct raid_queue *q);
void queue_sqe_task(struct raid_queue *q, struct io_uring_sqe *sqe, struct qtask *t);
/* Run T->fn(T, RES) from Q's run loop (never inline). */
void queue_defer(struct raid_queue *q, struct qtask *t, int res);
/* Same, from any thread: T will run on Q's thread.  Thread-safe. */
void queue_post(struct raid_queue *q, struct qtask *t, int res);
/* Arm an io_uring timeout of USEC microseconds completing T (res 0). */
void queue_timer(struct raid_queue *q, struct qtask *t, struct __kernel_timespec *ts,
                 unsigned usec);
/* Bookkeeping of user requests, done by array.c. */
void queue_user_start(struct raid_queue *q);
void queue_user_done(struct raid_queue *q);

/* ---- member.c and member back-ends --------------------------------------- */

enum mop { MOP_READ, MOP_WRITE, MOP_FLUSH, MOP_DISCARD, MOP_ZERO };

#define MIO_FUA 0x1u

/* One I/O to one member.  The submitter fills op, buf, offset (bytes from
 * the member's start), len, flags and done; the back-end calls done exactly
 * once, from the queue's run loop, with 0 or -errno.  Short transfers are
 * completed or turned into errors by the back-end. */
struct member_io {
  struct qtask task;             /* owned by the back-end while in flight */
  struct raid_member *m;
  enum mop op;
  unsigned flags;
  void *buf;
  uint64_t offset;
  size_t len;
  void (*done)(struct member_io *io, int res);
  void *priv;                    /* the submitter's */
  unsigned slot;                 /* the submitter's: role in the array */
  uint64_t aoff;                 /* the submitter's: array offset it serves */
  void *ctx;                     /* the submitter's: e.g. a RAID 5 stripe op */
  /* back-end scratch */
  size_t xfered;
  void *bounce;
  struct __kernel_timespec ts;
  struct raid_queue *q;
};

struct member_ops {
  const char *kind;
  /* Start IO on Q.  Completion always goes through the queue. */
  void (*submit)(struct raid_queue *q, struct member_io *io);
  void (*close)(struct raid_member *m);
};

struct raid_member {
  const struct member_ops *ops;
  char *name;
  uint64_t size;                 /* bytes */
  unsigned lbs;                  /* logical block size */
  unsigned mem_align;            /* buffer alignment the back-end needs */
  bool direct;
  bool readonly;
  void *priv;                    /* the back-end's */
  /* Read balancing and statistics (relaxed atomics, any thread). */
  _Atomic int in_flight;
  _Atomic uint64_t next_pos;     /* byte offset after the last read */
};

/* The member I/O whose task is T (back-ends put io->task in the ring). */
static inline struct member_io *
task_io(struct qtask *t)
{
  return (struct member_io *)((char *)t - offsetof(struct member_io, task));
}
/* "read", "write", "flush", "discard", "write zeroes", for messages. */
const char *mop_name(enum mop op);

/* Allocate a member with NAME (copied) and the back-end's OPS. */
struct raid_member *member_alloc(const struct member_ops *ops, const char *name);
/* Submit IO to member IO->m on Q: counts in_flight and dispatches to the
 * ops.  The back-end finishes it with member_complete(), which must run on
 * Q's thread from its run loop (a qtask), never inside submit. */
void member_submit(struct raid_queue *q, struct member_io *io);
void member_complete(struct member_io *io, int res);

/* Synchronous I/O for metadata: LEN bytes at member byte OFFSET, through a
 * private queue (never the caller's), flushed after a write.  0 or -errno,
 * with a message naming the member. */
int member_pio(struct raid_member *m, bool write, void *buf, size_t len,
               uint64_t offset);

/* member-file.c */
int member_file_open(const char *path, unsigned flags, struct raid_member **mp);

/* ---- mem.c ------------------------------------------------------------- */

/* RAID_BUF_ALIGN-aligned allocation; NULL on failure (errno not used). */
void *raid_buf_alloc(size_t len);
void raid_buf_free(void *p);
/* The same from a per-thread cache, for the hot path: put back with the
 * same LEN. */
void *raid_buf_get(size_t len);
void raid_buf_put(void *p, size_t len);
/* A shared read-only buffer of zeroes, at least LEN bytes (LEN <= RAID_MAX_REQUEST). */
const void *zero_buf(size_t len);

/* ---- geometry.c -------------------------------------------------------- */

/* Pure mappings from array sectors to member sectors, exactly md's. */
struct raid5_map {
  unsigned dd_idx;               /* member holding the data */
  unsigned pd_idx;               /* member holding the stripe's parity */
  uint64_t stripe;               /* stripe (row) number */
  uint64_t member_sector;        /* sector on the member, from data start */
};
void geo_raid0_map(unsigned raid_disks, unsigned chunk_sectors,
                   uint64_t sector, unsigned *disk, uint64_t *member_sector);
void geo_raid5_map(int layout, unsigned raid_disks, unsigned chunk_sectors,
                   uint64_t sector, struct raid5_map *out);
/* Parity member of STRIPE and the member holding data index DATA_IDX. */
unsigned geo_raid5_pd_idx(int layout, unsigned raid_disks, uint64_t stripe);
unsigned geo_raid5_dd_idx(int layout, unsigned raid_disks, unsigned pd_idx,
                          unsigned data_idx);
/* RAID 10 near: copy K (0..copies-1) of the chunk holding SECTOR. */
void geo_raid10_map(unsigned raid_disks, unsigned copies, unsigned chunk_sectors,
                    uint64_t sector, unsigned k, unsigned *disk,
                    uint64_t *member_sector);

/* ---- array.c ----------------------------------------------------------- */

enum req_op { REQ_READ, REQ_WRITE, REQ_FLUSH, REQ_DISCARD, REQ_ZERO };

struct raid_request;

struct personality {
  int level;
  const char *name;
  /* Check the geometry, set a->size; return 0 or set_error(). */
  int (*setup)(struct raid_array *a);
  /* Members that may be lost without losing data, at best. */
  unsigned (*max_degraded)(const struct raid_array *a);
  /* True when the in-sync members still hold all the data. */
  bool (*enough)(const struct raid_array *a);
  /* Start R (already validated).  Completion through req_put(). */
  void (*submit)(struct raid_request *r);
  void (*free)(struct raid_array *a);
};

extern const struct personality raid0_personality;
extern const struct personality raid1_personality;
extern const struct personality raid5_personality;
extern const struct personality raid10_personality;

struct raid_array {
  char *name;
  const struct personality *pers;
  int level;
  int layout;
  uint32_t chunk_size;           /* bytes */
  unsigned chunk_sectors;
  unsigned raid_disks;
  unsigned copies;               /* RAID 10 near copies; RAID 1 raid_disks */
  uint64_t moff[RAID_MAX_MEMBERS];  /* per member: where data starts, bytes */
  uint64_t member_size;          /* bytes of data per member */
  uint64_t size;                 /* array bytes */
  unsigned lbs;
  struct raid_member *members[RAID_MAX_MEMBERS];
  _Atomic int state[RAID_MAX_MEMBERS];  /* RAID_MEMBER_* */
  _Atomic unsigned degraded;
  _Atomic bool failed;
  void *priv;                    /* the personality's */
  struct array_meta *meta;       /* md superblocks, or NULL (metadata.c) */
};

/* raid_array_new() with a data offset per role (NULL: the config's). */
int array_new(const struct raid_config *cfg, struct raid_member *const *members,
              const uint64_t *moff, struct raid_array **arrayp);

/* A user request in flight.  It lives on the queue it was submitted to,
 * and everything about it runs on that queue's thread. */
struct raid_request {
  struct raid_array *a;
  struct raid_queue *q;
  enum req_op op;
  unsigned flags;
  uint8_t *buf;                  /* NULL for flush, discard, zero */
  uint64_t offset;               /* bytes into the array */
  size_t len;
  raid_completion_fn cb;
  void *opaque;
  int pending;                   /* references: sub-I/Os + submitter */
  int error;                     /* first error */
  struct raid_request *parent;   /* set for the pieces of a split request */
  struct qtask task;             /* for deferring the final completion */
};

/* Take a reference on R / drop one with the result of a sub-operation
 * (0 or -errno).  When the last is dropped the user's callback runs. */
void req_get(struct raid_request *r);
void req_put(struct raid_request *r, int res);

/* Record ERR (negative errno) as R's result unless one is recorded. */
static inline void req_error(struct raid_request *r, int err)
{
  if (r->error == 0)
    r->error = err;
}
static inline enum mop req_mop(const struct raid_request *r)
{
  static const enum mop m[] = { MOP_READ, MOP_WRITE, MOP_FLUSH, MOP_DISCARD, MOP_ZERO };
  return m[r->op];
}

/* A member I/O belonging to request R, for member SLOT of R's array;
 * DONE runs with the result.  Allocated, submitted, and freed after DONE
 * returns (DONE must not keep it).  The request holds a reference while
 * the I/O is in flight, dropped after DONE. */
struct member_io *req_mio(struct raid_request *r, unsigned slot, enum mop op,
                          void *buf, uint64_t member_offset, size_t len,
                          void (*done)(struct member_io *io, int res));
/* MEMBER_OFFSET above is relative to the data offset; this undoes it. */
static inline uint64_t mio_data_offset(const struct raid_array *a, const struct member_io *io)
{
  return io->offset - a->moff[io->slot];
}
void req_mio_submit(struct member_io *io);
/* The request a member I/O from req_mio() belongs to. */
static inline struct raid_request *mio_req(struct member_io *io) { return io->priv; }

/* Member SLOT is usable for reads / writes right now. */
static inline bool slot_ok(const struct raid_array *a, unsigned slot)
{
  return atomic_load_explicit(&a->state[slot], memory_order_relaxed) == RAID_MEMBER_IN_SYNC;
}

/* Mark SLOT faulty because of ERR at member byte OFFSET (from the data
 * offset) during WHAT ("read", "write", "flush"; NULL: on request); logs
 * once, updates degraded/failed. */
void array_member_failed(struct raid_array *a, unsigned slot, int err,
                         uint64_t offset, const char *what);
/* Flush every in-sync member, calling req_put() for each; shared by all
 * personalities. */
void array_flush_members(struct raid_request *r);

/* ---- metadata.c ------------------------------------------------------------ */

/* Write the superblocks after a state change (member failed): events are
 * bumped and every live member gets the new roles.  Synchronous. */
void meta_member_failed(struct raid_array *a, unsigned slot);
/* Clean shutdown: mark clean and write. */
void meta_stop(struct raid_array *a);

/* ---- balance.c ----------------------------------------------------------- */

/* md's read_balance(): pick one of N candidate copies (member slot and
 * member byte offset) for a read of LEN bytes.  A sequential reader stays
 * on its copy; otherwise the copy with the fewest requests in flight wins,
 * ties going to the nearest head position.  Returns the index into the
 * candidates, or -1 when none is usable. */
struct read_candidate {
  unsigned slot;
  uint64_t offset;
};
int read_balance(struct raid_array *a, const struct read_candidate *c, unsigned n,
                 size_t len);

/* ---- stripe-lock.c --------------------------------------------------------- */

/* Range locks on RAID 5 stripes: a lock covers [lo, hi) bytes within the
 * chunk-sized column range of stripe ROW.  Locks on overlapping ranges of
 * the same row are granted in order of request; a waiter is resumed on its
 * own queue's thread. */
struct stripe_lock {
  uint64_t row;
  uint32_t lo, hi;
  struct raid_queue *q;          /* where to resume */
  struct qtask task;             /* run when granted */
  struct stripe_lock *next;      /* in the bucket's list */
  bool granted;
};
struct stripe_lock_table;
struct stripe_lock_table *stripe_lock_table_new(void);
void stripe_lock_table_free(struct stripe_lock_table *t);
/* Request L (row, lo, hi, q, task.fn filled in).  L->task.fn runs on L->q
 * once granted (never inline). */
void stripe_lock(struct stripe_lock_table *t, struct stripe_lock *l);
void stripe_unlock(struct stripe_lock_table *t, struct stripe_lock *l);

#endif /* RAID_INTERNAL_H */
