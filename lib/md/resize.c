/* What the superblocks say of a running array's geometry when it changes:
 * its size (meta_set_size()) and its number of roles (meta_set_disks()).
 *
 * md's update_size() for a running array, the superblock half: every
 * member's superblock says each member now holds NEW bytes of data
 * (md's "size", the used part of each member), each member's data_size
 * (the room it has) at least that, metadata 1.0's superblock at each
 * grown member's new end with md's room for a bitmap and a bad block log
 * below it (md moves it the same way, meta_grow_end()), and, when the array grew and the new
 * room must be made consistent, a resync point at the old end (md's
 * recovery_cp = the old dev_sectors: only the new region is resynced).
 * The top (lib/grow.c) decides and publishes the array's new geometry;
 * this file only writes what it decided, under the metadata lock. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "internal.h"
#include "md.h"

uint64_t
meta_grow_end(const struct raid_array *a, uint64_t size)
{
  uint64_t so, keep;

  if (a->metadata != RAID_METADATA_1_0)
    return size;
  /* md's super_1_rdev_size_change() for minor version 0: the superblock
   * at the end, and below it room for a bitmap and a bad block log
   * (super_1_choose_bm_space() + 4 KiB), which md's own --grow --size max
   * keeps free too: so md can take the array over and grow it again. */
  so = raid_superblock_offset(a->metadata, size >> SECTOR_SHIFT);
  keep = raid_bitmap_space(a->metadata, size >> SECTOR_SHIFT);
  return so == UINT64_MAX || so <= keep ? 0 : (so - keep) << SECTOR_SHIFT;
}

uint64_t
meta_room_offset_locked(struct raid_array *a)
{
  struct array_meta *meta = a->meta;
  uint64_t end = RAID_SB_BYTES;

  /* mdadm's space_before (super1.c getinfo_super1()): the data may move
   * down to the end of the superblock, of the bitmap after it, and of
   * the bad block log, whichever ends last. */
  if (meta == NULL)
    return end;
  if (meta->bm && meta->bm->offset > 0)
    end = MAX(end, ((uint64_t)meta->bm->offset << SECTOR_SHIFT) + meta->bm->area);
  if (meta->sb.bblog_offset > 0 && meta->sb.bblog_size)
    end = MAX(end, ((uint64_t)meta->sb.bblog_offset + meta->sb.bblog_size)
              << SECTOR_SHIFT);
  return end;
}

int
meta_set_size(struct raid_array *a, uint64_t old, uint64_t new, bool resync)
{
  struct array_meta *m = a->meta;
  struct live l[2 * RAID_MAX_MEMBERS + RAID_MAX_MEMBERS];
  uint64_t data_size[2 * RAID_MAX_MEMBERS + RAID_MAX_MEMBERS];
  uint64_t super_offset[2 * RAID_MAX_MEMBERS + RAID_MAX_MEMBERS];
  uint64_t sb_size, resync_done;
  bool needs_resync;
  unsigned i, n;
  int r;

  if (m == NULL)
    return set_error(EINVAL, "array %s has no md metadata", a->name);
  pthread_mutex_lock(&m->lock);
  sb_size = m->sb.size;
  needs_resync = m->needs_resync;
  resync_done = m->resync_done;
  n = live_members(a, l);
  m->sb.size = new >> SECTOR_SHIFT;
  for (i = 0; i < n; i++) {
    struct raid_member *x = l[i].m;

    data_size[i] = x->data_size;
    super_offset[i] = x->super_offset;
    /* md's super_1_rdev_size_change(): metadata 1.0's superblock goes to
     * the member's end now (the old one, in what is data from now on,
     * is no longer where anyone looks), and the room after the data
     * offset is what the member has up to its superblock. */
    if (a->metadata == RAID_METADATA_1_0 && new > old)
      x->super_offset = raid_superblock_offset(a->metadata, x->size >> SECTOR_SHIFT);
    if (x->data_size < new >> SECTOR_SHIFT)
      x->data_size = (meta_grow_end(a, x->size) - x->data_offset) >> SECTOR_SHIFT;
  }
  if (resync && new > old) {
    m->resync_done = m->needs_resync ? MIN(m->resync_done, old) : old;
    m->needs_resync = true;
  }
  else if (m->needs_resync && m->resync_done > new)
    m->resync_done = new;
  r = meta_write_locked(a, true);
  if (r < 0) {
    /* No member took it: the array stays as it was. */
    m->sb.size = sb_size;
    m->needs_resync = needs_resync;
    m->resync_done = resync_done;
    for (i = 0; i < n; i++) {
      l[i].m->data_size = data_size[i];
      l[i].m->super_offset = super_offset[i];
    }
  }
  pthread_mutex_unlock(&m->lock);
  return r;
}

int
meta_set_disks(struct raid_array *a, unsigned n)
{
  struct array_meta *m = a->meta;
  int r;

  if (m == NULL)
    return set_error(EINVAL, "array %s has no md metadata", a->name);
  pthread_mutex_lock(&m->lock);
  m->sb.raid_disks = n;
  r = meta_write_locked(a, true);
  pthread_mutex_unlock(&m->lock);
  return r;
}

/* Write every member's superblock with EDIT(sb, ARG) applied to the
 * array's, events bumped; when no member takes it, the array's superblock
 * stays as it was.  0 or -errno. */
static int
meta_edit(struct raid_array *a, void (*edit)(struct raid_superblock *sb, const void *arg),
            const void *arg)
{
  struct array_meta *m = a->meta;
  struct raid_superblock keep;
  int r;

  if (m == NULL)
    return set_error(EINVAL, "array %s has no md metadata", a->name);
  pthread_mutex_lock(&m->lock);
  keep = m->sb;
  edit(&m->sb, arg);
  if ((r = meta_write_locked(a, true)) < 0)
    m->sb = keep;
  pthread_mutex_unlock(&m->lock);
  return r;
}

struct level_edit {
  int level, layout;
  uint32_t chunk_sectors;
  unsigned disks;
};

static void
edit_level(struct raid_superblock *sb, const void *arg)
{
  const struct level_edit *e = arg;

  sb->level = e->level;
  sb->layout = (uint32_t)e->layout;
  sb->chunksize = e->chunk_sectors;
  sb->raid_disks = e->disks;
}

/* md's level_store() for a takeover (lib/takeover.c): the superblocks say
 * the new level, layout, chunk (sectors; 0 for RAID 1) and number of
 * roles, events bumped; the roles themselves are the array's (already
 * changed). */
/* A RAID 0 from now on (a takeover, a restripe's end), under the meta
 * lock: md's raid0_takeover_raid45() gives each member the array's
 * member size as its size, which super_1_sync() writes as data_size, and
 * md's RAID 0 runs over data_size: so the superblocks say it, or md would
 * run a larger RAID 0 than raidd over room freed or left unused (a
 * reshape's moved data offset).  Nothing to resync either (assembly's
 * rule for a RAID 0): the parity it was due for has left.  KEEP (one per
 * live member, in L's order) and *RESYNCP keep what was, for
 * stripe_back() when the write fails. */
static void
stripe_sizes(struct raid_array *a, const struct live *l, unsigned n, uint64_t *keep,
             bool *resyncp)
{
  unsigned i;

  *resyncp = a->meta->needs_resync;
  a->meta->needs_resync = false;
  for (i = 0; i < n; i++) {
    keep[i] = l[i].m->data_size;
    if (l[i].slot >= 0)
      l[i].m->data_size = a->member_size >> SECTOR_SHIFT;
  }
}

static void
stripe_back(struct raid_array *a, const struct live *l, unsigned n, const uint64_t *keep,
            bool resync)
{
  unsigned i;

  a->meta->needs_resync = resync;
  for (i = 0; i < n; i++)
    l[i].m->data_size = keep[i];
}

int
meta_set_level(struct raid_array *a, int level, int layout, uint32_t chunk_sectors,
               unsigned disks)
{
  struct level_edit e = { level, layout, chunk_sectors, disks };
  struct array_meta *m = a->meta;
  struct live l[2 * RAID_MAX_MEMBERS + RAID_MAX_MEMBERS];
  uint64_t keep[2 * RAID_MAX_MEMBERS + RAID_MAX_MEMBERS];
  struct raid_superblock sb;
  bool resync;
  unsigned n;
  int r;

  if (m == NULL || level != RAID_LEVEL_0)
    return meta_edit(a, edit_level, &e);
  pthread_mutex_lock(&m->lock);
  sb = m->sb;
  n = live_members(a, l);
  stripe_sizes(a, l, n, keep, &resync);
  edit_level(&m->sb, &e);
  if ((r = meta_write_locked(a, true)) < 0) {
    m->sb = sb;
    stripe_back(a, l, n, keep, resync);
  }
  pthread_mutex_unlock(&m->lock);
  return r;
}

/* ---- a reshape (sync/reshape.c, lib/grow.c) ------------------------------------ */

/* md's super_1_sync() during a reshape: raid_disks is the new shape's
 * (a->raid_disks forwards; backwards the array keeps its roles until the
 * end), level, layout and chunk the old one's, the new ones (a->geo_new's)
 * in new_*, delta_disks the members added (0 for another layout or chunk
 * alone, negative for fewer), reshape_position the line between the
 * shapes, and each member's new_offset (meta_build()) where the new
 * shape's data starts, relative to its data offset. */
struct reshape_edit {
  const struct raid_array *a;
  unsigned old_disks;
};

static void
edit_reshape_start(struct raid_superblock *sb, const void *arg)
{
  const struct reshape_edit *e = arg;

  /* A RAID 0 restriped is a RAID 5 from this write on (lib/grow.c), as
   * mdadm's is a RAID 4 for md's reshape: the level and old shape too. */
  if (sb->level != e->a->level) {
    sb->level = e->a->level;
    sb->layout = (uint32_t)e->a->geo_old->layout;
    sb->chunksize = e->a->geo_old->chunk_sectors;
  }
  sb->feature_map |= RAID_SB_FEATURE_RESHAPE_ACTIVE;
  sb->raid_disks = e->a->geo_new->raid_disks;
  sb->delta_disks = (int32_t)(e->a->geo_new->raid_disks - e->old_disks);
  sb->new_level = sb->level;
  sb->new_layout = (uint32_t)e->a->geo_new->layout;
  sb->new_chunk = e->a->geo_new->chunk_sectors;
  sb->reshape_position = 0;
  /* Backwards (lib/grow.c's back_plan): from the new shape's end down,
   * over the member size as the reshape cut it; the feature bit only over
   * as many members, as md writes it (delta_disks < 0 says it else). */
  if (e->a->reshape_back) {
    if (sb->delta_disks == 0)
      sb->feature_map |= RAID_SB_FEATURE_RESHAPE_BACKWARDS;
    sb->reshape_position = atomic_load(&e->a->reshape_pos) >> SECTOR_SHIFT;
    sb->size = e->a->member_size >> SECTOR_SHIFT;
  }
}

int
meta_reshape_start(struct raid_array *a, unsigned old_disks)
{
  struct reshape_edit e = { a, old_disks };

  return meta_edit(a, edit_reshape_start, &e);
}

int
meta_reshape_checkpoint(struct raid_array *a, uint64_t pos)
{
  struct array_meta *m = a->meta;
  uint64_t keep;
  int r;

  pthread_mutex_lock(&m->lock);
  keep = m->sb.reshape_position;
  m->sb.reshape_position = pos >> SECTOR_SHIFT;
  if ((r = meta_write_locked(a, true)) < 0)
    m->sb.reshape_position = keep;
  pthread_mutex_unlock(&m->lock);
  return r;
}

/* md_finish_reshape(): each member's data starts at its new offset, with
 * as much more room as the offset moved; the superblocks say the new
 * shape alone, at the array's level and number of roles now (a RAID 0
 * restriped ends as one: sync/reshape.c).  Members whose superblock write
 * failed are failed by the write; if none took it, nothing changes. */
int
meta_reshape_finish(struct raid_array *a)
{
  struct array_meta *m = a->meta;
  struct live l[2 * RAID_MAX_MEMBERS + RAID_MAX_MEMBERS];
  struct raid_superblock keep;
  int64_t shift = (int64_t)a->geo_new->shift;   /* bytes the data start moves */
  uint64_t sizes[2 * RAID_MAX_MEMBERS + RAID_MAX_MEMBERS];
  bool resync = false;
  unsigned i, n;
  int r;

  pthread_mutex_lock(&m->lock);
  keep = m->sb;
  n = live_members(a, l);
  for (i = 0; i < n; i++)
    if (l[i].slot >= 0) {
      l[i].m->data_offset += (uint64_t)shift;
      l[i].m->data_size -= (uint64_t)(shift / RAID_SECTOR_SIZE);
      a->moff[l[i].slot] = l[i].m->data_offset;
    }
  m->sb.feature_map &= ~(RAID_SB_FEATURE_RESHAPE_ACTIVE | RAID_SB_FEATURE_RESHAPE_BACKWARDS);
  m->sb.layout = m->sb.new_layout;
  m->sb.chunksize = m->sb.new_chunk;
  m->sb.level = m->sb.new_level;
  if (a->level != (int)m->sb.new_level) {
    m->sb.level = a->level;
    m->sb.layout = (uint32_t)a->layout;
    m->sb.raid_disks = a->raid_disks;
  }
  if (a->level == RAID_LEVEL_0)
    stripe_sizes(a, l, n, sizes, &resync);
  m->sb.delta_disks = 0;
  m->sb.reshape_position = 0;
  if ((r = meta_write_locked(a, true)) < 0) {
    if (a->level == RAID_LEVEL_0)
      stripe_back(a, l, n, sizes, resync);
    m->sb = keep;
    for (i = 0; i < n; i++)
      if (l[i].slot >= 0) {
        l[i].m->data_offset -= (uint64_t)shift;
        l[i].m->data_size += (uint64_t)(shift / RAID_SECTOR_SIZE);
        a->moff[l[i].slot] = l[i].m->data_offset;
      }
  }
  pthread_mutex_unlock(&m->lock);
  return r;
}
