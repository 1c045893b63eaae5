/* Description: mdadm --grow --size on a running array
 * (raid_array_grow_size()).  RAID 1, 5 and 10 with metadata 1.1 and 1.2,
 * with and without a write-intent bitmap, over member files grown with
 * truncate (the first less than the others), and metadata 1.0 without a
 * bitmap: --size max takes what the smallest has room for, in whole
 * chunks (computed here from the superblock's data offset, or for 1.0
 * from where md puts the superblock at the grown member's end, not by the
 * library's code), metadata 1.0's superblocks moving to the new ends; the data written
 * before reads back, the new region takes and returns new data; every
 * superblock says the new size with data_size at least that; the new
 * region (garbage on one member, put there behind the array's back) is
 * resynced from the old end, and only it (the bytes the resync went
 * over), after which a check finds no mismatch,
 * while with assume-clean the same garbage is left and a check counts it;
 * a clean stop before that resync keeps its start at the old end
 * (resync_offset), and assembly goes on from there; the bitmap comes back
 * with its chunk; an explicit smaller size shrinks the array (reads past
 * the end refused, the rest intact, the superblocks saying so).
 * Refused with every member byte for byte unchanged: RAID 0, metadata
 * 1.0 with a bitmap (it cannot move), a size beyond the smallest member's room (naming it), a size not
 * in whole chunks, and a grow while a check runs.  And mdadm --grow
 * --raid-devices of a RAID 1, with and without a bitmap (test_mirrors
 * says what it proves); RAID 10 refuses it (a restripe raidd cannot do
 * yet) with nothing written (RAID 5's restripe: test-reshape.c).  A crash in the middle of a grow's superblock update (one
 * member's superblock from before, an event behind) assembles at the new
 * size with every member.  RAID 5 small writes in the grown region before
 * its resync compute parity afresh, so a member lost then reads back as
 * it was.  And mdadm --grow --array-size (raid_array_set_array_size()):
 * the array serves only the bytes shown, the rest kept on the members
 * and served again with max; a grow of the members does not show more
 * (md's external size); a reshape to fewer members is refused while more
 * is shown than they would hold, saying the size to set; nothing is
 * written by any of it. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "internal.h"
#include "sync/engine.h"

#define MIB (UINT64_C(1) << 20)
#define OLD_FILE (8 * MIB)
#define SMALL_FILE (11 * MIB)           /* member 0 grows less */
#define BIG_FILE (12 * MIB)
#define CHUNK (64u << 10)

static const struct grow_case {
  int level, metadata, bitmap;
  unsigned n;
  bool assume_clean;
} cases[] = {
  { RAID_LEVEL_1, RAID_METADATA_1_2, RAID_BITMAP_NONE, 2, false },
  { RAID_LEVEL_1, RAID_METADATA_1_2, RAID_BITMAP_INTERNAL, 2, false },
  { RAID_LEVEL_5, RAID_METADATA_1_2, RAID_BITMAP_INTERNAL, 3, false },
  { RAID_LEVEL_5, RAID_METADATA_1_1, RAID_BITMAP_NONE, 3, false },
  { RAID_LEVEL_10, RAID_METADATA_1_2, RAID_BITMAP_INTERNAL, 4, false },
  { RAID_LEVEL_10, RAID_METADATA_1_1, RAID_BITMAP_NONE, 4, false },
  { RAID_LEVEL_5, RAID_METADATA_1_2, RAID_BITMAP_NONE, 3, true },
  { RAID_LEVEL_1, RAID_METADATA_1_0, RAID_BITMAP_NONE, 2, false },
  { RAID_LEVEL_5, RAID_METADATA_1_0, RAID_BITMAP_NONE, 3, false },
};

/* The bytes at array offset OFF: its offset in every word, so a byte in
 * the wrong place shows. */
static void
pattern(uint8_t *buf, uint64_t off, size_t len, uint64_t salt)
{
  size_t i;

  for (i = 0; i < len; i += 8) {
    uint64_t v = (off + i) ^ salt;

    memcpy(buf + i, &v, 8);
  }
}

static void
write_range(struct raid_array *a, uint64_t from, uint64_t to, uint64_t salt)
{
  uint8_t *buf = test_alloc(MIB);
  uint64_t off;

  for (off = from; off < to; off += MIB) {
    size_t len = (size_t)MIN(MIB, to - off);

    pattern(buf, off, len, salt);
    ck_assert_msg(raid_pwrite(a, buf, len, off, 0) == 0, "%s", raid_get_error());
  }
  test_free(buf);
}

static void
check_range(struct raid_array *a, uint64_t from, uint64_t to, uint64_t salt)
{
  uint8_t *buf = test_alloc(MIB), *want = test_alloc(MIB);
  uint64_t off;

  for (off = from; off < to; off += MIB) {
    size_t len = (size_t)MIN(MIB, to - off);

    pattern(want, off, len, salt);
    ck_assert_msg(raid_pread(a, buf, len, off) == 0, "%s", raid_get_error());
    ck_assert_msg(memcmp(buf, want, len) == 0, "data differs in [%" PRIu64 ", +%zu)",
                  off, len);
  }
  test_free(buf);
  test_free(want);
}

static void
resize_file(const char *set, unsigned i, uint64_t size)
{
  char p[256];

  tfile_path(p, sizeof p, set, i);
  ck_assert_int_eq(truncate(p, (off_t)size), 0);
}

/* Garbage in member I's bytes [FROM, TO) behind the array's back. */
static void
scribble(const char *set, unsigned i, uint64_t from, uint64_t to)
{
  uint8_t buf[4096];
  char p[256];
  uint64_t off;
  int fd;

  memset(buf, 0xa5, sizeof buf);
  tfile_path(p, sizeof p, set, i);
  ck_assert_int_ne(fd = open(p, O_WRONLY), -1);
  for (off = from; off < to; off += sizeof buf)
    ck_assert_int_eq(pwrite(fd, buf, sizeof buf, (off_t)off), (ssize_t)sizeof buf);
  close(fd);
}

/* md's sizes, from first principles: each member's room after its data
 * offset in whole units, and what the level makes of it. */
static uint64_t
expect_array(const struct grow_case *c, uint64_t ms)
{
  switch (c->level) {
  case RAID_LEVEL_1: return ms;
  case RAID_LEVEL_5: return ms * (c->n - 1);
  default: return ms / CHUNK * c->n / 2 * CHUNK;   /* near-2 */
  }
}

START_TEST(test_grow_max)
{
  const struct grow_case *c = &cases[_i];
  char set[16], who[256];
  struct raid_config cfg = { .level = c->level, .layout = RAID_LAYOUT_DEFAULT,
                             .chunk_size = CHUNK, .raid_disks = c->n,
                             .metadata = c->metadata, .bitmap = c->bitmap,
                             .bitmap_chunk = c->bitmap == RAID_BITMAP_INTERNAL ? MIB : 0 };
  struct raid_member *m[4];
  struct raid_superblock sb, sb0;
  struct raid_bitmap_info bi;
  struct raid_array *a;
  uint64_t old_ms, old_size, ms, size, unit = c->level == RAID_LEVEL_1 ? 4096 : CHUNK;
  unsigned i;

  snprintf(set, sizeof set, "g%d-", _i);
  cfg.name = set;
  tfile_create(set, c->n, OLD_FILE);
  tfile_open(set, NULL, c->n, m);
  ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  old_ms = raid_array_member_size(a);
  old_size = raid_array_size(a);
  ck_assert_uint_eq(old_size, expect_array(c, old_ms));
  write_range(a, 0, old_size, 1);

  /* Nothing grew yet: nothing changes. */
  tfile_read_sb(set, 0, &sb0);
  ck_assert_msg(raid_array_grow_size(a, 0, 0) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_size(a), old_size);

  /* Member 0 gets less room than the others; the new region of member 1
   * holds garbage that a resync must make consistent. */
  resize_file(set, 0, SMALL_FILE);
  for (i = 1; i < c->n; i++)
    resize_file(set, i, BIG_FILE);
  /* Metadata 1.0: md's sb_start, (sectors - 16) rounded down to 8, less
   * md's room for a bitmap and a bad block log below it (4 KiB each on
   * members under 8 GiB) is where each member's data ends now. */
  if (c->metadata == RAID_METADATA_1_0)
    ms = ((((SMALL_FILE >> 9) - 16) & ~UINT64_C(7)) - 16) << 9;
  else
    ms = SMALL_FILE - (sb0.data_offset << 9);
  ms = ms / unit * unit;
  scribble(set, 1, (sb0.data_offset << 9) + old_ms, (sb0.data_offset << 9) + ms);
  size = expect_array(c, ms);

  /* Refusals first: nothing written. */
  tfile_path(who, sizeof who, set, 0);
  ck_assert_int_eq(raid_array_grow_size(a, ms + unit, 0), -ENOSPC);
  ck_assert_msg(strstr(raid_get_error(), who) && strstr(raid_get_error(), "room for"),
                "got \"%s\"", raid_get_error());
  ck_assert_int_eq(raid_array_grow_size(a, ms - 512, 0), -EINVAL);
  ck_assert_msg(strstr(raid_get_error(), "not a multiple"), "got \"%s\"", raid_get_error());
  /* (Metadata 1.0's superblock is not at the grown member's end yet.) */
  if (c->metadata != RAID_METADATA_1_0) {
    tfile_read_sb(set, 0, &sb);
    ck_assert_uint_eq(sb.events, sb0.events);
    ck_assert_uint_eq(sb.size, old_ms >> 9);
  }

  ck_assert_msg(raid_array_grow_size(a, 0, c->assume_clean ? RAID_GROW_ASSUME_CLEAN : 0)
                == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_member_size(a), ms);
  ck_assert_uint_eq(raid_array_size(a), size);
  ck_assert_int_eq(raid_array_needs_resync(a), !c->assume_clean);
  for (i = 0; i < c->n; i++) {
    tfile_read_sb(set, i, &sb);
    ck_assert_uint_eq(sb.size, ms >> 9);
    ck_assert_uint_ge(sb.data_size, ms >> 9);
    ck_assert_uint_gt(sb.events, sb0.events);
    if (c->metadata == RAID_METADATA_1_0)
      ck_assert_uint_eq(sb.super_offset,
                        (((i ? BIG_FILE : SMALL_FILE) >> 9) - 16) & ~UINT64_C(7));
  }
  ck_assert_int_eq(raid_array_bitmap(a, &bi), 0);
  ck_assert_int_eq(bi.present, c->bitmap == RAID_BITMAP_INTERNAL);
  if (bi.present)
    ck_assert_uint_eq(bi.chunk_size, MIB);
  check_range(a, 0, old_size, 1);

  /* A clean stop before the resync keeps its start at the old end. */
  raid_array_free(a);
  for (i = 0; i < c->n; i++) {
    tfile_read_sb(set, i, &sb);
    ck_assert_uint_eq(sb.resync_offset, c->assume_clean ? RAID_SB_MAX_SECTOR : old_ms >> 9);
  }
  tfile_open(set, NULL, c->n, m);
  ck_assert_msg(raid_array_assemble(NULL, m, c->n, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_size(a), size);
  check_range(a, 0, old_size, 1);
  ck_assert_msg(raid_array_resync(a, NULL, NULL) == 0, "%s", raid_get_error());
  /* Only the new region was gone over (from the engine's step boundary
   * at or below the old end: at most one 1 MiB piece more). */
  if (!c->assume_clean) {
    ck_assert_uint_ge(sync_synced(a), ms - old_ms);
    ck_assert_uint_le(sync_synced(a), ms - old_ms + MIB);
  }
  if (c->assume_clean)
    ck_assert_uint_gt(tscrub(a), 0);
  else
    ck_assert_uint_eq(tscrub(a), 0);
  write_range(a, old_size, size, 2);
  check_range(a, 0, old_size, 1);
  check_range(a, old_size, size, 2);
  ck_assert_uint_eq(tscrub(a), 0);

  /* Asked for explicitly, smaller: the old size again. */
  ck_assert_msg(raid_array_grow_size(a, old_ms, 0) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_size(a), old_size);
  {
    uint8_t buf[4096];

    ck_assert_int_eq(raid_pread(a, buf, sizeof buf, old_size), -EINVAL);
  }
  check_range(a, 0, old_size, 1);
  raid_array_free(a);
  for (i = 0; i < c->n; i++) {
    tfile_read_sb(set, i, &sb);
    ck_assert_uint_eq(sb.size, old_ms >> 9);
  }
  tfile_open(set, NULL, c->n, m);
  ck_assert_msg(raid_array_assemble(NULL, m, c->n, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_size(a), old_size);
  check_range(a, 0, old_size, 1);
  raid_array_free(a);
}
END_TEST

static void
read_all(const char *set, unsigned n, uint8_t **buf)
{
  char p[256];
  unsigned i;
  FILE *f;

  for (i = 0; i < n; i++) {
    tfile_path(p, sizeof p, set, i);
    ck_assert_ptr_nonnull(f = fopen(p, "rb"));
    ck_assert_uint_eq(fread(buf[i], 1, BIG_FILE, f), BIG_FILE);
    fclose(f);
  }
}

/* Each refusal leaves every member byte for byte as it was. */
START_TEST(test_refusals)
{
  static const struct { int level, metadata; unsigned n; const char *expect; int err; } r[] = {
    { RAID_LEVEL_0, RAID_METADATA_1_2, 2, "RAID 0 cannot change its size", -EINVAL },
    { RAID_LEVEL_1, RAID_METADATA_1_0, 2, "remove the bitmap first", -ENOTSUP },
    { RAID_LEVEL_5, RAID_METADATA_1_2, 3, "a check is running", -EBUSY },
  };
  char set[16];
  struct raid_config cfg = { .layout = RAID_LAYOUT_DEFAULT, .chunk_size = CHUNK,
                             .bitmap = RAID_BITMAP_NONE };
  struct raid_member *m[3];
  struct raid_array *a;
  uint8_t *before[3], *after[3];
  unsigned i, n = r[_i].n;

  snprintf(set, sizeof set, "gr%d-", _i);
  cfg.name = set;
  cfg.level = r[_i].level;
  cfg.metadata = r[_i].metadata;
  cfg.raid_disks = n;
  if (r[_i].metadata == RAID_METADATA_1_0)
    cfg.bitmap = RAID_BITMAP_INTERNAL;
  tfile_create(set, n, OLD_FILE);
  tfile_open(set, NULL, n, m);
  ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  write_range(a, 0, raid_array_size(a), 3);
  ck_assert_int_eq(raid_flush(a), 0);
  for (i = 0; i < n; i++) {
    resize_file(set, i, BIG_FILE);
    before[i] = malloc(BIG_FILE);
    after[i] = malloc(BIG_FILE);
  }
  if (r[_i].err == -EBUSY) {
    /* A check that cannot end while the grow is tried. */
    raid_array_set_sync_limits(a, 4096, 4096);
    ck_assert_int_eq(raid_array_sync_start(a, RAID_SYNC_CHECK), 0);
    for (;;) {
      struct raid_sync_status st;

      raid_array_sync_status(a, &st);
      if (st.action == RAID_SYNC_CHECK)
        break;
      usleep(1000);
    }
  }
  /* Safe mode's "clean" written first: no superblock write may follow. */
  for (i = 0; !raid_array_clean(a); i++) {
    ck_assert_uint_lt(i, 10000);
    usleep(1000);
  }
  read_all(set, n, before);
  ck_assert_int_eq(raid_array_grow_size(a, 0, 0), r[_i].err);
  ck_assert_msg(strstr(raid_get_error(), r[_i].expect), "got \"%s\"", raid_get_error());
  read_all(set, n, after);
  for (i = 0; i < n; i++)
    ck_assert_msg(memcmp(before[i], after[i], BIG_FILE) == 0, "member %u changed", i);
  if (r[_i].err == -EBUSY)
    ck_assert_int_eq(raid_array_sync_stop(a), 0);
  check_range(a, 0, raid_array_size(a), 3);
  raid_array_free(a);
  for (i = 0; i < n; i++) {
    free(before[i]);
    free(after[i]);
  }
}
END_TEST

/* The role of member file I of SET in its superblock, and the array's
 * raid_disks there. */
static void
role_of(const char *set, unsigned i, int *role, unsigned *disks)
{
  struct raid_superblock sb;

  tfile_read_sb(set, i, &sb);
  *role = sb.dev_number < sb.max_dev && sb.dev_roles[sb.dev_number] < 0xfffe
    ? (int)sb.dev_roles[sb.dev_number] : -1;
  *disks = sb.raid_disks;
}

/* mdadm --grow --raid-devices of a RAID 1: 2 -> 3 mirrors (the new role
 * missing until a member is added and rebuilt: its data area then equals
 * the others'), 3 -> 2 refused while 3 members hold roles, then, with
 * role 0's member failed and removed, done: role 2's member moves into
 * role 0 (md renumbers the same way); the superblocks say every step and
 * assembly takes the array back as it was left. */
START_TEST(test_mirrors)
{
  const char *set = "gm-";
  struct raid_config cfg = { .name = "gm", .level = RAID_LEVEL_1, .raid_disks = 2,
                             .bitmap = _i ? RAID_BITMAP_INTERNAL : RAID_BITMAP_NONE };
  struct raid_member *m[3];
  struct raid_array *a;
  struct raid_superblock sb0, sb;
  uint64_t size, doff;
  uint8_t *x = malloc(OLD_FILE), *y = malloc(OLD_FILE);
  char p[256];
  unsigned disks;
  int role, slot;
  FILE *f;

  tfile_create(set, 3, OLD_FILE);
  tfile_open(set, NULL, 2, m);
  ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  size = raid_array_size(a);
  write_range(a, 0, size, 5);
  tfile_read_sb(set, 0, &sb0);
  doff = sb0.data_offset << 9;

  ck_assert_int_eq(raid_array_grow_disks(a, 1), -EINVAL);
  ck_assert_int_eq(raid_array_grow_disks(a, RAID_MAX_MEMBERS + 1), -EINVAL);
  ck_assert_msg(raid_array_grow_disks(a, 3) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_degraded(a), 1);
  ck_assert_int_eq(raid_array_member_state(a, 2), RAID_MEMBER_MISSING);
  role_of(set, 0, &role, &disks);
  ck_assert_uint_eq(disks, 3);
  tfile_read_sb(set, 1, &sb);
  ck_assert_uint_gt(sb.events, sb0.events);
  check_range(a, 0, size, 5);

  /* A member for the new role, rebuilt from the others. */
  tfile_open(set, (const unsigned[]){ 2 }, 1, &m[2]);
  ck_assert_msg(raid_array_add_member(a, m[2], &slot) == 0, "%s", raid_get_error());
  ck_assert_int_eq(slot, 2);
  ck_assert_int_eq(raid_array_sync_start(a, RAID_SYNC_RECOVER), 0);
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  ck_assert_uint_eq(raid_array_degraded(a), 0);
  ck_assert_int_eq(raid_flush(a), 0);
  tfile_path(p, sizeof p, set, 0);
  ck_assert_ptr_nonnull(f = fopen(p, "rb"));
  ck_assert_int_eq(fseek(f, (long)doff, SEEK_SET), 0);
  ck_assert_uint_eq(fread(x, 1, size, f), size);
  fclose(f);
  tfile_path(p, sizeof p, set, 2);
  ck_assert_ptr_nonnull(f = fopen(p, "rb"));
  ck_assert_int_eq(fseek(f, (long)doff, SEEK_SET), 0);
  ck_assert_uint_eq(fread(y, 1, size, f), size);
  fclose(f);
  ck_assert_msg(memcmp(x, y, size) == 0, "the new mirror differs");

  /* Back to two: not while three members hold roles. */
  tfile_read_sb(set, 0, &sb0);
  ck_assert_int_eq(raid_array_grow_disks(a, 2), -EBUSY);
  ck_assert_msg(strstr(raid_get_error(), "fail and remove 1 of them"), "got \"%s\"",
                raid_get_error());
  tfile_read_sb(set, 0, &sb);
  ck_assert_uint_eq(sb.events, sb0.events);
  ck_assert_uint_eq(sb.raid_disks, 3);
  tfile_path(p, sizeof p, set, 0);
  ck_assert_int_eq(raid_array_fail_member(a, 0), 0);
  ck_assert_msg(raid_array_remove_member(a, p, 0) == 0, "%s", raid_get_error());
  ck_assert_msg(raid_array_grow_disks(a, 2) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_degraded(a), 0);
  role_of(set, 2, &role, &disks);
  ck_assert_int_eq(role, 0);
  ck_assert_uint_eq(disks, 2);
  role_of(set, 1, &role, &disks);
  ck_assert_int_eq(role, 1);
  check_range(a, 0, size, 5);
  write_range(a, 0, MIB, 6);
  raid_array_free(a);

  /* Assembled from the two left: in sync, the data as written. */
  tfile_open(set, (const unsigned[]){ 1, 2 }, 2, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 2, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_degraded(a), 0);
  ck_assert_int_eq(raid_array_needs_resync(a), 0);
  check_range(a, 0, MIB, 6);
  check_range(a, MIB, size, 5);
  ck_assert_uint_eq(tscrub(a), 0);
  raid_array_free(a);
  free(x);
  free(y);
}
END_TEST

START_TEST(test_mirrors_refused)
{
  struct raid_array *a = tfile_array_create("gmr-", RAID_LEVEL_0, 4, OLD_FILE);
  struct raid_superblock sb0, sb;

  tfile_read_sb("gmr-", 0, &sb0);
  ck_assert_int_eq(raid_array_grow_disks(a, 6), -EINVAL);
  ck_assert_msg(strstr(raid_get_error(), "--add"), "got \"%s\"", raid_get_error());
  tfile_read_sb("gmr-", 0, &sb);
  ck_assert_uint_eq(sb.events, sb0.events);
  ck_assert_uint_eq(sb.raid_disks, 4);
  raid_array_free(a);
}
END_TEST

/* A crash in the middle of a grow's superblock update: one member still
 * has the superblock from before (one event behind, the old size).  It
 * assembles with the others at the new size, that member in sync, the
 * data whole (raidd's kill test found the whole array refused here). */
START_TEST(test_crash_in_update)
{
  const char *set = "gc-", *copy = "gcc-";
  struct raid_array *a = tfile_array_create(set, RAID_LEVEL_5, 3, OLD_FILE);
  struct raid_member *m[3];
  struct raid_superblock sb0, sb;
  uint64_t old_size = raid_array_size(a), size, doff;
  char from[256], to[256];
  uint8_t *pre;
  unsigned i;
  int fd;

  write_range(a, 0, old_size, 9);
  ck_assert_int_eq(raid_flush(a), 0);
  for (i = 0; !raid_array_clean(a); i++) {
    ck_assert_uint_lt(i, 10000);
    usleep(1000);
  }
  tfile_read_sb(set, 2, &sb0);
  doff = sb0.data_offset << 9;
  pre = malloc(doff);
  tfile_path(from, sizeof from, set, 2);
  ck_assert_int_ne(fd = open(from, O_RDONLY), -1);
  ck_assert_int_eq(pread(fd, pre, doff, 0), (ssize_t)doff);
  close(fd);
  for (i = 0; i < 3; i++)
    resize_file(set, i, BIG_FILE);
  ck_assert_msg(raid_array_grow_size(a, 0, RAID_GROW_ASSUME_CLEAN) == 0, "%s",
                raid_get_error());
  size = raid_array_size(a);
  tfile_read_sb(set, 0, &sb);
  ck_assert_uint_eq(sb.events, sb0.events + 1);
  /* The crash: the members as they are, member 2's superblock as it was. */
  for (i = 0; i < 3; i++) {
    tfile_path(from, sizeof from, set, i);
    tfile_path(to, sizeof to, copy, i);
    tfile_copy(from, to);
  }
  ck_assert_int_ne(fd = open(to, O_WRONLY), -1);
  ck_assert_int_eq(pwrite(fd, pre, doff, 0), (ssize_t)doff);
  close(fd);
  raid_array_free(a);

  tfile_open(copy, NULL, 3, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 3, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_size(a), size);
  ck_assert_uint_eq(raid_array_degraded(a), 0);
  check_range(a, 0, old_size, 9);
  raid_array_free(a);
  /* Its superblock says the new size now, as the others'. */
  tfile_read_sb(copy, 2, &sb);
  ck_assert_uint_eq(sb.size << 9, size / 2);

  /* Another chunk is no grow's doing: refused, naming the member. */
  {
    uint8_t buf[RAID_SB_BYTES];

    tfile_read_sb(copy, 1, &sb);
    sb.chunksize *= 2;
    sb.events--;
    ck_assert_int_eq(raid_superblock_encode(&sb, buf), 0);
    tfile_path(to, sizeof to, copy, 1);
    ck_assert_int_ne(fd = open(to, O_WRONLY), -1);
    ck_assert_int_eq(pwrite(fd, buf, sizeof buf, (off_t)(sb.super_offset << 9)),
                     (ssize_t)sizeof buf);
    close(fd);
    tfile_open(copy, NULL, 3, m);
    ck_assert_int_eq(raid_array_assemble(NULL, m, 3, 0, &a), -EINVAL);
    ck_assert_msg(strstr(raid_get_error(), "disagrees with the freshest") &&
                  strstr(raid_get_error(), to), "got \"%s\"", raid_get_error());
    tfile_close(m, 3);
  }
  free(pre);
}
END_TEST

#define ROW (4 * CHUNK)                  /* data of a row of RAID 5 over 5 */

/* RAID 5 writes in the grown region before its resync: parity there may
 * not match (garbage on member 1, put there behind the array's back), so
 * a small write must compute it afresh (RCW, md's rule beyond
 * recovery_cp), not carry the mismatch on (RMW): what a member lost
 * before the resync held in the written columns then reads back as it
 * was.  RAID 5 over 5 (over 3, one chunk's write is RCW anyway): each of
 * 12 rows gets 4 KiB written at its first data chunk; the rows are read,
 * member 1 is failed, and read again: the same bytes in those columns of
 * every data chunk. */
START_TEST(test_unsynced_writes)
{
  const char *set = "gu-";
  struct raid_array *a = tfile_array_create(set, RAID_LEVEL_5, 5, OLD_FILE);
  struct raid_superblock sb;
  uint64_t old_size = raid_array_size(a), old_ms = raid_array_member_size(a), doff, row;
  uint8_t *before = test_alloc(12 * ROW), *after = test_alloc(12 * ROW);
  uint8_t data[4096];
  unsigned i;

  tfile_read_sb(set, 0, &sb);
  doff = sb.data_offset << 9;
  for (i = 0; i < 5; i++)
    resize_file(set, i, BIG_FILE);
  scribble(set, 1, doff + old_ms, doff + old_ms + 12 * CHUNK);
  ck_assert_msg(raid_array_grow_size(a, 0, 0) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_needs_resync(a), 1);
  memset(data, 0x5c, sizeof data);
  for (row = 0; row < 12; row++)
    ck_assert_int_eq(raid_pwrite(a, data, sizeof data, old_size + row * ROW, 0), 0);
  ck_assert_int_eq(raid_pread(a, before, 12 * ROW, old_size), 0);
  ck_assert_int_eq(raid_array_fail_member(a, 1), 0);
  ck_assert_int_eq(raid_pread(a, after, 12 * ROW, old_size), 0);
  /* The columns each write covered, in every data chunk of its row (the
   * written one and those RCW read to compute parity); the rest of an
   * unsynced row was never written and means nothing until the resync. */
  for (i = 0; i < 12 * ROW; i += CHUNK)
    ck_assert_msg(memcmp(before + i, after + i, 4096) == 0,
                  "row %u, chunk %u reads back otherwise with member 1 gone",
                  i / ROW, i / CHUNK % 4);
  raid_array_free(a);
  test_free(before);
  test_free(after);
}
END_TEST

START_TEST(test_array_size)
{
  const char *set = "as-";
  struct raid_config cfg = { .name = set, .level = RAID_LEVEL_5, .layout = RAID_LAYOUT_DEFAULT,
                             .chunk_size = CHUNK, .raid_disks = 3,
                             .metadata = RAID_METADATA_1_2, .bitmap = RAID_BITMAP_NONE };
  struct raid_member *m[3];
  struct raid_superblock sb0, sb;
  struct tback back;
  struct raid_array *a;
  uint64_t full, ms, grown;
  uint8_t *buf = test_alloc(4096);
  char hint[64];
  unsigned i;

  tfile_create(set, 3, OLD_FILE);
  tfile_open(set, NULL, 3, m);
  ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  full = raid_array_size(a);
  ms = raid_array_member_size(a);
  ck_assert_uint_eq(raid_array_full_size(a), full);
  write_range(a, 0, full, 7);
  ck_assert_int_eq(raid_flush(a), 0);
  tfile_read_sb(set, 0, &sb0);

  /* Refused: more than the members hold, not whole sectors. */
  ck_assert_int_eq(raid_array_set_array_size(a, full + 512), -EINVAL);
  ck_assert_msg(strstr(raid_get_error(), "more than"), "%s", raid_get_error());
  ck_assert_int_eq(raid_array_set_array_size(a, ms + 1000), -EINVAL);
  ck_assert_msg(strstr(raid_get_error(), "sectors"), "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_size(a), full);

  /* Shown less: requests past it fail, before it work. */
  ck_assert_int_eq(raid_array_set_array_size(a, full - MIB), 0);
  ck_assert_uint_eq(raid_array_size(a), full - MIB);
  ck_assert_uint_eq(raid_array_full_size(a), full);
  ck_assert_int_eq(raid_pread(a, buf, 4096, full - MIB), -EINVAL);
  ck_assert_msg(strstr(raid_get_error(), "beyond the end"), "%s", raid_get_error());
  pattern(buf, full - MIB - 4096, 4096, 7);
  ck_assert_int_eq(raid_pwrite(a, buf, 4096, full - MIB - 4096, 0), 0);

  /* Two members hold what the backwards reshape leaves them (tback_plan:
   * less than MS): more shown is refused, saying what to set (the reshape
   * itself: test-reshape-back).  Nothing written. */
  tback_plan(RAID_LEVEL_5, 2, CHUNK, CHUNK, &sb0, &back);
  ck_assert_uint_lt(back.size, ms);
  ck_assert_int_eq(raid_array_grow_shape(a, 2, raid_array_layout(a), CHUNK), -EINVAL);
  snprintf(hint, sizeof hint, "--array-size %" PRIu64 "K", back.size >> 10);
  ck_assert_msg(strstr(raid_get_error(), hint), "%s", raid_get_error());
  ck_assert_int_eq(raid_array_set_array_size(a, ms), 0);
  for (i = 0; i < 3; i++) {
    tfile_read_sb(set, i, &sb);
    ck_assert_uint_eq(sb.events, sb0.events);
    ck_assert_uint_eq(sb.raid_disks, 3);
  }

  /* The members grow: what is shown does not (md's external size). */
  for (i = 0; i < 3; i++)
    resize_file(set, i, BIG_FILE);
  ck_assert_msg(raid_array_grow_size(a, 0, RAID_GROW_ASSUME_CLEAN) == 0, "%s",
                raid_get_error());
  grown = raid_array_full_size(a);
  ck_assert_uint_gt(grown, full);
  ck_assert_uint_eq(raid_array_size(a), ms);

  /* max: all shown again, the bytes past the old limit as written. */
  ck_assert_int_eq(raid_array_set_array_size(a, 0), 0);
  ck_assert_uint_eq(raid_array_size(a), grown);
  check_range(a, 0, full, 7);
  raid_array_free(a);
  test_free(buf);
}
END_TEST

static Suite *
grow_suite(void)
{
  Suite *s = suite_create("grow");
  TCase *tc = test_tcase("grow");

  tcase_add_loop_test(tc, test_grow_max, 0, ARRAY_SIZE(cases));
  tcase_add_loop_test(tc, test_refusals, 0, 3);
  tcase_add_loop_test(tc, test_mirrors, 0, 2);
  tcase_add_test(tc, test_mirrors_refused);
  tcase_add_test(tc, test_crash_in_update);
  tcase_add_test(tc, test_unsynced_writes);
  tcase_add_test(tc, test_array_size);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  test_init("test-grow");
  raid_set_log_handler(NULL, NULL, -1);
  return test_run_suite(grow_suite());
}
