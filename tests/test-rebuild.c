/* Description: rebuilds (lib/sync/), for RAID 1 over 2 and 3 members,
 * RAID 5 over 3 and 4 (left-symmetric and the asymmetric layouts) and
 * RAID 10 near-2 over 4 and 3, with 64 KiB chunks and members of a few MiB.
 *
 *  - rebuild: a failed member is replaced by a fresh one and rebuilt while
 *    another thread keeps writing; afterwards the new member is in sync, a
 *    check finds no mismatch, every byte reads back, the members hold md's
 *    layout, and the data still reads back with the rebuilt member as the
 *    only copy (other members failed);
 *  - replace: md's --replace under load never degrades the array, the new
 *    member takes the role, the old one is retired;
 *  - hot spare: with auto sync a spare takes over a failed role by itself;
 *    the failed member can then be removed;
 *  - failures during a rebuild: a source failing stops a RAID 5 rebuild
 *    and fails the array, a RAID 1 rebuild goes on from another copy, a
 *    target failing abandons its rebuild and keeps the data; a member
 *    added while a rebuild is in its first step is rebuilt too.
 *
 * Under valgrind the syncs run without client I/O at the same time (see
 * with_load()).
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "recovery.h"

/* ---- a writer thread -------------------------------------------------------------------------- */

/* Writes random ranges of T (writes, some FUA, write-zeroes, discards)
 * until stopped.  T's generator and shadow belong to whoever holds LOCK;
 * a write and its shadow update happen under it, so with the lock held
 * the shadow is exactly what the array must read. */
struct load {
  struct tarray *t;
  pthread_mutex_t lock;
  pthread_t tid;
  atomic_bool stop;
  atomic_bool reader_waiting;
  atomic_ulong writes;
  bool failed;
  char err[1024];
};

static void *
load_main(void *arg)
{
  struct load *l = arg;
  struct tarray *t = l->t;

  while (!atomic_load(&l->stop)) {
    uint64_t off;
    size_t len;
    unsigned kind;
    void *buf = NULL;
    int r;

    while (atomic_load(&l->reader_waiting))
      sched_yield();
    pthread_mutex_lock(&l->lock);
    tarray_random_range(t, &off, &len);
    kind = (unsigned)rng_below(&t->rng, 20);
    if (kind == 0)
      r = raid_write_zeroes(t->a, len, off, 0);
    else if (kind == 1)
      r = raid_discard(t->a, len, off);
    else {
      if (posix_memalign(&buf, 4096, len) != 0)
        abort();
      tarray_make_data(t, buf, off, len);
      r = raid_pwrite(t->a, buf, len, off, kind == 2 ? RAID_REQ_FUA : 0);
    }
    if (r == 0) {
      if (buf)
        memcpy(t->shadow + off, buf, len);
      else
        memset(t->shadow + off, 0, len);
    }
    else {
      l->failed = true;
      snprintf(l->err, sizeof l->err, "%s: %s of %zu bytes at %" PRIu64 " failed "
               "during the sync: %d %s", t->desc,
               kind == 0 ? "write-zeroes" : kind == 1 ? "discard" : "write",
               len, off, r, raid_get_error());
    }
    pthread_mutex_unlock(&l->lock);
    free(buf);
    if (r != 0)
      break;
    atomic_fetch_add(&l->writes, 1);
  }
  return NULL;
}

/* Client I/O while the engine runs.  Not under valgrind (3.19): a thread
 * blocked in io_uring_enter() holds valgrind's big lock there, and the
 * engine blocks in its queue waiting for a stripe lock that a client holds
 * (or a client for one the engine holds), so neither could run again (see
 * test-concurrency.c, liburing issue #657).  There the syncs run without
 * the writer thread and the reads. */
static bool
with_load(void)
{
  return !test_under_valgrind();
}

/* Start writing, and return once some writes are through. */
static void
load_start(struct load *l, struct tarray *t)
{
  double t0 = now_s();

  memset(l, 0, sizeof *l);
  l->t = t;
  pthread_mutex_init(&l->lock, NULL);
  atomic_init(&l->stop, false);
  atomic_init(&l->reader_waiting, false);
  atomic_init(&l->writes, 0);
  ck_assert(pthread_create(&l->tid, NULL, load_main, l) == 0);
  while (atomic_load(&l->writes) < 3 && !l->failed && now_s() - t0 < 60)
    sleep_ms(1);
}

static void
load_lock(struct load *l)
{
  atomic_store(&l->reader_waiting, true);
  pthread_mutex_lock(&l->lock);
  atomic_store(&l->reader_waiting, false);
}

static void
load_stop(struct load *l)
{
  atomic_store(&l->stop, true);
  pthread_join(l->tid, NULL);
  pthread_mutex_destroy(&l->lock);
  tassert(!l->failed, "%s", l->err);
}

/* While the engine runs: read a random range and compare it with the
 * shadow (with the writer held off, so the shadow is exact). */
struct poll_ctx {
  struct load *l;
  struct tarray *t;
  unsigned reads;
  /* replace: the array must stay whole all along */
  bool check_whole;
  unsigned slot;
  const char *new_name;
  unsigned seen_replacement;
};

static void
poll_load(void *arg)
{
  struct poll_ctx *p = arg;
  struct tarray *t = p->t;
  uint64_t off;
  size_t len;

  if (p->check_whole) {
    struct raid_member_info mi;
    unsigned d = raid_array_degraded(t->a);
    int st = raid_array_member_state(t->a, p->slot);

    tassert(d == 0, "%s: raid_array_degraded() = %u while role %u is being "
            "replaced", t->desc, d, p->slot);
    tassert(st == RAID_MEMBER_IN_SYNC, "%s: role %u state %d while it is being "
            "replaced", t->desc, p->slot, st);
    if (find_info(t->a, p->new_name, &mi) && mi.state == RAID_MEMBER_REPLACEMENT) {
      tassert(mi.role == (int)p->slot, "%s: replacement %s listed with role %d, "
              "expected %u", t->desc, p->new_name, mi.role, p->slot);
      p->seen_replacement++;
    }
  }
  if (p->l == NULL) {
    sleep_ms(1);
    return;
  }
  load_lock(p->l);
  tarray_random_range(t, &off, &len);
  tarray_read_check(t, off, len);
  pthread_mutex_unlock(&p->l->lock);
  p->reads++;
  sleep_ms(1);
}

/* ---- rebuild under load ---------------------------------------------------------------------- */

/* A member fails; a fresh one is added (it takes the role, recovering) and
 * rebuilt while another thread writes and this one reads.  The member is
 * then in sync, check finds nothing, everything reads back, the members
 * hold md's layout (the new one included), and the data reads back with
 * the new member as the only copy. */
START_TEST(test_rebuild_under_load)
{
  const struct tconf *c = &rconfs[_i];
  unsigned slot = victim(_i);
  struct tarray t;
  struct tmembers x;
  struct raid_member *m;
  struct raid_sync_status st;
  struct load l;
  struct poll_ctx pc;
  char *name, *old;
  unsigned long w0, w1;
  int r;

  tarray_setup(&t, c, TA_NO_PATTERN, 0, test_seed_for(100 + _i));
  tmembers_create(&x, 1, NULL, c->member_bytes);
  raid_array_set_sync_limits(t.a, 3 * t.member_size, 3 * t.member_size);
  tarray_fill(&t);

  old = strdup(raid_member_name(raid_array_member(t.a, slot)));
  r = raid_array_fail_member(t.a, slot);
  tassert(r == 0, "%s: fail %u: %d", t.desc, slot, r);
  assert_state(t.a, t.desc, slot, RAID_MEMBER_FAULTY);
  tassert(raid_array_degraded(t.a) == 1, "%s: degraded %u", t.desc,
          raid_array_degraded(t.a));

  m = tmembers_open(&x, 0, false);
  name = strdup(raid_member_name(m));
  r = add_member(t.a, m);
  tassert(r == (int)slot, "%s: raid_array_add_member into a degraded array "
          "returned %d (%s), expected role %u", t.desc, r,
          r < 0 ? raid_get_error() : "", slot);
  assert_state(t.a, t.desc, slot, RAID_MEMBER_RECOVERING);
  tassert(raid_array_member(t.a, slot) == m, "%s: role %u is not the new member",
          t.desc, slot);
  assert_listed(t.a, t.desc, name, (int)slot, RAID_MEMBER_RECOVERING);
  assert_listed(t.a, t.desc, old, -1, RAID_MEMBER_FAULTY);
  tassert(raid_array_degraded(t.a) == 1, "%s: degraded %u while recovering",
          t.desc, raid_array_degraded(t.a));

  memset(&pc, 0, sizeof pc);
  pc.t = &t;
  if (with_load()) {
    load_start(&l, &t);
    pc.l = &l;
  }
  w0 = pc.l ? atomic_load(&l.writes) : 0;
  r = raid_array_sync_start(t.a, RAID_SYNC_RECOVER);
  tassert(r == 0, "%s: sync_start(recover): %d %s", t.desc, r, raid_get_error());
  r = wait_sync(t.a, t.desc, poll_load, &pc);
  w1 = pc.l ? atomic_load(&l.writes) : 1;
  if (pc.l)
    load_stop(&l);
  tassert(r == 0, "%s: the rebuild failed: %d %s", t.desc, r, raid_get_error());
  raid_array_set_sync_limits(t.a, 0, 0);
  tassert(w1 > w0, "%s: no write ran during the rebuild", t.desc);
  if (pc.l)
    test_verbose("%s: %lu writes and %u reads during the rebuild", t.desc, w1 - w0,
                 pc.reads);
  get_sync_status(t.a, &st);
  tassert(st.last_action == RAID_SYNC_RECOVER && st.last_result == 0,
          "%s: last action %s result %d", t.desc,
          raid_sync_action_name(st.last_action), st.last_result);

  assert_state(t.a, t.desc, slot, RAID_MEMBER_IN_SYNC);
  assert_listed(t.a, t.desc, name, (int)slot, RAID_MEMBER_IN_SYNC);
  tassert(raid_array_degraded(t.a) == 0, "%s: degraded %u after the rebuild",
          t.desc, raid_array_degraded(t.a));
  assert_check_clean(t.a, t.desc);
  tarray_check_all(&t);
  swap_in(&t, slot, &x, 0);
  tarray_check_placement(&t);
  verify_from(&t, slot);

  free(name);
  free(old);
  tarray_teardown(&t);
  tmembers_destroy(&x);
}
END_TEST

/* ---- replace under load ------------------------------------------------------------------------ */

/* md's --replace on a healthy array while a thread writes: the array never
 * counts as degraded, the new member takes the role in sync and the old
 * one is listed as failed without a role (and can be removed). */
START_TEST(test_replace_under_load)
{
  const struct tconf *c = &rconfs[_i];
  unsigned slot = (victim(_i) + 1) % c->disks;
  struct tarray t;
  struct tmembers x;
  struct raid_member *m;
  struct load l;
  struct poll_ctx pc;
  char *name, *old;
  unsigned long w0, w1;
  int r;

  tarray_setup(&t, c, TA_NO_PATTERN, 0, test_seed_for(200 + _i));
  tmembers_create(&x, 1, NULL, c->member_bytes);
  raid_array_set_sync_limits(t.a, 3 * t.member_size, 3 * t.member_size);
  tarray_fill(&t);
  old = strdup(raid_member_name(raid_array_member(t.a, slot)));

  memset(&pc, 0, sizeof pc);
  pc.t = &t;
  if (with_load()) {
    load_start(&l, &t);
    pc.l = &l;
  }
  m = tmembers_open(&x, 0, false);
  name = strdup(raid_member_name(m));
  r = raid_array_replace_member(t.a, slot, m);
  tassert(r == 0, "%s: raid_array_replace_member(%u): %d %s", t.desc, slot, r,
          raid_get_error());
  tassert(raid_array_degraded(t.a) == 0, "%s: degraded %u after replace started",
          t.desc, raid_array_degraded(t.a));
  assert_listed(t.a, t.desc, name, (int)slot, RAID_MEMBER_REPLACEMENT);
  tassert(find_member(t.a, name) == (int)slot,
          "%s: find_member(%s) = %d", t.desc, name,
          find_member(t.a, name));

  pc.check_whole = true;
  pc.slot = slot;
  pc.new_name = name;
  w0 = pc.l ? atomic_load(&l.writes) : 0;
  r = raid_array_sync_start(t.a, RAID_SYNC_RECOVER);
  tassert(r == 0, "%s: sync_start(recover): %d %s", t.desc, r, raid_get_error());
  r = wait_sync(t.a, t.desc, poll_load, &pc);
  w1 = pc.l ? atomic_load(&l.writes) : 1;
  if (pc.l)
    load_stop(&l);
  tassert(r == 0, "%s: the replacement failed: %d %s", t.desc, r, raid_get_error());
  raid_array_set_sync_limits(t.a, 0, 0);
  tassert(w1 > w0, "%s: no write ran during the replacement", t.desc);

  tassert(raid_array_member(t.a, slot) == m, "%s: role %u is not the new member",
          t.desc, slot);
  assert_listed(t.a, t.desc, name, (int)slot, RAID_MEMBER_IN_SYNC);
  assert_listed(t.a, t.desc, old, -1, RAID_MEMBER_FAULTY);
  assert_state(t.a, t.desc, slot, RAID_MEMBER_IN_SYNC);
  tassert(raid_array_degraded(t.a) == 0, "%s: degraded %u after the replacement",
          t.desc, raid_array_degraded(t.a));
  tassert(find_member(t.a, old) == -1, "%s: retired %s: find_member %d",
          t.desc, old, find_member(t.a, old));
  tarray_check_all(&t);
  assert_check_clean(t.a, t.desc);
  swap_in(&t, slot, &x, 0);
  tarray_check_placement(&t);

  r = raid_array_remove_member(t.a, old, 0);
  tassert(r == 0, "%s: removing the retired %s: %d %s", t.desc, old, r,
          raid_get_error());
  tassert(find_member(t.a, old) == -ENOENT, "%s: %s still listed",
          t.desc, old);
  tassert(raid_array_members(t.a, NULL, 0) == c->disks, "%s: %u members listed",
          t.desc, raid_array_members(t.a, NULL, 0));
  verify_from(&t, slot);

  free(name);
  free(old);
  tarray_teardown(&t);
  tmembers_destroy(&x);
}
END_TEST

/* ---- hot spare ----------------------------------------------------------------------------- */

/* With auto sync, a member added to a healthy array is a spare; when a
 * member fails, the spare takes its role and is rebuilt (while a thread
 * writes) without being asked; the failed member can be removed. */
START_TEST(test_hot_spare)
{
  const struct tconf *c = &rconfs[_i];
  unsigned slot = victim(_i), i;
  struct tarray t;
  struct tmembers x;
  struct raid_member *m;
  struct load l;
  struct poll_ctx pc;
  char *name, *old, *log;
  int r;

  test_log_capture(RAID_LOG_INFO);
  tarray_setup(&t, c, TA_NO_PATTERN, 0, test_seed_for(300 + _i));
  tmembers_create(&x, 1, NULL, c->member_bytes);
  raid_array_set_sync_limits(t.a, 3 * t.member_size, 3 * t.member_size);
  raid_array_set_auto_sync(t.a, 1);
  tarray_fill(&t);
  old = strdup(raid_member_name(raid_array_member(t.a, slot)));

  m = tmembers_open(&x, 0, false);
  name = strdup(raid_member_name(m));
  r = add_member(t.a, m);
  tassert(r == -1, "%s: raid_array_add_member to a healthy array returned %d (%s), "
          "expected -1 (spare)", t.desc, r, r < -1 ? raid_get_error() : "");
  assert_listed(t.a, t.desc, name, -1, RAID_MEMBER_SPARE);
  tassert(find_member(t.a, name) == -1, "%s: find_member(spare) = %d",
          t.desc, find_member(t.a, name));
  r = raid_array_sync_wait(t.a);
  tassert(r == 0, "%s: sync_wait with a spare: %d", t.desc, r);
  for (i = 0; i < c->disks; i++)
    assert_state(t.a, t.desc, i, RAID_MEMBER_IN_SYNC);
  assert_listed(t.a, t.desc, name, -1, RAID_MEMBER_SPARE);

  memset(&pc, 0, sizeof pc);
  pc.t = &t;
  if (with_load()) {
    load_start(&l, &t);
    pc.l = &l;
  }
  r = raid_array_fail_member(t.a, slot);
  tassert(r == 0, "%s: fail %u: %d", t.desc, slot, r);
  r = wait_sync(t.a, t.desc, poll_load, &pc);
  if (pc.l)
    load_stop(&l);
  tassert(r == 0, "%s: the automatic rebuild failed: %d %s", t.desc, r,
          raid_get_error());
  raid_array_set_sync_limits(t.a, 0, 0);

  tassert(raid_array_member(t.a, slot) == m, "%s: the spare did not take role %u",
          t.desc, slot);
  assert_state(t.a, t.desc, slot, RAID_MEMBER_IN_SYNC);
  assert_listed(t.a, t.desc, name, (int)slot, RAID_MEMBER_IN_SYNC);
  assert_listed(t.a, t.desc, old, -1, RAID_MEMBER_FAULTY);
  tassert(raid_array_degraded(t.a) == 0, "%s: degraded %u", t.desc,
          raid_array_degraded(t.a));
  log = test_log_copy();
  tassert(strstr(log, "hot spare") && strstr(log, name), "%s: no log message about "
          "hot spare %s taking over; the log was:\n%s", t.desc, name, log);
  free(log);
  raid_set_log_handler(NULL, NULL, RAID_LOG_INFO);

  tarray_check_all(&t);
  swap_in(&t, slot, &x, 0);
  tarray_check_placement(&t);

  r = raid_array_remove_member(t.a, old, 0);
  tassert(r == 0, "%s: removing failed member %s: %d %s", t.desc, old, r,
          raid_get_error());
  tassert(find_member(t.a, old) == -ENOENT,
          "%s: removed member %s is still found", t.desc, old);
  {
    struct raid_member_info mi;
    tassert(!find_info(t.a, old, &mi), "%s: removed member %s still listed",
            t.desc, old);
  }
  tassert(raid_array_members(t.a, NULL, 0) == c->disks, "%s: %u members listed",
          t.desc, raid_array_members(t.a, NULL, 0));
  assert_check_clean(t.a, t.desc);
  verify_from(&t, slot);

  free(name);
  free(old);
  tarray_teardown(&t);
  tmembers_destroy(&x);
}
END_TEST

/* ---- failures during a rebuild ------------------------------------------------------------------- */

/* RAID 5: a source member failing reads during the rebuild stops it with
 * an error; the array has lost two members and fails all I/O with -EIO. */
START_TEST(test_source_fails_raid5)
{
  struct rarray ra;
  struct raid_fault rule = { .ops = RAID_FAULT_READ, .after = 1, .error = EIO };
  struct raid_sync_status st;
  uint8_t buf[4096];
  int r;

  rarray_new(&ra, RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 3, 4 * MiB, 0x2, 900);
  rarray_fill(&ra);
  rarray_renew(&ra, 0, "new", false);
  /* The first read of member 1 (the rebuild's first step) passes. */
  ck_assert(raid_fault_add(ra.m[1], &rule) == 0);
  r = raid_array_sync_start(ra.a, RAID_SYNC_RECOVER);
  tassert(r == 0, "%s: sync_start: %d", ra.desc, r);
  r = wait_sync(ra.a, ra.desc, NULL, NULL);
  tassert(r == -EIO, "%s: the rebuild with a failing source returned %d, expected -EIO",
          ra.desc, r);
  get_sync_status(ra.a, &st);
  tassert(st.last_action == RAID_SYNC_RECOVER && st.last_result == -EIO,
          "%s: last action %d result %d", ra.desc, st.last_action, st.last_result);
  tassert(raid_fault_count(ra.m[1]) > 0, "%s: the fault never fired", ra.desc);
  assert_state(ra.a, ra.desc, 1, RAID_MEMBER_FAULTY);
  tassert(raid_array_member_state(ra.a, 0) != RAID_MEMBER_IN_SYNC,
          "%s: half-rebuilt member 0 in sync", ra.desc);
  tassert(raid_array_is_failed(ra.a) == 1, "%s: the array has not failed", ra.desc);
  r = raid_pread(ra.a, buf, sizeof buf, 0);
  tassert(r == -EIO, "%s: read of a failed array: %d", ra.desc, r);
  r = raid_pwrite(ra.a, buf, sizeof buf, 0, 0);
  tassert(r == -EIO, "%s: write to a failed array: %d", ra.desc, r);
  r = raid_array_sync_start(ra.a, RAID_SYNC_RECOVER);
  tassert(r == -EIO, "%s: recover on a failed array: %d", ra.desc, r);
  rarray_free(&ra);
}
END_TEST

/* RAID 1 over 3: a source failing during the rebuild is failed, and the
 * rebuild goes on from the other copy and completes. */
START_TEST(test_source_fails_raid1)
{
  struct rarray ra;
  struct raid_fault rule = { .ops = RAID_FAULT_READ, .after = 1, .error = EIO };
  int r;

  rarray_new(&ra, RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 3, 4 * MiB, 0x2, 910);
  rarray_fill(&ra);
  rarray_renew(&ra, 0, "new", false);
  ck_assert(raid_fault_add(ra.m[1], &rule) == 0);
  r = raid_array_sync_start(ra.a, RAID_SYNC_RECOVER);
  tassert(r == 0, "%s: sync_start: %d", ra.desc, r);
  r = wait_sync(ra.a, ra.desc, NULL, NULL);
  tassert(raid_fault_count(ra.m[1]) > 0, "%s: the fault never fired", ra.desc);
  tassert(r == 0, "%s: the rebuild stopped when one of two sources failed: %d %s; "
          "role 0 state %d", ra.desc, r, raid_get_error(),
          raid_array_member_state(ra.a, 0));
  assert_state(ra.a, ra.desc, 0, RAID_MEMBER_IN_SYNC);
  assert_state(ra.a, ra.desc, 1, RAID_MEMBER_FAULTY);
  tassert(raid_array_degraded(ra.a) == 1 && !raid_array_is_failed(ra.a),
          "%s: degraded %u failed %d", ra.desc, raid_array_degraded(ra.a),
          raid_array_is_failed(ra.a));
  rarray_verify(&ra, "after the rebuild");
  r = raid_array_fail_member(ra.a, 2);
  tassert(r == 0, "%s: fail 2", ra.desc);
  rarray_verify(&ra, "from the rebuilt member alone");
  rarray_free(&ra);
}
END_TEST

/* RAID 5: the member being rebuilt fails its writes: the rebuild stops
 * with an error, the member is faulty, the array stays degraded with its
 * data; another fresh member then rebuilds fine. */
START_TEST(test_target_fails)
{
  struct rarray ra;
  struct raid_fault rule = { .ops = RAID_FAULT_WRITE, .after = 1, .error = EIO };
  struct raid_member *m;
  struct raid_sync_status st;
  int r;

  rarray_new(&ra, RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 3, 4 * MiB, 0, 920);
  rarray_fill(&ra);
  m = rarray_renew(&ra, 2, "bad", true);
  ck_assert(raid_fault_add(m, &rule) == 0);
  r = raid_array_sync_start(ra.a, RAID_SYNC_RECOVER);
  tassert(r == 0, "%s: sync_start: %d", ra.desc, r);
  r = wait_sync(ra.a, ra.desc, NULL, NULL);
  tassert(raid_fault_count(m) > 0, "%s: the fault never fired", ra.desc);
  get_sync_status(ra.a, &st);
  tassert(r < 0 && st.last_result < 0, "%s: a rebuild whose target failed returned "
          "%d (last result %d)", ra.desc, r, st.last_result);
  assert_state(ra.a, ra.desc, 2, RAID_MEMBER_FAULTY);
  tassert(raid_array_degraded(ra.a) == 1 && !raid_array_is_failed(ra.a),
          "%s: degraded %u failed %d", ra.desc, raid_array_degraded(ra.a),
          raid_array_is_failed(ra.a));
  rarray_verify(&ra, "after the target failed");

  rarray_renew(&ra, 2, "good", false);
  run_action(ra.a, ra.desc, RAID_SYNC_RECOVER);
  assert_state(ra.a, ra.desc, 2, RAID_MEMBER_IN_SYNC);
  tassert(raid_array_degraded(ra.a) == 0, "%s: degraded %u", ra.desc,
          raid_array_degraded(ra.a));
  assert_check_clean(ra.a, ra.desc);
  r = raid_array_fail_member(ra.a, 0);
  tassert(r == 0, "%s: fail 0", ra.desc);
  rarray_verify(&ra, "with the rebuilt member");
  rarray_free(&ra);
}
END_TEST

/* Two members added one after the other while auto sync runs (RAID 1
 * over 3 with two members lost): the second arrives while the engine is in
 * the middle of its first step for the first (its writes are slowed down
 * to make that certain).  Both must end up holding all the data: the
 * second is read alone at the end. */
START_TEST(test_add_during_rebuild)
{
  struct rarray ra;
  struct raid_fault slow = { .ops = RAID_FAULT_WRITE, .delay_us = 200000 };
  struct raid_sync_status st;
  struct raid_member *a1, *b;
  double t0;
  int r;

  rarray_new(&ra, RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 3, 4 * MiB, 0, 930);
  rarray_fill(&ra);
  r = raid_array_fail_member(ra.a, 1);
  r |= raid_array_fail_member(ra.a, 2);
  tassert(r == 0, "%s: fail", ra.desc);
  raid_array_set_auto_sync(ra.a, 1);
  a1 = ram_member("ram930-a", raid_array_member_size(ra.a), true);
  ck_assert(raid_fault_add(a1, &slow) == 0);
  r = add_member(ra.a, a1);
  tassert(r == 1, "%s: add a: %d %s", ra.desc, r, r < 0 ? raid_get_error() : "");
  /* Wait until the engine is busy with its first step (writing to a). */
  t0 = now_s();
  do {
    get_sync_status(ra.a, &st);
    tassert(now_s() - t0 < 10, "%s: the automatic rebuild did not start", ra.desc);
    sleep_ms(1);
  } while (st.action != RAID_SYNC_RECOVER);
  sleep_ms(50);
  b = ram_member("ram930-b", raid_array_member_size(ra.a), false);
  r = add_member(ra.a, b);
  tassert(r == 2, "%s: add b: %d %s", ra.desc, r, r < 0 ? raid_get_error() : "");
  r = wait_sync(ra.a, ra.desc, NULL, NULL);
  tassert(r == 0, "%s: rebuild: %d %s", ra.desc, r, raid_get_error());
  assert_state(ra.a, ra.desc, 1, RAID_MEMBER_IN_SYNC);
  assert_state(ra.a, ra.desc, 2, RAID_MEMBER_IN_SYNC);
  r = raid_array_fail_member(ra.a, 0);
  r |= raid_array_fail_member(ra.a, 1);
  tassert(r == 0, "%s: fail", ra.desc);
  rarray_verify(&ra, "from the member added during the rebuild, alone");
  rarray_free(&ra);
}
END_TEST

int
main(void)
{
  Suite *s;
  TCase *tc;

  test_init("test-rebuild");
  build_confs();
  s = suite_create("rebuild");

  tc = test_tcase("rebuild");
  tcase_add_loop_test(tc, test_rebuild_under_load, 0, nrconfs);
  tcase_add_loop_test(tc, test_replace_under_load, 0, nrconfs);
  tcase_add_loop_test(tc, test_hot_spare, 0, nrconfs);
  suite_add_tcase(s, tc);

  tc = test_tcase("failures");
  tcase_add_test(tc, test_source_fails_raid5);
  tcase_add_test(tc, test_source_fails_raid1);
  tcase_add_test(tc, test_target_fails);
  tcase_add_test(tc, test_add_during_rebuild);
  suite_add_tcase(s, tc);

  return test_run_suite(s);
}
