/* The NBD transmission phase: worker threads and their connections.
 *
 * Threads and ownership.  Each worker is one thread with its own epoll
 * set, its own raid_queue and its own connections; nothing on the data
 * path is shared with another worker and nothing takes a lock.  The only
 * cross-thread door is the worker's mailbox (w->lock): new connections
 * from the handshake threads, disconnect requests and the stop request,
 * announced by writing w->wake_fd.  A connection, its requests and their
 * buffers belong to the worker thread from the moment it takes the
 * connection out of the mailbox until it frees it.
 *
 * How a request flows (all on the worker thread):
 *   1. EPOLLIN: conn_input() reads what the socket has into c->in (or, for
 *      a long WRITE payload, straight into the request's buffer), and
 *      parses 28-byte request headers.  Every length is checked before it
 *      is used: a bad magic or a WRITE payload over NBD_MAX_PAYLOAD cannot
 *      be resynchronised, so the connection closes (logged); anything else
 *      wrong gets an error reply and the stream goes on (a refused WRITE's
 *      payload is read and thrown away).
 *   2. A valid request gets a struct req with a 4 KiB-aligned buffer (READ,
 *      WRITE) and is submitted with raid_aio_*(); the worker runs
 *      raid_queue_run() after submitting and whenever raid_queue_fd() is
 *      readable.
 *   3. The completion callback (req_done) builds the reply in the request
 *      (header, and the data for a READ) and appends it to the
 *      connection's output list, in completion order: replies go out of
 *      order, matched by cookie.
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
 * so conn_update() also resumes input when nbd_io_pending() says so.
 *
 * Closing.  A connection "closes" (c->closing) on NBD_CMD_DISC, EOF, a
 * protocol violation, nbd_server_disconnect() or nbd_server_stop(): it
 * reads nothing more, lets the requests it submitted complete (the library
 * must never see a buffer freed under it), sends their replies for at most
 * NBD_DRAIN_SECS, then closes the socket, drops its export reference and
 * its count.  A socket error (c->dead) drops pending replies instead.
 */
#include <config.h>

#include <endian.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "deadline.h"
#include "nbd-internal.h"
#include "nbd-proto.h"

#define INBUF_SIZE      (64u << 10)   /* per-connection receive buffer */
#define DIRECT_READ_MIN (16u << 10)   /* payload rest read straight to its buffer */
#define REQS_PER_TURN   64u           /* requests parsed per connection per turn */
#define MAX_IOV         64
#define BUF_ALIGN       4096

enum rstate {
  RS_HEADER,                       /* waiting for a request header */
  RS_PAYLOAD,                      /* reading a WRITE payload into cur->buf */
  RS_SKIP,                         /* throwing away a refused WRITE's payload */
};

struct conn;

struct req {
  struct req *next;                /* in c->out */
  struct conn *c;
  uint64_t cookie;
  uint64_t offset;
  uint32_t count;
  uint16_t type;
  uint16_t flags;
  void *buf;                       /* READ / WRITE data, BUF_ALIGN-aligned */
  bool flush_after;                /* TRIM with FUA: flush, then reply */
  uint32_t error;                  /* NBD_E* to reply */
  char msg[160];                   /* for a structured error chunk */
  unsigned char hdr[32];           /* reply header (and chunk prefix) */
  struct iovec iov[3];             /* what remains to send */
  int iov_first, niov;
};

struct conn {
  struct conn *prev, *next;        /* w->conns */
  struct conn *dirty_next;         /* w->dirty */
  bool dirty;
  struct nbd_worker *w;
  int fd;
  struct nbd_tls *tls;             /* NULL: plain socket (nbd-tls.c) */
  char peer[NBD_PEER_MAX];
  struct export *exp;
  struct raid_array *a;
  bool structured;
  uint16_t tflags;
  uint32_t min_block;
  uint64_t size;
  bool kernel;                     /* not counted in export_conns() */

  /* Input. */
  unsigned char *in;
  size_t in_start, in_end;
  enum rstate rs;
  struct req *cur;                 /* RS_PAYLOAD, RS_SKIP */
  size_t got;                      /* payload bytes received */
  size_t skip_left;

  /* Accounting. */
  unsigned nreqs;                  /* requests held, replies not yet sent */
  unsigned busy;                   /* of those, submitted to the library */
  size_t bytes;                    /* buffer bytes held */
  unsigned errors_logged;

  /* Output. */
  struct req *out_head, *out_tail;
  bool out_blocked;                /* sendmsg said EAGAIN: wait for EPOLLOUT */

  /* Lifecycle. */
  bool closing;
  bool dead;                       /* socket unusable: drop replies */
  bool registered;                 /* in the epoll set */
  uint32_t events;                 /* registered events */
  struct timespec drain_deadline;  /* tv_sec 0: not set */
};

struct disc_node {
  struct disc_node *next;
  struct export *e;                /* NULL: not a disconnect (unused) */
  struct nbd_worker_wait *wait;
};

struct nbd_worker_wait {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  unsigned pending, used, n;
  struct disc_node nodes[];
};

struct nbd_worker {
  unsigned id;
  pthread_t thread;
  bool started;
  int epfd;
  int wake_fd;
  struct raid_queue *q;
  bool own_queue;
  char tag_wake, tag_queue;        /* addresses used as epoll tags */

  /* Mailbox, under lock. */
  pthread_mutex_t lock;
  struct conn *incoming;
  struct disc_node *discs;
  bool stop;

  /* The worker thread's own. */
  struct conn *conns;
  unsigned nconns;
  struct conn *dirty;
  struct disc_node *pending;       /* disconnects not yet complete */
  bool stopping;
  bool need_run;                   /* submitted since raid_queue_run() */
  size_t freed;                    /* buffer bytes freed since the last trim */
};

static void conn_start_closing(struct conn *c);

/* ---- helpers --------------------------------------------------------------- */

uint32_t
nbd_errno_to_wire(int err)
{
  switch (err < 0 ? -err : err) {
  case 0: return NBD_SUCCESS;
  case EPERM: case EROFS: return NBD_EPERM;
  case EIO: return NBD_EIO;
  case ENOMEM: return NBD_ENOMEM;
  case EINVAL: return NBD_EINVAL;
  case ENOSPC: case EFBIG: return NBD_ENOSPC;
  case EOVERFLOW: return NBD_EOVERFLOW;
  case ENOTSUP: return NBD_ENOTSUP;
  case ESHUTDOWN: return NBD_ESHUTDOWN;
  default: return NBD_EIO;
  }
}

static const char *
cmd_name(uint16_t type)
{
  switch (type) {
  case NBD_CMD_READ: return "read";
  case NBD_CMD_WRITE: return "write";
  case NBD_CMD_DISC: return "disconnect";
  case NBD_CMD_FLUSH: return "flush";
  case NBD_CMD_TRIM: return "trim";
  case NBD_CMD_CACHE: return "cache";
  case NBD_CMD_WRITE_ZEROES: return "write zeroes";
  case NBD_CMD_BLOCK_STATUS: return "block status";
  default: return "unknown command";
  }
}

static void
mark_dirty(struct conn *c)
{
  if (!c->dirty) {
    c->dirty = true;
    c->dirty_next = c->w->dirty;
    c->w->dirty = c;
  }
}

static bool
throttled(const struct conn *c)
{
  return c->nreqs >= NBD_MAX_IN_FLIGHT || c->bytes >= NBD_MAX_BYTES_IN_FLIGHT;
}

static void
req_free(struct req *r)
{
  struct conn *c = r->c;

  if (r->buf) {
    free(r->buf);
    c->bytes -= r->count;
    c->w->freed += r->count;
  }
  c->nreqs--;
  free(r);
}

/* ---- replies ------------------------------------------------------------------ */

static void __attribute__((format(printf, 3, 4)))
req_set_error(struct req *r, uint32_t error, const char *fmt, ...)
{
  va_list ap;

  r->error = error;
  va_start(ap, fmt);
  vsnprintf(r->msg, sizeof r->msg, fmt, ap);
  va_end(ap);
}

/* Build the reply in R and queue it on its connection. */
static void
req_reply(struct req *r)
{
  struct conn *c = r->c;
  bool data = r->type == NBD_CMD_READ && r->error == 0;

  r->iov_first = 0;
  if (!c->structured) {
    struct nbd_simple_reply s = {
      .magic = htobe32(NBD_SIMPLE_REPLY_MAGIC),
      .error = htobe32(r->error),
      .cookie = r->cookie,           /* opaque: echoed as received */
    };
    memcpy(r->hdr, &s, sizeof s);
    r->iov[0] = (struct iovec){ r->hdr, sizeof s };
    r->niov = 1;
  }
  else if (r->error) {
    size_t msglen = strlen(r->msg);
    struct nbd_structured_reply s = {
      .magic = htobe32(NBD_STRUCTURED_REPLY_MAGIC),
      .flags = htobe16(NBD_REPLY_FLAG_DONE),
      .type = htobe16(NBD_REPLY_TYPE_ERROR),
      .cookie = r->cookie,
      .length = htobe32(sizeof(struct nbd_chunk_error) + msglen),
    };
    struct nbd_chunk_error e = {
      .error = htobe32(r->error),
      .msglen = htobe16((uint16_t)msglen),
    };
    memcpy(r->hdr, &s, sizeof s);
    memcpy(r->hdr + sizeof s, &e, sizeof e);
    r->iov[0] = (struct iovec){ r->hdr, sizeof s + sizeof e };
    r->iov[1] = (struct iovec){ r->msg, msglen };
    r->niov = msglen ? 2 : 1;
  }
  else {
    struct nbd_structured_reply s = {
      .magic = htobe32(NBD_STRUCTURED_REPLY_MAGIC),
      .flags = htobe16(NBD_REPLY_FLAG_DONE),
      .type = htobe16(data ? NBD_REPLY_TYPE_OFFSET_DATA : NBD_REPLY_TYPE_NONE),
      .cookie = r->cookie,
      .length = htobe32(data ? 8 + r->count : 0),
    };
    uint64_t off = htobe64(r->offset);

    memcpy(r->hdr, &s, sizeof s);
    if (data)
      memcpy(r->hdr + sizeof s, &off, 8);
    r->iov[0] = (struct iovec){ r->hdr, sizeof s + (data ? 8 : 0) };
    r->niov = 1;
  }
  if (data)
    r->iov[r->niov++] = (struct iovec){ r->buf, r->count };

  if (c->dead) {
    req_free(r);
    mark_dirty(c);
    return;
  }
  r->next = NULL;
  if (c->out_tail)
    c->out_tail->next = r;
  else
    c->out_head = r;
  c->out_tail = r;
  mark_dirty(c);
}

static void
conn_drop_output(struct conn *c)
{
  struct req *r;

  while ((r = c->out_head) != NULL) {
    c->out_head = r->next;
    req_free(r);
  }
  c->out_tail = NULL;
}

/* Send as much of the output list as the socket takes. */
static void
conn_flush(struct conn *c)
{
  while (c->out_head && !c->dead) {
    struct iovec iov[MAX_IOV];
    size_t n = 0;
    ssize_t w;

    for (struct req *r = c->out_head; r && n < MAX_IOV; r = r->next)
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
      conn_start_closing(c);
      break;
    }
    /* Consume W bytes from the front of the list. */
    while (w > 0 || (c->out_head && c->out_head->iov_first == c->out_head->niov)) {
      struct req *r = c->out_head;
      struct iovec *v;

      if (r->iov_first == r->niov) {
        c->out_head = r->next;
        if (c->out_head == NULL)
          c->out_tail = NULL;
        req_free(r);
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

/* ---- requests --------------------------------------------------------------------- */

static void
req_done(void *opaque, int result)
{
  struct req *r = opaque;
  struct conn *c = r->c;

  if (result == 0 && r->flush_after) {
    r->flush_after = false;
    result = raid_aio_flush(c->w->q, c->a, req_done, r);
    if (result == 0) {
      c->w->need_run = true;
      return;
    }
  }
  c->busy--;
  if (result < 0) {
    req_set_error(r, nbd_errno_to_wire(result), "%s of %u bytes at offset %llu: %s",
                  cmd_name(r->type), r->count, (unsigned long long)r->offset,
                  strerror(-result));
    if (c->errors_logged++ < 10)
      log_warn("nbd: %s (export %s): %s", c->peer, export_name(c->exp), r->msg);
  }
  req_reply(r);
}

/* Check R against the export: 0 or an NBD_E* with a message set. */
static uint32_t
req_validate(struct conn *c, struct req *r)
{
  uint16_t allowed = NBD_CMD_FLAG_FUA;    /* harmless on every command */
  bool writes = false, range_einval = false;

  switch (r->type) {
  case NBD_CMD_READ:
    if (c->structured)
      allowed |= NBD_CMD_FLAG_DF;         /* one chunk is never fragmented */
    range_einval = true;
    break;
  case NBD_CMD_CACHE:
    range_einval = true;
    break;
  case NBD_CMD_TRIM:
    /* Not advertised on RAID 5 (see nbd_export_tflags()): the protocol
     * says a client MUST NOT send it then.  Refused as nbdkit does, not
     * ignored: a success would claim a discard that did not happen. */
    if (!(c->tflags & NBD_FLAG_SEND_TRIM) && !(c->tflags & NBD_FLAG_READ_ONLY)) {
      req_set_error(r, NBD_EINVAL, "trim: not supported on this export (RAID 5: "
                    "use write zeroes)");
      return r->error;
    }
    writes = true;
    break;
  case NBD_CMD_WRITE:
    writes = true;
    break;
  case NBD_CMD_WRITE_ZEROES:
    allowed |= NBD_CMD_FLAG_NO_HOLE;
    writes = true;
    break;
  case NBD_CMD_FLUSH:
    return 0;
  default:
    req_set_error(r, NBD_EINVAL, "unsupported command %u", r->type);
    return r->error;
  }
  if (r->flags & ~allowed) {
    req_set_error(r, NBD_EINVAL, "%s: unsupported flags 0x%x", cmd_name(r->type),
                  r->flags & ~allowed);
    return r->error;
  }
  if (writes && (c->tflags & NBD_FLAG_READ_ONLY)) {
    req_set_error(r, NBD_EPERM, "%s: the export is read-only", cmd_name(r->type));
    return r->error;
  }
  if (r->count == 0) {
    req_set_error(r, NBD_EINVAL, "%s of 0 bytes", cmd_name(r->type));
    return r->error;
  }
  if (r->offset > c->size || r->count > c->size - r->offset) {
    req_set_error(r, range_einval ? NBD_EINVAL : NBD_ENOSPC,
                  "%s of %u bytes at offset %llu is beyond the end of the export "
                  "(%llu bytes)", cmd_name(r->type), r->count,
                  (unsigned long long)r->offset, (unsigned long long)c->size);
    return r->error;
  }
  if ((r->type == NBD_CMD_READ || r->type == NBD_CMD_WRITE) &&
      r->count > NBD_MAX_PAYLOAD) {
    req_set_error(r, c->structured ? NBD_EOVERFLOW : NBD_EINVAL,
                  "%s of %u bytes is over the maximum block size %u",
                  cmd_name(r->type), r->count, NBD_MAX_PAYLOAD);
    return r->error;
  }
  if (r->offset % c->min_block || r->count % c->min_block) {
    req_set_error(r, NBD_EINVAL, "%s of %u bytes at offset %llu is not aligned "
                  "to the minimum block size %u", cmd_name(r->type), r->count,
                  (unsigned long long)r->offset, c->min_block);
    return r->error;
  }
  return 0;
}

static int
req_alloc_buf(struct req *r)
{
  if (posix_memalign(&r->buf, BUF_ALIGN, r->count) != 0) {
    r->buf = NULL;
    req_set_error(r, NBD_ENOMEM, "out of memory for %u bytes", r->count);
    return -1;
  }
  r->c->bytes += r->count;
  return 0;
}

/* Submit a validated request (a WRITE with its payload in). */
static void
req_submit(struct req *r)
{
  struct conn *c = r->c;
  struct raid_queue *q = c->w->q;
  unsigned fua = (r->flags & NBD_CMD_FLAG_FUA) ? RAID_REQ_FUA : 0;
  int ret;

  switch (r->type) {
  case NBD_CMD_READ:
    if (req_alloc_buf(r) < 0) {
      req_reply(r);
      return;
    }
    ret = raid_aio_read(q, c->a, r->buf, r->count, r->offset, req_done, r);
    break;
  case NBD_CMD_WRITE:
    ret = raid_aio_write(q, c->a, r->buf, r->count, r->offset, fua, req_done, r);
    break;
  case NBD_CMD_FLUSH:
    ret = raid_aio_flush(q, c->a, req_done, r);
    break;
  case NBD_CMD_TRIM:
    r->flush_after = fua != 0;
    ret = raid_aio_discard(q, c->a, r->count, r->offset, req_done, r);
    break;
  case NBD_CMD_WRITE_ZEROES:
    /* The library's discard reads back as zeroes on every level (on RAID 5
     * whole stripes are discarded on every member, parity included), so
     * without NO_HOLE the range may become holes in the members: a write
     * of zeroes over a gigabyte then allocates nothing.  With NO_HOLE the
     * members allocate the range (zero range, or zeroes written). */
    if (r->flags & NBD_CMD_FLAG_NO_HOLE)
      ret = raid_aio_write_zeroes(q, c->a, r->count, r->offset, fua, req_done, r);
    else {
      r->flush_after = fua != 0;
      ret = raid_aio_discard(q, c->a, r->count, r->offset, req_done, r);
    }
    break;
  case NBD_CMD_CACHE:
    /* Nothing to prefetch into: members are read on demand. */
    req_reply(r);
    return;
  default:                      /* req_check() let through only the above */
    req_set_error(r, NBD_EINVAL, "unsupported command %u", r->type);
    req_reply(r);
    return;
  }
  if (ret < 0) {
    req_set_error(r, nbd_errno_to_wire(ret), "%s", raid_get_error());
    if (c->errors_logged++ < 10)
      log_warn("nbd: %s (export %s): %s refused: %s", c->peer,
               export_name(c->exp), cmd_name(r->type), r->msg);
    req_reply(r);
    return;
  }
  c->busy++;
  c->w->need_run = true;
}

/* Parse the request header at the front of c->in.  Returns -1 when the
 * connection must close. */
static int
conn_parse_header(struct conn *c)
{
  struct nbd_request h;
  struct req *r;

  memcpy(&h, c->in + c->in_start, sizeof h);
  c->in_start += sizeof h;
  if (be32toh(h.magic) != NBD_REQUEST_MAGIC) {
    log_warn("nbd: %s (export %s): bad request magic 0x%08x, closing the connection",
             c->peer, export_name(c->exp), be32toh(h.magic));
    return -1;
  }
  if ((r = calloc(1, sizeof *r)) == NULL) {
    log_err("nbd: %s (export %s): out of memory, closing", c->peer,
            export_name(c->exp));
    return -1;
  }
  r->c = c;
  r->cookie = h.cookie;
  r->offset = be64toh(h.offset);
  r->count = be32toh(h.count);
  r->type = be16toh(h.type);
  r->flags = be16toh(h.flags);
  c->nreqs++;

  if (r->type == NBD_CMD_DISC) {
    log_debug("nbd: %s (export %s): client sent disconnect", c->peer,
              export_name(c->exp));
    req_free(r);
    return -1;
  }
  if (r->type == NBD_CMD_WRITE) {
    if (r->count > NBD_MAX_PAYLOAD) {
      log_warn("nbd: %s (export %s): write of %u bytes (over the %u byte limit), "
               "closing the connection", c->peer, export_name(c->exp), r->count,
               NBD_MAX_PAYLOAD);
      req_free(r);
      return -1;
    }
    if (req_validate(c, r) != 0 || req_alloc_buf(r) < 0) {
      if (r->count == 0) {
        req_reply(r);
        return 0;
      }
      c->rs = RS_SKIP;
      c->skip_left = r->count;
    }
    else {
      c->rs = RS_PAYLOAD;
      c->got = 0;
    }
    c->cur = r;
    return 0;
  }
  if (req_validate(c, r) != 0)
    req_reply(r);
  else
    req_submit(r);
  return 0;
}

/* Read and parse what the socket has. */
static void
conn_input(struct conn *c)
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
        return;                         /* conn_update resumes */
      if (avail >= sizeof(struct nbd_request)) {
        if (budget-- == 0) {
          mark_dirty(c);                /* fairness: more next turn */
          return;
        }
        if (conn_parse_header(c) < 0)
          conn_start_closing(c);
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
        struct req *r = c->cur;

        c->cur = NULL;
        c->rs = RS_HEADER;
        req_submit(r);
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
        struct req *r = c->cur;

        c->cur = NULL;
        c->rs = RS_HEADER;
        req_reply(r);
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
      conn_start_closing(c);
      return;
    }
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      return;
    log_info("nbd: %s (export %s): receive: %m, closing", c->peer, export_name(c->exp));
    c->dead = true;
    conn_start_closing(c);
    return;
  }
}

/* ---- connection lifecycle ---------------------------------------------------------- */

static void
conn_start_closing(struct conn *c)
{
  if (!c->closing) {
    c->closing = true;
    /* A WRITE whose payload is half read never reached the library. */
    if (c->cur) {
      req_free(c->cur);
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
  mark_dirty(c);
}

static void
conn_free(struct conn *c)
{
  struct nbd_worker *w = c->w;

  /* Marked dirty again while conn_update() ran (a send failing, the
   * closing starting): off w->dirty, or worker_settle() would update it
   * after the free. */
  if (c->dirty) {
    struct conn **pp = &w->dirty;

    while (*pp && *pp != c)
      pp = &(*pp)->dirty_next;
    if (*pp)
      *pp = c->dirty_next;
  }
  conn_drop_output(c);
  if (c->cur)
    req_free(c->cur);
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
static void
conn_update(struct conn *c)
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

static void
conn_event(struct conn *c, uint32_t events)
{
  if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN)) {
    /* Hung up and nothing left to read. */
    c->dead = true;
    conn_start_closing(c);
    return;
  }
  if (events & EPOLLOUT)
    c->out_blocked = false;
  if (events & EPOLLIN)
    conn_input(c);
  mark_dirty(c);
}

/* Take over CLIENT on the worker thread. */
static void
worker_adopt(struct nbd_worker *w, struct conn *c)
{
  struct epoll_event e = { .events = EPOLLIN, .data.ptr = c };

  c->w = w;
  c->next = w->conns;
  c->prev = NULL;
  if (w->conns)
    w->conns->prev = c;
  w->conns = c;
  w->nconns++;
  if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, c->fd, &e) < 0) {
    log_err("nbd: %s (export %s): epoll_ctl: %m, closing", c->peer,
            export_name(c->exp));
    c->dead = true;
    conn_start_closing(c);
    return;
  }
  c->registered = true;
  c->events = EPOLLIN;
  log_info("nbd: %s: connected to export %s (%s replies, worker %u)", c->peer,
           export_name(c->exp), c->structured ? "structured" : "simple", w->id);
  if (w->stopping)
    conn_start_closing(c);
  else if (nbd_io_pending(c->tls))
    mark_dirty(c);                 /* a request came in the handshake's last record */
}

static struct conn *
conn_new(struct nbd_client *client)
{
  struct conn *c = calloc(1, sizeof *c);

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

/* ---- workers ------------------------------------------------------------------------ */

static void
disc_complete(struct disc_node *d)
{
  struct nbd_worker_wait *wait = d->wait;

  pthread_mutex_lock(&wait->lock);
  wait->pending--;
  pthread_cond_broadcast(&wait->cond);
  pthread_mutex_unlock(&wait->lock);
}

static void
worker_mailbox(struct nbd_worker *w)
{
  struct conn *in, *c;
  struct disc_node *d;
  uint64_t v;
  ssize_t n;

  n = read(w->wake_fd, &v, sizeof v);
  (void)n;
  pthread_mutex_lock(&w->lock);
  in = w->incoming;
  w->incoming = NULL;
  d = w->discs;
  w->discs = NULL;
  if (w->stop)
    w->stopping = true;
  pthread_mutex_unlock(&w->lock);

  while ((c = in) != NULL) {
    in = c->next;
    worker_adopt(w, c);
  }
  while (d != NULL) {
    struct disc_node *next = d->next;

    for (c = w->conns; c; c = c->next)
      if (c->exp == d->e)
        conn_start_closing(c);
    d->next = w->pending;
    w->pending = d;
    d = next;
  }
  if (w->stopping)
    for (c = w->conns; c; c = c->next)
      conn_start_closing(c);
}

/* Signal the disconnects whose connections are all gone. */
static void
worker_check_discs(struct nbd_worker *w)
{
  struct disc_node **pp = &w->pending;

  while (*pp) {
    struct disc_node *d = *pp;
    bool any = false;

    for (struct conn *c = w->conns; c && !any; c = c->next)
      any = c->exp == d->e;
    if (any)
      pp = &d->next;
    else {
      *pp = d->next;
      disc_complete(d);
    }
  }
}

/* Run the queue and update dirty connections until nothing moves (or a
 * bound, to get back to epoll).  Returns true if work remains.
 *
 * The queue runs only when there is something for it: a request submitted
 * (need_run, set by the submitter) or its fd readable (need_run, set by
 * the epoll loop: member completions).  One raid_queue_run() takes all
 * that is ready, the completions its callbacks defer included; a callback
 * that submits more (a flush after a TRIM) sets need_run for another
 * round.  Each call costs a system call (it clears the queue's eventfd),
 * which on a small machine is a good part of a request's cost. */
static bool
worker_settle(struct nbd_worker *w)
{
  for (int round = 0; round < 8; round++) {
    struct conn *list;

    if (w->need_run) {
      w->need_run = false;
      if (raid_queue_run(w->q, 0) < 0)
        log_err("nbd: worker %u: raid_queue_run: %s", w->id, raid_get_error());
    }
    if (w->dirty == NULL && !w->need_run)
      return false;
    list = w->dirty;
    w->dirty = NULL;
    while (list) {
      struct conn *c = list;

      list = c->dirty_next;
      c->dirty = false;
      conn_update(c);              /* may free c, may mark others dirty */
    }
  }
  return w->dirty != NULL || w->need_run;
}

/* Memory.  Request buffers (up to 32 MiB) come from malloc, which raidd
 * tells to keep them in its heaps (see main()): a fresh mmap for each
 * would cost page faults and zeroing on every request.  So after a burst
 * of large requests the heaps hold what the burst needed.  When a worker
 * has had nothing to do for a second after freeing buffers, it gives the
 * free part of every heap back to the kernel (malloc_trim), so raidd's
 * resident memory returns to its idle size after any workload, and a
 * steady workload keeps its buffers. */
#define TRIM_IDLE_MS 1000
#define TRIM_MIN_FREED (4u << 20)

static void
worker_trim(struct nbd_worker *w)
{
  if (w->freed >= TRIM_MIN_FREED) {
    malloc_trim(0);
    w->freed = 0;
  }
}

static void
worker_loop(struct nbd_worker *w, bool until_idle)
{
  struct epoll_event evs[64];
  bool more = false;

  for (;;) {
    int timeout = more ? 0 : w->nconns || w->freed >= TRIM_MIN_FREED ? TRIM_IDLE_MS : -1;
    int n = epoll_wait(w->epfd, evs, 64, timeout);
    bool idle = n == 0 && timeout > 0;    /* a second without events */

    if (n < 0) {
      if (errno != EINTR) {
        log_err("nbd: worker %u: epoll_wait: %m", w->id);
        usleep(10000);
      }
      n = 0;
    }
    for (int i = 0; i < n; i++) {
      void *p = evs[i].data.ptr;

      if (p == &w->tag_wake)
        worker_mailbox(w);
      else if (p == &w->tag_queue)
        w->need_run = true;
      else
        conn_event(p, evs[i].events);
    }
    if (n == 0 && timeout != 0) {
      for (struct conn *c = w->conns; c; c = c->next)
        if (c->closing)
          mark_dirty(c);          /* drain deadlines */
    }
    if (idle)
      worker_trim(w);
    more = worker_settle(w);
    worker_check_discs(w);
    if ((w->stopping || until_idle) && w->nconns == 0 && !more) {
      pthread_mutex_lock(&w->lock);
      bool empty = w->incoming == NULL;
      pthread_mutex_unlock(&w->lock);
      if (empty)
        break;
    }
  }
}

static void *
worker_main(void *arg)
{
  worker_loop(arg, false);
  return NULL;
}

static int
worker_init(struct nbd_worker *w, unsigned id, struct raid_queue *q)
{
  struct epoll_event e = { .events = EPOLLIN };
  int r;

  w->id = id;
  w->epfd = w->wake_fd = -1;
  pthread_mutex_init(&w->lock, NULL);
  if (q)
    w->q = q;
  else if ((r = raid_queue_new(256, &w->q)) < 0) {
    log_err("nbd: worker %u: %s", id, raid_get_error());
    return r;
  }
  else
    w->own_queue = true;
  if ((w->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
      (w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
    goto fail;
  e.data.ptr = &w->tag_wake;
  if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->wake_fd, &e) < 0)
    goto fail;
  e.data.ptr = &w->tag_queue;
  if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, raid_queue_fd(w->q), &e) < 0)
    goto fail;
  return 0;

fail:
  r = -errno;
  log_err("nbd: worker %u: %m", id);
  return r;
}

static void
worker_fini(struct nbd_worker *w)
{
  if (w->epfd >= 0)
    close(w->epfd);
  if (w->wake_fd >= 0)
    close(w->wake_fd);
  if (w->own_queue && w->q)
    raid_queue_free(w->q);
  pthread_mutex_destroy(&w->lock);
}

int
nbd_worker_new(unsigned id, struct nbd_worker **wp)
{
  struct nbd_worker *w = calloc(1, sizeof *w);
  int r;

  if (w == NULL)
    return -ENOMEM;
  if ((r = worker_init(w, id, NULL)) < 0) {
    worker_fini(w);
    free(w);
    return r;
  }
  *wp = w;
  return 0;
}

int
nbd_worker_start(struct nbd_worker *w)
{
  int r = pthread_create(&w->thread, NULL, worker_main, w);

  if (r) {
    log_err("nbd: worker %u: pthread_create: %s", w->id, strerror(r));
    return -r;
  }
  w->started = true;
  return 0;
}

static void
worker_wake(struct nbd_worker *w)
{
  uint64_t one = 1;
  ssize_t n = write(w->wake_fd, &one, sizeof one);

  (void)n;                         /* EAGAIN: already readable */
}

void
nbd_worker_add(struct nbd_worker *w, struct nbd_client *client)
{
  struct conn *c = conn_new(client);

  if (c == NULL) {
    log_err("nbd: %s (export %s): out of memory, closing", client->peer,
            export_name(client->exp));
    nbd_tls_free(client->tls);
    close(client->fd);
    export_put(client->exp);
    return;
  }
  pthread_mutex_lock(&w->lock);
  c->next = w->incoming;
  w->incoming = c;
  pthread_mutex_unlock(&w->lock);
  worker_wake(w);
}

struct nbd_worker_wait *
nbd_worker_wait_new(unsigned nworkers)
{
  struct nbd_worker_wait *wait =
    calloc(1, sizeof *wait + nworkers * sizeof wait->nodes[0]);

  if (wait == NULL)
    return NULL;
  pthread_mutex_init(&wait->lock, NULL);
  pthread_cond_init(&wait->cond, NULL);
  wait->n = nworkers;
  return wait;
}

void
nbd_worker_disconnect(struct nbd_worker *w, struct export *e,
                      struct nbd_worker_wait *wait)
{
  struct disc_node *d;

  if (wait->used == wait->n)
    return;
  d = &wait->nodes[wait->used++];
  d->e = e;
  d->wait = wait;
  pthread_mutex_lock(&wait->lock);
  wait->pending++;
  pthread_mutex_unlock(&wait->lock);
  pthread_mutex_lock(&w->lock);
  d->next = w->discs;
  w->discs = d;
  pthread_mutex_unlock(&w->lock);
  worker_wake(w);
}

void
nbd_worker_wait_finish(struct nbd_worker_wait *wait)
{
  pthread_mutex_lock(&wait->lock);
  while (wait->pending > 0)
    pthread_cond_wait(&wait->cond, &wait->lock);
  pthread_mutex_unlock(&wait->lock);
  pthread_cond_destroy(&wait->cond);
  pthread_mutex_destroy(&wait->lock);
  free(wait);
}

void
nbd_worker_stop_and_free(struct nbd_worker *w)
{
  if (w->started) {
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_mutex_unlock(&w->lock);
    worker_wake(w);
    pthread_join(w->thread, NULL);
  }
  /* Anything still in the mailbox never reached the thread. */
  while (w->incoming) {
    struct conn *c = w->incoming;

    w->incoming = c->next;
    nbd_tls_free(c->tls);
    close(c->fd);
    export_conn_add(c->exp, -1);
    export_put(c->exp);
    free(c->in);
    free(c);
  }
  while (w->discs) {
    struct disc_node *d = w->discs;

    w->discs = d->next;
    disc_complete(d);
  }
  worker_fini(w);
  free(w);
}

void
nbd_conn_serve_here(struct raid_queue *q, struct nbd_client *client)
{
  struct nbd_worker w = { 0 };
  struct conn *c;

  if (worker_init(&w, 0, q) < 0 || (c = conn_new(client)) == NULL) {
    nbd_tls_free(client->tls);
    close(client->fd);
    export_put(client->exp);
    worker_fini(&w);
    return;
  }
  worker_adopt(&w, c);
  worker_loop(&w, true);
  worker_fini(&w);
}
