/* The NBD transmission phase: one connection's life on its worker thread
 * (nbd-worker.c), from its adoption to its close: reading its byte stream
 * into requests (nbd-request.c), sending their replies, closing.
 *
 * How a request flows (all on the worker thread):
 *   1. EPOLLIN: conn_input() reads what the socket has into c->in (or, for
 *      a long WRITE payload, straight into the request's buffer), and
 *      parses 28-byte request headers.  Every length is checked before it
 *      is used: a bad magic or a WRITE payload over NBD_MAX_PAYLOAD cannot
 *      be resynchronised, so the connection closes (logged); anything else
 *      wrong gets an error reply and the stream goes on (a refused WRITE's
 *      payload is read and thrown away).
 *   2. A valid request gets a struct nbd_req with a 4 KiB-aligned buffer
 *      (READ, WRITE) and is submitted with raid_aio_*() (nbd-request.c);
 *      the worker runs raid_queue_run() after submitting and whenever
 *      raid_queue_fd() is readable.
 *   3. The completion callback (req_done, nbd-request.c) builds the reply
 *      in the request (header, and the data for a READ) and appends it to
 *      the connection's output list, in completion order: replies go out
 *      of order, matched by cookie.
 *   4. At the end of each loop turn every connection touched ("dirty") is
 *      flushed with sendmsg(MSG_NOSIGNAL) gathering many replies; if the
 *      socket is full the rest waits for EPOLLOUT.  A request is freed when
 *      its reply has been sent.
 * Back-pressure: a connection stops reading while NBD_MAX_IN_FLIGHT
 * requests or NBD_MAX_BYTES_IN_FLIGHT bytes of buffers are held (from the
 * header being read to the reply being sent), so a client that writes fast
 * and never reads its replies holds a bounded amount of memory.
 *
 * TLS.  A connection whose client sent NBD_OPT_STARTTLS reads and writes
 * through its session (c->tls, nbd-tls.c); every socket call goes through
 * nbd_io_recv()/nbd_io_sendv(), which are the plain calls when c->tls is
 * NULL.  Bytes GnuTLS has decrypted but we have not read raise no EPOLLIN,
 * so nbd_conn_update() also resumes input when nbd_io_pending() says so.
 *
 * Closing.  A connection "closes" (c->closing) on NBD_CMD_DISC, EOF, a
 * protocol violation, nbd_server_disconnect() or nbd_server_stop(): it
 * reads nothing more, lets the requests it submitted complete (the library
 * must never see a buffer freed under it), sends their replies for at most
 * NBD_DRAIN_SECS, then closes the socket, drops its export reference and
 * its count.  A socket error (c->dead) drops pending replies instead.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "deadline.h"
#include "nbd-internal.h"
#include "nbd-proto.h"

#define INBUF_SIZE      (64u << 10)   /* per-connection receive buffer */
#define DIRECT_READ_MIN (16u << 10)   /* payload rest read straight to its buffer */
#define REQS_PER_TURN   64u           /* requests parsed per connection per turn */
#define MAX_IOV         64

/* ---- helpers --------------------------------------------------------------- */

void
nbd_conn_mark_dirty(struct nbd_conn *c)
{
  if (!c->dirty) {
    c->dirty = true;
    c->dirty_next = c->w->dirty;
    c->w->dirty = c;
  }
}

static bool
throttled(const struct nbd_conn *c)
{
  return c->nreqs >= NBD_MAX_IN_FLIGHT || c->bytes >= NBD_MAX_BYTES_IN_FLIGHT;
}

/* ---- sending replies ---------------------------------------------------------- */

static void
conn_drop_output(struct nbd_conn *c)
{
  struct nbd_req *r;

  while ((r = c->out_head) != NULL) {
    c->out_head = r->next;
    nbd_req_free(r);
  }
  c->out_tail = NULL;
}

/* Send as much of the output list as the socket takes. */
static void
conn_flush(struct nbd_conn *c)
{
  while (c->out_head && !c->dead) {
    struct iovec iov[MAX_IOV];
    size_t n = 0;
    ssize_t w;

    for (struct nbd_req *r = c->out_head; r && n < MAX_IOV; r = r->next)
      for (int i = r->iov_first; i < r->niov && n < MAX_IOV; i++)
        iov[n++] = r->iov[i];
    w = nbd_io_sendv(c->fd, c->tls, iov, n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        c->out_blocked = true;
        return;
      }
      if (errno == EPIPE || errno == ECONNRESET)
        log_info("nbd: %s (export %s): client went away with replies pending",
                 c->peer, export_name(c->exp));
      else
        log_warn("nbd: %s (export %s): send: %m, closing", c->peer,
                 export_name(c->exp));
      c->dead = true;
      nbd_conn_start_closing(c);
      break;
    }
    /* Consume W bytes from the front of the list. */
    while (w > 0 || (c->out_head && c->out_head->iov_first == c->out_head->niov)) {
      struct nbd_req *r = c->out_head;
      struct iovec *v;

      if (r->iov_first == r->niov) {
        c->out_head = r->next;
        if (c->out_head == NULL)
          c->out_tail = NULL;
        nbd_req_free(r);
        continue;
      }
      v = &r->iov[r->iov_first];
      if ((size_t)w >= v->iov_len) {
        w -= v->iov_len;
        r->iov_first++;
      }
      else {
        v->iov_base = (char *)v->iov_base + w;
        v->iov_len -= w;
        w = 0;
      }
    }
  }
  if (c->dead)
    conn_drop_output(c);
  c->out_blocked = c->out_head != NULL && c->out_blocked;
  if (c->out_head == NULL)
    c->out_blocked = false;
}

/* ---- reading requests ------------------------------------------------------------- */

/* Read and parse what the socket has. */
static void
conn_input(struct nbd_conn *c)
{
  unsigned budget = REQS_PER_TURN;
  /* A receive that returned less than it asked for emptied the socket:
   * another would only fail with EAGAIN (a system call wasted every turn).
   * The socket's EPOLLIN is level-triggered, so bytes that arrive later
   * wake the worker.  A TLS session may hold decrypted bytes epoll does
   * not see, so it always reads until EAGAIN. */
  bool drained = false;

  while (!c->closing) {
    size_t avail = c->in_end - c->in_start;
    ssize_t n;

    switch (c->rs) {
    case RS_HEADER:
      if (throttled(c))
        return;                         /* nbd_conn_update resumes */
      if (avail >= sizeof(struct nbd_request)) {
        if (budget-- == 0) {
          nbd_conn_mark_dirty(c);       /* fairness: more next turn */
          return;
        }
        if (nbd_req_parse_header(c) < 0)
          nbd_conn_start_closing(c);
        continue;
      }
      break;
    case RS_PAYLOAD:
      if (avail) {
        size_t k = c->cur->count - c->got;

        if (k > avail)
          k = avail;
        memcpy((char *)c->cur->buf + c->got, c->in + c->in_start, k);
        c->in_start += k;
        c->got += k;
      }
      if (c->got == c->cur->count) {
        struct nbd_req *r = c->cur;

        c->cur = NULL;
        c->rs = RS_HEADER;
        nbd_req_submit(r);
        continue;
      }
      if (avail)
        continue;
      break;
    case RS_SKIP:
      if (avail) {
        size_t k = c->skip_left < avail ? c->skip_left : avail;

        c->in_start += k;
        c->skip_left -= k;
      }
      if (c->skip_left == 0) {
        struct nbd_req *r = c->cur;

        c->cur = NULL;
        c->rs = RS_HEADER;
        nbd_req_reply(r);
        continue;
      }
      if (avail)
        continue;
      break;
    }

    /* Need more bytes. */
    if (drained)
      return;
    if (c->in_start == c->in_end)
      c->in_start = c->in_end = 0;
    if (c->rs == RS_PAYLOAD && c->in_start == c->in_end &&
        c->cur->count - c->got >= DIRECT_READ_MIN) {
      size_t want = c->cur->count - c->got;

      n = nbd_io_recv(c->fd, c->tls, (char *)c->cur->buf + c->got, want);
      if (n > 0) {
        c->got += n;
        drained = (size_t)n < want && c->tls == NULL;
        continue;
      }
    }
    else {
      if (INBUF_SIZE - c->in_end < sizeof(struct nbd_request)) {
        memmove(c->in, c->in + c->in_start, c->in_end - c->in_start);
        c->in_end -= c->in_start;
        c->in_start = 0;
      }
      size_t want = INBUF_SIZE - c->in_end;

      n = nbd_io_recv(c->fd, c->tls, c->in + c->in_end, want);
      if (n > 0) {
        c->in_end += n;
        drained = (size_t)n < want && c->tls == NULL;
        continue;
      }
    }
    if (n == 0) {
      if (c->rs != RS_HEADER || c->in_end != c->in_start)
        log_warn("nbd: %s (export %s): client closed the connection in the "
                 "middle of a request", c->peer, export_name(c->exp));
      else
        log_debug("nbd: %s (export %s): end of input", c->peer, export_name(c->exp));
      nbd_conn_start_closing(c);
      return;
    }
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      return;
    log_info("nbd: %s (export %s): receive: %m, closing", c->peer, export_name(c->exp));
    c->dead = true;
    nbd_conn_start_closing(c);
    return;
  }
}

/* ---- connection lifecycle ---------------------------------------------------------- */

void
nbd_conn_start_closing(struct nbd_conn *c)
{
  if (!c->closing) {
    c->closing = true;
    /* A WRITE whose payload is half read never reached the library. */
    if (c->cur) {
      nbd_req_free(c->cur);
      c->cur = NULL;
    }
    c->in_start = c->in_end = 0;
  }
  if (c->dead && c->registered) {
    /* Nothing more to read or write: stop epoll reporting the hang-up
     * while submitted requests finish. */
    epoll_ctl(c->w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    c->registered = false;
  }
  nbd_conn_mark_dirty(c);
}

static void
conn_free(struct nbd_conn *c)
{
  struct nbd_worker *w = c->w;

  /* Marked dirty again while nbd_conn_update() ran (a send failing, the
   * closing starting): off w->dirty, or worker_settle() would update it
   * after the free. */
  if (c->dirty) {
    struct nbd_conn **pp = &w->dirty;

    while (*pp && *pp != c)
      pp = &(*pp)->dirty_next;
    if (*pp)
      *pp = c->dirty_next;
  }
  conn_drop_output(c);
  if (c->cur)
    nbd_req_free(c->cur);
  if (c->registered)
    epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
  nbd_tls_free(c->tls);
  close(c->fd);
  if (c->prev)
    c->prev->next = c->next;
  else
    w->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  w->nconns--;
  log_info("nbd: %s (export %s): disconnected", c->peer, export_name(c->exp));
  if (!c->kernel)
    export_conn_add(c->exp, -1);
  export_put(c->exp);
  free(c->in);
  free(c);
}

/* Bring C up to date after anything happened to it.  May free C. */
void
nbd_conn_update(struct nbd_conn *c)
{
  uint32_t ev = 0;

  conn_flush(c);
  /* Throttling may have lifted with requests already in the buffer, or
   * in the TLS session's, which epoll does not see. */
  if (!c->closing && !throttled(c) && c->rs == RS_HEADER &&
      (c->in_end - c->in_start >= sizeof(struct nbd_request) || nbd_io_pending(c->tls))) {
    conn_input(c);
    conn_flush(c);
  }
  if (c->closing && c->busy == 0) {
    if (c->out_head == NULL || c->dead)
      goto free;
    if (c->drain_deadline.tv_sec == 0) {
      deadline_in(&c->drain_deadline, NBD_DRAIN_SECS);
    }
    else if (deadline_passed(&c->drain_deadline)) {
      log_warn("nbd: %s (export %s): client did not read its last replies in "
               "%d seconds, closing", c->peer, export_name(c->exp), NBD_DRAIN_SECS);
      goto free;
    }
  }
  if (!c->registered)
    return;
  if (!c->closing && !throttled(c))
    ev |= EPOLLIN;
  if (c->out_blocked)
    ev |= EPOLLOUT;
  if (ev != c->events) {
    struct epoll_event e = { .events = ev, .data.ptr = c };

    if (epoll_ctl(c->w->epfd, EPOLL_CTL_MOD, c->fd, &e) == 0)
      c->events = ev;
  }
  return;

free:
  conn_free(c);
}

void
nbd_conn_event(struct nbd_conn *c, uint32_t events)
{
  if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN)) {
    /* Hung up and nothing left to read. */
    c->dead = true;
    nbd_conn_start_closing(c);
    return;
  }
  if (events & EPOLLOUT)
    c->out_blocked = false;
  if (events & EPOLLIN)
    conn_input(c);
  nbd_conn_mark_dirty(c);
}

struct nbd_conn *
nbd_conn_new(struct nbd_client *client)
{
  struct nbd_conn *c = calloc(1, sizeof *c);

  if (c == NULL || (c->in = malloc(INBUF_SIZE)) == NULL) {
    free(c);
    return NULL;
  }
  c->fd = client->fd;
  c->tls = client->tls;
  snprintf(c->peer, sizeof c->peer, "%s", client->peer);
  c->exp = client->exp;
  c->a = export_array(client->exp);
  c->structured = client->structured;
  c->tflags = client->tflags;
  c->min_block = client->min_block ? client->min_block : RAID_SECTOR_SIZE;
  c->size = raid_array_size(c->a);
  c->kernel = client->kernel;
  if (!c->kernel)
    export_conn_add(c->exp, +1);
  return c;
}
