/* Geometry: pure mappings from array sectors to member sectors.
 *
 * These are Linux md's formulas, so that an array moves between raidd and
 * the kernel's md in both directions: raid0.c's map_sector() for a single
 * zone (all members the same size), raid5.c's raid5_compute_sector() for
 * the six RAID 5 layouts (four with the parity rotating over the members,
 * two with it on a fixed member), and raid10.c's __raid10_find_phys() for
 * the "near" layout.  Sectors here are relative to the members' data
 * offset.  Nothing in this file does I/O or touches shared state.
 */
#include <config.h>

#include "internal.h"
#include "raid/levels.h"

void
geo_raid0_map(unsigned raid_disks, unsigned chunk_sectors, uint64_t sector,
              unsigned *disk, uint64_t *member_sector)
{
  uint64_t chunk = sector / chunk_sectors;

  *disk = chunk % raid_disks;
  *member_sector = (chunk / raid_disks) * chunk_sectors + sector % chunk_sectors;
}

unsigned
geo_raid5_pd_idx(int layout, unsigned raid_disks, uint64_t stripe)
{
  unsigned data_disks = raid_disks - 1;

  switch (layout) {
  case RAID_LAYOUT_LEFT_ASYMMETRIC:
  case RAID_LAYOUT_LEFT_SYMMETRIC:
    return data_disks - stripe % raid_disks;
  case RAID_LAYOUT_PARITY_FIRST:
    return 0;
  case RAID_LAYOUT_PARITY_LAST:
    return data_disks;
  case RAID_LAYOUT_RIGHT_ASYMMETRIC:
  case RAID_LAYOUT_RIGHT_SYMMETRIC:
  default:
    return stripe % raid_disks;
  }
}

unsigned
geo_raid5_dd_idx(int layout, unsigned raid_disks, unsigned pd_idx,
                 unsigned data_idx)
{
  switch (layout) {
  case RAID_LAYOUT_LEFT_ASYMMETRIC:
  case RAID_LAYOUT_RIGHT_ASYMMETRIC:
  case RAID_LAYOUT_PARITY_FIRST:
  case RAID_LAYOUT_PARITY_LAST:
    /* Data fills the members in order, stepping over the parity: with
     * the parity first, data index i is on member i + 1; last, on i. */
    return data_idx >= pd_idx ? data_idx + 1 : data_idx;
  case RAID_LAYOUT_LEFT_SYMMETRIC:
  case RAID_LAYOUT_RIGHT_SYMMETRIC:
  default:
    /* Data starts just after the parity and wraps around. */
    return (pd_idx + 1 + data_idx) % raid_disks;
  }
}

void
geo_raid5_map(int layout, unsigned raid_disks, unsigned chunk_sectors,
              uint64_t sector, struct raid5_map *out)
{
  unsigned data_disks = raid_disks - 1;
  uint64_t chunk_number = sector / chunk_sectors;
  uint64_t chunk_offset = sector % chunk_sectors;

  out->stripe = chunk_number / data_disks;
  out->pd_idx = geo_raid5_pd_idx(layout, raid_disks, out->stripe);
  out->dd_idx = geo_raid5_dd_idx(layout, raid_disks, out->pd_idx,
                                 chunk_number % data_disks);
  out->member_sector = out->stripe * chunk_sectors + chunk_offset;
}

/* md numbers each "-6" layout 16 past the RAID 5 layout it is over all
 * members but the last (ALGORITHM_LEFT_ASYMMETRIC_6 = 16, ...). */
static bool
layout_is_6(int layout)
{
  return layout >= GEO_LAYOUT_LEFT_ASYMMETRIC_6 && layout <= GEO_LAYOUT_PARITY_FIRST_6;
}

void
geo_raid6_pq(int layout, unsigned raid_disks, uint64_t stripe, unsigned *pd, unsigned *qd)
{
  unsigned n = raid_disks;

  if (layout_is_6(layout)) {
    /* RAID 5's over the first N - 1, Q on the last. */
    *pd = geo_raid5_pd_idx(layout - GEO_LAYOUT_LEFT_ASYMMETRIC_6, n - 1, stripe);
    *qd = n - 1;
  }
  else if (layout == RAID_LAYOUT_PARITY_LAST) {
    *pd = n - 2;
    *qd = n - 1;
  }
  else {
    /* RAID 5's P, Q on the next member: "Q D D D P" when P is last. */
    *pd = geo_raid5_pd_idx(layout, n, stripe);
    *qd = (*pd + 1) % n;
  }
}

unsigned
geo_raid6_dd_idx(int layout, unsigned raid_disks, unsigned pd, unsigned data_idx)
{
  unsigned n = raid_disks, i = data_idx;

  if (layout_is_6(layout))
    return geo_raid5_dd_idx(layout - GEO_LAYOUT_LEFT_ASYMMETRIC_6, n - 1, pd, i);
  switch (layout) {
  case RAID_LAYOUT_LEFT_ASYMMETRIC:
  case RAID_LAYOUT_RIGHT_ASYMMETRIC:
    /* In member order past P and Q; with P last, Q is first. */
    return pd == n - 1 ? i + 1 : i >= pd ? i + 2 : i;
  case RAID_LAYOUT_PARITY_FIRST:
    return i + 2;
  case RAID_LAYOUT_PARITY_LAST:
    return i;
  case RAID_LAYOUT_LEFT_SYMMETRIC:
  case RAID_LAYOUT_RIGHT_SYMMETRIC:
  default:
    return (pd + 2 + i) % n;            /* from just after Q, wrapping */
  }
}

unsigned
geo_raid6_slot(unsigned raid_disks, unsigned pd, unsigned qd, unsigned disk)
{
  unsigned n = raid_disks, d0 = qd == n - 1 ? 0 : qd + 1;
  unsigned k = (disk + n - d0) % n, kp = (pd + n - d0) % n, kq = (qd + n - d0) % n;

  if (disk == pd)
    return n - 2;
  if (disk == qd)
    return n - 1;
  /* The data members met walking up from d0 before DISK. */
  return k - (kp < k) - (kq < k);
}

void
geo_raid6_map(int layout, unsigned raid_disks, unsigned chunk_sectors, uint64_t sector,
              struct raid6_map *out)
{
  unsigned data_disks = raid_disks - 2;
  uint64_t chunk_number = sector / chunk_sectors;

  out->stripe = chunk_number / data_disks;
  geo_raid6_pq(layout, raid_disks, out->stripe, &out->pd_idx, &out->qd_idx);
  out->dd_idx = geo_raid6_dd_idx(layout, raid_disks, out->pd_idx,
                                 (unsigned)(chunk_number % data_disks));
  out->slot = geo_raid6_slot(raid_disks, out->pd_idx, out->qd_idx, out->dd_idx);
  out->member_sector = out->stripe * chunk_sectors + sector % chunk_sectors;
}

void
geo_raid10_map(unsigned raid_disks, unsigned copies, unsigned chunk_sectors,
               uint64_t sector, unsigned k, unsigned *disk,
               uint64_t *member_sector)
{
  /* The copies of chunk C occupy "slots" C*copies .. C*copies+copies-1 of
   * a sequence that fills the members row by row. */
  uint64_t slot = (sector / chunk_sectors) * copies + k;

  *disk = slot % raid_disks;
  *member_sector = (slot / raid_disks) * chunk_sectors + sector % chunk_sectors;
}

uint64_t
geo_array_size(int level, unsigned raid_disks, unsigned copies, uint32_t chunk_size,
               uint64_t member_size)
{
  switch (level) {
  case RAID_LEVEL_0:
    return member_size * raid_disks;
  case RAID_LEVEL_1:
    return member_size;
  case RAID_LEVEL_5:
    return member_size * (raid_disks - 1);
  case RAID_LEVEL_10:
    /* Whole chunks, N/c of them per row. */
    return member_size / chunk_size * raid_disks / copies * chunk_size;
  default:
    return 0;
  }
}
