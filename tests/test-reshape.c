/* Description: mdadm --grow --raid-devices, --layout and --chunk of a RAID 5
 * and --raid-devices, --chunk of a RAID 10 near-2 (raid_array_grow_disks(),
 * raid_array_grow_shape(), the reshape of lib/sync/reshape.c), on member
 * files.
 *
 * test_restripe: a RAID 5 of 3 (metadata 1.1 and 1.2) filled with data,
 * a fourth member added as a hot spare and the array restriped over 4
 * while a second thread writes and reads it all the time (every read
 * compared with what was written), and a check right after it beside that
 * writer finds no mismatch (the check's row locks must meet the writes'
 * in the new shape's lock space); afterwards the whole array reads back,
 * its size is 3 members' worth (the new room reads as zeroes), the
 * superblocks say 4 members, no reshape and a data offset moved earlier by
 * the gap mdadm's rule gives (computed here from the superblock), every
 * chunk and parity chunk is where md's RAID 5 of 4 puts it (the tests'
 * own reference of md's layout reading the files), a check finds no
 * mismatch, and so after a stop and an assembly.
 *
 * test_resume: the reshape stopped a third of the way (as raidctl grow
 * --stop, or raidd stopped): the superblocks say md's reshape state
 * (RESHAPE_ACTIVE, NEW_OFFSET, delta_disks, a reshape_position on a new
 * stripe), every byte reads back meanwhile; the array stopped and
 * assembled again goes on from there and ends as above.
 *
 * test_shape: as test_restripe, to another layout, a larger or smaller
 * chunk (mdadm --grow --layout, --chunk: over as many members), and to 4
 * members, another layout and chunk at once; a RAID 10 near-2 from 4 to 6
 * members, from 3 to 5 (rows of one and a half chunks, then two and a
 * half), from 4 to 5 with a larger chunk, and to a smaller chunk: each
 * chunk's two copies where md's RAID 10 puts them; a RAID 0 of 2 over 3
 * and of 3 over 5 with their new members (raid_array_grow_disks_add():
 * md's way, as a RAID 5 missing its parity role), a RAID 0 again at the
 * end, every chunk where md's RAID 0 puts it.
 *
 * test_stripe_resume: that RAID 0's reshape stopped a third of the way:
 * the superblocks say md's RAID 5 reshape, the member filling the old
 * parity role recovering no further than the checkpoint; that member made
 * to have missed the last checkpoint (one event behind) is taken, filled
 * up to the freshest one; assembled again it goes on, ends as the RAID 5
 * (the RAID 0 is not on record, as with mdadm), and the takeover to RAID
 * 0 ends it as the others.
 *
 * test_stripe_refused: a RAID 0's restripe refused with every member and
 * the new ones unchanged: metadata 1.0, a new member too small (named),
 * the wrong number of them; the array still a RAID 0.
 *
 * test_resume runs for the restripe, a layout and chunk change, and both
 * RAID 10 restripes.
 *
 * test_missed_start, test_missed_finish: a crash between the superblock
 * writes that start or end a reshape (some members one event behind, as
 * md's assembly allows): assembled whole, it goes on and ends right.
 *
 * test_md_gap: a RAID 10 over an odd number of members with md's single
 * chunk of room, resumed from where md's ten-second checkpoint puts it.
 *
 * (A reshape with a write-intent bitmap: test-reshape-bitmap.c.)
 *
 * test_refused: what md (or raidd, saying why) refuses, with every member
 * byte for byte unchanged: a bitmap taking the room the reshape needs
 * (mdadm's space_before ends at the bitmap), metadata 1.0, no spare, a degraded
 * array, fewer members (the array showing more than they hold), a RAID
 * 10 without spares or to another layout (md keeps its copies) or with
 * less than a chunk of room before the data, RAID 0, a second grow while
 * one runs, an unknown layout, a chunk not a power of two or not dividing
 * the member size. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

#include "testlib-reshape.h"

/* SET reshaped to TO while a second thread writes and reads it. */
static void
under_writer(const char *set, int metadata, const struct shape *to)
{
  struct raid_superblock sb0;
  struct tuser u = { 0 };
  uint8_t *shadow;
  uint64_t old_size;

  u.a = tr_make(set, to, metadata, &shadow, &old_size, &sb0);
  u.shadow = shadow;
  u.size = old_size;
  tuser_start(&u);
  usleep(20000);
  ck_assert_msg(tr_reshape_to(u.a, to) == 0, "%s", raid_get_error());
  ck_assert_int_eq(tr_reshape_to(u.a, to), -EBUSY);
  ck_assert_int_eq(raid_array_sync_wait(u.a), 0);
  /* A check beside the writer, in the new shape: its row locks and the
   * writes' meet (a check reading a row half written would count a
   * mismatch). */
  raid_array_set_sync_limits(u.a, 0, 0);
  if (to->level != RAID_LEVEL_0)
    ck_assert_uint_eq(tscrub(u.a), 0);
  tuser_stop(&u);
  tr_check_done(set, u.a, shadow, old_size, &sb0, to);
  test_free(shadow);
}

START_TEST(test_restripe)
{
  under_writer(_i ? "r11-" : "r12-", _i ? RAID_METADATA_1_1 : RAID_METADATA_1_2, &tr_shapes[0]);
}
END_TEST

/* Another layout or chunk (and members), under a writer, as test_restripe;
 * a RAID 10 too. */
START_TEST(test_shape)
{
  char set[16];

  snprintf(set, sizeof set, "rs%d-", _i);
  under_writer(set, RAID_METADATA_1_2, &tr_shapes[_i]);
}
END_TEST

/* test_resume's reshapes: a RAID 5's restripe, its layout and chunk, a
 * RAID 10's restripe, one whose copies do not divide its members. */
static const unsigned resumed[] = { 0, 1, 5, 6 };

START_TEST(test_resume)
{
  const struct shape *to = &tr_shapes[resumed[_i]];
  struct raid_superblock sb0, sb;
  struct raid_sync_status st;
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_array *a;
  uint8_t *shadow;
  uint64_t old_size, row;
  unsigned i, num, den;
  char set[16];

  snprintf(set, sizeof set, "rr%d-", _i);
  tr_row_chunks(to, to->n, &num, &den);
  row = (uint64_t)num * tr_unit_rows(to) / den * MAX(CHUNK, to->chunk);
  a = tr_make(set, to, RAID_METADATA_1_2, &shadow, &old_size, &sb0);
  ck_assert_msg(tr_reshape_to(a, to) == 0, "%s", raid_get_error());
  /* Until it has started and gone a third of the way. */
  treshape_stop_at_third(a);
  raid_array_sync_status(a, &st);
  ck_assert_int_eq(st.action, RAID_SYNC_IDLE);
  /* Both shapes serve, either side of the checkpoint. */
  ck_assert_uint_eq(raid_array_size(a), old_size);
  tcheck_shadow(a, shadow, old_size);
  raid_array_free(a);

  for (i = 0; i < to->n; i++) {
    tfile_read_sb(set, i, &sb);
    ck_assert_uint_eq(sb.feature_map & (RAID_SB_FEATURE_RESHAPE_ACTIVE |
                                        RAID_SB_FEATURE_NEW_OFFSET),
                      RAID_SB_FEATURE_RESHAPE_ACTIVE | RAID_SB_FEATURE_NEW_OFFSET);
    ck_assert_uint_eq(sb.raid_disks, to->n);
    ck_assert_int_eq(sb.delta_disks, (int)to->n - (int)to->from);
    ck_assert_int_eq(sb.new_level, to->level);
    ck_assert_uint_eq(sb.layout, sb0.layout);
    ck_assert_uint_eq(sb.chunksize, CHUNK / 512);
    ck_assert_uint_eq(sb.new_layout, (uint32_t)to->layout);
    ck_assert_uint_eq(sb.new_chunk, to->chunk / 512);
    ck_assert_int_eq(sb.new_offset, -(int32_t)(tr_expected_gap(&sb0, to) / 512));
    ck_assert_uint_eq(sb.data_offset, sb0.data_offset);
    ck_assert_uint_eq(sb.reshape_position * 512 % row, 0);
    ck_assert_uint_gt(sb.reshape_position * 512, 0);
    ck_assert_uint_lt(sb.reshape_position * 512, old_size);
  }
  tfile_open(set, NULL, tr_files(to), m);
  ck_assert_msg(raid_array_assemble(NULL, m, tr_files(to), 0, &a) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_size(a), old_size);
  tcheck_shadow(a, shadow, old_size);
  ck_assert_msg(raid_array_sync_start(a, RAID_SYNC_RESHAPE) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  tr_check_done(set, a, shadow, old_size, &sb0, to);
  test_free(shadow);
}
END_TEST

/* A crash while the superblocks that start a restripe were written one
 * after the other: members 0 and 2 say the reshape (as meta_reshape_start()
 * writes it: md's fields, the hot spare in role 3, events one more), the
 * old member 1 and the spare itself missed it.  Assembly takes all four
 * (md's event margin of one), the reshape goes on from its start and ends
 * as test_restripe's. */
START_TEST(test_missed_start)
{
  const char *set = "rm-";
  struct raid_superblock sb0, sb[4];
  struct raid_member *m[4];
  struct raid_array *a;
  uint8_t *shadow;
  uint64_t old_size, gap;
  unsigned i;

  a = tr_make(set, &tr_shapes[0], RAID_METADATA_1_2, &shadow, &old_size, &sb0);
  raid_array_free(a);
  gap = tr_expected_gap(&sb0, &tr_shapes[0]);
  for (i = 0; i < 4; i++)
    tfile_read_sb(set, i, &sb[i]);
  ck_assert_uint_eq(sb[3].dev_roles[sb[3].dev_number], RAID_SB_ROLE_SPARE);
  for (i = 0; i < 4; i += 2) {
    sb[i].feature_map |= RAID_SB_FEATURE_RESHAPE_ACTIVE | RAID_SB_FEATURE_NEW_OFFSET;
    sb[i].raid_disks = 4;
    sb[i].delta_disks = 1;
    sb[i].new_level = 5;
    sb[i].new_layout = sb[i].layout;
    sb[i].new_chunk = sb[i].chunksize;
    sb[i].reshape_position = 0;
    sb[i].new_offset = -(int32_t)(gap / 512);
    sb[i].dev_roles[sb[3].dev_number] = 3;
    sb[i].events++;
    tfile_write_sb(set, i, &sb[i]);
  }
  tfile_open(set, NULL, 4, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 4, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_raid_disks(a), 4);
  ck_assert_uint_eq(raid_array_degraded(a), 0);
  ck_assert_uint_eq(raid_array_size(a), old_size);
  tcheck_shadow(a, shadow, old_size);
  ck_assert_msg(raid_array_sync_start(a, RAID_SYNC_RESHAPE) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  tr_check_done(set, a, shadow, old_size, &sb0, &tr_shapes[0]);
  test_free(shadow);
}
END_TEST

/* The same at the end of a reshape to another layout and chunk: member 1
 * missed the update that ended it (meta_reshape_finish()), so it still
 * says the reshape, at its end, with the old layout and data offset.
 * Assembly takes it in the new shape at its new offset. */
START_TEST(test_missed_finish)
{
  const char *set = "rf-";
  const struct shape *to = &tr_shapes[1];
  struct raid_superblock sb0, sb;
  struct raid_member *m[4];
  struct raid_array *a;
  uint8_t *shadow;
  uint64_t old_size, gap;

  a = tr_make(set, to, RAID_METADATA_1_2, &shadow, &old_size, &sb0);
  raid_array_set_sync_limits(a, 0, 0);
  ck_assert_msg(tr_reshape_to(a, to) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  raid_array_free(a);
  gap = tr_expected_gap(&sb0, to);
  tfile_read_sb(set, 1, &sb);
  ck_assert_uint_eq(sb.data_offset * 512, sb0.data_offset * 512 - gap);
  sb.feature_map |= RAID_SB_FEATURE_RESHAPE_ACTIVE | RAID_SB_FEATURE_NEW_OFFSET;
  sb.new_layout = sb.layout;
  sb.new_chunk = sb.chunksize;
  sb.layout = sb0.layout;
  sb.chunksize = sb0.chunksize;
  sb.new_offset = -(int32_t)(gap / 512);
  sb.data_offset += gap / 512;
  sb.data_size -= gap / 512;
  sb.reshape_position = old_size / 512;
  sb.delta_disks = 0;
  sb.events--;
  tfile_write_sb(set, 1, &sb);
  tfile_open(set, NULL, 4, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 4, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_uint_eq(raid_array_degraded(a), 0);
  ck_assert_int_eq(raid_array_reshape_status(a, &(struct raid_reshape_status){ 0 }), 0);
  tr_check_done(set, a, shadow, old_size, &sb0, to);
  test_free(shadow);
}
END_TEST

/* A RAID 10 restriped to an odd number of members where the members have
 * no more room before the data than a chunk (all md's
 * raid10_start_reshape() asks; whole units of rows need two chunks there):
 * raidd takes the one chunk, as md does, and its steps end inside rows
 * where they must (sync/reshape.c's next_end()).  Stopped a third of the
 * way, then made to say what md's ten-second checkpoint would (raid10.c's
 * reshape_request() records its position on any 64 KiB): the checkpoint
 * moved down to 64 KiB that no unit ends on, below which the bytes lie in
 * both shapes (nothing was written meanwhile), as md leaves them.
 * Assembled, it goes on from there under a writer and ends as any
 * restripe: every byte, md's layout at the data offset moved by a chunk. */
START_TEST(test_md_gap)
{
  const struct shape *to = &tr_shapes[_i ? 7 : 6];
  uint64_t cmax = MAX(CHUNK, to->chunk), unit, old_size, pos;
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_reshape_status rs;
  struct raid_superblock sb0, sb;
  struct tuser u = { 0 };
  struct raid_array *a;
  uint8_t *shadow;
  unsigned i, num, den;
  char set[16];

  snprintf(set, sizeof set, "rg%d-", _i);
  tr_row_chunks(to, to->n, &num, &den);
  unit = (uint64_t)num * tr_unit_rows(to) / den * cmax;
  /* The metadata 1.2 superblock ends at 8 KiB. */
  a = tr_make_at(set, to, RAID_METADATA_1_2, (8 << 10) + cmax, &shadow, &old_size, &sb0);
  ck_assert_uint_eq(tr_expected_gap(&sb0, to), cmax);
  raid_array_set_sync_limits(a, 4 << 20, 4 << 20);
  ck_assert_msg(tr_reshape_to(a, to) == 0, "%s", raid_get_error());
  treshape_stop_at_third(a);
  raid_array_free(a);
  tfile_read_sb(set, 0, &sb);
  ck_assert_int_eq(sb.new_offset, -(int32_t)(cmax / 512));
  pos = sb.reshape_position * 512;
  ck_assert_uint_gt(pos, 64 << 10);
  ck_assert_uint_lt(pos, old_size);
  if (pos % unit == 0)
    pos -= 64 << 10;
  ck_assert_uint_ne(pos % unit, 0);
  for (i = 0; i < tr_files(to); i++) {
    tfile_read_sb(set, i, &sb);
    sb.reshape_position = pos / 512;
    tfile_write_sb(set, i, &sb);
  }
  tfile_open(set, NULL, tr_files(to), m);
  ck_assert_msg(raid_array_assemble(NULL, m, tr_files(to), 0, &u.a) == 0, "%s",
                raid_get_error());
  ck_assert_int_eq(raid_array_reshape_status(u.a, &rs), 1);
  ck_assert_uint_eq(rs.position, pos);
  tcheck_shadow(u.a, shadow, old_size);
  u.shadow = shadow;
  u.size = old_size;
  tuser_start(&u);
  raid_array_set_sync_limits(u.a, 0, 0);
  ck_assert_msg(raid_array_sync_start(u.a, RAID_SYNC_RESHAPE) == 0, "%s", raid_get_error());
  ck_assert_msg(raid_array_sync_wait(u.a) == 0, "%s", raid_get_error());
  tuser_stop(&u);
  tr_check_done(set, u.a, shadow, old_size, &sb0, to);
  test_free(shadow);
}
END_TEST

static uint64_t
now_ns(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The reshape's events, as the hook sees them (copied under a lock). */
struct seen {
  pthread_mutex_t lock;
  unsigned started, finished, pct[5];
  int last_result;
};

static void
on_event(void *opaque, const struct raid_event *ev)
{
  struct seen *s = opaque;

  if (ev->action != RAID_SYNC_RESHAPE)
    return;
  pthread_mutex_lock(&s->lock);
  if (ev->type == RAID_EVENT_REBUILD_STARTED)
    s->started++;
  else if (ev->type == RAID_EVENT_REBUILD_FINISHED) {
    s->finished++;
    s->last_result = ev->result;
  }
  else if (ev->type == RAID_EVENT_REBUILD_PROGRESS && ev->percent / 20 < 5)
    s->pct[ev->percent / 20]++;
  pthread_mutex_unlock(&s->lock);
}

/* Throttled by the sync limits, frozen (md's "frozen": nothing moves, the
 * position in the superblocks), let go on, md's events all the way. */
START_TEST(test_freeze)
{
  const char *set = "rf-";
  struct seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };
  struct raid_reshape_status rs;
  struct raid_superblock sb0, sb;
  struct raid_sync_status st;
  struct raid_array *a;
  uint8_t *shadow;
  uint64_t old_size, t0, t1, pos;
  unsigned i;

  a = tr_make(set, &tr_shapes[0], RAID_METADATA_1_2, &shadow, &old_size, &sb0);
  ck_assert_int_eq(raid_array_reshape_status(a, &rs), 0);
  ck_assert_int_eq(raid_array_reshape_freeze(a, 1), -EINVAL);
  raid_array_set_event_handler(a, on_event, &seen);
  /* 1 MiB/s of each member: 20 s for the whole; it is frozen long before. */
  raid_array_set_sync_limits(a, 1 << 20, 1 << 20);
  t0 = now_ns();
  ck_assert_msg(raid_array_grow_disks(a, 4) == 0, "%s", raid_get_error());
  for (i = 0;; i++) {
    ck_assert_int_eq(raid_array_reshape_status(a, &rs), 1);
    if (rs.position > 0)
      break;
    ck_assert_uint_lt(i, 10000);
    usleep(1000);
  }
  ck_assert_uint_eq(rs.raid_disks_from, 3);
  ck_assert_uint_eq(rs.raid_disks_to, 4);
  ck_assert_uint_eq(rs.size_from, old_size);
  ck_assert_uint_eq(rs.size_to, old_size / 2 * 3);
  ck_assert_int_eq(rs.frozen, 0);
  ck_assert_int_eq(raid_array_reshape_freeze(a, 1), 0);
  t1 = now_ns();
  raid_array_sync_status(a, &st);
  ck_assert_int_eq(st.action, RAID_SYNC_IDLE);
  ck_assert_int_eq(raid_array_reshape_status(a, &rs), 1);
  ck_assert_int_eq(rs.frozen, 1);
  /* No further than the limit lets it (3 members of data in the new
   * shape), with the second the throttle may catch up and a step. */
  ck_assert_uint_le(rs.position, 3 * ((1 << 20) * (t1 - t0 + 1000000000ull) / 1000000000ull +
                                      (256 << 10)));
  pos = rs.position;
  tfile_read_sb(set, 0, &sb);
  ck_assert_uint_eq(sb.reshape_position * 512, pos);
  /* Frozen: nothing moves; a scrub is refused, a kick does not wake it. */
  ck_assert_int_eq(raid_array_sync_start(a, RAID_SYNC_CHECK), -EBUSY);
  ck_assert_msg(strstr(raid_get_error(), "a reshape is under way (frozen)"), "%s",
                raid_get_error());
  raid_array_set_auto_sync(a, 1);
  usleep(300000);
  raid_array_reshape_status(a, &rs);
  ck_assert_uint_eq(rs.position, pos);
  ck_assert_int_eq(rs.frozen, 1);
  raid_array_sync_status(a, &st);
  ck_assert_int_eq(st.action, RAID_SYNC_IDLE);
  tcheck_shadow(a, shadow, old_size);
  /* Let go, unthrottled. */
  raid_array_set_sync_limits(a, 0, 0);
  ck_assert_int_eq(raid_array_reshape_freeze(a, 0), 0);
  for (i = 0; raid_array_reshape_status(a, &rs); i++) {
    ck_assert_uint_lt(i, 60000);
    usleep(1000);
  }
  raid_array_sync_wait(a);
  ck_assert_int_eq(raid_array_reshape_freeze(a, 1), -EINVAL);
  raid_array_set_event_handler(a, NULL, NULL);
  ck_assert_uint_eq(seen.started, 2);
  ck_assert_uint_eq(seen.finished, 2);
  ck_assert_int_eq(seen.last_result, 0);
  for (i = 1; i < 5; i++)
    ck_assert_uint_eq(seen.pct[i], 1);
  tr_check_done(set, a, shadow, old_size, &sb0, &tr_shapes[0]);
  test_free(shadow);
}
END_TEST

static void
refused_shape(const char *set, struct raid_array *a, unsigned n, int layout, uint32_t chunk,
              int err, const char *what)
{
  uint8_t **img;

  tsettle(a);
  img = tfile_images(set, 4, FILE_SIZE);
  if (layout == RAID_LAYOUT_DEFAULT && chunk == 0)
    ck_assert_int_eq(raid_array_grow_disks(a, n), err);
  else
    ck_assert_int_eq(raid_array_grow_shape(a, n, layout, chunk), err);
  ck_assert_msg(strlen(raid_get_error()) > 20, "%s: no message", what);
  tfile_same(set, 4, img, FILE_SIZE, what);
  tfile_images_free(img, 4);
}

static void
refused(const char *set, struct raid_array *a, unsigned n, int err, const char *what)
{
  refused_shape(set, a, n, RAID_LAYOUT_DEFAULT, 0, err, what);
}

/* SET: CFG's array at LEVEL over the first N of four files. */
static struct raid_array *
level_array(struct raid_config *cfg, const char *set, int level, unsigned n)
{
  struct raid_member *m[4];
  struct raid_array *a;

  cfg->name = set;
  cfg->level = level;
  cfg->raid_disks = n;
  tfile_create(set, 4, FILE_SIZE);
  tfile_open(set, NULL, n, m);
  ck_assert_msg(raid_array_create(cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  return a;
}

START_TEST(test_refused)
{
  struct raid_config cfg = { .level = RAID_LEVEL_5, .chunk_size = CHUNK, .raid_disks = 3,
                             .layout = RAID_LAYOUT_DEFAULT };
  struct raid_member *m[4];
  struct raid_array *a;
  uint32_t chunk;
  int role;

  /* A bitmap in the room (the superblock ends at 8 KiB, the bitmap at 12
   * KiB, the data at 72: 60 KiB left where a chunk is needed); metadata
   * 1.0; no spare; fewer members. */
  cfg.name = "rb-";
  cfg.bitmap = RAID_BITMAP_INTERNAL;
  cfg.data_offset = 72 << 10;
  cfg.member_size = FILE_SIZE - MIB;
  tfile_create(cfg.name, 4, FILE_SIZE);
  tfile_open(cfg.name, NULL, 4, m);
  ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  ck_assert(raid_array_add_member(a, m[3], &role) == 0);
  refused(cfg.name, a, 4, -ENOSPC, "has 60 KiB");
  ck_assert_msg(strstr(raid_get_error(), "needs 64 KiB") &&
                strstr(raid_get_error(), "has 60 KiB"), "%s", raid_get_error());
  raid_array_free(a);
  cfg.data_offset = 0;
  cfg.member_size = 0;

  cfg.name = "r10-";
  cfg.bitmap = RAID_BITMAP_NONE;
  cfg.metadata = RAID_METADATA_1_0;
  tfile_create(cfg.name, 4, FILE_SIZE);
  tfile_open(cfg.name, NULL, 4, m);
  ck_assert(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0);
  ck_assert(raid_array_add_member(a, m[3], &role) == 0);
  refused(cfg.name, a, 4, -ENOTSUP, "metadata 1.0");
  raid_array_free(a);

  cfg.name = "rn-";
  cfg.metadata = RAID_METADATA_1_2;
  tfile_create(cfg.name, 4, FILE_SIZE);
  tfile_open(cfg.name, NULL, 3, m);
  ck_assert(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0);
  refused(cfg.name, a, 4, -EINVAL, "no spare");
  refused(cfg.name, a, 2, -EINVAL, "--array-size");   /* fewer: shrink it first */
  /* Shapes md refuses: an unknown layout, a chunk not a power of two, or
   * not dividing the member size (mdadm: "does not evenly divide"). */
  refused_shape(cfg.name, a, 0, 6, 0, -EINVAL, "layout 6");
  refused_shape(cfg.name, a, 0, RAID_LAYOUT_DEFAULT, 3 * CHUNK, -EINVAL, "chunk 192K");
  for (chunk = CHUNK; raid_array_member_size(a) % chunk == 0; chunk *= 2)
    ;
  refused_shape(cfg.name, a, 0, RAID_LAYOUT_DEFAULT, chunk, -EINVAL, "chunk not dividing");
  /* Degraded. */
  ck_assert(raid_array_fail_member(a, 1) == 0);
  refused(cfg.name, a, 4, -EAGAIN, "degraded");
  raid_array_free(a);

  a = level_array(&cfg, "rt-", RAID_LEVEL_10, 4);
  refused(cfg.name, a, 6, -EINVAL, "RAID 10 without spares");
  refused(cfg.name, a, 1, -EINVAL, "RAID 10 of 1");
  refused_shape(cfg.name, a, 0, RAID_LAYOUT_RAID10_NEAR(3), 0, -EINVAL, "RAID 10 near-3");
  refused_shape(cfg.name, a, 0, RAID_LAYOUT_LEFT_SYMMETRIC, 0, -EINVAL, "RAID 10 layout 2");
  raid_array_free(a);

  /* Less than a chunk before the data (md's RAID 10 asks one too): the
   * message names the member and what it needs. */
  cfg.data_offset = (8 + 32) << 10;
  a = level_array(&cfg, "ro-", RAID_LEVEL_10, 3);
  tfile_open(cfg.name, (unsigned[]){ 3 }, 1, m);
  ck_assert(raid_array_add_member(a, m[0], &role) == 0);
  refused(cfg.name, a, 4, -ENOSPC, "RAID 10 with 32 KiB of room");
  ck_assert_msg(strstr(raid_get_error(), "needs 64 KiB free before the data") &&
                strstr(raid_get_error(), "member ") && strstr(raid_get_error(), "ro-0") &&
                strstr(raid_get_error(), "has 32 KiB"), "%s", raid_get_error());
  raid_array_free(a);
  cfg.data_offset = 0;

  a = level_array(&cfg, "rz-", RAID_LEVEL_0, 3);
  refused(cfg.name, a, 4, -EINVAL, "RAID 0 without its new members");
  raid_array_free(a);
}
END_TEST

/* SET, a RAID 0 restriped to TO and left in the middle (SHADOW's OLD_SIZE
 * bytes), assembled: the parity-last RAID 5 of one role more, degraded by
 * its parity role; the reshape goes on and ends as that RAID 5 (the RAID
 * 0 it was is not recorded, as with mdadm); the takeover to RAID 0 then
 * ends it as tr_check_done() wants. */
static void
stripe_resumed(const char *set, const struct shape *to, const uint8_t *shadow,
               uint64_t old_size, const struct raid_superblock *sb0)
{
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_array *a;

  tfile_open(set, NULL, to->n, m);
  ck_assert_msg(raid_array_assemble(NULL, m, to->n, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_level(a), RAID_LEVEL_5);
  ck_assert_uint_eq(raid_array_raid_disks(a), to->n + 1);
  ck_assert_uint_eq(raid_array_degraded(a), 1);
  ck_assert_uint_eq(raid_array_size(a), old_size);
  tcheck_shadow(a, shadow, old_size);
  raid_array_set_sync_limits(a, 0, 0);
  ck_assert_msg(raid_array_sync_start(a, RAID_SYNC_RESHAPE) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  ck_assert_int_eq(raid_array_level(a), RAID_LEVEL_5);
  ck_assert_uint_eq(raid_array_raid_disks(a), to->n + 1);
  ck_assert_uint_eq(raid_array_degraded(a), 1);
  ck_assert_msg(raid_array_grow_level(a, RAID_LEVEL_0) == 0, "%s", raid_get_error());
  tr_check_done(set, a, shadow, old_size, sb0, to);
}

/* A RAID 0 restriped, stopped a third of the way (raidd killed, or
 * stopped): the superblocks say a RAID 5 in the parity-last layout under
 * md's reshape (what md resumes), the member in the parity role recovering
 * no further than the checkpoint; that member made to have missed the
 * last checkpoint (one event behind) is taken, filled up to the freshest
 * one; assembled again, stripe_resumed(). */
START_TEST(test_stripe_resume)
{
  const struct shape *to = &tr_shapes[tr_nshapes - 1];
  const char *set = "rz5-";
  struct raid_superblock sb0, sb;
  struct raid_array *a;
  uint8_t *shadow;
  uint64_t old_size, front;
  unsigned i;

  a = tr_make(set, to, RAID_METADATA_1_2, &shadow, &old_size, &sb0);
  ck_assert_msg(tr_reshape_to(a, to) == 0, "%s", raid_get_error());
  treshape_stop_at_third(a);
  ck_assert_int_eq(raid_array_level(a), RAID_LEVEL_5);
  ck_assert_uint_eq(raid_array_degraded(a), 1);
  tcheck_shadow(a, shadow, old_size);
  raid_array_free(a);

  for (i = 0; i < to->n; i++) {
    tfile_read_sb(set, i, &sb);
    ck_assert_int_eq(sb.level, RAID_LEVEL_5);
    ck_assert_int_eq(sb.new_level, RAID_LEVEL_5);
    ck_assert_uint_eq(sb.layout, RAID_LAYOUT_PARITY_LAST);
    ck_assert_uint_eq(sb.new_layout, RAID_LAYOUT_PARITY_LAST);
    ck_assert_uint_eq(sb.raid_disks, to->n + 1);
    ck_assert_int_eq(sb.delta_disks, (int)(to->n - to->from));
    ck_assert_uint_eq(sb.dev_roles[sb.dev_number], i);
    ck_assert(sb.feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE);
    ck_assert_uint_gt(sb.reshape_position, 0);
    /* The old parity role's member: recovering, up to the new shape's
     * rows below the checkpoint at most (md's recovery_offset). */
    front = (sb.reshape_position * 512 / CHUNK + to->n - 1) / to->n * CHUNK;
    if (i == to->from) {
      ck_assert(sb.feature_map & RAID_SB_FEATURE_RECOVERY_OFFSET);
      ck_assert_uint_le(sb.recovery_offset * 512, front);
      ck_assert_uint_gt(sb.recovery_offset, 0);
    }
    else
      ck_assert(!(sb.feature_map & RAID_SB_FEATURE_RECOVERY_OFFSET));
  }
  /* And that member missed the last checkpoint's superblock write (a
   * power cut between two members' writes): one event behind, a
   * checkpoint earlier.  Every member's data was flushed before any
   * superblock said the checkpoint, so it is taken, filled up to the
   * freshest checkpoint (without that, two roles would be missing). */
  tfile_read_sb(set, to->from, &sb);
  sb.events--;
  sb.reshape_position -= (uint64_t)to->n * CHUNK / 512;
  sb.recovery_offset = (sb.reshape_position * 512 / CHUNK + to->n - 1) / to->n * CHUNK / 512;
  tfile_write_sb(set, to->from, &sb);
  stripe_resumed(set, to, shadow, old_size, &sb0);
  test_free(shadow);
}
END_TEST

/* SB (a RAID 0 of 2's, or of 3 after its restripe: the chunk kept) made
 * what raid_array_grow_disks_add() to 3 writes while the reshape runs: a
 * parity-last RAID 5 of 4 under md's reshape, the new layout GAP bytes
 * earlier, moved up to array byte POS. */
static void
restriping_stripe(struct raid_superblock *sb, uint64_t gap, uint64_t pos)
{
  sb->level = RAID_LEVEL_5;
  sb->layout = RAID_LAYOUT_PARITY_LAST;
  sb->raid_disks = 4;
  sb->feature_map |= RAID_SB_FEATURE_RESHAPE_ACTIVE | RAID_SB_FEATURE_NEW_OFFSET;
  sb->delta_disks = 1;
  sb->new_level = RAID_LEVEL_5;
  sb->new_layout = RAID_LAYOUT_PARITY_LAST;
  sb->new_chunk = sb->chunksize;
  sb->new_offset = -(int32_t)(gap / 512);
  sb->reshape_position = pos / 512;
}

/* A crash while the superblocks that start a RAID 0's restripe were
 * written, one after the other: member 1 still says the RAID 0 of 2, one
 * event behind members 0 and 2, which say the RAID 5 of 4 under its
 * reshape (what raid_array_grow_disks_add() writes first, made here by
 * hand).  Assembly takes member 1 as the freshest says (md's event margin
 * of one), and the reshape goes on from its start. */
START_TEST(test_stripe_missed_start)
{
  const struct shape *to = &tr_shapes[tr_nshapes - 2];    /* RAID 0 2 -> 3 */
  const char *set = "rzm-";
  struct raid_superblock sb0, base, sb;
  struct raid_array *a;
  uint8_t *shadow;
  uint64_t old_size, gap;
  unsigned i;

  a = tr_make(set, to, RAID_METADATA_1_2, &shadow, &old_size, &sb0);
  raid_array_free(a);
  gap = tr_expected_gap(&sb0, to);
  tfile_read_sb(set, 0, &base);
  for (i = 0; i < 3; i += 2) {
    sb = base;                  /* member 0's, as the array was stopped */
    restriping_stripe(&sb, gap, 0);
    sb.dev_roles[2] = 2;
    sb.events++;
    if (i == 2) {
      /* The new member, filling the old parity role from its start. */
      sb.dev_number = 2;
      sb.device_uuid[15] ^= 0x5a;
      sb.feature_map |= RAID_SB_FEATURE_RECOVERY_OFFSET;
      sb.recovery_offset = 0;
    }
    tfile_write_sb(set, i, &sb);
  }
  stripe_resumed(set, to, shadow, old_size, &sb0);
  test_free(shadow);
}
END_TEST

/* A crash while the superblocks that end a RAID 0's restripe (a RAID 0
 * of 3 again, the data offsets moved) were written: member 1 still says
 * the RAID 5 of 4 with every row moved, one event behind.  Assembly takes
 * it at its new data offset as the RAID 0 the others say. */
START_TEST(test_stripe_missed_finish)
{
  const struct shape *to = &tr_shapes[tr_nshapes - 2];
  const char *set = "rzf-";
  struct raid_superblock sb0, sb;
  struct raid_member *m[3];
  struct raid_array *a;
  uint8_t *shadow;
  uint64_t old_size, gap, size;

  a = tr_make(set, to, RAID_METADATA_1_2, &shadow, &old_size, &sb0);
  ck_assert_msg(tr_reshape_to(a, to) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  ck_assert_int_eq(raid_array_level(a), RAID_LEVEL_0);
  size = raid_array_size(a);
  raid_array_free(a);
  gap = tr_expected_gap(&sb0, to);
  tfile_read_sb(set, 1, &sb);
  restriping_stripe(&sb, gap, size);
  sb.data_offset += gap / 512;
  sb.data_size = sb0.data_size;
  sb.events--;
  tfile_write_sb(set, 1, &sb);
  tfile_open(set, NULL, 3, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 3, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_reshape_status(a, &(struct raid_reshape_status){ 0 }), 0);
  tr_check_done(set, a, shadow, old_size, &sb0, to);
  test_free(shadow);
}
END_TEST

/* A RAID 0's restripe refused, every member and the new ones as they
 * were, the array a RAID 0 as before: metadata 1.0 (no room before the
 * data), a new member too small (named), the wrong number of them. */
START_TEST(test_stripe_refused)
{
  struct raid_config cfg = { .level = RAID_LEVEL_0, .chunk_size = CHUNK, .raid_disks = 3,
                             .layout = RAID_LAYOUT_DEFAULT, .bitmap = RAID_BITMAP_NONE };
  struct raid_member *m[4];
  struct raid_array *a;
  uint8_t **img, *small;
  char path[256];
  unsigned i;
  int fd;

  cfg.name = "rz0-";
  cfg.metadata = RAID_METADATA_1_0;
  tfile_create(cfg.name, 4, FILE_SIZE);
  tfile_open(cfg.name, NULL, 3, m);
  ck_assert(raid_array_create(&cfg, m, 0, &a) == 0);
  tsettle(a);
  img = tfile_images(cfg.name, 4, FILE_SIZE);
  tfile_open(cfg.name, (const unsigned[]){ 3 }, 1, m);
  ck_assert_int_eq(raid_array_grow_disks_add(a, 4, m, 1), -ENOTSUP);
  ck_assert_msg(strstr(raid_get_error(), "metadata 1.0"), "got \"%s\"", raid_get_error());
  ck_assert_int_eq(raid_array_level(a), RAID_LEVEL_0);
  ck_assert_uint_eq(raid_array_raid_disks(a), 3);
  ck_assert_uint_eq(raid_array_degraded(a), 0);
  tfile_same(cfg.name, 4, img, FILE_SIZE, "metadata 1.0");
  raid_array_free(a);
  tfile_images_free(img, 4);

  cfg.name = "rzs-";
  cfg.metadata = RAID_METADATA_1_2;
  tfile_create(cfg.name, 5, FILE_SIZE);
  tfile_path(path, sizeof path, cfg.name, 4);
  ck_assert_int_eq(truncate(path, FILE_SIZE / 2), 0);
  tfile_open(cfg.name, NULL, 3, m);
  ck_assert(raid_array_create(&cfg, m, 0, &a) == 0);
  tsettle(a);
  img = tfile_images(cfg.name, 4, FILE_SIZE);
  tfile_open(cfg.name, (const unsigned[]){ 3, 4 }, 2, m);
  ck_assert_int_eq(raid_array_grow_disks_add(a, 5, m, 2), -ENOSPC);
  ck_assert_msg(strstr(raid_get_error(), path), "got \"%s\"", raid_get_error());
  tfile_open(cfg.name, (const unsigned[]){ 3 }, 1, m);
  ck_assert_int_eq(raid_array_grow_disks_add(a, 5, m, 1), -EINVAL);
  ck_assert_int_eq(raid_array_level(a), RAID_LEVEL_0);
  ck_assert_uint_eq(raid_array_raid_disks(a), 3);
  tfile_same(cfg.name, 4, img, FILE_SIZE, "a new member too small");
  raid_array_free(a);
  tfile_open(cfg.name, NULL, 3, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 3, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_level(a), RAID_LEVEL_0);
  ck_assert_uint_eq(raid_array_raid_disks(a), 3);
  raid_array_free(a);
  small = test_alloc(FILE_SIZE / 2);
  ck_assert_int_ge(fd = open(path, O_RDONLY), 0);
  ck_assert_int_eq(pread(fd, small, FILE_SIZE / 2, 0), (ssize_t)(FILE_SIZE / 2));
  close(fd);
  for (i = 0; i < FILE_SIZE / 2 && small[i] == 0; i++)
    ;
  ck_assert_msg(i == FILE_SIZE / 2, "the small member was written at byte %u", i);
  test_free(small);
  tfile_images_free(img, 4);
}
END_TEST

static Suite *
reshape_suite(void)
{
  Suite *s = suite_create("reshape");
  TCase *tc = test_tcase("reshape");

  tcase_add_loop_test(tc, test_restripe, 0, 2);
  tcase_add_loop_test(tc, test_shape, 1, tr_nshapes);
  tcase_add_loop_test(tc, test_resume, 0, ARRAY_SIZE(resumed));
  tcase_add_test(tc, test_missed_start);
  tcase_add_test(tc, test_missed_finish);
  tcase_add_loop_test(tc, test_md_gap, 0, 2);
  tcase_add_test(tc, test_freeze);
  tcase_add_test(tc, test_refused);
  tcase_add_test(tc, test_stripe_resume);
  tcase_add_test(tc, test_stripe_missed_start);
  tcase_add_test(tc, test_stripe_missed_finish);
  tcase_add_test(tc, test_stripe_refused);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  test_init("test-reshape");
  raid_set_log_handler(NULL, NULL, -1);
  return test_run_suite(reshape_suite());
}
