/* The NBD server: listening sockets, the acceptor, handshake threads and
 * the worker pool.
 *
 * Threads:
 *   - one acceptor thread polls the listening sockets (unix and/or TCP)
 *     and an eventfd that nbd_server_stop() writes;
 *   - each accepted socket gets a small detached handshake thread
 *     (nbd-handshake.c), so a slow or hostile client in the handshake holds
 *     up nobody else; at most MAX_HANDSHAKES run at once, beyond that new
 *     connections are closed at once (logged);
 *   - a successful handshake hands the socket and its export reference to
 *     a worker, round-robin (nbd_worker_add: the worker's mailbox);
 *   - cfg->threads workers (nbd-worker.c) serve the transmission phase, each
 *     with its own raid_queue and connections.
 * srv.lock guards the fields below that change after start (the handshake
 * count, "stopping") and keeps the worker array alive while a handshake
 * thread or nbd_server_disconnect() uses it.  Nothing on the data path
 * takes it.
 *
 * Sockets: the unix socket is created mode 0600 (root-only, like the
 * control socket: whoever can connect can read and overwrite every array),
 * in a parent directory created 0755 if missing; a stale socket file is
 * replaced, a live one (another raidd answering) is refused.  With
 * --group=NAME it is chgrp'd to NAME and made 0660, for a VM manager's
 * group (qemu's, libvirt's).  Every unix client's credentials
 * (SO_PEERCRED, SO_PEERGROUPS) are checked at accept as well: root,
 * raidd's own user, or a member of that group.  TCP listens only when
 * asked, on every address HOST resolves to; with --allow, a client outside
 * the list is closed at accept, before any byte of the handshake
 * (nbd-acl.c).  TLS (nbd-tls.c) applies to both kinds of socket when on.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "nbd-internal.h"

#define MAX_LISTEN      16
#define MAX_HANDSHAKES  256
#define LISTEN_BACKLOG  128

static struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;             /* handshakes reached 0 */
  bool running;
  bool stopping;                   /* also read without the lock */
  int listen_fd[MAX_LISTEN];
  bool listen_tcp[MAX_LISTEN];
  unsigned nlisten;
  char *unix_path;                 /* to unlink at stop */
  int stop_fd;
  pthread_t acceptor;
  bool acceptor_started;
  struct nbd_worker **workers;
  unsigned nworkers;
  unsigned next_worker;
  unsigned handshakes;
  const struct nbd_acl *allow;     /* TCP clients let in; NULL: all */
  bool have_group;                 /* --group: its members may connect */
  gid_t gid;
  char group[64];
} srv = {
  .lock = PTHREAD_MUTEX_INITIALIZER,
  .cond = PTHREAD_COND_INITIALIZER,
  .stop_fd = -1,
};

bool
nbd_server_stopping(void)
{
  return __atomic_load_n(&srv.stopping, __ATOMIC_ACQUIRE);
}

/* ---- listening sockets ------------------------------------------------------- */

static int
add_listener(int fd, bool tcp)
{
  if (srv.nlisten == MAX_LISTEN) {
    close(fd);
    log_err("nbd: too many listening sockets");
    return -EMFILE;
  }
  srv.listen_fd[srv.nlisten] = fd;
  srv.listen_tcp[srv.nlisten] = tcp;
  srv.nlisten++;
  return 0;
}

/* mkdir -p the directory holding PATH. */
static int
make_parent(const char *path)
{
  char *dir = strdup(path), *slash;
  int r = 0;

  if (dir == NULL)
    return -ENOMEM;
  if ((slash = strrchr(dir, '/')) == NULL || slash == dir)
    goto out;
  *slash = '\0';
  for (char *p = dir + 1; ; p++) {
    if (*p == '/' || *p == '\0') {
      char c = *p;

      *p = '\0';
      if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        r = -errno;
        log_err("nbd: cannot create directory %s: %m", dir);
        goto out;
      }
      *p = c;
      if (c == '\0')
        break;
    }
  }
out:
  free(dir);
  return r;
}

static int
listen_unix(const char *path)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  struct stat st;
  int fd, r;

  if (strlen(path) >= sizeof sa.sun_path) {
    log_err("nbd: socket path %s is too long", path);
    return -ENAMETOOLONG;
  }
  memcpy(sa.sun_path, path, strlen(path) + 1);
  if ((r = make_parent(path)) < 0)
    return r;

  if (lstat(path, &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      log_err("nbd: %s exists and is not a socket; not replacing it", path);
      return -EEXIST;
    }
    /* Is someone answering?  Then it is not stale. */
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
      r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
      close(fd);
      if (r == 0) {
        log_err("nbd: %s is in use by a running server", path);
        return -EADDRINUSE;
      }
    }
    if (unlink(path) < 0 && errno != ENOENT) {
      r = -errno;
      log_err("nbd: cannot remove stale socket %s: %m", path);
      return r;
    }
  }

  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    r = -errno;
    log_err("nbd: socket: %m");
    return r;
  }
  /* Mode 0600 before listen(), so nobody else can connect in between;
   * then the group, and its read-write bits once the group is right. */
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
      chmod(path, 0600) < 0 ||
      (srv.have_group && (chown(path, (uid_t)-1, srv.gid) < 0 || chmod(path, 0660) < 0)) ||
      listen(fd, LISTEN_BACKLOG) < 0) {
    r = -errno;
    log_err("nbd: cannot listen on %s%s%s: %m", path, srv.have_group ? " for group " : "",
            srv.have_group ? srv.group : "");
    close(fd);
    unlink(path);
    return r;
  }
  if ((srv.unix_path = strdup(path)) == NULL) {
    close(fd);
    unlink(path);
    return -ENOMEM;
  }
  log_info("nbd: listening on unix socket %s%s%s%s", path,
           srv.have_group ? " (mode 0660, group " : "", srv.have_group ? srv.group : "",
           srv.have_group ? ")" : "");
  return add_listener(fd, false);
}

static int
listen_tcp(const char *hostport)
{
  struct addrinfo hints = {
    .ai_family = AF_UNSPEC,
    .ai_socktype = SOCK_STREAM,
    .ai_flags = AI_PASSIVE | AI_ADDRCONFIG,
  }, *res, *ai;
  char *host = strdup(hostport), *port, *h;
  int r, ok = 0, last = -EADDRNOTAVAIL;

  if (host == NULL)
    return -ENOMEM;
  if ((port = strrchr(host, ':')) == NULL || port[1] == '\0') {
    log_err("nbd: --nbd-listen %s: expected HOST:PORT", hostport);
    free(host);
    return -EINVAL;
  }
  *port++ = '\0';
  h = host;
  if (*h == '[' && h[strlen(h) - 1] == ']') {   /* [::1]:10809 */
    h[strlen(h) - 1] = '\0';
    h++;
  }
  if ((r = getaddrinfo(*h ? h : NULL, port, &hints, &res)) != 0) {
    log_err("nbd: --nbd-listen %s: %s", hostport, gai_strerror(r));
    free(host);
    return -EINVAL;
  }
  for (ai = res; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    ai->ai_protocol);
    int one = 1;
    char name[NI_MAXHOST];

    if (fd < 0) {
      last = -errno;
      continue;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6)   /* IPv4 gets its own socket */
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (getnameinfo(ai->ai_addr, ai->ai_addrlen, name, sizeof name, NULL, 0,
                    NI_NUMERICHOST) != 0)
      snprintf(name, sizeof name, "?");
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
      last = -errno;
      log_warn("nbd: cannot listen on %s port %s: %m", name, port);
      close(fd);
      continue;
    }
    if (add_listener(fd, true) == 0) {
      log_info("nbd: listening on TCP %s port %s", name, port);
      ok++;
    }
  }
  freeaddrinfo(res);
  free(host);
  if (ok == 0) {
    log_err("nbd: --nbd-listen %s: no address to listen on", hostport);
    return last;
  }
  return 0;
}

/* Sockets systemd passed (socket activation, service.c) replace those of
 * their kind that raidd would bind; systemd keeps them: not unlinked. */
static bool adopted_unix, adopted_tcp;

int
nbd_server_adopt(int fd, bool tcp)
{
  int fl = fcntl(fd, F_GETFL);

  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
      fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
    int r = -errno;

    log_err("nbd: socket %d from systemd: %m", fd);
    close(fd);
    return r;
  }
  if (tcp)
    adopted_tcp = true;
  else
    adopted_unix = true;
  return add_listener(fd, tcp);
}

/* ---- accepting --------------------------------------------------------------- */

struct hs_arg {
  int fd;
  char peer[NBD_PEER_MAX];
};

static void
peer_name(int fd, bool tcp, char *buf, size_t len)
{
  if (tcp) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char host[NI_MAXHOST], port[NI_MAXSERV];

    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 &&
        getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0)
      snprintf(buf, len, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
    else
      snprintf(buf, len, "tcp client (fd %d)", fd);
  }
  else {
    struct ucred cred;
    socklen_t sl = sizeof cred;

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &sl) == 0)
      snprintf(buf, len, "unix pid %d uid %u", (int)cred.pid, (unsigned)cred.uid);
    else
      snprintf(buf, len, "unix client (fd %d)", fd);
  }
}

unsigned
nbd_server_threads(void)
{
  unsigned n;

  pthread_mutex_lock(&srv.lock);
  n = srv.nworkers;
  pthread_mutex_unlock(&srv.lock);
  return n ? n : 1;
}

int
nbd_server_add_client(struct nbd_client *client)
{
  int r = 0;

  pthread_mutex_lock(&srv.lock);
  if (!srv.running || srv.stopping || srv.nworkers == 0) {
    close(client->fd);
    export_put(client->exp);
    r = -ESHUTDOWN;
  }
  else
    nbd_worker_add(srv.workers[srv.next_worker++ % srv.nworkers], client);
  pthread_mutex_unlock(&srv.lock);
  return r;
}

static void *
handshake_main(void *p)
{
  struct hs_arg *a = p;
  struct nbd_client client;

  if (nbd_handshake(a->fd, a->peer, &client) == 0) {
    if (nbd_server_add_client(&client) < 0)
      log_info("nbd: %s: server stopping, closing", a->peer);
  }
  else
    close(a->fd);
  free(a);

  pthread_mutex_lock(&srv.lock);
  if (--srv.handshakes == 0)
    pthread_cond_broadcast(&srv.cond);
  pthread_mutex_unlock(&srv.lock);
  return NULL;
}

/* Is the unix client on FD root, raidd's user, or in --group's group?
 * The socket's mode already keeps others out; this holds even if its
 * mode or directory were loosened by hand. */
static bool
unix_peer_allowed(int fd, const char *peer)
{
  struct ucred cred;
  socklen_t sl = sizeof cred;
  gid_t groups[256];

  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &sl) < 0) {
    log_warn("nbd: %s: cannot read its credentials: %m, closing", peer);
    return false;
  }
  if (cred.uid == 0 || cred.uid == geteuid())
    return true;
  if (srv.have_group) {
    if (cred.gid == srv.gid)
      return true;
    sl = sizeof groups;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &sl) == 0)
      for (size_t i = 0; i < sl / sizeof groups[0]; i++)
        if (groups[i] == srv.gid)
          return true;
  }
  log_warn("nbd: %s: refused: not root, not raidd's user%s%s, closing", peer,
           srv.have_group ? " and not in group " : "", srv.have_group ? srv.group : "");
  return false;
}

/* --allow: may the TCP client on FD in? */
static bool
tcp_peer_allowed(int fd, const char *peer)
{
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;

  if (srv.allow == NULL)
    return true;
  if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 &&
      nbd_acl_allows(srv.allow, (struct sockaddr *)&ss))
    return true;
  log_warn("nbd: %s: refused: not in the --allow list, closing", peer);
  return false;
}

static void
start_handshake(int fd, bool tcp)
{
  struct hs_arg *a;
  pthread_attr_t attr;
  pthread_t t;
  int r;

  if (tcp) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  if ((a = calloc(1, sizeof *a)) == NULL) {
    log_err("nbd: out of memory accepting a connection");
    close(fd);
    return;
  }
  a->fd = fd;
  peer_name(fd, tcp, a->peer, sizeof a->peer);
  if (!(tcp ? tcp_peer_allowed(fd, a->peer) : unix_peer_allowed(fd, a->peer))) {
    close(fd);
    free(a);
    return;
  }

  pthread_mutex_lock(&srv.lock);
  if (srv.handshakes >= MAX_HANDSHAKES) {
    pthread_mutex_unlock(&srv.lock);
    log_warn("nbd: %s: %u handshakes already in progress, closing", a->peer,
             MAX_HANDSHAKES);
    close(fd);
    free(a);
    return;
  }
  srv.handshakes++;
  pthread_mutex_unlock(&srv.lock);

  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 << 10);
  r = pthread_create(&t, &attr, handshake_main, a);
  pthread_attr_destroy(&attr);
  if (r != 0) {
    log_err("nbd: %s: cannot start a handshake thread: %s, closing", a->peer,
            strerror(r));
    close(fd);
    free(a);
    pthread_mutex_lock(&srv.lock);
    if (--srv.handshakes == 0)
      pthread_cond_broadcast(&srv.cond);
    pthread_mutex_unlock(&srv.lock);
  }
}

static void *
acceptor_main(void *unused)
{
  struct pollfd p[MAX_LISTEN + 1];
  time_t last_complaint = 0;

  for (unsigned i = 0; i < srv.nlisten; i++)
    p[i] = (struct pollfd){ .fd = srv.listen_fd[i], .events = POLLIN };
  p[srv.nlisten] = (struct pollfd){ .fd = srv.stop_fd, .events = POLLIN };

  for (;;) {
    int n = poll(p, srv.nlisten + 1, -1);

    if (n < 0) {
      if (errno != EINTR) {
        log_err("nbd: acceptor: poll: %m");
        usleep(100000);
      }
      continue;
    }
    if (p[srv.nlisten].revents)
      break;
    for (unsigned i = 0; i < srv.nlisten; i++) {
      int fd;

      if (!p[i].revents)
        continue;
      fd = accept4(p[i].fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) {
        start_handshake(fd, srv.listen_tcp[i]);
        continue;
      }
      switch (errno) {
      case EAGAIN: case EINTR: case ECONNABORTED: case EPROTO:
        break;
      default:
        /* EMFILE, ENFILE, ENOBUFS, ENOMEM: back off, complain once a
         * second at most. */
        if (time(NULL) != last_complaint) {
          last_complaint = time(NULL);
          log_err("nbd: accept: %m");
        }
        usleep(100000);
        break;
      }
    }
  }
  return NULL;
}

/* ---- start, stop, disconnect ------------------------------------------------------- */

static void
server_cleanup(void)
{
  for (unsigned i = 0; i < srv.nlisten; i++)
    close(srv.listen_fd[i]);
  srv.nlisten = 0;
  if (srv.unix_path) {
    unlink(srv.unix_path);
    free(srv.unix_path);
    srv.unix_path = NULL;
  }
  for (unsigned i = 0; i < srv.nworkers; i++)
    nbd_worker_stop_and_free(srv.workers[i]);
  free(srv.workers);
  srv.workers = NULL;
  srv.nworkers = 0;
  if (srv.stop_fd >= 0)
    close(srv.stop_fd);
  srv.stop_fd = -1;
  nbd_tls_fini();
}

/* --group, --allow, and the warnings about who can connect. */
static int
server_access(const struct nbd_server_config *cfg)
{
  srv.allow = cfg->allow;
  srv.have_group = false;
  if (cfg->group) {
    struct group gr, *res = NULL;
    char buf[16384];
    int r = getgrnam_r(cfg->group, &gr, buf, sizeof buf, &res);

    if (res == NULL) {
      if (r)
        log_err("--group %s: cannot look the group up: %s", cfg->group, strerror(r));
      else
        log_err("--group %s: no such group", cfg->group);
      return -EINVAL;
    }
    if (cfg->unix_path == NULL) {
      log_err("--group %s is for the NBD unix socket, and there is none", cfg->group);
      return -EINVAL;
    }
    srv.gid = gr.gr_gid;
    srv.have_group = true;
    snprintf(srv.group, sizeof srv.group, "%s", cfg->group);
  }
  if (cfg->allow && cfg->tcp_listen == NULL)
    log_warn("nbd: --allow is for TCP clients, and there is no --nbd-listen: "
             "it changes nothing");
  if (cfg->tcp_listen && cfg->allow == NULL && cfg->tls != NBD_TLS_REQUIRE)
    log_warn("nbd: --nbd-listen %s %s: anyone who can reach it can read and "
             "overwrite every array; use --tls=require or --allow (see raidd(8))",
             cfg->tcp_listen, cfg->tls == NBD_TLS_OFF ? "without TLS" : "with TLS optional");
  return 0;
}

int
nbd_server_start(const struct nbd_server_config *cfg)
{
  unsigned n = cfg->threads ? cfg->threads : 1;
  int r;

  pthread_mutex_lock(&srv.lock);
  if (srv.running) {
    pthread_mutex_unlock(&srv.lock);
    log_err("nbd: the server is already running");
    return -EBUSY;
  }
  srv.running = true;
  __atomic_store_n(&srv.stopping, false, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&srv.lock);

  if (cfg->unix_path == NULL && cfg->tcp_listen == NULL && srv.nlisten == 0) {
    log_err("nbd: neither a unix socket nor a TCP address to listen on");
    r = -EINVAL;
    goto fail;
  }
  if ((r = server_access(cfg)) < 0 || (r = nbd_tls_init(cfg)) < 0)
    goto fail;
  if ((srv.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
    r = -errno;
    log_err("nbd: eventfd: %m");
    goto fail;
  }
  if ((srv.workers = calloc(n, sizeof *srv.workers)) == NULL) {
    r = -ENOMEM;
    goto fail;
  }
  for (unsigned i = 0; i < n; i++) {
    if ((r = nbd_worker_new(i, &srv.workers[i])) < 0)
      goto fail;
    srv.nworkers++;
  }
  if (cfg->unix_path && !adopted_unix && (r = listen_unix(cfg->unix_path)) < 0)
    goto fail;
  if (cfg->tcp_listen && !adopted_tcp && (r = listen_tcp(cfg->tcp_listen)) < 0)
    goto fail;
  for (unsigned i = 0; i < n; i++)
    if ((r = nbd_worker_start(srv.workers[i])) < 0)
      goto fail;
  if ((r = pthread_create(&srv.acceptor, NULL, acceptor_main, NULL)) != 0) {
    log_err("nbd: cannot start the acceptor thread: %s", strerror(r));
    r = -r;
    goto fail;
  }
  srv.acceptor_started = true;
  log_info("nbd: server started with %u worker thread%s", n, n == 1 ? "" : "s");
  return 0;

fail:
  server_cleanup();
  pthread_mutex_lock(&srv.lock);
  srv.running = false;
  pthread_mutex_unlock(&srv.lock);
  return r;
}

void
nbd_server_stop(void)
{
  uint64_t one = 1;
  ssize_t n;

  pthread_mutex_lock(&srv.lock);
  if (!srv.running || srv.stopping) {
    pthread_mutex_unlock(&srv.lock);
    return;
  }
  __atomic_store_n(&srv.stopping, true, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&srv.lock);

  /* No new connections, then no handshake left, then drain the workers. */
  n = write(srv.stop_fd, &one, sizeof one);
  (void)n;
  if (srv.acceptor_started)
    pthread_join(srv.acceptor, NULL);
  srv.acceptor_started = false;
  pthread_mutex_lock(&srv.lock);
  while (srv.handshakes > 0)
    pthread_cond_wait(&srv.cond, &srv.lock);
  pthread_mutex_unlock(&srv.lock);
  server_cleanup();
  log_info("nbd: server stopped");

  pthread_mutex_lock(&srv.lock);
  srv.running = false;
  pthread_mutex_unlock(&srv.lock);
}

void
nbd_server_disconnect(struct export *e)
{
  struct nbd_worker_wait *wait;

  /* srv.lock keeps the workers alive; handshake threads finishing now wait
   * for it, and any that hand over a connection to E after we return are
   * the caller's to prevent (remove E from the registry first). */
  pthread_mutex_lock(&srv.lock);
  if (!srv.running || srv.stopping || srv.nworkers == 0) {
    pthread_mutex_unlock(&srv.lock);
    return;
  }
  if ((wait = nbd_worker_wait_new(srv.nworkers)) == NULL) {
    pthread_mutex_unlock(&srv.lock);
    log_err("nbd: out of memory disconnecting export %s", export_name(e));
    return;
  }
  for (unsigned i = 0; i < srv.nworkers; i++)
    nbd_worker_disconnect(srv.workers[i], e, wait);
  nbd_worker_wait_finish(wait);
  pthread_mutex_unlock(&srv.lock);
  log_info("nbd: export %s: every connection closed", export_name(e));
}
