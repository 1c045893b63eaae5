/* What the reshape tests share (testlib-reshape.h). */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "testlib-reshape.h"

/* Member files: the members before and after, and a hot spare at least. */
unsigned
tr_files(const struct shape *to)
{
  return MAX(to->n, to->from + 1);
}

/* Data chunks per row of N members: num / den. */
void
tr_row_chunks(const struct shape *to, unsigned n, unsigned *num, unsigned *den)
{
  *num = to->level == RAID_LEVEL_5 ? n - 1 : n;
  *den = to->level == RAID_LEVEL_10 ? 2 : 1;
}

/* Rows of the new shape that hold whole chunks (2 for a RAID 10 near-2 of
 * an odd number of members, else 1). */
unsigned
tr_unit_rows(const struct shape *to)
{
  return to->level == RAID_LEVEL_10 && to->n % 2 ? 2 : 1;
}

/* md's size of shape TO's level over N members of MS bytes of data. */
uint64_t
tr_size_of(const struct shape *to, unsigned n, uint32_t chunk, uint64_t ms)
{
  unsigned num, den;

  tr_row_chunks(to, n, &num, &den);
  return ms / chunk * num / den * chunk;
}

/* mdadm 4.x's room before the data, as the reshape takes it (in the
 * larger chunk, two of them for a RAID 10 near-2 over an odd number of
 * members): over more members up to four of what lies between the
 * superblock's end and the data; over as many, half of it (the most that
 * may move between two checkpoints), and at least one. */
uint64_t
tr_expected_gap(const struct raid_superblock *sb, const struct shape *to)
{
  uint64_t room = (sb->data_offset - sb->super_offset - 8) * 512;
  uint64_t cmax = MAX(CHUNK, to->chunk), unit = cmax * tr_unit_rows(to), k = room / unit;

  /* Too little room for a unit of two chunks: a RAID 10 takes a single
   * one, as md's does. */
  if (k == 0 && to->level == RAID_LEVEL_10)
    return cmax;
  if (to->n > to->from)
    return MIN(k, 4) * unit;
  return (k / 2 ? k / 2 : 1) * unit;
}

/* Create SET for the reshape TO: an array of TO->from members over the
 * first files filled with data (SHADOW, room for the new size), the other
 * files added as hot spares; the data at DATA_OFFSET bytes (0: raidctl's
 * default; otherwise members of raidctl's size, the rest after them). */
struct raid_array *
tr_make_at(const char *set, const struct shape *to, int metadata, uint64_t data_offset,
        uint8_t **shadowp, uint64_t *old_sizep, struct raid_superblock *sb0)
{
  struct raid_config cfg = { .name = set, .level = to->level, .chunk_size = CHUNK,
                             .layout = RAID_LAYOUT_DEFAULT, .raid_disks = to->from,
                             .metadata = metadata, .bitmap = RAID_BITMAP_NONE,
                             .data_offset = data_offset,
                             .member_size = data_offset ? FILE_SIZE - MIB : 0 };
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_array *a;
  uint64_t size, off;
  uint8_t *shadow;
  unsigned i;
  int role;

  tfile_create(set, tr_files(to), FILE_SIZE);
  tfile_open(set, NULL, tr_files(to), m);
  ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  /* A RAID 0 keeps no spares: its new members come with the grow. */
  if (to->level == RAID_LEVEL_0)
    tfile_close(m + to->from, tr_files(to) - to->from);
  else
    for (i = to->from; i < tr_files(to); i++)
      ck_assert_msg(raid_array_add_member(a, m[i], &role) == 0, "%s", raid_get_error());
  /* No speed limit: under the writers of test_restripe and test_shape the
   * reshape would keep to md's 1000 KiB/s otherwise. */
  raid_array_set_sync_limits(a, 0, 0);
  size = raid_array_size(a);
  off = tr_size_of(to, to->n, to->chunk, raid_array_member_size(a));
  shadow = test_alloc(MAX(size, off));
  memset(shadow, 0, MAX(size, off));
  tr_fill(a, 1, shadow, size);
  tfile_read_sb(set, 0, sb0);
  *shadowp = shadow;
  *old_sizep = size;
  return a;
}

void
tr_fill(struct raid_array *a, uint64_t seed, uint8_t *shadow, uint64_t size)
{
  struct rng r;
  uint64_t off;

  rng_seed(&r, test_seed_for(seed));
  rng_fill(&r, shadow, size);
  for (off = 0; off < size; off += 16 * MIB)
    ck_assert_msg(raid_pwrite(a, shadow + off, MIN(16 * MIB, size - off), off, 0) == 0,
                  "%s", raid_get_error());
}

/* tr_make_at() at raidctl's data offset. */
struct raid_array *
tr_make(const char *set, const struct shape *to, int metadata, uint8_t **shadowp,
     uint64_t *old_sizep, struct raid_superblock *sb0)
{
  return tr_make_at(set, to, metadata, 0, shadowp, old_sizep, sb0);
}

/* After the reshape to TO: sizes, superblocks, layout, scrub, reassembly. */
void
tr_check_done(const char *set, struct raid_array *a, const uint8_t *shadow, uint64_t old_size,
           const struct raid_superblock *sb0, const struct shape *to)
{
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_superblock sb;
  uint64_t gap = tr_expected_gap(sb0, to), size = tr_size_of(to, to->n, to->chunk, sb0->size * 512);
  unsigned i;

  ck_assert_uint_eq(raid_array_size(a), size);
  ck_assert_int_eq(raid_array_level(a), to->level);
  ck_assert_uint_eq(raid_array_raid_disks(a), to->n);
  ck_assert_int_eq(raid_array_layout(a), to->layout);
  ck_assert_uint_eq(raid_array_chunk_size(a), to->chunk);
  ck_assert_uint_eq(raid_array_degraded(a), 0);
  tcheck_shadow(a, shadow, size);
  if (to->level != RAID_LEVEL_0)
    ck_assert_uint_eq(tscrub(a), 0);
  raid_array_free(a);
  for (i = 0; i < to->n; i++) {
    tfile_read_sb(set, i, &sb);
    ck_assert_int_eq(sb.level, to->level);
    ck_assert_uint_eq(sb.raid_disks, to->n);
    ck_assert_uint_eq(sb.layout, (uint32_t)to->layout);
    ck_assert_uint_eq(sb.chunksize, to->chunk / 512);
    ck_assert_uint_eq(sb.feature_map & (RAID_SB_FEATURE_RESHAPE_ACTIVE |
                                        RAID_SB_FEATURE_NEW_OFFSET), 0);
    ck_assert_uint_eq(sb.data_offset * 512, sb0->data_offset * 512 - gap);
    /* A RAID 0 (a restripe's end): each member's data_size the array's
     * member size, as md's takeover to RAID 0 writes it (md runs a RAID 0
     * over data_size: the room the moved offset freed is not used). */
    if (to->level == RAID_LEVEL_0)
      ck_assert_uint_eq(sb.data_size, sb.size);
    else
      ck_assert_uint_eq(sb.data_size * 512, sb0->data_size * 512 + gap);
    ck_assert_uint_eq(sb.size, sb0->size);
    ck_assert_uint_eq(sb.resync_offset, RAID_SB_MAX_SECTOR);
    ck_assert_int_lt(sb.dev_roles[sb.dev_number], to->n);
  }
  tfile_check_layout(set, &(struct tconf){ .level = to->level, .layout = to->layout,
                                           .disks = to->n, .chunk = to->chunk },
                     "restriped", shadow, size);
  tfile_open(set, NULL, tr_files(to), m);
  ck_assert_msg(raid_array_assemble(NULL, m, tr_files(to), 0, &a) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_size(a), size);
  ck_assert_int_eq(raid_array_level(a), to->level);
  ck_assert_uint_eq(raid_array_degraded(a), 0);
  tcheck_shadow(a, shadow, size);
  raid_array_free(a);
}

/* test_restripe's, test_shape's and test_resume's reshapes: over 4
 * members, or over as many to another layout and chunk (larger,
 * smaller), or all at once. */
const struct shape tr_shapes[] = {
  { RAID_LEVEL_5, 3, 4, RAID_LAYOUT_LEFT_SYMMETRIC, CHUNK },
  { RAID_LEVEL_5, 3, 3, RAID_LAYOUT_LEFT_ASYMMETRIC, 2 * CHUNK },
  { RAID_LEVEL_5, 3, 3, RAID_LAYOUT_RIGHT_SYMMETRIC, CHUNK / 4 },
  { RAID_LEVEL_5, 3, 3, RAID_LAYOUT_PARITY_LAST, CHUNK },
  { RAID_LEVEL_5, 3, 4, RAID_LAYOUT_RIGHT_ASYMMETRIC, 2 * CHUNK },
  /* test_raid10's: md's near-2 over more members, the copies not dividing
   * them (rows of one and a half chunks, then two and a half), another
   * chunk. */
  { RAID_LEVEL_10, 4, 6, RAID_LAYOUT_RAID10_NEAR(2), CHUNK },
  { RAID_LEVEL_10, 3, 5, RAID_LAYOUT_RAID10_NEAR(2), CHUNK },
  { RAID_LEVEL_10, 4, 5, RAID_LAYOUT_RAID10_NEAR(2), 2 * CHUNK },
  { RAID_LEVEL_10, 4, 4, RAID_LAYOUT_RAID10_NEAR(2), CHUNK / 2 },
  /* A RAID 0 over one more member (the new one takes the parity role of
   * the RAID 5 it runs as), and over two more (the second takes a new
   * role, in sync from the start). */
  { RAID_LEVEL_0, 2, 3, 0, CHUNK },
  { RAID_LEVEL_0, 3, 5, 0, CHUNK },
};
const unsigned tr_nshapes = sizeof tr_shapes / sizeof tr_shapes[0];


int
tr_reshape_to(struct raid_array *a, const struct shape *to)
{
  struct raid_member *m[RAID_MAX_MEMBERS];
  unsigned idx[RAID_MAX_MEMBERS], k;

  /* A RAID 0 gets its new members with the grow; asked again, it is a
   * RAID 5 under its reshape. */
  if (to->level == RAID_LEVEL_0 && raid_array_level(a) == RAID_LEVEL_0) {
    for (k = 0; k < to->n - to->from; k++)
      idx[k] = to->from + k;
    tfile_open(raid_array_name(a), idx, to->n - to->from, m);
    return raid_array_grow_disks_add(a, to->n, m, to->n - to->from);
  }
  if (to->level == RAID_LEVEL_0)
    return raid_array_grow_disks(a, to->n + 1);
  if ((to->layout == RAID_LAYOUT_LEFT_SYMMETRIC ||
       to->layout == RAID_LAYOUT_RAID10_NEAR(2)) && to->chunk == CHUNK)
    return raid_array_grow_disks(a, to->n);
  return raid_array_grow_shape(a, to->n, to->layout, to->chunk);
}
