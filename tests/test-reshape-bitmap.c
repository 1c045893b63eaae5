/* Description: a reshape with a write-intent bitmap (md keeps its bitmap
 * through a reshape, and so does raidd), on member files.
 *
 * test_bitmap_own: raidd's own reshape of an array with a bitmap, under a
 * writer: a RAID 5 of 3 over 4 and to 128 KiB chunks (its bitmap covers
 * each member, whose size stays), a RAID 10 near-2 from 4 to 6 and from 4
 * to 5 (its bitmap covers the array: put back over the larger size as the
 * reshape starts, every bit set, its 4 KiB chunk doubled as md's
 * md_bitmap_resize() doubles it while the bits over the new size do not
 * fit the sectors the bitmap had).  Meanwhile the bitmap can be neither
 * removed nor added (EBUSY, as md refuses).  After: every byte and md's
 * layout (tr_check_done()), the bitmap where it was and ending before the
 * new data offset, its chunks covering what they must; once idle its
 * bits clear, and a write at the array's end sets the bit of its chunk on
 * disk.
 *
 * test_md_bitmap, test_md_bitmap_coarse: md's reshape with its bitmap,
 * taken over: the bitmap covers what a write may leave out of sync in
 * either shape, a RAID 10's the larger size, its chunk doubled where the
 * bits would not fit before the new data offset.
 *
 * (The room a bitmap takes from a reshape: test-reshape's test_refused.) */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "testlib-reshape.h"
#include "internal.h"
#include "md/meta.h"

/* SET's members given md's internal bitmap as mdadm puts it (4 KiB after
 * the superblock, CHUNK bytes a bit over SYNC sectors, bits DIRTY[0..ND-1]
 * set), as if the array had had it all along: md keeps its bitmap through
 * a reshape (raidd starts none with one).  No clearing while the test
 * looks (an hour's daemon_sleep). */
#define BM_CHUNK (64u << 10)

static void
add_md_bitmap(const char *set, unsigned n, uint64_t sync, uint32_t chunk,
              const uint64_t *dirty, unsigned nd)
{
  struct raid_bitmap_super b = { .magic = RAID_BITMAP_MAGIC,
                                 .version = RAID_BITMAP_VERSION, .sync_size = sync,
                                 .chunksize = chunk, .daemon_sleep = 3600 };
  size_t len = (256 + DIV_ROUND_UP(sync * 512 / chunk, 8) + 4095) / 4096 * 4096;
  uint8_t *buf = calloc(1, len);
  struct raid_superblock sb;
  char path[512];
  unsigned i, k;
  int fd;

  ck_assert_ptr_nonnull(buf);
  for (k = 0; k < nd; k++)
    buf[256 + dirty[k] / 8] |= (uint8_t)(1u << (dirty[k] % 8));
  for (i = 0; i < n; i++) {
    tfile_read_sb(set, i, &sb);
    sb.feature_map |= RAID_SB_FEATURE_BITMAP;
    sb.bitmap_offset = 8;
    tfile_write_sb(set, i, &sb);
    memcpy(b.uuid, sb.set_uuid, 16);
    b.events = b.events_cleared = sb.events;
    raid_bitmap_encode(&b, buf);
    tfile_path(path, sizeof path, set, i);
    ck_assert_int_ge(fd = open(path, O_WRONLY), 0);
    ck_assert_int_eq(pwrite(fd, buf, len, (off_t)(sb.super_offset + 8) * 512),
                     (ssize_t)len);
    close(fd);
  }
  free(buf);
}

/* Bit K of member I of SET's bitmap, as on disk. */
static bool
bm_bit(const char *set, unsigned i, uint64_t k)
{
  static uint8_t bits[64 << 10];
  uint64_t n;

  tfile_bitmap_bits(set, i, bits, sizeof bits * 8, &n);
  ck_assert_uint_lt(k, n);
  return tbit(bits, k);
}
/* The bit of member bytes POS (RAID 5) or array bytes POS (RAID 10) in
 * chunks of BM_CHUNK, for an array byte OFF of TO's new shape. */
static uint64_t
bit_of(const struct shape *to, uint64_t off, uint32_t bm_chunk)
{
  uint64_t row = (uint64_t)to->chunk * (to->n - 1);

  if (to->level == RAID_LEVEL_10)
    return off / bm_chunk;
  return off / row * to->chunk / bm_chunk;
}

static const unsigned own[] = { 0, 1, 5, 7 };

START_TEST(test_bitmap_own)
{
  const struct shape *to = &tr_shapes[own[_i]];
  struct raid_superblock sb0, sb;
  struct raid_bitmap_info bi;
  struct tuser u = { 0 };
  uint8_t *shadow, data[4096];
  uint64_t old_size, size, covered, area;
  uint32_t bm_chunk;
  unsigned i, tries;
  char set[16];

  snprintf(set, sizeof set, "ro%d-", _i);
  u.a = tr_make(set, to, RAID_METADATA_1_2, &shadow, &old_size, &sb0);
  ck_assert_msg(raid_array_set_bitmap(u.a, RAID_BITMAP_INTERNAL, 4096) == 0, "%s",
                raid_get_error());
  tfile_read_sb(set, 0, &sb0);
  size = tr_size_of(to, to->n, to->chunk, sb0.size * 512);
  /* A RAID 10's 4 KiB bits over the old size take 2752 bytes (6 sectors
   * with the superblock; 19968 of them), over the new one more: 8 KiB
   * chunks.  A RAID 5's cover each member, as before. */
  covered = to->level == RAID_LEVEL_10 ? size : sb0.size * 512;
  bm_chunk = to->level == RAID_LEVEL_10 ? 8192 : 4096;
  u.shadow = shadow;
  u.size = old_size;
  tuser_start(&u);
  usleep(20000);
  raid_array_set_sync_limits(u.a, 4 << 20, 4 << 20);
  ck_assert_msg(tr_reshape_to(u.a, to) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_set_bitmap(u.a, RAID_BITMAP_NONE, 0), -EBUSY);
  ck_assert_int_eq(raid_array_set_bitmap(u.a, RAID_BITMAP_INTERNAL, 0), -EBUSY);
  ck_assert_int_eq(raid_array_bitmap(u.a, &bi), 0);
  ck_assert(bi.present);
  ck_assert_uint_eq(bi.chunk_size, bm_chunk);
  ck_assert_uint_eq(bi.chunks, DIV_ROUND_UP(covered, bm_chunk));
  tfile_read_sb(set, 0, &sb);
  ck_assert_uint_eq(sb.feature_map & (RAID_SB_FEATURE_BITMAP | RAID_SB_FEATURE_RESHAPE_ACTIVE |
                                      RAID_SB_FEATURE_NEW_OFFSET),
                    RAID_SB_FEATURE_BITMAP | RAID_SB_FEATURE_RESHAPE_ACTIVE |
                    RAID_SB_FEATURE_NEW_OFFSET);
  raid_array_set_sync_limits(u.a, 0, 0);
  ck_assert_int_eq(raid_array_sync_wait(u.a), 0);
  ck_assert_uint_eq(tscrub(u.a), 0);
  tuser_stop(&u);

  /* Where it was, before the new data offset on every member. */
  ck_assert_int_eq(raid_array_bitmap(u.a, &bi), 0);
  ck_assert(bi.present);
  ck_assert_uint_eq(bi.chunk_size, bm_chunk);
  ck_assert_uint_eq(bi.chunks, DIV_ROUND_UP(covered, bm_chunk));
  area = DIV_ROUND_UP(256 + DIV_ROUND_UP(bi.chunks, 8), 4096) * 4096;
  for (i = 0; i < to->n; i++) {
    tfile_read_sb(set, i, &sb);
    ck_assert(sb.feature_map & RAID_SB_FEATURE_BITMAP);
    ck_assert_int_eq(sb.bitmap_offset, 8);
    ck_assert_uint_le((sb.super_offset + 8) * 512 + area, sb.data_offset * 512);
  }
  /* Idle: its bits clear; then a write at the end marks its chunk. */
  bitmap_run_set_period(u.a, 20);
  for (tries = 0; tries < 500; tries++) {
    ck_assert_int_eq(raid_array_bitmap(u.a, &bi), 0);
    if (bi.dirty == 0)
      break;
    usleep(20000);
  }
  ck_assert_uint_eq(bi.dirty, 0);
  ck_assert(!bm_bit(set, 0, bit_of(to, size - 1, bm_chunk)));
  bitmap_run_set_period(u.a, 3600 * 1000);
  memset(data, 0x6b, sizeof data);
  ck_assert_int_eq(raid_pwrite(u.a, data, sizeof data, size - sizeof data, 0), 0);
  memcpy(shadow + size - sizeof data, data, sizeof data);
  ck_assert(bm_bit(set, 0, bit_of(to, size - 1, bm_chunk)));
  tr_check_done(set, u.a, shadow, old_size, &sb0, to);
  test_free(shadow);
}
END_TEST

/* md's own reshape with its write-intent bitmap (md keeps it: its
 * superblocks say both, feature map 0x45), a third of the way, taken over
 * and finished by raidd, the bitmap marking what a write may leave out of
 * sync wherever it lands.  A RAID 10 near-2 from 4 to 6: its bitmap covers
 * the array, and from the start the larger size of the two (md's
 * raid10_start_reshape() resizes it), so a write at the end of the grown
 * array sets the bit of its chunk (a bitmap over the old size would have
 * none for it).  A RAID 5 from 64 to 128 KiB chunks: its bitmap covers
 * each member, counted in the shape a write lands in, so 4 KiB written in
 * the second half of the first new chunk (member bytes 64 KiB on) sets
 * bit 1, where the old shape's rows would say bit 0 only. */
START_TEST(test_md_bitmap)
{
  const struct shape *to = &tr_shapes[_i ? 1 : 5];
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_superblock sb0;
  struct raid_bitmap_info bi;
  struct raid_array *a;
  uint8_t *shadow, data[4096];
  uint64_t old_size, size, sync;
  char set[16];

  snprintf(set, sizeof set, "rb%d-", _i);
  a = tr_make(set, to, RAID_METADATA_1_2, &shadow, &old_size, &sb0);
  raid_array_set_sync_limits(a, 4 << 20, 4 << 20);
  ck_assert_msg(tr_reshape_to(a, to) == 0, "%s", raid_get_error());
  treshape_stop_at_third(a);
  raid_array_free(a);
  size = tr_size_of(to, to->n, to->chunk, sb0.size * 512);
  sync = to->level == RAID_LEVEL_10 ? old_size / 512 : sb0.size;
  add_md_bitmap(set, tr_files(to), sync, BM_CHUNK, NULL, 0);
  tfile_open(set, NULL, tr_files(to), m);
  ck_assert_msg(raid_array_assemble(NULL, m, tr_files(to), 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_bitmap(a, &bi), 0);
  ck_assert(bi.present);
  ck_assert_uint_eq(bi.chunks, DIV_ROUND_UP(to->level == RAID_LEVEL_10 ? size : sb0.size * 512,
                                            BM_CHUNK));
  ck_assert_uint_eq(bi.dirty, 0);
  tcheck_shadow(a, shadow, old_size);
  memset(data, 0x5a, sizeof data);
  if (to->level == RAID_LEVEL_5) {
    /* Below the reshape's position: the new shape. */
    ck_assert_int_eq(raid_pwrite(a, data, sizeof data, 64 << 10, 0), 0);
    memcpy(shadow + (64 << 10), data, sizeof data);
    ck_assert(bm_bit(set, 0, 1));
  }
  raid_array_set_sync_limits(a, 0, 0);
  ck_assert_msg(raid_array_sync_start(a, RAID_SYNC_RESHAPE) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  ck_assert_uint_eq(raid_array_size(a), size);
  if (to->level == RAID_LEVEL_10) {
    ck_assert_int_eq(raid_pwrite(a, data, sizeof data, size - sizeof data, 0), 0);
    memcpy(shadow + size - sizeof data, data, sizeof data);
    ck_assert(bm_bit(set, 0, (size - 1) / BM_CHUNK));
  }
  tcheck_shadow(a, shadow, size);
  ck_assert_uint_eq(tscrub(a), 0);
  raid_array_free(a);
  test_free(shadow);
}
END_TEST

/* The same RAID 10 restripe where the bits over the larger size no
 * longer fit between the bitmap and the new data offset (1 KiB a bit, 12
 * KiB of room: 16 KiB of bits over the new size): the chunk doubles, as
 * md's md_bitmap_resize() chooses one that fits, and every dirty bit
 * stays dirty in the one that covers it now. */
START_TEST(test_md_bitmap_coarse)
{
  const struct shape *to = &tr_shapes[5];
  static const uint64_t dirty[] = { 3, 100, 101 };
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_superblock sb0, sb;
  struct raid_bitmap_info bi;
  struct raid_array *a;
  uint8_t *shadow;
  uint64_t old_size, size;

  /* The superblock ends at 8 KiB; the bitmap of the old size (12 KiB) and
   * the one chunk the reshape moves the data by leave 12 KiB. */
  a = tr_make_at("rbc-", to, RAID_METADATA_1_2, (20 + 64) << 10, &shadow, &old_size, &sb0);
  raid_array_set_sync_limits(a, 4 << 20, 4 << 20);
  ck_assert_msg(tr_reshape_to(a, to) == 0, "%s", raid_get_error());
  treshape_stop_at_third(a);
  raid_array_free(a);
  tfile_read_sb("rbc-", 0, &sb);
  ck_assert_int_eq(sb.new_offset, -128);
  size = tr_size_of(to, to->n, to->chunk, sb0.size * 512);
  add_md_bitmap("rbc-", tr_files(to), old_size / 512, 1024, dirty, 3);
  tfile_open("rbc-", NULL, tr_files(to), m);
  ck_assert_msg(raid_array_assemble(NULL, m, tr_files(to), 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_bitmap(a, &bi), 0);
  ck_assert_uint_eq(bi.chunk_size, 2048);
  ck_assert_uint_eq(bi.chunks, DIV_ROUND_UP(size, 2048));
  ck_assert_uint_eq(bi.dirty, 2);
  tcheck_shadow(a, shadow, old_size);
  /* The reshape's first checkpoint writes the image: bits 1 and 50 of 2
   * KiB (a clean stop would clear them, as md's does). */
  raid_array_set_sync_limits(a, 1 << 20, 1 << 20);
  ck_assert_msg(raid_array_sync_start(a, RAID_SYNC_RESHAPE) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_sync_stop(a), 0);
  ck_assert(bm_bit("rbc-", 0, 1) && bm_bit("rbc-", 0, 50) && !bm_bit("rbc-", 0, 3));
  raid_array_set_sync_limits(a, 0, 0);
  ck_assert_msg(raid_array_sync_start(a, RAID_SYNC_RESHAPE) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  ck_assert_uint_eq(raid_array_size(a), size);
  tcheck_shadow(a, shadow, old_size);
  ck_assert_uint_eq(tscrub(a), 0);
  raid_array_free(a);
  test_free(shadow);
}
END_TEST

static Suite *
reshape_bitmap_suite(void)
{
  Suite *s = suite_create("reshape-bitmap");
  TCase *tc = test_tcase("reshape-bitmap");

  tcase_add_loop_test(tc, test_bitmap_own, 0, 4);
  tcase_add_loop_test(tc, test_md_bitmap, 0, 2);
  tcase_add_test(tc, test_md_bitmap_coarse);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  test_init("test-reshape-bitmap");
  raid_set_log_handler(NULL, NULL, -1);
  return test_run_suite(reshape_bitmap_suite());
}
