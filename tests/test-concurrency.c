/* Description: several threads, each with its own raid_queue and many
 * asynchronous requests in flight, share one array.
 *
 * To make the expected result deterministic, every thread owns disjoint
 * bytes of the array: the array is cut into 4 KiB units and unit U belongs
 * to thread (U >> G) % THREADS, where the granularity G cycles between 0,
 * 4 and 8 (4 KiB, 64 KiB, 1 MiB runs) from one 2 MiB region to the next.
 * So threads never write the same bytes, yet on RAID 5 they constantly
 * read-modify-write the same stripes (fine runs), mix partial and full
 * stripe writes in neighbouring rows (coarse runs), and a thread never has
 * two requests on the same unit in flight.  Each read is compared with the
 * shadow when it completes (only the owner writes there); afterwards the
 * whole array must equal the shadow and every stripe's parity must be the
 * XOR of its data.  One thread drives its queue from poll(2) on
 * raid_queue_fd() instead of blocking in raid_queue_run().  Configurations include member delays (completions out
 * of order) and a degraded RAID 5 (reconstruct-writes under contention).
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define THREADS 4
#define QD 16
#define OPS_PER_THREAD 800
#define UNIT 4096u
#define REGION_UNITS 512u      /* 2 MiB */

struct cconf {
  struct tconf c;
  uint64_t missing;
  unsigned delay_us;       /* delay every I/O of member 0 and 1 this much */
};

static const struct cconf confs[] = {
  { { RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 3, 4 * KiB, 0, 4 * MiB }, 0, 0 },
  { { RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 4, 64 * KiB, 1 * MiB, 5 * MiB }, 0, 0 },
  { { RAID_LEVEL_5, RAID_LAYOUT_LEFT_ASYMMETRIC, 5, 4 * KiB, 0, 2 * MiB }, 0, 0 },
  { { RAID_LEVEL_5, RAID_LAYOUT_RIGHT_ASYMMETRIC, 4, 4 * KiB, 0, 2 * MiB }, 0, 0 },
  { { RAID_LEVEL_5, RAID_LAYOUT_RIGHT_SYMMETRIC, 6, 512 * KiB, 0, 8 * MiB }, 0, 0 },
  { { RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 4, 64 * KiB, 0, 4 * MiB }, 0, 300 },
  { { RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 4, 4 * KiB, 0, 2 * MiB }, 0x2, 0 },
  { { RAID_LEVEL_5, RAID_LAYOUT_RIGHT_SYMMETRIC, 3, 64 * KiB, 0, 4 * MiB }, 0x1, 200 },
  { { RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 3, 0, 0, 4 * MiB }, 0, 0 },
  { { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 4, 4 * KiB, 0, 2 * MiB }, 0, 0 },
  { { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 3, 64 * KiB, 0, 4 * MiB }, 0, 100 },
  { { RAID_LEVEL_0, RAID_LAYOUT_DEFAULT, 3, 4 * KiB, 0, 2 * MiB }, 0, 0 },
};

struct cthread;

enum cop_kind { C_WRITE, C_READ, C_DISCARD, C_ZERO, C_FLUSH };

struct cop {
  struct cthread *th;
  enum cop_kind kind;
  uint64_t off;
  size_t len;
  uint8_t *buf;
  bool in_use;
};

struct cthread {
  pthread_t tid;
  unsigned id;
  struct tarray *t;
  uint8_t *busy;             /* per unit; only units this thread owns */
  uint64_t units;
  struct rng rng;
  struct raid_queue *q;
  struct cop ops[QD];
  unsigned in_flight, submitted, completed, target;
  uint64_t gen;
  bool failed;
  char err[1024];
};

static unsigned
unit_shift(uint64_t u)
{
  static const unsigned shifts[] = { 0, 4, 8 };

  return shifts[(u / REGION_UNITS) % 3];
}

static unsigned
unit_owner(uint64_t u)
{
  return (unsigned)((u >> unit_shift(u)) % THREADS);
}

static void
th_fail(struct cthread *th, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

static void
th_fail(struct cthread *th, const char *fmt, ...)
{
  va_list ap;

  if (th->failed)
    return;
  th->failed = true;
  va_start(ap, fmt);
  vsnprintf(th->err, sizeof th->err, fmt, ap);
  va_end(ap);
}

static void
mark(struct cthread *th, uint64_t off, size_t len, uint8_t v)
{
  uint64_t u;

  for (u = off / UNIT; u <= (off + len - 1) / UNIT; u++)
    th->busy[u] = v;
}

static void
cop_done(void *opaque, int result)
{
  struct cop *o = opaque;
  struct cthread *th = o->th;
  struct tarray *t = th->t;
  char msg[1024];

  th->in_flight--;
  th->completed++;
  o->in_use = false;
  if (result != 0)
    th_fail(th, "%s: thread %u: request %d at %" PRIu64 " length %zu failed: %d",
            t->desc, th->id, o->kind, o->off, o->len, result);
  else {
    switch (o->kind) {
    case C_WRITE:
      memcpy(t->shadow + o->off, o->buf, o->len);
      break;
    case C_DISCARD: case C_ZERO:
      memset(t->shadow + o->off, 0, o->len);
      break;
    case C_READ:
      if (tarray_diff(t, o->buf, o->off, o->len, "concurrent read", msg, sizeof msg))
        th_fail(th, "thread %u: %s", th->id, msg);
      break;
    case C_FLUSH:
      break;
    }
  }
  if (o->kind != C_FLUSH)
    mark(th, o->off, o->len, 0);
  free(o->buf);
  o->buf = NULL;
}

/* A range owned by TH with no request of TH in flight; false if none found. */
static bool
pick_range(struct cthread *th, uint64_t *offp, size_t *lenp)
{
  unsigned tries;

  for (tries = 0; tries < 16; tries++) {
    uint64_t u = rng_below(&th->rng, th->units), run, start, end, s, e, i;
    unsigned sh = unit_shift(u);
    uint64_t region_end = (u / REGION_UNITS + 1) * REGION_UNITS;
    bool free_ = true;

    /* The run of TH nearest below U in U's region. */
    run = (u >> sh) - ((u >> sh) % THREADS) + th->id;
    start = run << sh;
    end = MIN(start + (UINT64_C(1) << sh), MIN(region_end, th->units));
    if (start >= end || start < (u / REGION_UNITS) * REGION_UNITS)
      continue;
    /* A sub-range in sectors. */
    s = start * 8 + rng_below(&th->rng, (end - start) * 8);
    e = rng_percent(&th->rng, 30) ? end * 8
      : s + 1 + rng_below(&th->rng, MIN(end * 8 - s, (uint64_t)256));
    for (i = s / 8; i <= (e - 1) / 8; i++) {
      if (unit_owner(i) != th->id)
        th_fail(th, "internal: unit %" PRIu64 " not owned by %u", i, th->id);
      if (th->busy[i])
        free_ = false;
    }
    if (!free_)
      continue;
    *offp = s * 512;
    *lenp = (size_t)(e - s) * 512;
    return true;
  }
  return false;
}

static bool
submit_one(struct cthread *th)
{
  struct tarray *t = th->t;
  struct cop *o = NULL;
  unsigned i, p;
  int r;

  for (i = 0; i < QD; i++)
    if (!th->ops[i].in_use) {
      o = &th->ops[i];
      break;
    }
  if (o == NULL)
    return false;
  memset(o, 0, sizeof *o);
  o->th = th;
  p = (unsigned)rng_below(&th->rng, 100);
  o->kind = p < 45 ? C_WRITE : p < 92 ? C_READ : p < 95 ? C_DISCARD : p < 98 ? C_ZERO : C_FLUSH;
  if (o->kind != C_FLUSH && !pick_range(th, &o->off, &o->len))
    return false;
  if (o->kind == C_WRITE || o->kind == C_READ) {
    if (posix_memalign((void **)&o->buf, 4096, o->len) != 0) {
      th_fail(th, "out of memory");
      return false;
    }
  }
  switch (o->kind) {
  case C_WRITE:
    tag_data(&th->rng, o->buf, o->off, o->len, ((uint64_t)th->id << 40) | ++th->gen);
    r = raid_aio_write(th->q, t->a, o->buf, o->len, o->off,
                       rng_percent(&th->rng, 10) ? RAID_REQ_FUA : 0, cop_done, o);
    break;
  case C_READ:
    memset(o->buf, 0xee, o->len);
    r = raid_aio_read(th->q, t->a, o->buf, o->len, o->off, cop_done, o);
    break;
  case C_DISCARD:
    r = raid_aio_discard(th->q, t->a, o->len, o->off, cop_done, o);
    break;
  case C_ZERO:
    r = raid_aio_write_zeroes(th->q, t->a, o->len, o->off, 0, cop_done, o);
    break;
  default:
    r = raid_aio_flush(th->q, t->a, cop_done, o);
    break;
  }
  if (r != 0) {
    th_fail(th, "%s: thread %u: request %d at %" PRIu64 " length %zu refused: %d %s",
            t->desc, th->id, o->kind, o->off, o->len, r, raid_get_error());
    free(o->buf);
    o->buf = NULL;
    return false;
  }
  o->in_use = true;
  if (o->kind != C_FLUSH)
    mark(th, o->off, o->len, 1);
  th->in_flight++;
  th->submitted++;
  return true;
}

static void *
thread_main(void *arg)
{
  struct cthread *th = arg;
  int r;

  r = raid_queue_new(128, &th->q);
  if (r != 0) {
    th_fail(th, "raid_queue_new: %d %s", r, raid_get_error());
    return NULL;
  }
  while (!th->failed && (th->submitted < th->target || th->in_flight > 0)) {
    while (!th->failed && th->submitted < th->target && th->in_flight < QD)
      if (!submit_one(th))
        break;
    if (th->in_flight == 0)
      continue;
    if (th->id == 0 || test_under_valgrind()) {
      /* Thread 0 runs an event loop: raid_queue_run(q, 0) to submit and
       * complete what is ready, then poll(2) on raid_queue_fd(), which must
       * become readable when completions are due, or requests would hang.
       * Under valgrind every thread does: valgrind (3.19) holds its big
       * lock while a thread blocks in io_uring_enter(), so a thread waiting
       * there for another thread's stripe lock would wait forever
       * (liburing issue #657); poll(2) lets the other threads run. */
      r = raid_queue_run(th->q, 0);
      if (r == 0 && th->in_flight > 0) {
        struct pollfd p = { .fd = raid_queue_fd(th->q), .events = POLLIN };
        if (poll(&p, 1, 30000) == 0) {
          th_fail(th, "%s: thread 0: raid_queue_fd() not readable for 30 s with %u "
                  "requests in flight", th->t->desc, th->in_flight);
          break;
        }
      }
    }
    else
      r = raid_queue_run(th->q, 1);
    if (r < 0)
      th_fail(th, "raid_queue_run: %d %s", r, raid_get_error());
    else if (raid_queue_in_flight(th->q) != th->in_flight)
      th_fail(th, "raid_queue_in_flight %u, the thread counts %u",
              raid_queue_in_flight(th->q), th->in_flight);
  }
  /* Drain what is left after a failure, so nothing is freed in flight. */
  while (th->in_flight > 0 && raid_queue_run(th->q, 1) >= 0)
    ;
  raid_queue_free(th->q);
  th->q = NULL;
  return NULL;
}

START_TEST(test_threads)
{
  const struct cconf *cc = &confs[_i];
  struct tarray t;
  struct cthread th[THREADS];
  uint8_t *busy;
  unsigned i;

  tarray_setup(&t, &cc->c, cc->delay_us ? TA_FAULT : 0, cc->missing, test_seed_for(_i));
  if (cc->delay_us) {
    /* Members 0 and 1 slow (and member 1 slower), so member I/Os and
     * requests complete out of order. */
    for (i = 0; i < 2; i++) {
      struct raid_fault rule = {
        .ops = RAID_FAULT_READ | RAID_FAULT_WRITE, .delay_us = cc->delay_us * (i + 1),
      };
      if (t.m[i])
        ck_assert(raid_fault_add(t.m[i], &rule) == 0);
    }
  }
  /* Start from random data everywhere. */
  {
    uint64_t off;
    for (off = 0; off < t.size; off += MIN(t.size - off, 1 * MiB))
      tarray_write(&t, off, MIN(t.size - off, 1 * MiB), 0);
  }
  busy = calloc(1, t.size / UNIT + 1);
  ck_assert(busy != NULL);
  memset(th, 0, sizeof th);
  for (i = 0; i < THREADS; i++) {
    th[i].id = i;
    th[i].t = &t;
    th[i].busy = busy;
    th[i].units = t.size / UNIT;
    th[i].target = test_scale(OPS_PER_THREAD);
    rng_seed(&th[i].rng, test_seed_for(1000 * (_i + 1) + i));
  }
  for (i = 0; i < THREADS; i++)
    ck_assert(pthread_create(&th[i].tid, NULL, thread_main, &th[i]) == 0);
  for (i = 0; i < THREADS; i++)
    pthread_join(th[i].tid, NULL);
  for (i = 0; i < THREADS; i++)
    tassert(!th[i].failed, "%s", th[i].err);
  for (i = 0; i < THREADS; i++)
    tassert(th[i].completed == th[i].submitted,
                  "%s: thread %u: %u submitted, %u completed", t.desc, i,
                  th[i].submitted, th[i].completed);
  free(busy);
  if (cc->delay_us)
    for (i = 0; i < 2; i++)
      if (t.m[i])
        raid_fault_clear(t.m[i]);
  tarray_check_all(&t);
  tarray_check_placement(&t);
  tarray_teardown(&t);
}
END_TEST

int
main(void)
{
  Suite *s;
  TCase *tc;

  /* First: it forks a helper, which should not inherit allocations. */
  test_init("test-concurrency");
  s = suite_create("concurrency");
  tc = test_tcase("threads");
  tcase_add_loop_test(tc, test_threads, 0, ARRAY_SIZE(confs));
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
