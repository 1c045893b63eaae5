/* The stress harness's load (tests/stress.h): THREADS threads each
 * submitting up to QD requests on its own queue, the claim table that keeps
 * any interleaving checkable, completions checked against the shadow, the
 * watchdog, errors and the library's last log messages. */

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

#include "stress.h"

static const char *const kind_names[] = { "read", "write", "write-zeroes", "discard", "flush" };
static const char *const src_names[] = { "random", "rows", "job piece", "stream" };

static _Thread_local struct sthread *tl_self;

/* The library's last log messages (printed with errors and hangs). */
#define LOG_KEEP 24
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_ring[LOG_KEEP][200];
static unsigned log_next;

unsigned hang_s = HANG_DEFAULT_S;
const char *stress_prog = "test-stress";

void
log_fn(int priority, const char *msg, void *opaque)
{
  (void)opaque;
  pthread_mutex_lock(&log_lock);
  snprintf(log_ring[log_next++ % LOG_KEEP], sizeof log_ring[0], "%s%s",
           priority <= RAID_LOG_WARNING ? "warning: " : "", msg);
  pthread_mutex_unlock(&log_lock);
  test_verbose("libraid: %s", msg);
}

void
log_dump(void)
{
  unsigned i;

  pthread_mutex_lock(&log_lock);
  fprintf(stderr, "%s: the library's last log messages:\n", stress_prog);
  for (i = log_next > LOG_KEEP ? log_next - LOG_KEEP : 0; i < log_next; i++)
    fprintf(stderr, "  libraid: %s\n", log_ring[i % LOG_KEEP]);
  log_next = 0;
  pthread_mutex_unlock(&log_lock);
}

uint64_t
now_ns(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Let other threads run while waiting for a condition (never for
 * correctness: every wait loops on a condition). */
void
nap(void)
{
  struct timespec ts = { 0, 1000000 };

  nanosleep(&ts, NULL);
}

/* Record an error (from any thread) and stop the case. */
void
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
  fprintf(stderr, "%s: ERROR: %s\n", stress_prog, s->err[n]);
  pthread_mutex_unlock(&s->err_lock);
}

bool
failed(struct stress *s)
{
  return atomic_load(&s->errors) > 0;
}

void
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

void *
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

  fprintf(stderr, "%s: HANG: %s: %s for %u s (STRESS_HANG_SECONDS); "
          "control: %s; %" PRIu64 " requests completed in all\n", stress_prog, s->desc,
          what, waited,
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
void *
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
