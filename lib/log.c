/* Log messages: member failures and degraded operation, named by array,
 * member and sector as md names them.  Applications (raidd) install a
 * handler that sends them to syslog; the default writes to stderr. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "internal.h"

static raid_log_fn log_fn;
static void *log_opaque;
static int log_max = RAID_LOG_INFO;

EXPORT void
raid_set_log_handler(raid_log_fn fn, void *opaque, int max_priority)
{
  log_fn = fn;
  log_opaque = opaque;
  log_max = max_priority;
}

static void
vlog(int priority, const char *fmt, va_list ap)
{
  char msg[512];

  if (priority > log_max)
    return;
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (log_fn)
    log_fn(priority, msg, log_opaque);
  else
    fprintf(stderr, "libraid: %s\n", msg);
}

void
raid_log(int priority, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  vlog(priority, fmt, ap);
  va_end(ap);
}

/* At most this many messages per call site per second. */
#define RATELIMIT_BURST 10

void
raid_log_ratelimited(struct ratelimit *rl, int priority, const char *fmt, ...)
{
  va_list ap;
  uint64_t now = (uint64_t)time(NULL);
  uint64_t w = atomic_load(&rl->window);

  if (w != now && atomic_compare_exchange_strong(&rl->window, &w, now))
    atomic_store(&rl->count, 0);
  if (atomic_fetch_add(&rl->count, 1) >= RATELIMIT_BURST)
    return;
  va_start(ap, fmt);
  vlog(priority, fmt, ap);
  va_end(ap);
}
