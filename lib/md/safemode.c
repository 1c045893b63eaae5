/* md's safe mode: the superblocks say "clean" whenever the array has been
 * idle for a moment, so that a crash while idle costs no resync.
 *
 * Without it the superblocks would say "active" (resync_offset 0,
 * md/meta.c) from start to stop, and every kill -9 or power cut, even of
 * an idle array, would cost a resync (of the whole array, or of the set
 * bits with a bitmap).  md (md_write_start(), md_write_end(),
 * md_check_recovery()) marks the array clean once no write has been in
 * flight for safe_mode_delay (200 ms), and before the next write reaches
 * any member it marks it active again and waits for those superblocks.
 * We do the same:
 *
 *   ACTIVE    the superblocks on every member say active (what meta_start()
 *             writes): writes pass the gate at once, counted in `writes`;
 *   CLEANING  the writer thread is writing them clean: writes park;
 *   CLEAN     they say clean (what meta_stop() would write, resync_offset
 *             MaxSector or the resync checkpoint): writes park, and the
 *             thread writes them active, then hands every parked request
 *             back.
 *
 * The gate (safe_start_write(), from submit() for every write, write
 * zeroes and discard, before the bitmap's gate and any member I/O) counts
 * the request and, unless ACTIVE, parks it and wakes the thread; one
 * superblock update serves every request parked until it ends.  Parked
 * requests go back to their own queue with queue_post() (DESIGN.md: a
 * request belongs to the queue it was submitted on; the thread does not
 * touch it after posting), with 0 or the update's error.  Nothing blocks
 * on a queue's thread: the superblock writes are the thread's (one per
 * array with metadata, like the bitmap's writer).
 *
 * safe_end_write() (req_finish(), once the data is on the members) drops
 * the count and stamps the time (RAID 1's write-behind holds a count of
 * its own, safe_hold_write(), until the write-mostly members have it); when the count is 0 for SAFE_MODE_DELAY
 * the thread writes the superblocks clean (a delay of 0 never does, as
 * md's safe_mode_delay 0).  No write can slip in between
 * the look at the count and the update: the state goes to CLEANING under
 * the lock first, and a write that comes meanwhile parks.
 *
 * A failed array is not marked clean: it takes no writes, and nothing
 * more is written to its members until it is stopped.
 *
 * Every transition is a full superblock update (meta_write_locked(),
 * events bumped, the bitmap superblock with the same events): md bumps the
 * events here too.  (md sometimes steps them back on a quick
 * clean->active, to spare spares a write; we never do, so events only
 * grow and every member of one update carries the same events.)  Bitmap
 * bits are not touched: the bitmap's writer clears them in its own time.
 *
 * What "clean" writes is md/meta.c's (meta_write_locked()): resync_offset
 * MaxSector, or, while a resync is due, the point it has reached, which
 * the resync's checkpoints keep moving while the array stays clean (an
 * interrupted resync resumes there, md's recovery_cp).  The sync engine's
 * own writes do not pass the gate (md's resync does not call
 * md_write_start() either): below the checkpoint they are done, above it
 * the next assembly resyncs anyway.  A crash in the middle of a
 * transition leaves some members one update behind: assembly takes them
 * (raid_superblock_one_behind(), md's margin of one).
 *
 * The delay is SAFE_MODE_DELAY_MS, per array
 * raid_array_set_safe_mode_delay() (raidctl set NAME safe-mode-delay=MS),
 * and for tests safe_mode_set_default_delay() for arrays started later.
 *
 * Locks: the thread never holds sm->d.lock while it calls into md/meta.c
 * (which takes the metadata lock), and md/meta.c never takes sm->d.lock.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "md/meta.h"

enum sm_state { SM_ACTIVE, SM_CLEANING, SM_CLEAN };

struct safe_mode {
  struct write_gate gate;        /* first: a->gate[GATE_SAFE] points here */
  struct raid_array *a;
  struct daemon d;               /* its lock guards everything below */
  enum sm_state state;
  uint64_t writes;               /* counted by the gate, not yet ended */
  uint64_t last_end;             /* CLOCK_MONOTONIC ns: the last write ended */
  uint64_t delay_ns;             /* idle this long: clean */
  struct raid_request *parked;   /* waiting for "active" on disk, a stack */
};

/* For arrays started from now on (safe_mode_set_default_delay()). */
static _Atomic unsigned default_delay_ms = SAFE_MODE_DELAY_MS;

static struct safe_mode *
gate_sm(struct write_gate *g)
{
  return (struct safe_mode *)((char *)g - offsetof(struct safe_mode, gate));
}

static bool
safe_start_write(struct write_gate *g, struct raid_request *r)
{
  struct safe_mode *sm = gate_sm(g);
  bool ready;

  pthread_mutex_lock(&sm->d.lock);
  sm->writes++;
  ready = sm->state == SM_ACTIVE;
  if (!ready) {
    r->gate_next[GATE_SAFE] = sm->parked;
    sm->parked = r;
    daemon_wake_locked(&sm->d);
  }
  pthread_mutex_unlock(&sm->d.lock);
  return ready;
}

static void
safe_hold_write(struct write_gate *g, struct raid_request *b)
{
  struct safe_mode *sm = gate_sm(g);

  pthread_mutex_lock(&sm->d.lock);
  sm->writes++;
  pthread_mutex_unlock(&sm->d.lock);
}

static void
safe_end_write(struct write_gate *g, struct raid_request *r)
{
  struct safe_mode *sm = gate_sm(g);

  pthread_mutex_lock(&sm->d.lock);
  sm->last_end = mono_ns();
  if (--sm->writes == 0)
    daemon_wake_locked(&sm->d);
  pthread_mutex_unlock(&sm->d.lock);
}

static const struct write_gate_ops safe_gate_ops = {
  .start = safe_start_write,
  .end = safe_end_write,
  .hold = safe_hold_write,
};

struct write_gate *
safe_mode_gate(struct safe_mode *sm)
{
  return sm ? &sm->gate : NULL;
}

struct safe_mode *
safe_mode_of(const struct raid_array *a)
{
  struct write_gate *g = atomic_load(&((struct raid_array *)a)->gate[GATE_SAFE]);

  return g ? gate_sm(g) : NULL;
}

struct safe_mode *
safe_mode_take(struct raid_array *a)
{
  struct write_gate *g = atomic_exchange(&a->gate[GATE_SAFE], NULL);

  return g ? gate_sm(g) : NULL;
}

/* Mark active on every member, then release the parked requests.  Called
 * and returns with the lock held. */
static void
go_active(struct safe_mode *sm)
{
  struct raid_request *parked, *next;
  int r;

  pthread_mutex_unlock(&sm->d.lock);
  r = meta_mark_active(sm->a);
  pthread_mutex_lock(&sm->d.lock);
  if (r == 0)
    sm->state = SM_ACTIVE;
  /* Every request parked now: those that came during the update too, the
   * superblocks they wait for are on the members (or failed for all). */
  parked = sm->parked;
  sm->parked = NULL;
  pthread_mutex_unlock(&sm->d.lock);
  for (; parked; parked = next) {
    next = parked->gate_next[GATE_SAFE];
    queue_post(parked->q, &parked->task, r);
  }
  pthread_mutex_lock(&sm->d.lock);
}

/* Idle long enough: mark clean.  Called and returns with the lock held. */
static void
go_clean(struct safe_mode *sm)
{
  int r;

  sm->state = SM_CLEANING;
  pthread_mutex_unlock(&sm->d.lock);
  r = meta_mark_clean(sm->a);
  pthread_mutex_lock(&sm->d.lock);
  /* Failed, some members may say clean already: as after a success, the
   * next write (or one parked meanwhile) has them all marked active
   * before it goes on. */
  sm->state = SM_CLEAN;
  if (r < 0)
    sm->last_end = mono_ns();
}

static void *
safe_main(void *arg)
{
  struct safe_mode *sm = arg;

  pthread_mutex_lock(&sm->d.lock);
  while (!sm->d.quit) {
    if (sm->parked && sm->state == SM_CLEAN) {
      go_active(sm);
      continue;
    }
    /* A failed array refuses I/O and is written no more (its superblocks
     * keep what they said when it failed). */
    if (sm->state == SM_ACTIVE && sm->writes == 0 && sm->delay_ns > 0 &&
        !raid_array_is_failed(sm->a)) {
      uint64_t due = sm->last_end + sm->delay_ns;

      if (mono_ns() >= due) {
        go_clean(sm);
        continue;
      }
      daemon_wait(&sm->d, due);
      continue;
    }
    daemon_wait(&sm->d, 0);
  }
  pthread_mutex_unlock(&sm->d.lock);
  return NULL;
}

int
safe_mode_new(struct raid_array *a, struct safe_mode **smp)
{
  struct safe_mode *sm = calloc(1, sizeof *sm);
  int r;

  *smp = NULL;
  if (sm == NULL)
    return set_error(ENOMEM, "array %s: out of memory for safe mode", a->name);
  sm->gate.ops = &safe_gate_ops;
  sm->a = a;
  sm->state = SM_ACTIVE;        /* meta_start() wrote "active" */
  sm->delay_ns = atomic_load(&default_delay_ms) * 1000000ull;
  sm->last_end = mono_ns();
  daemon_init(&sm->d);
  r = daemon_start(&sm->d, safe_main, sm);
  if (r != 0) {
    daemon_destroy(&sm->d);
    free(sm);
    return set_error(r, "array %s: cannot start the safe mode thread: %s", a->name,
                     strerror(r));
  }
  *smp = sm;
  return 0;
}

void
safe_mode_free(struct safe_mode *sm)
{
  if (sm == NULL)
    return;
  daemon_stop(&sm->d);
  daemon_destroy(&sm->d);
  free(sm);
}

void
safe_mode_set_delay(struct raid_array *a, unsigned ms)
{
  struct safe_mode *sm = safe_mode_of(a);

  if (sm == NULL)
    return;
  pthread_mutex_lock(&sm->d.lock);
  sm->delay_ns = (uint64_t)ms * 1000000ull;
  daemon_wake_locked(&sm->d);
  pthread_mutex_unlock(&sm->d.lock);
}

void
safe_mode_set_default_delay(unsigned ms)
{
  atomic_store(&default_delay_ms, ms);
}

EXPORT int
raid_array_set_safe_mode_delay(struct raid_array *a, unsigned ms)
{
  if (safe_mode_of(a) == NULL)
    return set_error(EINVAL, "array %s has no md metadata: no safe mode", a->name);
  safe_mode_set_delay(a, ms);
  return 0;
}

EXPORT unsigned
raid_array_safe_mode_delay(const struct raid_array *a)
{
  struct safe_mode *sm = safe_mode_of(a);
  uint64_t ns;

  if (sm == NULL)
    return 0;
  pthread_mutex_lock(&sm->d.lock);
  ns = sm->delay_ns;
  pthread_mutex_unlock(&sm->d.lock);
  return (unsigned)(ns / 1000000ull);
}
