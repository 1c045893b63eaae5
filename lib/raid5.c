/* RAID 5: striping with distributed XOR parity, md's layouts.
 *
 * Geometry.  With N members a stripe (row) holds D = N-1 data chunks and
 * one parity chunk; which member holds the parity, and in which order the
 * data chunks follow it, is the layout (geometry.c, md's
 * raid5_compute_sector()).  Byte x of data chunk i in row r is on the
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
 * takes the stripe lock on the columns it touches (stripe-lock.c), so no
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
 * RMW or RCW goes by the fewer member reads, as md does, except when a
 * member is missing: if it is a chunk being written, only RCW keeps its
 * new contents implied by parity; if it is a chunk not written, only RMW
 * avoids reading it.  Then data and parity are written in parallel and
 * the lock released when both are done.
 *
 * Merging and plugging.  A sequential stream of writes that are not
 * multiples of the row (1 MiB writes over rows of 3 x 512 KiB) would cut
 * every row in two pieces, each a reconstruct-write: 8 member I/Os per
 * row where a full stripe costs 4.  md's stripe cache gathers such pieces
 * into full stripes; we do it in the stripe lock.  Two parts:
 *   - Merging.  When a write op is granted its lock, the write ops waiting
 *     behind it on the same row (stripe_lock_absorb) join it if together
 *     they rewrite every data chunk over its columns, without overlapping
 *     one another: then parity comes from the new data alone, as for a
 *     full stripe, and every piece and the parity are written at once.
 *   - Plugging.  The follower usually arrives later: a client at queue
 *     depth 32 sends its next write when one completes.  So the last
 *     piece of a write that continues a stream (it starts where one of
 *     the last few streams' previous write ended, and that write is
 *     still in flight) and that starts a row and leaves less of it than
 *     its own length may wait, holding its lock, for the next write to
 *     fill the row.  It goes as soon as any lock is blocked behind it (a
 *     poke, from stripe_lock(): the follower, or anyone else), and at the
 *     latest after the array's mean write latency (a timer, 0.1 to 100
 *     ms): by then one of the writer's requests has completed and its next
 *     one had its chance.  At queue depth 1 the predecessor is done before
 *     the next write is sent, so nothing plugs.
 *
 * Ownership and threads.  A request belongs to the queue it was submitted
 * on, and so do its stripe ops: each op runs on that queue's thread, and
 * its member I/O is submitted and completed there.  The stripe lock table
 * is the only shared structure (stripe-lock.c), and the one place where a
 * thread touches another's op is merging: the lead op (granted, on its
 * own queue) takes waiting ops under the table's lock, when their fields
 * are settled and their owners leave them alone until granted.  The lead
 * then reads their data (the requests' buffers, which stay put until the
 * requests complete) to make parity and allocates every member I/O of the
 * merge; it submits its own writes and the parity, and posts each merged
 * op to its owner's queue (op_merged_write) to submit the op's writes
 * there.  A merged op tells its lead when its writes are done (a message
 * to the lead's queue); the lead, when all are done, unlocks every merged
 * op's lock and posts each op its result (op_merged_finish), which its own
 * queue gives to its request.  Cross-thread hand-offs are always
 * queue_post(), which orders everything written before it.  A plugged
 * op's poke may come from any thread: an atomic exchange of its plugged
 * flag decides who runs it, and the run is posted to the op's own queue.
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

#include "internal.h"

enum seg_how { S_FULL, S_RMW, S_RCW, S_NOPARITY, S_RECON, S_DIRECT };

/* The columns [x0, x1) of a row in which data indices i0..i1 (inclusive)
 * are written, or, for a read op, index i0 is rebuilt (S_RECON) or the
 * indices wanted are read as they are (S_DIRECT). */
struct r5seg {
  uint32_t x0, x1;
  unsigned i0, i1;
  enum seg_how how;
  uint8_t *old[RAID_MAX_MEMBERS];  /* per member slot: what we read */
  uint8_t *parity;                 /* new parity */
};

struct r5timer;

struct r5op {
  struct raid_request *r;
  struct stripe_lock lock;
  bool write;                      /* false: reconstruct read */
  uint64_t share;                  /* read op: data indices whose reads go
                                    * straight to the caller; the index it
                                    * was started for is in too */
  unsigned pd;                     /* parity member of the row */
  unsigned nseg;
  struct r5seg seg[3];
  unsigned pending;                /* member I/Os of the current phase */
  bool replan;                     /* a read failed: plan again */
  int err;                         /* out of memory: the op fails with it */
  void *mem;                       /* every buffer of the op */
  size_t mem_len;
  /* A lead op: the write ops done as part of this one, and every member
   * I/O of the merge (its own and theirs), allocated together. */
  struct r5op *merged;
  struct r5op *merged_next;
  struct member_io **mios;
  /* A merged op: its lead, its writes (in the lead's mios), a message to
   * the lead, and the result the lead gives it. */
  struct r5op *lead;
  struct member_io **mio;
  unsigned nmio;
  struct qtask notify;
  int result;
  bool plug_ok;                    /* may wait for the rest of its row */
  _Atomic bool plugged;            /* waiting: whoever clears it runs it */
  struct r5timer *timer;           /* while plugged */
};

/* The array's RAID 5 state (a->priv). */
struct r5conf {
  struct r5stream {                /* recent sequential write streams: */
    _Atomic uint64_t end;          /* where the last write ended */
    _Atomic uintptr_t req;         /* that write while in flight, or 0 */
  } stream[8];
  _Atomic unsigned stream_next;    /* the entry a new stream takes */
  _Atomic uint64_t write_lat_ns;   /* moving mean */
  _Atomic unsigned plug_us;        /* fixed plug window, or 0: adaptive */
};

static int
raid5_setup(struct raid_array *a)
{
  if (a->raid_disks < 3)
    return set_error(EINVAL, "raid5 %s: %u members: RAID 5 needs at least 3",
                     a->name, a->raid_disks);
  if (a->layout == RAID_LAYOUT_DEFAULT)
    a->layout = RAID_LAYOUT_LEFT_SYMMETRIC;
  if (a->layout < RAID_LAYOUT_LEFT_ASYMMETRIC || a->layout > RAID_LAYOUT_RIGHT_SYMMETRIC)
    return set_error(EINVAL, "raid5 %s: unknown layout %d (left-asymmetric 0, "
                     "right-asymmetric 1, left-symmetric 2, right-symmetric 3)",
                     a->name, a->layout);
  a->size = a->member_size * (a->raid_disks - 1);
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

static uint64_t
row_bytes(const struct raid_array *a)
{
  return (uint64_t)a->chunk_size * (a->raid_disks - 1);
}

static unsigned
dd_slot(const struct raid_array *a, unsigned pd, unsigned i)
{
  return geo_raid5_dd_idx(a->layout, a->raid_disks, pd, i);
}

/* The data index member SLOT holds in a row whose parity is on PD, or D
 * (raid_disks - 1) for the parity itself. */
static unsigned
data_index(const struct raid_array *a, unsigned pd, unsigned slot)
{
  unsigned i, D = a->raid_disks - 1;

  for (i = 0; i < D; i++)
    if (dd_slot(a, pd, i) == slot)
      return i;
  return D;
}

/* Member SLOT holds row ROW (in sync, or rebuilt past it). */
static bool
row_ok(const struct raid_array *a, unsigned slot, uint64_t row)
{
  return slot_ok_at(a, slot, row * a->chunk_size, a->chunk_size);
}

/* The member slot that does not hold ROW, or -1. */
static int
missing_slot(const struct raid_array *a, uint64_t row)
{
  unsigned i;

  for (i = 0; i < a->raid_disks; i++)
    if (!row_ok(a, i, row))
      return i;
  return -1;
}

/* Where the caller's bytes for data index I, column X of OP's row are. */
static uint8_t *
user_data(const struct r5op *op, unsigned i, uint32_t x)
{
  const struct raid_array *a = op->r->a;
  uint64_t aoff = op->lock.row * row_bytes(a) + (uint64_t)i * a->chunk_size + x;

  return op->r->buf + (aoff - op->r->offset);
}

static void op_plan(struct r5op *op);
static void op_merged_finish(struct qtask *t, int res);

/* Row ROW's column on member SLOT, bound (slot_member_at()), or NULL. */
static struct raid_member *
row_member(const struct raid_array *a, unsigned slot, uint64_t row)
{
  return slot_member_at(a, slot, row * a->chunk_size, a->chunk_size);
}

/* The end of a plain or lead op, on its own queue: the ops it merged are
 * unlocked and sent their result (each finishes on its own queue), then
 * OP itself. */
static void
op_finish(struct r5op *op, int err)
{
  struct raid_request *r = op->r;
  struct r5op *f;

  while ((f = op->merged) != NULL) {
    op->merged = f->merged_next;
    stripe_unlock(r->a->locks, &f->lock, r->q);
    f->result = err;
    f->lock.task.fn = op_merged_finish;
    queue_send(r->q, f->r->q, &f->lock.task, 0);
  }
  stripe_unlock(r->a->locks, &op->lock, r->q);
  raid_buf_put(op->mem, op->mem_len);
  raid_free(op->mios);
  raid_free(op);
  req_put(r, err);
}

/* ---- phase 3: writes done ------------------------------------------------ */

/* Drop a reference on the write phase; the last one finishes the op. */
static void
op_write_put(struct r5op *op)
{
  struct raid_array *a = op->r->a;

  if (--op->pending)
    return;
  if (raid_array_is_failed(a)) {
    set_error(EIO, "raid5 %s: write to stripe %" PRIu64 " failed: the array "
              "has lost %u members", a->name, op->lock.row, raid_array_degraded(a));
    op_finish(op, -EIO);
  }
  else
    op_finish(op, op->err);
}

static void
op_write_done(struct member_io *io, int res)
{
  struct r5op *op = io->ctx;
  struct raid_array *a = op->r->a;

  if (res < 0)
    array_member_failed(a, io->slot, io->m, res, mio_data_offset(a, io), "write");
  op_write_put(op);
}

/* A member I/O of OP's row on member SLOT (bound by the caller), on
 * behalf of request R (OP's own, or that of an op merged into OP: its FUA
 * flag goes with its data); NULL when out of memory. */
static struct member_io *
op_mio(struct r5op *op, struct raid_request *r, unsigned slot, struct raid_member *m,
       enum mop mop, void *buf, uint32_t x0, uint32_t len,
       void (*done)(struct member_io *, int))
{
  struct raid_array *a = op->r->a;
  struct member_io *io;

  io = req_mio(r, slot, m, mop, buf, op->lock.row * a->chunk_size + x0, len, done);
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
  op_write_put(op);
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

/* Writes: each data chunk and the parity go to the member that holds the
 * row now (bound here: a member that failed since the plan is skipped,
 * its part implied by the others, as if its write had failed). */
static void
op_compute_and_write(struct r5op *op)
{
  struct raid_array *a = op->r->a;
  unsigned D = a->raid_disks - 1, s, i, n = 0;
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
      for (i = 0; i < D; i++)
        src[k++] = user_data(op, i, g->x0);
      raid_xor(g->parity, src, k, len);
      break;
    case S_RCW:
      for (i = 0; i < D; i++)
        src[k++] = i >= g->i0 && i <= g->i1 ? user_data(op, i, g->x0)
                                            : g->old[dd_slot(a, op->pd, i)];
      raid_xor(g->parity, src, k, len);
      break;
    case S_RMW:
      src[k++] = g->old[op->pd];
      for (i = g->i0; i <= g->i1; i++) {
        src[k++] = g->old[dd_slot(a, op->pd, i)];
        src[k++] = user_data(op, i, g->x0);
      }
      g->parity = g->old[op->pd];
      raid_xor(g->parity, src, k, len);
      break;
    case S_RECON:
      for (i = 0; i < a->raid_disks; i++)
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
    op_finish(op, 0);
    return;
  }

  for (s = 0; s < op->nseg; s++) {
    struct r5seg *g = &op->seg[s];
    uint32_t len = g->x1 - g->x0;

    for (i = g->i0; i <= g->i1; i++) {
      unsigned slot = dd_slot(a, op->pd, i);

      if ((m = row_member(a, slot, op->lock.row)) != NULL)
        io[n++] = op_mio(op, op->r, slot, m, MOP_WRITE, user_data(op, i, g->x0), g->x0,
                         len, op_write_done);
    }
    if (g->how != S_NOPARITY && (m = row_member(a, op->pd, op->lock.row)) != NULL)
      io[n++] = op_mio(op, op->r, op->pd, m, MOP_WRITE, g->parity, g->x0, len,
                       op_write_done);
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
    op_finish(op, op->err);
  else if (op->replan)
    op_plan(op);
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
  struct raid_member *m = row_member(a, slot, op->lock.row);
  struct member_io *io;

  if (op->err)
    return;
  if (m == NULL) {
    op->replan = true;
    return;
  }
  io = op_mio(op, op->r, slot, m, MOP_READ, buf, x0, len, op_read_done);
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
static void
op_plan(struct r5op *op)
{
  struct raid_array *a = op->r->a;
  unsigned D = a->raid_disks - 1, s, i, nbuf = 0;
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
    op_finish(op, -EIO);
    return;
  }
  miss = missing_slot(a, op->lock.row);

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
      int mi = miss >= 0 ? (int)data_index(a, op->pd, miss) : -1;

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
      if ((int)dd_slot(a, op->pd, i) == miss)
        miss_written = true;
    if (miss == (int)op->pd)
      g->how = S_NOPARITY;
    else if (k == D)
      g->how = S_FULL;
    else if (miss >= 0)
      g->how = miss_written ? S_RCW : S_RMW;
    else
      g->how = k + 1 < D - k ? S_RMW : S_RCW;
    switch (g->how) {
    case S_FULL: nbuf += 1; break;
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
    op_finish(op, -ENOMEM);
    return;
  }

  op->pending = 1;              /* counting reference, dropped below */
  for (s = 0; s < op->nseg; s++) {
    struct r5seg *g = &op->seg[s];
    uint32_t len = g->x1 - g->x0;

#define TAKE() (mem += off, mem - off)
    switch (g->how) {
    case S_RECON:
      for (i = 0; i < a->raid_disks; i++)
        if (i != dd_slot(a, op->pd, g->i0)) {
          unsigned j = data_index(a, op->pd, i);

          g->old[i] = j < D && op->share >> j & 1 ? user_data(op, j, g->x0) : TAKE();
          op_read(op, i, g->old[i], g->x0, len);
        }
      break;
    case S_DIRECT:
      for (i = 0; i < D; i++)
        if (op->share >> i & 1)
          op_read(op, dd_slot(a, op->pd, i), user_data(op, i, g->x0), g->x0, len);
      break;
    case S_FULL:
      g->parity = TAKE();
      break;
    case S_RCW:
      g->parity = TAKE();
      for (i = 0; i < D; i++)
        if (i < g->i0 || i > g->i1) {
          unsigned slot = dd_slot(a, op->pd, i);
          g->old[slot] = TAKE();
          op_read(op, slot, g->old[slot], g->x0, len);
        }
      break;
    case S_RMW:
      g->old[op->pd] = TAKE();
      op_read(op, op->pd, g->old[op->pd], g->x0, len);
      for (i = g->i0; i <= g->i1; i++) {
        unsigned slot = dd_slot(a, op->pd, i);
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

/* ---- merging ------------------------------------------------------------------- */

/* What a merge writes: data index I, columns [x0, x1), from DATA, for op
 * OP (the lead or one it merged). */
struct r5piece {
  unsigned i;
  uint32_t x0, x1;
  uint8_t *data;
  struct r5op *op;
};

#define MERGE_PIECES 256

struct r5merge {
  const struct raid_array *a;
  uint32_t lo, hi;                 /* the lead op's columns */
  uint64_t covered[RAID_MAX_MEMBERS];   /* bytes, per data index */
  unsigned npiece, nops;
  struct r5piece piece[MERGE_PIECES];
  struct r5op *ops[64];            /* the ops taken, lead op excluded */
};

/* Add OP's pieces to M if they lie in M's columns, overlap nothing there
 * and fit.  OP is the lead, or a lock waiter under the table's lock: its
 * fields were set before it asked for the lock and do not change while it
 * waits. */
static bool
merge_add(struct r5merge *m, struct r5op *op)
{
  unsigned s, i, k, n = m->npiece;

  for (s = 0; s < op->nseg; s++) {
    const struct r5seg *g = &op->seg[s];

    if (g->x0 < m->lo || g->x1 > m->hi)
      return false;
    for (i = g->i0; i <= g->i1; i++) {
      for (k = 0; k < m->npiece; k++)
        if (m->piece[k].i == i && m->piece[k].x0 < g->x1 && g->x0 < m->piece[k].x1)
          return false;
      if (n == MERGE_PIECES)
        return false;
      m->piece[n++] = (struct r5piece){ .i = i, .x0 = g->x0, .x1 = g->x1,
                                        .data = user_data(op, i, g->x0), .op = op };
    }
  }
  for (k = m->npiece; k < n; k++)
    m->covered[m->piece[k].i] += m->piece[k].x1 - m->piece[k].x0;
  m->npiece = n;
  return true;
}

static bool
merge_take(void *ctx, struct stripe_lock *w)
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
  unsigned i;

  for (i = 0; i < m->a->raid_disks - 1; i++)
    if (m->covered[i] != m->hi - m->lo)
      return false;
  return true;
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

  op_write_put(f->lead);
}

static void
op_merged_finish(struct qtask *t, int res)
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
  unsigned D = a->raid_disks - 1, ncut = 0, i, j, k, nown = 0, n = 0;
  uint32_t cut[2 * MERGE_PIECES], len = m->hi - m->lo;
  void *src[RAID_MAX_MEMBERS];
  struct raid_member *pm = row_member(a, op->pd, op->lock.row);
  struct member_io *io[MERGE_PIECES + 1];
  bool fua = false;

  for (k = 0; k < m->npiece; k++) {
    cut[ncut++] = m->piece[k].x0;
    cut[ncut++] = m->piece[k].x1;
  }
  qsort(cut, ncut, sizeof cut[0], cmp_u32);
  for (j = 0, k = 0; k < ncut; k++)
    if (j == 0 || cut[k] != cut[j - 1])
      cut[j++] = cut[k];
  ncut = j;
  for (j = 0; j + 1 < ncut; j++) {
    for (i = 0; i < D; i++)
      for (k = 0; k < m->npiece; k++)
        if (m->piece[k].i == i && m->piece[k].x0 <= cut[j] && cut[j] < m->piece[k].x1) {
          src[i] = m->piece[k].data + (cut[j] - m->piece[k].x0);
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
    unsigned slot = dd_slot(a, op->pd, p->i);
    struct raid_member *dm = row_member(a, slot, op->lock.row);

    if (p->op->r->flags & RAID_REQ_FUA)
      fua = true;
    if (dm == NULL)
      continue;
    if (p->op == op)
      nown++;
    else if (p->op->mio == NULL)
      p->op->mio = &io[n];      /* rebased onto op->mios below */
    io[n++] = op_mio(p->op, p->op->r, slot, dm, MOP_WRITE, p->data, p->x0,
                     p->x1 - p->x0, p->op == op ? op_write_done : op_merged_write_done);
    if (p->op != op)
      p->op->nmio++;
  }
  if (pm) {
    io[n] = op_mio(op, op->r, op->pd, pm, MOP_WRITE, parity, m->lo, len, op_write_done);
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
    op_finish(op, -ENOMEM);
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
  op_write_put(op);
}

/* Try to merge the writes waiting behind write OP (granted) into full
 * stripes over OP's columns; true if they were, and are being written.
 * What may fail for lack of memory is allocated before any op is taken. */
static bool
op_merge(struct r5op *op)
{
  struct raid_array *a = op->r->a;
  struct r5merge *m;
  uint8_t *parity;
  unsigned k;

  /* Whatever could join OP lies within its columns, so waits for it. */
  if (!op->write || raid_array_is_failed(a) || !stripe_lock_blocks(a->locks, &op->lock))
    return false;
  m = raid_malloc(sizeof *m);
  if (m == NULL)
    return false;
  m->a = a;
  m->lo = op->lock.lo;
  m->hi = op->lock.hi;
  memset(m->covered, 0, sizeof m->covered);
  m->npiece = m->nops = 0;
  /* A lead op that is whole on its own is a plain full stripe. */
  if (!merge_add(m, op) || merge_complete(m)) {
    raid_free(m);
    return false;
  }
  op->mem_len = (m->hi - m->lo + RAID_BUF_ALIGN - 1) / RAID_BUF_ALIGN * RAID_BUF_ALIGN;
  parity = op->mem = raid_buf_get(op->mem_len);
  if (parity == NULL ||
      !stripe_lock_absorb(a->locks, &op->lock, merge_take, merge_complete, m)) {
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

/* stripe_lock(), or the plug's timer: a lock, requested from queue FROM
 * (the thread we are on), is blocked by L, or time is up.  If L's op is
 * plugged, run it on its queue; the poke, the timer or both may come,
 * from different threads, and only the one that unplugs runs it. */
static void
op_poke(struct stripe_lock *l, struct raid_queue *from)
{
  struct r5op *op = l->owner;

  if (!atomic_load_explicit(&op->plugged, memory_order_relaxed) ||
      !atomic_exchange(&op->plugged, false))
    return;
  op->lock.task.fn = op_go;
  if (from == op->lock.q)
    queue_defer(from, &op->lock.task, 0);
  else
    queue_post(op->lock.q, &op->lock.task, 0);
}

static void
plug_timer_done(struct qtask *t, int res)
{
  struct r5timer *tm = (struct r5timer *)t;
  struct r5op *op = tm->op;

  if (op) {
    op->timer = NULL;
    op_poke(&op->lock, op->lock.q);
  }
  req_put(tm->r, 0);
  raid_free(tm);
}

/* How long a plug may wait: the array's recent mean write latency (a
 * follower comes when one of the writer's requests completes), 1 ms
 * before any is known, within [PLUG_MIN_US, PLUG_MAX_US]. */
#define PLUG_MIN_US 100
#define PLUG_MAX_US 100000

static unsigned
plug_usec(const struct r5conf *c)
{
  uint64_t ns = atomic_load_explicit(&c->write_lat_ns, memory_order_relaxed);
  unsigned fixed = atomic_load_explicit(&c->plug_us, memory_order_relaxed);

  if (fixed)
    return fixed;
  if (ns == 0)                     /* no write has completed yet */
    ns = 1000000;
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
  struct r5conf *c = a->priv;
  struct r5timer *tm = raid_calloc(1, sizeof *tm);

  if (tm == NULL) {             /* no memory for the timer: go now */
    op_plan(op);
    return;
  }
  tm->task.fn = plug_timer_done;
  tm->op = op;
  tm->r = op->r;
  req_get(op->r);
  op->timer = tm;
  atomic_store(&op->plugged, true);
  queue_timer(op->lock.q, &tm->task, &tm->ts, plug_usec(c));
  /* A lock that queued behind ours before we plugged did not poke. */
  if (stripe_lock_blocks(a->locks, &op->lock))
    op_poke(&op->lock, op->lock.q);
}

/* Sequential writers: forget a finished request that its stream's next
 * one would follow (that one then has nothing to plug for), and keep a
 * moving mean of write latency. */
static void
raid5_request_done(struct raid_request *r)
{
  struct r5conf *c = r->a->priv;
  uintptr_t mine = (uintptr_t)r;
  uint64_t lat, avg;
  unsigned k;

  if (r->op != REQ_WRITE)
    return;
  for (k = 0; k < ARRAY_SIZE(c->stream); k++)
    if (atomic_load_explicit(&c->stream[k].req, memory_order_relaxed) == mine) {
      atomic_compare_exchange_strong(&c->stream[k].req, &mine, 0);
      break;
    }
  lat = stats_now() - r->start_ns;
  avg = atomic_load_explicit(&c->write_lat_ns, memory_order_relaxed);
  atomic_store_explicit(&c->write_lat_ns, avg ? avg - avg / 8 + lat / 8 : lat,
                        memory_order_relaxed);
}

/* Whether write R, array bytes [POS, END), continues one of the recent
 * write streams (it starts where that stream's last write ended) whose
 * last write is still in flight; R becomes that stream's last write.  A
 * write that continues none starts a stream, in place of the oldest.
 * Several clients writing sequentially (fio numjobs) are several streams. */
static bool
stream_continue(struct r5conf *c, struct raid_request *r, uint64_t pos, uint64_t end)
{
  unsigned k;

  for (k = 0; k < ARRAY_SIZE(c->stream); k++) {
    uint64_t e = pos;

    if (atomic_load_explicit(&c->stream[k].end, memory_order_relaxed) == pos &&
        atomic_compare_exchange_strong(&c->stream[k].end, &e, end))
      return atomic_exchange(&c->stream[k].req, (uintptr_t)r) != 0;
  }
  k = atomic_fetch_add(&c->stream_next, 1) % ARRAY_SIZE(c->stream);
  atomic_store(&c->stream[k].end, end);
  atomic_store(&c->stream[k].req, (uintptr_t)r);
  return false;
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
    op_plan(op);
}

static void
op_locked(struct qtask *t, int res)
{
  struct r5op *op = (struct r5op *)((char *)t - offsetof(struct r5op, lock.task));

  if (op_merge(op))
    return;
  if (op->plug_ok)
    op_plug(op);
  else
    op_plan(op);
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
  uint64_t C = a->chunk_size, row = pos / row_bytes(a);
  uint64_t s = pos - row * row_bytes(a), e = end - row * row_bytes(a);
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
  op->pd = geo_raid5_pd_idx(a->layout, a->raid_disks, row);
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
  op->lock.lo = op->seg[0].x0;
  op->lock.hi = op->seg[0].x1;
  for (c = 1; c < op->nseg; c++) {
    op->lock.lo = MIN(op->lock.lo, op->seg[c].x0);
    op->lock.hi = MAX(op->lock.hi, op->seg[c].x1);
  }
  op->lock.q = r->q;
  op->lock.task.fn = op_locked;
  if (write) {
    op->lock.owner = op;
    op->lock.poke = op_poke;
  }
  stripe_lock(a->locks, &op->lock);
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
 * the row is decided once, here: op_plan() reads what SHARE says. */
static void
read_row(struct raid_request *r, uint64_t pos, uint64_t end)
{
  struct raid_array *a = r->a;
  uint64_t C = a->chunk_size, rb = row_bytes(a), base = pos / rb * rb;
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

    geo_raid5_map(a->layout, a->raid_disks, a->chunk_sectors, pos >> SECTOR_SHIFT, &m);
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
                   pc[k].member_off, pc[k].len, raid5_read_done);
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
  uint64_t pos = r->offset, end = r->offset + r->len, rb = row_bytes(r->a);

  while (pos < end) {
    uint64_t next = MIN(end, (pos / rb + 1) * rb);

    read_row(r, pos, next);
    pos = next;
  }
}

/* ---- entry ---------------------------------------------------------------- */

static void
raid5_submit(struct raid_request *r)
{
  struct raid_array *a = r->a;
  uint64_t pos = r->offset, end = r->offset + r->len, rb = row_bytes(a);
  bool seq = false;

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
  /* Plug candidates (see "Merging and plugging" above): the last piece of
   * a sequential write whose predecessor is still in flight, starting a
   * row that the next such write would fill. */
  if (r->parent == NULL && r->op == REQ_WRITE)
    seq = stream_continue(a->priv, r, pos, end);
  while (pos < end) {
    uint64_t next = MIN(end, (pos / rb + 1) * rb);
    bool plug_ok = seq && next == end && pos % rb == 0 && end % rb != 0 &&
                   rb - end % rb <= r->len;

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

/* Recovery: every row's missing column is the XOR of the others, so one
 * read per surviving member covers every row of the step.  Resync and
 * scrub: the XOR of all N columns of a row is zero when parity matches;
 * where it is not, resync and repair write parity computed from the data
 * (md trusts the data, as it cannot tell which column is wrong). */
static int
raid5_sync_step(struct sync_op *op)
{
  struct raid_array *a = op->a;
  unsigned N = a->raid_disks, i, n = 0;
  uint64_t C = a->chunk_size, row;
  void *src[RAID_MAX_MEMBERS];
  uint8_t *col[RAID_MAX_MEMBERS], *sum;
  struct raid_member *mem[RAID_MAX_MEMBERS];
  int target = -1, r;

  for (i = 0; i < N; i++)
    if (op->target[i])
      target = i;
  if (op->action != RAID_SYNC_RECOVER)
    target = -1;
  else if (target < 0)
    return 0;
  for (i = 0; i < N; i++) {
    if ((int)i == target)
      continue;
    if ((mem[i] = slot_member_at(a, i, op->pos, op->len)) == NULL)
      return set_error(EAGAIN, "raid5 %s: %s needs every other member in sync, "
                       "and role %u is not", a->name,
                       raid_sync_action_name(op->action), i);
    col[i] = sync_buf(op, op->len);
    src[n++] = col[i];
    sync_io(op, mem[i], i, MOP_READ, col[i], op->pos, op->len);
  }
  if ((r = sync_io_wait(op)) < 0)
    return r;
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
        src[k++] = col[i] + x;
    raid_xor(col[pd] + x, src, k, C);
    sync_io(op, mem[pd], pd, MOP_WRITE, col[pd] + x, row * C, C);
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
  .sync_locks = raid5_sync_locks,
  .free = raid5_free,
  .request_done = raid5_request_done,
};
