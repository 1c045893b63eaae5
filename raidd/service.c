/* raidd under systemd (raidd.service, Type=notify): the notices raidd
 * sends, and the sockets systemd may pass it.
 *
 * Notices (sd_notify(3), to NOTIFY_SOCKET; nothing without it):
 *   READY=1, MAINPID= and STATUS=serving N arrays   once ready, where
 *                       raidd logs "ready:" (arrays configured to start at
 *                       boot are running by then);
 *   STATUS=serving N arrays   whenever an array starts or stops;
 *   STOPPING=1 and STATUS=stopping: ...   when SIGTERM comes, before the
 *                       arrays are flushed and marked clean.
 * systemd waits for READY=1 (Type=notify), so raidd stays in the
 * foreground when NOTIFY_SOCKET is set (raidd.c).
 *
 * Socket activation (sd_listen_fds(3)): each socket systemd passes is
 * matched by its FileDescriptorName=: "nbd" (a Unix stream socket, served
 * instead of --nbd-socket), "nbd-tcp" (a TCP socket, instead of
 * --nbd-listen; several may be passed, for IPv4 and IPv6).  A socket
 * without a name (systemd-socket-activate without --fdname) is matched by
 * its type: TCP is "nbd-tcp", Unix is "nbd".  The control socket is always
 * raidd's own (it refuses to start next to another raidd by it): one
 * named "control" is refused with a warning and closed, as is any other
 * socket raidd cannot use.  systemd keeps what it passed: raidd neither
 * binds nor removes those paths. */
#include <config.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <systemd/sd-daemon.h>

#include "raidd.h"

static atomic_bool stopping;
/* What systemd passed, taken before raidd forks (LISTEN_PID names the
 * process systemd started). */
static int listen_n;
static char **listen_names;

int
service_init(void)
{
  listen_n = sd_listen_fds_with_names(1, &listen_names);
  return listen_n < 0 ? listen_n : 0;
}

bool
service_notify_wanted(void)
{
  const char *s = getenv("NOTIFY_SOCKET");

  return s && *s;
}

/* "ADDR:PORT" of the TCP socket FD, for the log and the ready line. */
static char *
tcp_name(int fd)
{
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char host[NI_MAXHOST], port[NI_MAXSERV], *s;

  if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 ||
      getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, port, sizeof port,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return strdup("?");
  if (asprintf(&s, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port) < 0)
    return NULL;
  return s;
}

/* The path of the Unix socket FD, or NULL (abstract, unnamed). */
static char *
unix_name(int fd)
{
  struct sockaddr_un sun;
  socklen_t sl = sizeof sun;

  memset(&sun, 0, sizeof sun);
  if (getsockname(fd, (struct sockaddr *)&sun, &sl) < 0 || sun.sun_path[0] == '\0')
    return NULL;
  return strndup(sun.sun_path, sizeof sun.sun_path);
}

int
service_sockets(const char *control, struct nbd_server_config *nbd)
{
  char **names = listen_names, *tcp_names = NULL;
  int n = listen_n, i, taken = 0, r = 0;

  if (n < 0) {
    log_err("sockets from systemd (LISTEN_FDS, LISTEN_FDNAMES): %s", strerror(-n));
    return -1;
  }
  for (i = 0; i < n; i++) {
    int fd = SD_LISTEN_FDS_START + i;
    const char *name = names && names[i] ? names[i] : "unknown";
    bool is_unix = sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) > 0;
    bool is_tcp = sd_is_socket_inet(fd, 0, SOCK_STREAM, 1, 0) > 0;
    const char *role = name;

    if (r < 0) {
      close(fd);
      continue;
    }
    if (strcmp(name, "nbd") != 0 && strcmp(name, "nbd-tcp") != 0 &&
        strcmp(name, "control") != 0)
      role = is_tcp ? "nbd-tcp" : is_unix ? "nbd" : "";
    if (strcmp(role, "control") == 0) {
      log_warn("socket %d (\"%s\") from systemd: the control socket is raidd's own "
               "(%s); not using it", fd, name, control);
      close(fd);
    }
    else if (strcmp(role, "nbd") == 0 && is_unix) {
      char *path = unix_name(fd);

      if ((r = nbd_server_adopt(fd, false)) == 0) {
        log_info("nbd: serving the unix socket %s from systemd", path ? path : "(unnamed)");
        if (path)
          nbd->unix_path = path;  /* for URIs and the log: kept to the end */
        taken |= SERVICE_NBD_UNIX;
      }
      else
        free(path);
    }
    else if (strcmp(role, "nbd-tcp") == 0 && is_tcp) {
      char *tn = tcp_name(fd), *all;

      if ((r = nbd_server_adopt(fd, true)) == 0) {
        log_info("nbd: serving TCP %s from systemd", tn ? tn : "?");
        if (asprintf(&all, "%s%s%s", tcp_names ? tcp_names : "", tcp_names ? " " : "",
                     tn ? tn : "?") >= 0) {
          free(tcp_names);
          tcp_names = all;
        }
        taken |= SERVICE_NBD_TCP;
      }
      free(tn);
    }
    else {
      log_err("socket %d (\"%s\") from systemd: expected %s; give raidd's sockets "
              "FileDescriptorName=nbd (a Unix stream socket) or nbd-tcp (a TCP socket)",
              fd, name, strcmp(role, "nbd") == 0 ? "a listening Unix stream socket" :
              strcmp(role, "nbd-tcp") == 0 ? "a listening TCP socket" :
              "a listening Unix or TCP stream socket");
      close(fd);
      r = -1;
    }
  }
  if (tcp_names)
    nbd->tcp_listen = tcp_names;  /* kept to the end, like the path */
  for (i = 0; names && i < n; i++)
    free(names[i]);
  free(names);
  listen_names = NULL;
  listen_n = 0;
  return r < 0 ? -1 : taken;
}

static void
count_one(struct export *e, void *opaque)
{
  (*(unsigned *)opaque)++;
}

static unsigned
arrays(void)
{
  unsigned n = 0;

  exports_foreach(count_one, &n);
  return n;
}

void
service_ready(void)
{
  unsigned n = arrays();

  sd_notifyf(0, "READY=1\nMAINPID=%d\nSTATUS=serving %u array%s", (int)getpid(), n,
             n == 1 ? "" : "s");
}

void
service_status(void)
{
  unsigned n;

  if (!service_notify_wanted())
    return;
  n = arrays();
  if (atomic_load(&stopping))
    sd_notifyf(0, "STATUS=stopping: %u array%s left to flush", n, n == 1 ? "" : "s");
  else
    sd_notifyf(0, "STATUS=serving %u array%s", n, n == 1 ? "" : "s");
}

void
service_stopping(void)
{
  unsigned n = arrays();

  atomic_store(&stopping, true);
  sd_notifyf(0, "STOPPING=1\nSTATUS=stopping: flushing %u array%s", n, n == 1 ? "" : "s");
}
