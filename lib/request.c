/* Requests: the life cycle every personality shares (reference counts,
 * member I/O belonging to a request, splitting, flushing every member),
 * the write gates a write passes, epochs and the grace period, and the
 * public asynchronous entry points (raid_aio_*()).
 *
 * A request (struct raid_request) is reference counted: the submitter holds
 * one reference while it issues member I/Os, and every member I/O holds one
 * until its completion handler has run.  A handler may issue more member
 * I/O (a retry on a mirror, RAID 5's write phase after its read phase),
 * taking new references before its own is dropped, so the count only
 * reaches zero when the request is really over.  The user's callback then
 * runs from the queue's run loop, never from inside raid_aio_*().
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* ---- requests --------------------------------------------------------------- */

static void split_next_piece(struct raid_request *r);
static void req_route(struct raid_request *r);

static void
req_finish(struct qtask *t, int res)
{
  struct raid_request *r = (struct raid_request *)((char *)t - offsetof(struct raid_request, task));
  struct raid_request *parent = r->parent;

  if (r->internal) {
    if (r->op != REQ_READ)
      r->a->mops->failures_recorded(r->a);
    if (r->a->pers->request_done)
      r->a->pers->request_done(r);
    r->cb(r->opaque, r->error);
  }
  else if (parent) {
    /* A piece of a split request is over: the next one takes its place
     * (see submit()), unless one has failed. */
    if (r->error == 0 && parent->error == 0)
      split_next_piece(parent);
    req_put(parent, r->error);
  }
  else {
    /* A write, flush, discard or write zeroes is not acknowledged while a
     * member failure is not yet on stable storage in the superblocks
     * (md holds such bios on bio_end_io_list while MD_SB_CHANGE_PENDING):
     * it may have left out the failed member, or seen the failure when
     * another thread was still writing the superblocks that record it.
     * Acknowledged before, it could be lost at a power cut: the failed
     * member would come back as if in sync and a resync could copy its
     * stale data over the survivors' (tests/test-powerloss.c found it on
     * RAID 1, one member's power cut first; its regression test is
     * test_failure_recorded_before_ack). */
    if (r->op != REQ_READ)
      r->a->mops->failures_recorded(r->a);
    req_gates_end(r);
    stats_io_done(&r->a->stats.io, r->op, r->len, r->start_ns, r->error);
    atomic_fetch_sub_explicit(&r->a->stats.in_flight, 1, memory_order_relaxed);
    if (r->a->pers->request_done)
      r->a->pers->request_done(r);
    /* Last of what the array does for R: array_quiesce() returns with no
     * request in the personality (a takeover frees its state after). */
    array_exit(r->a, r->epoch);
    queue_user_done(r->q);
    r->cb(r->opaque, r->error);
  }
  /* Last: a window's drain returns with R out of the personality. */
  if (r->routed)
    atomic_fetch_sub(&r->a->win_reqs[r->win_epoch], 1);
  raid_free(r);
}

void
req_get(struct raid_request *r)
{
  r->pending++;
}

void
req_put(struct raid_request *r, int res)
{
  if (res < 0)
    req_error(r, res);
  if (--r->pending == 0)
    queue_defer(r->q, &r->task, 0);
}

unsigned
array_enter(struct raid_array *a)
{
  /* Count it in the current epoch; if array_quiesce() moved on between
   * our two looks, count it in the new one (whose requests it does not
   * wait for: they see what it changed). */
  for (;;) {
    uint64_t e = atomic_load(&a->epoch);

    atomic_fetch_add(&a->epoch_reqs[e & 1], 1);
    if (atomic_load(&a->epoch) == e)
      return e & 1;
    atomic_fetch_sub(&a->epoch_reqs[e & 1], 1);
  }
}

void
array_exit(struct raid_array *a, unsigned epoch)
{
  atomic_fetch_sub(&a->epoch_reqs[epoch], 1);
}

void
array_quiesce(struct raid_array *a)
{
  uint64_t e;

  pthread_mutex_lock(&a->quiesce_lock);
  e = atomic_fetch_add(&a->epoch, 1);
  while (atomic_load(&a->epoch_reqs[e & 1]) > 0)
    usleep(100);
  pthread_mutex_unlock(&a->quiesce_lock);
}

/* A member I/O of a request, and its twin: a write to a role being
 * replaced also goes to the replacement where that is rebuilt already.
 * The submitter's DONE runs once both are over, so whatever the submitter
 * holds (a RAID 5 stripe lock, its buffers) covers the twin too. */
struct mio_wrap {
  struct member_io io;
  void (*done)(struct member_io *io, int res);
  struct member_io twin;
  unsigned parts;               /* I/Os still in flight: 1 or 2 */
  int res;                      /* IO's own result */
};

static void
mio_part_done(struct mio_wrap *w)
{
  struct raid_request *r = w->io.priv;

  if (--w->parts)
    return;
  w->done(&w->io, w->res);
  raid_free(w);
  req_put(r, 0);
}

static void
mio_done(struct member_io *io, int res)
{
  struct mio_wrap *w = (struct mio_wrap *)io;

  w->res = res;
  mio_part_done(w);
}

static void
twin_done(struct member_io *io, int res)
{
  struct mio_wrap *w = (struct mio_wrap *)((char *)io - offsetof(struct mio_wrap, twin));
  struct raid_request *r = w->io.priv;

  if (res < 0)
    array_repl_failed(r->a, io->slot, io->m, res);
  mio_part_done(w);
}

struct member_io *
req_mio(struct raid_request *r, unsigned slot, struct raid_member *m, enum mop op,
        void *buf, uint64_t member_offset, size_t len,
        void (*done)(struct member_io *io, int res))
{
  struct mio_wrap *w = raid_malloc(sizeof *w);

  if (w == NULL) {
    set_error(ENOMEM, "%s %s: out of memory for a member I/O", r->a->pers->name,
              r->a->name);
    return NULL;
  }
  memset(&w->io, 0, sizeof w->io);
  w->io.m = m;
  w->io.op = op;
  w->io.flags = (r->flags & RAID_REQ_FUA) && op != MOP_READ ? MIO_FUA : 0;
  w->io.buf = buf;
  /* A flush has no offset (and reads no data offset, which a reshape's
   * end changes while flushes may run). */
  w->io.offset = op == MOP_FLUSH ? 0 : m->data_offset + member_offset;
  w->io.len = len;
  w->io.done = mio_done;
  w->io.priv = r;
  w->io.slot = slot;
  w->done = done;
  w->parts = 1;
  return &w->io;
}

void
req_mio_discard(struct member_io *io)
{
  raid_free(io);
}

void
req_mio_submit(struct member_io *io)
{
  struct mio_wrap *w = (struct mio_wrap *)io;
  struct raid_request *r = mio_req(io);
  struct raid_array *a = r->a;
  struct raid_member *rp, *cur;
  uint64_t doff;

  req_get(r);
  if (io->op != MOP_READ && io->op != MOP_FLUSH) {
    /* The role may have changed since IO's member was bound (see "Roles
     * and members").  Load the replacement before the member: one that
     * took over is stored as the member before it is cleared, so we
     * either see the replacement (and write both) or the new member (and
     * write it instead: the old one left the role). */
    rp = atomic_load(&a->repl[io->slot]);
    cur = atomic_load(&a->members[io->slot]);
    doff = io->offset - io->m->data_offset;
    if (rp == NULL && cur != io->m && cur) {
      io->m = cur;
      io->offset = cur->data_offset + doff;
    }
    else if (rp && rp != io->m &&
             doff + io->len <= atomic_load(&a->repl_done[io->slot])) {
      w->twin = w->io;
      w->twin.m = rp;
      w->twin.offset = rp->data_offset + doff;
      w->twin.done = twin_done;
      w->twin.repl = true;
      w->parts = 2;
      member_submit(r->q, &w->twin);
    }
  }
  if (io->op == MOP_READ || io->op == MOP_WRITE || io->op == MOP_ZERO)
    stats_add(io->op == MOP_READ ? &a->stats.mread_bytes : &a->stats.mwrite_bytes,
              (uint64_t)io->len * w->parts);
  member_submit(r->q, io);
}

int
req_mio_batch_submit(struct raid_request *r, struct member_io **io, unsigned n)
{
  unsigned i;

  for (i = 0; i < n; i++)
    if (io[i] == NULL) {
      for (i = 0; i < n; i++)
        if (io[i])
          req_mio_discard(io[i]);
      return -ENOMEM;
    }
  for (i = 0; i < n; i++)
    req_mio_submit(io[i]);
  return 0;
}

/* Flush: every member that is in sync.  A member whose flush fails is
 * failed like one whose write failed; the flush succeeds as long as the
 * array still holds all its data on members that flushed. */
static void
flush_done(struct member_io *io, int res)
{
  struct raid_request *r = mio_req(io);
  struct raid_array *a = r->a;

  if (res == 0)
    return;
  if (io->repl) {
    array_repl_failed(a, io->slot, io->m, res);
    return;
  }
  array_member_failed(a, io->slot, io->m, res, 0, "flush");
  if (raid_array_is_failed(a)) {
    set_error(EIO, "%s %s: flush failed on member %s (role %u) and the array "
              "has failed", a->pers->name, a->name, io->m->name, io->slot);
    req_error(r, -EIO);
  }
}

void
array_flush_members(struct raid_request *r)
{
  struct raid_array *a = r->a;
  struct member_io *io[2 * RAID_MAX_MEMBERS];
  unsigned i, n = 0;

  for (i = 0; i < a->raid_disks; i++) {
    struct raid_member *m = slot_member_alive(a, i);
    struct raid_member *rp = atomic_load(&a->repl[i]);

    if (m)
      io[n++] = req_mio(r, i, m, MOP_FLUSH, NULL, 0, 0, flush_done);
    if (rp) {
      io[n] = req_mio(r, i, rp, MOP_FLUSH, NULL, 0, 0, flush_done);
      if (io[n])
        io[n]->repl = true;
      n++;
    }
  }
  if (req_mio_batch_submit(r, io, n) < 0)
    req_error(r, -ENOMEM);
}

static const char *const op_names[] = { "read", "write", "flush", "discard", "write zeroes" };

/* A discard or write-zeroes longer than the largest request is split into
 * pieces of up to RAID_MAX_REQUEST that end on multiples of it (so they
 * stay stripe-aligned), and at most SPLIT_WINDOW of them run at once: a
 * piece that completes starts the next.  Memory then does not grow with
 * the request's length: on RAID 5 a piece that is not whole rows needs
 * parity buffers, and a gigabyte started at once held half a gigabyte of
 * them.  Start R's next piece, if any. */
#define SPLIT_WINDOW 2u

static void
split_next_piece(struct raid_request *r)
{
  struct raid_array *a = r->a;
  uint64_t pos = r->split_next, end = r->offset + r->len, next;
  struct raid_request *c;

  if (pos >= end)
    return;
  next = MIN(end, (pos / RAID_MAX_REQUEST + 1) * RAID_MAX_REQUEST);
  c = raid_malloc(sizeof *c);
  if (c == NULL) {
    /* The pieces started so far finish; the rest is not done. */
    set_error(ENOMEM, "%s %s: %s: out of memory", a->pers->name, a->name,
              op_names[r->op]);
    req_error(r, -ENOMEM);
    r->split_next = end;
    return;
  }
  *c = *r;
  c->offset = pos;
  c->len = next - pos;
  c->parent = r;
  c->pending = 1;
  c->error = 0;
  c->geo = NULL;
  c->routed = false;
  r->split_next = next;
  req_get(r);
  req_route(c);
  req_put(c, 0);
}

/* ---- the reshape window ------------------------------------------------------ */

/* While a reshape moves the array's bytes from the old shape to the new
 * one (sync/reshape.c), a request is served by the shape its bytes are in
 * and keeps it to its end: below the window's start the new shape, from
 * its end on the old (the other way round for a reshape that runs
 * backwards, from the end down).  A request that touches the window (the bytes being
 * moved, and those moved since the last checkpoint, which a crash would
 * move again from the old shape) is parked here, off the personality, and
 * routed again when the window has moved.
 *
 * The engine moves the window and then drains it: it waits for every
 * request routed before the move.  Routed requests are counted in one of
 * two epochs (win_reqs[], as array_enter() does for all requests), and a
 * request counts itself before it looks at the window, while the engine
 * moves the window before it opens a new epoch: either the request sees
 * the window moved, or the drain waits for it.  Parked requests are not
 * counted, so the drain never waits for what waits for it.
 *
 * Before the window opens, requests are not counted at all (the path of
 * every array without a reshape costs one atomic load);
 * array_window_open() waits for those with array_quiesce(), with a window
 * that parks nothing yet. */

static void
win_resume(struct qtask *t, int res)
{
  struct raid_request *r = (struct raid_request *)((char *)t - offsetof(struct raid_request, task));

  r->task.fn = req_finish;
  req_route(r);
  req_put(r, 0);
}

/* Count R in the window's current epoch. */
static void
win_enter(struct raid_request *r)
{
  struct raid_array *a = r->a;

  for (;;) {
    uint64_t e = atomic_load(&a->win_epoch);

    atomic_fetch_add(&a->win_reqs[e & 1], 1);
    if (atomic_load(&a->win_epoch) == e) {
      r->win_epoch = e & 1;
      r->routed = true;
      return;
    }
    atomic_fetch_sub(&a->win_reqs[e & 1], 1);
  }
}

/* R in two pieces, [offset, AT) and [AT, end), each routed on its own
 * as a piece of a split request (split_next_piece()'s kind). */
static void
req_split_at(struct raid_request *r, uint64_t at)
{
  uint64_t from[2] = { r->offset, at }, to[2] = { at, r->offset + r->len };
  unsigned k;

  r->split_next = r->offset + r->len;
  for (k = 0; k < 2; k++) {
    struct raid_request *c = raid_malloc(sizeof *c);

    if (c == NULL) {
      req_error(r, set_error(ENOMEM, "%s %s: out of memory", r->a->pers->name,
                             r->a->name));
      continue;
    }
    *c = *r;
    c->offset = from[k];
    c->len = to[k] - from[k];
    c->buf = r->buf ? r->buf + (from[k] - r->offset) : NULL;
    c->parent = r;
    c->pending = 1;
    c->error = 0;
    c->geo = NULL;
    c->routed = false;
    c->task.fn = req_finish;
    req_get(r);
    req_route(c);
    req_put(c, 0);
  }
}

/* Park R at the window (uncounted: a drain never waits for what waits
 * for it) until win_release_locked() posts it; win_lock is let go. */
static void
win_park_unlock(struct raid_array *a, struct raid_request *r)
{
  atomic_fetch_sub(&a->win_reqs[r->win_epoch], 1);
  r->routed = false;
  req_get(r);                   /* dropped by win_resume() */
  r->task.fn = win_resume;
  r->win_next = NULL;
  *a->win_parked_tail = r;
  a->win_parked_tail = &r->win_next;
  pthread_mutex_unlock(&a->win_lock);
}

/* Give R its shape and hand it to the personality, or park it. */
static void
req_route(struct raid_request *r)
{
  struct raid_array *a = r->a;
  uint64_t end = r->offset + r->len;

  if (r->internal || !atomic_load(&a->win_on)) {
    if (r->geo == NULL)
      r->geo = atomic_load(&a->geo_now);
    a->pers->submit(r);
    return;
  }
  win_enter(r);
  pthread_mutex_lock(&a->win_lock);
  if (!atomic_load(&a->win_on))
    r->geo = atomic_load(&a->geo_now);
  else if (a->win_all) {
    win_park_unlock(a, r);
    return;
  }
  else if (r->op == REQ_FLUSH)
    r->geo = a->geo_new;        /* a flush has no bytes: either shape */
  else if (end <= a->win_lo)
    r->geo = a->reshape_back ? a->geo_old : a->geo_new;
  else if (r->offset >= a->win_hi)
    r->geo = a->reshape_back ? a->geo_new : a->geo_old;
  else if (a->win_lo == a->win_hi) {
    /* The reshape stands still (stopped) and R lies across the line
     * between the shapes: each side goes on its own. */
    uint64_t at = a->win_lo;

    atomic_fetch_sub(&a->win_reqs[r->win_epoch], 1);
    r->routed = false;
    pthread_mutex_unlock(&a->win_lock);
    req_split_at(r, at);
    return;
  }
  else {
    win_park_unlock(a, r);
    return;
  }
  pthread_mutex_unlock(&a->win_lock);
  a->pers->submit(r);
}

/* Send the parked requests off the window [LO, HI) (all: when off) back
 * to their queues.  Caller holds win_lock. */
static void
win_release_locked(struct raid_array *a)
{
  struct raid_request **p = &a->win_parked, *r;
  bool on = atomic_load(&a->win_on);

  while ((r = *p) != NULL) {
    if (on && (a->win_all || (a->win_lo < a->win_hi && r->offset + r->len > a->win_lo &&
                              r->offset < a->win_hi))) {
      p = &r->win_next;
      continue;
    }
    *p = r->win_next;
    queue_post(r->q, &r->task, 0);
  }
  a->win_parked_tail = p;
}

void
array_window_open(struct raid_array *a, uint64_t lo, uint64_t hi)
{
  /* First an empty window at LO: the new shape below it, the old from it
   * on, nothing parked. */
  pthread_mutex_lock(&a->win_lock);
  a->win_lo = a->win_hi = lo;
  atomic_store(&a->win_on, true);
  win_release_locked(a);
  pthread_mutex_unlock(&a->win_lock);
  /* Requests that came before the window opened are not counted. */
  array_quiesce(a);
  array_window_set(a, lo, hi);
  array_window_drain(a);
}

void
array_window_set(struct raid_array *a, uint64_t lo, uint64_t hi)
{
  pthread_mutex_lock(&a->win_lock);
  a->win_lo = lo;
  a->win_hi = hi;
  a->win_all = false;
  win_release_locked(a);
  pthread_mutex_unlock(&a->win_lock);
}

void
array_window_drain(struct raid_array *a)
{
  uint64_t e = atomic_fetch_add(&a->win_epoch, 1);

  while (atomic_load(&a->win_reqs[e & 1]) > 0)
    usleep(100);
}

void
array_window_park_all(struct raid_array *a)
{
  pthread_mutex_lock(&a->win_lock);
  a->win_all = true;
  pthread_mutex_unlock(&a->win_lock);
  array_window_drain(a);
}

void
array_window_close(struct raid_array *a, const struct raid_geo *now)
{
  pthread_mutex_lock(&a->win_lock);
  atomic_store(&a->geo_now, now);
  a->win_all = false;
  atomic_store(&a->win_on, false);
  win_release_locked(a);
  pthread_mutex_unlock(&a->win_lock);
  array_window_drain(a);
}

bool
array_window_waiting(struct raid_array *a)
{
  bool w;

  pthread_mutex_lock(&a->win_lock);
  w = a->win_parked != NULL;
  pthread_mutex_unlock(&a->win_lock);
  return w;
}

/* Start R's member I/O (whole, or its first pieces), then drop the
 * submitter's reference. */
static void
req_dispatch(struct raid_request *r)
{
  if (r->len > RAID_MAX_REQUEST) {
    unsigned k;

    r->split_next = r->offset;
    for (k = 0; k < SPLIT_WINDOW; k++)
      split_next_piece(r);
  }
  else
    req_route(r);
  req_put(r, 0);
}

/* ---- the write gates ------------------------------------------------------ */

static void req_gates(struct raid_request *r, unsigned i);

/* R was parked at gate R->gate_at: it may go on (RES 0), or what the gate
 * waited for failed (the write is not done). */
static void
req_gate_resume(struct qtask *t, int res)
{
  struct raid_request *r = (struct raid_request *)((char *)t - offsetof(struct raid_request, task));

  r->task.fn = req_finish;
  if (res < 0)
    req_put(r, res);
  else
    req_gates(r, r->gate_at + 1);
}

/* Pass R through A's gates from the I-th on (the door's comment in
 * internal.h), then dispatch it.  Each gate is looked up as R reaches
 * it; R keeps the ones that counted it, for req_gates_end(). */
static void
req_gates(struct raid_request *r, unsigned i)
{
  for (; i < NGATES; i++) {
    struct write_gate *g = atomic_load(&r->a->gate[i]);

    if ((r->gate[i] = g) == NULL)
      continue;
    r->gate_at = i;
    r->task.fn = req_gate_resume;
    if (!g->ops->start(g, r))
      return;
    r->task.fn = req_finish;
  }
  req_dispatch(r);
}

/* The gates let R go in the reverse order of passing them: the bitmap's
 * counts drop before safe mode may call the array idle. */
void
req_gates_end(struct raid_request *r)
{
  unsigned i;

  for (i = NGATES; i-- > 0; )
    if (r->gate[i])
      r->gate[i]->ops->end(r->gate[i], r);
}

void
req_gates_hold(struct raid_request *r, struct raid_request *b)
{
  unsigned i;

  for (i = 0; i < NGATES; i++) {
    b->gate_span[i][0] = r->gate_span[i][0];
    b->gate_span[i][1] = r->gate_span[i][1];
    if ((b->gate[i] = r->gate[i]) != NULL && b->gate[i]->ops->hold)
      b->gate[i]->ops->hold(b->gate[i], b);
  }
}

uint32_t
req_write_behind(const struct raid_request *r)
{
  unsigned i;

  for (i = 0; i < NGATES; i++)
    if (r->gate[i] && r->gate[i]->ops->behind)
      return r->gate[i]->ops->behind(r->gate[i]);
  return 0;
}

/* Check and start one request. */
static int
submit(struct raid_queue *q, struct raid_array *a, enum req_op op, void *buf,
       size_t count, uint64_t offset, unsigned flags, raid_completion_fn cb,
       void *opaque)
{
  struct raid_request *r;
  uint64_t size = array_size_shown(a);

  if (flags & ~RAID_REQ_FUA)
    return set_error(EINVAL, "%s %s: %s: unknown flags 0x%x", a->pers->name,
                     a->name, op_names[op], flags & ~RAID_REQ_FUA);
  if (op != REQ_FLUSH) {
    if (count == 0)
      return set_error(EINVAL, "%s %s: %s of 0 bytes at offset %" PRIu64,
                       a->pers->name, a->name, op_names[op], offset);
    if (offset % RAID_SECTOR_SIZE || count % RAID_SECTOR_SIZE)
      return set_error(EINVAL, "%s %s: %s of %zu bytes at offset %" PRIu64
                       " is not aligned to %u-byte sectors", a->pers->name,
                       a->name, op_names[op], count, offset, RAID_SECTOR_SIZE);
    if (offset > size || count > size - offset)
      return set_error(EINVAL, "%s %s: %s of %zu bytes at offset %" PRIu64
                       " goes beyond the end of the array (%" PRIu64 " bytes)",
                       a->pers->name, a->name, op_names[op], count, offset, size);
    if ((op == REQ_READ || op == REQ_WRITE) && count > RAID_MAX_REQUEST)
      return set_error(EINVAL, "%s %s: %s of %zu bytes is larger than the "
                       "maximum request of %u bytes", a->pers->name, a->name,
                       op_names[op], count, RAID_MAX_REQUEST);
  }
  if (raid_array_is_failed(a))
    return set_error(EIO, "%s %s: the array has failed (%u of %u members lost); "
                     "%s refused", a->pers->name, a->name,
                     raid_array_degraded(a), a->raid_disks, op_names[op]);

  r = raid_calloc(1, sizeof *r);
  if (r == NULL)
    return set_error(ENOMEM, "%s %s: out of memory", a->pers->name, a->name);
  atomic_fetch_add_explicit(&a->user_ios, 1, memory_order_relaxed);
  r->a = a;
  r->q = q;
  r->op = op;
  r->flags = flags;
  r->buf = buf;
  r->offset = offset;
  r->len = count;
  r->cb = cb;
  r->opaque = opaque;
  r->pending = 1;
  r->task.fn = req_finish;
  r->start_ns = mono_ns();
  atomic_fetch_add_explicit(&a->stats.in_flight, 1, memory_order_relaxed);
  r->epoch = array_enter(a);
  queue_user_start(q);

  if (op == REQ_READ || op == REQ_FLUSH) {
    req_dispatch(r);
    return 0;
  }
  /* A request that changes member data passes the gates before any of
   * its member I/O: safe mode's (md/safemode.c: the superblocks say
   * "active" on every member, so that a crash now means a resync), then
   * the bitmap's (md/bitmap-run.c: the bits of what it writes are on
   * stable storage).  Parked, R comes back through req_gate_resume() on
   * this queue. */
  req_gates(r, 0);
  return 0;
}

int
req_internal(struct raid_queue *q, struct raid_array *a, const struct raid_geo *g,
             enum req_op op, void *buf, size_t len, uint64_t off,
             raid_completion_fn cb, void *opaque)
{
  struct raid_request *r = raid_calloc(1, sizeof *r);

  if (r == NULL)
    return set_error(ENOMEM, "%s %s: out of memory", a->pers->name, a->name);
  r->a = a;
  r->q = q;
  r->op = op;
  r->buf = buf;
  r->offset = off;
  r->len = len;
  r->cb = cb;
  r->opaque = opaque;
  r->pending = 1;
  r->task.fn = req_finish;
  r->geo = g;
  r->internal = true;
  a->pers->submit(r);
  req_put(r, 0);
  return 0;
}

EXPORT int
raid_aio_read(struct raid_queue *q, struct raid_array *a, void *buf,
              size_t count, uint64_t offset, raid_completion_fn cb, void *opaque)
{
  return submit(q, a, REQ_READ, buf, count, offset, 0, cb, opaque);
}

EXPORT int
raid_aio_write(struct raid_queue *q, struct raid_array *a, const void *buf,
               size_t count, uint64_t offset, unsigned flags,
               raid_completion_fn cb, void *opaque)
{
  return submit(q, a, REQ_WRITE, (void *)buf, count, offset, flags, cb, opaque);
}

EXPORT int
raid_aio_flush(struct raid_queue *q, struct raid_array *a,
               raid_completion_fn cb, void *opaque)
{
  return submit(q, a, REQ_FLUSH, NULL, 0, 0, 0, cb, opaque);
}

EXPORT int
raid_aio_discard(struct raid_queue *q, struct raid_array *a, size_t count,
                 uint64_t offset, raid_completion_fn cb, void *opaque)
{
  return submit(q, a, REQ_DISCARD, NULL, count, offset, 0, cb, opaque);
}

EXPORT int
raid_aio_write_zeroes(struct raid_queue *q, struct raid_array *a, size_t count,
                      uint64_t offset, unsigned flags, raid_completion_fn cb,
                      void *opaque)
{
  return submit(q, a, REQ_ZERO, NULL, count, offset, flags, cb, opaque);
}
