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
 * Where they go, in this order, for each event:
 *   1. raidd's log: "event: EVENT ARRAY [MEMBER]";
 *   2. every raidctl monitor following them (events_stream());
 *   3. --program PATH, run as PATH EVENT ARRAY [MEMBER] (mdadm's PROGRAM),
 *      waited for up to PROGRAM_SECONDS, then killed; a non-zero exit is
 *      logged;
 *   4. --mailaddr: a mail through sendmail -t for the events md mails
 *      (Fail, FailSpare, DegradedArray, SparesMissing, TestMessage, and
 *      DeviceDisappeared: here a member's disk, worth a mail), subject
 *      "EVENT event on ARRAY:HOSTNAME", the array's status in the body.
 *
 * Threads: the hook runs on the library's threads, possibly under its
 * locks, so posting only copies the event into a ring under queue_lock
 * and signals; one events thread takes them out in order and does the
 * rest (the program and sendmail run there: a slow one delays the events
 * after it, never I/O or the control socket).  A full ring drops the event
 * and counts it (logged).  Each raidctl monitor connection is served on
 * its control thread (events_stream()): it has a ring of its own, filled
 * by the events thread under queue_lock, and writes it out with a
 * deadline; a client that does not read in time, or whose ring fills, is
 * disconnected.  events_stop() drains the ring (arrays stopping report
 * their interrupted rebuilds) and ends the streams. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include <json-c/json.h>

#include "raidd.h"
#include "control.h"
#include "events.h"
#include "deadline.h"

#define QUEUE_LEN 1024            /* events waiting for the events thread */
#define STREAM_LEN 256            /* events waiting for one monitor client */
#define PROGRAM_SECONDS 60        /* --program and sendmail, each run */
#define STREAM_WRITE_SECONDS 10   /* a monitor client must take an event */
#define MAX_EXPECT 256            /* arrays with an expected spare count */

extern char **environ;

struct event {
  char name[24];                  /* md's: "Fail", "Rebuild40" */
  char array[64];
  char member[1024];              /* "" when none */
  char action[16];                /* rebuild events: "recover", "resync"... */
  int result;                     /* RebuildFinished */
  time_t time;
  bool check_spares;              /* not an event: look at ARRAY's spares */
};

struct stream {
  struct stream *next;
  char *names[RAID_MAX_MEMBERS];  /* arrays followed; none: all */
  unsigned nnames;
  char *lines[STREAM_LEN];        /* JSON lines not yet written */
  unsigned head, count;
  bool overflow;
};

static struct events_config cfg;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;    /* events thread */
static pthread_cond_t stream_cond = PTHREAD_COND_INITIALIZER;   /* streams */
static struct event queue[QUEUE_LEN];
static unsigned q_head, q_count, q_lost;
static bool running, quitting;
static bool streams_quit;          /* control_stop(): end the streams */
static pthread_t thread;
static struct stream *streams;
static char hostname[256];

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

static void
post(const struct event *ev)
{
  pthread_mutex_lock(&queue_lock);
  if (!running)
    ;                           /* not started, or stopped */
  else if (q_count == QUEUE_LEN)
    q_lost++;
  else {
    queue[(q_head + q_count++) % QUEUE_LEN] = *ev;
    pthread_cond_signal(&queue_cond);
  }
  pthread_mutex_unlock(&queue_lock);
}

void
events_post(const char *event, const char *array, const char *member)
{
  struct event ev = { .time = time(NULL) };

  snprintf(ev.name, sizeof ev.name, "%s", event);
  snprintf(ev.array, sizeof ev.array, "%s", array);
  snprintf(ev.member, sizeof ev.member, "%s", member ? member : "");
  post(&ev);
}

static void
check_spares_later(const char *array)
{
  struct event ev = { .check_spares = true };

  snprintf(ev.array, sizeof ev.array, "%s", array);
  post(&ev);
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
  post(&ev);
}

static unsigned
count_spares(struct raid_array *a)
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
  have = count_spares(export_array(e));
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

/* ---- the channels ----------------------------------------------------------- */

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

static void
to_streams(const struct event *ev)
{
  json_object *o = event_json(ev);
  const char *line = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
  struct stream *s;

  pthread_mutex_lock(&queue_lock);
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
  pthread_mutex_unlock(&queue_lock);
  json_object_put(o);
}

/* Start ARGV with stdin from IN_FD (-1: /dev/null) and signals as a
 * fresh process has them (raidd blocks SIGTERM and ignores SIGPIPE):
 * 0 and *PIDP, or -errno. */
static int
run_start(char *const *argv, int in_fd, pid_t *pidp)
{
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  sigset_t none, def;
  int err;

  posix_spawn_file_actions_init(&fa);
  if (in_fd >= 0)
    posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
  else
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_init(&attr);
  sigemptyset(&none);
  sigemptyset(&def);
  sigaddset(&def, SIGPIPE);
  sigaddset(&def, SIGTERM);
  sigaddset(&def, SIGINT);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &def);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  err = posix_spawn(pidp, argv[0], &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return -err;
}

/* Wait up to PROGRAM_SECONDS for PID: its wait status, or -ETIMEDOUT
 * (then it is killed), or -errno. */
static int
run_reap(pid_t pid)
{
  struct timespec deadline;
  int status;
  pid_t r;

  deadline_in(&deadline, PROGRAM_SECONDS);
  for (;;) {
    r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      return status;
    if (r < 0 && errno != EINTR)
      return -errno;
    if (deadline_ms_left(&deadline) == 0) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
      return -ETIMEDOUT;
    }
    usleep(10000);
  }
}

/* WHAT (for messages) ended with STATUS from run_reap(): log when not 0. */
static void
log_status(const char *what, const struct event *ev, int status)
{
  if (status == -ETIMEDOUT)
    log_warn("event %s %s: %s ran for more than %d seconds: killed", ev->name,
             ev->array, what, PROGRAM_SECONDS);
  else if (status < 0)
    log_warn("event %s %s: cannot run %s: %s", ev->name, ev->array, what, strerror(-status));
  else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    log_warn("event %s %s: %s exited with status %d", ev->name, ev->array, what,
             WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    log_warn("event %s %s: %s was killed by signal %d (%s)", ev->name, ev->array, what,
             WTERMSIG(status), strsignal(WTERMSIG(status)));
}

static void
to_program(const struct event *ev)
{
  char *argv[] = { (char *)cfg.program, (char *)ev->name, (char *)ev->array,
                   ev->member[0] ? (char *)ev->member : NULL, NULL };
  pid_t pid;
  int r = run_start(argv, -1, &pid);

  log_status(cfg.program, ev, r == 0 ? run_reap(pid) : r);
}

/* The events md mails (Monitor.c), and a member's disk gone. */
static bool
mailed(const char *name)
{
  static const char *const mail[] = {
    "Fail", "FailSpare", "DegradedArray", "SparesMissing", "TestMessage",
    "DeviceDisappeared",
  };
  size_t i;

  for (i = 0; i < sizeof mail / sizeof mail[0]; i++)
    if (strcmp(name, mail[i]) == 0)
      return true;
  return false;
}

/* The array's status for a mail: what raidctl detail shows, briefly. */
static void
status_text(FILE *f, const char *array)
{
  struct export *e = export_get(array);
  json_object *o, *ms, *m, *sync, *v;
  size_t i;

  if (e == NULL) {
    fprintf(f, "%s is not running.\n", array);
    return;
  }
  o = control_describe(e);
  export_put(e);
  fprintf(f, "%s : raid%d, %d roles, %s\n", array,
          json_object_get_int(json_object_object_get(o, "level")),
          json_object_get_int(json_object_object_get(o, "raid_disks")),
          json_object_get_boolean(json_object_object_get(o, "failed")) ? "FAILED: too many members lost" :
          json_object_get_int(json_object_object_get(o, "degraded")) ? "degraded" : "whole");
  ms = json_object_object_get(o, "members");
  for (i = 0; ms && i < json_object_array_length(ms); i++) {
    const char *path;

    m = json_object_array_get_idx(ms, i);
    path = json_object_object_get_ex(m, "path", &v) && v ? json_object_get_string(v) : "-";
    fprintf(f, "  role %2d  %-12s %s\n", json_object_get_int(json_object_object_get(m, "role")),
            json_object_get_string(json_object_object_get(m, "state")), path);
  }
  sync = json_object_object_get(o, "sync");
  if (sync && strcmp(json_object_get_string(json_object_object_get(sync, "action")), "idle")) {
    int64_t done = json_object_get_int64(json_object_object_get(sync, "done"));
    int64_t total = json_object_get_int64(json_object_object_get(sync, "total"));

    fprintf(f, "  %s = %.1f%% (%lld/%lld bytes per member)\n",
            json_object_get_string(json_object_object_get(sync, "action")),
            total ? 100.0 * done / total : 0.0, (long long)done, (long long)total);
  }
  json_object_put(o);
}

static void
to_mail(const struct event *ev)
{
  char *argv[] = { (char *)cfg.sendmail, "-t", NULL };
  char *msg = NULL;
  size_t len = 0, done = 0;
  FILE *f = open_memstream(&msg, &len);
  int p[2], r;
  pid_t pid;

  if (f == NULL)
    return;
  if (cfg.mailfrom)
    fprintf(f, "From: %s\n", cfg.mailfrom);
  else
    fprintf(f, "From: raidd monitoring <root>\n");
  fprintf(f, "To: %s\n", cfg.mailaddr);
  fprintf(f, "Subject: %s event on %s:%s\n", ev->name, ev->array, hostname);
  fprintf(f, "Auto-Submitted: auto-generated\n\n");
  fprintf(f, "This is an automatically generated mail message from raidd\n"
          "running on %s\n\n", hostname);
  fprintf(f, "A %s event had been detected on array %s.\n\n", ev->name, ev->array);
  if (ev->member[0])
    fprintf(f, "It could be related to component device %s.\n\n", ev->member);
  fprintf(f, "Faithfully yours, etc.\n\nP.S. The array's status now (raidctl detail %s):\n\n",
          ev->array);
  status_text(f, ev->array);
  fclose(f);
  if (pipe2(p, O_CLOEXEC) < 0) {
    log_warn("event %s %s: cannot mail %s: %m", ev->name, ev->array, cfg.mailaddr);
    free(msg);
    return;
  }
  r = run_start(argv, p[0], &pid);
  close(p[0]);
  if (r == 0) {
    /* A mail is a few KiB: the pipe takes it whole; a sendmail that
     * exits early makes the write fail (EPIPE, SIGPIPE is ignored). */
    while (done < len) {
      ssize_t w = write(p[1], msg + done, len - done);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        break;
      done += w;
    }
    close(p[1]);
    r = run_reap(pid);
  }
  else
    close(p[1]);
  log_status(cfg.sendmail, ev, r);
  free(msg);
}

static void
deliver(const struct event *ev)
{
  bool loud = strcmp(ev->name, "Fail") == 0 || strcmp(ev->name, "FailSpare") == 0 ||
              strcmp(ev->name, "DegradedArray") == 0 ||
              strcmp(ev->name, "DeviceDisappeared") == 0 ||
              strcmp(ev->name, "SparesMissing") == 0;

  log_msg(loud ? RAID_LOG_WARNING : RAID_LOG_INFO, "event: %s %s%s%s", ev->name,
          ev->array, ev->member[0] ? " " : "", ev->member);
  to_streams(ev);
  if (cfg.program)
    to_program(ev);
  if (cfg.mailaddr && mailed(ev->name))
    to_mail(ev);
}

static void *
events_thread(void *arg)
{
  struct event ev;
  unsigned lost;

  (void)arg;
  pthread_mutex_lock(&queue_lock);
  for (;;) {
    while (q_count == 0 && !quitting && q_lost == 0)
      pthread_cond_wait(&queue_cond, &queue_lock);
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
    pthread_mutex_unlock(&queue_lock);
    if (lost)
      log_warn("events: %u event%s lost: they came faster than they could be "
               "delivered", lost, lost == 1 ? "" : "s");
    if (ev.check_spares)
      check_spares(ev.array);
    else if (ev.name[0]) {
      deliver(&ev);
      /* A change of members may leave the array short of spares. */
      if (strcmp(ev.name, "NewArray") && strcmp(ev.name, "TestMessage") &&
          strcmp(ev.name, "SparesMissing") && strcmp(ev.name, "DegradedArray"))
        check_spares(ev.array);
    }
    pthread_mutex_lock(&queue_lock);
  }
  pthread_mutex_unlock(&queue_lock);
  return NULL;
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
  post(&ev);
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
  if (want > 0 && count_spares(a) < (unsigned)want)
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
  pthread_mutex_lock(&queue_lock);
  s->next = streams;
  streams = s;
  pthread_mutex_unlock(&queue_lock);
  send_reply(fd, rep);
  if (ctl_get_bool(req, "test")) {
    c.names = names;
    c.list = NULL;
    exports_foreach(state_of, &c);
  }

  pthread_mutex_lock(&queue_lock);
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
      pthread_mutex_unlock(&queue_lock);
      gone = write_line(fd, line) < 0;
      free(line);
      pthread_mutex_lock(&queue_lock);
      continue;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&stream_cond, &queue_lock, &ts);
    if (s->count == 0) {
      pthread_mutex_unlock(&queue_lock);
      gone = client_gone(fd);
      pthread_mutex_lock(&queue_lock);
    }
  }
  for (pp = &streams; *pp != s; pp = &(*pp)->next)
    ;
  *pp = s->next;
  pthread_mutex_unlock(&queue_lock);
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
  pthread_mutex_lock(&queue_lock);
  streams_quit = true;
  pthread_cond_broadcast(&stream_cond);
  pthread_mutex_unlock(&queue_lock);
}

/* ---- start, stop ---------------------------------------------------------------- */

int
events_start(const struct events_config *c)
{
  int err;

  cfg = *c;
  if (cfg.sendmail == NULL)
    cfg.sendmail = "/usr/sbin/sendmail";
  if (cfg.program && access(cfg.program, X_OK) < 0) {
    log_err("--program %s: %m: it must be a program raidd can run", cfg.program);
    return -EINVAL;
  }
  if (cfg.mailaddr && access(cfg.sendmail, X_OK) < 0) {
    log_err("--mailaddr %s: cannot run %s to send mail: %m (give --sendmail PATH)",
            cfg.mailaddr, cfg.sendmail);
    return -EINVAL;
  }
  if (gethostname(hostname, sizeof hostname - 1) < 0)
    strcpy(hostname, "localhost");
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
  pthread_mutex_lock(&queue_lock);
  quitting = true;
  pthread_cond_broadcast(&queue_cond);
  pthread_cond_broadcast(&stream_cond);
  pthread_mutex_unlock(&queue_lock);
  pthread_join(thread, NULL);
  pthread_mutex_lock(&queue_lock);
  running = false;
  pthread_mutex_unlock(&queue_lock);
}
