/* Internals shared by the events' files, one section per file.  What the
 * rest of raidd sees is events.h. */
#ifndef RAIDD_EVENTS_INTERNAL_H
#define RAIDD_EVENTS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include <raid/raid.h>

#include "events.h"

/* ---- events.c: posting, the events thread ------------------------------- */

struct event {
  char name[24];                  /* md's: "Fail", "Rebuild40" */
  char array[64];
  char member[1024];              /* "" when none */
  char action[16];                /* rebuild events: "recover", "resync"... */
  int result;                     /* RebuildFinished */
  time_t time;
  bool check_spares;              /* not an event: look at ARRAY's spares */
};

/* Guards the queue of events (events.c) and the monitor streams
 * (events-monitor.c). */
extern pthread_mutex_t events_lock;
/* Queue EV for the events thread, from any thread (a full queue drops and
 * counts it). */
void events_enqueue(const struct event *ev);
/* The hot spares of A. */
unsigned events_count_spares(struct raid_array *a);

/* ---- events-sinks.c: the log, --program, --mailaddr ---------------------- */

/* Keep C and check its program and sendmail can run: 0, or -EINVAL
 * (logged). */
int events_sinks_init(const struct events_config *c);
/* On the events thread: EV to the log, every monitor stream, the program
 * and the mail, in this order. */
void events_deliver(const struct event *ev);

/* ---- events-monitor.c: raidctl monitor ---------------------------------- */

/* EV, as a JSON line, to every stream that follows its array. */
void events_to_streams(const struct event *ev);
/* Wake every stream (called under events_lock). */
void events_streams_wake(void);

#endif
