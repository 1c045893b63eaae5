/* raidctl monitor: the monitor verb (its oneshot reply, its test
 * messages) and the streams that follow events as they come, each on its
 * client's control thread, fed by the events thread (events.c). */
#include <config.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "raidd.h"
#include "control.h"
#include "events.h"
#include "events-internal.h"
#include "deadline.h"

#define STREAM_LEN 256            /* events waiting for one monitor client */
#define STREAM_WRITE_SECONDS 10   /* a monitor client must take an event */

struct stream {
  struct stream *next;
  char *names[RAID_MAX_MEMBERS];  /* arrays followed; none: all */
  unsigned nnames;
  char *lines[STREAM_LEN];        /* JSON lines not yet written */
  unsigned head, count;
  bool overflow;
};

/* Under events_lock (events.c). */
static pthread_cond_t stream_cond = PTHREAD_COND_INITIALIZER;   /* streams */
static bool streams_quit;          /* control_stop(): end the streams */
static struct stream *streams;

/* ---- the streams ------------------------------------------------------------ */

static json_object *
event_json(const struct event *ev)
{
  json_object *o = json_object_new_object();

  json_object_object_add(o, "time", json_object_new_int64(ev->time));
  json_object_object_add(o, "event", json_object_new_string(ev->name));
  json_object_object_add(o, "array", json_object_new_string(ev->array));
  if (ev->member[0])
    json_object_object_add(o, "member", json_object_new_string(ev->member));
  if (ev->action[0])
    json_object_object_add(o, "action", json_object_new_string(ev->action));
  if (strcmp(ev->name, "RebuildFinished") == 0)
    json_object_object_add(o, "result", json_object_new_int(ev->result));
  return o;
}

static bool
stream_wants(const struct stream *s, const char *array)
{
  unsigned i;

  for (i = 0; i < s->nnames; i++)
    if (strcmp(s->names[i], array) == 0)
      return true;
  return s->nnames == 0;
}

void
events_to_streams(const struct event *ev)
{
  json_object *o = event_json(ev);
  const char *line = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
  struct stream *s;

  pthread_mutex_lock(&events_lock);
  for (s = streams; s; s = s->next) {
    char *copy;

    if (!stream_wants(s, ev->array))
      continue;
    if (s->count == STREAM_LEN || (copy = strdup(line)) == NULL) {
      s->overflow = true;
      continue;
    }
    s->lines[(s->head + s->count++) % STREAM_LEN] = copy;
  }
  pthread_cond_broadcast(&stream_cond);
  pthread_mutex_unlock(&events_lock);
  json_object_put(o);
}

void
events_streams_wake(void)
{
  pthread_cond_broadcast(&stream_cond);
}

/* ---- monitor requests --------------------------------------------------------- */

struct collect {
  json_object *names;           /* arrays asked for, or NULL */
  json_object *list;            /* events reported */
  bool test;
};

static bool
named(json_object *names, const char *array)
{
  size_t i;

  if (names == NULL)
    return true;
  for (i = 0; i < json_object_array_length(names); i++)
    if (strcmp(json_object_get_string(json_object_array_get_idx(names, i)), array) == 0)
      return true;
  return false;
}

static void
report(struct collect *c, const char *event, const char *array)
{
  struct event ev = { .time = time(NULL) };

  snprintf(ev.name, sizeof ev.name, "%s", event);
  snprintf(ev.array, sizeof ev.array, "%s", array);
  events_enqueue(&ev);
  if (c->list)
    json_object_array_add(c->list, event_json(&ev));
}

/* --oneshot: the arrays' standing state; --test: a TestMessage each. */
static void
state_of(struct export *e, void *opaque)
{
  struct collect *c = opaque;
  struct raid_array *a = export_array(e);
  const char *name = export_name(e);
  int want;

  if (!named(c->names, name))
    return;
  if (c->test) {
    report(c, "TestMessage", name);
    return;
  }
  if (raid_array_degraded(a))
    report(c, "DegradedArray", name);
  want = events_expected_spares(name);
  if (want > 0 && events_count_spares(a) < (unsigned)want)
    report(c, "SparesMissing", name);
}

/* The names of a monitor request must be running arrays: NULL, or the
 * error reply. */
static json_object *
check_names(json_object *names)
{
  size_t i;

  for (i = 0; names && i < json_object_array_length(names); i++) {
    const char *n = json_object_get_string(json_object_array_get_idx(names, i));
    struct export *e = export_get(n);

    if (e == NULL)
      return ctl_fail("monitor: array %s is not running", n);
    export_put(e);
  }
  return NULL;
}

json_object *
do_monitor(json_object *req)
{
  struct collect c = { .test = ctl_get_bool(req, "test") };
  json_object *r;

  json_object_object_get_ex(req, "names", &c.names);
  if ((r = check_names(c.names)) != NULL)
    return r;
  r = ctl_ok();
  if (!ctl_get_bool(req, "oneshot")) {
    /* control.c hands the connection to events_stream(). */
    json_object_object_add(r, "stream", json_object_new_boolean(1));
    return r;
  }
  c.list = json_object_new_array();
  exports_foreach(state_of, &c);
  json_object_object_add(r, "events", c.list);
  return r;
}

/* Write LINE and a newline to FD within STREAM_WRITE_SECONDS: 0 or -1. */
static int
write_line(int fd, const char *line)
{
  size_t len = strlen(line), done = 0;
  struct timespec deadline;
  char *buf = malloc(len + 1);
  int r = 0;

  if (buf == NULL)
    return -1;
  memcpy(buf, line, len);
  buf[len++] = '\n';
  deadline_in(&deadline, STREAM_WRITE_SECONDS);
  while (done < len) {
    ssize_t w = write(fd, buf + done, len - done);
    struct pollfd p = { .fd = fd, .events = POLLOUT };
    int64_t ms;

    if (w > 0) {
      done += w;
      continue;
    }
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      r = -1;
      break;
    }
    ms = deadline_ms_left(&deadline);
    if (ms == 0 || poll(&p, 1, ms > 1000 ? 1000 : (int)ms) < 0) {
      r = -1;
      break;
    }
  }
  free(buf);
  return r;
}

/* Whether the client closed its end (or sent something: it may not). */
static bool
client_gone(int fd)
{
  struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };

  return poll(&p, 1, 0) != 0;
}

void
events_stream(int fd, json_object *req, json_object *rep)
{
  struct stream *s = calloc(1, sizeof *s), **pp;
  json_object *names = NULL;
  struct collect c = { .test = true };
  bool gone = false;
  size_t i;

  if (s == NULL) {
    json_object *err = ctl_fail("monitor: out of memory");
    send_reply(fd, err);
    json_object_put(err);
    return;
  }
  if (json_object_object_get_ex(req, "names", &names))
    for (i = 0; i < json_object_array_length(names) && i < RAID_MAX_MEMBERS; i++)
      s->names[s->nnames++] = strdup(json_object_get_string(json_object_array_get_idx(names, i)));
  json_object_object_del(rep, "stream");
  pthread_mutex_lock(&events_lock);
  s->next = streams;
  streams = s;
  pthread_mutex_unlock(&events_lock);
  send_reply(fd, rep);
  if (ctl_get_bool(req, "test")) {
    c.names = names;
    c.list = NULL;
    exports_foreach(state_of, &c);
  }

  pthread_mutex_lock(&events_lock);
  while (!gone && !streams_quit) {
    struct timespec ts;

    if (s->overflow) {
      log_warn("monitor: a client did not keep up with the events: disconnected");
      break;
    }
    if (s->count) {
      char *line = s->lines[s->head];

      s->head = (s->head + 1) % STREAM_LEN;
      s->count--;
      pthread_mutex_unlock(&events_lock);
      gone = write_line(fd, line) < 0;
      free(line);
      pthread_mutex_lock(&events_lock);
      continue;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&stream_cond, &events_lock, &ts);
    if (s->count == 0) {
      pthread_mutex_unlock(&events_lock);
      gone = client_gone(fd);
      pthread_mutex_lock(&events_lock);
    }
  }
  for (pp = &streams; *pp != s; pp = &(*pp)->next)
    ;
  *pp = s->next;
  pthread_mutex_unlock(&events_lock);
  while (s->count) {
    free(s->lines[s->head]);
    s->head = (s->head + 1) % STREAM_LEN;
    s->count--;
  }
  for (i = 0; i < s->nnames; i++)
    free(s->names[i]);
  free(s);
}

void
events_end_streams(void)
{
  pthread_mutex_lock(&events_lock);
  streams_quit = true;
  pthread_cond_broadcast(&stream_cond);
  pthread_mutex_unlock(&events_lock);
}
