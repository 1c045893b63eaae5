/* Synchronous wrappers: submit one request on a queue private to the
 * calling thread and run that queue until the request completes.  The
 * queue is made on first use and freed when the thread exits. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "internal.h"
#include "sync/engine.h"

static pthread_key_t queue_key;
static pthread_once_t queue_key_once = PTHREAD_ONCE_INIT;

static void
queue_key_destroy(void *q)
{
  raid_queue_free(q);
}

static void
queue_key_init(void)
{
  pthread_key_create(&queue_key, queue_key_destroy);
}

static int
thread_queue(struct raid_queue **qp)
{
  struct raid_queue *q;
  int r;

  pthread_once(&queue_key_once, queue_key_init);
  q = pthread_getspecific(queue_key);
  if (q == NULL) {
    r = raid_queue_new(64, &q);
    if (r < 0)
      return r;
    pthread_setspecific(queue_key, q);
  }
  *qp = q;
  return 0;
}

struct sync_wait {
  bool done;
  int result;
};

static void
sync_done(void *opaque, int result)
{
  struct sync_wait *w = opaque;

  w->done = true;
  w->result = result;
}

/* Wait for W on Q.  The message of a failed request was recorded on this
 * thread by whatever failed it, since completions run here.  Then finish
 * what the request left on Q, RAID 1's write-behind (raid1.c): nothing
 * runs Q between calls, and a behind write holds its range until done. */
static int
sync_wait(struct raid_queue *q, struct sync_wait *w)
{
  int r;

  while (!w->done || raid_queue_in_flight(q) > 0) {
    r = raid_queue_run(q, 1);
    if (r < 0)
      return r;
  }
  return w->result;
}

#define SYNC_CALL(call)                         \
  do {                                          \
    struct raid_queue *q;                       \
    struct sync_wait w = { false, 0 };          \
    int r = thread_queue(&q);                   \
    if (r < 0)                                  \
      return r;                                 \
    r = (call);                                 \
    if (r < 0)                                  \
      return r;                                 \
    return sync_wait(q, &w);                    \
  } while (0)

EXPORT int
raid_pread(struct raid_array *a, void *buf, size_t count, uint64_t offset)
{
  SYNC_CALL(raid_aio_read(q, a, buf, count, offset, sync_done, &w));
}

EXPORT int
raid_pwrite(struct raid_array *a, const void *buf, size_t count,
            uint64_t offset, unsigned flags)
{
  SYNC_CALL(raid_aio_write(q, a, buf, count, offset, flags, sync_done, &w));
}

EXPORT int
raid_flush(struct raid_array *a)
{
  SYNC_CALL(raid_aio_flush(q, a, sync_done, &w));
}

EXPORT int
raid_discard(struct raid_array *a, size_t count, uint64_t offset)
{
  SYNC_CALL(raid_aio_discard(q, a, count, offset, sync_done, &w));
}

EXPORT int
raid_write_zeroes(struct raid_array *a, size_t count, uint64_t offset,
                  unsigned flags)
{
  SYNC_CALL(raid_aio_write_zeroes(q, a, count, offset, flags, sync_done, &w));
}

/* A resync, waited for (the engine runs it, sync/engine.c), then a flush
 * so that what it wrote is stable. */
EXPORT int
raid_array_resync(struct raid_array *a, raid_progress_fn progress, void *opaque)
{
  struct raid_sync_status st;
  int r;

  if (a->level == RAID_LEVEL_0 || !raid_array_needs_resync(a))
    return 0;
  if ((r = raid_array_sync_start(a, RAID_SYNC_RESYNC)) < 0)
    return r;
  for (;;) {
    bool over = sync_wait_idle(a, 100);

    raid_array_sync_status(a, &st);
    if (over)
      break;
    if (progress && st.action == RAID_SYNC_RESYNC &&
        progress(opaque, st.done, st.total) != 0) {
      raid_array_sync_stop(a);
      return set_error(EINTR, "array %s: resync stopped at %" PRIu64 " of %"
                       PRIu64 " bytes", a->name, st.done, st.total);
    }
  }
  if (st.last_result < 0)
    return set_error(-st.last_result, "array %s: resync failed", a->name);
  if (progress)
    progress(opaque, a->member_size, a->member_size);
  return raid_flush(a);
}
