/* Creating an array: check every member, lay it out as mdadm would
 * (data offsets, the bitmap's place), then write the superblocks. */
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


/* What md's bitmap covers: its resync range (resync_max_sectors), each
 * member's data for RAID 1 and 5, the array for RAID 10. */
uint64_t
bitmap_sync_size(const struct raid_array *a)
{
  uint64_t size = a->size;

  if (a->level != RAID_LEVEL_10)
    return a->member_size >> SECTOR_SHIFT;
  /* A RAID 10's covers the array: during a reshape the larger of its two
   * sizes, the new one going to more members, as md's
   * raid10_start_reshape() resizes its bitmap at the start (the array
   * shows the smaller until the end). */
  if (atomic_load(&a->reshape_pos) != UINT64_MAX && a->geo_old && a->geo_new)
    size = MAX(geo_data_size(a->level, a->copies, a->geo_old, a->member_size),
               geo_data_size(a->level, a->copies, a->geo_new, a->member_size));
  return size >> SECTOR_SHIFT;
}

/* A bitmap superblock for array A with chunk CHUNK, mdadm's defaults:
 * md's 5 s daemon_sleep, no write-behind. */
void
bitmap_sb_init(const struct raid_array *a, const struct array_meta *m, uint32_t chunk,
               struct raid_bitmap_super *b)
{
  memset(b, 0, sizeof *b);
  b->magic = RAID_BITMAP_MAGIC;
  b->version = RAID_BITMAP_VERSION;
  memcpy(b->uuid, m->sb.set_uuid, 16);
  b->sync_size = bitmap_sync_size(a);
  b->chunksize = chunk;
  b->daemon_sleep = RAID_BITMAP_DAEMON_SLEEP;
}

/* The new array's bitmap, placed as mdadm places it (bitmap.c). */
static int
create_bitmap(struct raid_array *a, struct array_meta *m)
{
  struct raid_bitmap_super b;
  uint32_t chunk;
  int32_t offset;
  int r;

  r = bitmap_plan(a->name, a->metadata, a->member_size >> SECTOR_SHIFT,
                  bitmap_sync_size(a), a->bitmap_chunk, &chunk, &offset);
  if (r < 0)
    return r;
  bitmap_sb_init(a, m, chunk, &b);
  b.write_behind = a->write_behind;
  /* As the kernel records it: the room before a 1.0 superblock, unknown
   * (0) between a 1.1 or 1.2 superblock and the data. */
  b.sectors_reserved = offset < 0 ? (uint32_t)-offset : 0;
  return bitmap_new(&b, offset, &m->bm);
}

EXPORT int
raid_array_create(const struct raid_config *cfg, struct raid_member *const *members,
                  unsigned flags, struct raid_array **arrayp)
{
  struct raid_config c = *cfg;
  struct raid_array *a;
  struct array_meta *m;
  char host[64] = "";
  unsigned i, present;
  int r, version;

  *arrayp = NULL;
  if (flags & ~RAID_CREATE_ASSUME_CLEAN)
    return set_error(EINVAL, "array %s: unknown create flags 0x%x",
                     cfg->name ? cfg->name : "md", flags);
  version = meta_version(c.metadata);
  if (version < 0)
    return set_error(EINVAL, "array %s: metadata version 0x%x is unknown (1.0, "
                     "1.1 and 1.2 are)", cfg->name ? cfg->name : "md",
                     (unsigned)c.metadata);
  c.metadata = version;
  if (c.data_offset == 0 && version != RAID_METADATA_1_0)
    c.data_offset = RAID_DATA_OFFSET_DEFAULT;
  if (version != RAID_METADATA_1_0) {
    uint64_t sb_end = raid_superblock_offset(version, UINT64_MAX >> SECTOR_SHIFT)
      * RAID_SECTOR_SIZE + RAID_SB_BYTES;

    if (c.data_offset < sb_end)
      return set_error(EINVAL, "array %s: data offset %" PRIu64 " overlaps the "
                       "metadata %s superblock at %" PRIu64 "..%" PRIu64,
                       cfg->name ? cfg->name : "md", c.data_offset,
                       raid_metadata_name(version), sb_end - RAID_SB_BYTES, sb_end - 1);
  }
  if (c.name && (r = raid_name_check(c.name)) < 0)
    return r;
  r = array_new(&c, members, NULL, &a);
  if (r < 0)
    return r;

  m = calloc(1, sizeof *m);
  if (m == NULL) {
    for (i = 0; i < a->raid_disks; i++)
      a->members[i] = NULL;     /* still the caller's */
    raid_array_free(a);
    return set_error(ENOMEM, "array %s: out of memory", c.name);
  }
  pthread_mutex_init(&m->lock, NULL);
  if ((r = random_bytes(m->sb.set_uuid, 16)) < 0)
    goto fail;
  if (a->write_behind && !a->bitmap) {
    r = set_error(EINVAL, "array %s: write-behind needs the write-intent bitmap "
                  "(mdadm's default gives none to members of 100 GiB or less)",
                  a->name);
    goto fail;
  }
  if (a->bitmap && (r = create_bitmap(a, m)) < 0)
    goto fail;
  gethostname(host, sizeof host - 1);
  host[strcspn(host, ".")] = '\0';
  /* mdadm's "homehost:name" when it fits in the 32 bytes, else the name. */
  if (host[0] && strlen(host) + 1 + strlen(a->name) <= 32) {
    strcpy(m->sb.set_name, host);
    strcat(m->sb.set_name, ":");
    strcat(m->sb.set_name, a->name);
  }
  else
    strcpy(m->sb.set_name, a->name);
  m->sb.ctime = md_time();
  m->sb.level = a->level;
  m->sb.layout = a->level == RAID_LEVEL_5 || a->level == RAID_LEVEL_10 ? (uint32_t)a->layout : 0;
  m->sb.size = a->member_size >> SECTOR_SHIFT;
  m->sb.chunksize = a->chunk_sectors;
  m->sb.raid_disks = a->raid_disks;
  m->sb.max_dev = MAX(META_MAX_DEV, a->raid_disks);
  m->sb.events = 0;
  /* Roles created missing (NULL members) hold nothing that could
   * disagree: a RAID 5 missing one has no parity to check, a RAID 1 down
   * to one member no second copy.  The members added later are rebuilt. */
  present = a->raid_disks - raid_array_degraded(a);
  m->sb.resync_offset = (flags & RAID_CREATE_ASSUME_CLEAN) || a->level == RAID_LEVEL_0 ||
    (a->level == RAID_LEVEL_5 && present < a->raid_disks) ||
    (a->level == RAID_LEVEL_1 && present == 1)
    ? RAID_SB_MAX_SECTOR : 0;
  m->needs_resync = m->sb.resync_offset != RAID_SB_MAX_SECTOR;
  /* Copies disagree until the resync has been there, so mirrors read the
   * first copy (balance.c) from the start, not only once a resync runs. */
  if (m->needs_resync)
    atomic_store(&a->resync_front, 0);
  for (i = 0; i < a->raid_disks; i++) {
    struct raid_member *x = a->members[i];

    if (x == NULL)
      continue;                 /* missing: device number i stays unused */
    x->dev_number = i;
    if ((r = random_bytes(x->dev_uuid, 16)) < 0)
      goto fail;
    x->super_offset = raid_superblock_offset(version, x->size >> SECTOR_SHIFT);
    /* RAID 0 records exactly the size it uses, so that md sees one zone;
     * a 1.0 bitmap's data ends where the bitmap starts (mdadm's), and
     * without one where mdadm's room for it starts (meta_bitmap_reserve():
     * md's --grow --size max takes data_size, and must leave it too). */
    if (a->level == RAID_LEVEL_0)
      x->data_size = a->member_size >> SECTOR_SHIFT;
    else if (m->bm && version == RAID_METADATA_1_0)
      x->data_size = x->super_offset + m->bm->offset - (a->moff[i] >> SECTOR_SHIFT);
    else
      x->data_size = (meta_data_end(version, meta_bitmap_reserve(a, x->size), x->size) -
                      a->moff[i]) >> SECTOR_SHIFT;
    if (m->bm) {
      struct raid_superblock *xs = calloc(1, sizeof *xs);

      if (xs == NULL) {
        r = set_error(ENOMEM, "array %s: out of memory", a->name);
        goto fail;
      }
      xs->super_offset = x->super_offset;
      xs->data_offset = a->moff[i] >> SECTOR_SHIFT;
      xs->size = a->member_size >> SECTOR_SHIFT;
      xs->max_dev = m->sb.max_dev;
      r = bitmap_check_place(xs, m->bm->offset, m->bm->area, x->name);
      free(xs);
      if (r < 0) {
        r = set_error(EINVAL, "array %s: no room for the write-intent bitmap: %s "
                      "(a larger data offset makes room)", a->name, raid_get_error());
        goto fail;
      }
    }
  }
  /* A new array that needs a resync has every chunk to resync, as
   * mdadm creates its bitmap; --assume-clean none. */
  if (m->bm)
    bitmap_set_all(m->bm, m->needs_resync);
  a->meta = m;
  r = meta_start(a);
  if (r < 0)
    goto fail;
  *arrayp = a;
  return 0;

 fail:
  run_stop(a);
  a->meta = NULL;
  pthread_mutex_destroy(&m->lock);
  bitmap_free(m->bm);
  free(m);
  for (i = 0; i < a->raid_disks; i++)
    a->members[i] = NULL;       /* still the caller's */
  raid_array_free(a);
  return r;
}
