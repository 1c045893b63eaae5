/* Description: power-loss torture.  RAID 0, 1, 5 and 10 arrays over
 * simulated drives with volatile write caches ("sim:FILE?cache=volatile",
 * lib/member-sim-cache.c) run verified writers with random flushes and
 * FUA writes; at a random moment (seeded) the power of every member is
 * cut at one instant; the drives are powered on again (their files are
 * opened again), the array is assembled through the normal path (the
 * superblocks say it was not stopped cleanly, so it resyncs; unless safe
 * mode had marked it clean because the writers paused for its delay just
 * before the cut: then it must not need one, which the checks below
 * prove), and then:
 *   - every write acknowledged before a flush that completed before the
 *     cut, and every FUA write acknowledged before it, reads back exactly;
 *   - every sector holds a value allowed for it: its last durable value
 *     or that of a write issued after it (unflushed or in flight at the
 *     cut), never an older one, never a value written elsewhere or torn
 *     inside a sector;
 *   - a scrub (check) finds mismatch_cnt 0 (RAID 1, 5, 10).
 * Trial kinds, drawn per trial:
 *   all      the cut takes every member at once;
 *   subset   one member loses power first (its cache lost, the array goes
 *            on degraded when its I/O fails), the rest later;
 *   fail     a member is failed (raid_array_fail_member()) mid-trial;
 *   rebuild  a member was failed and a new one is being rebuilt (throttled)
 *            when the power goes: the cut waits until the rebuild has got
 *            a random part of the way, so it lands during the rebuild;
 *   reshape  (RAID 0, 5, 10) the array is being restriped over one more
 *            member (raid_array_grow_disks(), throttled; a RAID 10 near-2
 *            of 4 becomes one of 5; a RAID 0 gets its new member with
 *            raid_array_grow_disks_add() and runs as a RAID 5 missing
 *            its parity role, which it still is if assembly resumed the
 *            reshape, and the takeover to RAID 0 ends it), or to another
 *            layout and chunk (a
 *            RAID 10: chunk) over as many (raid_array_grow_shape()),
 *            or (RAID 5, 10) to one member fewer, backwards, the array
 *            first shown no larger than that holds (the writers keep to
 *            it; half of a RAID 10's started as md starts its own, with
 *            one chunk of room, md_gap_start()); half of a RAID 10's
 *            restripes have no more room before the data than a chunk
 *            either (md's, and raidd takes it: its steps end inside
 *            rows, and so its checkpoints), when the power goes, a
 *            random part of the way: assembly resumes the reshape from
 *            its checkpoint and the model must hold in both layouts (a
 *            write flushed after the reshape moved its row is durable
 *            though the checkpoint may not say the row moved yet: such
 *            writes wait for the checkpoint, lib/sync/reshape.c), then
 *            the array has its new size.
 * An array assembled degraded is then rebuilt onto a new member and
 * checked again, with another scrub.
 *
 * The model of what may be on disk (per sector).  Each writer owns the
 * units (UNIT bytes) u with u % WRITERS == its index and never has two
 * requests on one unit in flight, so every sector's writes form one
 * sequence, in the owner's log.  A write is durable when it was
 * acknowledged before the cut and was FUA, or was acknowledged before a
 * flush was submitted that completed before the cut (a global
 * acknowledgement counter orders the two: a flush covers the
 * acknowledgements counted when it was submitted).  A sector's floor is
 * its last durable write; allowed are the floor and every write after it.
 * Every sector written carries a tag (sector, writer, log index) and
 * bytes derived from it, so what a sector holds names its write.  A cut
 * is counted from the thread that makes it, after setting the flag that
 * stops completions from counting: nothing completed after the cut began
 * is taken as acknowledged.
 *
 * The RAID 5 write hole.  A RAID 5 that comes back degraded after a power
 * cut cannot rebuild a row whose data and parity the cut left out of step
 * (md refuses to start it without --force for this reason).  For such an
 * array the missing member's sectors in rows (member sector) with a write
 * that was not durable at the cut may hold anything; everything else is
 * held to the model.  Assembly is tried without force first.
 *
 * Resync, drawn per trial (RAID 1, 5, 10):
 *   full     no bitmap: after the unclean stop the whole array is resynced;
 *   bitmap   md's internal write-intent bitmap (16 or 256 KiB chunks): the
 *            resync goes over the chunks whose bits the cut left set only;
 *            the same model and scrub prove that this leaves mirrors and
 *            parity consistent, and the bytes it went over are counted;
 *            half the RAID 1 bitmap trials write behind (md's
 *            write-behind, up to 8 writes) on a slow write-mostly last
 *            role: flushes and FUA must still cover it, and the resync
 *            must copy to it, never from it; reshapes keep their bitmap
 *            (but for md's chunk of room, which has none for one).
 *
 * Runs: a few trials per level by default (RAID_TEST_SCALE scales them),
 * POWERLOSS_TRIALS=N trials per level, or TORTURE_SECONDS=N of trials per
 * level, POWERLOSS_LEVEL=L for level L alone; counts per level and kind
 * are printed.
 */
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

#include "internal.h"           /* member_sim_power_cut() */
#include "md/meta.h"            /* meta_may_say_clean() */
#include "sync/engine.h"        /* sync_synced() */
#include "testlib.h"

/* Trials per level in make check, at RAID_TEST_SCALE=100 (RAID 0 has two
 * kinds of trial and gets half); fewer under a sanitizer. */
#define TRIALS_DEFAULT (UNDER_SANITIZER ? 4 : 8)

#define WRITERS 2
#define QD 4
#define UNIT (32 * KiB)
#define USECT (UNIT / 512)
#define MEMBER_DATA (8 * MiB)
#define DATA_OFFSET (1 * MiB)
#define MAX_FILES 10
#define TAG_MAGIC UINT64_C(0x706f7765726c6f73)    /* "powerlos" */
#define REBUILD_RATE (16 * MiB)

enum kind { K_ALL, K_SUBSET, K_FAIL, K_REBUILD, K_RESHAPE, NKINDS };
static const char *const kind_names[] = { "all", "subset", "fail", "rebuild", "reshape" };
enum resync_mode { RESYNC_FULL, RESYNC_BITMAP };

struct rec {                    /* one write, in its writer's log */
  uint64_t sector;
  uint32_t n;
  bool fua;
  uint64_t ack;                 /* global acknowledgement number, 0: none */
};

struct trial;

struct writer {
  struct trial *t;
  unsigned id;
  pthread_t thread;
  struct raid_queue *q;
  struct rng rng;
  struct rec *log;
  size_t nlog, cap;
  char err[512];                /* first failure */
};

struct req {
  struct writer *w;
  int op;                       /* 0 write, 1 flush, 2 read */
  uint64_t unit;                /* UINT64_MAX: none */
  size_t rec;                   /* write: its log index */
  uint64_t sector;
  uint32_t n;
  uint64_t flush_covers;
  uint8_t *buf;
  bool busy;
};

struct trial {
  int level;
  unsigned disks;
  uint32_t chunk;
  enum kind kind;
  enum resync_mode resync;
  uint32_t bm_chunk;            /* RESYNC_BITMAP: the bitmap's chunk */
  bool write_behind;            /* RAID 1 with a bitmap: the last role is a slow
                                   write-mostly member written behind */
  enum sim_cut how;
  uint64_t seed;
  char desc[200];
  unsigned nfiles;
  char spec[MAX_FILES][512];
  struct raid_member *m[MAX_FILES];
  struct raid_array *a;
  uint64_t size, nsect, nunits;
  uint64_t wunits;              /* units the writers use: all, or (bitmap
                                   trials) the first quarter, so that the
                                   resync has clean chunks to skip */
  int32_t *cur;                 /* per sector: last acknowledged log index, -1 */
  _Atomic uint64_t ack_seq, durable_upto, ops;
  _Atomic bool cut, stage1;
  uint64_t cut_at, stage1_at, rebuild_at;
  unsigned victim;              /* role of subset / fail / rebuild */
  bool mid_rebuild;             /* the cut found the rebuild (reshape) running */
  bool to_shape;                /* the reshape: to another layout and chunk */
  bool to_back;                 /* the reshape: to one member fewer (backwards) */
  bool md_gap;                  /* a RAID 10's with md's one chunk of room */
  struct tback back;            /* its plan */
  /* meta_may_say_clean() right after the cut: false means every member
   * said "active" (safe mode had not begun marking it clean). */
  bool clean_at_cut;
  struct sim_cut_stats cut_stats;
  struct writer w[WRITERS];
};

/* ---- counts, for the report ------------------------------------------------ */

struct counts {
  unsigned trials, kind[NKINDS], mid_rebuild, mid_reshape, degraded, forced, bitmap;
  unsigned back, mid_back;      /* reshapes to fewer members, cut mid-way */
  unsigned md_gap, mid_md_gap;  /* a RAID 10's with md's chunk of room */
  unsigned md_gap_fwd;          /* of those, to more members */
  unsigned write_behind;         /* RAID 1 trials writing behind on a slow member */
  unsigned clean_cuts;           /* cut while safe mode had it clean */
  uint64_t acked, durable, dirty, lost, exposed;
  uint64_t bm_synced, bm_total;  /* bitmap trials: bytes resynced, of */
  unsigned reshape_bm;           /* reshapes with a bitmap */
};

static unsigned torture_s, trials_env;
static int level_env = -1;              /* POWERLOSS_LEVEL: that level alone */
static uint64_t seed_env;               /* POWERLOSS_SEED: that trial alone */

/* ---- sector tags ----------------------------------------------------------- */

static uint64_t
mix(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static void
tag_sector(uint8_t *p, uint64_t sector, unsigned writer, uint32_t idx)
{
  uint64_t h[64], x = mix(sector * 131 + writer * 7919 + (uint64_t)idx * 104729);
  unsigned i;

  h[0] = TAG_MAGIC;
  h[1] = sector;
  h[2] = (uint64_t)writer << 32 | idx;
  for (i = 3; i < 64; i++)
    h[i] = x = mix(x);
  memcpy(p, h, 512);
}

/* What sector S's bytes P are: 0 and *IDX = -1 for zeroes (never
 * written), 0 and the writer's log index for an intact tag of S by its
 * owner, else -1. */
static int
parse_sector(const struct trial *t, const uint8_t *p, uint64_t s, int64_t *idx)
{
  static const uint8_t zero[512];
  uint64_t h[3];
  uint8_t want[512];
  unsigned owner = (unsigned)((s / USECT) % WRITERS);

  if (memcmp(p, zero, 512) == 0) {
    *idx = -1;
    return 0;
  }
  memcpy(h, p, sizeof h);
  if (h[0] != TAG_MAGIC || h[1] != s || (h[2] >> 32) != owner ||
      (h[2] & 0xffffffffu) >= t->w[owner].nlog)
    return -1;
  tag_sector(want, s, owner, (uint32_t)h[2]);
  if (memcmp(p, want, 512) != 0)
    return -1;
  *idx = (int64_t)(h[2] & 0xffffffffu);
  {
    const struct rec *r = &t->w[owner].log[*idx];

    if (s < r->sector || s >= r->sector + r->n)
      return -1;
  }
  return 0;
}

/* ---- writers ----------------------------------------------------------------- */

static void
werr(struct writer *w, const char *what, int res)
{
  if (w->err[0] == '\0')
    snprintf(w->err, sizeof w->err, "%s: %s (%s)", what, strerror(-res),
             raid_get_error());
}

static bool
rebuild_far_enough(struct trial *t)
{
  struct raid_sync_status st;
  int act = t->kind == K_RESHAPE ? RAID_SYNC_RESHAPE : RAID_SYNC_RECOVER;

  if (t->kind != K_REBUILD && t->kind != K_RESHAPE)
    return true;
  raid_array_sync_status(t->a, &st);
  if (st.action != act && !st.due)
    return true;                /* over (or never started): cut anyway */
  return st.action == act && st.done >= t->rebuild_at;
}

/* Stage one (subset, fail) and the cut, from whichever writer gets there. */
static void
maybe_cut(struct writer *w)
{
  struct trial *t = w->t;
  uint64_t ops = atomic_load(&t->ops);

  if ((t->kind == K_SUBSET || t->kind == K_FAIL) && ops >= t->stage1_at &&
      !atomic_exchange(&t->stage1, true)) {
    if (t->kind == K_SUBSET) {
      struct raid_member *v = raid_array_member(t->a, t->victim);

      if (v && member_sim_power_cut(&v, 1, SIM_CUT_SUBSET, t->seed ^ 1, NULL) < 0)
        werr(w, "first cut", -EIO);
    }
    else if (raid_array_fail_member(t->a, t->victim) < 0)
      werr(w, "fail member", -EIO);
  }
  if (ops < t->cut_at || !rebuild_far_enough(t))
    return;
  if (atomic_exchange(&t->cut, true))
    return;
  if (t->kind == K_RESHAPE) {
    struct raid_reshape_status rs;

    t->mid_rebuild = raid_array_reshape_status(t->a, &rs) == 1;
  }
  else
    t->mid_rebuild = t->kind == K_REBUILD &&
      raid_array_member_state(t->a, t->victim) == RAID_MEMBER_RECOVERING;
  if (member_sim_power_cut(t->m, t->nfiles, t->how, t->seed, &t->cut_stats) < 0)
    werr(w, "power cut", -EIO);
  t->clean_at_cut = meta_may_say_clean(t->a);
}

static void
req_done(void *opaque, int res)
{
  struct req *r = opaque;
  struct writer *w = r->w;
  struct trial *t = w->t;
  bool cut = atomic_load(&t->cut);
  uint32_t i;

  r->busy = false;
  if (res < 0 && !cut)
    werr(w, r->op == 0 ? "write failed before the cut" : r->op == 1 ?
         "flush failed before the cut" : "read failed before the cut", res);
  if (res == 0 && r->op == 0) {
    struct rec *rec = &w->log[r->rec];

    if (!cut)
      rec->ack = atomic_fetch_add(&t->ack_seq, 1) + 1;
    for (i = 0; i < r->n; i++)
      t->cur[r->sector + i] = (int32_t)r->rec;
  }
  if (res == 0 && r->op == 1 && !cut) {
    uint64_t d = atomic_load(&t->durable_upto);

    while (d < r->flush_covers &&
           !atomic_compare_exchange_weak(&t->durable_upto, &d, r->flush_covers))
      ;
  }
  if (res == 0 && r->op == 2 && !cut)
    for (i = 0; i < r->n; i++) {
      int64_t idx;

      if (parse_sector(t, r->buf + (size_t)i * 512, r->sector + i, &idx) < 0 ||
          idx != t->cur[r->sector + i]) {
        if (w->err[0] == '\0')
          snprintf(w->err, sizeof w->err, "read of sector %" PRIu64 " returned "
                   "log index %" PRId64 ", last acknowledged %d", r->sector + i,
                   idx, t->cur[r->sector + i]);
        break;
      }
    }
  r->unit = UINT64_MAX;
  atomic_fetch_add(&t->ops, 1);
}

static bool
unit_busy(struct req *rq, uint64_t unit)
{
  unsigned k;

  for (k = 0; k < QD; k++)
    if (rq[k].busy && rq[k].unit == unit)
      return true;
  return false;
}

static void
submit_one(struct writer *w, struct req *r, struct req *all)
{
  struct trial *t = w->t;
  uint64_t per = t->wunits / WRITERS, unit, off;
  unsigned pick = (unsigned)rng_below(&w->rng, 100);
  uint32_t i;
  int res;

  r->w = w;
  r->busy = true;
  if (pick < 10) {
    r->op = 1;
    r->unit = UINT64_MAX;
    r->flush_covers = atomic_load(&t->ack_seq);
    res = raid_aio_flush(w->q, t->a, req_done, r);
    goto submitted;
  }
  do
    unit = rng_below(&w->rng, per) * WRITERS + w->id;
  while (unit_busy(all, unit));
  off = rng_below(&w->rng, USECT);
  r->n = (uint32_t)(rng_percent(&w->rng, 10) ? USECT - off
                    : 1 + rng_below(&w->rng, MIN(16, USECT - off)));
  if (rng_percent(&w->rng, 5)) {
    off = 0;
    r->n = USECT;
  }
  r->unit = unit;
  r->sector = unit * USECT + off;
  if (pick < 25) {
    r->op = 2;
    res = raid_aio_read(w->q, t->a, r->buf, (size_t)r->n * 512, r->sector * 512,
                        req_done, r);
    goto submitted;
  }
  r->op = 0;
  if (w->nlog == w->cap) {
    w->cap = w->cap ? 2 * w->cap : 1024;
    w->log = realloc(w->log, w->cap * sizeof *w->log);
    ck_assert_ptr_nonnull(w->log);
  }
  r->rec = w->nlog++;
  w->log[r->rec] = (struct rec){ r->sector, r->n, pick < 40, 0 };
  for (i = 0; i < r->n; i++)
    tag_sector(r->buf + (size_t)i * 512, r->sector + i, w->id, (uint32_t)r->rec);
  res = raid_aio_write(w->q, t->a, r->buf, (size_t)r->n * 512, r->sector * 512,
                       w->log[r->rec].fua ? RAID_REQ_FUA : 0, req_done, r);
 submitted:
  if (res < 0) {
    r->busy = false;
    r->unit = UINT64_MAX;
    if (!atomic_load(&t->cut))
      werr(w, "request refused before the cut", res);
  }
}

static void *
writer_main(void *arg)
{
  struct writer *w = arg;
  struct trial *t = w->t;
  struct req rq[QD];
  unsigned k, busy;

  memset(rq, 0, sizeof rq);
  for (k = 0; k < QD; k++) {
    rq[k].buf = test_alloc(UNIT);
    rq[k].unit = UINT64_MAX;
  }
  ck_assert_int_eq(raid_queue_new(64, &w->q), 0);
  for (;;) {
    bool cut = atomic_load(&t->cut);

    busy = 0;
    for (k = 0; k < QD; k++) {
      if (!rq[k].busy && !cut && w->err[0] == '\0')
        submit_one(w, &rq[k], rq);
      busy += rq[k].busy;
    }
    if (busy == 0 && (cut || w->err[0]))
      break;
    if (busy && raid_queue_run(w->q, 1) < 0)
      werr(w, "raid_queue_run", -EIO);
    if (w->err[0] && !cut) {
      /* Stop everyone: the failure is reported after the drain. */
      atomic_store(&t->cut, true);
    }
    maybe_cut(w);
  }
  /* Write-behind still in flight on the queue (RAID 1). */
  while (raid_queue_in_flight(w->q) > 0)
    if (raid_queue_run(w->q, 1) < 0) {
      werr(w, "raid_queue_run", -EIO);
      break;
    }
  raid_queue_free(w->q);
  for (k = 0; k < QD; k++)
    test_free(rq[k].buf);
  return NULL;
}

/* ---- a trial ------------------------------------------------------------------- */

static void
quiet_log(int priority, const char *msg, void *opaque)
{
  const char *v = getenv("RAID_TEST_VERBOSE");

  (void)opaque;
  if (v && *v && strcmp(v, "0") != 0)
    fprintf(stderr, "libraid(%d): %s\n", priority, msg);
}

static void
new_file(struct trial *t, unsigned i, bool slow)
{
  char path[400];
  int fd;

  snprintf(path, sizeof path, "%s/pl%d-%u.img", test_dir(), t->level, i);
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, DATA_OFFSET + MEMBER_DATA), 0);
  close(fd);
  snprintf(t->spec[i], sizeof t->spec[i], "sim:%s?%scache=volatile", path,
           slow ? "lat=20us,depth=8," : "");
}

static struct raid_member *
open_spec(const char *spec)
{
  struct raid_member *m;

  ck_assert_msg(raid_member_open(spec, 0, &m) == 0, "%s", raid_get_error());
  return m;
}

/* A RAID 10's reshape to one member fewer as md starts its own (mdadm
 * --grow --raid-devices): the data offset moved later by a single chunk,
 * all raid10_start_reshape() asks (raidd moves it by more), the member
 * size cut by it, nothing moved yet.  Written into the superblocks of
 * T's array, stopped, which is then assembled and goes on, its steps
 * near the bottom ending inside rows (sync/reshape.c's next_lo()). */
static void
md_gap_start(struct trial *t)
{
  struct raid_superblock sb;
  uint8_t buf[RAID_SB_BYTES];
  char path[400];
  unsigned i, n = t->disks - 1;
  int fd;

  ck_assert_int_eq(raid_superblock_read(t->m[0], &sb), 0);
  t->back.gap = t->chunk;
  t->back.ms = (sb.data_size * 512 - t->back.gap) / t->chunk * t->chunk;
  t->back.size = t->back.ms / t->chunk * n / 2 * t->chunk;
  ck_assert_int_eq(raid_array_set_array_size(t->a, t->back.size), 0);
  t->size = t->back.size;
  t->nsect = t->size / 512;
  t->nunits = t->size / UNIT;
  t->wunits = t->nunits;
  raid_array_free(t->a);
  for (i = 0; i < t->disks; i++) {
    snprintf(path, sizeof path, "%s/pl%d-%u.img", test_dir(), t->level, i);
    ck_assert_int_eq(raid_superblock_read_path(path, 0, &sb), 0);
    tback_sb_start(&sb, n, t->chunk, &t->back);
    ck_assert_int_eq(raid_superblock_encode(&sb, buf), 0);
    ck_assert_int_ge(fd = open(path, O_WRONLY | O_CLOEXEC), 0);
    ck_assert_int_eq(pwrite(fd, buf, sizeof buf, (off_t)(sb.super_offset * 512)),
                     (ssize_t)sizeof buf);
    ck_assert_int_eq(fsync(fd), 0);
    close(fd);
    t->m[i] = open_spec(t->spec[i]);
  }
  ck_assert_msg(raid_array_assemble(NULL, t->m, t->disks, 0, &t->a) == 0, "%s: %s",
                t->desc, raid_get_error());
  ck_assert_uint_eq(raid_array_size(t->a), t->back.size);
  raid_array_set_sync_limits(t->a, REBUILD_RATE, REBUILD_RATE);
  ck_assert_msg(raid_array_sync_start(t->a, RAID_SYNC_RESHAPE) == 0, "%s: %s", t->desc,
                raid_get_error());
}

/* The durable floor of every sector: the log index of its last durable
 * write, or -1.  And, for the write hole, the member sectors of RAID 5
 * rows with a write not durable at the cut. */
static void
durable_floor(struct trial *t, int32_t *floor, uint8_t *undurable_ms,
              struct counts *c)
{
  uint64_t upto = atomic_load(&t->durable_upto);
  unsigned wi;
  size_t k;

  for (uint64_t s = 0; s < t->nsect; s++)
    floor[s] = -1;
  for (wi = 0; wi < WRITERS; wi++)
    for (k = 0; k < t->w[wi].nlog; k++) {
      const struct rec *r = &t->w[wi].log[k];
      bool durable = r->ack && (r->fua || r->ack <= upto);
      uint32_t i;

      c->acked += r->ack != 0;
      c->durable += durable;
      for (i = 0; i < r->n; i++) {
        if (durable)
          floor[r->sector + i] = (int32_t)k;
        else if (undurable_ms) {
          unsigned dd, pd;
          uint64_t stripe, ms;

          ref_raid5_map(RAID_LAYOUT_LEFT_SYMMETRIC, t->disks, t->chunk / 512,
                        r->sector + i, &dd, &pd, &stripe, &ms);
          undurable_ms[ms] = 1;
        }
      }
    }
}

/* Read the whole array and hold every sector to the model.  EXPOSED_ROLE
 * (-1: none) and its recovery point: the RAID 5 write hole. */
static void
check_all(struct trial *t, const int32_t *floor, const uint8_t *undurable_ms,
          int exposed_role, uint64_t exposed_from, uint64_t *exposed, const char *when)
{
  uint8_t *buf = test_alloc(MiB);
  uint64_t off, s;

  for (off = 0; off < t->size; off += MiB) {
    size_t len = (size_t)MIN(MiB, t->size - off);
    int r = raid_pread(t->a, buf, len, off);

    ck_assert_msg(r == 0, "%s %s: read at %" PRIu64 ": %s", t->desc, when, off,
                  raid_get_error());
    for (s = off / 512; s < (off + len) / 512; s++) {
      const uint8_t *p = buf + (s * 512 - off);
      int64_t idx;
      bool ok = parse_sector(t, p, s, &idx) == 0 &&
        (idx >= 0 ? idx >= floor[s] : floor[s] < 0);

      if (!ok && exposed_role >= 0) {
        unsigned dd, pd;
        uint64_t stripe, ms;

        ref_raid5_map(RAID_LAYOUT_LEFT_SYMMETRIC, t->disks, t->chunk / 512, s,
                      &dd, &pd, &stripe, &ms);
        if ((int)dd == exposed_role && ms * 512 >= exposed_from && undurable_ms[ms]) {
          (*exposed)++;
          continue;
        }
      }
      if (!ok) {
        char tag[64];

        ck_abort_msg("%s %s: sector %" PRIu64 " holds %s (log index %" PRId64
                     "), but its last durable write is log index %d (writer %u)",
                     t->desc, when, s, tag_str(p, tag, sizeof tag),
                     parse_sector(t, p, s, &idx) == 0 ? idx : -2, floor[s],
                     (unsigned)((s / USECT) % WRITERS));
      }
    }
  }
  test_free(buf);
}

static void
scrub(struct trial *t, const char *when)
{
  struct raid_sync_status st;

  if (t->level == RAID_LEVEL_0 || raid_array_degraded(t->a))
    return;                     /* nothing to compare (a rebuild comes next) */
  ck_assert_msg(raid_array_sync_start(t->a, RAID_SYNC_CHECK) == 0, "%s: %s",
                t->desc, raid_get_error());
  ck_assert_int_eq(raid_array_sync_wait(t->a), 0);
  raid_array_sync_status(t->a, &st);
  ck_assert_msg(st.last_action == RAID_SYNC_CHECK && st.last_mismatches == 0,
                "%s %s: scrub found %" PRIu64 " mismatched sectors", t->desc,
                when, st.last_mismatches);
}

static void
settle(struct trial *t)
{
  int r = raid_array_sync_wait(t->a);

  ck_assert_msg(r == 0, "%s: resync/rebuild: %s", t->desc, raid_get_error());
}

static void
run_trial(int level, uint64_t seed, struct counts *c)
{
  struct trial *t = calloc(1, sizeof *t);
  struct raid_config cfg = { .name = "pl", .level = level,
                             .layout = RAID_LAYOUT_DEFAULT };
  struct raid_member *mm[MAX_FILES];
  struct rng rng;
  int32_t *floor;
  uint8_t *undurable_ms = NULL;
  int exposed_role = -1, r, role;
  uint64_t exposed_from = 0;
  struct raid_sync_status ss;
  unsigned i, pick;
  bool slow, forced = false;

  ck_assert_ptr_nonnull(t);
  rng_seed(&rng, seed);
  t->level = level;
  t->seed = seed;
  t->resync = RESYNC_FULL;
  t->disks = level == RAID_LEVEL_1 ? 2 + (unsigned)rng_below(&rng, 2)
    : level == RAID_LEVEL_10 ? 4 : 3 + (unsigned)rng_below(&rng, 2);
  t->chunk = rng_percent(&rng, 50) ? 16 * KiB : 64 * KiB;
  pick = (unsigned)rng_below(&rng, 100);
  t->kind = level == RAID_LEVEL_0 ? K_ALL
    : pick < 35 ? K_ALL : pick < 55 ? K_SUBSET : pick < 70 ? K_FAIL : K_REBUILD;
  /* A RAID 5 or 10 is restriped in a quarter of its trials (the others'
   * share drawn again from the same pick), a RAID 0 in half of its (it
   * runs as a RAID 5 missing its parity role meanwhile). */
  if (((level == RAID_LEVEL_5 || level == RAID_LEVEL_10) && rng_percent(&rng, 25)) ||
      (level == RAID_LEVEL_0 && rng_percent(&rng, 50)))
    t->kind = K_RESHAPE;
  /* Half of them over as many members, to another layout and chunk. */
  t->to_shape = t->kind == K_RESHAPE && level != RAID_LEVEL_0 && rng_percent(&rng, 50);
  /* Of the others, half to one member fewer: md's backwards reshape. */
  t->to_back = t->kind == K_RESHAPE && level != RAID_LEVEL_0 && !t->to_shape &&
    rng_percent(&rng, 50);
  /* A RAID 10's half of them with the room md asks, one chunk: to fewer
   * started as md starts its own (md_gap_start()), to more with members
   * that have no more before the data. */
  t->md_gap = t->kind == K_RESHAPE && !t->to_shape && level == RAID_LEVEL_10 &&
    rng_percent(&rng, 50);
  pick = (unsigned)rng_below(&rng, 100);
  t->how = pick < 20 ? SIM_CUT_LOSE : pick < 80 ? SIM_CUT_SUBSET : SIM_CUT_KEEP;
  t->victim = (unsigned)rng_below(&rng, t->disks);
  t->stage1_at = 20 + rng_below(&rng, 200);
  t->cut_at = t->stage1_at + 20 + rng_below(&rng, 600);
  t->rebuild_at = rng_between(&rng, MEMBER_DATA / 8, MEMBER_DATA * 7 / 8);
  slow = rng_percent(&rng, 50);
  /* Reshapes too keep their bitmap, as md's do (a RAID 10's over more
   * members put back over the larger size, every bit set), but for md's
   * chunk of room, which leaves none for one. */
  if (level != RAID_LEVEL_0 && rng_percent(&rng, 50) && !t->md_gap) {
    t->resync = RESYNC_BITMAP;
    t->bm_chunk = rng_percent(&rng, 50) ? 16 * KiB : 256 * KiB;
    t->write_behind = level == RAID_LEVEL_1 && rng_percent(&rng, 50);
  }
  snprintf(t->desc, sizeof t->desc, "raid%d disks=%u chunk=%uK trial seed=0x%" PRIx64
           " kind=%s%s cut=%s%s resync=%s%s", level, t->disks, t->chunk >> 10, seed,
           kind_names[t->kind], t->to_shape ? " (layout, chunk)" : t->md_gap && t->to_back
           ? " (fewer, md's chunk of room)" : t->to_back ? " (fewer)"
           : t->md_gap ? " (md's chunk of room)" : "",
           t->how == SIM_CUT_LOSE ? "lose" :
           t->how == SIM_CUT_SUBSET ? "subset" : "keep", slow ? " lat=20us" : "",
           t->resync == RESYNC_BITMAP ? "bitmap" : "full",
           t->write_behind ? " write-behind" : "");
  test_verbose("%s", t->desc);

  /* Create (files of zeroes: every copy and parity agree already). */
  cfg.chunk_size = t->chunk;
  cfg.raid_disks = t->disks;
  /* The metadata 1.2 superblock ends at 8 KiB. */
  cfg.data_offset = t->md_gap && !t->to_back ? 8 * KiB + t->chunk : DATA_OFFSET;
  cfg.member_size = MEMBER_DATA;
  if (level == RAID_LEVEL_10)
    cfg.layout = RAID_LAYOUT_RAID10_NEAR(2);
  if (t->resync == RESYNC_BITMAP) {
    cfg.bitmap = RAID_BITMAP_INTERNAL;
    cfg.bitmap_chunk = t->bm_chunk;
  }
  if (t->write_behind)
    cfg.write_behind = 8;
  for (i = 0; i < t->disks; i++) {
    new_file(t, i, slow);
    if (t->write_behind && i == t->disks - 1)
      /* A slow disk mirroring fast ones: its writes fall behind. */
      snprintf(t->spec[i], sizeof t->spec[i], "sim:%s/pl%d-%u.img?lat=300us,depth=4,"
               "cache=volatile", test_dir(), t->level, i);
    t->m[i] = open_spec(t->spec[i]);
    raid_member_set_write_mostly(t->m[i], t->write_behind && i == t->disks - 1);
  }
  t->nfiles = t->disks;
  r = raid_array_create(&cfg, t->m, RAID_CREATE_ASSUME_CLEAN, &t->a);
  ck_assert_msg(r == 0, "%s: create: %s", t->desc, raid_get_error());
  t->size = raid_array_size(t->a);
  t->nsect = t->size / 512;
  t->nunits = t->size / UNIT;
  t->wunits = t->resync == RESYNC_BITMAP ? t->nunits / 4 : t->nunits;
  t->cur = malloc(t->nsect * sizeof *t->cur);
  floor = malloc(t->nsect * sizeof *floor);
  ck_assert(t->cur && floor);
  for (uint64_t s = 0; s < t->nsect; s++)
    t->cur[s] = -1;
  if (t->kind == K_REBUILD) {
    ck_assert_int_eq(raid_array_fail_member(t->a, t->victim), 0);
    new_file(t, t->nfiles, slow);
    t->m[t->nfiles] = open_spec(t->spec[t->nfiles]);
    raid_array_set_sync_limits(t->a, REBUILD_RATE, REBUILD_RATE);
    r = raid_array_add_member(t->a, t->m[t->nfiles], &role);
    ck_assert_msg(r == 0 && role == (int)t->victim, "%s: add: %s", t->desc,
                  raid_get_error());
    t->nfiles++;
    ck_assert_int_eq(raid_array_sync_start(t->a, RAID_SYNC_RECOVER), 0);
  }
  if (t->kind == K_RESHAPE && t->to_shape) {
    raid_array_set_sync_limits(t->a, REBUILD_RATE, REBUILD_RATE);
    r = raid_array_grow_shape(t->a, 0, level == RAID_LEVEL_5 ? RAID_LAYOUT_LEFT_ASYMMETRIC
                              : RAID_LAYOUT_DEFAULT,
                              t->chunk == 16 * KiB ? 64 * KiB : 16 * KiB);
    ck_assert_msg(r == 0, "%s: reshape: %s", t->desc, raid_get_error());
  }
  else if (t->kind == K_RESHAPE && t->md_gap && t->to_back)
    md_gap_start(t);
  else if (t->kind == K_RESHAPE && t->to_back) {
    /* Shown no more than the new shape holds first (mdadm --grow
     * --array-size): the writers keep to that. */
    struct raid_superblock sb0;

    ck_assert_int_eq(raid_superblock_read(t->m[0], &sb0), 0);
    tback_plan(level, t->disks - 1, t->chunk, t->chunk, &sb0, &t->back);
    ck_assert_int_eq(raid_array_set_array_size(t->a, t->back.size), 0);
    t->size = t->back.size;
    t->nsect = t->size / 512;
    t->nunits = t->size / UNIT;
    t->wunits = t->nunits;
    raid_array_set_sync_limits(t->a, REBUILD_RATE, REBUILD_RATE);
    r = raid_array_grow_disks(t->a, t->disks - 1);
    ck_assert_msg(r == 0, "%s: reshape to fewer: %s", t->desc, raid_get_error());
  }
  else if (t->kind == K_RESHAPE && level == RAID_LEVEL_0) {
    /* Its new member comes with the grow. */
    new_file(t, t->nfiles, slow);
    t->m[t->nfiles] = open_spec(t->spec[t->nfiles]);
    raid_array_set_sync_limits(t->a, REBUILD_RATE, REBUILD_RATE);
    r = raid_array_grow_disks_add(t->a, t->disks + 1, &t->m[t->nfiles], 1);
    ck_assert_msg(r == 0, "%s: restripe: %s", t->desc, raid_get_error());
    t->nfiles++;
  }
  else if (t->kind == K_RESHAPE) {
    new_file(t, t->nfiles, slow);
    t->m[t->nfiles] = open_spec(t->spec[t->nfiles]);
    r = raid_array_add_member(t->a, t->m[t->nfiles], &role);
    ck_assert_msg(r == 0 && role < 0, "%s: add a spare: %s", t->desc, raid_get_error());
    t->nfiles++;
    raid_array_set_sync_limits(t->a, REBUILD_RATE, REBUILD_RATE);
    r = raid_array_grow_disks(t->a, t->disks + 1);
    ck_assert_msg(r == 0, "%s: restripe: %s", t->desc, raid_get_error());
  }

  /* Write until the cut. */
  for (i = 0; i < WRITERS; i++) {
    t->w[i].t = t;
    t->w[i].id = i;
    rng_seed(&t->w[i].rng, seed * 31 + i + 1);
    ck_assert_int_eq(pthread_create(&t->w[i].thread, NULL, writer_main, &t->w[i]), 0);
  }
  for (i = 0; i < WRITERS; i++)
    pthread_join(t->w[i].thread, NULL);
  for (i = 0; i < WRITERS; i++)
    ck_assert_msg(t->w[i].err[0] == '\0', "%s: writer %u: %s", t->desc, i, t->w[i].err);
  /* The machine is dead: the array goes with it (its clean-stop
   * superblock writes fail on the dead drives). */
  raid_array_free(t->a);
  t->a = NULL;

  /* Power on, assemble. */
  if (level == RAID_LEVEL_5)
    undurable_ms = calloc(MEMBER_DATA / 512, 1);
  durable_floor(t, floor, undurable_ms, c);
  for (i = 0; i < t->nfiles; i++) {
    struct raid_superblock sb;

    mm[i] = open_spec(t->spec[i]);
    if (raid_superblock_read(mm[i], &sb) == 0)
      test_verbose("member %u: events %" PRIu64 " resync_offset %" PRIu64
                   " dev_number %u roles %x %x %x %x %x", i, sb.events,
                   sb.resync_offset, sb.dev_number, sb.dev_roles[0], sb.dev_roles[1],
                   sb.dev_roles[2], sb.dev_roles[3], sb.dev_roles[4]);
  }
  r = raid_array_assemble(NULL, mm, t->nfiles, RAID_ASSEMBLE_RUN, &t->a);
  if (r < 0 && level != RAID_LEVEL_0) {
    /* The cut came during the superblock update that recorded a failure,
     * leaving the survivors' events apart (md wants --force then), or a
     * degraded RAID 5 not stopped cleanly (the write hole: --force). */
    test_verbose("%s: assembly refused (%s), forcing", t->desc, raid_get_error());
    r = raid_array_assemble(NULL, mm, t->nfiles, RAID_ASSEMBLE_RUN | RAID_ASSEMBLE_FORCE,
                            &t->a);
    c->forced++;
    forced = true;
  }
  ck_assert_msg(r == 0, "%s: assemble after the cut: %s", t->desc, raid_get_error());
  /* Safe mode may have marked the array clean if the writers paused for
   * its delay just before the cut (then the checks below prove that
   * clean was true); otherwise every member said "active". */
  ck_assert_msg(level == RAID_LEVEL_0 || raid_array_needs_resync(t->a) ||
                raid_array_degraded(t->a) || t->clean_at_cut,
                "%s: assembled clean after a power cut while active", t->desc);
  if (t->clean_at_cut)
    c->clean_cuts++;
  if (level == RAID_LEVEL_5)
    for (i = 0; i < t->disks; i++) {
      struct raid_member_info info[MAX_FILES + 2];
      unsigned n = raid_array_members(t->a, info, MAX_FILES + 2), k;
      int st = raid_array_member_state(t->a, i);

      if (st == RAID_MEMBER_IN_SYNC)
        continue;
      exposed_role = (int)i;
      exposed_from = 0;
      for (k = 0; k < n && k < MAX_FILES + 2; k++)
        if (info[k].role == (int)i && info[k].state == RAID_MEMBER_RECOVERING)
          exposed_from = info[k].recovery_offset;
    }
  if (raid_array_degraded(t->a) || exposed_role >= 0)
    c->degraded++;

  /* Resync (and any rebuild the superblocks ask for), then check. */
  raid_array_set_sync_limits(t->a, 0, 0);
  raid_array_set_auto_sync(t->a, 1);
  settle(t);
  if (t->resync == RESYNC_BITMAP) {
    struct raid_bitmap_info bi;

    ck_assert_int_eq(raid_array_bitmap(t->a, &bi), 0);
    ck_assert_msg(bi.present, "%s: the bitmap is gone after assembly", t->desc);
    raid_array_sync_status(t->a, &ss);
    /* Writes went to the first quarter of the array, which is the first
     * quarter of each member's data at every level: the resync went over
     * that, to the next piece (1 MiB) at most, unless forced assembly
     * asked for all of it or a reshape ran (a RAID 5's writes mark the
     * rows of both shapes, a RAID 10's bitmap came back over the larger
     * size with every bit set). */
    if (ss.last_action == RAID_SYNC_RESYNC && !forced && t->kind != K_RESHAPE)
      ck_assert_msg(sync_synced(t->a) <= MEMBER_DATA / 4 + 1 * MiB,
                    "%s: the bitmap resync went over %" PRIu64 " bytes of each member",
                    t->desc, sync_synced(t->a));
    if (t->kind == K_RESHAPE)
      c->reshape_bm++;
    if (ss.last_action == RAID_SYNC_RESYNC) {
      c->bitmap++;
      c->bm_synced += sync_synced(t->a);
      c->bm_total += MEMBER_DATA;
    }
  }
  /* A RAID 0's reshape resumed by assembly ends as the RAID 5 missing
   * its parity role it ran as (the RAID 0 is not recorded, as with
   * mdadm): the takeover back, as mdadm --grow --continue. */
  if (t->kind == K_RESHAPE && level == RAID_LEVEL_0 && raid_array_level(t->a) != level) {
    ck_assert_int_eq(raid_array_degraded(t->a), 1);
    r = raid_array_grow_level(t->a, RAID_LEVEL_0);
    ck_assert_msg(r == 0, "%s: back to RAID 0: %s", t->desc, raid_get_error());
  }
  if (t->kind == K_RESHAPE && !raid_array_degraded(t->a)) {
    /* The reshape went on from its checkpoint (before the resync) and
     * is done: the new size, over one more member. */
    struct raid_reshape_status rs;

    ck_assert_msg(raid_array_reshape_status(t->a, &rs) == 0, "%s: the reshape is still "
                  "under way at %" PRIu64, t->desc, rs.position);
    if (t->to_back) {
      ck_assert_uint_eq(raid_array_raid_disks(t->a), t->disks - 1);
      ck_assert_uint_eq(raid_array_size(t->a), t->back.size);
      ck_assert_uint_eq(raid_array_member_size(t->a), t->back.ms);
    }
    else if (t->to_shape) {
      ck_assert_uint_eq(raid_array_raid_disks(t->a), t->disks);
      ck_assert_int_eq(raid_array_layout(t->a), level == RAID_LEVEL_5
                       ? RAID_LAYOUT_LEFT_ASYMMETRIC : RAID_LAYOUT_RAID10_NEAR(2));
      ck_assert_uint_eq(raid_array_size(t->a), t->size);
    }
    else if (level == RAID_LEVEL_10) {
      /* Near-2 over 5: two and a half chunks a row, from two. */
      uint64_t rows = t->size / t->chunk / 2;

      ck_assert_uint_eq(raid_array_raid_disks(t->a), t->disks + 1);
      ck_assert_uint_eq(raid_array_size(t->a), rows * 5 / 2 * t->chunk);
    }
    else if (level == RAID_LEVEL_0) {
      ck_assert_int_eq(raid_array_level(t->a), RAID_LEVEL_0);
      ck_assert_uint_eq(raid_array_raid_disks(t->a), t->disks + 1);
      ck_assert_uint_eq(raid_array_size(t->a), t->size / t->disks * (t->disks + 1));
    }
    else {
      ck_assert_uint_eq(raid_array_raid_disks(t->a), t->disks + 1);
      ck_assert_uint_eq(raid_array_size(t->a), t->size / (t->disks - 1) * t->disks);
    }
  }
  check_all(t, floor, undurable_ms, exposed_role, exposed_from, &c->exposed,
            "after resync");
  scrub(t, "after resync");

  /* Degraded: rebuild onto new members, check and scrub again. */
  if (raid_array_degraded(t->a)) {
    while (raid_array_degraded(t->a)) {
      ck_assert_uint_lt(t->nfiles, MAX_FILES);
      new_file(t, t->nfiles, false);
      r = raid_array_add_member(t->a, open_spec(t->spec[t->nfiles]), &role);
      ck_assert_msg(r == 0 && role >= 0, "%s: add after the cut: %s", t->desc,
                    raid_get_error());
      t->nfiles++;
      settle(t);
    }
    check_all(t, floor, undurable_ms, exposed_role, exposed_from, &c->exposed,
              "after rebuild");
    scrub(t, "after rebuild");
  }
  raid_array_free(t->a);

  c->trials++;
  if (t->write_behind)
    c->write_behind++;
  c->kind[t->kind]++;
  c->mid_rebuild += t->mid_rebuild && t->kind == K_REBUILD;
  c->mid_reshape += t->mid_rebuild && t->kind == K_RESHAPE;
  c->back += t->to_back;
  c->mid_back += t->to_back && t->mid_rebuild;
  c->md_gap += t->md_gap;
  c->mid_md_gap += t->md_gap && t->mid_rebuild;
  c->md_gap_fwd += t->md_gap && !t->to_back;
  c->dirty += t->cut_stats.dirty;
  c->lost += t->cut_stats.lost;
  for (i = 0; i < WRITERS; i++)
    free(t->w[i].log);
  free(undurable_ms);
  free(floor);
  free(t->cur);
  free(t);
}

/* ---- regression: a failure recorded before the I/O that saw it completes ---------- */

/* Two writers write to a RAID 1 whose member 0 fails every write.  The
 * first to see it fails the role and writes the superblocks, slowly
 * (member 1's superblock writes are delayed); the other found the role
 * failed already, or was submitted after it failed and never went to
 * member 0, and was acknowledged at once, before any superblock said
 * member 0 was out: after a power cut then, member 0 came back as in
 * sync and a resync could copy its stale data over the survivor's.
 * Every write completion here checks member 1's superblock on disk:
 * member 0 must be faulty there. */
struct fr_thread {
  struct raid_array *a;
  struct raid_member *survivor;
  pthread_barrier_t *start;
  uint64_t off;
  int res;
  bool done, recorded;
};

static void
fr_done(void *opaque, int res)
{
  struct fr_thread *f = opaque;
  struct raid_superblock sb;

  f->res = res;
  f->done = true;
  f->recorded = raid_superblock_read(f->survivor, &sb) == 0 &&
    sb.dev_roles[0] == RAID_SB_ROLE_FAULTY;
}

static void *
fr_main(void *arg)
{
  struct fr_thread *f = arg;
  struct raid_queue *q;
  uint8_t *buf = test_alloc(4096);

  memset(buf, 0x5a, 4096);
  ck_assert_int_eq(raid_queue_new(8, &q), 0);
  pthread_barrier_wait(f->start);
  ck_assert_int_eq(raid_aio_write(q, f->a, buf, 4096, f->off, 0, fr_done, f), 0);
  while (!f->done)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
  raid_queue_free(q);
  test_free(buf);
  return NULL;
}

START_TEST(test_failure_recorded_before_ack)
{
  struct raid_config cfg = { .name = "fr", .level = RAID_LEVEL_1,
                             .layout = RAID_LAYOUT_DEFAULT, .raid_disks = 2 };
  const struct raid_fault fail_writes = { .ops = RAID_FAULT_WRITE, .error = EIO };
  const struct raid_fault slow_super = { .ops = RAID_FAULT_WRITE, .offset = 4096,
                                         .length = 4096, .delay_us = 200000 };
  struct raid_member *inner[2], *m[2];
  struct fr_thread f[2];
  pthread_t th[2];
  pthread_barrier_t start;
  struct raid_array *a;
  unsigned i, round;

  for (round = 0; round < 3; round++) {
    tfile_create("fr", 2, 4 * MiB);
    tfile_open("fr", NULL, 2, inner);
    for (i = 0; i < 2; i++)
      ck_assert_int_eq(raid_member_new_fault(inner[i], &m[i]), 0);
    ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                  raid_get_error());
    ck_assert_int_eq(raid_fault_add(m[0], &fail_writes), 0);
    ck_assert_int_eq(raid_fault_add(m[1], &slow_super), 0);
    pthread_barrier_init(&start, NULL, 2);
    for (i = 0; i < 2; i++) {
      f[i] = (struct fr_thread){ a, m[1], &start, i * 64 * KiB, 0, false, false };
      ck_assert_int_eq(pthread_create(&th[i], NULL, fr_main, &f[i]), 0);
    }
    for (i = 0; i < 2; i++)
      pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    for (i = 0; i < 2; i++) {
      ck_assert_msg(f[i].res == 0, "write %u: %s", i, strerror(-f[i].res));
      ck_assert_msg(f[i].recorded, "round %u: write %u was acknowledged before the "
                    "superblocks recorded member 0's failure", round, i);
    }
    ck_assert_int_eq(raid_array_member_state(a, 0), RAID_MEMBER_FAULTY);
    raid_array_free(a);
  }
}
END_TEST

/* ---- the cases ------------------------------------------------------------------- */

static const int levels[] = { RAID_LEVEL_0, RAID_LEVEL_1, RAID_LEVEL_5, RAID_LEVEL_10 };

static double
now_s(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

START_TEST(test_powerloss)
{
  int level = levels[_i];
  unsigned n = trials_env ? trials_env
    : test_scale(level == RAID_LEVEL_0 ? TRIALS_DEFAULT / 2 : TRIALS_DEFAULT);
  double t0 = now_s();
  struct counts c;
  unsigned k;

  memset(&c, 0, sizeof c);
  if (level_env >= 0 && level != level_env)
    return;
  if (seed_env) {
    run_trial(level, seed_env, &c);
    return;
  }
  for (k = 0; torture_s ? now_s() - t0 < torture_s : k < n; k++)
    run_trial(level, test_seed_for((uint64_t)level * 1000003 + k), &c);
  printf("raid%d: %u trials (all %u, subset %u, fail %u, rebuild %u of which %u cut "
         "mid-rebuild, reshape %u (%u with a bitmap) of which %u cut mid-reshape, %u to fewer members of which %u cut mid-way, %u with md's chunk of room (%u to more) of which %u cut mid-way), %u cut while marked clean, %u came back degraded (%u forced); %" PRIu64 " writes "
         "acknowledged, %" PRIu64 " durable; %" PRIu64 " sectors dirty at the cuts, "
         "%" PRIu64 " lost; %" PRIu64 " write-hole sectors; %u bitmap resyncs over "
         "%" PRIu64 " of %" PRIu64 " KiB (%u writing behind); %.1f s\n",
         level, c.trials, c.kind[K_ALL], c.kind[K_SUBSET], c.kind[K_FAIL],
         c.kind[K_REBUILD], c.mid_rebuild, c.kind[K_RESHAPE], c.reshape_bm, c.mid_reshape, c.back, c.mid_back, c.md_gap, c.md_gap_fwd, c.mid_md_gap, c.clean_cuts, c.degraded, c.forced, c.acked, c.durable,
         c.dirty, c.lost, c.exposed, c.bitmap, c.bm_synced >> 10, c.bm_total >> 10,
         c.write_behind, now_s() - t0);
  fflush(stdout);
}
END_TEST

int
main(void)
{
  const char *p;
  Suite *s;
  TCase *tc;

  test_init("test-powerloss");
  if ((p = getenv("TORTURE_SECONDS")) && *p)
    torture_s = (unsigned)strtoul(p, NULL, 10);
  if ((p = getenv("POWERLOSS_TRIALS")) && *p)
    trials_env = (unsigned)strtoul(p, NULL, 10);
  if ((p = getenv("POWERLOSS_SEED")) && *p)
    seed_env = strtoull(p, NULL, 0);
  if ((p = getenv("POWERLOSS_LEVEL")) && *p)
    level_env = (int)strtol(p, NULL, 10);
  raid_set_log_handler(quiet_log, NULL, RAID_LOG_INFO);
  s = suite_create("powerloss");
  tc = test_tcase("powerloss");
  if (torture_s)
    tcase_set_timeout(tc, 2.0 * torture_s + 600);
  else if (trials_env)
    tcase_set_timeout(tc, 60.0 * trials_env + 600);
  tcase_add_loop_test(tc, test_powerloss, 0, (int)ARRAY_SIZE(levels));
  suite_add_tcase(s, tc);
  tc = test_tcase("regressions");
  tcase_add_test(tc, test_failure_recorded_before_ack);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
