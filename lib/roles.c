/* Roles and their members: failure of a member (from the I/O path or on
 * request), retiring members, a new member installed into a free role,
 * and the walk over every member; the rules every role change follows are
 * below ("Roles and members").  The core's own: the sync engine and
 * manage.c, above it, change roles only through these.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* ---- the number of roles ----------------------------------------------------- */

/* md's raid1_reshape() and its takeovers between RAID 0 and 5: more roles
 * start missing (a hot spare or an added member takes them and is
 * rebuilt); fewer only when no more members than that hold roles, those
 * in the roles that go moving down into free ones (md renumbers them the
 * same way).  Under conf_lock; returns the number of roles not in sync
 * afterwards. */
unsigned
roles_resize_locked(struct raid_array *a, unsigned old, unsigned n)
{
  unsigned i, j;

  for (i = old; i < n; i++) {
    atomic_store(&a->recovered[i], 0);
    atomic_store(&a->bm_readd[i], NULL);
    atomic_store(&a->members[i], NULL);
    atomic_store(&a->state[i], RAID_MEMBER_MISSING);
  }
  for (j = n, i = 0; j < old; j++) {
    struct raid_member *m = atomic_load(&a->members[j]);

    if (m == NULL)
      continue;
    while (atomic_load(&a->members[i]) != NULL)
      i++;                      /* there is one: counted by the caller */
    /* A member in two roles for a moment: reads of either are of the same
     * data, and a write bound to both writes it twice. */
    a->moff[i] = a->moff[j];
    atomic_store(&a->recovered[i], atomic_load(&a->recovered[j]));
    atomic_store(&a->bm_readd[i], atomic_load(&a->bm_readd[j]));
    atomic_store(&a->members[i], m);
    atomic_store(&a->state[i], atomic_load(&a->state[j]));
    atomic_store(&a->state[j], RAID_MEMBER_MISSING);
    atomic_store(&a->members[j], NULL);
  }
  a->raid_disks = n;
  return roles_count_locked(a);
}

void
roles_level_locked(struct raid_array *a, unsigned old, unsigned n, struct raid_member **dropp,
                   int *stp)
{
  *dropp = NULL;
  if (n < old) {
    *stp = atomic_load(&a->state[old - 1]);
    *dropp = atomic_load(&a->members[old - 1]);
    /* The weaker state first ("Roles and members", below). */
    atomic_store(&a->state[old - 1], RAID_MEMBER_MISSING);
    atomic_store(&a->members[old - 1], NULL);
  }
  roles_resize_locked(a, old, n);
}

void
roles_level_back_locked(struct raid_array *a, unsigned n, unsigned old,
                        struct raid_member *drop, int st)
{
  roles_resize_locked(a, n, old);
  if (drop) {
    atomic_store(&a->members[old - 1], drop);
    atomic_store(&a->state[old - 1], st);
    roles_count_locked(a);
  }
}

/* md's raid5_calc_degraded(): the roles not in sync, but while a reshape
 * to more members runs, the larger of two counts, one per shape: in the
 * old shape a role not in sync is missing; in the new one a recovering
 * role is not, since the reshape writes it (its recovery point follows
 * the reshape, sync/reshape.c), so only missing and faulty roles count.
 * A RAID 0 restriped as a RAID 5 missing its parity role is degraded by
 * one, not two, while the member taking that role is filled. */
unsigned
roles_count_locked(struct raid_array *a)
{
  unsigned i, n = a->raid_disks, old = n, d_old = 0, d_new = 0;

  if (atomic_load(&a->reshape_pos) != UINT64_MAX && a->geo_old && a->geo_new &&
      a->geo_new->raid_disks > a->geo_old->raid_disks)
    old = a->geo_old->raid_disks;
  for (i = 0; i < n; i++) {
    int st = atomic_load(&a->state[i]);

    if (st != RAID_MEMBER_IN_SYNC && i < old)
      d_old++;
    if (st != RAID_MEMBER_IN_SYNC && (old == n || st != RAID_MEMBER_RECOVERING))
      d_new++;
  }
  atomic_store(&a->degraded, MAX(d_old, d_new));
  return MAX(d_old, d_new);
}

/* ---- member failure ------------------------------------------------------- */

/* Roles and members.  The I/O path reads a role's member and its state
 * without locks, as a pair (slot_member_at()): the member it gets is the
 * one the state it saw describes, and the request uses that member for
 * the I/O it decided on ("binding"), whatever happens to the role
 * afterwards.  Whoever changes a role, under conf_lock, keeps every pair
 * a reader can see meaningful:
 *   - a member leaves a role only while the state says "do not use" for it
 *     (FAULTY, MISSING), or for one that holds a superset of what the state
 *     promises (a replacement taking over: see role_fail_locked());
 *   - the state is changed before the member when the new state is the
 *     weaker one, after it when it is the stronger one.
 * A member bound before a change may thus still get I/O after it: a read
 * of the old member (which may fail: the failure of a member no longer in
 * its role changes nothing, see role_fail_locked()), or a write that
 * req_mio_submit() redirects to the role's new member.  Such a request
 * overlaps the change, so either outcome is one a disk could give.
 * Members are closed only after a grace period (array_quiesce()) once
 * nothing refers to them: see raid_array_remove_member(). */

void
retire_locked(struct raid_array *a, struct raid_member *m)
{
  struct raid_member **p = &a->retired;

  while (*p)
    p = &(*p)->retired_next;
  m->retired_next = NULL;
  *p = m;
  a->nretired++;
}

/* Role SLOT's member M failed (M NULL: whatever member the role has).
 * Under conf_lock.  Returns the state the role had (IN_SYNC or RECOVERING)
 * when this call failed it, or -1 when there was nothing to fail: the role
 * holds another member by now (M was replaced or removed, and its late
 * failure says nothing about the role), or it is not in use.
 *
 * A replacement of the role takes over at once (md: a replaced member
 * that fails hands over to its replacement): it holds the role's data up
 * to repl_done, and has received every write there (req_mio_submit()
 * writes both), so the role becomes RECOVERING from that point with the
 * replacement as its member.  The state goes first: RECOVERING up to
 * repl_done is true of the old member too (it held everything), so a
 * reader that pairs it with the old member reads what it would have
 * read; then the member changes, and writes bound to the old one are
 * redirected to the replacement. */
static int
role_fail_locked(struct raid_array *a, unsigned slot, struct raid_member *m)
{
  struct raid_member *cur = atomic_load(&a->members[slot]), *x;
  int st = atomic_load(&a->state[slot]);

  if ((m && cur != m) || (st != RAID_MEMBER_IN_SYNC && st != RAID_MEMBER_RECOVERING))
    return -1;
  /* Counted before the role changes: whoever sees the new state sees the
   * count (req_finish()). */
  atomic_fetch_add(&a->fail_gen, 1);
  x = atomic_load(&a->repl[slot]);
  if (x) {
    uint64_t done = atomic_load(&a->repl_done[slot]);

    if (st == RAID_MEMBER_RECOVERING)
      done = MIN(done, atomic_load(&a->recovered[slot]));
    atomic_store(&a->recovered[slot], done);
    atomic_store(&a->state[slot], RAID_MEMBER_RECOVERING);
    a->moff[slot] = x->data_offset;
    atomic_store(&a->members[slot], x);
    atomic_store(&a->repl[slot], NULL);
    if (cur)
      retire_locked(a, cur);
  }
  else
    atomic_store(&a->state[slot], RAID_MEMBER_FAULTY);
  roles_count_locked(a);
  return st;
}

int
array_role_failed(struct raid_array *a, unsigned slot, struct raid_member *m,
                  const char *why)
{
  struct raid_member *x;
  const char *mname;
  unsigned degraded;
  bool promoted;
  int st;

  pthread_mutex_lock(&a->conf_lock);
  if (m == NULL)
    m = atomic_load(&a->members[slot]);
  x = atomic_load(&a->repl[slot]);
  st = role_fail_locked(a, slot, m);
  promoted = st >= 0 && x && atomic_load(&a->members[slot]) == x;
  mname = m ? m->name : "(missing)";
  degraded = atomic_load(&a->degraded);
  if (st >= 0 && !promoted && !a->pers->enough(a)) {
    atomic_store(&a->failed, true);
    raid_log(RAID_LOG_ERR, "%s %s: member %s (role %u) failed: %s; too many "
             "members lost, the array has failed and refuses I/O",
             a->pers->name, a->name, mname, slot, why);
  }
  else if (st >= 0)
    raid_log(RAID_LOG_ERR, "%s %s: member %s (role %u) failed: %s; continuing "
             "degraded on %u of %u members", a->pers->name, a->name, mname,
             slot, why, a->raid_disks - degraded, a->raid_disks);
  if (promoted)
    raid_log(RAID_LOG_WARNING, "%s %s: replacement %s takes over role %u and "
             "goes on rebuilding from byte %" PRIu64, a->pers->name, a->name,
             x->name, slot, atomic_load(&a->recovered[slot]));
  /* md's Fail and FailSpare, and DegradedArray for the first role lost
   * (a replacement taking over leaves the role rebuilding: degraded). */
  if (st >= 0) {
    array_event(a, (struct raid_event){
        .type = st == RAID_MEMBER_IN_SYNC ? RAID_EVENT_FAIL : RAID_EVENT_FAIL_SPARE,
        .member = m ? m->name : NULL, .role = (int)slot });
    if (st == RAID_MEMBER_IN_SYNC && degraded == 1)
      array_event(a, (struct raid_event){ .type = RAID_EVENT_DEGRADED, .role = -1 });
  }
  pthread_mutex_unlock(&a->conf_lock);
  return st;
}

void
array_member_failed(struct raid_array *a, unsigned slot, struct raid_member *m,
                    int err, uint64_t offset, const char *what)
{
  char why[128];

  if (what)
    snprintf(why, sizeof why, "%s error at sector %" PRIu64 ": %s",
             what, offset >> SECTOR_SHIFT, strerror(-err));
  else
    snprintf(why, sizeof why, "marked faulty on request");
  if (array_role_failed(a, slot, m, why) < 0)
    return;                     /* failed already, or no longer in the role */
  a->mops->member_failed(a, slot);
  array_sync_kick(a);
}

/* The "sync needed" wake: something changed that the sync engine must
 * look at (a role failed, a replacement was dropped). */
void
array_sync_kick(struct raid_array *a)
{
  if (a->sops)
    a->sops->kick(a);
}

void
array_repl_failed(struct raid_array *a, unsigned slot, struct raid_member *x, int err)
{
  pthread_mutex_lock(&a->conf_lock);
  if (atomic_load(&a->repl[slot]) != x) {
    pthread_mutex_unlock(&a->conf_lock);
    return;                     /* promoted, or abandoned already */
  }
  atomic_store(&a->repl[slot], NULL);
  retire_locked(a, x);
  raid_log(RAID_LOG_ERR, "%s %s: replacement %s of role %u failed: %s; the "
           "replacement is abandoned", a->pers->name, a->name, x->name, slot,
           strerror(-err));
  array_event(a, (struct raid_event){ .type = RAID_EVENT_FAIL_SPARE,
                                      .member = x->name, .role = (int)slot });
  pthread_mutex_unlock(&a->conf_lock);
  a->mops->update(a);
  array_sync_kick(a);
}

EXPORT int
raid_array_fail_member(struct raid_array *a, unsigned slot)
{
  if (slot >= a->raid_disks)
    return set_error(EINVAL, "array %s: no role %u (it has %u)", a->name, slot,
                     a->raid_disks);
  array_member_failed(a, slot, NULL, -EIO, 0, NULL);
  return 0;
}

bool
role_free_locked(struct raid_array *a, unsigned slot)
{
  int st = atomic_load(&a->state[slot]);

  return (st == RAID_MEMBER_FAULTY || st == RAID_MEMBER_MISSING) &&
    atomic_load(&a->repl[slot]) == NULL;
}

struct raid_member *
role_install_locked(struct raid_array *a, unsigned slot, struct raid_member *x)
{
  struct raid_member *old = atomic_load(&a->members[slot]);

  /* The state is FAULTY or MISSING: unusable with either member.  The
   * recovery point first, then the member, then the state that lets the
   * I/O path use it (up to that point: nowhere yet). */
  if (old)
    retire_locked(a, old);
  a->moff[slot] = x->data_offset;
  atomic_store(&a->bm_readd[slot], NULL);
  atomic_store(&a->recovered[slot], 0);
  atomic_store(&a->members[slot], x);
  atomic_store(&a->state[slot], RAID_MEMBER_RECOVERING);
  roles_count_locked(a);
  return old;
}

/* Requests and sync steps that bound M end within the grace period; a
 * superblock update that listed it holds the metadata lock until it is
 * written (md's barrier waits for it). */
void
member_release(struct raid_array *a, struct raid_member *m)
{
  array_quiesce(a);
  a->mops->barrier(a);
  raid_member_close(m);
}

void
array_walk_members(struct raid_array *a, member_walk_fn fn, void *opaque)
{
  struct raid_member *m;
  unsigned i;

  pthread_mutex_lock(&a->conf_lock);
  for (i = 0; i < a->raid_disks; i++) {
    int st = atomic_load(&a->state[i]);

    m = atomic_load(&a->members[i]);
    if (m == NULL)
      fn(NULL, (int)i, RAID_MEMBER_MISSING, 0, opaque);
    else
      fn(m, (int)i, st, st == RAID_MEMBER_RECOVERING ? atomic_load(&a->recovered[i]) : 0,
         opaque);
  }
  for (i = 0; i < a->raid_disks; i++) {
    m = atomic_load(&a->repl[i]);
    if (m)
      fn(m, (int)i, RAID_MEMBER_REPLACEMENT, atomic_load(&a->repl_done[i]), opaque);
  }
  for (i = 0; i < a->nspares; i++)
    fn(a->spares[i], -1, RAID_MEMBER_SPARE, 0, opaque);
  for (m = a->retired; m; m = m->retired_next)
    fn(m, -1, RAID_MEMBER_FAULTY, 0, opaque);
  pthread_mutex_unlock(&a->conf_lock);
}
