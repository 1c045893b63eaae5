/* raidd: serve libraid arrays as NBD exports.  See raidd(8).
 *
 *   raidd [--foreground] [--config FILE|none] [--control PATH] ...
 *
 * The main thread reads its settings (the command line over the
 * configuration file, /etc/raidd.conf), sets everything up (refusing to
 * start next to another raidd: its pidfile locked, its control or NBD
 * socket answering), assembles the configured arrays (boot.c), detaches
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
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>

#include "raidd.h"
#include "control.h"
#include "udev-watch.h"
#include "reconnect.h"
#include "boot.h"
#include "conf.h"
#include "sizes.h"
#include "events.h"

static void
usage(FILE *f)
{
  fprintf(f, "usage: raidd [--foreground] [--config FILE|none] [--control PATH]\n"
          "             [--nbd-socket PATH] [--nbd-listen HOST:PORT] [--threads N]\n"
          "             [--pidfile PATH] [--assemble-timeout SECONDS] [--no-re-add]\n"
          "             [--rebuild-min RATE] [--rebuild-max RATE] [--program PATH]\n"
          "             [--mailaddr ADDR [--mailfrom ADDR] [--sendmail PATH]]\n"
          "             [--tls=off|on|require] [--tls-certificates DIR] [--tls-psk FILE]\n"
          "             [--tls-verify-peer] [--allow ADDR[/LEN][,...]] [--group NAME]\n"
          "             [--ublk-queue-depth N]\n"
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

/* Long options without a short one (NBD access: nbd-tls.c, nbd-acl.c). */
enum {
  OPT_TLS = 0x200, OPT_TLS_CERTIFICATES, OPT_TLS_PSK, OPT_TLS_VERIFY_PEER,
  OPT_ALLOW, OPT_GROUP, OPT_UBLK_QUEUE_DEPTH,
};

/* ---- settings: the command line and the configuration file -------------
 * Every setting is a long option; the configuration file's other lines
 * ("THREADS 2") name the same options and go through the same
 * set_option(), with the file and line to name in an error.  The file is
 * read first, so the command line wins. */
static const struct option opts[] = {
  { "foreground", no_argument, NULL, 'f' },
  { "config", required_argument, NULL, 'C' },
  { "control", required_argument, NULL, 'c' },
  { "nbd-socket", required_argument, NULL, 's' },
  { "nbd-listen", required_argument, NULL, 'l' },
  { "threads", required_argument, NULL, 't' },
  { "pidfile", required_argument, NULL, 'p' },
  { "assemble-timeout", required_argument, NULL, 'T' },
  { "rebuild-min", required_argument, NULL, 'm' },
  { "rebuild-max", required_argument, NULL, 'M' },
  { "program", required_argument, NULL, 'P' },
  { "mailaddr", required_argument, NULL, 'A' },
  { "mailfrom", required_argument, NULL, 'F' },
  { "sendmail", required_argument, NULL, 'S' },
  { "verbose", no_argument, NULL, 'v' },
  { "no-re-add", no_argument, NULL, 'R' },
  { "log", required_argument, NULL, 'L' },
  { "tls", required_argument, NULL, OPT_TLS },
  { "tls-certificates", required_argument, NULL, OPT_TLS_CERTIFICATES },
  { "tls-psk", required_argument, NULL, OPT_TLS_PSK },
  { "tls-verify-peer", no_argument, NULL, OPT_TLS_VERIFY_PEER },
  { "allow", required_argument, NULL, OPT_ALLOW },
  { "group", required_argument, NULL, OPT_GROUP },
  { "ublk-queue-depth", required_argument, NULL, OPT_UBLK_QUEUE_DEPTH },
  { "help", no_argument, NULL, 'h' },
  { "version", no_argument, NULL, 'V' },
  { NULL, 0, NULL, 0 },
};

/* What only the command line may say. */
static bool
command_line_only(int c)
{
  return c == 'f' || c == 'C' || c == 'h' || c == 'V';
}

struct settings {
  struct nbd_server_config nbd;
  const char *control;
  const char *pidfile;
  const char *config;
  bool foreground, re_add;
  int verbose;
  int assemble_timeout;
  unsigned ublk_depth;           /* --ublk-queue-depth */
  int64_t rebuild_min, rebuild_max;   /* bytes/s, -1: the library's */
  struct events_config ev;       /* alerts: --program, --mailaddr... */
  enum log_mode log_to;          /* --log */
  bool conf_bad;                 /* a setting of the file was refused */
};

/* Take option C with ARG (NULL for one without a value); WHERE starts an
 * error: "raidd: --" (the option follows) or "raidd: FILE:LINE: ".  0, 1 to exit 0 (--help,
 * --version), or -1 (said why). */
static int
set_option(struct settings *st, int c, const char *arg, const char *where)
{
  uint64_t rate;
  long n;
  char *end;

  switch (c) {
  case 'f': st->foreground = true; break;
  case 'C': st->config = arg; break;
  case 'c': st->control = arg; break;
  case 's': st->nbd.unix_path = arg; break;
  case 'l': st->nbd.tcp_listen = arg; break;
  case 't':
    n = strtol(arg, &end, 10);
    if (*arg == '\0' || *end || n < 1 || n > 256) {
      fprintf(stderr, "%sthreads %s: must be 1 to 256\n", where, arg);
      return -1;
    }
    st->nbd.threads = n;
    break;
  case 'T':
    n = strtol(arg, &end, 10);
    if (*arg == '\0' || *end || n < 0 || n > 3600) {
      fprintf(stderr, "%sassemble-timeout %s: must be 0 to 3600 seconds\n", where, arg);
      return -1;
    }
    st->assemble_timeout = n;
    break;
  case 'm':
  case 'M':
    if (size_parse(arg, &rate) < 0 || rate > INT64_MAX) {
      fprintf(stderr, "%s%s %s: not a rate (bytes per second, with K, M, G)\n", where,
              c == 'm' ? "rebuild-min" : "rebuild-max", arg);
      return -1;
    }
    *(c == 'm' ? &st->rebuild_min : &st->rebuild_max) = (int64_t)rate;
    break;
  case 'p': st->pidfile = arg; break;
  case 'P': st->ev.program = arg; break;
  case 'A': st->ev.mailaddr = arg; break;
  case 'F': st->ev.mailfrom = arg; break;
  case 'S': st->ev.sendmail = arg; break;
  case 'v': st->verbose++; break;
  case 'R': st->re_add = false; break;
  case 'L':
    if (log_parse_mode(arg, &st->log_to) < 0) {
      fprintf(stderr, "%slog %s: expected auto, journal, syslog or stderr\n", where, arg);
      return -1;
    }
    break;
  case OPT_TLS:
    if ((n = nbd_tls_parse_mode(arg)) < 0) {
      fprintf(stderr, "%stls=%s: must be off, on or require\n", where, arg);
      return -1;
    }
    st->nbd.tls = n;
    break;
  case OPT_TLS_CERTIFICATES: st->nbd.tls_certificates = arg; break;
  case OPT_TLS_PSK: st->nbd.tls_psk = arg; break;
  case OPT_TLS_VERIFY_PEER: st->nbd.tls_verify_peer = true; break;
  case OPT_ALLOW:
    if (nbd_acl_add(&st->nbd.allow, arg) < 0) {
      fprintf(stderr, "%sallow %s: refused (above)\n", where, arg);
      return -1;
    }
    break;
  case OPT_GROUP: st->nbd.group = arg; break;
  case OPT_UBLK_QUEUE_DEPTH:
    n = strtol(arg, &end, 10);
    if (*arg == '\0' || *end || n < 1 || n > UBLK_MAX_QUEUE_DEPTH_OPT) {
      fprintf(stderr, "%sublk-queue-depth %s: must be 1 to %d\n", where, arg,
              UBLK_MAX_QUEUE_DEPTH_OPT);
      return -1;
    }
    st->ublk_depth = n;
    break;
  case 'h': usage(stdout); return 1;
  case 'V': printf("raidd %s\n", PACKAGE_VERSION); return 1;
  default: usage(stderr); return -1;
  }
  return 0;
}

/* The configuration file's settings through set_option().  0, or -1 when
 * one is wrong (said why, naming the line): the others are taken, so that
 * the arrays still come back, but main() then opens no TCP port (a
 * misspelt TLS or access-list line must not open it in the clear). */
static int
apply_conf_settings(struct settings *st, const struct conf *cf)
{
  unsigned i;
  int bad = 0;

  for (i = 0; i < cf->nsettings; i++) {
    const struct conf_setting *cs = &cf->settings[i];
    const struct option *o;
    char where[4200];
    bool on = true;

    snprintf(where, sizeof where, "raidd: %s:%u", cf->path, cs->line);
    for (o = opts; o->name && strcmp(o->name, cs->key) != 0; o++)
      ;
    if (o->name == NULL || command_line_only(o->val)) {
      fprintf(stderr, "%s: unknown setting '%s' (see raidd.conf(5))\n", where, cs->key);
      bad = -1;
      continue;
    }
    if (o->has_arg == no_argument) {
      if (cs->value[0] && strcasecmp(cs->value, "yes") != 0 && strcasecmp(cs->value, "no") != 0) {
        fprintf(stderr, "%s: %s %s: say yes or no (or nothing, for yes)\n", where, cs->key,
                cs->value);
        bad = -1;
        continue;
      }
      on = strcasecmp(cs->value, "no") != 0;
    }
    else if (cs->value[0] == '\0') {
      fprintf(stderr, "%s: %s: needs a value\n", where, cs->key);
      bad = -1;
      continue;
    }
    strcat(where, ": ");
    if (on && set_option(st, o->val, o->has_arg == no_argument ? NULL : cs->value, where) != 0)
      bad = -1;
  }
  return bad;
}

static void
conf_error(const char *msg, void *opaque)
{
  fprintf(stderr, "raidd: %s\n", msg);
}

/* Settings from the command line, then (when there is one) the
 * configuration file under them.  0 to go on, 1 to exit 0, -1 to exit 2
 * (a usage error) or -2 to exit 1. */
static int
settings_read(struct settings *st, int argc, char **argv, struct conf **cfp)
{
  int c, r;

  /* Pass 1 finds --config (and --help); pass 2, after the file, lets the
   * command line override it. */
  opterr = 1;
  while ((c = getopt_long(argc, argv, "fvh", opts, NULL)) != -1)
    if (c == 'C' || c == 'h' || c == 'V' || c == '?')
      if ((r = set_option(st, c, optarg, "raidd: --")) != 0)
        return r;
  if (optind != argc) {
    usage(stderr);
    return -1;
  }
  *cfp = NULL;
  /* No /etc/raidd.conf: nothing configured, nothing to say. */
  if (st->config == NULL && access(RAIDD_CONF_DEFAULT, F_OK) < 0 && errno == ENOENT)
    st->config = "none";
  if (st->config == NULL || strcmp(st->config, "none") != 0) {
    r = conf_read(st->config ? st->config : RAIDD_CONF_DEFAULT, conf_error, NULL, cfp);
    if (r < 0)
      return -2;
    else if (apply_conf_settings(st, *cfp) < 0)
      st->conf_bad = true;
  }
  optind = 0;
  while ((c = getopt_long(argc, argv, "fvh", opts, NULL)) != -1)
    if (c != 'C' && (r = set_option(st, c, optarg, "raidd: --")) != 0)
      return r;
  return 0;
}

int
main(int argc, char **argv)
{
  struct settings st = {
    .nbd = { .unix_path = "/run/raidd/nbd.sock" },
    .control = "/run/raidd/control.sock",
    .re_add = true,
    .assemble_timeout = 30,
    .rebuild_min = -1,
    .rebuild_max = -1,
    .log_to = LOGTO_AUTO,
  };
  int activated = 0;
  struct conf *cf = NULL;
  pid_t other;
  int sig, r;
  unsigned failed;
  sigset_t set;

  st.nbd.threads = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
  r = settings_read(&st, argc, argv, &cf);
  if (r != 0) {
    conf_free(cf);
    return r == 1 ? 0 : r == -1 ? 2 : 1;
  }
  if ((st.ev.mailfrom || st.ev.sendmail) && !st.ev.mailaddr) {
    fprintf(stderr, "raidd: --%s needs --mailaddr\n", st.ev.mailfrom ? "mailfrom" : "sendmail");
    conf_free(cf);
    return 2;
  }
  /* systemd waits for READY=1 from this very process (Type=notify). */
  if (service_notify_wanted())
    st.foreground = true;
  /* A daemon writes its pidfile; in the foreground, only when asked. */
  if (st.pidfile == NULL && !st.foreground)
    st.pidfile = "/run/raidd/raidd.pid";
  /* Request buffers (up to 32 MiB each) come and go at line rate: keep
   * glibc from serving each from a fresh mmap (page faults and zeroing
   * on every request) or trimming the heap after each free. */
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  /* And set glibc's malloc up here, before any thread: the workers'
   * malloc_trim() (nbd-worker.c) would otherwise be the first call into it
   * where another allocator (ASan's) serves malloc, and two workers
   * trimming at once both set it up (unlocked), both count themselves
   * on the main arena and the second to exit aborts in glibc. */
  malloc_trim(0);

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

  if (st.conf_bad && st.nbd.tcp_listen) {
    fprintf(stderr, "raidd: error: not listening on TCP %s: a setting of %s was refused "
            "(above); fix it and restart raidd\n", st.nbd.tcp_listen, cf->path);
    st.nbd.tcp_listen = NULL;
  }
  boot_set_conf(cf);
  service_init();
  if (!st.foreground && detach_start() < 0) {
    perror("raidd: cannot detach");
    return 1;
  }
  log_init(st.log_to, st.foreground, st.verbose);
  if (strlen(st.control) >= sizeof ((struct sockaddr_un *)0)->sun_path) {
    log_err("control socket path %s is too long: %zu bytes, at most %zu", st.control,
            strlen(st.control), sizeof ((struct sockaddr_un *)0)->sun_path - 1);
    return 1;
  }
  /* Refuse to start next to another raidd before touching anything of
   * its: its pidfile, its control socket, its NBD socket. */
  if (st.pidfile && (make_parent(st.pidfile, "pidfile") < 0 || pidfile_lock(st.pidfile) < 0))
    return 1;
  if ((activated = service_sockets(st.control, &st.nbd)) < 0)
    goto fail;
  if (st.conf_bad && (activated & SERVICE_NBD_TCP)) {
    log_err("systemd passed a TCP socket, and a setting of %s was refused (above): "
            "not serving it; fix the file and restart raidd", cf->path);
    goto fail;
  }
  if (make_parent(st.control, "control socket") < 0 ||
      (st.nbd.unix_path && make_parent(st.nbd.unix_path, "NBD socket") < 0))
    goto fail;
  if (st.rebuild_min >= 0 && st.rebuild_max > 0 && st.rebuild_min > st.rebuild_max) {
    log_err("rebuild-min (%lld bytes/s) is above rebuild-max (%lld bytes/s)",
            (long long)st.rebuild_min, (long long)st.rebuild_max);
    goto fail;
  }
  control_set_rebuild_limits(st.rebuild_min, st.rebuild_max);
  control_set_nbd_socket(st.nbd.unix_path);
  ublk_configure(st.nbd.threads, st.ublk_depth, st.control);
  if (control_start(st.control) < 0)
    goto fail;
  if (st.nbd.unix_path && !(activated & SERVICE_NBD_UNIX) &&
      socket_in_use(st.nbd.unix_path, &other) > 0) {
    log_err("the NBD socket %s is served by another process (PID %d): give this raidd "
            "another --nbd-socket", st.nbd.unix_path, (int)other);
    control_stop();
    goto fail;
  }
  if (nbd_server_start(&st.nbd) < 0) {
    log_err("cannot start the NBD server");
    control_stop();
    goto fail;
  }
  if (events_start(&st.ev) < 0) {
    nbd_server_stop();
    control_stop();
    goto fail;
  }
  udev_watch_start(st.re_add);
  if (st.re_add)
    reconnect_start();
  if (control_serve() < 0) {
    reconnect_stop();
    udev_watch_stop();
    events_stop();
    nbd_server_stop();
    if (st.nbd.unix_path && !(activated & SERVICE_NBD_UNIX))
      unlink(st.nbd.unix_path);
    goto fail;
  }
  failed = boot_assemble(st.assemble_timeout);
  if (!st.foreground)
    detach_finish();
  if (cf && cf->narrays)
    log_info("configured arrays: %u of %u running%s", cf->narrays - failed, cf->narrays,
             failed ? " (see the errors above)" : "");
  log_info("ready: control %s, NBD %s%s%s, %u worker thread%s", st.control,
           st.nbd.unix_path ? st.nbd.unix_path : "(no unix socket)",
           st.nbd.tcp_listen ? " and tcp " : "", st.nbd.tcp_listen ? st.nbd.tcp_listen : "",
           st.nbd.threads, st.nbd.threads == 1 ? "" : "s");
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
  reconnect_stop();
  udev_watch_stop();
  control_stop();
  ublk_stop_all();              /* their requests finish; then the arrays stop */
  nbd_detach_all();             /* before their sockets close */
  nbd_server_stop();
  control_stop_all_arrays();
  events_stop();                /* after the arrays: they report too */
  if (st.nbd.unix_path && !(activated & SERVICE_NBD_UNIX))
    unlink(st.nbd.unix_path);
  log_info("stopped");
  pidfile_remove(st.pidfile);
  boot_set_conf(NULL);
  conf_free(cf);
  return 0;

 fail:
  pidfile_remove(st.pidfile);
  conf_free(cf);
  return 1;
}
