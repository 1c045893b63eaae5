/* Assembly: read every member's superblock, decide from them alone, then
 * write ("check, then write").
 *
 * Assembly follows md (super_1_validate() and mdadm's Assemble.c): all
 * members must carry one set UUID; the superblock with the most events is
 * the truth about roles; a member whose events are behind is stale and not
 * used (it needs recovery), except one that missed only the last update
 * and was in sync in its role (raid_superblock_one_behind(), md's margin
 * of one);
 * a member that the freshest superblock calls
 * faulty or spare is not used as an active member; two members claiming
 * one role are refused.  An array that would start with fewer members
 * than were active at its last update needs RAID_ASSEMBLE_RUN, one
 * missing more than its level tolerates never starts, and a RAID 5 that
 * was not stopped cleanly starts degraded only with RAID_ASSEMBLE_FORCE
 * (the write hole, see dirty_degraded_error()).
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/time.h>

#include "internal.h"
#include "md.h"

/* "host:name" -> "name", as mdadm names arrays. */
static const char *
short_name(const char *set_name)
{
  const char *colon = strchr(set_name, ':');
  return colon ? colon + 1 : set_name;
}

static void
format_uuid(const uint8_t *u, char *out)
{
  sprintf(out, "%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x",
          u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
          u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* Do two superblocks describe the same array geometry? */
static bool
same_geometry(const struct raid_superblock *x, const struct raid_superblock *y)
{
  return x->level == y->level && x->layout == y->layout &&
    x->chunksize == y->chunksize && x->raid_disks == y->raid_disks &&
    x->size == y->size;
}

/* The same layout of data, but another size or number of roles: what a
 * grow (lib/grow.c) changes, in one superblock update. */
static bool
same_layout(const struct raid_superblock *x, const struct raid_superblock *y)
{
  return x->level == y->level && x->layout == y->layout && x->chunksize == y->chunksize;
}

/* RAID 0 of N and RAID 5 of N + 1, parity-last, the same chunk: the same
 * bytes (lib/takeover.c). */
static bool
stripe_takeover(const struct raid_superblock *z, const struct raid_superblock *p)
{
  return z->level == RAID_LEVEL_0 && p->level == RAID_LEVEL_5 &&
    p->layout == RAID_LAYOUT_PARITY_LAST && p->raid_disks == z->raid_disks + 1 &&
    p->chunksize == z->chunksize;
}

/* Another level over the same bytes: md's takeover of a RAID 1 of 2 as a
 * RAID 5 of 2 or back, or of a RAID 0 as a RAID 5 and back (lib/takeover.c),
 * in one superblock update. */
static bool
takeover(const struct raid_superblock *x, const struct raid_superblock *y)
{
  if (x->size != y->size)
    return false;
  return (x->raid_disks == 2 && y->raid_disks == 2 &&
          ((x->level == RAID_LEVEL_1 && y->level == RAID_LEVEL_5) ||
           (x->level == RAID_LEVEL_5 && y->level == RAID_LEVEL_1))) ||
    stripe_takeover(x, y) || stripe_takeover(y, x);
}

/* SB missed just the update that started FRESH's reshape (a crash came
 * while the superblocks were written one after the other, before anything
 * moved): it is taken with the reshape's fields, and a hot spare that the
 * reshape gave a new role takes it (nothing is in the new shape yet, so a
 * new member holds nothing it needs).  True when it did. */
static bool
missed_reshape_start(struct raid_superblock *sb, const struct raid_superblock *fresh,
                     unsigned role)
{
  const uint32_t bits = RAID_SB_FEATURE_RESHAPE_ACTIVE | RAID_SB_FEATURE_NEW_OFFSET |
    RAID_SB_FEATURE_RESHAPE_BACKWARDS;

  if (!(fresh->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE) ||
      fresh->reshape_position != 0 || (sb->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE) ||
      sb->events + 1 != fresh->events || sb->dev_number >= sb->max_dev ||
      sb->dev_number >= RAID_SB_MAX_DEV)
    return false;
  /* A RAID 0 restriped (lib/grow.c): the update that started the reshape
   * also made it the parity-last RAID 5 of one role more it runs as. */
  if (sb->level == RAID_LEVEL_0 &&
      (fresh->level != RAID_LEVEL_5 || fresh->layout != RAID_LAYOUT_PARITY_LAST ||
       fresh->chunksize != sb->chunksize || fresh->delta_disks <= 0 ||
       sb->raid_disks + 1 + (uint32_t)fresh->delta_disks != fresh->raid_disks))
    return false;
  if (sb->dev_roles[sb->dev_number] != role) {
    if (sb->dev_roles[sb->dev_number] != RAID_SB_ROLE_SPARE || fresh->delta_disks <= 0 ||
        role >= fresh->raid_disks || role < fresh->raid_disks - (uint32_t)fresh->delta_disks)
      return false;
    sb->dev_roles[sb->dev_number] = (uint16_t)role;
  }
  if (sb->level == RAID_LEVEL_0) {
    sb->level = fresh->level;
    sb->layout = fresh->layout;
  }
  sb->feature_map = (sb->feature_map & ~bits) | (fresh->feature_map & bits);
  sb->new_offset = fresh->new_offset;
  sb->reshape_position = 0;
  sb->delta_disks = fresh->delta_disks;
  sb->new_level = fresh->new_level;
  sb->new_layout = fresh->new_layout;
  sb->new_chunk = fresh->new_chunk;
  return true;
}

/* Where the new shape's rows up to array sector POS end on each member
 * (sectors from its data start), in the reshape superblock SB says. */
static uint64_t
sb_new_front(const struct raid_superblock *sb, uint64_t pos)
{
  struct raid_geo g = { .raid_disks = sb->raid_disks,
                        .chunk_size = sb->new_chunk << SECTOR_SHIFT };

  return geo_member_front(sb->new_level, sb->new_layout & 0xff, &g,
                          pos << SECTOR_SHIFT) >> SECTOR_SHIFT;
}

/* SB, one event behind FRESH, is of a member that a reshape to more
 * members fills (recovering, sync/reshape.c), up to its own checkpoint: it
 * missed only the next superblock write, before which every member's data
 * was flushed (meta_write_locked()), so it holds the new shape's rows up
 * to FRESH's checkpoint too: *RECP (sectors).  md takes it as well (its
 * margin of one), at its own recovery_offset.  True when it does. */
static bool
filled_one_behind(const struct raid_superblock *sb, const struct raid_superblock *fresh,
                  unsigned role, uint64_t *recp)
{
  const uint32_t need = RAID_SB_FEATURE_RECOVERY_OFFSET | RAID_SB_FEATURE_RESHAPE_ACTIVE;

  if (sb->events + 1 != fresh->events || sb->dev_number >= sb->max_dev ||
      sb->dev_number >= RAID_SB_MAX_DEV || sb->dev_roles[sb->dev_number] != role ||
      (sb->feature_map & need) != need ||
      (sb->feature_map & RAID_SB_FEATURE_REPLACEMENT) ||
      !(fresh->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE) || fresh->delta_disks <= 0 ||
      sb->delta_disks != fresh->delta_disks || sb->raid_disks != fresh->raid_disks ||
      sb->new_chunk != fresh->new_chunk || sb->new_chunk == 0 ||
      sb->new_level != fresh->new_level || sb->new_layout != fresh->new_layout ||
      fresh->reshape_position < sb->reshape_position ||
      sb->recovery_offset < sb_new_front(sb, sb->reshape_position))
    return false;
  *recp = sb_new_front(fresh, fresh->reshape_position);
  return true;
}

/* The array sectors of superblock SB's level and copies in a shape of
 * RAID_DISKS members and CHUNK sectors (geo_data_size()). */
static uint64_t
sb_data_sectors(const struct raid_superblock *sb, uint32_t raid_disks, uint32_t chunk)
{
  struct raid_geo g = { .raid_disks = raid_disks, .chunk_size = chunk };

  return geo_data_size((int)sb->level, sb->layout & 0xff, &g, sb->size);
}

/* SB missed just the update that ended its reshape (meta_reshape_finish():
 * its position says every row moved): its data starts at the new offset,
 * in the new layout and chunk, as the freshest says.  A reshape that
 * ended as a RAID 0 (a RAID 0 restriped, a RAID 5 made one: the parity
 * role gone, sync/reshape.c) too, for a member FRESH gives a role in it
 * (ROLE; the parity member that left stays out, stale).  True when it
 * did. */
static bool
missed_reshape_finish(struct raid_superblock *sb, const struct raid_superblock *fresh,
                      unsigned role)
{
  bool stripe = sb->level == RAID_LEVEL_5 && fresh->level == RAID_LEVEL_0 &&
    sb->new_layout == RAID_LAYOUT_PARITY_LAST && fresh->raid_disks + 1 == sb->raid_disks &&
    role < fresh->raid_disks;

  if (!(sb->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE) ||
      (fresh->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE) ||
      sb->events + 1 != fresh->events || (sb->level != fresh->level && !stripe) ||
      (fresh->level != RAID_LEVEL_5 && fresh->level != RAID_LEVEL_10 && !stripe) ||
      fresh->chunksize == 0 || fresh->raid_disks < 2 ||
      sb->new_chunk != fresh->chunksize || (sb->new_layout != fresh->layout && !stripe) ||
      (sb->raid_disks != fresh->raid_disks && !stripe))
    return false;
  if (sb->reshape_position < sb_data_sectors(sb, sb->raid_disks, sb->new_chunk))
    return false;
  if (sb->feature_map & RAID_SB_FEATURE_NEW_OFFSET) {
    sb->data_offset += (uint64_t)(int64_t)sb->new_offset;
    sb->data_size -= (uint64_t)(int64_t)sb->new_offset;
  }
  if (stripe) {
    sb->level = fresh->level;
    sb->raid_disks = fresh->raid_disks;
    sb->data_size = sb->size;           /* as meta_reshape_finish() writes it */
  }
  sb->feature_map &= ~(RAID_SB_FEATURE_RESHAPE_ACTIVE | RAID_SB_FEATURE_NEW_OFFSET |
                       RAID_SB_FEATURE_RESHAPE_BACKWARDS);
  sb->layout = fresh->layout;
  sb->chunksize = fresh->chunksize;
  sb->new_offset = 0;
  sb->reshape_position = 0;
  sb->delta_disks = 0;
  return true;
}

/* ---- forced assembly ------------------------------------------------------------ */

/* mdadm --assemble --force, for an array its current members cannot run:
 * a RAID 0 member failed on request, or a RAID 5 that lost two members
 * at once to a transient fault (a cable, a controller reset) whose disks
 * are fine.  Their superblocks are behind: they missed the updates that
 * marked them faulty, or (a crash in the middle of an update) just the
 * last one.  As mdadm's Assemble.c, we take back the member with the
 * most events among those behind, with every member of the same vintage
 * (the same events: they left together), and repeat only while the array
 * still cannot run.  Their superblocks are then written with the array's
 * next events and their roles back (meta_start() does it for every
 * member in one update), and an array with redundancy is marked for a
 * full resync, since writes in flight when they left may have reached
 * some members and not others.
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

/* Would a member in sync in each role of HAVE[] run the array FRESH
 * describes?  The personalities' enough() on roles alone (raid10.c's
 * copy sets for RAID 10's near layouts). */
static bool
roles_work(const struct raid_superblock *fresh, const bool *have)
{
  unsigned n = fresh->raid_disks, c, ch, k, missing = 0;
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
    if (sb->dev_roles[k] < sb->raid_disks && sb->dev_roles[k] < RAID_MAX_MEMBERS)
      have[sb->dev_roles[k]] = true;
}

/* A member behind the freshest superblock, and what force makes of it. */
struct behind {
  unsigned idx;                 /* into the members given */
  unsigned role;                /* its own superblock's, or RAID_SB_ROLE_* */
  bool faulty;                  /* the freshest superblock has it faulty */
  bool taken;
  char why[512];                /* why it cannot be forced, or "" */
};

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
    if (b[i].role >= fresh->raid_disks)
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
  for (i = 0; i < fresh->raid_disks && i < RAID_MAX_MEMBERS; i++)
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
                  aname, in_sync, fresh->raid_disks, fresh->events, all, taken);
  else
    r = set_error(EINVAL, "assemble %s: only %u of %u roles have a member in sync, "
                  "too few to run the array; behind the freshest superblock "
                  "(events %" PRIu64 "): %s; %s (%s)", aname, in_sync,
                  fresh->raid_disks, fresh->events, all,
                  forced ? "forcing cannot start it" : "--force could not start it either",
                  why[0] ? why : "too few members even with all of them");
  free(all); free(taken); free(why);
  return r;
}

/* The RAID 5 write hole, md's "cannot start dirty degraded array".  A
 * crash (kill -9, power cut) in the middle of a row write may leave the
 * row's data written and its parity not, or the reverse.  With every
 * member there, the resync after the unclean stop recomputes parity from
 * the data and nothing is lost.  With a role missing, that role's chunk of
 * such a row exists only as "parity XOR the other data", which is now
 * wrong: a chunk the crash never wrote reads back silently corrupt, and a
 * rebuild writes the corruption onto the new member.  So, like md (whose
 * degraded count includes members still being rebuilt), a RAID 5 whose
 * freshest superblock is not clean and that would run with a role missing
 * or recovering is not started unless forced (mdadm --assemble --force).
 * A is assembled but not started: nothing has been written yet. */
static int
dirty_degraded_error(const struct raid_array *a, const struct raid_superblock *fresh)
{
  char roles[256];
  size_t at = 0;
  unsigned i;

  roles[0] = '\0';
  for (i = 0; i < a->raid_disks && at < sizeof roles; i++) {
    int st = atomic_load(&a->state[i]);
    struct raid_member *m = atomic_load(&a->members[i]);

    if (st == RAID_MEMBER_IN_SYNC)
      continue;
    if (st == RAID_MEMBER_RECOVERING && m)
      at += (size_t)snprintf(roles + at, sizeof roles - at, "%srole %u (%s) is being "
                             "rebuilt", at ? ", " : "", i, m->name);
    else
      at += (size_t)snprintf(roles + at, sizeof roles - at, "%srole %u is missing",
                             at ? ", " : "", i);
  }
  return set_error(EINVAL, "assemble %s: cannot start dirty degraded array: it was "
                   "not stopped cleanly (resync offset %" PRIu64 " of %" PRIu64
                   " sectors) and %s, so a row whose write the stop cut short can "
                   "hold parity that does not match its data, and the missing "
                   "chunk rebuilt from it would be wrong (the RAID 5 write hole); "
                   "nothing was written.  To start it anyway, taking whatever the "
                   "parity gives, use --force (raidctl assemble --force, as mdadm "
                   "--assemble --force)", a->name, fresh->resync_offset,
                   a->member_size >> SECTOR_SHIFT, roles);
}

/* Hand every member of A, which assembly made and now gives up on, back
 * to the caller, and free A. */
static void
assembly_undo(struct raid_array *a)
{
  struct array_meta *m = a->meta;
  unsigned i;

  run_stop(a);
  a->meta = NULL;
  if (m) {
    pthread_mutex_destroy(&m->lock);
    bitmap_free(m->bm);
    free(m);
  }
  for (i = 0; i < a->raid_disks; i++) {
    a->members[i] = NULL;
    atomic_store(&a->repl[i], NULL);
  }
  a->nspares = 0;
  raid_array_free(a);
}

/* After meta_start() of a forced assembly: every member forced back was
 * written (a member whose write fails is failed by the update), so the
 * array runs as decided; say what was done, or fail. */
static int
forced_started(struct raid_array *a)
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

/* ---- assembly in phases: gather, decide, write ------------------------------- */

/* What assembly learns from the members' superblocks and decides from them
 * (phases 1 and 2); nothing is written before phase 3. */
struct assembly {
  struct raid_member *const *members;   /* the caller's, N of them */
  unsigned n, flags;
  const char *name;                     /* the caller's name, or NULL */
  const char *aname;                    /* the array's name */
  struct raid_superblock *sbs;          /* each member's */
  struct raid_superblock *fresh;        /* the freshest: the truth about roles */
  unsigned best;                        /* its index */
  char uuid[40];
  /* The roles: each role's member, its data offset and recovery point
   * (UINT64_MAX: in sync); a replacement per role (index + 1) and how far
   * it got; spares; which members are used. */
  struct raid_member *slots[RAID_MAX_MEMBERS];
  uint64_t moff[RAID_MAX_MEMBERS];
  uint64_t recov[RAID_MAX_MEMBERS], repl_off[RAID_MAX_MEMBERS];
  unsigned repl_idx[RAID_MAX_MEMBERS], spare_idx[RAID_MAX_MEMBERS], nspares;
  bool used[RAID_MAX_MEMBERS];
  unsigned found, expected;             /* active members present, were active */
  struct behind *b;                     /* members behind: forced assembly */
  unsigned nb, nforced;
  struct raid_bitmap_super fresh_bsb;   /* the bitmap's superblock, if any */
  bool have_bsb;
  struct raid_config cfg;
};

/* Phase 1: the arguments, then every member's superblock. */
static int
asm_gather(struct assembly *x)
{
  unsigned i, j;

  if (x->flags & ~(RAID_ASSEMBLE_RUN | RAID_ASSEMBLE_FORCE))
    return set_error(EINVAL, "assemble: unknown flags 0x%x", x->flags);
  if (x->n == 0 || x->n > RAID_MAX_MEMBERS)
    return set_error(EINVAL, "assemble %s: %u members given: must be 1 to %u",
                     x->name ? x->name : "", x->n, RAID_MAX_MEMBERS);
  for (i = 0; i < x->n; i++)
    for (j = 0; j < i; j++)
      if (x->members[i] == x->members[j] ||
          strcmp(x->members[i]->name, x->members[j]->name) == 0)
        return set_error(EINVAL, "assemble %s: member %s is given twice",
                         x->name ? x->name : "", x->members[i]->name);
  x->sbs = calloc(x->n, sizeof *x->sbs);
  x->b = calloc(x->n, sizeof *x->b);
  if (x->sbs == NULL || x->b == NULL)
    return set_error(ENOMEM, "assemble: out of memory");
  for (i = 0; i < x->n; i++) {
    int r = raid_superblock_read(x->members[i], &x->sbs[i]);
    if (r < 0)
      return r;
  }
  return 0;
}

/* Phase 2a: one set, the set UUID most members carry (the others are
 * foreign); its freshest superblock, which must describe an array we run. */
static int
asm_one_set(struct assembly *x)
{
  struct raid_member *const *members = x->members;
  const struct raid_superblock *sbs = x->sbs;
  unsigned votes, top = 0, top_i = 0, tie = 0, i, j;
  bool seen[RAID_MAX_MEMBERS] = { false };
  char uuid2[40];

  for (i = 0; i < x->n; i++) {
    votes = 0;
    for (j = 0; j < x->n; j++)
      votes += memcmp(sbs[i].set_uuid, sbs[j].set_uuid, 16) == 0;
    if (votes > top) { top = votes; top_i = i; tie = 0; }
    else if (votes == top && memcmp(sbs[i].set_uuid, sbs[top_i].set_uuid, 16) != 0)
      tie = i + 1;
  }
  if (tie) {
    format_uuid(sbs[top_i].set_uuid, x->uuid);
    format_uuid(sbs[tie - 1].set_uuid, uuid2);
    return set_error(EINVAL, "assemble: the members belong to different arrays "
                     "(%s is in %s, %s is in %s)", members[top_i]->name, x->uuid,
                     members[tie - 1]->name, uuid2);
  }
  for (i = 0; i < x->n; i++)
    if (memcmp(sbs[i].set_uuid, sbs[top_i].set_uuid, 16) != 0) {
      format_uuid(sbs[i].set_uuid, x->uuid);
      format_uuid(sbs[top_i].set_uuid, uuid2);
      return set_error(EINVAL, "assemble: member %s belongs to another array "
                       "(UUID %s, name %s), not to %s (%s)", members[i]->name,
                       x->uuid, sbs[i].set_name, uuid2, sbs[top_i].set_name);
    }

  for (i = 1; i < x->n; i++)
    if (sbs[i].events > sbs[x->best].events)
      x->best = i;
  x->fresh = &x->sbs[x->best];
  x->aname = x->name ? x->name : short_name(x->fresh->set_name);
  format_uuid(x->fresh->set_uuid, x->uuid);
  if (!level_supported(x->fresh->level))
    return set_error(EINVAL, "assemble %s: RAID level %d is not supported (0, 1, "
                     "5 and 10 are)", x->aname, x->fresh->level);
  if (x->fresh->raid_disks > RAID_MAX_MEMBERS)
    return set_error(EINVAL, "assemble %s: %u members is more than %u",
                     x->aname, x->fresh->raid_disks, RAID_MAX_MEMBERS);
  for (i = 0; i < x->fresh->max_dev; i++)
    if (x->fresh->dev_roles[i] < x->fresh->raid_disks && !seen[x->fresh->dev_roles[i]]) {
      seen[x->fresh->dev_roles[i]] = true;
      x->expected++;
    }
  return 0;
}

/* Phase 2b: each member's place by the freshest superblock: a role (in
 * sync, recovering, or replacing it), a spare, or left out (faulty,
 * stale: remembered in x->b for forced assembly).  Fills in what the
 * member structures carry of their superblocks. */
static int
asm_place(struct assembly *x)
{
  struct raid_member *const *members = x->members;
  const struct raid_superblock *fresh = x->fresh;
  uint64_t rec;
  unsigned i;

  for (i = 0; i < x->n; i++) {
    struct raid_superblock *sb = &x->sbs[i];
    unsigned role = sb->dev_number < fresh->max_dev
      ? fresh->dev_roles[sb->dev_number] : RAID_SB_ROLE_SPARE;
    uint64_t fill_rec = 0;
    bool filled;

    /* A member whose superblock is older and says another size or number
     * of roles missed a grow's update: a crash came while the superblocks
     * were being written, one after the other, before the array served
     * anything of its new shape (lib/grow.c).  Just that update behind,
     * it is taken with the freshest's geometry (below, if it has the
     * room); further behind it is stale, as any member that is.  Other
     * disagreements refuse the array, as mdadm does. */
    if (missed_reshape_start(sb, fresh, role) || missed_reshape_finish(sb, fresh, role))
      raid_log(RAID_LOG_INFO, "%s: member %s missed the superblock update that %s the "
               "reshape; taken as the freshest says", x->aname, members[i]->name,
               fresh->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE ? "started" : "ended");
    if (!same_geometry(sb, fresh)) {
      bool grown = (same_layout(sb, fresh) || takeover(sb, fresh)) &&
        sb->events < fresh->events;

      if (!grown)
        return set_error(EINVAL, "assemble %s: member %s disagrees with the freshest "
                         "superblock (on %s) about the array's geometry",
                         x->aname, members[i]->name, members[x->best]->name);
      if (!raid_superblock_one_behind(sb, fresh) ||
          members[i]->size < (sb->data_offset + fresh->size) << SECTOR_SHIFT) {
        raid_log(RAID_LOG_WARNING, "%s: member %s is stale: it missed the change of "
                 "the array's size or members (events %" PRIu64 " < %" PRIu64 "); not "
                 "used, add it again to rebuild it", x->aname, members[i]->name,
                 sb->events, fresh->events);
        continue;
      }
      raid_log(RAID_LOG_INFO, "%s: member %s missed the last superblock update (the "
               "array's new size, members or level); taken as the freshest says", x->aname,
               members[i]->name);
      sb->size = fresh->size;
      sb->raid_disks = fresh->raid_disks;
      sb->level = fresh->level;
      sb->layout = fresh->layout;
      sb->chunksize = fresh->chunksize;
      if (sb->data_size < fresh->size)
        sb->data_size = (members[i]->size >> SECTOR_SHIFT) - sb->data_offset;
    }
    if (raid_superblock_version(sb) != raid_superblock_version(fresh))
      return set_error(EINVAL, "assemble %s: member %s has metadata %s, the freshest "
                       "superblock (on %s) has %s", x->aname, members[i]->name,
                       raid_metadata_name(raid_superblock_version(sb)),
                       members[x->best]->name,
                       raid_metadata_name(raid_superblock_version(fresh)));
    members[i]->dev_number = sb->dev_number;
    members[i]->super_offset = sb->super_offset;
    memcpy(members[i]->dev_uuid, sb->device_uuid, 16);
    members[i]->data_offset = sb->data_offset << SECTOR_SHIFT;
    members[i]->data_size = sb->data_size;
    members[i]->write_mostly = sb->devflags & RAID_SB_DEVFLAG_WRITE_MOSTLY;
    if (role == RAID_SB_ROLE_FAULTY) {
      raid_log(RAID_LOG_WARNING, "%s: member %s is marked faulty in the array "
               "(events %" PRIu64 "); not used", x->aname, members[i]->name,
               fresh->events);
      if (sb->events < fresh->events)
        x->b[x->nb++] = (struct behind){ .idx = i, .faulty = true,
                                         .role = sb->dev_number < sb->max_dev
                                           ? sb->dev_roles[sb->dev_number]
                                           : RAID_SB_ROLE_SPARE };
      continue;
    }
    if (role >= fresh->raid_disks) {
      if (x->nspares < RAID_MAX_MEMBERS) {
        x->spare_idx[x->nspares++] = i;
        x->used[i] = true;
      }
      continue;
    }
    filled = filled_one_behind(sb, fresh, role, &fill_rec);
    if (sb->events < fresh->events && !filled && !raid_superblock_one_behind(sb, fresh)) {
      raid_log(RAID_LOG_WARNING, "%s: member %s (role %u) is stale: events "
               "%" PRIu64 " < %" PRIu64 "; not used, add it again to rebuild it",
               x->aname, members[i]->name, role, sb->events, fresh->events);
      x->b[x->nb++] = (struct behind){ .idx = i, .role = role };
      continue;
    }
    /* A recovery point past the data is "done" (md: recovery_offset at or
     * beyond the size): clamped before it is turned into bytes, so that no
     * on-disk value wraps around. */
    rec = (sb->feature_map & RAID_SB_FEATURE_RECOVERY_OFFSET)
      ? MIN(filled ? fill_rec : sb->recovery_offset, sb->data_size) : RAID_SB_MAX_SECTOR;
    if (sb->feature_map & RAID_SB_FEATURE_REPLACEMENT) {
      if (x->repl_idx[role])
        return set_error(EINVAL, "assemble %s: members %s and %s both replace role %u",
                         x->aname, members[x->repl_idx[role] - 1]->name,
                         members[i]->name, role);
      x->repl_idx[role] = i + 1;
      x->repl_off[role] = rec == RAID_SB_MAX_SECTOR ? 0 : rec << SECTOR_SHIFT;
      x->used[i] = true;
      continue;
    }
    if (x->slots[role])
      return set_error(EINVAL, "assemble %s: members %s and %s both claim role %u",
                       x->aname, x->slots[role]->name, members[i]->name, role);
    x->slots[role] = members[i];
    x->moff[role] = sb->data_offset << SECTOR_SHIFT;
    x->recov[role] = rec == RAID_SB_MAX_SECTOR ? UINT64_MAX : rec << SECTOR_SHIFT;
    x->used[i] = true;
    x->found++;
  }
  /* A replacement whose role has no member left carries on as that role's
   * recovering member, as md does when the replaced member fails. */
  for (i = 0; i < fresh->raid_disks; i++)
    if (x->repl_idx[i] && x->slots[i] == NULL) {
      x->slots[i] = members[x->repl_idx[i] - 1];
      x->moff[i] = x->slots[i]->data_offset;
      x->recov[i] = x->repl_off[i];
      x->repl_idx[i] = 0;
      x->found++;
    }
  return 0;
}

/* Phase 2c: too few to run: members behind may be forced back (see
 * "forced assembly" above). */
static int
asm_force(struct assembly *x)
{
  bool have[RAID_MAX_MEMBERS], works;
  unsigned i, j;

  for (i = 0; i < RAID_MAX_MEMBERS; i++)
    have[i] = i < x->fresh->raid_disks && x->slots[i] && x->recov[i] == UINT64_MAX;
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

/* Phase 2d: md's internal bitmap: every member used must carry a good one
 * (md's md_bitmap_read_sb() checks, and the array's UUID), at the place
 * the freshest superblock says. */
static int
asm_bitmaps(struct assembly *x)
{
  unsigned i;
  int r;

  if (!(x->fresh->feature_map & RAID_SB_FEATURE_BITMAP))
    return 0;
  if (x->fresh->level == RAID_LEVEL_0)
    return set_error(EINVAL, "assemble %s: the superblocks give a RAID 0 a "
                     "write-intent bitmap, which md never makes", x->aname);
  for (i = 0; i < x->n; i++) {
    struct raid_bitmap_super bsb;

    if (!x->used[i])
      continue;
    r = bitmap_load(x->members[i], &x->sbs[i], x->fresh->bitmap_offset, &bsb, NULL, NULL);
    if (r < 0)
      return set_error(-r, "assemble %s: %s", x->aname, raid_get_error());
    if (i == x->best || !x->have_bsb) {
      x->fresh_bsb = bsb;
      x->have_bsb = true;
    }
  }
  return 0;
}

/* Phase 2e: the array's configuration from the freshest superblock, and
 * whether it may start with the members present. */
static int asm_reshape_check(struct assembly *x);

static int
asm_config(struct assembly *x)
{
  const struct raid_superblock *fresh = x->fresh;
  struct raid_config *cfg = &x->cfg;

  /* Sizes from the disk are checked in 64 bits before they become a
   * 32-bit chunk size (0x800008 sectors would wrap to 4 KiB). */
  if (fresh->level != RAID_LEVEL_1 &&
      (fresh->chunksize == 0 ||
       (uint64_t)fresh->chunksize << SECTOR_SHIFT > RAID_CHUNK_MAX))
    return set_error(EINVAL, "assemble %s: chunk size of %" PRIu32 " sectors is %s "
                     "(libraid supports %u to %u bytes)", x->aname, fresh->chunksize,
                     fresh->chunksize ? "too large" : "invalid", RAID_CHUNK_MIN,
                     RAID_CHUNK_MAX);
  memset(cfg, 0, sizeof *cfg);
  cfg->name = x->aname;
  cfg->level = fresh->level;
  cfg->layout = fresh->level == RAID_LEVEL_5 || fresh->level == RAID_LEVEL_10
    ? (int)fresh->layout : RAID_LAYOUT_DEFAULT;
  cfg->chunk_size = fresh->level == RAID_LEVEL_1 ? 0
    : (uint32_t)((uint64_t)fresh->chunksize << SECTOR_SHIFT);
  cfg->raid_disks = fresh->raid_disks;
  cfg->member_size = fresh->size << SECTOR_SHIFT;
  cfg->metadata = raid_superblock_version(fresh);
  if (x->found < x->expected && !(x->flags & RAID_ASSEMBLE_RUN))
    return set_error(EINVAL, "assemble %s: only %u of the %u members that were "
                     "active are present; refusing to start degraded without "
                     "--run", x->aname, x->found, x->expected);
  return asm_reshape_check(x);
}

/* A reshape under way (md's RESHAPE_ACTIVE): the one raidd can resume is
 * its own kind, a RAID 5 restriped over more members or to another layout
 * or chunk, or a RAID 10 over more members or to another chunk, forwards,
 * with the data offset moved earlier (mdadm 4.x's way, no backup file),
 * every member's new offset the same.  Anything else is refused, naming
 * what. */
static int
asm_reshape_check(struct assembly *x)
{
  const struct raid_superblock *f = x->fresh;
  uint64_t unit, cmax, rows, chunks;
  struct raid_geo geo;
  unsigned i, least;

  if (!(f->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE))
    return 0;
  if ((f->level != RAID_LEVEL_5 && f->level != RAID_LEVEL_10) || f->new_level != f->level)
    return set_error(ENOTSUP, "assemble %s: a reshape from RAID %d to RAID %d is under "
                     "way, and raidd can resume only a RAID 5's or a RAID 10's reshape "
                     "over more members or to another layout or chunk: finish it with "
                     "mdadm", x->aname, f->level, f->new_level);
  if ((f->level == RAID_LEVEL_5 ? !RAID5_LAYOUT_VALID(f->new_layout)
       : f->new_layout != f->layout) ||
      !CHUNK_SIZE_VALID((uint64_t)f->new_chunk << SECTOR_SHIFT) ||
      f->size % f->new_chunk)
    return set_error(EINVAL, "assemble %s: the reshape's new layout %" PRIu32 " and "
                     "chunk of %" PRIu32 " sectors are not a RAID %d shape raidd knows "
                     "for members of %" PRIu64 " sectors", x->aname, f->new_layout,
                     f->new_chunk, f->level, f->size);
  least = f->level == RAID_LEVEL_5 ? 2 : f->layout & 0xff;
  if (f->delta_disks < 0 || (uint32_t)f->delta_disks >= f->raid_disks ||
      f->raid_disks - (uint32_t)f->delta_disks < least)
    return set_error(ENOTSUP, "assemble %s: a reshape by %d members (to %u) is under "
                     "way, and raidd can resume only one over as many or more members: "
                     "finish it with mdadm", x->aname, f->delta_disks, f->raid_disks);
  if (f->feature_map & RAID_SB_FEATURE_RESHAPE_BACKWARDS)
    return set_error(ENOTSUP, "assemble %s: a backwards reshape is under way, which "
                     "raidd cannot resume: finish it with mdadm", x->aname);
  cmax = MAX(f->chunksize, f->new_chunk);
  for (i = 0; i < x->n; i++) {
    const struct raid_superblock *sb = &x->sbs[i];

    if (!x->used[i] || sb->dev_number >= f->max_dev ||
        f->dev_roles[sb->dev_number] >= f->raid_disks)
      continue;
    if (!(sb->feature_map & RAID_SB_FEATURE_NEW_OFFSET) || sb->new_offset >= 0 ||
        sb->new_offset != x->sbs[x->best].new_offset)
      return set_error(ENOTSUP, "assemble %s: member %s's reshape %s, and raidd resumes "
                       "only reshapes that move every member's data offset earlier by "
                       "the same (mdadm 4.x's way): finish it with mdadm", x->aname,
                       x->members[i]->name,
                       sb->feature_map & RAID_SB_FEATURE_NEW_OFFSET
                         ? "moves its data offset otherwise than the others'"
                         : "keeps its data offset (a backup file holds the critical part)");
    if ((sb->data_offset - (uint64_t)-(int64_t)sb->new_offset) <
        sb->super_offset + RAID_SB_BYTES / RAID_SECTOR_SIZE)
      return set_error(EINVAL, "assemble %s: member %s: the reshape's new data offset "
                       "(%" PRId32 " sectors from %" PRIu64 ") lies on the superblock",
                       x->aname, x->members[i]->name, sb->new_offset, sb->data_offset);
    /* The new shape starts at least a chunk before the old (over as many
     * members, md refuses less too: an "in-place reshape"). */
    if ((uint64_t)-(int64_t)sb->new_offset < cmax)
      return set_error(ENOTSUP, "assemble %s: member %s: the reshape moves the data "
                       "offset %" PRId32 " sectors, less than a chunk of %" PRIu64
                       " (a backup file holds the rest): finish it with mdadm", x->aname,
                       x->members[i]->name, -sb->new_offset, cmax);
  }
  /* md's raid5_run(): on whole rows of the new shape over the larger
   * chunk (sync/reshape.c's unit), or at its end. */
  geo = (struct raid_geo){ .raid_disks = f->raid_disks, .chunk_size = f->new_chunk };
  geo_row_unit((int)f->level, f->layout & 0xff, &geo, &rows, &chunks);
  unit = cmax * chunks;
  if (f->reshape_position % unit &&
      f->reshape_position != sb_data_sectors(f, f->raid_disks, f->new_chunk))
    return set_error(EINVAL, "assemble %s: reshape_position %" PRIu64 " is not on a "
                     "stripe of the new layout (%" PRIu64 " sectors)", x->aname,
                     f->reshape_position, unit);
  return 0;
}

/* The array in the middle of its reshape: the old shape from the
 * checkpoint on, the new one below it, the old size until it is done. */
static void
asm_reshape_setup(struct assembly *x, struct raid_array *a)
{
  const struct raid_superblock *f = x->fresh;
  struct raid_geo *o = &a->geo[0], *g = &a->geo[1];

  if (!(f->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE))
    return;
  *g = *o;
  o->raid_disks = f->raid_disks - (uint32_t)f->delta_disks;
  g->layout = (int)f->new_layout;
  g->chunk_sectors = f->new_chunk;
  g->chunk_size = f->new_chunk << SECTOR_SHIFT;
  g->shift = (uint64_t)((int64_t)x->sbs[x->best].new_offset * RAID_SECTOR_SIZE);
  g->space = 1;
  a->geo_old = o;
  a->geo_new = g;
  atomic_store(&a->size, geo_data_size(a->level, a->copies, o, a->member_size));
  atomic_store(&a->reshape_pos, f->reshape_position << SECTOR_SHIFT);
  /* Served by both shapes, either side of the checkpoint, from the start
   * (the engine moves the window when it goes on). */
  array_window_open(a, f->reshape_position << SECTOR_SHIFT,
                    f->reshape_position << SECTOR_SHIFT);
  raid_log(RAID_LOG_INFO, "%s %s: a reshape from %u to %u members (layout %d to %d, "
           "chunk %" PRIu32 " to %" PRIu32 " KiB) is under way, at byte %" PRIu64 ": it "
           "goes on", a->pers->name, a->name, o->raid_disks, g->raid_disks, o->layout,
           g->layout, o->chunk_size >> 10, g->chunk_size >> 10,
           f->reshape_position << SECTOR_SHIFT);
}

/* Give an array that will not start its members back (still the
 * caller's) and free it. */
static void
asm_drop(struct raid_array *a)
{
  unsigned i;

  for (i = 0; i < a->raid_disks; i++)
    a->members[i] = NULL;
  raid_array_free(a);
}

/* The write hole needs parity: none when every role not holding data is
 * a parity role, in each shape the array is served by (both during a
 * reshape).  So a RAID 5 in the parity-last layout missing its parity
 * role alone (a RAID 0 taken over, or restriped: the old shape's parity
 * role is then the one being filled, a data role of the new shape)
 * starts dirty without --force: every row is data alone, as a RAID 0's.
 * (md counts only members present as parity-only, so md itself wants
 * mdadm --assemble --force for such an array stopped dirty.) */
static bool
parity_alone_missing(const struct raid_array *a)
{
  const struct raid_geo *shapes[2] = { a->geo_old, a->geo_new };
  unsigned k, i, n = 2;

  if (a->geo_new == NULL) {
    shapes[0] = atomic_load(&a->geo_now);
    n = 1;
  }
  for (k = 0; k < n; k++) {
    unsigned p = shapes[k]->raid_disks - 1;

    if (shapes[k]->layout != RAID_LAYOUT_PARITY_LAST ||
        atomic_load(&a->state[p]) == RAID_MEMBER_IN_SYNC)
      return false;
    for (i = 0; i < p; i++) {
      int st = atomic_load(&a->state[i]);

      if (st != RAID_MEMBER_IN_SYNC && !(k == 1 && st == RAID_MEMBER_RECOVERING))
        return false;
    }
  }
  return true;
}

/* Phase 2f: the array in memory (nothing written yet), refused when too
 * few members are in sync, or when it is a RAID 5 stopped dirty and now
 * degraded (the write hole) without RAID_ASSEMBLE_FORCE. */
static int
asm_build(struct assembly *x, struct raid_array **ap)
{
  struct raid_array *a;
  unsigned i;
  int r;

  r = array_new(&x->cfg, x->slots, x->moff, &a);
  if (r < 0)
    return r;
  asm_reshape_setup(x, a);
  /* Recovering members hold data only below their recovery offset. */
  for (i = 0; i < a->raid_disks; i++)
    if (x->slots[i] && x->recov[i] != UINT64_MAX) {
      uint64_t done = MIN(x->recov[i], a->member_size);
      atomic_store(&a->recovered[i], done);
      atomic_store(&a->state[i], RAID_MEMBER_RECOVERING);
      raid_log(RAID_LOG_WARNING, "%s %s: member %s (role %u) is being rebuilt: "
               "%" PRIu64 " of %" PRIu64 " bytes done", a->pers->name, a->name,
               x->slots[i]->name, i, done, a->member_size);
    }
  /* A role that a reshape to more members fills (a RAID 0 restriped as a
   * RAID 5 missing its parity role, sync/reshape.c) holds the new shape's
   * rows below the checkpoint, no more: md records its recovery point at
   * checkpoints only, and a superblock written between two may say more. */
  if (a->geo_new && a->geo_new->raid_disks > a->geo_old->raid_disks) {
    uint64_t front = geo_member_front(a->level, a->copies, a->geo_new,
                                      atomic_load(&a->reshape_pos));

    for (i = 0; i < a->raid_disks; i++)
      if (atomic_load(&a->state[i]) == RAID_MEMBER_RECOVERING &&
          atomic_load(&a->recovered[i]) > front)
        atomic_store(&a->recovered[i], front);
  }
  roles_count_locked(a);
  if (!a->pers->enough(a)) {
    r = set_error(EINVAL, "assemble %s: too few members are in sync: %u of %u "
                  "roles are missing or still being rebuilt, %s tolerates %u",
                  x->aname, raid_array_degraded(a), a->raid_disks, a->pers->name,
                  a->pers->max_degraded(a));
    asm_drop(a);
    return r;
  }
  if (a->level == RAID_LEVEL_5 && x->fresh->resync_offset != RAID_SB_MAX_SECTOR &&
      raid_array_degraded(a) > 0 && !(x->flags & RAID_ASSEMBLE_FORCE) &&
      !parity_alone_missing(a)) {
    r = dirty_degraded_error(a, x->fresh);
    asm_drop(a);
    return r;
  }
  *ap = a;
  return 0;
}

/* Does A's data reach, on some member, into the room md keeps below a
 * metadata 1.0 superblock for a bitmap and a bad block log
 * (meta_grow_end())?  Our 1.0 arrays made before we kept it do: md's
 * --grow --size max would shrink them to its room. */
static bool
in_md_room(const struct raid_array *a)
{
  unsigned i;

  for (i = 0; i < a->raid_disks; i++)
    if (a->members[i] && a->moff[i] + a->member_size > meta_grow_end(a, a->members[i]->size))
      return true;
  return false;
}

/* Phase 2g: the metadata A keeps (the freshest superblock, the bitmap
 * image with the freshest member's bits, the members awaited, the resync
 * state, what was forced), and its replacements and spares.  Reads the
 * freshest member's bitmap; writes nothing. */
static int
asm_meta(struct assembly *x, struct raid_array *a)
{
  const struct raid_superblock *fresh = x->fresh;
  struct array_meta *m = calloc(1, sizeof *m);
  unsigned i, j;
  int r;

  if (m == NULL) {
    asm_drop(a);
    return set_error(ENOMEM, "assemble %s: out of memory", x->aname);
  }
  pthread_mutex_init(&m->lock, NULL);
  m->sb = *fresh;
  /* Seconds only, as md writes it (md_time()): our arrays made before
   * that kept microseconds in the top 24 bits, which md's grow refuses
   * (EINVAL); the next superblock update drops them, the creation time
   * stays.  Not while the data reaches into md's room below a 1.0
   * superblock: there md's grow is better refused than shrinking the
   * array. */
  if (!in_md_room(a))
    m->sb.ctime &= (UINT64_C(1) << 40) - 1;
  m->sb.max_dev = MAX(fresh->max_dev, a->raid_disks);
  a->meta = m;
  if (x->have_bsb) {
    /* As md does, the bitmap covers this array's resync range, whatever
     * sync_size said; its place must still hold it. */
    x->fresh_bsb.sync_size = bitmap_sync_size(a);
    a->bitmap = true;
    r = bitmap_new(&x->fresh_bsb, fresh->bitmap_offset, &m->bm);
    if (r == 0)
      r = bitmap_check_place(fresh, m->bm->offset, m->bm->area,
                             x->members[x->best]->name);
    if (r == 0) {
      /* The bits of the freshest member: the chunks that may disagree. */
      struct raid_bitmap_super bsb;
      uint8_t *area = NULL;
      uint64_t len = 0;

      r = bitmap_load(x->members[x->best], &x->sbs[x->best], fresh->bitmap_offset,
                      &bsb, &area, &len);
      if (r == 0)
        bitmap_load_bits(m->bm, area, len);
      raid_buf_free(area);
    }
    if (r < 0) {
      r = set_error(-r, "assemble %s: %s", x->aname, raid_get_error());
      assembly_undo(a);
      return r;
    }
  }
  for (i = 0; i < fresh->max_dev && i < RAID_SB_MAX_DEV; i++)
    m->awaited[i] = fresh->dev_roles[i] < fresh->raid_disks;
  for (i = 0; i < x->n; i++)
    if (x->used[i] && x->sbs[i].dev_number < RAID_SB_MAX_DEV)
      m->awaited[x->sbs[i].dev_number] = false;
  m->needs_resync = fresh->resync_offset != RAID_SB_MAX_SECTOR &&
    a->level != RAID_LEVEL_0;
  m->resync_done = m->needs_resync
    ? MIN(fresh->resync_offset, a->member_size >> SECTOR_SHIFT) << SECTOR_SHIFT
    : a->member_size;
  /* Forced: writes in flight when they left may be on some members only;
   * the whole array is resynced (unclean, as mdadm leaves it). */
  if (x->nforced && a->level != RAID_LEVEL_0) {
    m->needs_resync = true;
    m->resync_done = 0;
    /* A member taken back by force may miss more than the bits say. */
    if (m->bm)
      bitmap_set_all(m->bm, true);
  }
  /* Forced to start a RAID 5 that is degraded and unclean: its parity is
   * taken as it is, but the rows that may disagree stay marked (issue 33):
   * the bitmap's dirty bits, or the whole array without one (the resync
   * point stays, so md sees "not clean" too).  A degraded RAID 5 has
   * nothing to resync (the engine waits, as md does); once the rebuild
   * has made it whole again, the resync of the marked rows runs (rows
   * below a recovering member's offset that the crash cut short are not
   * made right by the rebuild).  Until then every start needs --force,
   * as md's does (start_dirty_degraded). */
  if (a->level == RAID_LEVEL_5 && (x->flags & RAID_ASSEMBLE_FORCE) && m->needs_resync &&
      raid_array_degraded(a) > 0)
    raid_log(RAID_LOG_WARNING, "%s %s: starting dirty degraded array (forced): rows "
             "being written when it stopped or lost members may read back wrong "
             "where the missing data comes from parity; they stay marked and are "
             "resynced after the rebuild", a->pers->name, a->name);
  for (j = 0; j < x->nb; j++)
    if (x->b[j].taken)
      m->forced[m->nforced++] = (struct raid_forced_member){
        .name = x->members[x->b[j].idx]->name, .role = x->b[j].role,
        .events_from = x->sbs[x->b[j].idx].events, .was_faulty = x->b[j].faulty };
  /* As in create, beyond the resync point mirrors read the first copy. */
  if (m->needs_resync)
    atomic_store(&a->resync_front, m->resync_done);
  for (i = 0; i < a->raid_disks; i++)
    if (x->repl_idx[i]) {
      struct raid_member *rm = x->members[x->repl_idx[i] - 1];
      atomic_store(&a->repl_done[i], MIN(x->repl_off[i], a->member_size));
      atomic_store(&a->repl[i], rm);
      raid_log(RAID_LOG_INFO, "%s %s: member %s is replacing %s (role %u)",
               a->pers->name, a->name, rm->name, a->members[i] ? a->members[i]->name
               : "(missing)", i);
    }
  for (i = 0; i < x->nspares; i++)
    a->spares[a->nspares++] = x->members[x->spare_idx[i]];
  if (m->needs_resync && !x->nforced && m->resync_done == 0)
    raid_log(RAID_LOG_WARNING, "%s %s: the array needs a resync (new, or not "
             "stopped cleanly); parity or mirrors may disagree until then",
             a->pers->name, a->name);
  else if (m->needs_resync && !x->nforced)
    /* Stopped cleanly in the middle of a resync: it goes on from the
     * checkpoint the superblocks keep, as md's resync_offset does. */
    raid_log(RAID_LOG_WARNING, "%s %s: the array's resync was interrupted at byte "
             "%" PRIu64 " of %" PRIu64 " per member; parity or mirrors beyond it "
             "may disagree until it resumes and ends", a->pers->name, a->name,
             m->resync_done, a->member_size);
  return 0;
}

/* Phase 3: write.  The superblocks say "active" with the array's next
 * events (and the forced members' roles back), then the members the array
 * does not use are closed: it owns every member now. */
static int
asm_write(struct assembly *x, struct raid_array *a)
{
  unsigned i;
  int r;

  r = meta_start(a);
  if (r == 0 && x->nforced)
    r = forced_started(a);
  if (r < 0) {
    assembly_undo(a);
    return r;
  }
  for (i = 0; i < x->n; i++)
    if (!x->used[i])
      raid_member_close(x->members[i]);
  return 0;
}

EXPORT int
raid_array_assemble(const char *name, struct raid_member *const *members,
                    unsigned n, unsigned flags, struct raid_array **arrayp)
{
  struct assembly *x = calloc(1, sizeof *x);
  struct raid_array *a = NULL;
  int r;

  *arrayp = NULL;
  if (x == NULL)
    return set_error(ENOMEM, "assemble: out of memory");
  x->members = members;
  x->n = n;
  x->flags = flags;
  x->name = name;
  /* Gather and decide: nothing is written (check, then write). */
  if ((r = asm_gather(x)) == 0 && (r = asm_one_set(x)) == 0 &&
      (r = asm_place(x)) == 0 && (r = asm_force(x)) == 0 &&
      (r = asm_bitmaps(x)) == 0 && (r = asm_config(x)) == 0 &&
      (r = asm_build(x, &a)) == 0 && (r = asm_meta(x, a)) == 0 &&
      (r = asm_write(x, a)) == 0)
    *arrayp = a;
  free(x->sbs);
  free(x->b);
  free(x);
  return r;
}
