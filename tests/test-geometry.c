/* Description: the library's pure mappings (lib/geometry.c geo_*) agree
 * with an independent reference of md's formulas (tests/testlib-md.c ref_*)
 * for RAID 0, RAID 5 in all six layouts and RAID 10 near layouts, over
 * every member count 2..8 the level allows, chunks from 4 KiB to 1 MiB,
 * the first rows sector by chunk boundary and thousands of random sectors
 * up to 2^40.  Hand-written tables taken from md's documentation pin the
 * reference itself, and a bijection check proves no two array sectors
 * share a place and no data lands on a RAID 5 parity chunk.  RAID 6 (its
 * six layouts and md's five "-6" ones) against tables worked out by hand
 * from md's raid5.c, P and Q and the syndrome order included, and the
 * same bijection over 4 to 8 disks.
 */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "raid/levels.h"
#include "testlib.h"

#define MAX_DISKS 8

static const unsigned chunk_sectors_list[] = { 8, 128, 1024, 2048 };  /* 4K .. 1M */
#define NCHUNKS ARRAY_SIZE(chunk_sectors_list)

/* ---- the reference, pinned by hand-written tables ------------------------------ */

/* md's RAID 5 layouts with 4 disks: for stripes 0..3, the parity disk and
 * the disk of data chunks 0, 1, 2 of the stripe (md.4, raid5.c). */
static const struct {
  int layout;
  unsigned pd[4];
  unsigned dd[4][3];
} raid5_tables[] = {
  { RAID_LAYOUT_LEFT_ASYMMETRIC, { 3, 2, 1, 0 },
    { { 0, 1, 2 }, { 0, 1, 3 }, { 0, 2, 3 }, { 1, 2, 3 } } },
  { RAID_LAYOUT_RIGHT_ASYMMETRIC, { 0, 1, 2, 3 },
    { { 1, 2, 3 }, { 0, 2, 3 }, { 0, 1, 3 }, { 0, 1, 2 } } },
  { RAID_LAYOUT_LEFT_SYMMETRIC, { 3, 2, 1, 0 },
    { { 0, 1, 2 }, { 3, 0, 1 }, { 2, 3, 0 }, { 1, 2, 3 } } },
  { RAID_LAYOUT_RIGHT_SYMMETRIC, { 0, 1, 2, 3 },
    { { 1, 2, 3 }, { 2, 3, 0 }, { 3, 0, 1 }, { 0, 1, 2 } } },
  /* Parity on one member in every row, data in member order on the rest. */
  { RAID_LAYOUT_PARITY_FIRST, { 0, 0, 0, 0 },
    { { 1, 2, 3 }, { 1, 2, 3 }, { 1, 2, 3 }, { 1, 2, 3 } } },
  { RAID_LAYOUT_PARITY_LAST, { 3, 3, 3, 3 },
    { { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 } } },
};

/* Proves the hand tables hold for both the reference and the library. */
START_TEST(test_raid5_tables)
{
  const unsigned cs = 128;
  size_t l;
  unsigned s, k;

  for (l = 0; l < ARRAY_SIZE(raid5_tables); l++) {
    int layout = raid5_tables[l].layout;
    for (s = 0; s < 4; s++) {
      tassert(geo_raid5_pd_idx(layout, 4, s) == raid5_tables[l].pd[s],
                    "%s stripe %u: geo_raid5_pd_idx %u, md %u", layout_name(5, layout),
                    s, geo_raid5_pd_idx(layout, 4, s), raid5_tables[l].pd[s]);
      for (k = 0; k < 3; k++) {
        uint64_t sector = ((uint64_t)s * 3 + k) * cs + 5, stripe, msec;
        unsigned dd, pd;
        struct raid5_map map;

        ref_raid5_map(layout, 4, cs, sector, &dd, &pd, &stripe, &msec);
        tassert(dd == raid5_tables[l].dd[s][k] && pd == raid5_tables[l].pd[s] &&
                      stripe == s && msec == s * cs + 5,
                      "reference %s stripe %u chunk %u: dd %u pd %u", layout_name(5, layout),
                      s, k, dd, pd);
        geo_raid5_map(layout, 4, cs, sector, &map);
        tassert(map.dd_idx == dd && map.pd_idx == pd && map.stripe == s &&
                      map.member_sector == msec,
                      "geo_raid5_map %s stripe %u chunk %u: dd %u pd %u stripe %" PRIu64
                      " sector %" PRIu64 "; md: dd %u pd %u stripe %u sector %" PRIu64,
                      layout_name(5, layout), s, k, map.dd_idx, map.pd_idx, map.stripe,
                      map.member_sector, dd, pd, s, msec);
        tassert(geo_raid5_dd_idx(layout, 4, pd, k) == dd,
                      "geo_raid5_dd_idx %s pd %u data %u = %u, md %u", layout_name(5, layout),
                      pd, k, geo_raid5_dd_idx(layout, 4, pd, k), dd);
      }
    }
  }
}
END_TEST

/* Parity-first and parity-last over 3 and 5 disks, 8-sector chunks: array
 * sectors worked out by hand to their member, member sector and the row's
 * parity member (chunk c is in row c / D at data index c % D). */
START_TEST(test_raid5_fixed_parity_tables)
{
  static const struct {
    int layout;
    unsigned disks;
    uint64_t sector;
    unsigned disk, pd;
    uint64_t msec;
  } t[] = {
    /* 3 disks: rows "P D0 D1" / "D0 D1 P". */
    { RAID_LAYOUT_PARITY_FIRST, 3, 0, 1, 0, 0 },
    { RAID_LAYOUT_PARITY_FIRST, 3, 15, 2, 0, 7 },
    { RAID_LAYOUT_PARITY_FIRST, 3, 16, 1, 0, 8 },
    { RAID_LAYOUT_PARITY_FIRST, 3, 29, 2, 0, 13 },
    { RAID_LAYOUT_PARITY_FIRST, 3, 83, 1, 0, 43 },
    { RAID_LAYOUT_PARITY_LAST, 3, 0, 0, 2, 0 },
    { RAID_LAYOUT_PARITY_LAST, 3, 15, 1, 2, 7 },
    { RAID_LAYOUT_PARITY_LAST, 3, 16, 0, 2, 8 },
    { RAID_LAYOUT_PARITY_LAST, 3, 29, 1, 2, 13 },
    { RAID_LAYOUT_PARITY_LAST, 3, 83, 0, 2, 43 },
    /* 5 disks: rows "P D0 D1 D2 D3" / "D0 D1 D2 D3 P". */
    { RAID_LAYOUT_PARITY_FIRST, 5, 0, 1, 0, 0 },
    { RAID_LAYOUT_PARITY_FIRST, 5, 31, 4, 0, 7 },
    { RAID_LAYOUT_PARITY_FIRST, 5, 32, 1, 0, 8 },
    { RAID_LAYOUT_PARITY_FIRST, 5, 50, 3, 0, 10 },
    { RAID_LAYOUT_PARITY_FIRST, 5, 1000, 2, 0, 248 },
    { RAID_LAYOUT_PARITY_LAST, 5, 0, 0, 4, 0 },
    { RAID_LAYOUT_PARITY_LAST, 5, 31, 3, 4, 7 },
    { RAID_LAYOUT_PARITY_LAST, 5, 32, 0, 4, 8 },
    { RAID_LAYOUT_PARITY_LAST, 5, 50, 2, 4, 10 },
    { RAID_LAYOUT_PARITY_LAST, 5, 1000, 1, 4, 248 },
  };
  size_t i;

  for (i = 0; i < ARRAY_SIZE(t); i++) {
    const char *name = layout_name(5, t[i].layout);
    unsigned dd, pd;
    uint64_t stripe, msec;
    struct raid5_map m;

    ref_raid5_map(t[i].layout, t[i].disks, 8, t[i].sector, &dd, &pd, &stripe, &msec);
    tassert(dd == t[i].disk && pd == t[i].pd && msec == t[i].msec,
            "reference %s over %u: sector %" PRIu64 ": disk %u pd %u sector %" PRIu64
            "; by hand: disk %u pd %u sector %" PRIu64, name, t[i].disks, t[i].sector,
            dd, pd, msec, t[i].disk, t[i].pd, t[i].msec);
    geo_raid5_map(t[i].layout, t[i].disks, 8, t[i].sector, &m);
    tassert(m.dd_idx == t[i].disk && m.pd_idx == t[i].pd && m.member_sector == t[i].msec &&
            m.stripe == t[i].sector / 8 / (t[i].disks - 1),
            "geo_raid5_map %s over %u: sector %" PRIu64 ": disk %u pd %u sector %" PRIu64
            "; by hand: disk %u pd %u sector %" PRIu64, name, t[i].disks, t[i].sector,
            m.dd_idx, m.pd_idx, m.member_sector, t[i].disk, t[i].pd, t[i].msec);
  }
}
END_TEST

/* md's near-2 layout over 3 disks (md.4: "A1 A1 A2 / A2 A3 A3 / ..."), and
 * near-2 over 4 disks (pairs), near-3 over 4 disks. */
START_TEST(test_raid10_tables)
{
  static const struct {
    unsigned disks, copies, chunk, k, disk;
    uint64_t row;
  } t[] = {
    { 3, 2, 0, 0, 0, 0 }, { 3, 2, 0, 1, 1, 0 },
    { 3, 2, 1, 0, 2, 0 }, { 3, 2, 1, 1, 0, 1 },
    { 3, 2, 2, 0, 1, 1 }, { 3, 2, 2, 1, 2, 1 },
    { 3, 2, 3, 0, 0, 2 }, { 3, 2, 3, 1, 1, 2 },
    { 4, 2, 0, 0, 0, 0 }, { 4, 2, 0, 1, 1, 0 },
    { 4, 2, 1, 0, 2, 0 }, { 4, 2, 1, 1, 3, 0 },
    { 4, 2, 2, 0, 0, 1 }, { 4, 2, 2, 1, 1, 1 },
    { 4, 3, 0, 2, 2, 0 }, { 4, 3, 1, 0, 3, 0 }, { 4, 3, 1, 1, 0, 1 },
    { 4, 3, 1, 2, 1, 1 }, { 4, 3, 2, 0, 2, 1 },
  };
  const unsigned cs = 8;
  size_t i;

  for (i = 0; i < ARRAY_SIZE(t); i++) {
    uint64_t sector = (uint64_t)t[i].chunk * cs + 3, msec, gsec;
    unsigned disk, gdisk;

    ref_raid10_map(t[i].disks, t[i].copies, cs, sector, t[i].k, &disk, &msec);
    tassert(disk == t[i].disk && msec == t[i].row * cs + 3,
                  "reference near-%u over %u: chunk %u copy %u on disk %u row %" PRIu64,
                  t[i].copies, t[i].disks, t[i].chunk, t[i].k, disk, msec / cs);
    geo_raid10_map(t[i].disks, t[i].copies, cs, sector, t[i].k, &gdisk, &gsec);
    tassert(gdisk == disk && gsec == msec,
                  "geo_raid10_map near-%u over %u disks, chunk %u copy %u: disk %u "
                  "sector %" PRIu64 "; md: disk %u sector %" PRIu64,
                  t[i].copies, t[i].disks, t[i].chunk, t[i].k, gdisk, gsec, disk, msec);
  }
}
END_TEST

START_TEST(test_raid0_table)
{
  /* 3 disks, 8-sector chunks: chunk c on disk c % 3, row c / 3. */
  static const struct { uint64_t sector; unsigned disk; uint64_t msec; } t[] = {
    { 0, 0, 0 }, { 7, 0, 7 }, { 8, 1, 0 }, { 17, 2, 1 }, { 24, 0, 8 }, { 47, 2, 15 },
    { 48, 0, 16 },
  };
  size_t i;

  for (i = 0; i < ARRAY_SIZE(t); i++) {
    unsigned disk, gdisk;
    uint64_t msec, gsec;

    ref_raid0_map(3, 8, t[i].sector, &disk, &msec);
    tassert(disk == t[i].disk && msec == t[i].msec, "reference raid0 sector %" PRIu64,
                  t[i].sector);
    geo_raid0_map(3, 8, t[i].sector, &gdisk, &gsec);
    tassert(gdisk == disk && gsec == msec,
                  "geo_raid0_map 3 disks chunk 4K sector %" PRIu64 ": disk %u sector %"
                  PRIu64 "; md: disk %u sector %" PRIu64,
                  t[i].sector, gdisk, gsec, disk, msec);
  }
}
END_TEST

/* ---- the configuration matrix ------------------------------------------------------ */

struct gconf {
  int level;
  int layout;             /* RAID 5 layout */
  unsigned disks, copies, cs;
};

static struct gconf confs[1024];
static unsigned nconfs;

static void
build_confs(void)
{
  unsigned n, c, k;
  int l;

  for (c = 0; c < NCHUNKS; c++) {
    for (n = 2; n <= MAX_DISKS; n++)
      confs[nconfs++] = (struct gconf){ RAID_LEVEL_0, 0, n, 1, chunk_sectors_list[c] };
    for (n = 2; n <= MAX_DISKS; n++)
      for (l = RAID_LAYOUT_LEFT_ASYMMETRIC; l <= RAID_LAYOUT_PARITY_LAST; l++)
        confs[nconfs++] = (struct gconf){ RAID_LEVEL_5, l, n, 1, chunk_sectors_list[c] };
    for (n = 2; n <= MAX_DISKS; n++)
      for (k = 2; k <= n; k++)
        confs[nconfs++] = (struct gconf){ RAID_LEVEL_10, 0, n, k, chunk_sectors_list[c] };
  }
}

static const char *
gconf_str(const struct gconf *g, char *buf, size_t len)
{
  if (g->level == RAID_LEVEL_10)
    snprintf(buf, len, "raid10 near-%u disks=%u chunk=%uK", g->copies, g->disks, g->cs / 2);
  else
    snprintf(buf, len, "raid%d %s disks=%u chunk=%uK", g->level,
             layout_name(g->level, g->layout), g->disks, g->cs / 2);
  return buf;
}

/* Compare one sector's mapping. */
static void
check_sector(const struct gconf *g, uint64_t sector, const char *desc)
{
  unsigned disk, gdisk, k;
  uint64_t msec, gsec;

  switch (g->level) {
  case RAID_LEVEL_0:
    ref_raid0_map(g->disks, g->cs, sector, &disk, &msec);
    geo_raid0_map(g->disks, g->cs, sector, &gdisk, &gsec);
    tassert(gdisk == disk && gsec == msec,
                  "%s: sector %" PRIu64 ": geo_raid0_map disk %u sector %" PRIu64
                  ", md disk %u sector %" PRIu64, desc, sector, gdisk, gsec, disk, msec);
    break;
  case RAID_LEVEL_5: {
    unsigned pd;
    uint64_t stripe;
    struct raid5_map m;
    ref_raid5_map(g->layout, g->disks, g->cs, sector, &disk, &pd, &stripe, &msec);
    memset(&m, 0xff, sizeof m);
    geo_raid5_map(g->layout, g->disks, g->cs, sector, &m);
    tassert(m.dd_idx == disk && m.pd_idx == pd && m.stripe == stripe &&
                  m.member_sector == msec,
                  "%s: sector %" PRIu64 ": geo_raid5_map dd %u pd %u stripe %" PRIu64
                  " sector %" PRIu64 ", md dd %u pd %u stripe %" PRIu64 " sector %" PRIu64,
                  desc, sector, m.dd_idx, m.pd_idx, m.stripe, m.member_sector,
                  disk, pd, stripe, msec);
    tassert(geo_raid5_pd_idx(g->layout, g->disks, stripe) == pd,
                  "%s: geo_raid5_pd_idx(stripe %" PRIu64 ") = %u, md %u", desc, stripe,
                  geo_raid5_pd_idx(g->layout, g->disks, stripe), pd);
    tassert(geo_raid5_dd_idx(g->layout, g->disks, pd,
                                   (unsigned)((sector / g->cs) % (g->disks - 1))) == disk,
                  "%s: geo_raid5_dd_idx(pd %u, data %u) = %u, md %u", desc, pd,
                  (unsigned)((sector / g->cs) % (g->disks - 1)),
                  geo_raid5_dd_idx(g->layout, g->disks, pd,
                                   (unsigned)((sector / g->cs) % (g->disks - 1))), disk);
    break;
  }
  case RAID_LEVEL_10:
    for (k = 0; k < g->copies; k++) {
      ref_raid10_map(g->disks, g->copies, g->cs, sector, k, &disk, &msec);
      geo_raid10_map(g->disks, g->copies, g->cs, sector, k, &gdisk, &gsec);
      tassert(gdisk == disk && gsec == msec,
                    "%s: sector %" PRIu64 " copy %u: geo_raid10_map disk %u sector %"
                    PRIu64 ", md disk %u sector %" PRIu64,
                    desc, sector, k, gdisk, gsec, disk, msec);
    }
    break;
  }
}

/* Every sector at and around chunk boundaries of the first rows, then
 * random sectors up to 2^40 (512 TiB arrays), agree with md. */
START_TEST(test_matrix)
{
  const struct gconf *g = &confs[_i];
  char desc[96];
  struct rng r;
  uint64_t c, rows = 4 * (uint64_t)g->disks * g->disks, i, n;

  gconf_str(g, desc, sizeof desc);
  for (c = 0; c < rows; c++) {
    check_sector(g, c * g->cs, desc);
    check_sector(g, c * g->cs + 1, desc);
    check_sector(g, c * g->cs + g->cs - 1, desc);
  }
  rng_seed(&r, test_seed_for(_i));
  n = test_scale(4000);
  for (i = 0; i < n; i++)
    check_sector(g, rng_below(&r, UINT64_C(1) << 40), desc);
}
END_TEST

/* The reference and the library are bijections: over the first rows every
 * array chunk (every copy) has its own member chunk, and on RAID 5 none of
 * them is the stripe's parity chunk; RAID 10 copies are on distinct disks. */
START_TEST(test_bijection)
{
  const struct gconf *g = &confs[_i];
  char desc[96];
  unsigned rows = 3 * g->disks * g->copies, n = g->disks, k;
  uint64_t chunks, ci;
  uint8_t used[MAX_DISKS][64 * MAX_DISKS];

  gconf_str(g, desc, sizeof desc);
  memset(used, 0, sizeof used);
  switch (g->level) {
  case RAID_LEVEL_0: chunks = (uint64_t)rows * n; break;
  case RAID_LEVEL_5: chunks = (uint64_t)rows * (n - 1); break;
  default: chunks = (uint64_t)rows * n / g->copies; break;
  }
  ck_assert(rows <= 64 * MAX_DISKS);
  for (ci = 0; ci < chunks; ci++) {
    uint64_t sector = ci * g->cs;
    if (g->level == RAID_LEVEL_0) {
      unsigned disk;
      uint64_t msec;
      geo_raid0_map(n, g->cs, sector, &disk, &msec);
      tassert(disk < n && msec % g->cs == 0 && msec / g->cs < rows,
                    "%s: chunk %" PRIu64 " off the map", desc, ci);
      tassert(!used[disk][msec / g->cs]++, "%s: chunk %" PRIu64 " collides", desc, ci);
    }
    else if (g->level == RAID_LEVEL_5) {
      struct raid5_map m;
      geo_raid5_map(g->layout, n, g->cs, sector, &m);
      tassert(m.dd_idx < n && m.pd_idx < n && m.dd_idx != m.pd_idx &&
                    m.member_sector / g->cs < rows,
                    "%s: chunk %" PRIu64 " on parity or off the map (dd %u pd %u)",
                    desc, ci, m.dd_idx, m.pd_idx);
      tassert(!used[m.dd_idx][m.member_sector / g->cs]++,
                    "%s: chunk %" PRIu64 " collides", desc, ci);
      used[m.pd_idx][m.member_sector / g->cs] |= 0x80;
    }
    else {
      unsigned disks[MAX_DISKS];
      for (k = 0; k < g->copies; k++) {
        unsigned j;
        uint64_t msec;
        geo_raid10_map(n, g->copies, g->cs, sector, k, &disks[k], &msec);
        tassert(disks[k] < n && msec / g->cs < rows, "%s: chunk %" PRIu64
                      " copy %u off the map", desc, ci, k);
        for (j = 0; j < k; j++)
          tassert(disks[j] != disks[k], "%s: chunk %" PRIu64
                        " copies %u and %u on disk %u", desc, ci, j, k, disks[k]);
        tassert(!used[disks[k]][msec / g->cs]++, "%s: chunk %" PRIu64
                      " copy %u collides", desc, ci, k);
      }
    }
  }
  if (g->level == RAID_LEVEL_5) {
    /* Each row: exactly one parity chunk and n-1 data chunks. */
    unsigned row, d;
    for (row = 0; row < rows; row++)
      for (d = 0; d < n; d++)
        tassert(used[d][row] == 1 || used[d][row] == 0x80,
                      "%s: row %u disk %u is both or neither data and parity", desc, row, d);
  }
}
END_TEST

/* md's RAID 6 layouts over 5 disks, worked out by hand from raid5.c's
 * raid5_compute_sector() (level 6) and raid6_d0()/raid6_idx_to_slot():
 * for stripes 0..4, P's and Q's disks, the disks of data chunks 0, 1, 2,
 * and their places in the syndrome (counted from the disk after Q, or
 * from disk 0 when Q is last).  The rotating layouts put Q just after P
 * ("Q D D D P" when P is last); the asymmetric ones give the syndrome
 * another order than the data's; the -6 ones are RAID 5's over disks 0-3
 * with Q on disk 4. */
static const struct {
  int layout;
  unsigned pd[5], qd[5], dd[5][3], slot[5][3];
} raid6_tables[] = {
  { RAID_LAYOUT_LEFT_ASYMMETRIC, { 4, 3, 2, 1, 0 }, { 0, 4, 3, 2, 1 },
    { { 1, 2, 3 }, { 0, 1, 2 }, { 0, 1, 4 }, { 0, 3, 4 }, { 2, 3, 4 } },
    { { 0, 1, 2 }, { 0, 1, 2 }, { 1, 2, 0 }, { 2, 0, 1 }, { 0, 1, 2 } } },
  { RAID_LAYOUT_RIGHT_ASYMMETRIC, { 0, 1, 2, 3, 4 }, { 1, 2, 3, 4, 0 },
    { { 2, 3, 4 }, { 0, 3, 4 }, { 0, 1, 4 }, { 0, 1, 2 }, { 1, 2, 3 } },
    { { 0, 1, 2 }, { 2, 0, 1 }, { 1, 2, 0 }, { 0, 1, 2 }, { 0, 1, 2 } } },
  { RAID_LAYOUT_LEFT_SYMMETRIC, { 4, 3, 2, 1, 0 }, { 0, 4, 3, 2, 1 },
    { { 1, 2, 3 }, { 0, 1, 2 }, { 4, 0, 1 }, { 3, 4, 0 }, { 2, 3, 4 } },
    { { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 } } },
  { RAID_LAYOUT_RIGHT_SYMMETRIC, { 0, 1, 2, 3, 4 }, { 1, 2, 3, 4, 0 },
    { { 2, 3, 4 }, { 3, 4, 0 }, { 4, 0, 1 }, { 0, 1, 2 }, { 1, 2, 3 } },
    { { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 } } },
  { RAID_LAYOUT_PARITY_FIRST, { 0, 0, 0, 0, 0 }, { 1, 1, 1, 1, 1 },
    { { 2, 3, 4 }, { 2, 3, 4 }, { 2, 3, 4 }, { 2, 3, 4 }, { 2, 3, 4 } },
    { { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 } } },
  { RAID_LAYOUT_PARITY_LAST, { 3, 3, 3, 3, 3 }, { 4, 4, 4, 4, 4 },
    { { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 } },
    { { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 } } },
  { GEO_LAYOUT_LEFT_ASYMMETRIC_6, { 3, 2, 1, 0, 3 }, { 4, 4, 4, 4, 4 },
    { { 0, 1, 2 }, { 0, 1, 3 }, { 0, 2, 3 }, { 1, 2, 3 }, { 0, 1, 2 } },
    { { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 } } },
  { GEO_LAYOUT_RIGHT_ASYMMETRIC_6, { 0, 1, 2, 3, 0 }, { 4, 4, 4, 4, 4 },
    { { 1, 2, 3 }, { 0, 2, 3 }, { 0, 1, 3 }, { 0, 1, 2 }, { 1, 2, 3 } },
    { { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 } } },
  { GEO_LAYOUT_LEFT_SYMMETRIC_6, { 3, 2, 1, 0, 3 }, { 4, 4, 4, 4, 4 },
    { { 0, 1, 2 }, { 3, 0, 1 }, { 2, 3, 0 }, { 1, 2, 3 }, { 0, 1, 2 } },
    { { 0, 1, 2 }, { 2, 0, 1 }, { 1, 2, 0 }, { 0, 1, 2 }, { 0, 1, 2 } } },
  { GEO_LAYOUT_RIGHT_SYMMETRIC_6, { 0, 1, 2, 3, 0 }, { 4, 4, 4, 4, 4 },
    { { 1, 2, 3 }, { 2, 3, 0 }, { 3, 0, 1 }, { 0, 1, 2 }, { 1, 2, 3 } },
    { { 0, 1, 2 }, { 1, 2, 0 }, { 2, 0, 1 }, { 0, 1, 2 }, { 0, 1, 2 } } },
  { GEO_LAYOUT_PARITY_FIRST_6, { 0, 0, 0, 0, 0 }, { 4, 4, 4, 4, 4 },
    { { 1, 2, 3 }, { 1, 2, 3 }, { 1, 2, 3 }, { 1, 2, 3 }, { 1, 2, 3 } },
    { { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 }, { 0, 1, 2 } } },
};

START_TEST(test_raid6_tables)
{
  unsigned l, st, i;

  for (l = 0; l < ARRAY_SIZE(raid6_tables); l++)
    for (st = 0; st < 5; st++)
      for (i = 0; i < 3; i++) {
        struct raid6_map m;

        geo_raid6_map(raid6_tables[l].layout, 5, 128, ((uint64_t)st * 3 + i) * 128 + 7, &m);
        tassert(m.stripe == st && m.member_sector == (uint64_t)st * 128 + 7 &&
                m.pd_idx == raid6_tables[l].pd[st] && m.qd_idx == raid6_tables[l].qd[st] &&
                m.dd_idx == raid6_tables[l].dd[st][i] &&
                m.slot == raid6_tables[l].slot[st][i],
                "layout %d stripe %u data %u: P %u Q %u disk %u slot %u, md: P %u Q %u "
                "disk %u slot %u", raid6_tables[l].layout, st, i, m.pd_idx, m.qd_idx,
                m.dd_idx, m.slot, raid6_tables[l].pd[st], raid6_tables[l].qd[st],
                raid6_tables[l].dd[st][i], raid6_tables[l].slot[st][i]);
      }
}
END_TEST

/* Every RAID 6 layout over 4 to 8 disks, the first rows: each stripe has
 * its data on distinct disks, none on P or Q (P != Q), and the syndrome
 * places of its data are 0..N-3, each once; P's is N-2 and Q's N-1. */
START_TEST(test_raid6_bijection)
{
  unsigned l, n, st, i;

  for (l = 0; l < ARRAY_SIZE(raid6_tables); l++)
    for (n = 4; n <= MAX_DISKS; n++)
      for (st = 0; st < 3 * n; st++) {
        unsigned seen_disk = 0, seen_slot = 0, pd, qd;

        geo_raid6_pq(raid6_tables[l].layout, n, st, &pd, &qd);
        tassert(pd < n && qd < n && pd != qd, "layout %d over %u stripe %u: P %u Q %u",
                raid6_tables[l].layout, n, st, pd, qd);
        tassert(geo_raid6_slot(n, pd, qd, pd) == n - 2 &&
                geo_raid6_slot(n, pd, qd, qd) == n - 1, "layout %d: P, Q slots",
                raid6_tables[l].layout);
        for (i = 0; i < n - 2; i++) {
          struct raid6_map m;

          geo_raid6_map(raid6_tables[l].layout, n, 8, ((uint64_t)st * (n - 2) + i) * 8, &m);
          tassert(m.pd_idx == pd && m.qd_idx == qd && m.dd_idx < n && m.dd_idx != pd &&
                  m.dd_idx != qd && !(seen_disk & 1u << m.dd_idx) && m.slot < n - 2 &&
                  !(seen_slot & 1u << m.slot), "layout %d over %u stripe %u data %u: "
                  "disk %u slot %u (P %u Q %u)", raid6_tables[l].layout, n, st, i,
                  m.dd_idx, m.slot, pd, qd);
          seen_disk |= 1u << m.dd_idx;
          seen_slot |= 1u << m.slot;
        }
      }
}
END_TEST

int
main(void)
{
  Suite *s;
  TCase *tc;

  /* First: it forks a helper, which should not inherit allocations. */
  test_init("test-geometry");
  s = suite_create("geometry");
  build_confs();
  tc = test_tcase("tables");
  tcase_add_test(tc, test_raid5_tables);
  tcase_add_test(tc, test_raid5_fixed_parity_tables);
  tcase_add_test(tc, test_raid10_tables);
  tcase_add_test(tc, test_raid0_table);
  tcase_add_test(tc, test_raid6_tables);
  tcase_add_test(tc, test_raid6_bijection);
  suite_add_tcase(s, tc);
  tc = test_tcase("matrix");
  tcase_add_loop_test(tc, test_matrix, 0, nconfs);
  tcase_add_loop_test(tc, test_bijection, 0, nconfs);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
