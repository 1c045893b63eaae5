/* The per-thread last error: an errno and a message (like libnbd's
 * nbd_get_error()).  Library functions return -errno; the message says
 * what, where and why for a human. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local int last_errno;
static _Thread_local char last_msg[512];

int
set_error(int errnum, const char *fmt, ...)
{
  char msg[sizeof last_msg];
  va_list ap;

  /* Formatted aside first: a caller may pass raid_get_error() itself as
   * an argument ("...: %s"), which must not be overwritten while read. */
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  memcpy(last_msg, msg, sizeof msg);
  last_errno = errnum;
  return -errnum;
}

EXPORT const char *
raid_get_error(void)
{
  return last_msg[0] ? last_msg : "no error";
}

EXPORT int
raid_get_errno(void)
{
  return last_errno;
}
