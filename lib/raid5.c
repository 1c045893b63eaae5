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
 * other member and XOR them.
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

enum seg_how { S_FULL, S_RMW, S_RCW, S_NOPARITY, S_RECON };

/* The columns [x0, x1) of a row in which data indices i0..i1 (inclusive)
 * are written, or, for a reconstruct read, index i0 is rebuilt. */
struct r5seg {
  uint32_t x0, x1;
  unsigned i0, i1;
  enum seg_how how;
  uint8_t *old[RAID_MAX_MEMBERS];  /* per member slot: what we read */
  uint8_t *parity;                 /* new parity */
};

struct r5op {
  struct raid_request *r;
  struct stripe_lock lock;
  bool write;                      /* false: reconstruct read */
  unsigned pd;                     /* parity member of the row */
  unsigned nseg;
  struct r5seg seg[3];
  unsigned pending;                /* member I/Os of the current phase */
  bool replan;                     /* a read failed: plan again */
  void *mem;                       /* every buffer of the op */
  size_t mem_len;
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
  return 0;
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

static void
op_finish(struct r5op *op, int err)
{
  struct raid_request *r = op->r;

  stripe_unlock(r->a->locks, &op->lock);
  raid_buf_put(op->mem, op->mem_len);
  free(op);
  req_put(r, err);
}

/* ---- phase 3: writes done ------------------------------------------------ */

static void
op_write_done(struct member_io *io, int res)
{
  struct r5op *op = io->ctx;
  struct raid_array *a = op->r->a;

  if (res < 0)
    array_member_failed(a, io->slot, res, mio_data_offset(a, io), "write");
  if (--op->pending)
    return;
  if (raid_array_is_failed(a)) {
    set_error(EIO, "raid5 %s: write to stripe %" PRIu64 " failed: the array "
              "has lost %u members", a->name, op->lock.row, raid_array_degraded(a));
    op_finish(op, -EIO);
  }
  else
    op_finish(op, 0);
}

static void
op_submit_io(struct r5op *op, unsigned slot, enum mop mop, void *buf,
             uint32_t x0, uint32_t len, void (*done)(struct member_io *, int))
{
  struct raid_array *a = op->r->a;
  struct member_io *io;

  io = req_mio(op->r, slot, mop, buf, op->lock.row * a->chunk_size + x0, len, done);
  io->ctx = op;
  if (mop == MOP_READ && op->write)
    stats_add(&a->stats.stripe_read_bytes, len);
  op->pending++;
  req_mio_submit(io);
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

  if (!op->write)
    c = STRIPE_DEGRADED_READ;
  for (s = 0; s < op->nseg && op->write; s++) {
    if (op->seg[s].how == S_NOPARITY)
      c = STRIPE_DEGRADED_WRITE;
    else if (op->seg[s].how == S_RCW && c != STRIPE_DEGRADED_WRITE)
      c = STRIPE_RCW;
    else if (op->seg[s].how == S_RMW && c == STRIPE_FULL)
      c = STRIPE_RMW;
  }
  stats_add(&st->stripe[c], 1);
}

static void
op_compute_and_write(struct r5op *op)
{
  struct raid_array *a = op->r->a;
  unsigned D = a->raid_disks - 1, s, i;
  void *src[2 * RAID_MAX_MEMBERS + 1];

  op_count(op);
  for (s = 0; s < op->nseg; s++) {
    struct r5seg *g = &op->seg[s];
    uint32_t len = g->x1 - g->x0;
    unsigned n = 0;

    switch (g->how) {
    case S_FULL:
      for (i = 0; i < D; i++)
        src[n++] = user_data(op, i, g->x0);
      raid_xor(g->parity, src, n, len);
      break;
    case S_RCW:
      for (i = 0; i < D; i++)
        src[n++] = i >= g->i0 && i <= g->i1 ? user_data(op, i, g->x0)
                                            : g->old[dd_slot(a, op->pd, i)];
      raid_xor(g->parity, src, n, len);
      break;
    case S_RMW:
      src[n++] = g->old[op->pd];
      for (i = g->i0; i <= g->i1; i++) {
        src[n++] = g->old[dd_slot(a, op->pd, i)];
        src[n++] = user_data(op, i, g->x0);
      }
      g->parity = g->old[op->pd];
      raid_xor(g->parity, src, n, len);
      break;
    case S_RECON:
      for (i = 0; i < a->raid_disks; i++)
        if (g->old[i])
          src[n++] = g->old[i];
      raid_xor(user_data(op, g->i0, g->x0), src, n, len);
      break;
    case S_NOPARITY:
      break;
    }
  }
  if (!op->write) {
    op_finish(op, 0);
    return;
  }

  /* Count first, so that no completion can see pending reach zero early. */
  op->pending = 1;
  for (s = 0; s < op->nseg; s++) {
    struct r5seg *g = &op->seg[s];
    uint32_t len = g->x1 - g->x0;

    for (i = g->i0; i <= g->i1; i++) {
      unsigned slot = dd_slot(a, op->pd, i);
      if (row_ok(a, slot, op->lock.row))
        op_submit_io(op, slot, MOP_WRITE, user_data(op, i, g->x0), g->x0, len,
                     op_write_done);
    }
    if (g->how != S_NOPARITY && row_ok(a, op->pd, op->lock.row))
      op_submit_io(op, op->pd, MOP_WRITE, g->parity, g->x0, len, op_write_done);
  }
  /* Drop the counting reference. */
  if (--op->pending == 0)
    op_finish(op, raid_array_is_failed(a) ? -EIO : 0);
}

/* ---- phase 1: reads --------------------------------------------------------------- */

/* Drop a reference on the read phase; the last one moves on: plan again
 * if a read failed, else compute parity and write. */
static void
op_read_put(struct r5op *op)
{
  if (--op->pending)
    return;
  if (op->replan)
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
    array_member_failed(a, io->slot, res, mio_data_offset(a, io), "read");
    op->replan = true;
  }
  op_read_put(op);
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
      g->how = S_RECON;
      nbuf += D;
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
  if (nbuf && mem == NULL)
    abort();

  op->pending = 1;              /* counting reference, dropped below */
  for (s = 0; s < op->nseg; s++) {
    struct r5seg *g = &op->seg[s];
    uint32_t len = g->x1 - g->x0;

#define TAKE() (mem += off, mem - off)
    switch (g->how) {
    case S_RECON:
      for (i = 0; i < a->raid_disks; i++)
        if (i != dd_slot(a, op->pd, g->i0)) {
          g->old[i] = TAKE();
          op_submit_io(op, i, MOP_READ, g->old[i], g->x0, len, op_read_done);
        }
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
          op_submit_io(op, slot, MOP_READ, g->old[slot], g->x0, len, op_read_done);
        }
      break;
    case S_RMW:
      g->old[op->pd] = TAKE();
      op_submit_io(op, op->pd, MOP_READ, g->old[op->pd], g->x0, len, op_read_done);
      for (i = g->i0; i <= g->i1; i++) {
        unsigned slot = dd_slot(a, op->pd, i);
        g->old[slot] = TAKE();
        op_submit_io(op, slot, MOP_READ, g->old[slot], g->x0, len, op_read_done);
      }
      break;
    case S_NOPARITY:
      break;
    }
#undef TAKE
  }
  op_read_put(op);
}

static void
op_locked(struct qtask *t, int res)
{
  struct r5op *op = (struct r5op *)((char *)t - offsetof(struct r5op, lock.task));

  op_plan(op);
}

/* Start a stripe op on array bytes [pos, end), which lie in one row.  For
 * a reconstruct read they lie in one chunk. */
static void
op_start(struct raid_request *r, uint64_t pos, uint64_t end, bool write)
{
  struct raid_array *a = r->a;
  uint64_t C = a->chunk_size, row = pos / row_bytes(a);
  uint64_t s = pos - row * row_bytes(a), e = end - row * row_bytes(a);
  unsigned is = s / C, ie = (e - 1) / C;
  uint32_t xs = s % C, xe = (e - 1) % C + 1;
  uint32_t cuts[4], x;
  unsigned ncut = 0, c;
  struct r5op *op = calloc(1, sizeof *op);

  if (op == NULL)
    abort();
  op->r = r;
  op->write = write;
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
  stripe_lock(a->locks, &op->lock);
}

/* ---- reads ---------------------------------------------------------------- */

static void
raid5_read_done(struct member_io *io, int res)
{
  struct raid_request *r = mio_req(io);

  if (res == 0)
    return;
  array_member_failed(r->a, io->slot, res, mio_data_offset(r->a, io), "read");
  op_start(r, io->aoff, io->aoff + io->len, false);
}

static void
raid5_read(struct raid_request *r)
{
  struct raid_array *a = r->a;
  uint64_t pos = r->offset, end = r->offset + r->len;

  while (pos < end) {
    size_t len = MIN(end - pos, a->chunk_size - pos % a->chunk_size);
    struct raid5_map m;
    struct member_io *io;

    geo_raid5_map(a->layout, a->raid_disks, a->chunk_sectors, pos >> SECTOR_SHIFT, &m);
    if (slot_ok_at(a, m.dd_idx, m.member_sector << SECTOR_SHIFT, len)) {
      io = req_mio(r, m.dd_idx, MOP_READ, r->buf + (pos - r->offset),
                   m.member_sector << SECTOR_SHIFT, len, raid5_read_done);
      io->aoff = pos;
      req_mio_submit(io);
    }
    else
      op_start(r, pos, pos + len, false);
    pos += len;
  }
}

/* ---- entry ---------------------------------------------------------------- */

static void
raid5_submit(struct raid_request *r)
{
  struct raid_array *a = r->a;
  uint64_t pos = r->offset, end = r->offset + r->len, rb = row_bytes(a);

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
    break;
  case REQ_WRITE:
    break;
  }
  while (pos < end) {
    uint64_t next = MIN(end, (pos / rb + 1) * rb);

    op_start(r, pos, next, true);
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
    if (!slot_ok_at(a, i, op->pos, op->len))
      return set_error(EAGAIN, "raid5 %s: %s needs every other member in sync, "
                       "and role %u is not", a->name,
                       raid_sync_action_name(op->action), i);
    col[i] = sync_buf(op, op->len);
    src[n++] = col[i];
    sync_io(op, a->members[i], i, MOP_READ, col[i], op->pos, op->len);
  }
  if ((r = sync_io_wait(op)) < 0)
    return r;
  sum = sync_buf(op, op->len);
  raid_xor(sum, src, n, op->len);
  if (op->action == RAID_SYNC_RECOVER) {
    sync_io(op, a->members[target], target, MOP_WRITE, sum, op->pos, op->len);
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
    sync_io(op, a->members[pd], pd, MOP_WRITE, col[pd] + x, row * C, C);
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
};
