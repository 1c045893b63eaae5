/* Per-thread queues: one io_uring for member I/O, a list of deferred
 * completions, and a mailbox other threads post to.
 *
 * Why every completion goes through the queue: personalities chain member
 * I/Os (RAID 5 reads old data, then writes data and parity; a failed RAID 1
 * read retries on a mirror), and calling completions inline from submit
 * would recurse without bound and re-enter callers that hold state half
 * updated.  So a back-end that finishes at once (RAM, an injected error)
 * defers the completion, and raid_queue_run() is the only place callbacks
 * run.
 *
 * Cross-thread wake-ups (a RAID 5 stripe lock released on another thread's
 * queue) arrive through queue_post(): a mutex-protected list plus an
 * eventfd (wake_fd) that the ring itself always polls, so a thread blocked
 * in the ring wakes up for it.  A second eventfd (notify_fd) is registered
 * with the ring and so becomes readable on every CQE, the poll's included:
 * that is what raid_queue_fd() gives an external event loop.
 *
 * Lifetime: a poster touches the queue only while it holds post_lock (the
 * wake-up is written before the unlock), and raid_queue_free() takes the
 * lock once before closing anything, so a queue whose owner has run its
 * last posted task can be freed while the poster is still returning.
 */
#include <config.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "internal.h"

static void wake_arm(struct raid_queue *q);
static int queue_submit(struct raid_queue *q);

/* Queue ids for epochs (struct raid_queue), from 1: an epoch is never 0. */
static _Atomic uint32_t next_queue_id = 1;

static void
epoch_next(struct raid_queue *q)
{
  q->epoch = (q->epoch & ~UINT64_C(0xffffffff)) | (uint32_t)(q->epoch + 1);
}

static void
wake_fn(struct qtask *t, int res)
{
  struct raid_queue *q = (struct raid_queue *)((char *)t - offsetof(struct raid_queue, wake_task));
  uint64_t v;
  ssize_t n = read(q->wake_fd, &v, sizeof v);

  (void)n;
  q->wake_armed = false;
  /* The posted list is drained by the run loop; just re-arm. */
  wake_arm(q);
}

static void
wake_arm(struct raid_queue *q)
{
  struct io_uring_sqe *sqe;

  if (q->wake_armed)
    return;
  sqe = queue_get_sqe(q);
  io_uring_prep_poll_add(sqe, q->wake_fd, POLLIN);
  queue_sqe_task(q, sqe, &q->wake_task);
  q->wake_armed = true;
}

/* ThreadSanitizer and ring memory.  liburing maps and unmaps a ring with
 * its own system calls, which ThreadSanitizer does not see: a ring made
 * where one that another thread freed lay looks like a race with the old
 * ring's last accesses (the kernel's munmap and mmap order them).  So a
 * freed ring releases each page of its memory and a new ring acquires each
 * page of its own: rings at the same pages are ordered, and nothing else
 * is, so real races elsewhere stay visible.  (AnnotateNewMemory would say
 * it directly, but ThreadSanitizer ignores it.)  Nothing outside TSan
 * builds. */
static void
ring_pages(void *mem, size_t len, bool freeing)
{
#if defined(__SANITIZE_THREAD__)
  uintptr_t p = (uintptr_t)mem & ~(uintptr_t)4095, end = (uintptr_t)mem + len;

  for (; p < end; p += 4096) {
    if (freeing)
      TSAN_RELEASE((void *)p);
    else
      TSAN_ACQUIRE((void *)p);
  }
#else
  (void)mem, (void)len, (void)freeing;
#endif
}

static void
ring_handover(struct raid_queue *q, bool freeing)
{
  ring_pages(q->ring.sq.ring_ptr, q->ring.sq.ring_sz, freeing);
  if (q->ring.cq.ring_ptr != q->ring.sq.ring_ptr)
    ring_pages(q->ring.cq.ring_ptr, q->ring.cq.ring_sz, freeing);
  ring_pages(q->ring.sq.sqes, q->ring.sq.ring_entries * sizeof *q->ring.sq.sqes, freeing);
}

/* io_uring_queue_exit(), after ring_handover() gives the memory up. */
static void
ring_exit(struct raid_queue *q)
{
  ring_handover(q, true);
  io_uring_queue_exit(&q->ring);
}

EXPORT int
raid_queue_new(unsigned entries, struct raid_queue **queuep)
{
  struct raid_queue *q;
  int r;

  *queuep = NULL;
  if (entries == 0)
    entries = 256;
  if (entries > 32768)
    return set_error(EINVAL, "raid_queue_new: %u entries is more than 32768", entries);
  q = calloc(1, sizeof *q);
  if (q == NULL)
    return set_error(ENOMEM, "raid_queue_new: out of memory");
  q->epoch = (uint64_t)atomic_fetch_add(&next_queue_id, 1) << 32;
  r = io_uring_queue_init(entries, &q->ring, 0);
  if (r < 0) {
    free(q);
    return set_error(-r, "raid_queue_new: io_uring_queue_init: %s", strerror(-r));
  }
  ring_handover(q, false);
  q->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (q->wake_fd < 0) {
    r = errno;
    ring_exit(q);
    free(q);
    return set_error(r, "raid_queue_new: eventfd: %s", strerror(r));
  }
  q->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (q->notify_fd < 0 ||
      (r = io_uring_register_eventfd(&q->ring, q->notify_fd)) < 0) {
    r = q->notify_fd < 0 ? errno : -r;
    if (q->notify_fd >= 0)
      close(q->notify_fd);
    close(q->wake_fd);
    ring_exit(q);
    free(q);
    return set_error(r, "raid_queue_new: notification eventfd: %s", strerror(r));
  }
  pthread_mutex_init(&q->post_lock, NULL);
  q->wake_task.fn = wake_fn;
  wake_arm(q);
  if ((r = queue_submit(q)) < 0) {
    ring_exit(q);
    close(q->notify_fd);
    close(q->wake_fd);
    pthread_mutex_destroy(&q->post_lock);
    free(q);
    return r;
  }
  *queuep = q;
  return 0;
}

EXPORT void
raid_queue_free(struct raid_queue *q)
{
  if (q == NULL)
    return;
  /* Cancel the pending poll so the kernel lets go of the eventfd. */
  if (q->wake_armed) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);
    if (sqe) {
      io_uring_prep_poll_remove(sqe, (uintptr_t)&q->wake_task);
      io_uring_sqe_set_data(sqe, NULL);
      io_uring_submit(&q->ring);
    }
  }
  ring_exit(q);
  /* A thread that posted our last task may still be inside queue_post(),
   * between putting it on the list and unlocking: wait for it. */
  pthread_mutex_lock(&q->post_lock);
  pthread_mutex_unlock(&q->post_lock);
  close(q->wake_fd);
  close(q->notify_fd);
  pthread_mutex_destroy(&q->post_lock);
  free(q);
}

EXPORT int
raid_queue_fd(const struct raid_queue *q)
{
  return q->notify_fd;
}

EXPORT unsigned
raid_queue_in_flight(const struct raid_queue *q)
{
  return q->user_in_flight;
}

/* Move the completions waiting in the ring to the ready list; their
 * callbacks run from the run loop, as always.  Returns how many. */
static unsigned
queue_reap(struct raid_queue *q)
{
  struct io_uring_cqe *cqe;
  struct qtask *t;
  unsigned head, n = 0;

  io_uring_for_each_cqe(&q->ring, head, cqe) {
    n++;
    t = io_uring_cqe_get_data(cqe);
    if (t == NULL)
      continue;
    q->ring_in_flight--;
    queue_defer(q, t, cqe->res);
  }
  if (n) {
    io_uring_cq_advance(&q->ring, n);
    epoch_next(q);
  }
  return n;
}

/* Hand the prepared SQEs to the kernel.  When it cannot take them now
 * (-EBUSY: completions overflowed the CQ ring and wait in the kernel;
 * -EAGAIN or -ENOMEM: it is short of memory for requests), reap what the
 * ring holds, have the kernel flush what overflowed, and try again: every
 * pass makes room, and the callbacks of what was reaped run later from
 * the run loop, never from here.  Any other error means the ring itself
 * is unusable; it is returned with a message. */
static int
queue_submit(struct raid_queue *q)
{
  for (;;) {
    int r = io_uring_submit(&q->ring);

    if (r >= 0) {
      if (r > 0)
        epoch_next(q);
      return 0;
    }
    if (r == -EINTR)
      continue;
    if (r != -EBUSY && r != -EAGAIN && r != -ENOMEM)
      return set_error(-r, "io_uring_submit: %s", strerror(-r));
    if (queue_reap(q) == 0) {
      io_uring_get_events(&q->ring);
      if (queue_reap(q) == 0 && r != -EBUSY)
        usleep(100);            /* the kernel is short of memory: let it be */
    }
  }
}

struct io_uring_sqe *
queue_get_sqe(struct raid_queue *q)
{
  struct io_uring_sqe *sqe;
  int r;

  while ((sqe = io_uring_get_sqe(&q->ring)) == NULL)
    if ((r = queue_submit(q)) < 0) {
      /* A queue whose ring refuses SQEs for good cannot complete what it
       * holds, nor fail it: every completion goes through the ring.
       * Say so and stop rather than hang. */
      raid_log(RAID_LOG_ERR, "libraid: queue %p: %s; the io_uring ring is "
               "unusable", (void *)q, raid_get_error());
      abort();
    }
  return sqe;
}

void
queue_sqe_task(struct raid_queue *q, struct io_uring_sqe *sqe, struct qtask *t)
{
  io_uring_sqe_set_data(sqe, t);
  q->ring_in_flight++;
}

void
queue_defer(struct raid_queue *q, struct qtask *t, int res)
{
  t->res = res;
  t->next = NULL;
  if (q->ready_tail)
    q->ready_tail->next = t;
  else
    q->ready_head = t;
  q->ready_tail = t;
}

void
queue_post(struct raid_queue *q, struct qtask *t, int res)
{
  static const uint64_t one = 1;
  ssize_t n;

  t->res = res;
  t->next = NULL;
  pthread_mutex_lock(&q->post_lock);
  if (q->posted_tail)
    q->posted_tail->next = t;
  else
    __atomic_store_n(&q->posted_head, t, __ATOMIC_RELAXED);  /* peeked unlocked */
  q->posted_tail = t;
  /* The wake-up goes out under the lock: once T is on the list its owner
   * may run it, finish its last request and free Q (raid_queue_free()
   * takes this lock before it closes wake_fd), so nothing here may touch Q
   * after the unlock.  Written after it, the eventfd was read from freed
   * memory, and its number could by then name another file (the stress
   * tests under ThreadSanitizer: range_unlock() posting to a queue its owner
   * was freeing). */
  n = write(q->wake_fd, &one, sizeof one);
  (void)n;                      /* EAGAIN: counter full, already readable */
  pthread_mutex_unlock(&q->post_lock);
}

void
queue_send(struct raid_queue *from, struct raid_queue *to, struct qtask *t, int res)
{
  if (from == to)
    queue_defer(to, t, res);
  else
    queue_post(to, t, res);
}

void
queue_timer(struct raid_queue *q, struct qtask *t, struct __kernel_timespec *ts,
            unsigned usec)
{
  struct io_uring_sqe *sqe = queue_get_sqe(q);

  ts->tv_sec = usec / 1000000;
  ts->tv_nsec = (long long)(usec % 1000000) * 1000;
  io_uring_prep_timeout(sqe, ts, 0, 0);
  queue_sqe_task(q, sqe, t);
}

void
queue_timer_at(struct raid_queue *q, struct qtask *t, struct __kernel_timespec *ts,
               uint64_t mono_ns)
{
  struct io_uring_sqe *sqe = queue_get_sqe(q);

  ts->tv_sec = (long long)(mono_ns / 1000000000u);
  ts->tv_nsec = (long long)(mono_ns % 1000000000u);
  io_uring_prep_timeout(sqe, ts, 0, IORING_TIMEOUT_ABS);
  queue_sqe_task(q, sqe, t);
}

void
queue_timer_cancel(struct raid_queue *q, struct qtask *t)
{
  struct io_uring_sqe *sqe = queue_get_sqe(q);

  io_uring_prep_timeout_remove(sqe, (uint64_t)(uintptr_t)t, 0);
  io_uring_sqe_set_data(sqe, NULL);       /* its own completion is ignored */
}

void
queue_user_start(struct raid_queue *q)
{
  q->user_in_flight++;
}

void
queue_user_done(struct raid_queue *q)
{
  q->user_in_flight--;
  q->user_completed++;
}

void
queue_internal_start(struct raid_queue *q)
{
  q->user_in_flight++;
}

void
queue_internal_done(struct raid_queue *q)
{
  q->user_in_flight--;
}

/* Run what is ready without blocking.  Returns true if anything ran. */
static bool
queue_poll_once(struct raid_queue *q)
{
  struct qtask *t, *list;
  bool any = false;

  /* Messages from other threads. */
  if (__atomic_load_n(&q->posted_head, __ATOMIC_RELAXED) != NULL) {
    pthread_mutex_lock(&q->post_lock);
    list = q->posted_head;
    __atomic_store_n(&q->posted_head, NULL, __ATOMIC_RELAXED);
    q->posted_tail = NULL;
    pthread_mutex_unlock(&q->post_lock);
    while ((t = list) != NULL) {
      list = t->next;
      t->fn(t, t->res);
      any = true;
    }
  }

  /* Completions from the ring, chained so that the ring slots are
   * released before callbacks submit. */
  queue_reap(q);

  /* Deferred completions; new ones may be added while we run. */
  while ((t = q->ready_head) != NULL) {
    q->ready_head = t->next;
    if (q->ready_head == NULL)
      q->ready_tail = NULL;
    t->fn(t, t->res);
    any = true;
  }
  return any;
}

EXPORT int
raid_queue_run(struct raid_queue *q, unsigned min_complete)
{
  unsigned start = q->user_completed;
  int r;

  {
    uint64_t v;
    ssize_t n = read(q->notify_fd, &v, sizeof v);   /* clear for poll(2) users */
    (void)n;
  }
  for (;;) {
    if ((r = queue_submit(q)) < 0)
      return r;
    while (queue_poll_once(q))
      if ((r = queue_submit(q)) < 0)
        return r;
    if (q->user_completed - start >= min_complete || q->user_in_flight == 0)
      break;
    /* Something is in flight: wait in the ring; the mailbox poll is
     * always armed, so a post from another thread wakes us up too. */
    r = io_uring_submit_and_wait(&q->ring, 1);
    epoch_next(q);              /* submitted, or time passed */
    if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
      return set_error(-r, "raid_queue_run: io_uring_submit_and_wait: %s",
                       strerror(-r));
  }
  /* What the caller does next (submit after a wait of its own) belongs to
   * a new epoch. */
  epoch_next(q);
  return (int)(q->user_completed - start);
}
