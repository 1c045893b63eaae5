/* The write-intent bitmap of a running array: what it is
 * (raid_array_bitmap()), and adding or removing one
 * (raid_array_set_bitmap()). */
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

/* mdadm --grow --bitmap=internal|none on a running array.  Under the lock
 * the bitmap and the superblocks cannot change under us; writes in flight
 * are covered by every bit being set (see the top).  Not from a thread
 * that runs a queue with requests of A in flight (array_quiesce()). */
EXPORT int
raid_array_set_bitmap(struct raid_array *a, int mode, uint32_t want_chunk)
{
  struct array_meta *m = a->meta;
  struct live l[2 * RAID_MAX_MEMBERS + RAID_MAX_MEMBERS];
  struct raid_bitmap_super b;
  struct meta_bitmap *bm = NULL;
  uint64_t room = UINT64_MAX;
  uint32_t chunk;
  unsigned i, n;
  int r;

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
  if (mode == RAID_BITMAP_NONE) {
    if (m->bm == NULL) {
      pthread_mutex_unlock(&m->lock);
      return set_error(ENOENT, "array %s has no write-intent bitmap to remove", a->name);
    }
    struct bitmap_run *run = bitmap_run_take(a);

    bm = m->bm;
    m->bm = NULL;
    a->bitmap = false;
    r = meta_write_locked(a, true);
    pthread_mutex_unlock(&m->lock);
    /* Requests that passed its gate finish (the writer releases the
     * parked ones, without writing a bitmap that is gone), then it goes. */
    array_quiesce(a);
    bitmap_run_free(run);
    bitmap_free(bm);
    if (r == 0)
      raid_log(RAID_LOG_INFO, "%s %s: write-intent bitmap removed", a->pers->name, a->name);
    return r;
  }
  r = 0;
  if (m->bm)
    r = set_error(EEXIST, "array %s has a write-intent bitmap already (chunk %" PRIu32
                  " bytes)", a->name, m->bm->sb.chunksize);
  else if (a->metadata == RAID_METADATA_1_0)
    r = set_error(ENOSPC, "array %s: metadata 1.0 keeps the bitmap between the data "
                  "and the superblock, and libraid adds one there only at create; "
                  "create it with a bitmap instead", a->name);
  if (r < 0) {
    pthread_mutex_unlock(&m->lock);
    return r;
  }
  /* mdadm's hot-add room: between the superblock and the data offset,
   * less 4 KiB for the superblock and 4 KiB for a bad block log. */
  n = live_members(a, l);
  for (i = 0; i < n; i++) {
    uint64_t so = l[i].m->super_offset, dof = l[i].m->data_offset >> SECTOR_SHIFT;

    room = MIN(room, dof > so + 16 ? dof - so - 16 : 0);
  }
  r = bitmap_choose_chunk(a->name, room, bitmap_sync_size(a), want_chunk, &chunk);
  if (r == 0) {
    bitmap_sb_init(a, m, chunk, &b);
    b.events_cleared = m->sb.events;
    r = bitmap_new(&b, 8, &bm);
  }
  for (i = 0; r == 0 && i < n; i++) {
    struct raid_superblock *xs = calloc(1, sizeof *xs);

    if (xs == NULL) {
      r = set_error(ENOMEM, "array %s: out of memory", a->name);
      break;
    }
    xs->super_offset = l[i].m->super_offset;
    xs->data_offset = l[i].m->data_offset >> SECTOR_SHIFT;
    xs->size = a->member_size >> SECTOR_SHIFT;
    xs->max_dev = m->sb.max_dev;
    r = bitmap_check_place(xs, bm->offset, bm->area, l[i].m->name);
    free(xs);
  }
  if (r < 0 && bm) {
    bitmap_free(bm);
    bm = NULL;
  }
  if (r == 0) {
    struct bitmap_run *run = NULL;

    /* Every bit set on every member before the superblocks point at it:
     * writes in flight that passed no gate are covered; the writer clears
     * the bits once idle. */
    bitmap_set_all(bm, true);
    m->bm = bm;
    a->bitmap = true;
    r = meta_write_locked(a, true);
    if (r == 0) {
      r = bitmap_run_new(a, bm, &run);
      if (r == 0)
        atomic_store(&a->gate[GATE_BITMAP], bitmap_run_gate(run));
      else {
        /* Without its writer it cannot stay: the superblocks drop it. */
        m->bm = NULL;
        a->bitmap = false;
        meta_write_locked(a, true);
        bitmap_free(bm);
      }
    }
    else {
      /* No member took it: nothing points at it. */
      m->bm = NULL;
      a->bitmap = false;
      bitmap_free(bm);
    }
  }
  pthread_mutex_unlock(&m->lock);
  if (r == 0)
    raid_log(RAID_LOG_INFO, "%s %s: write-intent bitmap added: %" PRIu32 "-byte chunks",
             a->pers->name, a->name, chunk);
  return r;
}
