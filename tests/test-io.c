/* Description: data integrity and md-compatible placement on every level,
 * layout, member count and chunk size.
 *
 * For each configuration (RAID 0 and RAID 1 with 2..6 members, RAID 5 with
 * 3..6 members in all four layouts, RAID 10 near-2..near-N with 2..6
 * members; chunks 4K, 64K and 512K; data_offset 0, 68K or 1M) a random
 * workload of reads, writes (some FUA), discards, write-zeroes and flushes
 * of random lengths and offsets crossing chunk and stripe boundaries runs
 * synchronously and in asynchronous batches against file-backed members
 * (loop devices under tests/test-lib-loop.sh); every read is compared with an
 * in-memory shadow.  Afterwards the members are read directly and every
 * chunk must be where an independent reference of md's formulas puts it,
 * every RAID 5 parity chunk must be the XOR of its stripe, the bytes before
 * data_offset and after the data area must be untouched, and the data must
 * survive closing and re-assembling the array.
 *
 * Separate tests cover discard and write-zeroes over pre-filled arrays,
 * flush reaching every member, requests of RAID_MAX_REQUEST bytes, user
 * buffers that are not aligned, md's default layout and chunk, and RAID 1
 * sizes that are not a multiple of 4 KiB.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define OPS_PER_CONFIG 300

static struct tconf confs[256];
static unsigned nconfs;

static uint64_t
member_bytes_for(uint32_t chunk, uint64_t data_offset)
{
  /* 4 rows of 512K chunks, 16 of 64K, 128 of 4K: enough for requests to
   * cross every kind of boundary, small enough to verify quickly. */
  uint64_t base = chunk >= 512 * KiB ? 2 * MiB : chunk >= 64 * KiB ? 1 * MiB : 512 * KiB;

  /* A tail that is not a whole chunk (except for 4K chunks). */
  return data_offset + base + 12 * KiB;
}

static void
add_conf(int level, int layout, unsigned disks, uint32_t chunk)
{
  static const uint64_t offsets[] = { 0, 1 * MiB, 68 * KiB };
  uint64_t off = offsets[nconfs % 3];

  confs[nconfs++] = (struct tconf){
    .level = level, .layout = layout, .disks = disks, .chunk = chunk,
    .data_offset = off,
    .member_bytes = member_bytes_for(chunk ? chunk : RAID_CHUNK_DEFAULT, off),
  };
}

static void
build_confs(void)
{
  static const uint32_t chunks[] = { 4 * KiB, 64 * KiB, 512 * KiB };
  unsigned n, k, c;
  int l;

  for (c = 0; c < 3; c++) {
    for (n = 2; n <= 6; n++)
      add_conf(RAID_LEVEL_0, RAID_LAYOUT_DEFAULT, n, chunks[c]);
    for (n = 2; n <= 6; n++)
      for (l = 0; l < 4; l++)
        add_conf(RAID_LEVEL_5, l, n, chunks[c]);
    for (n = 2; n <= 6; n++)
      for (k = 2; k <= n; k++)
        add_conf(RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(k), n, chunks[c]);
  }
  for (n = 2; n <= 6; n++)
    add_conf(RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, n, 0);
  /* md's defaults: left-symmetric, near-2, 512K chunks. */
  add_conf(RAID_LEVEL_5, RAID_LAYOUT_DEFAULT, 4, 0);
  add_conf(RAID_LEVEL_10, RAID_LAYOUT_DEFAULT, 4, 0);
  add_conf(RAID_LEVEL_0, RAID_LAYOUT_DEFAULT, 3, 0);
}

/* The workload, placement and re-assembly for configuration _i. */
START_TEST(test_matrix)
{
  struct tarray t;

  tarray_setup(&t, &confs[_i], 0, 0, test_seed_for(_i));
  tarray_random_ops(&t, test_scale(OPS_PER_CONFIG));
  tarray_check_all(&t);
  tarray_check_placement(&t);
  /* The array assembles again over the same members with the same
   * geometry and data (the placement check read it all already). */
  tarray_close_array(&t);
  tarray_assemble(&t);
  tarray_check_sample(&t, 16);
  tarray_teardown(&t);
}
END_TEST

/* ---- discard and write-zeroes -------------------------------------------------- */

static const struct tconf zero_confs[] = {
  { RAID_LEVEL_0, RAID_LAYOUT_DEFAULT, 3, 64 * KiB, 0, 4 * MiB + 12 * KiB },
  { RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, 0, 1 * MiB, 5 * MiB },
  { RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 4, 64 * KiB, 1 * MiB, 5 * MiB },
  { RAID_LEVEL_5, RAID_LAYOUT_RIGHT_ASYMMETRIC, 3, 4 * KiB, 0, 2 * MiB },
  { RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 5, 512 * KiB, 0, 8 * MiB },
  { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 3, 64 * KiB, 0, 4 * MiB },
};

/* Discard and write-zeroes read back as zeroes on every level, whether the
 * range is a few sectors, crosses chunks, covers whole stripes or the whole
 * array, and RAID 5 parity stays consistent with the zeroed data. */
START_TEST(test_zeroing)
{
  struct tarray t;
  uint64_t off;
  unsigned i, n;

  tarray_setup(&t, &zero_confs[_i], 0, 0, test_seed_for(1000 + _i));
  /* Fill the whole array with data first, so zeroes are visible. */
  for (off = 0; off < t.size; off += MIN(t.size - off, 1 * MiB))
    tarray_write(&t, off, MIN(t.size - off, 1 * MiB), 0);

  /* Small, sector-granular ranges inside one chunk and across chunks. */
  tarray_zero(&t, 512, 512, true);
  tarray_zero(&t, 4096 - 512, 1024, false);
  tarray_zero(&t, tconf_chunk(&t.c) - 1536, 4096, true);
  /* Random ranges. */
  n = test_scale(60);
  for (i = 0; i < n; i++) {
    size_t len;
    tarray_random_range(&t, &off, &len);
    tarray_zero(&t, off, len, rng_percent(&t.rng, 50));
    if (rng_percent(&t.rng, 50)) {
      tarray_random_range(&t, &off, &len);
      tarray_write(&t, off, len, 0);
    }
  }
  tarray_check_all(&t);
  tarray_check_placement(&t);

  /* The whole array, in requests no longer than RAID_MAX_REQUEST. */
  for (off = 0; off < t.size; off += MIN(t.size - off, (uint64_t)RAID_MAX_REQUEST))
    tarray_zero(&t, off, MIN(t.size - off, (uint64_t)RAID_MAX_REQUEST), true);
  tarray_check_all(&t);
  tarray_check_placement(&t);
  tarray_teardown(&t);
}
END_TEST

/* ---- flush and FUA ---------------------------------------------------------------- */

static const struct tconf flush_confs[] = {
  { RAID_LEVEL_0, RAID_LAYOUT_DEFAULT, 4, 64 * KiB, 0, 4 * MiB },
  { RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 3, 0, 0, 4 * MiB },
  { RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 4, 64 * KiB, 0, 4 * MiB },
  { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 4, 64 * KiB, 0, 4 * MiB },
};

/* FUA writes succeed and read back; a flush of the array reaches every
 * member: a fault rule failing flushes on every member sees one each. */
START_TEST(test_flush_all_members)
{
  struct tarray t;
  struct raid_fault rule = { .ops = RAID_FAULT_FLUSH, .error = EIO };
  unsigned i;
  int r;

  tarray_setup(&t, &flush_confs[_i], TA_FAULT, 0, test_seed_for(2000 + _i));
  for (i = 0; i < 20; i++) {
    uint64_t off;
    size_t len;
    tarray_random_range(&t, &off, &len);
    tarray_write(&t, off, len, RAID_REQ_FUA);
  }
  tarray_check_all(&t);
  r = raid_flush(t.a);
  tassert(r == 0, "%s: raid_flush: %d %s", t.desc, r, raid_get_error());
  for (i = 0; i < t.c.disks; i++) {
    r = raid_fault_add(t.m[i], &rule);
    tassert(r == 0, "raid_fault_add: %d %s", r, raid_get_error());
  }
  r = raid_flush(t.a);
  for (i = 0; i < t.c.disks; i++)
    tassert(raid_fault_count(t.m[i]) >= 1,
                  "%s: raid_flush (result %d) never flushed member %u", t.desc, r, i);
  /* Every member failed its flush: nothing is known to be stable. */
  tassert(r == -EIO, "%s: raid_flush with every member failing returned %d",
                t.desc, r);
  tarray_teardown(&t);
}
END_TEST

/* ---- large and odd requests -------------------------------------------------------- */

/* A request of exactly RAID_MAX_REQUEST bytes, not aligned to a stripe, is
 * accepted and lands where md puts it. */
START_TEST(test_max_request)
{
  static const struct tconf c[] = {
    { RAID_LEVEL_0, RAID_LAYOUT_DEFAULT, 2, 64 * KiB, 0, 20 * MiB },
    { RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 3, 512 * KiB, 0, 20 * MiB },
    { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 4, 4 * KiB, 0, 20 * MiB },
    { RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, 0, 0, 36 * MiB },
  };
  struct tarray t;

  tarray_setup(&t, &c[_i], 0, 0, test_seed_for(3000 + _i));
  tassert(t.size >= RAID_MAX_REQUEST + 1 * MiB, "%s: array too small", t.desc);
  tarray_write(&t, 3 * 4096 + 512, RAID_MAX_REQUEST, 0);
  tarray_read_check(&t, 3 * 4096 + 512, RAID_MAX_REQUEST);
  tarray_read_check(&t, 0, RAID_MAX_REQUEST);
  tarray_check_placement(&t);
  tarray_teardown(&t);
}
END_TEST

/* The API does not ask for aligned buffers: buffers at odd addresses work
 * for reads and writes on every level (the library bounces for O_DIRECT). */
START_TEST(test_unaligned_buffers)
{
  static const struct tconf c[] = {
    { RAID_LEVEL_0, RAID_LAYOUT_DEFAULT, 3, 4 * KiB, 0, 2 * MiB },
    { RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, 0, 0, 2 * MiB },
    { RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 3, 4 * KiB, 0, 2 * MiB },
    { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 3, 4 * KiB, 0, 2 * MiB },
  };
  static const size_t shifts[] = { 1, 8, 512, 2048 };
  struct tarray t;
  unsigned i, j;

  tarray_setup(&t, &c[_i], 0, 0, test_seed_for(4000 + _i));
  for (i = 0; i < 40; i++) {
    uint64_t off;
    size_t len, shift = shifts[i % ARRAY_SIZE(shifts)];
    uint8_t *mem, *buf;
    int r;

    tarray_random_range(&t, &off, &len);
    if (len > 256 * KiB)
      len = 256 * KiB;
    mem = test_alloc(len + 4096);
    buf = mem + shift;
    tarray_make_data(&t, buf, off, len);
    r = raid_pwrite(t.a, buf, len, off, 0);
    tassert(r == 0, "%s: raid_pwrite from buffer at +%zu: %d %s", t.desc, shift,
                  r, raid_get_error());
    memcpy(t.shadow + off, buf, len);
    for (j = 0; j < len; j++)
      buf[j] = 0xee;
    r = raid_pread(t.a, buf, len, off);
    tassert(r == 0, "%s: raid_pread into buffer at +%zu: %d %s", t.desc, shift,
                  r, raid_get_error());
    tarray_compare(&t, buf, off, len, "raid_pread into an unaligned buffer");
    test_free(mem);
  }
  tarray_check_placement(&t);
  tarray_teardown(&t);
}
END_TEST

/* RAID 1 over members whose data area is not a multiple of 4 KiB: the
 * array is the member size rounded down to 512 bytes or to 4 KiB, and the
 * last sector can be written and read. */
START_TEST(test_raid1_odd_size)
{
  struct tconf c = { RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, 0, 4096,
                     4096 + 3 * MiB + 1536 };
  struct tarray t;

  tarray_setup(&t, &c, TA_NO_PATTERN, 0, test_seed_for(5000));
  tarray_write(&t, t.size - 512, 512, 0);
  tarray_write(&t, t.size - 64 * KiB, 64 * KiB, RAID_REQ_FUA);
  tarray_check_all(&t);
  tarray_check_placement(&t);
  tarray_teardown(&t);
}
END_TEST

int
main(void)
{
  Suite *s;
  TCase *tc;

  /* First: it forks a helper, which should not inherit allocations. */
  test_init("test-io");
  s = suite_create("io");
  build_confs();
  tc = test_tcase("matrix");
  tcase_add_loop_test(tc, test_matrix, 0, nconfs);
  suite_add_tcase(s, tc);
  tc = test_tcase("zeroing");
  tcase_add_loop_test(tc, test_zeroing, 0, ARRAY_SIZE(zero_confs));
  suite_add_tcase(s, tc);
  tc = test_tcase("flush");
  tcase_add_loop_test(tc, test_flush_all_members, 0, ARRAY_SIZE(flush_confs));
  suite_add_tcase(s, tc);
  tc = test_tcase("requests");
  tcase_add_loop_test(tc, test_max_request, 0, 4);
  tcase_add_loop_test(tc, test_unaligned_buffers, 0, 4);
  tcase_add_test(tc, test_raid1_odd_size);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
