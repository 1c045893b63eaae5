/* Description: mdadm --grow --raid-devices to fewer members of a RAID 5
 * and a RAID 10 near-2: md's backwards reshape (reshape_backwards), on
 * member files.
 *
 * The rule (lib/grow.c's back_plan, after md's update_raid_disks() and
 * mdadm's set_new_data_offset()): the new shape starts later on every
 * member (new_offset > 0), by four units of the new shape's rows over the
 * larger chunk when the room after the data allows (two at least), else
 * by four units with the member size cut by what is missing (whole
 * units); the array
 * must show no more than the new shape holds over that member size first
 * (raidctl grow --array-size, mdadm --grow --array-size).  Worked out here
 * from the superblocks raidctl create wrote, not asked of the library.
 *
 * test_back: for each shape (a RAID 5 of 4 to 3, of 5 to 3 with another
 * layout and chunk; a RAID 10 near-2 of 4 to 3, rows of one and a half
 * chunks, of 6 to 4 with a smaller chunk), with the array filled: the
 * grow refused while it shows more than the new shape holds, naming the
 * --array-size to give, nothing written; then shrunk to that and
 * reshaped while a second thread writes and reads it (every read compared
 * with what was written); afterwards the array holds what the plan says,
 * every byte as written, a check finds no mismatch; the superblocks say
 * the new shape, no reshape, the data offset moved later by the gap and
 * the data area shorter by it (the members that left too, as md moves
 * every member's), the member size cut as the plan says;
 * each chunk where md's array of the new shape puts it; the members that
 * left are hot spares (md's raid5_finish_reshape()), so on every
 * superblock; assembled again, the same, the spares with it.
 *
 * test_back_resume: stopped a third of the way: md's reshape state on
 * every member (RESHAPE_ACTIVE, NEW_OFFSET, not RESHAPE_BACKWARDS, which
 * md sets only over as many members, raid_disks the new count,
 * delta_disks negative, a positive new_offset, the cut
 * member size, a reshape_position on a unit of the new shape, below where
 * it started); every byte reads back meanwhile; assembled again it goes
 * on from there and ends as test_back.
 *
 * test_back_missed_start, test_back_missed_finish: a crash between the
 * superblock writes that start or end it (some members one event behind,
 * as md's assembly allows): assembled whole, it goes on and ends right.
 *
 * test_back_md_gap: md's own RAID 10 reshape to fewer members, its data
 * offset moved by a single chunk, finished by raidd (stopped and
 * assembled once on the way, under a writer after).
 *
 * test_back_refused: what md refuses, every member byte for byte as it
 * was: a RAID 0 to fewer members, a degraded RAID 5, a RAID 10 below its
 * copies, and the size the array shows (the message names the size to
 * shrink it to, which then works). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "testlib-reshape.h"

static const struct shape shapes[] = {
  { RAID_LEVEL_5, 4, 3, RAID_LAYOUT_LEFT_SYMMETRIC, CHUNK },
  { RAID_LEVEL_5, 5, 3, RAID_LAYOUT_RIGHT_ASYMMETRIC, 2 * CHUNK },
  { RAID_LEVEL_10, 4, 3, RAID_LAYOUT_RAID10_NEAR(2), CHUNK },
  { RAID_LEVEL_10, 6, 4, RAID_LAYOUT_RAID10_NEAR(2), CHUNK / 2 },
};

/* What the reshape to TO does, from member 0's superblock before it. */
static void
plan_of(const struct shape *to, const struct raid_superblock *sb0, struct tback *p)
{
  tback_plan(to->level, to->n, CHUNK, to->chunk, sb0, p);
}

/* SET: an array of TO->from members over files filled with data (SHADOW,
 * the array's size), its sync unthrottled. */
static struct raid_array *
make(const char *set, const struct shape *to, uint8_t **shadowp, uint64_t *sizep,
     struct raid_superblock *sb0)
{
  struct raid_config cfg = { .name = set, .level = to->level, .chunk_size = CHUNK,
                             .layout = RAID_LAYOUT_DEFAULT, .raid_disks = to->from,
                             .metadata = RAID_METADATA_1_2, .bitmap = RAID_BITMAP_NONE };
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_array *a;
  uint64_t size;
  uint8_t *shadow;

  tfile_create(set, to->from, FILE_SIZE);
  tfile_open(set, NULL, to->from, m);
  ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  raid_array_set_sync_limits(a, 0, 0);
  size = raid_array_size(a);
  shadow = test_alloc(size);
  tr_fill(a, 2, shadow, size);
  tfile_read_sb(set, 0, sb0);
  *shadowp = shadow;
  *sizep = size;
  return a;
}

/* A refused while it shows more than TO holds: the message names the
 * size to give; nothing written. */
static void
refused_for_size(const char *set, struct raid_array *a, const struct shape *to,
                 const struct tback *p)
{
  char want[64];
  uint8_t **img;

  tsettle(a);
  img = tfile_images(set, to->from, FILE_SIZE);
  ck_assert_int_eq(tr_reshape_to(a, to), -EINVAL);
  snprintf(want, sizeof want, "--array-size %" PRIu64 "K", p->size >> 10);
  ck_assert_msg(strstr(raid_get_error(), want), "wanted \"%s\" in: %s", want,
                raid_get_error());
  ck_assert_uint_eq(raid_array_raid_disks(a), to->from);
  tfile_same(set, to->from, img, FILE_SIZE, "refused for its size");
  tfile_images_free(img, to->from);
}

/* A's hot spares. */
static unsigned
spares(struct raid_array *a)
{
  struct raid_member_info info[RAID_MAX_MEMBERS];
  unsigned i, n = raid_array_members(a, info, RAID_MAX_MEMBERS), k = 0;

  for (i = 0; i < n && i < RAID_MAX_MEMBERS; i++)
    k += info[i].state == RAID_MEMBER_SPARE;
  return k;
}

/* After the reshape to TO as P planned: A, the superblocks, the layout,
 * and A assembled again. */
static void
check_done(const char *set, struct raid_array *a, const uint8_t *shadow,
           const struct raid_superblock *sb0, const struct shape *to, const struct tback *p)
{
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_superblock sb;
  unsigned i;

  ck_assert_uint_eq(raid_array_size(a), p->size);
  ck_assert_uint_eq(raid_array_member_size(a), p->ms);
  ck_assert_uint_eq(raid_array_raid_disks(a), to->n);
  ck_assert_int_eq(raid_array_layout(a), to->layout);
  ck_assert_uint_eq(raid_array_chunk_size(a), to->chunk);
  ck_assert_uint_eq(raid_array_degraded(a), 0);
  ck_assert_uint_eq(spares(a), to->from - to->n);
  ck_assert_int_eq(raid_array_reshape_status(a, &(struct raid_reshape_status){ 0 }), 0);
  tcheck_shadow(a, shadow, p->size);
  ck_assert_uint_eq(tscrub(a), 0);
  raid_array_free(a);
  for (i = 0; i < to->from; i++) {
    tfile_read_sb(set, i, &sb);
    ck_assert_uint_eq(sb.raid_disks, to->n);
    ck_assert_int_eq(sb.delta_disks, 0);
    ck_assert_uint_eq(sb.layout, (uint32_t)to->layout);
    ck_assert_uint_eq(sb.chunksize, to->chunk / 512);
    ck_assert_uint_eq(sb.size * 512, p->ms);
    ck_assert_uint_eq(sb.feature_map & (RAID_SB_FEATURE_RESHAPE_ACTIVE |
                                        RAID_SB_FEATURE_NEW_OFFSET |
                                        RAID_SB_FEATURE_RESHAPE_BACKWARDS), 0);
    ck_assert_uint_eq(sb.resync_offset, RAID_SB_MAX_SECTOR);
    /* The members that left too (spares now), as md_finish_reshape()
     * moves every member's data offset. */
    ck_assert_uint_eq(sb.data_offset * 512, sb0->data_offset * 512 + p->gap);
    ck_assert_uint_eq(sb.data_size * 512, sb0->data_size * 512 - p->gap);
    ck_assert_uint_eq(sb.dev_roles[sb.dev_number], i < to->n ? i : RAID_SB_ROLE_SPARE);
  }
  tfile_check_layout(set, &(struct tconf){ .level = to->level, .layout = to->layout,
                                           .disks = to->n, .chunk = to->chunk },
                     "reshaped backwards", shadow, p->size);
  tfile_open(set, NULL, to->from, m);
  ck_assert_msg(raid_array_assemble(NULL, m, to->from, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_size(a), p->size);
  ck_assert_uint_eq(raid_array_raid_disks(a), to->n);
  ck_assert_uint_eq(raid_array_degraded(a), 0);
  ck_assert_uint_eq(spares(a), to->from - to->n);
  tcheck_shadow(a, shadow, p->size);
  raid_array_free(a);
}

START_TEST(test_back)
{
  const struct shape *to = &shapes[_i];
  struct raid_superblock sb0;
  struct tuser u = { 0 };
  struct tback p;
  uint64_t size;
  uint8_t *shadow;
  char set[16];

  snprintf(set, sizeof set, "rb%d-", _i);
  u.a = make(set, to, &shadow, &size, &sb0);
  plan_of(to, &sb0, &p);
  ck_assert_uint_lt(p.size, size);
  refused_for_size(set, u.a, to, &p);
  ck_assert_msg(raid_array_set_array_size(u.a, p.size) == 0, "%s", raid_get_error());
  u.shadow = shadow;
  u.size = p.size;
  tuser_start(&u);
  usleep(20000);
  ck_assert_msg(tr_reshape_to(u.a, to) == 0, "%s", raid_get_error());
  ck_assert_int_eq(tr_reshape_to(u.a, to), -EBUSY);
  ck_assert_int_eq(raid_array_sync_wait(u.a), 0);
  ck_assert_uint_eq(tscrub(u.a), 0);
  tuser_stop(&u);
  check_done(set, u.a, shadow, &sb0, to, &p);
  test_free(shadow);
}
END_TEST

START_TEST(test_back_resume)
{
  const struct shape *to = &shapes[_i];
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_reshape_status rs;
  struct raid_superblock sb0, sb;
  struct raid_array *a;
  struct tback p;
  uint64_t size;
  uint8_t *shadow;
  unsigned i;
  char set[16];

  snprintf(set, sizeof set, "rr%d-", _i);
  a = make(set, to, &shadow, &size, &sb0);
  plan_of(to, &sb0, &p);
  ck_assert_msg(raid_array_set_array_size(a, p.size) == 0, "%s", raid_get_error());
  /* Slow enough to be stopped on the way: 4 MiB/s of each member. */
  raid_array_set_sync_limits(a, 4 << 20, 4 << 20);
  ck_assert_msg(tr_reshape_to(a, to) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_reshape_status(a, &rs), 1);
  ck_assert_uint_eq(rs.raid_disks_from, to->from);
  ck_assert_uint_eq(rs.raid_disks_to, to->n);
  ck_assert_uint_eq(rs.size_to, p.size);
  treshape_stop_at_third(a);
  ck_assert_uint_eq(raid_array_size(a), p.size);
  ck_assert_uint_eq(raid_array_raid_disks(a), to->from);
  /* What has moved: from the line (md's reshape_position) up. */
  ck_assert_int_eq(raid_array_reshape_status(a, &rs), 1);
  ck_assert_uint_gt(rs.position, 0);
  tcheck_shadow(a, shadow, p.size);
  raid_array_free(a);
  for (i = 0; i < to->from; i++) {
    tfile_read_sb(set, i, &sb);
    /* md's bit RESHAPE_BACKWARDS only over as many members: fewer says it. */
    ck_assert_uint_eq(sb.feature_map & (RAID_SB_FEATURE_RESHAPE_ACTIVE |
                                        RAID_SB_FEATURE_NEW_OFFSET |
                                        RAID_SB_FEATURE_RESHAPE_BACKWARDS),
                      RAID_SB_FEATURE_RESHAPE_ACTIVE | RAID_SB_FEATURE_NEW_OFFSET);
    ck_assert_uint_eq(sb.raid_disks, to->n);
    ck_assert_int_eq(sb.delta_disks, (int)to->n - (int)to->from);
    ck_assert_uint_eq(sb.layout, sb0.layout);
    ck_assert_uint_eq(sb.chunksize, CHUNK / 512);
    ck_assert_uint_eq(sb.new_layout, (uint32_t)to->layout);
    ck_assert_uint_eq(sb.new_chunk, to->chunk / 512);
    ck_assert_int_eq(sb.new_offset, (int32_t)(p.gap / 512));
    ck_assert_uint_eq(sb.data_offset, sb0.data_offset);
    ck_assert_uint_eq(sb.size * 512, p.ms);
    ck_assert_uint_eq(sb.dev_roles[sb.dev_number], i);
    ck_assert_uint_eq(sb.reshape_position * 512 % p.unit, 0);
    ck_assert_uint_gt(sb.reshape_position * 512, 0);
    ck_assert_uint_lt(sb.reshape_position * 512, p.size);
    ck_assert_uint_eq(rs.position, p.size - sb.reshape_position * 512);
  }
  tfile_open(set, NULL, to->from, m);
  ck_assert_msg(raid_array_assemble(NULL, m, to->from, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_size(a), p.size);
  ck_assert_uint_eq(raid_array_raid_disks(a), to->from);
  ck_assert_uint_eq(raid_array_degraded(a), 0);
  tcheck_shadow(a, shadow, p.size);
  raid_array_set_sync_limits(a, 0, 0);
  ck_assert_msg(raid_array_sync_start(a, RAID_SYNC_RESHAPE) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  check_done(set, a, shadow, &sb0, to, &p);
  test_free(shadow);
}
END_TEST

/* A crash while the superblocks that start the reshape were written one
 * after the other: members 0, 2 and 3 say it (md's fields, as
 * meta_reshape_start() writes them, events one more), member 1 missed
 * it.  Assembly takes all four (md's margin of one); the reshape goes on
 * from the new shape's end and ends as test_back's. */
START_TEST(test_back_missed_start)
{
  const struct shape *to = &shapes[0];
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_superblock sb0, sb;
  struct raid_array *a;
  struct tback p;
  uint64_t size;
  uint8_t *shadow;
  unsigned i;

  a = make("bs-", to, &shadow, &size, &sb0);
  raid_array_free(a);
  plan_of(to, &sb0, &p);
  for (i = 0; i < 4; i++) {
    if (i == 1)
      continue;
    tfile_read_sb("bs-", i, &sb);
    tback_sb_start(&sb, 3, sb.chunksize * 512, &p);
    tfile_write_sb("bs-", i, &sb);
  }
  tfile_open("bs-", NULL, 4, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 4, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_degraded(a), 0);
  ck_assert_uint_eq(raid_array_size(a), p.size);
  tcheck_shadow(a, shadow, p.size);
  raid_array_set_sync_limits(a, 0, 0);
  ck_assert_msg(raid_array_sync_start(a, RAID_SYNC_RESHAPE) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  check_done("bs-", a, shadow, &sb0, to, &p);
  test_free(shadow);
}
END_TEST

/* The same at its end: member 1 (in the new shape) and member 3 (which
 * left it, a spare now) missed the update that ended it, so they still
 * say the reshape, all moved (reshape_position 0), at the old layout's
 * fields and data offset.  Assembly takes member 1 in the new shape at
 * its new offset and member 3 as the spare it is. */
START_TEST(test_back_missed_finish)
{
  const struct shape *to = &shapes[1];
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_superblock sb0, sb;
  struct raid_array *a;
  struct tback p;
  uint64_t size;
  uint8_t *shadow;
  unsigned i;

  a = make("bf-", to, &shadow, &size, &sb0);
  plan_of(to, &sb0, &p);
  ck_assert_int_eq(raid_array_set_array_size(a, p.size), 0);
  ck_assert_msg(tr_reshape_to(a, to) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  raid_array_free(a);
  for (i = 1; i < 5; i += 2) {
    tfile_read_sb("bf-", i, &sb);
    sb.feature_map |= RAID_SB_FEATURE_RESHAPE_ACTIVE | RAID_SB_FEATURE_NEW_OFFSET;
    sb.new_level = sb.level;
    sb.new_layout = sb.layout;
    sb.new_chunk = sb.chunksize;
    sb.layout = sb0.layout;
    sb.chunksize = sb0.chunksize;
    sb.delta_disks = (int32_t)to->n - (int32_t)to->from;
    sb.new_offset = (int32_t)(p.gap / 512);
    sb.data_offset -= p.gap / 512;
    sb.data_size += p.gap / 512;
    sb.dev_roles[sb.dev_number] = (uint16_t)i;
    sb.reshape_position = 0;
    sb.events--;
    tfile_write_sb("bf-", i, &sb);
  }
  tfile_open("bf-", NULL, to->from, m);
  ck_assert_msg(raid_array_assemble(NULL, m, to->from, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_reshape_status(a, &(struct raid_reshape_status){ 0 }), 0);
  ck_assert_uint_eq(raid_array_degraded(a), 0);
  check_done("bf-", a, shadow, &sb0, to, &p);
  test_free(shadow);
}
END_TEST

/* md's own RAID 10 reshape to fewer members, as mdadm starts it: the data
 * offset moved later by a single chunk of the larger size (all md's
 * raid10_start_reshape() asks), the member size cut by it, nothing moved
 * yet (reshape_position at the new shape's end).  raidd assembles it and
 * finishes it under a writer (near the bottom, where a chunk is all the
 * room, its steps end inside rows, as md's do), stopped on the way once
 * (its checkpoints on md's 64 KiB grain) and assembled again. */
START_TEST(test_back_md_gap)
{
  const struct shape *to = &shapes[_i ? 3 : 2];
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_superblock sb0, sb;
  struct raid_array *a;
  struct tuser u = { 0 };
  uint32_t cmax = MAX(CHUNK, to->chunk);
  struct tback p;
  uint64_t size;
  uint8_t *shadow;
  unsigned i;
  char set[16];

  snprintf(set, sizeof set, "bm%d-", _i);
  a = make(set, to, &shadow, &size, &sb0);
  tsettle(a);
  raid_array_free(a);
  p.gap = cmax;
  p.ms = (sb0.data_size * 512 - p.gap) / cmax * cmax;
  p.size = p.ms / to->chunk * to->n / 2 * to->chunk;
  for (i = 0; i < to->from; i++) {
    tfile_read_sb(set, i, &sb);
    tback_sb_start(&sb, to->n, to->chunk, &p);
    tfile_write_sb(set, i, &sb);
  }
  tfile_open(set, NULL, to->from, m);
  ck_assert_msg(raid_array_assemble(NULL, m, to->from, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_size(a), p.size);
  tcheck_shadow(a, shadow, p.size);
  raid_array_set_sync_limits(a, 4 << 20, 4 << 20);
  ck_assert_msg(raid_array_sync_start(a, RAID_SYNC_RESHAPE) == 0, "%s", raid_get_error());
  treshape_stop_at_third(a);
  raid_array_free(a);
  tfile_read_sb(set, 0, &sb);
  ck_assert_uint_eq(sb.feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE,
                    RAID_SB_FEATURE_RESHAPE_ACTIVE);
  ck_assert_uint_lt(sb.reshape_position * 512, p.size);
  ck_assert_uint_eq(sb.reshape_position * 512 % (64 << 10), 0);
  tfile_open(set, NULL, to->from, m);
  ck_assert_msg(raid_array_assemble(NULL, m, to->from, 0, &u.a) == 0, "%s",
                raid_get_error());
  u.shadow = shadow;
  u.size = p.size;
  tuser_start(&u);
  raid_array_set_sync_limits(u.a, 0, 0);
  ck_assert_msg(raid_array_sync_start(u.a, RAID_SYNC_RESHAPE) == 0, "%s", raid_get_error());
  ck_assert_msg(raid_array_sync_wait(u.a) == 0, "%s", raid_get_error());
  tuser_stop(&u);
  check_done(set, u.a, shadow, &sb0, to, &p);
  test_free(shadow);
}
END_TEST

START_TEST(test_back_refused)
{
  struct raid_config cfg = { .level = RAID_LEVEL_0, .chunk_size = CHUNK, .raid_disks = 3,
                             .layout = RAID_LAYOUT_DEFAULT, .bitmap = RAID_BITMAP_NONE,
                             .metadata = RAID_METADATA_1_2 };
  struct raid_member *m[4];
  struct raid_array *a;
  uint8_t **img;

  cfg.name = "bz-";
  tfile_create(cfg.name, 3, FILE_SIZE);
  tfile_open(cfg.name, NULL, 3, m);
  ck_assert(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0);
  tsettle(a);
  img = tfile_images(cfg.name, 3, FILE_SIZE);
  ck_assert_int_eq(raid_array_set_array_size(a, raid_array_size(a) / 3), 0);
  ck_assert_int_eq(raid_array_grow_disks(a, 2), -ENOTSUP);
  ck_assert_msg(strstr(raid_get_error(), "RAID 0 cannot be reshaped to fewer"), "%s",
                raid_get_error());
  tfile_same(cfg.name, 3, img, FILE_SIZE, "RAID 0");
  tfile_images_free(img, 3);
  raid_array_free(a);

  cfg.name = "bd-";
  cfg.level = RAID_LEVEL_5;
  cfg.raid_disks = 4;
  tfile_create(cfg.name, 4, FILE_SIZE);
  tfile_open(cfg.name, NULL, 4, m);
  ck_assert(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0);
  ck_assert_int_eq(raid_array_set_array_size(a, raid_array_size(a) / 3), 0);
  ck_assert(raid_array_fail_member(a, 1) == 0);
  tsettle(a);
  img = tfile_images(cfg.name, 4, FILE_SIZE);
  ck_assert_int_eq(raid_array_grow_disks(a, 3), -EAGAIN);
  ck_assert_msg(strstr(raid_get_error(), "degraded"), "%s", raid_get_error());
  tfile_same(cfg.name, 4, img, FILE_SIZE, "degraded");
  tfile_images_free(img, 4);
  raid_array_free(a);

  cfg.name = "bt-";
  cfg.level = RAID_LEVEL_10;
  tfile_create(cfg.name, 4, FILE_SIZE);
  tfile_open(cfg.name, NULL, 4, m);
  ck_assert(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0);
  ck_assert_int_eq(raid_array_set_array_size(a, raid_array_size(a) / 4), 0);
  tsettle(a);
  img = tfile_images(cfg.name, 4, FILE_SIZE);
  ck_assert_int_eq(raid_array_grow_disks(a, 1), -EINVAL);
  ck_assert_msg(strstr(raid_get_error(), "copies"), "%s", raid_get_error());
  tfile_same(cfg.name, 4, img, FILE_SIZE, "RAID 10 of 1");
  tfile_images_free(img, 4);
  raid_array_free(a);
}
END_TEST

static Suite *
reshape_back_suite(void)
{
  Suite *s = suite_create("reshape-back");
  TCase *tc = test_tcase("reshape-back");

  tcase_add_loop_test(tc, test_back, 0, sizeof shapes / sizeof shapes[0]);
  tcase_add_loop_test(tc, test_back_resume, 0, sizeof shapes / sizeof shapes[0]);
  tcase_add_test(tc, test_back_missed_start);
  tcase_add_test(tc, test_back_missed_finish);
  tcase_add_loop_test(tc, test_back_md_gap, 0, 2);
  tcase_add_test(tc, test_back_refused);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  test_init("test-reshape-back");
  return test_run_suite(reshape_back_suite());
}
