/* mdadm --grow --level: md's takeover (level_store()), the array's level
 * changed where the members' bytes already are what the new level would
 * have written, so nothing moves.
 *
 * A RAID 1 of 2 becomes a RAID 5 of 2 and back (md's raid5_takeover_raid1()
 * and raid1_takeover()): with one data chunk a row, a RAID 5's parity is a
 * copy of its data, at the same place on the other member, which is what a
 * mirror holds.  The RAID 5 gets the left-symmetric layout and the largest
 * chunk up to 64 KiB that divides the member size, as md chooses; more
 * members come after by a restripe (raid_array_grow_shape()), which is how
 * mdadm turns a mirror into a RAID 5 when a third disk arrives.
 *
 * In the order that loses nothing:
 *   1. decide: every refusal before anything is written;
 *   2. the sync engine is held, and every request is parked at the core's
 *      window (request.c) after those in flight have finished, so no
 *      request is inside a personality;
 *   3. the array takes its new personality in memory (array.c), then the
 *      superblocks say the new level (events bumped); if they cannot, the
 *      old personality comes back.  A crash in between assembles either
 *      level over the same bytes;
 *   4. the parked requests go on, to the new personality.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "md/meta.h"
#include "sync/engine.h"

#define TAKEOVER_CHUNK (64u << 10)     /* md's chunk for a RAID 1 taken over */

/* Step 1, what needs the level pair: 0 and the new shape, or set_error(). */
static int
takeover_decide(struct raid_array *a, int level, int *layoutp, uint32_t *chunkp)
{
  struct raid_bitmap_info bi;
  uint32_t chunk;

  if (!((a->level == RAID_LEVEL_1 && level == RAID_LEVEL_5) ||
        (a->level == RAID_LEVEL_5 && level == RAID_LEVEL_1)))
    return set_error(ENOTSUP, "array %s: raidd can turn a RAID 1 of 2 into a RAID 5 and "
                     "back, not a RAID %d into a RAID %d (yet)", a->name, (int)a->level,
                     level);
  if (a->raid_disks != 2)
    return set_error(ENOTSUP, "array %s: a RAID %d of %u members cannot become a RAID %d: "
                     "md takes over only one of 2 (%s)", a->name, (int)a->level,
                     (unsigned)a->raid_disks, level, a->level == RAID_LEVEL_1
                     ? "fail and remove mirrors, then raidctl grow --raid-devices 2"
                     : "raidd cannot restripe a RAID 5 over fewer members yet");
  raid_array_bitmap(a, &bi);
  if (bi.present)
    return set_error(ENOTSUP, "array %s: remove the write-intent bitmap before changing "
                     "the level (raidctl set %s bitmap=none), and put it back after",
                     a->name, a->name);
  if (raid_array_degraded(a))
    return set_error(EAGAIN, "array %s is degraded: rebuild it before changing the "
                     "level", a->name);
  if (raid_array_needs_resync(a))
    return set_error(EAGAIN, "array %s has a resync due: let it finish first (raidctl "
                     "wait %s)", a->name, a->name);
  if (level == RAID_LEVEL_1) {
    *layoutp = 0;
    *chunkp = 0;
    return 0;
  }
  /* md's raid5_takeover_raid1(): the largest chunk up to 64 KiB that
   * divides the array (a member's size, here). */
  for (chunk = TAKEOVER_CHUNK; chunk >= RAID_CHUNK_MIN && a->member_size % chunk; chunk /= 2)
    ;
  if (chunk < RAID_CHUNK_MIN)
    return set_error(EINVAL, "array %s: its size (%" PRIu64 " bytes of each member) is "
                     "not a multiple of %u bytes, the least chunk of a RAID 5",
                     a->name, (uint64_t)a->member_size, RAID_CHUNK_MIN);
  *layoutp = RAID_LAYOUT_LEFT_SYMMETRIC;
  *chunkp = chunk;
  return 0;
}

EXPORT int
raid_array_grow_level(struct raid_array *a, int level)
{
  const struct personality *old = a->pers;
  const struct raid_geo *cur;
  struct raid_geo *g, back;
  int old_level = a->level, old_layout = a->layout, layout = 0, r;
  uint32_t old_chunk = a->chunk_size, chunk = 0;
  unsigned i;

  if (a->meta == NULL)
    return set_error(EINVAL, "array %s has no md metadata: its level is fixed", a->name);
  if (raid_array_is_failed(a))
    return set_error(EIO, "array %s has failed: it cannot change its level", a->name);
  if (atomic_load(&a->reshape_pos) != UINT64_MAX)
    return set_error(EBUSY, "array %s: a reshape is under way; wait for it (raidctl "
                     "wait %s)", a->name, a->name);
  if (level == a->level)
    return 0;
  if ((r = takeover_decide(a, level, &layout, &chunk)) < 0)
    return r;
  if ((r = sync_hold(a)) < 0)
    return r;
  pthread_mutex_lock(&a->conf_lock);
  for (i = 0; i < a->raid_disks && r == 0; i++)
    if (atomic_load(&a->repl[i]))
      r = set_error(EBUSY, "array %s: member %s is being replaced in role %u; wait "
                    "for it to end", a->name, atomic_load(&a->repl[i])->name, i);
  cur = atomic_load(&a->geo_now);
  g = cur == &a->geo[0] ? &a->geo[1] : &a->geo[0];
  /* Step 2: the window, empty (every request counted, in the shape it
   * has), then parking everything until those counted have finished. */
  a->geo_old = a->geo_new = cur;
  pthread_mutex_unlock(&a->conf_lock);
  if (r < 0) {
    a->geo_old = a->geo_new = NULL;
    sync_release(a);
    return r;
  }
  array_window_open(a, 0, 0);
  array_window_park_all(a);
  /* Step 3. */
  r = array_set_personality(a, level, layout, chunk, g);
  if (r == 0 && (r = meta_set_level(a, level, layout, chunk >> SECTOR_SHIFT)) < 0 &&
      array_set_personality(a, old_level, old_layout, old_chunk, &back) < 0)
    raid_log(RAID_LOG_ERR, "%s %s: back to RAID %d: %s", old->name, a->name, old_level,
             raid_get_error());
  /* Step 4. */
  array_window_close(a, r == 0 ? g : cur);
  pthread_mutex_lock(&a->conf_lock);
  a->geo_old = a->geo_new = NULL;
  pthread_mutex_unlock(&a->conf_lock);
  sync_release(a);
  if (r == 0)
    raid_log(RAID_LOG_INFO, "%s %s: now a RAID %d of %u members (was RAID %d)%s",
             a->pers->name, a->name, level, (unsigned)a->raid_disks, old_level,
             level == RAID_LEVEL_5 ? ", left-symmetric" : "");
  return r;
}
