/* The NBD worker threads: each serves its connections (nbd-conn.c) on an
 * epoll set and a raid_queue of its own, and takes new connections,
 * disconnects and its stop from its mailbox.
 *
 * Threads and ownership.  Each worker is one thread with its own epoll
 * set, its own raid_queue and its own connections; nothing on the data
 * path is shared with another worker and nothing takes a lock.  The only
 * cross-thread door is the worker's mailbox (w->lock): new connections
 * from the handshake threads, disconnect requests and the stop request,
 * announced by writing w->wake_fd.  A connection, its requests and their
 * buffers belong to the worker thread from the moment it takes the
 * connection out of the mailbox until it frees it.
 */
#include <config.h>

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "nbd-internal.h"

struct nbd_disc_node {
  struct nbd_disc_node *next;
  struct export *e;                /* NULL: not a disconnect (unused) */
  struct nbd_worker_wait *wait;
};

struct nbd_worker_wait {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  unsigned pending, used, n;
  struct nbd_disc_node nodes[];
};

/* ---- workers ------------------------------------------------------------------------ */

/* Take over CLIENT on the worker thread. */
static void
worker_adopt(struct nbd_worker *w, struct nbd_conn *c)
{
  struct epoll_event e = { .events = EPOLLIN, .data.ptr = c };

  c->w = w;
  c->next = w->conns;
  c->prev = NULL;
  if (w->conns)
    w->conns->prev = c;
  w->conns = c;
  w->nconns++;
  if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, c->fd, &e) < 0) {
    log_err("nbd: %s (export %s): epoll_ctl: %m, closing", c->peer,
            export_name(c->exp));
    c->dead = true;
    nbd_conn_start_closing(c);
    return;
  }
  c->registered = true;
  c->events = EPOLLIN;
  log_info("nbd: %s: connected to export %s (%s replies, worker %u)", c->peer,
           export_name(c->exp), c->structured ? "structured" : "simple", w->id);
  if (w->stopping)
    nbd_conn_start_closing(c);
  else if (nbd_io_pending(c->tls))
    nbd_conn_mark_dirty(c);        /* a request came in the handshake's last record */
}

static void
disc_complete(struct nbd_disc_node *d)
{
  struct nbd_worker_wait *wait = d->wait;

  pthread_mutex_lock(&wait->lock);
  wait->pending--;
  pthread_cond_broadcast(&wait->cond);
  pthread_mutex_unlock(&wait->lock);
}

static void
worker_mailbox(struct nbd_worker *w)
{
  struct nbd_conn *in, *c;
  struct nbd_disc_node *d;
  uint64_t v;
  ssize_t n;

  n = read(w->wake_fd, &v, sizeof v);
  (void)n;
  pthread_mutex_lock(&w->lock);
  in = w->incoming;
  w->incoming = NULL;
  d = w->discs;
  w->discs = NULL;
  if (w->stop)
    w->stopping = true;
  pthread_mutex_unlock(&w->lock);

  while ((c = in) != NULL) {
    in = c->next;
    worker_adopt(w, c);
  }
  while (d != NULL) {
    struct nbd_disc_node *next = d->next;

    for (c = w->conns; c; c = c->next)
      if (c->exp == d->e)
        nbd_conn_start_closing(c);
    d->next = w->pending;
    w->pending = d;
    d = next;
  }
  if (w->stopping)
    for (c = w->conns; c; c = c->next)
      nbd_conn_start_closing(c);
}

/* Signal the disconnects whose connections are all gone. */
static void
worker_check_discs(struct nbd_worker *w)
{
  struct nbd_disc_node **pp = &w->pending;

  while (*pp) {
    struct nbd_disc_node *d = *pp;
    bool any = false;

    for (struct nbd_conn *c = w->conns; c && !any; c = c->next)
      any = c->exp == d->e;
    if (any)
      pp = &d->next;
    else {
      *pp = d->next;
      disc_complete(d);
    }
  }
}

/* Run the queue and update dirty connections until nothing moves (or a
 * bound, to get back to epoll).  Returns true if work remains.
 *
 * The queue runs only when there is something for it: a request submitted
 * (need_run, set by the submitter) or its fd readable (need_run, set by
 * the epoll loop: member completions).  One raid_queue_run() takes all
 * that is ready, the completions its callbacks defer included; a callback
 * that submits more (a flush after a TRIM) sets need_run for another
 * round.  Each call costs a system call (it clears the queue's eventfd),
 * which on a small machine is a good part of a request's cost. */
static bool
worker_settle(struct nbd_worker *w)
{
  for (int round = 0; round < 8; round++) {
    struct nbd_conn *list;

    if (w->need_run) {
      w->need_run = false;
      if (raid_queue_run(w->q, 0) < 0)
        log_err("nbd: worker %u: raid_queue_run: %s", w->id, raid_get_error());
    }
    if (w->dirty == NULL && !w->need_run)
      return false;
    list = w->dirty;
    w->dirty = NULL;
    while (list) {
      struct nbd_conn *c = list;

      list = c->dirty_next;
      c->dirty = false;
      nbd_conn_update(c);          /* may free c, may mark others dirty */
    }
  }
  return w->dirty != NULL || w->need_run;
}

/* Memory.  Request buffers (up to 32 MiB) come from malloc, which raidd
 * tells to keep them in its heaps (see main()): a fresh mmap for each
 * would cost page faults and zeroing on every request.  So after a burst
 * of large requests the heaps hold what the burst needed.  When a worker
 * has had nothing to do for a second after freeing buffers, it gives the
 * free part of every heap back to the kernel (malloc_trim), so raidd's
 * resident memory returns to its idle size after any workload, and a
 * steady workload keeps its buffers. */
#define TRIM_IDLE_MS 1000
#define TRIM_MIN_FREED (4u << 20)

static void
worker_trim(struct nbd_worker *w)
{
  if (w->freed >= TRIM_MIN_FREED) {
    malloc_trim(0);
    w->freed = 0;
  }
}

static void
worker_loop(struct nbd_worker *w, bool until_idle)
{
  struct epoll_event evs[64];
  bool more = false;

  for (;;) {
    int timeout = more ? 0 : w->nconns || w->freed >= TRIM_MIN_FREED ? TRIM_IDLE_MS : -1;
    int n = epoll_wait(w->epfd, evs, 64, timeout);
    bool idle = n == 0 && timeout > 0;    /* a second without events */

    if (n < 0) {
      if (errno != EINTR) {
        log_err("nbd: worker %u: epoll_wait: %m", w->id);
        usleep(10000);
      }
      n = 0;
    }
    for (int i = 0; i < n; i++) {
      void *p = evs[i].data.ptr;

      if (p == &w->tag_wake)
        worker_mailbox(w);
      else if (p == &w->tag_queue)
        w->need_run = true;
      else
        nbd_conn_event(p, evs[i].events);
    }
    if (n == 0 && timeout != 0) {
      for (struct nbd_conn *c = w->conns; c; c = c->next)
        if (c->closing)
          nbd_conn_mark_dirty(c); /* drain deadlines */
    }
    if (idle)
      worker_trim(w);
    more = worker_settle(w);
    worker_check_discs(w);
    if ((w->stopping || until_idle) && w->nconns == 0 && !more) {
      pthread_mutex_lock(&w->lock);
      bool empty = w->incoming == NULL;
      pthread_mutex_unlock(&w->lock);
      if (empty)
        break;
    }
  }
}

static void *
worker_main(void *arg)
{
  worker_loop(arg, false);
  return NULL;
}

static int
worker_init(struct nbd_worker *w, unsigned id, struct raid_queue *q)
{
  struct epoll_event e = { .events = EPOLLIN };
  int r;

  w->id = id;
  w->epfd = w->wake_fd = -1;
  pthread_mutex_init(&w->lock, NULL);
  if (q)
    w->q = q;
  else if ((r = raid_queue_new(256, &w->q)) < 0) {
    log_err("nbd: worker %u: %s", id, raid_get_error());
    return r;
  }
  else
    w->own_queue = true;
  if ((w->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
      (w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
    goto fail;
  e.data.ptr = &w->tag_wake;
  if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->wake_fd, &e) < 0)
    goto fail;
  e.data.ptr = &w->tag_queue;
  if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, raid_queue_fd(w->q), &e) < 0)
    goto fail;
  return 0;

fail:
  r = -errno;
  log_err("nbd: worker %u: %m", id);
  return r;
}

static void
worker_fini(struct nbd_worker *w)
{
  if (w->epfd >= 0)
    close(w->epfd);
  if (w->wake_fd >= 0)
    close(w->wake_fd);
  if (w->own_queue && w->q)
    raid_queue_free(w->q);
  pthread_mutex_destroy(&w->lock);
}

int
nbd_worker_new(unsigned id, struct nbd_worker **wp)
{
  struct nbd_worker *w = calloc(1, sizeof *w);
  int r;

  if (w == NULL)
    return -ENOMEM;
  if ((r = worker_init(w, id, NULL)) < 0) {
    worker_fini(w);
    free(w);
    return r;
  }
  *wp = w;
  return 0;
}

int
nbd_worker_start(struct nbd_worker *w)
{
  int r = pthread_create(&w->thread, NULL, worker_main, w);

  if (r) {
    log_err("nbd: worker %u: pthread_create: %s", w->id, strerror(r));
    return -r;
  }
  w->started = true;
  return 0;
}

static void
worker_wake(struct nbd_worker *w)
{
  uint64_t one = 1;
  ssize_t n = write(w->wake_fd, &one, sizeof one);

  (void)n;                         /* EAGAIN: already readable */
}

void
nbd_worker_add(struct nbd_worker *w, struct nbd_client *client)
{
  struct nbd_conn *c = nbd_conn_new(client);

  if (c == NULL) {
    log_err("nbd: %s (export %s): out of memory, closing", client->peer,
            export_name(client->exp));
    nbd_tls_free(client->tls);
    close(client->fd);
    export_put(client->exp);
    return;
  }
  pthread_mutex_lock(&w->lock);
  c->next = w->incoming;
  w->incoming = c;
  pthread_mutex_unlock(&w->lock);
  worker_wake(w);
}

struct nbd_worker_wait *
nbd_worker_wait_new(unsigned nworkers)
{
  struct nbd_worker_wait *wait =
    calloc(1, sizeof *wait + nworkers * sizeof wait->nodes[0]);

  if (wait == NULL)
    return NULL;
  pthread_mutex_init(&wait->lock, NULL);
  pthread_cond_init(&wait->cond, NULL);
  wait->n = nworkers;
  return wait;
}

void
nbd_worker_disconnect(struct nbd_worker *w, struct export *e,
                      struct nbd_worker_wait *wait)
{
  struct nbd_disc_node *d;

  if (wait->used == wait->n)
    return;
  d = &wait->nodes[wait->used++];
  d->e = e;
  d->wait = wait;
  pthread_mutex_lock(&wait->lock);
  wait->pending++;
  pthread_mutex_unlock(&wait->lock);
  pthread_mutex_lock(&w->lock);
  d->next = w->discs;
  w->discs = d;
  pthread_mutex_unlock(&w->lock);
  worker_wake(w);
}

void
nbd_worker_wait_finish(struct nbd_worker_wait *wait)
{
  pthread_mutex_lock(&wait->lock);
  while (wait->pending > 0)
    pthread_cond_wait(&wait->cond, &wait->lock);
  pthread_mutex_unlock(&wait->lock);
  pthread_cond_destroy(&wait->cond);
  pthread_mutex_destroy(&wait->lock);
  free(wait);
}

void
nbd_worker_stop_and_free(struct nbd_worker *w)
{
  if (w->started) {
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_mutex_unlock(&w->lock);
    worker_wake(w);
    pthread_join(w->thread, NULL);
  }
  /* Anything still in the mailbox never reached the thread. */
  while (w->incoming) {
    struct nbd_conn *c = w->incoming;

    w->incoming = c->next;
    nbd_tls_free(c->tls);
    close(c->fd);
    export_conn_add(c->exp, -1);
    export_put(c->exp);
    free(c->in);
    free(c);
  }
  while (w->discs) {
    struct nbd_disc_node *d = w->discs;

    w->discs = d->next;
    disc_complete(d);
  }
  worker_fini(w);
  free(w);
}

void
nbd_conn_serve_here(struct raid_queue *q, struct nbd_client *client)
{
  struct nbd_worker w = { 0 };
  struct nbd_conn *c;

  if (worker_init(&w, 0, q) < 0 || (c = nbd_conn_new(client)) == NULL) {
    nbd_tls_free(client->tls);
    close(client->fd);
    export_put(client->exp);
    worker_fini(&w);
    return;
  }
  worker_adopt(&w, c);
  worker_loop(&w, true);
  worker_fini(&w);
}
