/* Stripe locks for RAID 5.
 *
 * A RAID 5 write reads old data or parity, computes new parity and writes
 * both; if two requests did that to the same bytes of a stripe at once,
 * each would compute parity from a stripe the other was half-way through
 * changing, and parity would be wrong for good.  So every parity update
 * (and every degraded read, which reconstructs from parity) first locks
 * the range it touches: [lo, hi) bytes within the chunk-sized columns of
 * stripe ROW.  Non-overlapping ranges of one stripe proceed in parallel,
 * like md's 4 KiB stripe heads.
 *
 * Locks live in a hash table of buckets, each a mutex and a list in arrival
 * order.  A lock is granted when it overlaps no entry before it in its
 * bucket, granted or waiting: so overlapping requests are served first
 * come, first served and none starves.  Grants run the waiter's task on the
 * waiter's own queue, never inline: queue_defer() when the unlocking
 * thread runs that queue, else queue_post() to its mailbox.
 *
 * Threads.  range_lock() is called on the thread that runs L->q (the
 * requester's own queue).  range_unlock() may be called on any thread
 * that runs a queue, which it names (a RAID 5 lead op unlocks the ops it
 * merged, whatever their owner); a lock's fields other than next and
 * granted belong to its holder.  Each bucket's mutex guards its list and
 * the next and granted fields of the locks in it.
 *
 * Two hooks serve RAID 5's write merging (raid5.c): a holder may take over
 * the waiters queued behind it (range_lock_absorb: their work becomes
 * its own, and it unlocks them when done), and a holder that waits of its
 * own accord (a plugged write) is poked when a lock blocks behind it: it
 * goes at once unless that lock is one it waits for, to take it over.
 */
#include <config.h>

#include <stdlib.h>

#include "internal.h"

#define STRIPE_LOCK_BUCKETS 1024

struct bucket {
  pthread_mutex_t lock;
  struct range_lock *head, *tail;
};

struct range_lock_table {
  struct bucket b[STRIPE_LOCK_BUCKETS];
};

struct range_lock_table *
range_lock_table_new(void)
{
  struct range_lock_table *t = calloc(1, sizeof *t);
  unsigned i;

  if (t == NULL)
    return NULL;
  for (i = 0; i < STRIPE_LOCK_BUCKETS; i++)
    pthread_mutex_init(&t->b[i].lock, NULL);
  return t;
}

void
range_lock_table_free(struct range_lock_table *t)
{
  unsigned i;

  if (t == NULL)
    return;
  for (i = 0; i < STRIPE_LOCK_BUCKETS; i++)
    pthread_mutex_destroy(&t->b[i].lock);
  free(t);
}

static struct bucket *
bucket_of(struct range_lock_table *t, uint64_t row)
{
  return &t->b[(row * 0x9e3779b97f4a7c15ull) >> 54];
}

static bool
overlaps(const struct range_lock *x, const struct range_lock *y)
{
  return x->row == y->row && x->space == y->space && x->lo < y->hi && y->lo < x->hi;
}

/* True when nothing before L in B conflicts with it. */
static bool
grantable(const struct bucket *b, const struct range_lock *l)
{
  const struct range_lock *e;

  for (e = b->head; e != l; e = e->next)
    if (overlaps(e, l))
      return false;
  return true;
}

void
range_lock(struct range_lock_table *t, struct range_lock *l)
{
  struct bucket *b = bucket_of(t, l->row);
  bool now;

  l->next = NULL;
  l->granted = false;
  pthread_mutex_lock(&b->lock);
  if (b->tail)
    b->tail->next = l;
  else
    b->head = l;
  b->tail = l;
  /* Whether it is granted now is decided here, under the lock, and kept:
   * once the lock is released, a waiter's granted flag belongs to whoever
   * grants it (its task is then on its way to its queue already). */
  now = grantable(b, l);
  if (now)
    l->granted = true;
  else {
    struct range_lock *e;

    /* Whoever blocks us and waits of its own accord is told: it may go
     * now, or wait on for more like us (a plugged RAID 5 write). */
    for (e = b->head; e != l; e = e->next)
      if (e->poke && overlaps(e, l))
        e->poke(e, l);
  }
  pthread_mutex_unlock(&b->lock);
  if (now)
    queue_defer(l->q, &l->task, 0);   /* we are on l->q's thread */
}

void
range_unlock(struct range_lock_table *t, struct range_lock *l,
             struct raid_queue *cur)
{
  struct bucket *b = bucket_of(t, l->row);
  struct range_lock *e, *prev = NULL;
  struct range_lock *wake[64];
  unsigned nwake = 0, i;

  pthread_mutex_lock(&b->lock);
  for (e = b->head; e != l; e = e->next)
    prev = e;
  if (prev)
    prev->next = l->next;
  else
    b->head = l->next;
  if (b->tail == l)
    b->tail = prev;
  /* Grant the waiters that no longer conflict with anything before them.
   * Only waiters that overlapped L can have become grantable. */
  for (e = l->next; e; e = e->next)
    if (!e->granted && overlaps(e, l) && grantable(b, e)) {
      e->granted = true;
      if (nwake < ARRAY_SIZE(wake))
        wake[nwake++] = e;
      else
        queue_post(e->q, &e->task, 0);
    }
  pthread_mutex_unlock(&b->lock);
  for (i = 0; i < nwake; i++) {
    if (wake[i]->q == cur)
      queue_defer(cur, &wake[i]->task, 0);
    else
      queue_post(wake[i]->q, &wake[i]->task, 0);
  }
}

/* Merging.  A waiter W may join L's holder when everything before W that
 * overlaps it is L or a lock already taken: then no other holder or
 * earlier waiter has a claim on W's bytes, and doing W's work as part of
 * L's keeps the first-come order. */
#define ABSORB_MAX 64

static bool
absorbable(const struct bucket *b, const struct range_lock *l,
           const struct range_lock *w, struct range_lock *const *taken,
           unsigned ntaken)
{
  const struct range_lock *e;
  unsigned i;

  for (e = b->head; e != w; e = e->next) {
    if (e == l || !overlaps(e, w))
      continue;
    for (i = 0; i < ntaken && taken[i] != e; i++)
      ;
    if (i == ntaken)
      return false;
  }
  return true;
}

unsigned
range_lock_absorb(struct range_lock_table *t, struct range_lock *l,
                  bool (*take)(void *ctx, struct range_lock *w),
                  bool (*complete)(void *ctx), void *ctx)
{
  struct bucket *b = bucket_of(t, l->row);
  struct range_lock *taken[ABSORB_MAX], *w;
  unsigned ntaken = 0, i;

  pthread_mutex_lock(&b->lock);
  for (w = l->next; w && ntaken < ABSORB_MAX; w = w->next)
    if (w->row == l->row && w->space == l->space && !w->granted && absorbable(b, l, w, taken, ntaken) &&
        take(ctx, w))
      taken[ntaken++] = w;
  if (ntaken && complete(ctx))
    for (i = 0; i < ntaken; i++)
      taken[i]->granted = true;
  else
    ntaken = 0;
  pthread_mutex_unlock(&b->lock);
  return ntaken;
}

bool
range_lock_blocks(struct range_lock_table *t, struct range_lock *l)
{
  struct bucket *b = bucket_of(t, l->row);
  struct range_lock *e;
  bool any = false;

  pthread_mutex_lock(&b->lock);
  for (e = l->next; e && !any; e = e->next)
    any = !e->granted && overlaps(e, l);
  pthread_mutex_unlock(&b->lock);
  return any;
}

void
range_lock_rescan(struct range_lock_table *t, struct range_lock *l)
{
  struct bucket *b = bucket_of(t, l->row);
  struct range_lock *e;

  pthread_mutex_lock(&b->lock);
  l->poke(l, NULL);
  for (e = l->next; e; e = e->next)
    if (!e->granted && overlaps(e, l))
      l->poke(l, e);
  pthread_mutex_unlock(&b->lock);
}
