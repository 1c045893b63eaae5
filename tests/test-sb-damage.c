/* Description: md v1.2 superblocks (lib/superblock.c) that must be
 * refused, or not.
 *  - Corruption: starting from a valid encoding, each field is damaged in
 *    turn (the checksum fixed again unless the checksum is the point), and
 *    decode must fail with -EINVAL, errno EINVAL and a message naming the
 *    member and that field.  What md tolerates (0xff after dev_roles, stale
 *    reshape fields, bblog fields) must be accepted.
 *  - Split mirrors: raid_superblock_split() finds a member that marks
 *    faulty a device the array runs on, or whose events ran ahead, and
 *    names the device; one that only fell behind is not split.  One
 *    update behind, in sync in its role, counts as current (md's margin
 *    of one); rebuilding, failed by that update, or two behind does not.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "internal.h"
#include "testlib.h"
#include "sb-bytes.h"

/* ---- corruption, one field at a time ------------------------------------------ */

struct damage {
  const char *name;
  void (*fn)(uint8_t *buf);
  bool fix;                     /* recompute the checksum afterwards */
  uint64_t read_at;             /* 0: the default, sector 8 */
  const char *expect;           /* in raid_get_error() */
};

static void d_magic(uint8_t *b) { b[0] ^= 0x01; }
static void d_version(uint8_t *b) { le32_put(b + 0x04, 2); }
static void d_version0(uint8_t *b) { le32_put(b + 0x04, 0); }
static void d_csum_field(uint8_t *b) { le32_put(b + 0xd8, (uint32_t)le_get(b + 0xd8, 4) + 1); }
static void d_csum_data(uint8_t *b) { b[0x17] ^= 0x40; }
static void d_csum_role(uint8_t *b) { b[0x100 + 2 * 127] ^= 0x01; }
static void d_super_offset(uint8_t *b) { le64_put(b + 0x90, 0); }
static void d_none(uint8_t *b) { (void)b; }
/* The bitmap itself is understood (test-bitmap.c); md's bitmap-guided
 * recovery on top of it is not. */
static void d_bitmap(uint8_t *b) { le32_put(b + 0x08, 0x1 | 0x80); le32_put(b + 0x60, 8); }
/* A reshape (0x4) decodes: assembly decides whether it can resume it. */
static void d_clustered(uint8_t *b) { le32_put(b + 0x08, 0x100); }
static void d_badblocks(uint8_t *b) { le32_put(b + 0x08, 0x8 | 0x2); }
static void d_journal_ppl(uint8_t *b) { le32_put(b + 0x08, 0x200 | 0x400); }
static void d_feature_new(uint8_t *b) { le32_put(b + 0x08, 0x80000000u); }
static void d_pad0(uint8_t *b) { b[0x0f] = 0x10; }
static void d_pad3_first(uint8_t *b) { b[0xe0] = 1; }
static void d_pad3_last(uint8_t *b) { b[0xff] = 0x80; }
static void d_data_size_big(uint8_t *b) { le64_put(b + 0x88, le_get(b + 0x88, 8) + 1); }
static void d_data_offset_big(uint8_t *b) { le64_put(b + 0x80, MEMBER_SECTORS); }
static void d_data_offset_huge(uint8_t *b) { le64_put(b + 0x80, UINT64_MAX - 5); }
static void d_data_size_huge(uint8_t *b) { le64_put(b + 0x88, UINT64_MAX); }
static void d_data_size_small(uint8_t *b) { le64_put(b + 0x88, 9); le64_put(b + 0x50, 0); }
static void d_overlap(uint8_t *b) { le64_put(b + 0x80, 8); }
static void d_overlap_before(uint8_t *b)
{
  le64_put(b + 0x80, 0);
  le64_put(b + 0x88, 10);       /* sectors 0-9 cross the superblock at 8 */
  le64_put(b + 0x50, 0);
}
static void d_overlap_big_maxdev(uint8_t *b)
{
  /* max_dev 1920: the superblock takes 8 sectors, 8-15. */
  le32_put(b + 0xdc, 1920);
  memset(b + 0x100 + 2 * 128, 0xff, 2 * (1920 - 128));
  le64_put(b + 0x80, 15);
  le64_put(b + 0x88, 1000);
  le64_put(b + 0x50, 1000);
}
static void d_size(uint8_t *b) { le64_put(b + 0x50, le_get(b + 0x88, 8) + 1); }
static void d_max_dev(uint8_t *b) { le32_put(b + 0xdc, RAID_SB_MAX_DEV + 1); }
static void d_max_dev_huge(uint8_t *b) { le32_put(b + 0xdc, UINT32_MAX); }
static void d_raid_disks0(uint8_t *b) { le32_put(b + 0x5c, 0); }
static void d_raid_disks_big(uint8_t *b) { le32_put(b + 0x5c, RAID_MAX_MEMBERS + 1); }
static void d_role(uint8_t *b) { le16_put(b + 0x100 + 2 * 1, 4); }
static void d_role_last(uint8_t *b) { le16_put(b + 0x100 + 2 * 127, 0xfffc); }
static void d_dev_number(uint8_t *b) { le32_put(b + 0xa0, 128); }
static void d_level(uint8_t *b) { le32_put(b + 0x48, 2); }
static void d_level_multipath(uint8_t *b) { le32_put(b + 0x48, (uint32_t)-4); }

static const struct damage damages[] = {
  { "magic", d_magic, false, 0, "no md superblock at sector 8 (magic 0xa92b4efd" },
  { "major version 2", d_version, true, 0, "major version 2 is not 1" },
  { "major version 0", d_version0, true, 0, "major version 0 is not 1" },
  { "sb_csum field", d_csum_field, false, 0, "superblock checksum 0x" },
  { "checksummed byte", d_csum_data, false, 0, "does not match 0x" },
  { "last role", d_csum_role, false, 0, "superblock checksum" },
  { "super_offset", d_super_offset, true, 0, "says its super_offset is sector 0" },
  { "read elsewhere", d_none, false, 16, "read at sector 16 says its super_offset is sector 8" },
  { "bitmap-guided recovery", d_bitmap, true, 0,
    "uses md features 0x80 (bitmap-guided recovery) that libraid does not support" },
  { "clustered", d_clustered, true, 0, "features 0x100 (clustered md)" },
  { "bad blocks", d_badblocks, true, 0, "features 0x8 (bad block list)" },
  { "journal and ppl", d_journal_ppl, true, 0,
    "features 0x600 (write journal, partial parity log)" },
  { "future feature", d_feature_new, true, 0, "features 0x80000000 (unknown to md)" },
  { "pad0", d_pad0, true, 0, "pad0 is 0x10000000, not 0" },
  { "pad3 first", d_pad3_first, true, 0, "pad3 has 0x01 at byte 0 (offset 0xe0)" },
  { "pad3 last", d_pad3_last, true, 0, "pad3 has 0x80 at byte 31 (offset 0xff)" },
  { "data_size past the end", d_data_size_big, true, 0,
    "data_offset 2048 + data_size 129025 sectors ends beyond the member (131072 sectors)" },
  { "data_offset past the end", d_data_offset_big, true, 0, "ends beyond the member" },
  { "data_offset wraps", d_data_offset_huge, true, 0, "ends beyond the member" },
  { "data_size wraps", d_data_size_huge, true, 0, "ends beyond the member" },
  { "data_size under md's 10", d_data_size_small, true, 0, "data_size 9 sectors is too small" },
  { "data on the superblock", d_overlap, true, 0,
    "data area (sectors 8 to 129031) overlaps the superblock (sectors 8 to 8)" },
  { "data up to the superblock", d_overlap_before, true, 0,
    "(sectors 0 to 9) overlaps the superblock (sectors 8 to 8)" },
  { "data in a 4 KiB superblock", d_overlap_big_maxdev, true, 0,
    "overlaps the superblock (sectors 8 to 15)" },
  { "size over data_size", d_size, true, 0,
    "size 129025 sectors used per member is more than data_size 129024" },
  { "max_dev", d_max_dev, false, 0, "max_dev 1921 is more than 1920" },
  { "max_dev huge", d_max_dev_huge, false, 0, "max_dev 4294967295 is more than" },
  { "raid_disks 0", d_raid_disks0, true, 0, "raid_disks is 0" },
  { "raid_disks 65", d_raid_disks_big, true, 0, "raid_disks 65 is more than libraid's 64" },
  { "role out of range", d_role, true, 0, "dev_roles[1] is 4, out of range for raid_disks 4" },
  { "last role 0xfffc", d_role_last, true, 0, "dev_roles[127] is 65532" },
  { "dev_number", d_dev_number, true, 0, "dev_number 128 has no role: max_dev is 128" },
  { "level 2", d_level, true, 0, "RAID level 2 is not one md has" },
  { "level multipath", d_level_multipath, true, 0, "RAID level -4" },
};

START_TEST(test_damage)
{
  const struct damage *d = &damages[_i];
  struct raid_superblock *sb = malloc(sizeof *sb);
  uint8_t *buf = test_alloc(RAID_SB_BYTES);
  const char *msg;
  int r;

  ck_assert_ptr_nonnull(sb);
  sb_raid5(sb, 1);
  ck_assert_int_eq(raid_superblock_encode(sb, buf), 0);
  ck_assert_int_eq(raid_superblock_decode(buf, 8, MEMBER_SECTORS, WHO, sb), 0);
  d->fn(buf);
  if (d->fix)
    fix_csum(buf);
  r = raid_superblock_decode(buf, d->read_at ? d->read_at : 8, MEMBER_SECTORS, WHO, sb);
  msg = raid_get_error();
  ck_assert_msg(r == -EINVAL, "%s: decode returned %d, not -EINVAL", d->name, r);
  ck_assert_int_eq(raid_get_errno(), EINVAL);
  ck_assert_msg(strstr(msg, "member " WHO ": ") != NULL, "%s: no member name in \"%s\"",
                d->name, msg);
  ck_assert_msg(strstr(msg, d->expect) != NULL, "%s: \"%s\" not in \"%s\"", d->name,
                d->expect, msg);
  test_free(buf);
  free(sb);
}
END_TEST

/* The checksum message carries both values, as found and as computed. */
START_TEST(test_csum_message)
{
  struct raid_superblock *sb = malloc(sizeof *sb);
  uint8_t *buf = test_alloc(RAID_SB_BYTES);
  char want[128];
  uint32_t good;

  ck_assert_ptr_nonnull(sb);
  sb_raid5(sb, 0);
  ck_assert_int_eq(raid_superblock_encode(sb, buf), 0);
  good = (uint32_t)le_get(buf + 0xd8, 4);
  le32_put(buf + 0xd8, 0x1234);
  ck_assert_int_eq(raid_superblock_decode(buf, 8, MEMBER_SECTORS, WHO, sb), -EINVAL);
  snprintf(want, sizeof want, "member " WHO ": superblock checksum 0x00001234 does not"
           " match 0x%08" PRIx32 " computed", good);
  ck_assert_str_eq(raid_get_error(), want);
  test_free(buf);
  free(sb);
}
END_TEST

/* What md tolerates, we accept. */
START_TEST(test_tolerated)
{
  struct raid_superblock *sb = malloc(sizeof *sb), *got = malloc(sizeof *got);
  uint8_t *buf = test_alloc(RAID_SB_BYTES);
  unsigned i;

  ck_assert_ptr_nonnull(sb);
  ck_assert_ptr_nonnull(got);
  sb_raid5(sb, 3);
  sb->feature_map = RAID_SB_FEATURE_RECOVERY_OFFSET;
  sb->recovery_offset = 4096;
  ck_assert_int_eq(raid_superblock_encode(sb, buf), 0);
  /* mdadm's 0xff fill after dev_roles[max_dev], outside the checksum. */
  memset(buf + 0x100 + 2 * sb->max_dev, 0xff, RAID_SB_BYTES - 0x100 - 2 * sb->max_dev);
  /* Stale bitmap_offset and reshape fields without their feature bits. */
  for (i = 0x60; i < 0x80; i++)
    buf[i] = (uint8_t)(i * 7 + 1);
  /* Bytes after the NUL of the name. */
  buf[0x20 + 30] = 'x';
  fix_csum(buf);
  ck_assert_msg(raid_superblock_decode(buf, 8, MEMBER_SECTORS, WHO, got) == 0, "%s",
                raid_get_error());
  ck_assert_str_eq(got->set_name, "libraid-test:sb5");
  ck_assert_uint_eq(got->feature_map, RAID_SB_FEATURE_RECOVERY_OFFSET);
  ck_assert_uint_eq(got->recovery_offset, 4096);
  ck_assert_uint_eq(got->bblog_size, 8);
  ck_assert_int_eq(got->bblog_offset, 16);

  /* Data exactly up to the member's end, and data before a superblock
   * (metadata 1.0 style, the superblock at the end). */
  sb_raid5(sb, 0);
  sb->super_offset = MEMBER_SECTORS - 16;
  sb->data_offset = 0;
  sb->data_size = MEMBER_SECTORS - 16;
  sb->size = sb->data_size;
  ck_assert_int_eq(raid_superblock_encode(sb, buf), 0);
  ck_assert_msg(raid_superblock_decode(buf, MEMBER_SECTORS - 16, MEMBER_SECTORS, WHO, got)
                == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_superblock_decode(buf, MEMBER_SECTORS - 16, MEMBER_SECTORS - 1,
                                          WHO, got), 0);
  sb->data_size++;
  ck_assert_int_eq(raid_superblock_encode(sb, buf), 0);
  ck_assert_int_eq(raid_superblock_decode(buf, MEMBER_SECTORS - 16, MEMBER_SECTORS, WHO,
                                          got), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "overlaps the superblock"));
  test_free(buf);
  free(sb);
  free(got);
}
END_TEST
/* A RAID 1 of devices 0 and 1 at events 40; MINE is device 1's
 * superblock as it left, CUR the array's now. */
START_TEST(test_split)
{
  struct raid_superblock *mine = calloc(1, sizeof *mine), *cur = calloc(1, sizeof *cur);
  unsigned dev = 99;

  ck_assert_ptr_nonnull(mine);
  ck_assert_ptr_nonnull(cur);
  cur->raid_disks = mine->raid_disks = 2;
  cur->max_dev = mine->max_dev = 3;
  cur->dev_roles[0] = mine->dev_roles[0] = 0;
  cur->dev_roles[1] = mine->dev_roles[1] = 1;
  cur->dev_roles[2] = mine->dev_roles[2] = RAID_SB_ROLE_SPARE;
  mine->dev_number = 1;
  cur->events = 40;
  mine->events = 31;                    /* behind: failed or removed */
  cur->dev_roles[1] = RAID_SB_ROLE_FAULTY;
  ck_assert_int_eq(raid_superblock_split(mine, cur, &dev), 0);
  mine->events = 41;                    /* ran ahead on its own */
  ck_assert_int_eq(raid_superblock_split(mine, cur, &dev), 1);
  ck_assert_uint_eq(dev, 1);
  mine->events = 35;                    /* started alone: device 0 faulty */
  mine->dev_roles[0] = RAID_SB_ROLE_FAULTY;
  ck_assert_int_eq(raid_superblock_split(mine, cur, &dev), 1);
  ck_assert_uint_eq(dev, 0);
  cur->dev_roles[0] = RAID_SB_ROLE_FAULTY;   /* ... but the array lost it too */
  cur->dev_roles[2] = 0;                     /* and device 2 took the role */
  ck_assert_int_eq(raid_superblock_split(mine, cur, &dev), 0);
  free(mine);
  free(cur);
}
END_TEST

/* md's margin of one: device 1 of a RAID 1 at events 40, the freshest
 * superblock at 41. */
START_TEST(test_one_behind)
{
  struct raid_superblock *sb = calloc(1, sizeof *sb), *fresh = calloc(1, sizeof *fresh);

  ck_assert_ptr_nonnull(sb);
  ck_assert_ptr_nonnull(fresh);
  fresh->raid_disks = sb->raid_disks = 2;
  fresh->max_dev = sb->max_dev = 2;
  fresh->dev_roles[0] = sb->dev_roles[0] = 0;
  fresh->dev_roles[1] = sb->dev_roles[1] = 1;
  sb->dev_number = 1;
  sb->events = 40;
  fresh->events = 41;
  ck_assert_int_eq(raid_superblock_one_behind(sb, fresh), 1);
  sb->feature_map = RAID_SB_FEATURE_RECOVERY_OFFSET;   /* was rebuilding */
  ck_assert_int_eq(raid_superblock_one_behind(sb, fresh), 0);
  sb->feature_map = 0;
  fresh->dev_roles[1] = RAID_SB_ROLE_FAULTY;           /* the update failed it */
  ck_assert_int_eq(raid_superblock_one_behind(sb, fresh), 0);
  fresh->dev_roles[1] = 1;
  fresh->events = 42;                                  /* two behind */
  ck_assert_int_eq(raid_superblock_one_behind(sb, fresh), 0);
  free(sb);
  free(fresh);
}
END_TEST

int
main(void)
{
  Suite *s = suite_create("sb-damage");
  TCase *tc;

  test_init("test-sb-damage");
  tc = test_tcase("refusals");
  tcase_add_loop_test(tc, test_damage, 0, ARRAY_SIZE(damages));
  tcase_add_test(tc, test_csum_message);
  tcase_add_test(tc, test_tolerated);
  tcase_add_test(tc, test_split);
  tcase_add_test(tc, test_one_behind);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
