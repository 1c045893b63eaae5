/* Description: the sync engine (rebuild, replace, hot spares, resync,
 * scrub) and member management, for RAID 1 over 2 and 3 members, RAID 5
 * over 3 and 4 (left-symmetric and the asymmetric layouts) and RAID 10
 * near-2 over 4 and 3, with 64 KiB chunks and members of a few MiB.
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
 *  - scrub: corruption written straight into a member file is counted by
 *    check (8 sectors per 4 KiB block) without changing anything, and
 *    fixed by repair (RAID 5 rewrites parity from the data, as md does);
 *  - checkpoints: a rebuild or a replacement interrupted by
 *    raid_array_free() leaves recovery_offset in the new member's
 *    superblock and resumes there after assembly (the failed member keeps
 *    its device number, marked faulty, as in md); a resync makes copies and
 *    parity agree, and one stopped half way resumes where it stopped;
 *    unsynced mirrors always read the first copy; sync_stop keeps the
 *    place; the rate limit holds;
 *  - errors: refused removals, additions and replacements name the member
 *    and change nothing (a refused forced removal does not disturb I/O in
 *    flight meanwhile); RAID 0 has nothing to sync, a degraded RAID 5
 *    cannot be checked, a second action is refused while one runs;
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

#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

#define SYNC_DEADLINE_S 120.0   /* no sync action of ours takes this long */

/* The role an add or a lookup gave (-1: spare or no role), or -errno. */
static int
add_member(struct raid_array *a, struct raid_member *m)
{
  int role, r = raid_array_add_member(a, m, &role);
  return r < 0 ? r : role;
}

static int
find_member(struct raid_array *a, const char *name)
{
  int role, r = raid_array_find_member(a, name, &role);
  return r < 0 ? r : role;
}

static double
now_s(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
sleep_ms(unsigned ms)
{
  struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

  nanosleep(&ts, NULL);
}

/* ---- log capture ----------------------------------------------------------------- */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[65536];
static size_t log_len;

static void
log_capture(int priority, const char *msg, void *opaque)
{
  size_t n = strlen(msg);

  (void)opaque;
  pthread_mutex_lock(&log_lock);
  if (log_len + n + 2 < sizeof log_text) {
    memcpy(log_text + log_len, msg, n);
    log_len += n;
    log_text[log_len++] = '\n';
    log_text[log_len] = '\0';
  }
  pthread_mutex_unlock(&log_lock);
}

static void
log_reset(void)
{
  pthread_mutex_lock(&log_lock);
  log_len = 0;
  log_text[0] = '\0';
  pthread_mutex_unlock(&log_lock);
  raid_set_log_handler(log_capture, NULL, RAID_LOG_INFO);
}

/* A copy of the captured log (free it). */
static char *
log_copy(void)
{
  char *s;

  pthread_mutex_lock(&log_lock);
  s = strdup(log_text);
  pthread_mutex_unlock(&log_lock);
  ck_assert(s != NULL);
  return s;
}

/* The byte offset in the last "ACTION started at N" message, or -1. */
static int64_t
log_action_start(const char *action)
{
  char *s = log_copy(), *p, *last = NULL, key[64];
  int64_t v = -1;

  snprintf(key, sizeof key, "%s started at ", action);
  for (p = strstr(s, key); p; p = strstr(p + 1, key))
    last = p;
  if (last)
    v = (int64_t)strtoull(last + strlen(key), NULL, 10);
  free(s);
  return v;
}

static int64_t
log_recover_start(void)
{
  return log_action_start("recover");
}

/* ---- configurations ----------------------------------------------------------------- */

static struct tconf rconfs[8];
static unsigned nrconfs;
static uint64_t data_bytes;     /* bytes of each member holding data */

static void
add_rconf(int level, int layout, unsigned disks, uint32_t chunk, uint64_t off)
{
  rconfs[nrconfs++] = (struct tconf){ level, layout, disks, chunk, off, off + data_bytes };
}

static void
build_confs(void)
{
  /* 8 MiB of data per member (4 steps of the engine), 4 MiB when scaled
   * down (valgrind): still two steps, so writes land on both sides of the
   * recovery point. */
  data_bytes = (test_scale(100) >= 50 ? 8 : 4) * MiB;
  add_rconf(RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, 0, 0);
  add_rconf(RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 3, 0, 1 * MiB);
  add_rconf(RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 3, 64 * KiB, 0);
  add_rconf(RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 4, 64 * KiB, 1 * MiB);
  add_rconf(RAID_LEVEL_5, RAID_LAYOUT_RIGHT_ASYMMETRIC, 4, 64 * KiB, 0);
  add_rconf(RAID_LEVEL_5, RAID_LAYOUT_LEFT_ASYMMETRIC, 3, 64 * KiB, 0);
  add_rconf(RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 4, 64 * KiB, 0);
  add_rconf(RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 3, 64 * KiB, 0);
}

/* The member to lose in configuration I: a different one from one
 * configuration to the next. */
static unsigned
victim(unsigned i)
{
  return (i * 5 + 1) % rconfs[i].disks;
}

/* ---- member listing ------------------------------------------------------------------ */

/* The entry of raid_array_members() for NAME. */
static bool
find_info(struct raid_array *a, const char *name, struct raid_member_info *out)
{
  struct raid_member_info info[3 * RAID_MAX_MEMBERS];
  unsigned n = raid_array_members(a, info, ARRAY_SIZE(info)), i;

  for (i = 0; i < n && i < ARRAY_SIZE(info); i++)
    if (info[i].name && strcmp(info[i].name, name) == 0) {
      *out = info[i];
      return true;
    }
  return false;
}

static void
assert_listed(struct raid_array *a, const char *desc, const char *name, int role,
              int state)
{
  struct raid_member_info mi;

  tassert(find_info(a, name, &mi), "%s: raid_array_members() does not list %s",
          desc, name);
  tassert(mi.role == role && mi.state == state,
          "%s: raid_array_members() lists %s with role %d state %d, expected role %d "
          "state %d", desc, name, mi.role, mi.state, role, state);
}

static void
assert_state(struct raid_array *a, const char *desc, unsigned slot, int state)
{
  int s = raid_array_member_state(a, slot);

  tassert(s == state, "%s: role %u state %d, expected %d", desc, slot, s, state);
}

/* R is REF (negative errno) and the message names WHAT. */
static void
assert_refused(int r, int ref, const char *what, const char *desc, const char *call)
{
  tassert(r == ref, "%s: %s returned %d (%s), expected %d (%s)", desc, call, r,
          r < 0 ? strerror(-r) : "success", ref, strerror(-ref));
  tassert(raid_get_errno() == -ref, "%s: %s: raid_get_errno() %d, expected %d",
          desc, call, raid_get_errno(), -ref);
  if (what)
    tassert(strstr(raid_get_error(), what) != NULL,
            "%s: %s: the message does not name %s: %s", desc, call, what,
            raid_get_error());
}

/* ---- sync helpers -------------------------------------------------------------------------- */

static void
status(struct raid_array *a, struct raid_sync_status *st)
{
  raid_array_sync_status(a, st);
}

/* Wait for the engine while running POLL (if any) each round; fails the
 * test if it takes unreasonably long.  Returns raid_array_sync_wait(). */
static int
wait_sync(struct raid_array *a, const char *desc, void (*poll)(void *), void *arg)
{
  struct raid_sync_status st;
  double t0 = now_s();

  for (;;) {
    status(a, &st);
    if (st.action == RAID_SYNC_IDLE && !st.due)
      break;
    tassert(now_s() - t0 < SYNC_DEADLINE_S, "%s: %s still running after %.0f s "
            "(%" PRIu64 " of %" PRIu64 " bytes)", desc,
            raid_sync_action_name(st.action), SYNC_DEADLINE_S, st.done, st.total);
    if (poll)
      poll(arg);
    else
      sleep_ms(2);
  }
  return raid_array_sync_wait(a);
}

/* Run ACTION to its end; assert it succeeded; return its mismatches. */
static uint64_t
run_action(struct raid_array *a, const char *desc, int action)
{
  struct raid_sync_status st;
  int r;

  r = raid_array_sync_start(a, action);
  tassert(r == 0, "%s: raid_array_sync_start(%s): %d %s", desc,
          raid_sync_action_name(action), r, raid_get_error());
  r = wait_sync(a, desc, NULL, NULL);
  tassert(r == 0, "%s: %s failed: %d %s", desc, raid_sync_action_name(action), r,
          raid_get_error());
  status(a, &st);
  tassert(st.last_action == action && st.last_result == 0,
          "%s: after %s: last action %s result %d", desc, raid_sync_action_name(action),
          raid_sync_action_name(st.last_action), st.last_result);
  return st.last_mismatches;
}

static void
assert_check_clean(struct raid_array *a, const char *desc)
{
  uint64_t n = run_action(a, desc, RAID_SYNC_CHECK);

  tassert(n == 0, "%s: check found %" PRIu64 " mismatched sectors, expected none",
          desc, n);
}

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

/* ---- member files ------------------------------------------------------------------------------ */

/* Fill the whole array with tagged data. */
static void
fill(struct tarray *t)
{
  uint64_t off;

  for (off = 0; off < t->size; off += MIN(t->size - off, 1 * MiB))
    tarray_write(t, off, (size_t)MIN(t->size - off, 1 * MiB), 0);
}

/* Member file J of X now backs role SLOT of T (for the placement check),
 * and the file it replaced belongs to X. */
static void
swap_in(struct tarray *t, unsigned slot, struct tmembers *x, unsigned j)
{
  char *f = t->tm.file[slot], *p = t->tm.path[slot];
  uint64_t s = t->tm.size[slot];

  t->tm.file[slot] = x->file[j];
  t->tm.path[slot] = x->path[j];
  t->tm.size[slot] = x->size[j];
  x->file[j] = f;
  x->path[j] = p;
  x->size[j] = s;
}

/* Every member except SLOT that has to go for SLOT to be the only copy of
 * some of the data (RAID 1: all the others; RAID 10: a member sharing
 * chunks with SLOT; RAID 5: any other member, so SLOT's chunks take part
 * in every reconstruction). */
static uint64_t
others_to_fail(const struct tconf *c, unsigned slot)
{
  unsigned disks[RAID_MAX_MEMBERS], k, n;
  uint64_t msec[RAID_MAX_MEMBERS], ci, cs = tconf_chunk(c) / 512;

  switch (c->level) {
  case RAID_LEVEL_1:
    return ((UINT64_C(1) << c->disks) - 1) & ~(UINT64_C(1) << slot);
  case RAID_LEVEL_5:
    return UINT64_C(1) << ((slot + 1) % c->disks);
  default:
    for (ci = 0; ci < 64; ci++) {
      n = ref_locate(c, ci * cs, disks, msec);
      for (k = 0; k < n; k++)
        if (disks[k] == slot)
          return UINT64_C(1) << disks[(k + 1) % n];
    }
    ck_abort_msg("no chunk of member %u found", slot);
  }
  return 0;
}

/* Read everything with the rebuilt member SLOT as the only copy. */
static void
verify_from(struct tarray *t, unsigned slot)
{
  uint64_t fail = others_to_fail(&t->c, slot);
  unsigned i;

  for (i = 0; i < t->c.disks; i++)
    if ((fail >> i) & 1) {
      int r = raid_array_fail_member(t->a, i);
      tassert(r == 0, "%s: raid_array_fail_member(%u): %d", t->desc, i, r);
    }
  t->lost |= fail;
  tassert(!raid_array_is_failed(t->a), "%s: array failed with members 0x%" PRIx64
          " failed and %u rebuilt", t->desc, fail, slot);
  tarray_check_all(t);
}

/* ---- 1. rebuild under load ---------------------------------------------------------------------- */

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
  fill(&t);

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
  status(t.a, &st);
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

/* ---- 2. replace under load ------------------------------------------------------------------------ */

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
  fill(&t);
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

/* ---- 3. hot spare ----------------------------------------------------------------------------- */

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

  log_reset();
  tarray_setup(&t, c, TA_NO_PATTERN, 0, test_seed_for(300 + _i));
  tmembers_create(&x, 1, NULL, c->member_bytes);
  raid_array_set_sync_limits(t.a, 3 * t.member_size, 3 * t.member_size);
  raid_array_set_auto_sync(t.a, 1);
  fill(&t);
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
  log = log_copy();
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

/* ---- 4. scrub ------------------------------------------------------------------------------------ */

enum corrupt { C_MIRROR, C_DATA, C_PARITY };

static enum corrupt
corrupt_kind(unsigned i)
{
  if (rconfs[i].level != RAID_LEVEL_5)
    return C_MIRROR;
  return rconfs[i].layout == RAID_LAYOUT_RIGHT_ASYMMETRIC ? C_PARITY : C_DATA;
}

static void
file_rw(const char *path, bool write, void *buf, size_t len, uint64_t off)
{
  int fd = open(path, O_RDWR | O_CLOEXEC);
  ssize_t n;

  tassert(fd >= 0, "open %s: %m", path);
  if (write) {
    n = pwrite(fd, buf, len, off);
    tassert(n == (ssize_t)len, "pwrite %s at %" PRIu64 ": %m", path, off);
    tassert(fsync(fd) == 0, "fsync %s: %m", path);
  }
  else {
    /* Drop cached pages first: the library writes with O_DIRECT. */
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    n = pread(fd, buf, len, off);
    tassert(n == (ssize_t)len, "pread %s at %" PRIu64 ": %m", path, off);
  }
  close(fd);
}

/* A 4 KiB block of garbage written straight into one member: check counts
 * 8 sectors and changes no byte of any member; repair rewrites it (mirrors:
 * from the first copy; RAID 5: parity from the data, so corrupt data stays
 * and parity follows it, as md does); a second check finds nothing. */
START_TEST(test_scrub)
{
  const struct tconf *c = &rconfs[_i];
  enum corrupt kind = corrupt_kind(_i);
  struct tarray t;
  unsigned disks[RAID_MAX_MEMBERS], disk, n, i;
  uint64_t msec[RAID_MAX_MEMBERS], X, moff, mism;
  uint8_t garbage[4096], back[4096];
  uint8_t *before[RAID_MAX_MEMBERS], *after;
  const char *what;

  tarray_setup(&t, c, TA_NO_PATTERN, 0, test_seed_for(400 + _i));
  fill(&t);
  assert_check_clean(t.a, t.desc);

  /* Where the block goes. */
  X = rng_below(&t.rng, t.size / 4096) * 4096;
  n = ref_locate(c, X / 512, disks, msec);
  switch (kind) {
  case C_MIRROR:
    tassert(n >= 2, "%s: %u copies", t.desc, n);
    disk = disks[1];            /* the second copy */
    moff = msec[1] * 512;
    what = "second copy";
    break;
  case C_DATA:
    disk = disks[0];
    moff = msec[0] * 512;
    what = "data chunk";
    break;
  default: {
    unsigned dd, pd;
    uint64_t stripe, ms;
    ref_raid5_map(tconf_layout(c), c->disks, tconf_chunk(c) / 512, X / 512, &dd, &pd,
                  &stripe, &ms);
    disk = pd;
    moff = ms * 512;
    what = "parity chunk";
    break;
  }
  }
  rng_fill(&t.rng, garbage, sizeof garbage);
  tassert(raid_flush(t.a) == 0, "%s: flush", t.desc);
  file_rw(t.tm.path[disk], true, garbage, sizeof garbage, c->data_offset + moff);
  test_verbose("%s: garbage in the %s of array byte %" PRIu64 ": member %u byte %"
               PRIu64, t.desc, what, X, disk, c->data_offset + moff);

  /* Check: counts, changes nothing. */
  for (i = 0; i < c->disks; i++) {
    before[i] = test_alloc(t.tm.size[i]);
    file_rw(t.tm.path[i], false, before[i], t.tm.size[i], 0);
  }
  mism = run_action(t.a, t.desc, RAID_SYNC_CHECK);
  tassert(mism == 8, "%s: check counted %" PRIu64 " mismatched sectors for one "
          "corrupt 4 KiB block in the %s of member %u, expected 8", t.desc, mism,
          what, disk);
  after = test_alloc(t.tm.size[0]);
  for (i = 0; i < c->disks; i++) {
    uint64_t j;
    file_rw(t.tm.path[i], false, after, t.tm.size[i], 0);
    for (j = 0; j < t.tm.size[i] && after[j] == before[i][j]; j++)
      ;
    tassert(j == t.tm.size[i], "%s: check changed member %u at byte %" PRIu64,
            t.desc, i, j);
    test_free(before[i]);
  }
  test_free(after);

  /* Repair: counts and rewrites. */
  mism = run_action(t.a, t.desc, RAID_SYNC_REPAIR);
  tassert(mism == 8, "%s: repair counted %" PRIu64 " mismatched sectors, expected 8",
          t.desc, mism);
  file_rw(t.tm.path[disk], false, back, sizeof back, c->data_offset + moff);
  if (kind == C_DATA) {
    /* md trusts the data: it stays, parity now covers it. */
    tassert(memcmp(back, garbage, sizeof back) == 0, "%s: repair changed the data "
            "chunk instead of the parity", t.desc);
    memcpy(t.shadow + X, garbage, sizeof garbage);
  }
  else if (kind == C_MIRROR)
    tassert(memcmp(back, t.shadow + X, sizeof back) == 0, "%s: repair did not "
            "restore the second copy from the first", t.desc);
  tarray_check_placement(&t);   /* every copy and every parity chunk right */
  tarray_check_all(&t);
  assert_check_clean(t.a, t.desc);
  tarray_teardown(&t);
}
END_TEST

/* ---- 5. checkpoints, resume, resync ------------------------------------------------------------- */

/* A set of member files with md metadata and a shadow. */
struct mdset {
  struct tconf c;
  char desc[200];
  char name[32];
  struct tmembers tm;
  unsigned n;                   /* files: raid_disks and extras */
  struct raid_array *a;
  uint64_t size, member_size;
  uint8_t *shadow;
  struct rng rng;
  uint64_t gen;
};

static void
mdset_init(struct mdset *s, const struct tconf *c, unsigned extra, uint64_t seed)
{
  char buf[160];

  memset(s, 0, sizeof *s);
  s->c = *c;
  s->c.data_offset = RAID_DATA_OFFSET_DEFAULT;
  s->c.member_bytes = RAID_DATA_OFFSET_DEFAULT + data_bytes;
  s->n = c->disks + extra;
  rng_seed(&s->rng, seed);
  snprintf(s->name, sizeof s->name, "rec%u", (unsigned)(seed % 1000));
  snprintf(s->desc, sizeof s->desc, "[md metadata %s seed=0x%016" PRIx64 "]",
           tconf_str(&s->c, buf, sizeof buf), seed);
  tmembers_create(&s->tm, s->n, NULL, s->c.member_bytes);
}

static void
mdset_create(struct mdset *s, unsigned flags)
{
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_config cfg = {
    .name = s->name, .level = s->c.level, .layout = s->c.layout,
    .chunk_size = s->c.chunk, .raid_disks = s->c.disks,
  };
  unsigned i;
  int r;

  for (i = 0; i < s->c.disks; i++)
    m[i] = tmembers_open(&s->tm, i, false);
  r = raid_array_create(&cfg, m, flags, &s->a);
  tassert(r == 0, "%s: raid_array_create: %d %s", s->desc, r, raid_get_error());
  s->size = raid_array_size(s->a);
  s->member_size = raid_array_member_size(s->a);
  s->shadow = calloc(1, s->size);
  ck_assert(s->shadow != NULL);
}

/* Assemble from every file but those in SKIP, given in reverse order. */
static void
mdset_assemble(struct mdset *s, uint64_t skip)
{
  struct raid_member *m[RAID_MAX_MEMBERS];
  unsigned i, count = 0;
  int r;

  for (i = s->n; i-- > 0;)
    if (!((skip >> i) & 1))
      m[count++] = tmembers_open(&s->tm, i, false);
  r = raid_array_assemble(NULL, m, count, 0, &s->a);
  tassert(r == 0, "%s: raid_array_assemble: %d %s", s->desc, r, raid_get_error());
}

static void
mdset_write(struct mdset *s, uint64_t off, size_t len)
{
  uint8_t *buf = test_alloc(len);
  int r;

  tag_data(&s->rng, buf, off, len, ++s->gen);
  r = raid_pwrite(s->a, buf, len, off, 0);
  tassert(r == 0, "%s: write at %" PRIu64 ": %d %s", s->desc, off, r, raid_get_error());
  memcpy(s->shadow + off, buf, len);
  test_free(buf);
}

static void
mdset_fill(struct mdset *s)
{
  uint64_t off;

  for (off = 0; off < s->size; off += MIN(s->size - off, 1 * MiB))
    mdset_write(s, off, (size_t)MIN(s->size - off, 1 * MiB));
}

static void
mdset_verify(struct mdset *s, const char *when)
{
  uint8_t *buf = test_alloc(1 * MiB);
  uint64_t off, j;
  size_t len;
  int r;

  for (off = 0; off < s->size; off += len) {
    len = (size_t)MIN(s->size - off, 1 * MiB);
    r = raid_pread(s->a, buf, len, off);
    tassert(r == 0, "%s: %s: read at %" PRIu64 ": %d %s", s->desc, when, off, r,
            raid_get_error());
    if (memcmp(buf, s->shadow + off, len) != 0) {
      char g[128], w[128];
      for (j = 0; buf[j] == s->shadow[off + j]; j++)
        ;
      j = j / 512 * 512;
      ck_abort_msg("%s: %s: array byte %" PRIu64 " reads %s, expected %s", s->desc,
                   when, off + j, tag_str(buf + j, g, sizeof g),
                   tag_str(s->shadow + off + j, w, sizeof w));
    }
  }
  test_free(buf);
}

static void
mdset_close(struct mdset *s)
{
  raid_array_free(s->a);
  s->a = NULL;
}

static void
mdset_destroy(struct mdset *s)
{
  if (s->a)
    mdset_close(s);
  tmembers_destroy(&s->tm);
  free(s->shadow);
}

static void
read_sb(struct mdset *s, unsigned file, struct raid_superblock *sb)
{
  struct raid_member *m;
  int r;

  r = raid_member_open(s->tm.path[file], RAID_MEMBER_READONLY, &m);
  tassert(r == 0, "%s: open %s: %d %s", s->desc, s->tm.path[file], r, raid_get_error());
  r = raid_superblock_read(m, sb);
  tassert(r == 0, "%s: superblock of %s: %d %s", s->desc, s->tm.path[file], r,
          raid_get_error());
  raid_member_close(m);
}

/* Configurations with metadata: RAID 5 over 3, RAID 1 over 2, RAID 10 over 4. */
static const unsigned md_confs[] = { 2, 0, 6 };

/* A rebuild interrupted by raid_array_free() half way leaves the new
 * member's superblock with a recovery offset strictly inside it; after
 * assembly the member is recovering from there, and the rebuild resumes
 * there (not at 0) and completes with the data intact. */
START_TEST(test_checkpoint_resume)
{
  const struct tconf *c = &rconfs[md_confs[_i]];
  unsigned slot = 1, nf = c->disks;    /* file nf: the new member */
  struct mdset s;
  struct raid_member *m;
  struct raid_superblock sb, sb0;
  struct raid_sync_status st;
  struct raid_member_info mi;
  uint64_t rate, rec;
  double t0;
  char *name;
  int64_t start;
  int r;

  mdset_init(&s, c, 1, test_seed_for(500 + _i));
  mdset_create(&s, RAID_CREATE_ASSUME_CLEAN);
  mdset_fill(&s);
  r = raid_array_fail_member(s.a, slot);
  tassert(r == 0, "%s: fail: %d", s.desc, r);
  m = tmembers_open(&s.tm, nf, false);
  name = strdup(raid_member_name(m));
  r = add_member(s.a, m);
  tassert(r == (int)slot, "%s: add_member returned %d (%s), expected %u", s.desc, r,
          r < 0 ? raid_get_error() : "", slot);

  /* About 2.5 s for the whole member. */
  rate = s.member_size * 2 / 5;
  raid_array_set_sync_limits(s.a, rate, rate);
  r = raid_array_sync_start(s.a, RAID_SYNC_RECOVER);
  tassert(r == 0, "%s: sync_start: %d %s", s.desc, r, raid_get_error());
  t0 = now_s();
  for (;;) {
    status(s.a, &st);
    if (st.action == RAID_SYNC_RECOVER && st.done >= st.total / 2)
      break;
    if (st.action == RAID_SYNC_IDLE && !st.due)
      break;
    tassert(now_s() - t0 < SYNC_DEADLINE_S, "%s: rebuild stuck at %" PRIu64,
            s.desc, st.done);
    sleep_ms(5);
  }
  tassert(st.action == RAID_SYNC_RECOVER && st.done < st.total,
          "%s: the rebuild at %" PRIu64 " bytes/s was over (%" PRIu64 " of %"
          PRIu64 " bytes, result %d) after %.2f s: not throttled", s.desc, rate,
          st.done, st.total, st.last_result, now_s() - t0);
  mdset_close(&s);              /* interrupts and checkpoints */

  read_sb(&s, nf, &sb);
  tassert(sb.feature_map & RAID_SB_FEATURE_RECOVERY_OFFSET,
          "%s: the new member's superblock has feature_map 0x%x, without "
          "RECOVERY_OFFSET", s.desc, sb.feature_map);
  tassert(sb.recovery_offset > 0 && sb.recovery_offset < sb.size,
          "%s: recovery_offset %" PRIu64 " sectors, expected inside (0, %" PRIu64 ")",
          s.desc, sb.recovery_offset, sb.size);
  tassert(sb.dev_number < sb.max_dev && sb.dev_roles[sb.dev_number] == slot,
          "%s: the new member (device %u) has role 0x%x, expected %u", s.desc,
          sb.dev_number, sb.dev_number < sb.max_dev ? sb.dev_roles[sb.dev_number] : 0,
          slot);
  /* md keeps the failed member's device number (faulty) and gives the
   * new one a number of its own. */
  read_sb(&s, slot, &sb0);
  tassert(sb0.dev_number != sb.dev_number && sb.dev_roles[sb0.dev_number] ==
          RAID_SB_ROLE_FAULTY, "%s: the new member has device number %u, the "
          "failed one %u, which the new superblocks give role 0x%x (md: faulty, "
          "0x%x)", s.desc, sb.dev_number, sb0.dev_number,
          sb.dev_roles[sb0.dev_number], RAID_SB_ROLE_FAULTY);
  tassert(sb0.events < sb.events, "%s: the failed member's events %" PRIu64
          " are not behind %" PRIu64, s.desc, sb0.events, sb.events);
  read_sb(&s, 0, &sb0);
  tassert(sb0.feature_map == 0 && sb0.events == sb.events,
          "%s: member 0: feature_map 0x%x events %" PRIu64 ", new member events %"
          PRIu64, s.desc, sb0.feature_map, sb0.events, sb.events);
  tassert(sb0.resync_offset == RAID_SB_MAX_SECTOR, "%s: not marked clean", s.desc);
  rec = sb.recovery_offset * 512;

  /* Every file, the failed member's too: it is left out. */
  mdset_assemble(&s, 0);
  assert_state(s.a, s.desc, slot, RAID_MEMBER_RECOVERING);
  tassert(raid_array_degraded(s.a) == 1, "%s: degraded %u", s.desc,
          raid_array_degraded(s.a));
  tassert(find_info(s.a, name, &mi), "%s: %s not in the assembled array", s.desc, name);
  tassert(mi.role == (int)slot && mi.state == RAID_MEMBER_RECOVERING &&
          mi.recovery_offset == rec,
          "%s: %s listed with role %d state %d recovery offset %" PRIu64
          ", expected role %u recovering at %" PRIu64, s.desc, name, mi.role, mi.state,
          mi.recovery_offset, slot, rec);
  tassert(raid_array_members(s.a, NULL, 0) == c->disks, "%s: %u members",
          s.desc, raid_array_members(s.a, NULL, 0));
  mdset_verify(&s, "degraded, before the rebuild resumes");

  log_reset();
  raid_array_set_sync_limits(s.a, 0, 0);
  r = raid_array_sync_start(s.a, RAID_SYNC_RECOVER);
  tassert(r == 0, "%s: sync_start: %d %s", s.desc, r, raid_get_error());
  r = wait_sync(s.a, s.desc, NULL, NULL);
  tassert(r == 0, "%s: resumed rebuild: %d %s", s.desc, r, raid_get_error());
  start = log_recover_start();
  raid_set_log_handler(NULL, NULL, RAID_LOG_INFO);
  tassert(start == (int64_t)rec, "%s: the rebuild resumed at byte %" PRId64
          ", expected the checkpoint %" PRIu64, s.desc, start, rec);
  assert_state(s.a, s.desc, slot, RAID_MEMBER_IN_SYNC);
  tassert(raid_array_degraded(s.a) == 0, "%s: degraded %u", s.desc,
          raid_array_degraded(s.a));
  mdset_verify(&s, "after the resumed rebuild");
  assert_check_clean(s.a, s.desc);
  mdset_close(&s);

  read_sb(&s, nf, &sb);
  tassert(!(sb.feature_map & RAID_SB_FEATURE_RECOVERY_OFFSET),
          "%s: still a recovery offset after the rebuild: feature_map 0x%x", s.desc,
          sb.feature_map);
  mdset_assemble(&s, UINT64_C(1) << slot);   /* the current members */
  tassert(raid_array_degraded(s.a) == 0, "%s: degraded %u after reassembly", s.desc,
          raid_array_degraded(s.a));
  mdset_verify(&s, "reassembled");
  free(name);
  mdset_destroy(&s);
}
END_TEST

struct progress {
  unsigned calls;
  uint64_t done, total;
  bool backwards;
  uint64_t want_total;
  unsigned bad_calls;           /* total not the member size, or done > total */
  uint64_t bad_done, bad_total;
};

static int
progress_cb(void *opaque, uint64_t done, uint64_t total)
{
  struct progress *p = opaque;

  if (p->calls && done < p->done)
    p->backwards = true;
  if ((total != p->want_total || done > total) && p->bad_calls++ == 0) {
    p->bad_done = done;
    p->bad_total = total;
  }
  p->calls++;
  p->done = done;
  p->total = total;
  return 0;
}

/* Fill the data area of every member file of S with different garbage. */
static void
garble(struct mdset *s, unsigned files)
{
  uint8_t *buf = test_alloc(data_bytes);
  unsigned i;

  for (i = 0; i < files; i++) {
    rng_fill(&s->rng, buf, data_bytes);
    file_rw(s->tm.path[i], true, buf, data_bytes, s->c.data_offset);
  }
  test_free(buf);
}

/* An array created without ASSUME_CLEAN over members whose copies and
 * parity disagree: check finds mismatches, raid_array_resync() clears
 * needs_resync, reports progress up to the end, keeps what was written,
 * and afterwards check finds none and the array stops clean. */
START_TEST(test_resync)
{
  const struct tconf *c = &rconfs[md_confs[_i]];
  struct mdset s;
  struct raid_superblock sb;
  struct progress p = { 0 };
  uint64_t mism;
  int r;

  mdset_init(&s, c, 0, test_seed_for(600 + _i));
  garble(&s, c->disks);
  mdset_create(&s, 0);
  tassert(raid_array_needs_resync(s.a) == 1, "%s: a new array needs no resync?",
          s.desc);
  mdset_write(&s, 0, 1 * MiB);
  mdset_write(&s, s.size - 1 * MiB, 1 * MiB);
  mism = run_action(s.a, s.desc, RAID_SYNC_CHECK);
  tassert(mism > 0, "%s: check found no mismatch on members of garbage", s.desc);

  p.want_total = s.member_size;
  r = raid_array_resync(s.a, progress_cb, &p);
  tassert(r == 0, "%s: raid_array_resync: %d %s", s.desc, r, raid_get_error());
  tassert(p.bad_calls == 0, "%s: %u progress calls not out of %" PRIu64 " bytes, "
          "the first: %" PRIu64 " of %" PRIu64, s.desc, p.bad_calls, s.member_size,
          p.bad_done, p.bad_total);
  tassert(raid_array_needs_resync(s.a) == 0, "%s: still needs a resync", s.desc);
  tassert(p.calls > 0 && !p.backwards && p.done == p.total && p.total == s.member_size,
          "%s: progress: %u calls, last %" PRIu64 " of %" PRIu64 "%s", s.desc, p.calls,
          p.done, p.total, p.backwards ? ", went backwards" : "");
  assert_check_clean(s.a, s.desc);
  {
    uint8_t *buf = test_alloc(1 * MiB);
    uint64_t offs[2] = { 0, s.size - 1 * MiB };
    unsigned k;
    for (k = 0; k < 2; k++) {
      r = raid_pread(s.a, buf, 1 * MiB, offs[k]);
      tassert(r == 0 && memcmp(buf, s.shadow + offs[k], 1 * MiB) == 0,
              "%s: data written before the resync changed at %" PRIu64, s.desc, offs[k]);
    }
    test_free(buf);
  }
  mdset_close(&s);
  read_sb(&s, 0, &sb);
  tassert(sb.resync_offset == RAID_SB_MAX_SECTOR, "%s: resync_offset %" PRIu64
          " after a resync and a clean stop", s.desc, sb.resync_offset);
  mdset_assemble(&s, 0);
  tassert(raid_array_needs_resync(s.a) == 0, "%s: needs a resync after reassembly",
          s.desc);
  mdset_destroy(&s);
}
END_TEST

/* Wait until ACTION has done at least half its work; fail if it ends
 * first (the rate limit should make it last seconds). */
static void
wait_half(struct raid_array *a, const char *desc, int action, uint64_t rate)
{
  struct raid_sync_status st;
  double t0 = now_s();

  for (;;) {
    status(a, &st);
    if (st.action == action && st.done >= st.total / 2)
      break;
    if (st.action == RAID_SYNC_IDLE && !st.due)
      break;
    tassert(now_s() - t0 < SYNC_DEADLINE_S, "%s: %s stuck at %" PRIu64, desc,
            raid_sync_action_name(action), st.done);
    sleep_ms(5);
  }
  tassert(st.action == action && st.done < st.total,
          "%s: the %s at %" PRIu64 " bytes/s was over (%" PRIu64 " of %" PRIu64
          " bytes, result %d) after %.2f s: not throttled", desc,
          raid_sync_action_name(action), rate, st.done, st.total, st.last_result,
          now_s() - t0);
}

/* md's --replace interrupted half way by raid_array_free(): the new
 * member's superblock says "replacement" with a recovery offset; after
 * assembly it is listed as the role's replacement from there, and with
 * auto sync the copy resumes by itself, completes, and the old member is
 * retired. */
START_TEST(test_replace_resume)
{
  const struct tconf *c = &rconfs[md_confs[_i]];
  unsigned slot = 0, nf = c->disks;
  struct mdset s;
  struct raid_member *m;
  struct raid_superblock sb;
  struct raid_member_info mi;
  uint64_t rate, rec;
  char *name, *old;
  int64_t start;
  int r;

  mdset_init(&s, c, 1, test_seed_for(1000 + _i));
  mdset_create(&s, RAID_CREATE_ASSUME_CLEAN);
  mdset_fill(&s);
  old = strdup(raid_member_name(raid_array_member(s.a, slot)));
  m = tmembers_open(&s.tm, nf, false);
  name = strdup(raid_member_name(m));
  r = raid_array_replace_member(s.a, slot, m);
  tassert(r == 0, "%s: replace: %d %s", s.desc, r, raid_get_error());
  rate = s.member_size * 2 / 5;
  raid_array_set_sync_limits(s.a, rate, rate);
  r = raid_array_sync_start(s.a, RAID_SYNC_RECOVER);
  tassert(r == 0, "%s: sync_start: %d %s", s.desc, r, raid_get_error());
  wait_half(s.a, s.desc, RAID_SYNC_RECOVER, rate);
  mdset_close(&s);

  read_sb(&s, nf, &sb);
  tassert((sb.feature_map & (RAID_SB_FEATURE_RECOVERY_OFFSET | RAID_SB_FEATURE_REPLACEMENT))
          == (RAID_SB_FEATURE_RECOVERY_OFFSET | RAID_SB_FEATURE_REPLACEMENT),
          "%s: the replacement's superblock has feature_map 0x%x", s.desc,
          sb.feature_map);
  tassert(sb.recovery_offset > 0 && sb.recovery_offset < sb.size,
          "%s: recovery_offset %" PRIu64 " sectors, expected inside (0, %" PRIu64 ")",
          s.desc, sb.recovery_offset, sb.size);
  tassert(sb.dev_roles[sb.dev_number] == slot, "%s: replacement role 0x%x", s.desc,
          sb.dev_roles[sb.dev_number]);
  rec = sb.recovery_offset * 512;

  mdset_assemble(&s, 0);
  tassert(raid_array_degraded(s.a) == 0, "%s: degraded %u", s.desc,
          raid_array_degraded(s.a));
  assert_listed(s.a, s.desc, old, (int)slot, RAID_MEMBER_IN_SYNC);
  tassert(find_info(s.a, name, &mi) && mi.role == (int)slot &&
          mi.state == RAID_MEMBER_REPLACEMENT && mi.recovery_offset == rec,
          "%s: %s listed with role %d state %d at %" PRIu64 ", expected the "
          "replacement of role %u at %" PRIu64, s.desc, name, mi.role, mi.state,
          mi.recovery_offset, slot, rec);
  log_reset();
  raid_array_set_sync_limits(s.a, 0, 0);
  raid_array_set_auto_sync(s.a, 1);
  r = wait_sync(s.a, s.desc, NULL, NULL);
  tassert(r == 0, "%s: resumed replacement: %d %s", s.desc, r, raid_get_error());
  start = log_recover_start();
  raid_set_log_handler(NULL, NULL, RAID_LOG_INFO);
  tassert(start == (int64_t)rec, "%s: the copy resumed at byte %" PRId64
          ", expected the checkpoint %" PRIu64, s.desc, start, rec);
  assert_listed(s.a, s.desc, name, (int)slot, RAID_MEMBER_IN_SYNC);
  assert_listed(s.a, s.desc, old, -1, RAID_MEMBER_FAULTY);
  mdset_verify(&s, "after the resumed replacement");
  assert_check_clean(s.a, s.desc);
  r = raid_array_remove_member(s.a, old, 0);
  tassert(r == 0, "%s: remove %s: %d %s", s.desc, old, r, raid_get_error());
  mdset_close(&s);
  mdset_assemble(&s, UINT64_C(1) << slot);
  tassert(raid_array_degraded(s.a) == 0 && raid_array_member_state(s.a, slot) ==
          RAID_MEMBER_IN_SYNC, "%s: after reassembly: degraded %u", s.desc,
          raid_array_degraded(s.a));
  tassert(strcmp(raid_member_name(raid_array_member(s.a, slot)), name) == 0,
          "%s: role %u is %s after reassembly", s.desc, slot,
          raid_member_name(raid_array_member(s.a, slot)));
  mdset_verify(&s, "reassembled after the replacement");
  free(name);
  free(old);
  mdset_destroy(&s);
}
END_TEST

/* A recovery offset that is not a multiple of the engine's step, as the
 * kernel's md leaves in a superblock (it checkpoints wherever it is): the
 * member is rebuilt from there (or before) and ends up in sync. */
START_TEST(test_resume_odd_offset)
{
  const struct tconf *c = &rconfs[0];      /* RAID 1 over 2 */
  unsigned slot = 1, nf = c->disks;
  struct mdset s;
  struct raid_member *m;
  struct raid_superblock sb;
  uint8_t *buf = test_alloc(RAID_SB_BYTES);
  int r;

  mdset_init(&s, c, 1, test_seed_for(1200));
  mdset_create(&s, RAID_CREATE_ASSUME_CLEAN);
  mdset_fill(&s);
  r = raid_array_fail_member(s.a, slot);
  tassert(r == 0, "%s: fail", s.desc);
  m = tmembers_open(&s.tm, nf, false);
  r = add_member(s.a, m);
  tassert(r == (int)slot, "%s: add: %d", s.desc, r);
  mdset_close(&s);              /* recovering, at 0 */

  /* As md would leave it after rebuilding 1 MiB + 24 KiB. */
  read_sb(&s, nf, &sb);
  tassert(sb.feature_map & RAID_SB_FEATURE_RECOVERY_OFFSET, "%s: feature_map 0x%x",
          s.desc, sb.feature_map);
  sb.recovery_offset = (1 * MiB + 24 * KiB) / 512;
  ck_assert(raid_superblock_encode(&sb, buf) == 0);
  file_rw(s.tm.path[nf], true, buf, RAID_SB_BYTES, RAID_SB_OFFSET_1_2 * 512);
  /* The part below the offset is rebuilt, as md says. */
  {
    uint8_t *d = test_alloc(1 * MiB + 24 * KiB);
    file_rw(s.tm.path[0], false, d, 1 * MiB + 24 * KiB, s.c.data_offset);
    file_rw(s.tm.path[nf], true, d, 1 * MiB + 24 * KiB, s.c.data_offset);
    test_free(d);
  }

  mdset_assemble(&s, UINT64_C(1) << slot);
  assert_state(s.a, s.desc, slot, RAID_MEMBER_RECOVERING);
  r = raid_array_sync_start(s.a, RAID_SYNC_RECOVER);
  tassert(r == 0, "%s: sync_start: %d %s", s.desc, r, raid_get_error());
  r = wait_sync(s.a, s.desc, NULL, NULL);
  tassert(r == 0, "%s: rebuild: %d %s", s.desc, r, raid_get_error());
  tassert(raid_array_member_state(s.a, slot) == RAID_MEMBER_IN_SYNC,
          "%s: a member recovering from byte %u is still in state %d after a "
          "rebuild", s.desc, (unsigned)(1 * MiB + 24 * KiB),
          raid_array_member_state(s.a, slot));
  r = raid_array_fail_member(s.a, 0);
  tassert(r == 0, "%s: fail 0", s.desc);
  mdset_verify(&s, "from the rebuilt member alone");
  test_free(buf);
  mdset_destroy(&s);
}
END_TEST

static int
stop_at_half(void *opaque, uint64_t done, uint64_t total)
{
  return done >= total / 2;
}

/* A resync stopped half way (its progress callback says stop) keeps its
 * place through a clean stop: resync_offset inside the member, and after
 * assembly the resync resumes there. */
START_TEST(test_resync_resume)
{
  const struct tconf *c = &rconfs[md_confs[_i]];
  struct mdset s;
  struct raid_superblock sb;
  uint64_t rate;
  int64_t start;
  int r;

  mdset_init(&s, c, 0, test_seed_for(1100 + _i));
  garble(&s, c->disks);
  mdset_create(&s, 0);
  mdset_write(&s, 0, 1 * MiB);
  rate = s.member_size * 2 / 5;
  raid_array_set_sync_limits(s.a, rate, rate);
  r = raid_array_resync(s.a, stop_at_half, NULL);
  tassert(r == -EINTR, "%s: a resync stopped by its callback returned %d", s.desc, r);
  tassert(raid_array_needs_resync(s.a) == 1, "%s: no resync needed after a stopped "
          "one", s.desc);
  mdset_close(&s);
  read_sb(&s, 0, &sb);
  tassert(sb.resync_offset > 0 && sb.resync_offset < sb.size,
          "%s: resync_offset %" PRIu64 " after a resync stopped half way (size %"
          PRIu64 ")", s.desc, sb.resync_offset, sb.size);

  mdset_assemble(&s, 0);
  tassert(raid_array_needs_resync(s.a) == 1, "%s: reassembled, no resync needed",
          s.desc);
  log_reset();
  r = raid_array_resync(s.a, NULL, NULL);
  start = log_action_start("resync");
  raid_set_log_handler(NULL, NULL, RAID_LOG_INFO);
  tassert(r == 0, "%s: resync: %d %s", s.desc, r, raid_get_error());
  tassert(start == (int64_t)(sb.resync_offset * 512), "%s: the resync resumed at %"
          PRId64 ", expected %" PRIu64, s.desc, start, sb.resync_offset * 512);
  tassert(raid_array_needs_resync(s.a) == 0, "%s: still needs a resync", s.desc);
  assert_check_clean(s.a, s.desc);
  {
    uint8_t *buf = test_alloc(1 * MiB);
    r = raid_pread(s.a, buf, 1 * MiB, 0);
    tassert(r == 0 && memcmp(buf, s.shadow, 1 * MiB) == 0,
            "%s: data written before the resync changed", s.desc);
    test_free(buf);
  }
  mdset_destroy(&s);
}
END_TEST

/* Mirrors that were never resynced may disagree; until the resync has
 * been over a range, every read of it comes from the first copy (md's
 * read_balance() "choose_first"), so reading the same bytes twice gives the
 * same answer. */
START_TEST(test_unsynced_reads_first_copy)
{
  const struct tconf *c = &rconfs[0];      /* RAID 1 over 2 */
  struct mdset s;
  uint8_t *first = test_alloc(data_bytes), *buf = test_alloc(64 * KiB);
  unsigned k, round;
  int r;

  mdset_init(&s, c, 0, test_seed_for(700));
  garble(&s, c->disks);
  file_rw(s.tm.path[0], false, first, data_bytes, s.c.data_offset);
  for (round = 0; round < 2; round++) {
    if (round == 0)
      mdset_create(&s, 0);
    else
      mdset_assemble(&s, 0);   /* still unclean: no resync ran */
    tassert(raid_array_needs_resync(s.a) == 1, "%s: no resync needed?", s.desc);
    for (k = 0; k < 24; k++) {
      uint64_t off = k < 8 ? 0 : k < 16 ? 1 * MiB + 4096 * (k % 2)
        : rng_below(&s.rng, (s.member_size - 64 * KiB) / 512) * 512;
      size_t len = k < 8 ? 4096 : k < 16 ? 64 * KiB : 512 * (1 + rng_below(&s.rng, 128));
      r = raid_pread(s.a, buf, len, off);
      tassert(r == 0, "%s: read: %d %s", s.desc, r, raid_get_error());
      tassert(memcmp(buf, first + off, len) == 0,
              "%s: read %u (%zu bytes at %" PRIu64 ") of an unsynced mirror did not "
              "come from the first copy%s", s.desc, k, len, off,
              round ? " (after reassembly)" : "");
    }
    mdset_close(&s);
  }
  test_free(first);
  test_free(buf);
  mdset_destroy(&s);
}
END_TEST

/* ---- arrays of RAM members ------------------------------------------------------------------------ */

struct rarray {
  struct raid_array *a;
  struct raid_member *m[RAID_MAX_MEMBERS];   /* as given (fault wrappers) */
  char mname[RAID_MAX_MEMBERS][48];
  char aname[32];
  char desc[160];
  unsigned n, id;
  uint64_t size;
  uint8_t *shadow;
  struct rng rng;
  uint64_t gen;
};

static struct raid_member *
ram_member(const char *name, uint64_t size, bool fault)
{
  struct raid_member *m = NULL, *f = NULL;
  int r = raid_member_new_ram(name, size, &m);

  tassert(r == 0, "raid_member_new_ram(%s): %d %s", name, r, raid_get_error());
  if (!fault)
    return m;
  r = raid_member_new_fault(m, &f);
  tassert(r == 0, "raid_member_new_fault(%s): %d %s", name, r, raid_get_error());
  return f;
}

static void
rarray_new(struct rarray *ra, int level, int layout, unsigned n, uint64_t member,
           uint64_t fault_mask, unsigned id)
{
  struct raid_config cfg;
  unsigned i;
  int r;

  memset(ra, 0, sizeof *ra);
  ra->n = n;
  ra->id = id;
  rng_seed(&ra->rng, test_seed_for(id));
  snprintf(ra->aname, sizeof ra->aname, "mdr%u", id);
  snprintf(ra->desc, sizeof ra->desc, "[raid%d %s %u x %" PRIu64 " KiB RAM seed=0x%016"
           PRIx64 "]", level, layout_name(level, layout), n, member / KiB,
           test_seed_for(id));
  for (i = 0; i < n; i++) {
    snprintf(ra->mname[i], sizeof ra->mname[i], "ram%u-%u", id, i);
    ra->m[i] = ram_member(ra->mname[i], member, (fault_mask >> i) & 1);
  }
  memset(&cfg, 0, sizeof cfg);
  cfg.name = ra->aname;
  cfg.level = level;
  cfg.layout = layout;
  cfg.chunk_size = level == RAID_LEVEL_1 ? 0 : 64 * KiB;
  cfg.raid_disks = n;
  r = raid_array_new(&cfg, ra->m, &ra->a);
  tassert(r == 0, "%s: raid_array_new: %d %s", ra->desc, r, raid_get_error());
  ra->size = raid_array_size(ra->a);
  ra->shadow = calloc(1, ra->size);
  ck_assert(ra->shadow != NULL);
}

static void
rarray_fill(struct rarray *ra)
{
  uint8_t *buf = test_alloc(1 * MiB);
  uint64_t off;
  size_t len;
  int r;

  for (off = 0; off < ra->size; off += len) {
    len = (size_t)MIN(ra->size - off, 1 * MiB);
    tag_data(&ra->rng, buf, off, len, ++ra->gen);
    r = raid_pwrite(ra->a, buf, len, off, 0);
    tassert(r == 0, "%s: write at %" PRIu64 ": %d %s", ra->desc, off, r, raid_get_error());
    memcpy(ra->shadow + off, buf, len);
  }
  test_free(buf);
}

static void
rarray_verify(struct rarray *ra, const char *when)
{
  uint8_t *buf = test_alloc(1 * MiB);
  uint64_t off, j;
  size_t len;
  int r;

  for (off = 0; off < ra->size; off += len) {
    len = (size_t)MIN(ra->size - off, 1 * MiB);
    r = raid_pread(ra->a, buf, len, off);
    tassert(r == 0, "%s: %s: read at %" PRIu64 ": %d %s", ra->desc, when, off, r,
            raid_get_error());
    if (memcmp(buf, ra->shadow + off, len) != 0) {
      char g[128], w[128];
      for (j = 0; buf[j] == ra->shadow[off + j]; j++)
        ;
      j = j / 512 * 512;
      ck_abort_msg("%s: %s: array byte %" PRIu64 " reads %s, expected %s", ra->desc,
                   when, off + j, tag_str(buf + j, g, sizeof g),
                   tag_str(ra->shadow + off + j, w, sizeof w));
    }
  }
  test_free(buf);
}

static void
rarray_free(struct rarray *ra)
{
  raid_array_free(ra->a);
  free(ra->shadow);
}

/* Fail role SLOT and add a fresh RAM member (fault-wrapped if FAULT) in
 * its place; returns it. */
static struct raid_member *
rarray_renew(struct rarray *ra, unsigned slot, const char *suffix, bool fault)
{
  char name[64];
  struct raid_member *m;
  int r;

  snprintf(name, sizeof name, "ram%u-%s", ra->id, suffix);
  if (raid_array_member_state(ra->a, slot) != RAID_MEMBER_FAULTY) {
    r = raid_array_fail_member(ra->a, slot);
    tassert(r == 0, "%s: fail %u: %d", ra->desc, slot, r);
  }
  m = ram_member(name, raid_array_member_size(ra->a), fault);
  r = add_member(ra->a, m);
  tassert(r == (int)slot, "%s: add_member(%s) returned %d (%s), expected role %u",
          ra->desc, name, r, r < 0 ? raid_get_error() : "", slot);
  return m;
}

/* ---- 6. errors ------------------------------------------------------------------------------------ */

/* Removing a member that is in sync needs RAID_REMOVE_FORCE: -EBUSY,
 * naming it, and nothing changes. */
START_TEST(test_remove_in_sync_refused)
{
  struct rarray ra;
  int r;

  rarray_new(&ra, RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, 1 * MiB, 0, 800);
  rarray_fill(&ra);
  r = raid_array_remove_member(ra.a, ra.mname[0], 0);
  assert_refused(r, -EBUSY, ra.mname[0], ra.desc, "remove of an in-sync member");
  assert_state(ra.a, ra.desc, 0, RAID_MEMBER_IN_SYNC);
  tassert(raid_array_degraded(ra.a) == 0 && find_member(ra.a, ra.mname[0]) == 0,
          "%s: the refused removal changed something", ra.desc);
  r = raid_array_remove_member(ra.a, "no-such-member", 0);
  assert_refused(r, -ENOENT, "no-such-member", ra.desc, "remove of an unknown member");
  r = raid_array_remove_member(ra.a, ra.mname[0], 0x80);
  tassert(r == -EINVAL, "%s: remove with unknown flags: %d", ra.desc, r);
  rarray_verify(&ra, "after refused removals");
  rarray_free(&ra);
}
END_TEST

/* A forced removal that would lose data (the last copy of something) is
 * refused with -EBUSY naming the member, and changes nothing. */
START_TEST(test_remove_last_redundancy_refused)
{
  static const struct { int level, layout; unsigned n, failed, victim; } cs[] = {
    { RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, 1, 0 },
    { RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 3, 0, 1 },
    { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 4, 0, 1 },
  };
  struct rarray ra;
  int r;

  rarray_new(&ra, cs[_i].level, cs[_i].layout, cs[_i].n, 1 * MiB, 0, 810 + _i);
  rarray_fill(&ra);
  r = raid_array_fail_member(ra.a, cs[_i].failed);
  tassert(r == 0, "%s: fail: %d", ra.desc, r);
  r = raid_array_remove_member(ra.a, ra.mname[cs[_i].victim], RAID_REMOVE_FORCE);
  assert_refused(r, -EBUSY, ra.mname[cs[_i].victim], ra.desc,
                 "forced removal of the last copy");
  assert_state(ra.a, ra.desc, cs[_i].victim, RAID_MEMBER_IN_SYNC);
  tassert(raid_array_degraded(ra.a) == 1 && !raid_array_is_failed(ra.a),
          "%s: degraded %u failed %d after a refused removal", ra.desc,
          raid_array_degraded(ra.a), raid_array_is_failed(ra.a));
  rarray_verify(&ra, "after a refused forced removal");
  rarray_free(&ra);
}
END_TEST

/* A forced removal the array survives: the role becomes missing, the
 * member is gone, and a new member added in its place is rebuilt. */
START_TEST(test_remove_forced)
{
  struct rarray ra;
  struct raid_member_info mi;
  int r;

  rarray_new(&ra, RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 3, 2 * MiB, 0, 820);
  rarray_fill(&ra);
  r = raid_array_remove_member(ra.a, ra.mname[1], RAID_REMOVE_FORCE);
  tassert(r == 0, "%s: forced removal: %d %s", ra.desc, r, raid_get_error());
  assert_state(ra.a, ra.desc, 1, RAID_MEMBER_MISSING);
  tassert(raid_array_degraded(ra.a) == 1, "%s: degraded %u", ra.desc,
          raid_array_degraded(ra.a));
  tassert(!find_info(ra.a, ra.mname[1], &mi) &&
          find_member(ra.a, ra.mname[1]) == -ENOENT,
          "%s: removed member still listed", ra.desc);
  tassert(raid_array_member(ra.a, 1) == NULL, "%s: role 1 still has a member", ra.desc);
  rarray_verify(&ra, "after a forced removal");
  rarray_renew(&ra, 1, "new", false);
  run_action(ra.a, ra.desc, RAID_SYNC_RECOVER);
  assert_state(ra.a, ra.desc, 1, RAID_MEMBER_IN_SYNC);
  r = raid_array_fail_member(ra.a, 0);
  r |= raid_array_fail_member(ra.a, 2);
  tassert(r == 0, "%s: fail", ra.desc);
  rarray_verify(&ra, "from the rebuilt member alone");
  rarray_free(&ra);
}
END_TEST

/* A member too small for the array is refused with -ENOSPC naming it (and
 * closed by the array); one with a name already in the array with
 * -EEXIST.  The array is unchanged. */
START_TEST(test_add_refused)
{
  struct rarray ra;
  struct raid_member *m;
  int r;

  rarray_new(&ra, RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 3, 2 * MiB, 0, 830);
  r = raid_array_fail_member(ra.a, 2);
  tassert(r == 0, "%s: fail", ra.desc);
  m = ram_member("ram830-small", 2 * MiB - 64 * KiB, false);
  r = add_member(ra.a, m);
  assert_refused(r, -ENOSPC, "ram830-small", ra.desc, "add of a too small member");
  m = ram_member(ra.mname[0], 2 * MiB, false);
  r = add_member(ra.a, m);
  assert_refused(r, -EEXIST, ra.mname[0], ra.desc, "add of a member named like one");
  assert_state(ra.a, ra.desc, 2, RAID_MEMBER_FAULTY);
  tassert(raid_array_members(ra.a, NULL, 0) == 3 &&
          find_member(ra.a, "ram830-small") == -ENOENT,
          "%s: a refused member was kept", ra.desc);
  rarray_free(&ra);
}
END_TEST

/* Replacing a faulty role is refused (add a member to rebuild it), as is a
 * role that does not exist or one already being replaced. */
START_TEST(test_replace_refused)
{
  struct rarray ra;
  struct raid_member *m;
  int r;

  rarray_new(&ra, RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 3, 1 * MiB, 0, 840);
  r = raid_array_fail_member(ra.a, 1);
  tassert(r == 0, "%s: fail", ra.desc);
  m = ram_member("ram840-a", 1 * MiB, false);
  r = raid_array_replace_member(ra.a, 1, m);
  tassert(r < 0, "%s: replacing a faulty role succeeded", ra.desc);
  tassert(strstr(raid_get_error(), ra.aname) != NULL, "%s: message without the array "
          "name: %s", ra.desc, raid_get_error());
  m = ram_member("ram840-b", 1 * MiB, false);
  r = raid_array_replace_member(ra.a, 7, m);
  tassert(r == -EINVAL, "%s: replacing role 7 of 3: %d", ra.desc, r);
  m = ram_member("ram840-c", 1 * MiB, false);
  r = raid_array_replace_member(ra.a, 0, m);
  tassert(r == 0, "%s: replace role 0: %d %s", ra.desc, r, raid_get_error());
  m = ram_member("ram840-d", 1 * MiB, false);
  r = raid_array_replace_member(ra.a, 0, m);
  assert_refused(r, -EBUSY, "ram840-c", ra.desc, "a second replacement of role 0");
  assert_state(ra.a, ra.desc, 1, RAID_MEMBER_FAULTY);
  tassert(raid_array_degraded(ra.a) == 1, "%s: degraded %u", ra.desc,
          raid_array_degraded(ra.a));
  rarray_free(&ra);
}
END_TEST

/* RAID 0 has nothing to sync: every action is refused with -EINVAL, as
 * are added members and replacements; so is an unknown action. */
START_TEST(test_raid0_refused)
{
  struct rarray ra;
  struct raid_sync_status st;
  int act, r;

  rarray_new(&ra, RAID_LEVEL_0, RAID_LAYOUT_DEFAULT, 2, 1 * MiB, 0, 850);
  for (act = RAID_SYNC_RESYNC; act <= RAID_SYNC_REPAIR; act++) {
    r = raid_array_sync_start(ra.a, act);
    assert_refused(r, -EINVAL, ra.aname, ra.desc, raid_sync_action_name(act));
  }
  r = add_member(ra.a, ram_member("ram850-x", 1 * MiB, false));
  assert_refused(r, -EINVAL, ra.aname, ra.desc, "add to RAID 0");
  r = raid_array_replace_member(ra.a, 0, ram_member("ram850-y", 1 * MiB, false));
  assert_refused(r, -EINVAL, ra.aname, ra.desc, "replace in RAID 0");
  status(ra.a, &st);
  tassert(st.action == RAID_SYNC_IDLE && !st.due, "%s: status %d due %d", ra.desc,
          st.action, st.due);
  tassert(raid_array_sync_wait(ra.a) == 0, "%s: sync_wait", ra.desc);
  rarray_free(&ra);

  rarray_new(&ra, RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, 1 * MiB, 0, 851);
  r = raid_array_sync_start(ra.a, 99);
  assert_refused(r, -EINVAL, NULL, ra.desc, "unknown action 99");
  r = raid_array_sync_start(ra.a, RAID_SYNC_IDLE);
  assert_refused(r, -EINVAL, NULL, ra.desc, "action idle");
  rarray_free(&ra);
}
END_TEST

/* A degraded RAID 5 has no redundancy to compare: check and repair are
 * refused with -EAGAIN. */
START_TEST(test_check_degraded_raid5_refused)
{
  struct rarray ra;
  int r;

  rarray_new(&ra, RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 3, 1 * MiB, 0, 860);
  rarray_fill(&ra);
  r = raid_array_fail_member(ra.a, 0);
  tassert(r == 0, "%s: fail", ra.desc);
  r = raid_array_sync_start(ra.a, RAID_SYNC_CHECK);
  assert_refused(r, -EAGAIN, ra.aname, ra.desc, "check of a degraded RAID 5");
  r = raid_array_sync_start(ra.a, RAID_SYNC_REPAIR);
  assert_refused(r, -EAGAIN, ra.aname, ra.desc, "repair of a degraded RAID 5");
  rarray_verify(&ra, "degraded");
  rarray_free(&ra);
}
END_TEST

/* While a (slow) rebuild runs, another action is refused with -EBUSY;
 * sync_stop interrupts it, keeping its place (-EINTR, the member still
 * recovering part way); started again it resumes there and completes. */
START_TEST(test_busy_stop_resume)
{
  struct rarray ra;
  struct raid_sync_status st;
  struct raid_member_info mi;
  double t0;
  int64_t start;
  int r;

  rarray_new(&ra, RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, data_bytes, 0, 870);
  rarray_fill(&ra);
  rarray_renew(&ra, 1, "new", false);
  raid_array_set_sync_limits(ra.a, data_bytes / 4, data_bytes / 4);
  r = raid_array_sync_start(ra.a, RAID_SYNC_RECOVER);
  tassert(r == 0, "%s: sync_start: %d %s", ra.desc, r, raid_get_error());
  t0 = now_s();
  do {
    status(ra.a, &st);
    tassert(now_s() - t0 < SYNC_DEADLINE_S, "%s: rebuild never started", ra.desc);
    sleep_ms(2);
  } while (st.done == 0 || st.action != RAID_SYNC_RECOVER);
  tassert(st.done < st.total, "%s: the rebuild at %" PRIu64 " bytes/s is over at "
          "once: not throttled", ra.desc, data_bytes / 4);
  r = raid_array_sync_start(ra.a, RAID_SYNC_CHECK);
  assert_refused(r, -EBUSY, "recover", ra.desc, "check during a rebuild");
  r = raid_array_sync_stop(ra.a);
  tassert(r == 0, "%s: sync_stop: %d", ra.desc, r);
  status(ra.a, &st);
  tassert(st.action == RAID_SYNC_IDLE && st.last_action == RAID_SYNC_RECOVER &&
          st.last_result == -EINTR, "%s: after stop: action %d last %d result %d",
          ra.desc, st.action, st.last_action, st.last_result);
  assert_state(ra.a, ra.desc, 1, RAID_MEMBER_RECOVERING);
  tassert(find_info(ra.a, "ram870-new", &mi) && mi.recovery_offset > 0 &&
          mi.recovery_offset < raid_array_member_size(ra.a),
          "%s: recovery offset %" PRIu64 " after the stop", ra.desc, mi.recovery_offset);
  rarray_verify(&ra, "with the rebuild stopped");

  log_reset();
  raid_array_set_sync_limits(ra.a, 0, 0);
  run_action(ra.a, ra.desc, RAID_SYNC_RECOVER);
  start = log_recover_start();
  raid_set_log_handler(NULL, NULL, RAID_LOG_INFO);
  tassert(start == (int64_t)mi.recovery_offset, "%s: resumed at %" PRId64
          ", stopped at %" PRIu64, ra.desc, start, mi.recovery_offset);
  assert_state(ra.a, ra.desc, 1, RAID_MEMBER_IN_SYNC);
  r = raid_array_fail_member(ra.a, 0);
  tassert(r == 0, "%s: fail 0", ra.desc);
  rarray_verify(&ra, "from the rebuilt member alone");
  rarray_free(&ra);
}
END_TEST

/* The rate limit holds: a rebuild of S bytes per member at R bytes/s
 * takes about S/R (the engine may be one step, at most 2 MiB, ahead). */
START_TEST(test_rate_limit)
{
  struct rarray ra;
  uint64_t rate = data_bytes / 2, ms;
  double t0, dt, want;

  rarray_new(&ra, RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, data_bytes, 0, 880);
  rarray_renew(&ra, 1, "new", false);
  ms = raid_array_member_size(ra.a);
  raid_array_set_sync_limits(ra.a, rate, rate);
  t0 = now_s();
  run_action(ra.a, ra.desc, RAID_SYNC_RECOVER);
  dt = now_s() - t0;
  want = (double)(ms - 2 * MiB) / rate;
  tassert(dt >= 0.9 * want, "%s: a rebuild of %" PRIu64 " bytes limited to %" PRIu64
          " bytes/s took %.2f s, expected at least %.2f s", ra.desc, ms, rate, dt,
          0.9 * want);
  assert_state(ra.a, ra.desc, 1, RAID_MEMBER_IN_SYNC);
  rarray_free(&ra);
}
END_TEST

/* A refused forced removal must not disturb I/O: while another thread
 * reads (and checks the degraded count), this one keeps asking to remove
 * the last in-sync member of a degraded RAID 1 and is refused every time. */
struct reader {
  struct rarray *ra;
  atomic_bool stop;
  atomic_ulong reads;
  unsigned long errors, bad_degraded;
  int first_error;
  char msg[512];
};

static void *
reader_main(void *arg)
{
  struct reader *rd = arg;
  uint8_t *buf;
  uint64_t off = 0;

  if (posix_memalign((void **)&buf, 4096, 4096) != 0)
    abort();
  while (!atomic_load(&rd->stop)) {
    int r = raid_pread(rd->ra->a, buf, 4096, off);
    unsigned d = raid_array_degraded(rd->ra->a);

    if (r != 0 && rd->errors++ == 0) {
      rd->first_error = r;
      snprintf(rd->msg, sizeof rd->msg, "%s", raid_get_error());
    }
    if (d != 1)
      rd->bad_degraded++;
    atomic_fetch_add(&rd->reads, 1);
    off = (off + 4096 * 7) % (rd->ra->size - 4096);
    off = off / 4096 * 4096;
  }
  free(buf);
  return NULL;
}

START_TEST(test_refused_remove_keeps_io)
{
  struct rarray ra;
  struct reader rd;
  pthread_t tid;
  unsigned i, n = MAX(test_scale(20000), 2000);
  double t0;
  int r;

  rarray_new(&ra, RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, 1 * MiB, 0, 890);
  rarray_fill(&ra);
  r = raid_array_fail_member(ra.a, 1);
  tassert(r == 0, "%s: fail", ra.desc);
  memset(&rd, 0, sizeof rd);
  rd.ra = &ra;
  atomic_init(&rd.stop, false);
  atomic_init(&rd.reads, 0);
  ck_assert(pthread_create(&tid, NULL, reader_main, &rd) == 0);
  /* Keep at it until the reader has done a good number of reads (it may
   * start late), within a second or two. */
  t0 = now_s();
  for (i = 0; i < n || (atomic_load(&rd.reads) < n / 4 && now_s() - t0 < 2); i++) {
    r = raid_array_remove_member(ra.a, ra.mname[0], RAID_REMOVE_FORCE);
    if (r != -EBUSY)
      break;
  }
  atomic_store(&rd.stop, true);
  pthread_join(tid, NULL);
  test_verbose("%s: %u refused removals, %lu reads", ra.desc, i,
               (unsigned long)atomic_load(&rd.reads));
  tassert(r == -EBUSY, "%s: forced removal %u of the last member returned %d", ra.desc,
          i, r);
  tassert(rd.errors == 0, "%s: %lu of %lu reads failed while removals of the last "
          "in-sync member were being refused; the first: %d %s", ra.desc, rd.errors,
          (unsigned long)atomic_load(&rd.reads), rd.first_error, rd.msg);
  tassert(rd.bad_degraded == 0, "%s: raid_array_degraded() was not 1 in %lu of %lu "
          "samples while removals were being refused", ra.desc, rd.bad_degraded,
          (unsigned long)atomic_load(&rd.reads));
  assert_state(ra.a, ra.desc, 0, RAID_MEMBER_IN_SYNC);
  rarray_verify(&ra, "after refused removals");
  rarray_free(&ra);
}
END_TEST

/* ---- 7. failures during a rebuild ------------------------------------------------------------------- */

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
  status(ra.a, &st);
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
  status(ra.a, &st);
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
    status(ra.a, &st);
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
  s = suite_create("recovery");

  tc = test_tcase("rebuild");
  tcase_add_loop_test(tc, test_rebuild_under_load, 0, nrconfs);
  tcase_add_loop_test(tc, test_replace_under_load, 0, nrconfs);
  tcase_add_loop_test(tc, test_hot_spare, 0, nrconfs);
  suite_add_tcase(s, tc);

  tc = test_tcase("scrub");
  tcase_add_loop_test(tc, test_scrub, 0, nrconfs);
  suite_add_tcase(s, tc);

  tc = test_tcase("checkpoint");
  tcase_add_loop_test(tc, test_checkpoint_resume, 0, ARRAY_SIZE(md_confs));
  tcase_add_loop_test(tc, test_resync, 0, ARRAY_SIZE(md_confs));
  tcase_add_loop_test(tc, test_replace_resume, 0, ARRAY_SIZE(md_confs));
  tcase_add_loop_test(tc, test_resync_resume, 0, ARRAY_SIZE(md_confs));
  tcase_add_test(tc, test_resume_odd_offset);
  tcase_add_test(tc, test_unsynced_reads_first_copy);
  tcase_add_test(tc, test_busy_stop_resume);
  tcase_add_test(tc, test_rate_limit);
  suite_add_tcase(s, tc);

  tc = test_tcase("errors");
  tcase_add_test(tc, test_remove_in_sync_refused);
  tcase_add_loop_test(tc, test_remove_last_redundancy_refused, 0, 3);
  tcase_add_test(tc, test_remove_forced);
  tcase_add_test(tc, test_add_refused);
  tcase_add_test(tc, test_replace_refused);
  tcase_add_test(tc, test_raid0_refused);
  tcase_add_test(tc, test_check_degraded_raid5_refused);
  tcase_add_test(tc, test_refused_remove_keeps_io);
  suite_add_tcase(s, tc);

  tc = test_tcase("failures");
  tcase_add_test(tc, test_source_fails_raid5);
  tcase_add_test(tc, test_source_fails_raid1);
  tcase_add_test(tc, test_target_fails);
  tcase_add_test(tc, test_add_during_rebuild);
  suite_add_tcase(s, tc);

  return test_run_suite(s);
}
