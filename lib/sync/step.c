/* A sync step's plumbing: its buffers (two arenas that take turns piece
 * by piece), its range locks, its member I/O run in parallel on the
 * engine's queue (reads waited for piece by piece, writes at the end of
 * the step), a replacement's copy, and counting mismatches.  The
 * personalities' sync_step() uses it (engine.h); the
 * engine's pass (pass.c) drives it.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "sync.h"

/* The actions' names (public: raid_sync_action_name()), here in the lower
 * of sync/'s two files, since a step's messages name its action too. */
static const char *const action_names[] = { "idle", "resync", "recover", "check", "repair",
                                              "reshape" };

EXPORT const char *
raid_sync_action_name(int action)
{
  return action >= 0 && action < (int)ARRAY_SIZE(action_names) ? action_names[action] : "unknown";
}

uint64_t
sync_count_mismatch(const uint8_t *x, const uint8_t *y, size_t len)
{
  static const uint8_t zero[4096];
  uint64_t bad = 0;
  size_t off;

  for (off = 0; off < len; off += 4096) {
    size_t n = MIN((size_t)4096, len - off);
    if (memcmp(x + off, y ? y + off : zero, n) != 0)
      bad += n >> SECTOR_SHIFT;
  }
  return bad;
}

/* ---- step plumbing ---------------------------------------------------------- */

void *
sync_buf(struct sync_op *op, size_t len)
{
  struct sync_arena *ar = op->arena;
  size_t need = (len + RAID_BUF_ALIGN - 1) / RAID_BUF_ALIGN * RAID_BUF_ALIGN;
  struct extra *x;

  if (ar->used + need <= ar->size) {
    ar->used += need;
    return ar->base + ar->used - need;
  }
  /* Rare: more than the arena was sized for. */
  x = raid_buf_alloc(RAID_BUF_ALIGN + need);
  if (x == NULL) {
    if (op->error == 0)
      op->error = set_error(ENOMEM, "%s %s: %s: out of memory", op->a->pers->name,
                            op->a->name, raid_sync_action_name(op->action));
    return NULL;
  }
  x->next = ar->extra;
  ar->extra = x;
  return (uint8_t *)x + RAID_BUF_ALIGN;
}

void
arena_reset(struct sync_arena *ar)
{
  while (ar->extra) {
    struct extra *x = ar->extra;
    ar->extra = x->next;
    raid_buf_free(x);
  }
  ar->used = 0;
  memset(&ar->rd, 0, sizeof ar->rd);
}

struct sync_reads *
sync_piece_reads(struct sync_op *op)
{
  return &op->arena->rd;
}

void
sync_add_lock(struct sync_op *op, uint64_t row, uint32_t lo, uint32_t hi)
{
  struct sync_lock *l;

  if (op->nlocks == op->max_locks) {
    unsigned n = op->max_locks ? 2 * op->max_locks : 64;
    struct sync_lock *p = realloc(op->locks, n * sizeof *p);
    if (p == NULL) {
      if (op->error == 0)
        op->error = set_error(ENOMEM, "%s %s: %s: out of memory for %u locks",
                              op->a->pers->name, op->a->name,
                              raid_sync_action_name(op->action), n);
      return;
    }
    op->locks = p;
    op->max_locks = n;
  }
  l = &op->locks[op->nlocks++];
  memset(l, 0, sizeof *l);
  l->l.row = row;
  l->l.lo = lo;
  l->l.hi = hi;
  /* In the array's shape's lock space, where its writes lock (a reshape
   * or a takeover gives the array a shape in the other space; none runs
   * beside a sync). */
  l->l.space = atomic_load(&op->a->geo_now)->space;
  l->op = op;
}

static void
lock_granted(struct qtask *t, int res)
{
  struct sync_lock *l = (struct sync_lock *)((char *)t - offsetof(struct sync_lock, l.task));

  l->op->in_flight--;
  queue_user_done(l->op->q);
}

/* Run the engine's queue until OP has no lock grant in flight and the
 * counter at COUNT (if any) is zero.  It waits in
 * poll(2) on the queue's eventfd rather than inside io_uring_enter():
 * valgrind (3.19) keeps its big lock while a thread blocks in
 * io_uring_enter, and the client thread whose lock grant or I/O we wait
 * for could then never run (liburing issue #657).  The engine is not on
 * the latency path, so the extra system call costs nothing that matters. */
static int
run_until_idle(struct sync_op *op, const unsigned *count)
{
  struct pollfd p = { .fd = raid_queue_fd(op->q), .events = POLLIN };
  int r;

  for (;;) {
    if ((r = raid_queue_run(op->q, 0)) < 0)
      return r;
    if (op->in_flight == 0 && (!count || *count == 0))
      return 0;
    if (poll(&p, 1, 100) < 0 && errno != EINTR)
      return set_error(errno, "sync engine: poll: %s", strerror(errno));
  }
}

/* Take every lock of the step.  Only the engine holds more than one lock
 * at a time, and clients never wait for the engine while holding one, so
 * asking for them all at once cannot deadlock. */
void
lock_all(struct sync_op *op)
{
  unsigned i;

  for (i = 0; i < op->nlocks; i++) {
    struct sync_lock *l = &op->locks[i];

    l->l.q = op->q;
    l->l.task.fn = lock_granted;
    op->in_flight++;
    queue_user_start(op->q);
    range_lock(op->a->locks, &l->l);
  }
  run_until_idle(op, NULL);
}

void
unlock_all(struct sync_op *op)
{
  unsigned i;

  for (i = 0; i < op->nlocks; i++)
    range_unlock(op->a->locks, &op->locks[i].l, op->q);
  op->nlocks = 0;
}

struct sync_mio {
  struct member_io io;
  struct sync_op *op;
  struct sync_arena *arena;      /* a write's buffer's */
};

static void
sync_io_done(struct member_io *io, int res)
{
  struct sync_mio *s = (struct sync_mio *)io;
  struct sync_op *op = s->op;

  if (res < 0) {
    /* M is the role's member or its replacement, or was when the I/O
     * went out: each call does nothing unless M is that now. */
    array_repl_failed(op->a, io->slot, io->m, res);
    array_member_failed(op->a, io->slot, io->m, res, io->offset - io->m->data_offset,
                        io->op == MOP_READ ? "read" : "write");
    if (op->error == 0)
      op->error = set_error(-res, "%s %s: %s of member %s at byte %" PRIu64 " failed "
                            "during %s: %s", op->a->pers->name, op->a->name,
                            mop_name(io->op), io->m->name, io->offset,
                            raid_sync_action_name(op->action), strerror(-res));
  }
  if (io->op == MOP_WRITE)
    s->arena->writes--;
  else
    s->arena->reads--;
  queue_user_done(op->q);
  raid_free(s);
}

void
sync_io(struct sync_op *op, struct raid_member *m, unsigned slot, enum mop mop,
        void *buf, uint64_t pos, size_t len)
{
  struct sync_mio *s;

  if (buf == NULL)              /* sync_buf() failed: its error is set */
    return;
  s = raid_calloc(1, sizeof *s);
  if (s == NULL) {
    if (op->error == 0)
      op->error = set_error(ENOMEM, "%s %s: %s: out of memory", op->a->pers->name,
                            op->a->name, raid_sync_action_name(op->action));
    return;
  }
  s->op = op;
  s->io.m = m;
  s->io.op = mop;
  s->io.buf = buf;
  s->io.offset = m->data_offset + pos;
  s->io.len = len;
  s->io.slot = slot;
  s->io.done = sync_io_done;
  s->arena = op->arena;
  if (mop == MOP_WRITE)
    op->arena->writes++;
  else
    op->arena->reads++;
  queue_user_start(op->q);
  member_submit(op->q, &s->io);
}

static int
wait_common(struct sync_op *op, const unsigned *count)
{
  int r = run_until_idle(op, count);

  if (r == 0)
    r = op->error;
  op->error = 0;
  return r;
}

int
sync_io_wait(struct sync_op *op)
{
  return wait_common(op, &op->arena->reads);
}

/* The end of a step: the reads and writes of every arena done too (a
 * step cut short by an error may leave a piece's reads ahead in flight). */
int
sync_io_drain(struct sync_op *op, struct sync_arena *arenas)
{
  unsigned k;
  int r = 0;

  for (k = 0; r == 0 && k < SYNC_ARENAS; k++) {
    r = run_until_idle(op, &arenas[k].reads);
    if (r == 0)
      r = run_until_idle(op, &arenas[k].writes);
  }
  if (r == 0)
    r = op->error;
  op->error = 0;
  return r;
}

/* Make ARENA OP's buffers for the next piece, once the I/O of the piece
 * that used it before is done. */
int
use_arena(struct sync_op *op, struct sync_arena *ar)
{
  int r = wait_common(op, &ar->reads), r2 = wait_common(op, &ar->writes);

  if (r == 0)
    r = r2;
  arena_reset(ar);
  op->arena = ar;
  return r;
}

/* The replacements in DID (chosen at the step's start) get a copy of the
 * piece OP covers from their role's member. */
int
copy_replacements(struct sync_op *op, const bool *did)
{
  struct raid_array *a = op->a;
  unsigned s;
  int r;

  for (s = 0; s < a->raid_disks; s++) {
    struct raid_member *rp = atomic_load(&a->repl[s]);
    struct raid_member *m = slot_member_at(a, s, op->pos, op->len);
    uint8_t *buf;

    /* None, or it failed or took over during the step (then it is the
     * role's member, rebuilt from the recovery point like any other). */
    if (!did[s] || rp == NULL || m == NULL || m == rp)
      continue;
    buf = sync_buf(op, op->len);
    sync_io(op, m, s, MOP_READ, buf, op->pos, op->len);
    if ((r = sync_io_wait(op)) < 0)
      return r;
    sync_io(op, rp, s, MOP_WRITE, buf, op->pos, op->len);
  }
  return 0;
}
