/* I/O statistics: what an array is asked to do, what its members do for
 * it, and how long both take.
 *
 * Counting.  Every member I/O passes member_submit() and
 * member_complete(), which take the time and count the op into the
 * member's struct stats_io; every user request passes submit() and
 * req_finish() in request.c, which count it into the array's.  Member I/O
 * issued for requests is also summed per array (req_mio_submit()), so
 * that write amplification is not skewed by rebuilds and scrubs, and
 * RAID 5 counts how each row piece kept its parity (raid5.c).  All of it
 * is relaxed atomics: queue threads share members and arrays, and a
 * reader only needs each counter to be right, not a snapshot across
 * counters.  The hot path costs two clock_gettime() calls (vDSO) and
 * three or four uncontended atomic additions per I/O.
 *
 * Latency.  A histogram with 8 buckets per power of two of nanoseconds
 * (see internal.h): bucket bounds are within 12.5%, and a percentile is
 * reported as the upper bound of its bucket, capped by the exact maximum,
 * so it never understates and a constant latency is reported exactly.
 * 304 buckets of 8 bytes make a histogram 2.4 KiB; each member and array
 * has two (reads, writes).
 */
#include <config.h>

#include <errno.h>
#include <string.h>

#include "internal.h"

_Static_assert(REQ_READ == (int)MOP_READ && REQ_WRITE == (int)MOP_WRITE &&
               REQ_FLUSH == (int)MOP_FLUSH && REQ_DISCARD == (int)MOP_DISCARD &&
               REQ_ZERO == (int)MOP_ZERO && STATS_NOPS == REQ_ZERO + 1,
               "stats_io counts both enum mop and enum req_op by index");

/* ---- histograms ------------------------------------------------------------ */

#define SUB (1u << STATS_SUB_BITS)

unsigned
stats_bucket(uint64_t ns)
{
  unsigned e;

  if (ns < SUB)
    return ns;
  if (ns >> STATS_MAX_SHIFT)
    return STATS_BUCKETS - 1;
  e = 63 - __builtin_clzll(ns);                /* 2^e <= ns < 2^(e+1), e >= 3 */
  return SUB + ((e - STATS_SUB_BITS) << STATS_SUB_BITS) +
    (unsigned)((ns >> (e - STATS_SUB_BITS)) - SUB);
}

uint64_t
stats_bucket_lo(unsigned b)
{
  unsigned e;

  if (b < SUB)
    return b;
  e = (b - SUB) / SUB + STATS_SUB_BITS;
  return (uint64_t)(SUB + (b - SUB) % SUB) << (e - STATS_SUB_BITS);
}

uint64_t
stats_bucket_hi(unsigned b)
{
  return b + 1 < STATS_BUCKETS ? stats_bucket_lo(b + 1) - 1 : UINT64_MAX;
}

void
stats_hist_add(struct stats_hist *h, uint64_t ns)
{
  uint64_t max = atomic_load_explicit(&h->max, memory_order_relaxed);

  atomic_fetch_add_explicit(&h->n[stats_bucket(ns)], 1, memory_order_relaxed);
  while (ns > max &&
         !atomic_compare_exchange_weak_explicit(&h->max, &max, ns, memory_order_relaxed,
                                                memory_order_relaxed))
    ;
}

/* Percentiles of the buckets in one pass: OUT[i] for fraction P[i]
 * (ascending). */
static void
hist_percentiles(struct stats_hist *h, const double *p, unsigned np, uint64_t *out)
{
  uint64_t n[STATS_BUCKETS], total = 0, sum = 0, max;
  unsigned b, i = 0;

  max = atomic_load_explicit(&h->max, memory_order_relaxed);
  for (b = 0; b < STATS_BUCKETS; b++)
    total += n[b] = atomic_load_explicit(&h->n[b], memory_order_relaxed);
  for (b = 0; b < STATS_BUCKETS && i < np; b++) {
    sum += n[b];
    /* The value of rank ceil(p * total) lies in this bucket. */
    while (i < np && total > 0 && sum > 0 && (double)sum >= p[i] * (double)total) {
      out[i++] = MIN(stats_bucket_hi(b), max);
    }
  }
  for (; i < np; i++)
    out[i] = total ? max : 0;
}

uint64_t
stats_hist_percentile(struct stats_hist *h, double p)
{
  uint64_t v;

  hist_percentiles(h, &p, 1, &v);
  return v;
}

static void
hist_reset(struct stats_hist *h)
{
  unsigned b;

  for (b = 0; b < STATS_BUCKETS; b++)
    atomic_store_explicit(&h->n[b], 0, memory_order_relaxed);
  atomic_store_explicit(&h->max, 0, memory_order_relaxed);
}

/* ---- counters ------------------------------------------------------------- */

void
stats_io_done(struct stats_io *s, unsigned op, uint64_t bytes, uint64_t t0, int res)
{
  stats_add(&s->ops[op], 1);
  if (bytes)
    stats_add(&s->bytes[op], bytes);
  if (res < 0)
    stats_add(&s->errors, 1);
  if (op <= 1)                  /* read, write */
    stats_hist_add(&s->lat[op], mono_ns() - t0);
}

void
stats_io_reset(struct stats_io *s)
{
  unsigned i;

  for (i = 0; i < STATS_NOPS; i++) {
    atomic_store_explicit(&s->ops[i], 0, memory_order_relaxed);
    atomic_store_explicit(&s->bytes[i], 0, memory_order_relaxed);
  }
  atomic_store_explicit(&s->errors, 0, memory_order_relaxed);
  hist_reset(&s->lat[0]);
  hist_reset(&s->lat[1]);
}

void
stats_io_read(struct stats_io *s, struct raid_io_stats *out)
{
  static const double pct[RAID_STATS_NPCT] = { 0.50, 0.90, 0.99, 0.999, 1.0 };
#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

  memset(out, 0, sizeof *out);
  out->read_ops = LOAD(s->ops[MOP_READ]);
  out->read_bytes = LOAD(s->bytes[MOP_READ]);
  out->write_ops = LOAD(s->ops[MOP_WRITE]);
  out->write_bytes = LOAD(s->bytes[MOP_WRITE]);
  out->flush_ops = LOAD(s->ops[MOP_FLUSH]);
  out->discard_ops = LOAD(s->ops[MOP_DISCARD]);
  out->discard_bytes = LOAD(s->bytes[MOP_DISCARD]);
  out->zero_ops = LOAD(s->ops[MOP_ZERO]);
  out->zero_bytes = LOAD(s->bytes[MOP_ZERO]);
  out->errors = LOAD(s->errors);
#undef LOAD
  hist_percentiles(&s->lat[0], pct, RAID_STATS_NPCT, out->read_lat_ns);
  hist_percentiles(&s->lat[1], pct, RAID_STATS_NPCT, out->write_lat_ns);
}
