/* A background thread of an array (md's md_thread) and the library's one
 * clock.
 *
 * Three jobs of a running array wait for work in a thread of their own:
 * the sync engine (sync/engine.c), the bitmap writer (md/bitmap-run.c) and
 * safe mode (md/safemode.c).  Each embeds a struct daemon: the mutex that
 * guards the job's own state (and quit), a condition variable on
 * CLOCK_MONOTONIC that wakes the thread, and the thread.  The thread's
 * function loops under the lock while !quit, doing what its state asks
 * and daemon_wait()ing when there is nothing; whoever changes that state
 * does it under the lock and wakes the thread with daemon_wake_locked().
 * daemon_stop() sets quit, wakes it and joins it.
 */
#include <config.h>

#include <time.h>

#include "internal.h"

uint64_t
mono_ns(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void
daemon_init(struct daemon *d)
{
  pthread_condattr_t ca;

  pthread_mutex_init(&d->lock, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&d->cond, &ca);
  pthread_condattr_destroy(&ca);
  d->quit = false;
  d->started = false;
}

int
daemon_start(struct daemon *d, void *(*fn)(void *), void *arg)
{
  int r = pthread_create(&d->thread, NULL, fn, arg);

  d->started = r == 0;
  return r;
}

void
daemon_wait(struct daemon *d, uint64_t due)
{
  struct timespec ts;

  if (due == 0) {
    pthread_cond_wait(&d->cond, &d->lock);
    return;
  }
  ts.tv_sec = (time_t)(due / 1000000000u);
  ts.tv_nsec = (long)(due % 1000000000u);
  pthread_cond_timedwait(&d->cond, &d->lock, &ts);
}

void
daemon_wake_locked(struct daemon *d)
{
  pthread_cond_broadcast(&d->cond);
}

void
daemon_stop(struct daemon *d)
{
  if (!d->started)
    return;
  pthread_mutex_lock(&d->lock);
  d->quit = true;
  pthread_cond_broadcast(&d->cond);
  pthread_mutex_unlock(&d->lock);
  pthread_join(d->thread, NULL);
  d->started = false;
}

void
daemon_destroy(struct daemon *d)
{
  pthread_cond_destroy(&d->cond);
  pthread_mutex_destroy(&d->lock);
}
