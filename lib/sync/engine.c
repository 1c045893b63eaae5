/* The sync engine: rebuild, resync, scrub and reshape in the background:
 * its thread, what it does next, its life and the public calls.  A pass
 * of an action over the members is pass.c's, the speed limits and the
 * reshape's pace are pace.c's, a step's plumbing (its buffers, locks and
 * member I/O) is step.c's, the reshape's steps are reshape.c's.
 *
 * Each array gets one engine thread, started on first use, with its own
 * queue; it runs one action at a time (run_action()).
 *
 * Actions follow md's sync_action: recover (members being rebuilt and
 * replacements), resync (a new or unclean array), check and repair
 * (scrub).  With auto sync on (raidd) the engine also does what md's
 * md_check_recovery() does: a hot spare takes a failed member's role, and
 * recovery, then resync, start by themselves.
 *
 * Speed: md's speed_limit_min / max (raid_array_set_sync_limits()), kept
 * between steps by pace.c.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "md/meta.h"
#include "sync.h"


/* An arena holds a piece of every role and a few more (RAID 5's sum). */
static size_t
arena_bytes(const struct raid_array *a)
{
  return (a->raid_disks + 3) * sync_piece(a);
}

/* The arenas' buffers made SIZE bytes each: true, or false with the old
 * ones kept (sync_buf() then allocates what a step needs beyond them). */
static bool
arenas_size(struct sync_arena *ar, size_t size)
{
  uint8_t *b[SYNC_ARENAS];
  unsigned k, n;

  for (n = 0; n < SYNC_ARENAS; n++)
    if ((b[n] = raid_buf_alloc(size)) == NULL)
      break;
  if (n < SYNC_ARENAS) {
    while (n > 0)
      raid_buf_free(b[--n]);
    return false;
  }
  for (k = 0; k < SYNC_ARENAS; k++) {
    arena_reset(&ar[k]);
    raid_buf_free(ar[k].base);
    ar[k].base = b[k];
    ar[k].size = size;
  }
  return true;
}

static void
arenas_free(struct sync_arena *ar)
{
  unsigned k;

  for (k = 0; k < SYNC_ARENAS; k++) {
    arena_reset(&ar[k]);
    raid_buf_free(ar[k].base);
    ar[k].base = NULL;
  }
}

/* ---- what there is to do ---------------------------------------------------- */

/* Role S is faulty or missing and not being replaced: a spare may take it. */
static bool
role_wants_spare(struct raid_array *a, unsigned s)
{
  int st = atomic_load(&a->state[s]);

  return (st == RAID_MEMBER_FAULTY || st == RAID_MEMBER_MISSING) &&
         !atomic_load(&a->repl[s]);
}

/* md's remove_and_add_spares(): a hot spare takes the first role that is
 * faulty or missing, and is rebuilt.  No waiting is needed: a request
 * that bound the failed member keeps it (see "Roles and members" in
 * roles.c), and the spare, recovered nowhere, is not read. */
static bool
activate_spares(struct raid_array *a)
{
  bool any = false;
  unsigned s;

  if (raid_array_is_failed(a))
    return false;
  pthread_mutex_lock(&a->conf_lock);
  for (s = 0; s < a->raid_disks && a->nspares > 0; s++) {
    struct raid_member *old, *x;

    if (!role_wants_spare(a, s))
      continue;
    x = a->spares[0];
    memmove(a->spares, a->spares + 1, --a->nspares * sizeof a->spares[0]);
    old = role_install_locked(a, s, x);
    raid_log(RAID_LOG_WARNING, "%s %s: hot spare %s takes role %u%s%s; rebuilding it",
             a->pers->name, a->name, x->name, s, old ? " from failed member " : "",
             old ? old->name : "");
    any = true;
  }
  pthread_mutex_unlock(&a->conf_lock);
  if (any)
    meta_update(a);
  return any;
}

/* What the engine should do next.  Called with the engine lock held. */
static int
pick(struct raid_array *a, struct sync_engine *e)
{
  int act = RAID_SYNC_IDLE;

  if (e->paused || raid_array_is_failed(a) || a->pers->sync_step == NULL)
    return RAID_SYNC_IDLE;
  /* A reshape under way goes on before anything else, and while it is
   * frozen nothing runs (md's too). */
  if (atomic_load(&a->reshape_pos) != UINT64_MAX)
    return e->reshape_frozen || (e->failed_auto == RAID_SYNC_RESHAPE &&
                                 e->request != RAID_SYNC_RESHAPE)
      ? RAID_SYNC_IDLE : RAID_SYNC_RESHAPE;
  if (e->auto_sync)
    activate_spares(a);
  if (recovery_due(a) && (e->auto_sync || e->request == RAID_SYNC_RECOVER))
    act = RAID_SYNC_RECOVER;
  else if (e->request == RAID_SYNC_CHECK || e->request == RAID_SYNC_REPAIR ||
           e->request == RAID_SYNC_RESYNC)
    act = e->request;
  else if (e->auto_sync && raid_array_needs_resync(a) &&
           !(a->level == RAID_LEVEL_5 && raid_array_degraded(a)))
    act = RAID_SYNC_RESYNC;
  if (act != RAID_SYNC_IDLE && act == e->failed_auto && act != e->request)
    return RAID_SYNC_IDLE;
  return act;
}

/* ---- the thread ------------------------------------------------------------ */

/* Run action ACT on the engine's queue Q: a reshape at its pace (pace.c),
 * any other as a pass over the members (pass.c). */
static int
run_action(struct raid_array *a, struct sync_engine *e, struct raid_queue *q, int act)
{
  if (act == RAID_SYNC_RESHAPE)
    return run_reshape(a, e, q);
  return run_pass(a, e, q, act);
}

static void *
engine_main(void *arg)
{
  struct raid_array *a = arg;
  struct sync_engine *e = a->sync;
  struct raid_queue *q = NULL;
  int act = RAID_SYNC_IDLE, r;

  if (raid_queue_new(256, &q) < 0) {
    raid_log(RAID_LOG_ERR, "%s %s: sync engine: %s", a->pers->name, a->name,
             raid_get_error());
    pthread_mutex_lock(&e->d.lock);
    e->last_result = -ENOMEM;
    e->kicked = false;
    e->request = RAID_SYNC_IDLE;
    daemon_wake_locked(&e->d);
    while (!e->d.quit)
      daemon_wait(&e->d, 0);
    pthread_mutex_unlock(&e->d.lock);
    return NULL;
  }
  pthread_mutex_lock(&e->d.lock);
  for (;;) {
    while (!e->d.quit && (act = pick(a, e)) == RAID_SYNC_IDLE) {
      if (e->request != RAID_SYNC_IDLE && !e->paused) {
        /* Asked for something there is nothing to do for. */
        e->last_action = e->request;
        e->last_result = 0;
        e->request = RAID_SYNC_IDLE;
      }
      e->kicked = false;
      daemon_wake_locked(&e->d);
      daemon_wait(&e->d, 0);
    }
    if (e->d.quit)
      break;
    e->action = act;
    /* The new action's progress from the moment it shows as running, not
     * the last action's (or 0 of 0) until run_action() gets to it. */
    e->done = 0;
    e->total = a->member_size;
    e->rate = 0;
    e->mismatches = 0;
    e->kicked = false;
    daemon_wake_locked(&e->d);
    pthread_mutex_unlock(&e->d.lock);
    r = run_action(a, e, q, act);
    pthread_mutex_lock(&e->d.lock);
    e->action = RAID_SYNC_IDLE;
    e->last_action = act;
    e->last_result = r;
    e->last_mismatches = e->mismatches;
    if (act == e->request)
      e->request = RAID_SYNC_IDLE;
    e->failed_auto = r < 0 && r != -EINTR ? act : RAID_SYNC_IDLE;
    daemon_wake_locked(&e->d);
  }
  pthread_mutex_unlock(&e->d.lock);
  raid_queue_free(q);
  return NULL;
}

/* ---- the engine's life ------------------------------------------------------ */

static int no_engine(struct raid_array *a);

/* The array's engine if it has started, else NULL. */
static struct sync_engine *
engine_of(struct raid_array *a)
{
  struct sync_engine *e;

  pthread_mutex_lock(&a->conf_lock);
  e = a->sync;
  pthread_mutex_unlock(&a->conf_lock);
  return e;
}

/* The array's engine, started on first use; NULL (and an error) when the
 * level has nothing to sync. */
static struct sync_engine *
engine_get(struct raid_array *a)
{
  struct sync_engine *e;
  int err;

  pthread_mutex_lock(&a->conf_lock);
  e = a->sync;
  if (e == NULL && a->pers->sync_step) {
    e = calloc(1, sizeof *e);
    if (e == NULL)
      goto out;
    daemon_init(&e->d);
    e->auto_sync = a->sync_auto;
    e->min_rate = a->sync_min;
    e->max_rate = a->sync_max;
    if (!arenas_size(e->arena, arena_bytes(a))) {
      daemon_destroy(&e->d);
      free(e);
      e = NULL;
      goto out;
    }
    a->sync = e;
    if ((err = daemon_start(&e->d, engine_main, a)) != 0) {
      a->sync = NULL;
      arenas_free(e->arena);
      daemon_destroy(&e->d);
      free(e);
      e = NULL;
    }
  }
 out:
  pthread_mutex_unlock(&a->conf_lock);
  return e;
}

int
sync_reshape_kick(struct raid_array *a)
{
  struct sync_engine *e = engine_get(a);

  if (e == NULL)
    return no_engine(a);
  pthread_mutex_lock(&e->d.lock);
  e->reshape_frozen = false;            /* a new reshape starts running */
  pthread_mutex_unlock(&e->d.lock);
  sync_kick(a);
  return 0;
}

/* md's "frozen" written to sync_action during a reshape, and "idle" after
 * it: the reshape stops at a checkpoint (the step under way ends, and its
 * position goes to the superblocks) and waits, requests served by both
 * shapes either side of it, until unfrozen; nothing else runs meanwhile. */
int
sync_reshape_freeze(struct raid_array *a, bool frozen)
{
  struct sync_engine *e = engine_get(a);

  if (e == NULL)
    return no_engine(a);
  pthread_mutex_lock(&e->d.lock);
  e->reshape_frozen = frozen;
  if (frozen) {
    /* Interrupt the pass (paused), wait for it to end, then leave the
     * frozen flag alone to hold the engine (a kick clears paused). */
    e->paused = true;
    daemon_wake_locked(&e->d);
    while (e->action != RAID_SYNC_IDLE)
      daemon_wait(&e->d, 0);
    e->paused = false;
  }
  else {
    e->kicked = true;
    e->paused = false;
    e->failed_auto = RAID_SYNC_IDLE;
  }
  daemon_wake_locked(&e->d);
  pthread_mutex_unlock(&e->d.lock);
  return 0;
}

bool
sync_reshape_frozen(struct raid_array *a)
{
  struct sync_engine *e;
  bool frozen = false;

  e = engine_of(a);
  if (e) {
    pthread_mutex_lock(&e->d.lock);
    frozen = e->reshape_frozen;
    pthread_mutex_unlock(&e->d.lock);
  }
  return frozen;
}

void
sync_kick(struct raid_array *a)
{
  struct sync_engine *e;

  e = engine_of(a);
  if (e == NULL)
    return;
  pthread_mutex_lock(&e->d.lock);
  e->kicked = true;
  e->paused = false;            /* a change asks for a new look */
  e->failed_auto = RAID_SYNC_IDLE;
  daemon_wake_locked(&e->d);
  pthread_mutex_unlock(&e->d.lock);
}

void
sync_engine_free(struct raid_array *a)
{
  struct sync_engine *e = a->sync;

  if (e == NULL)
    return;
  daemon_stop(&e->d);
  arenas_free(e->arena);
  daemon_destroy(&e->d);
  free(e);
  a->sync = NULL;
}

/* The core's door (struct sync_ops). */
const struct sync_ops sync_engine_ops = {
  .kick = sync_kick,
  .free = sync_engine_free,
};

/* ---- public ------------------------------------------------------------------- */

static int
no_engine(struct raid_array *a)
{
  if (a->pers->sync_step == NULL)
    return set_error(EINVAL, "%s %s: RAID 0 has no redundancy to rebuild, "
                     "resync or check", a->pers->name, a->name);
  return set_error(ENOMEM, "%s %s: cannot start the sync engine", a->pers->name, a->name);
}

EXPORT void
raid_array_sync_status(struct raid_array *a, struct raid_sync_status *st)
{
  struct sync_engine *e;

  memset(st, 0, sizeof *st);
  pthread_mutex_lock(&a->conf_lock);
  st->min_rate = a->sync_min;
  st->max_rate = a->sync_max;
  pthread_mutex_unlock(&a->conf_lock);
  e = engine_of(a);
  if (e == NULL)
    return;
  pthread_mutex_lock(&e->d.lock);
  st->action = e->action;
  st->due = e->kicked || e->request != RAID_SYNC_IDLE;
  st->done = e->done;
  st->total = e->total;
  st->rate = e->rate;
  st->mismatches = e->mismatches;
  st->last_action = e->last_action;
  st->last_result = e->last_result;
  st->last_mismatches = e->last_mismatches;
  st->min_rate = e->min_rate;
  st->max_rate = e->max_rate;
  pthread_mutex_unlock(&e->d.lock);
}

EXPORT int
raid_array_sync_start(struct raid_array *a, int action)
{
  struct sync_engine *e;

  if (action < RAID_SYNC_RESYNC || action > RAID_SYNC_RESHAPE)
    return set_error(EINVAL, "%s %s: unknown sync action %d", a->pers->name,
                     a->name, action);
  /* A RAID 5 taken over as a RAID 0 keeps its engine, idle from then on. */
  if (a->pers->sync_step == NULL || (e = engine_get(a)) == NULL)
    return no_engine(a);
  if (raid_array_is_failed(a))
    return set_error(EIO, "%s %s: the array has failed: nothing to %s",
                     a->pers->name, a->name, raid_sync_action_name(action));
  if ((action == RAID_SYNC_CHECK || action == RAID_SYNC_REPAIR) &&
      a->level == RAID_LEVEL_5 && raid_array_degraded(a))
    return set_error(EAGAIN, "%s %s: cannot %s a degraded RAID 5: there is no "
                     "redundancy left to compare", a->pers->name, a->name,
                     raid_sync_action_name(action));
  pthread_mutex_lock(&e->d.lock);
  if (e->action != RAID_SYNC_IDLE && e->action != action) {
    int cur = e->action;
    pthread_mutex_unlock(&e->d.lock);
    return set_error(EBUSY, "%s %s: a %s is running; wait for it or stop it first",
                     a->pers->name, a->name, raid_sync_action_name(cur));
  }
  /* A reshape under way, even frozen, comes first (md's too). */
  if (action != RAID_SYNC_RESHAPE && atomic_load(&a->reshape_pos) != UINT64_MAX) {
    bool frozen = e->reshape_frozen;
    pthread_mutex_unlock(&e->d.lock);
    return set_error(EBUSY, "%s %s: a reshape is under way%s; a %s waits for it to end",
                     a->pers->name, a->name, frozen ? " (frozen)" : "",
                     raid_sync_action_name(action));
  }
  if (action == RAID_SYNC_RESHAPE)
    e->reshape_frozen = false;
  e->request = action;
  e->paused = false;
  e->kicked = true;
  e->failed_auto = RAID_SYNC_IDLE;
  daemon_wake_locked(&e->d);
  pthread_mutex_unlock(&e->d.lock);
  return 0;
}

EXPORT int
raid_array_sync_stop(struct raid_array *a)
{
  struct sync_engine *e;

  e = engine_of(a);
  if (e == NULL)
    return 0;
  pthread_mutex_lock(&e->d.lock);
  e->paused = true;
  e->request = RAID_SYNC_IDLE;
  daemon_wake_locked(&e->d);
  while (e->action != RAID_SYNC_IDLE)
    daemon_wait(&e->d, 0);
  pthread_mutex_unlock(&e->d.lock);
  return 0;
}

EXPORT int
raid_array_sync_wait(struct raid_array *a)
{
  struct sync_engine *e;
  int r;

  e = engine_of(a);
  if (e == NULL)
    return 0;
  pthread_mutex_lock(&e->d.lock);
  while (!e->d.quit && (e->action != RAID_SYNC_IDLE || e->kicked))
    daemon_wait(&e->d, 0);
  r = e->last_result;
  pthread_mutex_unlock(&e->d.lock);
  if (r < 0)
    set_error(-r, "%s %s: the last %s did not finish", a->pers->name, a->name,
              raid_sync_action_name(e->last_action));
  return r;
}

EXPORT void
raid_array_set_auto_sync(struct raid_array *a, int on)
{
  struct sync_engine *e;

  pthread_mutex_lock(&a->conf_lock);
  a->sync_auto = on;
  pthread_mutex_unlock(&a->conf_lock);
  if ((e = engine_get(a)) == NULL)
    return;
  pthread_mutex_lock(&e->d.lock);
  e->auto_sync = on;
  e->kicked = true;
  if (on)
    e->paused = false;
  daemon_wake_locked(&e->d);
  pthread_mutex_unlock(&e->d.lock);
}

EXPORT void
raid_array_set_sync_limits(struct raid_array *a, uint64_t min_rate, uint64_t max_rate)
{
  struct sync_engine *e;

  pthread_mutex_lock(&a->conf_lock);
  a->sync_min = min_rate;
  a->sync_max = max_rate;
  pthread_mutex_unlock(&a->conf_lock);
  if ((e = engine_get(a)) == NULL)
    return;
  pthread_mutex_lock(&e->d.lock);
  e->min_rate = min_rate;
  e->max_rate = max_rate;
  daemon_wake_locked(&e->d);
  pthread_mutex_unlock(&e->d.lock);
}

uint64_t
sync_synced(struct raid_array *a)
{
  struct sync_engine *e = a->sync;
  uint64_t n = 0;

  if (e) {
    pthread_mutex_lock(&e->d.lock);
    n = e->synced;
    pthread_mutex_unlock(&e->d.lock);
  }
  return n;
}

bool
sync_wait_idle(struct raid_array *a, unsigned ms)
{
  struct sync_engine *e = a->sync;
  bool over;

  pthread_mutex_lock(&e->d.lock);
  over = e->action == RAID_SYNC_IDLE && !e->kicked;
  if (!over)
    daemon_wait(&e->d, mono_ns() + (uint64_t)ms * 1000000u);
  pthread_mutex_unlock(&e->d.lock);
  return over;
}

int
sync_hold(struct raid_array *a)
{
  struct sync_engine *e;
  int act;

  if (a->pers->sync_step == NULL)
    return 0;
  if ((e = engine_get(a)) == NULL)
    return no_engine(a);
  pthread_mutex_lock(&e->d.lock);
  /* Running, or asked for and about to run. */
  act = e->action != RAID_SYNC_IDLE ? e->action : e->paused ? RAID_SYNC_IDLE : e->request;
  if (act == RAID_SYNC_IDLE)
    e->paused = true;
  pthread_mutex_unlock(&e->d.lock);
  if (act != RAID_SYNC_IDLE)
    return set_error(EBUSY, "%s %s: a %s is running; wait for it (raidctl wait) "
                     "or stop it first", a->pers->name, a->name,
                     raid_sync_action_name(act));
  return 0;
}

void
sync_release(struct raid_array *a)
{
  struct sync_engine *e = a->sync;

  /* A RAID 0 taken over as a RAID 5 gets its engine now. */
  if (e == NULL && (e = engine_get(a)) == NULL)
    return;
  /* More roles (raid_array_grow_disks()): arenas for them, while the
   * engine is still held (sync_buf() would allocate the rest each step). */
  pthread_mutex_lock(&e->d.lock);
  if (arena_bytes(a) > e->arena[0].size)
    arenas_size(e->arena, arena_bytes(a));
  pthread_mutex_unlock(&e->d.lock);
  sync_kick(a);
}
