/* Deadlines on CLOCK_MONOTONIC, for the waits that must end: a control
 * client's request and reply, an NBD handshake, a closing connection's
 * last replies. */
#ifndef RAIDD_DEADLINE_H
#define RAIDD_DEADLINE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* *D = now + SECONDS. */
static inline void
deadline_in(struct timespec *d, int seconds)
{
  clock_gettime(CLOCK_MONOTONIC, d);
  d->tv_sec += seconds;
}

/* Whole milliseconds left until D, 0 once it is (nearly) there. */
static inline int64_t
deadline_ms_left(const struct timespec *d)
{
  struct timespec now;
  int64_t ms;

  clock_gettime(CLOCK_MONOTONIC, &now);
  ms = (int64_t)(d->tv_sec - now.tv_sec) * 1000 + (d->tv_nsec - now.tv_nsec) / 1000000;
  return ms < 0 ? 0 : ms;
}

/* D has come. */
static inline bool
deadline_passed(const struct timespec *d)
{
  struct timespec now;

  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec > d->tv_sec || (now.tv_sec == d->tv_sec && now.tv_nsec >= d->tv_nsec);
}

#endif
