/* RAID 10, md's "near" layout: striping over mirrored chunks.
 *
 * With N members and c copies, the copies of array chunk C are the slots
 * C*c .. C*c+c-1 of a sequence that fills the members row by row: slot s
 * is on member s mod N, at chunk row s div N (geometry.c).  With N = 4 and
 * c = 2 this is the classic "stripe over two mirrored pairs"; N need not
 * be a multiple of c (md allows 3 members with 2 copies).
 *
 * A request is cut at chunk boundaries.  Each read piece goes to one copy
 * chosen by read_balance(), retried on the other copies if it fails; each
 * write piece goes to every in-sync copy.  The array has failed when some
 * chunk has lost all of its copies.
 *
 * Requests map through their shape (r->geo: the array's, or during a
 * reshape the old or the new one, sync/reshape.c): its members, chunk and
 * data offset shift.  The sync engine's recovery, resync and scrub never
 * run during a reshape, and use the array's shape.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "raid/levels.h"
#include "sync/engine.h"
#include "raid1-10.h"

static int
raid10_setup(struct raid_array *a)
{
  unsigned copies;

  if (a->layout == RAID_LAYOUT_DEFAULT)
    a->layout = RAID_LAYOUT_RAID10_NEAR(2);
  copies = a->layout & 0xff;
  if ((a->layout & ~0x1ff) != 0 || ((a->layout >> 8) & 0xff) != 1)
    return set_error(EINVAL, "raid10 %s: layout 0x%x is not supported: only "
                     "near layouts (far copies 1) are", a->name, (unsigned)a->layout);
  if (copies < 2)
    return set_error(EINVAL, "raid10 %s: layout near-%u: RAID 10 needs at least "
                     "2 copies", a->name, copies);
  if (a->raid_disks < copies)
    return set_error(EINVAL, "raid10 %s: %u members cannot hold %u copies: "
                     "RAID 10 near-%u needs at least %u members",
                     a->name, a->raid_disks, copies, copies, copies);
  a->copies = copies;
  a->size = geo_array_size(a->level, a->raid_disks, a->copies, a->chunk_size,
                           a->member_size);
  return 0;
}

static unsigned
raid10_max_degraded(const struct raid_array *a)
{
  return a->copies - 1;
}

/* Every chunk keeps a copy: the copies of chunk C start at slot C*c mod N,
 * and that start cycles through at most N values. */
static bool
raid10_enough(const struct raid_array *a)
{
  unsigned n = a->raid_disks, c = a->copies, ch, k;

  for (ch = 0; ch < n; ch++) {
    unsigned start = (ch * c) % n;
    bool any = false;

    for (k = 0; k < c && !any; k++)
      any = atomic_load(&a->state[(start + k) % n]) == RAID_MEMBER_IN_SYNC;
    if (!any)
      return false;
  }
  return true;
}

static void raid10_read_piece(struct raid_request *r, uint64_t pos, size_t len);

static void
raid10_read_done(struct member_io *io, int res)
{
  if (mirror_read_failed(io, res))
    raid10_read_piece(mio_req(io), io->aoff, io->len);   /* another copy, if any */
}

static void
raid10_read_piece(struct raid_request *r, uint64_t pos, size_t len)
{
  struct raid_array *a = r->a;
  const struct raid_geo *G = r->geo;
  struct read_candidate c[RAID_MAX_MEMBERS];
  struct member_io *io;
  unsigned k;
  int pick;

  for (k = 0; k < a->copies; k++) {
    uint64_t ms;
    geo_raid10_map(G->raid_disks, a->copies, G->chunk_sectors, pos >> SECTOR_SHIFT,
                   k, &c[k].slot, &ms);
    c[k].offset = (ms << SECTOR_SHIFT) + G->shift;
  }
  pick = read_balance(a, c, a->copies, len);
  if (pick < 0) {
    set_error(EIO, "raid10 %s: read at sector %" PRIu64 " failed: every copy "
              "of the chunk is lost", a->name, pos >> SECTOR_SHIFT);
    req_error(r, -EIO);
    return;
  }
  io = req_mio(r, c[pick].slot, c[pick].m, MOP_READ, r->buf + (pos - r->offset),
               c[pick].offset, len, raid10_read_done);
  if (io == NULL) {
    req_error(r, -ENOMEM);
    return;
  }
  io->aoff = pos;
  req_mio_submit(io);
}

/* A write piece (one chunk) takes the range lock of that chunk, keyed by
 * array chunk number, so that the sync engine never copies a chunk while
 * a write changes it. */
struct r10write {
  struct raid_request *r;
  struct range_lock lock;
  uint64_t pos;
  size_t len;
  unsigned pending;
};

static void
r10w_finish(struct r10write *w)
{
  struct raid_request *r = w->r;

  range_unlock(r->a->locks, &w->lock, r->q);
  raid_free(w);
  req_put(r, 0);
}

/* A RAID 10 write stands while a copy of its chunk is still in sync. */
static bool
r10_holds(const struct raid_request *r, uint64_t pos, size_t len)
{
  const struct raid_array *a = r->a;
  const struct raid_geo *G = r->geo;
  unsigned k, slot;
  uint64_t ms;

  for (k = 0; k < a->copies; k++) {
    geo_raid10_map(G->raid_disks, a->copies, G->chunk_sectors, pos >> SECTOR_SHIFT,
                   k, &slot, &ms);
    if (slot_ok_at(a, slot, (ms << SECTOR_SHIFT) + G->shift, len))
      return true;
  }
  return false;
}

static void
raid10_write_done(struct member_io *io, int res)
{
  struct r10write *w = io->ctx;

  mirror_write_done(io, res, w->pos, w->len, r10_holds);
  if (--w->pending == 0)
    r10w_finish(w);
}

static void
r10w_locked(struct qtask *t, int res)
{
  struct r10write *w = (struct r10write *)((char *)t - offsetof(struct r10write, lock.task));
  struct raid_request *r = w->r;
  struct raid_array *a = r->a;
  const struct raid_geo *G = r->geo;
  struct member_io *io[RAID_MAX_MEMBERS];
  unsigned k, slot, n = 0;
  uint64_t ms;

  /* Every copy or none (req_mio_batch_submit()). */
  for (k = 0; k < a->copies; k++) {
    struct raid_member *m;

    geo_raid10_map(G->raid_disks, a->copies, G->chunk_sectors,
                   w->pos >> SECTOR_SHIFT, k, &slot, &ms);
    ms = (ms << SECTOR_SHIFT) + G->shift;
    m = slot_member_at(a, slot, ms, w->len);
    if (m == NULL)
      continue;
    io[n] = req_mio(r, slot, m, req_mop(r), r->buf ? r->buf + (w->pos - r->offset) : NULL,
                    ms, w->len, raid10_write_done);
    if (io[n]) {
      io[n]->aoff = w->pos;
      io[n]->ctx = w;
    }
    n++;
  }
  w->pending = 1 + n;
  if (n == 0) {
    set_error(EIO, "raid10 %s: write at sector %" PRIu64 " failed: every "
              "copy of the chunk is lost", a->name, w->pos >> SECTOR_SHIFT);
    req_error(r, -EIO);
  }
  else if (req_mio_batch_submit(r, io, n) < 0) {
    req_error(r, -ENOMEM);
    w->pending = 1;
  }
  if (--w->pending == 0)
    r10w_finish(w);
}

static void
raid10_submit(struct raid_request *r)
{
  struct raid_array *a = r->a;
  uint64_t pos = r->offset, end = r->offset + r->len, C = r->geo->chunk_size;

  if (r->op == REQ_FLUSH) {
    array_flush_members(r);
    return;
  }
  while (pos < end) {
    size_t len = MIN(end - pos, C - pos % C);

    if (r->op == REQ_READ)
      raid10_read_piece(r, pos, len);
    else {
      struct r10write *w = raid_calloc(1, sizeof *w);

      if (w == NULL) {
        set_error(ENOMEM, "raid10 %s: out of memory", a->name);
        req_error(r, -ENOMEM);
        return;
      }
      w->r = r;
      w->pos = pos;
      w->len = len;
      w->lock.row = pos / C;
      w->lock.lo = pos % C;
      w->lock.hi = w->lock.lo + len;
      w->lock.space = r->geo->space;
      w->lock.q = r->q;
      w->lock.task.fn = r10w_locked;
      req_get(r);
      range_lock(a->locks, &w->lock);
    }
    pos += len;
  }
}

/* ---- sync engine ------------------------------------------------------------ */

/* Member rows [R0, R1) of a step hold copies of array chunks
 * R0*N/c .. (R1*N-1)/c. */
static void
raid10_sync_locks(struct sync_op *op)
{
  struct raid_array *a = op->a;
  uint64_t C = a->chunk_size, N = a->raid_disks, c = a->copies;
  uint64_t R0 = op->pos / C, R1 = (op->pos + op->len) / C, ch;
  uint64_t nchunks = a->size / C;

  for (ch = R0 * N / c; ch <= (R1 * N - 1) / c && ch < nchunks; ch++)
    sync_add_lock(op, ch, 0, C);
}

/* What a piece reads (sync_piece_reads(): jobs, njobs), in its buffers:
 * for recovery, one copy of each chunk a recovering member holds in the
 * piece's rows, to be written to it (its role and member row); for resync
 * and scrub, the copies of each chunk whose first copy lies in the rows,
 * to be compared (COPIES entries per chunk, n of them read). */
struct r10_job {
  unsigned slot;
  uint64_t R;
  uint8_t *buf;
};
struct r10_chunk {
  unsigned n;
  struct mirror_copy copy[];
};

static int
recover_reads(struct sync_op *op, struct sync_reads *rd)
{
  struct raid_array *a = op->a;
  uint64_t C = a->chunk_size, N = a->raid_disks, c = a->copies;
  uint64_t R0 = op->pos / C, R1 = (op->pos + op->len) / C, R, ch, ms;
  uint64_t nchunks = a->size / C;
  struct r10_job *job = sync_buf(op, (R1 - R0) * N * sizeof *job);
  unsigned k, s, slot, nj = 0;

  if (job == NULL)
    return op->error;
  for (R = R0; R < R1; R++)
    for (s = 0; s < N; s++) {
      bool read = false;

      if (!op->target[s])
        continue;
      ch = (R * N + s) / c;
      if (ch >= nchunks)
        continue;               /* past the last whole row of chunks */
      for (k = 0; k < c && !read; k++) {
        struct raid_member *m;

        geo_raid10_map(N, c, a->chunk_sectors, ch * a->chunk_sectors, k, &slot, &ms);
        if (slot == s || (m = slot_member_at(a, slot, ms << SECTOR_SHIFT, C)) == NULL)
          continue;
        job[nj] = (struct r10_job){ .slot = s, .R = R, .buf = sync_buf(op, C) };
        sync_io(op, m, slot, MOP_READ, job[nj].buf, ms << SECTOR_SHIFT, C);
        nj++;
        read = true;
      }
      if (!read)
        return set_error(EIO, "raid10 %s: chunk %" PRIu64 " has no copy left "
                         "to rebuild role %u from", a->name, ch, s);
    }
  rd->jobs = job;
  rd->njobs = nj;
  return 0;
}

static int
compare_reads(struct sync_op *op, struct sync_reads *rd)
{
  struct raid_array *a = op->a;
  uint64_t C = a->chunk_size, N = a->raid_disks, c = a->copies;
  uint64_t R0 = op->pos / C, R1 = (op->pos + op->len) / C, ch, ms;
  uint64_t first = (R0 * N + c - 1) / c, last = MIN((R1 * N + c - 1) / c, a->size / C);
  size_t each = sizeof(struct r10_chunk) + c * sizeof(struct mirror_copy);
  uint8_t *chunks = last > first ? sync_buf(op, (last - first) * each) : NULL;
  unsigned k, slot;

  if (last > first && chunks == NULL)
    return op->error;
  for (ch = first; ch < last; ch++) {
    struct r10_chunk *x = (struct r10_chunk *)(chunks + (ch - first) * each);

    x->n = 0;
    for (k = 0; k < c; k++) {
      struct mirror_copy *y = &x->copy[x->n];

      geo_raid10_map(N, c, a->chunk_sectors, ch * a->chunk_sectors, k, &slot, &ms);
      if ((y->m = slot_member_at(a, slot, ms << SECTOR_SHIFT, C)) == NULL)
        continue;
      y->slot = slot;
      y->off = ms << SECTOR_SHIFT;
      y->buf = sync_buf(op, C);
      sync_io(op, y->m, slot, MOP_READ, y->buf, y->off, C);
      x->n++;
    }
  }
  rd->jobs = chunks;
  rd->njobs = (unsigned)(last > first ? last - first : 0);
  return 0;
}

static int
raid10_sync_read(struct sync_op *op)
{
  struct sync_reads *rd = sync_piece_reads(op);

  rd->issued = true;
  if (op->action == RAID_SYNC_RECOVER)
    return mirror_any_target(op) ? recover_reads(op, rd) : 0;
  return compare_reads(op, rd);
}

/* Recovery: each recovering member's chunks in the piece's rows, copied
 * from another copy.  Resync and scrub: every chunk whose first copy lies
 * in the rows, its copies compared with the first one read, and where
 * they differ (resync, repair) written over with it. */
static int
raid10_sync_step(struct sync_op *op)
{
  struct raid_array *a = op->a;
  struct sync_reads *rd = sync_piece_reads(op);
  uint64_t C = a->chunk_size;
  size_t each = sizeof(struct r10_chunk) + a->copies * sizeof(struct mirror_copy);
  unsigned j;
  int r;

  if (op->action == RAID_SYNC_RECOVER && !mirror_any_target(op))
    return 0;
  if (!rd->issued && (r = raid10_sync_read(op)) < 0)
    return r;
  if ((r = sync_io_wait(op)) < 0)
    return r;
  for (j = 0; j < rd->njobs; j++) {
    if (op->action == RAID_SYNC_RECOVER) {
      const struct r10_job *x = (const struct r10_job *)rd->jobs + j;

      sync_io(op, op->target[x->slot], x->slot, MOP_WRITE, x->buf, x->R * C, C);
    }
    else {
      const struct r10_chunk *x = (const struct r10_chunk *)((uint8_t *)rd->jobs + j * each);

      if (x->n > 0)
        mirror_compare_repair(op, x->copy, x->n, 0, C);
    }
  }
  return sync_io_wait(op);
}

const struct personality raid10_personality = {
  .level = RAID_LEVEL_10,
  .name = "raid10",
  .setup = raid10_setup,
  .max_degraded = raid10_max_degraded,
  .enough = raid10_enough,
  .submit = raid10_submit,
  .sync_step = raid10_sync_step,
  .sync_read = raid10_sync_read,
  .sync_locks = raid10_sync_locks,
};
