/* Events: md's mdadm --monitor events, to the log, raidctl monitor, a
 * program and mail (events.c, events-sinks.c, events-monitor.c). */
#ifndef RAIDD_EVENTS_H
#define RAIDD_EVENTS_H

#include <stdbool.h>

#include <json-c/json.h>
#include <raid/raid.h>

/* ---- events.c: posting, the events thread ------------------------------- */

/* Where events go besides the log and raidctl monitor (events-sinks.c). */
struct events_config {
  const char *program;          /* --program PATH, or NULL */
  const char *mailaddr;         /* --mailaddr ADDR, or NULL */
  const char *mailfrom;         /* --mailfrom ADDR, or NULL: "raidd monitoring <root>" */
  const char *sendmail;         /* --sendmail PATH, NULL: /usr/sbin/sendmail */
};

/* Check the program and sendmail can run, start the events thread: 0, or
 * -errno (logged). */
int events_start(const struct events_config *cfg);
/* Deliver what is queued, then stop the thread (after every array has
 * stopped: they report interrupted rebuilds). */
void events_stop(void);
/* Post md's EVENT for ARRAY (MEMBER may be NULL), from any thread. */
void events_post(const char *event, const char *array, const char *member);
/* Array A has just started in raidd: follow its library events, report
 * NewArray, DegradedArray when it is, SparesMissing when it is short. */
void events_array_started(struct raid_array *a);
/* mdadm.conf's spares=N for ARRAY (running or not): SparesMissing when it
 * has, or comes to have, fewer hot spares.  0 or -errno. */
int events_set_expected_spares(const char *array, int n);
int events_expected_spares(const char *array);

/* ---- events-monitor.c: raidctl monitor ---------------------------------- */

/* {"verb": "monitor", "names": [...], "oneshot": bool, "test": bool}:
 * with oneshot the reply lists the events reported (TestMessage for each
 * array with test, else its standing DegradedArray and SparesMissing);
 * without, the reply carries "stream": true and control.c then hands the
 * connection to events_stream(). */
json_object *do_monitor(json_object *req);
/* Send REP (without its "stream" field), then every event for the arrays
 * REQ names as one JSON line each, until the client goes or
 * events_end_streams(); with "test", a TestMessage for each array first. */
void events_stream(int fd, json_object *req, json_object *rep);
/* control_stop(): every events_stream() returns soon. */
void events_end_streams(void);

#endif
