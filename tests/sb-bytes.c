/* Helpers of the superblock suites (tests/sb-bytes.h). */

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

/* ---- little-endian bytes, written here independently of the library ---- */

void
le16_put(uint8_t *p, uint16_t v)
{
  p[0] = v & 0xff;
  p[1] = v >> 8;
}

void
le32_put(uint8_t *p, uint32_t v)
{
  unsigned i;

  for (i = 0; i < 4; i++)
    p[i] = (v >> (8 * i)) & 0xff;
}

void
le64_put(uint8_t *p, uint64_t v)
{
  unsigned i;

  for (i = 0; i < 8; i++)
    p[i] = (v >> (8 * i)) & 0xff;
}

uint64_t
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
uint32_t
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
void
fix_csum(uint8_t *buf)
{
  le32_put(buf + 0xd8, ref_csum(buf));
}

/* ---- superblocks ------------------------------------------------------------ */

const uint8_t uuid_a[16] = {
  0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
  0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10,
};
const uint8_t uuid_d[16] = {
  0xde, 0xad, 0xbe, 0xef, 0x00, 0x11, 0x22, 0x33,
  0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb,
};

/* A 4-member RAID 5 left-symmetric, 64 KiB chunks, filled as mdadm 4.2
 * fills a new member of 64 MiB with metadata 1.2: member DEV. */
void
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
void
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
void
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

