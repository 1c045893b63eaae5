/* RAID 5 write merging and plugging: row pieces of sequential or
 * complementary writes become full-stripe writes.
 *
 * Merging and plugging.  A sequential stream of writes that are not
 * multiples of the row (1 MiB writes over rows of 3 x 512 KiB) would cut
 * every row in two pieces, each a reconstruct-write: 8 member I/Os per
 * row where a full stripe costs 4.  md's stripe cache gathers such pieces
 * into full stripes; we do it in the stripe lock.  Two parts:
 *   - Merging.  When a write op is granted its lock, the write ops waiting
 *     behind it on the same row (range_lock_absorb) join it if together
 *     they rewrite every data chunk over its columns, without overlapping
 *     one another: then parity comes from the new data alone, as for a
 *     full stripe, and every piece and the parity are written at once.
 *   - Plugging.  The follower usually arrives later: a client at queue
 *     depth 32 sends its next write when one completes.  So a piece of a
 *     write that continues a stream (it starts where one of the last few
 *     streams' previous write ended, and that write is still in flight, or
 *     recent plugs filled: behind NBD the next write's payload may still
 *     be arriving when the previous write completes) and that leaves its
 *     columns' stripe incomplete may wait, holding its lock, for the rest
 *     of the stripe, when the rest can come: the piece is the last of its
 *     write, starts a row and leaves less of it than the write's own
 *     length (1 MiB writes over 1.5 MiB rows), or the stream runs deep
 *     enough (64 KiB writes at queue depth 32 over 1.5 MiB rows: the
 *     pieces of the other data indices over the same columns are 8 and 16
 *     writes behind, already sent): a row's bytes of writes are in flight,
 *     or, when the rest is at most 32 writes ahead, recent plugs filled
 *     their stripes (r5_plug_worth()).  Every lock that blocks behind a
 *     plugged op tells it (a poke, from range_lock()): a write over its
 *     columns that it could take over is gathered, and when the gathered
 *     pieces fill the stripe it goes, takes them over and writes one full
 *     stripe; anything else (a read, a write it cannot take) makes it go
 *     at once.  At the latest it goes after the array's mean write latency,
 *     or twice the time the stream takes to get as far as the stripe's
 *     end, if longer (a timer, 0.1 to 100 ms: plug_usec()).  At queue depth
 *     1 the predecessor is done before the next write is sent, so nothing
 *     plugs, or, just after a deep stream, at most 4 plugs expire before
 *     the score stops it.  Small sequential writes (4 KiB over 512 KiB
 *     chunks, the rest of the stripe 256 writes ahead) never plug.
 *
 * Ownership and threads.  A request belongs to the queue it was submitted
 * on, and so do its stripe ops: each op runs on that queue's thread, and
 * its member I/O is submitted and completed there.  The stripe lock table
 * is the only shared structure (range-lock.c), and the one place where a
 * thread touches another's op is merging: the lead op (granted, on its
 * own queue) takes waiting ops under the table's lock, when their fields
 * are settled and their owners leave them alone until granted.  The lead
 * then reads their data (the requests' buffers, which stay put until the
 * requests complete) to make parity and allocates every member I/O of the
 * merge; it submits its own writes and the parity, and posts each merged
 * op to its owner's queue (op_merged_write) to submit the op's writes
 * there.  A merged op tells its lead when its writes are done (a message
 * to the lead's queue); the lead, when all are done, unlocks every merged
 * op's lock and posts each op its result (r5_op_merged_finish), which its own
 * queue gives to its request.  Cross-thread hand-offs are always
 * queue_post(), which orders everything written before it.  A plugged
 * op's poke may come from any thread: its gather is touched only under
 * the stripe table's lock, an atomic exchange of its plugged flag
 * decides who runs it, and the run is posted to the op's own queue.
 *
 * A lead whose merge cannot get memory does not merge (what it needs is
 * allocated before it takes any op), or fails every op of the merge with
 * ENOMEM before any write is submitted.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "raid5.h"

/* What a merge writes: span K (data index, columns) from PIECE[K].data,
 * for op PIECE[K].op (the lead or one it merged). */
struct r5piece {
  uint8_t *data;
  struct r5op *op;
};

#define MERGE_PIECES 256

struct r5merge {
  const struct raid_array *a;
  const struct raid_geo *G;        /* the lead's shape (and every taken op's) */
  uint32_t lo, hi;                 /* the lead op's columns */
  unsigned npiece, nops;
  struct r5span span[MERGE_PIECES];
  struct r5piece piece[MERGE_PIECES];
  struct r5op *ops[64];            /* the ops taken, lead op excluded */
};

/* Append the pieces of write OP to SPAN[*N] (room for CAP) if every one
 * lies in columns [LO, HI), overlaps no span of its data index and fits;
 * else false, and *N is unchanged.  A merge (merge_add()) and a plug's
 * gather (gather_add()) both take writes by this rule.  OP is the lead,
 * or a lock waiter under the table's lock: its fields were set before it
 * asked for the lock and do not change while it waits. */
static bool
spans_add(struct r5span *span, unsigned *n, unsigned cap, uint32_t lo, uint32_t hi,
          const struct r5op *op)
{
  unsigned s, i, k, m = *n;

  for (s = 0; s < op->nseg; s++) {
    const struct r5seg *g = &op->seg[s];

    if (g->x0 < lo || g->x1 > hi)
      return false;
    for (i = g->i0; i <= g->i1; i++) {
      for (k = 0; k < m; k++)
        if (span[k].i == i && span[k].x0 < g->x1 && g->x0 < span[k].x1)
          return false;
      if (m == cap)
        return false;
      span[m++] = (struct r5span){ .i = i, .x0 = g->x0, .x1 = g->x1 };
    }
  }
  *n = m;
  return true;
}

/* SPAN[N] (no two of an index overlapping) covers each of the D data
 * indexes over all of columns [LO, HI): a full stripe. */
static bool
spans_full(const struct r5span *span, unsigned n, unsigned D, uint32_t lo, uint32_t hi)
{
  uint64_t bytes[RAID_MAX_MEMBERS] = { 0 };
  unsigned i, k;

  for (k = 0; k < n; k++)
    bytes[span[k].i] += span[k].x1 - span[k].x0;
  for (i = 0; i < D; i++)
    if (bytes[i] != hi - lo)
      return false;
  return true;
}

static bool
merge_add(struct r5merge *m, struct r5op *op)
{
  unsigned k = m->npiece;

  if (!spans_add(m->span, &m->npiece, MERGE_PIECES, m->lo, m->hi, op))
    return false;
  for (; k < m->npiece; k++)
    m->piece[k] = (struct r5piece){ .data = user_data(op, m->span[k].i, m->span[k].x0),
                                    .op = op };
  return true;
}

static bool
merge_take(void *ctx, struct range_lock *w)
{
  struct r5merge *m = ctx;
  struct r5op *op = w->owner;

  if (op == NULL || !op->write || m->nops == ARRAY_SIZE(m->ops) || !merge_add(m, op))
    return false;
  m->ops[m->nops++] = op;
  return true;
}

static bool
merge_complete(void *ctx)
{
  const struct r5merge *m = ctx;

  return spans_full(m->span, m->npiece, m->G->raid_disks - 1, m->lo, m->hi);
}

static int
cmp_u32(const void *x, const void *y)
{
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

  return (a > b) - (a < b);
}

/* A merged op's side (see "Ownership" above), on the merged op's own
 * queue: submit the writes the lead allocated for it; when they are done,
 * tell the lead; when the lead is done, finish. */
static void
op_merged_notify(struct r5op *f)
{
  queue_send(f->r->q, f->lead->r->q, &f->notify, 0);
}

static void
op_merged_write_done(struct member_io *io, int res)
{
  struct r5op *f = io->ctx;
  struct raid_array *a = f->r->a;

  if (res < 0)
    array_member_failed(a, io->slot, io->m, res, mio_data_offset(a, io), "write");
  if (--f->pending == 0)
    op_merged_notify(f);
}

static void
op_merged_write(struct qtask *t, int res)
{
  struct r5op *f = (struct r5op *)((char *)t - offsetof(struct r5op, lock.task));
  unsigned k;

  f->pending = f->nmio;
  for (k = 0; k < f->nmio; k++)
    req_mio_submit(f->mio[k]);
  if (f->nmio == 0)
    op_merged_notify(f);
}

/* On the lead's queue: one merged op's writes are done. */
static void
op_merged_written(struct qtask *t, int res)
{
  struct r5op *f = (struct r5op *)((char *)t - offsetof(struct r5op, notify));

  r5_op_write_put(f->lead);
}

void
r5_op_merged_finish(struct qtask *t, int res)
{
  struct r5op *f = (struct r5op *)((char *)t - offsetof(struct r5op, lock.task));
  struct raid_request *r = f->r;
  int err = f->result;

  raid_free(f);
  req_put(r, err);
}

/* Write M, which rewrites every data chunk over columns [lo, hi) of OP's
 * row: parity (into PARITY, LEN bytes) is the XOR of the new data,
 * computed over the column intervals between the pieces' edges (in each,
 * one piece per index).  Every member I/O is allocated first, so that
 * running out of memory writes nothing; the lead submits its own and the
 * parity, each merged op its own. */
static void
op_write_merged(struct r5op *op, const struct r5merge *m, uint8_t *parity)
{
  struct raid_array *a = op->r->a;
  const struct raid_geo *G = op->r->geo;
  unsigned D = G->raid_disks - 1, ncut = 0, i, j, k, nown = 0, n = 0;
  uint32_t cut[2 * MERGE_PIECES], len = m->hi - m->lo;
  void *src[RAID_MAX_MEMBERS];
  struct raid_member *pm = row_member(a, G, op->pd, op->lock.row);
  struct member_io *io[MERGE_PIECES + 1];
  bool fua = false;

  for (k = 0; k < m->npiece; k++) {
    cut[ncut++] = m->span[k].x0;
    cut[ncut++] = m->span[k].x1;
  }
  qsort(cut, ncut, sizeof cut[0], cmp_u32);
  for (j = 0, k = 0; k < ncut; k++)
    if (j == 0 || cut[k] != cut[j - 1])
      cut[j++] = cut[k];
  ncut = j;
  for (j = 0; j + 1 < ncut; j++) {
    for (i = 0; i < D; i++)
      for (k = 0; k < m->npiece; k++)
        if (m->span[k].i == i && m->span[k].x0 <= cut[j] && cut[j] < m->span[k].x1) {
          src[i] = m->piece[k].data + (cut[j] - m->span[k].x0);
          break;
        }
    raid_xor(parity + (cut[j] - m->lo), src, D, cut[j + 1] - cut[j]);
  }

  for (k = 0; k <= m->nops; k++)
    stats_add(&a->stats.stripe[pm ? STRIPE_FULL : STRIPE_DEGRADED_WRITE], 1);
  /* The member I/Os, grouped by op: the lead's first (the pieces are in
   * that order), each merged op's then, the parity last.  A member that
   * does not hold the row gets nothing: its part is implied by the rest. */
  for (k = 0; k < m->npiece; k++) {
    const struct r5piece *p = &m->piece[k];
    const struct r5span *x = &m->span[k];
    unsigned slot = dd_slot(G, op->pd, x->i);
    struct raid_member *dm = row_member(a, G, slot, op->lock.row);

    if (p->op->r->flags & RAID_REQ_FUA)
      fua = true;
    if (dm == NULL)
      continue;
    if (p->op == op)
      nown++;
    else if (p->op->mio == NULL)
      p->op->mio = &io[n];      /* rebased onto op->mios below */
    io[n++] = r5_op_mio(p->op, p->op->r, slot, dm, MOP_WRITE, p->data, x->x0,
                     x->x1 - x->x0, p->op == op ? r5_op_write_done : op_merged_write_done);
    if (p->op != op)
      p->op->nmio++;
  }
  if (pm) {
    io[n] = r5_op_mio(op, op->r, op->pd, pm, MOP_WRITE, parity, m->lo, len, r5_op_write_done);
    /* Parity is stable when any request it covers asked for FUA. */
    if (io[n] && fua)
      io[n]->flags |= MIO_FUA;
    n++;
  }
  op->mios = n ? raid_malloc(n * sizeof *op->mios) : NULL;
  for (k = 0; k < n && op->mios; k++)
    if (io[k] == NULL)
      break;
  if (n && (op->mios == NULL || k < n)) {
    for (k = 0; k < n; k++)
      if (io[k])
        req_mio_discard(io[k]);
    set_error(ENOMEM, "raid5 %s: stripe %" PRIu64 ": out of memory", a->name,
              op->lock.row);
    r5_op_finish(op, -ENOMEM);
    return;
  }
  memcpy(op->mios, io, n * sizeof *op->mios);

  /* Go: one reference per own write and per merged op, one counting. */
  op->pending = 1 + m->nops + nown + (pm ? 1 : 0);
  for (k = 0; k < m->nops; k++) {
    struct r5op *f = m->ops[k];

    if (f->mio)
      f->mio = op->mios + (f->mio - io);
    f->lead = op;
    f->notify.fn = op_merged_written;
    f->lock.task.fn = op_merged_write;
    queue_send(op->r->q, f->r->q, &f->lock.task, 0);
  }
  for (k = 0; k < nown; k++)
    req_mio_submit(op->mios[k]);
  if (pm)
    req_mio_submit(op->mios[n - 1]);
  r5_op_write_put(op);
}

/* Try to merge the writes waiting behind write OP (granted) into full
 * stripes over OP's columns; true if they were, and are being written.
 * What may fail for lack of memory is allocated before any op is taken. */
static bool
op_merge(struct r5op *op)
{
  struct raid_array *a = op->r->a;
  const struct raid_geo *G = op->r->geo;
  struct r5merge *m;
  uint8_t *parity;
  unsigned k;

  /* Whatever could join OP lies within its columns, so waits for it. */
  if (!op->write || raid_array_is_failed(a) || !range_lock_blocks(a->locks, &op->lock))
    return false;
  m = raid_malloc(sizeof *m);
  if (m == NULL)
    return false;
  m->a = a;
  m->G = G;
  m->lo = op->lock.lo;
  m->hi = op->lock.hi;
  m->npiece = m->nops = 0;
  /* A lead op that is whole on its own is a plain full stripe. */
  if (!merge_add(m, op) || merge_complete(m)) {
    raid_free(m);
    return false;
  }
  op->mem_len = (m->hi - m->lo + RAID_BUF_ALIGN - 1) / RAID_BUF_ALIGN * RAID_BUF_ALIGN;
  parity = op->mem = raid_buf_get(op->mem_len);
  if (parity == NULL ||
      !range_lock_absorb(a->locks, &op->lock, merge_take, merge_complete, m)) {
    raid_buf_put(op->mem, op->mem_len);
    op->mem = NULL;
    raid_free(m);
    return false;
  }
  for (k = m->nops; k-- > 0; ) {
    m->ops[k]->merged_next = op->merged;
    op->merged = m->ops[k];
  }
  op_write_merged(op, m, parity);
  raid_free(m);
  return true;
}

/* ---- plugging -------------------------------------------------------------------- */

/* A plugged op's deadline.  It holds a reference on the op's request, so
 * the request (and its queue) outlive it; OP is cleared once the op goes,
 * as the op may then finish before the (cancelled) timer completes.  Both
 * run on the op's queue. */
struct r5timer {
  struct qtask task;
  struct __kernel_timespec ts;
  struct r5op *op;
  struct raid_request *r;
};

static void op_go(struct qtask *t, int res);

/* A poke, or the plug's timer, from queue FROM (the thread we are on):
 * if OP is still plugged, run it on its queue.  The pokes and the timer
 * may come from different threads; only the one that unplugs runs it. */
static bool
op_unplug(struct r5op *op, struct raid_queue *from)
{
  if (!atomic_load_explicit(&op->plugged, memory_order_relaxed) ||
      !atomic_exchange(&op->plugged, false))
    return false;
  op->lock.task.fn = op_go;
  if (from == op->lock.q)
    queue_defer(from, &op->lock.task, 0);
  else
    queue_post(op->lock.q, &op->lock.task, 0);
  return true;
}

/* How plugs fare (see "Plugging" above).  The writes in flight in the
 * library show a stream's depth only when the library is what holds
 * them up: behind raidd's NBD server, on a CPU-bound machine, a client's
 * 32 writes wait mostly in the socket, and the library sees 4 to 8.  So
 * a candidate also plugs when recent plugs filled their stripes (the
 * followers did come in time), and one candidate in 16 probes when they
 * did not: a plug whose time runs out costs its writer one mean write
 * latency, and counts 4 against plugging. */
#define PLUG_SCORE_MAX 16
#define PLUG_PROBE 16

bool
r5_plugs_fill(struct r5conf *c)
{
  return atomic_load_explicit(&c->plug_score, memory_order_relaxed) > 0;
}

bool
r5_plug_worth(struct r5conf *c, bool busy)
{
  if (busy || r5_plugs_fill(c))
    return true;
  return atomic_fetch_add_explicit(&c->plug_probe, 1, memory_order_relaxed) % PLUG_PROBE == 0;
}

static void
plug_scored(struct r5conf *c, int delta)
{
  int v = atomic_load_explicit(&c->plug_score, memory_order_relaxed) + delta;

  atomic_store_explicit(&c->plug_score, MAX(-PLUG_SCORE_MAX, MIN(PLUG_SCORE_MAX, v)),
                        memory_order_relaxed);
}

/* Add write W (OP itself, or one waiting behind it) to plugged OP's
 * gather, under the table's lock; false if a merge could not take it. */
static bool
gather_add(struct r5op *op, const struct r5op *w)
{
  struct r5gather *g = &op->gather;

  return spans_add(g->span, &g->n, ARRAY_SIZE(g->span), op->lock.lo, op->lock.hi, w);
}

/* The stripe table's hook, under its lock: W is blocked by L, whose op
 * may be plugged.  A plug waits for the rest of its columns' stripe, so
 * a write that brings part of it is gathered, and the op goes when the
 * stripe is full (it then takes them all over: op_merge()).  Anything
 * else that waits for it (a read, a write it cannot take) makes it go at
 * once: a plug holds up nobody else.  W NULL: the op starts over with
 * its own pieces (range_lock_rescan()), the waiters follow. */
void
r5_op_poke(struct range_lock *l, struct range_lock *w)
{
  struct r5op *op = l->owner, *wop = w ? w->owner : NULL;

  if (!atomic_load_explicit(&op->plugged, memory_order_acquire))
    return;
  if (w == NULL) {
    op->gather.n = 0;
    gather_add(op, op);
    return;
  }
  if (wop && wop->write && gather_add(op, wop)) {
    if (!spans_full(op->gather.span, op->gather.n, op->r->geo->raid_disks - 1,
                    op->lock.lo, op->lock.hi))
      return;
    plug_scored(op->r->a->priv, 1);
    stats_add(&op->r->a->stats.plug[PLUGS_FILLED], 1);
  }
  op_unplug(op, w->q);
}

static void
plug_timer_done(struct qtask *t, int res)
{
  struct r5timer *tm = (struct r5timer *)t;
  struct r5op *op = tm->op;

  if (op) {
    op->timer = NULL;
    if (op_unplug(op, op->lock.q)) {
      plug_scored(tm->r->a->priv, -4);
      stats_add(&tm->r->a->stats.plug[PLUGS_EXPIRED], 1);
    }
  }
  req_put(tm->r, 0);
  raid_free(tm);
}

/* How long a plug may wait for the writes that fill its stripe, AHEAD
 * bytes of the stream beyond its own write: the array's recent mean
 * write latency (a follower comes when one of the writer's requests
 * completes; 1 ms before any is known), or twice the time the writes
 * take to arrive that far at their recent pace, if longer (a client
 * whose writes wait in raidd's socket sends faster than the library
 * completes them), within [PLUG_MIN_US, PLUG_MAX_US]. */
#define PLUG_MIN_US 100
#define PLUG_MAX_US 100000

static unsigned
plug_usec(const struct r5conf *c, uint64_t ahead)
{
  uint64_t ns = atomic_load_explicit(&c->write_lat_ns, memory_order_relaxed);
  uint64_t gap = atomic_load_explicit(&c->write_gap_ns, memory_order_relaxed);
  uint64_t len = atomic_load_explicit(&c->write_len, memory_order_relaxed);
  unsigned fixed = atomic_load_explicit(&c->plug_us, memory_order_relaxed);

  if (fixed)
    return fixed;
  if (ns == 0)                     /* no write has completed yet */
    ns = 1000000;
  if (len)
    ns = MAX(ns, 2 * MIN(ahead / len + 1, 1024) * gap);
  return MIN(PLUG_MAX_US, MAX(PLUG_MIN_US, ns / 1000));
}

void
raid5_set_plug_window(struct raid_array *a, unsigned usec)
{
  struct r5conf *c = a->priv;

  atomic_store(&c->plug_us, usec);
}

/* Plug OP (granted, not merged): wait for the rest of its row. */
static void
op_plug(struct r5op *op)
{
  struct raid_array *a = op->r->a;
  const struct raid_geo *G = op->r->geo;
  struct r5conf *c = a->priv;
  struct r5timer *tm = raid_calloc(1, sizeof *tm);
  uint64_t wend = op->r->offset + op->r->len, full_at;

  if (tm == NULL) {             /* no memory for the timer: go now */
    r5_op_plan(op);
    return;
  }
  tm->task.fn = plug_timer_done;
  tm->op = op;
  tm->r = op->r;
  req_get(op->r);
  op->timer = tm;
  stats_add(&a->stats.plug[PLUGS_WAITED], 1);
  atomic_store_explicit(&op->plugged, true, memory_order_release);
  /* The stripe is full when the stream reaches the end of its columns
   * in the row's last data index. */
  full_at = op->lock.row * row_bytes(G) + (uint64_t)(G->raid_disks - 2) * G->chunk_size +
            op->lock.hi;
  queue_timer(op->lock.q, &tm->task, &tm->ts,
              plug_usec(c, full_at > wend ? full_at - wend : 0));
  /* The locks that queued behind ours before we plugged did not poke. */
  range_lock_rescan(a->locks, &op->lock);
}

/* Sequential writers: forget a finished request that its stream's next
 * one would follow (that one then has nothing to plug for), and keep a
 * moving mean of write latency. */
void
raid5_request_done(struct raid_request *r)
{
  struct r5conf *c = r->a->priv;
  uintptr_t mine = (uintptr_t)r;
  uint64_t lat, avg;
  unsigned k;

  if (r->counted)
    atomic_fetch_sub_explicit(&c->write_bytes, r->counted, memory_order_relaxed);
  if (r->op != REQ_WRITE)
    return;
  for (k = 0; k < ARRAY_SIZE(c->stream); k++)
    if (atomic_load_explicit(&c->stream[k].req, memory_order_relaxed) == mine) {
      atomic_compare_exchange_strong(&c->stream[k].req, &mine, 0);
      break;
    }
  lat = mono_ns() - r->start_ns;
  avg = atomic_load_explicit(&c->write_lat_ns, memory_order_relaxed);
  atomic_store_explicit(&c->write_lat_ns, avg ? avg - avg / 8 + lat / 8 : lat,
                        memory_order_relaxed);
}

/* Whether write R, array bytes [POS, END), continues one of the recent
 * write streams (it starts where that stream's last write ended), and
 * whether that last write is still in flight (BEHIND) or done (AFTER); R
 * becomes the stream's last write.  A write that continues none starts a
 * stream, in place of the oldest.
 * Several clients writing sequentially (fio numjobs) are several streams. */
enum r5_stream
r5_stream_continue(struct r5conf *c, struct raid_request *r, uint64_t pos, uint64_t end)
{
  unsigned k;

  for (k = 0; k < ARRAY_SIZE(c->stream); k++) {
    uint64_t e = pos;

    if (atomic_load_explicit(&c->stream[k].end, memory_order_relaxed) == pos &&
        atomic_compare_exchange_strong(&c->stream[k].end, &e, end))
      return atomic_exchange(&c->stream[k].req, (uintptr_t)r) != 0 ? R5_STREAM_BEHIND
                                                                   : R5_STREAM_AFTER;
  }
  k = atomic_fetch_add(&c->stream_next, 1) % ARRAY_SIZE(c->stream);
  atomic_store(&c->stream[k].end, end);
  atomic_store(&c->stream[k].req, (uintptr_t)r);
  return R5_STREAM_NONE;
}

/* Write R arrives: count its bytes in flight (until raid5_request_done())
 * and its stream's pace, moving means of the time between two writes and
 * of their length (several at once from one socket read count as gaps of
 * 0), which set a plug's deadline (plug_usec()).  Returns the bytes in
 * flight now. */
uint64_t
r5_write_arrived(struct r5conf *c, struct raid_request *r)
{
  uint64_t last, gap, len;

  last = atomic_exchange_explicit(&c->last_write_ns, r->start_ns, memory_order_relaxed);
  if (last) {
    gap = atomic_load_explicit(&c->write_gap_ns, memory_order_relaxed);
    gap -= gap / 16;
    if (r->start_ns > last)
      gap += (r->start_ns - last) / 16;
    atomic_store_explicit(&c->write_gap_ns, gap, memory_order_relaxed);
  }
  len = atomic_load_explicit(&c->write_len, memory_order_relaxed);
  atomic_store_explicit(&c->write_len, len ? len - len / 16 + r->len / 16 : r->len,
                        memory_order_relaxed);
  r->counted = r->len;
  return atomic_fetch_add_explicit(&c->write_bytes, r->len, memory_order_relaxed) + r->len;
}

/* The write window, given NOW bytes of writes in flight: a client's queue
 * depth shows in those bytes at their peak, as they dip each time a batch
 * completes.  So the window is the peak, decaying by 1/64 a write once the
 * bytes stay below it. */
uint64_t
r5_write_window(struct r5conf *c, uint64_t now)
{
  uint64_t w = atomic_load_explicit(&c->write_window, memory_order_relaxed);

  w = MAX(now, w - w / 64);
  atomic_store_explicit(&c->write_window, w, memory_order_relaxed);
  return w;
}

/* A plugged op goes: poked, or its time is up. */
static void
op_go(struct qtask *t, int res)
{
  struct r5op *op = (struct r5op *)((char *)t - offsetof(struct r5op, lock.task));

  if (op->timer) {
    op->timer->op = NULL;
    queue_timer_cancel(op->lock.q, &op->timer->task);
    op->timer = NULL;
  }
  if (!op_merge(op))
    r5_op_plan(op);
}

void
r5_op_locked(struct qtask *t, int res)
{
  struct r5op *op = (struct r5op *)((char *)t - offsetof(struct r5op, lock.task));

  if (op_merge(op))
    return;
  if (op->plug_ok)
    op_plug(op);
  else
    r5_op_plan(op);
}

