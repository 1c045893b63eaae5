/* raidd's log, to one of three places (raidd --log):
 *   stderr   in the foreground;
 *   syslog   for a daemon started by hand or by an init script;
 *   journal  under systemd: each message carries PRIORITY and, where the
 *            caller knows them (log_event()), RAID_ARRAY=, RAID_MEMBER=
 *            and RAID_EVENT=, so "journalctl RAID_ARRAY=md0" shows one
 *            array's story.
 * auto (the default) picks journal when systemd started raidd (it sets
 * JOURNAL_STREAM or INVOCATION_ID), stderr in the foreground, syslog for a
 * daemon.
 *
 * Nothing is lost for want of a log: with no journal to write to (no
 * journald socket at start: sd_journal_send() would drop every message
 * without a word), or for a message the journal refuses, the log goes to
 * stderr instead.  While a daemon starts, before
 * it detaches (log_detached()), its errors and warnings also go to stderr,
 * so that whoever started it sees why it failed; not when that stderr is
 * itself the journal (JOURNAL_STREAM names it), which would show them
 * twice.  The library's messages (member failures, degraded operation) go
 * the same way.  Any thread may log: the switch is atomic. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "raidd.h"

static enum log_mode mode = LOGTO_AUTO;       /* set before any thread starts */
static int max_priority = RAID_LOG_INFO;
static bool stderr_is_journal;
/* Errors and warnings also to stderr: a daemon until it detaches, or an
 * explicit syslog or journal log in the foreground. */
static atomic_bool copy_to_stderr;

int
log_parse_mode(const char *s, enum log_mode *out)
{
  static const char *const names[] = {
    [LOGTO_AUTO] = "auto", [LOGTO_STDERR] = "stderr",
    [LOGTO_SYSLOG] = "syslog", [LOGTO_JOURNAL] = "journal",
  };

  for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = i;
      return 0;
    }
  return -EINVAL;
}

/* JOURNAL_STREAM is "DEV:INODE" of the journal's stream systemd gave us as
 * stdout and stderr. */
static bool
journal_stream_is_stderr(void)
{
  const char *js = getenv("JOURNAL_STREAM");
  unsigned long long dev, ino;
  struct stat st;

  return js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0 &&
    st.st_dev == dev && st.st_ino == ino;
}

/* journald's socket, where sd_journal_send() writes. */
#define JOURNAL_SOCKET "/run/systemd/journal/socket"

static bool
journal_there(void)
{
  struct stat st;

  return stat(JOURNAL_SOCKET, &st) == 0 && S_ISSOCK(st.st_mode);
}

static void
to_stderr(const char *msg)
{
  fprintf(stderr, "raidd: %s\n", msg);
}

/* One message to the journal with its fields (NULL: unknown).  0 or -errno. */
static int
to_journal(int priority, const char *array, const char *member, const char *event,
           const char *msg)
{
  char f[5][1100];
  struct iovec iov[6];
  int n = 0;

#define FIELD(...) do {                                                 \
    int len_ = snprintf(f[n], sizeof f[n], __VA_ARGS__);                \
    iov[n].iov_base = f[n];                                             \
    iov[n].iov_len = len_ < (int)sizeof f[n] ? (size_t)len_ : sizeof f[n] - 1; \
    n++;                                                                \
  } while (0)
  FIELD("PRIORITY=%d", priority);
  if (array)
    FIELD("RAID_ARRAY=%s", array);
  if (member)
    FIELD("RAID_MEMBER=%s", member);
  if (event)
    FIELD("RAID_EVENT=%s", event);
  FIELD("MESSAGE=%s", msg);
#undef FIELD
  iov[n].iov_base = "SYSLOG_IDENTIFIER=raidd";
  iov[n].iov_len = strlen("SYSLOG_IDENTIFIER=raidd");
  n++;
  return sd_journal_sendv(iov, n);
}

static void
emit(int priority, const char *array, const char *member, const char *event,
     const char *msg)
{
  bool copy;

  if (priority > max_priority)
    return;
  copy = priority <= RAID_LOG_WARNING && atomic_load(&copy_to_stderr);
  switch (mode) {
  case LOGTO_JOURNAL:
    if (to_journal(priority, array, member, event, msg) < 0)
      copy = true;              /* no journal: stderr rather than nowhere */
    break;
  case LOGTO_SYSLOG:
    syslog(priority, "%s", msg);
    break;
  default:
    copy = true;
    break;
  }
  if (copy)
    to_stderr(msg);
}

static void
from_library(int priority, const char *msg, void *opaque)
{
  emit(priority, NULL, NULL, NULL, msg);
}

void
log_init(enum log_mode m, bool foreground, int verbose)
{
  max_priority = verbose ? RAID_LOG_DEBUG : RAID_LOG_INFO;
  stderr_is_journal = journal_stream_is_stderr();
  if (m == LOGTO_AUTO) {
    if (getenv("JOURNAL_STREAM") || getenv("INVOCATION_ID"))
      m = LOGTO_JOURNAL;
    else
      m = foreground ? LOGTO_STDERR : LOGTO_SYSLOG;
  }
  if (m == LOGTO_JOURNAL && !journal_there()) {
    fprintf(stderr, "raidd: warning: no journal (%s is not a socket): logging to stderr\n",
            JOURNAL_SOCKET);
    m = LOGTO_STDERR;
  }
  mode = m;
  if (mode == LOGTO_SYSLOG)
    openlog("raidd", LOG_PID, LOG_DAEMON);
  atomic_store(&copy_to_stderr, mode != LOGTO_STDERR && !stderr_is_journal);
  raid_set_log_handler(from_library, NULL, max_priority);
}

enum log_mode
log_mode(void)
{
  return mode;
}

void
log_detached(void)
{
  atomic_store(&copy_to_stderr, false);
}

void
log_msg(int priority, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  emit(priority, NULL, NULL, NULL, msg);
}

void
log_event(int priority, const char *array, const char *member, const char *event,
          const char *fmt, ...)
{
  char msg[1024];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  emit(priority, array, member, event, msg);
}

void
log_limited(struct log_limit *l, int priority, const char *fmt, ...)
{
  char msg[1024];
  struct timespec ts;
  unsigned suppressed;
  int64_t now, since;
  va_list ap;
  int n, saved_errno = errno;     /* for FMT's %m */

  clock_gettime(CLOCK_MONOTONIC, &ts);
  now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  pthread_mutex_lock(&l->lock);
  since = now - l->last_ns;
  if (l->last_ns != 0 && since < (int64_t)LOG_LIMIT_SECONDS * 1000000000) {
    l->suppressed++;
    pthread_mutex_unlock(&l->lock);
    return;
  }
  suppressed = l->suppressed;
  l->suppressed = 0;
  l->last_ns = now;
  pthread_mutex_unlock(&l->lock);

  errno = saved_errno;
  va_start(ap, fmt);
  n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (suppressed && n >= 0 && (size_t)n < sizeof msg)
    snprintf(msg + n, sizeof msg - (size_t)n,
             " (and %u more like it in the last %" PRId64 " s, not logged)",
             suppressed, since / 1000000000);
  emit(priority, NULL, NULL, NULL, msg);
}
