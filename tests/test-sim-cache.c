/* Description: the simulated drive's volatile write cache
 * ("sim:FILE?cache=volatile", lib/member-sim-cache.c) and its power cut
 * (member_sim_power_cut()).
 *
 * What a disk with a volatile cache promises, and what these tests hold
 * the model to:
 *   - data covered by a completed FLUSH survives a power cut;
 *   - a FUA write survives, also over an unflushed write to the same
 *     sectors;
 *   - unflushed data is lost (SIM_CUT_LOSE), kept (SIM_CUT_KEEP), or some
 *     of it kept as the seed decides (SIM_CUT_SUBSET): whole writes lost,
 *     whole writes kept and writes torn at sector granularity all happen,
 *     every sector holds either its old or its new contents, and one seed
 *     always gives the same image;
 *   - after the cut every I/O fails with EIO and changes nothing, and
 *     opening the spec again ("power on") reads exactly what was kept;
 *   - one cut over several drives is one instant;
 *   - superblock writes (member_pio()) flush before they write, as md's
 *     REQ_PREFLUSH does: a superblock never reaches the media ahead of
 *     the data it vouches for (regression: it used to be write, then
 *     flush).
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "testlib.h"

#define DRIVE (1 * MiB)
#define SECT 512u

struct tio {
  struct member_io io;
  int res;
  bool done;
};

static void
tio_done(struct member_io *io, int res)
{
  struct tio *t = (struct tio *)((char *)io - offsetof(struct tio, io));

  t->res = res;
  t->done = true;
  queue_user_done(io->q);
}

/* One member I/O, synchronously: 0 or -errno. */
static int
mio(struct raid_queue *q, struct raid_member *m, enum mop op, void *buf,
    uint64_t off, size_t len, unsigned flags)
{
  struct tio t;

  memset(&t, 0, sizeof t);
  t.io.m = m;
  t.io.op = op;
  t.io.flags = flags;
  t.io.buf = buf;
  t.io.offset = off;
  t.io.len = len;
  t.io.done = tio_done;
  queue_user_start(q);
  member_submit(q, &t.io);
  while (!t.done)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
  return t.res;
}

static void
must(struct raid_queue *q, struct raid_member *m, enum mop op, void *buf,
     uint64_t off, size_t len, unsigned flags)
{
  int r = mio(q, m, op, buf, off, len, flags);

  ck_assert_msg(r == 0, "%s at %" PRIu64 ": %s", mop_name(op), off, raid_get_error());
}

/* A new zero-filled backing file NAME, and its spec with cache=volatile. */
static void
new_drive(const char *name, char *spec, size_t len)
{
  char path[512];
  int fd;

  snprintf(path, sizeof path, "%s/%s", test_dir(), name);
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, DRIVE), 0);
  close(fd);
  snprintf(spec, len, "sim:%s?cache=volatile", path);
}

static struct raid_member *
open_drive(const char *spec)
{
  struct raid_member *m;

  ck_assert_msg(raid_member_open(spec, 0, &m) == 0, "%s", raid_get_error());
  return m;
}

/* Sector contents: every byte derived from (sector, version). */
static void
pattern(uint8_t *p, uint64_t sector, unsigned n, unsigned version)
{
  unsigned i, k;

  for (i = 0; i < n; i++)
    for (k = 0; k < SECT; k++)
      p[i * SECT + k] = (uint8_t)((sector + i) * 31 + version * 7 + k / 4 + 1);
}

static bool
sector_is(const uint8_t *p, uint64_t sector, unsigned version)
{
  uint8_t want[SECT];

  if (version == 0) {
    memset(want, 0, SECT);
    return memcmp(p, want, SECT) == 0;
  }
  pattern(want, sector, 1, version);
  return memcmp(p, want, SECT) == 0;
}

/* Write version V over sectors [S, S + N). */
static void
write_v(struct raid_queue *q, struct raid_member *m, uint64_t s, unsigned n,
        unsigned v, unsigned flags)
{
  uint8_t *buf = test_alloc(n * SECT);

  pattern(buf, s, n, v);
  must(q, m, MOP_WRITE, buf, s * SECT, n * SECT, flags);
  test_free(buf);
}

/* After power on: sectors [S, S + N) hold version V. */
static void
expect_v(struct raid_queue *q, struct raid_member *m, uint64_t s, unsigned n,
         unsigned v, const char *what)
{
  uint8_t *buf = test_alloc(n * SECT);
  unsigned i;

  must(q, m, MOP_READ, buf, s * SECT, n * SECT, 0);
  for (i = 0; i < n; i++)
    ck_assert_msg(sector_is(buf + i * SECT, s + i, v),
                  "%s: sector %" PRIu64 " does not hold version %u", what, s + i, v);
  test_free(buf);
}

static struct raid_member *
cut_and_reopen(struct raid_member *m, const char *spec, enum sim_cut how,
               uint64_t seed, struct sim_cut_stats *st)
{
  ck_assert_msg(member_sim_power_cut(&m, 1, how, seed, st) == 0, "%s", raid_get_error());
  raid_member_close(m);
  return open_drive(spec);
}

START_TEST(test_flush_and_fua_survive)
{
  struct raid_queue *q;
  struct raid_member *m;
  struct sim_cut_stats st;
  char spec[600];

  ck_assert_int_eq(raid_queue_new(8, &q), 0);
  new_drive("a.img", spec, sizeof spec);
  m = open_drive(spec);
  ck_assert_int_eq(member_sim_powered(m), 1);
  write_v(q, m, 0, 16, 1, 0);               /* flushed below */
  write_v(q, m, 100, 8, 1, 0);              /* overwritten with FUA */
  must(q, m, MOP_FLUSH, NULL, 0, 0, 0);
  write_v(q, m, 0, 8, 2, 0);                /* lost: unflushed */
  write_v(q, m, 100, 8, 2, 0);              /* unflushed, then ... */
  write_v(q, m, 102, 4, 3, MIO_FUA);        /* ... partly written through */
  write_v(q, m, 200, 8, 4, MIO_FUA);        /* FUA on clean sectors */
  write_v(q, m, 300, 8, 5, 0);              /* lost: unflushed */
  m = cut_and_reopen(m, spec, SIM_CUT_LOSE, 1, &st);
  ck_assert_int_eq(member_sim_powered(m), 1);
  expect_v(q, m, 0, 8, 1, "flushed, then overwritten without flush");
  expect_v(q, m, 8, 8, 1, "flushed");
  expect_v(q, m, 100, 2, 1, "flushed, unflushed overwrite lost");
  expect_v(q, m, 102, 4, 3, "FUA over an unflushed write");
  expect_v(q, m, 106, 2, 1, "flushed, unflushed overwrite lost");
  expect_v(q, m, 200, 8, 4, "FUA");
  expect_v(q, m, 300, 8, 0, "never flushed");
  ck_assert_uint_eq(st.dirty, 8 + 4 + 8);
  ck_assert_uint_eq(st.lost, st.dirty);

  /* KEEP: everything written is there; a flush resets nothing that stays. */
  write_v(q, m, 300, 8, 6, 0);
  write_v(q, m, 0, 1, 7, 0);
  m = cut_and_reopen(m, spec, SIM_CUT_KEEP, 1, &st);
  ck_assert_uint_eq(st.dirty, 9);
  ck_assert_uint_eq(st.lost, 0);
  expect_v(q, m, 300, 8, 6, "kept");
  expect_v(q, m, 0, 1, 7, "kept");
  raid_member_close(m);
  raid_queue_free(q);
}
END_TEST

/* Write zeroes and discards are writes like any other. */
START_TEST(test_zero_is_volatile)
{
  struct raid_queue *q;
  struct raid_member *m;
  char spec[600];

  ck_assert_int_eq(raid_queue_new(8, &q), 0);
  new_drive("z.img", spec, sizeof spec);
  m = open_drive(spec);
  write_v(q, m, 0, 32, 1, 0);
  must(q, m, MOP_FLUSH, NULL, 0, 0, 0);
  must(q, m, MOP_ZERO, NULL, 0, 8 * SECT, 0);
  must(q, m, MOP_DISCARD, NULL, 8 * SECT, 8 * SECT, 0);
  must(q, m, MOP_ZERO, NULL, 16 * SECT, 8 * SECT, MIO_FUA);
  m = cut_and_reopen(m, spec, SIM_CUT_LOSE, 1, NULL);
  expect_v(q, m, 0, 16, 1, "unflushed zeroes lost");
  expect_v(q, m, 16, 8, 0, "FUA zeroes");
  expect_v(q, m, 24, 8, 1, "untouched");
  raid_member_close(m);
  raid_queue_free(q);
}
END_TEST

/* SIM_CUT_SUBSET: every sector is old or new; over seeds, whole writes
 * are lost and kept and some are torn; a seed decides alone. */
#define NW 24
START_TEST(test_subset_tears)
{
  struct raid_queue *q;
  struct raid_member *m;
  char spec[600];
  uint8_t *img[2];
  unsigned seed, w, lost = 0, kept = 0, torn = 0, nseeds = 40;

  ck_assert_int_eq(raid_queue_new(8, &q), 0);
  img[0] = test_alloc(DRIVE);
  img[1] = test_alloc(DRIVE);
  new_drive("s.img", spec, sizeof spec);
  for (seed = 0; seed < nseeds; seed++) {
    unsigned pass;

    for (pass = 0; pass < 2; pass++) {
      m = open_drive(spec);
      write_v(q, m, 0, 2048, 1, MIO_FUA);     /* the durable base, version 1 */
      for (w = 0; w < NW; w++)                /* NW writes of 64 sectors */
        write_v(q, m, w * 64, 64, 2, 0);
      m = cut_and_reopen(m, spec, SIM_CUT_SUBSET, 1000 + seed, NULL);
      must(q, m, MOP_READ, img[pass], 0, DRIVE, 0);
      raid_member_close(m);
    }
    /* The same writes cut with the same seed: the same image. */
    ck_assert_msg(memcmp(img[0], img[1], DRIVE) == 0, "seed %u: not reproducible", seed);
    for (w = 0; w < NW; w++) {
      unsigned i, nnew = 0;

      for (i = 0; i < 64; i++) {
        uint64_t s = w * 64 + i;
        bool is_new = sector_is(img[0] + s * SECT, s, 2);

        ck_assert_msg(is_new || sector_is(img[0] + s * SECT, s, 1),
                      "seed %u: sector %" PRIu64 " is neither old nor new", seed, s);
        nnew += is_new;
      }
      lost += nnew == 0;
      kept += nnew == 64;
      torn += nnew > 0 && nnew < 64;
    }
  }
  printf("subset cuts: %u writes lost, %u kept, %u torn\n", lost, kept, torn);
  ck_assert_uint_gt(lost, 0);
  ck_assert_uint_gt(kept, 0);
  ck_assert_uint_gt(torn, 0);
  test_free(img[0]);
  test_free(img[1]);
  raid_queue_free(q);
}
END_TEST

/* After the cut: I/O fails with EIO and changes nothing on the media. */
START_TEST(test_dead_after_cut)
{
  struct raid_queue *q;
  struct raid_member *m, *f, *set[2];
  char spec[600], spec2[600];
  uint8_t buf[4096];

  ck_assert_int_eq(raid_queue_new(8, &q), 0);
  new_drive("d.img", spec, sizeof spec);
  new_drive("e.img", spec2, sizeof spec2);
  m = open_drive(spec);
  ck_assert_int_eq(raid_member_new_fault(open_drive(spec2), &f), 0);
  write_v(q, m, 0, 8, 1, MIO_FUA);
  write_v(q, f, 0, 8, 1, 0);
  set[0] = m;
  set[1] = f;                               /* a fault injector is looked through */
  ck_assert_int_eq(member_sim_power_cut(set, 2, SIM_CUT_KEEP, 0, NULL), 0);
  ck_assert_int_eq(member_sim_powered(m), 0);
  ck_assert_int_eq(member_sim_powered(f), 0);
  pattern(buf, 0, 8, 9);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, buf, 0, sizeof buf, MIO_FUA), -EIO);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "power cut"));
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 0, sizeof buf, 0), -EIO);
  ck_assert_int_eq(mio(q, m, MOP_FLUSH, NULL, 0, 0, 0), -EIO);
  ck_assert_int_eq(mio(q, f, MOP_ZERO, NULL, 0, sizeof buf, 0), -EIO);
  /* A second cut of a dead drive changes nothing either. */
  ck_assert_int_eq(member_sim_power_cut(&m, 1, SIM_CUT_LOSE, 0, NULL), 0);
  raid_member_close(m);
  raid_member_close(f);
  m = open_drive(spec);
  f = open_drive(spec2);
  expect_v(q, m, 0, 8, 1, "written before the cut");
  expect_v(q, f, 0, 8, 1, "kept at the cut");
  raid_member_close(m);
  raid_member_close(f);
  raid_queue_free(q);
}
END_TEST

START_TEST(test_refused)
{
  struct raid_member *m, *r;
  char spec[600], bad[700];

  new_drive("r.img", spec, sizeof spec);
  snprintf(bad, sizeof bad, "%s,discard", spec);
  ck_assert_int_eq(raid_member_open(bad, 0, &m), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "discard"));
  snprintf(bad, sizeof bad, "%.*s=bogus", (int)(strlen(spec) - strlen("=volatile")), spec);
  ck_assert_int_eq(raid_member_open(bad, 0, &m), -EINVAL);
  /* cache=safe is the default drive, which has no power to cut. */
  snprintf(bad, sizeof bad, "%.*s=safe", (int)(strlen(spec) - strlen("=volatile")), spec);
  m = open_drive(bad);
  ck_assert_int_eq(member_sim_power_cut(&m, 1, SIM_CUT_LOSE, 0, NULL), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "cache=volatile"));
  ck_assert_int_eq(member_sim_powered(m), -EINVAL);
  raid_member_close(m);
  ck_assert_int_eq(raid_member_new_ram("ram", DRIVE, &r), 0);
  ck_assert_int_eq(member_sim_power_cut(&r, 1, SIM_CUT_LOSE, 0, NULL), -EINVAL);
  raid_member_close(r);
  m = open_drive(spec);
  {
    struct raid_member *twice[2] = { m, m };

    ck_assert_int_eq(member_sim_power_cut(twice, 2, SIM_CUT_LOSE, 0, NULL), -EINVAL);
  }
  ck_assert_int_eq(member_sim_powered(m), 1);
  raid_member_close(m);
}
END_TEST

/* Regression: member_pio() wrote a superblock and then flushed, so a drive
 * with a volatile cache could persist the superblock (a recovery offset,
 * "clean") while losing the data written before it.  It now flushes
 * first, as md's superblock writes carry REQ_PREFLUSH: when that flush
 * fails nothing is written, and when it succeeds the data before it is
 * stable whatever the cut keeps. */
START_TEST(test_superblock_preflush)
{
  static const struct raid_fault no_flush = {
    .ops = RAID_FAULT_FLUSH, .error = EIO,
  };
  struct raid_queue *q;
  struct raid_member *m, *f;
  char spec[600];
  uint8_t *sb = test_alloc(4096);
  unsigned seed;

  ck_assert_int_eq(raid_queue_new(8, &q), 0);
  new_drive("p.img", spec, sizeof spec);
  m = open_drive(spec);
  ck_assert_int_eq(raid_member_new_fault(m, &f), 0);
  write_v(q, f, 64, 8, 1, 0);
  ck_assert_int_eq(raid_fault_add(f, &no_flush), 0);
  pattern(sb, 8, 8, 2);
  ck_assert_int_eq(member_pio(f, true, sb, 4096, 8 * SECT), -EIO);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "flush"));
  expect_v(q, f, 8, 8, 0, "superblock written after a failed flush");
  raid_member_close(f);

  for (seed = 0; seed < 16; seed++) {
    m = open_drive(spec);
    write_v(q, m, 64, 8, 3 + seed, 0);
    pattern(sb, 8, 8, 3 + seed);
    ck_assert_int_eq(member_pio(m, true, sb, 4096, 8 * SECT), 0);
    write_v(q, m, 128, 8, 3 + seed, 0);     /* after: may be lost */
    m = cut_and_reopen(m, spec, SIM_CUT_SUBSET, seed, NULL);
    expect_v(q, m, 64, 8, 3 + seed, "data before a superblock write");
    expect_v(q, m, 8, 8, 3 + seed, "superblock (FUA)");
    raid_member_close(m);
  }
  test_free(sb);
  raid_queue_free(q);
}
END_TEST

static Suite *
sim_cache_suite(void)
{
  Suite *s = suite_create("sim-cache");
  TCase *tc = test_tcase("volatile cache");

  tcase_add_test(tc, test_flush_and_fua_survive);
  tcase_add_test(tc, test_zero_is_volatile);
  tcase_add_test(tc, test_subset_tears);
  tcase_add_test(tc, test_dead_after_cut);
  tcase_add_test(tc, test_refused);
  tcase_add_test(tc, test_superblock_preflush);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  test_init("test-sim-cache");
  return test_run_suite(sim_cache_suite());
}
