/* Description: one test per error path of the public API, checking both
 * the errno returned (and raid_get_errno()) and the message from
 * raid_get_error(), which must name the array (config.name) and the
 * offending thing: the member's path, or the bad value.
 *
 * Assembly: too few members per level, chunk not a power of two / below
 * 4 KiB / above 256 MiB, unknown level, unknown RAID 5 and RAID 10 layouts,
 * RAID 10 copies above raid_disks or below 2, raid_disks 0 or above
 * RAID_MAX_MEMBERS, data_offset not sector aligned, a member smaller than
 * data_offset plus one chunk, members differing more than 2x without
 * member_size, a member smaller than an explicit member_size, too many
 * missing members for the level.  I/O (synchronous and asynchronous, where
 * a refused request must not run its callback): out of range, overflowing
 * offsets, misaligned offset or length, reads and writes longer than
 * RAID_MAX_REQUEST (discard and write-zeroes that long are accepted and
 * must zero exactly their range), and zero-length requests.  Positive controls show the same calls succeed just
 * inside each limit.
 *
 * Running out of memory (the library's allocation fault injector failing
 * one allocation in a few): on every level, requests fail with ENOMEM or
 * succeed, never anything else; the process goes on; a write that failed
 * leaves no mirror or parity behind the data (rewriting what it touched
 * makes every member consistent again, which the placement check proves).
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testlib.h"

#define NAME "md-errors"

/* The message mentions V as a number: decimal or hex, bytes or sectors, or
 * with a K/M suffix when it is a whole number of them. */
static bool
has_number_str(const char *msg, const char *num)
{
  const char *p = msg;
  size_t l = strlen(num);

  while ((p = strstr(p, num)) != NULL) {
    /* Not part of a longer number ("-1" in "-12", "1" in "-1"; but the
     * "1" of "near-1" counts). */
    bool before = p > msg && ((p[-1] >= '0' && p[-1] <= '9') ||
                              (num[0] != '-' && p[-1] == '-' &&
                               (p - 1 == msg || p[-2] == ' ' || p[-2] == '=')));
    bool after = p[l] >= '0' && p[l] <= '9';
    if (!before && !after)
      return true;
    p++;
  }
  return false;
}

static bool
msg_has_u64(const char *msg, uint64_t v)
{
  char b[64];

  snprintf(b, sizeof b, "%" PRIu64, v);
  if (has_number_str(msg, b))
    return true;
  snprintf(b, sizeof b, "0x%" PRIx64, v);
  if (strstr(msg, b))
    return true;
  snprintf(b, sizeof b, "0x%" PRIX64, v);
  if (strstr(msg, b))
    return true;
  if (v && v % 1024 == 0) {
    snprintf(b, sizeof b, "%" PRIu64 "K", v / 1024);
    if (strstr(msg, b)) return true;
    snprintf(b, sizeof b, "%" PRIu64 "k", v / 1024);
    if (strstr(msg, b)) return true;
    snprintf(b, sizeof b, "%" PRIu64 " K", v / 1024);
    if (strstr(msg, b)) return true;
  }
  if (v && v % (1024 * 1024) == 0) {
    snprintf(b, sizeof b, "%" PRIu64 "M", v / (1024 * 1024));
    if (strstr(msg, b)) return true;
    snprintf(b, sizeof b, "%" PRIu64 " M", v / (1024 * 1024));
    if (strstr(msg, b)) return true;
  }
  return false;
}

static bool
msg_has_value(const char *msg, int64_t v)
{
  char b[64];

  if (v >= 0)
    return msg_has_u64(msg, (uint64_t)v);
  snprintf(b, sizeof b, "%" PRId64, v);
  return has_number_str(msg, b);
}

/* An offset or length: in bytes or in sectors. */
static bool
msg_has_bytes_or_sectors(const char *msg, uint64_t v)
{
  return msg_has_u64(msg, v) || (v % 512 == 0 && msg_has_u64(msg, v / 512));
}

static void
assert_error(int r, int err, const char *what)
{
  tassert(r == -err, "%s: returned %d (%s), expected -%d; message: %s", what, r,
                r < 0 ? strerror(-r) : "success", err, raid_get_error());
  tassert(raid_get_errno() == err, "%s: raid_get_errno() %d, expected %d", what,
                raid_get_errno(), err);
}

/* ---- assembly ------------------------------------------------------------------------- */

enum expect { EXPECT_VALUE, EXPECT_MEMBER, EXPECT_NAME_ONLY };

struct ecase {
  const char *what;
  int level, layout;
  uint32_t chunk;
  unsigned disks;
  uint64_t data_offset, member_size;
  uint64_t sizes[6];              /* of the member files; 0 = 4 MiB */
  uint64_t missing;               /* NULL members */
  enum expect expect;
  int64_t value;                  /* EXPECT_VALUE */
  uint64_t members;               /* EXPECT_MEMBER: any of these may be named */
};

#define M4 (4 * MiB)

static const struct ecase ecases[] = {
  { "raid0 with 1 member", RAID_LEVEL_0, -1, 64 * KiB, 1, 0, 0, { 0 }, 0, EXPECT_VALUE, 1, 0 },
  { "raid1 with 1 member", RAID_LEVEL_1, -1, 0, 1, 0, 0, { 0 }, 0, EXPECT_VALUE, 1, 0 },
  { "raid5 with 1 member", RAID_LEVEL_5, -1, 64 * KiB, 1, 0, 0, { 0 }, 0, EXPECT_VALUE, 1, 0 },
  { "raid10 with 1 member", RAID_LEVEL_10, -1, 64 * KiB, 1, 0, 0, { 0 }, 0, EXPECT_VALUE, 1, 0 },
  { "raid0 with 0 members", RAID_LEVEL_0, -1, 64 * KiB, 0, 0, 0, { 0 }, 0, EXPECT_VALUE, 0, 0 },
  { "raid0 with 65 members", RAID_LEVEL_0, -1, 64 * KiB, RAID_MAX_MEMBERS + 1, 0, 0, { 0 },
    0, EXPECT_VALUE, RAID_MAX_MEMBERS + 1, 0 },
  { "chunk 12K not a power of two", RAID_LEVEL_5, -1, 12 * KiB, 3, 0, 0, { 0 }, 0,
    EXPECT_VALUE, 12 * KiB, 0 },
  { "chunk 5000 not a power of two", RAID_LEVEL_0, -1, 5000, 2, 0, 0, { 0 }, 0,
    EXPECT_VALUE, 5000, 0 },
  { "chunk 2K below 4K", RAID_LEVEL_0, -1, 2 * KiB, 2, 0, 0, { 0 }, 0, EXPECT_VALUE, 2 * KiB, 0 },
  { "chunk 512 below 4K", RAID_LEVEL_10, -1, 512, 2, 0, 0, { 0 }, 0, EXPECT_VALUE, 512, 0 },
  { "chunk 512M above 256M", RAID_LEVEL_5, -1, 512 * MiB, 3, 0, 0, { 0 }, 0,
    EXPECT_VALUE, 512 * MiB, 0 },
  { "chunk 2G above 256M", RAID_LEVEL_0, -1, 2048u * MiB, 2, 0, 0, { 0 }, 0,
    EXPECT_VALUE, 2048 * MiB, 0 },
  { "unknown level 4", 4, -1, 64 * KiB, 3, 0, 0, { 0 }, 0, EXPECT_VALUE, 4, 0 },
  { "unknown level 6", 6, -1, 64 * KiB, 4, 0, 0, { 0 }, 0, EXPECT_VALUE, 6, 0 },
  { "unknown level -1", -1, -1, 64 * KiB, 2, 0, 0, { 0 }, 0, EXPECT_VALUE, -1, 0 },
  { "unknown level 3", 3, -1, 64 * KiB, 3, 0, 0, { 0 }, 0, EXPECT_VALUE, 3, 0 },
  { "raid5 layout 6 (past parity-last)", RAID_LEVEL_5, 6, 64 * KiB, 3, 0, 0, { 0 }, 0,
    EXPECT_VALUE, 6, 0 },
  { "raid5 layout 17", RAID_LEVEL_5, 17, 64 * KiB, 3, 0, 0, { 0 }, 0, EXPECT_VALUE, 17, 0 },
  { "raid5 layout -7", RAID_LEVEL_5, -7, 64 * KiB, 3, 0, 0, { 0 }, 0, EXPECT_VALUE, -7, 0 },
  { "raid10 far-2 layout", RAID_LEVEL_10, 0x201, 64 * KiB, 4, 0, 0, { 0 }, 0,
    EXPECT_VALUE, 0x201, 0 },
  { "raid10 offset layout", RAID_LEVEL_10, 0x10102, 64 * KiB, 4, 0, 0, { 0 }, 0,
    EXPECT_VALUE, 0x10102, 0 },
  { "raid10 near-3 over 2 members", RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(3), 64 * KiB, 2,
    0, 0, { 0 }, 0, EXPECT_VALUE, 3, 0 },
  { "raid10 near-5 over 4 members", RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(5), 64 * KiB, 4,
    0, 0, { 0 }, 0, EXPECT_VALUE, 5, 0 },
  { "raid10 near-1", RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(1), 64 * KiB, 4, 0, 0, { 0 }, 0,
    EXPECT_VALUE, 1, 0 },
  { "raid10 near-0", RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(0), 64 * KiB, 4, 0, 0, { 0 }, 0,
    EXPECT_VALUE, 0, 0 },
  { "data_offset 1000 not sector aligned", RAID_LEVEL_0, -1, 64 * KiB, 2, 1000, 0, { 0 }, 0,
    EXPECT_VALUE, 1000, 0 },
  { "members smaller than data_offset + chunk", RAID_LEVEL_5, -1, 64 * KiB, 3, 1 * MiB, 0,
    { MiB + 32 * KiB, MiB + 32 * KiB, MiB + 32 * KiB }, 0, EXPECT_MEMBER, 0, 0x7 },
  { "members smaller than data_offset", RAID_LEVEL_1, -1, 0, 2, 4 * MiB, 0,
    { 2 * MiB, 2 * MiB }, 0, EXPECT_MEMBER, 0, 0x3 },
  { "raid0 member smaller than one chunk", RAID_LEVEL_0, -1, 512 * KiB, 2, 0, 0,
    { 256 * KiB, 256 * KiB }, 0, EXPECT_MEMBER, 0, 0x3 },
  { "members differ more than 2x", RAID_LEVEL_5, -1, 64 * KiB, 3, 0, 0,
    { M4, 9 * MiB, M4 }, 0, EXPECT_MEMBER, 0, 0x7 },
  { "members differ more than 2x (small one)", RAID_LEVEL_1, -1, 0, 3, 0, 0,
    { M4, M4, MiB }, 0, EXPECT_MEMBER, 0, 0x7 },
  { "member smaller than member_size", RAID_LEVEL_0, -1, 64 * KiB, 3, 0, 3 * MiB,
    { M4, 2 * MiB, M4 }, 0, EXPECT_MEMBER, 0, 0x2 },
  { "member smaller than data_offset + member_size", RAID_LEVEL_10, -1, 64 * KiB, 4, 1 * MiB,
    3 * MiB + 512 * KiB, { M4, M4, M4, M4 + 64 * KiB }, 0, EXPECT_MEMBER, 0, 0xf },
  { "raid0 missing member", RAID_LEVEL_0, -1, 64 * KiB, 3, 0, 0, { 0 }, 0x2,
    EXPECT_NAME_ONLY, 0, 0 },
  { "raid1 all members missing", RAID_LEVEL_1, -1, 0, 2, 0, 0, { 0 }, 0x3,
    EXPECT_NAME_ONLY, 0, 0 },
  { "raid5 two members missing", RAID_LEVEL_5, -1, 64 * KiB, 4, 0, 0, { 0 }, 0x5,
    EXPECT_NAME_ONLY, 0, 0 },
  { "raid10 near-2 mirror pair missing", RAID_LEVEL_10, -1, 64 * KiB, 4, 0, 0, { 0 }, 0x3,
    EXPECT_NAME_ONLY, 0, 0 },
  { "raid10 near-2 over 3, two missing", RAID_LEVEL_10, -1, 64 * KiB, 3, 0, 0, { 0 }, 0x6,
    EXPECT_NAME_ONLY, 0, 0 },
  { "raid10 near-3 over 6, a copy set missing", RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(3),
    64 * KiB, 6, 0, 0, { 0 }, 0x38, EXPECT_NAME_ONLY, 0, 0 },
};

/* Each invalid configuration is refused with -EINVAL, the members stay the
 * caller's, and the message names the array and the
 * bad value or member. */
START_TEST(test_assembly)
{
  const struct ecase *e = &ecases[_i];
  struct raid_config cfg = {
    .name = NAME, .level = e->level, .layout = e->layout, .chunk_size = e->chunk,
    .raid_disks = e->disks, .data_offset = e->data_offset, .member_size = e->member_size,
  };
  struct raid_member *m[RAID_MAX_MEMBERS + 1] = { NULL };
  struct raid_array *a = NULL;
  struct tmembers tm;
  unsigned i, n = MIN(e->disks, 6u);
  const char *msg;
  int r;

  /* More than 6 members: none opened, the count is refused first. */
  if (e->disks <= 6) {
    uint64_t sizes[6];
    for (i = 0; i < 6; i++)
      sizes[i] = e->sizes[i] ? e->sizes[i] : M4;
    tmembers_create(&tm, n, sizes, 0);
    for (i = 0; i < n; i++)
      if (!((e->missing >> i) & 1))
        m[i] = tmembers_open(&tm, i, false);
  }
  else
    memset(&tm, 0, sizeof tm);
  r = raid_array_new(&cfg, m, &a);
  msg = raid_get_error();
  if (r == 0)
    raid_array_free(a);
  assert_error(r, EINVAL, e->what);
  tassert(strstr(msg, NAME) != NULL, "%s: message does not name the array %s: %s",
                e->what, NAME, msg);
  switch (e->expect) {
  case EXPECT_VALUE:
    tassert(msg_has_value(msg, e->value),
                  "%s: message does not mention %" PRId64 ": %s", e->what, e->value, msg);
    break;
  case EXPECT_MEMBER: {
    bool named = false;
    for (i = 0; i < n; i++)
      if (((e->members >> i) & 1) && strstr(msg, tm.path[i]))
        named = true;
    tassert(named, "%s: message names none of the offending members: %s",
                  e->what, msg);
    break;
  }
  case EXPECT_NAME_ONLY:
    break;
  }
  /* Refused: the members are still ours to close. */
  for (i = 0; i < n; i++)
    raid_member_close(m[i]);
  tmembers_destroy(&tm);
}
END_TEST

/* Positive controls just inside the limits: these assemble. */
static const struct ecase okcases[] = {
  { "raid0 with 2 members", RAID_LEVEL_0, -1, 4 * KiB, 2, 0, 0, { 0 }, 0, 0, 0, 0 },
  { "raid1 with 2 members", RAID_LEVEL_1, -1, 0, 2, 0, 0, { 0 }, 0, 0, 0, 0 },
  { "raid5 with 2 members", RAID_LEVEL_5, -1, 4 * KiB, 2, 0, 0, { 0 }, 0, 0, 0, 0 },
  { "raid10 near-2 over 2", RAID_LEVEL_10, -1, 64 * KiB, 2, 0, 0, { 0 }, 0, 0, 0, 0 },
  { "raid10 near-4 over 4", RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(4), 64 * KiB, 4, 0, 0,
    { 0 }, 0, 0, 0, 0 },
  { "chunk 1M", RAID_LEVEL_0, -1, 1 * MiB, 2, 0, 0, { 0 }, 0, 0, 0, 0 },
  { "chunk 256M on big sparse members", RAID_LEVEL_0, -1, 256 * MiB, 2, 0, 0,
    { 600 * MiB, 600 * MiB }, 0, 0, 0, 0 },
  { "members exactly data_offset + chunk", RAID_LEVEL_5, -1, 64 * KiB, 3, 1 * MiB, 0,
    { MiB + 64 * KiB, MiB + 64 * KiB, MiB + 64 * KiB }, 0, 0, 0, 0 },
  { "members differ exactly 2x", RAID_LEVEL_5, -1, 64 * KiB, 3, 0, 0,
    { M4, 8 * MiB, M4 }, 0, 0, 0, 0 },
  { "members differ 3x with member_size", RAID_LEVEL_5, -1, 64 * KiB, 3, 0, 3 * MiB,
    { M4, 12 * MiB, M4 }, 0, 0, 0, 0 },
  { "raid5 one member missing", RAID_LEVEL_5, -1, 64 * KiB, 4, 0, 0, { 0 }, 0x8, 0, 0, 0 },
  { "raid10 one per pair missing", RAID_LEVEL_10, -1, 64 * KiB, 4, 0, 0, { 0 }, 0x6, 0, 0, 0 },
};

START_TEST(test_assembly_ok)
{
  const struct ecase *e = &okcases[_i];
  struct raid_config cfg = {
    .name = NAME, .level = e->level, .layout = e->layout, .chunk_size = e->chunk,
    .raid_disks = e->disks, .data_offset = e->data_offset, .member_size = e->member_size,
  };
  struct raid_member *m[6] = { NULL };
  struct raid_array *a = NULL;
  struct tmembers tm;
  uint64_t sizes[6];
  unsigned i;
  int r;

  for (i = 0; i < 6; i++)
    sizes[i] = e->sizes[i] ? e->sizes[i] : M4;
  tmembers_create(&tm, e->disks, sizes, 0);
  for (i = 0; i < e->disks; i++)
    if (!((e->missing >> i) & 1))
      m[i] = tmembers_open(&tm, i, false);
  r = raid_array_new(&cfg, m, &a);
  tassert(r == 0 && a != NULL, "%s: refused: %d %s", e->what, r, raid_get_error());
  if (e->member_size)
    tassert(raid_array_member_size(a) == e->member_size,
                  "%s: member size %" PRIu64 ", expected %" PRIu64, e->what,
                  raid_array_member_size(a), e->member_size);
  raid_array_free(a);
  tmembers_destroy(&tm);
}
END_TEST

/* raid_member_open of a path that does not exist: -ENOENT naming the path. */
START_TEST(test_open_missing_path)
{
  struct raid_member *m = NULL;
  const char *path = "/nonexistent/libraid-test/member0";
  int r = raid_member_open(path, 0, &m);

  assert_error(r, ENOENT, "raid_member_open of a missing path");
  tassert(strstr(raid_get_error(), path) != NULL,
                "message does not name the path: %s", raid_get_error());
}
END_TEST

/* ---- I/O -------------------------------------------------------------------------------- */

static struct tarray io;
static bool io_ready;

static void
io_setup(void)
{
  /* 2 x 20 MiB sparse: a 40 MiB RAID 0, larger than RAID_MAX_REQUEST. */
  static const struct tconf c = { RAID_LEVEL_0, RAID_LAYOUT_DEFAULT, 2, 64 * KiB, 0, 20 * MiB };

  tarray_setup(&io, &c, TA_NO_PATTERN, 0, test_seed_for(1));
  io_ready = true;
}

static void
io_teardown(void)
{
  if (io_ready)
    tarray_teardown(&io);
  io_ready = false;
}

enum io_op { IO_READ, IO_WRITE, IO_DISCARD, IO_ZERO, IO_NOPS };
static const char *const io_names[] = { "read", "write", "discard", "write_zeroes" };

static unsigned cb_calls;
static int cb_result;

static void
cb(void *opaque, int result)
{
  (void)opaque;
  cb_calls++;
  cb_result = result;
}

static int
do_sync(enum io_op op, void *buf, size_t len, uint64_t off)
{
  switch (op) {
  case IO_READ: return raid_pread(io.a, buf, len, off);
  case IO_WRITE: return raid_pwrite(io.a, buf, len, off, 0);
  case IO_DISCARD: return raid_discard(io.a, len, off);
  default: return raid_write_zeroes(io.a, len, off, 0);
  }
}

static int
do_async(enum io_op op, void *buf, size_t len, uint64_t off)
{
  switch (op) {
  case IO_READ: return raid_aio_read(io.q, io.a, buf, len, off, cb, NULL);
  case IO_WRITE: return raid_aio_write(io.q, io.a, buf, len, off, 0, cb, NULL);
  case IO_DISCARD: return raid_aio_discard(io.q, io.a, len, off, cb, NULL);
  default: return raid_aio_write_zeroes(io.q, io.a, len, off, 0, cb, NULL);
  }
}

/* Every operation, synchronous and asynchronous, refuses [OFF, OFF+LEN)
 * with -EINVAL, names the array and BAD (an offset or length); a refused
 * asynchronous request never runs its callback. */
static void
assert_ops_refused(const char *what, unsigned ops, size_t len, uint64_t off, uint64_t bad)
{
  uint8_t *buf = test_alloc(len ? len + 4096 : 4096);
  unsigned op;
  int r;

  memset(buf, 0, len ? len + 4096 : 4096);
  for (op = 0; op < IO_NOPS; op++) {
    char w[160];
    if (!((ops >> op) & 1))
      continue;
    snprintf(w, sizeof w, "%s: %s of %zu bytes at %" PRIu64, what, io_names[op], len, off);
    r = do_sync(op, buf, len, off);
    assert_error(r, EINVAL, w);
    tassert(strstr(raid_get_error(), io.name) != NULL,
                  "%s: message does not name the array %s: %s", w, io.name, raid_get_error());
    tassert(msg_has_bytes_or_sectors(raid_get_error(), bad),
                  "%s: message does not mention %" PRIu64 ": %s", w, bad, raid_get_error());
    cb_calls = 0;
    r = do_async(op, buf, len, off);
    assert_error(r, EINVAL, w);
    tassert(raid_queue_in_flight(io.q) == 0, "%s: refused request is in flight", w);
    r = raid_queue_run(io.q, 0);
    tassert(r == 0 && cb_calls == 0, "%s: refused request ran its callback", w);
  }
  test_free(buf);
}

static void
assert_io_refused(const char *what, size_t len, uint64_t off, uint64_t bad)
{
  assert_ops_refused(what, 0xf, len, off, bad);
}

START_TEST(test_io_out_of_range)
{
  uint64_t size = io.size;

  assert_io_refused("at the end", 512, size, size);
  assert_io_refused("crossing the end", 1024, size - 512, size - 512);
  assert_io_refused("far beyond", 4096, size * 16, size * 16);
  /* offset + length overflows 64 bits: must not wrap into range. */
  assert_io_refused("overflowing", 4096, UINT64_MAX - 2047, UINT64_MAX - 2047);
}
END_TEST

START_TEST(test_io_misaligned)
{
  assert_io_refused("misaligned offset", 512, 100, 100);
  assert_io_refused("misaligned offset near a chunk", 4096, 64 * KiB - 1, 64 * KiB - 1);
  assert_io_refused("misaligned length", 100, 512, 100);
  assert_io_refused("misaligned length 513", 513, 4096, 513);
}
END_TEST

/* Reads and writes longer than RAID_MAX_REQUEST are refused.  Discard and
 * write-zeroes carry no buffer and the library accepts them longer (it
 * splits them); then the whole range, across the split, must read back as
 * zeroes and nothing beyond it may change. */
START_TEST(test_io_too_long)
{
  uint64_t off;

  assert_ops_refused("longer than RAID_MAX_REQUEST", (1u << IO_READ) | (1u << IO_WRITE),
                     RAID_MAX_REQUEST + 512, 0, RAID_MAX_REQUEST + 512);
  for (off = 0; off < io.size; off += 4 * MiB)
    tarray_write(&io, off, MIN(4 * MiB, io.size - off), 0);
  tarray_zero(&io, 4096, RAID_MAX_REQUEST + 512 * 3, true);
  tarray_check_all(&io);
  for (off = 0; off < io.size; off += 4 * MiB)
    tarray_write(&io, off, MIN(4 * MiB, io.size - off), 0);
  tarray_zero(&io, 512, io.size - 1024, false);
  tarray_check_all(&io);
  /* Positive control: exactly RAID_MAX_REQUEST at the end of the array. */
  tarray_write(&io, io.size - RAID_MAX_REQUEST, RAID_MAX_REQUEST, 0);
  tarray_read_check(&io, io.size - RAID_MAX_REQUEST, RAID_MAX_REQUEST);
}
END_TEST

/* A request that ends exactly at the end of the array works (positive
 * control for the range checks). */
START_TEST(test_io_last_sector)
{
  tarray_write(&io, io.size - 512, 512, 0);
  tarray_read_check(&io, io.size - 512, 512);
  tarray_zero(&io, io.size - 512, 512, true);
  tarray_zero(&io, io.size - 4096, 4096, false);
  tarray_read_check(&io, io.size - 64 * KiB, 64 * KiB);
}
END_TEST

/* Zero-length requests: the API does not say; either they succeed as a
 * no-op (and the asynchronous callback runs exactly once with 0) or they
 * are refused with -EINVAL (and the callback never runs).  Nothing may be
 * left in flight and no data may change. */
START_TEST(test_io_zero_length)
{
  uint8_t buf[512];
  unsigned op;
  int r;

  memset(buf, 0, sizeof buf);
  for (op = 0; op < IO_NOPS; op++) {
    r = do_sync(op, buf, 0, 4096);
    tassert(r == 0 || r == -EINVAL, "zero-length sync %s: %d", io_names[op], r);
    if (r == -EINVAL)
      tassert(strstr(raid_get_error(), io.name) != NULL,
                    "zero-length %s refused without naming the array: %s", io_names[op],
                    raid_get_error());
    printf("test-errors: zero-length %s: %s\n", io_names[op], r == 0 ? "accepted" : "-EINVAL");
    cb_calls = 0;
    cb_result = 1;
    r = do_async(op, buf, 0, 4096);
    tassert(r == 0 || r == -EINVAL, "zero-length async %s: %d", io_names[op], r);
    while (raid_queue_in_flight(io.q) > 0)
      ck_assert(raid_queue_run(io.q, 1) >= 0);
    raid_queue_run(io.q, 0);
    if (r == 0)
      tassert(cb_calls == 1 && cb_result == 0,
                    "zero-length async %s accepted: callback ran %u times, result %d",
                    io_names[op], cb_calls, cb_result);
    else
      tassert(cb_calls == 0, "zero-length async %s refused but ran its callback",
                    io_names[op]);
  }
  tarray_check_all(&io);
}
END_TEST

/* Member slots out of range. */
START_TEST(test_bad_slot)
{
  int r;

  r = raid_array_member_state(io.a, io.c.disks);
  tassert(r == -EINVAL, "raid_array_member_state(%u) = %d", io.c.disks, r);
  r = raid_array_fail_member(io.a, io.c.disks);
  assert_error(r, EINVAL, "raid_array_fail_member out of range");
  tassert(strstr(raid_get_error(), io.name) != NULL,
                "message does not name the array: %s", raid_get_error());
  tassert(raid_array_member(io.a, io.c.disks) == NULL,
                "raid_array_member out of range is not NULL");
  tassert(raid_array_degraded(io.a) == 0, "array degraded by a refused call");
}
END_TEST

/* Queue sizes beyond what io_uring supports are refused. */
START_TEST(test_queue_too_big)
{
  struct raid_queue *q = NULL;
  int r = raid_queue_new(1u << 20, &q);

  assert_error(r, EINVAL, "raid_queue_new with 2^20 entries");
  tassert(msg_has_value(raid_get_error(), 1 << 20), "message: %s", raid_get_error());
}
END_TEST

/* ---- out of memory ------------------------------------------------------------ */

static const struct tconf oom_confs[] = {
  { RAID_LEVEL_0, RAID_LAYOUT_DEFAULT, 3, 64 * KiB, 0, 6 * MiB },
  { RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, 0, 0, 6 * MiB },
  { RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 4, 64 * KiB, 0, 6 * MiB },
  { RAID_LEVEL_5, RAID_LAYOUT_RIGHT_ASYMMETRIC, 3, 4 * KiB, 0, 6 * MiB },
  { RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 4, 64 * KiB, 0, 6 * MiB },
};

#define OOM_BATCH 16
#define OOM_UNIT 512u

struct oom_op {
  struct tarray *t;
  uint8_t *known;                /* per sector: the shadow holds it */
  int kind;                      /* 0 write, 1 read, 2 zero, 3 flush */
  uint64_t off;
  size_t len;
  uint8_t *buf;
  bool done;
  int res;
};

static unsigned oom_ok, oom_nomem;

static void
oom_done(void *opaque, int res)
{
  struct oom_op *o = opaque;

  o->done = true;
  o->res = res;
}

/* The op is over with RES: check it, and keep the shadow and the map of
 * what it knows. */
static void
oom_account(struct oom_op *o, int res)
{
  struct tarray *t = o->t;
  uint64_t s;

  ck_assert_msg(res == 0 || res == -ENOMEM, "%s: %s of %zu bytes at %" PRIu64
                " failed with %s, not ENOMEM", t->desc,
                o->kind == 0 ? "write" : o->kind == 1 ? "read" : o->kind == 2
                ? "write zeroes" : "flush", o->len, o->off, strerror(-res));
  if (res < 0) {
    oom_nomem++;
    if (o->kind == 0 || o->kind == 2)   /* what it touched is unknown now */
      memset(o->known + o->off / OOM_UNIT, 0, o->len / OOM_UNIT);
    return;
  }
  oom_ok++;
  switch (o->kind) {
  case 0:
  case 2:
    if (o->kind == 0)
      memcpy(t->shadow + o->off, o->buf, o->len);
    else
      memset(t->shadow + o->off, 0, o->len);
    memset(o->known + o->off / OOM_UNIT, 1, o->len / OOM_UNIT);
    break;
  case 1:
    for (s = 0; s < o->len / OOM_UNIT; s++)
      if (o->known[o->off / OOM_UNIT + s])
        tarray_compare(t, o->buf + s * OOM_UNIT, o->off + s * OOM_UNIT, OOM_UNIT,
                       "read while allocations failed");
    break;
  }
}

START_TEST(test_out_of_memory)
{
  const struct tconf *c = &oom_confs[_i];
  struct tarray t;
  struct oom_op ops[OOM_BATCH];
  unsigned rounds = test_scale(60), round, k, n;
  uint64_t sectors, s;
  uint8_t *known;
  int r;

  tarray_setup(&t, c, 0, 0, test_seed_for(400 + _i));
  sectors = t.size / OOM_UNIT;
  known = calloc(sectors, 1);
  ck_assert_ptr_nonnull(known);
  memset(known, 1, sectors);
  oom_ok = oom_nomem = 0;
  for (round = 0; round < rounds; round++) {
    /* A batch of non-overlapping requests, all in flight at once, while
     * one allocation in five fails. */
    for (n = 0; n < OOM_BATCH; n++) {
      struct oom_op *o = &ops[n];

      memset(o, 0, sizeof *o);
      o->t = &t;
      o->known = known;
      o->kind = (int)rng_below(&t.rng, 10);
      o->kind = o->kind < 5 ? 0 : o->kind < 8 ? 1 : o->kind < 9 ? 2 : 3;
      if (o->kind != 3) {
        tarray_random_range(&t, &o->off, &o->len);
        for (k = 0; k < n; k++)
          if (ops[k].kind != 3 && ops[k].off < o->off + o->len &&
              o->off < ops[k].off + ops[k].len)
            break;
        if (k < n) {            /* overlaps: make it a flush */
          o->kind = 3;
          o->off = o->len = 0;
        }
      }
      if (o->kind == 0 || o->kind == 1)
        o->buf = test_alloc(o->len);
      if (o->kind == 0)
        tarray_make_data(&t, o->buf, o->off, o->len);
    }
    mem_fail_every(5);
    for (n = 0; n < OOM_BATCH; n++) {
      struct oom_op *o = &ops[n];

      switch (o->kind) {
      case 0:
        r = raid_aio_write(t.q, t.a, o->buf, o->len, o->off, 0, oom_done, o);
        break;
      case 1:
        r = raid_aio_read(t.q, t.a, o->buf, o->len, o->off, oom_done, o);
        break;
      case 2:
        r = raid_aio_write_zeroes(t.q, t.a, o->len, o->off, 0, oom_done, o);
        break;
      default:
        r = raid_aio_flush(t.q, t.a, oom_done, o);
        break;
      }
      if (r < 0) {              /* refused at once: never started */
        ck_assert_int_eq(r, -ENOMEM);
        o->done = true;
        o->res = 0;
        o->kind = 3;            /* nothing to account for */
        oom_nomem++;
      }
    }
    while (raid_queue_in_flight(t.q) > 0)
      ck_assert_int_ge(raid_queue_run(t.q, 1), 0);
    mem_fail_every(0);
    for (n = 0; n < OOM_BATCH; n++) {
      ck_assert(ops[n].done);
      oom_account(&ops[n], ops[n].res);
      test_free(ops[n].buf);
    }
  }
  ck_assert_msg(oom_ok > 0 && oom_nomem > 0, "%s: %u requests succeeded and %u "
                "ran out of memory: the injector did not bite", t.desc, oom_ok,
                oom_nomem);
  /* Rewrite what failed writes touched, then everything must agree. */
  for (s = 0; s < sectors; s++)
    if (!known[s]) {
      uint64_t e = s;

      while (e < sectors && !known[e] && (e - s) * OOM_UNIT < RAID_MAX_REQUEST)
        e++;
      tarray_write(&t, s * OOM_UNIT, (e - s) * OOM_UNIT, 0);
      memset(known + s, 1, e - s);
      s = e - 1;
    }
  tarray_check_all(&t);
  tarray_check_placement(&t);
  test_verbose("%s: %u requests done, %u out of memory", t.desc, oom_ok, oom_nomem);
  free(known);
  tarray_teardown(&t);
}
END_TEST

int
main(void)
{
  Suite *s;
  TCase *tc;

  /* First: it forks a helper, which should not inherit allocations. */
  test_init("test-errors");
  s = suite_create("errors");
  tc = test_tcase("assembly");
  tcase_add_loop_test(tc, test_assembly, 0, ARRAY_SIZE(ecases));
  tcase_add_loop_test(tc, test_assembly_ok, 0, ARRAY_SIZE(okcases));
  tcase_add_test(tc, test_open_missing_path);
  tcase_add_test(tc, test_queue_too_big);
  suite_add_tcase(s, tc);
  tc = test_tcase("io");
  tcase_add_checked_fixture(tc, io_setup, io_teardown);
  tcase_add_test(tc, test_io_out_of_range);
  tcase_add_test(tc, test_io_misaligned);
  tcase_add_test(tc, test_io_too_long);
  tcase_add_test(tc, test_io_last_sector);
  tcase_add_test(tc, test_io_zero_length);
  tcase_add_test(tc, test_bad_slot);
  suite_add_tcase(s, tc);
  tc = test_tcase("memory");
  tcase_add_loop_test(tc, test_out_of_memory, 0, ARRAY_SIZE(oom_confs));
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
