/* What the reshape tests share (tests/testlib-reshape.c): a reshape's
 * shape, md's sizes and room for it, an array made for it and the checks
 * once it has ended.  Include after testlib.h. */
#ifndef TESTLIB_RESHAPE_H
#define TESTLIB_RESHAPE_H

#include <stdint.h>

#define MIB (UINT64_C(1) << 20)
#define FILE_SIZE (40 * MIB)
#define CHUNK (64u << 10)
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif
#ifndef DIV_ROUND_UP
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#endif

/* A reshape: from a LEVEL array of FROM members (64 KiB chunks,
 * left-symmetric or near-2) to N members, LAYOUT and CHUNK. */
struct shape {
  int level;
  unsigned from, n;
  int layout;                   /* RAID_LAYOUT_* */
  uint32_t chunk;
};

/* The reshapes the tests run: tr_shapes[0] a RAID 5 of 3 over 4; [1] to
 * [3] over as many to another layout and chunk; [4] all at once; [5] to
 * [8] RAID 10 near-2 (4 to 6, 3 to 5, 4 to 5 with 128 KiB chunks, to 32
 * KiB chunks); [9], [10] RAID 0 (2 to 3, 3 to 5). */
extern const struct shape tr_shapes[];
extern const unsigned tr_nshapes;

/* Member files of TO: the members before and after, a hot spare at least. */
unsigned tr_files(const struct shape *to);
/* Data chunks per row of N members: NUM / DEN. */
void tr_row_chunks(const struct shape *to, unsigned n, unsigned *num, unsigned *den);
/* Rows of TO's new shape that hold whole chunks. */
unsigned tr_unit_rows(const struct shape *to);
/* md's size of TO's level over N members of MS bytes of data in CHUNK. */
uint64_t tr_size_of(const struct shape *to, unsigned n, uint32_t chunk, uint64_t ms);
/* How much earlier the new shape starts (mdadm 4.x's rule, the room
 * from the end of SB's superblock). */
uint64_t tr_expected_gap(const struct raid_superblock *sb, const struct shape *to);
/* SET for the reshape TO, filled with data (*SHADOWP, room for the new
 * size; *OLD_SIZEP), hot spares added, no speed limit; SB0 member 0's
 * superblock.  DATA_OFFSET 0: raidctl's; else members of raidctl's size. */
struct raid_array *tr_make_at(const char *set, const struct shape *to, int metadata,
                              uint64_t data_offset, uint8_t **shadowp,
                              uint64_t *old_sizep, struct raid_superblock *sb0);
struct raid_array *tr_make(const char *set, const struct shape *to, int metadata,
                           uint8_t **shadowp, uint64_t *old_sizep,
                           struct raid_superblock *sb0);
/* After the reshape to TO: sizes, superblocks, md's layout, scrub,
 * reassembly; A freed. */
void tr_check_done(const char *set, struct raid_array *a, const uint8_t *shadow,
                   uint64_t old_size, const struct raid_superblock *sb0,
                   const struct shape *to);
/* A's first SIZE bytes and SHADOW's: the test's random bytes of SEED. */
void tr_fill(struct raid_array *a, uint64_t seed, uint8_t *shadow, uint64_t size);
/* Start the reshape to TO the way a user would ask for it. */
int tr_reshape_to(struct raid_array *a, const struct shape *to);

#endif
