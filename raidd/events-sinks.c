/* Where events go besides raidctl monitor: raidd's log, --program PATH
 * (run as PATH EVENT ARRAY [MEMBER]) and --mailaddr (a mail through
 * sendmail -t), each event to each in turn, on the events thread
 * (events.c). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
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
#include "events-internal.h"
#include "deadline.h"

#define PROGRAM_SECONDS 60        /* --program and sendmail, each run */

extern char **environ;

static struct events_config cfg;
static char hostname[256];

int
events_sinks_init(const struct events_config *c)
{
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
  return 0;
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

void
events_deliver(const struct event *ev)
{
  bool loud = strcmp(ev->name, "Fail") == 0 || strcmp(ev->name, "FailSpare") == 0 ||
              strcmp(ev->name, "DegradedArray") == 0 ||
              strcmp(ev->name, "DeviceDisappeared") == 0 ||
              strcmp(ev->name, "SparesMissing") == 0;

  log_msg(loud ? RAID_LOG_WARNING : RAID_LOG_INFO, "event: %s %s%s%s", ev->name,
          ev->array, ev->member[0] ? " " : "", ev->member);
  events_to_streams(ev);
  if (cfg.program)
    to_program(ev);
  if (cfg.mailaddr && mailed(ev->name))
    to_mail(ev);
}
