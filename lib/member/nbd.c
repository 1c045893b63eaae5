/* NBD members: an export on any NBD server (nbdkit, qemu-nbd, another
 * raidd), named by its URI, through libnbd's asynchronous API.
 *
 * Threads.  Every queue (thread) of an array submits to a member at once,
 * but a libnbd handle is a state machine driven from one event loop.  So
 * the member has a thread of its own that runs a private queue: submit()
 * posts the request there (queue_post()), the thread issues it
 * (nbd_aio_pread(), ...), waits for its sockets with polls in its own
 * io_uring, and posts each reply back to the submitter's queue, where
 * member_complete() runs as for any back-end.  One thread per member, never
 * one per request, and no worker ever blocks on the network.  Opening
 * (connect, handshake) blocks its caller with a deadline: raidctl or
 * raidd's control thread, never a worker.
 *
 * Each request's steps go through its task, as in file.c: a long read or
 * write is cut at the server's largest request, and a FUA write to a
 * server without FUA is followed by a flush.  libnbd calls the completion
 * callback (cmd_done) with its lock held, where no nbd_* call is allowed,
 * so the callback only queues the next step (queue_defer()) on the
 * member's own queue.
 *
 * Connections.  A server that offers multi-conn (its flush covers writes
 * acknowledged on every connection) gets several; each request goes to the
 * connection with the fewest in flight.  Without multi-conn, one.
 *
 * Failure.  A connection that drops, a server that breaks the protocol
 * (libnbd moves to its DEAD state: a reply for a request never sent, a
 * short or malformed reply), or a connection with requests in flight and
 * no reply for the timeout: the member is lost for good.  Every request in
 * flight and every later one fails with EIO, which fails the member in its
 * array as a dead disk would.  Coming back is a new open of the same URI
 * (raidd's reconnect, md's re-add), never this member object.  Errors a
 * server returns for one request (EIO on a bad sector, ENOSPC) fail that
 * request only, as a disk's would.
 *
 * Secrets.  TLS keys come from files the URI names (tls-psk-file=,
 * tls-certificates=), so a URI, and every message that quotes one, holds no
 * key.
 *
 * Fields: everything in struct nbd_member belongs to the member's thread
 * after open, except `lost` and `why` (written once, before `lost` is set
 * with release order; read by submitters' threads after an acquire). */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <libnbd.h>

#include "internal.h"

#define NBD_MAX_CONNS 16
#define NBD_DEF_CONNS 4                 /* with multi-conn */
#define NBD_DEF_TIMEOUT 10.0            /* seconds, a request unanswered */
#define NBD_DEF_CONNECT_TIMEOUT 10.0    /* seconds, connect and handshake */
#define NBD_ZERO_MAX (1u << 30)         /* bytes per NBD_CMD_WRITE_ZEROES */

struct nbd_conn {
  struct nbd_member *nm;
  struct nbd_handle *h;
  int fd;
  struct qtask rd_task, wr_task;        /* the socket's polls */
  bool rd_armed, wr_armed;
  unsigned in_flight;
  uint64_t progress_ns;                 /* last reply, or first request since idle */
};

struct nbd_member {
  struct raid_member *m;
  char *uri;                            /* as libnbd sees it */
  struct raid_queue *q;                 /* the member's thread's */
  pthread_t thread;
  bool thread_started;
  struct nbd_conn conn[NBD_MAX_CONNS];
  unsigned nconn;
  uint64_t timeout_ns;
  bool can_flush, can_fua, can_zero;
  uint32_t max_payload;                 /* bytes per read or write */
  /* The request being issued, to learn whether libnbd called its
   * completion when the issue itself failed. */
  struct member_io *issuing;
  bool issuing_called;
  struct qtask tick, stop;
  struct __kernel_timespec tick_ts;
  bool stopping;
  _Atomic bool lost;
  char why[160];                        /* why it was lost */
};

/* ---- raidd's parameters in the URI ------------------------------------- */

struct nbd_params {
  double timeout, connect_timeout;
  unsigned connections;                 /* 0: the default */
};

static int
param_seconds(const char *spec, const char *key, const char *v, double *out)
{
  char *end;
  double d;

  errno = 0;
  d = strtod(v, &end);
  if (errno || end == v || *end || !(d > 0) || d > 86400)
    return set_error(EINVAL, "member %s: %s=%s: expected a number of seconds "
                     "above 0 (at most 86400)", spec, key, v);
  *out = d;
  return 0;
}

/* Take raidd's own parameters out of SPEC's query into P, and the URI
 * libnbd gets (the rest, unchanged) into *URIP. */
static int
split_params(const char *spec, struct nbd_params *p, char **urip)
{
  const char *qm = strchr(spec, '?');
  char *uri, *query, *item, *save = NULL;
  size_t n;
  int r = 0;

  p->timeout = NBD_DEF_TIMEOUT;
  p->connect_timeout = NBD_DEF_CONNECT_TIMEOUT;
  p->connections = 0;
  n = qm ? (size_t)(qm - spec) : strlen(spec);
  uri = malloc(strlen(spec) + 2);
  query = strdup(qm ? qm + 1 : "");
  if (uri == NULL || query == NULL) {
    free(uri);
    free(query);
    return set_error(ENOMEM, "member %s: out of memory", spec);
  }
  memcpy(uri, spec, n);
  uri[n] = '\0';
  for (item = strtok_r(query, "&", &save); item && r == 0;
       item = strtok_r(NULL, "&", &save)) {
    char *eq = strchr(item, '=');
    const char *v = eq ? eq + 1 : "";
    size_t klen = eq ? (size_t)(eq - item) : strlen(item);

    if (klen == 7 && strncmp(item, "timeout", 7) == 0)
      r = param_seconds(spec, "timeout", v, &p->timeout);
    else if (klen == 15 && strncmp(item, "connect-timeout", 15) == 0)
      r = param_seconds(spec, "connect-timeout", v, &p->connect_timeout);
    else if (klen == 11 && strncmp(item, "connections", 11) == 0) {
      char *end;
      unsigned long c;

      errno = 0;
      c = strtoul(v, &end, 10);
      if (errno || end == v || *end || c < 1 || c > NBD_MAX_CONNS)
        r = set_error(EINVAL, "member %s: connections=%s: expected 1 to %d",
                      spec, v, NBD_MAX_CONNS);
      p->connections = (unsigned)c;
    }
    else {
      strcat(uri, strchr(uri, '?') ? "&" : "?");
      strcat(uri, item);
    }
  }
  free(query);
  if (r < 0) {
    free(uri);
    return r;
  }
  *urip = uri;
  return 0;
}

/* ---- the member's thread ------------------------------------------------ */

static void conn_arm(struct nbd_conn *c);
static void issue(struct member_io *io);

static struct nbd_member *
io_nm(const struct member_io *io)
{
  return io->m->priv;
}

/* Lose the member (the member's thread): say why once, shut every socket
 * still open down so that libnbd fails what is in flight (their polls
 * fire, it reads end of file and calls each completion with an error),
 * and fail every later request at once.  A connection libnbd found dead
 * or closed has had its socket closed by libnbd: its number (c->fd) may
 * name another file by now, and is never used again. */
static void
member_lost(struct nbd_member *nm, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));
static bool conn_gone(const struct nbd_conn *c);

static void
member_lost(struct nbd_member *nm, const char *fmt, ...)
{
  va_list ap;
  unsigned i;

  if (atomic_load_explicit(&nm->lost, memory_order_relaxed))
    return;
  va_start(ap, fmt);
  vsnprintf(nm->why, sizeof nm->why, fmt, ap);
  va_end(ap);
  atomic_store_explicit(&nm->lost, true, memory_order_release);
  raid_log(RAID_LOG_ERR, "member %s: %s; the member is lost and its I/O "
           "fails from now on", nm->m->name, nm->why);
  for (i = 0; i < nm->nconn; i++)
    if (nm->conn[i].fd >= 0 && !conn_gone(&nm->conn[i]))
      shutdown(nm->conn[i].fd, SHUT_RDWR);
}

/* Is C's handle past use: the connection dead (broken, or a protocol
 * error) or closed by the server? */
static bool
conn_gone(const struct nbd_conn *c)
{
  return nbd_aio_is_dead(c->h) || nbd_aio_is_closed(c->h);
}

/* Lose the member for what happened on connection C. */
static void
conn_lost(struct nbd_conn *c, const char *why)
{
  member_lost(c->nm, "connection %u: %s", (unsigned)(c - c->nm->conn), why);
}

/* Is C's socket readable now (a reply, or the server's end of file)? */
static bool
conn_readable(const struct nbd_conn *c)
{
  struct pollfd p = { .fd = c->fd, .events = POLLIN };

  return poll(&p, 1, 0) > 0;
}

/* A poll of the socket fired: let libnbd read or write, then watch for
 * what it waits for next.
 *
 * A read notification only when the socket is readable now.  libnbd
 * takes one in its READY state to mean a reply is there: with none, it
 * moves to REPLY.START and waits there for the reply's first bytes, and
 * a command asked for meanwhile is only queued, not sent, until a reply
 * takes it back to READY.  A stale notification (a poll's completion for
 * bytes that an earlier notification has read since) with no reply
 * outstanding would so hold every later request of the connection for
 * ever: the server idle, the requests unsent, "no reply" after the
 * timeout (test-raidd-remote, now and then on a busy machine). */
static void
conn_ready(struct nbd_conn *c, bool rd)
{
  unsigned dir = nbd_aio_get_direction(c->h);
  int r = 0;

  if (rd && (dir & LIBNBD_AIO_DIRECTION_READ) && conn_readable(c))
    r = nbd_aio_notify_read(c->h);
  else if (!rd && (dir & LIBNBD_AIO_DIRECTION_WRITE))
    r = nbd_aio_notify_write(c->h);
  if (r == -1 || conn_gone(c))
    conn_lost(c, r == -1 && nbd_get_error() ? nbd_get_error()
              : "the server closed the connection");
  conn_arm(c);
}

static void
rd_fn(struct qtask *t, int res)
{
  struct nbd_conn *c = (struct nbd_conn *)((char *)t - offsetof(struct nbd_conn, rd_task));

  c->rd_armed = false;
  if (!c->nm->stopping)
    conn_ready(c, true);
}

static void
wr_fn(struct qtask *t, int res)
{
  struct nbd_conn *c = (struct nbd_conn *)((char *)t - offsetof(struct nbd_conn, wr_task));

  c->wr_armed = false;
  if (!c->nm->stopping)
    conn_ready(c, false);
}

static void
poll_arm(struct nbd_conn *c, struct qtask *t, unsigned events)
{
  struct io_uring_sqe *sqe = queue_get_sqe(c->nm->q);

  io_uring_prep_poll_add(sqe, c->fd, events);
  queue_sqe_task(c->nm->q, sqe, t);
}

/* Watch the socket for what libnbd waits for.  A poll stays armed until it
 * fires; one that fires when libnbd no longer waits for it does nothing. */
static void
conn_arm(struct nbd_conn *c)
{
  unsigned dir;

  if (c->nm->stopping || c->fd < 0 || conn_gone(c))
    return;
  dir = nbd_aio_get_direction(c->h);
  if ((dir & LIBNBD_AIO_DIRECTION_READ) && !c->rd_armed) {
    c->rd_armed = true;
    poll_arm(c, &c->rd_task, POLLIN);
  }
  if ((dir & LIBNBD_AIO_DIRECTION_WRITE) && !c->wr_armed) {
    c->wr_armed = true;
    poll_arm(c, &c->wr_task, POLLOUT);
  }
}

/* Back on the submitter's thread: the message, then the usual completion. */
static void
reply_fn(struct qtask *t, int res)
{
  struct member_io *io = task_io(t);
  struct nbd_member *nm = io_nm(io);

  if (res < 0 && atomic_load_explicit(&nm->lost, memory_order_acquire))
    set_error(-res, "member %s: %s of %zu bytes at offset %" PRIu64 " failed: "
              "the member is lost (%s)", io->m->name, mop_name(io->op), io->len,
              io->offset, nm->why);
  else if (res < 0)
    set_error(-res, "member %s: %s of %zu bytes at offset %" PRIu64 " failed: "
              "the server says: %s", io->m->name, mop_name(io->op), io->len,
              io->offset, strerror(-res));
  member_complete(io, res);
}

static void
reply(struct member_io *io, int res)
{
  io->task.fn = reply_fn;
  queue_post(io->q, &io->task, res);
}

/* How many bytes the next step of IO covers (also after it completed:
 * io->xfered moves only then). */
static size_t
step_len(const struct member_io *io)
{
  const struct nbd_member *nm = io_nm(io);
  size_t left = io->len - io->xfered;

  if (io->op == MOP_READ || io->op == MOP_WRITE)
    return MIN(left, (size_t)nm->max_payload);
  if (nm->can_zero)
    return MIN(left, (size_t)NBD_ZERO_MAX);
  return MIN(left, MIN((size_t)nm->max_payload, (size_t)RAID_MAX_REQUEST));
}

/* A step finished (the member's thread, from cmd_done() or a failed
 * issue): the next one, or the reply. */
static void
step_fn(struct qtask *t, int res)
{
  struct member_io *io = task_io(t);
  struct nbd_member *nm = io_nm(io);

  if (res < 0) {
    /* A connection that died fails its requests with ENOTCONN (and a
     * server going away says ESHUTDOWN): a lost member's I/O fails as a
     * dead disk's does, with EIO. */
    if (res == -ENOTCONN || res == -ESHUTDOWN || res == -ECONNRESET || res == -EPIPE)
      member_lost(nm, "%s", strerror(-res));
    reply(io, atomic_load_explicit(&nm->lost, memory_order_relaxed) ? -EIO : res);
    return;
  }
  if (io->flushing || io->op == MOP_FLUSH) {
    reply(io, 0);
    return;
  }
  io->xfered += step_len(io);
  if (io->xfered < io->len) {
    issue(io);
    return;
  }
  if (io->op != MOP_READ && (io->flags & MIO_FUA) && !nm->can_fua && nm->can_flush) {
    io->flushing = true;      /* FUA by a flush after the write */
    issue(io);
    return;
  }
  reply(io, 0);
}

/* libnbd's completion callback, with its lock held: only queue the step. */
static int
cmd_done(void *opaque, int *error)
{
  struct member_io *io = opaque;
  struct nbd_member *nm = io_nm(io);
  struct nbd_conn *c = io->conn;

  c->in_flight--;
  c->progress_ns = mono_ns();
  if (io == nm->issuing)
    nm->issuing_called = true;
  io->task.fn = step_fn;
  queue_defer(nm->q, &io->task, *error ? -*error : 0);
  return 1;
}

static struct nbd_conn *
pick_conn(struct nbd_member *nm)
{
  struct nbd_conn *best = &nm->conn[0];
  unsigned i;

  for (i = 1; i < nm->nconn; i++)
    if (nm->conn[i].in_flight < best->in_flight)
      best = &nm->conn[i];
  return best;
}

/* Issue IO's next step on a connection (the member's thread). */
static void
issue(struct member_io *io)
{
  struct nbd_member *nm = io_nm(io);
  struct nbd_conn *c;
  nbd_completion_callback cb = { .callback = cmd_done, .user_data = io };
  size_t n = step_len(io);
  uint64_t off = io->offset + io->xfered;
  char *p = (char *)io->buf + io->xfered;
  uint32_t fua = (io->flags & MIO_FUA) && nm->can_fua ? LIBNBD_CMD_FLAG_FUA : 0;
  int64_t cookie;

  if (atomic_load_explicit(&nm->lost, memory_order_relaxed)) {
    reply(io, -EIO);
    return;
  }
  c = pick_conn(nm);
  io->conn = c;
  if (c->in_flight++ == 0)
    c->progress_ns = mono_ns();
  nm->issuing = io;
  nm->issuing_called = false;
  if (io->flushing || io->op == MOP_FLUSH)
    cookie = nbd_aio_flush(c->h, cb, 0);
  else if (io->op == MOP_READ)
    cookie = nbd_aio_pread(c->h, p, n, off, cb, 0);
  else if (io->op == MOP_WRITE)
    cookie = nbd_aio_pwrite(c->h, p, n, off, cb, fua);
  else if (nm->can_zero)          /* discard too: it must read back zeroes */
    cookie = nbd_aio_zero(c->h, n, off, cb, fua);
  else
    cookie = nbd_aio_pwrite(c->h, zero_buf(n), n, off, cb, fua);
  nm->issuing = NULL;
  /* The send itself may find the connection gone: libnbd then fails
   * what was in flight, this request perhaps included, before we see a
   * poll fire.  Lose the member now, so that step_fn() reports EIO. */
  if (cookie != -1 && conn_gone(c))
    conn_lost(c, "the connection broke while sending");
  if (cookie == -1) {
    /* Refused before it went out (the connection is dead, or libnbd's
     * strict checks): fail the request, and the member if the handle is
     * gone.  libnbd may or may not have called the completion. */
    int err = nbd_get_errno() ? nbd_get_errno() : EIO;

    if (conn_gone(c))
      conn_lost(c, nbd_get_error() ? nbd_get_error() : "dead");
    else
      raid_log(RAID_LOG_ERR, "member %s: %s of %zu bytes at offset %" PRIu64
               " not sent: %s", io->m->name, mop_name(io->op), n, off,
               nbd_get_error() ? nbd_get_error() : "refused by libnbd");
    if (!nm->issuing_called) {
      c->in_flight--;
      io->task.fn = step_fn;
      queue_defer(nm->q, &io->task, -err);
    }
  }
  conn_arm(c);
}

/* A request posted by its submitter arrives on the member's thread. */
static void
arrive_fn(struct qtask *t, int res)
{
  struct member_io *io = task_io(t);

  io->flushing = false;
  issue(io);
}

/* The watchdog: a connection with requests in flight that has heard
 * nothing for the timeout has lost its server. */
static void
tick_fn(struct qtask *t, int res)
{
  struct nbd_member *nm = (struct nbd_member *)((char *)t - offsetof(struct nbd_member, tick));
  uint64_t now = mono_ns();
  unsigned i, period_us;

  if (nm->stopping)
    return;
  for (i = 0; i < nm->nconn; i++) {
    struct nbd_conn *c = &nm->conn[i];

    if (!c->in_flight || now - c->progress_ns <= nm->timeout_ns)
      continue;
    /* This thread may itself have been kept from running (a loaded
     * machine) with replies waiting on the socket, their poll's
     * completion behind this one: read them before judging. */
    if (!conn_gone(c)) {
      conn_ready(c, true);
      now = mono_ns();          /* replies just read moved progress_ns */
    }
    if (c->in_flight && now - c->progress_ns > nm->timeout_ns)
      member_lost(nm, "connection %u: no reply for %.1f s (timeout=%.1f)", i,
                  (double)(now - c->progress_ns) / 1e9, (double)nm->timeout_ns / 1e9);
  }
  period_us = (unsigned)MIN(nm->timeout_ns / 4000, 1000000u);
  queue_timer(nm->q, &nm->tick, &nm->tick_ts, period_us < 10000 ? 10000 : period_us);
}

static void
stop_fn(struct qtask *t, int res)
{
  struct nbd_member *nm = (struct nbd_member *)((char *)t - offsetof(struct nbd_member, stop));

  nm->stopping = true;
  queue_timer_cancel(nm->q, &nm->tick);
  queue_internal_done(nm->q);         /* raid_queue_run() may return */
}

static void *
member_thread(void *arg)
{
  struct nbd_member *nm = arg;
  int r;

  queue_internal_start(nm->q);        /* run until stop_fn() */
  tick_fn(&nm->tick, 0);
  for (unsigned i = 0; i < nm->nconn; i++)
    conn_arm(&nm->conn[i]);
  while (!nm->stopping)
    if ((r = raid_queue_run(nm->q, 1u << 30)) < 0) {
      raid_log(RAID_LOG_ERR, "member %s: %s", nm->m->name, raid_get_error());
      abort();                /* its queue is unusable: nothing can complete */
    }
  return NULL;
}

/* ---- submit, close, open ------------------------------------------------ */

static void
refused_fn(struct qtask *t, int res)
{
  member_complete(task_io(t), res);
}

static void
nbd_submit(struct raid_queue *q, struct member_io *io)
{
  struct raid_member *m = io->m;
  struct nbd_member *nm = m->priv;
  int r = 0;

  if (m->readonly && io->op != MOP_READ && io->op != MOP_FLUSH)
    r = set_error(EPERM, "member %s: %s at offset %" PRIu64 " refused: the "
                  "member is read-only", m->name, mop_name(io->op), io->offset);
  else if (io->op != MOP_FLUSH &&
           (io->offset > m->size || io->len > m->size - io->offset))
    r = set_error(EIO, "member %s: %s of %zu bytes at offset %" PRIu64
                  " is past its end (%" PRIu64 " bytes)", m->name,
                  mop_name(io->op), io->len, io->offset, m->size);
  else if (io->len == 0 && io->op != MOP_FLUSH)
    r = 0;
  else {
    io->task.fn = arrive_fn;
    queue_post(nm->q, &io->task, 0);
    return;
  }
  io->task.fn = refused_fn;
  queue_defer(q, &io->task, r);
}

static void
nm_free(struct nbd_member *nm)
{
  unsigned i;

  if (nm->thread_started) {
    queue_post(nm->q, &nm->stop, 0);
    pthread_join(nm->thread, NULL);
  }
  for (i = 0; i < nm->nconn; i++) {
    struct nbd_conn *c = &nm->conn[i];

    /* Say goodbye if the connection is still good (NBD_CMD_DISC goes
     * out as far as the socket takes it without waiting). */
    if (c->h && nbd_aio_is_ready(c->h))
      (void)nbd_aio_disconnect(c->h, 0);
    nbd_close(c->h);
  }
  raid_queue_free(nm->q);
  free(nm->uri);
  free(nm);
}

static void
nbd_close_member(struct raid_member *m)
{
  if (m->priv)                  /* NULL when the open failed */
    nm_free(m->priv);
}

static bool
nbd_lost(const struct raid_member *m)
{
  const struct nbd_member *nm = m->priv;

  return nm && atomic_load_explicit(&nm->lost, memory_order_acquire);
}

static const struct member_ops nbd_ops = {
  .kind = "nbd",
  .submit = nbd_submit,
  .close = nbd_close_member,
  .lost = nbd_lost,
};

/* Connect C to the URI within DEADLINE (mono_ns()).  0 or -errno with a
 * message naming SPEC. */
static int
conn_open(struct nbd_conn *c, const char *spec, const char *uri, uint64_t deadline)
{
  int64_t left_ms;

  c->fd = -1;
  c->h = nbd_create();
  if (c->h == NULL)
    return set_error(ENOMEM, "member %s: %s", spec, nbd_get_error());
  if (nbd_set_uri_allow_local_file(c->h, true) == -1 ||
      nbd_set_handle_name(c->h, "raid-member") == -1 ||
      nbd_aio_connect_uri(c->h, uri) == -1)
    goto fail;
  while (nbd_aio_is_connecting(c->h)) {
    uint64_t now = mono_ns();

    left_ms = now >= deadline ? 0 : (int64_t)((deadline - now) / 1000000) + 1;
    if (left_ms == 0)
      return set_error(ETIMEDOUT, "member %s: no answer from the server "
                       "within the connect timeout", spec);
    if (nbd_poll(c->h, (int)MIN(left_ms, (int64_t)1000)) == -1)
      goto fail;
  }
  if (!nbd_aio_is_ready(c->h))
    goto fail;
  c->fd = nbd_aio_get_fd(c->h);
  return 0;

fail:
  return set_error(nbd_get_errno() ? nbd_get_errno() : EIO, "member %s: %s",
                   spec, nbd_get_error() ? nbd_get_error() : "cannot connect");
}

/* What the first connection learned of the export. */
static int
export_facts(struct nbd_member *nm, const char *spec, bool ro)
{
  struct nbd_handle *h = nm->conn[0].h;
  struct raid_member *m = nm->m;
  int64_t size = nbd_get_size(h), bmin, bmax;

  if (size < 0)
    return set_error(EIO, "member %s: %s", spec, nbd_get_error());
  bmin = nbd_get_block_size(h, LIBNBD_SIZE_MINIMUM);
  bmax = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);
  m->lbs = RAID_SECTOR_SIZE;
  if (bmin > RAID_SECTOR_SIZE) {
    if (bmin > 4096 || (bmin & (bmin - 1)))
      return set_error(EINVAL, "member %s: the server's minimum block size "
                       "%" PRIi64 " is not a power of two up to 4096", spec, bmin);
    m->lbs = (unsigned)bmin;
  }
  nm->max_payload = RAID_MAX_REQUEST;
  if (bmax > 0 && bmax < (int64_t)nm->max_payload) {
    if (bmax < 4096)
      return set_error(EINVAL, "member %s: the server's largest request, "
                       "%" PRIi64 " bytes, is too small", spec, bmax);
    nm->max_payload = (uint32_t)(bmax & ~(int64_t)(m->lbs - 1));
  }
  m->size = (uint64_t)size & ~(uint64_t)(m->lbs - 1);
  m->readonly = ro;
  if (!ro && nbd_is_read_only(h) == 1)
    return set_error(EROFS, "member %s: the server exports it read-only", spec);
  nm->can_flush = nbd_can_flush(h) == 1;
  nm->can_fua = nbd_can_fua(h) == 1;
  nm->can_zero = nbd_can_zero(h) == 1;
  return 0;
}

int
member_nbd_open(const char *spec, unsigned flags, struct raid_member **mp)
{
  struct nbd_params p;
  struct nbd_member *nm;
  struct raid_member *m;
  uint64_t deadline;
  unsigned i, want;
  int r;

  *mp = NULL;
  nm = calloc(1, sizeof *nm);
  m = member_alloc(&nbd_ops, spec);
  if (nm == NULL || m == NULL) {
    free(nm);
    raid_member_close(m);
    return set_error(ENOMEM, "member %s: out of memory", spec);
  }
  m->priv = nm;
  m->direct = true;               /* no page cache of ours in between */
  nm->m = m;
  if ((r = split_params(spec, &p, &nm->uri)) < 0)
    goto fail;
  nm->timeout_ns = (uint64_t)(p.timeout * 1e9);
  if ((r = raid_queue_new(64, &nm->q)) < 0)
    goto fail;
  nm->stop.fn = stop_fn;
  nm->tick.fn = tick_fn;
  deadline = mono_ns() + (uint64_t)(p.connect_timeout * 1e9);
  for (i = 0; i < NBD_MAX_CONNS; i++) {
    nm->conn[i].nm = nm;
    nm->conn[i].fd = -1;
    nm->conn[i].rd_task.fn = rd_fn;
    nm->conn[i].wr_task.fn = wr_fn;
  }
  nm->nconn = 1;
  if ((r = conn_open(&nm->conn[0], spec, nm->uri, deadline)) < 0 ||
      (r = export_facts(nm, spec, flags & RAID_MEMBER_READONLY)) < 0)
    goto fail;
  want = nbd_can_multi_conn(nm->conn[0].h) == 1 ?
    (p.connections ? p.connections : NBD_DEF_CONNS) : 1;
  if (p.connections > 1 && want == 1)
    raid_log(RAID_LOG_INFO, "member %s: the server does not offer multi-conn: "
             "one connection", spec);
  for (i = 1; i < want; i++) {
    nm->nconn = i + 1;
    if ((r = conn_open(&nm->conn[i], spec, nm->uri, deadline)) < 0)
      goto fail;
    if (nbd_get_size(nm->conn[i].h) != nbd_get_size(nm->conn[0].h)) {
      r = set_error(EIO, "member %s: the server gives connection %u another "
                    "size than connection 0", spec, i);
      goto fail;
    }
  }
  if ((r = pthread_create(&nm->thread, NULL, member_thread, nm)) != 0) {
    r = set_error(r, "member %s: cannot start its thread: %s", spec, strerror(r));
    goto fail;
  }
  nm->thread_started = true;
  *mp = m;
  return 0;

fail:
  m->priv = NULL;
  nm_free(nm);
  raid_member_close(m);
  return r;
}
