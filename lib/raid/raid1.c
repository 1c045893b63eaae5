/* RAID 1: mirroring with load-balanced reads.
 *
 * Every member holds the whole array at the same offset.  Reads go to one
 * in-sync member chosen by read_balance() (balance.c); a read that fails
 * marks that member faulty and is retried on another, so the caller sees
 * an error only when no copy can be read.  Writes, discards and zeroes go
 * to every in-sync member; one that fails is marked faulty, and the write
 * succeeds as long as some member still holds it (md's rule: an
 * acknowledged write is on every member that is still in the array).
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

/* Flushes wait for the write-behind before them (see "Write-behind"
 * below): each flush that finds behind writes in flight becomes a
 * barrier counting them, and each behind write, when it ends, counts down
 * the barriers made after it began. */
struct r1barrier {
  struct raid_request *r;        /* the flush, on its own queue */
  struct qtask task;             /* posted there when it may go on */
  uint64_t gen;
  unsigned left;                 /* behind writes it waits for */
  struct r1barrier *next;
};

struct r1conf {
  pthread_mutex_t lock;          /* all below */
  unsigned behind;               /* behind writes in flight (the bitmap's
                                    limit; a->behind_writes is the same count
                                    for readers without the lock, dropped
                                    last: raid_array_free() waits for it) */
  uint64_t gen;                  /* barriers made so far */
  struct r1barrier *barriers;
};

static void
raid1_free(struct raid_array *a)
{
  struct r1conf *c = a->priv;

  if (c == NULL)
    return;
  pthread_mutex_destroy(&c->lock);
  free(c);
  a->priv = NULL;
}

static int
raid1_setup(struct raid_array *a)
{
  struct r1conf *c;

  if (a->raid_disks < 2)
    return set_error(EINVAL, "raid1 %s: %u member: RAID 1 needs at least 2",
                     a->name, a->raid_disks);
  if (a->layout != RAID_LAYOUT_DEFAULT && a->layout != 0)
    return set_error(EINVAL, "raid1 %s: unknown layout %d", a->name, a->layout);
  a->layout = 0;
  a->copies = a->raid_disks;
  a->size = geo_array_size(a->level, a->raid_disks, a->copies, a->chunk_size,
                           a->member_size);
  if (a->priv)
    return 0;                   /* called again once the size is known */
  if ((c = calloc(1, sizeof *c)) == NULL)
    return set_error(ENOMEM, "raid1 %s: out of memory", a->name);
  pthread_mutex_init(&c->lock, NULL);
  a->priv = c;
  return 0;
}

static unsigned
raid1_max_degraded(const struct raid_array *a)
{
  return a->raid_disks - 1;
}

static bool
raid1_enough(const struct raid_array *a)
{
  return raid_array_degraded(a) < a->raid_disks;
}

static void raid1_read(struct raid_request *r);

static void
raid1_read_done(struct member_io *io, int res)
{
  if (mirror_read_failed(io, res))
    raid1_read(mio_req(io));    /* another copy, if any */
}

#define RAID1_ROW_SHIFT 20

/* A piece of a request within one row (1 MiB of the member), which
 * takes the row's range lock of the bytes it covers (r1_lock_rows()):
 * writes (struct r1write starts with one), and reads of a write-mostly
 * member while write-behind is in flight, which a behind write to those
 * bytes holds until it is done (see the write side below). */
struct r1piece {
  struct raid_request *r;
  struct range_lock lock;
  uint64_t pos;
  size_t len;
};

/* Split R into its row pieces, each a zeroed SIZE-byte object that starts
 * with a struct r1piece, and lock each; GRANTED runs on R's queue when a
 * piece has its lock.  Each holds a reference on R. */
static void
r1_lock_rows(struct raid_request *r, size_t size, void (*granted)(struct qtask *t, int res))
{
  uint64_t pos = r->offset, end = r->offset + r->len, row = 1ull << RAID1_ROW_SHIFT;

  while (pos < end) {
    uint64_t next = MIN(end, (pos / row + 1) * row);
    struct r1piece *p = raid_calloc(1, size);

    if (p == NULL) {
      /* The pieces locked so far go on; the request fails. */
      set_error(ENOMEM, "raid1 %s: out of memory", r->a->name);
      req_error(r, -ENOMEM);
      return;
    }
    p->r = r;
    p->pos = pos;
    p->len = next - pos;
    p->lock.row = pos >> RAID1_ROW_SHIFT;
    p->lock.lo = pos & (row - 1);
    p->lock.hi = p->lock.lo + p->len;
    p->lock.space = r->geo->space;      /* the sync engine's too (sync_add_lock()) */
    p->lock.q = r->q;
    p->lock.task.fn = granted;
    req_get(r);
    range_lock(r->a->locks, &p->lock);
    pos = next;
  }
}

static void r1r_pick(struct r1piece *rd);

static void
r1r_done(struct member_io *io, int res)
{
  struct r1piece *rd = io->ctx;
  struct raid_request *r = rd->r;

  if (mirror_read_failed(io, res)) {
    r1r_pick(rd);               /* another copy, if any */
    return;
  }
  range_unlock(r->a->locks, &rd->lock, r->q);
  raid_free(rd);
  req_put(r, 0);
}

/* The copy to read array bytes [POS, POS + LEN) from (read_balance(),
 * C[] filled), or -1 with R failed when there is none. */
static int
r1_pick(struct raid_request *r, uint64_t pos, size_t len, struct read_candidate *c)
{
  struct raid_array *a = r->a;
  unsigned i, nd = a->raid_disks;   /* once: raid_array_grow_disks() */
  int pick;

  for (i = 0; i < nd; i++) {
    c[i].slot = i;
    c[i].offset = pos;
  }
  pick = read_balance(a, c, nd, len);
  if (pick < 0) {
    set_error(EIO, "raid1 %s: read of %zu bytes at sector %" PRIu64 " failed: "
              "no member left to read", a->name, len, pos >> SECTOR_SHIFT);
    req_error(r, -EIO);
  }
  return pick;
}

static void
r1r_pick(struct r1piece *rd)
{
  struct raid_request *r = rd->r;
  struct raid_array *a = r->a;
  struct read_candidate c[RAID_MAX_MEMBERS];
  struct member_io *io = NULL;
  int pick;

  pick = r1_pick(r, rd->pos, rd->len, c);
  if (pick >= 0 &&
      (io = req_mio(r, pick, c[pick].m, MOP_READ, r->buf + (rd->pos - r->offset),
                    rd->pos, rd->len, r1r_done)) == NULL)
    req_error(r, -ENOMEM);
  if (io) {
    io->ctx = rd;
    req_mio_submit(io);
    return;
  }
  range_unlock(a->locks, &rd->lock, r->q);
  raid_free(rd);
  req_put(r, 0);
}

static void
r1r_locked(struct qtask *t, int res)
{
  (void)res;
  r1r_pick((struct r1piece *)((char *)t - offsetof(struct r1piece, lock.task)));
}

static void
raid1_read(struct raid_request *r)
{
  struct raid_array *a = r->a;
  struct read_candidate c[RAID_MAX_MEMBERS];
  struct member_io *io;
  int pick;

  if ((pick = r1_pick(r, r->offset, r->len, c)) < 0)
    return;
  if (c[pick].m->write_mostly && atomic_load(&a->behind_writes) > 0) {
    r1_lock_rows(r, sizeof(struct r1piece), r1r_locked);
    return;
  }
  io = req_mio(r, pick, c[pick].m, MOP_READ, r->buf, r->offset, r->len, raid1_read_done);
  if (io == NULL) {
    req_error(r, -ENOMEM);
    return;
  }
  req_mio_submit(io);
}

/* Writes take the range lock of what they write (1 MiB rows of the
 * member), so that the sync engine never copies a range while a write
 * changes it: its copy would land on the new member after the write and
 * undo it there.
 *
 * Write-behind (md's --write-behind, for a mirror with a slow member that
 * is there for safety, not speed): with a bitmap whose write_behind is not
 * 0 (req_write_behind()), a write is acknowledged once the members that are not write-mostly
 * have it.  The write-mostly members get a private copy of the data (the
 * caller may reuse its buffer once acknowledged) through a request of
 * their own, the behind part, owned by the same queue, which keeps:
 *  - the range lock, until the write-mostly members have it too: a later
 *    write to the same bytes, or a sync step, waits, so a write-mostly
 *    member never gets two writes to one place out of order and recovery
 *    never copies under a write;
 *  - its count at every write gate its request passed (req_gates_hold();
 *    the gates are md's, and this file knows them only through the core):
 *    the bitmap's count of its chunks, so that their bits stay set and
 *    after a crash the resync copies them to the write-mostly members from
 *    one that is not (raid1_sync_step() reads from those first, as
 *    read_balance() does where copies may disagree), and safe mode's write
 *    count, so that the superblocks do not say clean while a write is
 *    behind;
 *  - an epoch count (array_quiesce(): a member leaves only after its
 *    behind writes), a queue count (raid_queue_in_flight()) and
 *    a->behind_writes (raid_array_free() waits for it).
 * A flush waits for the behind writes in flight when it arrives
 * (raid1_flush()), and FUA writes are never behind: a write that a
 * completed flush or FUA covers is on every member, so it survives the
 * loss of the members that are not write-mostly too.
 * A write-mostly member is read only when no other member can serve the
 * read; while behind writes are in flight such a read takes the range
 * lock first (raid1_read()), as md waits for them before reading one.  A
 * behind write that fails fails its member like any write; the request was
 * rightly acknowledged, since the other members hold the data.  Not
 * behind, as in md: discards and write zeroes, writes that no member other
 * than write-mostly ones gets, and writes beyond the bitmap's limit (those
 * are acknowledged when every member has them). */

struct r1write {
  struct r1piece p;              /* p.r until acknowledged */
  struct raid_array *a;
  struct raid_queue *q;
  unsigned pending;              /* member writes before the acknowledgement, + 1 */
  unsigned holds;                /* the acknowledged part, the behind part */
};

/* The behind part of a write: its member writes are req_mio()s of REQ. */
struct r1behind {
  struct raid_request req;
  struct r1write *w;
  void *copy;                    /* raid_buf_get(), w->p.len bytes */
  uint64_t gen;                  /* barriers made before it began */
};

static void
r1w_release(struct r1write *w)
{
  if (--w->holds > 0)
    return;
  range_unlock(w->a->locks, &w->p.lock, w->q);
  raid_free(w);
}

static void
r1w_finish(struct r1write *w)
{
  struct raid_request *r = w->p.r;

  w->p.r = NULL;
  r1w_release(w);
  req_put(r, 0);
}

/* A RAID 1 write stands while the array runs: every member in sync holds
 * all of it. */
static bool
r1_holds(const struct raid_request *r, uint64_t pos, size_t len)
{
  return !raid_array_is_failed(r->a);
}

static void
raid1_write_done(struct member_io *io, int res)
{
  struct r1write *w = io->ctx;

  mirror_write_done(io, res, w->p.pos, w->p.len, r1_holds);
  if (--w->pending == 0)
    r1w_finish(w);
}

/* The behind part is over (its last reference, on its queue). */
static void
r1b_finish(struct qtask *t, int res)
{
  struct r1behind *b = (struct r1behind *)((char *)t - offsetof(struct r1behind, req.task));
  struct raid_array *a = b->req.a;
  struct r1conf *c = a->priv;
  struct r1barrier **pp, *x, *ready = NULL;

  (void)res;
  pthread_mutex_lock(&c->lock);
  c->behind--;
  for (pp = &c->barriers; (x = *pp) != NULL; )
    if (x->gen > b->gen && --x->left == 0) {
      *pp = x->next;
      x->next = ready;
      ready = x;
    }
    else
      pp = &x->next;
  pthread_mutex_unlock(&c->lock);
  /* Each flush back to its own queue (not touched after the post). */
  while ((x = ready) != NULL) {
    ready = x->next;
    queue_post(x->r->q, &x->task, 0);
  }
  req_gates_end(&b->req);
  raid_buf_put(b->copy, b->req.len);
  array_exit(a, b->req.epoch);
  queue_internal_done(b->req.q);
  r1w_release(b->w);
  raid_free(b);
  /* Last: once 0, raid_array_free() may free A. */
  atomic_fetch_sub(&a->behind_writes, 1);
}

/* A behind part for W's write-mostly members, or NULL: not allowed
 * (no bitmap, its limit reached) or out of memory (the write is then
 * done the ordinary way). */
static struct r1behind *
r1b_new(struct r1write *w)
{
  struct raid_request *r = w->p.r;
  struct raid_array *a = r->a;
  struct r1conf *c = a->priv;
  uint32_t limit = req_write_behind(r);
  struct r1behind *b;
  bool room;

  if (limit == 0 || r->op != REQ_WRITE || (r->flags & RAID_REQ_FUA))
    return NULL;
  if ((b = raid_calloc(1, sizeof *b)) == NULL)
    return NULL;
  if ((b->copy = raid_buf_get(w->p.len)) == NULL) {
    raid_free(b);
    return NULL;
  }
  /* Counted, if the bitmap's limit allows, in the same step as the
   * barriers' generation it begins after (raid1_flush()). */
  pthread_mutex_lock(&c->lock);
  room = c->behind < limit;
  if (room) {
    c->behind++;
    atomic_fetch_add(&a->behind_writes, 1);
    b->gen = c->gen;
  }
  pthread_mutex_unlock(&c->lock);
  if (!room) {
    raid_buf_put(b->copy, w->p.len);
    raid_free(b);
    return NULL;
  }
  b->req.a = a;
  b->req.q = r->q;
  b->req.op = REQ_WRITE;
  b->req.flags = r->flags;
  b->req.offset = w->p.pos;
  b->req.len = w->p.len;
  b->req.buf = b->copy;
  b->req.pending = 1;
  b->req.task.fn = r1b_finish;
  b->req.epoch = array_enter(a);
  b->w = w;
  memcpy(b->copy, r->buf + (w->p.pos - r->offset), w->p.len);
  /* Its chunks stay dirty in the bitmap, and the array not clean (safe
   * mode), until the write-mostly members have it. */
  req_gates_hold(r, &b->req);
  queue_internal_start(r->q);
  w->holds++;
  return b;
}

static void
r1b_write_done(struct member_io *io, int res)
{
  struct raid_request *br = mio_req(io);

  if (res < 0)
    array_member_failed(br->a, io->slot, io->m, res, mio_data_offset(br->a, io),
                        "write-behind");
}

static void
r1w_locked(struct qtask *t, int res)
{
  struct r1write *w = (struct r1write *)((char *)t - offsetof(struct r1write, p.lock.task));
  struct raid_request *r = w->p.r;
  struct raid_array *a = r->a;
  struct member_io *io[RAID_MAX_MEMBERS];
  struct raid_member *mem[RAID_MAX_MEMBERS];
  struct r1behind *b = NULL;
  /* The roles once: raid_array_grow_disks() may change them meanwhile,
   * and both loops must see the same ones. */
  unsigned i, n = 0, nm = 0, nfast = 0, nd = a->raid_disks;

  (void)res;
  w->a = a;
  w->q = r->q;
  w->holds = 1;
  for (i = 0; i < nd; i++) {
    if ((mem[i] = slot_member_at(a, i, w->p.pos, w->p.len)) == NULL)
      continue;
    nm++;
    if (!mem[i]->write_mostly)
      nfast++;
  }
  /* Behind only with a member that is not write-mostly to acknowledge it. */
  if (nfast > 0 && nfast < nm)
    b = r1b_new(w);
  /* Every copy or none (req_mio_batch_submit()); the acknowledgement
   * waits for those of R, not the behind part's. */
  w->pending = 1;
  for (i = 0; i < nd; i++) {
    if (mem[i] == NULL)
      continue;
    if (b && mem[i]->write_mostly)
      io[n] = req_mio(&b->req, i, mem[i], MOP_WRITE, b->copy, w->p.pos, w->p.len,
                      r1b_write_done);
    else {
      io[n] = req_mio(r, i, mem[i], req_mop(r),
                      r->buf ? r->buf + (w->p.pos - r->offset) : NULL,
                      w->p.pos, w->p.len, raid1_write_done);
      if (io[n])
        io[n]->ctx = w;
      w->pending++;
    }
    n++;
  }
  if (n == 0) {
    set_error(EIO, "raid1 %s: write at sector %" PRIu64 " failed: no member "
              "left", a->name, w->p.pos >> SECTOR_SHIFT);
    req_error(r, -EIO);
  }
  else if (req_mio_batch_submit(r, io, n) < 0) {
    req_error(r, -ENOMEM);
    w->pending = 1;
  }
  if (b)
    req_put(&b->req, 0);        /* the creator's reference */
  if (--w->pending == 0)
    r1w_finish(w);
}

static void
raid1_write(struct raid_request *r)
{
  r1_lock_rows(r, sizeof(struct r1write), r1w_locked);
}

/* A flush that waited for the behind writes before it goes on (on its
 * own queue, posted by whichever ended the last of them). */
static void
raid1_flush_go(struct qtask *t, int res)
{
  struct r1barrier *x = (struct r1barrier *)((char *)t - offsetof(struct r1barrier, task));
  struct raid_request *r = x->r;

  (void)res;
  raid_free(x);
  array_flush_members(r);
  req_put(r, 0);
}

/* A flush covers every write completed before it, on every member: with
 * write-behind, those still behind on the write-mostly members must land
 * before the members are flushed (md flushes without waiting; then a
 * flushed write can be lost when the other members fail before it lands).
 * FUA writes are never behind, for the same reason. */
static void
raid1_flush(struct raid_request *r)
{
  struct r1conf *c = r->a->priv;
  struct r1barrier *x;

  if (atomic_load(&r->a->behind_writes) > 0) {
    if ((x = raid_malloc(sizeof *x)) == NULL) {
      set_error(ENOMEM, "raid1 %s: flush: out of memory", r->a->name);
      req_error(r, -ENOMEM);
      return;
    }
    pthread_mutex_lock(&c->lock);
    if (c->behind > 0) {
      x->r = r;
      x->task.fn = raid1_flush_go;
      x->gen = ++c->gen;
      x->left = c->behind;
      x->next = c->barriers;
      c->barriers = x;
      req_get(r);
      pthread_mutex_unlock(&c->lock);
      return;
    }
    pthread_mutex_unlock(&c->lock);
    raid_free(x);
  }
  array_flush_members(r);
}

static void
raid1_submit(struct raid_request *r)
{
  switch (r->op) {
  case REQ_READ:
    raid1_read(r);
    break;
  case REQ_FLUSH:
    raid1_flush(r);
    break;
  default:
    raid1_write(r);
  }
}

/* ---- sync engine ------------------------------------------------------------ */

static void
raid1_sync_locks(struct sync_op *op)
{
  uint64_t row = 1ull << RAID1_ROW_SHIFT, pos = op->pos, end = op->pos + op->len;

  while (pos < end) {
    uint64_t next = MIN(end, (pos / row + 1) * row);
    sync_add_lock(op, pos >> RAID1_ROW_SHIFT, pos & (row - 1), (pos & (row - 1)) + (next - pos));
    pos = next;
  }
}

/* The copy a sync step goes by among MEM[]: the first member that is not
 * write-mostly (write-behind may have left a write-mostly one behind, and
 * reads go to the same copy where copies may disagree: read_balance()),
 * else the first there is; -1 if none. */
static int
sync_source(const struct raid_array *a, struct raid_member *const *mem)
{
  int first = -1;
  unsigned i;

  for (i = 0; i < a->raid_disks; i++)
    if (mem[i]) {
      if (!mem[i]->write_mostly)
        return (int)i;
      if (first < 0)
        first = (int)i;
    }
  return first;
}

/* A piece's reads (sync_piece_reads()): for recovery, one copy, from the
 * source sync_source() picks among the members not rebuilt; for resync
 * and scrub, every copy.  Each into its role's buf[]. */
static int
raid1_sync_read(struct sync_op *op)
{
  struct raid_array *a = op->a;
  struct sync_reads *rd = sync_piece_reads(op);
  bool recover = op->action == RAID_SYNC_RECOVER;
  unsigned i;

  rd->issued = true;
  if (recover && !mirror_any_target(op))
    return 0;
  for (i = 0; i < a->raid_disks; i++)
    if (!recover || !op->target[i])
      rd->mem[i] = slot_member_at(a, i, op->pos, op->len);
  if ((rd->source = sync_source(a, rd->mem)) < 0)
    return set_error(EIO, "raid1 %s: %s", a->name,
                     recover ? "nothing to rebuild from" : "no member to read");
  for (i = 0; i < a->raid_disks; i++) {
    if (rd->mem[i] == NULL || (recover && (int)i != rd->source))
      continue;
    rd->buf[i] = sync_buf(op, op->len);
    sync_io(op, rd->mem[i], i, MOP_READ, rd->buf[i], op->pos, op->len);
  }
  return 0;
}

/* Recovery: read one copy, write it to every recovering member.  Resync
 * and scrub: read every copy, compare with the source's (sync_source());
 * resync and repair write it over the others where they differ. */
static int
raid1_sync_step(struct sync_op *op)
{
  struct raid_array *a = op->a;
  struct sync_reads *rd = sync_piece_reads(op);
  struct mirror_copy copy[RAID_MAX_MEMBERS];
  unsigned i;
  int r;

  if (op->action == RAID_SYNC_RECOVER && !mirror_any_target(op))
    return 0;
  if (!rd->issued && (r = raid1_sync_read(op)) < 0)
    return r;
  if ((r = sync_io_wait(op)) < 0)
    return r;
  if (op->action == RAID_SYNC_RECOVER) {
    for (i = 0; i < a->raid_disks; i++)
      if (op->target[i])
        sync_io(op, op->target[i], i, MOP_WRITE, rd->buf[rd->source], op->pos, op->len);
    return sync_io_wait(op);
  }
  for (i = 0; i < a->raid_disks; i++)
    copy[i] = (struct mirror_copy){ .m = rd->mem[i], .slot = i, .off = op->pos,
                                    .buf = rd->buf[i] };
  mirror_compare_repair(op, copy, a->raid_disks, (unsigned)rd->source, op->len);
  return sync_io_wait(op);
}

const struct personality raid1_personality = {
  .level = RAID_LEVEL_1,
  .name = "raid1",
  .setup = raid1_setup,
  .free = raid1_free,
  .max_degraded = raid1_max_degraded,
  .enough = raid1_enough,
  .submit = raid1_submit,
  .sync_step = raid1_sync_step,
  .sync_read = raid1_sync_read,
  .sync_locks = raid1_sync_locks,
};
