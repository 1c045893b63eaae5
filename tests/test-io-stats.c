/* Description: I/O statistics (lib/stats.c, raid_array_stats()).
 *
 *  - the histogram alone: every bucket's bounds map back to it, buckets
 *    tile the values without gaps and are at most 12.5% wide; percentiles
 *    of a known distribution (1..1000 us) land within a bucket of the
 *    truth, a constant is reported exactly, an empty one as 0;
 *  - exact counters after known I/O on RAM members: RAID 0 over 2 with a
 *    write spanning both members (three chunk pieces), reads, a flush, a
 *    discard; RAID 1 over 2 writes everything twice (write amplification
 *    2.0) and spreads concurrent random reads over both mirrors (each
 *    gets more than 20%), and RAID 10 near-2 writes twice too; RAID 5
 *    over 4: a full-stripe write reads nothing and writes 4/3 of its
 *    bytes, a 4 KiB write is a reconstruct-write (2 reads, 2 writes)
 *    and over 5 members a read-modify-write (2 reads, 2 writes); a read
 *    of a failed member counts as a degraded read, and whole rows read
 *    degraded read each surviving chunk once;
 *  - latency: members delaying every op by 2000 us (fault injector) give
 *    percentiles that are ordered, at least 2000 us and below a second,
 *    for the members and the array; a failing member counts errors;
 *  - reset zeroes every counter of the array and its members, and the
 *    error path names the array.
 * RAID 5 write merging, seen through these counters: test-raid5-merge.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "raid/levels.h"
#include "testlib.h"
#include "stats-array.h"

/* ---- the histogram ----------------------------------------------------------- */

START_TEST(test_hist_buckets)
{
  unsigned b;

  for (b = 0; b < 8; b++) {
    ck_assert_uint_eq(stats_bucket(b), b);
    ck_assert_uint_eq(stats_bucket_lo(b), b);
    ck_assert_uint_eq(stats_bucket_hi(b), b);
  }
  for (b = 0; b < STATS_BUCKETS; b++) {
    uint64_t lo = stats_bucket_lo(b), hi = stats_bucket_hi(b);

    tassert(stats_bucket(lo) == b, "bucket %u: lo %" PRIu64 " maps to %u", b, lo,
            stats_bucket(lo));
    tassert(stats_bucket(hi) == b, "bucket %u: hi %" PRIu64 " maps to %u", b, hi,
            stats_bucket(hi));
    tassert(lo <= hi, "bucket %u: %" PRIu64 " > %" PRIu64, b, lo, hi);
    if (b + 1 < STATS_BUCKETS) {
      tassert(stats_bucket_lo(b + 1) == hi + 1, "gap after bucket %u", b);
      /* Log-linear: no wider than 1/8 of where it starts. */
      tassert(b < 8 || hi - lo + 1 <= lo / 8, "bucket %u [%" PRIu64 ", %" PRIu64
              "] is too wide", b, lo, hi);
    }
  }
  /* A few by hand: 8..15 one each, then [16,17], [1000 us] */
  ck_assert_uint_eq(stats_bucket(15), 15);
  ck_assert_uint_eq(stats_bucket(16), 16);
  ck_assert_uint_eq(stats_bucket(17), 16);
  ck_assert_uint_eq(stats_bucket(18), 17);
  ck_assert_uint_eq(stats_bucket_lo(stats_bucket(1000000)), 983040);  /* 15 << 16 */
  ck_assert_uint_eq(stats_bucket_hi(stats_bucket(1000000)), 1048575);
  ck_assert_uint_eq(stats_bucket(UINT64_MAX), STATS_BUCKETS - 1);
  ck_assert_uint_eq(stats_bucket(UINT64_C(1) << 40), STATS_BUCKETS - 1);
  ck_assert_uint_eq(stats_bucket((UINT64_C(1) << 40) - 1), STATS_BUCKETS - 1);
}
END_TEST

START_TEST(test_hist_percentiles)
{
  struct stats_hist *h = calloc(1, sizeof *h);
  static const double p[] = { 0.5, 0.9, 0.99, 0.999 };
  unsigned i;

  ck_assert_ptr_nonnull(h);
  ck_assert_uint_eq(stats_hist_percentile(h, 0.5), 0);
  ck_assert_uint_eq(stats_hist_percentile(h, 1.0), 0);

  /* A constant is exact (capped by the maximum). */
  for (i = 0; i < 100; i++)
    stats_hist_add(h, 2000000);
  ck_assert_uint_eq(stats_hist_percentile(h, 0.5), 2000000);
  ck_assert_uint_eq(stats_hist_percentile(h, 0.999), 2000000);
  ck_assert_uint_eq(stats_hist_percentile(h, 1.0), 2000000);
  memset(h, 0, sizeof *h);

  /* 1, 2, ..., 1000 microseconds, shuffled in: percentile p is the
   * value of rank ceil(p * 1000) rounded up to its bucket's end. */
  for (i = 0; i < 1000; i++)
    stats_hist_add(h, (uint64_t)((i * 389) % 1000 + 1) * 1000);
  for (i = 0; i < ARRAY_SIZE(p); i++) {
    uint64_t want = (uint64_t)(p[i] * 1000 + 0.5) * 1000;
    uint64_t got = stats_hist_percentile(h, p[i]);

    ck_assert_msg(got >= want && got <= want + want / 8,
                  "p%g: %" PRIu64 " ns, want %" PRIu64 " to +12.5%%", p[i] * 100, got, want);
    ck_assert_uint_eq(got, MIN(stats_bucket_hi(stats_bucket(want)), 1000000));
  }
  ck_assert_uint_eq(stats_hist_percentile(h, 1.0), 1000000);
  free(h);
}
END_TEST

/* ---- exact counters ------------------------------------------------------------- */

START_TEST(test_raid0)
{
  struct sarray s;
  int r;

  sarray_new(&s, RAID_LEVEL_0, 2, false);
  snap(&s);
  ck_assert_uint_eq(s.n, 2);
  ck_assert_uint_eq(s.st.io.write_ops + s.st.io.read_ops, 0);
  ck_assert_uint_eq(SUM(&s, write_ops) + SUM(&s, read_ops), 0);

  /* 128 KiB from 32 KiB: member 0 gets [32K, 64K) of chunk 0 and [0, 32K)
   * of chunk 2, member 1 the whole chunk 1. */
  write_at(&s, 32 * KiB, 128 * KiB);
  read_at(&s, 32 * KiB, 128 * KiB);
  r = raid_flush(s.a);
  ck_assert_int_eq(r, 0);
  r = raid_discard(s.a, 64 * KiB, 0);
  ck_assert_int_eq(r, 0);
  snap(&s);

  ck_assert_uint_eq(s.st.io.write_ops, 1);
  ck_assert_uint_eq(s.st.io.write_bytes, 128 * KiB);
  ck_assert_uint_eq(s.st.io.read_ops, 1);
  ck_assert_uint_eq(s.st.io.read_bytes, 128 * KiB);
  ck_assert_uint_eq(s.st.io.flush_ops, 1);
  ck_assert_uint_eq(s.st.io.discard_ops, 1);
  ck_assert_uint_eq(s.st.io.discard_bytes, 64 * KiB);
  ck_assert_uint_eq(s.st.io.in_flight, 0);
  ck_assert_uint_eq(s.st.io.errors, 0);
  ck_assert_str_eq(s.ms[0].name, "ram0");
  ck_assert_str_eq(s.ms[0].kind, "ram");
  ck_assert_int_eq(s.ms[1].role, 1);
  ck_assert_int_eq(s.ms[1].state, RAID_MEMBER_IN_SYNC);
  ck_assert_uint_eq(s.ms[0].io.write_ops, 2);
  ck_assert_uint_eq(s.ms[0].io.write_bytes, 64 * KiB);
  ck_assert_uint_eq(s.ms[1].io.write_ops, 1);
  ck_assert_uint_eq(s.ms[1].io.write_bytes, 64 * KiB);
  ck_assert_uint_eq(s.ms[0].io.read_ops, 2);
  ck_assert_uint_eq(s.ms[1].io.read_ops, 1);
  ck_assert_uint_eq(s.ms[0].io.flush_ops, 1);
  ck_assert_uint_eq(s.ms[1].io.flush_ops, 1);
  ck_assert_uint_eq(s.ms[0].io.discard_ops, 1);
  ck_assert_uint_eq(s.ms[0].io.discard_bytes, 64 * KiB);
  ck_assert_uint_eq(s.ms[1].io.discard_ops, 0);
  ck_assert_uint_eq(s.st.member_write_bytes, 128 * KiB);   /* amplification 1 */
  ck_assert_uint_eq(s.st.member_read_bytes, 128 * KiB);
  ck_assert_uint_eq(s.st.full_stripe_writes + s.st.rmw_writes + s.st.rcw_writes, 0);
  /* Latencies were measured. */
  ck_assert_uint_gt(s.st.io.write_lat_ns[RAID_STATS_MAX], 0);
  ck_assert_uint_gt(s.ms[1].io.read_lat_ns[RAID_STATS_P50], 0);
  ck_assert_uint_gt(s.st.elapsed_ns, 0);

  /* Reset zeroes everything; counting goes on. */
  raid_array_stats_reset(s.a);
  snap(&s);
  ck_assert_uint_eq(s.st.io.write_ops + s.st.io.read_ops + s.st.io.flush_ops +
                    s.st.io.discard_ops + s.st.io.write_bytes, 0);
  ck_assert_uint_eq(s.st.io.write_lat_ns[RAID_STATS_MAX], 0);
  ck_assert_uint_eq(s.st.member_write_bytes + s.st.member_read_bytes, 0);
  ck_assert_uint_eq(SUM(&s, write_ops) + SUM(&s, read_ops) + SUM(&s, flush_ops) +
                    SUM(&s, discard_ops) + SUM(&s, write_bytes), 0);
  ck_assert_uint_eq(s.ms[0].io.read_lat_ns[RAID_STATS_MAX], 0);
  write_at(&s, 0, 4 * KiB);
  snap(&s);
  ck_assert_uint_eq(s.st.io.write_ops, 1);
  ck_assert_uint_eq(s.ms[0].io.write_ops, 1);
  ck_assert_uint_eq(s.ms[1].io.write_ops, 0);
  sarray_free(&s);
}
END_TEST

/* Random 4 KiB reads of all of S's array, DEPTH in flight. */
static void
random_reads(struct sarray *s, unsigned nreads, uint64_t seed)
{
  const unsigned depth = 16;
  uint64_t size = raid_array_size(s->a);
  struct rdone d = { 0, 0 };
  struct raid_queue *q;
  struct rng rng;
  uint8_t *buf;
  unsigned sent = 0;

  ck_assert_int_eq(raid_queue_new(64, &q), 0);
  buf = test_alloc(depth * 4 * KiB);
  rng_seed(&rng, seed);
  while (d.done < nreads) {
    while (sent < nreads && sent - d.done < depth) {
      uint64_t off = rng_below(&rng, size / (4 * KiB)) * 4 * KiB;
      int r = raid_aio_read(q, s->a, buf + (sent % depth) * 4 * KiB, 4 * KiB, off,
                            rdone_cb, &d);
      ck_assert_msg(r == 0, "raid_aio_read: %s", raid_get_error());
      sent++;
    }
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
  }
  ck_assert_int_eq(d.err, 0);
  raid_queue_free(q);
  test_free(buf);
}

START_TEST(test_raid1)
{
  const unsigned nreads = test_scale(2000);
  struct sarray s;
  unsigned i;
  double share0, share1;

  sarray_new(&s, RAID_LEVEL_1, 2, false);
  for (i = 0; i < 64; i++)
    write_at(&s, i * 64 * KiB, 64 * KiB);
  snap(&s);
  ck_assert_uint_eq(s.st.io.write_bytes, 4 * MiB);
  ck_assert_uint_eq(s.st.member_write_bytes, 8 * MiB);
  ck_assert_uint_eq(s.ms[0].io.write_bytes, 4 * MiB);
  ck_assert_uint_eq(s.ms[1].io.write_bytes, 4 * MiB);
  ck_assert_uint_eq(s.ms[0].io.write_ops, 64);
  ck_assert_double_eq_tol((double)s.st.member_write_bytes / s.st.io.write_bytes, 2.0, 1e-9);

  /* Random 4 KiB reads, DEPTH in flight: read_balance() sends each to
   * the mirror with fewer in flight. */
  raid_array_stats_reset(s.a);
  random_reads(&s, nreads, test_seed_for(1));
  snap(&s);
  ck_assert_uint_eq(s.st.io.read_ops, nreads);
  ck_assert_uint_eq(SUM(&s, read_ops), nreads);
  share0 = (double)s.ms[0].io.read_ops / nreads;
  share1 = (double)s.ms[1].io.read_ops / nreads;
  ck_assert_msg(share0 > 0.2 && share1 > 0.2, "read shares %.3f / %.3f", share0, share1);
  sarray_free(&s);

  /* RAID 10 near-2 over 4: two copies of every chunk, one per pair. */
  sarray_new(&s, RAID_LEVEL_10, 4, false);
  write_at(&s, 0, 4 * CHUNK);
  snap(&s);
  ck_assert_uint_eq(s.st.member_write_bytes, 8 * CHUNK);
  ck_assert_uint_eq(SUM(&s, write_bytes), 8 * CHUNK);
  for (i = 0; i < 4; i++)
    ck_assert_uint_eq(s.ms[i].io.write_bytes, 2 * CHUNK);
  sarray_free(&s);
}
END_TEST

/* md's --write-mostly: mirrors on a write-mostly member get every write
 * but no read while another copy can serve one; once none can, they
 * serve them all. */
START_TEST(test_write_mostly)
{
  const unsigned nreads = test_scale(2000);
  struct sarray s;
  unsigned i;

  sarray_new(&s, RAID_LEVEL_1, 2, false);
  ck_assert_int_eq(raid_member_is_write_mostly(raid_array_member(s.a, 1)), 0);
  raid_member_set_write_mostly(raid_array_member(s.a, 1), 1);
  ck_assert_int_eq(raid_member_is_write_mostly(raid_array_member(s.a, 1)), 1);
  write_at(&s, 0, 1 * MiB);
  raid_array_stats_reset(s.a);
  random_reads(&s, nreads, test_seed_for(7));
  snap(&s);
  ck_assert_uint_eq(s.ms[0].io.read_ops, nreads);
  ck_assert_uint_eq(s.ms[1].io.read_ops, 0);
  write_at(&s, 0, 64 * KiB);
  snap(&s);
  ck_assert_uint_eq(s.ms[1].io.write_bytes, 64 * KiB);     /* writes still go */
  {
    struct raid_member_info info[2];
    ck_assert_uint_eq(raid_array_members(s.a, info, 2), 2);
    ck_assert_int_eq(info[0].write_mostly, 0);
    ck_assert_int_eq(info[1].write_mostly, 1);
  }
  /* The other mirror fails: the write-mostly one serves every read. */
  ck_assert_int_eq(raid_array_fail_member(s.a, 0), 0);
  raid_array_stats_reset(s.a);
  random_reads(&s, nreads / 4, test_seed_for(8));
  snap(&s);
  ck_assert_uint_eq(s.ms[1].io.read_ops, nreads / 4);
  sarray_free(&s);

  /* RAID 10 near-2 over 4 with member 2 write-mostly: chunks copied on
   * members 2 and 3 are read from 3; members 0 and 1 share theirs. */
  sarray_new(&s, RAID_LEVEL_10, 4, false);
  raid_member_set_write_mostly(raid_array_member(s.a, 2), 1);
  random_reads(&s, nreads, test_seed_for(9));
  snap(&s);
  ck_assert_uint_eq(s.ms[2].io.read_ops, 0);
  for (i = 0; i < 4; i++)
    if (i != 2)
      ck_assert_msg(s.ms[i].io.read_ops > nreads / 10, "member %u read %" PRIu64
                    " of %u", i, s.ms[i].io.read_ops, nreads);
  sarray_free(&s);
}
END_TEST

START_TEST(test_raid5)
{
  struct sarray s;
  const uint64_t row = 3 * CHUNK;

  sarray_new(&s, RAID_LEVEL_5, 4, false);

  /* A full stripe: parity from the new data, no reads. */
  write_at(&s, row, row);
  snap(&s);
  ck_assert_uint_eq(s.st.full_stripe_writes, 1);
  ck_assert_uint_eq(s.st.rmw_writes + s.st.rcw_writes, 0);
  ck_assert_uint_eq(s.st.member_write_bytes, 4 * CHUNK);
  ck_assert_uint_eq(SUM(&s, write_bytes), 4 * CHUNK);
  ck_assert_uint_eq(SUM(&s, write_ops), 4);
  ck_assert_uint_eq(SUM(&s, read_ops), 0);
  ck_assert_uint_eq(s.st.stripe_read_bytes, 0);
  ck_assert_double_eq_tol((double)s.st.member_write_bytes / s.st.io.write_bytes,
                          4.0 / 3.0, 1e-9);

  /* 4 KiB of one chunk out of 3: RMW would read 2 (old data, old
   * parity), RCW 2 (the other data chunks); on a tie md (and we)
   * reconstruct. */
  raid_array_stats_reset(s.a);
  write_at(&s, 4 * KiB, 4 * KiB);
  snap(&s);
  ck_assert_uint_eq(s.st.rcw_writes, 1);
  ck_assert_uint_eq(s.st.rmw_writes + s.st.full_stripe_writes, 0);
  ck_assert_uint_eq(SUM(&s, write_ops), 2);
  ck_assert_uint_eq(SUM(&s, write_bytes), 8 * KiB);
  ck_assert_uint_eq(SUM(&s, read_ops), 2);
  ck_assert_uint_eq(SUM(&s, read_bytes), 8 * KiB);
  ck_assert_uint_eq(s.st.stripe_read_bytes, 8 * KiB);
  ck_assert_uint_eq(s.st.member_write_bytes, 8 * KiB);
  ck_assert_uint_eq(s.st.member_read_bytes, 8 * KiB);
  ck_assert_uint_eq(s.st.io.read_ops, 0);

  /* Two row pieces: the second row's full stripe and half of the third. */
  raid_array_stats_reset(s.a);
  write_at(&s, 2 * row, row + CHUNK);
  snap(&s);
  ck_assert_uint_eq(s.st.io.write_ops, 1);
  ck_assert_uint_eq(s.st.full_stripe_writes, 1);
  ck_assert_uint_eq(s.st.rcw_writes, 1);

  /* A read of a failed member is rebuilt from the others. */
  raid_array_stats_reset(s.a);
  ck_assert_int_eq(raid_array_fail_member(s.a, 0), 0);
  read_at(&s, 0, 4 * KiB);      /* row 0, data index 0: member 0 (left-symmetric) */
  snap(&s);
  ck_assert_uint_eq(s.st.degraded_reads, 1);
  ck_assert_uint_eq(s.ms[0].io.read_ops, 0);
  ck_assert_uint_eq(SUM(&s, read_ops), 3);
  ck_assert_int_eq(s.ms[0].state, RAID_MEMBER_FAULTY);

  /* Whole rows read degraded: each surviving chunk is read once, by the
   * reconstruction that needs it, not a second time for the caller.  Rows
   * 0-2 have data on member 0 (3 reads each: 2 data chunks, parity), row
   * 3 its parity (3 data chunks read as such). */
  raid_array_stats_reset(s.a);
  read_at(&s, 0, 4 * row);
  snap(&s);
  ck_assert_uint_eq(s.st.degraded_reads, 3);
  ck_assert_uint_eq(SUM(&s, read_bytes), 4 * row);
  ck_assert_uint_eq(SUM(&s, read_ops), 12);
  sarray_free(&s);

  /* Over 5 members a 4 KiB write reads 2 for RMW, 3 for RCW: RMW. */
  sarray_new(&s, RAID_LEVEL_5, 5, false);
  write_at(&s, 8 * KiB, 4 * KiB);
  snap(&s);
  ck_assert_uint_eq(s.st.rmw_writes, 1);
  ck_assert_uint_eq(s.st.rcw_writes + s.st.full_stripe_writes, 0);
  ck_assert_uint_eq(SUM(&s, write_ops), 2);
  ck_assert_uint_eq(SUM(&s, read_ops), 2);
  ck_assert_uint_eq(s.st.stripe_read_bytes, 8 * KiB);
  ck_assert_double_eq_tol((double)s.st.member_write_bytes / s.st.io.write_bytes, 2.0, 1e-9);
  sarray_free(&s);
}
END_TEST

/* ---- latency and errors --------------------------------------------------------------- */

static void
check_order(const uint64_t *lat, const char *what)
{
  unsigned i;

  for (i = 0; i + 1 < RAID_STATS_NPCT; i++)
    ck_assert_msg(lat[i] <= lat[i + 1], "%s: percentile %u (%" PRIu64 " ns) > "
                  "percentile %u (%" PRIu64 " ns)", what, i, lat[i], i + 1, lat[i + 1]);
  /* At least the fault member's delay; the upper bound only catches a unit
   * mistake (microseconds or milliseconds counted as nanoseconds would be
   * 1000 times off), not a slow machine: no timing thresholds. */
  ck_assert_msg(lat[RAID_STATS_P50] >= 2000000 && lat[RAID_STATS_MAX] < UINT64_C(60000000000),
                "%s: p50 %" PRIu64 " ns, max %" PRIu64 " ns: want 2 ms to 60 s",
                what, lat[RAID_STATS_P50], lat[RAID_STATS_MAX]);
}

START_TEST(test_latency)
{
  struct raid_fault rule = {
    .ops = RAID_FAULT_READ | RAID_FAULT_WRITE, .delay_us = 2000,
  };
  struct sarray s;
  unsigned i;

  sarray_new(&s, RAID_LEVEL_1, 2, true);
  for (i = 0; i < 2; i++)
    ck_assert_int_eq(raid_fault_add(raid_array_member(s.a, i), &rule), 0);
  for (i = 0; i < 10; i++) {
    write_at(&s, i * 4 * KiB, 4 * KiB);
    read_at(&s, i * 4 * KiB, 4 * KiB);
  }
  snap(&s);
  ck_assert_uint_eq(s.st.io.write_ops, 10);
  check_order(s.st.io.write_lat_ns, "array writes");
  check_order(s.st.io.read_lat_ns, "array reads");
  check_order(s.ms[0].io.write_lat_ns, "member 0 writes");
  check_order(s.ms[1].io.write_lat_ns, "member 1 writes");
  ck_assert_str_eq(s.ms[0].kind, "fault");
  /* An array write completes after both of its member writes: each array
   * sample is at least its members' samples, so its median is too.  (Not
   * "close to 2 ms": on a loaded machine the delay's timer fires late.) */
  for (i = 0; i < 2; i++) {
    ck_assert_uint_eq(s.ms[i].io.write_ops, 10);
    ck_assert_msg(s.st.io.write_lat_ns[RAID_STATS_P50] >= s.ms[i].io.write_lat_ns[RAID_STATS_P50],
                  "array write p50 %" PRIu64 " ns below member %u's %" PRIu64 " ns",
                  s.st.io.write_lat_ns[RAID_STATS_P50], i,
                  s.ms[i].io.write_lat_ns[RAID_STATS_P50]);
  }
  sarray_free(&s);
}
END_TEST

START_TEST(test_errors)
{
  struct raid_fault rule = { .ops = RAID_FAULT_READ, .error = EIO };
  struct sarray s;
  int r;

  /* A mirror whose reads fail: the read of offset 0 goes to member 0
   * (both heads are at 0 and ties go to the first), fails, and is retried
   * on member 1; the member counts an error, the array none. */
  sarray_new(&s, RAID_LEVEL_1, 2, true);
  write_at(&s, 0, 4 * KiB);
  ck_assert_int_eq(raid_fault_add(raid_array_member(s.a, 0), &rule), 0);
  read_at(&s, 0, 4 * KiB);
  snap(&s);
  ck_assert_uint_eq(s.st.io.errors, 0);
  ck_assert_uint_eq(s.st.io.read_ops, 1);
  ck_assert_uint_eq(s.ms[0].io.errors, 1);
  ck_assert_uint_eq(s.ms[0].io.read_ops, 1);
  ck_assert_uint_eq(s.ms[1].io.errors, 0);
  ck_assert_uint_eq(s.ms[1].io.read_ops, 1);
  ck_assert_int_eq(s.ms[0].state, RAID_MEMBER_FAULTY);
  sarray_free(&s);

  /* RAID 0 losing a member: the request fails and counts. */
  sarray_new(&s, RAID_LEVEL_0, 2, true);
  rule.ops = RAID_FAULT_WRITE;
  ck_assert_int_eq(raid_fault_add(raid_array_member(s.a, 1), &rule), 0);
  {
    void *buf = test_alloc(128 * KiB);
    memset(buf, 1, 128 * KiB);
    r = raid_pwrite(s.a, buf, 128 * KiB, 0, 0);
    test_free(buf);
  }
  ck_assert_int_eq(r, -EIO);
  snap(&s);
  ck_assert_uint_eq(s.st.io.errors, 1);
  ck_assert_uint_eq(s.st.io.write_ops, 1);
  ck_assert_uint_eq(s.ms[1].io.errors, 1);
  ck_assert_uint_eq(s.ms[0].io.errors, 0);

  /* No room for members: refused, naming the array. */
  r = raid_array_stats(s.a, &s.st, NULL, 4);
  ck_assert_int_eq(r, -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "array st"));
  /* Counting members only. */
  ck_assert_int_eq(raid_array_stats(s.a, &s.st, NULL, 0), 2);
  sarray_free(&s);
}
END_TEST

int
main(void)
{
  Suite *s;
  TCase *tc;

  test_init("test-io-stats");
  raid_set_log_handler(NULL, NULL, RAID_LOG_ERR - 1);   /* failures are expected */
  s = suite_create("io-stats");
  tc = test_tcase("histogram");
  tcase_add_test(tc, test_hist_buckets);
  tcase_add_test(tc, test_hist_percentiles);
  suite_add_tcase(s, tc);
  tc = test_tcase("counters");
  tcase_add_test(tc, test_raid0);
  tcase_add_test(tc, test_raid1);
  tcase_add_test(tc, test_write_mostly);
  tcase_add_test(tc, test_raid5);
  suite_add_tcase(s, tc);
  tc = test_tcase("latency");
  tcase_add_test(tc, test_latency);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
