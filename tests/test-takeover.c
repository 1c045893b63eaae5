/* Description: mdadm --grow --level, md's takeover (raid_array_grow_level(),
 * lib/takeover.c): a RAID 1 of 2 becomes a RAID 5 of 2 and back, on
 * member files, the members' bytes untouched.
 *
 * test_mirror: a RAID 1 of 2 (metadata 1.2 and 1.0) filled with data
 * becomes a RAID 5 while a second thread writes, reads and flushes it all
 * the time (every read compared with what was written): the array says RAID 5,
 * left-symmetric, md's chunk (the largest up to 64 KiB dividing the member
 * size: 64 KiB, and 4 KiB for a member size that is an odd number of
 * 4 KiB blocks), the same size; the superblocks say so; both members'
 * data are byte for byte the same (a RAID 5 of 2's parity is a copy); a
 * check finds no mismatch; assembled again it is a RAID 5 with the same
 * bytes; back to RAID 1 likewise.
 *
 * test_then_restripe: the mirror as a RAID 5 of 2, restriped over 3 with a
 * hot spare (mdadm --grow --level 5 --raid-devices 3): twice the size, the
 * data as written, every chunk where md's RAID 5 of 3 puts it, check 0.
 *
 * test_stripe: a RAID 0 of 3 filled with data becomes a RAID 5 of 4 under
 * the writer (md's raid45_takeover_raid0()): parity-last, the same chunk
 * and size, its parity role missing (degraded, the superblocks say 4
 * roles); assembled again from the 3 members it is that; a member added
 * is rebuilt as its parity, every chunk where md's parity-last RAID 5 of
 * 4 puts it, check 0; then back to a RAID 0 of 3 under the writer (md's
 * raid0_takeover_raid45()): the parity member leaves (its superblock
 * stale), the others say RAID 0 of 3, the data as written, assembled
 * again likewise.
 *
 * test_missed: a crash while the superblocks that record a takeover
 * between RAID 0 and RAID 5 were written one after the other: member 1
 * still says the level before, one event behind.  Assembly takes it as
 * the freshest says (md's event margin of one), either way.
 *
 * test_stripe_layout: a left-symmetric RAID 5 of 4 to RAID 0 (mdadm's
 * way: reshaped to parity-last under a writer, a RAID 0 of 3 when that
 * ends, its parity member gone, every chunk where md's RAID 0 has it).
 *
 * test_refused: what md refuses (or raidd, saying why), every member byte
 * for byte unchanged: a RAID 1 of 3, a RAID 5 of 3 to RAID 1, a RAID 10, a
 * bitmap, a degraded mirror, a RAID 5 in another layout than parity-last
 * to RAID 0 with a bitmap (its reshape is refused) or of 2 members, a
 * RAID 5 to RAID 0 with a data member missing, a RAID 0 to RAID 1. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

#define MIB (UINT64_C(1) << 20)
#define FILE_SIZE (24 * MIB)

/* Member I of SET's data, SIZE bytes from its superblock's data offset. */
static uint8_t *
member_data(const char *set, unsigned i, uint64_t size)
{
  struct raid_superblock sb;
  uint8_t *p = test_alloc(size);
  char path[256];
  int fd;

  tfile_read_sb(set, i, &sb);
  tfile_path(path, sizeof path, set, i);
  ck_assert_int_ge(fd = open(path, O_RDONLY), 0);
  ck_assert_int_eq(pread(fd, p, size, (off_t)(sb.data_offset * 512)), (ssize_t)size);
  close(fd);
  return p;
}

/* A RAID 1 of 2 over SET's files 0 and 1 (FILE_BYTES each; file 2 too,
 * added as a hot spare, when SPARE), filled with data (SHADOW, room for
 * twice its size). */
static struct raid_array *
mirror(const char *set, int metadata, uint64_t file_bytes, bool spare, uint8_t **shadowp)
{
  struct raid_config cfg = { .name = set, .level = RAID_LEVEL_1, .raid_disks = 2,
                             .layout = RAID_LAYOUT_DEFAULT, .metadata = metadata,
                             .bitmap = RAID_BITMAP_NONE };
  struct raid_member *m[3];
  struct raid_array *a;
  struct rng r;
  uint64_t size;
  int role;

  tfile_create(set, 3, file_bytes);
  tfile_open(set, NULL, spare ? 3 : 2, m);
  ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  if (spare)
    ck_assert_msg(raid_array_add_member(a, m[2], &role) == 0 && role < 0, "%s",
                  raid_get_error());
  raid_array_set_sync_limits(a, 0, 0);
  size = raid_array_size(a);
  *shadowp = test_alloc(2 * size);
  memset(*shadowp, 0, 2 * size);
  rng_seed(&r, test_seed_for(1));
  rng_fill(&r, *shadowp, size);
  ck_assert_msg(raid_pwrite(a, *shadowp, size, 0, 0) == 0, "%s", raid_get_error());
  return a;
}

/* A becomes LEVEL while a writer uses it (and flushes: they park at the
 * takeover like the rest). */
static void
takeover_under_writer(struct raid_array *a, uint8_t *shadow, int level)
{
  struct tuser u = { .a = a, .shadow = shadow, .size = raid_array_size(a),
                     .flush_pct = 10 };

  tuser_start(&u);
  usleep(20000);
  ck_assert_msg(raid_array_grow_level(a, level) == 0, "%s", raid_get_error());
  usleep(20000);
  tuser_stop(&u);
  ck_assert_uint_gt(u.flushes, 0);
}

/* A (then stopped) and its superblocks say LEVEL, LAYOUT, CHUNK and SIZE;
 * both members hold the same data; assembled again, the same. */
static void
check_level(const char *set, struct raid_array *a, const uint8_t *shadow, int level,
            int layout, uint32_t chunk, uint64_t size)
{
  struct raid_superblock sb;
  struct raid_member *m[2];
  uint8_t *d0, *d1;
  unsigned i;

  ck_assert_int_eq(raid_array_level(a), level);
  ck_assert_int_eq(raid_array_layout(a), layout);
  ck_assert_uint_eq(raid_array_chunk_size(a), chunk);
  ck_assert_uint_eq(raid_array_size(a), size);
  tcheck_shadow(a, shadow, size);
  ck_assert_uint_eq(tscrub(a), 0);
  raid_array_free(a);
  for (i = 0; i < 2; i++) {
    tfile_read_sb(set, i, &sb);
    ck_assert_int_eq(sb.level, level);
    ck_assert_uint_eq(sb.layout, (uint32_t)layout);
    ck_assert_uint_eq(sb.chunksize, chunk / 512);
    ck_assert_uint_eq(sb.raid_disks, 2);
  }
  d0 = member_data(set, 0, size);
  d1 = member_data(set, 1, size);
  ck_assert_msg(memcmp(d0, d1, size) == 0, "the members' data differ");
  ck_assert_msg(memcmp(d0, shadow, size) == 0, "the members do not hold the data");
  test_free(d0);
  test_free(d1);
  tfile_open(set, NULL, 2, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 2, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_level(a), level);
  ck_assert_uint_eq(raid_array_size(a), size);
  tcheck_shadow(a, shadow, size);
  raid_array_free(a);
}

START_TEST(test_mirror)
{
  /* 0: metadata 1.2, 64 KiB chunks; 1: metadata 1.0, and a member size
   * of an odd number of 4 KiB blocks (md's chunk then: 4 KiB). */
  int metadata = _i ? RAID_METADATA_1_0 : RAID_METADATA_1_2;
  const char *set = _i ? "tm10-" : "tm12-";
  uint64_t file_bytes = _i ? FILE_SIZE + 4096 : FILE_SIZE;
  struct raid_member *m[2];
  struct raid_array *a;
  uint8_t *shadow;
  uint64_t size;
  uint32_t chunk;

  a = mirror(set, metadata, file_bytes, false, &shadow);
  size = raid_array_size(a);
  for (chunk = 64 << 10; size % chunk; chunk /= 2)
    ;
  ck_assert_uint_eq(chunk < (64u << 10), _i);
  ck_assert_int_eq(raid_array_grow_level(a, RAID_LEVEL_1), 0);
  takeover_under_writer(a, shadow, RAID_LEVEL_5);
  check_level(set, a, shadow, RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, chunk, size);

  tfile_open(set, NULL, 2, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 2, 0, &a) == 0, "%s", raid_get_error());
  takeover_under_writer(a, shadow, RAID_LEVEL_1);
  check_level(set, a, shadow, RAID_LEVEL_1, 0, 0, size);
  test_free(shadow);
}
END_TEST

START_TEST(test_then_restripe)
{
  const char *set = "tr-";
  struct tconf c = { .level = RAID_LEVEL_5, .layout = RAID_LAYOUT_LEFT_SYMMETRIC, .disks = 3,
                     .chunk = 64 << 10 };
  struct raid_superblock sb;
  struct raid_array *a;
  const char *names[3];
  char path[3][256];
  uint8_t *shadow, *data[3];
  uint64_t size, ms;
  unsigned i;

  a = mirror(set, RAID_METADATA_1_2, FILE_SIZE, true, &shadow);
  size = raid_array_size(a);
  ck_assert_msg(raid_array_grow_level(a, RAID_LEVEL_5) == 0, "%s", raid_get_error());
  ck_assert_msg(raid_array_grow_disks(a, 3) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  ck_assert_uint_eq(raid_array_raid_disks(a), 3);
  ck_assert_uint_eq(raid_array_size(a), 2 * size);
  tcheck_shadow(a, shadow, 2 * size);
  ck_assert_uint_eq(tscrub(a), 0);
  raid_array_free(a);
  for (i = 0; i < 3; i++) {
    tfile_read_sb(set, i, &sb);
    ck_assert_int_eq(sb.level, 5);
    ck_assert_uint_eq(sb.raid_disks, 3);
    ms = sb.size * 512;
    tfile_path(path[i], sizeof path[i], set, i);
    names[i] = path[i];
    data[i] = member_data(set, i, ms);
  }
  tcheck_layout(&c, "a mirror restriped", names, (const uint8_t *const *)data, ms, shadow,
                2 * size);
  for (i = 0; i < 3; i++)
    test_free(data[i]);
  test_free(shadow);
}
END_TEST

/* The data of SET's members 0..N-1 (each MS bytes) checked against C's
 * layout for SHADOW's SIZE bytes. */
static void
check_members(const char *set, unsigned n, const struct tconf *c, const char *what,
              uint64_t ms, const uint8_t *shadow, uint64_t size)
{
  const char *names[4];
  char path[4][256];
  uint8_t *data[4];
  unsigned i;

  for (i = 0; i < n; i++) {
    tfile_path(path[i], sizeof path[i], set, i);
    names[i] = path[i];
    data[i] = member_data(set, i, ms);
  }
  tcheck_layout(c, what, names, (const uint8_t *const *)data, ms, shadow, size);
  for (i = 0; i < n; i++)
    test_free(data[i]);
}

/* A RAID 0 of 3 over SET's files 0..2 (file 3 made too, for later),
 * 64 KiB chunks, filled with data (*SHADOWP, the array's size). */
static struct raid_array *
stripe(const char *set, unsigned seed, uint8_t **shadowp)
{
  struct raid_config cfg = { .name = set, .level = RAID_LEVEL_0, .raid_disks = 3,
                             .chunk_size = 64 << 10, .layout = RAID_LAYOUT_DEFAULT,
                             .metadata = RAID_METADATA_1_2, .bitmap = RAID_BITMAP_NONE };
  struct raid_member *m[3];
  struct raid_array *a;
  struct rng rg;
  uint64_t size, off;

  tfile_create(set, 4, FILE_SIZE);
  tfile_open(set, NULL, 3, m);
  ck_assert_msg(raid_array_create(&cfg, m, 0, &a) == 0, "%s", raid_get_error());
  raid_array_set_sync_limits(a, 0, 0);
  size = raid_array_size(a);
  *shadowp = test_alloc(size);
  rng_seed(&rg, test_seed_for(seed));
  rng_fill(&rg, *shadowp, size);
  for (off = 0; off < size; off += 8 * MIB)
    ck_assert_msg(raid_pwrite(a, *shadowp + off, MIN(8 * MIB, size - off), off, 0) == 0,
                  "%s", raid_get_error());
  return a;
}

/* SET's first N files assembled: a RAID 0 of 3 with SHADOW's SIZE bytes. */
static void
assembled_stripe(const char *set, unsigned n, const uint8_t *shadow, uint64_t size)
{
  struct raid_member *m[4];
  struct raid_array *a;

  tfile_open(set, NULL, n, m);
  ck_assert_msg(raid_array_assemble(NULL, m, n, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_level(a), RAID_LEVEL_0);
  ck_assert_uint_eq(raid_array_raid_disks(a), 3);
  ck_assert_uint_eq(raid_array_size(a), size);
  tcheck_shadow(a, shadow, size);
  raid_array_free(a);
}

/* A (then stopped) is the RAID 0 of 3 a RAID 5 of 4 over SET's files
 * became, with SHADOW's SIZE bytes: its superblocks say it (no reshape,
 * each member's data_size its size as md's takeover writes it), member 3
 * (the parity that left) kept its own RAID 5 superblock, the others say
 * it faulty; every chunk where md's RAID 0 has it; assembled again. */
static void
stripe_of_3(const char *set, struct raid_array *a, const uint8_t *shadow, uint64_t size,
            const char *what)
{
  struct tconf c0 = { .level = RAID_LEVEL_0, .disks = 3, .chunk = 64 << 10 };
  struct raid_superblock sb, sb3;
  unsigned i;

  ck_assert_int_eq(raid_array_level(a), RAID_LEVEL_0);
  ck_assert_uint_eq(raid_array_raid_disks(a), 3);
  ck_assert_uint_eq(raid_array_degraded(a), 0);
  ck_assert_uint_eq(raid_array_size(a), size);
  tcheck_shadow(a, shadow, size);
  raid_array_free(a);
  tfile_read_sb(set, 3, &sb3);
  ck_assert_int_eq(sb3.level, RAID_LEVEL_5);
  for (i = 0; i < 3; i++) {
    tfile_read_sb(set, i, &sb);
    ck_assert_int_eq(sb.level, RAID_LEVEL_0);
    ck_assert_uint_eq(sb.raid_disks, 3);
    ck_assert_uint_eq(sb.feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE, 0);
    ck_assert_uint_eq(sb.data_size, sb.size);
    ck_assert_uint_eq(sb.dev_roles[sb.dev_number], i);
    ck_assert_uint_eq(sb.dev_roles[sb3.dev_number], RAID_SB_ROLE_FAULTY);
    ck_assert_uint_gt(sb.events, sb3.events);
  }
  check_members(set, 3, &c0, what, sb.size * 512, shadow, size);
  assembled_stripe(set, 3, shadow, size);
}

START_TEST(test_stripe)
{
  const char *set = "ts-";
  struct tconf c5 = { .level = RAID_LEVEL_5, .layout = RAID_LAYOUT_PARITY_LAST, .disks = 4,
                      .chunk = 64 << 10 };
  struct raid_superblock sb;
  struct raid_member *m[4];
  struct raid_array *a;
  uint8_t *shadow;
  uint64_t size, ms;
  unsigned i;
  int role;

  a = stripe(set, 3, &shadow);
  size = raid_array_size(a);

  /* RAID 0 of 3 to RAID 5 of 4, degraded. */
  takeover_under_writer(a, shadow, RAID_LEVEL_5);
  ck_assert_int_eq(raid_array_level(a), RAID_LEVEL_5);
  ck_assert_int_eq(raid_array_layout(a), RAID_LAYOUT_PARITY_LAST);
  ck_assert_uint_eq(raid_array_chunk_size(a), 64 << 10);
  ck_assert_uint_eq(raid_array_raid_disks(a), 4);
  ck_assert_uint_eq(raid_array_degraded(a), 1);
  ck_assert_uint_eq(raid_array_size(a), size);
  tcheck_shadow(a, shadow, size);
  raid_array_free(a);
  for (i = 0; i < 3; i++) {
    tfile_read_sb(set, i, &sb);
    ck_assert_int_eq(sb.level, 5);
    ck_assert_uint_eq(sb.layout, RAID_LAYOUT_PARITY_LAST);
    ck_assert_uint_eq(sb.raid_disks, 4);
    ck_assert_uint_eq(sb.dev_roles[sb.dev_number], i);
  }
  tfile_open(set, NULL, 3, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 3, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_level(a), RAID_LEVEL_5);
  ck_assert_uint_eq(raid_array_degraded(a), 1);
  tcheck_shadow(a, shadow, size);

  /* A member added takes the parity role and is rebuilt. */
  tfile_open(set, (const unsigned[]){ 3 }, 1, m);
  ck_assert_msg(raid_array_add_member(a, m[0], &role) == 0, "%s", raid_get_error());
  ck_assert_int_eq(role, 3);
  ck_assert_msg(raid_array_sync_start(a, RAID_SYNC_RECOVER) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  ck_assert_uint_eq(raid_array_degraded(a), 0);
  ck_assert_uint_eq(tscrub(a), 0);
  tfile_read_sb(set, 0, &sb);
  ms = sb.size * 512;
  check_members(set, 4, &c5, "a RAID 0 taken over and rebuilt", ms, shadow, size);

  /* Back to RAID 0 of 3: the parity member leaves. */
  takeover_under_writer(a, shadow, RAID_LEVEL_0);
  stripe_of_3(set, a, shadow, size, "a RAID 5 taken over as a RAID 0");
  test_free(shadow);
}
END_TEST

/* Member I of SET's superblock made what it was one update earlier, had
 * it missed a takeover: LEVEL, LAYOUT and DISKS roles. */
static void
missed(const char *set, unsigned i, int level, int layout, unsigned disks)
{
  struct raid_superblock sb;

  tfile_read_sb(set, i, &sb);
  sb.level = level;
  sb.layout = (uint32_t)layout;
  sb.raid_disks = disks;
  sb.events--;
  tfile_write_sb(set, i, &sb);
}

START_TEST(test_missed)
{
  const char *set = "tmi-";
  struct raid_member *m[4];
  struct raid_array *a;
  uint8_t *shadow;
  uint64_t size;
  int role;

  a = stripe(set, 4, &shadow);
  size = raid_array_size(a);
  ck_assert_msg(raid_array_grow_level(a, RAID_LEVEL_5) == 0, "%s", raid_get_error());
  raid_array_free(a);
  /* RAID 5 of 4 on members 0 and 2; member 1 still a RAID 0 of 3. */
  missed(set, 1, RAID_LEVEL_0, 0, 3);
  tfile_open(set, NULL, 3, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 3, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_level(a), RAID_LEVEL_5);
  ck_assert_uint_eq(raid_array_raid_disks(a), 4);
  ck_assert_uint_eq(raid_array_degraded(a), 1);
  tcheck_shadow(a, shadow, size);
  tfile_open(set, (const unsigned[]){ 3 }, 1, m);
  ck_assert_msg(raid_array_add_member(a, m[0], &role) == 0 && role == 3, "%s",
                raid_get_error());
  ck_assert_msg(raid_array_sync_start(a, RAID_SYNC_RECOVER) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  ck_assert_msg(raid_array_grow_level(a, RAID_LEVEL_0) == 0, "%s", raid_get_error());
  raid_array_free(a);
  /* RAID 0 of 3 on members 0 and 2; member 1 still a RAID 5 of 4. */
  missed(set, 1, RAID_LEVEL_5, RAID_LAYOUT_PARITY_LAST, 4);
  assembled_stripe(set, 4, shadow, size);
  test_free(shadow);
}
END_TEST

/* A left-symmetric RAID 5 of 4 to RAID 0, mdadm's way: reshaped to the
 * parity-last layout while a writer uses it, then a RAID 0 of 3 at the
 * reshape's end, the parity member closed with its superblock as it was
 * (the others say it faulty); every chunk where md's RAID 0 puts it, and
 * so assembled again. */
START_TEST(test_stripe_layout)
{
  const char *set = "tl-";
  struct raid_config cfg = { .name = set, .level = RAID_LEVEL_5, .raid_disks = 4,
                             .chunk_size = 64 << 10, .layout = RAID_LAYOUT_LEFT_SYMMETRIC,
                             .metadata = RAID_METADATA_1_2, .bitmap = RAID_BITMAP_NONE };
  struct raid_member *m[4];
  struct raid_array *a;
  struct rng rg;
  uint8_t *shadow;
  uint64_t size, off;

  tfile_create(set, 4, FILE_SIZE);
  tfile_open(set, NULL, 4, m);
  ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  raid_array_set_sync_limits(a, 0, 0);
  size = raid_array_size(a);
  shadow = test_alloc(size);
  rng_seed(&rg, test_seed_for(7));
  rng_fill(&rg, shadow, size);
  for (off = 0; off < size; off += 8 * MIB)
    ck_assert_msg(raid_pwrite(a, shadow + off, MIN(8 * MIB, size - off), off, 0) == 0,
                  "%s", raid_get_error());

  takeover_under_writer(a, shadow, RAID_LEVEL_0);
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  stripe_of_3(set, a, shadow, size, "a left-symmetric RAID 5 made a RAID 0");
  test_free(shadow);
}
END_TEST

/* LEVEL refused with ERR, naming why, SET's N files unchanged. */
static void
refused(const char *set, unsigned n, struct raid_array *a, int level, int err,
        const char *what)
{
  uint8_t *before[4], *after;
  unsigned i;

  for (i = 0; !raid_array_clean(a); i++) {
    ck_assert_uint_lt(i, 10000);
    usleep(1000);
  }
  for (i = 0; i < n; i++)
    before[i] = member_data(set, i, FILE_SIZE / 2);
  ck_assert_int_eq(raid_array_grow_level(a, level), err);
  ck_assert_msg(strlen(raid_get_error()) > 20, "%s: no message", what);
  ck_assert_int_ne(raid_array_level(a), level);
  for (i = 0; i < n; i++) {
    after = member_data(set, i, FILE_SIZE / 2);
    ck_assert_msg(memcmp(after, before[i], FILE_SIZE / 2) == 0, "%s: member %u changed",
                  what, i);
    test_free(after);
    test_free(before[i]);
  }
}

START_TEST(test_refused)
{
  static const struct {
    const char *set, *what;
    int level, to, err;
    unsigned disks;
    bool bitmap, degraded;
    int layout;                 /* 0: the level's default */
  } cases[] = {
    { "tx1-", "a RAID 1 of 3", RAID_LEVEL_1, RAID_LEVEL_5, -ENOTSUP, 3, false, false, 0 },
    { "tx5-", "a RAID 5 of 3", RAID_LEVEL_5, RAID_LEVEL_1, -ENOTSUP, 3, false, false, 0 },
    { "txt-", "a RAID 10", RAID_LEVEL_10, RAID_LEVEL_5, -ENOTSUP, 4, false, false, 0 },
    { "txb-", "a bitmap", RAID_LEVEL_1, RAID_LEVEL_5, -ENOTSUP, 2, true, false, 0 },
    { "txd-", "degraded", RAID_LEVEL_1, RAID_LEVEL_5, -EAGAIN, 2, false, true, 0 },
    /* Another layout is reshaped first, but a RAID 0 keeps no bitmap. */
    { "txl-", "a RAID 5 left-symmetric with a bitmap to RAID 0", RAID_LEVEL_5, RAID_LEVEL_0,
      -ENOTSUP, 3, true, false, RAID_LAYOUT_LEFT_SYMMETRIC },
    { "txs-", "a RAID 5 of 2 left-symmetric to RAID 0", RAID_LEVEL_5, RAID_LEVEL_0,
      -ENOTSUP, 2, false, false, RAID_LAYOUT_LEFT_SYMMETRIC },
    { "txz-", "a RAID 5 missing data to RAID 0", RAID_LEVEL_5, RAID_LEVEL_0, -EAGAIN, 3,
      false, true, RAID_LAYOUT_PARITY_LAST },
    { "txo-", "a RAID 0 to RAID 1", RAID_LEVEL_0, RAID_LEVEL_1, -ENOTSUP, 2, false, false, 0 },
  };
  struct raid_member *m[4];
  struct raid_array *a;
  unsigned i;

  for (i = 0; i < ARRAY_SIZE(cases); i++) {
    struct raid_config cfg = { .name = cases[i].set, .level = cases[i].level,
                               .raid_disks = cases[i].disks,
                               .layout = cases[i].layout ? cases[i].layout
                                                         : RAID_LAYOUT_DEFAULT,
                               .bitmap = cases[i].bitmap ? RAID_BITMAP_INTERNAL
                                                         : RAID_BITMAP_NONE };

    tfile_create(cfg.name, cfg.raid_disks, FILE_SIZE);
    tfile_open(cfg.name, NULL, cfg.raid_disks, m);
    ck_assert(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0);
    if (cases[i].degraded)
      ck_assert(raid_array_fail_member(a, 1) == 0);
    refused(cfg.name, cases[i].degraded ? 1 : cfg.raid_disks, a, cases[i].to, cases[i].err,
            cases[i].what);
    raid_array_free(a);
  }
}
END_TEST

static Suite *
takeover_suite(void)
{
  Suite *s = suite_create("takeover");
  TCase *tc = test_tcase("takeover");

  tcase_add_loop_test(tc, test_mirror, 0, 2);
  tcase_add_test(tc, test_then_restripe);
  tcase_add_test(tc, test_stripe);
  tcase_add_test(tc, test_missed);
  tcase_add_test(tc, test_stripe_layout);
  tcase_add_test(tc, test_refused);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  test_init("test-takeover");
  raid_set_log_handler(NULL, NULL, -1);
  return test_run_suite(takeover_suite());
}
