/* Membership changes while the array runs: add (into a degraded role, or
 * as a hot spare), remove, replace, and listing the members.
 *
 * Roles change under conf_lock by the rules of "Roles and members" in
 * roles.c: a member goes into a role only while the role is unusable
 * (FAULTY or MISSING), and requests that bound the old member keep it.
 * Members leave the array only here: taken out of every role and list,
 * then closed once a grace period (array_quiesce()) has passed, so that
 * no request, completion or sync step can still touch them; and once any
 * superblock update that listed them is over.  Every change is written to
 * the superblocks of every live member (events bumped), as md does.
 * These functions run on a control thread, never on a thread that runs a
 * queue with requests of the array in flight.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "top.h"
#include "md/meta.h"
#include "sync/engine.h"


struct info_list {
  struct raid_member_info *info;
  unsigned n, max;
};

static void
put_info(struct raid_member *m, int role, int state, uint64_t rec, void *opaque)
{
  struct info_list *l = opaque;

  if (l->n < l->max) {
    l->info[l->n] = (struct raid_member_info){ .role = role, .state = state };
    if (m) {
      l->info[l->n].name = m->name;
      l->info[l->n].kind = m->ops->kind;
      l->info[l->n].recovery_offset = rec;
      l->info[l->n].direct = m->direct;
      l->info[l->n].devnum = m->devnum;
      l->info[l->n].write_mostly = m->write_mostly;
      l->info[l->n].lost = m->ops->lost && m->ops->lost(m);
    }
  }
  l->n++;
}

EXPORT unsigned
raid_array_members(struct raid_array *a, struct raid_member_info *info, unsigned max)
{
  struct info_list l = { info, 0, max };

  array_walk_members(a, put_info, &l);
  return l.n;
}

/* Where member NAME is: its role, or its index among the spares or the
 * retired members.  Caller holds conf_lock. */
enum where { W_NONE, W_ROLE, W_REPL, W_SPARE, W_RETIRED };

static enum where
locate(struct raid_array *a, const char *name, unsigned *idx)
{
  struct raid_member *x;
  unsigned i;

  for (i = 0; i < a->raid_disks; i++) {
    struct raid_member *m = atomic_load(&a->members[i]);
    if (m && strcmp(m->name, name) == 0) { *idx = i; return W_ROLE; }
    m = atomic_load(&a->repl[i]);
    if (m && strcmp(m->name, name) == 0) { *idx = i; return W_REPL; }
  }
  for (i = 0; i < a->nspares; i++)
    if (strcmp(a->spares[i]->name, name) == 0) { *idx = i; return W_SPARE; }
  for (x = a->retired, i = 0; x; x = x->retired_next, i++)
    if (strcmp(x->name, name) == 0) { *idx = i; return W_RETIRED; }
  return W_NONE;
}

EXPORT int
raid_array_find_member(struct raid_array *a, const char *name, int *rolep)
{
  unsigned idx;
  enum where w;

  pthread_mutex_lock(&a->conf_lock);
  w = locate(a, name, &idx);
  pthread_mutex_unlock(&a->conf_lock);
  switch (w) {
  case W_ROLE: case W_REPL: *rolep = (int)idx; return 0;
  case W_SPARE: case W_RETIRED: *rolep = -1; return 0;
  default:
    return set_error(ENOENT, "array %s has no member %s", a->name, name);
  }
}

int
member_fits(struct raid_array *a, struct raid_member *m, uint64_t data_offset)
{
  if (m->readonly)
    return set_error(EROFS, "array %s: member %s is read-only", a->name, m->name);
  if (m->lbs > a->lbs)
    return set_error(EINVAL, "array %s: member %s has %u-byte logical blocks, "
                     "larger than the array's %u", a->name, m->name, m->lbs, a->lbs);
  if (meta_data_end(a->metadata, meta_bitmap_reserve(a, m->size), m->size) <
      data_offset + a->member_size) {
    /* 1.0: the superblock starts 8 KiB before the end, rounded down to
     * 4 KiB: the data must end before it. */
    uint64_t need = data_offset + a->member_size;

    if (a->metadata == RAID_METADATA_1_0)
      need = (need + 4095) / 4096 * 4096 + 8192 + meta_bitmap_reserve(a, m->size);
    return set_error(ENOSPC, "array %s: member %s is too small: %" PRIu64 " bytes, "
                     "the array needs %" PRIu64 " (data offset %" PRIu64 " + %"
                     PRIu64 "%s)", a->name, m->name, m->size, need, data_offset,
                     a->member_size, a->metadata == RAID_METADATA_1_0
                     ? (a->bitmap ? " + its bitmap and metadata 1.0 superblock at the end"
                        : " + its metadata 1.0 superblock at the end") : "");
  }
  return 0;
}

/* (moff changes under conf_lock, when a replacement takes over in a
 * completion.) */
uint64_t
member_offset_default(struct raid_array *a)
{
  uint64_t off = a->metadata == RAID_METADATA_1_0 ? 0 : RAID_DATA_OFFSET_DEFAULT;
  unsigned i;

  pthread_mutex_lock(&a->conf_lock);
  for (i = 0; i < a->raid_disks; i++)
    if (atomic_load(&a->members[i])) {
      off = a->moff[i];
      break;
    }
  pthread_mutex_unlock(&a->conf_lock);
  return off;
}



EXPORT int
raid_array_add_member(struct raid_array *a, struct raid_member *m, int *rolep)
{
  unsigned idx, s;
  int role = -1, r, back = -1;

  pthread_mutex_lock(&a->conf_lock);
  r = locate(a, m->name, &idx) != W_NONE
    ? set_error(EEXIST, "array %s: %s is already a member", a->name, m->name) : 0;
  pthread_mutex_unlock(&a->conf_lock);
  if (r == 0 && raid_array_is_failed(a))
    r = set_error(EIO, "array %s has failed: a new member cannot bring its data "
                  "back", a->name);
  if (r == 0 && a->level == RAID_LEVEL_0)
    r = set_error(EINVAL, "array %s: RAID 0 has no redundancy: members cannot be "
                  "added to it", a->name);
  if (r == 0) {
    m->data_offset = member_offset_default(a);
    r = member_fits(a, m, m->data_offset);
  }
  /* md's re-add: a member of this array coming back whose writes since
   * it left the bitmap still covers goes back into its role and is
   * rebuilt over the set bits only (meta_bitmap_readd_role()). */
  if (r == 0)
    back = meta_bitmap_readd_role(a, m);
  if (r == 0)
    r = meta_new_member(a, m);
  if (r < 0) {
    raid_member_close(m);
    return r;
  }

  pthread_mutex_lock(&a->conf_lock);
  if (locate(a, m->name, &idx) != W_NONE)
    r = set_error(EEXIST, "array %s: %s is already a member", a->name, m->name);
  if (r == 0 && back >= 0 && role_free_locked(a, (unsigned)back))
    role = back;
  for (s = 0; r == 0 && role < 0 && s < a->raid_disks; s++)
    if (role_free_locked(a, s))
      role = (int)s;
  if (role >= 0) {
    role_install_locked(a, (unsigned)role, m);
    if (role == back)
      atomic_store(&a->bm_readd[role], m);
  }
  if (r == 0 && role < 0) {
    if (a->nspares < RAID_MAX_MEMBERS)
      a->spares[a->nspares++] = m;
    else
      r = set_error(ENOSPC, "array %s: it has %u hot spares already, the most "
                    "it can keep; %s is not added", a->name, a->nspares, m->name);
  }
  pthread_mutex_unlock(&a->conf_lock);
  if (r < 0) {
    raid_member_close(m);
    return r;
  }
  if (role >= 0 && role == back)
    raid_log(RAID_LOG_INFO, "%s %s: re-added %s in role %d; the chunks the "
             "write-intent bitmap marks will be rebuilt", a->pers->name, a->name,
             m->name, role);
  else if (role >= 0)
    raid_log(RAID_LOG_INFO, "%s %s: added %s in role %d; it will be rebuilt",
             a->pers->name, a->name, m->name, role);
  else
    raid_log(RAID_LOG_INFO, "%s %s: added %s as a hot spare", a->pers->name,
             a->name, m->name);
  meta_update(a);
  sync_kick(a);
  *rolep = role;
  return 0;
}


/* Would the array survive losing role SLOT: 1, 0, or -ENOMEM?  Asks
 * enough() about a copy of the states with this role faulty: marking the
 * live role faulty for the question would make the lock-free I/O path
 * skip it meanwhile (reads failing with EIO on a degraded array, writes
 * missing the member) and undo a real failure in that window. */
static int
survives_without(struct raid_array *a, unsigned slot)
{
  struct raid_array *probe = calloc(1, sizeof *probe);
  unsigned i;
  bool ok;

  if (probe == NULL)
    return set_error(ENOMEM, "array %s: out of memory", a->name);
  probe->pers = a->pers;
  probe->level = a->level;
  probe->raid_disks = a->raid_disks;
  probe->copies = a->copies;
  for (i = 0; i < a->raid_disks; i++)
    atomic_init(&probe->state[i], i == slot ? RAID_MEMBER_FAULTY
                                            : atomic_load(&a->state[i]));
  atomic_init(&probe->degraded, atomic_load(&a->degraded) +
              (atomic_load(&a->state[slot]) == RAID_MEMBER_IN_SYNC));
  ok = a->pers->enough(probe);
  free(probe);
  return ok;
}

/* md refuses to fail the last copy of anything (a RAID 0 member, the last
 * mirror in sync, a second RAID 5 member); so do we, naming the roles
 * that are already not in sync: the caller may still insist. */
EXPORT int
raid_array_fail_check(struct raid_array *a, unsigned slot)
{
  struct raid_member *self, *x;
  char why[1024];
  size_t len;
  unsigned i;
  int ok;

  if (slot >= a->raid_disks)
    return set_error(EINVAL, "array %s: no role %u (it has %u)", a->name, slot,
                     a->raid_disks);
  if ((ok = survives_without(a, slot)) != 0)
    return ok < 0 ? ok : 0;
  pthread_mutex_lock(&a->conf_lock);
  self = atomic_load(&a->members[slot]);
  if (a->level == RAID_LEVEL_0)
    snprintf(why, sizeof why, "raid0 has no redundancy: every member holds data");
  else if (a->level == RAID_LEVEL_1)
    snprintf(why, sizeof why, "raid1: it is the last member in sync");
  else {
    len = (size_t)snprintf(why, sizeof why, "%s %s", a->pers->name,
                           a->level == RAID_LEVEL_10 ? "already lost the other copy "
                           "of some of its chunks:" : "already degraded:");
    for (i = 0; i < a->raid_disks && len < sizeof why; i++) {
      int st = atomic_load(&a->state[i]);

      if (i == slot || st == RAID_MEMBER_IN_SYNC)
        continue;
      x = atomic_load(&a->members[i]);
      if (x == NULL || st == RAID_MEMBER_MISSING)
        len += (size_t)snprintf(why + len, sizeof why - len, " role %u missing,", i);
      else
        len += (size_t)snprintf(why + len, sizeof why - len, " member %s (role %u) %s,",
                                x->name, i, st == RAID_MEMBER_RECOVERING
                                ? "still being rebuilt" : "faulty");
    }
    if (len < sizeof why && why[len - 1] == ',')
      why[len - 1] = '\0';
  }
  set_error(EBUSY, "failing %s would leave array %s without its data (%s)",
            self ? self->name : "(missing)", a->name, why);
  pthread_mutex_unlock(&a->conf_lock);
  return -EBUSY;
}

EXPORT int
raid_array_remove_member(struct raid_array *a, const char *name, unsigned flags)
{
  struct raid_member *m = NULL;
  unsigned idx;
  enum where w;
  int st;

  if (flags & ~RAID_REMOVE_FORCE)
    return set_error(EINVAL, "array %s: unknown remove flags 0x%x", a->name, flags);
  pthread_mutex_lock(&a->conf_lock);
  w = locate(a, name, &idx);
  pthread_mutex_unlock(&a->conf_lock);

  if (w == W_ROLE) {
    st = atomic_load(&a->state[idx]);
    if (st == RAID_MEMBER_IN_SYNC || st == RAID_MEMBER_RECOVERING) {
      if (!(flags & RAID_REMOVE_FORCE))
        return set_error(EBUSY, "array %s: member %s (role %u) is %s; fail it "
                         "first, or force the removal", a->name, name, idx,
                         st == RAID_MEMBER_IN_SYNC ? "in sync and holds data"
                                                   : "being rebuilt");
      if (st == RAID_MEMBER_IN_SYNC && a->level != RAID_LEVEL_0) {
        int ok = survives_without(a, idx);

        if (ok < 0)
          return ok;
        if (!ok)
          return set_error(EBUSY, "array %s: removing member %s (role %u) would "
                           "lose data: the array has no other copy of what it "
                           "holds", a->name, name, idx);
      }
      else if (st == RAID_MEMBER_IN_SYNC)
        return set_error(EBUSY, "array %s: member %s holds RAID 0 data and cannot "
                         "be removed", a->name, name);
      array_member_failed(a, idx, NULL, -EIO, 0, NULL);
    }
  }

  pthread_mutex_lock(&a->conf_lock);
  w = locate(a, name, &idx);
  switch (w) {
  case W_NONE:
    pthread_mutex_unlock(&a->conf_lock);
    return set_error(ENOENT, "array %s has no member %s", a->name, name);
  case W_ROLE:
    if (atomic_load(&a->state[idx]) != RAID_MEMBER_FAULTY) {
      pthread_mutex_unlock(&a->conf_lock);
      return set_error(EBUSY, "array %s: member %s changed state; try again",
                       a->name, name);
    }
    /* FAULTY already: unusable with either member. */
    m = atomic_load(&a->members[idx]);
    atomic_store(&a->members[idx], NULL);
    atomic_store(&a->state[idx], RAID_MEMBER_MISSING);
    break;
  case W_REPL:
    m = atomic_load(&a->repl[idx]);
    atomic_store(&a->repl[idx], NULL);
    raid_log(RAID_LOG_WARNING, "%s %s: replacement of role %u by %s abandoned",
             a->pers->name, a->name, idx, name);
    break;
  case W_SPARE:
    m = a->spares[idx];
    memmove(a->spares + idx, a->spares + idx + 1, (--a->nspares - idx) * sizeof *a->spares);
    break;
  case W_RETIRED: {
    struct raid_member **p = &a->retired;

    while (*p && strcmp((*p)->name, name) != 0)
      p = &(*p)->retired_next;
    m = *p;
    *p = m->retired_next;
    a->nretired--;
    break;
  }
  }
  pthread_mutex_unlock(&a->conf_lock);
  raid_log(RAID_LOG_INFO, "%s %s: removed member %s", a->pers->name, a->name, name);
  if (w == W_SPARE || w == W_REPL)
    meta_update(a);
  member_release(a, m);
  sync_kick(a);
  return 0;
}

EXPORT int
raid_array_replace_member(struct raid_array *a, unsigned slot, struct raid_member *m)
{
  unsigned idx;
  int r = 0;

  pthread_mutex_lock(&a->conf_lock);
  if (locate(a, m->name, &idx) != W_NONE)
    r = set_error(EEXIST, "array %s: %s is already a member", a->name, m->name);
  pthread_mutex_unlock(&a->conf_lock);
  if (r == 0 && a->level == RAID_LEVEL_0)
    r = set_error(EINVAL, "array %s: RAID 0 has no redundancy to rebuild a "
                  "replacement from", a->name);
  else if (r == 0 && slot >= a->raid_disks)
    r = set_error(EINVAL, "array %s: no role %u (it has %u)", a->name, slot,
                  a->raid_disks);
  else if (r == 0 && !slot_ok(a, slot))
    r = set_error(EINVAL, "array %s: role %u is not in sync: add a member to "
                  "rebuild it instead of replacing", a->name, slot);
  else if (r == 0 && atomic_load(&a->repl[slot]))
    r = set_error(EBUSY, "array %s: role %u is already being replaced by %s",
                  a->name, slot, atomic_load(&a->repl[slot])->name);
  if (r == 0) {
    pthread_mutex_lock(&a->conf_lock);
    m->data_offset = a->moff[slot];   /* so the take-over changes no offset */
    pthread_mutex_unlock(&a->conf_lock);
    r = member_fits(a, m, m->data_offset);
  }
  if (r == 0)
    r = meta_new_member(a, m);
  if (r < 0) {
    raid_member_close(m);
    return r;
  }
  /* Checked again where it counts: the role may have failed meanwhile. */
  pthread_mutex_lock(&a->conf_lock);
  if (!slot_ok(a, slot) || atomic_load(&a->repl[slot]) || locate(a, m->name, &idx) != W_NONE)
    r = set_error(EBUSY, "array %s: role %u changed while %s was prepared; try "
                  "again", a->name, slot, m->name);
  else {
    atomic_store(&a->repl_done[slot], 0);
    atomic_store(&a->repl[slot], m);
    raid_log(RAID_LOG_INFO, "%s %s: replacing %s (role %u) with %s", a->pers->name,
             a->name, atomic_load(&a->members[slot])->name, slot, m->name);
  }
  pthread_mutex_unlock(&a->conf_lock);
  if (r < 0) {
    raid_member_close(m);
    return r;
  }
  meta_update(a);
  sync_kick(a);
  return 0;
}

/* md's re-add: the superblock says M left A with nothing missed that
 * the bitmap does not cover (raid_array_readd_check(), md/), so it goes
 * back into its role and only the set bits are rebuilt. */
EXPORT int
raid_array_readd_member(struct raid_array *a, struct raid_member *m, int *rolep)
{
  struct raid_superblock *sb = malloc(sizeof *sb);
  unsigned dn;
  int r;

  if (sb == NULL) {
    raid_member_close(m);
    return set_error(ENOMEM, "array %s: out of memory", a->name);
  }
  r = raid_superblock_read(m, sb);
  if (r == 0)
    r = raid_array_readd_check(a, sb, m->name);
  dn = sb->dev_number;
  free(sb);
  if (r < 0) {
    raid_member_close(m);
    return r;
  }
  r = raid_array_add_member(a, m, rolep);       /* owns m */
  if (r == 0)
    meta_taken_back(a, dn);                     /* not twice */
  return r;
}
