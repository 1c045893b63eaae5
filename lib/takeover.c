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
 * A RAID 0 of N becomes a RAID 5 of N + 1 in the parity-last layout, its
 * parity role missing (md's raid45_takeover_raid0()): data chunk I of a
 * row is on member I in both, so the array is a degraded RAID 5 at once,
 * and a member added takes the parity role and is rebuilt.  Back, a RAID 5
 * in the parity-last layout becomes a RAID 0 of one member fewer (md's
 * raid0_takeover_raid45()); its parity member, if it has one, leaves the
 * array first, as mdadm fails and removes it (impose_level()), and is
 * closed with its superblock as it was (stale: the others say it faulty).
 * A RAID 5 in another layout is reshaped to parity-last first, as mdadm
 * does, and becomes the RAID 0 when that reshape ends (grow.c's
 * grow_to_stripe(), sync/reshape.c).
 *
 * In the order that loses nothing:
 *   1. decide: every refusal before anything is written;
 *   2. the sync engine is held, and every request is parked at the core's
 *      window (request.c) after those in flight have finished, so no
 *      request is inside a personality;
 *   3. the roles change in number (roles.c), the array takes its new
 *      personality in memory (array.c), then the superblocks say the new
 *      level, layout, chunk and number of roles (events bumped); if they
 *      cannot, the old roles and personality come back.  A crash in
 *      between assembles either level over the same bytes;
 *   4. the parked requests go on, to the new personality; a parity member
 *      that left is closed once nothing can refer to it.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "top.h"
#include "md/meta.h"
#include "sync/engine.h"

#define TAKEOVER_CHUNK (64u << 10)     /* md's chunk for a RAID 1 taken over */

/* What a takeover makes of the array. */
struct takeover {
  int level, layout;
  uint32_t chunk;
  unsigned disks;               /* roles after */
};

/* A RAID 1 of 2 to RAID 5 and back: 0 and T, or set_error(). */
static int
decide_mirror(struct raid_array *a, struct takeover *t)
{
  uint32_t chunk;

  if (a->raid_disks != 2)
    return set_error(ENOTSUP, "array %s: a RAID %d of %u members cannot become a RAID %d: "
                     "md takes over only one of 2 (%s)", a->name, (int)a->level,
                     (unsigned)a->raid_disks, t->level, a->level == RAID_LEVEL_1
                     ? "fail and remove mirrors, then raidctl grow --raid-devices 2"
                     : "raidd cannot restripe a RAID 5 over fewer members yet");
  t->disks = 2;
  if (t->level == RAID_LEVEL_1)
    return 0;
  /* md's raid5_takeover_raid1(): the largest chunk up to 64 KiB that
   * divides the array (a member's size, here). */
  for (chunk = TAKEOVER_CHUNK; chunk >= RAID_CHUNK_MIN && a->member_size % chunk; chunk /= 2)
    ;
  if (chunk < RAID_CHUNK_MIN)
    return set_error(EINVAL, "array %s: its size (%" PRIu64 " bytes of each member) is "
                     "not a multiple of %u bytes, the least chunk of a RAID 5",
                     a->name, (uint64_t)a->member_size, RAID_CHUNK_MIN);
  t->layout = RAID_LAYOUT_LEFT_SYMMETRIC;
  t->chunk = chunk;
  return 0;
}

/* What a RAID 5 must be to become a RAID 0, in any layout (another one is
 * reshaped first, grow_to_stripe()): 0, or set_error(). */
static int
stripe_refusal(struct raid_array *a)
{
  unsigned i, n = a->raid_disks, spares;
  struct raid_bitmap_info bi;

  /* A reshape first keeps the bitmap; a RAID 0 has none (md neither). */
  raid_array_bitmap(a, &bi);
  if (bi.present)
    return set_error(ENOTSUP, "array %s: a RAID 0 keeps no write-intent bitmap: remove "
                     "it before changing the level (raidctl set %s bitmap=none)",
                     a->name, a->name);
  if (n < 3)
    return set_error(ENOTSUP, "array %s: a RAID 5 of %u would be a RAID 0 of %u, and a "
                     "RAID 0 needs 2 members at least (raidctl grow %s --level 1 makes it a "
                     "mirror)", a->name, n, n - 1, a->name);
  for (i = 0; i + 1 < n; i++)
    if (atomic_load(&a->state[i]) != RAID_MEMBER_IN_SYNC)
      return set_error(EAGAIN, "array %s: role %u holds data and is not in sync: "
                       "rebuild it before changing the level (a RAID 0 keeps only the "
                       "data members, roles 0 to %u)", a->name, i, n - 2);
  pthread_mutex_lock(&a->conf_lock);
  spares = a->nspares;
  pthread_mutex_unlock(&a->conf_lock);
  if (spares)
    return set_error(EBUSY, "array %s has %u hot spare%s, which a RAID 0 cannot keep: "
                     "remove %s first (raidctl remove)", a->name, spares,
                     spares == 1 ? "" : "s", spares == 1 ? "it" : "them");
  return 0;
}

/* A RAID 0 to RAID 5 and back: 0 and T, or set_error(). */
static int
decide_stripe(struct raid_array *a, struct takeover *t)
{
  unsigned n = a->raid_disks;
  int r;

  t->chunk = a->chunk_size;
  if (t->level == RAID_LEVEL_5) {
    if (n + 1 > RAID_MAX_MEMBERS)
      return set_error(ENOTSUP, "array %s: a RAID 0 of %u members would be a RAID 5 "
                       "of %u, more than raidd's %u", a->name, n, n + 1, RAID_MAX_MEMBERS);
    t->layout = RAID_LAYOUT_PARITY_LAST;
    t->disks = n + 1;
    return 0;
  }
  if (a->layout != RAID_LAYOUT_PARITY_LAST)
    return set_error(ENOTSUP, "array %s: md takes over only a RAID 5 in the parity-last "
                     "layout as a RAID 0 (its parity all on the last member): change the "
                     "layout first (raidctl grow %s --layout parity-last)", a->name, a->name);
  if ((r = stripe_refusal(a)) < 0)
    return r;
  t->layout = 0;
  t->disks = n - 1;
  return 0;
}

/* Step 1: 0 and T, or set_error(). */
static int
takeover_decide(struct raid_array *a, struct takeover *t)
{
  struct raid_bitmap_info bi;
  bool to_zero = a->level == RAID_LEVEL_5 && t->level == RAID_LEVEL_0;
  int r;

  if ((a->level == RAID_LEVEL_1 && t->level == RAID_LEVEL_5) ||
      (a->level == RAID_LEVEL_5 && t->level == RAID_LEVEL_1))
    r = decide_mirror(a, t);
  else if ((a->level == RAID_LEVEL_0 && t->level == RAID_LEVEL_5) || to_zero)
    r = decide_stripe(a, t);
  else
    r = set_error(ENOTSUP, "array %s: raidd can turn a RAID 1 of 2 into a RAID 5 and "
                  "back, and a RAID 0 into a RAID 5 and back, not a RAID %d into a "
                  "RAID %d (yet)", a->name, (int)a->level, t->level);
  if (r < 0)
    return r;
  raid_array_bitmap(a, &bi);
  if (bi.present)
    return set_error(ENOTSUP, "array %s: remove the write-intent bitmap before changing "
                     "the level (raidctl set %s bitmap=none), and put it back after",
                     a->name, a->name);
  /* A RAID 5 to RAID 0 loses its parity role anyway (checked above). */
  if (!to_zero && raid_array_degraded(a))
    return set_error(EAGAIN, "array %s is degraded: rebuild it before changing the "
                     "level", a->name);
  /* To a RAID 0 the parity a resync is due for leaves (and a RAID 5
   * missing its parity role cannot resync anyway). */
  if (!to_zero && raid_array_needs_resync(a))
    return set_error(EAGAIN, "array %s has a resync due: let it finish first (raidctl "
                     "wait %s)", a->name, a->name);
  return 0;
}

int
takeover_held(struct raid_array *a, int level, bool write)
{
  const struct personality *old = a->pers;
  const struct raid_geo *cur;
  struct raid_geo *g, back;
  struct raid_member *drop = NULL;
  struct takeover t = { .level = level };
  int old_level = a->level, old_layout = a->layout, drop_st = 0, r;
  uint32_t old_chunk = a->chunk_size;
  unsigned i, old_disks = a->raid_disks;

  if ((r = takeover_decide(a, &t)) < 0)
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
    return r;
  }
  array_window_open(a, 0, 0);
  array_window_park_all(a);
  /* Step 3.  A hot spare added since step 1 is refused here, where no
   * other can come: a RAID 0 keeps none. */
  pthread_mutex_lock(&a->conf_lock);
  if (level == RAID_LEVEL_0 && a->nspares)
    r = set_error(EBUSY, "array %s: a hot spare was added meanwhile, which a RAID 0 "
                  "cannot keep: remove it first (raidctl remove)", a->name);
  else
    roles_level_locked(a, old_disks, t.disks, &drop, &drop_st);
  pthread_mutex_unlock(&a->conf_lock);
  if (r < 0) {
    array_window_close(a, cur);
    pthread_mutex_lock(&a->conf_lock);
    a->geo_old = a->geo_new = NULL;
    pthread_mutex_unlock(&a->conf_lock);
    return r;
  }
  r = array_set_personality(a, level, t.layout, t.chunk, g);
  if (r == 0 && write)
    r = meta_set_level(a, level, t.layout, t.chunk >> SECTOR_SHIFT, t.disks);
  if (r < 0) {
    pthread_mutex_lock(&a->conf_lock);
    roles_level_back_locked(a, t.disks, old_disks, drop, drop_st);
    pthread_mutex_unlock(&a->conf_lock);
    drop = NULL;
    if (array_set_personality(a, old_level, old_layout, old_chunk, &back) < 0)
      raid_log(RAID_LOG_ERR, "%s %s: back to RAID %d: %s", old->name, a->name, old_level,
               raid_get_error());
  }
  /* Step 4. */
  array_window_close(a, r == 0 ? g : cur);
  pthread_mutex_lock(&a->conf_lock);
  a->geo_old = a->geo_new = NULL;
  pthread_mutex_unlock(&a->conf_lock);
  if (drop)
    member_release(a, drop);
  if (r == 0 && write)
    raid_log(RAID_LOG_INFO, "%s %s: now a RAID %d of %u members (was RAID %d of %u)%s",
             a->pers->name, a->name, level, t.disks, old_level, old_disks,
             t.layout == RAID_LAYOUT_PARITY_LAST ? ", parity-last, its parity role "
             "missing (a hot spare or raidctl add takes it)" : level == RAID_LEVEL_5
             ? ", left-symmetric" : drop ? "; its parity member left the array" : "");
  return r;
}

EXPORT int
raid_array_grow_level(struct raid_array *a, int level)
{
  int r;

  if (a->meta == NULL)
    return set_error(EINVAL, "array %s has no md metadata: its level is fixed", a->name);
  if (raid_array_is_failed(a))
    return set_error(EIO, "array %s has failed: it cannot change its level", a->name);
  if (atomic_load(&a->reshape_pos) != UINT64_MAX)
    return set_error(EBUSY, "array %s: a reshape is under way; wait for it (raidctl "
                     "wait %s)", a->name, a->name);
  if (level == a->level)
    return 0;
  if (level == RAID_LEVEL_0 && a->level == RAID_LEVEL_5 &&
      a->layout != RAID_LAYOUT_PARITY_LAST)
    return (r = stripe_refusal(a)) < 0 ? r : grow_to_stripe(a);
  if ((r = sync_hold(a)) < 0)
    return r;
  r = takeover_held(a, level, true);
  sync_release(a);
  if (r == 0 && raid_array_degraded(a))
    array_event(a, (struct raid_event){ .type = RAID_EVENT_DEGRADED, .role = -1 });
  return r;
}
