/* TLS for the NBD server, with GnuTLS: the credentials, and the transport
 * that the handshake (nbd-handshake.c) and the data path (nbd-conn.c) read
 * and write through.
 *
 * Options (raidd(8), as nbdkit spells and means them):
 *   --tls=off|on|require   off: NBD_OPT_STARTTLS is refused (ERR_UNSUP);
 *                          on: offered, plain clients still served;
 *                          require: every option but STARTTLS and ABORT is
 *                          refused before TLS (nbd-handshake.c)
 *   --tls-certificates=DIR X.509: DIR/ca-cert.pem, server-cert.pem,
 *                          server-key.pem, and ca-crl.pem if present
 *   --tls-psk=FILE         pre-shared keys, psktool's USERNAME:HEXKEY lines
 *                          (PSK wins when both are given, as in nbdkit)
 *   --tls-verify-peer      X.509 only: a client must present a certificate
 *                          signed by the CA, or the TLS handshake fails
 * Everything is checked and loaded once at start (nbd_tls_init()), so a
 * missing or unreadable file stops raidd with a message naming it.  The
 * PSK file is read again by GnuTLS at each handshake, so keys can be added
 * or revoked without a restart.
 *
 * The transport.  A connection's TLS session is a struct nbd_tls, or NULL
 * for a plain one: nbd_io_recv()/nbd_io_sendv() (nbd-internal.h) are
 * inline and call recv()/sendmsg() directly when it is NULL, so plain
 * connections pay one pointer test and no copy.  Through TLS, the session
 * is non-blocking on the connection's non-blocking socket and reports
 * GnuTLS's codes as errno values (EAGAIN, EINTR; EPROTO for a TLS error,
 * logged with GnuTLS's words), so the callers keep their plain-socket
 * logic.  Two things differ, and the callers handle them: GnuTLS may hold
 * decrypted bytes that epoll cannot see (nbd_tls_pending()), and a send
 * that returned EAGAIN must be repeated with the same buffer.
 *
 * A session is used by one thread at a time: the handshake thread, then
 * the worker that takes the connection.
 */
#include <config.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <gnutls/gnutls.h>

#include "nbd-internal.h"

/* The priorities: GnuTLS's defaults (which follow the system's policy),
 * plus the PSK key exchanges when PSK is the method. */
#define PRIORITY_X509 "NORMAL"
#define PRIORITY_PSK  "NORMAL:+ECDHE-PSK:+DHE-PSK:+PSK"

struct nbd_tls {
  gnutls_session_t s;
  bool broken;                     /* a fatal error or the end: no close_notify */
  char peer[NBD_PEER_MAX];
};

static struct {
  enum nbd_tls_mode mode;
  bool psk;                        /* else X.509 */
  bool verify_peer;
  gnutls_certificate_credentials_t x509;
  gnutls_psk_server_credentials_t pskc;
  gnutls_priority_t prio;
} tls;

int
nbd_tls_parse_mode(const char *value)
{
  if (strcmp(value, "off") == 0)
    return NBD_TLS_OFF;
  if (strcmp(value, "on") == 0)
    return NBD_TLS_ON;
  if (strcmp(value, "require") == 0)
    return NBD_TLS_REQUIRE;
  return -1;
}

enum nbd_tls_mode
nbd_tls_mode(void)
{
  return tls.mode;
}

/* ---- loading the credentials ----------------------------------------------- */

/* DIR/NAME into BUF, readable: 0; -errno (logged unless QUIET_ENOENT and
 * the file is missing). */
static int
cert_file(char *buf, size_t len, const char *dir, const char *name, bool quiet_enoent)
{
  int r;

  if ((size_t)snprintf(buf, len, "%s/%s", dir, name) >= len) {
    log_err("--tls-certificates %s: path too long", dir);
    return -ENAMETOOLONG;
  }
  if (access(buf, R_OK) == 0)
    return 0;
  r = -errno;
  if (!(quiet_enoent && r == -ENOENT))
    log_err("--tls-certificates %s: cannot read %s: %s", dir, buf, strerror(-r));
  return r;
}

static int
load_x509(const char *dir)
{
  char ca[4096], crl[4096], cert[4096], key[4096];
  struct stat st;
  int r;

  if (stat(dir, &st) < 0) {
    r = -errno;
    log_err("--tls-certificates %s: %s", dir, strerror(-r));
    return r;
  }
  if (!S_ISDIR(st.st_mode)) {
    log_err("--tls-certificates %s: not a directory", dir);
    return -ENOTDIR;
  }
  if ((r = cert_file(ca, sizeof ca, dir, "ca-cert.pem", false)) < 0 ||
      (r = cert_file(cert, sizeof cert, dir, "server-cert.pem", false)) < 0 ||
      (r = cert_file(key, sizeof key, dir, "server-key.pem", false)) < 0)
    return r;
  if ((r = gnutls_certificate_allocate_credentials(&tls.x509)) < 0) {
    log_err("TLS: allocating credentials: %s", gnutls_strerror(r));
    return -ENOMEM;
  }
  /* The trust file returns the number of certificates it read. */
  if ((r = gnutls_certificate_set_x509_trust_file(tls.x509, ca, GNUTLS_X509_FMT_PEM)) <= 0) {
    log_err("--tls-certificates %s: %s: %s", dir, ca,
            r == 0 ? "no certificate in it" : gnutls_strerror(r));
    return -EINVAL;
  }
  if ((r = cert_file(crl, sizeof crl, dir, "ca-crl.pem", true)) == 0) {
    if ((r = gnutls_certificate_set_x509_crl_file(tls.x509, crl, GNUTLS_X509_FMT_PEM)) < 0) {
      log_err("--tls-certificates %s: %s: %s", dir, crl, gnutls_strerror(r));
      return -EINVAL;
    }
  }
  else if (r != -ENOENT)
    return r;
  if ((r = gnutls_certificate_set_x509_key_file(tls.x509, cert, key,
                                                GNUTLS_X509_FMT_PEM)) < 0) {
    log_err("--tls-certificates %s: %s and %s: %s", dir, cert, key, gnutls_strerror(r));
    return -EINVAL;
  }
  gnutls_certificate_set_known_dh_params(tls.x509, GNUTLS_SEC_PARAM_MEDIUM);
  log_info("nbd: TLS with X.509 certificates from %s%s", dir,
           tls.verify_peer ? ", client certificates required" : "");
  return 0;
}

/* A psktool file: USERNAME:HEXKEY lines.  Checked here so that a wrong
 * file stops raidd at start, not every client at its handshake. */
static int
check_psk_file(const char *path)
{
  FILE *f = fopen(path, "re");
  char line[1024];
  unsigned lineno = 0, keys = 0;
  int r = 0;

  if (f == NULL) {
    r = -errno;
    log_err("--tls-psk %s: %s", path, strerror(-r));
    return r;
  }
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':'), *hex;
    size_t n;

    lineno++;
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] == '\0')
      continue;
    hex = colon ? colon + 1 : NULL;
    n = hex ? strlen(hex) : 0;
    if (colon == NULL || colon == line || n == 0 || n % 2 ||
        strspn(hex, "0123456789abcdefABCDEF") != n) {
      log_err("--tls-psk %s: line %u: expected USERNAME:HEXKEY (as psktool writes)",
              path, lineno);
      r = -EINVAL;
      break;
    }
    keys++;
  }
  if (r == 0 && ferror(f)) {
    r = -EIO;
    log_err("--tls-psk %s: read error", path);
  }
  fclose(f);
  if (r == 0 && keys == 0) {
    log_err("--tls-psk %s: no key in it (make one with psktool -p %s -u USERNAME)",
            path, path);
    r = -EINVAL;
  }
  return r;
}

static int
load_psk(const char *path)
{
  char *abs;
  int r;

  if ((r = check_psk_file(path)) < 0)
    return r;
  /* GnuTLS reads the file at every handshake: make the path absolute,
   * since a daemon changes to / (as nbdkit does). */
  if ((abs = realpath(path, NULL)) == NULL) {
    r = -errno;
    log_err("--tls-psk %s: %s", path, strerror(-r));
    return r;
  }
  if ((r = gnutls_psk_allocate_server_credentials(&tls.pskc)) < 0) {
    free(abs);
    log_err("TLS: allocating PSK credentials: %s", gnutls_strerror(r));
    return -ENOMEM;
  }
  r = gnutls_psk_set_server_credentials_file(tls.pskc, abs);
  if (r < 0) {
    log_err("--tls-psk %s: %s", abs, gnutls_strerror(r));
    free(abs);
    return -EINVAL;
  }
  log_info("nbd: TLS with pre-shared keys from %s", abs);
  free(abs);
  return 0;
}

int
nbd_tls_init(const struct nbd_server_config *cfg)
{
  const char *prio, *where;
  int r;

  tls.mode = NBD_TLS_OFF;
  if (cfg->tls == NBD_TLS_OFF) {
    const char *opt = cfg->tls_certificates ? "--tls-certificates"
                      : cfg->tls_psk ? "--tls-psk"
                      : cfg->tls_verify_peer ? "--tls-verify-peer" : NULL;
    if (opt) {
      log_err("%s is given but TLS is off: add --tls=on or --tls=require", opt);
      return -EINVAL;
    }
    return 0;
  }
  if (cfg->tls_certificates == NULL && cfg->tls_psk == NULL) {
    log_err("--tls=%s needs credentials: --tls-certificates=DIR (X.509) or "
            "--tls-psk=FILE (pre-shared keys)",
            cfg->tls == NBD_TLS_REQUIRE ? "require" : "on");
    return -EINVAL;
  }
  if (cfg->tls_verify_peer && cfg->tls_certificates == NULL) {
    log_err("--tls-verify-peer checks client certificates: it needs "
            "--tls-certificates=DIR");
    return -EINVAL;
  }
  if (cfg->tls_psk && cfg->tls_certificates) {
    if (cfg->tls_verify_peer) {
      log_err("--tls-verify-peer checks client certificates, but with --tls-psk "
              "clients use pre-shared keys: give one of --tls-psk and "
              "--tls-certificates");
      return -EINVAL;
    }
    log_warn("nbd: both --tls-psk and --tls-certificates: pre-shared keys are used, "
             "the certificates are not");
  }
  tls.verify_peer = cfg->tls_verify_peer;
  tls.psk = cfg->tls_psk != NULL;
  r = tls.psk ? load_psk(cfg->tls_psk) : load_x509(cfg->tls_certificates);
  if (r < 0) {
    nbd_tls_fini();
    return r;
  }
  prio = tls.psk ? PRIORITY_PSK : PRIORITY_X509;
  if ((r = gnutls_priority_init(&tls.prio, prio, &where)) < 0) {
    log_err("TLS: priority string %s (at %s): %s", prio, where, gnutls_strerror(r));
    nbd_tls_fini();
    return -EINVAL;
  }
  tls.mode = cfg->tls;
  return 0;
}

void
nbd_tls_fini(void)
{
  if (tls.x509)
    gnutls_certificate_free_credentials(tls.x509);
  if (tls.pskc)
    gnutls_psk_free_server_credentials(tls.pskc);
  if (tls.prio)
    gnutls_priority_deinit(tls.prio);
  tls.x509 = NULL;
  tls.pskc = NULL;
  tls.prio = NULL;
  tls.mode = NBD_TLS_OFF;
}

/* ---- sessions ------------------------------------------------------------------- */

int
nbd_tls_new(int fd, const char *peer, struct nbd_tls **tp)
{
  struct nbd_tls *t = calloc(1, sizeof *t);
  int r;

  if (t == NULL) {
    log_err("nbd: %s: out of memory", peer);
    return -ENOMEM;
  }
  snprintf(t->peer, sizeof t->peer, "%s", peer);
  if ((r = gnutls_init(&t->s, GNUTLS_SERVER)) < 0) {
    log_err("nbd: %s: TLS: gnutls_init: %s", peer, gnutls_strerror(r));
    free(t);
    return -ENOMEM;
  }
  if (tls.psk)
    r = gnutls_credentials_set(t->s, GNUTLS_CRD_PSK, tls.pskc);
  else
    r = gnutls_credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, tls.x509);
  if (r == 0)
    r = gnutls_priority_set(t->s, tls.prio);
  if (r < 0) {
    log_err("nbd: %s: TLS: setting up the session: %s", peer, gnutls_strerror(r));
    gnutls_deinit(t->s);
    free(t);
    return -EINVAL;
  }
  if (tls.verify_peer) {
    /* REQUIRE, not REQUEST: a client without a certificate fails the
     * handshake instead of getting in unverified. */
    gnutls_certificate_server_set_request(t->s, GNUTLS_CERT_REQUIRE);
    gnutls_session_set_verify_cert(t->s, NULL, 0);
  }
  gnutls_transport_set_int(t->s, fd);
  *tp = t;
  return 0;
}

int
nbd_tls_handshake(struct nbd_tls *t, short *events)
{
  char *desc;
  int r;

  do
    r = gnutls_handshake(t->s);
  while (r < 0 && !gnutls_error_is_fatal(r) && r != GNUTLS_E_AGAIN);
  if (r == GNUTLS_E_AGAIN) {
    *events = gnutls_record_get_direction(t->s) ? POLLOUT : POLLIN;
    return -EAGAIN;
  }
  if (r < 0) {
    if (r == GNUTLS_E_FATAL_ALERT_RECEIVED)
      log_warn("nbd: %s: TLS handshake failed: the client sent the alert \"%s\", "
               "closing", t->peer, gnutls_alert_get_name(gnutls_alert_get(t->s)));
    else
      log_warn("nbd: %s: TLS handshake failed: %s, closing", t->peer, gnutls_strerror(r));
    return -EPROTO;
  }
  desc = gnutls_session_get_desc(t->s);
  if (tls.psk)
    log_info("nbd: %s: TLS %s, PSK user \"%s\"", t->peer, desc ? desc : "",
             gnutls_psk_server_get_username(t->s) ? gnutls_psk_server_get_username(t->s)
             : "?");
  else
    log_info("nbd: %s: TLS %s%s", t->peer, desc ? desc : "",
             tls.verify_peer ? ", client certificate verified" : "");
  gnutls_free(desc);
  return 0;
}

void
nbd_tls_free(struct nbd_tls *t)
{
  if (t == NULL)
    return;
  /* One try at close_notify; the socket is non-blocking and closing.
   * Not on a session GnuTLS has invalidated (gnutls_bye() crashes on
   * some of those). */
  if (!t->broken)
    gnutls_bye(t->s, GNUTLS_SHUT_WR);
  gnutls_deinit(t->s);
  free(t);
}

/* GnuTLS's negative codes as errno. */
static ssize_t
io_error(struct nbd_tls *t, ssize_t r, const char *what)
{
  switch (r) {
  case GNUTLS_E_AGAIN:
    errno = EAGAIN;
    return -1;
  case GNUTLS_E_INTERRUPTED:
    errno = EINTR;
    return -1;
  }
  if (!gnutls_error_is_fatal(r)) {  /* a warning alert: go on */
    log_debug("nbd: %s: TLS %s: %s", t->peer, what, gnutls_strerror(r));
    errno = EINTR;
    return -1;
  }
  t->broken = true;
  switch (r) {
  case GNUTLS_E_PUSH_ERROR:          /* the socket's own error, in errno */
  case GNUTLS_E_PULL_ERROR:
  case GNUTLS_E_INVALID_SESSION:     /* after the client's end of input */
  case GNUTLS_E_PREMATURE_TERMINATION:
    log_debug("nbd: %s: TLS %s: %s", t->peer, what, gnutls_strerror(r));
    if (r != GNUTLS_E_PUSH_ERROR && r != GNUTLS_E_PULL_ERROR)
      errno = EPIPE;                 /* "the client went away" */
    else if (errno == 0 || errno == EAGAIN)
      errno = ECONNRESET;
    return -1;
  }
  log_info("nbd: %s: TLS %s: %s", t->peer, what, gnutls_strerror(r));
  errno = EPROTO;
  return -1;
}

ssize_t
nbd_tls_recv(struct nbd_tls *t, void *buf, size_t len)
{
  ssize_t r = gnutls_record_recv(t->s, buf, len);

  if (r > 0)
    return r;
  /* A client that closes without close_notify has still ended its input:
   * NBD frames its own messages, so no truncation can go unnoticed.
   * GnuTLS will not send on the session after that. */
  if (r == 0 || r == GNUTLS_E_PREMATURE_TERMINATION) {
    t->broken = r != 0;
    return 0;
  }
  return io_error(t, r, "receive");
}

ssize_t
nbd_tls_sendv(struct nbd_tls *t, const struct iovec *iov, size_t n)
{
  size_t total = 0;

  /* One record per call at most (16 KiB): small replies cost a record
   * each, which is what the simple and structured headers are. */
  for (size_t i = 0; i < n; i++) {
    const char *p = iov[i].iov_base;
    size_t left = iov[i].iov_len;

    while (left > 0) {
      ssize_t r = gnutls_record_send(t->s, p, left);

      if (r < 0) {
        /* What went out is reported; the caller comes back with the
         * same buffer, as GnuTLS needs after EAGAIN. */
        if (total > 0 && (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED))
          return total;
        return io_error(t, r, "send");
      }
      p += r;
      left -= r;
      total += r;
    }
  }
  return total;
}

bool
nbd_tls_pending(struct nbd_tls *t)
{
  return gnutls_record_check_pending(t->s) > 0;
}
