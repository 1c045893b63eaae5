/* The write-intent bitmap of a running array: what it is
 * (raid_array_bitmap()), adding or removing one (raid_array_set_bitmap(),
 * not while a reshape runs), and a RAID 10's put back over the larger size
 * its reshape starts with (meta_bitmap_refit()). */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/time.h>

#include "internal.h"
#include "md.h"

EXPORT int
raid_array_bitmap(struct raid_array *a, struct raid_bitmap_info *info)
{
  struct array_meta *m = a->meta;

  memset(info, 0, sizeof *info);
  if (m == NULL)
    return 0;
  pthread_mutex_lock(&m->lock);
  if (m->bm) {
    info->present = 1;
    info->offset = m->bm->offset;
    info->chunk_size = m->bm->sb.chunksize;
    info->chunks = m->bm->chunks;
    info->pages = DIV_ROUND_UP(m->bm->chunks, BITMAP_PAGE_CHUNKS);
    info->dirty = bitmap_dirty(m->bm, &info->pages_used);
    info->events = m->bm->sb.events;
    info->events_cleared = m->bm->sb.events_cleared;
    info->daemon_sleep = m->bm->sb.daemon_sleep;
    info->write_behind = m->bm->sb.write_behind;
  }
  info->behind_writes = atomic_load(&a->behind_writes);
  pthread_mutex_unlock(&m->lock);
  return 0;
}

/* Sectors of member M from its superblock to where its data starts: the
 * lower of its two data offsets while a reshape moves them (md's
 * new_offset), as the bitmap must end before both. */
static uint64_t
data_start(const struct raid_array *a, const struct raid_member *m)
{
  const struct raid_geo *g = atomic_load(&a->geo_new);
  uint64_t dof = m->data_offset >> SECTOR_SHIFT;

  if (atomic_load(&a->reshape_pos) != UINT64_MAX && g && (int64_t)g->shift < 0)
    dof -= MIN(dof, (uint64_t)-(int64_t)g->shift >> SECTOR_SHIFT);
  return dof;
}

/* A's bitmap taken off: the superblocks say none, then the requests that
 * passed its gate finish (the writer releases the parked ones, without
 * writing a bitmap that is gone), then it goes.  Meta lock held; dropped. */
static int
remove_unlock(struct raid_array *a, struct array_meta *m)
{
  struct bitmap_run *run;
  struct meta_bitmap *bm;
  int r;

  if (m->bm == NULL) {
    pthread_mutex_unlock(&m->lock);
    return set_error(ENOENT, "array %s has no write-intent bitmap to remove", a->name);
  }
  run = bitmap_run_take(a);
  bm = m->bm;
  m->bm = NULL;
  a->bitmap = false;
  r = meta_write_locked(a, true);
  pthread_mutex_unlock(&m->lock);
  array_quiesce(a);
  bitmap_run_free(run);
  bitmap_free(bm);
  if (r == 0)
    raid_log(RAID_LOG_INFO, "%s %s: write-intent bitmap removed", a->pers->name, a->name);
  return r;
}

/* A new bitmap for A at mdadm's place (8 sectors after the superblock),
 * its chunk WANT_CHUNK (0: mdadm's choice for the hot-add room; EXACT: as
 * given, a reshape's choice where the bitmap was), checked clear of every
 * member's data: *BMP, or set_error().  Meta lock held. */
static int
plan_locked(struct raid_array *a, struct array_meta *m, uint32_t want_chunk, bool exact,
            struct meta_bitmap **bmp)
{
  struct live l[2 * RAID_MAX_MEMBERS + RAID_MAX_MEMBERS];
  struct raid_bitmap_super b;
  struct raid_superblock xs;
  uint64_t room = UINT64_MAX;
  uint32_t chunk = want_chunk;
  unsigned i, n;
  int r;

  *bmp = NULL;
  /* mdadm's hot-add room: between the superblock and the data offset,
   * less 4 KiB for the superblock and 4 KiB for a bad block log. */
  n = live_members(a, l);
  for (i = 0; i < n; i++) {
    uint64_t so = l[i].m->super_offset, dof = data_start(a, l[i].m);

    room = MIN(room, dof > so + 16 ? dof - so - 16 : 0);
  }
  r = exact ? 0 : bitmap_choose_chunk(a->name, room, bitmap_sync_size(a), want_chunk,
                                      &chunk);
  if (r == 0) {
    bitmap_sb_init(a, m, chunk, &b);
    b.events_cleared = m->sb.events;
    r = bitmap_new(&b, 8, bmp);
  }
  for (i = 0; r == 0 && i < n; i++) {
    memset(&xs, 0, sizeof xs);
    xs.super_offset = l[i].m->super_offset;
    xs.data_offset = data_start(a, l[i].m);
    xs.size = a->member_size >> SECTOR_SHIFT;
    xs.max_dev = m->sb.max_dev;
    r = bitmap_check_place(&xs, (*bmp)->offset, (*bmp)->area, l[i].m->name);
  }
  if (r < 0 && *bmp) {
    bitmap_free(*bmp);
    *bmp = NULL;
  }
  return r;
}

/* mdadm --grow --bitmap=internal|none on a running array.  Under the lock
 * the bitmap and the superblocks cannot change under us; writes in flight
 * are covered by every bit being set (see the top).  Not from a thread
 * that runs a queue with requests of A in flight (array_quiesce()). */
/* set_bitmap()'s RESHAPING: a reshape's own (meta_bitmap_refit()), which
 * may run while it does, its chunk as given. */
static int
set_bitmap(struct raid_array *a, int mode, uint32_t want_chunk, bool reshaping)
{
  struct array_meta *m = a->meta;
  struct meta_bitmap *bm = NULL;
  struct bitmap_run *run = NULL;
  uint32_t chunk;
  int r = 0;

  if (m == NULL)
    return set_error(EINVAL, "array %s has no md metadata", a->name);
  if (mode != RAID_BITMAP_INTERNAL && mode != RAID_BITMAP_NONE)
    return set_error(EINVAL, "array %s: bitmap mode %d is not internal or none",
                     a->name, mode);
  if (want_chunk && (mode == RAID_BITMAP_NONE || !IS_POWER_OF_2(want_chunk) ||
                     want_chunk < RAID_BITMAP_CHUNK_MIN))
    return set_error(EINVAL, "array %s: bitmap chunk %" PRIu32 " bytes is invalid%s",
                     a->name, want_chunk, mode == RAID_BITMAP_NONE
                     ? ": there is no bitmap to have one"
                     : ": it must be a power of two of at least 4096 bytes");
  if (mode == RAID_BITMAP_INTERNAL && a->level == RAID_LEVEL_0)
    return set_error(EINVAL, "array %s: RAID 0 cannot have a write-intent bitmap: "
                     "it has no copies or parity to resync (md refuses one too)",
                     a->name);
  pthread_mutex_lock(&m->lock);
  /* md changes no bitmap while a reshape runs (update_array_info(): EBUSY
   * with a sync thread): its room and what it covers are moving.  Under
   * the lock, which a reshape's start holds while it decides its room
   * (lib/grow.c). */
  if (!reshaping && atomic_load(&a->reshape_pos) != UINT64_MAX) {
    pthread_mutex_unlock(&m->lock);
    return set_error(EBUSY, "array %s is being reshaped: add or remove its write-intent "
                     "bitmap once the reshape has ended (raidctl wait %s), as md "
                     "refuses to meanwhile", a->name, a->name);
  }
  if (mode == RAID_BITMAP_NONE)
    return remove_unlock(a, m);
  if (m->bm)
    r = set_error(EEXIST, "array %s has a write-intent bitmap already (chunk %" PRIu32
                  " bytes)", a->name, m->bm->sb.chunksize);
  else if (a->metadata == RAID_METADATA_1_0)
    r = set_error(ENOSPC, "array %s: metadata 1.0 keeps the bitmap between the data "
                  "and the superblock, and libraid adds one there only at create; "
                  "create it with a bitmap instead", a->name);
  if (r == 0)
    r = plan_locked(a, m, want_chunk, reshaping, &bm);
  if (r < 0) {
    pthread_mutex_unlock(&m->lock);
    return r;
  }
  /* Every bit set on every member before the superblocks point at it:
   * writes in flight that passed no gate are covered; the writer clears
   * the bits once idle. */
  bitmap_set_all(bm, true);
  m->bm = bm;
  a->bitmap = true;
  chunk = bm->sb.chunksize;
  if ((r = meta_write_locked(a, true)) < 0) {
    /* No member took it: nothing points at it. */
    m->bm = NULL;
    a->bitmap = false;
    bitmap_free(bm);
  }
  else if ((r = bitmap_run_new(a, bm, &run)) < 0) {
    /* Without its writer it cannot stay: the superblocks drop it. */
    m->bm = NULL;
    a->bitmap = false;
    meta_write_locked(a, true);
    bitmap_free(bm);
  }
  else
    atomic_store(&a->gate[GATE_BITMAP], bitmap_run_gate(run));
  pthread_mutex_unlock(&m->lock);
  if (r == 0)
    raid_log(RAID_LOG_INFO, "%s %s: write-intent bitmap added: %" PRIu32 "-byte chunks",
             a->pers->name, a->name, chunk);
  return r;
}

EXPORT int
raid_array_set_bitmap(struct raid_array *a, int mode, uint32_t want_chunk)
{
  return set_bitmap(a, mode, want_chunk, false);
}

/* md's raid10_start_reshape() resizes the bitmap in place, its dirty
 * bits kept.  Here the bitmap is taken off (the superblocks say none,
 * the writes in flight drain) and put back over the larger size with
 * every bit set (the writer clears them once the array is idle), as
 * raid_array_grow_size() does: a crash in between finds no bitmap and
 * resyncs the whole array, after it every bit set; no write goes
 * unmarked either way.  Writes meanwhile stay below the old size, which
 * the array shows until the reshape's end. */
int
meta_bitmap_refit(struct raid_array *a)
{
  struct array_meta *m = a->meta;
  uint64_t sync = bitmap_sync_size(a), had = 0, chunks = 0;
  uint32_t chunk = 0;
  int r;

  pthread_mutex_lock(&m->lock);
  if (m->bm) {
    had = m->bm->sb.sync_size;
    chunk = m->bm->sb.chunksize;
    chunks = m->bm->chunks;
  }
  pthread_mutex_unlock(&m->lock);
  if (chunk == 0 || sync <= had)
    return 0;
  chunk = bitmap_refit_chunk(chunk, chunks, sync << SECTOR_SHIFT);
  if ((r = set_bitmap(a, RAID_BITMAP_NONE, 0, true)) < 0)
    return r;
  r = set_bitmap(a, RAID_BITMAP_INTERNAL, chunk, true);
  if (r == 0)
    raid_log(RAID_LOG_INFO, "%s %s: write-intent bitmap put back over the reshaped "
             "size (%" PRIu64 " sectors), %" PRIu32 "-byte chunks, every bit set",
             a->pers->name, a->name, sync, chunk);
  return r;
}
