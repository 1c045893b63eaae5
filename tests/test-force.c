/* Description: the refusal to fail the last copy, in the library.
 * raid_array_fail_check() refuses any RAID 0 member, the last RAID 1
 * member in sync, a second RAID 5 member and the last copy in a RAID 10
 * copy set, naming what is already not in sync. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include <raid/raid.h>

#define MEMBER_SIZE (8u << 20)
#define MAXM 4

static char dir[] = "/var/tmp/test-force.XXXXXX";

static void
quiet(int priority, const char *msg, void *opaque)
{
}

static void
path_of(char *buf, size_t len, const char *set, unsigned i)
{
  snprintf(buf, len, "%s/%s%u.img", dir, set, i);
}

/* Open members IDX[0..n-1] of SET into M. */
static void
open_some(const char *set, const unsigned *idx, unsigned n, struct raid_member **m)
{
  char p[256];
  unsigned i;

  for (i = 0; i < n; i++) {
    path_of(p, sizeof p, set, idx[i]);
    ck_assert_msg(raid_member_open(p, 0, &m[i]) == 0, "%s", raid_get_error());
  }
}

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
  struct raid_member *m[MAXM];
  struct raid_config cfg = { .name = set, .level = level,
                             .layout = RAID_LAYOUT_DEFAULT, .chunk_size = 64 << 10,
                             .raid_disks = n };
  struct raid_array *a;
  static uint8_t buf[256 << 10];
  char p[256];
  unsigned i;
  int fd;

  for (i = 0; i < n; i++) {
    path_of(p, sizeof p, set, i);
    fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, MEMBER_SIZE), 0);
    close(fd);
  }
  open_some(set, all, n, m);
  ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  pattern(buf, sizeof buf, level);
  ck_assert_int_eq(raid_pwrite(a, buf, sizeof buf, 1 << 20, 0), 0);
  raid_array_free(a);
}

static struct raid_array *
assemble_ok(const char *set, const unsigned *idx, unsigned n, unsigned flags)
{
  struct raid_member *m[MAXM];
  struct raid_array *a;

  open_some(set, idx, n, m);
  ck_assert_msg(raid_array_assemble(NULL, m, n, flags, &a) == 0, "%s", raid_get_error());
  return a;
}

START_TEST(test_fail_check)
{
  struct raid_array *a;
  char p[256], want[512];

  /* RAID 0: no member may go. */
  create_set("fc0-", 0, 2);
  a = assemble_ok("fc0-", all, 2, 0);
  path_of(p, sizeof p, "fc0-", 1);
  ck_assert_int_eq(raid_array_fail_check(a, 1), -EBUSY);
  snprintf(want, sizeof want, "failing %s would leave array fc0- without its data "
           "(raid0 has no redundancy: every member holds data)", p);
  ck_assert_str_eq(raid_get_error(), want);
  ck_assert_int_eq(raid_array_member_state(a, 1), RAID_MEMBER_IN_SYNC);
  ck_assert_int_eq(raid_array_fail_check(a, 2), -EINVAL);
  raid_array_free(a);

  /* RAID 1: the first goes, the last in sync stays. */
  create_set("fc1-", 1, 2);
  a = assemble_ok("fc1-", all, 2, 0);
  ck_assert_int_eq(raid_array_fail_check(a, 0), 0);
  ck_assert_int_eq(raid_array_fail_member(a, 0), 0);
  ck_assert_int_eq(raid_array_fail_check(a, 1), -EBUSY);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "(raid1: it is the last member in sync)"));
  raid_array_free(a);

  /* RAID 5: a second member, naming the first. */
  create_set("fc5-", 5, 3);
  a = assemble_ok("fc5-", all, 3, 0);
  ck_assert_int_eq(raid_array_fail_check(a, 2), 0);
  ck_assert_int_eq(raid_array_fail_member(a, 2), 0);
  path_of(p, sizeof p, "fc5-", 2);
  snprintf(want, sizeof want, "(raid5 already degraded: member %s (role 2) faulty)", p);
  ck_assert_int_eq(raid_array_fail_check(a, 0), -EBUSY);
  ck_assert_msg(strstr(raid_get_error(), want), "%s", raid_get_error());
  raid_array_free(a);

  /* RAID 10 near-2 over 4: copy sets {0,1} and {2,3}. */
  create_set("fc10-", 10, 4);
  a = assemble_ok("fc10-", all, 4, 0);
  ck_assert_int_eq(raid_array_fail_member(a, 0), 0);
  ck_assert_int_eq(raid_array_fail_check(a, 2), 0);
  ck_assert_int_eq(raid_array_fail_check(a, 1), -EBUSY);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "raid10 already lost the other copy"));
  raid_array_free(a);
}
END_TEST

static Suite *
force_suite(void)
{
  Suite *s = suite_create("assemble-force");
  TCase *tc = tcase_create("assemble-force");

  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_fail_check);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  SRunner *sr;
  int failed;
  char cmd[128];

  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  raid_set_log_handler(quiet, NULL, RAID_LOG_DEBUG);
  sr = srunner_create(force_suite());
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "test-force: could not remove %s\n", dir);
  return failed ? 1 : 0;
}
