/* Description: mdadm's --assemble --force and the refusal to fail the
 * last copy, in the library.  raid_array_fail_check() refuses any RAID 0
 * member, the last RAID 1 member in sync, a second RAID 5 member and the
 * last copy in a RAID 10 copy set, naming what is already not in sync.
 * raid_array_assemble() of an array its current members cannot run
 * names the members behind and says that RAID_ASSEMBLE_FORCE may start
 * it; with the flag it takes back the freshest of them (a RAID 0 member
 * failed on request; after a RAID 5 double fault, the member that failed
 * last, not the one the array ran without), raises their events, runs
 * degraded where a member is still missing, marks a redundant array for
 * a full resync (a RAID 5 left degraded too: its resync waits for the
 * rebuild, and until then each start needs force, as md's), says what it
 * did (raid_array_forced_members()), and the data written before the
 * failures reads back; a RAID 0 whole again needs no force.  Still
 * refused, even forced: a member the superblocks show the array ran
 * without ("too far behind"), and no member behind at all. */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define MEMBER_SIZE (8u << 20)
#define MAXM 4

static const unsigned all[MAXM] = { 0, 1, 2, 3 };

static void
pattern(uint8_t *buf, size_t len, int seed)
{
  size_t i;
  for (i = 0; i < len; i++)
    buf[i] = (uint8_t)(i * 7 + seed);
}

/* Create SET: N members of LEVEL, 256 KiB of pattern written at 1 MiB,
 * stopped cleanly. */
static void
create_set(const char *set, int level, unsigned n)
{
  struct raid_array *a = tfile_array_create(set, level, n, MEMBER_SIZE);
  static uint8_t buf[256 << 10];

  pattern(buf, sizeof buf, level);
  ck_assert_int_eq(raid_pwrite(a, buf, sizeof buf, 1 << 20, 0), 0);
  raid_array_free(a);
}

static void
check_pattern(struct raid_array *a, int level)
{
  static uint8_t buf[256 << 10], want[256 << 10];

  ck_assert_msg(raid_pread(a, buf, sizeof buf, 1 << 20) == 0, "%s", raid_get_error());
  pattern(want, sizeof want, level);
  ck_assert_msg(memcmp(buf, want, sizeof buf) == 0, "the data changed");
}

static struct raid_array *
assemble_ok(const char *set, const unsigned *idx, unsigned n, unsigned flags)
{
  struct raid_member *m[MAXM];
  struct raid_array *a;

  tfile_open(set, idx, n, m);
  ck_assert_msg(raid_array_assemble(NULL, m, n, flags, &a) == 0, "%s", raid_get_error());
  return a;
}

/* Assembly of IDX[0..n-1] with FLAGS is refused, saying WHAT. */
static void
assemble_refused(const char *set, const unsigned *idx, unsigned n, unsigned flags,
                 const char *what)
{
  struct raid_member *m[MAXM];
  struct raid_array *a;

  tfile_open(set, idx, n, m);
  ck_assert_int_eq(raid_array_assemble(NULL, m, n, flags, &a), -EINVAL);
  ck_assert_msg(strstr(raid_get_error(), what) != NULL, "wanted '%s' in: %s", what,
                raid_get_error());
  tfile_close(m, n);
}

static uint64_t
events_of(const char *set, unsigned i)
{
  struct raid_superblock sb;
  struct raid_member *m;
  char p[256];

  tfile_path(p, sizeof p, set, i);
  ck_assert_int_eq(raid_member_open(p, RAID_MEMBER_READONLY, &m), 0);
  ck_assert_int_eq(raid_superblock_read(m, &sb), 0);
  raid_member_close(m);
  return sb.events;
}

/* Assemble SET (N members), fail member FAIL (which may go), then check
 * that failing REFUSED is refused with WHAT in the message.  Returns the
 * array, still running. */
static struct raid_array *
fail_then_refused(const char *set, unsigned n, unsigned fail, unsigned refused,
                  const char *what)
{
  struct raid_array *a = assemble_ok(set, all, n, 0);

  ck_assert_int_eq(raid_array_fail_check(a, fail), 0);
  ck_assert_int_eq(raid_array_fail_member(a, fail), 0);
  ck_assert_int_eq(raid_array_fail_check(a, refused), -EBUSY);
  ck_assert_msg(strstr(raid_get_error(), what) != NULL, "wanted '%s' in: %s", what,
                raid_get_error());
  return a;
}

START_TEST(test_fail_check)
{
  struct raid_array *a;
  char p[256], want[512];

  /* RAID 0: no member may go. */
  create_set("fc0-", 0, 2);
  a = assemble_ok("fc0-", all, 2, 0);
  tfile_path(p, sizeof p, "fc0-", 1);
  ck_assert_int_eq(raid_array_fail_check(a, 1), -EBUSY);
  snprintf(want, sizeof want, "failing %s would leave array fc0- without its data "
           "(raid0 has no redundancy: every member holds data)", p);
  ck_assert_str_eq(raid_get_error(), want);
  ck_assert_int_eq(raid_array_member_state(a, 1), RAID_MEMBER_IN_SYNC);
  ck_assert_int_eq(raid_array_fail_check(a, 2), -EINVAL);
  raid_array_free(a);

  /* RAID 1: the first goes, the last in sync stays. */
  create_set("fc1-", 1, 2);
  raid_array_free(fail_then_refused("fc1-", 2, 0, 1,
                                    "(raid1: it is the last member in sync)"));

  /* RAID 5: a second member, naming the first. */
  create_set("fc5-", 5, 3);
  tfile_path(p, sizeof p, "fc5-", 2);
  snprintf(want, sizeof want, "(raid5 already degraded: member %s (role 2) faulty)", p);
  raid_array_free(fail_then_refused("fc5-", 3, 2, 0, want));

  /* RAID 10 near-2 over 4: copy sets {0,1} and {2,3}. */
  create_set("fc10-", 10, 4);
  a = fail_then_refused("fc10-", 4, 0, 1, "raid10 already lost the other copy");
  ck_assert_int_eq(raid_array_fail_check(a, 2), 0);    /* the other set may lose one */
  raid_array_free(a);
}
END_TEST

START_TEST(test_force_raid0)
{
  static const unsigned survivor[] = { 0, 2 };
  struct raid_forced_member fm[MAXM];
  struct raid_array *a;
  uint64_t before;
  char p[256], want[1024];

  create_set("r0-", 0, 3);
  a = assemble_ok("r0-", all, 3, 0);
  ck_assert_int_eq(raid_array_fail_member(a, 1), 0);   /* as fail --force */
  ck_assert_int_eq(raid_array_is_failed(a), 1);
  raid_array_free(a);
  before = events_of("r0-", 1);
  ck_assert_uint_lt(before, events_of("r0-", 0));

  tfile_path(p, sizeof p, "r0-", 1);
  snprintf(want, sizeof want, "%s (role 1, events %llu, marked faulty); --force may "
           "start it, taking back %s", p, (unsigned long long)before, p);
  assemble_refused("r0-", all, 3, 0, want);
  assemble_refused("r0-", all, 3, RAID_ASSEMBLE_RUN, "--force may start it");
  /* Nothing was written by the refusals. */
  ck_assert_uint_eq(events_of("r0-", 1), before);
  /* No member behind at all: still refused, forced or not. */
  assemble_refused("r0-", survivor, 2, RAID_ASSEMBLE_FORCE | RAID_ASSEMBLE_RUN,
                   "1 of 3 members missing");

  a = assemble_ok("r0-", all, 3, RAID_ASSEMBLE_FORCE);
  ck_assert_int_eq(raid_array_degraded(a), 0);
  ck_assert_int_eq(raid_array_needs_resync(a), 0);      /* nothing to resync */
  ck_assert_uint_eq(raid_array_forced_members(a, fm, MAXM), 1);
  ck_assert_str_eq(fm[0].name, p);
  ck_assert_uint_eq(fm[0].role, 1);
  ck_assert_uint_eq(fm[0].events_from, before);
  ck_assert_uint_eq(fm[0].events_to, events_of("r0-", 0));
  ck_assert_uint_eq(fm[0].events_to, events_of("r0-", 1));
  ck_assert_int_eq(fm[0].was_faulty, 1);
  check_pattern(a, 0);
  raid_array_free(a);
  a = assemble_ok("r0-", all, 3, 0);                    /* whole again */
  ck_assert_uint_eq(raid_array_forced_members(a, fm, MAXM), 0);
  check_pattern(a, 0);
  raid_array_free(a);
}
END_TEST

/* An update that did not reach a member (a crash in the middle of it):
 * still in its role in the freshest superblock, one update behind. */
START_TEST(test_force_missed_update)
{
  struct raid_forced_member fm[MAXM];
  struct raid_array *a;
  char from[256], to[256], cmd[600];

  create_set("mu-", 0, 2);
  tfile_path(from, sizeof from, "mu-", 1);
  snprintf(to, sizeof to, "%s/mu-old.img", test_dir());
  snprintf(cmd, sizeof cmd, "cp --sparse=always '%s' '%s'", from, to);
  ck_assert_int_eq(system(cmd), 0);
  a = assemble_ok("mu-", all, 2, 0);
  raid_array_free(a);
  snprintf(cmd, sizeof cmd, "cp --sparse=always '%s' '%s'", to, from);
  ck_assert_int_eq(system(cmd), 0);

  assemble_refused("mu-", all, 2, 0, "--force may start it");
  a = assemble_ok("mu-", all, 2, RAID_ASSEMBLE_FORCE);
  ck_assert_uint_eq(raid_array_forced_members(a, fm, MAXM), 1);
  ck_assert_int_eq(fm[0].was_faulty, 0);
  check_pattern(a, 0);
  raid_array_free(a);
}
END_TEST

/* RAID 5 double fault: member 0 fails and the array runs without it,
 * then member 1 fails too.  Member 1 is the one to take back; member 0
 * missed what was written in between. */
START_TEST(test_force_raid5)
{
  static const unsigned no0[] = { 1, 2, 3 }, only23[] = { 2, 3 };
  static uint8_t later[64 << 10];
  struct raid_forced_member fm[MAXM];
  struct raid_array *a;
  uint64_t e0, e1;
  char p0[256], p1[256], want[1024];

  create_set("r5-", 5, 4);
  a = assemble_ok("r5-", all, 4, 0);
  ck_assert_int_eq(raid_array_fail_member(a, 0), 0);
  pattern(later, sizeof later, 99);                     /* written without 0 */
  ck_assert_int_eq(raid_pwrite(a, later, sizeof later, 4 << 20, 0), 0);
  ck_assert_int_eq(raid_array_fail_check(a, 1), -EBUSY);
  ck_assert_int_eq(raid_array_fail_member(a, 1), 0);   /* as fail --force */
  ck_assert_int_eq(raid_array_is_failed(a), 1);
  raid_array_free(a);
  e0 = events_of("r5-", 0);
  e1 = events_of("r5-", 1);
  ck_assert_uint_lt(e0, e1);
  ck_assert_uint_lt(e1, events_of("r5-", 2));

  tfile_path(p0, sizeof p0, "r5-", 0);
  tfile_path(p1, sizeof p1, "r5-", 1);
  snprintf(want, sizeof want, "only 2 of 4 roles have a member in sync, too few to "
           "run the array; behind the freshest superblock (events %llu): "
           "%s (role 0, events %llu, marked faulty), %s (role 1, events %llu, marked "
           "faulty); --force may start it, taking back %s",
           (unsigned long long)events_of("r5-", 2), p0, (unsigned long long)e0, p1,
           (unsigned long long)e1, p1);
  assemble_refused("r5-", all, 4, 0, want);
  assemble_refused("r5-", only23, 2, RAID_ASSEMBLE_FORCE, "2 of 4 members missing");

  a = assemble_ok("r5-", all, 4, RAID_ASSEMBLE_FORCE);
  ck_assert_uint_eq(raid_array_forced_members(a, fm, MAXM), 1);
  ck_assert_str_eq(fm[0].name, p1);
  ck_assert_uint_eq(fm[0].events_from, e1);
  ck_assert_uint_eq(fm[0].events_to, events_of("r5-", 1));
  ck_assert_uint_eq(events_of("r5-", 0), e0);           /* left alone */
  ck_assert_int_eq(raid_array_degraded(a), 1);
  ck_assert_int_eq(raid_array_member_state(a, 0), RAID_MEMBER_MISSING);
  ck_assert_int_eq(raid_array_member_state(a, 1), RAID_MEMBER_IN_SYNC);
  /* Degraded: its parity is taken as it is, but the rows that may
   * disagree stay marked, to be resynced once it is whole (issue 33). */
  ck_assert_int_eq(raid_array_needs_resync(a), 1);
  check_pattern(a, 5);
  {
    static uint8_t back[64 << 10];
    ck_assert_int_eq(raid_pread(a, back, sizeof back, 4 << 20), 0);
    ck_assert_msg(memcmp(back, later, sizeof back) == 0, "data written degraded changed");
  }
  raid_array_free(a);

  /* Until then it stays dirty and degraded: every start needs force, as
   * md's does (start_dirty_degraded), and the resync stays due. */
  assemble_refused("r5-", no0, 3, 0, "cannot start dirty degraded array");
  a = assemble_ok("r5-", no0, 3, RAID_ASSEMBLE_FORCE);
  ck_assert_int_eq(raid_array_needs_resync(a), 1);
  ck_assert_uint_eq(raid_array_forced_members(a, fm, MAXM), 0);
  check_pattern(a, 5);
  raid_array_free(a);
}
END_TEST

/* Member 0 fails and the array runs on; later members 1 and 2 fail.
 * With 1 there to witness it, member 0 is too far behind: forcing 1 alone
 * is not enough, and 0 is never taken. */
START_TEST(test_force_too_far)
{
  static const unsigned m013[] = { 0, 1, 3 };
  struct raid_array *a;
  uint64_t e0;
  char p1[256], want[1024];

  create_set("tf-", 5, 4);
  a = assemble_ok("tf-", all, 4, 0);
  ck_assert_int_eq(raid_array_fail_member(a, 0), 0);
  raid_array_free(a);
  e0 = events_of("tf-", 0);
  a = assemble_ok("tf-", all, 4, 0);                   /* runs degraded */
  ck_assert_int_eq(raid_array_fail_member(a, 1), 0);
  ck_assert_int_eq(raid_array_fail_member(a, 2), 0);
  raid_array_free(a);

  tfile_path(p1, sizeof p1, "tf-", 1);
  snprintf(want, sizeof want, "forcing cannot start it (%s/tf-0.img: too far behind, "
           "the array ran without it (%s's superblock at events %llu has it faulty "
           "and the array working))", test_dir(), p1, (unsigned long long)events_of("tf-", 1));
  assemble_refused("tf-", m013, 3, RAID_ASSEMBLE_FORCE, want);
  assemble_refused("tf-", m013, 3, 0, "--force could not start it either");
  ck_assert_uint_eq(events_of("tf-", 0), e0);
}
END_TEST

int
main(void)
{
  Suite *s;
  TCase *tc;

  test_init("test-force");
  /* The refusals are the point here: keep the library's log quiet. */
  raid_set_log_handler(NULL, NULL, -1);
  s = suite_create("assemble-force");
  tc = test_tcase("assemble-force");
  tcase_add_test(tc, test_fail_check);
  tcase_add_test(tc, test_force_raid0);
  tcase_add_test(tc, test_force_missed_update);
  tcase_add_test(tc, test_force_raid5);
  tcase_add_test(tc, test_force_too_far);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
