/* The control socket: raidctl talks to raidd here.
 *
 * A Unix stream socket (root-only: mode 0600 and the peer's credentials
 * checked with SO_PEERCRED).  Each connection carries one request, one
 * JSON object on one line, and gets one JSON reply line:
 *   {"verb": "assemble", "members": [...], "name": "md0", "run": false,
 *    "force": false}
 *   {"verb": "stop", "name": "md0", "force": false}
 *     (assemble.c)
 *   {"verb": "status"}            {"verb": "detail", "name": "md0"}
 *   {"verb": "stats", "name": "md0", "reset": false}
 *     (describe.c)
 *   {"verb": "ublk", "name": "md0"}  {"verb": "unublk", "name": "md0", "force": false}
 *     (ublk.c: the array as /dev/ublkbN)
 * the drill verbs of manage.c (fail, remove, add, replace, sync, set),
 * and {"verb": "incremental", "member": PATH} (incremental.c),
 * and {"verb": "monitor", ...} (events-monitor.c: with "oneshot" one
 * reply; else the reply, then one line per event for as long as the
 * client stays),
 * and the reply is {"ok": true, ...} or {"ok": false, "error": "..."},
 * the error naming what was wrong.
 *
 * The line is parsed as strict JSON, and a request with a key twice in
 * any of its objects is refused, naming the key (control-parse.c).
 * Every field of a request is checked against its verb's table
 * (control-fields.c) before the verb runs: its type, its range, no NUL in
 * a string, no field the verb does not know.
 *
 * Each connection is served on a thread of its own (at most MAX_CLIENTS at
 * once), so a client that connects and sends nothing, or half a request,
 * holds up no one: its request must be complete within REQUEST_SECONDS and
 * at most MAX_REQUEST bytes, and its reply is given up after
 * REPLY_SECONDS.  Reading and writing happen outside the manage lock; the
 * verbs themselves run one at a time under it (control_lock()), as they
 * change arrays and assembly does synchronous metadata I/O.  See "The
 * socket" for how control_stop() ends it all. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <json-c/json.h>

#include "raidd.h"
#include "control.h"
#include "deadline.h"
#include "events.h"

#define MAX_REQUEST (1 << 20)     /* bytes of one request */
#define MAX_CLIENTS 64            /* connections served at once */
#define REQUEST_SECONDS 10        /* to send a whole request */
#define REPLY_SECONDS 10          /* to take the whole reply */

static int listen_fd = -1;
static pthread_t accept_thread;
static bool serving;                /* accept_thread runs */
static char sock_path[108];
/* Requests change arrays one at a time; so do members coming back (a
 * uevent, on udev-watch's thread): the two never interleave. */
static pthread_mutex_t manage_mutex = PTHREAD_MUTEX_INITIALIZER;

void control_lock(void) { pthread_mutex_lock(&manage_mutex); }
void control_unlock(void) { pthread_mutex_unlock(&manage_mutex); }

json_object *
control_request(json_object *req)
{
  json_object *rep;

  control_lock();
  rep = control_dispatch(req);
  control_unlock();
  return rep;
}

/* ---- the socket ------------------------------------------------------------------ */

/* One thread accepts connections and starts a detached thread for each
 * (client_thread()), up to MAX_CLIENTS at once; beyond that a connection
 * is answered "busy" and closed.  A client thread reads the request (poll
 * with a deadline, on a non-blocking socket), runs the verb under
 * control_lock(), writes the reply (with a deadline too) and closes.
 *
 * clients_lock guards the list of clients, each one's state and
 * "stopping".  control_stop() closes the listening socket, joins the
 * accepting thread, then sets "stopping" and shuts down the socket of
 * every client still READING (stalled, or slow: it is not waited for), so
 * that its read ends at once.  A client thread moves from READING to
 * RUNNING under the lock, and only while not stopping: a request that
 * started running finishes and is answered, and control_stop() waits on
 * clients_gone until the last client thread has left the list.  A thread
 * closes its socket only after it left the list, so control_stop() never
 * shuts down a descriptor that has been reused.  A monitor request goes on
 * STREAMING events (events_stream()) after its reply: control_stop() ends
 * those streams and shuts their sockets down too, so that a client that
 * does not read holds up nothing. */
enum client_state { READING, RUNNING, STREAMING };

struct client {
  struct client *next;
  int fd;
  enum client_state state;
};

static pthread_mutex_t clients_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t clients_gone = PTHREAD_COND_INITIALIZER;
static struct client *clients;
static unsigned nclients;
static bool stopping;

/* Milliseconds left until DEADLINE, as poll() takes them. */
static int
ms_left(const struct timespec *deadline)
{
  int64_t ms = deadline_ms_left(deadline);

  return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* Wait until FD is ready for EVENTS: 0, or -ETIMEDOUT, or -errno. */
static int
wait_fd(int fd, short events, const struct timespec *deadline)
{
  struct pollfd p = { .fd = fd, .events = events };
  int r;

  for (;;) {
    r = poll(&p, 1, ms_left(deadline));
    if (r > 0)
      return 0;
    if (r == 0)
      return -ETIMEDOUT;
    if (errno != EINTR)
      return -errno;
  }
}

/* Read one request (up to a newline, or the end) into *BUFP.  Its length
 * (0: the client sent nothing, as raidctl does to see if we are up), or
 * -1 with *REP set to the error reply (NULL: none can be sent). */
static ssize_t
read_request(int fd, char **bufp, json_object **rep)
{
  struct timespec deadline;
  size_t got = 0, cap = 0;
  char *buf = NULL, *bigger;
  ssize_t r;

  *rep = NULL;
  deadline_in(&deadline, REQUEST_SECONDS);
  while (got == 0 || buf[got - 1] != '\n') {
    if (got == MAX_REQUEST) {
      *rep = ctl_fail("request too large: more than %d bytes (1 MiB), the limit of "
                  "raidd's control socket", MAX_REQUEST);
      log_warn("control: refused a request of more than %d bytes", MAX_REQUEST);
      goto err;
    }
    if (got == cap) {
      cap = cap ? cap * 2 : 4096;
      cap = cap > MAX_REQUEST ? MAX_REQUEST : cap;
      if ((bigger = realloc(buf, cap + 1)) == NULL) {
        *rep = ctl_fail("out of memory for the request");
        goto err;
      }
      buf = bigger;
    }
    r = read(fd, buf + got, cap - got);
    if (r > 0) {
      got += r;
      continue;
    }
    if (r == 0)
      break;                    /* the end: the request is what came */
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      goto err;                 /* gone, or shut down by control_stop() */
    if ((r = wait_fd(fd, POLLIN, &deadline)) == -ETIMEDOUT) {
      *rep = ctl_fail("no complete request within %d seconds: closing the connection",
                  REQUEST_SECONDS);
      log_warn("control: a client sent %s request within %d seconds; closed it",
               got ? "an incomplete" : "no", REQUEST_SECONDS);
      goto err;
    }
    if (r < 0)
      goto err;
  }
  if (buf)
    buf[got] = '\0';
  *bufp = buf;
  return got;

 err:
  free(buf);
  return -1;
}

/* Send REP and a newline within REPLY_SECONDS. */
void
send_reply(int fd, json_object *rep)
{
  const char *out = json_object_to_json_string_ext(rep, JSON_C_TO_STRING_PLAIN);
  size_t len = strlen(out), done = 0;
  struct timespec deadline;
  char *line = malloc(len + 1);
  ssize_t r;

  if (line == NULL)
    return;
  memcpy(line, out, len);
  line[len++] = '\n';
  deadline_in(&deadline, REPLY_SECONDS);
  while (done < len) {
    r = write(fd, line + done, len - done);
    if (r > 0) {
      done += r;
      continue;
    }
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
        wait_fd(fd, POLLOUT, &deadline) == 0)
      continue;
    if (r < 0 && (errno == EPIPE || errno == ECONNRESET))
      log_debug("control: the client left before its reply");
    else
      log_warn("control: could not send the reply: %s", r < 0 && errno != EAGAIN
               ? strerror(errno) : "the client did not take it in time");
    break;
  }
  free(line);
}

static void
serve(struct client *c)
{
  struct ucred cred;
  socklen_t len = sizeof cred;
  json_object *req = NULL, *rep = NULL;
  char *buf = NULL;
  bool run = false;
  ssize_t got;

  if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != 0) {
    rep = ctl_fail("permission denied: raidd's control socket is for root only");
    log_warn("control: refused a request from uid %d", (int)cred.uid);
    goto reply;
  }
  got = read_request(c->fd, &buf, &rep);
  if (got <= 0)
    goto reply;                 /* a probe, an error or a client gone */
  if ((rep = control_parse(buf, got, &req)) != NULL)
    goto reply;                 /* not one JSON object, a key twice... */
  pthread_mutex_lock(&clients_lock);
  if (!stopping) {
    c->state = RUNNING;
    run = true;
  }
  pthread_mutex_unlock(&clients_lock);
  if (!run)
    rep = ctl_fail("raidd is shutting down");
  else {
    control_lock();
    rep = control_dispatch(req);
    control_unlock();
  }
  /* raidctl monitor: the reply, then the events (events-monitor.c),
   * outside the manage lock; control_stop() ends the stream. */
  if (rep && json_object_object_get_ex(rep, "stream", NULL)) {
    pthread_mutex_lock(&clients_lock);
    c->state = STREAMING;
    pthread_mutex_unlock(&clients_lock);
    events_stream(c->fd, req, rep);
    json_object_put(rep);
    rep = NULL;
  }
 reply:
  if (rep)
    send_reply(c->fd, rep);
  json_object_put(rep);
  json_object_put(req);
  free(buf);
}

static void *
client_thread(void *arg)
{
  struct client *c = arg, **pp;

  serve(c);
  pthread_mutex_lock(&clients_lock);
  for (pp = &clients; *pp != c; pp = &(*pp)->next)
    ;
  *pp = c->next;
  if (--nclients == 0)
    pthread_cond_broadcast(&clients_gone);
  pthread_mutex_unlock(&clients_lock);
  close(c->fd);
  free(c);
  return NULL;
}

/* Answer FD (non-blocking) with an error at once, without a thread, and
 * close it: the client finds the reply even when it sends its request
 * after the close (its send failing with EPIPE). */
static void
refuse(int fd, const char *why)
{
  json_object *rep = ctl_fail("%s", why);
  const char *out = json_object_to_json_string_ext(rep, JSON_C_TO_STRING_PLAIN);
  size_t len = strlen(out);
  char line[1200];

  /* Best effort, in one write: it may have gone already. */
  if (len < sizeof line) {
    memcpy(line, out, len);
    line[len++] = '\n';
    if (write(fd, line, len) < 0)
      log_debug("control: could not answer a refused connection: %m");
  }
  json_object_put(rep);
  close(fd);
}

/* The log of refused connections, one limit per cause: a storm of
 * clients (a script gone wrong, raidd at its limit) is told in a line
 * every LOG_LIMIT_SECONDS, not one per connection. */
static struct log_limit busy_log = LOG_LIMIT_INIT, accept_log = LOG_LIMIT_INIT,
  nomem_log = LOG_LIMIT_INIT, nothread_log = LOG_LIMIT_INIT;

static void *
control_thread(void *arg)
{
  char busy[128];
  pthread_attr_t attr;
  struct client *c;
  pthread_t t;
  int fd, err;

  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  snprintf(busy, sizeof busy, "raidd is busy: %d control connections are open already, "
           "its limit; try again", MAX_CLIENTS);
  for (;;) {
    fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        log_limited(&accept_log, RAID_LOG_WARNING, "control: cannot accept a connection: %m");
        usleep(100000);
        continue;
      }
      break;                    /* shut down by control_stop() */
    }
    pthread_mutex_lock(&clients_lock);
    if (nclients >= MAX_CLIENTS) {
      pthread_mutex_unlock(&clients_lock);
      log_limited(&busy_log, RAID_LOG_WARNING,
                  "control: %d connections are open already: refusing another (busy)",
                  MAX_CLIENTS);
      refuse(fd, busy);
      continue;
    }
    if ((c = calloc(1, sizeof *c)) == NULL) {
      pthread_mutex_unlock(&clients_lock);
      log_limited(&nomem_log, RAID_LOG_WARNING,
                  "control: out of memory for a connection: refusing it");
      refuse(fd, "raidd cannot serve this connection now (out of memory); try again");
      continue;
    }
    c->fd = fd;
    c->state = READING;
    c->next = clients;
    clients = c;
    nclients++;
    pthread_mutex_unlock(&clients_lock);
    if ((err = pthread_create(&t, &attr, client_thread, c)) != 0) {
      pthread_mutex_lock(&clients_lock);
      clients = c->next;        /* still first: only this thread adds */
      nclients--;
      pthread_mutex_unlock(&clients_lock);
      free(c);
      log_limited(&nothread_log, RAID_LOG_WARNING,
                  "control: cannot start a thread for a connection: %s", strerror(err));
      refuse(fd, "raidd cannot serve this connection now (no thread); try again");
    }
  }
  pthread_attr_destroy(&attr);
  return NULL;
}

int
socket_in_use(const char *path, pid_t *pidp)
{
  struct sockaddr_un sun = { .sun_family = AF_UNIX };
  struct ucred cred = { .pid = 0 };
  socklen_t len = sizeof cred;
  int fd, r;

  *pidp = 0;
  if (strlen(path) >= sizeof sun.sun_path)
    return -ENAMETOOLONG;
  strcpy(sun.sun_path, path);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -errno;
  if (connect(fd, (struct sockaddr *)&sun, sizeof sun) == 0) {
    /* The peer's credentials are the listener's, from listen(). */
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
      *pidp = cred.pid;
    r = 1;
  }
  else if (errno == EAGAIN || errno == EINPROGRESS)
    r = 1;                      /* it listens, and is busy */
  else if (errno == ECONNREFUSED || errno == ENOENT)
    r = 0;                      /* nothing, or a stale socket file */
  else
    r = -errno;
  close(fd);
  return r;
}

int
control_start(const char *path)
{
  struct sockaddr_un sun = { .sun_family = AF_UNIX };
  char dir[sizeof sun.sun_path], *slash;
  struct stat st;
  pid_t pid;
  int err, dirfd, r;

  if (strlen(path) >= sizeof sun.sun_path) {
    log_err("control socket path %s is too long: %zu bytes, at most %zu", path,
            strlen(path), sizeof sun.sun_path - 1);
    return -ENAMETOOLONG;
  }
  strcpy(sun.sun_path, path);
  strcpy(sock_path, path);
  /* Two raidds starting at once must not both find the path free: the
   * check and the bind happen under a lock on the socket's directory. */
  strcpy(dir, path);
  slash = strrchr(dir, '/');
  if (slash == dir)
    slash[1] = '\0';
  else if (slash)
    *slash = '\0';
  else
    strcpy(dir, ".");
  dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0 || flock(dirfd, LOCK_EX) < 0) {
    err = errno;
    log_err("control socket %s: its directory %s: %s", path, dir, strerror(err));
    if (dirfd >= 0)
      close(dirfd);
    return -err;
  }
  r = socket_in_use(path, &pid);
  if (r > 0) {
    if (pid > 0)
      log_err("another raidd (PID %d) is running: it answers on the control socket "
              "%s; stop it first, or give this one another --control path", (int)pid, path);
    else
      log_err("another raidd is running: it answers on the control socket %s; stop "
              "it first, or give this one another --control path", path);
    close(dirfd);
    return -EADDRINUSE;
  }
  if (lstat(path, &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      log_err("control socket %s: the path exists and is not a socket", path);
      close(dirfd);
      return -EEXIST;
    }
    if (r == 0)
      unlink(path);             /* stale: it refuses connections */
  }
  listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd < 0 ||
      bind(listen_fd, (struct sockaddr *)&sun, sizeof sun) < 0 ||
      chmod(path, 0600) < 0 || listen(listen_fd, 16) < 0) {
    err = errno;
    log_err("control socket %s: %s", path, strerror(err));
    if (listen_fd >= 0)
      close(listen_fd);
    listen_fd = -1;
    close(dirfd);
    return -err;
  }
  close(dirfd);                 /* and its lock */
  return 0;
}

int
control_serve(void)
{
  int err;

  if ((err = pthread_create(&accept_thread, NULL, control_thread, NULL)) != 0) {
    log_err("control socket %s: cannot start its thread: %s", sock_path, strerror(err));
    close(listen_fd);
    listen_fd = -1;
    unlink(sock_path);
    return -err;
  }
  serving = true;
  return 0;
}

void
control_stop(void)
{
  struct client *c;

  if (listen_fd < 0)
    return;
  shutdown(listen_fd, SHUT_RDWR);
  if (serving)
    pthread_join(accept_thread, NULL);
  serving = false;
  close(listen_fd);
  listen_fd = -1;
  unlink(sock_path);
  events_end_streams();
  pthread_mutex_lock(&clients_lock);
  stopping = true;
  for (c = clients; c; c = c->next)
    if (c->state == READING || c->state == STREAMING)
      shutdown(c->fd, SHUT_RDWR);
  while (nclients > 0)
    pthread_cond_wait(&clients_gone, &clients_lock);
  pthread_mutex_unlock(&clients_lock);
}
