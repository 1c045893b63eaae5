/* Description: md's safe mode (lib/safemode.c).  An array idle for the
 * safe mode delay has "clean" superblocks on every member, so a crash
 * then (copies of the members taken while it runs, the array abandoned)
 * assembles with no resync; a crash with a write in flight (held at the
 * members by a wrapper back-end) assembles needing one; a write on a
 * clean array reaches no member before every member's superblock says
 * "active" again (the wrapper reads them all as each data write arrives),
 * and writes that come together share one superblock update; events go
 * up by one per transition, the same on every member; bitmap bits stay
 * set through the clean mark, the bitmap's events the superblock's; a
 * resync stopped half way is marked clean at its checkpoint, where the
 * next assembly resumes it; a crash in the middle of a transition leaves
 * a member one update behind, which assembly takes (md's margin of one). */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "internal.h"           /* member_alloc() */
#include "md/meta.h"            /* safe_mode_set_delay() */

#define MAXM 4
#define MEMBER_SIZE (8 * MiB)
#define DELAY_MS 20u

/* ---- a member that checks the superblocks and can hold writes ---------------- */

/* Wraps an inner member.  Every data write (not superblock or bitmap I/O:
 * member_pio() marks those MIO_META) first reads the superblock of every
 * inner member of the set and counts one whose resync_offset is not 0
 * (not "active") or whose events differ from the others'; then it goes to
 * the inner member, or, while `hold` is set, waits on `held` until
 * release_held().  Everything runs on the queue's thread. */
struct wrap {
  struct raid_member *inner;
};

struct wio {
  struct member_io inner;
  struct member_io *outer;
  struct wio *next;
};

static struct raid_member *inners[MAXM];
static unsigned ninners;
static bool hold;
static struct wio *held;
static unsigned nheld, data_writes, not_active;

static void
wio_done(struct member_io *io, int res)
{
  struct wio *w = io->priv;
  struct member_io *outer = w->outer;

  free(w);
  member_complete(outer, res);
}

static void
check_superblocks(void)
{
  struct raid_superblock sb;
  uint64_t events = 0;
  unsigned i;

  for (i = 0; i < ninners; i++) {
    if (raid_superblock_read(inners[i], &sb) < 0 || sb.resync_offset != 0 ||
        (i > 0 && sb.events != events))
      not_active++;
    events = sb.events;
  }
}

static void
wrap_submit(struct raid_queue *q, struct member_io *io)
{
  struct wrap *wp = io->m->priv;
  struct wio *w = calloc(1, sizeof *w);

  ck_assert_ptr_nonnull(w);
  w->outer = io;
  w->inner.m = wp->inner;
  w->inner.op = io->op;
  w->inner.flags = io->flags;
  w->inner.buf = io->buf;
  w->inner.offset = io->offset;
  w->inner.len = io->len;
  w->inner.done = wio_done;
  w->inner.priv = w;
  if (io->op != MOP_READ && io->op != MOP_FLUSH && !(io->flags & MIO_META)) {
    data_writes++;
    check_superblocks();
    if (hold) {
      w->next = held;
      held = w;
      nheld++;
      return;
    }
  }
  member_submit(q, &w->inner);
}

static void
release_held(void)
{
  struct wio *w, *next;

  hold = false;
  for (w = held; w; w = next) {
    next = w->next;
    member_submit(w->outer->q, &w->inner);
  }
  held = NULL;
  nheld = 0;
}

static void
wrap_close(struct raid_member *m)
{
  struct wrap *wp = m->priv;

  raid_member_close(wp->inner);
  free(wp);
}

static const struct member_ops wrap_ops = {
  .kind = "wrap", .submit = wrap_submit, .close = wrap_close,
};

static struct raid_member *
wrap_member(struct raid_member *inner)
{
  struct wrap *wp = calloc(1, sizeof *wp);
  struct raid_member *m = member_alloc(&wrap_ops, inner->name);

  ck_assert(wp && m);
  wp->inner = inner;
  m->priv = wp;
  m->size = inner->size;
  m->lbs = inner->lbs;
  m->mem_align = inner->mem_align;
  m->direct = inner->direct;
  return m;
}

/* ---- helpers ------------------------------------------------------------------ */

/* A crash: what the members of SET hold now, copied to set TO. */
static void
crash_copy(const char *set, const char *to, unsigned n)
{
  char f[256], t[256];
  unsigned i;

  for (i = 0; i < n; i++) {
    tfile_path(f, sizeof f, set, i);
    tfile_path(t, sizeof t, to, i);
    tfile_copy(f, t);
  }
}

/* Every member of SET says the same events; return them and whether they
 * say "clean" (resync_offset RESYNC_OFFSET; 0 is "active"). */
static uint64_t
set_state(const char *set, unsigned n, uint64_t resync_offset)
{
  struct raid_superblock sb;
  uint64_t events = 0;
  unsigned i;

  for (i = 0; i < n; i++) {
    tfile_read_sb(set, i, &sb);
    ck_assert_msg(sb.resync_offset == resync_offset, "%s member %u: resync_offset %"
                  PRIu64 ", expected %" PRIu64, set, i, sb.resync_offset, resync_offset);
    if (i > 0)
      ck_assert_uint_eq(sb.events, events);
    events = sb.events;
  }
  return events;
}

/* Safe mode marks A clean within a bounded time. */
static void
wait_clean(struct raid_array *a)
{
  unsigned tries;

  for (tries = 0; tries < 1000 && !raid_array_clean(a); tries++)
    usleep(10000);
  ck_assert_msg(raid_array_clean(a), "%s: not marked clean after 10 s idle",
                raid_array_name(a));
}

/* Array SET over N new members wrapped in the checking back-end. */
static struct raid_array *
create_wrapped(const char *set, int level, unsigned n, unsigned flags, bool bitmap)
{
  struct raid_config cfg = { .name = set, .level = level, .layout = RAID_LAYOUT_DEFAULT,
                             .chunk_size = 64 << 10, .raid_disks = n,
                             .bitmap = bitmap ? RAID_BITMAP_INTERNAL : RAID_BITMAP_NONE };
  struct raid_member *m[MAXM];
  struct raid_array *a;
  unsigned i;

  tfile_create(set, n, MEMBER_SIZE);
  tfile_open(set, NULL, n, m);
  for (i = 0; i < n; i++) {
    inners[i] = m[i];
    m[i] = wrap_member(m[i]);
  }
  ninners = n;
  ck_assert_msg(raid_array_create(&cfg, m, flags, &a) == 0, "%s", raid_get_error());
  safe_mode_set_delay(a, DELAY_MS);
  return a;
}

static void
count_done(void *opaque, int err)
{
  int *left = opaque;

  ck_assert_int_eq(err, 0);
  (*left)--;
}

static const int levels[] = { 1, 5, 10 };

/* ---- tests -------------------------------------------------------------------- */

/* Written, then idle past the delay: clean on every member, events one
 * past the active ones; a crash now assembles with no resync and the
 * data there.  With a bitmap the written chunk's bit stays set. */
START_TEST(test_idle_crash)
{
  int level = levels[_i % 3];
  bool bitmap = _i >= 3;
  struct raid_bitmap_info info;
  struct raid_member *m[MAXM];
  struct raid_array *a;
  uint8_t data[65536], back[65536];
  char set[32], crash[32];
  uint64_t active, clean;
  unsigned i, n = 4;

  snprintf(set, sizeof set, "si%d%c-", level, bitmap ? 'b' : 'n');
  snprintf(crash, sizeof crash, "sic%d%c-", level, bitmap ? 'b' : 'n');
  a = create_wrapped(set, level, n, RAID_CREATE_ASSUME_CLEAN, bitmap);
  wait_clean(a);
  for (i = 0; i < sizeof data; i++)
    data[i] = (uint8_t)(i * 7 + level);
  safe_mode_set_delay(a, 0);            /* stay active while we look */
  ck_assert_int_eq(raid_pwrite(a, data, sizeof data, 3 << 20, 0), 0);
  active = set_state(set, n, 0);
  ck_assert_int_eq(raid_array_clean(a), 0);
  safe_mode_set_delay(a, DELAY_MS);
  wait_clean(a);
  clean = set_state(set, n, RAID_SB_MAX_SECTOR);
  ck_assert_uint_eq(clean, active + 1);
  ck_assert_uint_gt(data_writes, 0);
  ck_assert_uint_eq(not_active, 0);
  if (bitmap) {
    struct raid_superblock sb;
    struct raid_bitmap_super b;
    struct raid_member *x;
    uint64_t dirty;
    char p[256];

    ck_assert_int_eq(raid_array_bitmap(a, &info), 0);
    ck_assert_uint_eq(info.dirty, 1);
    ck_assert_uint_eq(info.events, clean);
    for (i = 0; i < n; i++) {
      tfile_path(p, sizeof p, set, i);
      ck_assert_int_eq(raid_member_open(p, RAID_MEMBER_READONLY, &x), 0);
      ck_assert_int_eq(raid_superblock_read(x, &sb), 0);
      ck_assert_msg(raid_bitmap_read(x, &sb, &b, &dirty) == 0, "%s", raid_get_error());
      ck_assert_uint_eq(dirty, 1);
      ck_assert_uint_eq(b.events, sb.events);
      ck_assert_uint_le(b.events_cleared, b.events);
      raid_member_close(x);
    }
  }

  crash_copy(set, crash, n);
  raid_array_free(a);
  tfile_open(crash, NULL, n, m);
  ck_assert_msg(raid_array_assemble(NULL, m, n, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_needs_resync(a), 0);
  ck_assert_int_eq(raid_array_degraded(a), 0);
  ck_assert_int_eq(raid_pread(a, back, sizeof back, 3 << 20), 0);
  ck_assert_mem_eq(back, data, sizeof data);
  raid_array_free(a);
}
END_TEST

/* A crash with a write in flight (held at every member, well past the
 * delay): every member says active, and the crash copy needs a resync.
 * Released and idle, the array goes clean. */
START_TEST(test_inflight_crash)
{
  int level = levels[_i];
  struct raid_member *m[MAXM];
  struct raid_array *a;
  struct raid_queue *q;
  uint8_t *data = test_alloc(65536);
  char set[32], crash[32];
  int left = 1;
  unsigned n = 4;

  snprintf(set, sizeof set, "sf%d-", level);
  snprintf(crash, sizeof crash, "sfc%d-", level);
  a = create_wrapped(set, level, n, RAID_CREATE_ASSUME_CLEAN, false);
  wait_clean(a);
  memset(data, 0x5c, 65536);
  ck_assert_int_eq(raid_queue_new(0, &q), 0);
  hold = true;
  ck_assert_int_eq(raid_aio_write(q, a, data, 65536, 1 << 20, 0, count_done, &left), 0);
  while (nheld == 0) {           /* no completion comes: poll */
    ck_assert_int_ge(raid_queue_run(q, 0), 0);
    usleep(1000);
  }
  set_state(set, n, 0);
  usleep(10 * DELAY_MS * 1000);
  ck_assert_int_eq(raid_array_clean(a), 0);
  set_state(set, n, 0);
  crash_copy(set, crash, n);
  release_held();
  while (left > 0)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
  raid_queue_free(q);
  wait_clean(a);
  set_state(set, n, RAID_SB_MAX_SECTOR);
  ck_assert_uint_eq(not_active, 0);
  raid_array_free(a);

  tfile_open(crash, NULL, n, m);
  ck_assert_msg(raid_array_assemble(NULL, m, n, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_needs_resync(a), 1);
  ck_assert_int_eq(raid_array_resync(a, NULL, NULL), 0);
  raid_array_free(a);
  test_free(data);
}
END_TEST

/* Writes, write zeroes and discards that come together on a clean array:
 * none reaches a member before every member says active (checked at each
 * data write), and they share one superblock update. */
START_TEST(test_order)
{
  int level = levels[_i];
  struct raid_array *a;
  struct raid_queue *q;
  uint8_t *data = test_alloc(8 * 65536);
  char set[32];
  uint64_t clean, active;
  int left = 10;
  unsigned k, n = 4;

  snprintf(set, sizeof set, "so%d-", level);
  a = create_wrapped(set, level, n, RAID_CREATE_ASSUME_CLEAN, false);
  wait_clean(a);
  clean = set_state(set, n, RAID_SB_MAX_SECTOR);
  data_writes = not_active = 0;
  memset(data, 0x6d, 8 * 65536);
  safe_mode_set_delay(a, 0);            /* stay active while we look */
  ck_assert_int_eq(raid_queue_new(0, &q), 0);
  for (k = 0; k < 8; k++)
    ck_assert_int_eq(raid_aio_write(q, a, data + k * 65536, 65536, (uint64_t)k << 19, 0,
                                    count_done, &left), 0);
  ck_assert_int_eq(raid_aio_write_zeroes(q, a, 65536, 5 << 20, 0, count_done, &left), 0);
  ck_assert_int_eq(raid_aio_discard(q, a, 256 << 10, 6 << 20, count_done, &left), 0);
  while (left > 0)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
  raid_queue_free(q);
  ck_assert_uint_ge(data_writes, 10);
  ck_assert_msg(not_active == 0, "%u data writes reached a member before every "
                "superblock said active", not_active);
  /* One update made it active for all of them. */
  active = set_state(set, n, 0);
  ck_assert_uint_eq(active, clean + 1);
  safe_mode_set_delay(a, DELAY_MS);
  wait_clean(a);
  ck_assert_uint_eq(set_state(set, n, RAID_SB_MAX_SECTOR), clean + 2);
  raid_array_free(a);
  test_free(data);
}
END_TEST

/* A crash in the middle of the update that marks the array active: member
 * 0 still says clean (events E), the others active (E + 1).  It is one
 * update behind and in sync: assembly takes every member (md's event
 * margin of one) and, the freshest saying active, resyncs. */
START_TEST(test_mid_update_crash)
{
  struct raid_superblock sb;
  struct raid_member *m[MAXM];
  struct raid_array *a;
  struct raid_queue *q;
  uint8_t *data = test_alloc(65536);
  char f[256], t[256];
  uint64_t clean;
  unsigned i, n = 4;
  int left = 1;

  a = create_wrapped("sm-", 5, n, RAID_CREATE_ASSUME_CLEAN, false);
  wait_clean(a);
  clean = set_state("sm-", n, RAID_SB_MAX_SECTOR);
  tfile_path(f, sizeof f, "sm-", 0);
  tfile_path(t, sizeof t, "smc-", 0);
  tfile_copy(f, t);
  memset(data, 0x3a, 65536);
  ck_assert_int_eq(raid_queue_new(0, &q), 0);
  hold = true;
  ck_assert_int_eq(raid_aio_write(q, a, data, 65536, 1 << 20, 0, count_done, &left), 0);
  while (nheld == 0) {
    ck_assert_int_ge(raid_queue_run(q, 0), 0);
    usleep(1000);
  }
  ck_assert_uint_eq(set_state("sm-", n, 0), clean + 1);
  for (i = 1; i < n; i++) {
    tfile_path(f, sizeof f, "sm-", i);
    tfile_path(t, sizeof t, "smc-", i);
    tfile_copy(f, t);
  }
  release_held();
  while (left > 0)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
  raid_queue_free(q);
  raid_array_free(a);

  tfile_read_sb("smc-", 0, &sb);
  ck_assert_uint_eq(sb.events, clean);
  tfile_open("smc-", NULL, n, m);
  ck_assert_msg(raid_array_assemble(NULL, m, n, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_degraded(a), 0);
  ck_assert_int_eq(raid_array_needs_resync(a), 1);
  ck_assert_int_eq(raid_array_resync(a, NULL, NULL), 0);
  raid_array_free(a);
  test_free(data);
}
END_TEST

static int
stop_at_half(void *opaque, uint64_t done, uint64_t total)
{
  return done >= total / 2;
}

/* A resync stopped half way, then idle: clean at the resync's checkpoint
 * (what a clean stop writes), which a crash copy keeps: it needs the rest
 * of the resync. */
START_TEST(test_resync_checkpoint)
{
  struct raid_superblock sb;
  struct raid_member *m[MAXM];
  struct raid_array *a;
  uint64_t rate;
  unsigned n = 2;

  a = create_wrapped("sr-", 1, n, 0, false);
  ck_assert_int_eq(raid_array_needs_resync(a), 1);
  rate = raid_array_member_size(a) * 2 / 5;
  raid_array_set_sync_limits(a, rate, rate);
  ck_assert_int_eq(raid_array_resync(a, stop_at_half, NULL), -EINTR);
  wait_clean(a);
  tfile_read_sb("sr-", 0, &sb);
  ck_assert_msg(sb.resync_offset > 0 && sb.resync_offset < sb.size, "resync_offset %"
                PRIu64 " of %" PRIu64, sb.resync_offset, sb.size);
  set_state("sr-", n, sb.resync_offset);
  crash_copy("sr-", "src-", n);
  raid_array_free(a);
  tfile_open("src-", NULL, n, m);
  ck_assert_msg(raid_array_assemble(NULL, m, n, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_needs_resync(a), 1);
  raid_array_free(a);
}
END_TEST

static Suite *
safemode_suite(void)
{
  Suite *s = suite_create("safemode");
  TCase *tc = test_tcase("safemode");

  tcase_add_loop_test(tc, test_idle_crash, 0, 6);
  tcase_add_loop_test(tc, test_inflight_crash, 0, 3);
  tcase_add_loop_test(tc, test_order, 0, 3);
  tcase_add_test(tc, test_resync_checkpoint);
  tcase_add_test(tc, test_mid_update_crash);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  test_init("test-safemode");
  return test_run_suite(safemode_suite());
}
