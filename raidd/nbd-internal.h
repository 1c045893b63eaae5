/* Internals shared by the NBD server's files, one section per file.
 * The public face of the server is the nbd_server_* section of raidd.h. */
#ifndef RAIDD_NBD_INTERNAL_H
#define RAIDD_NBD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
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

/* ---- nbd-conn.c --------------------------------------------------------------- */

/* Map an errno from libraid (either sign) to an NBD_E* value. */
uint32_t nbd_errno_to_wire(int err);

struct nbd_worker;
struct nbd_worker_wait;

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
