/* Description: arrays with md version-1 metadata survive a restart and
 * assemble as md would assemble them.  raid_array_create() writes superblocks that
 * raid_array_assemble() reads back (any member order, data intact); clean
 * stop leaves resync_offset "in sync" and an unclean one (a crash with
 * writes in flight: safe mode is off here) asks for a resync; a member failing bumps events on the survivors and is then left
 * out as faulty; a stale member (lower events) is left out; a foreign
 * member, duplicate roles and a member with no superblock are refused with
 * a message naming the member; a degraded start needs RAID_ASSEMBLE_RUN,
 * a start missing more than the level tolerates is refused even then, and
 * so is a degraded start of a RAID 5 not stopped cleanly (the write hole)
 * unless forced.
 * Metadata 1.0, 1.1 and 1.2 put the superblock where md does (1.0 at each
 * member's own end, with the data from sector 0), an added member gets
 * its own place, the newest of two superblocks on a member wins, members
 * of mixed versions and bad versions or offsets are refused.  A new 1.0
 * member keeps md's room for a bitmap below its superblock; ctime holds
 * seconds only, as md needs for its own grow (test_ctime_seconds). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "internal.h"
#include "md/meta.h"            /* safe_mode_set_default_delay() */

#define MEMBER_SIZE (8u << 20)
#define MAXM 6

/* Create SET: N members of LEVEL, write a pattern, stop cleanly. */
static void
create_set(const char *set, int level, unsigned n)
{
  struct raid_array *a = tfile_array_create(set, level, n, MEMBER_SIZE);
  uint8_t buf[65536];
  unsigned i;

  for (i = 0; i < sizeof buf; i++)
    buf[i] = (uint8_t)(i * 7 + level);
  ck_assert_int_eq(raid_pwrite(a, buf, sizeof buf, 1 << 20, 0), 0);
  raid_array_free(a);
}

static void
check_pattern(struct raid_array *a, int level)
{
  uint8_t buf[65536];
  unsigned i;

  ck_assert_msg(raid_pread(a, buf, sizeof buf, 1 << 20) == 0, "%s", raid_get_error());
  for (i = 0; i < sizeof buf; i++)
    ck_assert_int_eq(buf[i], (uint8_t)(i * 7 + level));
}

START_TEST(test_roundtrip)
{
  static const int levels[] = { 0, 1, 5, 10 };
  struct raid_member *m[MAXM], *rev[MAXM];
  struct raid_superblock sb;
  struct raid_array *a;
  int level = levels[_i];
  char set[32];
  unsigned i, n = 4;

  snprintf(set, sizeof set, "rt%d-", level);
  create_set(set, level, n);
  tfile_read_sb(set, 0, &sb);
  ck_assert_int_eq(sb.level, level);
  ck_assert_int_eq(sb.raid_disks, n);
  ck_assert(sb.resync_offset == RAID_SB_MAX_SECTOR);   /* clean */
  ck_assert_int_eq(sb.data_offset, 2048);

  /* Assemble with the members in reverse order: roles come from disk. */
  tfile_open(set, NULL, n, m);
  for (i = 0; i < n; i++)
    rev[i] = m[n - 1 - i];
  ck_assert_msg(raid_array_assemble(NULL, rev, n, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_str_eq(raid_array_name(a), set);
  ck_assert_int_eq(raid_array_level(a), level);
  ck_assert_int_eq(raid_array_degraded(a), 0);
  ck_assert_int_eq(raid_array_needs_resync(a), 0);
  for (i = 0; i < n; i++)
    ck_assert_ptr_eq(raid_array_member(a, i), m[i]);
  check_pattern(a, level);

  /* While it runs the superblocks say active (dirty), events moved on. */
  {
    struct raid_superblock run;
    tfile_read_sb(set, 1, &run);
    ck_assert(run.resync_offset != RAID_SB_MAX_SECTOR);
    ck_assert_uint_gt(run.events, sb.events);
  }
  raid_array_free(a);
  tfile_read_sb(set, 2, &sb);
  ck_assert(sb.resync_offset == RAID_SB_MAX_SECTOR);
}
END_TEST

START_TEST(test_unclean)
{
  struct raid_member *m[3];
  struct raid_array *a;
  char from[256], to[256];
  unsigned i;

  create_set("uc-", 5, 3);
  tfile_open("uc-", NULL, 3, m);
  ck_assert_int_eq(raid_array_assemble(NULL, m, 3, 0, &a), 0);
  /* Copies of the members taken while it runs look like a crash. */
  for (i = 0; i < 3; i++) {
    tfile_path(from, sizeof from, "uc-", i);
    tfile_path(to, sizeof to, "ucc-", i);
    tfile_copy(from, to);
  }
  raid_array_free(a);
  tfile_open("ucc-", NULL, 3, m);
  ck_assert_int_eq(raid_array_assemble(NULL, m, 3, 0, &a), 0);
  ck_assert_int_eq(raid_array_needs_resync(a), 1);
  ck_assert_int_eq(raid_array_resync(a, NULL, NULL), 0);
  ck_assert_int_eq(raid_array_needs_resync(a), 0);
  check_pattern(a, 5);
  raid_array_free(a);
  tfile_open("ucc-", NULL, 3, m);
  ck_assert_int_eq(raid_array_assemble(NULL, m, 3, 0, &a), 0);
  ck_assert_int_eq(raid_array_needs_resync(a), 0);
  raid_array_free(a);
}
END_TEST

/* FNV-1a of member I of SET: proves a refusal wrote nothing. */
static uint64_t
file_sum(const char *set, unsigned i)
{
  static uint8_t buf[1 << 16];
  uint64_t h = 0xcbf29ce484222325ull;
  char p[256];
  ssize_t got, k;
  int fd;

  tfile_path(p, sizeof p, set, i);
  fd = open(p, O_RDONLY);
  ck_assert_int_ge(fd, 0);
  while ((got = read(fd, buf, sizeof buf)) > 0)
    for (k = 0; k < got; k++)
      h = (h ^ buf[k]) * 0x100000001b3ull;
  ck_assert_int_eq(got, 0);
  close(fd);
  return h;
}

/* The RAID 5 write hole: a RAID 5 that was not stopped cleanly (copies of
 * its members taken while it runs) does not start with a member missing,
 * even with RAID_ASSEMBLE_RUN: md's "cannot start dirty degraded array".
 * The error says why, which role is missing and how to force it, and
 * writes nothing.  RAID_ASSEMBLE_FORCE starts it, its resync still due
 * (it runs once a rebuild has made the array whole, issue 33), so the
 * next degraded start needs force again, as md's would.  The same array
 * stopped cleanly starts degraded with RAID_ASSEMBLE_RUN alone. */
START_TEST(test_dirty_degraded)
{
  static const unsigned m01[] = { 0, 1 };
  static const char *const want[] = {
    "assemble dd-: cannot start dirty degraded array: it was not stopped cleanly",
    "role 2 is missing", "the RAID 5 write hole", "nothing was written",
    "use --force (raidctl assemble --force, as mdadm --assemble --force)",
  };
  struct raid_member *m[3];
  struct raid_array *a;
  char from[256], to[256];
  uint64_t sum[3];
  unsigned i;

  create_set("dd-", 5, 3);
  tfile_open("dd-", NULL, 3, m);
  ck_assert_int_eq(raid_array_assemble(NULL, m, 3, 0, &a), 0);
  for (i = 0; i < 3; i++) {
    tfile_path(from, sizeof from, "dd-", i);
    tfile_path(to, sizeof to, "ddc-", i);
    tfile_copy(from, to);
  }
  raid_array_free(a);

  tfile_open("dd-", m01, 2, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 2, RAID_ASSEMBLE_RUN, &a) == 0, "clean, "
                "degraded: %s", raid_get_error());
  check_pattern(a, 5);
  raid_array_free(a);

  for (i = 0; i < 3; i++)
    sum[i] = file_sum("ddc-", i);
  tfile_open("ddc-", m01, 2, m);
  ck_assert_int_eq(raid_array_assemble(NULL, m, 2, RAID_ASSEMBLE_RUN, &a), -EINVAL);
  for (i = 0; i < ARRAY_SIZE(want); i++)
    ck_assert_msg(strstr(raid_get_error(), want[i]) != NULL, "wanted '%s' in: %s",
                  want[i], raid_get_error());
  tfile_close(m, 2);
  for (i = 0; i < 3; i++)
    ck_assert_msg(file_sum("ddc-", i) == sum[i], "member %u changed by a refusal", i);

  tfile_open("ddc-", m01, 2, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 2, RAID_ASSEMBLE_RUN | RAID_ASSEMBLE_FORCE,
                                    &a) == 0, "forced: %s", raid_get_error());
  ck_assert_int_eq(raid_array_degraded(a), 1);
  ck_assert_int_eq(raid_array_needs_resync(a), 1);
  check_pattern(a, 5);          /* member 2's chunks come from parity */
  raid_array_free(a);
  tfile_open("ddc-", m01, 2, m);
  ck_assert_int_eq(raid_array_assemble(NULL, m, 2, RAID_ASSEMBLE_RUN, &a), -EINVAL);
  ck_assert_msg(strstr(raid_get_error(), "cannot start dirty degraded array") != NULL,
                "after a forced start: %s", raid_get_error());
  tfile_close(m, 2);
}
END_TEST

START_TEST(test_failed_member_left_out)
{
  struct raid_member *m[4];
  struct raid_superblock before, after, dead;
  struct raid_array *a;

  create_set("fl-", 5, 4);
  tfile_read_sb("fl-", 0, &before);
  tfile_open("fl-", NULL, 4, m);
  ck_assert_int_eq(raid_array_assemble(NULL, m, 4, 0, &a), 0);
  ck_assert_int_eq(raid_array_fail_member(a, 2), 0);
  tfile_read_sb("fl-", 0, &after);
  tfile_read_sb("fl-", 2, &dead);
  ck_assert_uint_gt(after.events, dead.events);            /* survivors moved on */
  ck_assert_uint_eq(after.dev_roles[dead.dev_number], RAID_SB_ROLE_FAULTY);
  check_pattern(a, 5);
  raid_array_free(a);

  /* All four given: the failed one is left out, the array runs degraded
   * without --run since it was already degraded when it stopped. */
  tfile_open("fl-", NULL, 4, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 4, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_degraded(a), 1);
  ck_assert_int_eq(raid_array_member_state(a, 2), RAID_MEMBER_MISSING);
  check_pattern(a, 5);
  raid_array_free(a);
}
END_TEST

START_TEST(test_stale_member)
{
  struct raid_member *m[3];
  struct raid_array *a;
  char from[256], to[256];

  create_set("st-", 1, 3);
  /* Keep an old copy of member 1, run the array once more, put it back. */
  tfile_path(from, sizeof from, "st-", 1);
  snprintf(to, sizeof to, "%s/stale.img", test_dir());
  tfile_copy(from, to);
  tfile_open("st-", NULL, 3, m);
  ck_assert_int_eq(raid_array_assemble(NULL, m, 3, 0, &a), 0);
  raid_array_free(a);
  tfile_copy(to, from);

  tfile_open("st-", NULL, 3, m);
  /* Member 1 is stale: only 2 of 3 active members are current. */
  ck_assert_int_eq(raid_array_assemble(NULL, m, 3, 0, &a), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "--run"));
  tfile_close(m, 3);
  tfile_open("st-", NULL, 3, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 3, RAID_ASSEMBLE_RUN, &a) == 0, "%s",
                raid_get_error());
  ck_assert_int_eq(raid_array_member_state(a, 1), RAID_MEMBER_MISSING);
  check_pattern(a, 1);
  raid_array_free(a);
}
END_TEST

START_TEST(test_foreign_member)
{
  struct raid_member *m[3];
  char p[256];

  create_set("fa-", 5, 3);
  create_set("fb-", 5, 3);
  tfile_open("fa-", NULL, 3, m);
  raid_member_close(m[2]);
  tfile_path(p, sizeof p, "fb-", 2);
  ck_assert_int_eq(raid_member_open(p, 0, &m[2]), 0);
  {
    struct raid_array *a;
    ck_assert_int_eq(raid_array_assemble(NULL, m, 3, RAID_ASSEMBLE_RUN, &a), -EINVAL);
  }
  ck_assert_ptr_nonnull(strstr(raid_get_error(), p));
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "belongs to another array"));
  tfile_close(m, 3);
}
END_TEST

START_TEST(test_duplicate_role)
{
  struct raid_member *m[3];
  struct raid_array *a;
  char from[256], to[256];

  create_set("du-", 1, 2);
  tfile_path(from, sizeof from, "du-", 1);
  tfile_path(to, sizeof to, "du-", 2);
  tfile_copy(from, to);          /* a clone claims role 1 too */
  tfile_open("du-", NULL, 3, m);
  ck_assert_int_eq(raid_array_assemble(NULL, m, 3, RAID_ASSEMBLE_RUN, &a), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "both claim role 1"));
  tfile_close(m, 3);
}
END_TEST

START_TEST(test_no_superblock)
{
  struct raid_member *m[2];
  struct raid_array *a;
  char p[256];

  tfile_create("ns-", 2, MEMBER_SIZE);
  tfile_open("ns-", NULL, 2, m);
  tfile_path(p, sizeof p, "ns-", 0);
  ck_assert_int_eq(raid_array_assemble(NULL, m, 2, 0, &a), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), p));
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "no md superblock (none at sector 8 for "
                              "metadata 1.2, 0 for 1.1 or 16368 for 1.0)"));
  tfile_close(m, 2);
}
END_TEST

START_TEST(test_too_many_missing)
{
  struct raid_member *m[4];
  struct raid_array *a;

  create_set("tm-", 5, 4);
  tfile_open("tm-", NULL, 4, m);
  ck_assert_int_eq(raid_array_assemble(NULL, m, 2, RAID_ASSEMBLE_RUN, &a), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "2 of 4 members missing"));
  tfile_close(m, 4);

  /* One missing: refused without RUN, runs degraded with it. */
  tfile_open("tm-", NULL, 4, m);
  ck_assert_int_eq(raid_array_assemble(NULL, m, 3, 0, &a), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "only 3 of the 4"));
  ck_assert_int_eq(raid_array_assemble(NULL, m, 3, RAID_ASSEMBLE_RUN, &a), 0);
  ck_assert_int_eq(raid_array_degraded(a), 1);
  check_pattern(a, 5);
  raid_array_free(a);
  raid_member_close(m[3]);
}
END_TEST

START_TEST(test_create_refusals)
{
  struct raid_member *m[3] = { NULL };
  struct raid_config cfg = { .name = "bad:name", .level = 5,
                             .layout = RAID_LAYOUT_DEFAULT, .raid_disks = 3 };
  struct raid_array *a;

  tfile_create("cr-", 3, MEMBER_SIZE);
  tfile_open("cr-", NULL, 3, m);
  ck_assert_int_eq(raid_array_create(&cfg, m, 0, &a), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "array name 'bad:name' holds ':' (byte 3): "
                               "an array name is 1 to 32 characters of A-Z a-z 0-9 . _ -"));
  /* md's rule, raid_name_check(): unprintable bytes shown as \xNN. */
  ck_assert_int_eq(raid_name_check("two\nlines"), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "'two\\x0alines' holds 0x0a (byte 3)"));
  ck_assert_int_eq(raid_name_check("n23456789012345678901234567890123"), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "is 33 bytes long"));
  ck_assert_int_eq(raid_name_check(""), -EINVAL);
  ck_assert_int_eq(raid_name_check("n2345678901234567890123456789012"), 0);
  ck_assert_int_eq(raid_name_check("A-z_0.9"), 0);
  cfg.name = "ok";
  cfg.data_offset = 4096;
  ck_assert_int_eq(raid_array_create(&cfg, m, 0, &a), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "overlaps the metadata 1.2 superblock at 4096..8191"));
  cfg.metadata = RAID_METADATA_1_1;
  cfg.data_offset = 2048;
  ck_assert_int_eq(raid_array_create(&cfg, m, 0, &a), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "overlaps the metadata 1.1 superblock at 0..4095"));
  cfg.metadata = 0x105;
  ck_assert_int_eq(raid_array_create(&cfg, m, 0, &a), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "metadata version 0x105 is unknown"));
  cfg.metadata = 0;
  cfg.data_offset = 0;
  /* A RAID 5 tolerates one role created missing, not two. */
  raid_member_close(m[2]);
  raid_member_close(m[1]);
  m[2] = m[1] = NULL;
  ck_assert_int_eq(raid_array_create(&cfg, m, 0, &a), -EINVAL);
  ck_assert_msg(strstr(raid_get_error(), "2 of 3 members missing") != NULL, "%s",
                raid_get_error());
  tfile_close(m, 1);
}
END_TEST

/* mdadm's "missing" at create: a NULL member is a role created without
 * one.  The array is degraded from the start, its superblocks give the
 * role to nobody, it needs no resync where nothing can disagree (RAID 5
 * missing one, RAID 1 down to one member) and does elsewhere (RAID 10);
 * it assembles again as it was, and a member added goes into the role. */
START_TEST(test_create_missing)
{
  static const struct { int level; unsigned n, missing; int resync; } cases[] = {
    { 1, 2, 0, 0 }, { 5, 3, 1, 0 }, { 10, 4, 2, 1 }, { 1, 3, 2, 1 },
  };
  const int c = _i;
  struct raid_member *m[MAXM] = { NULL }, *x;
  struct raid_config cfg = { .name = "miss", .level = cases[c].level,
                             .layout = RAID_LAYOUT_DEFAULT, .chunk_size = 64 << 10,
                             .raid_disks = cases[c].n };
  struct raid_superblock sb;
  struct raid_array *a;
  unsigned i, k = cases[c].missing, n = cases[c].n;
  char p[256];
  int role;

  tfile_create("miss-", n + 1, MEMBER_SIZE);
  tfile_open("miss-", NULL, n, m);
  raid_member_close(m[k]);
  m[k] = NULL;
  ck_assert_msg(raid_array_create(&cfg, m, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_degraded(a), 1);
  ck_assert_int_eq(raid_array_needs_resync(a), cases[c].resync);
  if (cases[c].resync)
    ck_assert_msg(raid_array_resync(a, NULL, NULL) == 0, "%s", raid_get_error());
  raid_array_free(a);

  tfile_read_sb("miss-", (k + 1) % n, &sb);
  for (i = 0; i < sb.max_dev; i++)
    ck_assert_uint_ne(sb.dev_roles[i], k);
  ck_assert_uint_ge(sb.dev_roles[k], RAID_SB_ROLE_FAULTY);  /* device number k unused */

  memset(m, 0, sizeof m);
  for (i = 0, role = 0; i < n; i++)
    if (i != k) {
      tfile_path(p, sizeof p, "miss-", i);
      ck_assert_int_eq(raid_member_open(p, 0, &m[role++]), 0);
    }
  /* Every role that was ever active is here: no RAID_ASSEMBLE_RUN. */
  ck_assert_msg(raid_array_assemble(NULL, m, n - 1, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_degraded(a), 1);
  tfile_path(p, sizeof p, "miss-", n);
  ck_assert_int_eq(raid_member_open(p, 0, &x), 0);
  ck_assert_msg(raid_array_add_member(a, x, &role) == 0, "%s", raid_get_error());
  ck_assert_int_eq(role, (int)k);
  raid_array_free(a);
}
END_TEST

/* Each version's placement, members of different sizes, levels 1 and 5. */
START_TEST(test_versions)
{
  static const int versions[] = { RAID_METADATA_1_0, RAID_METADATA_1_1, RAID_METADATA_1_2 };
  static const uint64_t sizes[] = { MEMBER_SIZE, MEMBER_SIZE + (64 << 10), MEMBER_SIZE + (1 << 20) };
  int version = versions[_i / 2], level = _i % 2 ? 5 : 1;
  struct raid_member *m[3], *rev[3];
  struct raid_config cfg = { .level = level, .layout = RAID_LAYOUT_DEFAULT,
                             .chunk_size = 64 << 10, .raid_disks = 3, .metadata = version };
  struct raid_superblock sb;
  struct raid_array *a;
  uint8_t buf[65536], disk[65536];
  char set[32], p[256];
  unsigned i;
  int fd;

  snprintf(set, sizeof set, "v%x-%d-", (unsigned)version, level);
  cfg.name = set;
  for (i = 0; i < 3; i++) {
    tfile_path(p, sizeof p, set, i);
    fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, sizes[i]), 0);
    close(fd);
  }
  tfile_open(set, NULL, 3, m);
  ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  ck_assert_int_eq(raid_array_metadata(a), version);
  for (i = 0; i < sizeof buf; i++)
    buf[i] = (uint8_t)(i * 13 + 1);
  ck_assert_int_eq(raid_pwrite(a, buf, sizeof buf, 1 << 20, 0), 0);
  raid_array_free(a);

  for (i = 0; i < 3; i++) {
    uint64_t sectors = sizes[i] / 512;

    tfile_read_sb(set, i, &sb);
    ck_assert_int_eq(raid_superblock_version(&sb), version);
    ck_assert_uint_eq(sb.super_offset, raid_superblock_offset(version, sectors));
    if (version == RAID_METADATA_1_0) {
      /* md's place: 8 KiB from the end, rounded down to 4 KiB. */
      ck_assert_uint_eq(sb.super_offset, (sectors - 16) & ~7ull);
      ck_assert_uint_eq(sb.data_offset, 0);
      /* mdadm's create keeps room below it for a bitmap and a bad block
       * log, bitmap or not (raid_bitmap_space(): 16 sectors on members
       * this small); data_size ends there, as md's grow would leave it. */
      ck_assert_uint_eq(sb.data_size, sb.super_offset - raid_bitmap_space(version, sectors));
      ck_assert_uint_eq(sb.data_size, sb.super_offset - 16);
    }
    else {
      ck_assert_uint_eq(sb.super_offset, version == RAID_METADATA_1_1 ? 0 : 8);
      ck_assert_uint_eq(sb.data_offset, 2048);
      ck_assert_uint_eq(sb.data_offset + sb.data_size, sectors);
    }
    ck_assert_uint_le(sb.size, sb.data_size);
  }
  /* A mirror's member under 1.0 holds the data at the array's offsets. */
  if (version == RAID_METADATA_1_0 && level == 1) {
    tfile_path(p, sizeof p, set, 2);
    fd = open(p, O_RDONLY);
    ck_assert_int_eq(pread(fd, disk, sizeof disk, 1 << 20), (ssize_t)sizeof disk);
    close(fd);
    ck_assert(memcmp(disk, buf, sizeof buf) == 0);
  }

  tfile_open(set, NULL, 3, m);
  for (i = 0; i < 3; i++)
    rev[i] = m[2 - i];
  ck_assert_msg(raid_array_assemble(NULL, rev, 3, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_metadata(a), version);
  ck_assert_int_eq(raid_array_degraded(a), 0);
  ck_assert_int_eq(raid_pread(a, disk, sizeof disk, 1 << 20), 0);
  ck_assert(memcmp(disk, buf, sizeof buf) == 0);
  raid_array_free(a);
}
END_TEST

/* A member added to a 1.0 mirror gets its superblock at its own end and
 * its data from sector 0; one too small for the data and the superblock
 * is refused, naming the superblock. */
START_TEST(test_add_1_0)
{
  struct raid_member *m[2], *x;
  struct raid_config cfg = { .name = "add10", .level = 1, .layout = RAID_LAYOUT_DEFAULT,
                             .raid_disks = 2, .metadata = RAID_METADATA_1_0 };
  struct raid_superblock sb;
  struct raid_array *a;
  char p[256];
  int role, fd;

  tfile_create("add10-", 2, MEMBER_SIZE);
  tfile_open("add10-", NULL, 2, m);
  ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  ck_assert_int_eq(raid_array_fail_member(a, 1), 0);
  /* As large as the others: no room for its superblock after the data. */
  tfile_path(p, sizeof p, "add10-small", 0);
  fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_eq(ftruncate(fd, raid_array_member_size(a)), 0);
  close(fd);
  ck_assert_int_eq(raid_member_open(p, 0, &x), 0);
  ck_assert_int_eq(raid_array_add_member(a, x, &role), -ENOSPC);
  ck_assert_msg(strstr(raid_get_error(), "metadata 1.0 superblock") != NULL, "%s",
                raid_get_error());
  /* Twice as large: its superblock goes at its own end. */
  tfile_path(p, sizeof p, "add10-big", 0);
  fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_eq(ftruncate(fd, 2 * MEMBER_SIZE), 0);
  close(fd);
  ck_assert_int_eq(raid_member_open(p, 0, &x), 0);
  ck_assert_msg(raid_array_add_member(a, x, &role) == 0, "%s", raid_get_error());
  ck_assert_int_eq(role, 1);
  ck_assert_msg(raid_array_resync(a, NULL, NULL) == 0, "%s", raid_get_error());
  raid_array_free(a);
  ck_assert_int_eq(raid_member_open(p, RAID_MEMBER_READONLY, &x), 0);
  ck_assert_msg(raid_superblock_read(x, &sb) == 0, "%s", raid_get_error());
  raid_member_close(x);
  ck_assert_uint_eq(sb.super_offset, (2 * MEMBER_SIZE / 512 - 16) & ~7ull);
  ck_assert_uint_eq(sb.data_offset, 0);
  ck_assert_uint_eq(sb.data_size, sb.super_offset);
}
END_TEST

/* raid_superblock_read_path(): the same superblock through O_DIRECT and
 * through the page cache; any other flag is refused naming the member. */
START_TEST(test_read_path)
{
  struct raid_member *m[2];
  struct raid_config cfg = { .name = "rpath", .level = 1, .layout = RAID_LAYOUT_DEFAULT,
                             .raid_disks = 2 };
  struct raid_superblock sb, sb2;
  struct raid_array *a;
  char p[256];

  tfile_create("rpath-", 2, MEMBER_SIZE);
  tfile_open("rpath-", NULL, 2, m);
  ck_assert_int_eq(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a), 0);
  raid_array_free(a);
  tfile_path(p, sizeof p, "rpath-", 1);
  ck_assert_msg(raid_superblock_read_path(p, 0, &sb) == 0, "%s", raid_get_error());
  ck_assert_msg(raid_superblock_read_path(p, RAID_MEMBER_BUFFERED, &sb2) == 0, "%s",
                raid_get_error());
  ck_assert_int_eq(sb.dev_number, sb2.dev_number);
  ck_assert_int_eq(memcmp(sb.set_uuid, sb2.set_uuid, 16), 0);
  ck_assert_int_eq(raid_superblock_read_path(p, RAID_MEMBER_READONLY, &sb), -EINVAL);
  ck_assert_msg(strstr(raid_get_error(), p) != NULL &&
                strstr(raid_get_error(), "flags") != NULL, "%s", raid_get_error());
  tfile_path(p, sizeof p, "rpath-none", 0);
  ck_assert_int_lt(raid_superblock_read_path(p, 0, &sb), 0);
  ck_assert_msg(strstr(raid_get_error(), "rpath-none") != NULL, "%s", raid_get_error());
}
END_TEST

/* raid_superblock_erase(): the superblock read no more, and only its
 * RAID_SB_BYTES changed (the data the array wrote is still there). */
START_TEST(test_erase)
{
  struct raid_member *m[2], *x;
  struct raid_config cfg = { .name = "erase", .level = 1, .layout = RAID_LAYOUT_DEFAULT,
                             .raid_disks = 2 };
  struct raid_superblock sb, bad = { .super_offset = UINT64_MAX >> 10 };
  struct raid_array *a;
  static uint8_t before[MEMBER_SIZE], after[MEMBER_SIZE];
  char p[256];
  FILE *f;
  size_t i, lo, hi;

  tfile_create("erase-", 2, MEMBER_SIZE);
  tfile_open("erase-", NULL, 2, m);
  ck_assert_int_eq(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a), 0);
  memset(before, 0x5a, 65536);
  ck_assert_int_eq(raid_pwrite(a, before, 65536, 0, 0), 0);
  raid_array_free(a);
  tfile_path(p, sizeof p, "erase-", 0);
  ck_assert_ptr_nonnull(f = fopen(p, "rb"));
  ck_assert_uint_eq(fread(before, 1, sizeof before, f), sizeof before);
  fclose(f);
  ck_assert_int_eq(raid_member_open(p, 0, &x), 0);
  ck_assert_msg(raid_superblock_read(x, &sb) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_superblock_erase(x, &bad), -EINVAL);
  ck_assert_msg(strstr(raid_get_error(), p) != NULL, "%s", raid_get_error());
  ck_assert_msg(raid_superblock_erase(x, &sb) == 0, "%s", raid_get_error());
  ck_assert_int_lt(raid_superblock_read(x, &sb), 0);
  raid_member_close(x);
  ck_assert_ptr_nonnull(f = fopen(p, "rb"));
  ck_assert_uint_eq(fread(after, 1, sizeof after, f), sizeof after);
  fclose(f);
  /* One assertion per range, not per byte: a Check assertion that holds
   * still costs a call, 8 MiB of them minutes under valgrind. */
  lo = 8 * 512;
  hi = lo + RAID_SB_BYTES;
  ck_assert_msg(memcmp(before, after, lo) == 0, "a byte before the superblock changed");
  ck_assert_msg(memcmp(before + hi, after + hi, sizeof after - hi) == 0,
                "a byte after the superblock changed");
  for (i = lo; i < hi && after[i] == 0; i++)
    ;
  ck_assert_msg(i == hi, "byte %zu of the erased superblock is 0x%02x", i, after[i]);
}
END_TEST

/* Encode SB and write it at its super_offset on member I of SET. */
static void
write_sb(const char *set, unsigned i, const struct raid_superblock *sb)
{
  uint8_t *img = calloc(1, RAID_SB_BYTES);
  char p[256];
  int fd;

  ck_assert_int_eq(raid_superblock_encode(sb, img), 0);
  tfile_path(p, sizeof p, set, i);
  fd = open(p, O_WRONLY);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(pwrite(fd, img, RAID_SB_BYTES, (off_t)sb->super_offset * 512),
                   RAID_SB_BYTES);
  close(fd);
  free(img);
}

/* Two valid superblocks on one member (re-created with another version,
 * the old one not yet overwritten): the newer wins.  A member whose
 * superblock is of another version than the freshest is refused. */
START_TEST(test_two_versions)
{
  struct raid_member *m[2];
  struct raid_config cfg = { .name = "two", .level = 1, .layout = RAID_LAYOUT_DEFAULT,
                             .raid_disks = 2, .metadata = RAID_METADATA_1_2 };
  struct raid_superblock sb;
  struct raid_array *a;
  unsigned i;

  tfile_create("two-", 2, MEMBER_SIZE);
  tfile_open("two-", NULL, 2, m);
  ck_assert_int_eq(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a), 0);
  raid_array_free(a);
  /* Made a second before the next: ctime holds whole seconds (as md's),
   * so two arrays made within one second have no newer one, for mdadm
   * neither. */
  for (i = 0; i < 2; i++) {
    tfile_read_sb("two-", i, &sb);
    sb.ctime -= 1;
    write_sb("two-", i, &sb);
  }
  /* Now 1.0 over the same files: the 1.2 superblocks stay at sector 8. */
  cfg.metadata = RAID_METADATA_1_0;
  tfile_open("two-", NULL, 2, m);
  ck_assert_int_eq(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a), 0);
  raid_array_free(a);
  tfile_read_sb("two-", 0, &sb);
  ck_assert_int_eq(raid_superblock_version(&sb), RAID_METADATA_1_0);

  /* Member 1 gets a newer 1.2 superblock of the same array. */
  tfile_read_sb("two-", 1, &sb);
  sb.super_offset = 8;
  sb.data_offset = 16;                  /* just after it: room for sb.size */
  sb.data_size = MEMBER_SIZE / 512 - 16;
  sb.ctime += 1;
  write_sb("two-", 1, &sb);
  tfile_read_sb("two-", 1, &sb);
  ck_assert_int_eq(raid_superblock_version(&sb), RAID_METADATA_1_2);
  tfile_open("two-", NULL, 2, m);
  ck_assert_int_eq(raid_array_assemble(NULL, m, 2, 0, &a), -EINVAL);
  ck_assert_msg(strstr(raid_get_error(), "has metadata") != NULL, "%s", raid_get_error());
  tfile_close(m, 2);

  /* An array stacked on a 1.0 mirror: its 1.2 superblock lands at sector
   * 8 of each mirror member, newer and valid, but inside the mirror's
   * data: the member's own superblock is still the 1.0 one. */
  tfile_read_sb("two-", 0, &sb);
  ck_assert_int_eq(raid_superblock_version(&sb), RAID_METADATA_1_0);
  {
    struct raid_superblock up = sb;
    uint64_t lower = sb.size;           /* the mirror's size, in sectors */

    up.set_uuid[0] ^= 0xff;
    up.super_offset = 8;
    up.data_offset = 2048;
    up.data_size = lower - 2048;
    up.size = lower - 2048;
    up.ctime += 10;
    write_sb("two-", 0, &up);
  }
  tfile_read_sb("two-", 0, &sb);
  ck_assert_int_eq(raid_superblock_version(&sb), RAID_METADATA_1_0);
}
END_TEST

/* ctime and utime hold seconds only, as md and mdadm write them: md's
 * super_1_validate() takes all 64 bits of ctime, and update_array_info()
 * (mdadm --grow --size, SET_ARRAY_INFO) refuses with EINVAL a ctime that
 * does not fit GET_ARRAY_INFO's 32 bits.  Our arrays made before kept
 * microseconds in the top 24 bits: an assembly drops them (the seconds
 * stay), except on a 1.0 array whose data reaches into md's room below
 * the superblock, where md's grow would shrink the array. */
START_TEST(test_ctime_seconds)
{
  static const uint64_t usec = UINT64_C(654321) << 40;
  struct raid_member *m[2];
  struct raid_config cfg = { .name = "ct", .level = 1, .layout = RAID_LAYOUT_DEFAULT,
                             .raid_disks = 2, .metadata = RAID_METADATA_1_2 };
  struct raid_superblock sb;
  struct raid_array *a;
  uint64_t t0 = (uint64_t)time(NULL), ctime, events;
  unsigned i;

  tfile_create("ct12-", 2, MEMBER_SIZE);
  tfile_open("ct12-", NULL, 2, m);
  ck_assert_int_eq(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a), 0);
  raid_array_free(a);
  tfile_read_sb("ct12-", 0, &sb);
  ck_assert_uint_ge(sb.ctime, t0);
  ck_assert_uint_le(sb.ctime, (uint64_t)time(NULL));
  ck_assert_uint_ge(sb.utime, sb.ctime);
  ck_assert_uint_le(sb.utime, (uint64_t)time(NULL));
  ctime = sb.ctime;

  /* As an older libraid wrote it: microseconds above the seconds. */
  for (i = 0; i < 2; i++) {
    tfile_read_sb("ct12-", i, &sb);
    sb.ctime |= usec;
    write_sb("ct12-", i, &sb);
  }
  events = sb.events;
  tfile_open("ct12-", NULL, 2, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 2, 0, &a) == 0, "%s", raid_get_error());
  raid_array_free(a);
  for (i = 0; i < 2; i++) {
    tfile_read_sb("ct12-", i, &sb);
    ck_assert_uint_gt(sb.events, events);
    ck_assert_uint_eq(sb.ctime, ctime);
  }

  /* A 1.0 mirror made before we kept md's room: its data runs up to the
   * superblock.  It assembles as before and keeps its ctime. */
  cfg.metadata = RAID_METADATA_1_0;
  tfile_create("ct10-", 2, MEMBER_SIZE);
  tfile_open("ct10-", NULL, 2, m);
  ck_assert_int_eq(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a), 0);
  raid_array_free(a);
  for (i = 0; i < 2; i++) {
    tfile_read_sb("ct10-", i, &sb);
    ck_assert_uint_lt(sb.data_size, sb.super_offset);
    sb.data_size = sb.size = sb.super_offset;
    sb.ctime |= usec;
    write_sb("ct10-", i, &sb);
  }
  ctime = sb.ctime;
  events = sb.events;
  tfile_open("ct10-", NULL, 2, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 2, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_member_size(a), sb.super_offset * 512);
  raid_array_free(a);
  for (i = 0; i < 2; i++) {
    tfile_read_sb("ct10-", i, &sb);
    ck_assert_uint_gt(sb.events, events);
    ck_assert_uint_eq(sb.ctime, ctime);
  }
}
END_TEST

/* A member missing when the array started is taken back once (and
 * rebuilt); one that was there and failed is not; nor a foreign one, nor
 * a split half (each half run alone in turn). */
START_TEST(test_readd)
{
  struct raid_member *m[2], *x;
  struct raid_config cfg = { .name = "rd", .level = 1, .layout = RAID_LAYOUT_DEFAULT,
                             .raid_disks = 2 };
  struct raid_superblock sb1, other;
  struct raid_array *a;
  char p[256];
  int role;

  tfile_create("rd-", 2, MEMBER_SIZE);
  tfile_open("rd-", NULL, 2, m);
  ck_assert_int_eq(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a), 0);
  raid_array_free(a);
  tfile_read_sb("rd-", 1, &sb1);
  create_set("rdx-", 1, 2);
  tfile_read_sb("rdx-", 0, &other);

  /* Started without member 1: it may come back, once. */
  tfile_open("rd-", NULL, 1, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 1, RAID_ASSEMBLE_RUN, &a) == 0, "%s",
                raid_get_error());
  ck_assert_int_eq(raid_array_readd_check(a, &other, "X"), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "member X belongs to another array"));
  ck_assert_msg(raid_array_readd_check(a, &sb1, "M1") == 0, "%s", raid_get_error());
  tfile_path(p, sizeof p, "rd-", 1);
  ck_assert_int_eq(raid_member_open(p, 0, &x), 0);
  ck_assert_msg(raid_array_readd_member(a, x, &role) == 0, "%s", raid_get_error());
  ck_assert_int_eq(role, 1);
  ck_assert_int_eq(raid_array_readd_check(a, &sb1, "M1"), -EPERM);   /* not twice */
  ck_assert_msg(raid_array_resync(a, NULL, NULL) == 0, "%s", raid_get_error());
  raid_array_free(a);

  /* Both there, then member 1 fails: it is not taken back by itself. */
  tfile_read_sb("rd-", 1, &sb1);
  tfile_open("rd-", NULL, 2, m);
  ck_assert_int_eq(raid_array_assemble(NULL, m, 2, 0, &a), 0);
  ck_assert_int_eq(raid_array_fail_member(a, 1), 0);
  ck_assert_int_eq(raid_array_readd_check(a, &sb1, "M1"), -EPERM);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "member M1 (device 1 of rd) was not "
                               "missing when the array started"));
  raid_array_free(a);

  /* Split: from one clean state, member 1 runs alone (elsewhere), then
   * member 0 alone here, and member 1 comes back to it. */
  tfile_create("rd-", 2, MEMBER_SIZE);
  tfile_open("rd-", NULL, 2, m);
  ck_assert_int_eq(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a), 0);
  raid_array_free(a);
  tfile_path(p, sizeof p, "rd-", 1);
  ck_assert_int_eq(raid_member_open(p, 0, &x), 0);
  ck_assert_int_eq(raid_array_assemble(NULL, &x, 1, RAID_ASSEMBLE_RUN, &a), 0);
  raid_array_free(a);
  tfile_read_sb("rd-", 1, &sb1);
  tfile_open("rd-", NULL, 1, m);
  ck_assert_int_eq(raid_array_assemble(NULL, m, 1, RAID_ASSEMBLE_RUN, &a), 0);
  ck_assert_int_eq(raid_array_readd_check(a, &sb1, "M1"), -EEXIST);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "split mirror"));
  raid_array_free(a);
}
END_TEST

static Suite *
metadata_suite(void)
{
  Suite *s = suite_create("metadata");
  TCase *tc = test_tcase("metadata");

  tcase_add_loop_test(tc, test_roundtrip, 0, 4);
  tcase_add_test(tc, test_unclean);
  tcase_add_test(tc, test_dirty_degraded);
  tcase_add_test(tc, test_failed_member_left_out);
  tcase_add_test(tc, test_stale_member);
  tcase_add_test(tc, test_foreign_member);
  tcase_add_test(tc, test_duplicate_role);
  tcase_add_test(tc, test_no_superblock);
  tcase_add_test(tc, test_too_many_missing);
  tcase_add_test(tc, test_create_refusals);
  tcase_add_loop_test(tc, test_create_missing, 0, 4);
  tcase_add_loop_test(tc, test_versions, 0, 6);
  tcase_add_test(tc, test_add_1_0);
  tcase_add_test(tc, test_two_versions);
  tcase_add_test(tc, test_ctime_seconds);
  tcase_add_test(tc, test_read_path);
  tcase_add_test(tc, test_erase);
  tcase_add_test(tc, test_readd);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  test_init("test-metadata");
  /* The refusals are the point here: keep the library's log quiet. */
  raid_set_log_handler(NULL, NULL, -1);
  /* Copies of running members stand for a crash with writes in flight
   * here: safe mode (test-safemode.c) never marks these arrays clean. */
  safe_mode_set_default_delay(0);
  return test_run_suite(metadata_suite());
}
