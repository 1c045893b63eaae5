/* Read balancing for mirrors (RAID 1 and RAID 10 copies).
 *
 * The policy follows md's read_balance() for non-rotational members:
 *  1. A copy whose last read ended exactly where this one starts keeps the
 *     stream (sequential readers stay on one member, so its read-ahead and
 *     the device's own prefetch work for it), unless it is already much
 *     busier than the least busy copy.
 *  2. Otherwise the copy with the fewest requests in flight wins: on SSDs
 *     that spreads random reads evenly and lets N mirrors serve N times the
 *     IOPS of one.
 *  3. Ties go to the copy whose last read ended nearest to this one.
 * Copies on write-mostly members take part only when no other copy can
 * serve the read (md skips them in the same way), so a slow disk that
 * mirrors a fast one gets writes only.
 * The counters are relaxed atomics shared by every thread: a slightly
 * stale count only makes a slightly worse choice, never a wrong read.
 * Each candidate's member is bound once (slot_member_at()) and the read
 * goes to the member bound: candidate M fields are filled in here.
 */
#include <config.h>

#include "internal.h"
#include "raid/levels.h"

/* How much busier than the least busy copy a sequential stream's copy may
 * be before the stream is moved. */
#define SEQ_MAX_EXTRA 8

static int
balance(struct raid_array *a, const struct read_candidate *c, unsigned n,
        size_t len, bool write_mostly)
{
  int best = -1, seq = -1, min_busy = 0;
  uint64_t best_dist = UINT64_MAX;
  unsigned i;

  for (i = 0; i < n; i++) {
    struct raid_member *m = c[i].m;
    int busy;
    uint64_t pos, dist;

    if (m == NULL)
      continue;
    if (m->write_mostly && !write_mostly)
      continue;
    /* Where a resync has not been yet, copies may disagree: read the
     * first one, as md does, so that every read gives the same answer. */
    if (c[i].offset + len > atomic_load_explicit(&a->resync_front, memory_order_relaxed)) {
      best = i;
      seq = -1;
      break;
    }
    busy = atomic_load_explicit(&m->in_flight, memory_order_relaxed);
    pos = atomic_load_explicit(&m->next_pos, memory_order_relaxed);
    dist = pos > c[i].offset ? pos - c[i].offset : c[i].offset - pos;
    if (dist == 0 && seq < 0)
      seq = i;
    if (best < 0 || busy < min_busy || (busy == min_busy && dist < best_dist)) {
      best = i;
      min_busy = busy;
      best_dist = dist;
    }
  }
  if (seq >= 0) {
    struct raid_member *m = c[seq].m;
    if (atomic_load_explicit(&m->in_flight, memory_order_relaxed) <= min_busy + SEQ_MAX_EXTRA)
      best = seq;
  }
  if (best >= 0)
    atomic_store_explicit(&c[best].m->next_pos, c[best].offset + len,
                          memory_order_relaxed);
  return best;
}

int
read_balance(struct raid_array *a, struct read_candidate *c, unsigned n,
             size_t len)
{
  unsigned i;
  int best;

  for (i = 0; i < n; i++)
    c[i].m = slot_member_at(a, c[i].slot, c[i].offset, len);
  best = balance(a, c, n, len, false);
  return best >= 0 ? best : balance(a, c, n, len, true);
}
