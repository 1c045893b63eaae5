/* Shared helpers for libraid's Check tests (see testlib.h): the test
 * array.  Members with guard patterns around the data, the array, an
 * in-memory shadow copy, sector tags that name misplaced data, and a
 * random workload (synchronous and queued) that compares every read with
 * the shadow.
 */
#include <config.h>

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "testlib.h"
#include "testlib-private.h"

#define TAG_MAGIC UINT64_C(0x5241494454414721)       /* "RAIDTAG!" */
#define TAG_CHECK UINT64_C(0x9e3779b97f4a7c15)
#define GUARD_MAGIC UINT64_C(0x4755415244475244)     /* "GUARDGRD" */

#ifndef DIV_ROUND_UP
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#endif

/* ---- sector tags and the guard pattern ------------------------------------------------- */

static void
tag_sector(uint8_t *p, uint64_t sector, uint64_t gen)
{
  uint64_t v[3] = { TAG_MAGIC ^ sector, gen, TAG_CHECK ^ sector ^ gen };

  memcpy(p, v, sizeof v);
}

void
guard_fill(uint8_t *buf, unsigned member, uint64_t off, size_t len)
{
  size_t i;

  /* Offsets are sector aligned. */
  for (i = 0; i < len; i += 8) {
    uint64_t v = GUARD_MAGIC ^ ((uint64_t)member << 56) ^ ((off + i) >> 3);
    memcpy(buf + i, &v, 8);
  }
}

const char *
tag_str(const void *sector, char *buf, size_t len)
{
  uint64_t v[3];
  const uint8_t *p = sector;
  size_t i;

  memcpy(v, p, sizeof v);
  if ((v[2] ^ v[1] ^ TAG_CHECK) == (v[0] ^ TAG_MAGIC)) {
    snprintf(buf, len, "data of array sector %" PRIu64 " (write %" PRIu64 ")",
             v[0] ^ TAG_MAGIC, v[1]);
    return buf;
  }
  for (i = 0; i < 512 && p[i] == 0; i++)
    ;
  if (i == 512)
    snprintf(buf, len, "zeroes");
  else if ((v[0] ^ GUARD_MAGIC) >> 56 < RAID_MAX_MEMBERS &&
           (((v[0] ^ GUARD_MAGIC) << 8) >> 8) % 64 == 0)
    snprintf(buf, len, "guard pattern of member %u at %" PRIu64,
             (unsigned)((v[0] ^ GUARD_MAGIC) >> 56),
             (((v[0] ^ GUARD_MAGIC) << 8) >> 8) << 3);
  else if (p[0] == 0xee && p[1] == 0xee && p[31] == 0xee)
    snprintf(buf, len, "the read buffer's fill (never written)");
  else
    snprintf(buf, len, "unrecognised bytes %02x %02x %02x %02x...",
             p[0], p[1], p[2], p[3]);
  return buf;
}

/* ---- a test array ------------------------------------------------------------------------ */

static void
write_all(const char *path, int fd, const void *buf, size_t len, uint64_t off)
{
  while (len) {
    ssize_t r = pwrite(fd, buf, len, off);
    tassert(r > 0, "pwrite %s at %" PRIu64 ": %m", path, off);
    buf = (const uint8_t *)buf + r;
    len -= r;
    off += r;
  }
}

/* Drop FD's clean cached pages (a block device's buffer cache too). */
void
drop_cache(int fd)
{
  struct stat st;

  if (fstat(fd, &st) == 0 && S_ISBLK(st.st_mode))
    ioctl(fd, BLKFLSBUF, 0);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

void
read_all(const char *path, int fd, void *buf, size_t len, uint64_t off)
{
  while (len) {
    ssize_t r = pread(fd, buf, len, off);
    tassert(r > 0, "pread %s at %" PRIu64 ": %s", path, off,
                  r == 0 ? "end of file" : strerror(errno));
    buf = (uint8_t *)buf + r;
    len -= r;
    off += r;
  }
}

/* Fill [0, data_offset) and everything after the largest possible data
 * area of every member with the guard pattern. */
static void
guard_write(struct tarray *t)
{
  uint64_t tail = t->c.data_offset + tconf_member_size(&t->c, 512);
  unsigned i;

  for (i = 0; i < t->c.disks; i++) {
    int fd = open(t->tm.path[i], O_RDWR | O_CLOEXEC);
    uint8_t *buf;
    tassert(fd >= 0, "open %s: %m", t->tm.path[i]);
    if (t->c.data_offset) {
      buf = test_alloc(t->c.data_offset);
      guard_fill(buf, i, 0, t->c.data_offset);
      write_all(t->tm.path[i], fd, buf, t->c.data_offset, 0);
      test_free(buf);
    }
    if (tail < t->tm.size[i]) {
      buf = test_alloc(t->tm.size[i] - tail);
      guard_fill(buf, i, tail, t->tm.size[i] - tail);
      write_all(t->tm.path[i], fd, buf, t->tm.size[i] - tail, tail);
      test_free(buf);
    }
    /* No fsync: the kernel writes back cached pages of a range before
     * O_DIRECT I/O to it, and the library should never touch it anyway. */
    close(fd);
  }
}

static struct raid_config
tarray_config(const struct tarray *t)
{
  struct raid_config cfg = {
    .name = t->name,
    .level = t->c.level,
    .layout = t->c.layout,
    .chunk_size = t->c.chunk,
    .raid_disks = t->c.disks,
    .data_offset = t->c.data_offset,
    .member_size = 0,
  };
  return cfg;
}

void
tarray_assemble(struct tarray *t)
{
  struct raid_config cfg = tarray_config(t);
  unsigned i, lost = 0;
  int r;

  for (i = 0; i < t->c.disks; i++) {
    t->m[i] = ((t->missing >> i) & 1) ? NULL
      : tmembers_open(&t->tm, i, t->flags & TA_FAULT);
    lost += (t->missing >> i) & 1;
  }
  r = raid_array_new(&cfg, t->m, &t->a);
  tassert(r == 0 && t->a != NULL, "%s: raid_array_new: %d %s",
                t->desc, r, raid_get_error());

  /* What the array reports about itself. */
  tassert(strcmp(raid_array_name(t->a), t->name) == 0, "%s: name %s",
                t->desc, raid_array_name(t->a));
  tassert(raid_array_level(t->a) == t->c.level, "%s: level %d", t->desc,
                raid_array_level(t->a));
  tassert(raid_array_raid_disks(t->a) == t->c.disks, "%s: raid_disks %u",
                t->desc, raid_array_raid_disks(t->a));
  if (t->c.level == RAID_LEVEL_5 || t->c.level == RAID_LEVEL_10)
    tassert(raid_array_layout(t->a) == tconf_layout(&t->c),
                  "%s: layout %d, expected %d", t->desc, raid_array_layout(t->a),
                  tconf_layout(&t->c));
  if (t->c.level != RAID_LEVEL_1)
    tassert(raid_array_chunk_size(t->a) == tconf_chunk(&t->c),
                  "%s: chunk %u, expected %u", t->desc, raid_array_chunk_size(t->a),
                  tconf_chunk(&t->c));

  t->member_size = raid_array_member_size(t->a);
  if (t->c.level == RAID_LEVEL_1)
    tassert(t->member_size == tconf_member_size(&t->c, 512) ||
                  t->member_size == tconf_member_size(&t->c, 4096),
                  "%s: member size %" PRIu64 ", expected %" PRIu64 " or %" PRIu64,
                  t->desc, t->member_size, tconf_member_size(&t->c, 512),
                  tconf_member_size(&t->c, 4096));
  else
    tassert(t->member_size == tconf_member_size(&t->c, 0),
                  "%s: member size %" PRIu64 ", expected %" PRIu64,
                  t->desc, t->member_size, tconf_member_size(&t->c, 0));
  tassert(raid_array_size(t->a) == tconf_array_size(&t->c, t->member_size),
                "%s: array size %" PRIu64 ", expected %" PRIu64 " for member size %" PRIu64,
                t->desc, raid_array_size(t->a),
                tconf_array_size(&t->c, t->member_size), t->member_size);
  if (t->c.level == RAID_LEVEL_0 || t->c.level == RAID_LEVEL_5)
    tassert(raid_array_stripe_width(t->a) ==
                  (uint64_t)tconf_chunk(&t->c) * (t->c.disks - (t->c.level == 5)),
                  "%s: stripe width %" PRIu64, t->desc, raid_array_stripe_width(t->a));
  tassert(raid_array_logical_block_size(t->a) == 512,
                "%s: logical block size %u", t->desc,
                raid_array_logical_block_size(t->a));

  for (i = 0; i < t->c.disks; i++) {
    int want = ((t->missing >> i) & 1) ? RAID_MEMBER_MISSING : RAID_MEMBER_IN_SYNC;
    tassert(raid_array_member_state(t->a, i) == want,
                  "%s: member %u state %d, expected %d", t->desc, i,
                  raid_array_member_state(t->a, i), want);
    tassert(raid_array_member(t->a, i) == t->m[i],
                  "%s: raid_array_member(%u) is not the member given", t->desc, i);
  }
  tassert(raid_array_degraded(t->a) == lost, "%s: degraded %u, expected %u",
                t->desc, raid_array_degraded(t->a), lost);
  tassert(raid_array_is_failed(t->a) == 0, "%s: failed at assembly", t->desc);
}

void
tarray_setup(struct tarray *t, const struct tconf *c, unsigned flags,
             uint64_t missing, uint64_t s)
{
  char buf[200];
  int r;

  memset(t, 0, sizeof *t);
  t->c = *c;
  t->flags = flags;
  t->missing = t->lost = missing;
  rng_seed(&t->rng, s);
  snprintf(t->name, sizeof t->name, "md-test%u", (unsigned)(s % 1000));
  snprintf(t->desc, sizeof t->desc, "[%s seed=0x%016" PRIx64 "%s]",
           tconf_str(c, buf, sizeof buf), s, test_loop_mode() ? " loop" : "");
  if (missing) {
    size_t l = strlen(t->desc) - 1;
    snprintf(t->desc + l, sizeof t->desc - l, " missing=0x%" PRIx64 "]", missing);
  }
  test_verbose("%s: setup", t->desc);
  tmembers_create(&t->tm, c->disks, NULL, c->member_bytes);
  if (!(flags & TA_NO_PATTERN))
    guard_write(t);
  test_verbose("members created, guard written");
  tarray_assemble(t);
  test_verbose("assembled");
  t->size = raid_array_size(t->a);
  t->rbuf = test_alloc(RBUF_SIZE);
  t->shadow = calloc(1, t->size);
  tassert(t->shadow != NULL, "out of memory for a %" PRIu64 " byte shadow", t->size);
  r = raid_queue_new(64, &t->q);
  tassert(r == 0, "raid_queue_new: %d %s", r, raid_get_error());
}

void
tarray_close_array(struct tarray *t)
{
  unsigned i;

  if (t->a)
    raid_array_free(t->a);
  t->a = NULL;
  for (i = 0; i < RAID_MAX_MEMBERS; i++)
    t->m[i] = NULL;
}

void
tarray_teardown(struct tarray *t)
{
  if (t->q)
    raid_queue_free(t->q);
  t->q = NULL;
  tarray_close_array(t);
  test_verbose("closed");
  tmembers_destroy(&t->tm);
  test_verbose("members removed");
  free(t->shadow);
  t->shadow = NULL;
  test_free(t->rbuf);
  t->rbuf = NULL;
}

void
tag_data(struct rng *r, void *buf, uint64_t off, size_t len, uint64_t gen)
{
  uint8_t *p = buf;
  size_t i;

  rng_fill(r, buf, len);
  for (i = 0; i < len; i += 512)
    tag_sector(p + i, (off + i) / 512, gen);
}

void
tarray_make_data(struct tarray *t, void *buf, uint64_t off, size_t len)
{
  tag_data(&t->rng, buf, off, len, ++t->gen);
}

/* Bytes of a "row": the unit whose crossing matters (data stripe). */
static uint64_t
row_bytes(const struct tconf *c)
{
  uint64_t chunk = tconf_chunk(c);

  switch (c->level) {
  case RAID_LEVEL_0: return chunk * c->disks;
  case RAID_LEVEL_5: return chunk * (c->disks - 1);
  case RAID_LEVEL_10: return chunk * c->disks;
  default: return 64 * KiB;
  }
}

void
tarray_random_range(struct tarray *t, uint64_t *off, size_t *len)
{
  struct rng *r = &t->rng;
  uint64_t size = t->size, chunk = tconf_chunk(&t->c), row = row_bytes(&t->c);
  uint64_t max = MIN(size, (uint64_t)RAID_MAX_REQUEST);
  uint64_t l, o;
  unsigned p = (unsigned)rng_below(r, 100);

  if (p < 78)                   /* small: 512 bytes .. 64 KiB */
    l = rng_between(r, 1, 128) * 512;
  else if (p < 90)              /* medium: up to 512 KiB */
    l = rng_between(r, 129, 1024) * 512;
  else if (p < 93)              /* large: up to 2 MiB */
    l = rng_between(r, 1025, 4096) * 512;
  else if (p < 97)              /* whole rows, row aligned */
    l = row * rng_between(r, 1, 2);
  else                          /* crossing rows at odd places */
    l = row + rng_between(r, 1, 2 * chunk / 512) * 512;
  if (l > max)
    l = max / 512 * 512;

  if (p >= 93 && p < 97)
    o = rng_below(r, (size - l) / row + 1) * row;
  else {
    switch (rng_below(r, 4)) {
    case 0:                       /* ends just past a chunk boundary */
      o = rng_below(r, size / chunk) * chunk;
      o = o >= l / 2 ? o - l / 2 / 512 * 512 : 0;
      break;
    case 1:                       /* 4 KiB aligned */
      o = rng_below(r, (size - l) / 4096 + 1) * 4096;
      break;
    default:                      /* any sector */
      o = rng_below(r, (size - l) / 512 + 1) * 512;
    }
    if (o + l > size)
      o = size - l;
  }
  *off = o;
  *len = (size_t)l;
}

bool
tarray_diff(const struct tarray *t, const void *buf, uint64_t off, size_t len,
            const char *what, char *msg, size_t msglen)
{
  const uint8_t *p = buf, *s = t->shadow + off;
  size_t i, bad = 0, first = SIZE_MAX;
  char got[128], want[128], where[256];
  unsigned disks[RAID_MAX_MEMBERS], n, k;
  uint64_t msec[RAID_MAX_MEMBERS];
  int w;

  if (memcmp(p, s, len) == 0)
    return false;
  for (i = 0; i < len; i += 512)
    if (memcmp(p + i, s + i, MIN((size_t)512, len - i)) != 0) {
      if (first == SIZE_MAX)
        first = i;
      bad++;
    }
  n = ref_locate(&t->c, (off + first) / 512, disks, msec);
  w = 0;
  for (k = 0; k < n && w < (int)sizeof where - 1; k++)
    w += snprintf(where + w, sizeof where - w, "%smember %u sector %" PRIu64,
                  k ? ", " : "", disks[k], msec[k] + t->c.data_offset / 512);
  for (i = first; i < len && p[i] == s[i]; i++)
    ;
  snprintf(msg, msglen, "%s: %s at offset %" PRIu64 " length %zu: %zu of %zu sectors "
           "differ; first at array offset %" PRIu64 " (md puts it on %s), byte %zu "
           "of the sector: read %s, expected %s",
           t->desc, what, off, len, bad, DIV_ROUND_UP(len, 512), off + first,
           where, i - first, tag_str(p + first, got, sizeof got),
           tag_str(s + first, want, sizeof want));
  return true;
}

void
tarray_compare(struct tarray *t, const void *buf, uint64_t off, size_t len,
               const char *what)
{
  char msg[1024];

  if (tarray_diff(t, buf, off, len, what, msg, sizeof msg))
    ck_abort_msg("%s", msg);
}

void
tarray_write(struct tarray *t, uint64_t off, size_t len, unsigned flags)
{
  uint8_t *buf = test_alloc(len);
  int r;

  tarray_make_data(t, buf, off, len);
  r = raid_pwrite(t->a, buf, len, off, flags);
  tassert(r == 0, "%s: raid_pwrite(offset %" PRIu64 ", length %zu%s) = %d: %s",
                t->desc, off, len, flags & RAID_REQ_FUA ? ", FUA" : "", r,
                raid_get_error());
  memcpy(t->shadow + off, buf, len);
  test_free(buf);
  t->nwrite++;
}

/* Mark BUF so that sectors a read leaves alone show up: the first bytes of
 * every sector, or (under valgrind, which does not see io_uring filling
 * buffers) every byte. */
static void
prefill(uint8_t *buf, size_t len)
{
  size_t i;

  if (test_under_valgrind()) {
    memset(buf, 0xee, len);
    return;
  }
  for (i = 0; i < len; i += 512)
    memset(buf + i, 0xee, 32);
}

void
tarray_read_check(struct tarray *t, uint64_t off, size_t len)
{
  uint8_t *buf = len <= RBUF_SIZE ? t->rbuf : test_alloc(len);
  int r;

  prefill(buf, len);
  r = raid_pread(t->a, buf, len, off);
  tassert(r == 0, "%s: raid_pread(offset %" PRIu64 ", length %zu) = %d: %s",
                t->desc, off, len, r, raid_get_error());
  tarray_compare(t, buf, off, len, "raid_pread");
  if (buf != t->rbuf)
    test_free(buf);
  t->nread++;
}

void
tarray_zero(struct tarray *t, uint64_t off, size_t len, bool discard)
{
  int r = discard ? raid_discard(t->a, len, off)
    : raid_write_zeroes(t->a, len, off, 0);

  tassert(r == 0, "%s: raid_%s(offset %" PRIu64 ", length %zu) = %d: %s",
                t->desc, discard ? "discard" : "write_zeroes", off, len, r,
                raid_get_error());
  memset(t->shadow + off, 0, len);
  t->nother++;
}

void
tarray_check_all(struct tarray *t)
{
  uint64_t off;
  size_t step = 4 * MiB;

  for (off = 0; off < t->size; off += step)
    tarray_read_check(t, off, (size_t)MIN((uint64_t)step, t->size - off));
  test_verbose("read all %" PRIu64 " bytes", t->size);
}

void
tarray_check_sample(struct tarray *t, unsigned n)
{
  uint64_t off;
  size_t len;
  unsigned i;

  tarray_read_check(t, 0, (size_t)MIN(64 * KiB, t->size));
  tarray_read_check(t, t->size - MIN(64 * KiB, t->size), (size_t)MIN(64 * KiB, t->size));
  for (i = 0; i < n; i++) {
    tarray_random_range(t, &off, &len);
    tarray_read_check(t, off, len);
  }
}

/* ---- the random workload ------------------------------------------------------------------ */

enum op { OP_WRITE, OP_WRITE_FUA, OP_READ, OP_DISCARD, OP_ZERO, OP_FLUSH };

static const char *const op_names[] = {
  "write", "FUA write", "read", "discard", "write-zeroes", "flush"
};

static enum op
random_op(struct rng *r)
{
  unsigned p = (unsigned)rng_below(r, 100);

  if (p < 42) return OP_WRITE;
  if (p < 45) return OP_WRITE_FUA;
  if (p < 90) return OP_READ;
  if (p < 94) return OP_DISCARD;
  if (p < 99) return OP_ZERO;
  return OP_FLUSH;
}

static double
now_s(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
sync_op(struct tarray *t, enum op op, uint64_t off, size_t len)
{
  int r;

  switch (op) {
  case OP_WRITE: tarray_write(t, off, len, 0); break;
  case OP_WRITE_FUA: tarray_write(t, off, len, RAID_REQ_FUA); break;
  case OP_READ: tarray_read_check(t, off, len); break;
  case OP_DISCARD: tarray_zero(t, off, len, true); break;
  case OP_ZERO: tarray_zero(t, off, len, false); break;
  case OP_FLUSH:
    r = raid_flush(t->a);
    tassert(r == 0, "%s: raid_flush = %d: %s", t->desc, r, raid_get_error());
    t->nother++;
    break;
  }
}

/* An asynchronous request of the workload. */
struct aop {
  double t0;
  bool in_use;
  enum op op;
  uint64_t off;
  size_t len;
  uint8_t *buf;
  int result;
  unsigned calls;
};

static void
aop_done(void *opaque, int result)
{
  struct aop *o = opaque;

  o->result = result;
  o->calls++;
}

#define MAX_DEPTH 16

/* Submit O (op, off, len filled in). */
static void
aop_submit(struct tarray *t, struct aop *o)
{
  int r;

  o->calls = 0;
  o->result = 1;
  o->buf = NULL;
  if (o->op == OP_WRITE || o->op == OP_WRITE_FUA || o->op == OP_READ)
    o->buf = test_alloc(o->len);
  switch (o->op) {
  case OP_WRITE:
  case OP_WRITE_FUA:
    tarray_make_data(t, o->buf, o->off, o->len);
    r = raid_aio_write(t->q, t->a, o->buf, o->len, o->off,
                       o->op == OP_WRITE_FUA ? RAID_REQ_FUA : 0, aop_done, o);
    break;
  case OP_READ:
    prefill(o->buf, o->len);
    r = raid_aio_read(t->q, t->a, o->buf, o->len, o->off, aop_done, o);
    break;
  case OP_DISCARD:
    r = raid_aio_discard(t->q, t->a, o->len, o->off, aop_done, o);
    break;
  case OP_ZERO:
    r = raid_aio_write_zeroes(t->q, t->a, o->len, o->off, 0, aop_done, o);
    break;
  default:
    r = raid_aio_flush(t->q, t->a, aop_done, o);
    break;
  }
  tassert(r == 0, "%s: raid_aio %s (offset %" PRIu64 ", length %zu) refused: %d %s",
          t->desc, op_names[o->op], o->off, o->len, r, raid_get_error());
  o->in_use = true;
  o->t0 = now_s();
}

/* O completed: check it ran its callback once, successfully, and bring
 * the shadow up to date (writes) or compare with it (reads).  Nothing in
 * flight overlaps O, so the order of completions does not matter. */
static double lat_sum[6];
static unsigned lat_n[6];

static void
aop_finish(struct tarray *t, struct aop *o)
{
  lat_sum[o->op] += now_s() - o->t0;
  lat_n[o->op]++;
  tassert(o->calls == 1, "%s: completion of %s ran %u times", t->desc,
          op_names[o->op], o->calls);
  tassert(o->result == 0, "%s: async %s (offset %" PRIu64 ", length %zu) failed: %d %s",
          t->desc, op_names[o->op], o->off, o->len, o->result,
          o->result == 1 ? "" : strerror(-o->result));
  switch (o->op) {
  case OP_WRITE: case OP_WRITE_FUA:
    memcpy(t->shadow + o->off, o->buf, o->len);
    t->nwrite++;
    break;
  case OP_DISCARD: case OP_ZERO:
    memset(t->shadow + o->off, 0, o->len);
    t->nother++;
    break;
  case OP_READ:
    tarray_compare(t, o->buf, o->off, o->len, "raid_aio_read");
    t->nread++;
    break;
  default:
    t->nother++;
    break;
  }
  test_free(o->buf);
  o->buf = NULL;
  o->in_use = false;
}

void
tarray_random_ops(struct tarray *t, unsigned nops)
{
  struct aop ops[MAX_DEPTH];
  unsigned submitted = 0, in_flight = 0, depth = 1, i;
  int r;

  memset(ops, 0, sizeof ops);
  while (submitted < nops || in_flight > 0) {
    /* Every 64 requests, a new queue depth: 1, 4 or 16. */
    if (submitted % 64 == 0)
      depth = (unsigned[]){ 1, 4, MAX_DEPTH, MAX_DEPTH }[rng_below(&t->rng, 4)];

    if (submitted < nops && in_flight == 0 && rng_percent(&t->rng, 10)) {
      /* The synchronous wrappers, with nothing else in flight. */
      uint64_t off;
      size_t len;
      enum op op = random_op(&t->rng);
      tarray_random_range(t, &off, &len);
      sync_op(t, op, off, len);
      submitted++;
      continue;
    }
    if (submitted < nops && in_flight < depth) {
      /* Another request on a range nothing in flight touches. */
      struct aop *o = NULL;
      bool overlap = true;
      int tries;

      for (i = 0; i < MAX_DEPTH && o == NULL; i++)
        if (!ops[i].in_use)
          o = &ops[i];
      o->op = random_op(&t->rng);
      for (tries = 0; tries < 8 && overlap; tries++) {
        tarray_random_range(t, &o->off, &o->len);
        overlap = false;
        for (i = 0; i < MAX_DEPTH && o->op != OP_FLUSH; i++)
          if (ops[i].in_use && ops[i].op != OP_FLUSH && o->off < ops[i].off + ops[i].len &&
              ops[i].off < o->off + o->len)
            overlap = true;
      }
      if (!overlap || in_flight == 0) {
        tassert(!overlap, "%s: no free range", t->desc);
        aop_submit(t, o);
        submitted++;
        in_flight++;
        continue;
      }
    }
    /* Wait for at least one completion. */
    r = raid_queue_run(t->q, 1);
    tassert(r >= 0, "%s: raid_queue_run: %d %s", t->desc, r, raid_get_error());
    for (i = 0; i < MAX_DEPTH; i++)
      if (ops[i].in_use && ops[i].calls) {
        aop_finish(t, &ops[i]);
        in_flight--;
      }
    tassert(raid_queue_in_flight(t->q) == in_flight,
            "%s: raid_queue_in_flight %u, %u requests outstanding", t->desc,
            raid_queue_in_flight(t->q), in_flight);
  }
  test_verbose("%u random ops; mean latency ms: write %.2f (%u) FUA %.2f (%u) read %.2f (%u) "
               "discard %.2f (%u) zero %.2f (%u) flush %.2f (%u)", nops,
               lat_n[0] ? lat_sum[0] * 1e3 / lat_n[0] : 0, lat_n[0],
               lat_n[1] ? lat_sum[1] * 1e3 / lat_n[1] : 0, lat_n[1],
               lat_n[2] ? lat_sum[2] * 1e3 / lat_n[2] : 0, lat_n[2],
               lat_n[3] ? lat_sum[3] * 1e3 / lat_n[3] : 0, lat_n[3],
               lat_n[4] ? lat_sum[4] * 1e3 / lat_n[4] : 0, lat_n[4],
               lat_n[5] ? lat_sum[5] * 1e3 / lat_n[5] : 0, lat_n[5]);
  memset(lat_sum, 0, sizeof lat_sum);
  memset(lat_n, 0, sizeof lat_n);
}

/* ---- a user while the array changes shape ---------------------------------------- */

static void *
tuser_main(void *arg)
{
  struct tuser *u = arg;
  struct rng r;
  uint8_t *buf = test_alloc(256 << 10);

  rng_seed(&r, test_seed_for(7));
  while (!atomic_load(&u->stop) && u->err[0] == 0) {
    uint64_t len = rng_between(&r, 1, 64) * 4096;
    uint64_t off = rng_below(&r, (u->size - len) / 4096 + 1) * 4096;

    if (u->flush_pct && rng_percent(&r, u->flush_pct)) {
      if (raid_flush(u->a) != 0)
        snprintf(u->err, sizeof u->err, "flush: %s", raid_get_error());
      u->flushes++;
    }
    else if (rng_percent(&r, 50)) {
      rng_fill(&r, buf, len);
      if (raid_pwrite(u->a, buf, len, off, 0) != 0)
        snprintf(u->err, sizeof u->err, "write: %s", raid_get_error());
      memcpy(u->shadow + off, buf, len);
      u->writes++;
    }
    else {
      if (raid_pread(u->a, buf, len, off) != 0)
        snprintf(u->err, sizeof u->err, "read: %s", raid_get_error());
      else if (memcmp(buf, u->shadow + off, len) != 0)
        snprintf(u->err, sizeof u->err, "read of %" PRIu64 " bytes at %" PRIu64
                 " differs from what was written", len, off);
      u->reads++;
    }
  }
  test_free(buf);
  return NULL;
}

void
tuser_start(struct tuser *u)
{
  atomic_store(&u->stop, false);
  ck_assert_int_eq(pthread_create(&u->thread, NULL, tuser_main, u), 0);
}

void
tuser_stop(struct tuser *u)
{
  atomic_store(&u->stop, true);
  pthread_join(u->thread, NULL);
  ck_assert_msg(u->err[0] == 0, "%s", u->err);
  ck_assert_uint_gt(u->writes, 0);
  ck_assert_uint_gt(u->reads, 0);
}

void
tcheck_shadow(struct raid_array *a, const uint8_t *shadow, uint64_t size)
{
  uint8_t *buf = test_alloc(1 << 20);
  uint64_t off;

  for (off = 0; off < size; off += 1 << 20) {
    size_t len = (size_t)MIN(UINT64_C(1) << 20, size - off), i;

    ck_assert_msg(raid_pread(a, buf, len, off) == 0, "%s", raid_get_error());
    for (i = 0; i < len && buf[i] == shadow[off + i]; i++)
      ;
    ck_assert_msg(i == len, "array byte %" PRIu64 " differs (%s)", off + i,
                  buf[i] == 0 ? "zero" : "not zero");
  }
  test_free(buf);
}

uint64_t
tscrub(struct raid_array *a)
{
  struct raid_sync_status st;

  ck_assert_msg(raid_array_sync_start(a, RAID_SYNC_CHECK) == 0, "%s", raid_get_error());
  raid_array_sync_wait(a);
  raid_array_sync_status(a, &st);
  ck_assert_int_eq(st.last_result, 0);
  return st.last_mismatches;
}

void
tback_plan(int level, unsigned n, uint32_t chunk, uint32_t new_chunk,
           const struct raid_superblock *sb0, struct tback *p)
{
  unsigned num = level == RAID_LEVEL_5 ? n - 1 : n;
  unsigned den = level == RAID_LEVEL_10 ? 2 : 1;
  unsigned rows = level == RAID_LEVEL_10 && n % 2 ? 2 : 1;
  uint64_t need = (uint64_t)(chunk > new_chunk ? chunk : new_chunk) * rows;
  uint64_t ms = sb0->size * 512, after = sb0->data_size * 512 - ms, cut;

  p->gap = after >= 2 * need ? MIN(after / need, 4) * need : 4 * need;
  cut = p->gap > after ? (p->gap - after + need - 1) / need * need : 0;
  p->ms = (ms - cut) / need * need;
  p->size = p->ms / new_chunk * num / den * new_chunk;
  p->unit = (uint64_t)num * rows / den * (chunk > new_chunk ? chunk : new_chunk);
}

void
tback_sb_start(struct raid_superblock *sb, unsigned n, uint32_t new_chunk,
               const struct tback *p)
{
  sb->feature_map |= RAID_SB_FEATURE_RESHAPE_ACTIVE | RAID_SB_FEATURE_NEW_OFFSET;
  sb->delta_disks = (int32_t)n - (int32_t)sb->raid_disks;
  sb->raid_disks = n;
  sb->new_level = sb->level;
  sb->new_layout = sb->layout;
  sb->new_chunk = new_chunk / 512;
  sb->new_offset = (int32_t)(p->gap / 512);
  sb->size = p->ms / 512;
  sb->reshape_position = p->size / 512;
  sb->events++;
}

uint8_t **
tfile_images(const char *set, unsigned n, uint64_t size)
{
  uint8_t **img = calloc(n, sizeof *img);
  char p[PATH_MAX];
  unsigned i;
  int fd;

  ck_assert_ptr_nonnull(img);
  for (i = 0; i < n; i++) {
    tfile_path(p, sizeof p, set, i);
    img[i] = test_alloc(size);
    ck_assert_int_ge(fd = open(p, O_RDONLY), 0);
    ck_assert_int_eq(pread(fd, img[i], size, 0), (ssize_t)size);
    close(fd);
  }
  return img;
}

void
tfile_images_free(uint8_t **img, unsigned n)
{
  unsigned i;

  for (i = 0; i < n; i++)
    test_free(img[i]);
  free(img);
}

void
tfile_same(const char *set, unsigned n, uint8_t **img, uint64_t size, const char *what)
{
  uint8_t **now = tfile_images(set, n, size);
  unsigned i;

  for (i = 0; i < n; i++)
    ck_assert_msg(memcmp(now[i], img[i], size) == 0, "%s: member %u changed", what, i);
  tfile_images_free(now, n);
}

void
tfile_check_layout(const char *set, const struct tconf *c, const char *what,
                   const uint8_t *shadow, uint64_t size)
{
  uint8_t *data[RAID_MAX_MEMBERS];
  char path[RAID_MAX_MEMBERS][PATH_MAX];
  const char *names[RAID_MAX_MEMBERS];
  struct raid_superblock sb;
  uint64_t ms = 0;
  unsigned i;
  int fd;

  for (i = 0; i < c->disks; i++) {
    tfile_read_sb(set, i, &sb);
    ms = sb.size * 512;
    tfile_path(path[i], sizeof path[i], set, i);
    names[i] = path[i];
    data[i] = test_alloc(ms);
    ck_assert_int_ge(fd = open(path[i], O_RDONLY), 0);
    ck_assert_int_eq(pread(fd, data[i], ms, (off_t)(sb.data_offset * 512)), (ssize_t)ms);
    close(fd);
  }
  tcheck_layout(c, what, names, (const uint8_t *const *)data, ms, shadow, size);
  for (i = 0; i < c->disks; i++)
    test_free(data[i]);
}

void
tsettle(struct raid_array *a)
{
  unsigned i;

  for (i = 0; !raid_array_clean(a); i++) {
    ck_assert_uint_lt(i, 10000);
    usleep(1000);
  }
}

void
treshape_stop_at_third(struct raid_array *a)
{
  struct raid_sync_status st;
  unsigned i;

  for (i = 0;; i++) {
    raid_array_sync_status(a, &st);
    if (st.action == RAID_SYNC_RESHAPE && st.total && st.done >= st.total / 3)
      break;
    ck_assert_msg(st.last_action != RAID_SYNC_RESHAPE, "the reshape ended (%d) first",
                  st.last_result);
    ck_assert_uint_lt(i, 600000);
    usleep(500);
  }
  ck_assert_int_eq(raid_array_sync_stop(a), 0);
}
