/* Description: degraded operation.  For RAID 1, RAID 5 (every layout) and
 * RAID 10 (near-2 and near-3), every member that can be lost is lost in
 * three ways -- missing at assembly (a NULL member), failing all I/O through
 * the fault injector in the middle of a workload (part way through a
 * request), and raid_array_fail_member() -- and all data must still read
 * back, writes must still work, the member must be reported faulty or
 * missing, the surviving members must hold md's layout with consistent
 * RAID 5 parity, and the failure must be logged naming the array and the
 * member.  Losing members in different mirror sets at once works; losing
 * one member too many fails I/O with -EIO; RAID 0 fails I/O with -EIO as
 * soon as a member fails.  A member failing reads on a small range only
 * (bad sectors) never returns wrong data.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define OPS 200

/* Some warning or error names the array and member SLOT of T. */
static void
log_assert_names(struct tarray *t, unsigned slot)
{
  test_log_assert_line(t->desc, (const char *const[]){ t->name, t->tm.path[slot], NULL });
}

/* ---- configurations ----------------------------------------------------------------- */

struct dcase {
  struct tconf c;
  unsigned slot;          /* member to lose */
};

static struct tconf dconfs[64];
static unsigned ndconfs;
static struct dcase cases[512];
static unsigned ncases;
static struct dcase some[64];
static unsigned nsome;

static void
add_dconf(int level, int layout, unsigned disks, uint32_t chunk, uint64_t off)
{
  uint64_t base = chunk >= 512 * KiB ? 4 * MiB : chunk >= 64 * KiB ? 1 * MiB : 512 * KiB;

  dconfs[ndconfs++] = (struct tconf){ level, layout, disks, chunk, off, off + base };
}

static void
build_confs(void)
{
  unsigned n, i;
  int l;

  add_dconf(RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, 0, 0);
  add_dconf(RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 3, 0, 1 * MiB);
  /* Every layout with 4 members; 3, 5 and 6 members in one layout each. */
  for (l = 0; l < 4; l++)
    add_dconf(RAID_LEVEL_5, l, 4, 64 * KiB, l == 2 ? 1 * MiB : 0);
  add_dconf(RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 2, 64 * KiB, 0);
  add_dconf(RAID_LEVEL_5, RAID_LAYOUT_LEFT_ASYMMETRIC, 3, 4 * KiB, 0);
  add_dconf(RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 5, 64 * KiB, 0);
  add_dconf(RAID_LEVEL_5, RAID_LAYOUT_RIGHT_SYMMETRIC, 6, 512 * KiB, 0);
  add_dconf(RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 2, 64 * KiB, 0);
  add_dconf(RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 3, 64 * KiB, 0);
  add_dconf(RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 4, 4 * KiB, 1 * MiB);
  add_dconf(RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(3), 4, 64 * KiB, 0);
  add_dconf(RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 5, 64 * KiB, 0);
  add_dconf(RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(3), 6, 64 * KiB, 0);
  /* Every member of every configuration. */
  for (i = 0; i < ndconfs; i++)
    for (n = 0; n < dconfs[i].disks; n++)
      cases[ncases++] = (struct dcase){ dconfs[i], n };
  /* One member per configuration, a different one each time. */
  for (i = 0; i < ndconfs; i++)
    some[nsome++] = (struct dcase){ dconfs[i], (i * 7 + 1) % dconfs[i].disks };
}

static void
assert_state(struct tarray *t, unsigned slot, int state)
{
  int s = raid_array_member_state(t->a, slot);

  tassert(s == state, "%s: member %u state %d, expected %d", t->desc, slot, s, state);
}

/* ---- one member lost --------------------------------------------------------------- */

/* Missing at assembly: the array assembles degraded, all I/O works, the
 * surviving members hold md's layout (RAID 5 parity still covers the
 * missing member's data), and it assembles again degraded with the data. */
START_TEST(test_missing)
{
  const struct dcase *d = &cases[_i];
  struct tarray t;

  tarray_setup(&t, &d->c, 0, UINT64_C(1) << d->slot, test_seed_for(_i));
  tassert(raid_array_degraded(t.a) == 1, "%s: degraded %u", t.desc,
                raid_array_degraded(t.a));
  tarray_random_ops(&t, test_scale(OPS));
  tarray_check_all(&t);
  tarray_check_placement(&t);
  tarray_close_array(&t);
  tarray_assemble(&t);
  tarray_check_sample(&t, 8);
  tarray_teardown(&t);
}
END_TEST

/* A member whose every I/O fails from a random point on, in the middle of
 * the workload (so part way through some request): no request fails, the
 * member becomes faulty, the failure is logged, the data is intact. */
START_TEST(test_fail_midway)
{
  const struct dcase *d = &cases[_i];
  struct tarray t;
  struct raid_fault rule = {
    .ops = RAID_FAULT_READ | RAID_FAULT_WRITE | RAID_FAULT_FLUSH,
    .error = EIO,
  };
  int r;

  test_log_capture(RAID_LOG_WARNING);
  tarray_setup(&t, &d->c, TA_FAULT, 0, test_seed_for(1000 + _i));
  rule.after = rng_between(&t.rng, 5, 40);
  tarray_random_ops(&t, test_scale(OPS / 4));
  r = raid_fault_add(t.m[d->slot], &rule);
  tassert(r == 0, "raid_fault_add: %d %s", r, raid_get_error());
  t.lost = UINT64_C(1) << d->slot;
  tarray_random_ops(&t, test_scale(OPS));
  /* However small the workload, make the fault fire: writes of the whole
   * array reach every member. */
  {
    uint64_t off;
    unsigned pass;
    for (pass = 0; pass < 50 && raid_fault_count(t.m[d->slot]) == 0; pass++)
      for (off = 0; off < t.size; off += MIN(t.size - off, 1 * MiB))
        tarray_write(&t, off, MIN(t.size - off, 1 * MiB), 0);
  }
  tassert(raid_fault_count(t.m[d->slot]) > 0,
          "%s: the fault (after %" PRIu64 ") never fired; member %u state %d, degraded %u",
          t.desc, rule.after, d->slot, raid_array_member_state(t.a, d->slot),
          raid_array_degraded(t.a));
  assert_state(&t, d->slot, RAID_MEMBER_FAULTY);
  tassert(raid_array_degraded(t.a) == 1 && !raid_array_is_failed(t.a),
                "%s: degraded %u failed %d", t.desc, raid_array_degraded(t.a),
                raid_array_is_failed(t.a));
  tarray_random_ops(&t, test_scale(OPS / 4));
  tarray_check_all(&t);
  tarray_check_placement(&t);
  log_assert_names(&t, d->slot);
  raid_set_log_handler(NULL, NULL, RAID_LOG_INFO);
  tarray_teardown(&t);
}
END_TEST

/* raid_array_fail_member() in the middle of a workload. */
START_TEST(test_fail_member_api)
{
  const struct dcase *d = &some[_i];
  struct tarray t;
  int r;

  tarray_setup(&t, &d->c, 0, 0, test_seed_for(2000 + _i));
  tarray_random_ops(&t, test_scale(OPS / 4));
  r = raid_array_fail_member(t.a, d->slot);
  tassert(r == 0, "%s: raid_array_fail_member(%u): %d %s", t.desc, d->slot, r,
                raid_get_error());
  t.lost = UINT64_C(1) << d->slot;
  assert_state(&t, d->slot, RAID_MEMBER_FAULTY);
  tassert(raid_array_degraded(t.a) == 1, "%s: degraded %u", t.desc,
                raid_array_degraded(t.a));
  tarray_random_ops(&t, test_scale(OPS / 2));
  tarray_check_all(&t);
  tarray_check_placement(&t);
  tarray_teardown(&t);
}
END_TEST

/* ---- several members lost ------------------------------------------------------------- */

static const struct {
  struct tconf c;
  uint64_t lost;
} multi[] = {
  { { RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 3, 0, 0, 2 * MiB }, 0x3 },
  { { RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 3, 0, 0, 2 * MiB }, 0x5 },
  { { RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 4, 0, 0, 2 * MiB }, 0xe },
  { { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 4, 64 * KiB, 0, 4 * MiB }, 0x5 },
  { { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 4, 64 * KiB, 0, 4 * MiB }, 0x9 },
  { { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 6, 4 * KiB, 0, 2 * MiB }, 0x15 },
  { { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(3), 6, 64 * KiB, 0, 4 * MiB }, 0x1b },
  { { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(3), 6, 64 * KiB, 0, 4 * MiB }, 0x12 },
};

/* Several members missing at assembly, one or more per mirror set, but
 * never a whole set (md's enough()). */
START_TEST(test_multi_missing)
{
  struct tarray t;

  ck_assert(tconf_survives(&multi[_i].c, multi[_i].lost));
  tarray_setup(&t, &multi[_i].c, 0, multi[_i].lost, test_seed_for(3000 + _i));
  tarray_random_ops(&t, test_scale(OPS));
  tarray_check_all(&t);
  tarray_check_placement(&t);
  tarray_teardown(&t);
}
END_TEST

/* Same losses, but through the fault injector one after the other while
 * the workload runs. */
START_TEST(test_multi_fail)
{
  struct tarray t;
  unsigned i, n = 0;

  tarray_setup(&t, &multi[_i].c, TA_FAULT, 0, test_seed_for(4000 + _i));
  tarray_random_ops(&t, test_scale(OPS / 4));
  for (i = 0; i < t.c.disks; i++) {
    struct raid_fault rule = {
      .ops = RAID_FAULT_READ | RAID_FAULT_WRITE | RAID_FAULT_FLUSH, .error = EIO,
    };
    if (!((multi[_i].lost >> i) & 1))
      continue;
    ck_assert(raid_fault_add(t.m[i], &rule) == 0);
    t.lost |= UINT64_C(1) << i;
    n++;
    tarray_random_ops(&t, test_scale(OPS / 4));
    tarray_write(&t, 0, t.size > 4 * MiB ? 4 * MiB : t.size, 0);
    if (t.c.level == RAID_LEVEL_1)   /* every write reaches every mirror */
      assert_state(&t, i, RAID_MEMBER_FAULTY);
  }
  tarray_check_all(&t);
  tarray_check_placement(&t);
  tarray_teardown(&t);
}
END_TEST

/* ---- too many members lost ------------------------------------------------------------ */

/* Every synchronous and asynchronous request of T fails with -EIO. */
static void
assert_all_io_fails(struct tarray *t)
{
  uint8_t *buf = test_alloc(64 * KiB);
  uint64_t offs[] = { 0, t->size / 2, t->size - 64 * KiB };
  unsigned i;
  int r;

  memset(buf, 0, 64 * KiB);
  for (i = 0; i < ARRAY_SIZE(offs); i++) {
    r = raid_pread(t->a, buf, 64 * KiB, offs[i]);
    tassert(r == -EIO, "%s: read at %" PRIu64 " on a failed array: %d", t->desc,
                  offs[i], r);
    tassert(strstr(raid_get_error(), t->name) != NULL,
                  "%s: error message does not name the array: %s", t->desc,
                  raid_get_error());
    r = raid_pwrite(t->a, buf, 64 * KiB, offs[i], 0);
    tassert(r == -EIO, "%s: write at %" PRIu64 " on a failed array: %d", t->desc,
                  offs[i], r);
  }
  test_free(buf);
}

/* RAID 0: a member failing mid-run fails the request that touches it with
 * -EIO, the array is failed, and every later request fails with -EIO. */
START_TEST(test_raid0_fail)
{
  struct tconf c = { RAID_LEVEL_0, RAID_LAYOUT_DEFAULT, 3, 64 * KiB, 0, 4 * MiB };
  struct raid_fault rule = {
    .ops = RAID_FAULT_READ | RAID_FAULT_WRITE, .error = EIO, .after = 30,
  };
  struct tarray t;
  unsigned i;
  int r = 0;

  test_log_capture(RAID_LOG_WARNING);
  tarray_setup(&t, &c, TA_FAULT, 0, test_seed_for(5000 + _i));
  ck_assert(raid_fault_add(t.m[_i], &rule) == 0);
  for (i = 0; i < 10000 && r == 0; i++) {
    uint64_t off;
    size_t len;
    uint8_t *buf;
    tarray_random_range(&t, &off, &len);
    buf = test_alloc(len);
    tarray_make_data(&t, buf, off, len);
    r = rng_percent(&t.rng, 50) ? raid_pwrite(t.a, buf, len, off, 0)
      : raid_pread(t.a, buf, len, off);
    test_free(buf);
  }
  tassert(r == -EIO, "%s: a request with member %u failing returned %d", t.desc,
                _i, r);
  assert_state(&t, _i, RAID_MEMBER_FAULTY);
  tassert(raid_array_is_failed(t.a) == 1, "%s: RAID 0 not failed", t.desc);
  log_assert_names(&t, _i);
  assert_all_io_fails(&t);
  raid_set_log_handler(NULL, NULL, RAID_LOG_INFO);
  tarray_teardown(&t);
}
END_TEST

/* RAID 1, 5 and 10: losing one member more than the level tolerates (one
 * missing at assembly, then one failing) fails all I/O with -EIO. */
START_TEST(test_too_many_fail)
{
  static const struct {
    struct tconf c;
    unsigned missing, failing;
  } t2[] = {
    { { RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, 0, 0, 2 * MiB }, 0, 1 },
    { { RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 4, 64 * KiB, 0, 4 * MiB }, 1, 2 },
    { { RAID_LEVEL_5, RAID_LAYOUT_LEFT_ASYMMETRIC, 3, 4 * KiB, 0, 2 * MiB }, 2, 0 },
    { { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 4, 64 * KiB, 0, 4 * MiB }, 2, 3 },
  };
  struct raid_fault rule = {
    .ops = RAID_FAULT_READ | RAID_FAULT_WRITE | RAID_FAULT_FLUSH, .error = EIO,
  };
  struct tarray t;
  uint64_t off;
  int r = 0;

  tarray_setup(&t, &t2[_i].c, TA_FAULT, UINT64_C(1) << t2[_i].missing,
               test_seed_for(6000 + _i));
  tarray_random_ops(&t, test_scale(OPS / 4));
  ck_assert(raid_fault_add(t.m[t2[_i].failing], &rule) == 0);
  /* Write the whole array: some request must touch the failing member and
   * fail; after that everything fails. */
  for (off = 0; off < t.size && r == 0; off += 256 * KiB) {
    uint8_t *buf = test_alloc(256 * KiB);
    tarray_make_data(&t, buf, off, 256 * KiB);
    r = raid_pwrite(t.a, buf, MIN(256 * KiB, t.size - off), off, 0);
    test_free(buf);
  }
  tassert(r == -EIO, "%s: writing with member %u missing and %u failing: %d",
                t.desc, t2[_i].missing, t2[_i].failing, r);
  tassert(raid_array_is_failed(t.a) == 1, "%s: array not failed", t.desc);
  assert_all_io_fails(&t);
  tarray_teardown(&t);
}
END_TEST

/* ---- bad sectors -------------------------------------------------------------------- */

/* A member failing reads only on a 64 KiB range: reads of that range are
 * served from redundancy and never return wrong data; writes keep working. */
START_TEST(test_bad_range)
{
  const struct dcase *d = &some[_i];
  struct tarray t;
  struct raid_fault rule = { .ops = RAID_FAULT_READ, .error = EIO, .length = 64 * KiB };
  unsigned i;

  tarray_setup(&t, &d->c, TA_FAULT, 0, test_seed_for(7000 + _i));
  tarray_random_ops(&t, test_scale(OPS / 4));
  rule.offset = d->c.data_offset + rng_below(&t.rng, t.member_size / (64 * KiB)) * 64 * KiB;
  ck_assert(raid_fault_add(t.m[d->slot], &rule) == 0);
  /* Read everything twice, write some, read again. */
  tarray_check_all(&t);
  for (i = 0; i < 20; i++) {
    uint64_t off;
    size_t len;
    tarray_random_range(&t, &off, &len);
    tarray_write(&t, off, len, 0);
  }
  tarray_check_all(&t);
  tarray_random_ops(&t, test_scale(OPS / 4));
  tarray_check_all(&t);
  if (raid_array_member_state(t.a, d->slot) != RAID_MEMBER_IN_SYNC)
    t.lost = UINT64_C(1) << d->slot;
  raid_fault_clear(t.m[d->slot]);
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
  test_init("test-degraded");
  s = suite_create("degraded");
  build_confs();
  tc = test_tcase("one-lost");
  tcase_add_loop_test(tc, test_missing, 0, ncases);
  tcase_add_loop_test(tc, test_fail_midway, 0, ncases);
  tcase_add_loop_test(tc, test_fail_member_api, 0, nsome);
  suite_add_tcase(s, tc);
  tc = test_tcase("several-lost");
  tcase_add_loop_test(tc, test_multi_missing, 0, ARRAY_SIZE(multi));
  tcase_add_loop_test(tc, test_multi_fail, 0, ARRAY_SIZE(multi));
  suite_add_tcase(s, tc);
  tc = test_tcase("too-many-lost");
  tcase_add_loop_test(tc, test_raid0_fail, 0, 3);
  tcase_add_loop_test(tc, test_too_many_fail, 0, 4);
  suite_add_tcase(s, tc);
  tc = test_tcase("bad-range");
  tcase_add_loop_test(tc, test_bad_range, 0, nsome);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
