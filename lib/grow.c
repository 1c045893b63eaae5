/* An array that grows: mdadm --grow --size (md's update_size()).
 *
 * The members grew (bigger disks swapped in one by one, a file grown with
 * truncate, an LV extended) and the array takes the room; or the user
 * asks for a smaller size.  In the order that loses nothing:
 *   1. decide: every refusal before anything is written (the level, the
 *      metadata, a sync running, a member without room);
 *   2. the sync engine is held, so nothing starts while sizes change;
 *   3. a write-intent bitmap is taken off (its size is the array's), as
 *      mdadm does on kernels that cannot resize one;
 *   4. growing: the superblocks say the new size (and, unless assume-clean,
 *      that the new region is due a resync from the old end) before any
 *      request may reach the new bytes, so a crash at any point assembles
 *      either the old array or the new one with its resync pending;
 *      shrinking: the new size is published first, requests in flight
 *      drain (array_quiesce()), then the superblocks say it;
 *   5. the bitmap goes back over the new size, every bit set (its writer
 *      clears them once the resync is done and the array idle);
 *   6. the engine looks again: the resync of the new region starts by
 *      itself where auto sync is on (raidd), else raid_array_resync().
 * The sizes are atomics (internal.h): the I/O path reads them without
 * locks, and a request sees the old size or the new one, each whole.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "top.h"
#include "md/meta.h"
#include "raid/levels.h"
#include "sync/engine.h"

/* What the members have room for now: the smallest room, and whose. */
struct room {
  struct raid_array *a;
  uint64_t min;
  const char *who;
  int err;
};

static void
look_member(struct raid_member *m, int role, int state, uint64_t rec, void *opaque)
{
  struct room *rm = opaque;
  uint64_t size, avail;
  int r;

  /* Failed and missing members take no superblock update, and a member
   * that leaves a role never comes back but through add (which checks). */
  if (m == NULL || rm->err || state == RAID_MEMBER_FAULTY || state == RAID_MEMBER_MISSING)
    return;
  if ((r = member_refresh_size(m, &size)) < 0) {
    rm->err = r;
    return;
  }
  /* Metadata 1.0: up to md's room below the superblock at the new end. */
  size = meta_grow_end(rm->a, size);
  avail = size > m->data_offset ? size - m->data_offset : 0;
  if (avail < rm->min) {
    rm->min = avail;
    rm->who = m->name;
  }
}

/* Steps 1 and 2: 0 with the engine held and *NEWP the member size to
 * take, or -errno with nothing held. */
static int
grow_decide(struct raid_array *a, uint64_t want, unsigned flags, uint64_t *newp)
{
  uint64_t unit = array_member_unit(a);
  struct room rm = { .a = a, .min = UINT64_MAX };
  char what[64];
  int r;

  if (flags & ~RAID_GROW_ASSUME_CLEAN)
    return set_error(EINVAL, "array %s: unknown grow flags 0x%x", a->name,
                     flags & ~RAID_GROW_ASSUME_CLEAN);
  if (a->meta == NULL)
    return set_error(EINVAL, "array %s has no md metadata: its size is fixed", a->name);
  if (a->level == RAID_LEVEL_0)
    return set_error(EINVAL, "array %s: a RAID 0 cannot change its size (md's raid0 "
                     "cannot either): add members with --raid-devices instead", a->name);
  if (a->metadata == RAID_METADATA_1_0 && a->bitmap)
    return set_error(ENOTSUP, "array %s: metadata 1.0 keeps the write-intent bitmap "
                     "just before the superblock at each member's end, and neither "
                     "can move with it (md refuses too): remove the bitmap first "
                     "(raidctl set %s bitmap=none)", a->name, a->name);
  if (raid_array_is_failed(a))
    return set_error(EIO, "array %s has failed: it cannot change its size", a->name);
  if (want % unit) {
    snprintf(what, sizeof what, a->level == RAID_LEVEL_1 ? "4 KiB" : "chunk (%" PRIu32 " bytes)",
             a->chunk_size);
    return set_error(EINVAL, "array %s: member size %" PRIu64 " bytes is not a multiple "
                     "of the %s", a->name, want, what);
  }
  if ((r = sync_hold(a)) < 0)
    return r;
  array_walk_members(a, look_member, &rm);
  r = rm.err;
  if (r == 0 && rm.who == NULL)
    r = set_error(EIO, "array %s has no member to grow", a->name);
  /* max never shrinks: a metadata 1.0 array made with every sector up to
   * its superblock has more than md's room leaves (meta_grow_end()). */
  if (r == 0 && want == 0)
    want = MAX(rm.min / unit * unit, (uint64_t)a->member_size);
  if (r == 0 && want > rm.min && want != a->member_size)
    r = set_error(ENOSPC, "array %s: member %s has room for %" PRIu64 " bytes of data "
                  "after its data offset, less than the %" PRIu64 " asked for",
                  a->name, rm.who, rm.min, want);
  if (r < 0) {
    sync_release(a);
    return r;
  }
  *newp = want;
  return 0;
}

/* md's array_size_store(): only what is shown changes, nothing is
 * written, and the bytes past it stay on the members. */
EXPORT int
raid_array_set_array_size(struct raid_array *a, uint64_t size)
{
  uint64_t full = a->size;

  if (size % RAID_SECTOR_SIZE)
    return set_error(EINVAL, "array %s: array size %" PRIu64 " bytes is not a multiple "
                     "of %u-byte sectors", a->name, size, RAID_SECTOR_SIZE);
  if (size > full)
    return set_error(EINVAL, "array %s: array size %" PRIu64 " bytes is more than the %"
                     PRIu64 " its members hold (raidctl grow --size grows those)", a->name,
                     size, full);
  a->size_shown = size;
  return 0;
}

static void
publish(struct raid_array *a, uint64_t member_size)
{
  a->member_size = member_size;
  a->size = geo_array_size(a->level, a->raid_disks, a->copies, a->chunk_size, member_size);
}

EXPORT int
raid_array_grow_size(struct raid_array *a, uint64_t want, unsigned flags)
{
  struct raid_bitmap_info bi;
  uint64_t old = a->member_size, old_size = a->size, new = 0;
  bool resync = !(flags & RAID_GROW_ASSUME_CLEAN);
  int r;

  if ((r = grow_decide(a, want, flags, &new)) < 0)
    return r;
  if (new == old) {
    sync_release(a);
    raid_log(RAID_LOG_INFO, "%s %s: size unchanged: %" PRIu64 " bytes of each member",
             a->pers->name, a->name, old);
    return 0;
  }
  raid_array_bitmap(a, &bi);
  if (bi.present && (r = raid_array_set_bitmap(a, RAID_BITMAP_NONE, 0)) < 0) {
    sync_release(a);
    return r;
  }
  if (new > old) {
    r = meta_set_size(a, old, new, resync);
    if (r == 0) {
      if (resync && a->level != RAID_LEVEL_0) {
        uint64_t front = atomic_load(&a->resync_front);

        atomic_store(&a->resync_front, MIN(front, old));
      }
      publish(a, new);
    }
  }
  else {
    publish(a, new);
    array_quiesce(a);
    if ((r = meta_set_size(a, old, new, false)) < 0)
      publish(a, old);
  }
  if (bi.present) {
    /* The bitmap's chunk if the room still holds it over the new size,
     * else mdadm's choice for the room. */
    int b = raid_array_set_bitmap(a, RAID_BITMAP_INTERNAL, bi.chunk_size);

    if (b < 0 && r == 0)
      b = raid_array_set_bitmap(a, RAID_BITMAP_INTERNAL, 0);
    if (b < 0) {
      char why[256];

      snprintf(why, sizeof why, "%s", raid_get_error());
      raid_log(RAID_LOG_ERR, "%s %s: the write-intent bitmap could not be put back: %s",
               a->pers->name, a->name, why);
      if (r == 0)
        r = set_error(-b, "array %s: the size changed but the write-intent bitmap "
                      "could not be put back: %s", a->name, why);
    }
  }
  sync_release(a);
  if (r == 0)
    raid_log(RAID_LOG_INFO, "%s %s: size %s from %" PRIu64 " to %" PRIu64 " bytes "
             "(%" PRIu64 " bytes of each member)%s", a->pers->name, a->name,
             new > old ? "grown" : "shrunk", old_size, (uint64_t)a->size, new,
             new > old && resync ? "; resyncing the new region" : "");
  return r;
}

/* ---- the number of mirrors (mdadm --grow --raid-devices of a RAID 1) ------------ */

/* ---- a RAID 5 or 10 over more members: the reshape (sync/reshape.c) ----------------- */

/* Bytes before member M's data that the new shape may take: from the end
 * of its superblock, bitmap and bad block log (metadata 1.1 and 1.2,
 * START bytes from the superblock: meta_room_offset_locked()) to its data
 * offset.  A bitmap that must grow with the reshape (a RAID 10's) grows
 * no larger than it is (meta_bitmap_refit()). */
static uint64_t
room_before(const struct raid_member *m, uint64_t start)
{
  start += m->super_offset << SECTOR_SHIFT;
  return m->data_offset > start ? m->data_offset - start : 0;
}

/* The gap: how much earlier on each member the new shape starts.  Over
 * more members, up to four of the larger chunk (one is the least: the
 * new first row would overwrite the old, unsaved, otherwise; more lets
 * the reshape checkpoint less often near the start).  Over as many
 * members (another layout or chunk), the new shape's write front stays
 * the gap behind the old shape's read front all the way, so the gap is
 * what may move between two checkpoints: half the room, as mdadm takes,
 * leaving the rest for the next reshape.  0 when there is not a chunk. */
static uint64_t
reshape_gap(uint64_t room, uint64_t cmax, bool more)
{
  uint64_t k = room / cmax;

  if (more)
    return MIN(k, 4) * cmax;
  return MAX(MIN(k, 1), k / 2) * cmax;
}

/* A RAID 5 in the parity-last layout whose parity role alone has no
 * member (a RAID 0 taken over, takeover.c), to more members in the same
 * layout: md reshapes it degraded (raid5_start_reshape() wants no more
 * than max_degraded missing), as it does mdadm's RAID 4 when mdadm
 * restripes a RAID 0; the first new member takes the empty role. */
static bool
parity_role_empty(struct raid_array *a, unsigned n, int layout)
{
  unsigned i, old = a->raid_disks;
  bool ok;

  if (a->level != RAID_LEVEL_5 || a->layout != RAID_LAYOUT_PARITY_LAST ||
      layout != RAID_LAYOUT_PARITY_LAST || n <= old)
    return false;
  pthread_mutex_lock(&a->conf_lock);
  ok = role_free_locked(a, old - 1);
  for (i = 0; i + 1 < old; i++)
    ok = ok && slot_ok(a, i);
  pthread_mutex_unlock(&a->conf_lock);
  return ok;
}

/* The reshape's two shapes (conf_lock held): the old one, served now,
 * and in the other geo[] slot the new one of N members, LAYOUT and CHUNK,
 * its data SHIFT bytes from the old one's on every member (md's
 * new_offset, modulo 2^64: negative forwards), its stripe locks apart. */
static void
reshape_shapes_locked(struct raid_array *a, unsigned n, int layout, uint32_t chunk,
                      uint64_t shift)
{
  const struct raid_geo *cur = atomic_load(&a->geo_now);
  struct raid_geo *g = cur == &a->geo[0] ? &a->geo[1] : &a->geo[0];

  *g = *cur;
  g->raid_disks = n;
  g->layout = layout;
  g->chunk_size = chunk;
  g->chunk_sectors = chunk >> SECTOR_SHIFT;
  g->shift = shift;
  g->space = cur->space ^ 1;
  a->geo_old = cur;
  a->geo_new = g;
}

/* A reshape to fewer members runs backwards (md's reshape_backwards, set
 * by update_raid_disks() whenever delta_disks < 0): a row of the new shape
 * holds less than one of the old, so the new shape's front on each member
 * runs ahead of the old one's, and the new shape must start GAP bytes
 * later than the old (new_offset > 0; md refuses a new offset below the
 * data offset for it).  The room comes after the data: what each member
 * holds past the array's member size, and where that is short of the gap,
 * the member size itself, cut by the rest (md's component_size, as mdadm
 * cuts it for a RAID 10); the new shape over what is left must still hold
 * what the array shows.  The gap: four units when there is room for them,
 * as forwards, else what there is but never less than two (the fronts
 * must be a unit and an old chunk apart at the bottom: sync/reshape.c's
 * next_lo()), cutting the member size for the rest. */
struct back_plan {
  uint64_t gap;                 /* bytes the new shape starts later */
  uint64_t member_size;         /* the member size from the reshape on */
  uint64_t holds;               /* what the new shape holds over it */
};

/* Bytes after member M's data that the new shape may take: from the end
 * of the array's member size to the end of its data area (data_size). */
static uint64_t
room_after(const struct raid_array *a, const struct raid_member *m)
{
  uint64_t area = m->data_size << SECTOR_SHIFT;

  return area > a->member_size ? area - a->member_size : 0;
}

/* The plan for N members of CHUNK bytes, from the members in the roles
 * now (conf_lock held). */
static void
back_plan_locked(struct raid_array *a, unsigned n, uint32_t chunk, struct back_plan *p)
{
  struct raid_geo g = { .raid_disks = n, .chunk_size = chunk };
  uint64_t after = UINT64_MAX, rows, chunks, need, cut;
  unsigned i;

  for (i = 0; i < a->raid_disks; i++) {
    struct raid_member *m = atomic_load(&a->members[i]);

    if (m)
      after = MIN(after, room_after(a, m));
  }
  geo_row_unit(a->level, a->copies, &g, &rows, &chunks);
  need = MAX(a->chunk_size, chunk) * rows;
  if (after == UINT64_MAX)
    after = 0;
  p->gap = after >= 2 * need ? MIN(after / need, 4) * need : 4 * need;
  cut = p->gap > after ? p->gap - after : 0;
  cut = DIV_ROUND_UP(cut, need) * need;
  p->member_size = a->member_size > cut ? (a->member_size - cut) / need * need : 0;
  p->holds = geo_data_size(a->level, a->copies, &g, p->member_size);
}

/* mdadm's order for fewer members: first the array shows no more than
 * the new shape will hold (--array-size, which can be undone), then the
 * reshape (which cannot).  RAID 5 and 10 (md's raid5 and raid10 reshape
 * backwards; a RAID 0 never loses members in md). */
static int
back_check(struct raid_array *a, unsigned n, uint32_t chunk)
{
  struct back_plan p;

  pthread_mutex_lock(&a->conf_lock);
  back_plan_locked(a, n, chunk, &p);
  pthread_mutex_unlock(&a->conf_lock);
  if (array_size_shown(a) > p.holds)
    return set_error(EINVAL, "array %s: a RAID %d over %u members holds %" PRIu64
                     " bytes, less than the %" PRIu64 " it shows%s: shrink what is on "
                     "it, then the array (raidctl grow %s --array-size %" PRIu64 "K, as "
                     "mdadm --grow --array-size), then reshape", a->name, a->level, n,
                     p.holds, array_size_shown(a), p.member_size < a->member_size
                       ? " (each member keeps room after its data for the data offset "
                         "to move later)" : "", a->name, p.holds >> 10);
  return 0;
}

/* The new shape's refusals that need no lock: 0, or set_error(). */
static int
shape_check(struct raid_array *a, unsigned n, int layout, uint32_t chunk)
{
  unsigned old = a->raid_disks;
  int r;

  if (n < old && (r = back_check(a, n, chunk)) < 0)
    return r;
  if (a->level == RAID_LEVEL_10 && layout != a->layout)
    return set_error(EINVAL, "array %s: a RAID 10 keeps its layout (near-%u) when "
                     "reshaped: md cannot change the number of copies either", a->name,
                     a->copies);
  if (a->level == RAID_LEVEL_5 && !RAID5_LAYOUT_VALID(layout))
    return set_error(EINVAL, "array %s: unknown RAID 5 layout %d (left-asymmetric 0, "
                     "right-asymmetric 1, left-symmetric 2, right-symmetric 3, "
                     "parity-first 4, parity-last 5)", a->name, layout);
  if (!CHUNK_SIZE_VALID(chunk))
    return set_error(EINVAL, "array %s: chunk size %" PRIu32 " bytes: it must be a "
                     "power of two from %u to %u bytes", a->name, chunk, RAID_CHUNK_MIN,
                     RAID_CHUNK_MAX);
  if (a->member_size % chunk)
    return set_error(EINVAL, "array %s: the new chunk size (%" PRIu32 " KiB) does not "
                     "evenly divide the member size (%" PRIu64 " KiB), as mdadm says: "
                     "shrink the array to a multiple of it first (raidctl grow --size)",
                     a->name, chunk >> 10, (uint64_t)a->member_size >> 10);
  if (a->metadata == RAID_METADATA_1_0)
    return set_error(ENOTSUP, "array %s: metadata 1.0 keeps its data at the start of "
                     "each member, with no room before it for the new layout, and "
                     "raidd keeps no backup file: reshape it with metadata 1.1 or 1.2",
                     a->name);
  if (raid_array_degraded(a) && !parity_role_empty(a, n, layout))
    return set_error(EAGAIN, "array %s is degraded: rebuild it before reshaping "
                     "(md too refuses to reshape a degraded RAID %d without --force)",
                     a->name, a->level);
  if (raid_array_needs_resync(a))
    return set_error(EAGAIN, "array %s has a resync due: let it finish first (raidctl "
                     "wait %s)", a->name, a->name);
  return 0;
}

/* grow_restripe()'s new members, from the hot spares, under conf_lock:
 * as md's raid5_add_disk() places them, an empty role of the old shape
 * (OLD roles) first, recovering (the reshape fills it), its number into
 * FILL[]; then the new roles up to N, in sync; the new roles left over
 * empty.  The number of FILL[] entries. */
static unsigned
spares_to_roles_locked(struct raid_array *a, unsigned old, unsigned n, unsigned *fill)
{
  unsigned i, k, next = old, nfill = 0;

  for (k = 0; k < n - old; k++) {
    struct raid_member *m = a->spares[0];

    memmove(a->spares, a->spares + 1, --a->nspares * sizeof *a->spares);
    for (i = 0; i < old && !role_free_locked(a, i); i++)
      ;
    if (i < old) {
      role_install_locked(a, i, m);
      fill[nfill++] = i;
      continue;
    }
    i = next++;
    a->moff[i] = m->data_offset;
    atomic_store(&a->recovered[i], 0);
    atomic_store(&a->state[i], RAID_MEMBER_IN_SYNC);
    atomic_store(&a->members[i], m);
  }
  for (i = next; i < n; i++) {
    atomic_store(&a->recovered[i], 0);
    atomic_store(&a->members[i], NULL);
    atomic_store(&a->state[i], RAID_MEMBER_MISSING);
  }
  return nfill;
}

/* A reshape has started: its bitmap covers what the reshape will make of
 * the array (md/set-bitmap.c).  The reshape runs either way; an error
 * says the bitmap is gone. */
static int
bitmap_refit(struct raid_array *a)
{
  char why[256];

  if (meta_bitmap_refit(a) == 0)
    return 0;
  snprintf(why, sizeof why, "%s", raid_get_error());
  raid_log(RAID_LOG_ERR, "%s %s: the write-intent bitmap could not be put back over "
           "the reshaped size: %s", a->pers->name, a->name, why);
  return set_error(EIO, "array %s: the reshape runs, but its write-intent bitmap could "
                   "not be put back over the reshaped size (%s): add it again once "
                   "the reshape has ended", a->name, why);
}

/* md's raid5_start_reshape() with mdadm 4.x's moved data offset: the
 * decisions first (nothing written when refused), then hot spares take
 * the new roles (in sync: the old shape never reads them, the new one
 * writes them before reading), the superblocks say the reshape, and the
 * engine moves the data.  As md's raid5_add_disk() places them, a spare
 * takes an empty role of the old shape first (a RAID 0's parity role,
 * parity_role_empty()): recovering, filled by the reshape as it goes
 * (sync/reshape.c), with the new shape's roles left over empty.  Caller
 * holds the engine (sync_hold()). */
static int
grow_restripe(struct raid_array *a, unsigned n, int layout, uint32_t chunk)
{
  unsigned old = a->raid_disks, i, k, nfill, fill[RAID_MAX_MEMBERS];
  const struct raid_geo *cur = atomic_load(&a->geo_now);
  uint64_t cmax = MAX(cur->chunk_size, chunk), room = UINT64_MAX, gap, need, least, rows;
  uint64_t chunks, start;
  const char *tight = NULL;
  int r;

  if ((r = shape_check(a, n, layout, chunk)) < 0)
    return r;
  /* The metadata lock until the reshape is under way: no bitmap comes
   * into the room meanwhile (raid_array_set_bitmap() refuses after). */
  meta_lock(a);
  start = meta_room_offset_locked(a);
  pthread_mutex_lock(&a->conf_lock);
  for (i = 0; i < old; i++) {
    struct raid_member *m = atomic_load(&a->members[i]);

    if (atomic_load(&a->repl[i]))
      r = set_error(EBUSY, "array %s: member %s is being replaced in role %u; wait "
                    "for it to end", a->name, atomic_load(&a->repl[i])->name, i);
    if (m && room_before(m, start) < room) {
      room = room_before(m, start);
      tight = m->name;
    }
  }
  if (r == 0 && a->nspares < n - old)
    r = set_error(EINVAL, "array %s: %u members need %u more, and the array has %u hot "
                  "spare%s: add %u with raidctl add first (as mdadm asks)", a->name, n,
                  n - old, a->nspares, a->nspares == 1 ? "" : "s", n - old - a->nspares);
  for (k = 0; r == 0 && k < n - old; k++) {
    struct raid_member *m = a->spares[k];

    if (room_before(m, start) < room) {
      room = room_before(m, start);
      tight = m->name;
    }
  }
  /* The member bytes of the reshape's unit (sync/reshape.c): a chunk, two
   * of a RAID 10 whose copies do not divide its members; that RAID 10
   * takes a single chunk when there is no more room, as md's does (its
   * steps then end inside rows). */
  geo_row_unit(a->level, a->copies, &(struct raid_geo){ .raid_disks = n }, &rows, &chunks);
  need = cmax * rows;
  least = a->level == RAID_LEVEL_10 ? cmax : need;
  gap = room == UINT64_MAX ? 0 : reshape_gap(room, need, n > old);
  if (gap < need && room != UINT64_MAX && room >= least)
    gap = least;
  if (r == 0 && gap < least)
    r = set_error(ENOSPC, "array %s: reshaping needs %" PRIu64 " KiB free before the "
                  "data on each member, after its superblock%s (where the new layout "
                  "starts: raidd moves the data offset, as mdadm 4.x does, instead of "
                  "keeping a backup file); member %s has %" PRIu64 " KiB", a->name,
                  least >> 10, start > RAID_SB_BYTES ? " and bitmap" : "", tight,
                  room >> 10);
  if (r < 0) {
    pthread_mutex_unlock(&a->conf_lock);
    meta_unlock(a);
    return r;
  }
  reshape_shapes_locked(a, n, layout, chunk, -gap);
  nfill = spares_to_roles_locked(a, old, n, fill);
  atomic_store(&a->reshape_pos, 0);
  a->raid_disks = n;
  roles_count_locked(a);
  pthread_mutex_unlock(&a->conf_lock);
  meta_unlock(a);
  if ((r = meta_reshape_start(a, old)) < 0) {
    /* Nothing says the reshape: the members go back to the spares. */
    pthread_mutex_lock(&a->conf_lock);
    for (i = old; i < n; i++)
      fill[nfill++] = i;
    for (k = 0; k < nfill; k++) {
      struct raid_member *m = atomic_load(&a->members[fill[k]]);

      atomic_store(&a->state[fill[k]], RAID_MEMBER_MISSING);
      atomic_store(&a->members[fill[k]], NULL);
      if (m)
        a->spares[a->nspares++] = m;
    }
    a->raid_disks = old;
    atomic_store(&a->reshape_pos, UINT64_MAX);
    a->geo_old = a->geo_new = NULL;
    roles_count_locked(a);
    pthread_mutex_unlock(&a->conf_lock);
    return r;
  }
  raid_log(RAID_LOG_INFO, "%s %s: reshaping from %u to %u members, layout %d to %d, "
           "chunk %" PRIu32 " to %" PRIu32 " KiB; the data offset moves %" PRIu64
           " KiB earlier", a->pers->name, a->name, old, n, cur->layout, layout,
           cur->chunk_size >> 10, chunk >> 10, gap >> 10);
  return bitmap_refit(a);
}

/* md's backwards reshape (back_plan above): the members stay in their
 * roles, those past the new shape's last leaving it only at its end
 * (sync/reshape.c makes them hot spares, as md does); the member size is
 * cut first when the room after the data asks for it; the superblocks
 * say the reshape, at the new shape's end, where it starts.  Caller holds
 * the engine (sync_hold()). */
static int
grow_restripe_back(struct raid_array *a, unsigned n, int layout, uint32_t chunk)
{
  unsigned old = a->raid_disks, i;
  const struct raid_geo *cur = atomic_load(&a->geo_now);
  uint64_t msize = a->member_size, size = a->size;
  struct back_plan p;
  int r;

  if ((r = shape_check(a, n, layout, chunk)) < 0)
    return r;
  pthread_mutex_lock(&a->conf_lock);
  for (i = 0; i < old && r == 0; i++)
    if (atomic_load(&a->repl[i]))
      r = set_error(EBUSY, "array %s: member %s is being replaced in role %u; wait "
                    "for it to end", a->name, atomic_load(&a->repl[i])->name, i);
  back_plan_locked(a, n, chunk, &p);
  if (r == 0 && array_size_shown(a) > p.holds)
    r = set_error(EBUSY, "array %s: its members changed meanwhile: the new shape holds "
                  "%" PRIu64 " bytes, less than the %" PRIu64 " it shows", a->name,
                  p.holds, array_size_shown(a));
  if (r < 0) {
    pthread_mutex_unlock(&a->conf_lock);
    return r;
  }
  reshape_shapes_locked(a, n, layout, chunk, p.gap);
  a->reshape_back = true;
  a->member_size = p.member_size;
  atomic_store(&a->size, p.holds);
  atomic_store(&a->reshape_pos, p.holds);
  pthread_mutex_unlock(&a->conf_lock);
  if ((r = meta_reshape_start(a, old)) < 0) {
    pthread_mutex_lock(&a->conf_lock);
    a->member_size = msize;
    atomic_store(&a->size, size);
    atomic_store(&a->reshape_pos, UINT64_MAX);
    a->reshape_back = false;
    a->geo_old = a->geo_new = NULL;
    pthread_mutex_unlock(&a->conf_lock);
    return r;
  }
  raid_log(RAID_LOG_INFO, "%s %s: reshaping backwards from %u to %u members, layout %d "
           "to %d, chunk %" PRIu32 " to %" PRIu32 " KiB; the data offset moves %" PRIu64
           " KiB later%s", a->pers->name, a->name, old, n, cur->layout, layout,
           cur->chunk_size >> 10, chunk >> 10, p.gap >> 10,
           p.member_size < msize ? ", each member's size cut to make room" : "");
  return bitmap_refit(a);
}

EXPORT int
raid_array_grow_shape(struct raid_array *a, unsigned n, int layout, uint32_t chunk)
{
  int r;

  if (a->meta == NULL)
    return set_error(EINVAL, "array %s has no md metadata: its shape is fixed", a->name);
  if (a->level != RAID_LEVEL_5 && a->level != RAID_LEVEL_10)
    return set_error(ENOTSUP, "array %s: raidd can reshape a RAID 5 (its members, "
                     "layout and chunk) and a RAID 10 (its members and chunk), not a "
                     "RAID %d yet", a->name, a->level);
  if (n == 0)
    n = a->raid_disks;
  if (layout == RAID_LAYOUT_DEFAULT)
    layout = a->layout;
  if (chunk == 0)
    chunk = a->chunk_size;
  if (n > RAID_MAX_MEMBERS)
    return set_error(EINVAL, "array %s: %u members: at most %u", a->name, n,
                     RAID_MAX_MEMBERS);
  if (raid_array_is_failed(a))
    return set_error(EIO, "array %s has failed: it cannot change its shape", a->name);
  if (atomic_load(&a->reshape_pos) != UINT64_MAX)
    return set_error(EBUSY, "array %s: a reshape is under way already; wait for it "
                     "(raidctl wait %s)", a->name, a->name);
  if (n == a->raid_disks && layout == a->layout && chunk == a->chunk_size)
    return 0;
  if ((r = sync_hold(a)) < 0)
    return r;
  r = n < a->raid_disks ? grow_restripe_back(a, n, layout, chunk)
    : grow_restripe(a, n, layout, chunk);
  sync_release(a);
  if (r == 0)
    r = sync_reshape_kick(a);
  return r;
}

EXPORT int
raid_array_grow_disks(struct raid_array *a, unsigned n)
{
  unsigned old = a->raid_disks, present = 0, i, degraded;
  int r;

  if (a->meta == NULL)
    return set_error(EINVAL, "array %s has no md metadata: its members are fixed", a->name);
  if (a->level == RAID_LEVEL_5 && n == 0)
    return set_error(EINVAL, "array %s: 0 members: a RAID 5 has at least 2", a->name);
  if (a->level == RAID_LEVEL_10 && n < a->copies)
    return set_error(EINVAL, "array %s: %u members cannot hold the %u copies of its "
                     "near-%u layout", a->name, n, a->copies, a->copies);
  if (a->level == RAID_LEVEL_5 || a->level == RAID_LEVEL_10)
    return raid_array_grow_shape(a, n, RAID_LAYOUT_DEFAULT, 0);
  if (a->level == RAID_LEVEL_0 && n < a->raid_disks)
    return set_error(ENOTSUP, "array %s: a RAID 0 cannot be reshaped to fewer members "
                     "(md's cannot either): copy its data to a smaller array", a->name);
  if (a->level == RAID_LEVEL_0)
    return set_error(EINVAL, "array %s: a RAID 0 keeps no hot spares: name the new "
                     "members with the grow (raidctl grow %s --raid-devices %u --add "
                     "MEMBER, as mdadm's --grow --add)", a->name, a->name, n);
  if (a->level != RAID_LEVEL_1)
    return set_error(ENOTSUP, "array %s: a RAID %d changes its number of members by "
                     "restriping it, which raidd can do for RAID 0, 5 and 10 only yet; "
                     "a RAID 1 can change its number of mirrors", a->name, a->level);
  if (n < 2 || n > RAID_MAX_MEMBERS)
    return set_error(EINVAL, "array %s: %u mirrors: a RAID 1 has 2 to %u", a->name, n,
                     RAID_MAX_MEMBERS);
  if (raid_array_is_failed(a))
    return set_error(EIO, "array %s has failed: it cannot change its members", a->name);
  if (n == old)
    return 0;
  if ((r = sync_hold(a)) < 0)
    return r;
  pthread_mutex_lock(&a->conf_lock);
  for (i = 0; i < old; i++) {
    if (atomic_load(&a->repl[i]))
      r = set_error(EBUSY, "array %s: member %s is being replaced in role %u; wait "
                    "for it to end", a->name, atomic_load(&a->repl[i])->name, i);
    if (atomic_load(&a->members[i]))
      present++;
  }
  if (r == 0 && present > n)
    r = set_error(EBUSY, "array %s: %u members hold roles, more than %u mirrors can: "
                  "fail and remove %u of them first (raidctl fail, raidctl remove), "
                  "as md asks", a->name, present, n, present - n);
  if (r < 0) {
    pthread_mutex_unlock(&a->conf_lock);
    sync_release(a);
    return r;
  }
  degraded = roles_resize_locked(a, old, n);
  a->copies = n;
  pthread_mutex_unlock(&a->conf_lock);
  /* Requests bound to the roles as they were finish before the
   * superblocks say the new ones. */
  array_quiesce(a);
  r = meta_set_disks(a, n);
  if (r == 0) {
    raid_log(RAID_LOG_INFO, "%s %s: %u mirrors now (were %u)%s", a->pers->name, a->name,
             n, old, degraded ? "; roles without a member wait for one (a hot spare, "
             "or raidctl add)" : "");
    if (degraded && n > old)
      array_event(a, (struct raid_event){ .type = RAID_EVENT_DEGRADED, .role = -1 });
  }
  sync_release(a);
  return r;
}

/* ---- a RAID 0 over more members (mdadm --grow --raid-devices N --add) -------------- */

/* md's way, as mdadm drives it: a RAID 0 of N is taken over as a RAID 5
 * of N + 1 in the parity-last layout missing its parity role (mdadm's RAID
 * 4: the same bytes), which is reshaped over the new members, the first
 * taking the empty role (filled by the reshape), the new parity role left
 * empty; at the reshape's end the array is a RAID 0 again (sync/reshape.c,
 * mdadm's impose_level()).  Here only the start: the new members
 * prepared, the takeover in memory (requests parked meanwhile), then
 * grow_restripe(), whose superblock write is the first that says anything:
 * the level, the reshape and the new members at once.  Any refusal before
 * it undoes the rest in memory, every member as it was on disk.  The
 * caller holds the engine. */
static int
stripe_grow(struct raid_array *a, unsigned n, struct raid_member **add, unsigned nadd)
{
  unsigned old = a->raid_disks, k;
  int r = 0;

  for (k = 0; k < nadd && r == 0; k++) {
    add[k]->data_offset = member_offset_default(a);
    if ((r = member_fits(a, add[k], add[k]->data_offset)) == 0 &&
        (r = meta_new_member(a, add[k])) == 0) {
      pthread_mutex_lock(&a->conf_lock);
      a->spares[a->nspares++] = add[k];   /* for the next's device number */
      pthread_mutex_unlock(&a->conf_lock);
    }
  }
  if (r == 0 && (r = takeover_held(a, RAID_LEVEL_5, false)) == 0) {
    if ((r = grow_restripe(a, n + 1, RAID_LAYOUT_PARITY_LAST, a->chunk_size)) == 0) {
      pthread_mutex_lock(&a->conf_lock);
      a->reshape_then = RAID_LEVEL_0;
      pthread_mutex_unlock(&a->conf_lock);
      return 0;
    }
    /* The spares out first: a RAID 0 keeps none. */
    pthread_mutex_lock(&a->conf_lock);
    a->nspares = 0;
    pthread_mutex_unlock(&a->conf_lock);
    if (takeover_held(a, RAID_LEVEL_0, false) < 0)
      raid_log(RAID_LOG_ERR, "%s %s: back to a RAID 0 of %u: %s", a->pers->name, a->name,
               old, raid_get_error());
    return r;                   /* ADD's members are the caller's to close */
  }
  pthread_mutex_lock(&a->conf_lock);
  a->nspares = 0;
  pthread_mutex_unlock(&a->conf_lock);
  return r;
}

int
grow_to_stripe(struct raid_array *a)
{
  int r;

  if ((r = sync_hold(a)) < 0)
    return r;
  if ((r = grow_restripe(a, a->raid_disks, RAID_LAYOUT_PARITY_LAST, a->chunk_size)) == 0) {
    pthread_mutex_lock(&a->conf_lock);
    a->reshape_then = RAID_LEVEL_0;
    pthread_mutex_unlock(&a->conf_lock);
  }
  sync_release(a);
  return r < 0 ? r : sync_reshape_kick(a);
}

EXPORT int
raid_array_grow_disks_add(struct raid_array *a, unsigned n, struct raid_member **add,
                          unsigned nadd)
{
  unsigned k;
  int r = 0, role;

  if (a->meta == NULL)
    r = set_error(EINVAL, "array %s has no md metadata: its members are fixed", a->name);
  else if (nadd == 0 || n != a->raid_disks + nadd)
    r = set_error(EINVAL, "array %s: %u members from %u need %d new, and %u %s given",
                  a->name, n, (unsigned)a->raid_disks, (int)n - (int)a->raid_disks, nadd,
                  nadd == 1 ? "is" : "are");
  else if (a->level != RAID_LEVEL_0) {
    /* mdadm's --grow --add of the other levels: each added (a hot spare
     * of an array in sync), then the grow. */
    for (k = 0; k < nadd; k++) {
      if (r == 0)
        r = raid_array_add_member(a, add[k], &role);    /* owns it */
      else
        raid_member_close(add[k]);
    }
    return r < 0 ? r : raid_array_grow_disks(a, n);
  }
  else if (n + 1 > RAID_MAX_MEMBERS)
    r = set_error(EINVAL, "array %s: a RAID 0 of %u members is restriped as a RAID 5 of "
                  "%u, more than raidd's %u", a->name, n, n + 1, RAID_MAX_MEMBERS);
  else if (raid_array_is_failed(a))
    r = set_error(EIO, "array %s has failed: it cannot change its members", a->name);
  else if (atomic_load(&a->reshape_pos) != UINT64_MAX)
    r = set_error(EBUSY, "array %s: a reshape is under way already; wait for it "
                  "(raidctl wait %s)", a->name, a->name);
  if (r == 0 && (r = sync_hold(a)) == 0) {
    r = stripe_grow(a, n, add, nadd);
    sync_release(a);
    if (r == 0)
      return sync_reshape_kick(a);
  }
  for (k = 0; k < nadd; k++)
    raid_member_close(add[k]);
  return r;
}

/* ---- a reshape under way: its state, and md's frozen ------------------------------- */

EXPORT int
raid_array_reshape_status(struct raid_array *a, struct raid_reshape_status *st)
{
  uint64_t pos;

  memset(st, 0, sizeof *st);
  pthread_mutex_lock(&a->conf_lock);
  pos = atomic_load(&a->reshape_pos);
  if (pos != UINT64_MAX && a->geo_old && a->geo_new) {
    const struct raid_geo *o = a->geo_old, *g = a->geo_new;

    st->active = 1;
    st->raid_disks_from = o->raid_disks;
    st->raid_disks_to = g->raid_disks;
    st->size_from = geo_data_size(a->level, a->copies, o, a->member_size);
    st->size_to = geo_data_size(a->level, a->copies, g, a->member_size);
    /* Bytes moved: backwards, those from the line up. */
    st->position = a->reshape_back ? st->size_to - MIN(pos, st->size_to) : pos;
    st->layout_from = o->layout;
    st->layout_to = g->layout;
    st->chunk_from = o->chunk_size;
    st->chunk_to = g->chunk_size;
  }
  pthread_mutex_unlock(&a->conf_lock);
  if (st->active)
    st->frozen = sync_reshape_frozen(a);
  return st->active;
}

EXPORT int
raid_array_reshape_freeze(struct raid_array *a, int frozen)
{
  if (atomic_load(&a->reshape_pos) == UINT64_MAX)
    return set_error(EINVAL, "array %s: no reshape is under way", a->name);
  return sync_reshape_freeze(a, frozen != 0);
}
