/* Events: what happens to an array's members and its sync engine, handed
 * to the application as it happens (md's mdadm --monitor events).
 *
 * A poller that compares states from time to time (mdadm reading
 * /proc/mdstat) misses what comes and goes between two looks: a spare
 * that takes a role and fails, a rebuild that starts and ends.  So the
 * library calls a handler at the places where states change:
 *   - array.c, a role failing: Fail (it was in sync) or FailSpare (it was
 *     being rebuilt), then DegradedArray when it was the first role of
 *     the array to go; a replacement failing: FailSpare;
 *   - the sync engine (sync/pass.c, and pace.c for a reshape):
 *     RebuildStarted as an action begins,
 *     Rebuild20/40/60/80 as its progress crosses each fifth (each step
 *     crossed is reported, also when one sync step crosses several),
 *     RebuildFinished when it ends (done or stopped, with its result),
 *     then SpareActive for each member the recovery brought into sync.
 *
 * Locking: the handler and its argument are guarded by ev_lock, which is
 * taken last, under whatever lock the caller holds (conf_lock, the engine
 * lock): so the handler must only copy the event and return, never call
 * into the library (raidd queues it for a thread of its own).  Holding
 * ev_lock across the call lets raid_array_set_event_handler() promise
 * that the old handler is done once it returns. */
#include <config.h>

#include <pthread.h>

#include "internal.h"

void
events_init(struct raid_array *a)
{
  pthread_mutex_init(&a->ev_lock, NULL);
  a->ev_fn = NULL;
  a->ev_opaque = NULL;
}

void
events_destroy(struct raid_array *a)
{
  pthread_mutex_destroy(&a->ev_lock);
}

EXPORT void
raid_array_set_event_handler(struct raid_array *a, raid_event_fn fn, void *opaque)
{
  pthread_mutex_lock(&a->ev_lock);
  a->ev_fn = fn;
  a->ev_opaque = opaque;
  pthread_mutex_unlock(&a->ev_lock);
}

void
array_event(struct raid_array *a, struct raid_event ev)
{
  ev.array = a->name;
  pthread_mutex_lock(&a->ev_lock);
  if (a->ev_fn)
    a->ev_fn(a->ev_opaque, &ev);
  pthread_mutex_unlock(&a->ev_lock);
}

EXPORT const char *
raid_event_name(const struct raid_event *ev)
{
  switch (ev->type) {
  case RAID_EVENT_FAIL: return "Fail";
  case RAID_EVENT_FAIL_SPARE: return "FailSpare";
  case RAID_EVENT_DEGRADED: return "DegradedArray";
  case RAID_EVENT_SPARE_ACTIVE: return "SpareActive";
  case RAID_EVENT_REBUILD_STARTED: return "RebuildStarted";
  case RAID_EVENT_REBUILD_FINISHED: return "RebuildFinished";
  case RAID_EVENT_REBUILD_PROGRESS:
    switch (ev->percent) {
    case 20: return "Rebuild20";
    case 40: return "Rebuild40";
    case 60: return "Rebuild60";
    case 80: return "Rebuild80";
    default: return "Rebuild";
    }
  default: return "Unknown";
  }
}
