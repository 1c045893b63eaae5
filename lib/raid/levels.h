/* raid/: what the personalities share with each other and the unit tests:
 * md's mappings (geometry.c), md's read balancing (balance.c) and RAID 5's
 * plug window (raid5-merge.c).  Nothing below raid/ includes it: the core
 * and the sync engine reach a level through struct personality
 * (internal.h, "the doors"). */
#ifndef RAID_RAID_LEVELS_H
#define RAID_RAID_LEVELS_H

#include "internal.h"

/* ---- raid/raid5-merge.c ----------------------------------------------------- */

/* How long a plugged RAID 5 write waits for the rest of its row: USEC, or
 * (0, the default) the array's mean write latency within 0.1 to 100 ms.
 * Tests set a window longer than any test, so that whether a row is
 * merged never depends on how fast the machine is. */
void raid5_set_plug_window(struct raid_array *a, unsigned usec);

/* ---- raid/geometry.c -------------------------------------------------------- */

/* Pure mappings from array sectors to member sectors, exactly md's. */
struct raid5_map {
  unsigned dd_idx;               /* member holding the data */
  unsigned pd_idx;               /* member holding the stripe's parity */
  uint64_t stripe;               /* stripe (row) number */
  uint64_t member_sector;        /* sector on the member, from data start */
};
void geo_raid0_map(unsigned raid_disks, unsigned chunk_sectors,
                   uint64_t sector, unsigned *disk, uint64_t *member_sector);
void geo_raid5_map(int layout, unsigned raid_disks, unsigned chunk_sectors,
                   uint64_t sector, struct raid5_map *out);
/* Parity member of STRIPE and the member holding data index DATA_IDX. */
unsigned geo_raid5_pd_idx(int layout, unsigned raid_disks, uint64_t stripe);
unsigned geo_raid5_dd_idx(int layout, unsigned raid_disks, unsigned pd_idx,
                          unsigned data_idx);
/* RAID 6 (md's raid6, raid5.c's raid5_compute_sector() for level 6): the
 * six RAID 5 layouts with Q after P (md's numbers, RAID_LAYOUT_*), and the
 * "-6" forms md uses while converting from or to RAID 5: a RAID 5 layout
 * over all members but the last, Q on the last (PARITY_LAST with Q last is
 * md's PARITY_N itself).  md's DDF layouts are not here. */
#define GEO_LAYOUT_LEFT_ASYMMETRIC_6 16
#define GEO_LAYOUT_RIGHT_ASYMMETRIC_6 17
#define GEO_LAYOUT_LEFT_SYMMETRIC_6 18
#define GEO_LAYOUT_RIGHT_SYMMETRIC_6 19
#define GEO_LAYOUT_PARITY_FIRST_6 20
struct raid6_map {
  unsigned dd_idx;               /* member holding the data */
  unsigned pd_idx, qd_idx;       /* members holding the stripe's P and Q */
  unsigned slot;                 /* the data's place in md's syndrome (raid6.h) */
  uint64_t stripe;               /* stripe (row) number */
  uint64_t member_sector;        /* sector on the member, from data start */
};
void geo_raid6_map(int layout, unsigned raid_disks, unsigned chunk_sectors,
                   uint64_t sector, struct raid6_map *out);
/* STRIPE's P and Q members; the member of data index DATA_IDX. */
void geo_raid6_pq(int layout, unsigned raid_disks, uint64_t stripe, unsigned *pd,
                  unsigned *qd);
unsigned geo_raid6_dd_idx(int layout, unsigned raid_disks, unsigned pd, unsigned data_idx);
/* Member DISK's place in md's syndrome of a stripe with P on PD and Q on QD
 * (raid5.c's raid6_d0() and raid6_idx_to_slot(): the data members counted
 * from the one after Q, or from member 0 when Q is last); P's is
 * RAID_DISKS - 2, Q's RAID_DISKS - 1. */
unsigned geo_raid6_slot(unsigned raid_disks, unsigned pd, unsigned qd, unsigned disk);
/* RAID 10 near: copy K (0..copies-1) of the chunk holding SECTOR. */
void geo_raid10_map(unsigned raid_disks, unsigned copies, unsigned chunk_sectors,
                    uint64_t sector, unsigned k, unsigned *disk,
                    uint64_t *member_sector);

/* The array's bytes when each of RAID_DISKS members holds MEMBER_SIZE bytes
 * of data (md's raid0_size(), raid1_size(), raid5_size(), raid10_size()):
 * what a level's setup sets, and what raid_array_grow_size() sets anew. */
uint64_t geo_array_size(int level, unsigned raid_disks, unsigned copies,
                        uint32_t chunk_size, uint64_t member_size);

/* ---- raid/balance.c ----------------------------------------------------------- */

/* md's read_balance(): pick one of N candidate copies (member slot and
 * member byte offset; each gets its member bound) for a read of LEN bytes.  A sequential reader stays
 * on its copy; otherwise the copy with the fewest requests in flight wins,
 * ties going to the nearest head position.  Returns the index into the
 * candidates, or -1 when none is usable. */
struct read_candidate {
  unsigned slot;
  uint64_t offset;
  struct raid_member *m;         /* filled in: the member bound, or NULL */
};
int read_balance(struct raid_array *a, struct read_candidate *c, unsigned n,
                 size_t len);

#endif
