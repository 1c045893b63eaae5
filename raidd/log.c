/* raidd's log: stderr in the foreground; syslog for a daemon (on systemd
 * machines the journal takes syslog's messages).  While a daemon starts,
 * before it detaches, its errors and warnings also go to stderr, so that
 * whoever started it sees why it failed.  The library's messages (member
 * failures, degraded operation) go the same way.  Any thread may log:
 * where to is an atomic switch. */
#include <config.h>

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>

#include "raidd.h"

enum { TO_STDERR, TO_BOTH, TO_SYSLOG };
static atomic_int where = TO_STDERR;
static int max_priority = RAID_LOG_INFO;   /* set before any thread starts */

static void
emit(int priority, const char *msg)
{
  int w = atomic_load(&where);

  if (priority > max_priority)
    return;
  if (w == TO_STDERR || (w == TO_BOTH && priority <= RAID_LOG_WARNING))
    fprintf(stderr, "raidd: %s\n", msg);
  if (w != TO_STDERR)
    syslog(priority, "%s", msg);
}

static void
from_library(int priority, const char *msg, void *opaque)
{
  emit(priority, msg);
}

void
log_init(bool foreground, int verbose)
{
  max_priority = verbose ? RAID_LOG_DEBUG : RAID_LOG_INFO;
  if (!foreground) {
    openlog("raidd", LOG_PID, LOG_DAEMON);
    atomic_store(&where, TO_BOTH);
  }
  raid_set_log_handler(from_library, NULL, max_priority);
}

void
log_to_syslog(void)
{
  atomic_store(&where, TO_SYSLOG);
}

void
log_msg(int priority, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  emit(priority, msg);
}
