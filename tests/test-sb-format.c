/* Description: md v1.2 superblocks (lib/superblock.c), the format.
 *  - Bytes: a hand-built superblock decodes to the values at md's offsets,
 *    and encode puts every field at md's offset, little-endian, with zeroes
 *    everywhere else.
 *  - Checksum: a vector worked out by hand from md's calc_sb_1_csum()
 *    (odd max_dev, trailing 16-bit word, the 64-bit fold), and random
 *    buffers against an independent implementation (tests/sb-bytes.c).
 *  - Round trip: encode then decode gives back every field, for random
 *    superblocks of every level, max_dev from 1 to 1920, 32-byte names.
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

/* ---- bytes at md's offsets ---------------------------------------------------- */

START_TEST(test_encode_offsets)
{
  struct raid_superblock *sb = malloc(sizeof *sb);
  uint8_t *buf = test_alloc(RAID_SB_BYTES);
  unsigned i;

  ck_assert_ptr_nonnull(sb);
  sb_raid5(sb, 2);
  sb->feature_map = RAID_SB_FEATURE_RECOVERY_OFFSET;
  sb->recovery_offset = UINT64_C(0x1122334455667788);
  sb->cnt_corrected_read = 0xa1b2c3d4;
  sb->devflags = RAID_SB_DEVFLAG_WRITEMOSTLY;
  sb->bblog_shift = 3;
  sb->bblog_offset = -8;
  sb->ctime = UINT64_C(0x0102030405060708);
  memset(buf, 0xee, RAID_SB_BYTES);
  ck_assert_int_eq(raid_superblock_encode(sb, buf), 0);

  ck_assert_mem_eq(buf, "\xfc\x4e\x2b\xa9", 4);           /* magic */
  ck_assert_uint_eq(le_get(buf + 0x04, 4), 1);             /* major_version */
  ck_assert_uint_eq(le_get(buf + 0x08, 4), 2);             /* feature_map */
  ck_assert_uint_eq(le_get(buf + 0x0c, 4), 0);             /* pad0 */
  ck_assert_mem_eq(buf + 0x10, uuid_a, 16);
  ck_assert_mem_eq(buf + 0x20, "libraid-test:sb5\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 32);
  ck_assert_mem_eq(buf + 0x40, "\x08\x07\x06\x05\x04\x03\x02\x01", 8);
  ck_assert_uint_eq(le_get(buf + 0x48, 4), 5);
  ck_assert_uint_eq(le_get(buf + 0x4c, 4), 2);
  ck_assert_uint_eq(le_get(buf + 0x50, 8), sb->size);
  ck_assert_uint_eq(le_get(buf + 0x58, 4), 128);
  ck_assert_uint_eq(le_get(buf + 0x5c, 4), 4);
  for (i = 0x60; i < 0x80; i++)                            /* bitmap, reshape */
    ck_assert_uint_eq(buf[i], 0);
  ck_assert_uint_eq(le_get(buf + 0x80, 8), 2048);
  ck_assert_uint_eq(le_get(buf + 0x88, 8), MEMBER_SECTORS - 2048);
  ck_assert_uint_eq(le_get(buf + 0x90, 8), 8);
  ck_assert_mem_eq(buf + 0x98, "\x88\x77\x66\x55\x44\x33\x22\x11", 8);
  ck_assert_uint_eq(le_get(buf + 0xa0, 4), 2);
  ck_assert_uint_eq(le_get(buf + 0xa4, 4), 0xa1b2c3d4);
  ck_assert_mem_eq(buf + 0xa8, sb->device_uuid, 16);
  ck_assert_uint_eq(buf[0xb8], 1);
  ck_assert_uint_eq(buf[0xb9], 3);
  ck_assert_uint_eq(le_get(buf + 0xba, 2), 8);
  ck_assert_mem_eq(buf + 0xbc, "\xf8\xff\xff\xff", 4);     /* -8 */
  ck_assert_uint_eq(le_get(buf + 0xc0, 8), 1700000123);
  ck_assert_uint_eq(le_get(buf + 0xc8, 8), 42);
  ck_assert_mem_eq(buf + 0xd0, "\xff\xff\xff\xff\xff\xff\xff\xff", 8);
  ck_assert_uint_eq(le_get(buf + 0xd8, 4), ref_csum(buf));
  ck_assert_uint_eq(le_get(buf + 0xdc, 4), 128);
  for (i = 0xe0; i < 0x100; i++)                           /* pad3 */
    ck_assert_uint_eq(buf[i], 0);
  ck_assert_mem_eq(buf + 0x100, "\x00\x00\x01\x00\x02\x00\x03\x00\xff\xff", 10);
  for (i = 0x100 + 2 * 128; i < RAID_SB_BYTES; i++)
    ck_assert_msg(buf[i] == 0, "byte %u after dev_roles is 0x%02x", i, buf[i]);

  /* A 32-character name fills the field with no NUL. */
  memcpy(sb->set_name, "0123456789abcdef0123456789ABCDEF", 33);
  ck_assert_int_eq(raid_superblock_encode(sb, buf), 0);
  ck_assert_mem_eq(buf + 0x20, "0123456789abcdef0123456789ABCDEF", 32);
  ck_assert_uint_eq(buf[0x40], 0x08);

  /* max_dev beyond what fits is refused. */
  sb->max_dev = RAID_SB_MAX_DEV + 1;
  ck_assert_int_eq(raid_superblock_encode(sb, buf), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "max_dev 1921"));
  test_free(buf);
  free(sb);
}
END_TEST

/* A superblock written byte by byte here decodes to those values. */
START_TEST(test_decode_bytes)
{
  uint8_t *buf = test_alloc(RAID_SB_BYTES);
  struct raid_superblock *sb = malloc(sizeof *sb);

  ck_assert_ptr_nonnull(sb);
  memset(buf, 0, RAID_SB_BYTES);
  le32_put(buf + 0x00, 0xa92b4efc);
  le32_put(buf + 0x04, 1);
  memcpy(buf + 0x10, uuid_a, 16);
  memcpy(buf + 0x20, "host:0123456789012345678901234567", 32);   /* no NUL */
  le64_put(buf + 0x40, 1234567);
  le32_put(buf + 0x48, (uint32_t)-1);                        /* linear */
  le32_put(buf + 0x4c, 0);
  le64_put(buf + 0x50, 1000);
  le32_put(buf + 0x58, 8);
  le32_put(buf + 0x5c, 3);
  le32_put(buf + 0x64, 6);                                   /* stale new_level */
  le64_put(buf + 0x68, 99);                                  /* stale reshape_position */
  le64_put(buf + 0x80, 16);
  le64_put(buf + 0x88, 2000);
  le64_put(buf + 0x90, 8);
  le32_put(buf + 0xa0, 1);
  buf[0xb8] = 2;                                             /* failfast */
  le16_put(buf + 0xba, 8);
  le32_put(buf + 0xbc, (uint32_t)-16);
  le64_put(buf + 0xc8, UINT64_C(0x100000001));
  le64_put(buf + 0xd0, 77);
  le32_put(buf + 0xdc, 3);
  le16_put(buf + 0x100, 2);
  le16_put(buf + 0x102, 0);
  le16_put(buf + 0x104, 0xfffe);
  memset(buf + 0x106, 0xff, RAID_SB_BYTES - 0x106);          /* as mdadm leaves it */
  fix_csum(buf);

  ck_assert_int_eq(raid_superblock_decode(buf, 8, 2016, WHO, sb), 0);
  ck_assert_str_eq(sb->set_name, "host:012345678901234567890123456");
  ck_assert_mem_eq(sb->set_uuid, uuid_a, 16);
  ck_assert_uint_eq(sb->ctime, 1234567);
  ck_assert_int_eq(sb->level, -1);
  ck_assert_uint_eq(sb->size, 1000);
  ck_assert_uint_eq(sb->chunksize, 8);
  ck_assert_uint_eq(sb->raid_disks, 3);
  ck_assert_uint_eq(sb->data_offset, 16);
  ck_assert_uint_eq(sb->data_size, 2000);
  ck_assert_uint_eq(sb->super_offset, 8);
  ck_assert_uint_eq(sb->dev_number, 1);
  ck_assert_uint_eq(sb->devflags, 2);
  ck_assert_uint_eq(sb->bblog_size, 8);
  ck_assert_int_eq(sb->bblog_offset, -16);
  ck_assert_uint_eq(sb->events, UINT64_C(0x100000001));
  ck_assert_uint_eq(sb->resync_offset, 77);
  ck_assert_uint_eq(sb->sb_csum, le_get(buf + 0xd8, 4));
  ck_assert_uint_eq(sb->max_dev, 3);
  ck_assert_uint_eq(sb->dev_roles[0], 2);
  ck_assert_uint_eq(sb->dev_roles[1], 0);
  ck_assert_uint_eq(sb->dev_roles[2], 0xfffe);
  ck_assert_uint_eq(sb->dev_roles[3], 0);                    /* beyond max_dev */

  /* One sector smaller and the data no longer fits. */
  ck_assert_int_eq(raid_superblock_decode(buf, 8, 2015, WHO, sb), -EINVAL);
  test_free(buf);
  free(sb);
}
END_TEST

/* ---- checksum ------------------------------------------------------------------ */

START_TEST(test_csum_vector)
{
  uint8_t *buf = test_alloc(RAID_SB_BYTES);
  struct rng r;
  unsigned n;

  /* All 0xff except max_dev = 3 and sb_csum (ignored): 256 + 6 bytes are
   * summed, i.e. 62 words of 0xffffffff, max_dev itself (3), one word of
   * roles 0-1 (0xffffffff) and the trailing 16-bit role 2 (0xffff):
   *   63 * 0xffffffff + 3 + 0xffff = 0x3f_0000ffc3
   * folded: 0xffc3 + 0x3f = 0x00010002.  The 0xff bytes after role 2 do
   * not count. */
  memset(buf, 0xff, RAID_SB_BYTES);
  le32_put(buf + 0xdc, 3);
  le32_put(buf + 0xd8, 0x12345678);
  ck_assert_uint_eq(ref_csum(buf), 0x00010002);
  ck_assert_uint_eq(raid_superblock_csum(buf), 0x00010002);

  /* Even max_dev, no trailing word: 64 words of 0xffffffff (62 fixed,
   * roles 0-1 and 2-3) and max_dev (4): 64 * (2^32 - 1) + 4 =
   * 0x3f_ffffffc4; folded 0xffffffc4 + 0x3f = 0x1_00000003, truncated to
   * 32 bits as md's u32 does: 0x00000003. */
  le32_put(buf + 0xdc, 4);
  ck_assert_uint_eq(ref_csum(buf), 0x00000003);
  ck_assert_uint_eq(raid_superblock_csum(buf), 0x00000003);

  /* A superblock with nothing but the magic and major version:
   * 0xa92b4efc + 1 = 0xa92b4efd. */
  memset(buf, 0, RAID_SB_BYTES);
  le32_put(buf, 0xa92b4efc);
  le32_put(buf + 4, 1);
  ck_assert_uint_eq(raid_superblock_csum(buf), 0xa92b4efd);

  /* Random buffers, every max_dev parity, against the reference. */
  rng_seed(&r, test_seed_for(1));
  for (n = 0; n < test_scale(2000); n++) {
    uint32_t max_dev = n < RAID_SB_MAX_DEV ? n : (uint32_t)rng_below(&r, RAID_SB_MAX_DEV + 1);
    rng_fill(&r, buf, RAID_SB_BYTES);
    le32_put(buf + 0xdc, max_dev);
    ck_assert_msg(raid_superblock_csum(buf) == ref_csum(buf),
                  "max_dev %" PRIu32 ": csum 0x%08" PRIx32 ", reference 0x%08" PRIx32,
                  max_dev, raid_superblock_csum(buf), ref_csum(buf));
  }
  test_free(buf);
}
END_TEST

/* ---- round trip --------------------------------------------------------------- */

START_TEST(test_round_trip)
{
  struct raid_superblock *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  uint8_t *buf = test_alloc(RAID_SB_BYTES), *buf2 = test_alloc(RAID_SB_BYTES);
  struct rng r;
  unsigned n;
  char what[64];

  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  rng_seed(&r, test_seed_for(2));
  for (n = 0; n < test_scale(3000); n++) {
    uint64_t member;

    if (n == 0)
      sb_raid5(a, 0);
    else
      sb_random(&r, a);
    snprintf(what, sizeof what, "superblock %u (seed 0x%" PRIx64 ")", n, test_seed());
    memset(buf, 0xa5, RAID_SB_BYTES);
    ck_assert_int_eq(raid_superblock_encode(a, buf), 0);
    ck_assert_uint_eq(le_get(buf + 0xd8, 4), ref_csum(buf));
    member = a->data_offset + a->data_size + rng_below(&r, 100);
    ck_assert_msg(raid_superblock_decode(buf, a->super_offset, member, WHO, b) == 0,
                  "%s: %s", what, raid_get_error());
    ck_assert_uint_eq(b->sb_csum, le_get(buf + 0xd8, 4));
    sb_assert_equal(a, b, what);
    /* Encoding is a function of the fields: decode, encode, same bytes. */
    ck_assert_int_eq(raid_superblock_encode(b, buf2), 0);
    ck_assert_msg(memcmp(buf, buf2, RAID_SB_BYTES) == 0, "%s: re-encoding differs", what);
  }
  test_free(buf);
  test_free(buf2);
  free(a);
  free(b);
}
END_TEST

int
main(void)
{
  Suite *s = suite_create("sb-format");
  TCase *tc;

  test_init("test-sb-format");
  tc = test_tcase("format");
  tcase_add_test(tc, test_encode_offsets);
  tcase_add_test(tc, test_decode_bytes);
  tcase_add_test(tc, test_csum_vector);
  tcase_add_test(tc, test_round_trip);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
