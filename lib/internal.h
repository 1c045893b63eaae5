/* libraid internals: one section per source file.
 *
 * The library is a building of floors (lib/README.md draws it), and a
 * floor calls its own and the floors below it, never one above:
 *
 *   top      manage.c blocking.c      membership verbs, blocking wrappers
 *   raid/    the personalities        (and geometry, parity, balancing)
 *   sync/    the sync engine          resync, recovery, scrub
 *   md/      md's on-disk format      superblocks, create, assemble, bitmap,
 *                                     safe mode
 *   core     array.c request.c roles.c stats-array.c
 *   member/  the member back-ends
 *   base     error log mem queue stats events range-lock daemon
 *
 * Up only through a door, an ops table the floor above fills in: the core
 * reaches the personalities through struct personality, md/ through
 * struct meta_ops (a->mops) and its write gates (struct write_gate in
 * a->gate[]), the sync engine through struct sync_ops (a->sops).  No
 * personality calls md/ (none knows a superblock or a bitmap: RAID 1's
 * write-behind goes through the core's req_gates_hold()).  Member
 * back-ends see only the base.
 *
 * This header is the floors from the base to the core, and the doors.
 * Each floor above has its own header for the floors above it:
 * md/meta.h, sync/engine.h, raid/levels.h (and md/md.h, sync/sync.h,
 * raid/raid5.h, raid/raid1-10.h for a floor's own files); no file
 * includes an upper floor's header.  tests/floors.sh checks both, from
 * the objects' symbols and the sources (make check: tests/test-floors.sh).
 */
#ifndef RAID_INTERNAL_H
#define RAID_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <pthread.h>

#include <liburing.h>

#include "raid/raid.h"
#include "array-size.h"

#define SECTOR_SHIFT 9
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define IS_POWER_OF_2(x) ((x) != 0 && ((x) & ((x) - 1)) == 0)
/* A chunk size libraid takes (bytes, in 64 bits so that a size read from
 * disk cannot wrap first): a power of two from RAID_CHUNK_MIN to
 * RAID_CHUNK_MAX, as md's. */
#define CHUNK_SIZE_VALID(c) \
  (IS_POWER_OF_2(c) && (c) >= RAID_CHUNK_MIN && (c) <= RAID_CHUNK_MAX)
/* One of md's six RAID 5 layouts (RAID_LAYOUT_LEFT_ASYMMETRIC 0 to
 * RAID_LAYOUT_PARITY_LAST 5; an int, or a superblock's uint32_t). */
#define RAID5_LAYOUT_VALID(l) \
  ((int64_t)(l) >= RAID_LAYOUT_LEFT_ASYMMETRIC && (int64_t)(l) <= RAID_LAYOUT_PARITY_LAST)

/* Alignment of every buffer the library allocates (O_DIRECT and ISA-L). */
#define RAID_BUF_ALIGN 4096

#define EXPORT __attribute__((visibility("default")))

/* The RAM and simulated members keep their data in memory that stands for
 * a disk.  When clients read and write the same bytes at once, the copy in
 * and the copy out race as DMA to one sector would; which request wins is
 * the RAID layer's business, not a bug in these copies.  Under
 * ThreadSanitizer they are bracketed by DMA_BEGIN()/DMA_END(), which turn
 * its checks off for this thread meanwhile: a suppression (tests/tsan.supp)
 * still costs a full race report per access, and under load those reports
 * slowed raidd's workers until the stress test saw requests hang. */
#if defined(__SANITIZE_THREAD__)
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#define DMA_BEGIN() \
  (AnnotateIgnoreReadsBegin(__FILE__, __LINE__), AnnotateIgnoreWritesBegin(__FILE__, __LINE__))
#define DMA_END() \
  (AnnotateIgnoreWritesEnd(__FILE__, __LINE__), AnnotateIgnoreReadsEnd(__FILE__, __LINE__))
#else
#define DMA_BEGIN() ((void)0)
#define DMA_END() ((void)0)
#endif

/* ThreadSanitizer's acquire and release on an address of our choosing
 * (queue.c: ring memory handed from a freed ring to a new one). */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define TSAN_ACQUIRE(addr) __tsan_acquire(addr)
#define TSAN_RELEASE(addr) __tsan_release(addr)
#else
#define TSAN_ACQUIRE(addr) ((void)(addr))
#define TSAN_RELEASE(addr) ((void)(addr))
#endif

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
  pthread_mutex_t post_lock;     /* guards posted_*; held while a poster
                                    writes wake_fd (queue_post()) */
  struct qtask *posted_head, *posted_tail;
  unsigned user_in_flight;       /* raid_aio_* requests not yet done */
  unsigned user_completed;       /* counter, for raid_queue_run() */
  /* Changes whenever the queue hands SQEs to the kernel, reaps
   * completions, or raid_queue_run() waits or returns (time may pass
   * before the next submission), and differs from every other queue's
   * (an id in the high 32 bits): what is learned while it holds one value
   * (a file's size, in member/file.c) was learned before every SQE
   * prepared meanwhile reaches the kernel, and after every completion
   * reaped so far was done. */
  uint64_t epoch;
};

/* An SQE from Q's ring, submitting what is queued when the ring is full.
 * Never NULL.  Set its user_data with queue_sqe_task(). */
struct io_uring_sqe *queue_get_sqe(struct raid_queue *q);
void queue_sqe_task(struct raid_queue *q, struct io_uring_sqe *sqe, struct qtask *t);
/* Run T->fn(T, RES) from Q's run loop (never inline).  On Q's thread. */
void queue_defer(struct raid_queue *q, struct qtask *t, int res);
/* Same, from any thread: T will run on Q's thread.  Thread-safe. */
void queue_post(struct raid_queue *q, struct qtask *t, int res);
/* Run T on queue TO, from the thread that runs queue FROM: queue_defer()
 * when they are the same, else queue_post(). */
void queue_send(struct raid_queue *from, struct raid_queue *to, struct qtask *t, int res);
/* Arm an io_uring timeout completing T at CLOCK_MONOTONIC time MONO_NS
 * (absolute: however late the SQE reaches the kernel, it fires on time). */
void queue_timer_at(struct raid_queue *q, struct qtask *t, struct __kernel_timespec *ts,
                    uint64_t mono_ns);
/* Arm an io_uring timeout of USEC microseconds completing T (res 0). */
void queue_timer(struct raid_queue *q, struct qtask *t, struct __kernel_timespec *ts,
                 unsigned usec);
/* Cancel the timeout armed with T on Q: T still completes (-ECANCELED),
 * promptly, unless it fired already. */
void queue_timer_cancel(struct raid_queue *q, struct qtask *t);
/* Bookkeeping of user requests, done by array.c. */
void queue_user_start(struct raid_queue *q);
void queue_user_done(struct raid_queue *q);
/* Internal work that raid_queue_run() and raid_queue_in_flight() must see
 * (RAID 1 write-behind, raid1.c) but that completes no user request. */
void queue_internal_start(struct raid_queue *q);
void queue_internal_done(struct raid_queue *q);

/* ---- daemon.c ----------------------------------------------------------- */

/* CLOCK_MONOTONIC in nanoseconds (the vDSO: no system call): the
 * library's one clock. */
uint64_t mono_ns(void);

/* A background thread of an array (md's md_thread; the file's top
 * comment): LOCK guards its owner's state and QUIT; COND, on
 * CLOCK_MONOTONIC, wakes the thread. */
struct daemon {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool quit;
  bool started;
  pthread_t thread;
};
/* Make the lock and the condition variable (before anything can use them). */
void daemon_init(struct daemon *d);
/* Start the thread: FN(ARG).  0 or a positive errno (pthread_create()'s). */
int daemon_start(struct daemon *d, void *(*fn)(void *), void *arg);
/* With D->lock held: wait until woken, or until DUE (mono_ns() time; 0:
 * no limit), whichever comes first (or spuriously: callers loop). */
void daemon_wait(struct daemon *d, uint64_t due);
/* With D->lock held: wake the thread (and anyone else waiting on D). */
void daemon_wake_locked(struct daemon *d);
/* Set quit, wake the thread and join it (nothing when never started). */
void daemon_stop(struct daemon *d);
void daemon_destroy(struct daemon *d);

/* ---- stats.c ------------------------------------------------------------ */

/* I/O statistics: counters and latency histograms, all relaxed atomics
 * updated from any queue thread without locks; readers take a snapshot
 * that is consistent per counter, not across counters.
 *
 * Histograms are log-linear over nanoseconds: values below 8 have a
 * bucket each, then every power of two [2^e, 2^(e+1)) is cut into 8
 * buckets of 2^(e-3), so a bucket's bounds are within 12.5% of each
 * other.  Values from 2^40 ns (18 minutes) on share the last bucket. */
#define STATS_SUB_BITS 3
#define STATS_MAX_SHIFT 40
#define STATS_BUCKETS ((STATS_MAX_SHIFT - STATS_SUB_BITS + 1) << STATS_SUB_BITS)

struct stats_hist {
  _Atomic uint64_t n[STATS_BUCKETS];
  _Atomic uint64_t max;          /* largest value seen, exactly */
};

/* Ops and bytes indexed by enum mop (members) or enum req_op (arrays),
 * which list read, write, flush, discard, write zeroes in the same order. */
#define STATS_NOPS 5
struct stats_io {
  _Atomic uint64_t ops[STATS_NOPS];
  _Atomic uint64_t bytes[STATS_NOPS];
  _Atomic uint64_t errors;
  struct stats_hist lat[2];      /* reads, writes */
};

/* RAID 5 stripe operations (one per row piece of a request), by how
 * parity was kept. */
enum stats_stripe {
  STRIPE_FULL, STRIPE_RMW, STRIPE_RCW,
  STRIPE_DEGRADED_WRITE,         /* the row's parity member is gone */
  STRIPE_DEGRADED_READ,          /* data rebuilt from the other members */
  STRIPE_NCLASSES
};

/* RAID 5 plugs: row pieces that waited for the rest of their stripe, and
 * how the wait ended (filled: written as part of a full stripe; expired:
 * its time ran out; the rest went when a request it could not take
 * queued behind it). */
enum stats_plug { PLUGS_WAITED, PLUGS_FILLED, PLUGS_EXPIRED, PLUGS_NCLASSES };

/* An array's own figures. */
struct stats_array {
  struct stats_io io;            /* user requests */
  _Atomic int in_flight;         /* user requests */
  _Atomic uint64_t mread_bytes;  /* member reads issued for user requests */
  _Atomic uint64_t mwrite_bytes; /* member writes and write zeroes, the same */
  _Atomic uint64_t stripe[STRIPE_NCLASSES];
  _Atomic uint64_t stripe_read_bytes;  /* RAID 5 reads for partial writes */
  _Atomic uint64_t plug[PLUGS_NCLASSES];
  _Atomic uint64_t since_ns;     /* mono_ns() at creation or reset */
};

/* Count one op OP (STATS_NOPS order) of BYTES that started at T0 and
 * ended now with RES (0 or -errno). */
void stats_io_done(struct stats_io *s, unsigned op, uint64_t bytes,
                   uint64_t t0, int res);
void stats_io_reset(struct stats_io *s);
/* Snapshot into the public form (in_flight is the caller's). */
void stats_io_read(struct stats_io *s, struct raid_io_stats *out);
static inline void stats_add(_Atomic uint64_t *c, uint64_t v)
{
  atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}
/* The histogram alone, exposed for the unit test. */
unsigned stats_bucket(uint64_t ns);
uint64_t stats_bucket_lo(unsigned b);   /* smallest value of bucket B */
uint64_t stats_bucket_hi(unsigned b);   /* largest */
void stats_hist_add(struct stats_hist *h, uint64_t ns);
/* The value below which fraction P (0 < P <= 1) of the values lie: the
 * upper bound of the bucket holding it, never above the maximum; 0 when
 * empty. */
uint64_t stats_hist_percentile(struct stats_hist *h, double p);

/* ---- member/: member.c and the back-ends --------------------------------------- */

enum mop { MOP_READ, MOP_WRITE, MOP_FLUSH, MOP_DISCARD, MOP_ZERO };

#define MIO_FUA 0x1u
#define MIO_META 0x2u               /* superblock I/O (member_pio()) */

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
  bool repl;                     /* the submitter's: to the role's replacement */
  uint64_t aoff;                 /* the submitter's: array offset it serves */
  void *ctx;                     /* the submitter's: e.g. a RAID 5 stripe op */
  uint64_t start_ns;             /* member.c: submitted at, for latency */
  /* back-end scratch */
  size_t xfered;
  void *bounce;
  struct __kernel_timespec ts;
  struct raid_queue *q;
  void *conn;                    /* nbd.c: the connection it went out on */
  bool flushing;                 /* nbd.c: the flush that makes a write FUA */
};

struct member_ops {
  const char *kind;
  /* Start IO on Q.  Completion always goes through the queue. */
  void (*submit)(struct raid_queue *q, struct member_io *io);
  void (*close)(struct raid_member *m);
  /* Optional: is the device gone for good (not one I/O failing)?  Any
   * thread, without locks. */
  bool (*lost)(const struct raid_member *m);
  /* Optional: the device's size now, in bytes (a file or block device
   * that grew); without it the size is the one found at open. */
  int (*size_now)(struct raid_member *m, uint64_t *size);
};

struct raid_member {
  const struct member_ops *ops;
  char *name;
  _Atomic uint64_t size;         /* bytes (member_refresh_size() may grow it) */
  unsigned lbs;                  /* logical block size */
  unsigned mem_align;            /* buffer alignment the back-end needs */
  bool direct;
  bool readonly;
  bool write_mostly;             /* md's WriteMostly1 devflag */
  void *priv;                    /* the back-end's */
  /* Read balancing and statistics (relaxed atomics, any thread). */
  _Atomic int in_flight;
  _Atomic uint64_t next_pos;     /* byte offset after the last read */
  struct stats_io stats;         /* every I/O through member_submit() */
  uint64_t devnum;               /* st_rdev when a block device, else 0 */
  /* Its identity in md metadata (md/meta.c), set at create/assemble/add. */
  uint32_t dev_number;
  uint8_t dev_uuid[16];
  uint64_t data_offset;          /* bytes */
  uint64_t data_size;            /* sectors */
  uint64_t super_offset;         /* sectors: where its superblock lies */
  /* The array's list of retired members (conf_lock). */
  struct raid_member *retired_next;
};

/* The member I/O whose task is T (back-ends put io->task in the ring). */
static inline struct member_io *
task_io(struct qtask *t)
{
  return (struct member_io *)((char *)t - offsetof(struct member_io, task));
}
/* "read", "write", "flush", "discard", "write zeroes", for messages. */
const char *mop_name(enum mop op);

/* Carry out IO (not a flush) on memory: BASE is the member's first byte.
 * Discards and write zeroes use ZERO(p, len), or memset() if it is NULL.
 * For the back-ends that keep data in memory (ram, sim, sim's cache). */
void member_mem_io(uint8_t *base, const struct member_io *io, void (*zero)(void *, size_t));

/* Allocate a member with NAME (copied) and the back-end's OPS. */
struct raid_member *member_alloc(const struct member_ops *ops, const char *name);
/* Submit IO to member IO->m on Q: counts in_flight and dispatches to the
 * ops.  The back-end finishes it with member_complete(), which must run on
 * Q's thread from its run loop (a qtask), never inside submit. */
void member_submit(struct raid_queue *q, struct member_io *io);
void member_complete(struct member_io *io, int res);

/* Synchronous I/O for metadata: LEN bytes at member byte OFFSET, through a
 * private queue (never the caller's).  A write is md's superblock write
 * (REQ_PREFLUSH | REQ_FUA): a flush first, so that everything written
 * before is stable before the superblock can say so, then the write with
 * FUA (every back-end honours it).  0 or -errno, with a message naming
 * the member. */
/* Look at M's device again (raidctl grow --size max): its size now in
 * *SIZE, in whole sectors; M's size grows with it (never shrinks: what
 * the array uses stays addressable).  0, or -errno naming M. */
int member_refresh_size(struct raid_member *m, uint64_t *size);
int member_pio(struct raid_member *m, bool write, void *buf, size_t len,
               uint64_t offset);
/* Flush M's volatile cache, waited for.  0 or -errno naming M. */
int member_flush_sync(struct raid_member *m);
/* member_pio()'s write without its flush first: for a caller that has
 * flushed M itself since the writes the superblock vouches for. */
int member_write_fua(struct raid_member *m, void *buf, size_t len, uint64_t offset);
/* Claim the regular file open on FD (named NAME) for writing: an exclusive
 * flock(), so that no other open of it for writing (another process, or
 * another open in this one) can use it meanwhile.  0, or -EBUSY with a
 * message naming the file. */
int member_lock_file(int fd, const char *name);

/* The openers of member/open.c's registry (raid_member_open()). */
/* member/file.c */
int member_file_open(const char *path, unsigned flags, struct raid_member **mp);
/* member/nbd.c: an NBD export, any spec raid_member_spec_is_remote() claims */
int member_nbd_open(const char *spec, unsigned flags, struct raid_member **mp);
/* member/sim.c: simulated drives, "sim:PATH?OPTIONS" */
bool member_is_sim_spec(const char *spec);
int member_sim_open(const char *spec, unsigned flags, struct raid_member **mp);

/* Power cuts, for drives opened with "cache=volatile" (member/sim-cache.c
 * says what is kept).  How the unflushed, non-FUA writes fare: */
enum sim_cut {
  SIM_CUT_LOSE,                  /* all lost */
  SIM_CUT_SUBSET,                /* each write lost, kept or torn (per
                                    sector), as the seed decides */
  SIM_CUT_KEEP,                  /* all kept (a cache that got them out) */
};
struct sim_cut_stats {
  uint64_t dirty;                /* sectors not durable at the cut */
  uint64_t lost;                 /* of those, sectors put back to their
                                    durable image */
};
/* Cut the power of members M[0..N-1] at one instant: each must be a
 * simulated drive with cache=volatile, or a fault injector around one.
 * Afterwards their I/O fails with EIO and their files hold only what
 * was persisted; open the specs again to "power on".  SEED drives
 * SIM_CUT_SUBSET's choices.  ST (may be NULL) gets the totals.  0, or
 * -EINVAL (a member without a volatile cache, named: nothing is cut) or
 * -ENOMEM (the drives before the one that failed are cut). */
int member_sim_power_cut(struct raid_member *const *m, unsigned n, enum sim_cut how,
                         uint64_t seed, struct sim_cut_stats *st);
/* The drive's power is on (not cut): 1, 0, or -EINVAL when M has no
 * volatile cache. */
int member_sim_powered(struct raid_member *m);

/* member/sim-cache.c: the volatile cache of one simulated drive. */
struct sim_cache;
/* A cache for a drive of SIZE bytes; NULL when out of memory. */
struct sim_cache *sim_cache_new(uint64_t size);
void sim_cache_free(struct sim_cache *c);
/* Move IO's data to or from the drive's store DATA by the cache's rules
 * (whole sectors only).  0, or -EIO after a cut, -ENOMEM, -EINVAL. */
int sim_cache_io(struct sim_cache *c, uint8_t *data, struct member_io *io);
bool sim_cache_powered(struct sim_cache *c);
void sim_cache_lock(struct sim_cache *c);
void sim_cache_unlock(struct sim_cache *c);
/* Cut under the lock (sim_cache_lock()): put the durable image back in
 * DATA where HOW loses a sector, count into ST, power off.  SEED is the
 * generator's state, advanced.  0 or -ENOMEM (nothing done). */
int sim_cache_cut(struct sim_cache *c, uint8_t *data, enum sim_cut how,
                  uint64_t *seed, struct sim_cut_stats *st);

/* member/fault.c: the member a fault injector wraps, or M itself. */
struct raid_member *member_fault_inner(struct raid_member *m);

/* ---- mem.c ------------------------------------------------------------- */

/* malloc(), calloc() and free() for the I/O path: NULL when out of memory
 * or when the fault injector says so (errno not used). */
void *raid_malloc(size_t len);
void *raid_calloc(size_t n, size_t len);
void raid_free(void *p);
/* Tests: make one allocation in N of the functions here fail (0: none). */
void mem_fail_every(unsigned n);
/* RAID_BUF_ALIGN-aligned allocation; NULL on failure (errno not used). */
void *raid_buf_alloc(size_t len);
void raid_buf_free(void *p);
/* The same from a per-thread cache, for the hot path: put back with the
 * same LEN. */
void *raid_buf_get(size_t len);
void raid_buf_put(void *p, size_t len);
/* A shared read-only buffer of zeroes, at least LEN bytes (LEN <= RAID_MAX_REQUEST). */
const void *zero_buf(size_t len);

/* ---- the doors: what the core calls on the floors above it -------------- */

enum req_op { REQ_READ, REQ_WRITE, REQ_FLUSH, REQ_DISCARD, REQ_ZERO };

struct raid_request;
struct sync_op;

/* md's on-disk format, as the core sees it (md/meta.c implements it; every
 * array has it, whether it has superblocks or not: raid_array_new() lays
 * members out as md would and writes nothing).  Each is safe on an array
 * without superblocks (a->meta NULL), where it writes nothing. */
struct meta_ops {
  /* RAID_METADATA_* for a config's metadata field (0: the default), or -1. */
  int (*version)(int config_metadata);
  /* Bytes at the start of a member of SIZE bytes of A that data may use:
   * all of it, or (metadata 1.0) up to its superblock, less the room of
   * a bitmap kept before it; 0 if it cannot hold one. */
  uint64_t (*data_end)(const struct raid_array *a, uint64_t size);
  /* Write every live member's superblock after a membership change,
   * events bumped.  0 or -errno. */
  int (*update)(struct raid_array *a);
  /* The same after role SLOT failed.  Synchronous. */
  void (*member_failed)(struct raid_array *a, unsigned slot);
  /* Return once the superblocks on stable storage record every role
   * failure made so far (a->fail_gen).  Any thread not holding conf_lock. */
  void (*failures_recorded)(struct raid_array *a);
  /* Clean shutdown: mark clean and write. */
  void (*stop)(struct raid_array *a);
  /* Return once no superblock write in progress refers to a member taken
   * out of every role and list before the call (it may be closed then). */
  void (*barrier)(struct raid_array *a);
};
extern const struct meta_ops md_meta_ops;

/* The sync engine (sync/engine.c), as the core sees it: the "sync needed"
 * wake when something changed (a member failed, was added), and its end
 * when the array is freed (it checkpoints what it was doing). */
struct sync_ops {
  void (*kick)(struct raid_array *a);
  void (*free)(struct raid_array *a);
};
extern const struct sync_ops sync_engine_ops;

/* A gate that every request changing member data passes before any of
 * its member I/O (md/: safe mode's, then the write-intent bitmap's; the
 * order is the enum's).  START is true when R may go on, false when it is
 * parked: the gate then posts R->task to R->q with 0 or -errno once it
 * may (linked through R->gate_next[] meanwhile).  Either way R is counted
 * until END.  HOLD counts B again, the behind part of a request that
 * passed (RAID 1's write-behind: it outlives its request); END drops it.
 * BEHIND: how many writes may be behind at once (0: none; NULL: the gate
 * does not limit them). */
enum { GATE_SAFE, GATE_BITMAP, NGATES };
struct write_gate;
struct write_gate_ops {
  bool (*start)(struct write_gate *g, struct raid_request *r);
  void (*end)(struct write_gate *g, struct raid_request *r);
  void (*hold)(struct write_gate *g, struct raid_request *b);
  uint32_t (*behind)(const struct write_gate *g);
};
struct write_gate {
  const struct write_gate_ops *ops;
};

/* ---- array.c, request.c, roles.c: the core ------------------------------ */

/* Where a level finds a request's bytes on its members (RAID 0 and 5):
 * the array's shape, and during a reshape (sync/reshape.c) either the
 * old one or the new one, whichever the request's bytes are in
 * (request.c's window).  SHIFT is added to every member offset (md's
 * new_offset: the new shape's data starts elsewhere on each member);
 * SPACE keeps the two shapes' stripe locks apart (struct range_lock). */
struct raid_geo {
  unsigned raid_disks;
  int layout;
  uint32_t chunk_size;           /* bytes */
  unsigned chunk_sectors;
  uint64_t shift;                /* bytes, modulo 2^64 (may be "negative") */
  uint32_t space;
};

/* A row of shape G (a chunk of every member) holds *NUM / *DEN data
 * chunks: every member's but the parity for RAID 5, every member's over
 * the copies for RAID 10 (a fraction when the copies do not divide the
 * members: md's near layout wraps the copies around), every member's for
 * RAID 0.  The reshape (sync/reshape.c) and the checks around it count
 * rows with it. */
static inline void
geo_row_chunks(int level, unsigned copies, const struct raid_geo *g, uint64_t *num,
               uint64_t *den)
{
  *num = level == RAID_LEVEL_5 ? g->raid_disks - 1u : g->raid_disks;
  *den = level == RAID_LEVEL_10 ? copies : 1u;
}

/* The fewest whole rows of shape G that hold whole chunks: *ROWS rows
 * holding *CHUNKS chunks (1 row of every data chunk but for a RAID 10
 * whose copies do not divide its members: near-2 over 5, 2 rows of 5). */
static inline void
geo_row_unit(int level, unsigned copies, const struct raid_geo *g, uint64_t *rows,
             uint64_t *chunks)
{
  uint64_t num, den, p, q;

  geo_row_chunks(level, copies, g, &num, &den);
  for (p = num, q = den; q; ) {
    uint64_t t = p % q;

    p = q;
    q = t;
  }
  *rows = den / p;
  *chunks = num / p;
}

/* The array's bytes in striped shape G over members of MEMBER_SIZE bytes
 * of data (whole chunks of each; md's raid0_size(), raid5_size(),
 * raid10_size()). */
static inline uint64_t
geo_data_size(int level, unsigned copies, const struct raid_geo *g, uint64_t member_size)
{
  uint64_t num, den;

  geo_row_chunks(level, copies, g, &num, &den);
  return member_size / g->chunk_size * num / den * g->chunk_size;
}

/* Where, in each member's bytes from shape G's data start, G's rows up
 * to array byte END end (the rows holding [0, END), the last one whole):
 * a reshape's write front (sync/reshape.c), and the recovery point of a
 * role the reshape fills. */
static inline uint64_t
geo_member_front(int level, unsigned copies, const struct raid_geo *g, uint64_t end)
{
  uint64_t num, den, chunks = DIV_ROUND_UP(end, g->chunk_size);

  geo_row_chunks(level, copies, g, &num, &den);
  return DIV_ROUND_UP(chunks * den, num) * g->chunk_size;
}

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
  /* Sync engine: do ACTION for member bytes [pos, pos + len), one piece
   * of a step (a multiple of the chunk; the step's locks are held by the
   * engine); RECOVER rebuilds the roles in op->target[].  It may return
   * with its writes in flight.  NULL for RAID 0. */
  int (*sync_step)(struct sync_op *op);
  /* Optional: send the reads of the piece [pos, pos + len) ahead, into
   * op->arena's buffers, noted in sync_piece_reads(op); the engine calls
   * it before sync_step() of the piece before, and sync_step() of this
   * piece then waits for them instead of reading.  0 or set_error(). */
  int (*sync_read)(struct sync_op *op);
  /* Lock keys covering member bytes [pos, pos + len), see sync_lock_rows. */
  void (*sync_locks)(struct sync_op *op);
  /* User request R is finishing, or NULL: RAID 5 follows its
   * sequential writers' requests and their latency. */
  void (*request_done)(struct raid_request *r);
};

extern const struct personality raid0_personality;
extern const struct personality raid1_personality;
extern const struct personality raid5_personality;
extern const struct personality raid10_personality;

struct sync_engine;

#define SYNC_DEFAULT_MIN (1000u * 1024) /* md's speed_limit_min: 1000 KiB/s */

struct raid_array {
  char *name;
  /* Personality, level, layout and chunk: set when built; a reshape to
   * another layout or chunk (sync/reshape.c) changes the last two at its
   * end, and a takeover to another level (takeover.c, md's level_store())
   * all four, every request parked, so the readers outside the I/O path
   * (status, the sync engine's next pass) read them as atomics.  Requests
   * use their shape's (r->geo). */
  _Atomic(const struct personality *) pers;
  _Atomic int level;
  _Atomic int layout;
  _Atomic uint32_t chunk_size;   /* bytes */
  _Atomic unsigned chunk_sectors;
  /* Roles: set when built; raid_array_grow_disks() changes a RAID 1's (its
   * mirrors) on a running array, so the I/O path reads them as atomics,
   * once per request step (raid1.c). */
  _Atomic unsigned raid_disks;
  _Atomic unsigned copies;       /* RAID 10 near copies; RAID 1 raid_disks */
  uint64_t moff[RAID_MAX_MEMBERS];  /* per member: where data starts, bytes */
  /* Sizes: set when built; raid_array_grow_size() (grow.c) changes them on
   * a running array, so the I/O path reads them as atomics. */
  _Atomic uint64_t member_size;  /* bytes of data per member */
  int metadata;                  /* RAID_METADATA_*: superblock placement */
  bool bitmap;                   /* has (or, creating, gets) md's internal bitmap */
  /* Laid out by the members' superblocks (assembly: array_new() with
   * their data offsets), not anew: their data_size is the room, and a
   * metadata 1.0 member keeps no new room for a bitmap (meta.c). */
  bool found_layout;
  uint32_t bitmap_chunk;         /* creating: the chunk asked for (0: default) */
  uint32_t write_behind;         /* creating: md's --write-behind (0: none) */
  _Atomic uint64_t size;         /* array bytes */
  /* md's array_size (mdadm --grow --array-size): the bytes the array
   * shows and serves when below SIZE, 0 for all of SIZE; memory only, as
   * md's (an assembly shows all).  array_size_shown(). */
  _Atomic uint64_t size_shown;
  unsigned lbs;
  /* The member in each role and its state, read by the I/O path without
   * locks, as a pair (slot_member_at()); changed under conf_lock by the
   * rules of "Roles and members" in roles.c. */
  struct raid_member *_Atomic members[RAID_MAX_MEMBERS];
  _Atomic int state[RAID_MAX_MEMBERS];  /* IN_SYNC, FAULTY, MISSING, RECOVERING */
  /* RECOVERING roles: bytes (from the data offset) rebuilt so far. */
  _Atomic uint64_t recovered[RAID_MAX_MEMBERS];
  /* Replacements being rebuilt (md's --replace) and how far. */
  struct raid_member *_Atomic repl[RAID_MAX_MEMBERS];
  _Atomic uint64_t repl_done[RAID_MAX_MEMBERS];
  /* Members without a role, guarded by conf_lock: hot spares (at most
   * RAID_MAX_MEMBERS), and failed or replaced members kept (so status shows
   * them) until removed, in a list of any length: a member can leave its
   * role in a completion, where nothing may be refused. */
  pthread_mutex_t conf_lock;
  struct raid_member *spares[RAID_MAX_MEMBERS];
  unsigned nspares;
  struct raid_member *retired;
  unsigned nretired;
  _Atomic unsigned degraded;
  _Atomic bool failed;
  _Atomic uint64_t user_ios;     /* requests submitted: the engine's idle test */
  /* Requests in flight by epoch (request.c): array_quiesce() starts a new
   * epoch and waits for the old one's requests to finish. */
  _Atomic uint64_t epoch;
  _Atomic int epoch_reqs[2];
  pthread_mutex_t quiesce_lock;
  /* Role failures so far, bumped under conf_lock before the role
   * changes: the superblocks record failures up to a generation, and
   * writes are acknowledged only once they record all (req_finish()). */
  _Atomic uint64_t fail_gen;
  /* A reshape (sync/reshape.c): the line between the shapes (md's
   * reshape_position, in bytes), or UINT64_MAX when none is under way.
   * Forwards the bytes below it are in geo_new; backwards (reshape_back)
   * those from it on. */
  _Atomic uint64_t reshape_pos;
  /* md's backwards reshape (to fewer members, the data offset moving
   * later; md/md.h's sb_backwards()): it runs from the end down.  Set with
   * geo_old and geo_new, before the window opens; written under conf_lock. */
  bool reshape_back;
  /* The level the reshape ends at when not the array's (RAID_LEVEL_0: a
   * RAID 0 restriped as a RAID 5, lib/grow.c), else -1.  In memory only,
   * as mdadm's: after a crash the reshape ends as a RAID 5.  Under
   * conf_lock. */
  int reshape_then;
  /* Member bytes below which copies agree (UINT64_MAX: everywhere). */
  _Atomic uint64_t resync_front;
  void *priv;                    /* the personality's */
  /* The shape requests are served by (RAID 0 and 5: the personality's
   * setup fills geo[0]); during a reshape geo_old is the shape from the
   * window's end on and geo_new below its start, the other way round
   * backwards (request.c's "The reshape window"), and a request keeps the
   * one it was given. */
  struct raid_geo geo[2];
  const struct raid_geo *_Atomic geo_now;
  /* Set before reshape_pos says a reshape, under conf_lock; atomic, as
   * the bitmap's gate reads them with no lock while a reshape starts. */
  const struct raid_geo *_Atomic geo_old, *_Atomic geo_new;
  pthread_mutex_t win_lock;
  _Atomic bool win_on;
  uint64_t win_lo, win_hi;       /* array bytes, under win_lock */
  bool win_all;                  /* every request parks, flushes too (a takeover) */
  struct raid_request *win_parked, **win_parked_tail;
  _Atomic uint64_t win_epoch;
  _Atomic int win_reqs[2];
  struct range_lock_table *locks;  /* write/sync exclusion (RAID 1, 5, 10) */
  /* The doors to the floors above the core (the rule at the top of this
   * file): md's metadata (never NULL once built: md/meta.c's md_meta_ops)
   * and the sync engine (sync/engine.c's sync_engine_ops, or NULL for a
   * level without redundancy). */
  const struct meta_ops *mops;
  const struct sync_ops *sops;
  struct array_meta *meta;       /* md superblocks, or NULL (md/meta.c) */
  /* The gates writes pass, in order (safe mode's, then the write-intent
   * bitmap's): each NULL or set and cleared by md/ (md/meta.c). */
  struct write_gate *_Atomic gate[NGATES];
  /* RAID 1 write-behind I/O in flight (raid1.c): writes to write-mostly
   * members that go on after their request was acknowledged. */
  _Atomic unsigned behind_writes;
  /* md's re-add: the member that came back into role SLOT with writes
   * since it left covered by the bitmap (manage.c), so that its recovery
   * goes over the set bits only (sync/pass.c); NULL otherwise.  Compared,
   * never dereferenced; set and cleared under conf_lock. */
  struct raid_member *_Atomic bm_readd[RAID_MAX_MEMBERS];
  struct sync_engine *sync;      /* the engine, or NULL (sync/engine.c) */
  /* What raid_array_set_auto_sync() and _set_sync_limits() asked for,
   * kept for an engine started later: a RAID 0 has none until a takeover
   * makes it a RAID 5.  Under conf_lock. */
  bool sync_auto;
  uint64_t sync_min, sync_max;  /* SYNC_DEFAULT_MIN and 0 (no limit) at first */
  struct stats_array stats;      /* stats.c */
  /* The event handler (events.c), guarded by ev_lock. */
  pthread_mutex_t ev_lock;
  raid_event_fn ev_fn;
  void *ev_opaque;
};

/* The bytes A shows and serves: md's array_size when one is set below
 * the size its members give, else all of it. */
static inline uint64_t array_size_shown(const struct raid_array *a)
{
  uint64_t size = a->size, shown = a->size_shown;

  return shown && shown < size ? shown : size;
}

/* raid_array_new() with a data offset per role (NULL: the config's); an
 * array given them is laid out by its superblocks (found_layout). */
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
  uint64_t split_next;           /* split request: where its next piece starts */
  unsigned epoch;                /* its count in a->epoch_reqs[] */
  uint64_t start_ns;             /* submitted at, for latency (stats.c) */
  struct qtask task;             /* for deferring the final completion */
  /* Writes: the gates that counted it (NULL: none there), the one it
   * waits at or passed last, its link while parked at each, and what
   * each counted (the gate's own units, from START: END and HOLD drop
   * and count again the same, whatever changed meanwhile). */
  struct write_gate *gate[NGATES];
  unsigned gate_at;
  struct raid_request *gate_next[NGATES];
  uint64_t gate_span[NGATES][2];
  /* Bytes the personality counts in flight for it (raid5.c), or 0. */
  size_t counted;
  /* The shape it is served by (set before the personality sees it), its
   * count in a->win_reqs[] (routed) and its link while parked. */
  const struct raid_geo *geo;
  bool routed;
  unsigned win_epoch;
  struct raid_request *win_next;
  /* The sync engine's own request (req_internal()): no gates, no
   * statistics, not counted as a client's. */
  bool internal;
};

/* ---- request.c: the reshape window ------------------------------------------ */

/* While a reshape runs, array bytes below LO are in the new shape, bytes
 * from HI on in the old, and a request touching [LO, HI) waits (parked)
 * until the window has moved off it.  array_window_set() moves it; then
 * array_window_drain() waits for every request routed before the move
 * (the ones that might have gone to the old shape in what is now the
 * window; a window set anew ends array_window_park_all()).  The window
 * opens with array_window_open() (A->geo_old and
 * geo_new set) and closes with array_window_close(), which serves
 * everything by NOW. */
void array_window_open(struct raid_array *a, uint64_t lo, uint64_t hi);
void array_window_set(struct raid_array *a, uint64_t lo, uint64_t hi);
void array_window_drain(struct raid_array *a);
void array_window_close(struct raid_array *a, const struct raid_geo *now);
/* A takeover's barrier (takeover.c): with the window open, every request
 * from now on parks, flushes too, and the call returns once those routed
 * before have finished (none is inside the personality).
 * array_window_close() lets them go. */
void array_window_park_all(struct raid_array *a);
/* Requests waiting at the window now (the engine checkpoints for them). */
bool array_window_waiting(struct raid_array *a);
/* The sync engine's own read or write of array bytes [OFF, OFF + LEN) in
 * shape G, on queue Q (the engine's): through the personality, past the
 * window and the gates; CB(OPAQUE, res) once done.  0 or -errno. */
int req_internal(struct raid_queue *q, struct raid_array *a, const struct raid_geo *g,
                 enum req_op op, void *buf, size_t len, uint64_t off,
                 raid_completion_fn cb, void *opaque);

/* A grace period: wait until every request (and sync step) that entered
 * A before the call has finished.  A member taken out of every role and
 * list before the call is referred to by nothing after it (requests bind
 * members while they run, and only then), so it may be closed.  Not from
 * a thread that runs a queue with requests of A in flight (it would wait
 * for itself), nor with a lock that the I/O path or the sync engine
 * takes. */
void array_quiesce(struct raid_array *a);
/* The bytes each member's data size is a multiple of (array.c): the
 * chunk, 4 KiB for RAID 1, at least the logical block. */
uint64_t array_member_unit(const struct raid_array *a);
/* md's level_store(): A becomes a LEVEL array with LAYOUT and CHUNK bytes
 * (0 for RAID 1) of the same size, in shape G (filled here, for the
 * caller's array_window_close()).  The caller has every request parked
 * and drained and the sync engine held; 0, or set_error() with A as it
 * was. */
int array_set_personality(struct raid_array *a, int level, int layout, uint32_t chunk,
                          struct raid_geo *g);
/* Count a request (or a sync step) of A in the current epoch; returns what
 * array_exit() needs when it is over. */
unsigned array_enter(struct raid_array *a);
void array_exit(struct raid_array *a, unsigned epoch);

/* Take a reference on R / drop one with the result of a sub-operation
 * (0 or -errno).  When the last is dropped the user's callback runs. */
void req_get(struct raid_request *r);
void req_put(struct raid_request *r, int res);

/* RAID 1's write-behind: B, the behind part of write R, is counted at
 * every gate R passed; req_gates_end() lets it go.  req_write_behind():
 * how many writes may be behind at once for R (0: none, no gate allows
 * it). */
void req_gates_hold(struct raid_request *r, struct raid_request *b);
void req_gates_end(struct raid_request *r);
uint32_t req_write_behind(const struct raid_request *r);

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

/* A member I/O belonging to request R, to member M (bound to role SLOT by
 * slot_member_at()); DONE runs with the result.  MEMBER_OFFSET is from
 * M's data offset.  NULL when out of memory (with the error set).
 * Submit it with req_mio_submit(), or give it back unsubmitted with
 * req_mio_discard().  While in flight the request holds a reference,
 * dropped after DONE; the I/O is freed after DONE returns (DONE must not
 * keep it).  Called on R's queue's thread. */
struct member_io *req_mio(struct raid_request *r, unsigned slot, struct raid_member *m,
                          enum mop op, void *buf, uint64_t member_offset, size_t len,
                          void (*done)(struct member_io *io, int res));
/* MEMBER_OFFSET above is relative to the data offset; this undoes it. */
static inline uint64_t mio_data_offset(const struct raid_array *a, const struct member_io *io)
{
  return io->offset - io->m->data_offset;
}
void req_mio_submit(struct member_io *io);
void req_mio_discard(struct member_io *io);
/* Submit the N member I/Os in IO[] (of R, or of a request that goes with
 * it: RAID 1's behind part) all together, or (when one of them
 * is NULL: out of memory) none, discarding the others and returning
 * -ENOMEM: a write that cannot be done whole is not started, so that no
 * mirror or parity is left behind its data. */
int req_mio_batch_submit(struct raid_request *r, struct member_io **io, unsigned n);
/* The request a member I/O from req_mio() belongs to. */
static inline struct raid_request *mio_req(struct member_io *io) { return io->priv; }

/* Member SLOT is usable for reads / writes right now (in sync). */
static inline bool slot_ok(const struct raid_array *a, unsigned slot)
{
  return atomic_load(&a->state[slot]) == RAID_MEMBER_IN_SYNC;
}
/* Member SLOT holds the data of its member bytes [OFF, OFF + LEN) and gets
 * writes there: in sync, or recovering and rebuilt past it.  The sync
 * engine moves a recovery point only under the locks of what it rebuilt,
 * and every write holds the lock of what it writes, so a write sees the
 * point on one side of its range for its whole life. */
static inline bool slot_ok_at(const struct raid_array *a, unsigned slot,
                              uint64_t off, uint64_t len)
{
  int st = atomic_load(&a->state[slot]);

  return st == RAID_MEMBER_IN_SYNC ||
    (st == RAID_MEMBER_RECOVERING && off + len <= atomic_load(&a->recovered[slot]));
}
/* Slot counts as holding data for flushes and metadata (in sync or recovering). */
static inline bool slot_alive(const struct raid_array *a, unsigned slot)
{
  int st = atomic_load(&a->state[slot]);
  return st == RAID_MEMBER_IN_SYNC || st == RAID_MEMBER_RECOVERING;
}

/* The member of role SLOT if it holds its member bytes [OFF, OFF + LEN)
 * (slot_ok_at()), else NULL: the member and the state are read as a pair,
 * so the member returned is one the state seen describes ("Roles and
 * members" in roles.c).  The I/O path sends I/O to the member it got
 * here, never to what the role holds later. */
static inline struct raid_member *
slot_member_at(const struct raid_array *a, unsigned slot, uint64_t off, uint64_t len)
{
  for (;;) {
    struct raid_member *m = atomic_load(&a->members[slot]);
    bool ok = slot_ok_at(a, slot, off, len);

    if (atomic_load(&a->members[slot]) == m)
      return ok ? m : NULL;
  }
}
/* The same for flushes: a member in sync or recovering. */
static inline struct raid_member *
slot_member_alive(const struct raid_array *a, unsigned slot)
{
  for (;;) {
    struct raid_member *m = atomic_load(&a->members[slot]);
    bool ok = slot_alive(a, slot);

    if (atomic_load(&a->members[slot]) == m)
      return ok ? m : NULL;
  }
}

/* Replacement X of role SLOT failed (ERR): drop it (the role's member
 * still holds everything), unless it is no longer that role's replacement. */
void array_repl_failed(struct raid_array *a, unsigned slot, struct raid_member *x, int err);
/* Member M of role SLOT failed because of ERR at member byte OFFSET (from
 * the data offset) during WHAT ("read", "write", "flush"; NULL: on
 * request); M NULL: the role's member, whichever it is.  Nothing happens
 * when M is not the role's member any more (it was replaced or removed) or
 * the role is failed already; otherwise the role is failed (or its
 * replacement takes over), logged once, degraded/failed updated, the
 * superblocks written and the sync engine told.  Any thread. */
void array_member_failed(struct raid_array *a, unsigned slot, struct raid_member *m,
                         int err, uint64_t offset, const char *what);
/* The role change of array_member_failed() alone, with WHY for the log:
 * the role's previous state, or -1 when nothing changed. */
int array_role_failed(struct raid_array *a, unsigned slot, struct raid_member *m,
                      const char *why);
/* Wake A's sync engine, if it has one: something changed. */
void array_sync_kick(struct raid_array *a);
/* Put M on A's retired list.  Caller holds conf_lock. */
void retire_locked(struct raid_array *a, struct raid_member *m);
/* Role SLOT may take a new member: faulty or missing, not being
 * replaced.  Caller holds conf_lock. */
bool role_free_locked(struct raid_array *a, unsigned slot);
/* Put X into role SLOT, which is faulty or missing, to be rebuilt from
 * the start; its failed member (returned, or NULL) is retired.  Caller
 * holds conf_lock (manage.c, the sync engine). */
struct raid_member *role_install_locked(struct raid_array *a, unsigned slot,
                                        struct raid_member *x);
/* The array's roles from OLD to N, members of roles that go moving into
 * free ones (there must be room); the number of roles not in sync after.
 * Caller holds conf_lock, with every request parked or the roles'
 * change otherwise safe for them (lib/grow.c, lib/takeover.c). */
unsigned roles_resize_locked(struct raid_array *a, unsigned old, unsigned n);
/* A level change's roles (a takeover, a reshape that ends as a RAID 0):
 * from OLD to N, the last role's member (a RAID 5's parity, to a RAID 0)
 * taken out first into *DROPP (NULL if none), its state into *STP; and
 * back from N to OLD, DROP in the last role with state ST.  The member
 * taken out is the caller's to close (member_release()).  Caller holds
 * conf_lock, with every request parked. */
void roles_level_locked(struct raid_array *a, unsigned old, unsigned n,
                        struct raid_member **dropp, int *stp);
void roles_level_back_locked(struct raid_array *a, unsigned n, unsigned old,
                             struct raid_member *drop, int st);
/* A->degraded counted again from the roles' states, md's way (a reshape
 * to more members counts each shape), and returned.  Caller holds
 * conf_lock (or owns an array not yet running). */
unsigned roles_count_locked(struct raid_array *a);
/* Close M, taken out of every role and list of A: once no request nor
 * superblock write can refer to it (array_quiesce(), then md's barrier).
 * Not from a thread that runs a queue with requests of A in flight, nor
 * holding conf_lock. */
void member_release(struct raid_array *a, struct raid_member *m);
/* Flush every in-sync member, calling req_put() for each; shared by all
 * personalities. */
void array_flush_members(struct raid_request *r);

/* ---- roles.c: the walk over every member ------------------------------------ */

/* Every member of A, under conf_lock, as raid_array_members() lists them:
 * each role in order (M NULL when missing; REC its recovery point when
 * recovering), then replacements (REC how far), spares and retired
 * members (role -1). */
typedef void (*member_walk_fn)(struct raid_member *m, int role, int state, uint64_t rec,
                               void *opaque);
void array_walk_members(struct raid_array *a, member_walk_fn fn, void *opaque);

/* ---- events.c ------------------------------------------------------------ */
void events_init(struct raid_array *a);
void events_destroy(struct raid_array *a);
/* Hand EV (its array filled in here) to A's handler, if any.  Callable
 * under any library lock: ev_lock is taken last. */
void array_event(struct raid_array *a, struct raid_event ev);

/* ---- range-lock.c --------------------------------------------------------- */

/* Range locks on RAID 5 stripes: a lock covers [lo, hi) bytes within the
 * chunk-sized column range of stripe ROW.  Locks on overlapping ranges of
 * the same row are granted in order of request; a waiter is resumed on its
 * own queue's thread. */
struct range_lock {
  uint64_t row;
  uint32_t space;                /* locks of different spaces never meet */
  uint32_t lo, hi;
  struct raid_queue *q;          /* where to resume */
  struct qtask task;             /* run when granted */
  struct range_lock *next;       /* in the bucket's list */
  bool granted;
  /* RAID 5 writes: the stripe op holding the lock (for merging), and a
   * hook for a holder that waits of its own accord (a plugged write):
   * called under the table's lock when a later lock W (requested from
   * queue W->q) is blocked by L, and with W NULL when the holder starts
   * over (range_lock_rescan()).  NULL otherwise. */
  void *owner;
  void (*poke)(struct range_lock *l, struct range_lock *w);
};
struct range_lock_table;
struct range_lock_table *range_lock_table_new(void);
void range_lock_table_free(struct range_lock_table *t);
/* Request L (row, lo, hi, q, task.fn filled in).  L->task.fn runs on L->q
 * once granted (never inline). */
void range_lock(struct range_lock_table *t, struct range_lock *l);
/* Release L, on the thread that runs queue CUR (any queue: waiters it
 * grants are resumed on their own queues). */
void range_unlock(struct range_lock_table *t, struct range_lock *l,
                  struct raid_queue *cur);
/* Merging: offer TAKE each lock waiting behind granted lock L on L's row
 * that only L or locks already taken block, in arrival order; if COMPLETE
 * then says the set is whole, every taken lock counts as granted (its
 * task never runs: L's holder does its work and unlocks it) and the
 * number taken is returned; otherwise nothing changes and 0 is returned.
 * TAKE and COMPLETE run under the table's lock. */
unsigned range_lock_absorb(struct range_lock_table *t, struct range_lock *l,
                           bool (*take)(void *ctx, struct range_lock *w),
                           bool (*complete)(void *ctx), void *ctx);
/* True when some lock is waiting for granted lock L. */
bool range_lock_blocks(struct range_lock_table *t, struct range_lock *l);
/* L (granted, with a poke hook) begins to wait of its own accord: its
 * hook is called with NULL, then for every waiter it blocks, in arrival
 * order, all under the table's lock, as if each arrived now. */
void range_lock_rescan(struct range_lock_table *t, struct range_lock *l);

#endif /* RAID_INTERNAL_H */
