/* raidd: serve libraid arrays as NBD exports.  See raidd(8).
 *
 *   raidd [--foreground] [--control PATH] [--nbd-socket PATH]
 *         [--nbd-listen HOST:PORT] [--threads N] [--pidfile PATH] [--verbose]
 *         [--log auto|journal|syslog|stderr]
 *
 * The main thread sets everything up (refusing to start next to another
 * raidd: its pidfile locked, its control or NBD socket answering), detaches
 * once ready (see detach_start()), then waits for SIGTERM or SIGINT
 * (sigwait) and shuts down in order: stop taking control requests, stop
 * the NBD server (every request in flight finishes and is answered, every
 * member is flushed), stop every array (which marks it clean on its
 * members), remove the sockets and the pidfile.  Under systemd it stays in
 * the foreground and says when it is ready and when it stops, and may
 * serve NBD on sockets systemd passes it (service.c). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>

#include "raidd.h"
#include "control.h"
#include "udev-watch.h"

static void
usage(FILE *f)
{
  fprintf(f, "usage: raidd [--foreground] [--control PATH] [--nbd-socket PATH]\n"
          "             [--nbd-listen HOST:PORT] [--threads N] [--pidfile PATH] [--no-re-add]\n"
          "             [--log auto|journal|syslog|stderr] [--verbose]\n");
}

/* mkdir -p for the directory holding PATH, WHAT (for the message): 0, or
 * -1 (logged). */
static int
make_parent(const char *path, const char *what)
{
  char dir[4096], *p, c;

  snprintf(dir, sizeof dir, "%s", path);
  p = strrchr(dir, '/');
  if (p == NULL || p == dir)
    return 0;
  *p = '\0';
  for (p = dir + 1; ; p++) {
    if (*p != '/' && *p != '\0')
      continue;
    c = *p;
    *p = '\0';
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
      log_err("cannot create the directory %s for the %s %s: %m", dir, what, path);
      return -1;
    }
    *p = c;
    if (c == '\0')
      return 0;
  }
}

/* The pidfile: raidd's PID, under a write lock (fcntl) that raidd holds
 * while it runs, so a second raidd given the same file refuses to start
 * instead of overwriting it.  A file left by a raidd that died is not
 * locked and is taken over. */
static int pidfile_fd = -1;

static int
pidfile_lock(const char *path)
{
  struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
  char buf[32] = "";
  long pid = 0;
  int fd, err;

  fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    log_err("pidfile %s: %m", path);
    return -1;
  }
  if (fcntl(fd, F_SETLK, &fl) < 0) {
    err = errno;
    if (err == EACCES || err == EAGAIN) {
      if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK)
        pid = fl.l_pid;
      else if (pread(fd, buf, sizeof buf - 1, 0) > 0)
        pid = strtol(buf, NULL, 10);
      log_err("pidfile %s is locked by another raidd (PID %ld): stop it first, or "
              "give this one another --pidfile", path, pid);
    }
    else
      log_err("pidfile %s: cannot lock it: %s", path, strerror(err));
    close(fd);
    return -1;
  }
  snprintf(buf, sizeof buf, "%d\n", (int)getpid());
  if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, strlen(buf), 0) != (ssize_t)strlen(buf)) {
    log_err("pidfile %s: cannot write it: %m", path);
    close(fd);
    return -1;
  }
  pidfile_fd = fd;
  return 0;
}

static void
pidfile_remove(const char *path)
{
  if (pidfile_fd < 0)
    return;
  unlink(path);                 /* while still locked */
  close(pidfile_fd);
  pidfile_fd = -1;
}

/* Detaching, in two steps, so that a daemon that cannot start says why on
 * the stderr of whoever started it (an init script, a user), and the
 * command returns only once raidd is ready ("raidd && raidctl ..."):
 * detach_start() forks; the parent waits for a byte on a pipe and exits 0
 * when it comes, 1 when the pipe closes without it (the child failed and
 * said why on the stderr they share).  The child sets up with stderr open,
 * then detach_finish() switches the log to syslog, points 0, 1 and 2 at
 * /dev/null and sends the byte. */
static int ready_fd = -1;

static int
detach_start(void)
{
  int p[2];
  pid_t pid;
  char c;

  if (pipe2(p, O_CLOEXEC) < 0)
    return -errno;
  pid = fork();
  if (pid < 0)
    return -errno;
  if (pid > 0) {
    close(p[1]);
    exit(read(p[0], &c, 1) == 1 ? 0 : 1);
  }
  close(p[0]);
  ready_fd = p[1];
  setsid();
  if (chdir("/") < 0)
    return -errno;
  return 0;
}

static void
detach_finish(void)
{
  int fd;

  log_detached();
  fd = open("/dev/null", O_RDWR);
  if (fd >= 0) {
    dup2(fd, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    if (fd > 2)
      close(fd);
  }
}

int
main(int argc, char **argv)
{
  static const struct option opts[] = {
    { "foreground", no_argument, NULL, 'f' },
    { "control", required_argument, NULL, 'c' },
    { "nbd-socket", required_argument, NULL, 's' },
    { "nbd-listen", required_argument, NULL, 'l' },
    { "threads", required_argument, NULL, 't' },
    { "pidfile", required_argument, NULL, 'p' },
    { "verbose", no_argument, NULL, 'v' },
    { "no-re-add", no_argument, NULL, 'R' },
    { "log", required_argument, NULL, 'L' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
  };
  struct nbd_server_config nbd = { .unix_path = "/run/raidd/nbd.sock" };
  const char *control = "/run/raidd/control.sock";
  const char *pidfile = NULL;
  bool foreground = false, re_add = true;
  enum log_mode log_to = LOGTO_AUTO;
  int activated = 0;
  pid_t other;
  int verbose = 0, c, sig;
  long n;
  char *end;
  sigset_t set;

  nbd.threads = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
  while ((c = getopt_long(argc, argv, "fvh", opts, NULL)) != -1) {
    switch (c) {
    case 'f': foreground = true; break;
    case 'c': control = optarg; break;
    case 's': nbd.unix_path = optarg; break;
    case 'l': nbd.tcp_listen = optarg; break;
    case 't':
      n = strtol(optarg, &end, 10);
      if (*end || n < 1 || n > 256) {
        fprintf(stderr, "raidd: --threads %s: must be 1 to 256\n", optarg);
        return 2;
      }
      nbd.threads = n;
      break;
    case 'p': pidfile = optarg; break;
    case 'v': verbose++; break;
    case 'R': re_add = false; break;
    case 'L':
      if (log_parse_mode(optarg, &log_to) < 0) {
        fprintf(stderr, "raidd: --log %s: expected auto, journal, syslog or stderr\n", optarg);
        return 2;
      }
      break;
    case 'h': usage(stdout); return 0;
    case 'V': printf("raidd %s\n", PACKAGE_VERSION); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind != argc) {
    usage(stderr);
    return 2;
  }
  /* systemd waits for READY=1 from this very process (Type=notify). */
  if (service_notify_wanted())
    foreground = true;
  /* A daemon writes its pidfile; in the foreground, only when asked. */
  if (pidfile == NULL && !foreground)
    pidfile = "/run/raidd/raidd.pid";
  /* Request buffers (up to 32 MiB each) come and go at line rate: keep
   * glibc from serving each from a fresh mmap (page faults and zeroing
   * on every request) or trimming the heap after each free. */
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);

  if (geteuid() != 0)
    fprintf(stderr, "raidd: warning: not running as root: members and "
            "/run/raidd may be out of reach\n");

  /* Signals: SIGPIPE ignored (a client that goes away is an EPIPE), the
   * stop signals blocked everywhere and taken by sigwait() below. */
  signal(SIGPIPE, SIG_IGN);
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL);

  service_init();
  if (!foreground && detach_start() < 0) {
    perror("raidd: cannot detach");
    return 1;
  }
  log_init(log_to, foreground, verbose);
  if (strlen(control) >= sizeof ((struct sockaddr_un *)0)->sun_path) {
    log_err("control socket path %s is too long: %zu bytes, at most %zu", control,
            strlen(control), sizeof ((struct sockaddr_un *)0)->sun_path - 1);
    return 1;
  }
  /* Refuse to start next to another raidd before touching anything of
   * its: its pidfile, its control socket, its NBD socket. */
  if (pidfile && (make_parent(pidfile, "pidfile") < 0 || pidfile_lock(pidfile) < 0))
    return 1;
  if ((activated = service_sockets(control, &nbd)) < 0)
    goto fail;
  if (make_parent(control, "control socket") < 0 ||
      (nbd.unix_path && make_parent(nbd.unix_path, "NBD socket") < 0))
    goto fail;
  control_set_nbd_socket(nbd.unix_path);
  if (control_start(control) < 0)
    goto fail;
  if (nbd.unix_path && !(activated & SERVICE_NBD_UNIX) &&
      socket_in_use(nbd.unix_path, &other) > 0) {
    log_err("the NBD socket %s is served by another process (PID %d): give this raidd "
            "another --nbd-socket", nbd.unix_path, (int)other);
    control_stop();
    goto fail;
  }
  if (nbd_server_start(&nbd) < 0) {
    log_err("cannot start the NBD server");
    control_stop();
    goto fail;
  }
  udev_watch_start(re_add);
  if (control_serve() < 0) {
    udev_watch_stop();
    nbd_server_stop();
    if (nbd.unix_path && !(activated & SERVICE_NBD_UNIX))
      unlink(nbd.unix_path);
    goto fail;
  }
  if (!foreground)
    detach_finish();
  log_info("ready: control %s, NBD %s%s%s, %u worker thread%s", control,
           nbd.unix_path ? nbd.unix_path : "(no unix socket)",
           nbd.tcp_listen ? " and tcp " : "", nbd.tcp_listen ? nbd.tcp_listen : "",
           nbd.threads, nbd.threads == 1 ? "" : "s");
  if (ready_fd >= 0) {
    if (write(ready_fd, "", 1) != 1)
      log_warn("could not tell the parent we are ready");
    close(ready_fd);
  }
  service_ready();

  while (sigwait(&set, &sig) != 0 || (sig != SIGTERM && sig != SIGINT))
    ;
  log_info("%s: shutting down", strsignal(sig));
  service_stopping();
  udev_watch_stop();
  control_stop();
  nbd_server_stop();
  control_stop_all_arrays();
  if (nbd.unix_path && !(activated & SERVICE_NBD_UNIX))
    unlink(nbd.unix_path);
  log_info("stopped");
  pidfile_remove(pidfile);
  return 0;

 fail:
  pidfile_remove(pidfile);
  return 1;
}
