/* An array's figures and its members', for the public API
 * (raid_array_stats(), raid_member_io_stats(), the reset): a snapshot of
 * the counters that stats.c keeps, with the members walked under the
 * array's conf_lock (roles.c).
 */
#include <config.h>

#include <errno.h>
#include <string.h>

#include "internal.h"

/* ---- the public API ----------------------------------------------------------- */

static unsigned
in_flight(_Atomic int *c)
{
  int v = atomic_load_explicit(c, memory_order_relaxed);
  return v > 0 ? v : 0;
}

EXPORT void
raid_member_io_stats(struct raid_member *m, struct raid_io_stats *st)
{
  stats_io_read(&m->stats, st);
  st->in_flight = in_flight(&m->in_flight);
}

struct member_list {
  struct raid_member_stats *members;
  unsigned n, max;
};

static void
put_member(struct raid_member *m, int role, int state, uint64_t rec, void *opaque)
{
  struct member_list *l = opaque;

  if (l->n < l->max) {
    memset(&l->members[l->n], 0, sizeof l->members[l->n]);
    l->members[l->n].role = role;
    l->members[l->n].state = state;
    if (m) {
      l->members[l->n].name = m->name;
      l->members[l->n].kind = m->ops->kind;
      raid_member_io_stats(m, &l->members[l->n].io);
    }
  }
  l->n++;
}

EXPORT int
raid_array_stats(struct raid_array *a, struct raid_array_stats *st,
                 struct raid_member_stats *members, unsigned max)
{
  struct stats_array *s = &a->stats;
  struct member_list l = { NULL, 0, 0 };

  if (members == NULL && max > 0)
    return set_error(EINVAL, "array %s: statistics: no room given for %u members",
                     a->name, max);
  memset(st, 0, sizeof *st);
  st->elapsed_ns = mono_ns() - atomic_load_explicit(&s->since_ns, memory_order_relaxed);
  stats_io_read(&s->io, &st->io);
  st->io.in_flight = in_flight(&s->in_flight);
#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)
  st->member_read_bytes = LOAD(s->mread_bytes);
  st->member_write_bytes = LOAD(s->mwrite_bytes);
  st->full_stripe_writes = LOAD(s->stripe[STRIPE_FULL]);
  st->rmw_writes = LOAD(s->stripe[STRIPE_RMW]);
  st->rcw_writes = LOAD(s->stripe[STRIPE_RCW]);
  st->degraded_writes = LOAD(s->stripe[STRIPE_DEGRADED_WRITE]);
  st->degraded_reads = LOAD(s->stripe[STRIPE_DEGRADED_READ]);
  st->stripe_read_bytes = LOAD(s->stripe_read_bytes);
  st->plugged_writes = LOAD(s->plug[PLUGS_WAITED]);
  st->plugs_filled = LOAD(s->plug[PLUGS_FILLED]);
  st->plugs_expired = LOAD(s->plug[PLUGS_EXPIRED]);
#undef LOAD

  /* The members, as raid_array_members() lists them. */
  l.members = members;
  l.max = max;
  array_walk_members(a, put_member, &l);
  return l.n;
}

/* The array's own counters (not its members'): at creation and reset. */
static void
array_stats_zero(struct raid_array *a)
{
  struct stats_array *s = &a->stats;
  unsigned i;

  stats_io_reset(&s->io);
  atomic_store_explicit(&s->mread_bytes, 0, memory_order_relaxed);
  atomic_store_explicit(&s->mwrite_bytes, 0, memory_order_relaxed);
  for (i = 0; i < STRIPE_NCLASSES; i++)
    atomic_store_explicit(&s->stripe[i], 0, memory_order_relaxed);
  atomic_store_explicit(&s->stripe_read_bytes, 0, memory_order_relaxed);
  for (i = 0; i < PLUGS_NCLASSES; i++)
    atomic_store_explicit(&s->plug[i], 0, memory_order_relaxed);
  atomic_store_explicit(&s->since_ns, mono_ns(), memory_order_relaxed);
}

static void
reset_member(struct raid_member *m, int role, int state, uint64_t rec, void *opaque)
{
  if (m)
    stats_io_reset(&m->stats);
}

EXPORT void
raid_array_stats_reset(struct raid_array *a)
{
  /* in_flight is not a counter since the reset: it stays. */
  array_stats_zero(a);
  array_walk_members(a, reset_member, NULL);
}
