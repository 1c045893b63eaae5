/* The stress harness's control side (tests/stress.h): members and the
 * control steps the scenarios are made of, setting a case up, the final
 * checks (the whole array against the shadow, healing, a scrub, the
 * members' layout), the test case and the suites' main(). */

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
#include "stress.h"

/* ---- configurations and cases */

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

static const char *const scen_names[SC_N] = {
  "sync", "degraded", "fail", "rebuild", "replace", "spare", "remove", "cycle"
};

static struct scase cases[ARRAY_SIZE(confs) * SC_N];
static unsigned ncases;
static unsigned torture_s;     /* TORTURE_SECONDS, 0: bounded by counts */

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

struct raid_member *
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

bool
redundant(const struct stress *s)
{
  return s->cf->level != RAID_LEVEL_0;
}

/* Roles that are not in sync (faulty, missing, recovering). */
uint64_t
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
int
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

char *
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

bool
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
bool
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
bool
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
bool
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

bool
expect_state(struct stress *s, unsigned slot, int state, const char *when)
{
  int st = raid_array_member_state(s->a, slot);

  if (st != state) {
    serr(s, "%s: %s: role %u is in state %d, expected %d", s->desc, when, slot, st, state);
    return false;
  }
  return true;
}

bool
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

bool
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
bool
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
bool
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

/* Spares removed until KEEP are left. */
bool
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

/* Repeat while there is time (torture) or for N rounds. */
bool
more(struct stress *s, unsigned *round, unsigned n)
{
  if (failed(s))
    return false;
  if (s->deadline)
    return !timed_out(s);
  return (*round)++ < n;
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

  s->k->run(s);
  set_phase(s, "scenario done, load running to its end");
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

  printf("%s: %s: %.2f s: %" PRIu64 " requests completed: %" PRIu64 " writes "
         "%.1f MiB, %" PRIu64 " reads %.1f MiB read and verified, %" PRIu64
         " write-zeroes %.1f MiB, %" PRIu64 " discards %.1f MiB, %" PRIu64 " flushes; "
         "%u membership changes; errors 0",
         stress_prog, s->k->name, (done_at - t0) / 1e9, ops, n[K_WRITE], b[K_WRITE] / (double)MiB,
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
build_cases(const struct stress_scenario *scen, unsigned nscen)
{
  const char *only = getenv("STRESS_ONLY");
  unsigned c, sc, id = 0, i;

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
      /* The suite's scenarios only; the others keep their numbers. */
      k->run = NULL;
      for (i = 0; i < nscen; i++)
        if (scen[i].sc == k->sc)
          k->run = scen[i].run;
      if (k->run == NULL)
        continue;
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
stress_main(const char *program, const struct stress_scenario *scen, unsigned nscen)
{
  const char *p;
  Suite *s;
  TCase *tc;

  stress_prog = program;
  test_init(program);
  p = getenv("TORTURE_SECONDS");
  if (p && *p)
    torture_s = (unsigned)strtoul(p, NULL, 10);
  p = getenv("STRESS_HANG_SECONDS");
  if (p && *p && strtoul(p, NULL, 10) > 0)
    hang_s = (unsigned)strtoul(p, NULL, 10);
  build_cases(scen, nscen);
  raid_set_log_handler(log_fn, NULL, RAID_LOG_INFO);
  if (torture_s)
    printf("%s: %u cases of %u threads x %u requests in flight, "
           "TORTURE_SECONDS=%u each (about %u s in all)\n", program, ncases, THREADS, QD,
           torture_s, torture_s * ncases);
  else
    printf("%s: %u cases of %u threads x %u requests in flight, %" PRIu64
           " requests each at least\n", program, ncases, THREADS, QD, case_target());
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
