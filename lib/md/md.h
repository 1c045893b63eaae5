/* md/: what the files of the on-disk format floor share among themselves
 * (the floors above call md/'s meta.h; the core sees neither: it reaches
 * md/ through struct meta_ops and the write gates, internal.h). */
#ifndef RAID_MD_H
#define RAID_MD_H

#include "md/meta.h"

/* Roles kept in the superblock: mdadm rounds 256 + 2 per device up to
 * 512 bytes, which is 128 roles for up to 128 devices. */
#define META_MAX_DEV 128u

struct array_meta {
  pthread_mutex_t lock;                 /* serialises superblock writes */
  struct raid_superblock sb;            /* set-wide fields, events, roles */
  bool needs_resync;
  uint64_t resync_done;                 /* bytes of each member resynced */
  /* What updates write: "active" (dirty), not "clean": from meta_start()
   * to meta_stop() except while safe mode has the array clean.  Written
   * under the lock. */
  _Atomic bool active;
  /* meta_may_say_clean(): the members may say "clean": set before a
   * clean update begins, cleared once an active one is on every member.
   * So false means that every member says "active" (tests rely on it: a
   * crash then must leave the array needing a resync). */
  _Atomic bool may_say_clean;
  /* raid_array_clean(): every member says "clean": set once a clean
   * update is done, cleared before an active one begins. */
  _Atomic bool says_clean;
  /* a->fail_gen the superblocks on stable storage record (written under
   * the lock, read without it by meta_failures_recorded()). */
  _Atomic uint64_t recorded_gen;
  /* Device numbers that held a role when the array was assembled but
   * were not there: the members it may take back (raid_array_readd_*). */
  bool awaited[RAID_SB_MAX_DEV];
  /* What RAID_ASSEMBLE_FORCE took back (raid_array_forced_members()). */
  struct raid_forced_member forced[RAID_MAX_MEMBERS];
  unsigned nforced;
  struct meta_bitmap *bm;               /* md's internal bitmap, or NULL */
};

/* ---- meta.c: the superblock write path ---------------------------------------- */

/* A member the superblocks are written to. */
struct live {
  struct raid_member *m;
  int slot;                             /* role, or -1 for a spare */
  uint32_t features;
  uint64_t recovery;                    /* bytes, with RECOVERY_OFFSET */
};
/* Every member still in the array (roles in sync or recovering,
 * replacements, spares) into L; how many. */
unsigned live_members(struct raid_array *a, struct live *l);
/* A's superblock as the next update would write it, into SB.  Caller
 * holds the meta lock. */
void meta_current_locked(struct raid_array *a, struct raid_superblock *sb);
/* Write every live member's superblock (and the bitmap), BUMP: events
 * bumped.  Caller holds the meta lock.  0 when any member took it. */
int meta_write_locked(struct raid_array *a, bool bump);
/* Start A's superblock life: "active" written, the bitmap writer and safe
 * mode started (their gates in a->gate[]).  run_stop() stops both. */
int meta_start(struct raid_array *a);
void run_stop(struct raid_array *a);
/* md's time stamp (seconds, as md writes them: md_time()), LEN random
 * bytes (UUIDs), whether md's superblock LEVEL is one we run. */
uint64_t md_time(void);
int random_bytes(uint8_t *buf, size_t len);
int level_supported(int32_t level);

/* ---- create.c: the bitmap of a new array (set-bitmap.c too) ------------------- */

/* What md's bitmap covers, in sectors (its sync_size). */
uint64_t bitmap_sync_size(const struct raid_array *a);
/* A bitmap superblock for A with chunk CHUNK and mdadm's defaults. */
void bitmap_sb_init(const struct raid_array *a, const struct array_meta *m, uint32_t chunk,
                    struct raid_bitmap_super *b);

/* Does the reshape SB records run backwards, from the end down?  md says
 * so by delta_disks < 0 (fewer members), and with RESHAPE_BACKWARDS only
 * over as many members (super_1_sync() sets the bit for no other). */
static inline bool
sb_backwards(const struct raid_superblock *sb)
{
  return (sb->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE) &&
    (sb->delta_disks < 0 ||
     (sb->delta_disks == 0 && (sb->feature_map & RAID_SB_FEATURE_RESHAPE_BACKWARDS)));
}

/* The roles of the array superblock SB describes: raid_disks, and while
 * a reshape to fewer members runs, the old shape's as well (md's
 * max(raid_disks, previous_raid_disks)); more than any array has (so
 * refused) when the fields make no sense. */
static inline unsigned
sb_roles(const struct raid_superblock *sb)
{
  uint64_t n = sb->raid_disks;

  if ((sb->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE) && sb->delta_disks < 0)
    n += (uint64_t)-(int64_t)sb->delta_disks;
  return n > 0xffff ? 0xffff : (unsigned)n;
}

#endif /* RAID_MD_H */
