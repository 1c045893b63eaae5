/* Events: telling someone that a disk died (md's mdadm --monitor).
 *
 * Where events come from:
 *   - the library's event hook (raid_array_set_event_handler(), see
 *     libraid(3)), set on every array raidd starts: Fail, FailSpare,
 *     DegradedArray (the array lost its first role), RebuildStarted,
 *     Rebuild20/40/60/80, RebuildFinished, SpareActive, as they happen;
 *   - raidd itself: NewArray and, when so, DegradedArray as an array
 *     starts (events_array_started()); DeviceDisappeared when a member's
 *     device is removed from the system (udev-watch.c); SparesMissing when
 *     an array has fewer hot spares than expected (the count is set with
 *     events_set_expected_spares(): raidctl set NAME spares-expected=N, or
 *     a configuration file); TestMessage for raidctl monitor --test.
 *
 * Where they go, in this order, for each event (events_deliver(),
 * events-sinks.c):
 *   1. raidd's log: "event: EVENT ARRAY [MEMBER]";
 *   2. every raidctl monitor following them (events_stream(),
 *      events-monitor.c);
 *   3. --program PATH, run as PATH EVENT ARRAY [MEMBER] (mdadm's PROGRAM),
 *      waited for up to PROGRAM_SECONDS, then killed; a non-zero exit is
 *      logged;
 *   4. --mailaddr: a mail through sendmail -t for the events md mails
 *      (Fail, FailSpare, DegradedArray, SparesMissing, TestMessage, and
 *      DeviceDisappeared: here a member's disk, worth a mail), subject
 *      "EVENT event on ARRAY:HOSTNAME", the array's status in the body.
 *
 * Threads: the hook runs on the library's threads, possibly under its
 * locks, so posting only copies the event into a ring under events_lock
 * and signals; one events thread takes them out in order and does the
 * rest (the program and sendmail run there: a slow one delays the events
 * after it, never I/O or the control socket).  A full ring drops the event
 * and counts it (logged).  Each raidctl monitor connection is served on
 * its control thread (events_stream()): it has a ring of its own, filled
 * by the events thread under events_lock, and writes it out with a
 * deadline; a client that does not read in time, or whose ring fills, is
 * disconnected.  events_stop() drains the ring (arrays stopping report
 * their interrupted rebuilds) and ends the streams. */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "raidd.h"
#include "events.h"
#include "events-internal.h"

#define QUEUE_LEN 1024            /* events waiting for the events thread */
#define MAX_EXPECT 256            /* arrays with an expected spare count */

/* The queue's, and the streams' (events-monitor.c). */
pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;    /* events thread */
static struct event queue[QUEUE_LEN];
static unsigned q_head, q_count, q_lost;
static bool running, quitting;
static pthread_t thread;

/* Expected spares, by array name, and whether each is short now (so that
 * SparesMissing is reported when it becomes so, not at every look). */
static pthread_mutex_t expect_lock = PTHREAD_MUTEX_INITIALIZER;
static struct expect {
  char array[64];
  int spares;
  bool short_now;
} expect[MAX_EXPECT];
static unsigned nexpect;

static struct expect *find_expect(const char *array);

/* ---- posting ------------------------------------------------------------- */

void
events_enqueue(const struct event *ev)
{
  pthread_mutex_lock(&events_lock);
  if (!running)
    ;                           /* not started, or stopped */
  else if (q_count == QUEUE_LEN)
    q_lost++;
  else {
    queue[(q_head + q_count++) % QUEUE_LEN] = *ev;
    pthread_cond_signal(&queue_cond);
  }
  pthread_mutex_unlock(&events_lock);
}

void
events_post(const char *event, const char *array, const char *member)
{
  struct event ev = { .time = time(NULL) };

  snprintf(ev.name, sizeof ev.name, "%s", event);
  snprintf(ev.array, sizeof ev.array, "%s", array);
  snprintf(ev.member, sizeof ev.member, "%s", member ? member : "");
  events_enqueue(&ev);
}

static void
check_spares_later(const char *array)
{
  struct event ev = { .check_spares = true };

  snprintf(ev.array, sizeof ev.array, "%s", array);
  events_enqueue(&ev);
}

/* The library's hook: copy and return (see libraid(3)). */
static void
lib_event(void *opaque, const struct raid_event *e)
{
  struct event ev = { .time = time(NULL), .result = e->result };

  (void)opaque;
  snprintf(ev.name, sizeof ev.name, "%s", raid_event_name(e));
  snprintf(ev.array, sizeof ev.array, "%s", e->array);
  snprintf(ev.member, sizeof ev.member, "%s", e->member ? e->member : "");
  if (e->type == RAID_EVENT_REBUILD_STARTED || e->type == RAID_EVENT_REBUILD_PROGRESS ||
      e->type == RAID_EVENT_REBUILD_FINISHED)
    snprintf(ev.action, sizeof ev.action, "%s", raid_sync_action_name(e->action));
  events_enqueue(&ev);
}

unsigned
events_count_spares(struct raid_array *a)
{
  struct raid_member_info info[RAID_MAX_MEMBERS * 3];
  unsigned i, n, spares = 0;

  n = raid_array_members(a, info, RAID_MAX_MEMBERS * 3);
  for (i = 0; i < n && i < RAID_MAX_MEMBERS * 3; i++)
    if (info[i].state == RAID_MEMBER_SPARE)
      spares++;
  return spares;
}

void
events_array_started(struct raid_array *a)
{
  const char *name = raid_array_name(a);

  struct expect *x;

  raid_array_set_event_handler(a, lib_event, NULL);
  /* md reports SparesMissing as it first sees an array. */
  pthread_mutex_lock(&expect_lock);
  if ((x = find_expect(name)) != NULL)
    x->short_now = false;
  pthread_mutex_unlock(&expect_lock);
  events_post("NewArray", name, NULL);
  if (raid_array_degraded(a))
    events_post("DegradedArray", name, NULL);
  check_spares_later(name);
}

/* ---- expected spares ------------------------------------------------------ */

static struct expect *
find_expect(const char *array)
{
  unsigned i;

  for (i = 0; i < nexpect; i++)
    if (strcmp(expect[i].array, array) == 0)
      return &expect[i];
  return NULL;
}

int
events_set_expected_spares(const char *array, int n)
{
  struct expect *x;

  if (n < 0 || n > RAID_MAX_MEMBERS)
    return -EINVAL;
  if (strlen(array) >= sizeof expect[0].array)
    return -ENAMETOOLONG;
  pthread_mutex_lock(&expect_lock);
  x = find_expect(array);
  if (x == NULL && nexpect < MAX_EXPECT) {
    x = &expect[nexpect++];
    snprintf(x->array, sizeof x->array, "%s", array);
  }
  if (x) {
    x->spares = n;
    x->short_now = false;       /* a new expectation: report anew */
  }
  pthread_mutex_unlock(&expect_lock);
  if (x == NULL)
    return -ENOSPC;
  check_spares_later(array);
  return 0;
}

int
events_expected_spares(const char *array)
{
  struct expect *x;
  int n;

  pthread_mutex_lock(&expect_lock);
  x = find_expect(array);
  n = x ? x->spares : 0;
  pthread_mutex_unlock(&expect_lock);
  return n;
}

/* On the events thread: SparesMissing when ARRAY, running, has become
 * short of its expected spares. */
static void
check_spares(const char *array)
{
  struct export *e = export_get(array);
  struct expect *x;
  bool report = false;
  unsigned have;

  if (e == NULL)
    return;
  have = events_count_spares(export_array(e));
  export_put(e);
  pthread_mutex_lock(&expect_lock);
  x = find_expect(array);
  if (x && x->spares > 0) {
    bool now = have < (unsigned)x->spares;

    report = now && !x->short_now;
    x->short_now = now;
  }
  pthread_mutex_unlock(&expect_lock);
  if (report)
    events_post("SparesMissing", array, NULL);
}

/* ---- the events thread ------------------------------------------------------ */

static void *
events_thread(void *arg)
{
  struct event ev;
  unsigned lost;

  (void)arg;
  pthread_mutex_lock(&events_lock);
  for (;;) {
    while (q_count == 0 && !quitting && q_lost == 0)
      pthread_cond_wait(&queue_cond, &events_lock);
    lost = q_lost;
    q_lost = 0;
    if (q_count == 0 && lost == 0)
      break;                    /* quitting, and drained */
    if (q_count) {
      ev = queue[q_head];
      q_head = (q_head + 1) % QUEUE_LEN;
      q_count--;
    }
    else
      ev.name[0] = '\0', ev.check_spares = false, ev.array[0] = '\0';
    pthread_mutex_unlock(&events_lock);
    if (lost)
      log_warn("events: %u event%s lost: they came faster than they could be "
               "delivered", lost, lost == 1 ? "" : "s");
    if (ev.check_spares)
      check_spares(ev.array);
    else if (ev.name[0]) {
      /* A reshape's end: the devices first, so that whoever the event
       * reaches finds the new size. */
      if (strcmp(ev.name, "RebuildFinished") == 0 && strcmp(ev.action, "reshape") == 0 &&
          ev.result == 0)
        grow_reshape_done(ev.array);
      events_deliver(&ev);
      /* A change of members may leave the array short of spares. */
      if (strcmp(ev.name, "NewArray") && strcmp(ev.name, "TestMessage") &&
          strcmp(ev.name, "SparesMissing") && strcmp(ev.name, "DegradedArray"))
        check_spares(ev.array);
    }
    pthread_mutex_lock(&events_lock);
  }
  pthread_mutex_unlock(&events_lock);
  return NULL;
}

/* ---- start, stop ---------------------------------------------------------------- */

int
events_start(const struct events_config *c)
{
  int err;

  if ((err = events_sinks_init(c)) < 0)
    return err;
  running = true;
  quitting = false;
  if ((err = pthread_create(&thread, NULL, events_thread, NULL)) != 0) {
    running = false;
    log_err("events: cannot start their thread: %s", strerror(err));
    return -err;
  }
  return 0;
}

void
events_stop(void)
{
  if (!running)
    return;
  pthread_mutex_lock(&events_lock);
  quitting = true;
  pthread_cond_broadcast(&queue_cond);
  events_streams_wake();
  pthread_mutex_unlock(&events_lock);
  pthread_join(thread, NULL);
  pthread_mutex_lock(&events_lock);
  running = false;
  pthread_mutex_unlock(&events_lock);
}
