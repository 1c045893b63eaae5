/* RAID 5: striping with distributed XOR parity, md's layouts.
 *
 * Geometry.  With N members a stripe (row) holds D = N-1 data chunks and
 * one parity chunk; which member holds the parity, and in which order the
 * data chunks follow it, is the layout (geometry.c, md's
 * raid5_compute_sector()): it rotates from row to row, or, in parity-first
 * and parity-last, stays on one member (a RAID 4 in md's format).  Nothing
 * below assumes either: every position comes from the row's parity member
 * (op->pd, geo_raid5_pd_idx()) and dd_slot().  Byte x of data chunk i in row r is on the
 * member holding data index i, at r * chunk + x, and parity byte x of the
 * row is the XOR of byte x of every data chunk.
 *
 * Reads.  A read of a member that is in sync goes straight to it, without
 * locks: a read racing a write may see old or new data, as on any disk.  A
 * read of a member that is missing or failed, or whose read fails, is
 * reconstructed: under the stripe lock, read the same bytes from every
 * other member and XOR them.  The request's pieces in the same columns of
 * that row (whole chunks, in a large read) are read by the reconstruction
 * straight into the caller's buffer, not a second time: a degraded large
 * read costs each surviving chunk one read, as with md's stripe cache.
 *
 * Writes.  A request is cut into rows; each row piece is a "stripe op" that
 * takes the stripe lock on the columns it touches (range-lock.c), so no
 * other op can change those bytes between our read and our write.  Within
 * the row, the column range splits into at most three segments in each of
 * which the same data chunks are written.  For each segment we pick:
 *   FULL      every data chunk is written: parity = XOR of the new data,
 *             no reads;
 *   RMW       read-modify-write: read the old data being replaced and the
 *             old parity; parity ^= old ^ new.  k+1 reads for k chunks;
 *   RCW       reconstruct-write: read the data chunks not being written;
 *             parity = XOR of new and untouched data.  D-k reads;
 *   NOPARITY  the parity member is gone: just write the data.
 * RMW or RCW goes by the fewer member reads, as md does, except in a row
 * the resync has not reached (always RCW, as md beyond recovery_cp), and
 * when a member is missing: if it is a chunk being written, only RCW keeps its
 * new contents implied by parity; if it is a chunk not written, only RMW
 * avoids reading it.  Then data and parity are written in parallel and
 * the lock released when both are done.
 *
 * Merging and plugging (raid5-merge.c) turn the row pieces of sequential
 * or complementary writes into full-stripe writes.
 *
 * Ownership and threads.  A request belongs to the queue it was submitted
 * on, and so do its stripe ops: each op runs on that queue's thread, and
 * its member I/O is submitted and completed there.  The stripe lock table
 * is the only structure they share (range-lock.c); merging, the one
 * place where a thread touches another's op, keeps to the same rule
 * (raid5-merge.c).
 *
 * Running out of memory fails the row piece with ENOMEM before any of its
 * writes is submitted (a write is all or nothing: its member I/Os are
 * allocated together), so parity never lags its data because of it.
 *
 * Failures.  A read that fails marks its member faulty and the op plans
 * again from scratch (now degraded).  A write that fails marks its member
 * faulty; the data it should have held is implied by the others, so the
 * request still succeeds unless that was a second member lost, which
 * fails the array.  Like md without a journal, a crash between the data
 * and parity writes leaves that stripe's parity stale (the "write hole");
 * the resync after an unclean shutdown is what repairs it.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "raid5.h"

static int
raid5_setup(struct raid_array *a)
{
  /* Of 2, as md allows: the parity of one data chunk is a copy of it, so
   * the members hold what a RAID 1's would (md's takeover from RAID 1). */
  if (a->raid_disks < 2)
    return set_error(EINVAL, "raid5 %s: %u member: RAID 5 needs at least 2",
                     a->name, a->raid_disks);
  if (a->layout == RAID_LAYOUT_DEFAULT)
    a->layout = RAID_LAYOUT_LEFT_SYMMETRIC;
  if (!RAID5_LAYOUT_VALID(a->layout))
    return set_error(EINVAL, "raid5 %s: unknown layout %d (left-asymmetric 0, "
                     "right-asymmetric 1, left-symmetric 2, right-symmetric 3, "
                     "parity-first 4, parity-last 5)", a->name, a->layout);
  a->size = geo_array_size(a->level, a->raid_disks, a->copies, a->chunk_size,
                           a->member_size);
  if (a->priv == NULL && (a->priv = calloc(1, sizeof (struct r5conf))) == NULL)
    return set_error(ENOMEM, "raid5 %s: out of memory", a->name);
  return 0;
}

static void
raid5_free(struct raid_array *a)
{
  free(a->priv);
  a->priv = NULL;
}

static unsigned
raid5_max_degraded(const struct raid_array *a)
{
  return 1;
}

static bool
raid5_enough(const struct raid_array *a)
{
  return raid_array_degraded(a) <= 1;
}

/* ---- helpers ------------------------------------------------------------ */

/* The data index member SLOT holds in a row whose parity is on PD, or D
 * (raid_disks - 1) for the parity itself. */
static unsigned
data_index(const struct raid_geo *G, unsigned pd, unsigned slot)
{
  unsigned i, D = G->raid_disks - 1;

  for (i = 0; i < D; i++)
    if (dd_slot(G, pd, i) == slot)
      return i;
  return D;
}

/* Member SLOT holds row ROW (in sync, or rebuilt past it). */
static bool
row_ok(const struct raid_array *a, const struct raid_geo *G, unsigned slot, uint64_t row)
{
  return slot_ok_at(a, slot, row * G->chunk_size, G->chunk_size);
}

/* The member slot that does not hold ROW, or -1. */
static int
missing_slot(const struct raid_array *a, const struct raid_geo *G, uint64_t row)
{
  unsigned i;

  for (i = 0; i < G->raid_disks; i++)
    if (!row_ok(a, G, i, row))
      return i;
  return -1;
}


/* The end of a plain or lead op, on its own queue: the ops it merged are
 * unlocked and sent their result (each finishes on its own queue), then
 * OP itself. */
void
r5_op_finish(struct r5op *op, int err)
{
  struct raid_request *r = op->r;
  struct r5op *f;

  while ((f = op->merged) != NULL) {
    op->merged = f->merged_next;
    range_unlock(r->a->locks, &f->lock, r->q);
    f->result = err;
    f->lock.task.fn = r5_op_merged_finish;
    queue_send(r->q, f->r->q, &f->lock.task, 0);
  }
  range_unlock(r->a->locks, &op->lock, r->q);
  raid_buf_put(op->mem, op->mem_len);
  raid_free(op->mios);
  raid_free(op);
  req_put(r, err);
}

/* ---- phase 3: writes done ------------------------------------------------ */

/* Drop a reference on the write phase; the last one finishes the op. */
void
r5_op_write_put(struct r5op *op)
{
  struct raid_array *a = op->r->a;

  if (--op->pending)
    return;
  if (raid_array_is_failed(a)) {
    set_error(EIO, "raid5 %s: write to stripe %" PRIu64 " failed: the array "
              "has lost %u members", a->name, op->lock.row, raid_array_degraded(a));
    r5_op_finish(op, -EIO);
  }
  else
    r5_op_finish(op, op->err);
}

void
r5_op_write_done(struct member_io *io, int res)
{
  struct r5op *op = io->ctx;
  struct raid_array *a = op->r->a;

  if (res < 0)
    array_member_failed(a, io->slot, io->m, res, mio_data_offset(a, io), "write");
  r5_op_write_put(op);
}

/* A member I/O of OP's row on member SLOT (bound by the caller), on
 * behalf of request R (OP's own, or that of an op merged into OP: its FUA
 * flag goes with its data); NULL when out of memory. */
struct member_io *
r5_op_mio(struct r5op *op, struct raid_request *r, unsigned slot, struct raid_member *m,
       enum mop mop, void *buf, uint32_t x0, uint32_t len,
       void (*done)(struct member_io *, int))
{
  const struct raid_geo *G = op->r->geo;
  struct member_io *io;

  io = req_mio(r, slot, m, mop, buf, op->lock.row * G->chunk_size + x0 + G->shift,
               len, done);
  if (io)
    io->ctx = op;
  return io;
}

/* Submit OP's write I/Os IO[0..N) (all, or none when one could not be
 * allocated) and drop the counting reference of the write phase. */
static void
op_write_all(struct r5op *op, struct member_io **io, unsigned n)
{
  op->pending = 1 + n;
  if (req_mio_batch_submit(op->r, io, n) < 0) {
    op->err = -ENOMEM;
    op->pending = 1;
  }
  r5_op_write_put(op);
}

/* ---- phase 2: compute parity, write ------------------------------------------ */

/* Statistics (stats.c): how this row piece kept its parity, counted once
 * its reads are done, so a piece planned again after a failed read counts
 * by its last plan.  Columns written different ways count as the most
 * expensive: degraded, then RCW, then RMW. */
static void
op_count(const struct r5op *op)
{
  struct stats_array *st = &op->r->a->stats;
  enum stats_stripe c = STRIPE_FULL;
  unsigned s;

  if (!op->write) {
    if (op->seg[0].how == S_RECON)
      stats_add(&st->stripe[STRIPE_DEGRADED_READ], 1);
    return;
  }
  for (s = 0; s < op->nseg; s++) {
    if (op->seg[s].how == S_NOPARITY)
      c = STRIPE_DEGRADED_WRITE;
    else if (op->seg[s].how == S_RCW && c != STRIPE_DEGRADED_WRITE)
      c = STRIPE_RCW;
    else if (op->seg[s].how == S_RMW && c == STRIPE_FULL)
      c = STRIPE_RMW;
  }
  stats_add(&st->stripe[c], 1);
}

/* Whether OP writes zeroes for a discard or write zeroes (merged ops are
 * plain writes of the zero buffer, and never come here as the lead). */
static bool
op_zeroes(const struct r5op *op)
{
  return op->write && op->r->op != REQ_WRITE && op->merged == NULL;
}

/* Writes: each data chunk and the parity go to the member that holds the
 * row now (bound here: a member that failed since the plan is skipped,
 * its part implied by the others, as if its write had failed). */
static void
op_compute_and_write(struct r5op *op)
{
  struct raid_array *a = op->r->a;
  const struct raid_geo *G = op->r->geo;
  unsigned D = G->raid_disks - 1, s, i, n = 0;
  void *src[2 * RAID_MAX_MEMBERS + 1];
  struct member_io *io[3 * RAID_MAX_MEMBERS];
  struct raid_member *m;

  op_count(op);
  for (s = 0; s < op->nseg; s++) {
    struct r5seg *g = &op->seg[s];
    uint32_t len = g->x1 - g->x0;
    unsigned k = 0;

    switch (g->how) {
    case S_FULL:
      if (op_zeroes(op))
        break;                  /* the parity of zeroes is zeroes */
      for (i = 0; i < D; i++)
        src[k++] = user_data(op, i, g->x0);
      raid_xor(g->parity, src, k, len);
      break;
    case S_RCW:
      for (i = 0; i < D; i++)
        src[k++] = i >= g->i0 && i <= g->i1 ? user_data(op, i, g->x0)
                                            : g->old[dd_slot(G, op->pd, i)];
      raid_xor(g->parity, src, k, len);
      break;
    case S_RMW:
      src[k++] = g->old[op->pd];
      for (i = g->i0; i <= g->i1; i++) {
        src[k++] = g->old[dd_slot(G, op->pd, i)];
        src[k++] = user_data(op, i, g->x0);
      }
      g->parity = g->old[op->pd];
      raid_xor(g->parity, src, k, len);
      break;
    case S_RECON:
      for (i = 0; i < G->raid_disks; i++)
        if (g->old[i])
          src[k++] = g->old[i];
      raid_xor(user_data(op, g->i0, g->x0), src, k, len);
      break;
    case S_NOPARITY:
    case S_DIRECT:
      break;
    }
  }
  if (!op->write) {
    r5_op_finish(op, 0);
    return;
  }

  for (s = 0; s < op->nseg; s++) {
    struct r5seg *g = &op->seg[s];
    uint32_t len = g->x1 - g->x0;
    /* Zeroes over every column of a segment: the members discard or zero
     * their ranges themselves (every back-end reads them back as zeroes),
     * parity included; nothing is written from memory. */
    bool z = g->how == S_FULL && op_zeroes(op);
    enum mop mop = !z ? MOP_WRITE : op->r->op == REQ_DISCARD ? MOP_DISCARD : MOP_ZERO;

    for (i = g->i0; i <= g->i1; i++) {
      unsigned slot = dd_slot(G, op->pd, i);

      if ((m = row_member(a, G, slot, op->lock.row)) != NULL)
        io[n++] = r5_op_mio(op, op->r, slot, m, mop, z ? NULL : user_data(op, i, g->x0),
                            g->x0, len, r5_op_write_done);
    }
    if (g->how != S_NOPARITY && (m = row_member(a, G, op->pd, op->lock.row)) != NULL)
      io[n++] = r5_op_mio(op, op->r, op->pd, m, mop, g->parity, g->x0, len,
                       r5_op_write_done);
  }
  op_write_all(op, io, n);
}

/* ---- phase 1: reads --------------------------------------------------------------- */

/* Drop a reference on the read phase; the last one moves on: plan again
 * if a read failed, else compute parity and write. */
static void
op_read_put(struct r5op *op)
{
  if (--op->pending)
    return;
  if (op->err)
    r5_op_finish(op, op->err);
  else if (op->replan)
    r5_op_plan(op);
  else
    op_compute_and_write(op);
}

static void
op_read_done(struct member_io *io, int res)
{
  struct r5op *op = io->ctx;
  struct raid_array *a = op->r->a;

  if (res < 0) {
    array_member_failed(a, io->slot, io->m, res, mio_data_offset(a, io), "read");
    op->replan = true;
  }
  op_read_put(op);
}

/* Read OP's row on member SLOT, columns [X0, X0 + LEN), into BUF.  A
 * member that no longer holds the row (it failed since the plan) counts
 * as a failed read: the op plans again. */
static void
op_read(struct r5op *op, unsigned slot, void *buf, uint32_t x0, uint32_t len)
{
  struct raid_array *a = op->r->a;
  const struct raid_geo *G = op->r->geo;
  struct raid_member *m = row_member(a, G, slot, op->lock.row);
  struct member_io *io;

  if (op->err)
    return;
  if (m == NULL) {
    op->replan = true;
    return;
  }
  io = r5_op_mio(op, op->r, slot, m, MOP_READ, buf, x0, len, op_read_done);
  if (io == NULL) {
    op->err = -ENOMEM;
    return;
  }
  if (op->write)
    stats_add(&a->stats.stripe_read_bytes, len);
  op->pending++;
  req_mio_submit(io);
}

/* Decide how each segment is written (or rebuilt) given which members are
 * in sync now, allocate the buffers and start the reads. */
void
r5_op_plan(struct r5op *op)
{
  struct raid_array *a = op->r->a;
  const struct raid_geo *G = op->r->geo;
  unsigned D = G->raid_disks - 1, s, i, nbuf = 0;
  bool unsynced;
  int miss;
  size_t off = 0;
  uint8_t *mem;

  raid_buf_put(op->mem, op->mem_len);
  op->mem = NULL;
  op->replan = false;
  if (raid_array_is_failed(a)) {
    set_error(EIO, "raid5 %s: stripe %" PRIu64 " cannot be %s: the array has "
              "lost %u members", a->name, op->lock.row,
              op->write ? "written" : "reconstructed", raid_array_degraded(a));
    r5_op_finish(op, -EIO);
    return;
  }
  miss = missing_slot(a, G, op->lock.row);
  /* A row the resync has not reached yet (a new array, or a grown one's
   * new region) may hold parity that does not match its data: RMW would
   * carry the mismatch on, RCW computes parity afresh from the data, so
   * a member lost before the resync gets there reads back right (md
   * forces RCW beyond recovery_cp the same way). */
  unsynced = (op->lock.row + 1) * G->chunk_size > atomic_load(&a->resync_front);

  for (s = 0; s < op->nseg; s++) {
    struct r5seg *g = &op->seg[s];
    unsigned k = g->i1 - g->i0 + 1;
    bool miss_written = false;

    memset(g->old, 0, sizeof g->old);
    g->parity = NULL;
    if (!op->write) {
      /* A read op was started because its piece's member did not hold
       * the row; by now that may have changed, and another member may be
       * missing instead (a rebuild finished, a member failed): rebuild
       * the wanted index that is missing now, if any, else read the
       * wanted ones as they are. */
      int mi = miss >= 0 ? (int)data_index(G, op->pd, miss) : -1;

      if (mi >= 0 && mi < (int)D && op->share >> mi & 1) {
        g->how = S_RECON;
        g->i0 = g->i1 = mi;
        nbuf += D;
      }
      else
        g->how = S_DIRECT;
      continue;
    }
    for (i = g->i0; i <= g->i1; i++)
      if ((int)dd_slot(G, op->pd, i) == miss)
        miss_written = true;
    if (miss == (int)op->pd)
      g->how = S_NOPARITY;
    else if (k == D)
      g->how = S_FULL;
    else if (miss >= 0)
      g->how = miss_written ? S_RCW : S_RMW;
    else if (unsynced)
      g->how = S_RCW;
    else
      g->how = k + 1 < D - k ? S_RMW : S_RCW;
    switch (g->how) {
    case S_FULL: nbuf += !op_zeroes(op); break;
    case S_RMW: nbuf += k + 1; break;
    case S_RCW: nbuf += D - k + 1; break;
    default: break;
    }
  }

  /* One allocation, each buffer aligned for O_DIRECT. */
  for (s = 0; s < op->nseg; s++)
    off = MAX(off, (size_t)(op->seg[s].x1 - op->seg[s].x0));
  off = (off + RAID_BUF_ALIGN - 1) / RAID_BUF_ALIGN * RAID_BUF_ALIGN;
  op->mem_len = nbuf * off;
  mem = op->mem = nbuf ? raid_buf_get(op->mem_len) : NULL;
  if (nbuf && mem == NULL) {
    set_error(ENOMEM, "raid5 %s: stripe %" PRIu64 ": out of memory", a->name,
              op->lock.row);
    r5_op_finish(op, -ENOMEM);
    return;
  }

  op->pending = 1;              /* counting reference, dropped below */
  for (s = 0; s < op->nseg; s++) {
    struct r5seg *g = &op->seg[s];
    uint32_t len = g->x1 - g->x0;

#define TAKE() (mem += off, mem - off)
    switch (g->how) {
    case S_RECON:
      for (i = 0; i < G->raid_disks; i++)
        if (i != dd_slot(G, op->pd, g->i0)) {
          unsigned j = data_index(G, op->pd, i);

          g->old[i] = j < D && op->share >> j & 1 ? user_data(op, j, g->x0) : TAKE();
          op_read(op, i, g->old[i], g->x0, len);
        }
      break;
    case S_DIRECT:
      for (i = 0; i < D; i++)
        if (op->share >> i & 1)
          op_read(op, dd_slot(G, op->pd, i), user_data(op, i, g->x0), g->x0, len);
      break;
    case S_FULL:
      g->parity = op_zeroes(op) ? NULL : TAKE();
      break;
    case S_RCW:
      g->parity = TAKE();
      for (i = 0; i < D; i++)
        if (i < g->i0 || i > g->i1) {
          unsigned slot = dd_slot(G, op->pd, i);
          g->old[slot] = TAKE();
          op_read(op, slot, g->old[slot], g->x0, len);
        }
      break;
    case S_RMW:
      g->old[op->pd] = TAKE();
      op_read(op, op->pd, g->old[op->pd], g->x0, len);
      for (i = g->i0; i <= g->i1; i++) {
        unsigned slot = dd_slot(G, op->pd, i);
        g->old[slot] = TAKE();
        op_read(op, slot, g->old[slot], g->x0, len);
      }
      break;
    case S_NOPARITY:
      break;
    }
#undef TAKE
  }
  op_read_put(op);
}

/* Start a stripe op on array bytes [pos, end), which lie in one row.  For
 * a reconstruct read they lie in one chunk, and SHARE has the data indices
 * of the row whose same columns the request reads: the op reads those
 * into the caller's buffer, and nobody else reads them. */
static void
op_start(struct raid_request *r, uint64_t pos, uint64_t end, bool write,
         bool plug_ok, uint64_t share)
{
  struct raid_array *a = r->a;
  const struct raid_geo *G = r->geo;
  uint64_t C = G->chunk_size, row = pos / row_bytes(G);
  uint64_t s = pos - row * row_bytes(G), e = end - row * row_bytes(G);
  unsigned is = s / C, ie = (e - 1) / C;
  uint32_t xs = s % C, xe = (e - 1) % C + 1;
  uint32_t cuts[4], x;
  unsigned ncut = 0, c;
  struct r5op *op = raid_calloc(1, sizeof *op);

  if (op == NULL) {
    /* The rest of the request goes on; it fails. */
    set_error(ENOMEM, "raid5 %s: stripe %" PRIu64 ": out of memory", a->name, row);
    req_error(r, -ENOMEM);
    return;
  }
  op->r = r;
  op->write = write;
  op->plug_ok = plug_ok;
  op->share = write ? 0 : share | (uint64_t)1 << is;
  op->pd = geo_raid5_pd_idx(G->layout, G->raid_disks, row);
  req_get(r);

  /* Column segments: cut at the start and end columns.  In column x the
   * written indices are is..ie, less is when x < xs, less ie when x >= xe. */
  if (is == ie) {
    op->seg[0] = (struct r5seg){ .x0 = xs, .x1 = xe, .i0 = is, .i1 = is };
    op->nseg = 1;
  }
  else {
    cuts[ncut++] = 0;
    cuts[ncut++] = MIN(xs, xe);
    cuts[ncut++] = MAX(xs, xe);
    cuts[ncut++] = C;
    for (c = 0; c + 1 < ncut; c++) {
      unsigned lo, hi;

      if (cuts[c] == cuts[c + 1])
        continue;
      x = cuts[c];
      lo = x >= xs ? is : is + 1;
      hi = x < xe ? ie : ie - 1;
      if (lo > hi)
        continue;
      op->seg[op->nseg++] = (struct r5seg){ .x0 = x, .x1 = cuts[c + 1], .i0 = lo, .i1 = hi };
    }
  }
  op->lock.row = row;
  op->lock.space = G->space;
  op->lock.lo = op->seg[0].x0;
  op->lock.hi = op->seg[0].x1;
  for (c = 1; c < op->nseg; c++) {
    op->lock.lo = MIN(op->lock.lo, op->seg[c].x0);
    op->lock.hi = MAX(op->lock.hi, op->seg[c].x1);
  }
  op->lock.q = r->q;
  op->lock.task.fn = r5_op_locked;
  if (write) {
    op->lock.owner = op;
    op->lock.poke = r5_op_poke;
  }
  range_lock(a->locks, &op->lock);
}

/* ---- reads ---------------------------------------------------------------- */

static void
raid5_read_done(struct member_io *io, int res)
{
  struct raid_request *r = mio_req(io);

  if (res == 0)
    return;
  array_member_failed(r->a, io->slot, io->m, res, mio_data_offset(r->a, io), "read");
  op_start(r, io->aoff, io->aoff + io->len, false, false, 0);
}

/* Read array bytes [pos, end), which lie in one row.  A piece on a member
 * that does not hold it is reconstructed from the same columns of every
 * other member; the request's pieces with exactly those columns (whole
 * chunks, in a large read) are read by that reconstruction into the
 * caller's buffer, not a second time on their own.  Which members hold
 * the row is decided once, here: r5_op_plan() reads what SHARE says. */
static void
read_row(struct raid_request *r, uint64_t pos, uint64_t end)
{
  struct raid_array *a = r->a;
  const struct raid_geo *G = r->geo;
  uint64_t C = G->chunk_size, rb = row_bytes(G), base = pos / rb * rb;
  unsigned n = 0, k, recon = RAID_MAX_MEMBERS;
  uint64_t share = 0;
  struct {
    uint64_t pos, member_off;
    size_t len;
    unsigned slot, idx;
    struct raid_member *m;       /* bound, or NULL: reconstruct */
  } pc[RAID_MAX_MEMBERS];

  while (pos < end) {
    size_t len = MIN(end - pos, C - pos % C);
    struct raid5_map m;

    geo_raid5_map(G->layout, G->raid_disks, G->chunk_sectors, pos >> SECTOR_SHIFT, &m);
    pc[n].pos = pos;
    pc[n].member_off = m.member_sector << SECTOR_SHIFT;
    pc[n].len = len;
    pc[n].slot = m.dd_idx;
    pc[n].idx = (pos - base) / C;
    pc[n].m = slot_member_at(a, m.dd_idx, pc[n].member_off, len);
    if (!pc[n].m && recon == RAID_MAX_MEMBERS)
      recon = n;
    n++;
    pos += len;
  }
  /* One member is missing from a row of a working array: one piece to
   * rebuild.  (With more, the array has failed and each op says so.) */
  for (k = 0; k < n && recon < n; k++)
    if (pc[k].m && pc[k].pos % C == pc[recon].pos % C && pc[k].len == pc[recon].len)
      share |= (uint64_t)1 << pc[k].idx;
  for (k = 0; k < n; k++) {
    struct member_io *io;

    if (!pc[k].m)
      op_start(r, pc[k].pos, pc[k].pos + pc[k].len, false, false,
               k == recon ? share : 0);
    else if (!(share >> pc[k].idx & 1)) {
      io = req_mio(r, pc[k].slot, pc[k].m, MOP_READ, r->buf + (pc[k].pos - r->offset),
                   pc[k].member_off + G->shift, pc[k].len, raid5_read_done);
      if (io == NULL) {
        req_error(r, -ENOMEM);
        return;
      }
      io->aoff = pc[k].pos;
      req_mio_submit(io);
    }
  }
}

static void
raid5_read(struct raid_request *r)
{
  uint64_t pos = r->offset, end = r->offset + r->len, rb = row_bytes(r->geo);

  while (pos < end) {
    uint64_t next = MIN(end, (pos / rb + 1) * rb);

    read_row(r, pos, next);
    pos = next;
  }
}

/* ---- entry ---------------------------------------------------------------- */

#define PLUG_AHEAD 32

static void
raid5_submit(struct raid_request *r)
{
  struct raid_array *a = r->a;
  const struct raid_geo *G = r->geo;
  uint64_t pos = r->offset, end = r->offset + r->len, rb = row_bytes(G);
  bool seq = false, busy = false, near;

  switch (r->op) {
  case REQ_READ:
    raid5_read(r);
    return;
  case REQ_FLUSH:
    array_flush_members(r);
    return;
  case REQ_DISCARD:
  case REQ_ZERO:
    /* Zeroes keep parity consistent only if written through the stripe
     * logic: a member-level discard would leave parity stale. */
    r->buf = (uint8_t *)zero_buf(r->len);
    if (r->buf == NULL) {
      req_error(r, set_error(ENOMEM, "raid5 %s: no zero page mapping", a->name));
      return;
    }
    break;
  case REQ_WRITE:
    break;
  }
  /* Plug candidates (see "Plugging" in raid5-merge.c): the pieces short
   * of a full stripe of a sequential write whose predecessor is still in
   * flight, or done while recent plugs filled (behind raidd's NBD server
   * the next 1 MiB write's payload is often still arriving when the
   * previous one completes; at queue depth 1 no plug fills, and the few
   * that expire stop it), when the rest of their stripe can come: it
   * comes after them (so they start in the row's first chunk), and the
   * stream is ahead far enough: the last piece, starting a row that the
   * next such write would fill, or any piece while the stream runs deep
   * (r5_plug_worth()). */
  if (r->parent == NULL && r->op == REQ_WRITE) {
    enum r5_stream st = r5_stream_continue(a->priv, r, pos, end);

    seq = st == R5_STREAM_BEHIND || (st == R5_STREAM_AFTER && r5_plugs_fill(a->priv));
    busy = r5_write_window(a->priv, r5_write_arrived(a->priv, r)) >= rb;
  }
  /* The writes that fill a piece's stripe are at most PLUG_AHEAD writes
   * of this one's length ahead: beyond, no client runs that deep (4 KiB
   * writes over 512 KiB chunks would need 256), and only a row's bytes
   * in flight shows that one does. */
  near = busy || (uint64_t)(G->raid_disks - 2) * G->chunk_size <= PLUG_AHEAD * r->len;
  while (pos < end) {
    uint64_t next = MIN(end, (pos / rb + 1) * rb);
    bool whole = pos % rb == 0 && next - pos == rb;
    bool plug_ok = seq && !whole && pos % rb < G->chunk_size &&
      ((next == end && pos % rb == 0 && rb - end % rb <= r->len) ||
       (near && r5_plug_worth(a->priv, busy)));

    op_start(r, pos, next, true, plug_ok, 0);
    pos = next;
  }
}

/* ---- sync engine ------------------------------------------------------------ */

static void
raid5_sync_locks(struct sync_op *op)
{
  uint64_t C = op->a->chunk_size, row;

  for (row = op->pos / C; row < (op->pos + op->len) / C; row++)
    sync_add_lock(op, row, 0, C);
}

/* The role RECOVER rebuilds in this step, or -1 (resync and scrub). */
static int
sync_target(const struct sync_op *op)
{
  int i, target = -1;

  for (i = 0; i < (int)op->a->raid_disks; i++)
    if (op->target[i])
      target = i;
  return op->action == RAID_SYNC_RECOVER ? target : -1;
}

/* A piece's reads: every role but the one rebuilt, each into a column of
 * the piece's buffers (sync_piece_reads()). */
static int
raid5_sync_read(struct sync_op *op)
{
  struct raid_array *a = op->a;
  struct sync_reads *rd = sync_piece_reads(op);
  unsigned N = a->raid_disks, i;
  int target = sync_target(op);

  rd->issued = true;
  if (op->action == RAID_SYNC_RECOVER && target < 0)
    return 0;
  for (i = 0; i < N; i++) {
    if ((int)i == target)
      continue;
    if ((rd->mem[i] = slot_member_at(a, i, op->pos, op->len)) == NULL)
      return set_error(EAGAIN, "raid5 %s: %s needs every other member in sync, "
                       "and role %u is not", a->name,
                       raid_sync_action_name(op->action), i);
    rd->buf[i] = sync_buf(op, op->len);
    sync_io(op, rd->mem[i], i, MOP_READ, rd->buf[i], op->pos, op->len);
  }
  return 0;
}

/* Recovery: every row's missing column is the XOR of the others, so one
 * read per surviving member covers every row of the piece.  Resync and
 * scrub: the XOR of all N columns of a row is zero when parity matches;
 * where it is not, resync and repair write parity computed from the data
 * (md trusts the data, as it cannot tell which column is wrong). */
static int
raid5_sync_step(struct sync_op *op)
{
  struct raid_array *a = op->a;
  struct sync_reads *rd = sync_piece_reads(op);
  unsigned N = a->raid_disks, i, n = 0;
  uint64_t C = a->chunk_size, row;
  void *src[RAID_MAX_MEMBERS];
  uint8_t *sum;
  int target = sync_target(op), r;

  if (op->action == RAID_SYNC_RECOVER && target < 0)
    return 0;
  if (!rd->issued && (r = raid5_sync_read(op)) < 0)
    return r;
  if ((r = sync_io_wait(op)) < 0)
    return r;
  for (i = 0; i < N; i++)
    if ((int)i != target)
      src[n++] = rd->buf[i];
  sum = sync_buf(op, op->len);
  if (sum == NULL)
    return sync_io_wait(op);    /* its error */
  raid_xor(sum, src, n, op->len);
  if (op->action == RAID_SYNC_RECOVER) {
    sync_io(op, op->target[target], target, MOP_WRITE, sum, op->pos, op->len);
    return sync_io_wait(op);
  }

  for (row = op->pos / C; row < (op->pos + op->len) / C; row++) {
    uint64_t x = row * C - op->pos, bad;
    unsigned pd = geo_raid5_pd_idx(a->layout, N, row), k = 0;

    bad = sync_count_mismatch(sum + x, NULL, C);
    if (bad == 0)
      continue;
    op->mismatches += bad;
    if (op->action == RAID_SYNC_CHECK)
      continue;
    for (i = 0; i < N; i++)
      if (i != pd)
        src[k++] = rd->buf[i] + x;
    raid_xor(rd->buf[pd] + x, src, k, C);
    sync_io(op, rd->mem[pd], pd, MOP_WRITE, rd->buf[pd] + x, row * C, C);
  }
  return sync_io_wait(op);
}

const struct personality raid5_personality = {
  .level = RAID_LEVEL_5,
  .name = "raid5",
  .setup = raid5_setup,
  .max_degraded = raid5_max_degraded,
  .enough = raid5_enough,
  .submit = raid5_submit,
  .sync_step = raid5_sync_step,
  .sync_read = raid5_sync_read,
  .sync_locks = raid5_sync_locks,
  .free = raid5_free,
  .request_done = raid5_request_done,
};
