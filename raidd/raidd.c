/* raidd: serve libraid arrays as NBD exports.  See raidd(8).
 *
 *   raidd [--foreground] [--control PATH] [--nbd-socket PATH]
 *         [--nbd-listen HOST:PORT] [--threads N] [--pidfile PATH] [--verbose]
 *
 * The main thread sets everything up, then waits for SIGTERM or SIGINT
 * (sigwait) and shuts down in order: stop taking control requests, stop
 * the NBD server (every request in flight finishes and is answered, every
 * member is flushed), stop every array (which marks it clean on its
 * members), remove the sockets and the pidfile. */
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

#include "raidd.h"
#include "control.h"
#include "udev-watch.h"

static void
usage(FILE *f)
{
  fprintf(f, "usage: raidd [--foreground] [--control PATH] [--nbd-socket PATH]\n"
          "             [--nbd-listen HOST:PORT] [--threads N] [--pidfile PATH] [--no-re-add]\n"
          "             [--verbose]\n");
}

/* mkdir -p for the directory holding PATH. */
static void
make_parent(const char *path)
{
  char dir[4096], *p;

  snprintf(dir, sizeof dir, "%s", path);
  p = strrchr(dir, '/');
  if (p == NULL || p == dir)
    return;
  *p = '\0';
  for (p = dir + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(dir, 0755);
      *p = '/';
    }
  mkdir(dir, 0755);
}

/* Detach from the terminal; the parent exits once the child is ready
 * (it writes a byte to the pipe), so "raidd && raidctl ..." works. */
static int ready_fd = -1;

static int
daemonize(void)
{
  int p[2];
  pid_t pid;
  char c;

  if (pipe(p) < 0)
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
  int fd = open("/dev/null", O_RDWR);
  if (fd >= 0) {
    dup2(fd, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    if (fd > 2)
      close(fd);
  }
  return 0;
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
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
  };
  struct nbd_server_config nbd = { .unix_path = "/run/raidd/nbd.sock" };
  const char *control = "/run/raidd/control.sock";
  const char *pidfile = "/run/raidd/raidd.pid";
  bool foreground = false, re_add = true;
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
    case 'h': usage(stdout); return 0;
    case 'V': printf("raidd %s\n", PACKAGE_VERSION); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind != argc) {
    usage(stderr);
    return 2;
  }
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

  if (!foreground && daemonize() < 0) {
    perror("raidd: daemonize");
    return 1;
  }
  log_init(foreground, verbose);
  make_parent(control);
  if (nbd.unix_path)
    make_parent(nbd.unix_path);
  control_set_nbd_socket(nbd.unix_path);
  if (control_start(control) < 0) {
    log_err("cannot listen on the control socket %s", control);
    return 1;
  }
  if (nbd_server_start(&nbd) < 0) {
    log_err("cannot start the NBD server");
    control_stop();
    return 1;
  }
  udev_watch_start(re_add);
  if (!foreground && pidfile) {
    FILE *f;
    make_parent(pidfile);
    if ((f = fopen(pidfile, "w")) != NULL) {
      fprintf(f, "%d\n", (int)getpid());
      fclose(f);
    }
  }
  log_info("ready: control %s, NBD %s%s%s, %u worker thread%s", control,
           nbd.unix_path ? nbd.unix_path : "(no unix socket)",
           nbd.tcp_listen ? " and tcp " : "", nbd.tcp_listen ? nbd.tcp_listen : "",
           nbd.threads, nbd.threads == 1 ? "" : "s");
  if (ready_fd >= 0) {
    if (write(ready_fd, "", 1) != 1)
      log_warn("could not tell the parent we are ready");
    close(ready_fd);
  }

  while (sigwait(&set, &sig) != 0 || (sig != SIGTERM && sig != SIGINT))
    ;
  log_info("%s: shutting down", strsignal(sig));
  udev_watch_stop();
  control_stop();
  nbd_server_stop();
  control_stop_all_arrays();
  if (nbd.unix_path)
    unlink(nbd.unix_path);
  if (!foreground && pidfile)
    unlink(pidfile);
  log_info("stopped");
  return 0;
}
