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
 * test_refused: what md refuses (or raidd, saying why), every member byte
 * for byte unchanged: a RAID 1 of 3, a RAID 5 of 3 to RAID 1, a RAID 10, a
 * bitmap, a degraded mirror. */
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
  } cases[] = {
    { "tx1-", "a RAID 1 of 3", RAID_LEVEL_1, RAID_LEVEL_5, -ENOTSUP, 3, false, false },
    { "tx5-", "a RAID 5 of 3", RAID_LEVEL_5, RAID_LEVEL_1, -ENOTSUP, 3, false, false },
    { "txt-", "a RAID 10", RAID_LEVEL_10, RAID_LEVEL_5, -ENOTSUP, 4, false, false },
    { "txb-", "a bitmap", RAID_LEVEL_1, RAID_LEVEL_5, -ENOTSUP, 2, true, false },
    { "txd-", "degraded", RAID_LEVEL_1, RAID_LEVEL_5, -EAGAIN, 2, false, true },
  };
  struct raid_member *m[4];
  struct raid_array *a;
  unsigned i;

  for (i = 0; i < ARRAY_SIZE(cases); i++) {
    struct raid_config cfg = { .name = cases[i].set, .level = cases[i].level,
                               .raid_disks = cases[i].disks,
                               .layout = RAID_LAYOUT_DEFAULT,
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
