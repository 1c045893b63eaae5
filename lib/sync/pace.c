/* The sync engine's pace: md's speed limits kept between the steps of a
 * pass (pass.c: step_limit() plans a step, throttle() follows it), and
 * the same for a reshape's steps (reshape_go(), called by reshape.c).
 *
 * Speed: md's speed_limit_min / max.  While clients used the array within
 * the last half second, the engine keeps to the minimum; otherwise it
 * goes up to the maximum (0: as fast as it can).  See "The throttle"
 * below for how a limit is kept without ever stalling.
 */
#include <config.h>

#include "internal.h"
#include "sync.h"

#define SYNC_BUSY_NS 500000000ull       /* client I/O this recent: busy */
#define SYNC_SLACK_NS 1000000000ull     /* catch-up allowed after slow steps */
#define SYNC_SLICE_NS 250000000ull      /* longest sleep before a new look */

/* Sleep until NS from now or until stopped; false when stopped. */
static bool
engine_sleep(struct sync_engine *e, uint64_t ns)
{
  uint64_t due = mono_ns() + ns;
  bool go;

  pthread_mutex_lock(&e->d.lock);
  if (!e->d.quit && !e->paused)
    daemon_wait(&e->d, due);
  go = !e->d.quit && !e->paused;
  pthread_mutex_unlock(&e->d.lock);
  return go;
}

/* The speed limit that applies now (0: none): md's speed_limit_min while
 * clients used the array in the last SYNC_BUSY_NS (or when ASSUME_BUSY),
 * else speed_limit_max.  *SEEN_IOS and *T_BUSY carry what the last call
 * saw of the array's client I/O count, and when it last moved. */
uint64_t
step_limit(struct raid_array *a, struct sync_engine *e, uint64_t *seen_ios,
           uint64_t *t_busy, bool assume_busy, bool *busyp)
{
  uint64_t t = mono_ns(), ios, limit;

  ios = atomic_load_explicit(&a->user_ios, memory_order_relaxed);
  if (ios != *seen_ios) {
    *seen_ios = ios;
    *t_busy = t;
  }
  *busyp = assume_busy || (*t_busy && t - *t_busy < SYNC_BUSY_NS);
  pthread_mutex_lock(&e->d.lock);
  limit = *busyp ? e->min_rate : e->max_rate;
  pthread_mutex_unlock(&e->d.lock);
  return limit;
}

void
sync_rate_start(struct sync_rate *r, uint64_t pos, uint64_t now)
{
  r->t[0] = r->t[1] = now;
  r->pos[0] = r->pos[1] = pos;
}

void
sync_rate_update(struct sync_engine *e, struct sync_rate *r, uint64_t pos, uint64_t now)
{
  if (now - r->t[1] >= SYNC_RATE_NS) {
    r->t[0] = r->t[1];
    r->pos[0] = r->pos[1];
    r->t[1] = now;
    r->pos[1] = pos;
  }
  if (now - r->t[0] >= 200000000ull) {
    pthread_mutex_lock(&e->d.lock);
    e->rate = (pos - r->pos[0]) * 1000000000ull / (now - r->t[0]);
    pthread_mutex_unlock(&e->d.lock);
  }
}

/* The throttle.  md's rule: under client load the sync runs at no less
 * than speed_limit_min; without load it runs up to speed_limit_max.  So a
 * limit is a pace, never a budget, and nothing is owed across a change:
 *  - each step is charged at the limit it was planned under (its size was
 *    chosen for that limit, at most a quarter of a second of it): it is
 *    due len / limit after the previous step was due.  A step planned
 *    without a limit is charged nothing, so the bytes of an unthrottled
 *    stretch are never repaid at the minimum once clients show up (that
 *    stalled a rebuild for minutes: a gigabyte owed at 1000 KiB/s);
 *  - the due time starts at the start, and never lags now by more than
 *    SYNC_SLACK_NS: after steps that were slow (client I/O competing for
 *    the members) the engine may catch up by one second's worth, not more;
 *  - the engine sleeps until the step is due, in slices, and stops
 *    sleeping when the limit is lifted or raised (clients went away, or
 *    raidctl set).
 * So under load the rebuild moves at the minimum (or as fast as the
 * members allow, if that is less), and every sleep is at most one step's
 * charge.  The rate shown in status is measured: bytes done over the
 * last 2 to 4 seconds, throttling sleeps included, so that the finish
 * estimate is what the user will see. */
bool
throttle(struct raid_array *a, struct sync_engine *e, uint64_t len, uint64_t step_lim,
         uint64_t *due, uint64_t *seen_ios, uint64_t *t_busy)
{
  uint64_t t = mono_ns(), limit;
  bool busy;

  if (step_lim == 0) {
    *due = t;
    return true;
  }
  if (*due + SYNC_SLACK_NS < t)
    *due = t - SYNC_SLACK_NS;
  *due += len * 1000000000ull / step_lim;
  while (t < *due) {
    if (!engine_sleep(e, MIN(*due - t, SYNC_SLICE_NS)))
      return false;
    t = mono_ns();
    limit = step_limit(a, e, seen_ios, t_busy, false, &busy);
    if (limit == 0 || limit > step_lim) {
      *due = t;
      break;
    }
  }
  return true;
}

/* The reshape's pace (sync/reshape.c calls reshape_go() before each
 * step): what a pass does after each step, for the reshape's steps.  Its
 * progress is in bytes of each member, as md's (the new shape's front),
 * so status, the rate and RebuildNN read as for a rebuild; it keeps the
 * rebuild's speed limits with the same throttle, and tells the reshape how
 * long a step may be under the limit that applies (a quarter of a
 * second's worth, as pass_plan()). */
struct pace {
  struct raid_array *a;
  struct sync_engine *e;
  bool started;
  uint64_t prev, step_lim, due, seen_ios, t_busy;
  struct sync_rate rate;
  int next_pct;
};

static bool
reshape_go(void *ctx, uint64_t done, uint64_t total, uint64_t *step_max)
{
  struct pace *x = ctx;
  struct raid_array *a = x->a;
  struct sync_engine *e = x->e;
  bool busy, go, first = !x->started;

  if (first) {
    x->started = true;
    x->prev = done;
    x->due = mono_ns();
    sync_rate_start(&x->rate, done, x->due);
    x->seen_ios = atomic_load(&a->user_ios);
    x->next_pct = total ? (int)(done * 5 / total) * 20 + 20 : 100;
  }
  for (; x->next_pct < 100 && done * 100 >= (uint64_t)x->next_pct * total; x->next_pct += 20)
    array_event(a, (struct raid_event){ .type = RAID_EVENT_REBUILD_PROGRESS, .role = -1,
                                        .action = RAID_SYNC_RESHAPE,
                                        .percent = x->next_pct });
  pthread_mutex_lock(&e->d.lock);
  e->done = done;
  e->total = total;
  pthread_mutex_unlock(&e->d.lock);
  if (done > x->prev && !throttle(a, e, done - x->prev, x->step_lim, &x->due, &x->seen_ios,
                                  &x->t_busy))
    return false;
  x->prev = done;
  sync_rate_update(e, &x->rate, done, mono_ns());
  pthread_mutex_lock(&e->d.lock);
  go = !e->d.quit && !e->paused;
  pthread_mutex_unlock(&e->d.lock);
  /* Whether clients are busy is not known before the first step: it
   * assumes they are (as pass_plan()). */
  x->step_lim = step_limit(a, e, &x->seen_ios, &x->t_busy, first, &busy);
  *step_max = x->step_lim / 4;
  return go;
}

/* The reshape, between md's events for it: RebuildStarted, RebuildNN and
 * RebuildFinished with the action "reshape" (mdadm --monitor names a
 * reshape's events so). */
int
run_reshape(struct raid_array *a, struct sync_engine *e, struct raid_queue *q)
{
  struct pace pace = { .a = a, .e = e };
  int r;

  array_event(a, (struct raid_event){ .type = RAID_EVENT_REBUILD_STARTED, .role = -1,
                                      .action = RAID_SYNC_RESHAPE });
  r = reshape_run(a, q, reshape_go, &pace);
  if (r == 0) {
    /* Done: a freeze that came too late holds nothing. */
    pthread_mutex_lock(&e->d.lock);
    e->reshape_frozen = false;
    pthread_mutex_unlock(&e->d.lock);
  }
  array_event(a, (struct raid_event){ .type = RAID_EVENT_REBUILD_FINISHED, .role = -1,
                                      .action = RAID_SYNC_RESHAPE, .result = r });
  return r;
}
