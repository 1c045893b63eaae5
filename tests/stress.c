/* Description: a stress test of one array shared by many threads while its
 * membership changes, built to find races that only show under load.
 *
 * Load.  THREADS threads (more than the cores), each with its own
 * raid_queue and up to QD asynchronous requests in flight, share a small
 * array (a few MiB: requests meet on the same rows all the time).  Requests
 * are reads, writes (some FUA), write-zeroes, discards and flushes of
 * random sizes and alignments, from one sector to several rows, plus three
 * shapes made to collide across threads:
 *   - whole rows (full-stripe writes);
 *   - "jobs": the same columns of every data chunk of one row, one piece
 *     per chunk, the pieces handed out to whichever threads come next
 *     (a shared ticket), so different threads write complementary chunks
 *     of a row at the same moment (RAID 5 merges such pieces into one
 *     full-stripe write);
 *   - "streams": sequential writes of 1.5 and 0.5 rows whose consecutive
 *     segments go to different threads (RAID 5 plugs a segment ending in
 *     the middle of a row and merges the next one into it).
 * Some members are wrapped in fault injectors that only delay (a different
 * delay per range), so member I/O completes out of order.  One RAID 1 has
 * a bitmap and writes behind on its slow write-mostly member (md's
 * write-behind), so writes complete before one of their copies lands.
 *
 * Checking under any interleaving.  A shared claim table holds an atomic
 * word per 512-byte sector: a writer claims every sector of its request
 * exclusively, a reader shares them, all or nothing, before submitting, and
 * releases them when the request completes.  So no two requests touch the
 * same bytes at once (the expected contents are always defined), yet
 * threads constantly write different bytes of the same rows and the same
 * bytes at different times.  A shadow copy is updated when a write
 * completes; every read is compared with it when it completes.  Each
 * completion must run exactly once, on the thread that owns the queue,
 * inside raid_queue_run(), with success, and raid_queue_in_flight() must
 * match the thread's count.  Writes carry sector tags (array sector and
 * thread/write number), so misplaced data is named.
 *
 * Membership changes.  Meanwhile a control thread (the test's own) changes
 * the array in one of eight scenarios, only in ways the array survives:
 *   sync      nothing changes; redundant levels run check (scrub) under
 *             load, which must find no mismatch;
 *   degraded  a role is missing (or failed) from the start; levels that
 *             survive it lose a second one in the middle;
 *   fail      a member fails in the middle of the load (a second one later
 *             where the level survives it);
 *   rebuild   fail, remove, add a new member, rebuild under load;
 *   replace   raid_array_replace_member() under load, then remove the old;
 *   spare     add hot spares (as many as the array takes, then back to
 *             two), fail roles with auto sync on: the spares take over;
 *   remove    a forced removal of an in-sync member, and the removal of a
 *             failed member right after it failed, with its I/O in flight;
 *   cycle     repeated fail -> remove -> add -> rebuild.
 * Rebuilds run with auto sync on or with raid_array_sync_start(), half of
 * them under a rate limit so they overlap more of the load.
 *
 * Afterwards: every thread's requests completed, the whole array reads
 * back as the shadow (degraded if it is), then the array is made whole
 * (members added, rebuilt), read back again, a check (scrub) must find no
 * mismatch, and the members, read directly, must hold md's layout with
 * every RAID 5 parity chunk the XOR of its row and every mirror copy equal.
 * One line per case reports the requests, bytes written and verified,
 * membership changes and errors.
 *
 * Knobs (environment):
 *   RAID_TEST_SCALE  percent of the default request count (testlib);
 *   TORTURE_SECONDS=N  run each case N seconds of wall time instead,
 *                      repeating its membership changes (make check-torture);
 *   STRESS_ONLY=TEXT   run only the cases whose name contains TEXT
 *                      ("raid5", "cycle", "raid10 near-2 disks=3");
 *   STRESS_HANG_SECONDS=N  the watchdog's patience (default 60): when no
 *                      request completes and the control thread makes no
 *                      progress for that long, it prints every request in
 *                      flight and aborts.
 * Nothing waits on time for correctness: waits are for conditions (a count
 * of completed requests, the sync engine going idle); the watchdog and
 * Check's timeout are only safety nets against hangs.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"           /* member_pio(): read RAM members directly */
#include "testlib.h"

#define THREADS 4
#define QD 16
/* Requests per case, all threads together, at RAID_TEST_SCALE=100. */
#define OPS_DEFAULT 3000
#define OPS_SANITIZER 1200
#define HANG_DEFAULT_S 60
#define MAX_ERRORS_KEPT 6
#define SPARE_PROBE (RAID_MAX_MEMBERS + 4)

/* ---- configurations and cases ---------------------------------------------- */

struct sconf {
  int level;
  int layout;
  unsigned disks;
  uint32_t chunk;
  uint64_t data;             /* bytes of data per member */
  unsigned delay_mask;       /* roles wrapped in fault injectors that delay */
  unsigned delay_us;         /* largest delay */
  bool create;               /* raid_array_create() (md superblocks) */
  unsigned wm_mask;          /* RAID 1: write-mostly roles (with create: a bitmap */
  uint32_t write_behind;     /* and write-behind of this many writes) */
};

static const struct sconf confs[] = {
  { RAID_LEVEL_0, RAID_LAYOUT_DEFAULT, 2, 64 * KiB, 1 * MiB, 0x1, 200, false, 0, 0 },
  { RAID_LEVEL_0, RAID_LAYOUT_DEFAULT, 4, 4 * KiB, 512 * KiB, 0, 0, true, 0, 0 },
  { RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, 0, 2 * MiB, 0x2, 200, false, 0, 0 },
  { RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 3, 0, 1 * MiB, 0, 0, true, 0, 0 },
  { RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 3, 4 * KiB, 512 * KiB, 0x5, 150, false, 0, 0 },
  { RAID_LEVEL_5, RAID_LAYOUT_LEFT_ASYMMETRIC, 4, 16 * KiB, 1 * MiB, 0, 0, false, 0, 0 },
  { RAID_LEVEL_5, RAID_LAYOUT_RIGHT_ASYMMETRIC, 5, 64 * KiB, 1 * MiB, 0x3, 100, true, 0, 0 },
  { RAID_LEVEL_5, RAID_LAYOUT_RIGHT_SYMMETRIC, 4, 512 * KiB, 2 * MiB, 0x8, 300, false, 0, 0 },
  { RAID_LEVEL_5, RAID_LAYOUT_PARITY_FIRST, 4, 8 * KiB, 1 * MiB, 0xf, 60, false, 0, 0 },
  { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 4, 4 * KiB, 1 * MiB, 0x6, 100, false, 0, 0 },
  { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 3, 64 * KiB, 1 * MiB, 0, 0, true, 0, 0 },
  { RAID_LEVEL_5, RAID_LAYOUT_PARITY_LAST, 3, 16 * KiB, 512 * KiB, 0x4, 100, true, 0, 0 },
  { RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 3, 0, 1 * MiB, 0x4, 300, true, 0x4, 8 },
};

enum scen { SC_SYNC, SC_DEGRADED, SC_FAIL, SC_REBUILD, SC_REPLACE, SC_SPARE,
            SC_REMOVE, SC_CYCLE, SC_N };

static const char *const scen_names[SC_N] = {
  "sync", "degraded", "fail", "rebuild", "replace", "spare", "remove", "cycle"
};

struct scase {
  unsigned id;               /* in the full list: seeds, names (STRESS_ONLY keeps them) */
  unsigned conf;
  enum scen sc;
  char name[160];
};

static struct scase cases[ARRAY_SIZE(confs) * SC_N];
static unsigned ncases;
static unsigned torture_s;     /* TORTURE_SECONDS, 0: bounded by counts */
static unsigned hang_s = HANG_DEFAULT_S;

/* ---- the shared state of a case ------------------------------------------- */

enum kind { K_READ, K_WRITE, K_ZERO, K_DISCARD, K_FLUSH };
enum src { SRC_RANDOM, SRC_ROWS, SRC_JOB, SRC_STREAM };

static const char *const kind_names[] = { "read", "write", "write-zeroes", "discard", "flush" };
static const char *const src_names[] = { "random", "rows", "job piece", "stream" };

struct stress;
struct sthread;

/* One request slot of a thread.  The descriptor is written under the
 * thread's lock (the watchdog reads it from its own thread). */
struct sreq {
  struct sthread *th;
  bool busy;
  enum kind kind;
  enum src src;
  unsigned flags;
  uint64_t off;
  size_t len;
  uint8_t *buf;
  uint64_t t0_ns;
};

/* A request to make: what try_submit() needs. */
struct sdesc {
  enum kind kind;
  enum src src;
  unsigned flags;
  uint64_t off;
  size_t len;
};

struct sthread {
  struct stress *s;
  unsigned id;
  pthread_t tid;
  struct raid_queue *q;
  struct rng rng;
  pthread_mutex_t lock;      /* guards req[] descriptors */
  struct sreq req[QD];
  unsigned in_flight;
  bool in_run;               /* inside raid_queue_run() */
  bool event_loop;           /* poll(2) on raid_queue_fd() */
  bool owed;                 /* a ticket taken but not yet submitted */
  struct sdesc owed_d;
  uint64_t gen;
  /* counts */
  uint64_t submitted, completed;
  uint64_t n[5], bytes[5];
  uint64_t whole_rows;       /* RAID 5 rows written whole by one request */
  uint64_t late_wakeups;     /* poll timed out, then requests were done */
};

struct stream {
  uint64_t base, len, n;     /* segment k: base + (k % n) * len */
  _Atomic uint64_t ticket;
};

struct stress {
  const struct sconf *cf;
  const struct scase *k;
  unsigned idx;
  uint64_t seed;
  struct tconf c;            /* for tcheck_layout() and tconf_survives() */
  struct tarray ref;         /* only c, desc, shadow, size: for tarray_diff() */
  char desc[256];
  struct raid_array *a;
  uint64_t size, member_size, data_offset, member_bytes;
  /* Geometry of the shapes: rows of D pieces of C bytes. */
  uint64_t C, rb, rows;
  unsigned D;
  uint64_t maxreq;
  uint8_t *shadow;
  _Atomic uint16_t *claim;   /* per sector: readers, or CLAIM_W */
  struct sthread th[THREADS];
  _Atomic bool stop;
  _Atomic bool load_running;       /* the watchdog expects completions */
  _Atomic uint64_t completed;      /* requests, every thread */
  _Atomic uint64_t ctl_progress;   /* control steps and sync progress */
  _Atomic(const char *) phase;     /* what the control thread does */
  _Atomic uint64_t job_ticket;
  struct stream stream[2];
  /* errors, from any thread */
  pthread_mutex_t err_lock;
  _Atomic unsigned errors;
  char err[MAX_ERRORS_KEPT][1024];
  /* control thread only */
  struct rng crng;
  bool auto_sync, limited;
  uint64_t target;
  uint64_t t_start, deadline;      /* ns; deadline 0: count bound */
  unsigned changes;
  unsigned members_made;
  /* watchdog */
  pthread_t wd;
  pthread_mutex_t wd_lock;
  pthread_cond_t wd_cond;
  bool wd_quit;
};

static _Thread_local struct sthread *tl_self;

/* The library's last log messages (printed with errors and hangs). */
#define LOG_KEEP 24
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_ring[LOG_KEEP][200];
static unsigned log_next;

static void
log_fn(int priority, const char *msg, void *opaque)
{
  (void)opaque;
  pthread_mutex_lock(&log_lock);
  snprintf(log_ring[log_next++ % LOG_KEEP], sizeof log_ring[0], "%s%s",
           priority <= RAID_LOG_WARNING ? "warning: " : "", msg);
  pthread_mutex_unlock(&log_lock);
  test_verbose("libraid: %s", msg);
}

static void
log_dump(void)
{
  unsigned i;

  pthread_mutex_lock(&log_lock);
  fprintf(stderr, "test-stress: the library's last log messages:\n");
  for (i = log_next > LOG_KEEP ? log_next - LOG_KEEP : 0; i < log_next; i++)
    fprintf(stderr, "  libraid: %s\n", log_ring[i % LOG_KEEP]);
  log_next = 0;
  pthread_mutex_unlock(&log_lock);
}

static uint64_t
now_ns(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Let other threads run while waiting for a condition (never for
 * correctness: every wait loops on a condition). */
static void
nap(void)
{
  struct timespec ts = { 0, 1000000 };

  nanosleep(&ts, NULL);
}

static void serr(struct stress *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Record an error (from any thread) and stop the case. */
static void
serr(struct stress *s, const char *fmt, ...)
{
  unsigned n = atomic_fetch_add(&s->errors, 1);
  va_list ap;

  atomic_store(&s->stop, true);
  if (n >= MAX_ERRORS_KEPT)
    return;
  pthread_mutex_lock(&s->err_lock);
  va_start(ap, fmt);
  vsnprintf(s->err[n], sizeof s->err[n], fmt, ap);
  va_end(ap);
  fprintf(stderr, "test-stress: ERROR: %s\n", s->err[n]);
  pthread_mutex_unlock(&s->err_lock);
}

static bool
failed(struct stress *s)
{
  return atomic_load(&s->errors) > 0;
}

static void
set_phase(struct stress *s, const char *what)
{
  atomic_store(&s->phase, what);
  atomic_fetch_add(&s->ctl_progress, 1);
  test_verbose("%s: %s", s->desc, what);
}

/* ---- the claim table ---------------------------------------------------------- */

#define CLAIM_W 0x8000u

static void
unclaim(struct stress *s, uint64_t off, size_t len, bool write)
{
  uint64_t i;

  for (i = off / 512; i < (off + len) / 512; i++) {
    if (write)
      atomic_store_explicit(&s->claim[i], 0, memory_order_release);
    else
      atomic_fetch_sub_explicit(&s->claim[i], 1, memory_order_release);
  }
}

/* Claim every sector of [off, off + len): exclusively for a write, shared
 * for a read.  All or nothing. */
static bool
claim(struct stress *s, uint64_t off, size_t len, bool write)
{
  uint64_t i, first = off / 512, end = (off + len) / 512;

  for (i = first; i < end; i++) {
    uint16_t v = atomic_load_explicit(&s->claim[i], memory_order_relaxed);

    for (;;) {
      uint16_t want;
      if (write ? v != 0 : (v & CLAIM_W) != 0) {
        unclaim(s, off, (i - first) * 512, write);
        return false;
      }
      want = write ? CLAIM_W : (uint16_t)(v + 1);
      if (atomic_compare_exchange_weak_explicit(&s->claim[i], &v, want,
                                                memory_order_acquire,
                                                memory_order_relaxed))
        break;
    }
  }
  return true;
}

/* ---- choosing requests ------------------------------------------------------- */

static uint64_t
clamp_len(const struct stress *s, uint64_t off, uint64_t len)
{
  if (len < 512)
    len = 512;
  if (off + len > s->size)
    len = s->size - off;
  return len;
}

/* A random range: sizes from a sector to several rows, alignments from any
 * sector to whole chunks. */
static void
random_range(struct stress *s, struct rng *r, uint64_t *offp, size_t *lenp)
{
  uint64_t len, off, C = s->C;
  unsigned p = (unsigned)rng_below(r, 100);

  if (p < 35)
    len = rng_between(r, 1, 8) * 512;
  else if (p < 60)
    len = rng_between(r, 1, C / 512) * 512;
  else if (p < 85)
    len = rng_between(r, 1, 2 * s->rb / 512) * 512;
  else
    len = rng_between(r, 1, s->maxreq / 512) * 512;
  len = MIN(len, s->maxreq);
  switch (rng_below(r, 4)) {
  case 0:                       /* any sector */
    off = rng_below(r, (s->size - len) / 512 + 1) * 512;
    break;
  case 1:                       /* 4 KiB aligned, whole 4 KiB blocks */
    len = (len + 4095) / 4096 * 4096;
    len = MIN(len, s->maxreq / 4096 * 4096);
    off = rng_below(r, (s->size - len) / 4096 + 1) * 4096;
    break;
  case 2:                       /* starts a chunk */
    off = rng_below(r, s->size / C) * C;
    break;
  default:                      /* ends a chunk */
    off = (rng_below(r, s->size / C) + 1) * C;
    off = off > len ? off - len : 0;
    break;
  }
  len = clamp_len(s, off, len);
  *offp = off;
  *lenp = (size_t)len;
}

/* Whole rows, row aligned. */
static void
rows_range(struct stress *s, struct rng *r, uint64_t *offp, size_t *lenp)
{
  uint64_t n = MIN(rng_between(r, 1, 2), s->rows);
  uint64_t row = rng_below(r, s->rows - n + 1);

  *offp = row * s->rb;
  *lenp = (size_t)(n * s->rb);
}

/* Piece number TICKET of the shared jobs: job T / D writes the same
 * columns [x0, x1) of each of the D chunks of one row; its pieces go to
 * whichever threads take the next tickets. */
static void
job_piece(struct stress *s, uint64_t ticket, uint64_t *offp, size_t *lenp)
{
  uint64_t job = ticket / s->D, row, x0, x1, C = s->C;
  unsigned piece;
  struct rng r;

  rng_seed(&r, s->seed ^ (job * UINT64_C(0x9e3779b97f4a7c15)) ^ 0x6a6f62);
  row = rng_below(&r, s->rows);
  switch (rng_below(&r, 4)) {
  case 0: case 1:               /* whole chunks: full stripes */
    x0 = 0;
    x1 = C;
    break;
  case 2:                       /* any sectors */
    x0 = rng_below(&r, C / 512) * 512;
    x1 = x0 + rng_between(&r, 1, (C - x0) / 512) * 512;
    break;
  default:                      /* 4 KiB blocks */
    x0 = rng_below(&r, C / 4096) * 4096;
    x1 = x0 + rng_between(&r, 1, (C - x0) / 4096) * 4096;
    break;
  }
  /* A different piece leads each job. */
  piece = (unsigned)((ticket % s->D + job) % s->D);
  *offp = row * s->rb + (uint64_t)piece * C + x0;
  *lenp = (size_t)(x1 - x0);
}

static void
stream_segment(struct stress *s, unsigned k, uint64_t *offp, size_t *lenp)
{
  struct stream *st = &s->stream[k];
  uint64_t t = atomic_fetch_add(&st->ticket, 1);

  *offp = st->base + (t % st->n) * st->len;
  *lenp = (size_t)st->len;
}

static void
make_desc(struct sthread *th, struct sdesc *d)
{
  struct stress *s = th->s;
  struct rng *r = &th->rng;
  unsigned p = (unsigned)rng_below(r, 100);

  memset(d, 0, sizeof *d);
  d->src = SRC_RANDOM;
  if (p < 28) {
    d->kind = K_READ;
    random_range(s, r, &d->off, &d->len);
  }
  else if (p < 32) {
    d->kind = K_READ;
    rows_range(s, r, &d->off, &d->len);
    d->src = SRC_ROWS;
  }
  else if (p < 52) {
    d->kind = K_WRITE;
    random_range(s, r, &d->off, &d->len);
  }
  else if (p < 58) {
    d->kind = K_WRITE;
    rows_range(s, r, &d->off, &d->len);
    d->src = SRC_ROWS;
  }
  else if (p < 74 && !th->owed) {
    d->kind = K_WRITE;
    job_piece(s, atomic_fetch_add(&s->job_ticket, 1), &d->off, &d->len);
    d->src = SRC_JOB;
  }
  else if (p < 86 && !th->owed) {
    unsigned k = (unsigned)rng_below(r, 2);
    d->kind = K_WRITE;
    if (s->stream[k].n == 0)
      k = 0;
    stream_segment(s, k, &d->off, &d->len);
    d->src = SRC_STREAM;
  }
  else if (p < 93) {
    d->kind = rng_percent(r, 50) ? K_ZERO : K_DISCARD;
    if (rng_percent(r, 25)) {
      rows_range(s, r, &d->off, &d->len);
      d->src = SRC_ROWS;
    }
    else
      random_range(s, r, &d->off, &d->len);
  }
  else if (p < 95)
    d->kind = K_FLUSH;
  else {
    d->kind = K_READ;
    random_range(s, r, &d->off, &d->len);
  }
  if ((d->kind == K_WRITE || d->kind == K_ZERO) && rng_percent(r, 10))
    d->flags = RAID_REQ_FUA;
}

/* RAID 5 rows [off, off + len) covers whole. */
static uint64_t
whole_rows(const struct stress *s, uint64_t off, size_t len)
{
  uint64_t first = (off + s->rb - 1) / s->rb, end = (off + len) / s->rb;

  return end > first ? end - first : 0;
}

/* ---- completions and submission ------------------------------------------------ */

static void
sreq_done(void *opaque, int result)
{
  struct sreq *o = opaque;
  struct sthread *th = o->th;
  struct stress *s = th->s;
  char msg[1024];
  bool write;

  if (tl_self != th)
    serr(s, "%s: the completion of thread %u's %s at %" PRIu64 " length %zu ran on %s "
         "(thread %d), not on the thread that owns its queue", s->desc, th->id,
         kind_names[o->kind], o->off, o->len, tl_self ? "another test thread" :
         "a thread that is not a test thread", tl_self ? (int)tl_self->id : -1);
  else if (!th->in_run)
    serr(s, "%s: thread %u: the completion of %s at %" PRIu64 " ran outside "
         "raid_queue_run()", s->desc, th->id, kind_names[o->kind], o->off);
  if (!o->busy) {
    serr(s, "%s: thread %u: a completion for a request slot with nothing in flight "
         "(last %s at %" PRIu64 " length %zu): called twice?", s->desc, th->id,
         kind_names[o->kind], o->off, o->len);
    return;
  }
  write = o->kind != K_READ;
  if (result != 0)
    serr(s, "%s: thread %u: %s (%s) at %" PRIu64 " length %zu%s failed: %d (%s)",
         s->desc, th->id, kind_names[o->kind], src_names[o->src], o->off, o->len,
         o->flags & RAID_REQ_FUA ? " FUA" : "", result, strerror(-result));
  else {
    switch (o->kind) {
    case K_WRITE:
      memcpy(s->shadow + o->off, o->buf, o->len);
      break;
    case K_ZERO: case K_DISCARD:
      memset(s->shadow + o->off, 0, o->len);
      break;
    case K_READ:
      if (tarray_diff(&s->ref, o->buf, o->off, o->len, "read", msg, sizeof msg))
        serr(s, "thread %u: %s (%s)", th->id, msg, src_names[o->src]);
      break;
    case K_FLUSH:
      break;
    }
    th->n[o->kind]++;
    th->bytes[o->kind] += o->len;
    if (write && o->kind != K_FLUSH && s->cf->level == RAID_LEVEL_5)
      th->whole_rows += whole_rows(s, o->off, o->len);
  }
  if (o->kind != K_FLUSH)
    unclaim(s, o->off, o->len, write);
  pthread_mutex_lock(&th->lock);
  free(o->buf);
  o->buf = NULL;
  o->busy = false;
  pthread_mutex_unlock(&th->lock);
  th->in_flight--;
  th->completed++;
  atomic_fetch_add_explicit(&s->completed, 1, memory_order_relaxed);
}

/* Submit one request: the one owed (a ticket taken earlier) if it can be
 * claimed now, else a new one.  False when nothing could be claimed. */
static bool
try_submit(struct sthread *th)
{
  struct stress *s = th->s;
  struct sreq *o = NULL;
  struct sdesc d;
  bool from_owed = false;
  unsigned i;
  int r;

  for (i = 0; i < QD && o == NULL; i++)
    if (!th->req[i].busy)
      o = &th->req[i];
  if (o == NULL)
    return false;
  if (th->owed && claim(s, th->owed_d.off, th->owed_d.len, true)) {
    d = th->owed_d;
    th->owed = false;
    from_owed = true;
  }
  if (!from_owed) {
    make_desc(th, &d);
    if (d.kind != K_FLUSH && !claim(s, d.off, d.len, d.kind != K_READ)) {
      if (d.src == SRC_JOB || d.src == SRC_STREAM) {
        /* Taken from a shared sequence: write it as soon as it can be. */
        th->owed = true;
        th->owed_d = d;
      }
      return false;
    }
  }

  pthread_mutex_lock(&th->lock);
  o->th = th;
  o->kind = d.kind;
  o->src = d.src;
  o->flags = d.flags;
  o->off = d.off;
  o->len = d.len;
  o->buf = NULL;
  o->t0_ns = now_ns();
  if (d.kind == K_READ || d.kind == K_WRITE) {
    if (posix_memalign((void **)&o->buf, 4096, d.len) != 0)
      abort();
  }
  o->busy = true;
  pthread_mutex_unlock(&th->lock);
  if (d.kind == K_WRITE)
    tag_data(&th->rng, o->buf, d.off, d.len, ((uint64_t)(th->id + 1) << 32) | ++th->gen);
  else if (d.kind == K_READ)
    for (i = 0; i < d.len; i += 512)
      memset(o->buf + i, 0xee, 32);
  th->in_flight++;
  th->submitted++;

  switch (d.kind) {
  case K_READ:
    r = raid_aio_read(th->q, s->a, o->buf, d.len, d.off, sreq_done, o);
    break;
  case K_WRITE:
    r = raid_aio_write(th->q, s->a, o->buf, d.len, d.off, d.flags, sreq_done, o);
    break;
  case K_ZERO:
    r = raid_aio_write_zeroes(th->q, s->a, d.len, d.off, d.flags, sreq_done, o);
    break;
  case K_DISCARD:
    r = raid_aio_discard(th->q, s->a, d.len, d.off, sreq_done, o);
    break;
  default:
    r = raid_aio_flush(th->q, s->a, sreq_done, o);
    break;
  }
  if (r != 0) {
    serr(s, "%s: thread %u: %s (%s) at %" PRIu64 " length %zu refused: %d %s", s->desc,
         th->id, kind_names[d.kind], src_names[d.src], d.off, d.len, r, raid_get_error());
    if (d.kind != K_FLUSH)
      unclaim(s, d.off, d.len, d.kind != K_READ);
    pthread_mutex_lock(&th->lock);
    free(o->buf);
    o->buf = NULL;
    o->busy = false;
    pthread_mutex_unlock(&th->lock);
    th->in_flight--;
    th->submitted--;
    return false;
  }
  return true;
}

/* Run the queue: block for a completion, or (the event-loop thread) poll
 * raid_queue_fd() like an epoll-driven server. */
static void
run_queue(struct sthread *th, bool wait)
{
  struct stress *s = th->s;
  int r;

  th->in_run = true;
  r = raid_queue_run(th->q, 0);
  th->in_run = false;
  if (r == 0 && wait && th->in_flight > 0) {
    if (th->event_loop) {
      struct pollfd p = { .fd = raid_queue_fd(th->q), .events = POLLIN };
      if (poll(&p, 1, 100) == 0) {
        th->in_run = true;
        r = raid_queue_run(th->q, 0);
        th->in_run = false;
        if (r > 0)
          th->late_wakeups++;
      }
      else {
        th->in_run = true;
        r = raid_queue_run(th->q, 0);
        th->in_run = false;
      }
    }
    else {
      th->in_run = true;
      r = raid_queue_run(th->q, 1);
      th->in_run = false;
    }
  }
  if (r < 0)
    serr(s, "%s: thread %u: raid_queue_run: %d %s", s->desc, th->id, r, raid_get_error());
  /* Write-behind I/O counts too, after its request completed. */
  else if (s->cf->write_behind ? raid_queue_in_flight(th->q) < th->in_flight
                               : raid_queue_in_flight(th->q) != th->in_flight)
    serr(s, "%s: thread %u: raid_queue_in_flight() says %u, the thread has %u requests "
         "in flight", s->desc, th->id, raid_queue_in_flight(th->q), th->in_flight);
}

static void *
thread_main(void *arg)
{
  struct sthread *th = arg;
  struct stress *s = th->s;
  int r;

  tl_self = th;
  r = raid_queue_new(256, &th->q);
  if (r != 0) {
    serr(s, "raid_queue_new: %d %s", r, raid_get_error());
    return NULL;
  }
  while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
    unsigned misses = 0;

    while (th->in_flight < QD && misses < 8 &&
           !atomic_load_explicit(&s->stop, memory_order_relaxed))
      if (!try_submit(th))
        misses++;
    if (th->in_flight == 0) {
      /* What we picked is claimed by others: let them finish. */
      run_queue(th, false);
      sched_yield();
      continue;
    }
    run_queue(th, true);
  }
  /* Finish what is in flight (after an error too: nothing is freed in
   * flight).  A hang here is the watchdog's. */
  while (th->in_flight > 0) {
    int before = (int)th->in_flight;
    run_queue(th, true);
    if (failed(s) && (int)th->in_flight == before && raid_queue_in_flight(th->q) == 0)
      break;                    /* the library lost count: do not spin */
  }
  /* The queue's write-behind I/O, if any, before the queue goes. */
  while (th->in_flight == 0 && raid_queue_in_flight(th->q) > 0)
    if (raid_queue_run(th->q, 1) < 0) {
      serr(s, "%s: thread %u: raid_queue_run: %s", s->desc, th->id, raid_get_error());
      break;
    }
  if (th->in_flight == 0 && raid_queue_in_flight(th->q) == 0)
    raid_queue_free(th->q);
  th->q = NULL;
  tl_self = NULL;
  return NULL;
}

/* ---- watchdog ------------------------------------------------------------------ */

static void
dump_state(struct stress *s, unsigned waited, const char *what)
{
  struct raid_member_info info[RAID_MAX_MEMBERS + 8];
  struct raid_sync_status st;
  uint64_t now = now_ns();
  unsigned i, j, n;

  fprintf(stderr, "test-stress: HANG: %s: %s for %u s (STRESS_HANG_SECONDS); "
          "control: %s; %" PRIu64 " requests completed in all\n", s->desc, what, waited,
          atomic_load(&s->phase), atomic_load(&s->completed));
  for (i = 0; i < THREADS; i++) {
    struct sthread *th = &s->th[i];
    pthread_mutex_lock(&th->lock);
    for (j = 0; j < QD; j++) {
      struct sreq *o = &th->req[j];
      if (!o->busy)
        continue;
      fprintf(stderr, "  thread %u slot %2u: %s (%s) at %" PRIu64 " length %zu%s, "
              "in flight for %.1f s\n", i, j, kind_names[o->kind], src_names[o->src],
              o->off, o->len, o->flags & RAID_REQ_FUA ? " FUA" : "",
              (now - o->t0_ns) / 1e9);
    }
    pthread_mutex_unlock(&th->lock);
  }
  raid_array_sync_status(s->a, &st);
  fprintf(stderr, "  sync: %s%s, %" PRIu64 " of %" PRIu64 "; degraded %u%s\n",
          raid_sync_action_name(st.action), st.due ? " (due)" : "", st.done, st.total,
          raid_array_degraded(s->a), raid_array_is_failed(s->a) ? ", FAILED" : "");
  n = raid_array_members(s->a, info, ARRAY_SIZE(info));
  for (i = 0; i < n && i < ARRAY_SIZE(info); i++)
    fprintf(stderr, "  member %s role %d state %d recovery_offset %" PRIu64 "\n",
            info[i].name, info[i].role, info[i].state, info[i].recovery_offset);
  log_dump();
  fflush(stderr);
}

/* A hang: while the load runs, no request completes for HANG_S seconds;
 * or the control thread makes no progress that long (stuck in a call, or
 * waiting for a sync that does not move). */
static void *
watchdog_main(void *arg)
{
  struct stress *s = arg;
  uint64_t last_c = UINT64_MAX, last_p = UINT64_MAX, t_c = now_ns(), t_p = t_c;
  uint64_t limit = (uint64_t)hang_s * 1000000000u;

  pthread_mutex_lock(&s->wd_lock);
  while (!s->wd_quit) {
    struct timespec ts;
    uint64_t c = atomic_load(&s->completed), p = atomic_load(&s->ctl_progress);
    uint64_t now = now_ns();

    if (c != last_c || !atomic_load(&s->load_running)) {
      last_c = c;
      t_c = now;
    }
    if (p != last_p) {
      last_p = p;
      t_p = now;
    }
    if (now - t_c > limit || now - t_p > limit) {
      dump_state(s, hang_s, now - t_c > limit ? "no request completed" :
                 "the control thread made no progress");
      abort();
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&s->wd_cond, &s->wd_lock, &ts);
  }
  pthread_mutex_unlock(&s->wd_lock);
  return NULL;
}

/* ---- members ------------------------------------------------------------------- */

/* Delays only: a different one for each quarter of the member, reads and
 * writes, and flushes, so member I/O completes out of order. */
static void
add_delays(struct stress *s, struct raid_member *m, struct rng *r)
{
  uint64_t size = raid_member_size(m), q = size / 4 / 512 * 512;
  unsigned k;

  for (k = 0; k < 4; k++) {
    struct raid_fault f = {
      .ops = RAID_FAULT_READ | RAID_FAULT_WRITE,
      .offset = k * q,
      .length = k == 3 ? 0 : q,
      .delay_us = (unsigned)rng_between(r, 1, s->cf->delay_us),
    };
    tassert(raid_fault_add(m, &f) == 0, "raid_fault_add: %s", raid_get_error());
  }
  {
    struct raid_fault f = { .ops = RAID_FAULT_FLUSH, .delay_us = s->cf->delay_us };
    tassert(raid_fault_add(m, &f) == 0, "raid_fault_add: %s", raid_get_error());
  }
}

static struct raid_member *
new_member(struct stress *s, bool delayed, struct rng *r)
{
  struct raid_member *m = NULL, *f = NULL;
  char name[64];
  int rc;

  snprintf(name, sizeof name, "st%u-m%u", s->idx, s->members_made++);
  rc = raid_member_new_ram(name, s->member_bytes, &m);
  tassert(rc == 0, "raid_member_new_ram: %d %s", rc, raid_get_error());
  if (!delayed || s->cf->delay_us == 0)
    return m;
  rc = raid_member_new_fault(m, &f);
  tassert(rc == 0, "raid_member_new_fault: %d %s", rc, raid_get_error());
  add_delays(s, f, r);
  return f;
}

static bool
redundant(const struct stress *s)
{
  return s->cf->level != RAID_LEVEL_0;
}

/* Roles that are not in sync (faulty, missing, recovering). */
static uint64_t
lost_mask(struct stress *s)
{
  uint64_t lost = 0;
  unsigned i;

  for (i = 0; i < s->cf->disks; i++)
    if (raid_array_member_state(s->a, i) != RAID_MEMBER_IN_SYNC)
      lost |= UINT64_C(1) << i;
  return lost;
}

/* A random in-sync role whose loss the array survives, or -1. */
static int
pick_victim(struct stress *s)
{
  uint64_t lost = lost_mask(s);
  unsigned n = s->cf->disks, start = (unsigned)rng_below(&s->crng, n), k;

  for (k = 0; k < n; k++) {
    unsigned i = (start + k) % n;
    if (!((lost >> i) & 1) && tconf_survives(&s->c, lost | (UINT64_C(1) << i)))
      return (int)i;
  }
  return -1;
}

static char *
role_name(struct stress *s, unsigned slot)
{
  struct raid_member *m = raid_array_member(s->a, slot);
  char *p;

  if (m == NULL)
    return NULL;
  p = strdup(raid_member_name(m));
  tassert(p != NULL, "out of memory");
  return p;
}

/* ---- control steps ------------------------------------------------------------------ */

static bool
timed_out(struct stress *s)
{
  return s->deadline && now_ns() >= s->deadline;
}

static bool
go_on(struct stress *s)
{
  return !failed(s) && !timed_out(s);
}

/* Wait until the load has completed N more requests. */
static bool
wait_ops(struct stress *s, uint64_t n)
{
  uint64_t start = atomic_load(&s->completed), seen = start;

  set_phase(s, "waiting for the load");
  while (go_on(s)) {
    uint64_t c = atomic_load(&s->completed);
    if (c - start >= n)
      return true;
    if (c != seen) {
      seen = c;
      atomic_fetch_add(&s->ctl_progress, 1);
    }
    nap();
  }
  return false;
}

/* Wait for the sync engine to be idle with nothing due; it must have
 * succeeded. */
static bool
wait_sync(struct stress *s, const char *what)
{
  struct raid_sync_status st;
  uint64_t done = UINT64_MAX;
  int r;

  set_phase(s, what);
  for (;;) {
    raid_array_sync_status(s->a, &st);
    if (st.action == RAID_SYNC_IDLE && !st.due)
      break;
    if (st.done != done) {
      done = st.done;
      atomic_fetch_add(&s->ctl_progress, 1);
    }
    if (failed(s))
      return false;
    nap();
  }
  r = raid_array_sync_wait(s->a);
  raid_array_sync_status(s->a, &st);
  if (r != 0 || st.last_result != 0) {
    serr(s, "%s: %s: the sync engine's %s ended with %d (wait: %d %s)", s->desc, what,
         raid_sync_action_name(st.last_action), st.last_result, r,
         r ? raid_get_error() : "");
    return false;
  }
  return true;
}

/* Start recovery unless auto sync does, then wait for it. */
static bool
rebuild(struct stress *s, const char *what)
{
  if (!s->auto_sync) {
    int r = raid_array_sync_start(s->a, RAID_SYNC_RECOVER);
    /* -EBUSY: something runs already (a check); wait_sync() waits for it
     * and recovery is then started again below. */
    if (r != 0 && r != -EBUSY) {
      serr(s, "%s: raid_array_sync_start(recover): %d %s", s->desc, r, raid_get_error());
      return false;
    }
    if (r == -EBUSY) {
      if (!wait_sync(s, what))
        return false;
      return rebuild(s, what);
    }
  }
  return wait_sync(s, what);
}

static bool
expect_state(struct stress *s, unsigned slot, int state, const char *when)
{
  int st = raid_array_member_state(s->a, slot);

  if (st != state) {
    serr(s, "%s: %s: role %u is in state %d, expected %d", s->desc, when, slot, st, state);
    return false;
  }
  return true;
}

static bool
ctl_fail(struct stress *s, unsigned slot)
{
  int r;

  set_phase(s, "failing a member");
  r = raid_array_fail_member(s->a, slot);
  if (r != 0) {
    serr(s, "%s: raid_array_fail_member(%u): %d %s", s->desc, slot, r, raid_get_error());
    return false;
  }
  s->changes++;
  return true;
}

static bool
ctl_remove(struct stress *s, const char *name, unsigned flags)
{
  int r, tries = 0;

  set_phase(s, flags ? "removing a member (forced)" : "removing a member");
  /* -EBUSY "changed state; try again" is the documented answer to a race
   * with the engine; a few tries, never a wait on time. */
  while ((r = raid_array_remove_member(s->a, name, flags)) == -EBUSY && ++tries < 3)
    sched_yield();
  if (r != 0) {
    serr(s, "%s: raid_array_remove_member(%s%s): %d %s", s->desc, name,
         flags ? ", FORCE" : "", r, raid_get_error());
    return false;
  }
  s->changes++;
  return true;
}

/* Add a new member; its role (-1: spare) in *ROLEP. */
static bool
ctl_add(struct stress *s, int *rolep, char **namep)
{
  struct raid_member *m = new_member(s, rng_percent(&s->crng, 50), &s->crng);
  char *name = strdup(raid_member_name(m));
  int r;

  set_phase(s, "adding a member");
  r = raid_array_add_member(s->a, m, rolep);
  if (r != 0) {
    serr(s, "%s: raid_array_add_member(%s): %d %s", s->desc, name, r, raid_get_error());
    free(name);
    return false;
  }
  s->changes++;
  if (namep)
    *namep = name;
  else
    free(name);
  return true;
}

/* Fail role SLOT (unless FORCE: remove it in sync), remove it, add a new
 * member into it, rebuild. */
static bool
cycle_role(struct stress *s, unsigned slot, bool force, bool wait_between)
{
  char *old = role_name(s, slot);
  int role = -2;
  bool ok;

  ok = old != NULL;
  if (ok && !force)
    ok = ctl_fail(s, slot);
  if (ok && wait_between)
    ok = wait_ops(s, s->target / 32 + 1);
  if (ok)
    ok = ctl_remove(s, old, force ? RAID_REMOVE_FORCE : 0);
  if (ok)
    ok = expect_state(s, slot, RAID_MEMBER_MISSING, "after the removal");
  if (ok) {
    /* The new member takes a role that has no working member: SLOT, or
     * one lost before (degraded scenario). */
    uint64_t lost = lost_mask(s);
    ok = ctl_add(s, &role, NULL);
    if (ok && (role < 0 || !((lost >> role) & 1) ||
               (lost == (UINT64_C(1) << slot) && role != (int)slot))) {
      serr(s, "%s: a member added while roles 0x%" PRIx64 " had no working member "
           "took role %d", s->desc, lost, role);
      ok = false;
    }
  }
  if (ok)
    ok = rebuild(s, "rebuilding");
  if (ok)
    ok = expect_state(s, (unsigned)role, RAID_MEMBER_IN_SYNC, "after the rebuild");
  free(old);
  return ok;
}

/* Every retired member (failed, without a role) removed. */
static bool
remove_retired(struct stress *s)
{
  struct raid_member_info info[RAID_MAX_MEMBERS + 8];
  unsigned n, i;
  bool ok = true;

  for (;;) {
    char *name = NULL;
    n = raid_array_members(s->a, info, ARRAY_SIZE(info));
    for (i = 0; i < n && i < ARRAY_SIZE(info) && !name; i++)
      if (info[i].role < 0 && info[i].state == RAID_MEMBER_FAULTY)
        name = strdup(info[i].name);
    if (name == NULL)
      return ok;
    ok = ctl_remove(s, name, 0);
    free(name);
    if (!ok)
      return false;
  }
}

/* Every spare removed. */
static bool
remove_spares(struct stress *s, unsigned keep)
{
  struct raid_member_info info[RAID_MAX_MEMBERS + 8];
  unsigned n, i, spares;

  for (;;) {
    char *name = NULL;
    n = raid_array_members(s->a, info, ARRAY_SIZE(info));
    for (i = spares = 0; i < n && i < ARRAY_SIZE(info); i++)
      if (info[i].role < 0 && info[i].state == RAID_MEMBER_SPARE) {
        spares++;
        if (!name)
          name = strdup(info[i].name);
      }
    if (spares <= keep) {
      free(name);
      return true;
    }
    if (!ctl_remove(s, name, 0)) {
      free(name);
      return false;
    }
    free(name);
  }
}

/* ---- scenarios ------------------------------------------------------------------- */

/* Repeat while there is time (torture) or for N rounds. */
static bool
more(struct stress *s, unsigned *round, unsigned n)
{
  if (failed(s))
    return false;
  if (s->deadline)
    return !timed_out(s);
  return (*round)++ < n;
}

static void
sc_sync(struct stress *s)
{
  unsigned round = 0;

  while (more(s, &round, 2)) {
    struct raid_sync_status st;
    int r;

    if (!wait_ops(s, s->target / 4 + 1))
      return;
    if (!redundant(s))
      continue;
    set_phase(s, "check (scrub) under load");
    r = raid_array_sync_start(s->a, RAID_SYNC_CHECK);
    if (r != 0) {
      serr(s, "%s: raid_array_sync_start(check): %d %s", s->desc, r, raid_get_error());
      return;
    }
    if (!wait_sync(s, "check (scrub) under load"))
      return;
    raid_array_sync_status(s->a, &st);
    if (st.last_action != RAID_SYNC_CHECK || st.last_mismatches != 0) {
      serr(s, "%s: check under load: last action %s, %" PRIu64 " mismatched sectors "
           "(writes hold the locks a check takes: there must be none)", s->desc,
           raid_sync_action_name(st.last_action), st.last_mismatches);
      return;
    }
  }
}

/* A role went missing (or failed) before the load started (setup());
 * here a second one is lost where the level survives it. */
static void
sc_degraded(struct stress *s)
{
  unsigned round = 0;

  while (more(s, &round, 1)) {
    int y;
    char *name;

    if (!wait_ops(s, s->target / 3 + 1))
      return;
    y = pick_victim(s);
    if (y < 0) {
      if (s->deadline)
        continue;               /* RAID 5: stays degraded by one */
      return;
    }
    if (!ctl_fail(s, (unsigned)y) || !wait_ops(s, s->target / 3 + 1))
      return;
    if (!s->deadline)
      return;
    /* Torture: bring the second one back and lose it again later. */
    name = role_name(s, (unsigned)y);
    if (name && !cycle_role(s, (unsigned)y, false, false)) {
      free(name);
      return;
    }
    free(name);
  }
}

static void
sc_fail(struct stress *s)
{
  unsigned round = 0;

  while (more(s, &round, 1)) {
    int x, y, role;
    unsigned i;

    if (!wait_ops(s, s->target / 4 + 1))
      return;
    if ((x = pick_victim(s)) < 0 || !ctl_fail(s, (unsigned)x))
      return;
    if (!wait_ops(s, s->target / 4 + 1))
      return;
    if ((y = pick_victim(s)) >= 0 && (!ctl_fail(s, (unsigned)y) ||
                                      !wait_ops(s, s->target / 4 + 1)))
      return;
    if (!s->deadline)
      return;
    /* Torture: make it whole again under load, then again. */
    for (i = 0; i < s->cf->disks; i++) {
      char *old;
      if (raid_array_member_state(s->a, i) != RAID_MEMBER_FAULTY)
        continue;
      old = role_name(s, i);
      if (!ctl_remove(s, old, 0) || !ctl_add(s, &role, NULL)) {
        free(old);
        return;
      }
      free(old);
    }
    if (!rebuild(s, "rebuilding"))
      return;
  }
}

static void
sc_rebuild(struct stress *s)
{
  unsigned round = 0;

  while (more(s, &round, 1)) {
    int x;

    if (!wait_ops(s, s->target / 5 + 1))
      return;
    if ((x = pick_victim(s)) < 0 || !cycle_role(s, (unsigned)x, false, false))
      return;
  }
}

static void
sc_replace(struct stress *s)
{
  unsigned round = 0;

  while (more(s, &round, 2)) {
    struct raid_member *m;
    char *old, *name;
    int x, r;
    bool ok = true;

    if (!wait_ops(s, s->target / 6 + 1))
      return;
    x = (int)rng_below(&s->crng, s->cf->disks);
    old = role_name(s, (unsigned)x);
    m = new_member(s, rng_percent(&s->crng, 50), &s->crng);
    name = strdup(raid_member_name(m));
    set_phase(s, "replacing a member");
    r = raid_array_replace_member(s->a, (unsigned)x, m);
    if (r != 0) {
      serr(s, "%s: raid_array_replace_member(%d, %s): %d %s", s->desc, x, name, r,
           raid_get_error());
      ok = false;
    }
    else
      s->changes++;
    if (ok && raid_array_degraded(s->a) != 0) {
      serr(s, "%s: degraded %u while replacing role %d", s->desc,
           raid_array_degraded(s->a), x);
      ok = false;
    }
    if (ok)
      ok = rebuild(s, "replacing");
    if (ok && raid_array_member(s->a, (unsigned)x) != m) {
      serr(s, "%s: after the replacement, role %d is not %s", s->desc, x, name);
      ok = false;
    }
    if (ok)
      ok = expect_state(s, (unsigned)x, RAID_MEMBER_IN_SYNC, "after the replacement");
    if (ok)
      ok = wait_ops(s, s->target / 16 + 1);
    if (ok)
      ok = ctl_remove(s, old, 0);
    free(old);
    free(name);
    if (!ok)
      return;
  }
}

/* Add spares until the array refuses one (or SPARE_PROBE of them), under
 * load: each must be accepted as a spare or refused cleanly, and the list
 * must hold what was accepted.  Then keep KEEP. */
static bool
spare_probe(struct stress *s, unsigned keep)
{
  unsigned accepted = 0, i, n, n0 = raid_array_members(s->a, NULL, 0);
  int r;

  set_phase(s, "adding spares");
  for (i = 0; i < SPARE_PROBE && !failed(s); i++) {
    struct raid_member *m = new_member(s, false, &s->crng);
    char name[64];
    int role = -2;

    snprintf(name, sizeof name, "%s", raid_member_name(m));
    r = raid_array_add_member(s->a, m, &role);
    if (r != 0) {
      test_verbose("%s: spare %u refused: %d %s", s->desc, i, r, raid_get_error());
      break;
    }
    if (role != -1) {
      serr(s, "%s: %s added to a whole array took role %d, not a spare", s->desc, name,
           role);
      return false;
    }
    accepted++;
    s->changes++;
    atomic_fetch_add(&s->ctl_progress, 1);
  }
  n = raid_array_members(s->a, NULL, 0);
  if (n != n0 + accepted) {
    serr(s, "%s: after %u more spares were accepted, raid_array_members() counts %u "
         "members, expected %u", s->desc, accepted, n, n0 + accepted);
    return false;
  }
  return remove_spares(s, keep);
}

/* Fail a role with a spare ready: the engine gives the spare the role. */
static bool
spare_takes_over(struct stress *s)
{
  int x = pick_victim(s);
  char *old;
  bool ok;

  if (x < 0)
    return true;
  old = role_name(s, (unsigned)x);
  ok = ctl_fail(s, (unsigned)x) && wait_sync(s, "hot spare taking over");
  if (ok && raid_array_member(s->a, (unsigned)x) == NULL) {
    serr(s, "%s: role %d has no member after a spare should have taken it", s->desc, x);
    ok = false;
  }
  if (ok && strcmp(raid_member_name(raid_array_member(s->a, (unsigned)x)), old) == 0) {
    serr(s, "%s: no spare took over failed role %d", s->desc, x);
    ok = false;
  }
  if (ok)
    ok = expect_state(s, (unsigned)x, RAID_MEMBER_IN_SYNC, "after a spare took over");
  if (ok)
    ok = wait_ops(s, s->target / 16 + 1);
  if (ok)
    ok = ctl_remove(s, old, 0);
  free(old);
  return ok;
}

static void
sc_spare(struct stress *s)
{
  unsigned round = 0;
  int role;

  if (!ctl_add(s, &role, NULL) || !ctl_add(s, &role, NULL))
    return;
  while (more(s, &round, 2)) {
    if (!wait_ops(s, s->target / 6 + 1) || !spare_takes_over(s))
      return;
    if (s->deadline && !ctl_add(s, &role, NULL))
      return;
  }
  /* Then, still under load, as many spares as the array takes, and none
   * again. */
  if (!failed(s))
    spare_probe(s, 0);
}

static void
sc_remove(struct stress *s)
{
  unsigned round = 0;

  while (more(s, &round, 1)) {
    int x;

    /* A forced removal of an in-sync member. */
    if (!wait_ops(s, s->target / 5 + 1))
      return;
    if ((x = pick_victim(s)) < 0 || !cycle_role(s, (unsigned)x, true, false))
      return;
    /* A failed member removed at once, its I/O still in flight. */
    if (!wait_ops(s, s->target / 5 + 1))
      return;
    if ((x = pick_victim(s)) < 0 || !cycle_role(s, (unsigned)x, false, false))
      return;
  }
}

static void
sc_cycle(struct stress *s)
{
  unsigned round = 0, n = UNDER_SANITIZER ? 3 : 4;

  while (more(s, &round, n)) {
    int x;

    if (!wait_ops(s, s->target / 10 + 1))
      return;
    if ((x = pick_victim(s)) < 0 ||
        !cycle_role(s, (unsigned)x, round % 3 == 2, round % 2 == 1))
      return;
  }
}

static void
run_scenario(struct stress *s)
{
  switch (s->k->sc) {
  case SC_SYNC: sc_sync(s); break;
  case SC_DEGRADED: sc_degraded(s); break;
  case SC_FAIL: sc_fail(s); break;
  case SC_REBUILD: sc_rebuild(s); break;
  case SC_REPLACE: sc_replace(s); break;
  case SC_SPARE: sc_spare(s); break;
  case SC_REMOVE: sc_remove(s); break;
  case SC_CYCLE: sc_cycle(s); break;
  case SC_N: break;
  }
  set_phase(s, "scenario done, load running to its end");
}

/* ---- setup, final checks ------------------------------------------------------------ */

/* Requests a case makes at least (without TORTURE_SECONDS). */
static uint64_t
case_target(void)
{
  uint64_t n = test_scale(UNDER_SANITIZER ? OPS_SANITIZER : OPS_DEFAULT);

  return test_under_valgrind() ? MIN(n, 200) : n;
}

static void
setup(struct stress *s, unsigned idx)
{
  const struct scase *k = &cases[idx];
  const struct sconf *cf = &confs[k->conf];
  struct raid_member *m[RAID_MAX_MEMBERS] = { NULL };
  struct raid_config cfg;
  char cbuf[200], name[32];
  unsigned i, missing = RAID_MAX_MEMBERS;
  uint64_t off;
  uint8_t *buf;
  int r;

  idx = k->id;
  s->idx = idx;
  s->k = k;
  s->cf = cf;
  s->seed = test_seed_for(idx);
  rng_seed(&s->crng, s->seed);
  pthread_mutex_init(&s->err_lock, NULL);
  pthread_mutex_init(&s->wd_lock, NULL);
  pthread_cond_init(&s->wd_cond, NULL);
  s->data_offset = cf->create ? 64 * KiB : 0;
  s->member_bytes = s->data_offset + cf->data;
  s->c = (struct tconf){ cf->level, cf->layout, cf->disks, cf->chunk, s->data_offset,
                         s->member_bytes };
  s->auto_sync = k->sc == SC_SPARE || (idx & 1);
  s->limited = (idx & 2) != 0;
  snprintf(s->desc, sizeof s->desc, "[#%u %s %s%s%s seed=0x%016" PRIx64 "]", idx,
           tconf_str(&s->c, cbuf, sizeof cbuf), scen_names[k->sc],
           s->auto_sync ? " auto-sync" : "", s->limited ? " rate-limited" : "", s->seed);

  for (i = 0; i < cf->disks; i++) {
    m[i] = new_member(s, (cf->delay_mask >> i) & 1, &s->crng);
    raid_member_set_write_mostly(m[i], (cf->wm_mask >> i) & 1);
  }
  if (k->sc == SC_DEGRADED && !cf->create && (idx & 4)) {
    /* Missing from the start. */
    missing = (unsigned)rng_below(&s->crng, cf->disks);
    raid_member_close(m[missing]);
    m[missing] = NULL;
  }
  snprintf(name, sizeof name, "st%u", idx);
  memset(&cfg, 0, sizeof cfg);
  cfg.name = name;
  cfg.level = cf->level;
  cfg.layout = cf->layout;
  cfg.chunk_size = cf->chunk;
  cfg.raid_disks = cf->disks;
  cfg.data_offset = s->data_offset;
  if (cf->write_behind) {
    cfg.bitmap = RAID_BITMAP_INTERNAL;
    cfg.write_behind = cf->write_behind;
  }
  if (cf->create)
    r = raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &s->a);
  else
    r = raid_array_new(&cfg, m, &s->a);
  tassert(r == 0, "%s: creating the array: %d %s", s->desc, r, raid_get_error());
  s->size = raid_array_size(s->a);
  s->member_size = raid_array_member_size(s->a);

  /* Shapes. */
  switch (cf->level) {
  case RAID_LEVEL_1:
    s->C = 16 * KiB;
    s->D = 4;
    break;
  case RAID_LEVEL_5:
    s->C = cf->chunk;
    s->D = cf->disks - 1;
    break;
  default:
    s->C = cf->chunk;
    s->D = cf->disks;
    break;
  }
  s->rb = s->C * s->D;
  s->rows = s->size / s->rb;
  tassert(s->rows >= 2, "%s: too few rows", s->desc);
  s->maxreq = MIN(MIN(s->size / 4, (uint64_t)RAID_MAX_REQUEST), 3 * s->rb);
  s->maxreq = MAX(s->maxreq / 512 * 512, 512);
  /* Streams: 1.5 rows from the start, half rows from the middle. */
  s->stream[0].base = 0;
  s->stream[0].len = s->rb + s->rb / 2;
  s->stream[1].base = s->rows / 2 * s->rb;
  s->stream[1].len = s->rb / 2;
  for (i = 0; i < 2; i++)
    s->stream[i].n = (s->size - s->stream[i].base) / s->stream[i].len;

  s->shadow = calloc(1, s->size);
  s->claim = calloc(s->size / 512, sizeof *s->claim);
  tassert(s->shadow && s->claim, "out of memory");
  s->ref.c = s->c;
  s->ref.size = s->size;
  s->ref.shadow = s->shadow;
  snprintf(s->ref.desc, sizeof s->ref.desc, "%s", s->desc);

  /* Random data everywhere, so reads and rebuilds carry something. */
  buf = test_alloc(1 * MiB);
  for (off = 0; off < s->size; off += 1 * MiB) {
    size_t len = (size_t)MIN(s->size - off, 1 * MiB);
    tag_data(&s->crng, buf, off, len, 0);
    r = raid_pwrite(s->a, buf, len, off, 0);
    tassert(r == 0, "%s: filling: %d %s", s->desc, r, raid_get_error());
    memcpy(s->shadow + off, buf, len);
  }
  test_free(buf);

  if (k->sc == SC_DEGRADED && missing == RAID_MAX_MEMBERS) {
    int x = pick_victim(s);
    tassert(x >= 0, "%s: no role to fail", s->desc);
    tassert(raid_array_fail_member(s->a, (unsigned)x) == 0, "%s: fail %d: %s", s->desc,
            x, raid_get_error());
    s->changes++;
  }
  /* Rate-limited rebuilds and checks overlap more of the load (a pass
   * takes 1/16 s, 1/4 s under torture); the others go as fast as they can
   * (the default minimum under load would be 1000 KiB/s). */
  if (s->limited) {
    uint64_t rate = (torture_s ? 4 : 16) * s->member_size;
    raid_array_set_sync_limits(s->a, rate, rate);
  }
  else
    raid_array_set_sync_limits(s->a, UINT64_C(1) << 40, 0);
  raid_array_set_auto_sync(s->a, s->auto_sync);

  s->target = case_target();
  for (i = 0; i < THREADS; i++) {
    struct sthread *th = &s->th[i];
    th->s = s;
    th->id = i;
    th->event_loop = i == 0 || test_under_valgrind();
    rng_seed(&th->rng, test_seed_for(UINT64_C(1000) * (idx + 1) + i));
    pthread_mutex_init(&th->lock, NULL);
  }
}

static void
teardown(struct stress *s)
{
  unsigned i;

  if (s->a)
    raid_array_free(s->a);
  for (i = 0; i < THREADS; i++) {
    unsigned j;
    for (j = 0; j < QD; j++)
      free(s->th[i].req[j].buf);
    pthread_mutex_destroy(&s->th[i].lock);
  }
  free(s->shadow);
  free((void *)s->claim);
  pthread_mutex_destroy(&s->err_lock);
  pthread_mutex_destroy(&s->wd_lock);
  pthread_cond_destroy(&s->wd_cond);
}

/* Fail the test with the errors recorded. */
static void
report_errors(struct stress *s)
{
  unsigned n = atomic_load(&s->errors), i;
  char all[MAX_ERRORS_KEPT * 1100];
  size_t w = 0;

  if (n == 0)
    return;
  log_dump();
  for (i = 0; i < n && i < MAX_ERRORS_KEPT; i++)
    w += (size_t)snprintf(all + w, sizeof all - MIN(w, sizeof all), "%s%s",
                          i ? "\n  then: " : "", s->err[i]);
  ck_abort_msg("%s: %u error%s:\n  %s", s->desc, n, n == 1 ? "" : "s", all);
}

/* Read the whole array and compare with the shadow. */
static void
check_all(struct stress *s, const char *when)
{
  uint8_t *buf = test_alloc(1 * MiB);
  char msg[1024], what[96];
  uint64_t off;

  snprintf(what, sizeof what, "final read (%s)", when);
  for (off = 0; off < s->size; off += 1 * MiB) {
    size_t len = (size_t)MIN(s->size - off, 1 * MiB);
    int r = raid_pread(s->a, buf, len, off);
    tassert(r == 0, "%s: %s: raid_pread at %" PRIu64 ": %d %s", s->desc, what, off, r,
            raid_get_error());
    if (tarray_diff(&s->ref, buf, off, len, what, msg, sizeof msg))
      ck_abort_msg("%s", msg);
    atomic_fetch_add(&s->ctl_progress, 1);
  }
  test_free(buf);
}

/* Make the array whole: new members into every role not in sync,
 * rebuilt, and failed members without a role removed. */
static void
heal(struct stress *s)
{
  unsigned i;
  bool added = false;

  tassert(wait_sync(s, "final: waiting for the engine"), "%s: the sync engine failed",
          s->desc);
  for (i = 0; i < s->cf->disks; i++) {
    int st = raid_array_member_state(s->a, i), role = -2;
    if (st == RAID_MEMBER_FAULTY) {
      char *old = role_name(s, i);
      tassert(ctl_remove(s, old, 0), "%s: heal: removing %s failed", s->desc, old);
      free(old);
      st = RAID_MEMBER_MISSING;
    }
    if (st == RAID_MEMBER_MISSING) {
      tassert(ctl_add(s, &role, NULL) && role == (int)i,
              "%s: heal: adding a member for role %u gave role %d", s->desc, i, role);
      added = true;
    }
  }
  if (added || raid_array_degraded(s->a))
    tassert(rebuild(s, "final: rebuilding"), "%s: the final rebuild failed", s->desc);
  tassert(remove_retired(s) && remove_spares(s, 0), "%s: final removals failed", s->desc);
  for (i = 0; i < s->cf->disks; i++)
    tassert(raid_array_member_state(s->a, i) == RAID_MEMBER_IN_SYNC,
            "%s: after healing, role %u is in state %d", s->desc, i,
            raid_array_member_state(s->a, i));
  tassert(raid_array_degraded(s->a) == 0 && raid_array_members(s->a, NULL, 0) == s->cf->disks,
          "%s: after healing: degraded %u, %u members", s->desc,
          raid_array_degraded(s->a), raid_array_members(s->a, NULL, 0));
}

/* Read every member directly and check md's layout, parity and copies. */
static void
check_members(struct stress *s)
{
  uint8_t *data[RAID_MAX_MEMBERS] = { NULL };
  const char *names[RAID_MAX_MEMBERS] = { NULL };
  unsigned i;
  int r;

  r = raid_flush(s->a);
  tassert(r == 0, "%s: raid_flush: %d %s", s->desc, r, raid_get_error());
  for (i = 0; i < s->cf->disks; i++) {
    struct raid_member *m = raid_array_member(s->a, i);
    tassert(m != NULL, "%s: role %u has no member", s->desc, i);
    names[i] = raid_member_name(m);
    data[i] = test_alloc(s->member_size);
    r = member_pio(m, false, data[i], s->member_size, s->data_offset);
    tassert(r == 0, "%s: reading member %s: %d %s", s->desc, names[i], r, raid_get_error());
  }
  tcheck_layout(&s->c, s->desc, names, (const uint8_t *const *)data, s->member_size,
                s->shadow, s->size);
  for (i = 0; i < s->cf->disks; i++)
    test_free(data[i]);
}

START_TEST(test_stress)
{
  struct stress *s = calloc(1, sizeof *s);
  struct raid_array_stats ast;
  struct raid_sync_status st;
  uint64_t done_at, t0, ops = 0, whole = 0, late = 0, n[5] = { 0 }, b[5] = { 0 };
  unsigned i;
  int r;

  tassert(s != NULL, "out of memory");
  setup(s, (unsigned)_i);
  t0 = now_ns();
  s->t_start = t0;
  s->deadline = torture_s ? t0 + (uint64_t)torture_s * 1000000000u : 0;
  atomic_store(&s->load_running, true);
  tassert(pthread_create(&s->wd, NULL, watchdog_main, s) == 0, "pthread_create");
  for (i = 0; i < THREADS; i++)
    tassert(pthread_create(&s->th[i].tid, NULL, thread_main, &s->th[i]) == 0,
            "pthread_create");

  run_scenario(s);
  /* Let the load run to its count (or its time). */
  while (!failed(s) && (s->deadline ? !timed_out(s) : atomic_load(&s->completed) < s->target)) {
    atomic_fetch_add(&s->ctl_progress, 1);
    nap();
  }
  set_phase(s, "stopping the load: waiting for the requests in flight");
  atomic_store(&s->stop, true);
  for (i = 0; i < THREADS; i++)
    pthread_join(s->th[i].tid, NULL);
  atomic_store(&s->load_running, false);
  done_at = now_ns();
  set_phase(s, "final checks");
  report_errors(s);

  for (i = 0; i < THREADS; i++) {
    struct sthread *th = &s->th[i];
    unsigned k;
    tassert(th->completed == th->submitted, "%s: thread %u: %" PRIu64 " submitted, %"
            PRIu64 " completed", s->desc, i, th->submitted, th->completed);
    ops += th->completed;
    whole += th->whole_rows;
    late += th->late_wakeups;
    for (k = 0; k < 5; k++) {
      n[k] += th->n[k];
      b[k] += th->bytes[k];
    }
  }
  r = raid_array_stats(s->a, &ast, NULL, 0);
  tassert(r >= 0, "raid_array_stats: %d", r);

  /* No more delays: the checks need no reordering. */
  for (i = 0; i < s->cf->disks; i++) {
    struct raid_member *m = raid_array_member(s->a, i);
    if (m && strcmp(raid_member_kind(m), "fault") == 0)
      raid_fault_clear(m);
  }
  tassert(!raid_array_is_failed(s->a), "%s: the array failed", s->desc);
  check_all(s, raid_array_degraded(s->a) ? "degraded" : "whole");
  if (redundant(s)) {
    heal(s);
    report_errors(s);
    if (s->changes)
      check_all(s, "after healing");
    set_phase(s, "final check (scrub)");
    r = raid_array_sync_start(s->a, RAID_SYNC_CHECK);
    tassert(r == 0, "%s: raid_array_sync_start(check): %d %s", s->desc, r, raid_get_error());
    tassert(wait_sync(s, "final check (scrub)"), "%s: the final check failed", s->desc);
    raid_array_sync_status(s->a, &st);
    tassert(st.last_action == RAID_SYNC_CHECK && st.last_mismatches == 0,
            "%s: final check: last action %s, %" PRIu64 " mismatched sectors", s->desc,
            raid_sync_action_name(st.last_action), st.last_mismatches);
  }
  check_members(s);
  report_errors(s);

  printf("test-stress: %s: %.2f s: %" PRIu64 " requests completed: %" PRIu64 " writes "
         "%.1f MiB, %" PRIu64 " reads %.1f MiB read and verified, %" PRIu64
         " write-zeroes %.1f MiB, %" PRIu64 " discards %.1f MiB, %" PRIu64 " flushes; "
         "%u membership changes; errors 0",
         s->k->name, (done_at - t0) / 1e9, ops, n[K_WRITE], b[K_WRITE] / (double)MiB,
         n[K_READ], b[K_READ] / (double)MiB, n[K_ZERO], b[K_ZERO] / (double)MiB,
         n[K_DISCARD], b[K_DISCARD] / (double)MiB, n[K_FLUSH], s->changes);
  if (s->cf->level == RAID_LEVEL_5)
    printf("; stripe writes: full %" PRIu64 " (rows written whole by one request %"
           PRIu64 "), rmw %" PRIu64 ", rcw %" PRIu64 ", degraded %" PRIu64,
           ast.full_stripe_writes, whole, ast.rmw_writes, ast.rcw_writes,
           ast.degraded_writes);
  if (late)
    printf("; %" PRIu64 " late wakeups of raid_queue_fd()", late);
  printf("\n");
  fflush(stdout);

  pthread_mutex_lock(&s->wd_lock);
  s->wd_quit = true;
  pthread_cond_signal(&s->wd_cond);
  pthread_mutex_unlock(&s->wd_lock);
  pthread_join(s->wd, NULL);
  teardown(s);
  free(s);
}
END_TEST

static void
build_cases(void)
{
  const char *only = getenv("STRESS_ONLY");
  unsigned c, sc, id = 0;

  for (sc = 0; sc < SC_N; sc++)
    for (c = 0; c < ARRAY_SIZE(confs); c++) {
      const struct sconf *cf = &confs[c];
      struct scase *k = &cases[ncases];
      char chunk[32] = "";

      if (cf->level == RAID_LEVEL_0 && sc != SC_SYNC)
        continue;
      k->id = id++;
      k->conf = c;
      k->sc = (enum scen)sc;
      if (cf->level != RAID_LEVEL_1)
        snprintf(chunk, sizeof chunk, " chunk=%uK", cf->chunk / 1024);
      snprintf(k->name, sizeof k->name, "#%u raid%d%s%s disks=%u%s data=%" PRIu64 "K%s%s%s: %s",
               k->id, cf->level, cf->level == RAID_LEVEL_1 ? "" : " ",
               layout_name(cf->level, cf->layout), cf->disks, chunk, cf->data / KiB,
               cf->delay_mask ? " delays" : "", cf->create ? " md-metadata" : "",
               cf->write_behind ? " write-behind" : "", scen_names[sc]);
      if (only && *only && strstr(k->name, only) == NULL)
        continue;
      /* A bitmap's writer thread never runs under valgrind (tests/Makefile.inc,
       * VALGRIND_PROGS). */
      if (cf->write_behind && test_under_valgrind())
        continue;
      /* valgrind (make check-valgrind) is some 50 times slower: a sample. */
      if ((!only || !*only) && test_under_valgrind() && k->id % 6 != 0)
        continue;
      ncases++;
    }
}

int
main(void)
{
  const char *p;
  Suite *s;
  TCase *tc;

  test_init("test-stress");
  p = getenv("TORTURE_SECONDS");
  if (p && *p)
    torture_s = (unsigned)strtoul(p, NULL, 10);
  p = getenv("STRESS_HANG_SECONDS");
  if (p && *p && strtoul(p, NULL, 10) > 0)
    hang_s = (unsigned)strtoul(p, NULL, 10);
  build_cases();
  raid_set_log_handler(log_fn, NULL, RAID_LOG_INFO);
  if (torture_s)
    printf("test-stress: %u cases of %u threads x %u requests in flight, "
           "TORTURE_SECONDS=%u each (about %u s in all)\n", ncases, THREADS, QD,
           torture_s, torture_s * ncases);
  else
    printf("test-stress: %u cases of %u threads x %u requests in flight, %" PRIu64
           " requests each at least\n", ncases, THREADS, QD, case_target());
  fflush(stdout);
  s = suite_create("stress");
  tc = test_tcase("stress");
  /* A torture run must not be cut by Check's timeout: each case runs
   * TORTURE_SECONDS, then its checks. */
  if (torture_s)
    tcase_set_timeout(tc, 2.0 * torture_s + 600);
  tcase_add_loop_test(tc, test_stress, 0, (int)ncases);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
