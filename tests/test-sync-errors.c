/* Description: member management refusals around the sync engine, on
 * arrays of RAM members: refused removals, additions and replacements name
 * the member and change nothing (a refused forced removal does not
 * disturb I/O in flight meanwhile); RAID 0 has nothing to sync, a
 * degraded RAID 5 cannot be checked.
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

#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

/* ---- errors ------------------------------------------------------------------------------------ */

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
  get_sync_status(ra.a, &st);
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

int
main(void)
{
  Suite *s;
  TCase *tc;

  test_init("test-sync-errors");
  build_confs();
  s = suite_create("sync-errors");

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

  return test_run_suite(s);
}
