/* Description: md v1.2 superblocks (lib/superblock.c).
 *  - Bytes: a hand-built superblock decodes to the values at md's offsets,
 *    and encode puts every field at md's offset, little-endian, with zeroes
 *    everywhere else.
 *  - Checksum: a vector worked out by hand from md's calc_sb_1_csum()
 *    (odd max_dev, trailing 16-bit word, the 64-bit fold), and random
 *    buffers against an independent implementation in this file.
 *  - Round trip: encode then decode gives back every field, for random
 *    superblocks of every level, max_dev from 1 to 1920, 32-byte names.
 *  - Corruption: starting from a valid encoding, each field is damaged in
 *    turn (the checksum fixed again unless the checksum is the point), and
 *    decode must fail with -EINVAL, errno EINVAL and a message naming the
 *    member and that field.  What md tolerates (0xff after dev_roles, stale
 *    reshape fields, bblog fields) must be accepted.
 *  - Real mdadm: superblocks written by mdadm 4.2 and Linux 6.1 in a VM
 *    (tests/data/mdadm-*.sb: first 8 KiB of members of RAID 1 with a failed
 *    peer, RAID 5 with a spare, RAID 10 near-2) decode to what mdadm
 *    --examine printed there and re-encode byte for byte; so does one of
 *    ours after the kernel assembled, ran and stopped the array
 *    (tests/data/kernel-raid5-libraid-member2.sb).
 *  - Split mirrors: raid_superblock_split() finds a member that marks
 *    faulty a device the array runs on, or whose events ran ahead, and
 *    names the device; one that only fell behind is not split.  One
 *    update behind, in sync in its role, counts as current (md's margin
 *    of one); rebuilding, failed by that update, or two behind does not.
 *  - Interop: when mdadm and blkid are installed, a member file carrying
 *    our superblock is read by `mdadm --examine` and `blkid -p`, which
 *    must agree on level, layout, chunk, UUIDs, role, state and checksum.
 *    Skipped, with the reason, when a tool is missing.
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

#define WHO "/dev/test-member"
#define MEMBER_SECTORS (UINT64_C(64) << 11)     /* 64 MiB */

/* ---- little-endian bytes, written here independently of the library ---- */

static void
le16_put(uint8_t *p, uint16_t v)
{
  p[0] = v & 0xff;
  p[1] = v >> 8;
}

static void
le32_put(uint8_t *p, uint32_t v)
{
  unsigned i;

  for (i = 0; i < 4; i++)
    p[i] = (v >> (8 * i)) & 0xff;
}

static void
le64_put(uint8_t *p, uint64_t v)
{
  unsigned i;

  for (i = 0; i < 8; i++)
    p[i] = (v >> (8 * i)) & 0xff;
}

static uint64_t
le_get(const uint8_t *p, unsigned n)
{
  uint64_t v = 0;

  while (n-- > 0)
    v = v << 8 | p[n];
  return v;
}

/* ---- an independent calc_sb_1_csum() -------------------------------------- */

/* Like md: copy, zero sb_csum in the copy, sum 32-bit words over 256 + 2 *
 * max_dev bytes (a trailing 16-bit word when odd), fold the carries. */
static uint32_t
ref_csum(const uint8_t *buf)
{
  uint8_t copy[RAID_SB_BYTES];
  uint64_t sum = 0;
  uint32_t max_dev = (uint32_t)le_get(buf + 0xdc, 4);
  int size;
  const uint8_t *w;

  ck_assert_uint_le(max_dev, RAID_SB_MAX_DEV);
  memcpy(copy, buf, sizeof copy);
  memset(copy + 0xd8, 0, 4);
  size = 256 + 2 * (int)max_dev;
  for (w = copy; size >= 4; size -= 4, w += 4)
    sum += le_get(w, 4);
  if (size == 2)
    sum += le_get(w, 2);
  return (uint32_t)((sum & 0xffffffff) + (sum >> 32));
}

/* Recompute the checksum of a damaged buffer, for tests about a field. */
static void
fix_csum(uint8_t *buf)
{
  le32_put(buf + 0xd8, ref_csum(buf));
}

/* ---- superblocks ------------------------------------------------------------ */

static const uint8_t uuid_a[16] = {
  0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
  0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10,
};
static const uint8_t uuid_d[16] = {
  0xde, 0xad, 0xbe, 0xef, 0x00, 0x11, 0x22, 0x33,
  0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb,
};

/* A 4-member RAID 5 left-symmetric, 64 KiB chunks, filled as mdadm 4.2
 * fills a new member of 64 MiB with metadata 1.2: member DEV. */
static void
sb_raid5(struct raid_superblock *sb, unsigned dev)
{
  unsigned i;

  memset(sb, 0, sizeof *sb);
  sb->feature_map = 0;
  memcpy(sb->set_uuid, uuid_a, 16);
  strcpy(sb->set_name, "libraid-test:sb5");
  sb->ctime = 1700000000;
  sb->level = 5;
  sb->layout = RAID_LAYOUT_LEFT_SYMMETRIC;
  sb->chunksize = 128;
  sb->raid_disks = 4;
  sb->data_offset = 2048;
  sb->data_size = MEMBER_SECTORS - 2048;
  sb->size = sb->data_size / sb->chunksize * sb->chunksize;
  sb->super_offset = RAID_SB_OFFSET_1_2;
  sb->recovery_offset = 0;
  sb->dev_number = dev;
  memcpy(sb->device_uuid, uuid_d, 16);
  sb->device_uuid[15] = (uint8_t)dev;
  sb->devflags = 0;
  sb->bblog_shift = 0;
  sb->bblog_size = 8;           /* mdadm: 8 sectors ... */
  sb->bblog_offset = 16;        /* ... after the 4 KiB left for a bitmap */
  sb->utime = 1700000123;
  sb->events = 42;
  sb->resync_offset = RAID_SB_MAX_SECTOR;
  sb->max_dev = 128;            /* mdadm: 256 + 2 * devices rounded to 512 */
  for (i = 0; i < sb->max_dev; i++)
    sb->dev_roles[i] = i < 4 ? i : RAID_SB_ROLE_SPARE;
}

/* Report the first field where A and B differ (sb_csum aside). */
static void
sb_assert_equal(const struct raid_superblock *a, const struct raid_superblock *b,
                const char *what)
{
  unsigned i;

#define F(f, fmt) \
  ck_assert_msg(a->f == b->f, "%s: " #f " %" fmt " != %" fmt, what, a->f, b->f)
  F(feature_map, PRIu32);
  ck_assert_msg(memcmp(a->set_uuid, b->set_uuid, 16) == 0, "%s: set_uuid differs", what);
  ck_assert_msg(strcmp(a->set_name, b->set_name) == 0, "%s: set_name \"%s\" != \"%s\"",
                what, a->set_name, b->set_name);
  F(ctime, PRIu64);
  F(level, PRId32);
  F(layout, PRIu32);
  F(size, PRIu64);
  F(chunksize, PRIu32);
  F(raid_disks, PRIu32);
  F(data_offset, PRIu64);
  F(data_size, PRIu64);
  F(super_offset, PRIu64);
  F(recovery_offset, PRIu64);
  F(dev_number, PRIu32);
  F(cnt_corrected_read, PRIu32);
  ck_assert_msg(memcmp(a->device_uuid, b->device_uuid, 16) == 0, "%s: device_uuid differs",
                what);
  F(devflags, "u");
  F(bblog_shift, "u");
  F(bblog_size, "u");
  F(bblog_offset, PRId32);
  F(utime, PRIu64);
  F(events, PRIu64);
  F(resync_offset, PRIu64);
  F(max_dev, PRIu32);
#undef F
  for (i = 0; i < a->max_dev; i++)
    ck_assert_msg(a->dev_roles[i] == b->dev_roles[i], "%s: dev_roles[%u] 0x%x != 0x%x",
                  what, i, a->dev_roles[i], b->dev_roles[i]);
}

/* A random superblock that decode accepts. */
static void
sb_random(struct rng *r, struct raid_superblock *sb)
{
  static const int levels[] = { -1, 0, 1, 4, 5, 6, 10 };
  static const uint16_t special[] = {
    RAID_SB_ROLE_SPARE, RAID_SB_ROLE_FAULTY, RAID_SB_ROLE_JOURNAL,
  };
  size_t namelen;
  unsigned i;

  memset(sb, 0, sizeof *sb);
  sb->feature_map = rng_percent(r, 30) ? RAID_SB_FEATURE_RECOVERY_OFFSET : 0;
  rng_fill(r, sb->set_uuid, 16);
  namelen = (size_t)rng_below(r, 33);
  for (i = 0; i < namelen; i++)
    sb->set_name[i] = (char)rng_between(r, 1, 255);
  sb->ctime = rng_next(r);
  sb->level = levels[rng_below(r, ARRAY_SIZE(levels))];
  sb->layout = (uint32_t)rng_next(r);
  sb->chunksize = (uint32_t)rng_next(r);
  sb->raid_disks = (uint32_t)rng_between(r, 1, RAID_MAX_MEMBERS);
  sb->max_dev = (uint32_t)rng_between(r, 1, RAID_SB_MAX_DEV);
  sb->super_offset = rng_percent(r, 80) ? RAID_SB_OFFSET_1_2 : rng_below(r, 16);
  /* Data after the superblock and its roles, ending inside the member. */
  sb->data_offset = sb->super_offset + DIV_ROUND_UP(256 + 2 * sb->max_dev, 512) +
    rng_below(r, 4096);
  sb->data_size = rng_between(r, 10, UINT64_C(1) << rng_between(r, 4, 44));
  sb->size = rng_below(r, sb->data_size + 1);
  sb->recovery_offset = rng_next(r);
  sb->dev_number = (uint32_t)rng_below(r, sb->max_dev);
  sb->cnt_corrected_read = (uint32_t)rng_next(r);
  rng_fill(r, sb->device_uuid, 16);
  sb->devflags = (uint8_t)rng_next(r);
  sb->bblog_shift = (uint8_t)rng_next(r);
  sb->bblog_size = (uint16_t)rng_next(r);
  sb->bblog_offset = (int32_t)rng_next(r);
  sb->utime = rng_next(r);
  sb->events = rng_next(r);
  sb->resync_offset = rng_percent(r, 50) ? RAID_SB_MAX_SECTOR : rng_next(r);
  sb->sb_csum = (uint32_t)rng_next(r);      /* ignored by encode */
  for (i = 0; i < sb->max_dev; i++)
    sb->dev_roles[i] = rng_percent(r, 70) ? (uint16_t)rng_below(r, sb->raid_disks)
      : special[rng_below(r, ARRAY_SIZE(special))];
}

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
static void d_reshape(uint8_t *b) { le32_put(b + 0x08, 0x4); }
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
  { "reshape", d_reshape, true, 0, "features 0x4 (reshape in progress)" },
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

/* ---- superblocks written by mdadm 4.2 and Linux 6.1 ----------------------------- */

struct fixture {
  const char *file;
  int level;
  uint32_t layout, chunksize, raid_disks, dev_number;
  uint64_t data_offset;         /* mdadm: 1 MiB, 2 MiB for RAID 10 */
  uint16_t roles[5];
  uint32_t nroles;
  uint64_t events;
  const char *name;
  uint8_t uuid[16];
  uint8_t device_uuid[16];
  uint32_t csum;                /* as mdadm --examine printed it */
};

#define UUID_RAID1 { 0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x22, 0x22, \
                     0x33, 0x33, 0x33, 0x33, 0x44, 0x44, 0x44, 0x44 }
#define UUID_RAID5 { 0x01, 0x23, 0xab, 0xcd, 0x45, 0x67, 0xef, 0x01, \
                     0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98 }
#define UUID_RAID10 { 0xa0, 0xa1, 0xa2, 0xa3, 0xb0, 0xb1, 0xb2, 0xb3, \
                      0xc0, 0xc1, 0xc2, 0xc3, 0xd0, 0xd1, 0xd2, 0xd3 }

/* mdadm --create --metadata=1.2 --assume-clean --homehost=vmhost on 64 MiB
 * loop devices; RAID 1 member 1 then failed (member 0 rewritten by the
 * kernel: role 0xfffe, events 2), the arrays stopped.  mdadm's --examine
 * of each member gave the checksums and device UUIDs below. */
static const struct fixture fixtures[] = {
  { "mdadm-raid1-member0.sb", 1, 0, 0, 2, 0, 2048, { 0, 0xfffe }, 2, 2, "vmhost:raid1",
    UUID_RAID1, { 0xc4, 0x28, 0x5b, 0x23, 0xcf, 0xe5, 0xa9, 0x9c,
                  0xf1, 0x23, 0x7e, 0x3e, 0xec, 0x4e, 0x9d, 0x12 }, 0x4e20ab0e },
  { "mdadm-raid5-member0.sb", 5, 2, 128, 4, 0, 2048, { 0, 1, 2, 3, 0xffff }, 5, 0, "vmhost:raid5",
    UUID_RAID5, { 0xd8, 0xb3, 0x49, 0x66, 0x40, 0xfd, 0x06, 0x4e,
                  0x9b, 0xeb, 0xab, 0x07, 0x82, 0xca, 0x15, 0xd3 }, 0x7d90f988 },
  { "mdadm-raid5-member2.sb", 5, 2, 128, 4, 2, 2048, { 0, 1, 2, 3, 0xffff }, 5, 0, "vmhost:raid5",
    UUID_RAID5, { 0x91, 0x71, 0x10, 0x6a, 0xab, 0xa3, 0xd2, 0x4a,
                  0xac, 0x9e, 0x60, 0x6f, 0x09, 0xd7, 0xf6, 0x96 }, 0xa9b91d46 },
  { "mdadm-raid5-member4.sb", 5, 2, 128, 4, 4, 2048, { 0, 1, 2, 3, 0xffff }, 5, 0, "vmhost:raid5",
    UUID_RAID5, { 0x6e, 0x74, 0x59, 0xee, 0x84, 0x6d, 0x2c, 0xd5,
                  0x6f, 0xaf, 0x82, 0x90, 0x9b, 0x14, 0xed, 0xb0 }, 0xf3743854 },
  { "mdadm-raid10-member0.sb", 10, 0x102, 1024, 4, 0, 4096, { 0, 1, 2, 3 }, 4, 0, "vmhost:raid10",
    UUID_RAID10, { 0xd7, 0x93, 0xfd, 0xbf, 0x99, 0x64, 0x2d, 0x4e,
                   0x00, 0x4e, 0xf4, 0x0c, 0xc4, 0x3f, 0x70, 0x08 }, 0xa4d5e957 },
  /* Ours, the other way round: four members encoded by libraid, assembled
   * by mdadm --assemble on Linux 6.1, written to and stopped; the kernel
   * rewrote the superblock (events 5 -> 7, utime). */
  { "kernel-raid5-libraid-member2.sb", 5, 2, 128, 4, 2, 2048, { 0, 1, 2, 3 }, 4, 7,
    "libraid:ours", { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                      0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10 },
    { 0xde, 0xad, 0xbe, 0xef, 0x00, 0x11, 0x22, 0x33,
      0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0x02 }, 0x36c6a8d5 },
};

/* tests/data in the source tree: $top_srcdir, or next to this file. */
static void
data_path(const char *file, char *buf, size_t len)
{
  const char *top = getenv("top_srcdir");

  if (top && *top)
    snprintf(buf, len, "%s/tests/data/%s", top, file);
  else {
    const char *src = __FILE__;
    const char *slash = strrchr(src, '/');
    int dirlen = slash ? (int)(slash - src) : 1;

    snprintf(buf, len, "%.*s/data/%s", dirlen, slash ? src : ".", file);
  }
}

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

START_TEST(test_mdadm_fixture)
{
  const struct fixture *f = &fixtures[_i];
  struct raid_superblock *sb = malloc(sizeof *sb);
  uint8_t *img = test_alloc(2 * RAID_SB_BYTES), *buf = test_alloc(RAID_SB_BYTES);
  char path[PATH_MAX];
  unsigned i;
  ssize_t n;
  int fd;

  ck_assert_ptr_nonnull(sb);
  data_path(f->file, path, sizeof path);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    printf("test-superblock: %s skipped: cannot open %s: %m\n", f->file, path);
    goto out;
  }
  n = read(fd, img, 2 * RAID_SB_BYTES);
  close(fd);
  ck_assert_int_eq(n, 2 * RAID_SB_BYTES);

  ck_assert_msg(raid_superblock_decode(img + RAID_SB_BYTES, RAID_SB_OFFSET_1_2,
                                       MEMBER_SECTORS, f->file, sb) == 0,
                "%s", raid_get_error());
  ck_assert_uint_eq(sb->sb_csum, f->csum);
  ck_assert_uint_eq(raid_superblock_csum(img + RAID_SB_BYTES), f->csum);
  ck_assert_int_eq(sb->level, f->level);
  ck_assert_uint_eq(sb->layout, f->layout);
  ck_assert_uint_eq(sb->chunksize, f->chunksize);
  ck_assert_uint_eq(sb->raid_disks, f->raid_disks);
  ck_assert_mem_eq(sb->set_uuid, f->uuid, 16);
  ck_assert_mem_eq(sb->device_uuid, f->device_uuid, 16);
  ck_assert_str_eq(sb->set_name, f->name);
  ck_assert_uint_eq(sb->dev_number, f->dev_number);
  ck_assert_uint_eq(sb->events, f->events);
  ck_assert_uint_eq(sb->feature_map, 0);
  /* mdadm 4.2's defaults on a 64 MiB device (which we copied). */
  ck_assert_uint_eq(sb->max_dev, 128);
  ck_assert_uint_eq(sb->data_offset, f->data_offset);
  ck_assert_uint_eq(sb->data_size, MEMBER_SECTORS - f->data_offset);
  ck_assert_uint_eq(sb->size, MEMBER_SECTORS - f->data_offset);
  ck_assert_uint_eq(sb->super_offset, 8);
  ck_assert_uint_eq(sb->bblog_shift, 0);
  ck_assert_uint_eq(sb->bblog_size, 8);
  ck_assert_int_eq(sb->bblog_offset, 16);
  ck_assert_uint_eq(sb->resync_offset, RAID_SB_MAX_SECTOR);
  ck_assert_uint_eq(sb->devflags, 0);
  ck_assert_uint_eq(sb->ctime >> 40, 0);
  ck_assert_uint_ge(sb->utime, sb->ctime);
  for (i = 0; i < sb->max_dev; i++)
    ck_assert_msg(sb->dev_roles[i] == (i < f->nroles ? f->roles[i] : RAID_SB_ROLE_SPARE),
                  "%s: dev_roles[%u] = 0x%x", f->file, i, sb->dev_roles[i]);

  /* We write what they wrote, byte for byte. */
  ck_assert_int_eq(raid_superblock_encode(sb, buf), 0);
  for (i = 0; i < RAID_SB_BYTES; i++)
    ck_assert_msg(buf[i] == img[RAID_SB_BYTES + i], "%s: byte 0x%x: ours 0x%02x, mdadm's 0x%02x",
                  f->file, i, buf[i], img[RAID_SB_BYTES + i]);
 out:
  test_free(img);
  test_free(buf);
  free(sb);
}
END_TEST

/* ---- mdadm --examine and blkid on our superblock -------------------------------- */

/* Full path of TOOL in $PATH or the sbin directories, or NULL. */
static const char *
find_tool(const char *tool, char *buf, size_t len)
{
  const char *path = getenv("PATH");
  char dirs[4096];
  char *dir, *save = NULL;

  snprintf(dirs, sizeof dirs, "%s:/usr/sbin:/sbin", path ? path : "/usr/bin:/bin");
  for (dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    snprintf(buf, len, "%s/%s", *dir ? dir : ".", tool);
    if (access(buf, X_OK) == 0)
      return buf;
  }
  return NULL;
}

/* Run CMD; its output (stdout and stderr) into OUT. Returns the exit status. */
static int
run_capture(const char *cmd, char *out, size_t len)
{
  FILE *fp = popen(cmd, "r");
  size_t n = 0, got;
  int status;

  ck_assert_msg(fp != NULL, "popen %s: %m", cmd);
  while (n + 1 < len && (got = fread(out + n, 1, len - 1 - n, fp)) > 0)
    n += got;
  out[n] = '\0';
  status = pclose(fp);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void
assert_has(const char *out, const char *tool, const char *want)
{
  ck_assert_msg(strstr(out, want) != NULL, "%s output lacks \"%s\":\n%s", tool, want, out);
}

/* "0123abcd:4567ef01:..." as mdadm prints UUIDs, or "0123abcd-4567-..." as blkid. */
static void
uuid_str(const uint8_t *u, bool blkid, char *buf)
{
  static const unsigned dash[] = { 4, 6, 8, 10 };
  unsigned i, k = 0;
  char *p = buf;

  for (i = 0; i < 16; i++) {
    if (blkid ? (k < 4 && i == dash[k]) : (i && i % 4 == 0)) {
      *p++ = blkid ? '-' : ':';
      k++;
    }
    p += sprintf(p, "%02x", u[i]);
  }
}

struct examine_case {
  unsigned dev_number;
  uint16_t role3;               /* dev_roles[3] */
  const char *role_line;
  const char *state_line;
};

static const struct examine_case examine_cases[] = {
  { 2, 3, "Device Role : Active device 2", "Array State : AAAA " },
  { 4, 3, "Device Role : spare", "Array State : AAAA " },
  { 0, RAID_SB_ROLE_FAULTY, "Device Role : Active device 0", "Array State : AAA. " },
};

START_TEST(test_mdadm_examine)
{
  const struct examine_case *ec = &examine_cases[_i];
  struct raid_superblock *sb = malloc(sizeof *sb);
  uint8_t *buf = test_alloc(RAID_SB_BYTES);
  char mdadm[PATH_MAX], blkid[PATH_MAX], file[] = "/var/tmp/libraid-sb.XXXXXX";
  char cmd[PATH_MAX * 3], want[256], uuid[40], *out;
  int fd, st;

  ck_assert_ptr_nonnull(sb);
  out = malloc(65536);
  ck_assert_ptr_nonnull(out);
  if (!find_tool("mdadm", mdadm, sizeof mdadm) && !find_tool("blkid", blkid, sizeof blkid)) {
    printf("test-superblock: mdadm --examine and blkid checks skipped: neither is installed\n");
    goto out;
  }

  sb_raid5(sb, ec->dev_number);
  strcpy(sb->set_name, "testhost:sbtest");
  sb->dev_roles[3] = ec->role3;
  ck_assert_int_eq(raid_superblock_encode(sb, buf), 0);
  fd = mkstemp(file);
  ck_assert_msg(fd >= 0, "mkstemp %s: %m", file);
  ck_assert_int_eq(ftruncate(fd, (off_t)MEMBER_SECTORS * 512), 0);
  ck_assert_int_eq(pwrite(fd, buf, RAID_SB_BYTES, RAID_SB_OFFSET_1_2 * 512), RAID_SB_BYTES);
  close(fd);

  if (find_tool("mdadm", mdadm, sizeof mdadm)) {
    snprintf(cmd, sizeof cmd, "'%s' --examine '%s' 2>&1", mdadm, file);
    st = run_capture(cmd, out, 65536);
    ck_assert_msg(st == 0, "%s exited %d:\n%s", cmd, st, out);
    assert_has(out, "mdadm", "Magic : a92b4efc");
    assert_has(out, "mdadm", "Version : 1.2");
    assert_has(out, "mdadm", "Feature Map : 0x0");
    uuid_str(sb->set_uuid, false, uuid);
    snprintf(want, sizeof want, "Array UUID : %s", uuid);
    assert_has(out, "mdadm", want);
    assert_has(out, "mdadm", "Name : testhost:sbtest");
    assert_has(out, "mdadm", "Raid Level : raid5");
    assert_has(out, "mdadm", "Raid Devices : 4");
    assert_has(out, "mdadm", "Array Size : 193536 KiB");
    assert_has(out, "mdadm", "Data Offset : 2048 sectors");
    assert_has(out, "mdadm", "Super Offset : 8 sectors");
    assert_has(out, "mdadm", "State : clean");
    uuid_str(sb->device_uuid, false, uuid);
    snprintf(want, sizeof want, "Device UUID : %s", uuid);
    assert_has(out, "mdadm", want);
    assert_has(out, "mdadm", "Bad Block Log : 512 entries available at offset 16 sectors");
    snprintf(want, sizeof want, "Checksum : %" PRIx32 " - correct", (uint32_t)le_get(buf + 0xd8, 4));
    assert_has(out, "mdadm", want);
    assert_has(out, "mdadm", "Events : 42");
    assert_has(out, "mdadm", "Layout : left-symmetric");
    assert_has(out, "mdadm", "Chunk Size : 64K");
    assert_has(out, "mdadm", ec->role_line);
    assert_has(out, "mdadm", ec->state_line);
  } else
    printf("test-superblock: mdadm --examine checks skipped: mdadm is not installed\n");

  if (find_tool("blkid", blkid, sizeof blkid)) {
    snprintf(cmd, sizeof cmd, "'%s' -p '%s' 2>&1", blkid, file);
    st = run_capture(cmd, out, 65536);
    ck_assert_msg(st == 0, "%s exited %d:\n%s", cmd, st, out);
    assert_has(out, "blkid", "TYPE=\"linux_raid_member\"");
    uuid_str(sb->set_uuid, true, uuid);
    snprintf(want, sizeof want, " UUID=\"%s\"", uuid);
    assert_has(out, "blkid", want);
    uuid_str(sb->device_uuid, true, uuid);
    snprintf(want, sizeof want, "UUID_SUB=\"%s\"", uuid);
    assert_has(out, "blkid", want);
    assert_has(out, "blkid", "LABEL=\"testhost:sbtest\"");
    assert_has(out, "blkid", "VERSION=\"1.2\"");
  } else
    printf("test-superblock: blkid checks skipped: blkid is not installed\n");
  unlink(file);
 out:
  free(out);
  test_free(buf);
  free(sb);
}
END_TEST

int
main(void)
{
  Suite *s = suite_create("superblock");
  TCase *tc;

  test_init("test-sb-format");
  tc = test_tcase("format");
  tcase_add_test(tc, test_encode_offsets);
  tcase_add_test(tc, test_decode_bytes);
  tcase_add_test(tc, test_csum_vector);
  tcase_add_test(tc, test_round_trip);
  suite_add_tcase(s, tc);
  tc = test_tcase("refusals");
  tcase_add_loop_test(tc, test_damage, 0, ARRAY_SIZE(damages));
  tcase_add_test(tc, test_csum_message);
  tcase_add_test(tc, test_tolerated);
  tcase_add_test(tc, test_split);
  tcase_add_test(tc, test_one_behind);
  suite_add_tcase(s, tc);
  tc = test_tcase("interop");
  tcase_add_loop_test(tc, test_mdadm_fixture, 0, ARRAY_SIZE(fixtures));
  tcase_add_loop_test(tc, test_mdadm_examine, 0, ARRAY_SIZE(examine_cases));
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
