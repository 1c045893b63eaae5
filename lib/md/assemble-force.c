/* Forced assembly, mdadm --assemble --force: for an array its current
 * members cannot run, a RAID 0 member failed on request, or a RAID 5 that
 * lost two members at once to a transient fault (a cable, a controller
 * reset) whose disks are fine.  Their superblocks are behind: they missed
 * the updates that marked them faulty, or (a crash in the middle of an
 * update) just the last one.  As mdadm's Assemble.c, we take back the
 * member with the most events among those behind, with every member of the
 * same vintage (the same events: they left together), and repeat only
 * while the array still cannot run.  Their superblocks are then written
 * with the array's next events and their roles back (meta_start() does it
 * for every member in one update), and an array with redundancy is marked
 * for a full resync, since writes in flight when they left may have
 * reached some members and not others.
 *
 * What the event counts alone cannot tell is whether the array kept
 * running without a member, taking writes it never saw: forcing that one
 * back would return stale data as current.  A member is "close" unless a
 * superblock here says so: one with more events that marks it faulty and
 * whose active roles still make a working array (the array was updated,
 * and could serve, after it left).  Those are never forced; nor members
 * whose own superblock gives them no role or says they were still being
 * rebuilt (their data is incomplete).  The witness is usually a member
 * that failed later (its superblock stopped at a time the array still
 * worked without the first); when it is not given, nothing here can tell
 * the first from a member that failed with the others, and it is taken,
 * as mdadm takes it.
 *
 * Everything is decided from the superblocks read before anything is
 * written; force_choose() itself writes nothing. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "md.h"
#include "md/assemble.h"

/* Would a member in sync in each role of HAVE[] run the array FRESH
 * describes?  The personalities' enough() on roles alone (raid10.c's
 * copy sets for RAID 10's near layouts). */
static bool
roles_work(const struct raid_superblock *fresh, const bool *have)
{
  unsigned n = sb_roles(fresh), c, ch, k, missing = 0;
  bool any;

  for (k = 0; k < n; k++)
    missing += !have[k];
  switch (fresh->level) {
  case RAID_LEVEL_0: return missing == 0;
  case RAID_LEVEL_1: return missing < n;
  case RAID_LEVEL_5: return missing <= 1;
  case RAID_LEVEL_10:
    c = fresh->layout & 0xff;
    if (c == 0 || c > n)
      return missing == 0;
    for (ch = 0; ch < n; ch++) {
      for (k = 0, any = false; k < c && !any; k++)
        any = have[(ch * c + k) % n];
      if (!any)
        return false;
    }
    return true;
  default:
    return false;
  }
}

/* The roles SB calls active. */
static void
active_roles(const struct raid_superblock *sb, bool *have)
{
  unsigned k;

  memset(have, 0, RAID_MAX_MEMBERS * sizeof *have);
  for (k = 0; k < sb->max_dev && k < RAID_SB_MAX_DEV; k++)
    if (sb->dev_roles[k] < sb_roles(sb) && sb->dev_roles[k] < RAID_MAX_MEMBERS)
      have[sb->dev_roles[k]] = true;
}

/* Which members in B[0..nb-1] (behind FRESH) force takes back, given the
 * roles HAVE[] that have a member in sync: B[].taken set and true when
 * the array then runs.  Each B[].why says why one cannot be taken. */
static bool
force_choose(struct raid_member *const *members, const struct raid_superblock *sbs,
             unsigned n, const struct raid_superblock *fresh, const bool *have,
             struct behind *b, unsigned nb)
{
  bool roles[RAID_MAX_MEMBERS], view[RAID_MAX_MEMBERS];
  unsigned i, j, best;

  memcpy(roles, have, sizeof roles);
  for (i = 0; i < nb; i++) {
    const struct raid_superblock *sb = &sbs[b[i].idx];

    b[i].taken = false;
    b[i].why[0] = '\0';
    if (b[i].role >= sb_roles(fresh))
      snprintf(b[i].why, sizeof b[i].why, "its own superblock gives it no role");
    else if (sb->feature_map & (RAID_SB_FEATURE_RECOVERY_OFFSET | RAID_SB_FEATURE_REPLACEMENT))
      snprintf(b[i].why, sizeof b[i].why, "it was still being rebuilt");
    for (j = 0; j < n && b[i].why[0] == '\0'; j++) {
      const struct raid_superblock *y = &sbs[j];

      if (y->events <= sb->events || sb->dev_number >= y->max_dev ||
          y->dev_roles[sb->dev_number] != RAID_SB_ROLE_FAULTY)
        continue;
      active_roles(y, view);
      if (roles_work(fresh, view))
        snprintf(b[i].why, sizeof b[i].why, "too far behind, the array ran "
                 "without it (%s's superblock at events %" PRIu64 " has it faulty "
                 "and the array working)", members[j]->name, y->events);
    }
  }
  while (!roles_work(fresh, roles)) {
    for (i = 0, best = nb; i < nb; i++)
      if (!b[i].taken && !b[i].why[0] && !roles[b[i].role] &&
          (best == nb || sbs[b[i].idx].events > sbs[b[best].idx].events))
        best = i;
    if (best == nb)
      return false;
    /* Its vintage too: they left together (mdadm: "we can't lose"). */
    for (i = 0; i < nb; i++)
      if (!b[i].taken && !b[i].why[0] && !roles[b[i].role] &&
          sbs[b[i].idx].events == sbs[b[best].idx].events) {
        b[i].taken = true;
        roles[b[i].role] = true;
      }
  }
  return true;
}

/* "A (role 1, events 6, faulty), B (role 2, events 7)" into BUF. */
static void
list_behind(struct raid_member *const *members, const struct raid_superblock *sbs,
            const struct behind *b, unsigned nb, bool only_taken, char *buf, size_t len)
{
  size_t at = 0;
  unsigned i;

  buf[0] = '\0';
  for (i = 0; i < nb && at < len; i++) {
    if (only_taken && !b[i].taken)
      continue;
    at += (size_t)snprintf(buf + at, len - at, "%s%s (", at ? ", " : "",
                           members[b[i].idx]->name);
    if (at < len && b[i].role < RAID_MAX_MEMBERS)
      at += (size_t)snprintf(buf + at, len - at, "role %u, ", b[i].role);
    if (at < len)
      at += (size_t)snprintf(buf + at, len - at, "events %" PRIu64 "%s)",
                             sbs[b[i].idx].events, b[i].faulty ? ", marked faulty" : "");
  }
}

/* The error for members that cannot run the array while B[] are behind:
 * what force would do, or why it cannot.  FORCED: force was asked. */
static int
force_error(const char *aname, struct raid_member *const *members,
            const struct raid_superblock *sbs, const struct raid_superblock *fresh,
            const bool *have, struct behind *b, unsigned nb, bool works, bool forced)
{
  char *all = malloc(4096), *taken = malloc(4096), *why = malloc(4096);
  unsigned i, in_sync = 0;
  size_t at = 0;
  int r;

  if (all == NULL || taken == NULL || why == NULL) {
    free(all); free(taken); free(why);
    return set_error(ENOMEM, "assemble %s: out of memory", aname);
  }
  for (i = 0; i < sb_roles(fresh) && i < RAID_MAX_MEMBERS; i++)
    in_sync += have[i];
  list_behind(members, sbs, b, nb, false, all, 4096);
  list_behind(members, sbs, b, nb, true, taken, 4096);
  why[0] = '\0';
  for (i = 0; i < nb && at < 4096; i++)
    if (b[i].why[0])
      at += (size_t)snprintf(why + at, 4096 - at, "%s%s: %s", at ? "; " : "",
                             members[b[i].idx]->name, b[i].why);
  if (works && !forced)
    r = set_error(EINVAL, "assemble %s: only %u of %u roles have a member in sync, "
                  "too few to run the array; behind the freshest superblock "
                  "(events %" PRIu64 "): %s; --force may start it, taking back %s",
                  aname, in_sync, sb_roles(fresh), fresh->events, all, taken);
  else
    r = set_error(EINVAL, "assemble %s: only %u of %u roles have a member in sync, "
                  "too few to run the array; behind the freshest superblock "
                  "(events %" PRIu64 "): %s; %s (%s)", aname, in_sync,
                  sb_roles(fresh), fresh->events, all,
                  forced ? "forcing cannot start it" : "--force could not start it either",
                  why[0] ? why : "too few members even with all of them");
  free(all); free(taken); free(why);
  return r;
}

/* Phase 2c: too few to run: members behind may be forced back (above). */
int
asm_force(struct assembly *x)
{
  bool have[RAID_MAX_MEMBERS], works;
  unsigned i, j;

  for (i = 0; i < RAID_MAX_MEMBERS; i++)
    have[i] = i < sb_roles(x->fresh) && x->slots[i] && x->recov[i] == UINT64_MAX;
  if (x->nb == 0 || roles_work(x->fresh, have))
    return 0;
  works = force_choose(x->members, x->sbs, x->n, x->fresh, have, x->b, x->nb);
  if (!works || !(x->flags & RAID_ASSEMBLE_FORCE))
    return force_error(x->aname, x->members, x->sbs, x->fresh, have, x->b, x->nb,
                       works, x->flags & RAID_ASSEMBLE_FORCE);
  for (j = 0; j < x->nb; j++)
    if (x->b[j].taken) {
      i = x->b[j].idx;
      x->slots[x->b[j].role] = x->members[i];
      x->moff[x->b[j].role] = x->sbs[i].data_offset << SECTOR_SHIFT;
      x->recov[x->b[j].role] = UINT64_MAX;
      x->used[i] = true;
      x->found++;
      x->nforced++;
    }
  return 0;
}

/* After meta_start() of a forced assembly: every member forced back was
 * written (a member whose write fails is failed by the update), so the
 * array runs as decided; say what was done, or fail. */
int
asm_forced_started(struct raid_array *a)
{
  struct array_meta *m = a->meta;
  unsigned i;

  for (i = 0; i < m->nforced; i++)
    if (atomic_load(&a->state[m->forced[i].role]) != RAID_MEMBER_IN_SYNC ||
        raid_array_is_failed(a))
      return set_error(EIO, "assemble %s: a superblock write failed while forcing "
                       "%s back (%s): the array was not started", a->name,
                       m->forced[i].name, raid_get_error());
  for (i = 0; i < m->nforced; i++) {
    m->forced[i].events_to = m->sb.events;
    raid_log(RAID_LOG_WARNING, "%s %s: forced member %s (role %u) back in: events "
             "%" PRIu64 " raised to %" PRIu64 " (%s)", a->pers->name, a->name,
             m->forced[i].name, m->forced[i].role, m->forced[i].events_from,
             m->forced[i].events_to, m->forced[i].was_faulty
             ? "it was marked faulty" : "it had missed an update");
  }
  if (m->needs_resync)
    raid_log(RAID_LOG_WARNING, "%s %s: assembled by force: a full resync will "
             "make parity and mirrors agree", a->pers->name, a->name);
  return 0;
}

EXPORT unsigned
raid_array_forced_members(const struct raid_array *a, struct raid_forced_member *info,
                          unsigned max)
{
  unsigned i, n;

  if (a->meta == NULL)
    return 0;
  pthread_mutex_lock(&a->meta->lock);
  n = a->meta->nforced;
  for (i = 0; i < n && i < max; i++)
    info[i] = a->meta->forced[i];
  pthread_mutex_unlock(&a->meta->lock);
  return n;
}
