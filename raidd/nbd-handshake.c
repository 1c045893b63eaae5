/* The NBD fixed newstyle handshake and option haggling.
 *
 * Who runs this: nbd-server.c gives every accepted socket its own small
 * detached thread, which calls nbd_handshake() and, on success, hands the
 * socket to a worker.  The handshake is written as plain blocking code
 * (poll, then recv/send on the non-blocking socket) because a thread per
 * connection in this phase costs little and keeps the code linear; a slow
 * or silent client only holds its own thread, and only for
 * NBD_HANDSHAKE_SECS, after which it is dropped.  nbd_server_stop() makes
 * every handshake give up within a fraction of a second.
 *
 * The exchange (NetworkBlockDevice/nbd doc/proto.md, "Fixed newstyle
 * negotiation"):
 *   S: NBDMAGIC IHAVEOPT hflags(FIXED_NEWSTYLE | NO_ZEROES)
 *   C: cflags
 *   C: IHAVEOPT option length data      (repeated, at most NBD_MAX_OPTIONS)
 *   S: REP_MAGIC option reply length data   (one or more per option)
 * until NBD_OPT_GO or NBD_OPT_EXPORT_NAME picks an export (transmission
 * begins) or NBD_OPT_ABORT or a broken rule ends the connection.
 *
 * TLS (nbd-tls.c): with --tls=on or require, NBD_OPT_STARTTLS is answered
 * with ACK and the TLS handshake follows on the same socket; every byte
 * after it, here and in the transmission phase, goes through the session.
 * With --tls=require every other option but NBD_OPT_ABORT gets
 * NBD_REP_ERR_TLS_REQD until then, and NBD_OPT_EXPORT_NAME (which has no
 * error reply) closes the connection, as proto.md says.
 *
 * What a client may not do: send an option longer than NBD_MAX_OPTION_LEN,
 * more than NBD_MAX_OPTIONS options, a bad magic, or unknown client flags;
 * any of those closes the connection with a log line naming the peer.  An
 * option we do not know, or a malformed one whose length was sane, gets an
 * error reply and the haggling goes on.
 *
 * Nothing here touches shared state except through the thread-safe export
 * registry (export_get, exports_foreach).
 */
#include <config.h>

#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>

#include "deadline.h"
#include "nbd-internal.h"
#include "nbd-proto.h"

struct hs {
  int fd;
  struct nbd_tls *tls;             /* after NBD_OPT_STARTTLS, else NULL */
  const char *peer;
  struct timespec deadline;        /* CLOCK_MONOTONIC */
  bool fixed;                      /* client set NBD_FLAG_C_FIXED_NEWSTYLE */
  bool no_zeroes;                  /* client set NBD_FLAG_C_NO_ZEROES */
  bool structured;                 /* NBD_OPT_STRUCTURED_REPLY agreed */
  bool quiet;                      /* the failure was already logged */
  bool told_tls_reqd;              /* logged the first refusal for want of TLS */
};

/* ---- blocking I/O with a deadline ----------------------------------------- */

static int
ms_left(const struct hs *h)
{
  int64_t ms = deadline_ms_left(&h->deadline);

  return ms > 250 ? 250 : (int)ms;   /* wake up to check stop */
}

/* Wait until FD is ready for EVENTS: 0, or -1 on timeout, stop or error. */
static int
hs_wait(struct hs *h, short events)
{
  for (;;) {
    struct pollfd p = { .fd = h->fd, .events = events };
    int ms = ms_left(h), r;

    if (nbd_server_stopping()) {
      log_debug("nbd: %s: handshake abandoned, the server is stopping", h->peer);
      h->quiet = true;
      return -1;
    }
    if (ms == 0) {
      log_warn("nbd: %s: handshake not finished within %d seconds, closing",
               h->peer, NBD_HANDSHAKE_SECS);
      h->quiet = true;
      return -1;
    }
    r = poll(&p, 1, ms);
    if (r < 0 && errno != EINTR) {
      log_warn("nbd: %s: poll: %m, closing", h->peer);
      h->quiet = true;
      return -1;
    }
    if (r > 0)
      return 0;
  }
}

static int
hs_recv(struct hs *h, void *buf, size_t len)
{
  char *p = buf;

  while (len > 0) {
    ssize_t n = nbd_io_recv(h->fd, h->tls, p, len);

    if (n > 0) {
      p += n;
      len -= n;
    }
    else if (n == 0) {
      log_debug("nbd: %s: client closed the connection during the handshake",
                h->peer);
      h->quiet = true;
      return -1;
    }
    else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (hs_wait(h, POLLIN) < 0)
        return -1;
    }
    else if (errno != EINTR) {
      log_info("nbd: %s: receive during the handshake: %m, closing", h->peer);
      h->quiet = true;
      return -1;
    }
  }
  return 0;
}

static int
hs_send(struct hs *h, const void *buf, size_t len)
{
  const char *p = buf;

  while (len > 0) {
    struct iovec v = { .iov_base = (void *)p, .iov_len = len };
    ssize_t n = nbd_io_sendv(h->fd, h->tls, &v, 1);

    if (n >= 0) {
      p += n;
      len -= n;
    }
    else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (hs_wait(h, POLLOUT) < 0)
        return -1;
    }
    else if (errno == EPIPE || errno == ECONNRESET) {
      log_debug("nbd: %s: client went away during the handshake", h->peer);
      h->quiet = true;
      return -1;
    }
    else if (errno != EINTR) {
      log_info("nbd: %s: send during the handshake: %m, closing", h->peer);
      h->quiet = true;
      return -1;
    }
  }
  return 0;
}

/* One option reply: header and LEN bytes of DATA, in one send. */
static int
send_reply(struct hs *h, uint32_t option, uint32_t reply,
           const void *data, size_t len)
{
  struct nbd_option_reply hdr = {
    .magic = htobe64(NBD_REP_MAGIC),
    .option = htobe32(option),
    .reply = htobe32(reply),
    .len = htobe32((uint32_t)len),
  };
  char stackbuf[512], *buf = stackbuf;
  int r;

  if (sizeof hdr + len > sizeof stackbuf && (buf = malloc(sizeof hdr + len)) == NULL) {
    log_err("nbd: %s: out of memory", h->peer);
    h->quiet = true;
    return -1;
  }
  memcpy(buf, &hdr, sizeof hdr);
  if (len)
    memcpy(buf + sizeof hdr, data, len);
  r = hs_send(h, buf, sizeof hdr + len);
  if (buf != stackbuf)
    free(buf);
  return r;
}

/* An error reply with a human message, as the spec allows. */
static int __attribute__((format(printf, 4, 5)))
send_error(struct hs *h, uint32_t option, uint32_t reply, const char *fmt, ...)
{
  char msg[256];
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n < 0)
    n = 0;
  if ((size_t)n >= sizeof msg)
    n = sizeof msg - 1;
  log_debug("nbd: %s: option %u refused: %s", h->peer, option, msg);
  return send_reply(h, option, reply, msg, n);
}

/* ---- exports ------------------------------------------------------------------ */

uint16_t
nbd_export_tflags(const struct export *e)
{
  uint16_t f = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_CACHE |
               NBD_FLAG_CAN_MULTI_CONN;

  /* CAN_MULTI_CONN is honest: every connection drives the same array, and
   * raid_aio_flush() makes everything completed before it stable on every
   * member, whichever connection wrote it.  No SEND_FAST_ZERO: writing
   * zeroes may be as slow as writing data.
   *
   * No SEND_TRIM on RAID 5, as md by default: a discard there must keep
   * parity right, so it is a write of zeroes through the stripe logic,
   * not the cheap hint a client expects TRIM to be (fstrim would rewrite
   * the free space of the file system).  WRITE_ZEROES is offered: a
   * client that asks for zeroes knows what it costs. */
  if (export_readonly(e))
    f |= NBD_FLAG_READ_ONLY;
  else {
    f |= NBD_FLAG_SEND_FUA | NBD_FLAG_SEND_WRITE_ZEROES;
    if (raid_array_level(export_array(e)) != RAID_LEVEL_5)
      f |= NBD_FLAG_SEND_TRIM;
  }
  return f;
}

void
nbd_export_block_sizes(const struct export *e, uint32_t *minimum,
                       uint32_t *preferred, uint32_t *maximum)
{
  struct raid_array *a = export_array(e);
  uint32_t min = raid_array_logical_block_size(a), pref = 4096;

  if (min < 1 || (min & (min - 1)))       /* cannot happen; stay valid */
    min = RAID_SECTOR_SIZE;
  /* RAID 5 writes whole stripes without reading anything first; tell the
   * client, when the stripe is a power of two it can use. */
  if (raid_array_level(a) == RAID_LEVEL_5) {
    uint64_t sw = raid_array_stripe_width(a);

    if (sw > pref && sw <= NBD_MAX_PAYLOAD && (sw & (sw - 1)) == 0)
      pref = (uint32_t)sw;
  }
  if (pref < min)
    pref = min;
  *minimum = min;
  *preferred = pref;
  *maximum = NBD_MAX_PAYLOAD;
}

struct default_ctx {
  unsigned n;
  char name[NBD_MAX_STRING + 1];
};

static void
default_one(struct export *e, void *opaque)
{
  struct default_ctx *ctx = opaque;

  if (ctx->n++ == 0)
    snprintf(ctx->name, sizeof ctx->name, "%s", export_name(e));
}

/* A reference to the export NAME; "" is the only export when there is
 * exactly one. */
static struct export *
lookup(const char *name)
{
  struct default_ctx ctx = { 0 };

  if (*name)
    return export_get(name);
  exports_foreach(default_one, &ctx);
  return ctx.n == 1 ? export_get(ctx.name) : NULL;
}

struct list_ctx {
  char **names;
  size_t n, cap;
  bool oom;
};

static void
list_one(struct export *e, void *opaque)
{
  struct list_ctx *ctx = opaque;

  if (ctx->oom)
    return;
  if (ctx->n == ctx->cap) {
    size_t cap = ctx->cap ? 2 * ctx->cap : 16;
    char **p = realloc(ctx->names, cap * sizeof *p);

    if (p == NULL) {
      ctx->oom = true;
      return;
    }
    ctx->names = p;
    ctx->cap = cap;
  }
  if ((ctx->names[ctx->n] = strdup(export_name(e))) == NULL)
    ctx->oom = true;
  else
    ctx->n++;
}

/* ---- options ----------------------------------------------------------------- */

static int
opt_list(struct hs *h, uint32_t len)
{
  struct list_ctx ctx = { 0 };
  int r = 0;

  if (len != 0)
    return send_error(h, NBD_OPT_LIST, NBD_REP_ERR_INVALID,
                      "NBD_OPT_LIST takes no data");
  /* Copy the names first: no socket I/O under the registry's lock. */
  exports_foreach(list_one, &ctx);
  if (ctx.oom)
    r = send_error(h, NBD_OPT_LIST, NBD_REP_ERR_PLATFORM, "out of memory");
  for (size_t i = 0; i < ctx.n && r == 0 && !ctx.oom; i++) {
    size_t n = strlen(ctx.names[i]);
    char buf[4 + NBD_MAX_STRING];
    uint32_t be;

    if (n > NBD_MAX_STRING)
      continue;
    be = htobe32((uint32_t)n);
    memcpy(buf, &be, 4);
    memcpy(buf + 4, ctx.names[i], n);
    r = send_reply(h, NBD_OPT_LIST, NBD_REP_SERVER, buf, 4 + n);
  }
  if (r == 0 && !ctx.oom)
    r = send_reply(h, NBD_OPT_LIST, NBD_REP_ACK, NULL, 0);
  for (size_t i = 0; i < ctx.n; i++)
    free(ctx.names[i]);
  free(ctx.names);
  return r;
}

static int
send_info_string(struct hs *h, uint32_t option, uint16_t info, const char *s)
{
  size_t n = strlen(s);
  char buf[2 + NBD_MAX_STRING];
  uint16_t be = htobe16(info);

  if (n > NBD_MAX_STRING)
    n = NBD_MAX_STRING;
  memcpy(buf, &be, 2);
  memcpy(buf + 2, s, n);
  return send_reply(h, option, NBD_REP_INFO, buf, 2 + n);
}

/* NBD_OPT_INFO and NBD_OPT_GO: data is name length, name, number of
 * information requests, requests.  Returns 1 when GO succeeded (*EP holds
 * the export), 0 to go on haggling, -1 to close. */
static int
opt_info_go(struct hs *h, uint32_t option, const char *data, uint32_t len,
            struct export **ep)
{
  uint32_t namelen, minimum, preferred, maximum;
  uint16_t nreq;
  bool want_name = false, want_desc = false;
  char name[NBD_MAX_STRING + 1];
  struct export *e;
  const char *desc;

  if (len < 6)
    return send_error(h, option, NBD_REP_ERR_INVALID, "option data too short");
  memcpy(&namelen, data, 4);
  namelen = be32toh(namelen);
  if (namelen > len - 6)
    return send_error(h, option, NBD_REP_ERR_INVALID,
                      "export name length %u beyond the option's data", namelen);
  memcpy(&nreq, data + 4 + namelen, 2);
  nreq = be16toh(nreq);
  if (len != 6 + namelen + 2u * nreq)
    return send_error(h, option, NBD_REP_ERR_INVALID,
                      "option length %u does not match %u information requests",
                      len, nreq);
  if (namelen > NBD_MAX_STRING || memchr(data + 4, 0, namelen) != NULL)
    return send_error(h, option, NBD_REP_ERR_INVALID, "invalid export name");
  memcpy(name, data + 4, namelen);
  name[namelen] = '\0';
  for (unsigned i = 0; i < nreq; i++) {
    uint16_t info;

    memcpy(&info, data + 6 + namelen + 2 * i, 2);
    info = be16toh(info);
    if (info == NBD_INFO_NAME)
      want_name = true;
    else if (info == NBD_INFO_DESCRIPTION)
      want_desc = true;
    /* NBD_INFO_EXPORT and NBD_INFO_BLOCK_SIZE are always sent; unknown
     * requests are ignored, as the spec says. */
  }

  if ((e = lookup(name)) == NULL) {
    if (*name)
      return send_error(h, option, NBD_REP_ERR_UNKNOWN,
                        "no export named \"%s\"", name);
    return send_error(h, option, NBD_REP_ERR_UNKNOWN,
                      "no default export: name one (see NBD_OPT_LIST)");
  }

  {
    struct nbd_info_export ie = {
      .info = htobe16(NBD_INFO_EXPORT),
      .size = htobe64(raid_array_size(export_array(e))),
      .tflags = htobe16(nbd_export_tflags(e)),
    };
    if (send_reply(h, option, NBD_REP_INFO, &ie, sizeof ie) < 0)
      goto fail;
  }
  if (want_name && send_info_string(h, option, NBD_INFO_NAME, export_name(e)) < 0)
    goto fail;
  desc = export_description(e);
  if (want_desc && desc && *desc &&
      send_info_string(h, option, NBD_INFO_DESCRIPTION, desc) < 0)
    goto fail;
  nbd_export_block_sizes(e, &minimum, &preferred, &maximum);
  {
    struct nbd_info_block_size bs = {
      .info = htobe16(NBD_INFO_BLOCK_SIZE),
      .minimum = htobe32(minimum),
      .preferred = htobe32(preferred),
      .maximum = htobe32(maximum),
    };
    if (send_reply(h, option, NBD_REP_INFO, &bs, sizeof bs) < 0)
      goto fail;
  }
  if (send_reply(h, option, NBD_REP_ACK, NULL, 0) < 0)
    goto fail;
  if (option == NBD_OPT_GO) {
    *ep = e;
    return 1;
  }
  export_put(e);
  return 0;

fail:
  export_put(e);
  return -1;
}

/* NBD_OPT_EXPORT_NAME: no error reply exists, so an unknown name closes. */
static int
opt_export_name(struct hs *h, const char *data, uint32_t len, struct export **ep)
{
  char name[NBD_MAX_STRING + 1];
  struct nbd_export_name_reply r = { 0 };
  struct export *e;

  if (len > NBD_MAX_STRING || memchr(data, 0, len) != NULL) {
    log_warn("nbd: %s: NBD_OPT_EXPORT_NAME with an invalid name, closing", h->peer);
    h->quiet = true;
    return -1;
  }
  memcpy(name, data, len);
  name[len] = '\0';
  if ((e = lookup(name)) == NULL) {
    log_warn("nbd: %s: NBD_OPT_EXPORT_NAME: no export named \"%s\"%s, closing",
             h->peer, name, *name ? "" : " (and no single default)");
    h->quiet = true;
    return -1;
  }
  r.size = htobe64(raid_array_size(export_array(e)));
  r.tflags = htobe16(nbd_export_tflags(e));
  if (hs_send(h, &r, h->no_zeroes ? 10 : sizeof r) < 0) {
    export_put(e);
    return -1;
  }
  *ep = e;
  return 1;
}

/* NBD_OPT_STARTTLS (proto.md, "TLS support"): ACK, then the TLS
 * handshake on the same socket; from then on everything goes through the
 * session.  What was agreed in the clear is forgotten: a man in the middle
 * could have sent it. */
static int
opt_starttls(struct hs *h, uint32_t len)
{
  short events;
  int r;

  if (nbd_tls_mode() == NBD_TLS_OFF)
    return send_error(h, NBD_OPT_STARTTLS, NBD_REP_ERR_UNSUP,
                      "TLS is not enabled on this server (raidd --tls)");
  if (len != 0)
    return send_error(h, NBD_OPT_STARTTLS, NBD_REP_ERR_INVALID,
                      "NBD_OPT_STARTTLS takes no data");
  if (h->tls)
    return send_error(h, NBD_OPT_STARTTLS, NBD_REP_ERR_INVALID, "TLS is already on");
  if (send_reply(h, NBD_OPT_STARTTLS, NBD_REP_ACK, NULL, 0) < 0)
    return -1;
  if (nbd_tls_new(h->fd, h->peer, &h->tls) < 0) {
    h->quiet = true;
    return -1;
  }
  while ((r = nbd_tls_handshake(h->tls, &events)) == -EAGAIN)
    if (hs_wait(h, events) < 0)
      return -1;
  if (r < 0) {
    h->quiet = true;
    return -1;
  }
  h->structured = false;
  return 0;
}

int
nbd_handshake(int fd, const char *peer, struct nbd_client *client)
{
  struct hs h = { .fd = fd, .peer = peer };
  struct nbd_hello hello = {
    .magic = htobe64(NBD_MAGIC),
    .version = htobe64(NBD_IHAVEOPT),
    .hflags = htobe16(NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES),
  };
  struct export *e = NULL;
  uint32_t cflags;
  char *data = NULL;
  int r = -1;

  deadline_in(&h.deadline, NBD_HANDSHAKE_SECS);

  if (hs_send(&h, &hello, sizeof hello) < 0 || hs_recv(&h, &cflags, 4) < 0)
    goto out;
  cflags = be32toh(cflags);
  if (cflags & ~(uint32_t)(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES)) {
    log_warn("nbd: %s: unknown client flags 0x%x, closing", peer, cflags);
    goto out;
  }
  h.fixed = cflags & NBD_FLAG_C_FIXED_NEWSTYLE;
  h.no_zeroes = cflags & NBD_FLAG_C_NO_ZEROES;

  for (unsigned nopt = 0; ; nopt++) {
    struct nbd_option o;
    uint32_t option, len;
    int done = 0;

    if (nopt == NBD_MAX_OPTIONS) {
      log_warn("nbd: %s: more than %u options, closing", peer, NBD_MAX_OPTIONS);
      goto out;
    }
    if (hs_recv(&h, &o, sizeof o) < 0)
      goto out;
    option = be32toh(o.option);
    len = be32toh(o.len);
    if (be64toh(o.magic) != NBD_IHAVEOPT) {
      log_warn("nbd: %s: bad option magic 0x%016llx, closing", peer,
               (unsigned long long)be64toh(o.magic));
      goto out;
    }
    if (len > NBD_MAX_OPTION_LEN) {
      log_warn("nbd: %s: option %u with %u bytes of data (limit %u), closing",
               peer, option, len, NBD_MAX_OPTION_LEN);
      goto out;
    }
    free(data);
    if ((data = malloc(len + 1)) == NULL) {
      log_err("nbd: %s: out of memory", peer);
      goto out;
    }
    if (hs_recv(&h, data, len) < 0)
      goto out;
    data[len] = '\0';
    if (!h.fixed && option != NBD_OPT_EXPORT_NAME) {
      /* An old newstyle client cannot read error replies. */
      log_warn("nbd: %s: option %u from a client without fixed newstyle, closing",
               peer, option);
      goto out;
    }
    /* --tls=require: nothing but STARTTLS and ABORT in the clear. */
    if (h.tls == NULL && nbd_tls_mode() == NBD_TLS_REQUIRE &&
        option != NBD_OPT_STARTTLS && option != NBD_OPT_ABORT) {
      if (option == NBD_OPT_EXPORT_NAME) {
        log_warn("nbd: %s: NBD_OPT_EXPORT_NAME without TLS, which this server "
                 "requires (--tls=require), closing", peer);
        goto out;
      }
      if (!h.told_tls_reqd)
        log_info("nbd: %s: option %u refused: TLS is required (--tls=require)",
                 peer, option);
      h.told_tls_reqd = true;
      if (send_error(&h, option, NBD_REP_ERR_TLS_REQD,
                     "TLS is required: send NBD_OPT_STARTTLS first") < 0)
        goto out;
      continue;
    }

    switch (option) {
    case NBD_OPT_STARTTLS:
      done = opt_starttls(&h, len);
      break;
    case NBD_OPT_EXPORT_NAME:
      done = opt_export_name(&h, data, len, &e);
      break;
    case NBD_OPT_ABORT:
      /* The client may hang up without reading the ACK: errors ignored. */
      send_reply(&h, option, NBD_REP_ACK, NULL, 0);
      log_debug("nbd: %s: client aborted the handshake", peer);
      h.quiet = true;
      done = -1;
      break;
    case NBD_OPT_LIST:
      done = opt_list(&h, len);
      break;
    case NBD_OPT_INFO:
    case NBD_OPT_GO:
      done = opt_info_go(&h, option, data, len, &e);
      break;
    case NBD_OPT_STRUCTURED_REPLY:
      if (len != 0)
        done = send_error(&h, option, NBD_REP_ERR_INVALID,
                          "NBD_OPT_STRUCTURED_REPLY takes no data");
      else {
        h.structured = true;
        done = send_reply(&h, option, NBD_REP_ACK, NULL, 0);
      }
      break;
    default:
      /* Meta contexts (no BLOCK_STATUS), extended headers and
       * anything newer. */
      done = send_error(&h, option, NBD_REP_ERR_UNSUP,
                        "option %u is not supported by raidd", option);
      break;
    }
    if (done < 0)
      goto out;
    if (done > 0)
      break;
  }

  *client = (struct nbd_client){ .fd = fd, .tls = h.tls, .kernel = false };
  h.tls = NULL;
  snprintf(client->peer, sizeof client->peer, "%s", peer);
  client->exp = e;
  client->structured = h.structured;
  client->tflags = nbd_export_tflags(e);
  {
    uint32_t pref, max;
    nbd_export_block_sizes(e, &client->min_block, &pref, &max);
  }
  r = 0;

out:
  if (r < 0 && !h.quiet)
    log_debug("nbd: %s: handshake failed", peer);
  nbd_tls_free(h.tls);
  free(data);
  return r;
}
