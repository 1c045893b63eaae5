/* Description: libFuzzer target for raid_superblock_decode() and friends
 * (built and run by tests/test-lib-fuzz-superblock.sh).
 *
 * Input: the first RAID_SB_BYTES are the superblock block (zero-padded
 * when shorter); up to 17 more bytes steer the call:
 *   byte 0 (flags)  0x01 read_at = the super_offset in the block
 *                   0x02 read_at = bytes 1-8 (else sector 8)
 *                   0x04 member size = bytes 9-16
 *                   0x08 member size = data_offset + data_size + bytes 9-10
 *                        (else 64 MiB)
 *                   0x10 recompute the checksum first, so the fuzzer gets
 *                        past it to the checks behind
 * Properties: nothing crashes or reads out of bounds (ASan, UBSan); a
 * refusal is -EINVAL with a message naming the member; an accepted block
 * re-encodes to one that decodes to the same fields (sb_csum aside) and
 * re-encodes to the same bytes.
 *
 * Built with -DFUZZ_MAKE_SEED instead, it is a program writing a valid
 * seed (a RAID 5 member's superblock) to stdout.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define WHO "fuzz-member"
#define DEFAULT_MEMBER (UINT64_C(64) << 11)     /* 64 MiB in sectors */

#define CHECK(cond) \
  do { \
    if (!(cond)) { \
      fprintf(stderr, "fuzz-superblock: %s:%d: %s failed\n", __FILE__, __LINE__, #cond); \
      abort(); \
    } \
  } while (0)

static void
check_equal(const struct raid_superblock *a, const struct raid_superblock *b)
{
  unsigned i;

  CHECK(a->feature_map == b->feature_map);
  CHECK(memcmp(a->set_uuid, b->set_uuid, 16) == 0);
  CHECK(strcmp(a->set_name, b->set_name) == 0);
  CHECK(a->ctime == b->ctime);
  CHECK(a->level == b->level);
  CHECK(a->layout == b->layout);
  CHECK(a->size == b->size);
  CHECK(a->chunksize == b->chunksize);
  CHECK(a->raid_disks == b->raid_disks);
  CHECK(a->data_offset == b->data_offset);
  CHECK(a->data_size == b->data_size);
  CHECK(a->super_offset == b->super_offset);
  CHECK(a->recovery_offset == b->recovery_offset);
  CHECK(a->dev_number == b->dev_number);
  CHECK(a->cnt_corrected_read == b->cnt_corrected_read);
  CHECK(memcmp(a->device_uuid, b->device_uuid, 16) == 0);
  CHECK(a->devflags == b->devflags);
  CHECK(a->bblog_shift == b->bblog_shift);
  CHECK(a->bblog_size == b->bblog_size);
  CHECK(a->bblog_offset == b->bblog_offset);
  CHECK(a->utime == b->utime);
  CHECK(a->events == b->events);
  CHECK(a->resync_offset == b->resync_offset);
  CHECK(a->max_dev == b->max_dev);
  for (i = 0; i < a->max_dev && i < RAID_SB_MAX_DEV; i++)
    CHECK(a->dev_roles[i] == b->dev_roles[i]);
}

#ifndef FUZZ_MAKE_SEED

static uint64_t
le_get(const uint8_t *p, size_t avail, size_t n)
{
  uint64_t v = 0;

  if (avail < n)
    n = avail;
  while (n-- > 0)
    v = v << 8 | p[n];
  return v;
}

static void
le32_put(uint8_t *p, uint32_t v)
{
  p[0] = v & 0xff;
  p[1] = (v >> 8) & 0xff;
  p[2] = (v >> 16) & 0xff;
  p[3] = v >> 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static uint8_t buf[RAID_SB_BYTES], buf2[RAID_SB_BYTES], buf3[RAID_SB_BYTES];
  static struct raid_superblock a, b;
  const uint8_t *tail = data + RAID_SB_BYTES;
  size_t ntail = size > RAID_SB_BYTES ? size - RAID_SB_BYTES : 0;
  unsigned flags = ntail ? tail[0] : 0;
  uint64_t read_at = RAID_SB_OFFSET_1_2, member = DEFAULT_MEMBER;
  int r;

  memset(buf, 0, sizeof buf);
  memcpy(buf, data, size < RAID_SB_BYTES ? size : RAID_SB_BYTES);
  (void)raid_superblock_csum(buf);     /* any max_dev, never out of bounds */
  if (flags & 0x10)
    le32_put(buf + 0xd8, raid_superblock_csum(buf));
  if (flags & 0x01)
    read_at = le_get(buf + 0x90, 8, 8);
  else if (flags & 0x02)
    read_at = le_get(tail + 1, ntail > 1 ? ntail - 1 : 0, 8);
  if (flags & 0x04)
    member = le_get(tail + 9, ntail > 9 ? ntail - 9 : 0, 8);
  else if (flags & 0x08)
    member = le_get(buf + 0x80, 8, 8) + le_get(buf + 0x88, 8, 8) +
      le_get(tail + 9, ntail > 9 ? ntail - 9 : 0, 2);

  r = raid_superblock_decode(buf, read_at, member, WHO, &a);
  if (r < 0) {
    CHECK(r == -EINVAL);
    CHECK(raid_get_errno() == EINVAL);
    CHECK(strstr(raid_get_error(), "member " WHO ": ") != NULL);
    return 0;
  }
  CHECK(r == 0);
  CHECK(a.super_offset == read_at);
  CHECK(a.max_dev <= RAID_SB_MAX_DEV);
  CHECK(a.set_name[32] == '\0');

  /* Round trip: encode, decode, same fields; encode again, same bytes. */
  CHECK(raid_superblock_encode(&a, buf2) == 0);
  CHECK(raid_superblock_csum(buf2) == le_get(buf2 + 0xd8, 4, 4));
  r = raid_superblock_decode(buf2, read_at, member, WHO, &b);
  if (r != 0)
    fprintf(stderr, "fuzz-superblock: re-encoded superblock refused: %s\n", raid_get_error());
  CHECK(r == 0);
  check_equal(&a, &b);
  CHECK(raid_superblock_encode(&b, buf3) == 0);
  CHECK(memcmp(buf2, buf3, RAID_SB_BYTES) == 0);
  return 0;
}

#else /* FUZZ_MAKE_SEED */

/* A member of a 4-disk RAID 5 as mdadm creates it on 64 MiB. */
int
main(void)
{
  static struct raid_superblock sb, back;
  static uint8_t buf[RAID_SB_BYTES];
  unsigned i;

  memset(&sb, 0, sizeof sb);
  memcpy(sb.set_uuid, "\x01\x23\x45\x67\x89\xab\xcd\xef\xfe\xdc\xba\x98\x76\x54\x32\x10", 16);
  strcpy(sb.set_name, "fuzzhost:seed");
  sb.ctime = sb.utime = 1700000000;
  sb.level = 5;
  sb.layout = RAID_LAYOUT_LEFT_SYMMETRIC;
  sb.chunksize = 128;
  sb.raid_disks = 4;
  sb.data_offset = 2048;
  sb.data_size = DEFAULT_MEMBER - 2048;
  sb.size = sb.data_size;
  sb.super_offset = RAID_SB_OFFSET_1_2;
  sb.dev_number = 2;
  memcpy(sb.device_uuid, "\xde\xad\xbe\xef\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb", 16);
  sb.bblog_size = 8;
  sb.bblog_offset = 16;
  sb.events = 7;
  sb.resync_offset = RAID_SB_MAX_SECTOR;
  sb.max_dev = 128;
  for (i = 0; i < sb.max_dev; i++)
    sb.dev_roles[i] = i < 4 ? i : RAID_SB_ROLE_SPARE;
  if (raid_superblock_encode(&sb, buf) < 0 ||
      raid_superblock_decode(buf, RAID_SB_OFFSET_1_2, DEFAULT_MEMBER, WHO, &back) < 0) {
    fprintf(stderr, "fuzz-superblock: seed: %s\n", raid_get_error());
    return 1;
  }
  check_equal(&sb, &back);
  if (fwrite(buf, 1, sizeof buf, stdout) != sizeof buf || fflush(stdout) != 0) {
    perror("fuzz-superblock: seed: write");
    return 1;
  }
  return 0;
}

#endif /* FUZZ_MAKE_SEED */
