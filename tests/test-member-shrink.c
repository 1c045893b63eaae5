/* Description: a member file cut short behind the library's back fails
 * its member and is never read as zeroes (issue 33).  For RAID 1 (2
 * members), RAID 5 (3) and RAID 10 (near-2 over 4), one member's file is
 * cut to half its size:
 *  - in the middle of a random workload, every read compared with what was
 *    written; then the whole array is written and read back: not one wrong
 *    block, the member is faulty and lost, the log names it with both sizes,
 *    and the file was never extended again by a write;
 *  - with only reads after the cut: nothing wrong is read, a RAID 5 (which
 *    must read that member) fails it, and a cut file is never extended;
 *  - cut, seen by the next writes, then extended back to its full size
 *    (truncate -s, which leaves a hole where the data was): the member
 *    stays failed and every block still reads back right;
 *  - cut, then extended part of the way by one write behind the array's
 *    back (what a write of the array's own, in flight at the cut, does
 *    when it lands): reads of the hole it leaves, which come back whole
 *    and zero, are caught by the size all the same; nothing wrong is
 *    read, a RAID 5 fails the member.
 * And with md metadata: a member file shorter than its data end refuses
 * assembly (as a damaged superblock does), naming the member, its data end
 * and its size; the array assembles degraded without it; add refuses it,
 * naming it and both sizes.
 * Skipped in loop mode (RAID_TEST_LOOP=1): a loop device does not shrink
 * with its file.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "testlib.h"

#define OPS 150

/* ---- configurations ----------------------------------------------------------------- */

static const struct tconf confs[] = {
  { RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, 0, 0, 4 * MiB },
  { RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 3, 64 * KiB, 0, 4 * MiB },
  { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 4, 64 * KiB, 0, 4 * MiB },
};
#define SLOT 1u                 /* the member whose file is cut */

static bool
skip_loop(void)
{
  if (test_loop_mode()) {
    printf("test-member-shrink: skipped in loop mode (a loop device keeps its size)\n");
    return true;
  }
  return false;
}

static void
cut(struct tarray *t, uint64_t size)
{
  tassert(truncate(t->tm.file[SLOT], (off_t)size) == 0, "%s: truncate %s: %m", t->desc,
          t->tm.file[SLOT]);
}

static uint64_t
file_size(struct tarray *t)
{
  struct stat st;

  tassert(stat(t->tm.file[SLOT], &st) == 0, "%s: stat %s: %m", t->desc, t->tm.file[SLOT]);
  return (uint64_t)st.st_size;
}

static void
write_all(struct tarray *t)
{
  uint64_t off;

  for (off = 0; off < t->size; off += MIN(t->size - off, 1 * MiB))
    tarray_write(t, off, MIN(t->size - off, 1 * MiB), 0);
}

static int
member_lost(struct tarray *t)
{
  struct raid_member_info info[RAID_MAX_MEMBERS];
  unsigned n = raid_array_members(t->a, info, RAID_MAX_MEMBERS), i;

  for (i = 0; i < n && i < RAID_MAX_MEMBERS; i++)
    if (info[i].name && strcmp(info[i].name, t->tm.path[SLOT]) == 0)
      return info[i].lost;
  ck_abort_msg("%s: member %s not listed", t->desc, t->tm.path[SLOT]);
  return -1;
}

static void
assert_failed(struct tarray *t)
{
  int s = raid_array_member_state(t->a, SLOT);

  tassert(s == RAID_MEMBER_FAULTY, "%s: member %u state %d, expected faulty", t->desc,
          SLOT, s);
  tassert(raid_array_degraded(t->a) == 1 && !raid_array_is_failed(t->a),
          "%s: degraded %u failed %d", t->desc, raid_array_degraded(t->a),
          raid_array_is_failed(t->a));
  tassert(member_lost(t) == 1, "%s: member %u not lost", t->desc, SLOT);
}

/* ---- cut while the array runs --------------------------------------------------------- */

START_TEST(test_cut_midrun)
{
  struct tarray t;
  uint64_t half;
  char sizes[2][32];

  if (skip_loop())
    return;
  test_log_capture(RAID_LOG_WARNING);
  tarray_setup(&t, &confs[_i], 0, 0, test_seed_for(_i));
  tarray_random_ops(&t, test_scale(OPS));
  half = t.tm.size[SLOT] / 2;
  cut(&t, half);
  t.lost = UINT64_C(1) << SLOT;     /* not compared with md's layout any more */
  tarray_random_ops(&t, test_scale(OPS));
  write_all(&t);                    /* reaches past the cut on every member */
  assert_failed(&t);
  tarray_check_all(&t);
  tarray_random_ops(&t, test_scale(OPS / 2));
  tarray_check_all(&t);
  tarray_check_placement(&t);
  tassert(file_size(&t) == half, "%s: the cut file was extended to %" PRIu64 " bytes",
          t.desc, file_size(&t));
  snprintf(sizes[0], sizeof sizes[0], "%" PRIu64 " bytes", half);
  snprintf(sizes[1], sizeof sizes[1], "the %" PRIu64, t.tm.size[SLOT]);
  test_log_assert_line(t.desc, (const char *[]){ t.tm.path[SLOT], sizes[0], sizes[1],
                                            "cut short", NULL });
  test_log_assert_line(t.desc, (const char *[]){ t.name, t.tm.path[SLOT], "failed", NULL });
  raid_set_log_handler(NULL, NULL, RAID_LOG_INFO);
  tarray_teardown(&t);
}
END_TEST

/* Only reads after the cut: no zeroes read as data; a RAID 5 must read
 * the member's half past the cut, so it fails it.  (A mirror may serve
 * every read from the other copy and never see the cut: then the member
 * still holds the role, and its file is still as it was cut.) */
START_TEST(test_cut_reads)
{
  struct tarray t;
  uint64_t half;

  if (skip_loop())
    return;
  test_log_capture(RAID_LOG_WARNING);
  tarray_setup(&t, &confs[_i], 0, 0, test_seed_for(100 + _i));
  write_all(&t);
  half = t.tm.size[SLOT] / 2;
  cut(&t, half);
  t.lost = UINT64_C(1) << SLOT;
  tarray_check_all(&t);
  tarray_check_sample(&t, 32);
  if (confs[_i].level == RAID_LEVEL_5)
    assert_failed(&t);
  tassert(file_size(&t) == half, "%s: the cut file was extended to %" PRIu64 " bytes",
          t.desc, file_size(&t));
  raid_set_log_handler(NULL, NULL, RAID_LOG_INFO);
  tarray_teardown(&t);
}
END_TEST

/* Cut, seen by the writes that follow (without extending the file), then
 * extended back to its full size behind the array's back: a hole where
 * the data was.  The member stays failed: nothing reads the hole. */
START_TEST(test_cut_then_extend)
{
  struct tarray t;
  uint64_t full;

  if (skip_loop())
    return;
  test_log_capture(RAID_LOG_WARNING);
  tarray_setup(&t, &confs[_i], 0, 0, test_seed_for(200 + _i));
  write_all(&t);
  full = t.tm.size[SLOT];
  cut(&t, full / 2);
  t.lost = UINT64_C(1) << SLOT;
  write_all(&t);
  assert_failed(&t);
  cut(&t, full);
  tarray_check_all(&t);
  tarray_random_ops(&t, test_scale(OPS));
  assert_failed(&t);
  tarray_check_all(&t);
  raid_set_log_handler(NULL, NULL, RAID_LOG_INFO);
  tarray_teardown(&t);
}
END_TEST

/* Cut to half, then one 4 KiB write lands at three quarters behind the
 * array's back, as a write in flight at the cut would: the file is longer
 * than the cut but shorter than it was, [half, 3/4) a hole that reads
 * back whole, as zeroes.  Every read is checked all the same. */
START_TEST(test_cut_hole)
{
  struct tarray t;
  uint64_t full, at;
  char junk[4096];
  int fd;

  if (skip_loop())
    return;
  test_log_capture(RAID_LOG_WARNING);
  tarray_setup(&t, &confs[_i], 0, 0, test_seed_for(300 + _i));
  write_all(&t);
  full = t.tm.size[SLOT];
  at = full / 4 * 3;
  cut(&t, full / 2);
  memset(junk, 0xa5, sizeof junk);
  fd = open(t.tm.file[SLOT], O_WRONLY);
  tassert(fd >= 0 && pwrite(fd, junk, sizeof junk, (off_t)at) == (ssize_t)sizeof junk,
          "%s: a write at %" PRIu64 " of %s: %m", t.desc, at, t.tm.file[SLOT]);
  close(fd);
  t.lost = UINT64_C(1) << SLOT;
  tarray_check_all(&t);
  if (confs[_i].level == RAID_LEVEL_5)
    assert_failed(&t);
  tassert(file_size(&t) == at + sizeof junk, "%s: the cut file is %" PRIu64 " bytes",
          t.desc, file_size(&t));
  raid_set_log_handler(NULL, NULL, RAID_LOG_INFO);
  tarray_teardown(&t);
}
END_TEST

/* ---- assembly and add --------------------------------------------------------------- */

/* A member file shorter than its data end: refused at assembly (as a
 * damaged superblock is: the whole assembly, naming the member, its data
 * end and its size), so the array is assembled without it, degraded; and
 * add refuses it, naming it and both sizes. */
START_TEST(test_assemble_short)
{
  static const int levels[] = { RAID_LEVEL_1, RAID_LEVEL_5, RAID_LEVEL_10 };
  static const unsigned disks[] = { 2, 3, 4 };
  char set[32], path[256], sizes[3][64];
  struct raid_member *m[RAID_MAX_MEMBERS], *x;
  struct raid_superblock sb;
  struct raid_array *a;
  unsigned n = disks[_i], idx[RAID_MAX_MEMBERS], i, k = 0;
  uint64_t size;
  int r, role;

  if (skip_loop())
    return;
  snprintf(set, sizeof set, "shrink%d", _i);
  a = tfile_array_create(set, levels[_i], n, 4 * MiB);
  raid_array_free(a);
  tfile_path(path, sizeof path, set, SLOT);
  tfile_read_sb(set, SLOT, &sb);
  size = ((sb.data_offset + sb.data_size) << 9) - 64 * KiB;
  ck_assert_int_eq(truncate(path, (off_t)size), 0);

  tfile_open(set, NULL, n, m);
  r = raid_array_assemble(NULL, m, n, 0, &a);
  ck_assert_int_eq(r, -EINVAL);
  snprintf(sizes[0], sizeof sizes[0], "data_offset %" PRIu64 " + data_size %" PRIu64
           " sectors", sb.data_offset, sb.data_size);
  snprintf(sizes[1], sizeof sizes[1], "(%" PRIu64 " sectors): cut short", size >> 9);
  ck_assert_msg(strstr(raid_get_error(), path) && strstr(raid_get_error(), sizes[0]) &&
                strstr(raid_get_error(), sizes[1]), "%s", raid_get_error());
  tfile_close(m, n);

  for (i = 0; i < n; i++)
    if (i != SLOT)
      idx[k++] = i;
  tfile_open(set, idx, k, m);
  r = raid_array_assemble(NULL, m, k, RAID_ASSEMBLE_RUN, &a);
  ck_assert_msg(r == 0, "assemble: %d %s", r, raid_get_error());
  ck_assert_int_eq(raid_array_degraded(a), 1);

  ck_assert_int_eq(raid_member_open(path, 0, &x), 0);
  r = raid_array_add_member(a, x, &role);
  ck_assert_int_eq(r, -ENOSPC);
  snprintf(sizes[2], sizeof sizes[2], "too small: %" PRIu64 " bytes, the array needs %"
           PRIu64, size, (sb.data_offset << 9) + raid_array_member_size(a));
  ck_assert_msg(strstr(raid_get_error(), path) && strstr(raid_get_error(), sizes[2]),
                "%s", raid_get_error());
  raid_array_free(a);
}
END_TEST

static Suite *
shrink_suite(void)
{
  Suite *s = suite_create("member-shrink");
  TCase *tc = test_tcase("cut");

  tcase_add_loop_test(tc, test_cut_midrun, 0, ARRAY_SIZE(confs));
  tcase_add_loop_test(tc, test_cut_reads, 0, ARRAY_SIZE(confs));
  tcase_add_loop_test(tc, test_cut_then_extend, 0, ARRAY_SIZE(confs));
  tcase_add_loop_test(tc, test_cut_hole, 0, ARRAY_SIZE(confs));
  tcase_add_loop_test(tc, test_assemble_short, 0, 3);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  test_init("test-member-shrink");
  return test_run_suite(shrink_suite());
}
