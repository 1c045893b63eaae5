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
 *  - RAID 5 write merging: three writes of 2/3 of a row queued at once
 *    become four full-stripe writes with no reads; the same at queue
 *    depth 1 are all reconstruct-writes; a stream at queue depth 2 on
 *    members taking 2 ms per write (so each row's second piece arrives
 *    after its first was granted: plugging) is nearly all full stripes,
 *    in sync and with a member failed, and so is a stream of two clients
 *    taking turns; all read back intact with no parity mismatch; a
 *    stream of quarter-chunk writes at queue depth 16 gathers each
 *    column's three pieces into one full stripe after the first rows (in
 *    sync and degraded), every plug ended by pokes, and 1 KiB writes,
 *    whose stripes fill 128 writes later, never wait; a plugged piece
 *    goes when a write it cannot take queues behind it;
 *  - latency: members delaying every op by 2000 us (fault injector) give
 *    percentiles that are ordered, at least 2000 us and below a second,
 *    for the members and the array; a failing member counts errors;
 *  - reset zeroes every counter of the array and its members, and the
 *    error path names the array.
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

#define CHUNK (64 * KiB)
#define MEMBER_BYTES (8 * MiB)

struct sarray {
  struct raid_array *a;
  struct raid_member_stats ms[RAID_MAX_MEMBERS];
  struct raid_array_stats st;
  unsigned n;
};

/* An array of N RAM members (each wrapped in a fault injector with
 * FAULT) at offset 0. */
static void
sarray_new(struct sarray *s, int level, unsigned n, bool fault)
{
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_config cfg = {
    .name = "st", .level = level, .layout = RAID_LAYOUT_DEFAULT,
    .chunk_size = level == RAID_LEVEL_1 ? 0 : CHUNK, .raid_disks = n,
  };
  char name[32];
  unsigned i;
  int r;

  memset(s, 0, sizeof *s);
  for (i = 0; i < n; i++) {
    snprintf(name, sizeof name, "ram%u", i);
    ck_assert_int_eq(raid_member_new_ram(name, MEMBER_BYTES, &m[i]), 0);
    if (fault) {
      struct raid_member *inner = m[i];
      ck_assert_int_eq(raid_member_new_fault(inner, &m[i]), 0);
    }
  }
  r = raid_array_new(&cfg, m, &s->a);
  ck_assert_msg(r == 0, "raid_array_new: %s", raid_get_error());
}

static void
sarray_free(struct sarray *s)
{
  raid_array_free(s->a);
}

/* Take a snapshot into S->st and S->ms. */
static void
snap(struct sarray *s)
{
  int r = raid_array_stats(s->a, &s->st, s->ms, RAID_MAX_MEMBERS);

  ck_assert_msg(r >= 0, "raid_array_stats: %s", raid_get_error());
  s->n = r;
}

static void
write_at(struct sarray *s, uint64_t off, size_t len)
{
  void *buf = test_alloc(len);
  int r;

  memset(buf, 0x5a, len);
  r = raid_pwrite(s->a, buf, len, off, 0);
  ck_assert_msg(r == 0, "write of %zu at %" PRIu64 ": %s", len, off, raid_get_error());
  test_free(buf);
}

static void
read_at(struct sarray *s, uint64_t off, size_t len)
{
  void *buf = test_alloc(len);
  int r = raid_pread(s->a, buf, len, off);

  ck_assert_msg(r == 0, "read of %zu at %" PRIu64 ": %s", len, off, raid_get_error());
  test_free(buf);
}

static uint64_t
sum_members(const struct sarray *s, size_t field)
{
  uint64_t t = 0;
  unsigned i;

  for (i = 0; i < s->n; i++)
    t += *(const uint64_t *)((const char *)&s->ms[i].io + field);
  return t;
}
#define SUM(s, f) sum_members(s, offsetof(struct raid_io_stats, f))

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

struct rdone {
  unsigned done;
  int err;
};

static void
rdone_cb(void *opaque, int res)
{
  struct rdone *d = opaque;

  d->done++;
  if (res < 0 && d->err == 0)
    d->err = res;
}

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

/* ---- RAID 5 write merging --------------------------------------------------------------- */

/* Writes of LEN bytes covering [OFF, OFF + COUNT * LEN) from DATA, as fio
 * does it with NSTREAMS jobs: each job writes its own consecutive part
 * from its start, with QD of its writes in flight, the next submitted when
 * one of its own completes.  The jobs share one queue and take turns.
 * stream_trickle(): one write is submitted at a time, and the queue runs
 * between two (each write's lock is granted before the next one asks),
 * as when the writes come one by one from a socket. */
#define MAX_STREAMS 4

static void
stream_writes_by(struct sarray *s, uint64_t off, size_t len, unsigned count,
                 unsigned qd, const uint8_t *data, unsigned nstreams, bool trickle)
{
  struct raid_queue *q;
  struct rdone st[MAX_STREAMS] = { { 0, 0 } };
  unsigned next[MAX_STREAMS] = { 0 }, per = count / nstreams, done = 0, j;
  int r;

  ck_assert(nstreams <= MAX_STREAMS && count % nstreams == 0);
  ck_assert_int_eq(raid_queue_new(0, &q), 0);
  while (done < count) {
    for (j = 0; j < nstreams; j++)
      while (next[j] < per && next[j] - st[j].done < qd) {
        uint64_t at = (uint64_t)j * per + next[j];

        r = raid_aio_write(q, s->a, data + at * len, len, off + at * len, 0,
                           rdone_cb, &st[j]);
        ck_assert_msg(r == 0, "raid_aio_write: %s", raid_get_error());
        next[j]++;
        if (trickle) {
          r = raid_queue_run(q, 0);
          ck_assert_msg(r >= 0, "raid_queue_run: %s", raid_get_error());
        }
      }
    r = raid_queue_run(q, 1);
    ck_assert_msg(r >= 0, "raid_queue_run: %s", raid_get_error());
    for (j = 0, done = 0; j < nstreams; j++) {
      done += st[j].done;
      ck_assert_msg(st[j].err == 0, "a streamed write failed: %s",
                    strerror(-st[j].err));
    }
  }
  raid_queue_free(q);
}

static void
stream_writes(struct sarray *s, uint64_t off, size_t len, unsigned count,
              unsigned qd, const uint8_t *data, unsigned nstreams)
{
  stream_writes_by(s, off, len, count, qd, data, nstreams, false);
}

/* snap(), and say how the writes went (WHAT, pass PASS). */
static void
snap_merges(struct sarray *s, const char *what, unsigned pass)
{
  snap(s);
  test_verbose("%s, pass %u: %" PRIu64 " full, %" PRIu64 " degraded, %" PRIu64 " RCW, %"
               PRIu64 " RMW; %" PRIu64 " plugged, %" PRIu64 " filled, %" PRIu64 " expired",
               what, pass, s->st.full_stripe_writes, s->st.degraded_writes,
               s->st.rcw_writes, s->st.rmw_writes, s->st.plugged_writes, s->st.plugs_filled,
               s->st.plugs_expired);
}

/* Every member of S's array injects fault F, or none (F NULL). */
static void
members_fault(struct sarray *s, const struct raid_fault *f)
{
  unsigned i;

  for (i = 0; i < raid_array_raid_disks(s->a); i++)
    if (f)
      ck_assert_int_eq(raid_fault_add(raid_array_member(s->a, i), f), 0);
    else
      raid_fault_clear(raid_array_member(s->a, i));
}

/* The array reads back as DATA over [0, len); a check finds no parity
 * mismatch unless DEGRADED. */
static void
verify(struct sarray *s, const uint8_t *data, size_t len, bool degraded)
{
  uint8_t *buf = test_alloc(len);
  struct raid_sync_status ss;
  size_t i;

  ck_assert_int_eq(raid_pread(s->a, buf, len, 0), 0);
  for (i = 0; i < len && buf[i] == data[i]; i++)
    ;
  ck_assert_msg(i == len, "array byte %zu of %zu differs after merged writes", i, len);
  test_free(buf);
  if (degraded)
    return;
  ck_assert_int_eq(raid_array_sync_start(s->a, RAID_SYNC_CHECK), 0);
  ck_assert_int_eq(raid_array_sync_wait(s->a), 0);
  raid_array_sync_status(s->a, &ss);
  ck_assert_uint_eq(ss.last_mismatches, 0);
}

/* Whether a plugged row piece gets its follower must not depend on how
 * fast this machine is: the plug window is made longer than the test
 * (raid5_set_plug_window()), so a plug ends only when the follower pokes
 * it.  Every stream here ends on a row boundary, where nothing plugs, so
 * nothing waits for the window either: the counts below are exact. */
#define PLUG_FOREVER (3600u * 1000000u)

/* A streaming case: a RAID 5 over 4 keeping its data, members delaying
 * every write by DELAY_US, member FAIL failed (-1: none), then COUNT
 * writes of LEN bytes streamed by NSTREAMS clients at queue depth QD
 * (TRICKLE: sent one at a time), the plug window longer than the test
 * (PLUG_FOREVER). */
struct stream_case {
  const char *what;
  unsigned delay_us;
  int fail;
  size_t len;
  unsigned count, qd, nstreams;
  bool trickle;
};

/* Run case C (pass PASS) on a new array S, writing DATA: S's statistics
 * count the streamed writes alone. */
static void
stream_case_run(struct sarray *s, const struct stream_case *c, const uint8_t *data,
                unsigned pass)
{
  struct raid_fault slow = { .ops = RAID_FAULT_WRITE, .delay_us = c->delay_us };

  sarray_new(s, RAID_LEVEL_5, 4, true);
  raid5_set_plug_window(s->a, PLUG_FOREVER);
  members_fault(s, &slow);
  if (c->fail >= 0)
    ck_assert_int_eq(raid_array_fail_member(s->a, (unsigned)c->fail), 0);
  raid_array_stats_reset(s->a);
  stream_writes_by(s, 0, c->len, c->count, c->qd, data, c->nstreams, c->trickle);
  snap_merges(s, c->what, pass);
  /* Nothing but the stream queues behind a plug, which waits forever:
   * every plug fills (and the statistics say so). */
  ck_assert_msg(s->st.plugs_filled == s->st.plugged_writes && s->st.plugs_expired == 0,
                "%s, pass %u: %" PRIu64 " plugs, %" PRIu64 " filled, %" PRIu64 " expired",
                c->what, pass, s->st.plugged_writes, s->st.plugs_filled, s->st.plugs_expired);
}

/* The end of case C: S reads back as DATA (with no parity mismatch when
 * in sync), and is freed. */
static void
stream_case_end(struct sarray *s, const struct stream_case *c, const uint8_t *data)
{
  members_fault(s, NULL);
  verify(s, data, c->count * c->len, c->fail >= 0);
  sarray_free(s);
}

START_TEST(test_raid5_merge)
{
  const size_t len = 2 * CHUNK;  /* 2/3 of a row of 3 chunks */
  const unsigned count = 48;                        /* 32 rows, 64 row pieces */
  const struct stream_case two = {
    .what = "two streams", .delay_us = 500, .fail = -1,
    .len = len, .count = count, .qd = 2, .nstreams = 2,
  };
  struct sarray s;
  uint8_t *data = test_alloc(count * len);
  struct rng g;
  unsigned pass;

  rng_seed(&g, test_seed_for(20));
  rng_fill(&g, data, count * len);

  /* Three writes queued at once: each row's second piece waits behind the
   * first and joins it when it is granted.  Four full stripes, no reads. */
  sarray_new(&s, RAID_LEVEL_5, 4, false);
  stream_writes(&s, 0, len, 3, 3, data, 1);
  snap(&s);
  ck_assert_uint_eq(s.st.full_stripe_writes, 4);
  ck_assert_uint_eq(s.st.rmw_writes + s.st.rcw_writes, 0);
  ck_assert_uint_eq(SUM(&s, read_ops), 0);
  ck_assert_uint_eq(SUM(&s, write_ops), 2 * 4);
  verify(&s, data, 3 * len, false);
  sarray_free(&s);

  /* At queue depth 1 there is nothing to merge with, and nothing waits:
   * every piece is a reconstruct-write. */
  sarray_new(&s, RAID_LEVEL_5, 4, false);
  raid5_set_plug_window(s.a, PLUG_FOREVER);
  stream_writes(&s, 0, len, 6, 1, data, 1);
  snap(&s);
  ck_assert_uint_eq(s.st.full_stripe_writes, 0);
  ck_assert_uint_eq(s.st.rcw_writes, 8);
  sarray_free(&s);

  /* A stream at queue depth 2 on members that delay every write: the
   * first piece of a row arrives long before the second, and waits for it
   * (plugged) until the client's next write pokes it.  Every row piece is
   * then part of a full stripe.  Pass 1 again with member 1 failed: the
   * rows whose parity was on member 1 are written without parity, every
   * other row as a full stripe that keeps parity for the missing chunks,
   * which the read back reconstructs. */
  for (pass = 0; pass < 2; pass++) {
    const struct stream_case c = {
      .what = "2/3-row stream", .delay_us = 500, .fail = pass ? 1 : -1,
      .len = len, .count = count, .qd = 2, .nstreams = 1,
    };
    uint64_t noparity = 0, row;

    stream_case_run(&s, &c, data, pass);
    for (row = 0; pass && row < 32; row++)
      if (geo_raid5_pd_idx(raid_array_layout(s.a), 4, row) == 1)
        noparity += 2;
    ck_assert_msg(s.st.rmw_writes + s.st.rcw_writes == 0 &&
                  s.st.full_stripe_writes == 64 - noparity &&
                  s.st.degraded_writes == noparity, "pass %u: %" PRIu64 " of 64 "
                  "row pieces were full-stripe writes (expected %" PRIu64 "), %"
                  PRIu64 " without parity (expected %" PRIu64 "), %" PRIu64 " RCW, %"
                  PRIu64 " RMW", pass, s.st.full_stripe_writes, 64 - noparity,
                  s.st.degraded_writes, noparity, s.st.rcw_writes, s.st.rmw_writes);
    stream_case_end(&s, &c, data);
  }

  /* Two clients streaming at queue depth 2 each, their writes taking
   * turns: each is a stream of its own, and every row is merged. */
  stream_case_run(&s, &two, data, 0);
  ck_assert_msg(s.st.rmw_writes + s.st.rcw_writes == 0 && s.st.full_stripe_writes == 64,
                "two streams: %" PRIu64 " of 64 row pieces were full-stripe "
                "writes, %" PRIu64 " RCW, %" PRIu64 " RMW", s.st.full_stripe_writes,
                s.st.rcw_writes, s.st.rmw_writes);
  stream_case_end(&s, &two, data);

  /* A stream that pauses: its first write after the pause finds the
   * previous one done, yet recent plugs filled (the first half streamed
   * at queue depth 2, sent one at a time), so it plugs, and the next
   * write fills it: every row of the second half is merged.  Then at
   * queue depth 1, with a plug window of 1 ms: the rows' first pieces
   * plug while the score lasts, and each expires (nothing else is in
   * flight); at most 4 do, then nothing waits. */
  const struct raid_fault slow = { .ops = RAID_FAULT_WRITE, .delay_us = 500 };

  sarray_new(&s, RAID_LEVEL_5, 4, true);
  raid5_set_plug_window(s.a, PLUG_FOREVER);
  members_fault(&s, &slow);
  stream_writes_by(&s, 0, len, count / 2, 2, data, 1, true);
  raid_array_stats_reset(s.a);
  stream_writes_by(&s, count / 2 * len, len, count / 2, 2, data + count / 2 * len, 1, true);
  snap_merges(&s, "after a pause", 0);
  ck_assert_msg(s.st.rmw_writes + s.st.rcw_writes == 0 && s.st.full_stripe_writes == 32,
                "after a pause: %" PRIu64 " of 32 row pieces were full-stripe writes, %"
                PRIu64 " RCW, %" PRIu64 " RMW", s.st.full_stripe_writes, s.st.rcw_writes,
                s.st.rmw_writes);
  raid5_set_plug_window(s.a, 1000);
  raid_array_stats_reset(s.a);
  stream_writes_by(&s, count * len, len, count / 2, 1, data, 1, true);
  snap_merges(&s, "queue depth 1 after a deep stream", 0);
  ck_assert_msg(s.st.plugs_expired >= 1 && s.st.plugs_expired <= 4 &&
                s.st.plugged_writes == s.st.plugs_expired, "queue depth 1: %" PRIu64
                " plugs, %" PRIu64 " expired (1 to 4 expected, all of them)",
                s.st.plugged_writes, s.st.plugs_expired);
  members_fault(&s, NULL);
  verify(&s, data, count * len, false);
  sarray_free(&s);
  test_free(data);
}
END_TEST

/* Column pieces.  A stream of writes a quarter chunk long at queue depth
 * 16 (more than a row in flight), sent one at a time: each write is one
 * data index over a quarter of the columns, and the other indices over
 * the same columns come 4 and 8 writes later, each after the first was
 * granted its lock.  The first index's piece waits (plugged),
 * gathers the two as they queue behind it (pokes that do not unplug it),
 * and goes as one full stripe when the second arrives.  With the plug
 * window longer than the test, a plug that the pokes never ended would
 * hang it.  Only the first two rows, while the writes in flight grow to
 * a row's bytes, may be written piece by piece; in sync, and with member
 * 2 failed. */
START_TEST(test_raid5_gather)
{
  const size_t len = CHUNK / 4;
  const unsigned count = 12 * 24;                    /* 24 rows */
  const struct stream_case tiny = {
    .what = "1 KiB writes", .delay_us = 20000, .fail = -1,
    .len = KiB, .count = count, .qd = 16, .nstreams = 1, .trickle = true,
  };
  uint8_t *data = test_alloc(count * len);
  struct sarray s;
  struct rng g;
  unsigned pass;

  rng_seed(&g, test_seed_for(22));
  rng_fill(&g, data, count * len);
  for (pass = 0; pass < 2; pass++) {
    const struct stream_case c = {
      .what = "column pieces", .delay_us = 20000, .fail = pass ? 2 : -1,
      .len = len, .count = count, .qd = 16, .nstreams = 1, .trickle = true,
    };
    uint64_t merged;

    stream_case_run(&s, &c, data, pass);
    merged = s.st.full_stripe_writes + s.st.degraded_writes;
    /* Each filled plug is one stripe of 3 pieces. */
    ck_assert_uint_ge(3 * s.st.plugs_filled, count - 24);
    ck_assert_msg(merged >= count - 24 && s.st.rmw_writes + s.st.rcw_writes <= 24,
                  "pass %u: %" PRIu64 " of %u column pieces were full-stripe or "
                  "degraded writes (at least %u expected), %" PRIu64 " RCW, %" PRIu64
                  " RMW", pass, merged, count, count - 24, s.st.rcw_writes,
                  s.st.rmw_writes);
    stream_case_end(&s, &c, data);
  }

  /* Writes of 1 KiB: a stripe's other pieces are 64 and 128 writes ahead,
   * deeper than any client runs (and than this one, at 16), so nothing
   * waits for them; a plug here would never fill, and hang the test. */
  stream_case_run(&s, &tiny, data, 0);
  ck_assert_uint_eq(s.st.full_stripe_writes, 0);
  stream_case_end(&s, &tiny, data);
  test_free(data);
}
END_TEST

/* A plug holds nobody up: a write that it cannot take over (the same
 * bytes as its own) makes it go at once, plug window or not.  A stream
 * of 2/3-row writes: the second write's last piece starts row 1 and
 * plugs for the rest of the row, which never comes; a write of part of
 * the same bytes, from another queue, pokes it, and both complete.  With
 * nobody to poke it, the plug goes when its window runs out.  The
 * statistics count each plug and how it ended. */
START_TEST(test_raid5_plug_poke)
{
  const size_t row = 3 * CHUNK, len = 2 * CHUNK;
  struct raid_queue *q, *q2;
  struct rdone st = { 0, 0 }, st2 = { 0, 0 };
  uint8_t *data = test_alloc(2 * len + 4 * KiB), *buf = test_alloc(2 * row);
  struct sarray s;
  struct rng g;
  unsigned i;

  rng_seed(&g, test_seed_for(23));
  rng_fill(&g, data, 2 * len + 4 * KiB);
  sarray_new(&s, RAID_LEVEL_5, 4, false);
  raid5_set_plug_window(s.a, PLUG_FOREVER);
  ck_assert_int_eq(raid_queue_new(0, &q), 0);
  ck_assert_int_eq(raid_queue_new(0, &q2), 0);
  ck_assert_int_eq(raid_aio_write(q, s.a, data, len, 0, 0, rdone_cb, &st), 0);
  ck_assert_int_eq(raid_aio_write(q, s.a, data + len, len, len, 0, rdone_cb, &st), 0);
  for (i = 0; i < 200 && st.done < 1; i++)
    ck_assert_int_ge(raid_queue_run(q, 0), 0);
  for (i = 0; i < 200; i++)
    ck_assert_int_ge(raid_queue_run(q, 0), 0);
  ck_assert_msg(st.done == 1, "%u of 2 writes done: the second should wait, "
                "plugged, for the rest of row 1", st.done);
  /* 4 KiB of row 1's first chunk, which the plugged piece writes too. */
  ck_assert_int_eq(raid_aio_write(q2, s.a, data + 2 * len, 4 * KiB, row + 8 * KiB, 0,
                                  rdone_cb, &st2), 0);
  for (i = 0; i < 2000 && (st.done < 2 || st2.done < 1); i++) {
    ck_assert_int_ge(raid_queue_run(q2, 0), 0);
    ck_assert_int_ge(raid_queue_run(q, 0), 0);
  }
  ck_assert_msg(st.done == 2 && st2.done == 1, "the plug did not go when a write "
                "it cannot take queued behind it (%u of 2, %u of 1 done)", st.done,
                st2.done);
  ck_assert_int_eq(st.err, 0);
  ck_assert_int_eq(st2.err, 0);
  snap(&s);
  ck_assert_msg(s.st.plugged_writes == 1 && s.st.plugs_filled == 0 &&
                s.st.plugs_expired == 0, "one plug, poked, expected: %" PRIu64 " plugged, %"
                PRIu64 " filled, %" PRIu64 " expired", s.st.plugged_writes,
                s.st.plugs_filled, s.st.plugs_expired);
  /* The later write wins: it queued behind the plugged one. */
  memcpy(data + len + (row + 8 * KiB - len), data + 2 * len, 4 * KiB);
  ck_assert_int_eq(raid_pread(s.a, buf, 2 * len, 0), 0);
  ck_assert_msg(memcmp(buf, data, 2 * len) == 0, "rows 0 and 1 differ");
  sarray_free(&s);

  /* Nobody pokes the same plug with a plug window of 1 ms: its time runs
   * out, and it goes alone. */
  sarray_new(&s, RAID_LEVEL_5, 4, false);
  raid5_set_plug_window(s.a, 1000);
  st.done = 0;
  ck_assert_int_eq(raid_aio_write(q, s.a, data, len, 0, 0, rdone_cb, &st), 0);
  ck_assert_int_eq(raid_aio_write(q, s.a, data + len, len, len, 0, rdone_cb, &st), 0);
  while (st.done < 2)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
  ck_assert_int_eq(st.err, 0);
  snap(&s);
  ck_assert_msg(s.st.plugged_writes == 1 && s.st.plugs_filled == 0 &&
                s.st.plugs_expired == 1, "one plug, expired, expected: %" PRIu64
                " plugged, %" PRIu64 " filled, %" PRIu64 " expired", s.st.plugged_writes,
                s.st.plugs_filled, s.st.plugs_expired);
  raid_queue_free(q);
  raid_queue_free(q2);
  sarray_free(&s);
  test_free(data);
  test_free(buf);
}
END_TEST

/* Regression test for the first round's crash: merging took writes queued
 * by other threads' queues and submitted and completed them on the lead's
 * own.  Two queues, one write each on row 0: A writes chunks 0 and 1, B
 * chunk 2, and B's lock request lands behind A's before A's queue runs.
 * A then merges B into one full stripe (no reads), but B's data write is
 * submitted on B's queue and B's request completes there: run alone, A's
 * queue cannot finish A (it waits for B's part), and B completes only
 * when B's queue runs.  Stepped by hand on one thread, so the order of
 * events is fixed; the stress tests cover real threads. */
static void
count_done(void *opaque, int res)
{
  int *d = opaque;

  *d = res < 0 ? res : 1;
}

START_TEST(test_raid5_merge_owners)
{
  struct raid_queue *qa, *qb;
  struct sarray s;
  uint8_t *data = test_alloc(3 * CHUNK);
  struct rng g;
  int da = 0, db = 0, i;

  rng_seed(&g, test_seed_for(21));
  rng_fill(&g, data, 3 * CHUNK);
  sarray_new(&s, RAID_LEVEL_5, 4, false);
  ck_assert_int_eq(raid_queue_new(0, &qa), 0);
  ck_assert_int_eq(raid_queue_new(0, &qb), 0);
  ck_assert_int_eq(raid_aio_write(qa, s.a, data, 2 * CHUNK, 0, 0, count_done, &da), 0);
  ck_assert_int_eq(raid_aio_write(qb, s.a, data + 2 * CHUNK, CHUNK, 2 * CHUNK,
                                  RAID_REQ_FUA, count_done, &db), 0);
  /* A's queue alone: A merges B and writes its own part and the parity,
   * then waits for B's queue. */
  for (i = 0; i < 100; i++)
    ck_assert_int_ge(raid_queue_run(qa, 0), 0);
  ck_assert_int_eq(da, 0);
  ck_assert_int_eq(db, 0);
  ck_assert_uint_eq(raid_queue_in_flight(qb), 1);
  /* Both queues: both finish, B's on B's queue. */
  while (da == 0 || db == 0) {
    ck_assert_int_ge(raid_queue_run(qa, 0), 0);
    ck_assert_int_ge(raid_queue_run(qb, 0), 0);
  }
  ck_assert_int_eq(da, 1);
  ck_assert_int_eq(db, 1);
  ck_assert_uint_eq(raid_queue_in_flight(qa), 0);
  ck_assert_uint_eq(raid_queue_in_flight(qb), 0);
  snap(&s);
  ck_assert_uint_eq(s.st.full_stripe_writes, 2);
  ck_assert_uint_eq(s.st.rmw_writes + s.st.rcw_writes, 0);
  ck_assert_uint_eq(SUM(&s, read_ops), 0);
  ck_assert_uint_eq(SUM(&s, write_ops), 4);
  raid_queue_free(qa);
  raid_queue_free(qb);
  verify(&s, data, 3 * CHUNK, false);
  sarray_free(&s);
  test_free(data);
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
  s = suite_create("stats");
  tc = test_tcase("histogram");
  tcase_add_test(tc, test_hist_buckets);
  tcase_add_test(tc, test_hist_percentiles);
  suite_add_tcase(s, tc);
  tc = test_tcase("counters");
  tcase_add_test(tc, test_raid0);
  tcase_add_test(tc, test_raid1);
  tcase_add_test(tc, test_write_mostly);
  tcase_add_test(tc, test_raid5);
  tcase_add_test(tc, test_raid5_merge);
  tcase_add_test(tc, test_raid5_merge_owners);
  tcase_add_test(tc, test_raid5_gather);
  tcase_add_test(tc, test_raid5_plug_poke);
  suite_add_tcase(s, tc);
  tc = test_tcase("latency");
  tcase_add_test(tc, test_latency);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
