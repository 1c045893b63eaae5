/* raidd's log: stderr in the foreground, syslog once daemonized; the
 * library's messages (member failures, degraded operation) go the same
 * way. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>

#include "raidd.h"

static bool to_stderr = true;
static int max_priority = RAID_LOG_INFO;

static void
emit(int priority, const char *msg)
{
  if (priority > max_priority)
    return;
  if (to_stderr)
    fprintf(stderr, "raidd: %s\n", msg);
  else
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
  to_stderr = foreground;
  max_priority = verbose ? RAID_LOG_DEBUG : RAID_LOG_INFO;
  if (!foreground)
    openlog("raidd", LOG_PID, LOG_DAEMON);
  raid_set_log_handler(from_library, NULL, max_priority);
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
