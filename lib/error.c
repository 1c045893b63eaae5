/* The per-thread last error: an errno and a message (like libnbd's
 * nbd_get_error()).  Library functions return -errno; the message says
 * what, where and why for a human. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

static _Thread_local int last_errno;
static _Thread_local char last_msg[512];

int
set_error(int errnum, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(last_msg, sizeof last_msg, fmt, ap);
  va_end(ap);
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
