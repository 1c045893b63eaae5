/* nbdstress: many NBD connections with many requests in flight each,
 * writing the same export at once, every byte verified.
 *
 *   nbdstress [-c CONNS] [-q DEPTH] [-t SECONDS | -n REQUESTS] [-s SEED]
 *             [-l LIMIT] [-M MAXREQ] [-S STALL] [-W PCT] [-F PCT] [-O PCT]
 *             [-Z SIZE] [-H PCT] [-v] URI
 *
 * Owned units.  The export (its first LIMIT bytes, less the shared zone
 * below) is cut into 4 KiB units and each unit belongs to one connection,
 * so the expected content is defined under any interleaving: a connection
 * reads and writes only its own units and never has two requests on the
 * same unit in flight.  Which connection owns a unit follows an
 * interleaving whose granularity changes from one 2 MiB region to the next
 * (single 4 KiB units, 64 KiB, 1 MiB and 256 KiB runs), rotated from one
 * cycle of regions to the next so every connection gets runs of every
 * size.  So the connections never write the same bytes at once, yet they
 * constantly write different bytes of the same RAID rows: on a RAID 5 with
 * a small chunk, complementary chunks of one row come from different
 * connections at the same time (read-modify-write and reconstruct-write
 * racing on one parity block); with a large chunk, neighbouring pieces of
 * one chunk do.  Every read there is compared with a shadow copy.
 *
 * The shared zone (the last SIZE bytes, default 1 MiB or two of the
 * server's preferred blocks) gets PCT% of the requests from every
 * connection at once, overlapping: there the content is whatever write
 * came last, so each 512-byte sector read must be one that some request
 * put there (its tag and its bytes match), zeroes, or what was there
 * first; a read that a write overlapped while it was in flight is not
 * checked (NBD leaves it undefined).  And for HOT% of each second every
 * connection sends only 4 KiB writes into the first 64 KiB of that zone,
 * as fast as the server takes them: many writers queued on the same
 * bytes, from every connection, on every worker thread of the server.
 *
 * First the whole range is read into the shadow (with all connections).
 * Then each connection keeps DEPTH requests in flight: writes (some with
 * FUA) of tagged data, reads (some with DF, which must come back in one
 * chunk), write-zeroes (some NO_HOLE), trims (which raidd and most servers
 * read back as zeroes: checked), caches and flushes, as the export
 * advertises them.  Sizes go from 512 bytes to MAXREQ (default 1 MiB),
 * mostly small: 4 KiB-aligned and sector-aligned, small and large, whole
 * runs, with offsets that cross chunk boundaries; a third of the requests
 * continue sequential streams, the rest are random.  At the end every
 * connection flushes and the whole range is read back and checked.
 *
 * Every 512-byte sector written starts with a tag (connection, write
 * number, offset) and the rest follows from the tag, so a mismatch says
 * whose data is there instead: a stale write, another connection's,
 * another offset's (misplaced), zeroes, or garbage.
 *
 * Hangs: if no request completes for STALL seconds (default 60) while
 * some are in flight, it lists the outstanding requests of every
 * connection and exits 3.  A connection the server drops (raidd crashed)
 * is reported and exits 4.  A mismatch or a request error exits 1, each
 * named with connection, offset and length.  The last line gives the
 * counts: requests, bytes written, bytes read and verified, errors.
 * One thread drives every connection (libnbd's asynchronous API, poll).
 *
 * Crash tests (tests/test-raidd-crash.sh): with -J FILE, when the server
 * dies (exit 4) the expected contents are saved to FILE: the shadow (what
 * every acknowledged write, zero and trim left) and every such request
 * still unanswered, which may or may not have reached the disks.  A later
 * run with -V FILE (same URI and -l, once the server is back) only reads
 * the range and holds each sector to the journal: the shadow's contents,
 * or those of an unanswered request covering it.  Both need -O 0 (no
 * shared zone).
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libnbd.h>

#define UNIT 4096u
#define SECTOR 512u
#define REGION_UNITS 512u                 /* 2 MiB */
#define MAX_CONNS 64u
#define MAX_DEPTH 128u
#define TAG_MAGIC UINT64_C(0x4e42445354524553) /* "NBDSTRES" */
#define MAX_REPORTS 20u
#define DEFAULT_LIMIT (UINT64_C(1) << 30)
#define HOT_WINDOW (64u << 10)            /* where the bursts go */

#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* Granularity of the interleaving, cycling from region to region:
 * 4 KiB, 64 KiB, 1 MiB, 256 KiB runs. */
static const unsigned shifts[] = { 0, 4, 8, 6 };
#define NSHIFTS (sizeof shifts / sizeof shifts[0])

enum kind { K_READ, K_WRITE, K_ZERO, K_TRIM, K_CACHE, K_FLUSH, K_KINDS };
static const char *const kind_name[K_KINDS] = {
  "read", "write", "write-zeroes", "trim", "cache", "flush",
};

enum phase { P_LOAD, P_RUN, P_CHECK };

struct conn;

struct op {
  struct conn *c;
  enum kind kind;
  enum phase phase;
  bool in_use;
  uint32_t flags;
  uint64_t off;
  size_t len;
  uint8_t *buf;
  int64_t cookie;
  double started;
  unsigned chunks;                /* of a DF read */
  bool shared;                    /* in the shared zone: no busy marks */
  bool racy;                      /* a shared read a write overlapped */
  uint64_t gensum;                /* of the shared units it reads */
};

struct stream {
  uint64_t next;                  /* unit where it continues */
  size_t bs;                      /* its request size; 0: random */
};

struct conn {
  unsigned id;
  struct nbd_handle *h;
  struct op ops[MAX_DEPTH];
  unsigned in_flight;
  uint64_t wseq;                  /* writes of this connection, numbered */
  uint64_t rng;
  struct stream streams[2];
  unsigned lost_ops;              /* failed with ENOTCONN */
  bool dead, said_lost;
};

/* Options. */
static unsigned nconn = 4, depth = 32;
static double seconds = 10;
static uint64_t max_requests;     /* 0: by time */
static uint64_t seed;
static uint64_t limit = DEFAULT_LIMIT;
static size_t maxreq = 1u << 20;
static double stall_secs = 60;
static bool verbose;
static const char *uri;

/* The export. */
static uint64_t region;           /* bytes exercised */
static uint64_t units;            /* of them owned by a connection */
static uint64_t shared_off, shared_len; /* the shared zone, at the end */
static unsigned shared_pct = 25;  /* requests that go there */
static unsigned write_pct = 55;   /* requests that are writes */
static unsigned fua_pct = 5;      /* writes, zeroes and trims with FUA */
static unsigned hot_pct = 40;     /* share of each second spent in bursts */
static bool hot;                  /* in a burst now */
static uint8_t *shadow;
static uint8_t *busy;             /* per unit: a request is in flight there */
/* Per unit of the shared zone: writes (and zeroes, trims) in flight there,
 * and a count of those submitted.  A shared read is checked only if no
 * write overlapped it from submission to completion: one that did may see
 * a mix of old and new (NBD leaves that undefined). */
static uint32_t *wbusy, *wgen;
static bool can_fua, can_trim, can_zero, can_flush, can_cache, can_df;
/* -J / -V: the journal, and the modifying requests unanswered at the crash. */
static const char *journal_out, *journal_in;
struct pending {
  enum kind kind;
  uint64_t off;
  size_t len;
  uint8_t *data;                  /* a write's, else NULL (zeroes) */
};
static struct pending *pend;
static size_t npend, pend_cap;
static uint64_t min_block = SECTOR;

static struct conn conns[MAX_CONNS];
static double t_start, t_run, last_progress;

/* Counts. */
static uint64_t n_req[K_KINDS], n_submitted;
static uint64_t bytes_written, bytes_verified, bytes_unchecked;
static uint64_t n_errors, n_mismatches;
static unsigned n_reports;
static bool failed, lost;

static double
now(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void
say(const char *fmt, ...)
{
  va_list ap;

  fprintf(stderr, "nbdstress: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

/* A report of a failure, at most MAX_REPORTS of them printed. */
static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void
report(const char *fmt, ...)
{
  va_list ap;

  failed = true;
  if (n_reports++ >= MAX_REPORTS) {
    if (n_reports == MAX_REPORTS + 1)
      say("(more failures: not shown)");
    return;
  }
  fprintf(stderr, "nbdstress: FAIL: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static uint64_t
rnd(uint64_t *s)
{
  /* splitmix64 */
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static uint64_t
below(uint64_t *s, uint64_t n)
{
  return n ? rnd(s) % n : 0;
}

static bool
percent(uint64_t *s, unsigned p)
{
  return below(s, 100) < p;
}

/* ---- ownership ------------------------------------------------------------ */

static unsigned
unit_shift(uint64_t u)
{
  return shifts[(u / REGION_UNITS) % NSHIFTS];
}

static unsigned
owner(uint64_t u)
{
  uint64_t cycle = u / REGION_UNITS / NSHIFTS;

  return (unsigned)(((u >> unit_shift(u)) + cycle) % nconn);
}

/* The run of connection ME nearest to unit U in U's region: [*s, *e). */
static bool
run_near(unsigned me, uint64_t u, uint64_t *s, uint64_t *e)
{
  unsigned sh = unit_shift(u);
  uint64_t rs = u / REGION_UNITS * REGION_UNITS;
  uint64_t re = MIN(rs + REGION_UNITS, units);
  uint64_t cycle = u / REGION_UNITS / NSHIFTS;
  uint64_t k = u >> sh;
  uint64_t m = (k + cycle) % nconn;

  k -= (m + nconn - me) % nconn;
  if ((k << sh) < rs || k > (u >> sh))
    k += nconn;
  if ((k << sh) < rs || (k << sh) >= re)
    return false;
  *s = k << sh;
  *e = MIN((k + 1) << sh, re);
  return true;
}

static bool
range_free(uint64_t off, size_t len)
{
  uint64_t u;

  for (u = off / UNIT; u <= (off + len - 1) / UNIT; u++)
    if (busy[u])
      return false;
  return true;
}

static void
mark(uint64_t off, size_t len, uint8_t v)
{
  uint64_t u;

  for (u = off / UNIT; u <= (off + len - 1) / UNIT; u++)
    busy[u] = v;
}

/* Shared zone bookkeeping: a write starts (+1) or ends (-1) on a range;
 * or, for a read (0), whether a write is in flight there and the sum of
 * the units' write counts. */
static bool
shared_track(uint64_t off, size_t len, int d, uint64_t *sum)
{
  uint64_t u;
  bool racing = false;

  *sum = 0;
  for (u = off / UNIT; u <= (off + len - 1) / UNIT; u++) {
    if (d > 0) {
      wbusy[u]++;
      wgen[u]++;
    }
    else if (d < 0)
      wbusy[u]--;
    else if (wbusy[u])
      racing = true;
    *sum += wgen[u];
  }
  return racing;
}

static uint64_t
align_down(uint64_t x, uint64_t a)
{
  return x / a * a;
}

/* A random sub-range of units [s, e) for one request. */
static void
pick_in_run(struct conn *c, uint64_t s, uint64_t e, uint64_t *offp, size_t *lenp)
{
  uint64_t start = s * UNIT, end = e * UNIT, off, len;
  unsigned p = (unsigned)below(&c->rng, 100);

  /* Mostly small requests (many per second, many on each stripe), some
   * large ones. */
  if (p < 50) {                 /* small, 4 KiB-aligned: 4..16 KiB */
    off = start + below(&c->rng, e - s) * UNIT;
    len = (1 + below(&c->rng, 4)) * UNIT;
  }
  else if (p < 70) {            /* sector-aligned: 512 bytes .. 32 KiB */
    off = start + below(&c->rng, (end - start) / SECTOR) * SECTOR;
    len = (1 + below(&c->rng, 64)) * SECTOR;
  }
  else if (p < 88) {            /* medium: up to 256 KiB */
    off = start + below(&c->rng, e - s) * UNIT;
    len = (1 + below(&c->rng, 64)) * UNIT;
  }
  else if (p < 96) {            /* large: up to the end of the run */
    off = start + below(&c->rng, e - s) * UNIT;
    len = (1 + below(&c->rng, (end - off) / UNIT)) * UNIT;
  }
  else {                        /* the whole run */
    off = start;
    len = end - start;
  }
  off = align_down(off, min_block);
  if (off < start)
    off = start;
  len = MIN(len, end - off);
  len = MIN(len, (uint64_t)maxreq);
  len = align_down(len, min_block);
  if (len == 0)
    len = min_block;
  *offp = off;
  *lenp = (size_t)len;
}

static bool
pick_random(struct conn *c, uint64_t *offp, size_t *lenp)
{
  unsigned tries;

  for (tries = 0; tries < 16; tries++) {
    uint64_t s, e;

    if (!run_near(c->id, below(&c->rng, units), &s, &e))
      continue;
    pick_in_run(c, s, e, offp, lenp);
    if (range_free(*offp, *lenp))
      return true;
  }
  return false;
}

/* A range of the shared zone, where every connection writes at once:
 * mostly small, some up to MAXREQ; 4 KiB or sector aligned. */
static void
pick_shared(struct conn *c, uint64_t *offp, size_t *lenp)
{
  uint64_t sectors = shared_len / SECTOR, s, n;
  unsigned p = (unsigned)below(&c->rng, 100);

  if (p < 60)                   /* 4 KiB: many on the same bytes at once */
    n = 8;
  else if (p < 75)
    n = 8 * (2 + below(&c->rng, 3));
  else if (p < 90)
    n = 1 + below(&c->rng, 64);
  else if (p < 95)
    n = 1 + below(&c->rng, 512);
  else
    n = 1 + below(&c->rng, maxreq / SECTOR);
  n = MIN(n, sectors);
  s = below(&c->rng, sectors - n + 1);
  if (p < 75)
    s = s / 8 * 8;
  s = align_down(s, min_block / SECTOR);
  n = align_down(n, min_block / SECTOR);
  if (n == 0)
    n = min_block / SECTOR;
  *offp = shared_off + s * SECTOR;
  *lenp = (size_t)(n * SECTOR);
}

/* The next piece of a sequential stream through this connection's units. */
static bool
pick_stream(struct conn *c, uint64_t *offp, size_t *lenp)
{
  struct stream *st = &c->streams[below(&c->rng, 2)];
  uint64_t u = st->next, n, want, steps;

  for (steps = 0; steps < 4 * REGION_UNITS && owner(u) != c->id; steps++)
    if (++u >= units)
      u = 0;
  if (owner(u) != c->id || percent(&c->rng, 1)) {
    /* Start over somewhere else, with another request size. */
    static const size_t sizes[] = { 0, 4096, 4096, 8192, 65536, 262144, 1048576 };
    uint64_t s, e;

    st->bs = sizes[below(&c->rng, sizeof sizes / sizeof sizes[0])];
    if (!run_near(c->id, below(&c->rng, units), &s, &e))
      return false;
    u = s;
  }
  want = st->bs ? st->bs : (1 + below(&c->rng, 16)) * UNIT;
  want = MIN(want, (uint64_t)maxreq);
  for (n = 0; u + n < units && owner(u + n) == c->id && (n + 1) * UNIT <= want; n++)
    ;
  if (n == 0)
    n = 1;
  st->next = u + n >= units ? 0 : u + n;
  *offp = u * UNIT;
  *lenp = (size_t)(n * UNIT);
  return range_free(*offp, *lenp);
}

/* ---- data ------------------------------------------------------------------- */

struct tag {
  uint64_t magic;
  uint64_t offset;                /* where it was meant to go */
  uint64_t seq;                   /* the connection's write number */
  uint32_t conn;
  uint32_t check;
};

/* The sector at WHERE of write SEQ of connection CONN: a tag, then bytes
 * that follow from the tag, so any sector can be checked on its own. */
static void
fill_sector(uint8_t *p, uint64_t where, uint64_t seq, unsigned conn)
{
  struct tag t = {
    .magic = TAG_MAGIC, .offset = where, .seq = seq, .conn = conn,
    .check = (uint32_t)(seed ^ seq),
  };
  uint64_t s = seed ^ where ^ (seq << 40) ^ conn;
  size_t j;

  memcpy(p, &t, sizeof t);
  for (j = sizeof t; j + 8 <= SECTOR; j += 8) {
    uint64_t v = rnd(&s);
    memcpy(p + j, &v, 8);
  }
}

static void
make_data(struct conn *c, uint8_t *buf, uint64_t off, size_t len)
{
  size_t i;

  c->wseq++;
  for (i = 0; i < len; i += SECTOR)
    fill_sector(buf + i, off + i, c->wseq, c->id);
}

/* In the shared zone: is the sector at WHERE something that was there
 * (its first content, zeroes, or a whole sector some write put there)? */
static bool
valid_sector(const uint8_t *p, uint64_t where)
{
  uint8_t want[SECTOR];
  struct tag t;
  size_t i;

  if (memcmp(p, shadow + where, SECTOR) == 0)
    return true;
  for (i = 0; i < SECTOR && p[i] == 0; i++)
    ;
  if (i == SECTOR)
    return true;
  memcpy(&t, p, sizeof t);
  if (t.magic != TAG_MAGIC || t.offset != where || t.conn >= nconn)
    return false;
  fill_sector(want, where, t.seq, t.conn);
  return memcmp(p, want, SECTOR) == 0;
}

/* What a sector holds, for a mismatch report. */
static void
describe(const uint8_t *p, uint64_t where, char *out, size_t n)
{
  struct tag t;
  size_t i;

  memcpy(&t, p, sizeof t);
  if (t.magic == TAG_MAGIC) {
    if (t.offset == where)
      snprintf(out, n, "write #%" PRIu64 " of connection %u", t.seq, t.conn);
    else
      snprintf(out, n, "write #%" PRIu64 " of connection %u meant for offset %" PRIu64
               " (misplaced)", t.seq, t.conn, t.offset);
    return;
  }
  for (i = 0; i < SECTOR && p[i] == 0; i++)
    ;
  if (i == SECTOR)
    snprintf(out, n, "zeroes");
  else
    snprintf(out, n, "untagged data %02x %02x %02x %02x %02x %02x %02x %02x",
             p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
}

/* Compare BUF with the shadow at OFF; report a difference. */
static bool
verify_shared(struct conn *c, const char *what, const uint8_t *buf, uint64_t off, size_t len)
{
  size_t s, badsec = 0, first = SIZE_MAX;
  char got[160];

  for (s = 0; s < len; s += SECTOR)
    if (!valid_sector(buf + s, off + s)) {
      if (first == SIZE_MAX)
        first = s;
      badsec++;
    }
  if (badsec == 0) {
    bytes_verified += len;
    return true;
  }
  describe(buf + first, off + first, got, sizeof got);
  n_mismatches++;
  report("BAD DATA: connection %u, %s in the shared zone at offset %" PRIu64 " length %zu: "
         "%zu sectors hold what no request wrote there, the first at offset %" PRIu64
         " (sector %" PRIu64 "): %s", c->id, what, off, len, badsec, off + first,
         (off + first) / SECTOR, got);
  return false;
}

/* -V: every sector of BUF (at OFF) holds the shadow's contents or those
 * of a request unanswered at the crash that covers it. */
static bool
pending_match(const uint8_t *buf, uint64_t off, size_t len)
{
  static const uint8_t zero[SECTOR];
  size_t s, k;

  for (s = 0; s < len; s += SECTOR) {
    uint64_t where = off + s;
    bool ok = memcmp(buf + s, shadow + where, SECTOR) == 0;

    for (k = 0; k < npend && !ok; k++) {
      const struct pending *p = &pend[k];

      if (where < p->off || where >= p->off + p->len)
        continue;
      ok = memcmp(buf + s, p->data ? p->data + (where - p->off) : zero, SECTOR) == 0;
    }
    if (!ok)
      return false;
  }
  return true;
}

/* Compare BUF with the shadow at OFF; report a difference.  In the shared
 * zone, where connections overwrite each other, each sector must be one
 * that was written there. */
static bool
verify(struct conn *c, const char *what, const uint8_t *buf, uint64_t off, size_t len)
{
  size_t i, first = SIZE_MAX, bad = 0, badsec = 0, s;
  char exp[160], got[160];

  if (off + len > shared_off) {
    bool ok = true;

    if (off < shared_off) {
      ok = verify(c, what, buf, off, (size_t)(shared_off - off));
      buf += shared_off - off;
      len -= (size_t)(shared_off - off);
      off = shared_off;
    }
    return verify_shared(c, what, buf, off, len) && ok;
  }

  if (memcmp(buf, shadow + off, len) == 0 || (npend && pending_match(buf, off, len))) {
    bytes_verified += len;
    return true;
  }
  for (s = 0; s < len; s += SECTOR) {
    size_t e = MIN(len, s + SECTOR), before = bad;

    for (i = s; i < e; i++)
      if (buf[i] != shadow[off + i]) {
        if (first == SIZE_MAX)
          first = i;
        bad++;
      }
    if (bad != before)
      badsec++;
  }
  s = first / SECTOR * SECTOR;
  describe(shadow + off + s, off + s, exp, sizeof exp);
  describe(buf + s, off + s, got, sizeof got);
  n_mismatches++;
  report("MISMATCH: connection %u, %s at offset %" PRIu64 " length %zu: %zu bytes in %zu "
         "sectors differ, the first at offset %" PRIu64 " (sector %" PRIu64 "): expected %s, "
         "found %s", c->id, what, off, len, bad, badsec, off + first, (off + s) / SECTOR,
         exp, got);
  return false;
}

/* ---- requests ------------------------------------------------------------- */

static const char *
flag_names(uint32_t f)
{
  static char b[64];

  snprintf(b, sizeof b, "%s%s%s", f & LIBNBD_CMD_FLAG_FUA ? " FUA" : "",
           f & LIBNBD_CMD_FLAG_DF ? " DF" : "", f & LIBNBD_CMD_FLAG_NO_HOLE ? " NO_HOLE" : "");
  return b;
}

/* -J: remember O, a write, zero or trim whose answer never came. */
static void
pend_add(const struct op *o)
{
  struct pending *p;

  if (journal_out == NULL || o->shared ||
      (o->kind != K_WRITE && o->kind != K_ZERO && o->kind != K_TRIM))
    return;
  if (npend == pend_cap) {
    pend_cap = pend_cap ? 2 * pend_cap : 64;
    if ((pend = realloc(pend, pend_cap * sizeof *pend)) == NULL)
      abort();
  }
  p = &pend[npend++];
  p->kind = o->kind;
  p->off = o->off;
  p->len = o->len;
  p->data = NULL;
  if (o->kind == K_WRITE) {
    if ((p->data = malloc(o->len)) == NULL)
      abort();
    memcpy(p->data, o->buf, o->len);
  }
}

static int
op_done(void *user_data, int *error)
{
  struct op *o = user_data;
  struct conn *c = o->c;

  c->in_flight--;
  last_progress = now();
  if (*error != 0) {
    n_errors++;
    if (*error == ENOTCONN) {   /* the connection died: said by pump() */
      c->dead = lost = failed = true;
      c->lost_ops++;
      pend_add(o);
    }
    else
      report("connection %u: %s%s at offset %" PRIu64 " length %zu failed: %s",
             c->id, kind_name[o->kind], flag_names(o->flags), o->off, o->len,
             strerror(*error));
  }
  else {
    n_req[o->kind]++;
    switch (o->kind) {
    case K_WRITE:
      if (!o->shared)
        memcpy(shadow + o->off, o->buf, o->len);
      bytes_written += o->len;
      break;
    case K_ZERO: case K_TRIM:
      if (!o->shared)
        memset(shadow + o->off, 0, o->len);
      break;
    case K_READ:
      if (o->shared && o->phase == P_RUN) {
        uint64_t sum;

        if (shared_track(o->off, o->len, 0, &sum) || o->racy || sum != o->gensum) {
          bytes_unchecked += o->len;
          break;
        }
      }
      if ((o->flags & LIBNBD_CMD_FLAG_DF) && o->chunks != 1) {
        n_errors++;
        report("connection %u: read DF at offset %" PRIu64 " length %zu came in %u chunks",
               c->id, o->off, o->len, o->chunks);
      }
      if (o->phase == P_LOAD)
        bytes_verified += o->len;      /* read into the shadow itself */
      else
        verify(c, o->phase == P_CHECK ? "final read" : "read", o->buf, o->off, o->len);
      break;
    default:
      break;
    }
  }
  if (o->kind != K_FLUSH && !o->shared)
    mark(o->off, o->len, 0);
  if (o->shared && (o->kind == K_WRITE || o->kind == K_ZERO || o->kind == K_TRIM)) {
    uint64_t sum;

    shared_track(o->off, o->len, -1, &sum);
  }
  if (o->phase != P_LOAD)
    free(o->buf);
  o->buf = NULL;
  o->in_use = false;
  return 1;
}

static int
df_chunk(void *user_data, const void *subbuf, size_t count, uint64_t offset,
         unsigned status, int *error)
{
  struct op *o = user_data;

  o->chunks++;
  return 0;
}

static struct op *
free_op(struct conn *c)
{
  unsigned i;

  for (i = 0; i < depth; i++)
    if (!c->ops[i].in_use)
      return &c->ops[i];
  return NULL;
}

/* Send O on C.  O is counted as in flight before libnbd sees it: libnbd
 * queues a request and returns its cookie even when sending it finds the
 * connection dead, and then it has already called op_done() with
 * ENOTCONN, from inside nbd_aio_*(), which undoes the counting and frees
 * O's buffer.  -1 means libnbd refused O before queueing it, and never
 * calls op_done() for it. */
static bool
submit(struct conn *c, struct op *o)
{
  nbd_completion_callback cb = { .callback = op_done, .user_data = o };
  bool unit_marked = o->kind != K_FLUSH && !o->shared;
  bool shared_mod = o->shared && (o->kind == K_WRITE || o->kind == K_ZERO || o->kind == K_TRIM);
  int64_t r = -1;

  o->c = c;
  o->started = now();
  o->in_use = true;
  if (unit_marked)
    mark(o->off, o->len, 1);
  if (shared_mod)
    shared_track(o->off, o->len, 1, &o->gensum);
  else if (o->shared && o->kind == K_READ)
    o->racy = shared_track(o->off, o->len, 0, &o->gensum);
  c->in_flight++;
  n_submitted++;
  switch (o->kind) {
  case K_READ:
    if (o->flags & LIBNBD_CMD_FLAG_DF) {
      /* DF: the server must answer in one chunk (libnbd allows the flag
       * only on structured reads). */
      nbd_chunk_callback ch = { .callback = df_chunk, .user_data = o };

      o->chunks = 0;
      r = nbd_aio_pread_structured(c->h, o->buf, o->len, o->off, ch, cb, o->flags);
    }
    else
      r = nbd_aio_pread(c->h, o->buf, o->len, o->off, cb, o->flags);
    break;
  case K_WRITE:
    r = nbd_aio_pwrite(c->h, o->buf, o->len, o->off, cb, o->flags);
    break;
  case K_ZERO:
    r = nbd_aio_zero(c->h, o->len, o->off, cb, o->flags);
    break;
  case K_TRIM:
    r = nbd_aio_trim(c->h, o->len, o->off, cb, o->flags);
    break;
  case K_CACHE:
    r = nbd_aio_cache(c->h, o->len, o->off, cb, o->flags);
    break;
  case K_FLUSH:
    r = nbd_aio_flush(c->h, cb, 0);
    break;
  default:
    break;
  }
  if (r == -1) {
    uint64_t sum;

    c->in_flight--;
    n_submitted--;
    if (unit_marked)
      mark(o->off, o->len, 0);
    if (shared_mod)
      shared_track(o->off, o->len, -1, &sum);
    o->in_use = false;
    n_errors++;
    report("connection %u: %s at offset %" PRIu64 " length %zu not submitted: %s",
           c->id, kind_name[o->kind], o->off, o->len, nbd_get_error());
    if (o->phase != P_LOAD)
      free(o->buf);
    o->buf = NULL;
    return false;
  }
  if (o->in_use)                /* not answered (ENOTCONN) already */
    o->cookie = r;
  return true;
}

/* One random request of the main phase; false if none could be made. */
static bool
submit_random(struct conn *c)
{
  struct op *o = free_op(c);
  unsigned p;
  bool ok;

  if (o == NULL)
    return false;
  memset(o, 0, sizeof *o);
  o->phase = P_RUN;
  if (hot && shared_len) {
    /* A burst: 4 KiB-aligned writes of 4 KiB (some 8 KiB) into the first
     * 64 KiB of the shared zone, as fast as the server takes them, so overlapping writes queue
     * up on the same bytes from every connection. */
    uint64_t units_z = MIN(shared_len, HOT_WINDOW) / UNIT, n = percent(&c->rng, 95) ? 1 : 2;

    n = MIN(n, units_z);
    o->shared = true;
    o->off = shared_off + below(&c->rng, units_z - n + 1) * UNIT;
    o->len = (size_t)(n * UNIT);
    p = (unsigned)below(&c->rng, 100);
    o->kind = p < 90 ? K_WRITE : p < 96 ? K_READ : p < 98 && can_zero ? K_ZERO
      : can_trim ? K_TRIM : K_WRITE;
    if (posix_memalign((void **)&o->buf, UNIT, o->len) != 0)
      abort();
    if (o->kind == K_WRITE)
      make_data(c, o->buf, o->off, o->len);
    else if (o->kind != K_READ) {
      free(o->buf);
      o->buf = NULL;
    }
    return submit(c, o);
  }
  if (percent(&c->rng, write_pct))
    o->kind = K_WRITE;
  else {
    p = (unsigned)below(&c->rng, 100);
    o->kind = p < 70 ? K_READ : p < 80 ? K_ZERO : p < 88 ? K_TRIM : p < 94 ? K_CACHE : K_FLUSH;
  }
  if ((o->kind == K_ZERO && !can_zero) || (o->kind == K_TRIM && !can_trim))
    o->kind = K_WRITE;
  if ((o->kind == K_CACHE && !can_cache) || (o->kind == K_FLUSH && !can_flush))
    o->kind = K_READ;
  if (o->kind == K_FLUSH)
    return submit(c, o);
  if (shared_len && percent(&c->rng, shared_pct)) {
    o->shared = true;
    pick_shared(c, &o->off, &o->len);
  }
  else {
    ok = units && percent(&c->rng, 33) ? pick_stream(c, &o->off, &o->len) : false;
    if (!ok && (units == 0 || !pick_random(c, &o->off, &o->len)))
      return false;
  }
  switch (o->kind) {
  case K_WRITE:
    if (can_fua && percent(&c->rng, fua_pct))
      o->flags |= LIBNBD_CMD_FLAG_FUA;
    if (posix_memalign((void **)&o->buf, UNIT, o->len) != 0)
      abort();
    make_data(c, o->buf, o->off, o->len);
    break;
  case K_READ:
    if (can_df && percent(&c->rng, 20))
      o->flags |= LIBNBD_CMD_FLAG_DF;
    if (posix_memalign((void **)&o->buf, UNIT, o->len) != 0)
      abort();
    memset(o->buf, 0xee, o->len);
    break;
  case K_ZERO:
    if (percent(&c->rng, 50))
      o->flags |= LIBNBD_CMD_FLAG_NO_HOLE;
    /* fall through */
  case K_TRIM:
    if (can_fua && percent(&c->rng, fua_pct))
      o->flags |= LIBNBD_CMD_FLAG_FUA;
    break;
  default:
    break;
  }
  return submit(c, o);
}

/* ---- the event loop ------------------------------------------------------- */

static unsigned
total_in_flight(void)
{
  unsigned i, n = 0;

  for (i = 0; i < nconn; i++)
    n += conns[i].in_flight;
  return n;
}

static void
dump_outstanding(void)
{
  double t = now();
  unsigned i, j, shown;

  for (i = 0; i < nconn; i++) {
    struct conn *c = &conns[i];

    say("connection %u: %u requests outstanding (libnbd: %d in flight)%s", i,
        c->in_flight, c->h ? nbd_aio_in_flight(c->h) : -1, c->dead ? ", connection lost" : "");
    for (j = 0, shown = 0; j < depth; j++) {
      struct op *o = &c->ops[j];

      if (!o->in_use)
        continue;
      if (shown++ == 40) {
        say("  ...");
        break;
      }
      say("  %s%s offset %" PRIu64 " length %zu (cookie %" PRId64 ", sent %.1f s ago)",
          kind_name[o->kind], flag_names(o->flags), o->off, o->len, o->cookie,
          t - o->started);
    }
  }
}

/* Exchange data with the server until nothing is in flight (DRAIN) or one
 * turn is done; returns false when a connection is lost or it stalls. */
static bool
pump(int timeout_ms)
{
  struct pollfd p[MAX_CONNS];
  unsigned i;
  int r;

  for (i = 0; i < nconn; i++) {
    struct conn *c = &conns[i];
    unsigned dir;

    p[i].fd = -1;
    p[i].events = 0;
    p[i].revents = 0;
    if (c->dead)
      continue;
    dir = nbd_aio_get_direction(c->h);
    p[i].fd = nbd_aio_get_fd(c->h);
    if (dir & LIBNBD_AIO_DIRECTION_READ)
      p[i].events |= POLLIN;
    if (dir & LIBNBD_AIO_DIRECTION_WRITE)
      p[i].events |= POLLOUT;
  }
  r = poll(p, nconn, timeout_ms);
  if (r < 0 && errno != EINTR) {
    perror("nbdstress: poll");
    exit(1);
  }
  for (i = 0; i < nconn && r > 0; i++) {
    struct conn *c = &conns[i];
    int e = 0;

    if (c->dead || p[i].revents == 0)
      continue;
    if (p[i].revents & (POLLIN | POLLHUP | POLLERR))
      e = nbd_aio_notify_read(c->h);
    if (e == 0 && (p[i].revents & POLLOUT))
      e = nbd_aio_notify_write(c->h);
    if (e == -1 || c->dead || nbd_aio_is_dead(c->h) || nbd_aio_is_closed(c->h)) {
      lost = failed = true;
      c->dead = true;
    }
  }
  for (i = 0; i < nconn; i++) {
    struct conn *c = &conns[i];

    if (c->dead && !c->said_lost) {
      c->said_lost = true;
      say("connection %u lost with %u requests in flight: %s (did the server die?)", i,
          c->lost_ops + c->in_flight, nbd_get_error() ? nbd_get_error() : "closed");
    }
  }
  if (lost)
    return false;
  if (total_in_flight() > 0 && now() - last_progress > stall_secs) {
    say("HANG: no request completed for %.0f s; outstanding requests:", stall_secs);
    dump_outstanding();
    return false;
  }
  return true;
}

static bool stalled_or_lost(void) { return lost || now() - last_progress > stall_secs; }

/* Read [0, region) in MAXREQ pieces over all connections: into the shadow
 * (P_LOAD), or compared with it (P_CHECK). */
static bool
sweep(enum phase ph)
{
  uint64_t off = 0;
  unsigned i = 0;

  last_progress = now();
  while (off < region || total_in_flight() > 0) {
    unsigned tries;

    for (tries = 0; tries < nconn && off < region; tries++, i = (i + 1) % nconn) {
      struct conn *c = &conns[i];
      struct op *o;

      while (off < region && !c->dead && (o = free_op(c)) != NULL) {
        memset(o, 0, sizeof *o);
        o->phase = ph;
        o->kind = K_READ;
        o->off = off;
        o->len = (size_t)MIN((uint64_t)maxreq, region - off);
        if (ph == P_LOAD)
          o->buf = shadow + off;
        else if (posix_memalign((void **)&o->buf, UNIT, o->len) != 0)
          abort();
        if (!submit(c, o))
          return false;
        off += o->len;
        if (c->in_flight >= 4)   /* 4 large reads per connection at a time */
          break;
      }
    }
    if (!pump(1000))
      return false;
    if (failed && ph == P_LOAD)
      return false;
  }
  return !stalled_or_lost();
}

static bool
flush_all(void)
{
  unsigned i;

  if (!can_flush)
    return true;
  last_progress = now();
  for (i = 0; i < nconn; i++) {
    struct op *o = free_op(&conns[i]);

    memset(o, 0, sizeof *o);
    o->phase = P_RUN;
    o->kind = K_FLUSH;
    if (!submit(&conns[i], o))
      return false;
  }
  while (total_in_flight() > 0)
    if (!pump(1000))
      return false;
  return true;
}

static bool
run(void)
{
  double deadline = now() + seconds, next_note = now() + 10;
  uint64_t first = n_submitted;   /* the reads of the range came before */

  t_run = now();
  bool stopping = false;
  unsigned i;

  last_progress = now();
  while (!stopping || total_in_flight() > 0) {
    if (!stopping) {
      double t = now() - t_run;

      hot = t - (double)(uint64_t)t < hot_pct / 100.0;
      for (i = 0; i < nconn; i++) {
        struct conn *c = &conns[i];

        while (!c->dead && c->in_flight < depth &&
               (max_requests == 0 || n_submitted - first < max_requests))
          if (!submit_random(c))
            break;
      }
      if ((max_requests ? n_submitted - first >= max_requests : now() >= deadline) || failed)
        stopping = true;
    }
    if (!pump(1000))
      return false;
    if (verbose && now() >= next_note) {
      say("%.0f s: %" PRIu64 " requests, %" PRIu64 " bytes written, %" PRIu64
          " verified, %u in flight", now() - t_start, n_submitted, bytes_written,
          bytes_verified, total_in_flight());
      next_note += 10;
    }
  }
  return !failed;
}

/* ---- the crash journal (-J, -V) ----------------------------------------------- */

#define JOURNAL_MAGIC UINT64_C(0x4e4244534a524e31) /* "NBDSJRN1" */

static void
xwrite(FILE *f, const void *p, size_t n)
{
  if (n && fwrite(p, 1, n, f) != n) {
    say("%s: write: %m", journal_out);
    exit(1);
  }
}

static void
xread(FILE *f, void *p, size_t n)
{
  if (n && fread(p, 1, n, f) != n) {
    say("%s: truncated journal", journal_in);
    exit(2);
  }
}

/* The server is gone: save the shadow and every modifying request still
 * unanswered (those failed with ENOTCONN were added as they failed). */
static void
journal_save(void)
{
  uint64_t h[3];
  unsigned i, k;
  size_t j;
  FILE *f;

  for (i = 0; i < nconn; i++)
    for (k = 0; k < depth; k++)
      if (conns[i].ops[k].in_use)
        pend_add(&conns[i].ops[k]);
  f = fopen(journal_out, "w");
  if (f == NULL) {
    say("%s: %m", journal_out);
    exit(1);
  }
  h[0] = JOURNAL_MAGIC;
  h[1] = region;
  h[2] = npend;
  xwrite(f, h, sizeof h);
  xwrite(f, shadow, region);
  for (j = 0; j < npend; j++) {
    uint64_t e[3] = { pend[j].kind, pend[j].off, pend[j].len };

    xwrite(f, e, sizeof e);
    xwrite(f, pend[j].data, pend[j].data ? pend[j].len : 0);
  }
  if (fclose(f) != 0) {
    say("%s: %m", journal_out);
    exit(1);
  }
  say("journal %s: %zu requests unanswered at the crash", journal_out, npend);
}

static void
journal_load(void)
{
  uint64_t h[3];
  size_t j;
  FILE *f = fopen(journal_in, "r");

  if (f == NULL) {
    say("%s: %m", journal_in);
    exit(2);
  }
  xread(f, h, sizeof h);
  if (h[0] != JOURNAL_MAGIC || h[1] != region) {
    say("%s: not a journal of this range (%" PRIu64 " bytes)", journal_in, region);
    exit(2);
  }
  xread(f, shadow, region);
  npend = pend_cap = (size_t)h[2];
  pend = calloc(npend ? npend : 1, sizeof *pend);
  if (pend == NULL)
    abort();
  for (j = 0; j < npend; j++) {
    uint64_t e[3];

    xread(f, e, sizeof e);
    pend[j].kind = (enum kind)e[0];
    pend[j].off = e[1];
    pend[j].len = (size_t)e[2];
    if (pend[j].off + pend[j].len > region || pend[j].len > (64u << 20)) {
      say("%s: bad entry", journal_in);
      exit(2);
    }
    if (pend[j].kind == K_WRITE) {
      if ((pend[j].data = malloc(pend[j].len)) == NULL)
        abort();
      xread(f, pend[j].data, pend[j].len);
    }
  }
  fclose(f);
  say("journal %s: %zu requests were unanswered at the crash", journal_in, npend);
}

/* ---- main ------------------------------------------------------------------- */

static uint64_t
parse_size(const char *s)
{
  char *end;
  double v = strtod(s, &end);

  switch (*end) {
  case 'k': case 'K': v *= 1024; end++; break;
  case 'm': case 'M': v *= 1024 * 1024; end++; break;
  case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
  default: break;
  }
  if (end == s || *end != '\0' || v < 0) {
    fprintf(stderr, "nbdstress: bad size: %s\n", s);
    exit(2);
  }
  return (uint64_t)v;
}

static void
usage(FILE *f, int status)
{
  fprintf(f,
          "usage: nbdstress [-c CONNS] [-q DEPTH] [-t SECONDS | -n REQUESTS] [-s SEED]\n"
          "                 [-l LIMIT] [-M MAXREQ] [-S STALL] [-W PCT] [-F PCT] [-O PCT]\n"
          "                 [-Z SIZE] [-H PCT] [-J FILE | -V FILE] [-v] URI\n"
          "  -c, --connections N  NBD connections to URI (default 4)\n"
          "  -q, --depth N        requests in flight per connection (default 32, max %u)\n"
          "  -t, --seconds S      run for S seconds (default 10)\n"
          "  -n, --requests N     or this many requests\n"
          "  -s, --seed N         random seed (default: from the clock; printed)\n"
          "  -l, --limit SIZE     exercise only the first SIZE bytes (default 1G)\n"
          "  -M, --max-request SIZE  largest request (default 1M)\n"
          "  -S, --stall S        fail when nothing completes for S seconds (default 60)\n"
          "  -W, --writes PCT     requests that are writes (default 55); of the others 70%%\n"
          "                       are reads, then write-zeroes, trims, caches, flushes\n"
          "  -F, --fua PCT        writes, zeroes and trims with FUA (default 5)\n"
          "  -O, --shared PCT     requests that go to the shared zone (default 25; 0: none)\n"
          "  -H, --hot PCT        share of each second spent in bursts of 4K writes to\n"
          "                       the shared zone's first 64K from every connection\n"
          "                       (default 40)\n"
          "  -Z, --shared-size SIZE  the shared zone at the end of the range, where all\n"
          "                       connections overwrite each other and each sector read\n"
          "                       must be one that was written there (default 1M, or\n"
          "                       two preferred blocks)\n"
          "  -J, --journal FILE   when the server dies, save what the range must\n"
          "                       hold to FILE (needs -O 0)\n"
          "  -V, --verify-journal FILE  only read the range and check it against\n"
          "                       FILE's journal (same URI and -l; needs -O 0)\n"
          "  -v, --verbose        progress every 10 s, per-connection counts\n"
          "Exit status: 0 all verified, 1 mismatch or request error, 2 usage or\n"
          "connection setup, 3 hang, 4 connection lost.\n", MAX_DEPTH);
  exit(status);
}

int
main(int argc, char **argv)
{
  static const struct option lopts[] = {
    { "connections", required_argument, NULL, 'c' },
    { "depth", required_argument, NULL, 'q' },
    { "seconds", required_argument, NULL, 't' },
    { "requests", required_argument, NULL, 'n' },
    { "seed", required_argument, NULL, 's' },
    { "limit", required_argument, NULL, 'l' },
    { "max-request", required_argument, NULL, 'M' },
    { "stall", required_argument, NULL, 'S' },
    { "shared", required_argument, NULL, 'O' },
    { "writes", required_argument, NULL, 'W' },
    { "fua", required_argument, NULL, 'F' },
    { "hot", required_argument, NULL, 'H' },
    { "shared-size", required_argument, NULL, 'Z' },
    { "journal", required_argument, NULL, 'J' },
    { "verify-journal", required_argument, NULL, 'V' },
    { "verbose", no_argument, NULL, 'v' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  bool have_seed = false;
  char what[64];
  int64_t size, maxbs, minbs;
  unsigned i;
  int opt, status;

  while ((opt = getopt_long(argc, argv, "c:q:t:n:s:l:M:S:O:Z:W:F:H:J:V:vh", lopts, NULL)) != -1) {
    switch (opt) {
    case 'c': nconn = (unsigned)strtoul(optarg, NULL, 0); break;
    case 'q': depth = (unsigned)strtoul(optarg, NULL, 0); break;
    case 't': seconds = strtod(optarg, NULL); break;
    case 'n': max_requests = strtoull(optarg, NULL, 0); break;
    case 's': seed = strtoull(optarg, NULL, 0); have_seed = true; break;
    case 'l': limit = parse_size(optarg); break;
    case 'M': maxreq = (size_t)parse_size(optarg); break;
    case 'S': stall_secs = strtod(optarg, NULL); break;
    case 'O': shared_pct = (unsigned)strtoul(optarg, NULL, 0); break;
    case 'W': write_pct = (unsigned)strtoul(optarg, NULL, 0); break;
    case 'F': fua_pct = (unsigned)strtoul(optarg, NULL, 0); break;
    case 'H': hot_pct = (unsigned)strtoul(optarg, NULL, 0); break;
    case 'Z': shared_len = parse_size(optarg); break;
    case 'J': journal_out = optarg; break;
    case 'V': journal_in = optarg; break;
    case 'v': verbose = true; break;
    case 'h': usage(stdout, 0); break;
    default: usage(stderr, 2);
    }
  }
  if (optind != argc - 1)
    usage(stderr, 2);
  uri = argv[optind];
  if (nconn < 1 || nconn > MAX_CONNS || depth < 1 || depth > MAX_DEPTH ||
      maxreq < SECTOR || stall_secs <= 0 || shared_pct > 100 ||
      write_pct > 100 || fua_pct > 100 || hot_pct > 100) {
    fprintf(stderr, "nbdstress: connections 1..%u, depth 1..%u, max request >= 512, "
            "stall > 0\n", MAX_CONNS, MAX_DEPTH);
    exit(2);
  }
  if ((journal_out || journal_in) && (shared_pct != 0 || (journal_out && journal_in))) {
    fprintf(stderr, "nbdstress: -J and -V need -O 0, and exclude each other\n");
    exit(2);
  }
  if (!have_seed)
    seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);

  for (i = 0; i < nconn; i++) {
    struct conn *c = &conns[i];

    c->id = i;
    c->rng = seed * 1000003 + i;
    c->h = nbd_create();
    if (c->h == NULL || nbd_connect_uri(c->h, uri) == -1) {
      say("connection %u to %s: %s", i, uri, nbd_get_error());
      exit(2);
    }
  }
  size = nbd_get_size(conns[0].h);
  if (size < 0) {
    say("%s: %s", uri, nbd_get_error());
    exit(2);
  }
  if (nbd_is_read_only(conns[0].h) == 1) {
    say("%s is read-only", uri);
    exit(2);
  }
  can_fua = nbd_can_fua(conns[0].h) == 1;
  can_trim = nbd_can_trim(conns[0].h) == 1;
  can_zero = nbd_can_zero(conns[0].h) == 1;
  can_flush = nbd_can_flush(conns[0].h) == 1;
  can_cache = nbd_can_cache(conns[0].h) == 1;
  can_df = nbd_can_df(conns[0].h) == 1;
  minbs = nbd_get_block_size(conns[0].h, LIBNBD_SIZE_MINIMUM);
  maxbs = nbd_get_block_size(conns[0].h, LIBNBD_SIZE_MAXIMUM);
  if (minbs > 0)
    min_block = (uint64_t)minbs;
  if (min_block > UNIT || UNIT % min_block != 0) {
    say("minimum block size %" PRIu64 " is not a divisor of %u: not supported", min_block, UNIT);
    exit(2);
  }
  if (maxbs > 0 && (uint64_t)maxbs < maxreq)
    maxreq = (size_t)maxbs;
  maxreq = (size_t)align_down(maxreq, min_block);
  region = align_down(MIN((uint64_t)size, limit), UNIT);
  if (region == 0) {
    say("export of %" PRId64 " bytes is too small", size);
    exit(2);
  }
  if (shared_pct == 0)
    shared_len = 0;
  else if (shared_len == 0) {
    /* Default: 1 MiB, or two of the server's preferred blocks (raidd
     * prefers RAID 5's full stripe), at most a quarter of the range. */
    int64_t pref = nbd_get_block_size(conns[0].h, LIBNBD_SIZE_PREFERRED);

    shared_len = UINT64_C(1) << 20;
    if (pref > 0 && 2 * (uint64_t)pref > shared_len)
      shared_len = 2 * (uint64_t)pref;
    shared_len = MIN(shared_len, region / 4);
  }
  shared_len = align_down(MIN(shared_len, region), UNIT);
  if (shared_len == 0)
    shared_pct = 0;
  shared_off = region - shared_len;
  units = shared_off / UNIT;
  if (nconn > 1 && nbd_can_multi_conn(conns[0].h) != 1)
    say("warning: the export does not advertise CAN_MULTI_CONN");

  shadow = malloc(region);
  busy = calloc(region / UNIT, 1);
  wbusy = calloc(region / UNIT, sizeof *wbusy);
  wgen = calloc(region / UNIT, sizeof *wgen);
  if (shadow == NULL || busy == NULL || wbusy == NULL || wgen == NULL) {
    say("out of memory for a %" PRIu64 "-byte shadow", region);
    exit(2);
  }
  if (max_requests)
    snprintf(what, sizeof what, "%" PRIu64 " requests", max_requests);
  else
    snprintf(what, sizeof what, "%g s", seconds);
  say("seed %" PRIu64 ": %u connections x %u requests in flight, %s, "
      "%" PRIu64 " of %" PRId64 " bytes (shared zone %" PRIu64 " bytes at %" PRIu64
      ", %u%% of the requests), requests up to %zu bytes%s%s%s%s%s%s",
      seed, nconn, depth, what, region, size, shared_len, shared_off, shared_pct, maxreq,
      can_fua ? ", fua" : "", can_flush ? ", flush" : "", can_trim ? ", trim" : "",
      can_zero ? ", zero" : "", can_cache ? ", cache" : "", can_df ? ", df" : "");

  t_start = now();
  status = 0;
  if (journal_in) {
    journal_load();
    if (!sweep(P_CHECK))
      status = 1;
  }
  else if (!sweep(P_LOAD)) {
    say("reading the export in failed");
    status = 1;
  }
  else if (!run() || !flush_all())
    status = 1;
  else if (!sweep(P_CHECK))
    status = 1;
  if (lost)
    status = 4;
  else if (stalled_or_lost() && total_in_flight() > 0)
    status = 3;
  if (status == 1 && total_in_flight() > 0) {
    /* A failure with requests in flight: let them finish (or stall). */
    while (total_in_flight() > 0 && pump(1000))
      ;
    if (lost)
      status = 4;
    else if (total_in_flight() > 0)
      status = 3;
  }

  if (verbose)
    for (i = 0; i < nconn; i++)
      say("connection %u: %" PRIu64 " writes numbered", i, conns[i].wseq);
  printf("nbdstress: seed %" PRIu64 ", %.1f s: %" PRIu64 " requests (%" PRIu64 " reads, %"
         PRIu64 " writes, %" PRIu64 " zeroes, %" PRIu64 " trims, %" PRIu64 " caches, %" PRIu64
         " flushes), %" PRIu64 " bytes written, %" PRIu64 " bytes read and verified (%" PRIu64
         " more read under overlapping writes, unchecked), %" PRIu64 " mismatches, %" PRIu64 " errors%s\n",
         seed, now() - t_start,
         n_req[K_READ] + n_req[K_WRITE] + n_req[K_ZERO] + n_req[K_TRIM] + n_req[K_CACHE]
         + n_req[K_FLUSH],
         n_req[K_READ], n_req[K_WRITE], n_req[K_ZERO], n_req[K_TRIM], n_req[K_CACHE],
         n_req[K_FLUSH], bytes_written, bytes_verified, bytes_unchecked, n_mismatches, n_errors,
         status == 3 ? " (HANG)" : status == 4 ? " (connection lost)" : "");
  fflush(stdout);
  if (status == 4 && journal_out)
    journal_save();
  if (status == 3 || status == 4) {
    /* Requests are still in flight: their buffers must outlive libnbd. */
    _exit(status);
  }
  for (i = 0; i < nconn; i++) {
    if (!conns[i].dead)
      nbd_shutdown(conns[i].h, 0);
    nbd_close(conns[i].h);
  }
  free(shadow);
  free(busy);
  free(wbusy);
  free(wgen);
  if (status == 0 && (n_errors || n_mismatches))
    status = 1;
  return status;
}
