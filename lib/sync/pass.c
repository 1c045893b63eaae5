/* A pass of the sync engine (engine.c) over the members: one action,
 * rebuild, resync or scrub, from a start point to the end in steps of up
 * to sync_unit() bytes of every member (smaller under a speed limit, and
 * ending at any member's recovery point).  A step:
 *   1. takes the range locks that cover the step (the personality says
 *      which: RAID 5 stripe rows, RAID 1 megabyte rows, RAID 10 chunks).
 *      Every client write holds the lock of what it writes, so during a
 *      step nothing else changes those bytes;
 *   2. reads, compares or rebuilds and writes (the personality's
 *      sync_step(); a replacement is a plain copy from the member it
 *      replaces, done here), in SYNC_PIECES pieces: the next piece's reads
 *      go out (the personality's sync_read()) before this one is computed,
 *      while the writes of the piece before are still in flight, so a
 *      rebuild keeps its sources and its target busy at the same time
 *      (three arenas of buffers take turns); the step waits for all its
 *      I/O at the end;
 *   3. moves the recovery point past the step while still holding the
 *      locks, then releases them.
 * Because the point moves only under the locks, a client write sees a
 * recovering member either as rebuilt over its whole range (and writes it
 * there too) or not yet (and leaves it to the engine, which will read the
 * new data when it gets there).  Nothing needs a second pass.
 *
 * A pass (run_pass()) runs in phases (struct pass): pass_begin(), then
 * for each step pass_must_end(), pass_plan(), pass_step() and
 * pass_progress() (the throttle is pace.c's), and pass_end().  A reshape
 * is no pass: it goes at its own pace (pace.c's run_reshape()).
 *
 * Checkpoints: every second, and when interrupted, the recovery points go
 * to the superblocks (recovery_offset) without bumping events, so a crash
 * or SIGKILL resumes near where it was.  The resync point is kept for a
 * clean stop (resync_offset), as md does.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "internal.h"
#include "md/meta.h"
#include "sync.h"

#define SYNC_PIECE (1u << 20)           /* bytes of each member per piece */
#define SYNC_PIECES 32u                 /* pieces per step */
#define SYNC_MAX_ROWS 4096u             /* chunk rows (locks) per step, at most */
#define SYNC_CHECKPOINT_NS 1000000000ull

/* ---- sizes: a step, a piece, a grain ------------------------------------------ */

/* A step is SYNC_PIECES pieces; a piece is whole chunk rows (RAID 5 and
 * 10 work on rows), about SYNC_PIECE bytes of each member. */
uint64_t
sync_piece(const struct raid_array *a)
{
  uint64_t C = a->chunk_size;

  if (a->level == RAID_LEVEL_1 || C == 0)
    return SYNC_PIECE;
  if (C >= SYNC_PIECE)
    return C;
  return C * MIN(SYNC_PIECE / C, SYNC_MAX_ROWS / SYNC_PIECES);
}

static uint64_t
sync_unit(const struct raid_array *a)
{
  return sync_piece(a) * SYNC_PIECES;
}

/* A resync guided by the write-intent bitmap looks at the member in
 * grains of about one bitmap chunk, so that a few dirty chunks smaller
 * than a piece (md allows chunks down to 4 KiB) cost those chunks, not a
 * piece each: the piece halved while it is larger than a bitmap chunk's
 * share of a member and its half is still whole chunk rows (RAID 5 and
 * 10 steps are rows) or 4 KiB (RAID 1).  A grain divides the piece. */
static uint64_t
sync_grain(struct raid_array *a)
{
  struct raid_bitmap_info info;
  uint64_t g = sync_piece(a), bm, align = 4096;

  if (raid_array_bitmap(a, &info) < 0 || !info.present || info.chunk_size == 0)
    return g;
  bm = info.chunk_size;
  if (a->level == RAID_LEVEL_10)
    /* RAID 10's bitmap covers the array: a member row of N members and
     * k copies holds N / k rows' worth of array bytes. */
    bm = MAX(UINT64_C(1), bm * a->copies / a->raid_disks);
  if (a->level != RAID_LEVEL_1 && a->chunk_size)
    align = a->chunk_size;
  while (g > bm && g % 2 == 0 && (g / 2) % align == 0)
    g /= 2;
  return g;
}

/* ---- the pass --------------------------------------------------------------- */

/* A member is being rebuilt or replaced: a recovery is due. */
bool
recovery_due(struct raid_array *a)
{
  unsigned s;

  for (s = 0; s < a->raid_disks; s++)
    if (atomic_load(&a->state[s]) == RAID_MEMBER_RECOVERING || atomic_load(&a->repl[s]))
      return true;
  return false;
}

static uint64_t
start_point(struct raid_array *a, int act)
{
  uint64_t pos = a->member_size;
  unsigned s;

  switch (act) {
  case RAID_SYNC_RECOVER:
    for (s = 0; s < a->raid_disks; s++) {
      if (atomic_load(&a->state[s]) == RAID_MEMBER_RECOVERING)
        pos = MIN(pos, atomic_load(&a->recovered[s]));
      if (atomic_load(&a->repl[s]))
        pos = MIN(pos, atomic_load(&a->repl_done[s]));
    }
    return pos;
  case RAID_SYNC_RESYNC:
    return meta_resync_start(a);
  default:
    return 0;
  }
}

/* Roles whose rebuild reached the end join the array; replacements that
 * are complete take their role's place (the old member, which holds the
 * same data, is retired: requests that bound it may still read it, and
 * their writes are redirected to the replacement). */
static void
finish_recovery(struct raid_array *a)
{
  bool changed = false;
  unsigned s;

  pthread_mutex_lock(&a->conf_lock);
  for (s = 0; s < a->raid_disks; s++) {
    struct raid_member *x;

    if (atomic_load(&a->state[s]) == RAID_MEMBER_RECOVERING &&
        atomic_load(&a->recovered[s]) >= a->member_size) {
      atomic_store(&a->state[s], RAID_MEMBER_IN_SYNC);
      roles_count_locked(a);
      raid_log(RAID_LOG_INFO, "%s %s: member %s (role %u) is rebuilt and in sync",
               a->pers->name, a->name, atomic_load(&a->members[s])->name, s);
      array_event(a, (struct raid_event){ .type = RAID_EVENT_SPARE_ACTIVE, .role = (int)s,
                                          .member = atomic_load(&a->members[s])->name });
      changed = true;
    }
    x = atomic_load(&a->repl[s]);
    if (x && atomic_load(&a->repl_done[s]) >= a->member_size && slot_ok(a, s)) {
      struct raid_member *old = atomic_load(&a->members[s]);

      retire_locked(a, old);
      /* The replacement uses the role's data offset, so moff stays. */
      atomic_store(&a->members[s], x);
      atomic_store(&a->repl[s], NULL);
      raid_log(RAID_LOG_INFO, "%s %s: %s has replaced %s in role %u; %s is "
               "retired (remove it)", a->pers->name, a->name, x->name,
               old->name, s, old->name);
      array_event(a, (struct raid_event){ .type = RAID_EVENT_SPARE_ACTIVE, .role = (int)s,
                                          .member = x->name });
      changed = true;
    }
  }
  pthread_mutex_unlock(&a->conf_lock);
  if (changed)
    meta_update(a);
}

/* One action's pass over the members: what run_pass() keeps from step
 * to step. */
struct pass {
  struct raid_array *a;
  struct sync_engine *e;
  int act;
  uint64_t unit, piece, total;   /* sizes: a step at most, a piece, a member */
  uint64_t pos, first;           /* where the pass is, where it started */
  uint64_t step, step_lim;       /* this step's length, the speed limit's */
  uint64_t t_last_ck, seen_ios, t_busy, due;
  struct sync_rate rate;
  struct sync_op op;
  unsigned retries;
  int retry_err;                 /* the error of a step that is planned again */
  bool guided;                   /* a resync over the bitmap's dirty chunks */
  uint64_t grain;
  bool skip;                     /* this step has nothing to copy (re-add) */
  bool did_repl[RAID_MAX_MEMBERS];
  /* The members this step rebuilds, as they were once its locks were
   * held.  A member added to a role while the step runs starts at
   * recovered = 0 and must not be moved past a step that never wrote it. */
  struct raid_member *target[RAID_MAX_MEMBERS];
  int next_pct;
};

/* The pass begins: recovery points on piece boundaries, the start point,
 * progress from there, the log line and the event. */
static void
pass_begin(struct pass *x)
{
  struct raid_array *a = x->a;
  struct sync_engine *e = x->e;
  uint64_t piece = x->piece, total = x->total;
  unsigned s;

  if (x->act == RAID_SYNC_RECOVER)
    /* Steps rebuild members whose recovery point is the step's start, and
     * end at the next such point; a point inside a piece (md checkpoints
     * anywhere: a superblock written by the kernel) would cut a piece.
     * Move such points back to a piece boundary: below them the data is
     * rebuilt already, and
     * lowering a point is safe at any time (writes there also went to
     * the member; the engine copies the range again under its locks). */
    for (s = 0; s < a->raid_disks; s++) {
      uint64_t cur = atomic_load(&a->recovered[s]);

      if (atomic_load(&a->state[s]) == RAID_MEMBER_RECOVERING && cur < total && cur % piece)
        atomic_compare_exchange_strong(&a->recovered[s], &cur, cur / piece * piece);
      cur = atomic_load(&a->repl_done[s]);
      if (atomic_load(&a->repl[s]) && cur < total && cur % piece)
        atomic_compare_exchange_strong(&a->repl_done[s], &cur, cur / piece * piece);
    }
  x->pos = x->first = start_point(a, x->act) / piece * piece;
  pthread_mutex_lock(&e->d.lock);
  e->done = x->pos;
  e->total = total;
  e->synced = 0;
  e->rate = 0;
  e->mismatches = 0;
  pthread_mutex_unlock(&e->d.lock);
  if (x->act == RAID_SYNC_RESYNC)
    atomic_store(&a->resync_front, x->pos);
  raid_log(RAID_LOG_INFO, "%s %s: %s started at %" PRIu64 " of %" PRIu64 " bytes per member",
           a->pers->name, a->name, raid_sync_action_name(x->act), x->pos, total);
  array_event(a, (struct raid_event){ .type = RAID_EVENT_REBUILD_STARTED, .role = -1,
                                      .action = x->act });
  /* md's RebuildNN: each fifth crossed from where the action starts. */
  x->next_pct = total ? (int)(x->pos * 5 / total) * 20 + 20 : 100;
  x->t_last_ck = x->due = mono_ns();
  sync_rate_start(&x->rate, x->pos, x->due);
  x->seen_ios = atomic_load(&x->a->user_ios);
}

/* Must the pass end before its next step?  *R is its result then (0 when
 * nothing is left to do). */
static bool
pass_must_end(struct pass *x, int *r)
{
  struct raid_array *a = x->a;

  pthread_mutex_lock(&x->e->d.lock);
  if (x->e->d.quit || x->e->paused)
    *r = set_error(EINTR, "%s %s: %s interrupted at byte %" PRIu64,
                   a->pers->name, a->name, raid_sync_action_name(x->act), x->pos);
  pthread_mutex_unlock(&x->e->d.lock);
  if (*r < 0)
    return true;
  if (raid_array_is_failed(a)) {
    *r = set_error(EIO, "%s %s: %s stopped: the array has failed", a->pers->name,
                   a->name, raid_sync_action_name(x->act));
    return true;
  }
  if (x->act == RAID_SYNC_RECOVER && !recovery_due(a)) {
    /* Every target failed or was removed; if that is what the
     * step being retried ran into, it is this action's result. */
    if (x->retries)
      *r = x->retry_err;
    return true;
  }
  return false;
}

/* Plan the next step: where it starts (a resync over the bitmap skips
 * clean grains) and how long it is.  False when nothing is left. */
static bool
pass_plan(struct pass *x)
{
  struct raid_array *a = x->a;
  uint64_t pos, step, limit, p, grain = x->grain, total = x->total;
  unsigned s, epoch;
  bool busy;

  /* A resync with a write-intent bitmap goes over the chunks whose
   * bits are set only (md's md_bitmap_start_sync()): grains without one
   * hold nothing that can disagree.  Progress moves past them, as md's
   * does. */
  if (x->guided) {
    /* Counted in (array_enter()): a bitmap removed meanwhile is freed
     * only once nothing of the array uses it. */
    epoch = array_enter(a);
    while (x->pos < total && !bitmap_run_dirty(a, x->pos, MIN(grain, total - x->pos)))
      x->pos += grain;
    array_exit(a, epoch);
    if (x->pos >= total)
      return false;
  }
  pos = x->pos;

  /* Under a speed limit a step is at most a quarter of a second's
   * worth (at least one piece), so that the throttle, which sleeps
   * between steps, keeps to the limit on small members too.  Whether
   * clients are busy is not known before the first step: it assumes
   * they are. */
  limit = x->step_lim = step_limit(a, x->e, &x->seen_ios, &x->t_busy, pos == x->first,
                                   &busy);
  step = limit ? MAX(x->piece, MIN(x->unit, limit / 4 / x->piece * x->piece)) : x->unit;
  step = MIN(step, total - pos);
  /* A re-added member (md's re-add) skips what the bitmap calls clean
   * piece by piece. */
  for (s = 0; x->act == RAID_SYNC_RECOVER && s < a->raid_disks; s++)
    if (atomic_load(&a->bm_readd[s]))
      step = MIN(step, x->piece);
  /* A step ends where another member's recovery point is, so that the
   * next one starts there and rebuilds that member too. */
  for (s = 0; s < a->raid_disks; s++) {
    uint64_t rec = atomic_load(&a->recovered[s]), rd = atomic_load(&a->repl_done[s]);

    if (atomic_load(&a->state[s]) == RAID_MEMBER_RECOVERING && rec > pos && rec < pos + step)
      step = rec - pos;
    if (atomic_load(&a->repl[s]) && rd > pos && rd < pos + step)
      step = rd - pos;
  }
  if (x->guided) {
    /* ... and ends before the next clean grain: a run of dirty
     * chunks is one step, read piece by piece. */
    epoch = array_enter(a);
    for (p = pos + grain; p < pos + step; p += grain)
      if (!bitmap_run_dirty(a, p, MIN(grain, pos + step - p))) {
        step = p - pos;
        break;
      }
    array_exit(a, epoch);
  }
  x->step = step;
  return true;
}

/* Under the step's locks: the members it rebuilds and the replacements it
 * copies to, and whether it can be skipped (md's re-add: when every member
 * this step rebuilds came back with the bitmap covering what it missed,
 * and nothing is replaced, a step without a set bit has nothing to copy.
 * Looked at under the step's locks: a write to it has set its bit before
 * taking its lock (the gate is passed before any member I/O), so it is
 * seen, or it comes after the step and writes the member too). */
static void
pass_targets(struct pass *x, int r)
{
  struct raid_array *a = x->a;
  struct sync_op *op = &x->op;
  uint64_t pos = x->pos;
  unsigned s;

  pthread_mutex_lock(&a->conf_lock);
  for (s = 0; s < a->raid_disks; s++) {
    x->target[s] = atomic_load(&a->state[s]) == RAID_MEMBER_RECOVERING &&
      atomic_load(&a->recovered[s]) == pos ? atomic_load(&a->members[s]) : NULL;
    op->target[s] = x->act == RAID_SYNC_RECOVER ? x->target[s] : NULL;
    x->did_repl[s] = x->act == RAID_SYNC_RECOVER && atomic_load(&a->repl[s]) &&
      atomic_load(&a->repl_done[s]) == pos && slot_ok_at(a, s, pos, x->step);
  }
  x->skip = x->act == RAID_SYNC_RECOVER && r == 0;
  for (s = 0; x->skip && s < a->raid_disks; s++)
    if (x->did_repl[s] || (op->target[s] && atomic_load(&a->bm_readd[s]) != op->target[s]))
      x->skip = false;
  pthread_mutex_unlock(&a->conf_lock);
  if (x->skip && bitmap_run_dirty(a, pos, x->step))
    x->skip = false;
}

/* The step: lock, copy or compare piece by piece, wait for the writes,
 * move the recovery points past it while still holding the locks (see the
 * top of this file), unlock.  0 or -errno. */
static int
pass_step(struct pass *x)
{
  struct raid_array *a = x->a;
  struct sync_op *op = &x->op;
  struct sync_arena *ar = x->e->arena;
  uint64_t pos = x->pos, end, p;
  unsigned s, k, epoch;
  bool ahead;
  int r, r2;

  op->pos = pos;
  op->len = x->step;
  op->mismatches = 0;
  op->error = 0;
  /* The step counts as a request of the array (array_enter()), so that
   * no member it may use is closed under it. */
  epoch = array_enter(a);
  a->pers->sync_locks(op);
  lock_all(op);
  r = op->error;
  op->error = 0;
  pass_targets(x, r);
  /* The step in pieces, three at a time: the next piece's reads go out
   * (the personality's sync_read(), where it has one) before this one is
   * computed and written, while the writes of the one before are still
   * in flight (sync_io_wait() waits for a piece's own reads only), so a
   * rebuild keeps its sources and its target busy while the engine
   * computes.  Reads ahead stay inside the step: its locks cover no more. */
  end = pos + x->step;
  ahead = a->pers->sync_read != NULL && !x->skip && r == 0;
  if (ahead && (r = use_arena(op, &ar[0])) == 0) {
    op->len = MIN(x->piece, x->step);
    r = a->pers->sync_read(op);
  }
  for (p = pos, k = 0; !x->skip && r == 0 && p < end; p += x->piece, k = (k + 1) % SYNC_ARENAS) {
    if (ahead && p + x->piece < end) {
      if ((r = use_arena(op, &ar[(k + 1) % SYNC_ARENAS])) < 0)
        break;
      op->pos = p + x->piece;
      op->len = MIN(x->piece, end - op->pos);
      if ((r = a->pers->sync_read(op)) < 0)
        break;
    }
    if (!ahead && (r = use_arena(op, &ar[k])) < 0)
      break;
    op->arena = &ar[k];
    op->pos = p;
    op->len = MIN(x->piece, end - p);
    r = copy_replacements(op, x->did_repl);
    if (r == 0)
      r = a->pers->sync_step(op);
  }
  r2 = sync_io_drain(op, ar);
  if (r == 0)
    r = r2;
  op->pos = pos;
  op->len = x->step;
  if (r == 0 && x->act == RAID_SYNC_RECOVER) {
    /* Under conf_lock: a target that failed (or was swapped out) since
     * the step began does not move. */
    pthread_mutex_lock(&a->conf_lock);
    for (s = 0; s < a->raid_disks; s++) {
      uint64_t cur = pos;
      if (x->target[s] && atomic_load(&a->members[s]) == x->target[s] &&
          atomic_load(&a->state[s]) == RAID_MEMBER_RECOVERING)
        atomic_compare_exchange_strong(&a->recovered[s], &cur, pos + op->len);
      cur = pos;
      if (x->did_repl[s])
        atomic_compare_exchange_strong(&a->repl_done[s], &cur, pos + op->len);
    }
    pthread_mutex_unlock(&a->conf_lock);
  }
  if (r == 0 && x->act == RAID_SYNC_RESYNC)
    atomic_store(&a->resync_front, pos + op->len);
  unlock_all(op);
  array_exit(a, epoch);
  for (k = 0; k < SYNC_ARENAS; k++)
    arena_reset(&ar[k]);
  return r;
}

/* After a step that went well: progress and its events, the throttle, the
 * speed, the checkpoint. */
static void
pass_progress(struct pass *x)
{
  struct raid_array *a = x->a;
  struct sync_engine *e = x->e;
  uint64_t pos = x->pos, t;

  for (; x->next_pct < 100 && pos * 100 >= (uint64_t)x->next_pct * x->total;
       x->next_pct += 20)
    array_event(a, (struct raid_event){ .type = RAID_EVENT_REBUILD_PROGRESS,
                                        .role = -1, .action = x->act,
                                        .percent = x->next_pct });
  pthread_mutex_lock(&e->d.lock);
  e->done = pos;
  if (!x->skip)
    e->synced += x->op.len;
  e->mismatches += x->op.mismatches;
  pthread_mutex_unlock(&e->d.lock);
  if (!throttle(a, e, x->op.len, x->step_lim, &x->due, &x->seen_ios, &x->t_busy))
    return;                     /* stopped: the top of the loop says so */
  t = mono_ns();
  sync_rate_update(e, &x->rate, pos, t);
  if (t - x->t_last_ck >= SYNC_CHECKPOINT_NS) {
    x->t_last_ck = t;
    if (x->act == RAID_SYNC_RECOVER)
      meta_checkpoint(a, UINT64_MAX);
    else if (x->act == RAID_SYNC_RESYNC)
      meta_checkpoint(a, pos);
  }
}

/* The pass is over with result R: the event, what the superblocks keep,
 * the log line. */
static void
pass_end(struct pass *x, int r)
{
  struct raid_array *a = x->a;
  struct sync_engine *e = x->e;
  uint64_t pos = x->pos, total = x->total;
  int act = x->act;

  /* md reports RebuildFinished, then the members that became active. */
  array_event(a, (struct raid_event){ .type = RAID_EVENT_REBUILD_FINISHED, .role = -1,
                                      .action = act, .result = r });
  if (act == RAID_SYNC_RECOVER) {
    finish_recovery(a);
    meta_checkpoint(a, UINT64_MAX);
  }
  else if (act == RAID_SYNC_RESYNC) {
    if (r == 0 && pos >= total) {
      meta_resync_done(a);
      atomic_store(&a->resync_front, UINT64_MAX);
    }
    else
      meta_checkpoint(a, pos);
  }
  pthread_mutex_lock(&e->d.lock);
  if (act == RAID_SYNC_CHECK || act == RAID_SYNC_REPAIR)
    raid_log(r == 0 ? RAID_LOG_INFO : RAID_LOG_WARNING, "%s %s: %s %s: %" PRIu64
             " mismatched sectors%s", a->pers->name, a->name,
             raid_sync_action_name(act), r == 0 ? "done" : "stopped",
             e->mismatches, act == RAID_SYNC_REPAIR && e->mismatches ? " rewritten" : "");
  else
    /* What the action really went over, besides how far it got: a resync
     * guided by the bitmap and a re-add skip clean chunks. */
    raid_log(r == 0 ? RAID_LOG_INFO : RAID_LOG_WARNING, "%s %s: %s %s at %" PRIu64
             " of %" PRIu64 " bytes, %" PRIu64 " bytes per member %s%s%s%s",
             a->pers->name, a->name, raid_sync_action_name(act),
             r == 0 ? "done" : "stopped", MIN(pos, total), total, e->synced,
             act == RAID_SYNC_RESYNC ? "resynced" : "rebuilt",
             x->guided ? " (write-intent bitmap: only the dirty chunks)" : "",
             r < 0 ? ": " : "", r < 0 ? raid_get_error() : "");
  pthread_mutex_unlock(&e->d.lock);
}

/* Run action ACT over A's members from its start point to the end, step
 * by step (plan, step, progress and throttle), on the engine's queue Q. */
int
run_pass(struct raid_array *a, struct sync_engine *e, struct raid_queue *q, int act)
{
  struct pass pass = { .a = a }, *x = &pass;
  int r = 0;

  x->a = a;
  x->e = e;
  x->act = act;
  x->unit = sync_unit(a);
  x->piece = sync_piece(a);
  x->total = a->member_size;
  x->guided = act == RAID_SYNC_RESYNC && bitmap_run_of(a) != NULL;
  x->grain = x->guided ? sync_grain(a) : x->piece;
  x->op.a = a;
  x->op.q = q;
  x->op.action = act;
  x->op.arena = &e->arena[0];
  pass_begin(x);
  while (x->pos < x->total) {
    if (pass_must_end(x, &r) || !pass_plan(x))
      break;
    r = pass_step(x);
    if (r < 0) {
      /* A member failed under us: plan the step again with what is left,
       * unless that keeps failing. */
      if (r == -EAGAIN || r == -E2BIG || ++x->retries > 3 || raid_array_is_failed(a))
        break;
      /* The top of the loop takes r < 0 for "stop": clear it, so that one
       * failed source does not end a rebuild other copies can finish. */
      x->retry_err = r;
      r = 0;
      continue;
    }
    x->retries = 0;
    x->pos += x->op.len;
    pass_progress(x);
  }
  free(x->op.locks);
  pass_end(x, r);
  return r;
}
