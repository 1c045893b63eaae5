/* Internals shared by the NBD server's files, one section per file.
 * The public face of the server is the nbd_server_* section of raidd.h. */
#ifndef RAIDD_NBD_INTERNAL_H
#define RAIDD_NBD_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "raidd.h"

/* Limits a client cannot push past. */
#define NBD_MAX_OPTION_LEN   (64u << 10)   /* bytes of one option's data */
#define NBD_MAX_OPTIONS      256u          /* options in one handshake */
#define NBD_HANDSHAKE_SECS   30            /* whole handshake, then closed */
#define NBD_MAX_PAYLOAD      RAID_MAX_REQUEST
#define NBD_MAX_IN_FLIGHT    128u          /* requests read and not yet replied */
#define NBD_MAX_BYTES_IN_FLIGHT (64u << 20) /* buffer bytes held per connection */
#define NBD_DRAIN_SECS       10            /* a closing connection's replies */
#define NBD_PEER_MAX         96

/* ---- nbd-server.c -------------------------------------------------------- */

struct nbd_client;

/* True once nbd_server_stop() has begun: handshakes give up. */
bool nbd_server_stopping(void);
/* Hand CLIENT, past its handshake, to a worker (round-robin): 0, or
 * -ESHUTDOWN when the server is not running (its fd closed and its export
 * reference dropped here). */
int nbd_server_add_client(struct nbd_client *client);

/* ---- nbd-acl.c: --allow --------------------------------------------------------- */

/* May the TCP client at SA connect?  ACL NULL: everyone. */
bool nbd_acl_allows(const struct nbd_acl *acl, const struct sockaddr *sa);

/* ---- nbd-tls.c: the transport, plain or TLS ---------------------------------- */

/* One TLS session on one socket.  A connection without TLS has none (NULL),
 * and its I/O is the plain socket calls below, with nothing in between. */
struct nbd_tls;

/* Check CFG's TLS options and load the credentials: 0, or -errno (logged,
 * naming the option and the file). */
int nbd_tls_init(const struct nbd_server_config *cfg);
void nbd_tls_fini(void);
/* The mode in force (NBD_TLS_OFF before nbd_tls_init()). */
enum nbd_tls_mode nbd_tls_mode(void);

/* A server session on FD, for PEER (logs).  0 or -errno (logged). */
int nbd_tls_new(int fd, const char *peer, struct nbd_tls **tp);
/* Drive the TLS handshake: 0 done; -EAGAIN: call again once FD is ready
 * for *EVENTS (POLLIN or POLLOUT); -EPROTO: failed (logged). */
int nbd_tls_handshake(struct nbd_tls *t, short *events);
/* Send close_notify if the socket takes it, free the session (NULL: no-op).
 * The socket stays open. */
void nbd_tls_free(struct nbd_tls *t);
/* recv() and sendmsg() through the session: bytes, 0 at end of input,
 * or -1 with errno (EAGAIN, EINTR, EPROTO, ...).  After EAGAIN, a send
 * MUST be repeated with the same first buffer (GnuTLS holds the record). */
ssize_t nbd_tls_recv(struct nbd_tls *t, void *buf, size_t len);
ssize_t nbd_tls_sendv(struct nbd_tls *t, const struct iovec *iov, size_t n);
/* Decrypted bytes waiting in the session, which epoll cannot see. */
bool nbd_tls_pending(struct nbd_tls *t);

static inline ssize_t
nbd_io_recv(int fd, struct nbd_tls *t, void *buf, size_t len)
{
  return t ? nbd_tls_recv(t, buf, len) : recv(fd, buf, len, 0);
}

static inline ssize_t
nbd_io_sendv(int fd, struct nbd_tls *t, struct iovec *iov, size_t n)
{
  struct msghdr m = { .msg_iov = iov, .msg_iovlen = n };

  return t ? nbd_tls_sendv(t, iov, n) : sendmsg(fd, &m, MSG_NOSIGNAL);
}

static inline bool
nbd_io_pending(struct nbd_tls *t)
{
  return t && nbd_tls_pending(t);
}

/* ---- nbd-handshake.c -------------------------------------------------------- */

/* What a successful handshake hands to the transmission phase. */
struct nbd_client {
  int fd;                          /* connected socket, non-blocking */
  struct nbd_tls *tls;             /* NULL: plain */
  char peer[NBD_PEER_MAX];         /* "unix pid 123 uid 0", "[::1]:41000" */
  struct export *exp;              /* reference (export_get) */
  bool structured;                 /* NBD_OPT_STRUCTURED_REPLY agreed */
  uint16_t tflags;                 /* transmission flags sent */
  uint32_t min_block;              /* alignment demanded of requests */
  bool kernel;                     /* the kernel's NBD client (nbd-attach.c):
                                      not counted in export_conns() */
};

/* Run the fixed newstyle handshake on FD (non-blocking) with a deadline of
 * NBD_HANDSHAKE_SECS.  0: *CLIENT is ready for transmission (it owns FD, its
 * TLS session if any and the export reference).  -1: the client went away,
 * aborted or misbehaved (logged); FD is still open and the caller closes it. */
int nbd_handshake(int fd, const char *peer, struct nbd_client *client);

/* Transmission flags and block size constraints advertised for E. */
uint16_t nbd_export_tflags(const struct export *e);
void nbd_export_block_sizes(const struct export *e, uint32_t *minimum,
                            uint32_t *preferred, uint32_t *maximum);

/* ---- nbd-request.c: one request, from its header to its reply ----------- */

struct nbd_conn;
struct nbd_worker;

struct nbd_req {
  struct nbd_req *next;            /* in c->out */
  struct nbd_conn *c;
  uint64_t cookie;
  uint64_t offset;
  uint32_t count;
  uint16_t type;
  uint16_t flags;
  void *buf;                       /* READ / WRITE data, 4 KiB-aligned */
  bool flush_after;                /* TRIM with FUA: flush, then reply */
  uint32_t error;                  /* NBD_E* to reply */
  char msg[160];                   /* for a structured error chunk */
  unsigned char hdr[32];           /* reply header (and chunk prefix) */
  struct iovec iov[3];             /* what remains to send */
  int iov_first, niov;
};

/* Map an errno from libraid (either sign) to an NBD_E* value. */
uint32_t nbd_errno_to_wire(int err);
/* Parse the request header at the front of c->in: the request is
 * submitted, answered at once (refused), or waits for its WRITE payload
 * (c->cur).  Returns -1 when the connection must close. */
int nbd_req_parse_header(struct nbd_conn *c);
/* Submit a validated request (a WRITE with its payload in). */
void nbd_req_submit(struct nbd_req *r);
/* Build the reply in R and queue it on its connection. */
void nbd_req_reply(struct nbd_req *r);
/* Free R and its buffer, and uncount them from its connection. */
void nbd_req_free(struct nbd_req *r);

/* ---- nbd-conn.c: one connection's life on its worker --------------------- */

enum nbd_rstate {
  RS_HEADER,                       /* waiting for a request header */
  RS_PAYLOAD,                      /* reading a WRITE payload into cur->buf */
  RS_SKIP,                         /* throwing away a refused WRITE's payload */
};

struct nbd_conn {
  struct nbd_conn *prev, *next;    /* w->conns */
  struct nbd_conn *dirty_next;     /* w->dirty */
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
  enum nbd_rstate rs;
  struct nbd_req *cur;             /* RS_PAYLOAD, RS_SKIP */
  size_t got;                      /* payload bytes received */
  size_t skip_left;

  /* Accounting. */
  unsigned nreqs;                  /* requests held, replies not yet sent */
  unsigned busy;                   /* of those, submitted to the library */
  size_t bytes;                    /* buffer bytes held */
  unsigned errors_logged;

  /* Output. */
  struct nbd_req *out_head, *out_tail;
  bool out_blocked;                /* sendmsg said EAGAIN: wait for EPOLLOUT */

  /* Lifecycle. */
  bool closing;
  bool dead;                       /* socket unusable: drop replies */
  bool registered;                 /* in the epoll set */
  uint32_t events;                 /* registered events */
  struct timespec drain_deadline;  /* tv_sec 0: not set */
};

/* A connection for CLIENT (its fd, TLS session and export reference),
 * counted in export_conns() unless the kernel's, not yet on a worker; NULL
 * when out of memory. */
struct nbd_conn *nbd_conn_new(struct nbd_client *client);
/* Update C at the end of this loop turn (nbd_conn_update()). */
void nbd_conn_mark_dirty(struct nbd_conn *c);
/* Read nothing more: C closes once its submitted requests are answered. */
void nbd_conn_start_closing(struct nbd_conn *c);
/* What epoll reported for C's socket. */
void nbd_conn_event(struct nbd_conn *c, uint32_t events);
/* Bring C up to date after anything happened to it.  May free C. */
void nbd_conn_update(struct nbd_conn *c);

/* ---- nbd-worker.c: the worker threads ------------------------------------ */

struct nbd_disc_node;
struct nbd_worker_wait;

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
  struct nbd_conn *incoming;
  struct nbd_disc_node *discs;
  bool stop;

  /* The worker thread's own. */
  struct nbd_conn *conns;
  unsigned nconns;
  struct nbd_conn *dirty;
  struct nbd_disc_node *pending;   /* disconnects not yet complete */
  bool stopping;
  bool need_run;                   /* submitted since raid_queue_run() */
  size_t freed;                    /* buffer bytes freed since the last trim */
};

/* A worker with its own raid_queue and epoll set; ID names it in logs. */
int nbd_worker_new(unsigned id, struct nbd_worker **wp);
/* Start its thread. */
int nbd_worker_start(struct nbd_worker *w);
/* Hand a connection to W (any thread).  W takes over CLIENT's fd and
 * export reference; on failure they are released here. */
void nbd_worker_add(struct nbd_worker *w, struct nbd_client *client);
/* Ask W to close every connection to E after finishing its requests
 * (E NULL: every connection, then the thread ends). */
void nbd_worker_disconnect(struct nbd_worker *w, struct export *e,
                           struct nbd_worker_wait *wait);
/* Stop W: close every connection gracefully, join the thread, free it. */
void nbd_worker_stop_and_free(struct nbd_worker *w);

/* Wait for several workers to finish a disconnect of one export. */
struct nbd_worker_wait *nbd_worker_wait_new(unsigned nworkers);
void nbd_worker_wait_finish(struct nbd_worker_wait *wait);   /* waits, frees */

/* Serve one connection on the calling thread until it closes, with queue
 * Q (fuzzing and tests). */
void nbd_conn_serve_here(struct raid_queue *q, struct nbd_client *client);

#endif /* RAIDD_NBD_INTERNAL_H */
