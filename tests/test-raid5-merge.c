/* Description: RAID 5 write merging, seen through the I/O statistics
 * (raid_array_stats()) on arrays of RAM members: three writes of 2/3 of a
 * row queued at once become four full-stripe writes with no reads; the
 * same at queue depth 1 are all reconstruct-writes; a stream at queue
 * depth 2 on members taking 2 ms per write (so each row's second piece
 * arrives after its first was granted: plugging) is nearly all full
 * stripes, in sync and with a member failed, and so is a stream of two
 * clients taking turns; all read back intact with no parity mismatch; a
 * stream of quarter-chunk writes at queue depth 16 gathers each column's
 * three pieces into one full stripe after the first rows (in sync and
 * degraded), every plug ended by pokes, and 1 KiB writes, whose stripes
 * fill 128 writes later, never wait; a plugged piece goes when a write it
 * cannot take queues behind it.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "raid/levels.h"
#include "testlib.h"
#include "stats-array.h"

/* ---- RAID 5 write merging --------------------------------------------------------------- */

/* Writes of LEN bytes covering [OFF, OFF + COUNT * LEN) from DATA, as fio
 * does it with NSTREAMS jobs: each job writes its own consecutive part
 * from its start, with QD of its writes in flight, the next submitted when
 * one of its own completes.  The jobs share one queue and take turns.
 * stream_trickle(): one write is submitted at a time, and the queue runs
 * between two (each write's lock is granted before the next one asks),
 * as when the writes come one by one from a socket. */
#define MAX_STREAMS 4

static void
stream_writes_by(struct sarray *s, uint64_t off, size_t len, unsigned count,
                 unsigned qd, const uint8_t *data, unsigned nstreams, bool trickle)
{
  struct raid_queue *q;
  struct rdone st[MAX_STREAMS] = { { 0, 0 } };
  unsigned next[MAX_STREAMS] = { 0 }, per = count / nstreams, done = 0, j;
  int r;

  ck_assert(nstreams <= MAX_STREAMS && count % nstreams == 0);
  ck_assert_int_eq(raid_queue_new(0, &q), 0);
  while (done < count) {
    for (j = 0; j < nstreams; j++)
      while (next[j] < per && next[j] - st[j].done < qd) {
        uint64_t at = (uint64_t)j * per + next[j];

        r = raid_aio_write(q, s->a, data + at * len, len, off + at * len, 0,
                           rdone_cb, &st[j]);
        ck_assert_msg(r == 0, "raid_aio_write: %s", raid_get_error());
        next[j]++;
        if (trickle) {
          r = raid_queue_run(q, 0);
          ck_assert_msg(r >= 0, "raid_queue_run: %s", raid_get_error());
        }
      }
    r = raid_queue_run(q, 1);
    ck_assert_msg(r >= 0, "raid_queue_run: %s", raid_get_error());
    for (j = 0, done = 0; j < nstreams; j++) {
      done += st[j].done;
      ck_assert_msg(st[j].err == 0, "a streamed write failed: %s",
                    strerror(-st[j].err));
    }
  }
  raid_queue_free(q);
}

static void
stream_writes(struct sarray *s, uint64_t off, size_t len, unsigned count,
              unsigned qd, const uint8_t *data, unsigned nstreams)
{
  stream_writes_by(s, off, len, count, qd, data, nstreams, false);
}

/* snap(), and say how the writes went (WHAT, pass PASS). */
static void
snap_merges(struct sarray *s, const char *what, unsigned pass)
{
  snap(s);
  test_verbose("%s, pass %u: %" PRIu64 " full, %" PRIu64 " degraded, %" PRIu64 " RCW, %"
               PRIu64 " RMW; %" PRIu64 " plugged, %" PRIu64 " filled, %" PRIu64 " expired",
               what, pass, s->st.full_stripe_writes, s->st.degraded_writes,
               s->st.rcw_writes, s->st.rmw_writes, s->st.plugged_writes, s->st.plugs_filled,
               s->st.plugs_expired);
}

/* Every member of S's array injects fault F, or none (F NULL). */
static void
members_fault(struct sarray *s, const struct raid_fault *f)
{
  unsigned i;

  for (i = 0; i < raid_array_raid_disks(s->a); i++)
    if (f)
      ck_assert_int_eq(raid_fault_add(raid_array_member(s->a, i), f), 0);
    else
      raid_fault_clear(raid_array_member(s->a, i));
}

/* The array reads back as DATA over [0, len); a check finds no parity
 * mismatch unless DEGRADED. */
static void
verify(struct sarray *s, const uint8_t *data, size_t len, bool degraded)
{
  uint8_t *buf = test_alloc(len);
  struct raid_sync_status ss;
  size_t i;

  ck_assert_int_eq(raid_pread(s->a, buf, len, 0), 0);
  for (i = 0; i < len && buf[i] == data[i]; i++)
    ;
  ck_assert_msg(i == len, "array byte %zu of %zu differs after merged writes", i, len);
  test_free(buf);
  if (degraded)
    return;
  ck_assert_int_eq(raid_array_sync_start(s->a, RAID_SYNC_CHECK), 0);
  ck_assert_int_eq(raid_array_sync_wait(s->a), 0);
  raid_array_sync_status(s->a, &ss);
  ck_assert_uint_eq(ss.last_mismatches, 0);
}

/* Whether a plugged row piece gets its follower must not depend on how
 * fast this machine is: the plug window is made longer than the test
 * (raid5_set_plug_window()), so a plug ends only when the follower pokes
 * it.  Every stream here ends on a row boundary, where nothing plugs, so
 * nothing waits for the window either: the counts below are exact. */
#define PLUG_FOREVER (3600u * 1000000u)

/* A streaming case: a RAID 5 over 4 keeping its data, members delaying
 * every write by DELAY_US, member FAIL failed (-1: none), then COUNT
 * writes of LEN bytes streamed by NSTREAMS clients at queue depth QD
 * (TRICKLE: sent one at a time), the plug window longer than the test
 * (PLUG_FOREVER). */
struct stream_case {
  const char *what;
  unsigned delay_us;
  int fail;
  size_t len;
  unsigned count, qd, nstreams;
  bool trickle;
};

/* Run case C (pass PASS) on a new array S, writing DATA: S's statistics
 * count the streamed writes alone. */
static void
stream_case_run(struct sarray *s, const struct stream_case *c, const uint8_t *data,
                unsigned pass)
{
  struct raid_fault slow = { .ops = RAID_FAULT_WRITE, .delay_us = c->delay_us };

  sarray_new(s, RAID_LEVEL_5, 4, true);
  raid5_set_plug_window(s->a, PLUG_FOREVER);
  members_fault(s, &slow);
  if (c->fail >= 0)
    ck_assert_int_eq(raid_array_fail_member(s->a, (unsigned)c->fail), 0);
  raid_array_stats_reset(s->a);
  stream_writes_by(s, 0, c->len, c->count, c->qd, data, c->nstreams, c->trickle);
  snap_merges(s, c->what, pass);
  /* Nothing but the stream queues behind a plug, which waits forever:
   * every plug fills (and the statistics say so). */
  ck_assert_msg(s->st.plugs_filled == s->st.plugged_writes && s->st.plugs_expired == 0,
                "%s, pass %u: %" PRIu64 " plugs, %" PRIu64 " filled, %" PRIu64 " expired",
                c->what, pass, s->st.plugged_writes, s->st.plugs_filled, s->st.plugs_expired);
}

/* The end of case C: S reads back as DATA (with no parity mismatch when
 * in sync), and is freed. */
static void
stream_case_end(struct sarray *s, const struct stream_case *c, const uint8_t *data)
{
  members_fault(s, NULL);
  verify(s, data, c->count * c->len, c->fail >= 0);
  sarray_free(s);
}

START_TEST(test_raid5_merge)
{
  const size_t len = 2 * CHUNK;  /* 2/3 of a row of 3 chunks */
  const unsigned count = 48;                        /* 32 rows, 64 row pieces */
  const struct stream_case two = {
    .what = "two streams", .delay_us = 500, .fail = -1,
    .len = len, .count = count, .qd = 2, .nstreams = 2,
  };
  struct sarray s;
  uint8_t *data = test_alloc(count * len);
  struct rng g;
  unsigned pass;

  rng_seed(&g, test_seed_for(20));
  rng_fill(&g, data, count * len);

  /* Three writes queued at once: each row's second piece waits behind the
   * first and joins it when it is granted.  Four full stripes, no reads. */
  sarray_new(&s, RAID_LEVEL_5, 4, false);
  stream_writes(&s, 0, len, 3, 3, data, 1);
  snap(&s);
  ck_assert_uint_eq(s.st.full_stripe_writes, 4);
  ck_assert_uint_eq(s.st.rmw_writes + s.st.rcw_writes, 0);
  ck_assert_uint_eq(SUM(&s, read_ops), 0);
  ck_assert_uint_eq(SUM(&s, write_ops), 2 * 4);
  verify(&s, data, 3 * len, false);
  sarray_free(&s);

  /* At queue depth 1 there is nothing to merge with, and nothing waits:
   * every piece is a reconstruct-write. */
  sarray_new(&s, RAID_LEVEL_5, 4, false);
  raid5_set_plug_window(s.a, PLUG_FOREVER);
  stream_writes(&s, 0, len, 6, 1, data, 1);
  snap(&s);
  ck_assert_uint_eq(s.st.full_stripe_writes, 0);
  ck_assert_uint_eq(s.st.rcw_writes, 8);
  sarray_free(&s);

  /* A stream at queue depth 2 on members that delay every write: the
   * first piece of a row arrives long before the second, and waits for it
   * (plugged) until the client's next write pokes it.  Every row piece is
   * then part of a full stripe.  Pass 1 again with member 1 failed: the
   * rows whose parity was on member 1 are written without parity, every
   * other row as a full stripe that keeps parity for the missing chunks,
   * which the read back reconstructs. */
  for (pass = 0; pass < 2; pass++) {
    const struct stream_case c = {
      .what = "2/3-row stream", .delay_us = 500, .fail = pass ? 1 : -1,
      .len = len, .count = count, .qd = 2, .nstreams = 1,
    };
    uint64_t noparity = 0, row;

    stream_case_run(&s, &c, data, pass);
    for (row = 0; pass && row < 32; row++)
      if (geo_raid5_pd_idx(raid_array_layout(s.a), 4, row) == 1)
        noparity += 2;
    ck_assert_msg(s.st.rmw_writes + s.st.rcw_writes == 0 &&
                  s.st.full_stripe_writes == 64 - noparity &&
                  s.st.degraded_writes == noparity, "pass %u: %" PRIu64 " of 64 "
                  "row pieces were full-stripe writes (expected %" PRIu64 "), %"
                  PRIu64 " without parity (expected %" PRIu64 "), %" PRIu64 " RCW, %"
                  PRIu64 " RMW", pass, s.st.full_stripe_writes, 64 - noparity,
                  s.st.degraded_writes, noparity, s.st.rcw_writes, s.st.rmw_writes);
    stream_case_end(&s, &c, data);
  }

  /* Two clients streaming at queue depth 2 each, their writes taking
   * turns: each is a stream of its own, and every row is merged. */
  stream_case_run(&s, &two, data, 0);
  ck_assert_msg(s.st.rmw_writes + s.st.rcw_writes == 0 && s.st.full_stripe_writes == 64,
                "two streams: %" PRIu64 " of 64 row pieces were full-stripe "
                "writes, %" PRIu64 " RCW, %" PRIu64 " RMW", s.st.full_stripe_writes,
                s.st.rcw_writes, s.st.rmw_writes);
  stream_case_end(&s, &two, data);

  /* A stream that pauses: its first write after the pause finds the
   * previous one done, yet recent plugs filled (the first half streamed
   * at queue depth 2, sent one at a time), so it plugs, and the next
   * write fills it: every row of the second half is merged.  Then at
   * queue depth 1, with a plug window of 1 ms: the rows' first pieces
   * plug while the score lasts, and each expires (nothing else is in
   * flight); at most 4 do, then nothing waits. */
  const struct raid_fault slow = { .ops = RAID_FAULT_WRITE, .delay_us = 500 };

  sarray_new(&s, RAID_LEVEL_5, 4, true);
  raid5_set_plug_window(s.a, PLUG_FOREVER);
  members_fault(&s, &slow);
  stream_writes_by(&s, 0, len, count / 2, 2, data, 1, true);
  raid_array_stats_reset(s.a);
  stream_writes_by(&s, count / 2 * len, len, count / 2, 2, data + count / 2 * len, 1, true);
  snap_merges(&s, "after a pause", 0);
  ck_assert_msg(s.st.rmw_writes + s.st.rcw_writes == 0 && s.st.full_stripe_writes == 32,
                "after a pause: %" PRIu64 " of 32 row pieces were full-stripe writes, %"
                PRIu64 " RCW, %" PRIu64 " RMW", s.st.full_stripe_writes, s.st.rcw_writes,
                s.st.rmw_writes);
  raid5_set_plug_window(s.a, 1000);
  raid_array_stats_reset(s.a);
  stream_writes_by(&s, count * len, len, count / 2, 1, data, 1, true);
  snap_merges(&s, "queue depth 1 after a deep stream", 0);
  ck_assert_msg(s.st.plugs_expired >= 1 && s.st.plugs_expired <= 4 &&
                s.st.plugged_writes == s.st.plugs_expired, "queue depth 1: %" PRIu64
                " plugs, %" PRIu64 " expired (1 to 4 expected, all of them)",
                s.st.plugged_writes, s.st.plugs_expired);
  members_fault(&s, NULL);
  verify(&s, data, count * len, false);
  sarray_free(&s);
  test_free(data);
}
END_TEST

/* Column pieces.  A stream of writes a quarter chunk long at queue depth
 * 16 (more than a row in flight), sent one at a time: each write is one
 * data index over a quarter of the columns, and the other indices over
 * the same columns come 4 and 8 writes later, each after the first was
 * granted its lock.  The first index's piece waits (plugged),
 * gathers the two as they queue behind it (pokes that do not unplug it),
 * and goes as one full stripe when the second arrives.  With the plug
 * window longer than the test, a plug that the pokes never ended would
 * hang it.  Only the first two rows, while the writes in flight grow to
 * a row's bytes, may be written piece by piece; in sync, and with member
 * 2 failed. */
START_TEST(test_raid5_gather)
{
  const size_t len = CHUNK / 4;
  const unsigned count = 12 * 24;                    /* 24 rows */
  const struct stream_case tiny = {
    .what = "1 KiB writes", .delay_us = 20000, .fail = -1,
    .len = KiB, .count = count, .qd = 16, .nstreams = 1, .trickle = true,
  };
  uint8_t *data = test_alloc(count * len);
  struct sarray s;
  struct rng g;
  unsigned pass;

  rng_seed(&g, test_seed_for(22));
  rng_fill(&g, data, count * len);
  for (pass = 0; pass < 2; pass++) {
    const struct stream_case c = {
      .what = "column pieces", .delay_us = 20000, .fail = pass ? 2 : -1,
      .len = len, .count = count, .qd = 16, .nstreams = 1, .trickle = true,
    };
    uint64_t merged;

    stream_case_run(&s, &c, data, pass);
    merged = s.st.full_stripe_writes + s.st.degraded_writes;
    /* Each filled plug is one stripe of 3 pieces. */
    ck_assert_uint_ge(3 * s.st.plugs_filled, count - 24);
    ck_assert_msg(merged >= count - 24 && s.st.rmw_writes + s.st.rcw_writes <= 24,
                  "pass %u: %" PRIu64 " of %u column pieces were full-stripe or "
                  "degraded writes (at least %u expected), %" PRIu64 " RCW, %" PRIu64
                  " RMW", pass, merged, count, count - 24, s.st.rcw_writes,
                  s.st.rmw_writes);
    stream_case_end(&s, &c, data);
  }

  /* Writes of 1 KiB: a stripe's other pieces are 64 and 128 writes ahead,
   * deeper than any client runs (and than this one, at 16), so nothing
   * waits for them; a plug here would never fill, and hang the test. */
  stream_case_run(&s, &tiny, data, 0);
  ck_assert_uint_eq(s.st.full_stripe_writes, 0);
  stream_case_end(&s, &tiny, data);
  test_free(data);
}
END_TEST

/* A plug holds nobody up: a write that it cannot take over (the same
 * bytes as its own) makes it go at once, plug window or not.  A stream
 * of 2/3-row writes: the second write's last piece starts row 1 and
 * plugs for the rest of the row, which never comes; a write of part of
 * the same bytes, from another queue, pokes it, and both complete.  With
 * nobody to poke it, the plug goes when its window runs out.  The
 * statistics count each plug and how it ended. */
START_TEST(test_raid5_plug_poke)
{
  const size_t row = 3 * CHUNK, len = 2 * CHUNK;
  struct raid_queue *q, *q2;
  struct rdone st = { 0, 0 }, st2 = { 0, 0 };
  uint8_t *data = test_alloc(2 * len + 4 * KiB), *buf = test_alloc(2 * row);
  struct sarray s;
  struct rng g;
  unsigned i;

  rng_seed(&g, test_seed_for(23));
  rng_fill(&g, data, 2 * len + 4 * KiB);
  sarray_new(&s, RAID_LEVEL_5, 4, false);
  raid5_set_plug_window(s.a, PLUG_FOREVER);
  ck_assert_int_eq(raid_queue_new(0, &q), 0);
  ck_assert_int_eq(raid_queue_new(0, &q2), 0);
  ck_assert_int_eq(raid_aio_write(q, s.a, data, len, 0, 0, rdone_cb, &st), 0);
  ck_assert_int_eq(raid_aio_write(q, s.a, data + len, len, len, 0, rdone_cb, &st), 0);
  for (i = 0; i < 200 && st.done < 1; i++)
    ck_assert_int_ge(raid_queue_run(q, 0), 0);
  for (i = 0; i < 200; i++)
    ck_assert_int_ge(raid_queue_run(q, 0), 0);
  ck_assert_msg(st.done == 1, "%u of 2 writes done: the second should wait, "
                "plugged, for the rest of row 1", st.done);
  /* 4 KiB of row 1's first chunk, which the plugged piece writes too. */
  ck_assert_int_eq(raid_aio_write(q2, s.a, data + 2 * len, 4 * KiB, row + 8 * KiB, 0,
                                  rdone_cb, &st2), 0);
  for (i = 0; i < 2000 && (st.done < 2 || st2.done < 1); i++) {
    ck_assert_int_ge(raid_queue_run(q2, 0), 0);
    ck_assert_int_ge(raid_queue_run(q, 0), 0);
  }
  ck_assert_msg(st.done == 2 && st2.done == 1, "the plug did not go when a write "
                "it cannot take queued behind it (%u of 2, %u of 1 done)", st.done,
                st2.done);
  ck_assert_int_eq(st.err, 0);
  ck_assert_int_eq(st2.err, 0);
  snap(&s);
  ck_assert_msg(s.st.plugged_writes == 1 && s.st.plugs_filled == 0 &&
                s.st.plugs_expired == 0, "one plug, poked, expected: %" PRIu64 " plugged, %"
                PRIu64 " filled, %" PRIu64 " expired", s.st.plugged_writes,
                s.st.plugs_filled, s.st.plugs_expired);
  /* The later write wins: it queued behind the plugged one. */
  memcpy(data + len + (row + 8 * KiB - len), data + 2 * len, 4 * KiB);
  ck_assert_int_eq(raid_pread(s.a, buf, 2 * len, 0), 0);
  ck_assert_msg(memcmp(buf, data, 2 * len) == 0, "rows 0 and 1 differ");
  sarray_free(&s);

  /* Nobody pokes the same plug with a plug window of 1 ms: its time runs
   * out, and it goes alone. */
  sarray_new(&s, RAID_LEVEL_5, 4, false);
  raid5_set_plug_window(s.a, 1000);
  st.done = 0;
  ck_assert_int_eq(raid_aio_write(q, s.a, data, len, 0, 0, rdone_cb, &st), 0);
  ck_assert_int_eq(raid_aio_write(q, s.a, data + len, len, len, 0, rdone_cb, &st), 0);
  while (st.done < 2)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
  ck_assert_int_eq(st.err, 0);
  snap(&s);
  ck_assert_msg(s.st.plugged_writes == 1 && s.st.plugs_filled == 0 &&
                s.st.plugs_expired == 1, "one plug, expired, expected: %" PRIu64
                " plugged, %" PRIu64 " filled, %" PRIu64 " expired", s.st.plugged_writes,
                s.st.plugs_filled, s.st.plugs_expired);
  raid_queue_free(q);
  raid_queue_free(q2);
  sarray_free(&s);
  test_free(data);
  test_free(buf);
}
END_TEST

/* Regression test for the first round's crash: merging took writes queued
 * by other threads' queues and submitted and completed them on the lead's
 * own.  Two queues, one write each on row 0: A writes chunks 0 and 1, B
 * chunk 2, and B's lock request lands behind A's before A's queue runs.
 * A then merges B into one full stripe (no reads), but B's data write is
 * submitted on B's queue and B's request completes there: run alone, A's
 * queue cannot finish A (it waits for B's part), and B completes only
 * when B's queue runs.  Stepped by hand on one thread, so the order of
 * events is fixed; the stress tests cover real threads. */
static void
count_done(void *opaque, int res)
{
  int *d = opaque;

  *d = res < 0 ? res : 1;
}

START_TEST(test_raid5_merge_owners)
{
  struct raid_queue *qa, *qb;
  struct sarray s;
  uint8_t *data = test_alloc(3 * CHUNK);
  struct rng g;
  int da = 0, db = 0, i;

  rng_seed(&g, test_seed_for(21));
  rng_fill(&g, data, 3 * CHUNK);
  sarray_new(&s, RAID_LEVEL_5, 4, false);
  ck_assert_int_eq(raid_queue_new(0, &qa), 0);
  ck_assert_int_eq(raid_queue_new(0, &qb), 0);
  ck_assert_int_eq(raid_aio_write(qa, s.a, data, 2 * CHUNK, 0, 0, count_done, &da), 0);
  ck_assert_int_eq(raid_aio_write(qb, s.a, data + 2 * CHUNK, CHUNK, 2 * CHUNK,
                                  RAID_REQ_FUA, count_done, &db), 0);
  /* A's queue alone: A merges B and writes its own part and the parity,
   * then waits for B's queue. */
  for (i = 0; i < 100; i++)
    ck_assert_int_ge(raid_queue_run(qa, 0), 0);
  ck_assert_int_eq(da, 0);
  ck_assert_int_eq(db, 0);
  ck_assert_uint_eq(raid_queue_in_flight(qb), 1);
  /* Both queues: both finish, B's on B's queue. */
  while (da == 0 || db == 0) {
    ck_assert_int_ge(raid_queue_run(qa, 0), 0);
    ck_assert_int_ge(raid_queue_run(qb, 0), 0);
  }
  ck_assert_int_eq(da, 1);
  ck_assert_int_eq(db, 1);
  ck_assert_uint_eq(raid_queue_in_flight(qa), 0);
  ck_assert_uint_eq(raid_queue_in_flight(qb), 0);
  snap(&s);
  ck_assert_uint_eq(s.st.full_stripe_writes, 2);
  ck_assert_uint_eq(s.st.rmw_writes + s.st.rcw_writes, 0);
  ck_assert_uint_eq(SUM(&s, read_ops), 0);
  ck_assert_uint_eq(SUM(&s, write_ops), 4);
  raid_queue_free(qa);
  raid_queue_free(qb);
  verify(&s, data, 3 * CHUNK, false);
  sarray_free(&s);
  test_free(data);
}
END_TEST

int
main(void)
{
  Suite *s;
  TCase *tc;

  test_init("test-raid5-merge");
  raid_set_log_handler(NULL, NULL, RAID_LOG_ERR - 1);   /* failures are expected */
  s = suite_create("raid5-merge");
  tc = test_tcase("merge");
  tcase_add_test(tc, test_raid5_merge);
  tcase_add_test(tc, test_raid5_merge_owners);
  tcase_add_test(tc, test_raid5_gather);
  tcase_add_test(tc, test_raid5_plug_poke);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
