/* Fault injector: a member wrapping another one, failing or delaying the
 * I/Os that match its rules and passing the rest through.
 *
 * A rule (struct raid_fault) matches an I/O when the op is one of its ops
 * (discard and write zeroes count as writes) and, except for flushes, which
 * have no range, the I/O overlaps the rule's byte range (length 0 reaches
 * from the offset to the end: the whole member at offset 0).  Each rule counts
 * the I/Os it matches; once AFTER of them have passed, every further match
 * is delayed by DELAY_US and then, when ERROR is set, failed with -ERROR
 * instead of reaching the inner member.  When several rules fire for one
 * I/O, the first rule added that has an error decides the error and the
 * longest delay applies.  The common cases:
 *   fail every read of a range after N reads:  ops READ, range, after N, error
 *   fail all writes from now on:               ops WRITE, error (length 0)
 *   slow a range down, to reorder completions: ops READ, range, delay_us
 *
 * Decisions are made in submit(), in submission order.  Rules may be added
 * and cleared from any thread while I/O runs on others: the rule list and
 * its counters are guarded by a mutex, which the I/O path takes only while
 * some rule exists (an atomic count says so).
 *
 * Delays are io_uring timeouts on the submitting queue (queue_timer()), so
 * nothing sleeps and the queue keeps completing other I/O meanwhile: an
 * undelayed I/O submitted later completes first.  While a delayed I/O waits,
 * the back-end scratch field io->xfered holds the error it will fail with.
 * Failures without delay complete through queue_defer().  An I/O passed
 * through is a new member_io to the inner member inside a small wrapper,
 * whose done() completes the outer one.
 *
 * The member takes the inner member's name, so messages name the real file
 * or device, and closing it closes the inner member.  When
 * raid_member_new_fault() fails, INNER still belongs to the caller.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct fault_rule {
  struct raid_fault f;
  uint64_t end;                  /* f.offset + f.length, or the member's size */
  uint64_t seen;                 /* matching I/Os so far */
};

struct fault_member {
  struct raid_member *inner;
  pthread_mutex_t lock;          /* guards rules, nrules, cap and each seen */
  struct fault_rule *rules;
  size_t nrules, cap;
  _Atomic size_t active;         /* nrules, for the lock-free fast path */
  _Atomic uint64_t failed;       /* I/Os failed by the rules */
};

/* A pass-through I/O. */
struct fault_io {
  struct member_io inner;
  struct member_io *outer;
};

static const struct member_ops fault_ops;

static unsigned
fault_class(enum mop op)
{
  switch (op) {
  case MOP_READ:
    return RAID_FAULT_READ;
  case MOP_FLUSH:
    return RAID_FAULT_FLUSH;
  case MOP_WRITE:
  case MOP_DISCARD:
  case MOP_ZERO:
    break;
  }
  return RAID_FAULT_WRITE;
}

/* Apply the rules to IO: the error to fail it with (0: none) and the
 * delay in microseconds. */
static void
decide(struct fault_member *fm, const struct member_io *io, int *error,
       unsigned *delay_us)
{
  unsigned cls = fault_class(io->op);
  size_t i;

  *error = 0;
  *delay_us = 0;
  if (atomic_load_explicit(&fm->active, memory_order_acquire) == 0)
    return;
  pthread_mutex_lock(&fm->lock);
  for (i = 0; i < fm->nrules; i++) {
    struct fault_rule *r = &fm->rules[i];

    if (!(r->f.ops & cls))
      continue;
    if (io->op != MOP_FLUSH &&
        (io->len == 0 || io->offset >= r->end || io->offset + io->len <= r->f.offset))
      continue;
    if (r->seen++ < r->f.after)
      continue;
    if (*error == 0)
      *error = r->f.error;
    *delay_us = MAX(*delay_us, r->f.delay_us);
  }
  pthread_mutex_unlock(&fm->lock);
  if (*error)
    atomic_fetch_add_explicit(&fm->failed, 1, memory_order_relaxed);
}

static void
fail_fn(struct qtask *t, int res)
{
  member_complete(task_io(t), res);
}

static void
fail(struct member_io *io, int error)
{
  set_error(error, "member %s: injected %s error at offset %" PRIu64 ": %s",
            io->m->name, mop_name(io->op), io->offset, strerror(error));
  io->task.fn = fail_fn;
  queue_defer(io->q, &io->task, -error);
}

static void
inner_done(struct member_io *inner, int res)
{
  struct fault_io *w =
    (struct fault_io *)((char *)inner - offsetof(struct fault_io, inner));
  struct member_io *outer = w->outer;

  free(w);
  member_complete(outer, res);
}

static void
forward(struct member_io *io)
{
  struct fault_member *fm = io->m->priv;
  struct fault_io *w = malloc(sizeof *w);

  if (w == NULL) {
    set_error(ENOMEM, "member %s: %s: out of memory", io->m->name, mop_name(io->op));
    io->task.fn = fail_fn;
    queue_defer(io->q, &io->task, -ENOMEM);
    return;
  }
  memset(&w->inner, 0, sizeof w->inner);
  w->outer = io;
  w->inner.m = fm->inner;
  w->inner.op = io->op;
  w->inner.flags = io->flags;
  w->inner.buf = io->buf;
  w->inner.offset = io->offset;
  w->inner.len = io->len;
  w->inner.done = inner_done;
  w->inner.priv = w;
  w->inner.slot = io->slot;
  w->inner.aoff = io->aoff;
  w->inner.ctx = io->ctx;
  member_submit(io->q, &w->inner);
}

static void
delay_done(struct qtask *t, int res)
{
  struct member_io *io = task_io(t);
  int error = (int)io->xfered;

  io->xfered = 0;
  if (error)
    fail(io, error);
  else
    forward(io);
}

static void
fault_submit(struct raid_queue *q, struct member_io *io)
{
  struct fault_member *fm = io->m->priv;
  unsigned delay_us;
  int error;

  decide(fm, io, &error, &delay_us);
  if (delay_us) {
    io->xfered = (size_t)error;
    io->task.fn = delay_done;
    queue_timer(q, &io->task, &io->ts, delay_us);
  }
  else if (error)
    fail(io, error);
  else
    forward(io);
}

static void
fault_close(struct raid_member *m)
{
  struct fault_member *fm = m->priv;

  if (fm == NULL)
    return;
  raid_member_close(fm->inner);
  pthread_mutex_destroy(&fm->lock);
  free(fm->rules);
  free(fm);
}

static int
fault_size_now(struct raid_member *m, uint64_t *size)
{
  return member_refresh_size(((struct fault_member *)m->priv)->inner, size);
}

static const struct member_ops fault_ops = {
  .kind = "fault",
  .submit = fault_submit,
  .close = fault_close,
  .size_now = fault_size_now,
};

struct raid_member *
member_fault_inner(struct raid_member *m)
{
  return m->ops == &fault_ops ? ((struct fault_member *)m->priv)->inner : m;
}

EXPORT int
raid_member_new_fault(struct raid_member *inner, struct raid_member **memberp)
{
  struct fault_member *fm;
  struct raid_member *m;

  *memberp = NULL;
  fm = calloc(1, sizeof *fm);
  m = member_alloc(&fault_ops, inner->name);
  if (fm == NULL || m == NULL) {
    free(fm);
    if (m)
      raid_member_close(m);
    return set_error(ENOMEM, "member %s: fault injector: out of memory", inner->name);
  }
  pthread_mutex_init(&fm->lock, NULL);
  fm->inner = inner;
  m->priv = fm;
  m->size = inner->size;
  m->lbs = inner->lbs;
  m->mem_align = inner->mem_align;
  m->direct = inner->direct;
  m->readonly = inner->readonly;
  *memberp = m;
  return 0;
}

static struct fault_member *
fault_of(struct raid_member *m, const char *what)
{
  if (m->ops != &fault_ops) {
    set_error(EINVAL, "member %s: %s: not a fault injector (kind %s)",
              m->name, what, m->ops->kind);
    return NULL;
  }
  return m->priv;
}

EXPORT int
raid_fault_add(struct raid_member *m, const struct raid_fault *rule)
{
  const unsigned all = RAID_FAULT_READ | RAID_FAULT_WRITE | RAID_FAULT_FLUSH;
  struct fault_member *fm = fault_of(m, "raid_fault_add");
  struct fault_rule *r;

  if (fm == NULL)
    return -EINVAL;
  if (rule->ops == 0 || (rule->ops & ~all))
    return set_error(EINVAL, "member %s: fault rule: ops 0x%x must be a non-empty "
                     "set of RAID_FAULT_READ, _WRITE and _FLUSH", m->name, rule->ops);
  if (rule->error < 0 || rule->error > 4095)
    return set_error(EINVAL, "member %s: fault rule: error %d is not an errno",
                     m->name, rule->error);
  if (rule->error == 0 && rule->delay_us == 0)
    return set_error(EINVAL, "member %s: fault rule neither fails nor delays",
                     m->name);
  if (rule->offset >= m->size || rule->length > m->size - rule->offset)
    return set_error(EINVAL, "member %s: fault rule range %" PRIu64 "+%" PRIu64
                     " is beyond the end (%" PRIu64 " bytes)", m->name,
                     rule->offset, rule->length, m->size);

  pthread_mutex_lock(&fm->lock);
  if (fm->nrules == fm->cap) {
    size_t cap = fm->cap ? 2 * fm->cap : 4;
    struct fault_rule *rules = realloc(fm->rules, cap * sizeof *rules);

    if (rules == NULL) {
      pthread_mutex_unlock(&fm->lock);
      return set_error(ENOMEM, "member %s: fault rule: out of memory", m->name);
    }
    fm->rules = rules;
    fm->cap = cap;
  }
  r = &fm->rules[fm->nrules++];
  r->f = *rule;
  r->end = rule->length ? rule->offset + rule->length : m->size;
  r->seen = 0;
  atomic_store_explicit(&fm->active, fm->nrules, memory_order_release);
  pthread_mutex_unlock(&fm->lock);
  return 0;
}

EXPORT int
raid_fault_clear(struct raid_member *m)
{
  struct fault_member *fm = fault_of(m, "raid_fault_clear");

  if (fm == NULL)
    return -EINVAL;
  pthread_mutex_lock(&fm->lock);
  fm->nrules = 0;
  atomic_store_explicit(&fm->active, 0, memory_order_release);
  pthread_mutex_unlock(&fm->lock);
  return 0;
}

EXPORT uint64_t
raid_fault_count(const struct raid_member *m)
{
  const struct fault_member *fm = m->priv;

  if (m->ops != &fault_ops)
    return 0;
  return atomic_load_explicit(&fm->failed, memory_order_relaxed);
}
