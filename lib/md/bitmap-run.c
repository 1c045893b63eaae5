/* md's write-intent bitmap at run time: which chunks may be out of sync,
 * set before a write reaches a member, cleared lazily once idle.
 *
 * The rule that makes the bitmap worth having (md's md-bitmap.c): a bit
 * is on stable storage on every member before any write to its chunk
 * reaches a member, and it is cleared only when the chunk has been idle
 * for a while with every role in sync.  After a crash only the chunks
 * whose bits are set can disagree, so the resync walks those (sync/pass.c)
 * instead of the whole array.
 *
 * State per bitmap chunk (md's bitmap_counter_t), under run->d.lock:
 *   cnt      writes in flight on the chunk (started, not finished);
 *   ONDISK   the bit is set in the image and written to the members;
 *   NEEDED   a write wants the bit: the writer thread sets it next round;
 *   WRITING  set in the image, the round writing it is in progress;
 *   IDLE     a clearing pass found the chunk idle (cnt 0): the next pass
 *            clears it, unless a write came meanwhile (md's two passes:
 *            a chunk stays set for at least daemon_sleep after its last
 *            write).
 *
 * The gate (bitmap_start_write(), from submit() for every write, write
 * zeroes and discard, before any member I/O): the request's chunks get a
 * count each; when all of them are ONDISK it goes on at once (one
 * uncontended mutex, no system call).  Otherwise it is parked on run->parked
 * and the writer is woken.  The writer thread (one per array with a
 * bitmap, md's bitmap daemon and unplug in one) does rounds: under the
 * metadata lock (so a round never interleaves with a superblock update,
 * which writes the whole image) it takes the parked list and the NEEDED
 * chunks, sets their bits in the image, writes the 4 KiB pages that
 * changed to every live member with a flush and FUA (member_pio()), marks
 * them ONDISK, and hands each parked request back to its own queue with
 * queue_post() (DESIGN.md: a request belongs to the queue it was submitted
 * on; the writer does not touch it after posting).  One round serves
 * every request parked until it began.  A request parked on a chunk that
 * a round is writing already waits for the next round, which begins only
 * after that one ended.
 *
 * The image of the bitmap (struct meta_bitmap) is changed only under the
 * metadata lock (here, in rounds, with run->d.lock too; md/meta.c at start,
 * stop and superblock updates), so that the superblock update's copy of
 * the whole image and a round's pages never disagree.  Lock order:
 * metadata lock, then run->d.lock.
 *
 * Clearing: every daemon_sleep seconds (the bitmap superblock's field;
 * tests shorten it with bitmap_run_set_period()) a pass looks at every
 * chunk that is ONDISK with no write in flight, if clearing is allowed
 * (meta_bitmap_may_clear(): every role in sync, no replacement running,
 * no resync due, the array not failed; md keeps the bits for a member
 * that may come back).  The pass clears the IDLE ones and marks the
 * others IDLE, and writes the pages that changed, events_cleared set to
 * the current events as md does, with nobody waiting.
 *
 * bitmap_end_write() (req_finish(), top-level requests) drops the counts.
 * RAID 1 write-behind (raid1.c) keeps a write's chunks counted past its
 * request's end, until the write-mostly members have it too:
 * bitmap_hold_write() counts them again while the request still holds
 * them (so they are ONDISK), and bitmap_end_write() lets them go; raid1.c
 * keeps at most the bitmap's write_behind (bitmap_run_write_behind())
 * writes behind at once.  A crash meanwhile finds
 * their bits set, and the resync copies them from a member that is not
 * write-mostly.
 * A request keeps the run it started with (r->gate[GATE_BITMAP]): a bitmap removed
 * from a running array unpublishes its run, waits for the requests that
 * use it (array_quiesce()), then frees it.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "md/meta.h"

#define CH_ONDISK 0x1u
#define CH_NEEDED 0x2u
#define CH_WRITING 0x4u
#define CH_IDLE 0x8u

struct bitmap_run {
  struct write_gate gate;        /* first: a->gate[GATE_BITMAP] points here */
  struct raid_array *a;
  struct meta_bitmap *bm;        /* the image this run keeps (md/meta.c's) */
  uint64_t chunks;
  uint64_t chunk_bytes;          /* bytes of the covered space per chunk */
  struct daemon d;               /* the writer; its lock guards everything below */
  uint32_t *cnt;                 /* per chunk: writes in flight */
  uint8_t *flags;                /* per chunk: CH_* */
  uint64_t *needed;              /* chunks marked NEEDED, in order */
  size_t nneeded, max_needed;
  struct raid_request *parked;   /* waiting for their bits, a stack */
  uint32_t write_behind;         /* most behind writes at once (0: none) */
  uint64_t period_ns;            /* clearing pass every ... */
  uint64_t next_pass;            /* CLOCK_MONOTONIC ns */
};

/* ---- mapping -------------------------------------------------------------------- */

/* Member bytes of the rows of a RAID 5 over RAID_DISKS members of CHUNK
 * that array bytes [OFF, OFF + LEN) touch. */
static void
map_rows(uint64_t chunk, unsigned raid_disks, uint64_t off, uint64_t len, uint64_t *lo,
         uint64_t *hi)
{
  uint64_t row = chunk * (raid_disks - 1);

  *lo = off / row * chunk;
  *hi = ((off + len - 1) / row + 1) * chunk;
}

/* The bytes of the space the bitmap covers that array bytes [OFF, OFF +
 * LEN) write: for RAID 1 and 5 each member's data (a RAID 5 write covers
 * the whole rows it touches, parity included), for RAID 10 the array
 * (md's resync_max_sectors, bitmap_sync_size() in md/create.c).  During a
 * RAID 5's reshape a write lands in either shape (the gate comes before
 * the window decides which), each member's data counted from that
 * shape's data offset, as md's raid5 marks it: the rows of both are
 * covered.  No lock: a reshape publishes its shapes before reshape_pos
 * says it, and keeps them until it has ended with every request parked
 * (sync/reshape.c's finish()); a write that saw it under way covers the
 * new shape too, and the gate drops what it counted, not what the
 * request maps to by then (bitmap_end_write()). */
void
bitmap_map_request(const struct raid_array *a, uint64_t off, uint64_t len,
                   uint64_t *lo, uint64_t *hi)
{
  const struct raid_geo *o = NULL, *g = NULL;

  if (a->level == RAID_LEVEL_5 && atomic_load(&a->reshape_pos) != UINT64_MAX) {
    o = atomic_load(&a->geo_old);
    g = atomic_load(&a->geo_new);
  }
  if (o && g) {
    uint64_t l, h;

    map_rows(o->chunk_size, o->raid_disks, off, len, lo, hi);
    map_rows(g->chunk_size, g->raid_disks, off, len, &l, &h);
    *lo = MIN(*lo, l);
    *hi = MAX(*hi, h);
  }
  else if (a->level == RAID_LEVEL_5) {
    g = atomic_load(&a->geo_now);
    map_rows(g->chunk_size, g->raid_disks, off, len, lo, hi);
  }
  else {
    *lo = off;
    *hi = off + len;
  }
}

/* The same for member bytes [POS, POS + LEN) of every member (the sync
 * engine's steps).  RAID 10 near: slot s = row * raid_disks + disk holds
 * copy s % copies of array chunk s / copies. */
void
bitmap_map_member(const struct raid_array *a, uint64_t pos, uint64_t len,
                  uint64_t *lo, uint64_t *hi)
{
  if (a->level == RAID_LEVEL_10) {
    uint64_t C = a->chunk_size, n = a->raid_disks, k = a->copies;
    uint64_t r0 = pos / C, r1 = (pos + len - 1) / C;

    *lo = r0 * n / k * C;
    *hi = MIN((((r1 + 1) * n - 1) / k + 1) * C, a->size);
  }
  else {
    *lo = pos;
    *hi = pos + len;
  }
}

/* ---- the gate ------------------------------------------------------------------- */

/* Chunks [*C0, *C1) of covered bytes [LO, HI). */
static void
chunk_range(const struct bitmap_run *run, uint64_t lo, uint64_t hi, uint64_t *c0,
            uint64_t *c1)
{
  *c0 = MIN(lo / run->chunk_bytes, run->chunks);
  *c1 = MIN(DIV_ROUND_UP(hi, run->chunk_bytes), run->chunks);
}

static bool
need_chunk(struct bitmap_run *run, uint64_t c)
{
  if (run->nneeded == run->max_needed) {
    size_t n = run->max_needed ? 2 * run->max_needed : 64;
    uint64_t *p = realloc(run->needed, n * sizeof *p);

    if (p == NULL)
      return false;
    run->needed = p;
    run->max_needed = n;
  }
  run->needed[run->nneeded++] = c;
  run->flags[c] |= CH_NEEDED;
  return true;
}

static struct bitmap_run *
gate_run(struct write_gate *g)
{
  return (struct bitmap_run *)((char *)g - offsetof(struct bitmap_run, gate));
}

static bool
bitmap_start_write(struct write_gate *g, struct raid_request *r)
{
  struct bitmap_run *run = gate_run(g);
  uint64_t lo, hi, c0, c1, c;
  bool ready = true;

  bitmap_map_request(r->a, r->offset, r->len, &lo, &hi);
  chunk_range(run, lo, hi, &c0, &c1);
  r->gate_span[GATE_BITMAP][0] = c0;
  r->gate_span[GATE_BITMAP][1] = c1;
  pthread_mutex_lock(&run->d.lock);
  for (c = c0; c < c1; c++) {
    run->cnt[c]++;
    run->flags[c] &= (uint8_t)~CH_IDLE;
    if (run->flags[c] & CH_ONDISK)
      continue;
    ready = false;
    if (run->flags[c] & (CH_NEEDED | CH_WRITING))
      continue;
    /* Out of memory for the list: the next round looks at every chunk. */
    if (run->nneeded == SIZE_MAX || !need_chunk(run, c)) {
      run->flags[c] |= CH_NEEDED;
      run->nneeded = SIZE_MAX;
    }
  }
  if (!ready) {
    r->gate_next[GATE_BITMAP] = run->parked;
    run->parked = r;
    daemon_wake_locked(&run->d);
  }
  pthread_mutex_unlock(&run->d.lock);
  return ready;
}

/* The chunks START counted, not mapped again: a reshape that began or
 * ended meanwhile maps the request elsewhere. */
static void
bitmap_end_write(struct write_gate *g, struct raid_request *r)
{
  struct bitmap_run *run = gate_run(g);
  uint64_t c;

  pthread_mutex_lock(&run->d.lock);
  for (c = r->gate_span[GATE_BITMAP][0]; c < r->gate_span[GATE_BITMAP][1]; c++) {
    run->cnt[c]--;
    run->flags[c] &= (uint8_t)~CH_IDLE;
  }
  pthread_mutex_unlock(&run->d.lock);
}

static void
bitmap_hold_write(struct write_gate *g, struct raid_request *b)
{
  struct bitmap_run *run = gate_run(g);
  uint64_t c;

  pthread_mutex_lock(&run->d.lock);
  for (c = b->gate_span[GATE_BITMAP][0]; c < b->gate_span[GATE_BITMAP][1]; c++) {
    run->cnt[c]++;
    run->flags[c] &= (uint8_t)~CH_IDLE;
  }
  pthread_mutex_unlock(&run->d.lock);
}

static uint32_t
bitmap_run_write_behind(const struct write_gate *g)
{
  return gate_run((struct write_gate *)g)->write_behind;
}

static const struct write_gate_ops bitmap_gate_ops = {
  .start = bitmap_start_write,
  .end = bitmap_end_write,
  .hold = bitmap_hold_write,
  .behind = bitmap_run_write_behind,
};

struct write_gate *
bitmap_run_gate(struct bitmap_run *run)
{
  return run ? &run->gate : NULL;
}

struct bitmap_run *
bitmap_run_of(const struct raid_array *a)
{
  struct write_gate *g = atomic_load(&((struct raid_array *)a)->gate[GATE_BITMAP]);

  return g ? gate_run(g) : NULL;
}

struct bitmap_run *
bitmap_run_take(struct raid_array *a)
{
  struct write_gate *g = atomic_exchange(&a->gate[GATE_BITMAP], NULL);

  return g ? gate_run(g) : NULL;
}

/* ---- the writer ----------------------------------------------------------------- */

/* Mark the 4 KiB page of the image that holds chunk C's bit. */
static void
mark_page(uint8_t *pages, uint64_t c)
{
  pages[(RAID_BITMAP_SB_BYTES + c / 8) / 4096] = 1;
}

/* One round: set what is NEEDED, with PASS clear what has been idle, write
 * the pages that changed, release the parked requests. */
static void
writer_round(struct bitmap_run *run, bool pass)
{
  struct raid_array *a = run->a;
  struct meta_bitmap *bm = run->bm;
  uint8_t *bits = bm->buf + RAID_BITMAP_SB_BYTES;
  uint64_t npages = DIV_ROUND_UP(bm->area, 4096), i, c;
  uint8_t *pages = calloc(npages, 1);
  struct raid_request *parked, *next;
  uint64_t *needed;
  size_t nneeded;
  bool all, live, cleared = false, any = false;
  int r = 0;

  meta_lock(a);
  /* A bitmap removed from the array (raid_array_set_bitmap()) is written
   * no more: the requests go on without it. */
  live = meta_bitmap_locked(a) == bm;
  pthread_mutex_lock(&run->d.lock);
  parked = run->parked;
  run->parked = NULL;
  needed = run->needed;
  nneeded = run->nneeded;
  all = nneeded == SIZE_MAX || pages == NULL;
  run->needed = NULL;
  run->nneeded = run->max_needed = 0;
  if (all) {
    /* Out of memory somewhere: every chunk that wants its bit. */
    for (c = 0; c < run->chunks; c++)
      if (run->flags[c] & CH_NEEDED) {
        bits[c / 8] |= (uint8_t)(1u << (c % 8));
        run->flags[c] = (uint8_t)((run->flags[c] & ~CH_NEEDED) | CH_WRITING);
        any = true;
      }
  }
  else
    for (i = 0; i < nneeded; i++) {
      c = needed[i];
      bits[c / 8] |= (uint8_t)(1u << (c % 8));
      run->flags[c] = (uint8_t)((run->flags[c] & ~CH_NEEDED) | CH_WRITING);
      mark_page(pages, c);
      any = true;
    }
  if (pass && live && meta_bitmap_may_clear(a))
    for (c = 0; c < run->chunks; c++) {
      uint8_t f = run->flags[c];

      if (!(f & CH_ONDISK) || run->cnt[c] > 0)
        continue;
      if (!(f & CH_IDLE)) {
        run->flags[c] = f | CH_IDLE;
        continue;
      }
      bits[c / 8] &= (uint8_t)~(1u << (c % 8));
      run->flags[c] = 0;
      if (pages)
        mark_page(pages, c);
      cleared = any = true;
    }
  pthread_mutex_unlock(&run->d.lock);

  if (any && live) {
    if (cleared) {
      meta_bitmap_cleared_locked(a);
      if (pages)
        pages[0] = 1;                   /* the superblock: events_cleared */
    }
    r = meta_bitmap_write_pages_locked(a, all ? NULL : pages, npages);
  }

  pthread_mutex_lock(&run->d.lock);
  if (all) {
    for (c = 0; c < run->chunks; c++)
      if (run->flags[c] & CH_WRITING)
        run->flags[c] = (uint8_t)((run->flags[c] & ~CH_WRITING) | CH_ONDISK);
  }
  else
    for (i = 0; i < nneeded; i++)
      run->flags[needed[i]] = (uint8_t)((run->flags[needed[i]] & ~CH_WRITING) | CH_ONDISK);
  pthread_mutex_unlock(&run->d.lock);
  meta_unlock(a);
  free(needed);
  free(pages);

  /* Each request back to its own queue; not touched after the post. */
  for (; parked; parked = next) {
    next = parked->gate_next[GATE_BITMAP];
    queue_post(parked->q, &parked->task, r);
  }
}

static void *
writer_main(void *arg)
{
  struct bitmap_run *run = arg;

  pthread_mutex_lock(&run->d.lock);
  while (!run->d.quit) {
    uint64_t t = mono_ns();
    bool pass = t >= run->next_pass;

    if (!pass && run->parked == NULL) {
      daemon_wait(&run->d, run->next_pass);
      continue;
    }
    if (pass)
      run->next_pass = t + run->period_ns;
    pthread_mutex_unlock(&run->d.lock);
    writer_round(run, pass);
    pthread_mutex_lock(&run->d.lock);
  }
  pthread_mutex_unlock(&run->d.lock);
  return NULL;
}

/* ---- life cycle ----------------------------------------------------------------- */

int
bitmap_run_new(struct raid_array *a, struct meta_bitmap *bm, struct bitmap_run **runp)
{
  struct bitmap_run *run = calloc(1, sizeof *run);
  const uint8_t *bits = bm->buf + RAID_BITMAP_SB_BYTES;
  uint64_t c;
  int r;

  *runp = NULL;
  if (run == NULL)
    return set_error(ENOMEM, "array %s: out of memory for the bitmap", a->name);
  run->gate.ops = &bitmap_gate_ops;
  run->a = a;
  run->bm = bm;
  run->chunks = bm->chunks;
  run->chunk_bytes = bm->sb.chunksize;
  run->write_behind = bm->sb.write_behind;
  run->cnt = calloc(run->chunks ? run->chunks : 1, sizeof *run->cnt);
  run->flags = calloc(run->chunks ? run->chunks : 1, 1);
  if (run->cnt == NULL || run->flags == NULL) {
    free(run->cnt);
    free(run->flags);
    free(run);
    return set_error(ENOMEM, "array %s: out of memory for the bitmap's %" PRIu64
                     " counters", a->name, bm->chunks);
  }
  /* What the image holds is on the members already. */
  for (c = 0; c < run->chunks; c++)
    if (bits[c / 8] & (1u << (c % 8)))
      run->flags[c] = CH_ONDISK;
  run->period_ns = (uint64_t)bm->sb.daemon_sleep * 1000000000ull;
  run->next_pass = mono_ns() + run->period_ns;
  daemon_init(&run->d);
  r = daemon_start(&run->d, writer_main, run);
  if (r != 0) {
    daemon_destroy(&run->d);
    free(run->cnt);
    free(run->flags);
    free(run);
    return set_error(r, "array %s: cannot start the bitmap writer: %s", a->name,
                     strerror(r));
  }
  *runp = run;
  return 0;
}

void
bitmap_run_free(struct bitmap_run *run)
{
  if (run == NULL)
    return;
  daemon_stop(&run->d);
  daemon_destroy(&run->d);
  free(run->needed);
  free(run->cnt);
  free(run->flags);
  free(run);
}

void
bitmap_run_set_period(struct raid_array *a, unsigned ms)
{
  struct bitmap_run *run = bitmap_run_of(a);

  if (run == NULL)
    return;
  pthread_mutex_lock(&run->d.lock);
  run->period_ns = (uint64_t)ms * 1000000ull;
  run->next_pass = mono_ns() + run->period_ns;
  daemon_wake_locked(&run->d);
  pthread_mutex_unlock(&run->d.lock);
}

bool
bitmap_run_dirty(struct raid_array *a, uint64_t pos, uint64_t len)
{
  struct bitmap_run *run = bitmap_run_of(a);
  uint64_t lo, hi, c0, c1, c;
  bool dirty = false;

  if (run == NULL)
    return true;
  bitmap_map_member(a, pos, len, &lo, &hi);
  chunk_range(run, lo, hi, &c0, &c1);
  pthread_mutex_lock(&run->d.lock);
  for (c = c0; c < c1 && !dirty; c++)
    dirty = run->flags[c] != 0 && run->flags[c] != CH_IDLE;
  pthread_mutex_unlock(&run->d.lock);
  return dirty;
}
