/* Arrays with md version-1 metadata: create, assemble, keep superblocks
 * current.
 *
 * Every member carries md's version-1 superblock (superblock.c encodes it)
 * where the array's metadata version puts it, as md does: 4 KiB from the
 * start (1.2, the default), at the start (1.1), or 8 to 11.5 KiB before the
 * end with the data from sector 0 (1.0: each member of a mirror is then a
 * plain copy of the data, which is what boot loaders need).  A member's
 * superblock place is its own (1.0's depends on the member's size); every
 * member of an array has the same version.  What we keep in it, as md does:
 *  - set-wide: set UUID, name ("host:name", as mdadm writes it), creation
 *    time, level, layout, chunk, raid_disks, per-member size;
 *  - per member: its device number (an index into dev_roles[], not its
 *    role), device UUID, data offset and size;
 *  - state: an events counter bumped on every update, the role of every
 *    device number (0xfffe faulty, 0xffff spare), and resync_offset, which
 *    is 0 while the array is active (dirty: writes may be in flight) and,
 *    while it is clean, "all" (MaxSector), or where an interrupted resync
 *    got to (md's recovery_cp), so that an array that was not clean when
 *    it stopped is known to need a resync.  It is active from start to
 *    stop except while idle: safe mode (safemode.c) marks it clean once no
 *    write has been in flight for a moment and active again before the
 *    next write reaches a member (m->active; meta_write_locked() derives
 *    resync_offset from it, as md's super_1_sync() does from in_sync).
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
 *
 * Updates are synchronous and rare (start, stop, a member failing, safe
 * mode's transitions after idle), and
 * are written to every member still in sync before the I/O that caused
 * them completes: so a failed member can never come back as current after
 * a crash, since the survivors' events have moved past it.
 *
 * md's internal write-intent bitmap (bitmap.c formats it): an array that
 * has one keeps an image of it here, under the lock, and every update that
 * bumps the events writes it to each member just before that member's
 * superblock, with the same events (md's md_update_sb() writes the bitmap
 * superblock first too), so md never finds it out of date.  Between
 * updates bits are set chunk by chunk before writes reach the members and
 * cleared once idle (bitmap-run.c, which writes only the pages that
 * changed, under the same lock).  The image starts as the freshest
 * member's bits at assembly (a new array: every bit set when it needs a
 * resync, none with --assume-clean), so after a crash the resync goes
 * over the set bits only (recovery.c).  A clean stop with every role in
 * sync and no resync due clears them all (and sets events_cleared); a
 * clear bit always means "in sync", never lost redundancy.
 * A bitmap added to a running array (raid_array_set_bitmap()) starts with
 * every bit set, on every member, before the superblocks that point at
 * it (writes in flight passed no gate); one removed goes with the
 * superblocks that no longer do, its writer once no request uses it.
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

/* Roles kept in the superblock: mdadm rounds 256 + 2 per device up to
 * 512 bytes, which is 128 roles for up to 128 devices. */
#define META_MAX_DEV 128u

struct array_meta {
  pthread_mutex_t lock;                 /* serialises superblock writes */
  struct raid_superblock sb;            /* set-wide fields, events, roles */
  bool needs_resync;
  uint64_t resync_done;                 /* bytes of each member resynced */
  /* What updates write: "active" (dirty), not "clean": from meta_start()
   * to meta_stop() except while safe mode has the array clean.  Written
   * under the lock. */
  _Atomic bool active;
  /* meta_may_say_clean(): the members may say "clean": set before a
   * clean update begins, cleared once an active one is on every member.
   * So false means that every member says "active" (tests rely on it: a
   * crash then must leave the array needing a resync). */
  _Atomic bool may_say_clean;
  /* raid_array_clean(): every member says "clean": set once a clean
   * update is done, cleared before an active one begins. */
  _Atomic bool says_clean;
  /* a->fail_gen the superblocks on stable storage record (written under
   * the lock, read without it by meta_failures_recorded()). */
  _Atomic uint64_t recorded_gen;
  /* Device numbers that held a role when the array was assembled but
   * were not there: the members it may take back (raid_array_readd_*). */
  bool awaited[RAID_SB_MAX_DEV];
  /* What RAID_ASSEMBLE_FORCE took back (raid_array_forced_members()). */
  struct raid_forced_member forced[RAID_MAX_MEMBERS];
  unsigned nforced;
  struct meta_bitmap *bm;               /* md's internal bitmap, or NULL */
};

static void run_stop(struct raid_array *a);

static uint64_t
md_time(void)
{
  struct timeval tv;

  gettimeofday(&tv, NULL);
  return ((uint64_t)tv.tv_sec & ((1ull << 40) - 1)) | ((uint64_t)tv.tv_usec << 40);
}

static int
random_bytes(uint8_t *buf, size_t len)
{
  size_t got = 0;

  while (got < len) {
    ssize_t r = getrandom(buf + got, len - got, 0);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return set_error(errno, "getrandom: %s", strerror(errno));
    }
    got += r;
  }
  return 0;
}

int
meta_version(int config_metadata)
{
  switch (config_metadata) {
  case 0:
    return RAID_METADATA_1_2;
  case RAID_METADATA_1_0: case RAID_METADATA_1_1: case RAID_METADATA_1_2:
    return config_metadata;
  default:
    return -1;
  }
}

uint64_t
meta_data_end(int version, uint64_t reserve, uint64_t size)
{
  uint64_t so;

  if (version != RAID_METADATA_1_0)
    return size;
  so = raid_superblock_offset(version, size >> SECTOR_SHIFT);
  return so == UINT64_MAX || so << SECTOR_SHIFT <= reserve ? 0
    : (so << SECTOR_SHIFT) - reserve;
}

/* Metadata 1.0 keeps its bitmap between the data and the superblock: the
 * bitmap's own place once there is one (bitmap_offset is the same on
 * every member), else (creating) the room mdadm leaves for it. */
uint64_t
meta_bitmap_reserve(const struct raid_array *a, uint64_t size)
{
  if (!a->bitmap || a->metadata != RAID_METADATA_1_0)
    return 0;
  if (a->meta && a->meta->bm)
    return (uint64_t)-(int64_t)a->meta->bm->offset << SECTOR_SHIFT;
  return raid_bitmap_space(a->metadata, size >> SECTOR_SHIFT) << SECTOR_SHIFT;
}

/* ---- the core's door (struct meta_ops) ----------------------------------------- */

/* The core calls these whether or not A has superblocks: without them
 * (raid_array_new(), a->meta NULL) they write nothing. */
static uint64_t
md_data_end(const struct raid_array *a, uint64_t size)
{
  return meta_data_end(a->metadata, meta_bitmap_reserve(a, size), size);
}

static void
md_member_failed(struct raid_array *a, unsigned slot)
{
  if (a->meta)
    meta_member_failed(a, slot);
}

static void
md_failures_recorded(struct raid_array *a)
{
  if (a->meta)
    meta_failures_recorded(a);
}

static void
md_stop(struct raid_array *a)
{
  if (a->meta)
    meta_stop(a);
}

const struct meta_ops md_meta_ops = {
  .version = meta_version,
  .data_end = md_data_end,
  .update = meta_update,
  .member_failed = md_member_failed,
  .failures_recorded = md_failures_recorded,
  .stop = md_stop,
};

/* md's level numbers are ours; superblock layouts likewise. */
static int
level_supported(int32_t level)
{
  return level == 0 || level == 1 || level == 5 || level == 10;
}

/* One member whose superblock we keep current, with what to write there. */
struct live {
  struct raid_member *m;
  int slot;                             /* role, or -1 for a spare */
  uint32_t features;
  uint64_t recovery;                    /* bytes, with RECOVERY_OFFSET */
};

/* Every member still in the array: roles in sync or recovering,
 * replacements, spares.  Failed members are not written (md leaves them
 * alone: their stale events keep them out). */
static unsigned
live_members(struct raid_array *a, struct live *l)
{
  unsigned i, n = 0;

  pthread_mutex_lock(&a->conf_lock);
  for (i = 0; i < a->raid_disks; i++) {
    struct raid_member *m = atomic_load(&a->members[i]);
    int st = atomic_load(&a->state[i]);

    if (m && (st == RAID_MEMBER_IN_SYNC || st == RAID_MEMBER_RECOVERING)) {
      l[n] = (struct live){ m, (int)i, 0, 0 };
      if (st == RAID_MEMBER_RECOVERING) {
        l[n].features = RAID_SB_FEATURE_RECOVERY_OFFSET;
        l[n].recovery = atomic_load(&a->recovered[i]);
      }
      n++;
    }
    if ((m = atomic_load(&a->repl[i])) != NULL)
      l[n++] = (struct live){ m, (int)i,
                              RAID_SB_FEATURE_RECOVERY_OFFSET | RAID_SB_FEATURE_REPLACEMENT,
                              atomic_load(&a->repl_done[i]) };
  }
  for (i = 0; i < a->nspares; i++)
    l[n++] = (struct live){ a->spares[i], -1, 0, 0 };
  pthread_mutex_unlock(&a->conf_lock);
  return n;
}

/* SB's roles, as md's super_1_sync() writes them: every device number
 * faulty, then the members we still have (ALL[0..N-1]): a role for
 * members in sync, recovering or replacing, and "spare" for spares;
 * failed ones stay faulty. */
static void
meta_roles(const struct live *all, unsigned n, struct raid_superblock *sb)
{
  unsigned i;

  for (i = 0; i < sb->max_dev && i < RAID_SB_MAX_DEV; i++)
    sb->dev_roles[i] = RAID_SB_ROLE_FAULTY;
  for (i = 0; i < n; i++)
    if (all[i].m->dev_number < sb->max_dev && all[i].m->dev_number < RAID_SB_MAX_DEV)
      sb->dev_roles[all[i].m->dev_number] = all[i].slot >= 0
        ? (uint16_t)all[i].slot : RAID_SB_ROLE_SPARE;
}

/* The superblock for live member L, given the roles of all of them.
 * Caller holds the lock. */
static void
meta_build(struct raid_array *a, const struct live *all, unsigned n,
           const struct live *l, struct raid_superblock *sb)
{
  struct array_meta *m = a->meta;

  *sb = m->sb;
  sb->dev_number = l->m->dev_number;
  memcpy(sb->device_uuid, l->m->dev_uuid, 16);
  sb->data_offset = l->m->data_offset >> SECTOR_SHIFT;
  sb->data_size = l->m->data_size;
  sb->super_offset = l->m->super_offset;
  sb->feature_map = l->features | (m->bm ? RAID_SB_FEATURE_BITMAP : 0);
  sb->bitmap_offset = m->bm ? m->bm->offset : 0;
  sb->devflags = (uint8_t)((sb->devflags & ~RAID_SB_DEVFLAG_WRITE_MOSTLY) |
                           (l->m->write_mostly ? RAID_SB_DEVFLAG_WRITE_MOSTLY : 0));
  sb->recovery_offset = l->features ? l->recovery >> SECTOR_SHIFT : 0;
  meta_roles(all, n, sb);
}

/* The array's superblock as an update would write it now, roles and all
 * (m->sb's roles are those of the last superblocks read, not kept
 * current).  Caller holds the lock. */
static void
meta_current_locked(struct raid_array *a, struct raid_superblock *sb)
{
  struct live l[2 * RAID_MAX_MEMBERS + RAID_MAX_MEMBERS];
  unsigned n = live_members(a, l);

  *sb = a->meta->sb;
  meta_roles(l, n, sb);
}

/* Write every live member's superblock, events bumped when BUMP.  A role's
 * member whose write fails is failed (without recursing into a new
 * update) and the round is repeated, so the survivors record it.  Caller
 * holds the lock. */
static int
meta_write_locked(struct raid_array *a, bool bump)
{
  struct array_meta *m = a->meta;
  uint8_t *buf = raid_buf_alloc(RAID_SB_BYTES);
  struct live l[2 * RAID_MAX_MEMBERS + RAID_MAX_MEMBERS];
  struct raid_superblock sb;
  unsigned i, n, written;
  bool again;
  int r, err = 0;

  if (buf == NULL)
    return set_error(ENOMEM, "array %s: out of memory", a->name);
  do {
    /* Read before the roles are (live_members()): what this round
     * writes records at least the failures counted here. */
    uint64_t gen = atomic_load(&a->fail_gen);
    bool bumped = bump;

    again = false;
    written = 0;
    if (bump)
      m->sb.events++;
    bump = true;                /* a repeated round records a change */
    m->sb.utime = md_time();
    /* md's super_1_sync(): 0 while active; clean, the resync point. */
    m->sb.resync_offset = atomic_load(&m->active) ? 0
      : m->needs_resync ? m->resync_done >> SECTOR_SHIFT : RAID_SB_MAX_SECTOR;
    n = live_members(a, l);
    if (m->bm)
      m->bm->sb.events = m->sb.events;
    for (i = 0; i < n; i++) {
      meta_build(a, l, n, &l[i], &sb);
      raid_superblock_encode(&sb, buf);
      /* The bitmap first, with these events (see the top of the file). */
      r = m->bm && bumped ? bitmap_write(m->bm, l[i].m) : 0;
      if (r == 0)
        r = member_pio(l[i].m, true, buf, RAID_SB_BYTES,
                       l[i].m->super_offset << SECTOR_SHIFT);
      if (r == 0) {
        written++;
        continue;
      }
      err = r;
      if (l[i].slot < 0 || l[i].features & RAID_SB_FEATURE_REPLACEMENT) {
        raid_log(RAID_LOG_ERR, "%s %s: %s %s: %s", a->pers->name, a->name,
                 l[i].slot < 0 ? "spare" : "replacement", l[i].m->name,
                 raid_get_error());
        continue;
      }
      /* The role change only: we are the superblock update. */
      if (array_role_failed(a, l[i].slot, l[i].m, raid_get_error()) >= 0)
        again = true;
    }
    if (written > 0 && gen > atomic_load(&m->recorded_gen))
      atomic_store(&m->recorded_gen, gen);
  } while (again && written > 0);
  raid_buf_free(buf);
  return written > 0 ? 0 : err;
}

int
meta_update(struct raid_array *a)
{
  int r;

  if (a->meta == NULL)
    return 0;
  pthread_mutex_lock(&a->meta->lock);
  r = meta_write_locked(a, true);
  pthread_mutex_unlock(&a->meta->lock);
  return r;
}

void
meta_failures_recorded(struct raid_array *a)
{
  struct array_meta *m = a->meta;

  if (atomic_load(&m->recorded_gen) >= atomic_load(&a->fail_gen))
    return;                     /* the common case: nothing pending */
  pthread_mutex_lock(&m->lock);
  if (atomic_load(&m->recorded_gen) < atomic_load(&a->fail_gen))
    meta_write_locked(a, true);
  pthread_mutex_unlock(&m->lock);
}

void
meta_checkpoint(struct raid_array *a, uint64_t resync_done)
{
  if (a->meta == NULL)
    return;
  pthread_mutex_lock(&a->meta->lock);
  if (resync_done != UINT64_MAX)
    a->meta->resync_done = resync_done;
  meta_write_locked(a, false);
  pthread_mutex_unlock(&a->meta->lock);
}

void
meta_resync_done(struct raid_array *a)
{
  if (a->meta == NULL)
    return;
  pthread_mutex_lock(&a->meta->lock);
  a->meta->needs_resync = false;
  a->meta->resync_done = a->member_size;
  /* Marked clean at the checkpoint by safe mode: now clean for good. */
  if (!atomic_load(&a->meta->active))
    meta_write_locked(a, false);
  pthread_mutex_unlock(&a->meta->lock);
}

uint64_t
meta_resync_start(struct raid_array *a)
{
  uint64_t r = 0;

  if (a->meta) {
    pthread_mutex_lock(&a->meta->lock);
    r = a->meta->needs_resync ? a->meta->resync_done : a->member_size;
    pthread_mutex_unlock(&a->meta->lock);
  }
  return r;
}

/* A device number no member of A uses, and a fresh UUID. */
int
meta_new_member(struct raid_array *a, struct raid_member *m)
{
  bool used[META_MAX_DEV] = { false };
  struct raid_member *x;
  unsigned i, dn;

  if (a->meta == NULL)
    return 0;
  /* Every member the array holds keeps its device number, failed ones too
   * (md's bind_rdev_to_array() keeps the desc_nr of every bound device),
   * so a member added into a failed member's role gets a number of its
   * own and the failed one stays "faulty" in the roles.  Read under
   * conf_lock: a member removed meanwhile may be closed right after. */
  pthread_mutex_lock(&a->conf_lock);
  for (i = 0; i < a->raid_disks; i++) {
    if ((x = atomic_load(&a->members[i])) && x->dev_number < META_MAX_DEV)
      used[x->dev_number] = true;
    if ((x = atomic_load(&a->repl[i])) && x->dev_number < META_MAX_DEV)
      used[x->dev_number] = true;
  }
  for (i = 0; i < a->nspares; i++)
    if (a->spares[i]->dev_number < META_MAX_DEV)
      used[a->spares[i]->dev_number] = true;
  for (x = a->retired; x; x = x->retired_next)
    if (x->dev_number < META_MAX_DEV)
      used[x->dev_number] = true;
  pthread_mutex_unlock(&a->conf_lock);
  for (dn = 0; dn < META_MAX_DEV && dn < a->meta->sb.max_dev && used[dn]; dn++)
    ;
  if (dn == META_MAX_DEV || dn >= a->meta->sb.max_dev)
    return set_error(ENOSPC, "array %s: no free device number for member %s "
                     "(%u in use)", a->name, m->name, dn);
  m->dev_number = dn;
  m->super_offset = raid_superblock_offset(a->metadata, m->size >> SECTOR_SHIFT);
  m->data_size = (meta_data_end(a->metadata, meta_bitmap_reserve(a, m->size), m->size) -
                  m->data_offset) >> SECTOR_SHIFT;
  return random_bytes(m->dev_uuid, 16);
}

void
meta_barrier(struct raid_array *a)
{
  if (a->meta == NULL)
    return;
  pthread_mutex_lock(&a->meta->lock);
  pthread_mutex_unlock(&a->meta->lock);
}

void
meta_member_failed(struct raid_array *a, unsigned slot)
{
  meta_update(a);
}

void
meta_stop(struct raid_array *a)
{
  struct array_meta *m = a->meta;

  run_stop(a);                  /* no request is in flight any more */
  pthread_mutex_lock(&m->lock);
  /* Clean: "all" resynced, or where an interrupted resync got to, so that
   * it resumes there (md's recovery_cp; meta_write_locked()). */
  atomic_store(&m->may_say_clean, true);
  atomic_store(&m->active, false);
  /* Every write is done and on every member: with all roles in sync and
   * no resync due, no chunk can disagree.  Otherwise the bits stay set
   * (md keeps them for a member that is missing). */
  if (m->bm && !m->needs_resync && raid_array_degraded(a) == 0 && !raid_array_is_failed(a)) {
    bitmap_set_all(m->bm, false);
    m->bm->sb.events_cleared = m->sb.events + 1;   /* this update's */
  }
  if (meta_write_locked(a, true) < 0)
    raid_log(RAID_LOG_ERR, "%s %s: could not mark the array clean: %s",
             a->pers->name, a->name, raid_get_error());
  pthread_mutex_unlock(&m->lock);
  pthread_mutex_destroy(&m->lock);
  bitmap_free(m->bm);
  free(m);
  a->meta = NULL;
}

/* Mark the array running (dirty) on every member, then open the bitmap
 * gate (bitmap-run.c): the image holds what the members hold, so a chunk
 * whose bit is set is on stable storage already and the others get
 * theirs before their first write. */
static int
meta_start(struct raid_array *a)
{
  struct bitmap_run *run = NULL;
  struct safe_mode *sm = NULL;
  int r;

  pthread_mutex_lock(&a->meta->lock);
  atomic_store(&a->meta->active, true);
  r = meta_write_locked(a, true);
  if (r == 0 && a->meta->bm)
    r = bitmap_run_new(a, a->meta->bm, &run);
  if (r == 0)
    atomic_store(&a->gate[GATE_BITMAP], bitmap_run_gate(run));
  if (r == 0 && (r = safe_mode_new(a, &sm)) == 0)
    atomic_store(&a->gate[GATE_SAFE], safe_mode_gate(sm));
  pthread_mutex_unlock(&a->meta->lock);
  return r;
}

/* Stop A's bitmap writer and safe mode: no request may use them any more. */
static void
run_stop(struct raid_array *a)
{
  safe_mode_free(safe_mode_take(a));
  bitmap_run_free(bitmap_run_take(a));
}

/* Safe mode's transitions (safemode.c).  A failed "clean" leaves the
 * array active in memory too: what the members hold is unknown. */
static int
mark(struct raid_array *a, bool active)
{
  struct array_meta *m = a->meta;
  int r;

  pthread_mutex_lock(&m->lock);
  if (active)
    atomic_store(&m->says_clean, false);
  else
    atomic_store(&m->may_say_clean, true);
  atomic_store(&m->active, active);
  r = meta_write_locked(a, true);
  if (r < 0)
    atomic_store(&m->active, true);
  if (active ? r == 0 : r < 0)
    atomic_store(&m->may_say_clean, false);
  if (!active && r == 0)
    atomic_store(&m->says_clean, true);
  pthread_mutex_unlock(&m->lock);
  return r;
}

int
meta_mark_clean(struct raid_array *a)
{
  return mark(a, false);
}

int
meta_mark_active(struct raid_array *a)
{
  return mark(a, true);
}

void
meta_lock(struct raid_array *a)
{
  pthread_mutex_lock(&a->meta->lock);
}

void
meta_unlock(struct raid_array *a)
{
  pthread_mutex_unlock(&a->meta->lock);
}

struct meta_bitmap *
meta_bitmap_locked(struct raid_array *a)
{
  return a->meta->bm;
}

bool
meta_bitmap_may_clear(struct raid_array *a)
{
  unsigned s;

  if (a->meta->needs_resync || raid_array_degraded(a) > 0 || raid_array_is_failed(a))
    return false;
  for (s = 0; s < a->raid_disks; s++)
    if (atomic_load(&a->repl[s]) || !slot_ok(a, s))
      return false;
  return true;
}

int
meta_bitmap_readd_role(struct raid_array *a, struct raid_member *x)
{
  struct array_meta *m = a->meta;
  struct raid_superblock *sb, *cur;
  unsigned own;
  int role = -1;

  if (m == NULL || bitmap_run_of(a) == NULL || (sb = malloc(2 * sizeof *sb)) == NULL)
    return -1;
  cur = sb + 1;
  if (raid_superblock_read(x, sb) == 0 && memcmp(sb->set_uuid, m->sb.set_uuid, 16) == 0 &&
      sb->dev_number < sb->max_dev && (sb->feature_map & RAID_SB_FEATURE_BITMAP) &&
      !(sb->feature_map & (RAID_SB_FEATURE_RECOVERY_OFFSET | RAID_SB_FEATURE_REPLACEMENT)) &&
      (sb->data_offset << SECTOR_SHIFT) == x->data_offset) {
    unsigned k;

    own = sb->dev_roles[sb->dev_number];
    /* Not a split mirror (used on its own since it left: a full rebuild
     * discards what it wrote). */
    pthread_mutex_lock(&m->lock);
    meta_current_locked(a, cur);
    if (m->bm && own < a->raid_disks && sb->events >= m->bm->sb.events_cleared &&
        !raid_superblock_split(sb, cur, &k))
      role = (int)own;
    pthread_mutex_unlock(&m->lock);
  }
  free(sb);
  return role;
}

void
meta_bitmap_cleared_locked(struct raid_array *a)
{
  a->meta->bm->sb.events_cleared = a->meta->sb.events;
}

int
meta_bitmap_write_pages_locked(struct raid_array *a, const uint8_t *pages, uint64_t npages)
{
  struct array_meta *m = a->meta;
  struct meta_bitmap *bm = m->bm;
  struct live l[2 * RAID_MAX_MEMBERS + RAID_MAX_MEMBERS];
  unsigned i, n, written = 0;
  bool failed = false;
  int r, err = 0;

  bm->sb.events = m->sb.events;
  raid_bitmap_encode(&bm->sb, bm->buf);
  n = live_members(a, l);
  for (i = 0; i < n; i++) {
    uint64_t at = (l[i].m->super_offset + (int64_t)bm->offset) << SECTOR_SHIFT;
    uint64_t p = 0, q;

    r = 0;
    while (r == 0 && p < npages) {
      if (pages && !pages[p]) {
        p++;
        continue;
      }
      /* A run of pages that changed, in one write. */
      for (q = p + 1; q < npages && (!pages || pages[q]); q++)
        ;
      r = member_pio(l[i].m, true, bm->buf + p * 4096,
                     MIN(q * 4096, bm->area) - p * 4096, at + p * 4096);
      p = q;
    }
    if (r == 0) {
      written++;
      continue;
    }
    err = r;
    if (l[i].slot < 0 || l[i].features & RAID_SB_FEATURE_REPLACEMENT) {
      raid_log(RAID_LOG_ERR, "%s %s: bitmap on %s %s: %s", a->pers->name, a->name,
               l[i].slot < 0 ? "spare" : "replacement", l[i].m->name, raid_get_error());
      continue;
    }
    if (array_role_failed(a, l[i].slot, l[i].m, raid_get_error()) >= 0)
      failed = true;
  }
  /* The survivors record the failure before anything goes on. */
  if (failed && written > 0)
    meta_write_locked(a, true);
  return written > 0 ? 0 : err;
}

/* ---- create ---------------------------------------------------------------- */

/* What md's bitmap covers: its resync range (resync_max_sectors), each
 * member's data for RAID 1 and 5, the array for RAID 10. */
static uint64_t
bitmap_sync_size(const struct raid_array *a)
{
  return (a->level == RAID_LEVEL_10 ? a->size : a->member_size) >> SECTOR_SHIFT;
}

/* A bitmap superblock for array A with chunk CHUNK, mdadm's defaults:
 * md's 5 s daemon_sleep, no write-behind. */
static void
bitmap_sb_init(const struct raid_array *a, const struct array_meta *m, uint32_t chunk,
               struct raid_bitmap_super *b)
{
  memset(b, 0, sizeof *b);
  b->magic = RAID_BITMAP_MAGIC;
  b->version = RAID_BITMAP_VERSION;
  memcpy(b->uuid, m->sb.set_uuid, 16);
  b->sync_size = bitmap_sync_size(a);
  b->chunksize = chunk;
  b->daemon_sleep = RAID_BITMAP_DAEMON_SLEEP;
}

/* The new array's bitmap, placed as mdadm places it (bitmap.c). */
static int
create_bitmap(struct raid_array *a, struct array_meta *m)
{
  struct raid_bitmap_super b;
  uint32_t chunk;
  int32_t offset;
  int r;

  r = bitmap_plan(a->name, a->metadata, a->member_size >> SECTOR_SHIFT,
                  bitmap_sync_size(a), a->bitmap_chunk, &chunk, &offset);
  if (r < 0)
    return r;
  bitmap_sb_init(a, m, chunk, &b);
  b.write_behind = a->write_behind;
  /* As the kernel records it: the room before a 1.0 superblock, unknown
   * (0) between a 1.1 or 1.2 superblock and the data. */
  b.sectors_reserved = offset < 0 ? (uint32_t)-offset : 0;
  return bitmap_new(&b, offset, &m->bm);
}

EXPORT int
raid_array_create(const struct raid_config *cfg, struct raid_member *const *members,
                  unsigned flags, struct raid_array **arrayp)
{
  struct raid_config c = *cfg;
  struct raid_array *a;
  struct array_meta *m;
  char host[64] = "";
  unsigned i, present;
  int r, version;

  *arrayp = NULL;
  if (flags & ~RAID_CREATE_ASSUME_CLEAN)
    return set_error(EINVAL, "array %s: unknown create flags 0x%x",
                     cfg->name ? cfg->name : "md", flags);
  version = meta_version(c.metadata);
  if (version < 0)
    return set_error(EINVAL, "array %s: metadata version 0x%x is unknown (1.0, "
                     "1.1 and 1.2 are)", cfg->name ? cfg->name : "md",
                     (unsigned)c.metadata);
  c.metadata = version;
  if (c.data_offset == 0 && version != RAID_METADATA_1_0)
    c.data_offset = RAID_DATA_OFFSET_DEFAULT;
  if (version != RAID_METADATA_1_0) {
    uint64_t sb_end = raid_superblock_offset(version, UINT64_MAX >> SECTOR_SHIFT)
      * RAID_SECTOR_SIZE + RAID_SB_BYTES;

    if (c.data_offset < sb_end)
      return set_error(EINVAL, "array %s: data offset %" PRIu64 " overlaps the "
                       "metadata %s superblock at %" PRIu64 "..%" PRIu64,
                       cfg->name ? cfg->name : "md", c.data_offset,
                       raid_metadata_name(version), sb_end - RAID_SB_BYTES, sb_end - 1);
  }
  if (c.name && (r = raid_name_check(c.name)) < 0)
    return r;
  r = array_new(&c, members, NULL, &a);
  if (r < 0)
    return r;

  m = calloc(1, sizeof *m);
  if (m == NULL) {
    for (i = 0; i < a->raid_disks; i++)
      a->members[i] = NULL;     /* still the caller's */
    raid_array_free(a);
    return set_error(ENOMEM, "array %s: out of memory", c.name);
  }
  pthread_mutex_init(&m->lock, NULL);
  if ((r = random_bytes(m->sb.set_uuid, 16)) < 0)
    goto fail;
  if (a->write_behind && !a->bitmap) {
    r = set_error(EINVAL, "array %s: write-behind needs the write-intent bitmap "
                  "(mdadm's default gives none to members of 100 GiB or less)",
                  a->name);
    goto fail;
  }
  if (a->bitmap && (r = create_bitmap(a, m)) < 0)
    goto fail;
  gethostname(host, sizeof host - 1);
  host[strcspn(host, ".")] = '\0';
  /* mdadm's "homehost:name" when it fits in the 32 bytes, else the name. */
  if (host[0] && strlen(host) + 1 + strlen(a->name) <= 32) {
    strcpy(m->sb.set_name, host);
    strcat(m->sb.set_name, ":");
    strcat(m->sb.set_name, a->name);
  }
  else
    strcpy(m->sb.set_name, a->name);
  m->sb.ctime = md_time();
  m->sb.level = a->level;
  m->sb.layout = a->level == RAID_LEVEL_5 || a->level == RAID_LEVEL_10 ? (uint32_t)a->layout : 0;
  m->sb.size = a->member_size >> SECTOR_SHIFT;
  m->sb.chunksize = a->chunk_sectors;
  m->sb.raid_disks = a->raid_disks;
  m->sb.max_dev = MAX(META_MAX_DEV, a->raid_disks);
  m->sb.events = 0;
  /* Roles created missing (NULL members) hold nothing that could
   * disagree: a RAID 5 missing one has no parity to check, a RAID 1 down
   * to one member no second copy.  The members added later are rebuilt. */
  present = a->raid_disks - raid_array_degraded(a);
  m->sb.resync_offset = (flags & RAID_CREATE_ASSUME_CLEAN) || a->level == RAID_LEVEL_0 ||
    (a->level == RAID_LEVEL_5 && present < a->raid_disks) ||
    (a->level == RAID_LEVEL_1 && present == 1)
    ? RAID_SB_MAX_SECTOR : 0;
  m->needs_resync = m->sb.resync_offset != RAID_SB_MAX_SECTOR;
  /* Copies disagree until the resync has been there, so mirrors read the
   * first copy (balance.c) from the start, not only once a resync runs. */
  if (m->needs_resync)
    atomic_store(&a->resync_front, 0);
  for (i = 0; i < a->raid_disks; i++) {
    struct raid_member *x = a->members[i];

    if (x == NULL)
      continue;                 /* missing: device number i stays unused */
    x->dev_number = i;
    if ((r = random_bytes(x->dev_uuid, 16)) < 0)
      goto fail;
    x->super_offset = raid_superblock_offset(version, x->size >> SECTOR_SHIFT);
    /* RAID 0 records exactly the size it uses, so that md sees one zone;
     * a 1.0 bitmap's data ends where the bitmap starts (mdadm's). */
    if (a->level == RAID_LEVEL_0)
      x->data_size = a->member_size >> SECTOR_SHIFT;
    else if (m->bm && version == RAID_METADATA_1_0)
      x->data_size = x->super_offset + m->bm->offset - (a->moff[i] >> SECTOR_SHIFT);
    else
      x->data_size = (meta_data_end(version, 0, x->size) - a->moff[i]) >> SECTOR_SHIFT;
    if (m->bm) {
      struct raid_superblock *xs = calloc(1, sizeof *xs);

      if (xs == NULL) {
        r = set_error(ENOMEM, "array %s: out of memory", a->name);
        goto fail;
      }
      xs->super_offset = x->super_offset;
      xs->data_offset = a->moff[i] >> SECTOR_SHIFT;
      xs->size = a->member_size >> SECTOR_SHIFT;
      xs->max_dev = m->sb.max_dev;
      r = bitmap_check_place(xs, m->bm->offset, m->bm->area, x->name);
      free(xs);
      if (r < 0) {
        r = set_error(EINVAL, "array %s: no room for the write-intent bitmap: %s "
                      "(a larger data offset makes room)", a->name, raid_get_error());
        goto fail;
      }
    }
  }
  /* A new array that needs a resync has every chunk to resync, as
   * mdadm creates its bitmap; --assume-clean none. */
  if (m->bm)
    bitmap_set_all(m->bm, m->needs_resync);
  a->meta = m;
  r = meta_start(a);
  if (r < 0)
    goto fail;
  *arrayp = a;
  return 0;

 fail:
  run_stop(a);
  a->meta = NULL;
  pthread_mutex_destroy(&m->lock);
  bitmap_free(m->bm);
  free(m);
  for (i = 0; i < a->raid_disks; i++)
    a->members[i] = NULL;       /* still the caller's */
  raid_array_free(a);
  return r;
}

/* ---- assemble ----------------------------------------------------------------- */

/* What one place of a member holds. */
enum place { P_NONE, P_VALID, P_REFUSED, P_BAD_CSUM };

struct candidate {
  enum place what;
  struct raid_superblock sb;
  char err[512];                /* why refused */
};

/* Read and decode the superblock VERSION puts on MEMBER into C: 0, or the
 * read's error. */
static int
read_version(struct raid_member *member, int version, uint8_t *buf, struct candidate *c)
{
  uint64_t sectors = member->size >> SECTOR_SHIFT;
  uint64_t at = raid_superblock_offset(version, sectors);
  int r;

  c->what = P_NONE;
  if (at == UINT64_MAX)
    return 0;
  r = member_pio(member, false, buf, RAID_SB_BYTES, at << SECTOR_SHIFT);
  if (r < 0)
    return r;
  if (buf[0] != (RAID_SB_MAGIC & 0xff) || buf[1] != ((RAID_SB_MAGIC >> 8) & 0xff) ||
      buf[2] != ((RAID_SB_MAGIC >> 16) & 0xff) || buf[3] != RAID_SB_MAGIC >> 24)
    return 0;
  if (raid_superblock_decode(buf, at, sectors, member->name, &c->sb) == 0) {
    c->what = P_VALID;
    return 0;
  }
  snprintf(c->err, sizeof c->err, "%s", raid_get_error());
  c->what = raid_superblock_csum(buf) == c->sb.sb_csum ? P_REFUSED : P_BAD_CSUM;
  return 0;
}

/* md's ctime: seconds in the low 40 bits, microseconds above. */
static bool
created_later(uint64_t x, uint64_t y)
{
  uint64_t xs = x & ((UINT64_C(1) << 40) - 1), ys = y & ((UINT64_C(1) << 40) - 1);

  return xs != ys ? xs > ys : x >> 40 > y >> 40;
}

/* Does X's data area hold the place of Y's superblock? */
static bool
holds(const struct raid_superblock *x, const struct raid_superblock *y)
{
  return y->super_offset >= x->data_offset &&
    y->super_offset - x->data_offset < x->data_size;
}

/* Which of two superblocks found on one member is the member's: the one
 * whose data area holds the other (the other is then data: an array
 * stacked on this one, or an old superblock the new data covers), else
 * the one created last, as mdadm's load_super1() with no version given. */
static bool
better(const struct raid_superblock *x, const struct raid_superblock *y)
{
  bool xy = holds(x, y), yx = holds(y, x);

  if (xy != yx)
    return xy;
  return created_later(x->ctime, y->ctime);
}

EXPORT int
raid_superblock_read(struct raid_member *member, struct raid_superblock *sb)
{
  static const int order[] = { RAID_METADATA_1_2, RAID_METADATA_1_1, RAID_METADATA_1_0 };
  uint8_t *buf = raid_buf_alloc(RAID_SB_BYTES);
  struct candidate *c = calloc(ARRAY_SIZE(order), sizeof *c);
  int best = -1, bad = -1, r = 0, read_err = 0;
  unsigned i;

  if (buf == NULL || c == NULL) {
    r = set_error(ENOMEM, "member %s: out of memory", member->name);
    goto out;
  }
  if (member->size < (uint64_t)3 * 8 << SECTOR_SHIFT) {
    r = set_error(EINVAL, "member %s: too small (%" PRIu64 " bytes) to hold "
                  "an md superblock", member->name, member->size);
    goto out;
  }
  for (i = 0; i < ARRAY_SIZE(order); i++) {
    r = read_version(member, order[i], buf, &c[i]);
    if (r < 0 && read_err == 0) {
      read_err = r;
      snprintf(c[i].err, sizeof c[i].err, "%s", raid_get_error());
    }
    if (c[i].what == P_VALID || c[i].what == P_REFUSED) {
      if (best < 0 || better(&c[i].sb, &c[best].sb))
        best = (int)i;
    }
    else if (c[i].what == P_BAD_CSUM && bad < 0)
      bad = (int)i;
  }
  if (best >= 0) {
    /* Found: what lies elsewhere (unreadable or not) does not matter. */
    *sb = c[best].sb;
    r = c[best].what == P_VALID ? 0 : set_error(EINVAL, "%s", c[best].err);
  }
  else if (bad >= 0) {
    *sb = c[bad].sb;            /* for display only */
    r = set_error(EINVAL, "%s", c[bad].err);
  }
  else if (read_err) {
    for (i = 0; i < ARRAY_SIZE(order) && c[i].err[0] == '\0'; i++)
      ;
    r = set_error(-read_err, "%s", c[i].err);
  }
  else
    r = set_error(EINVAL, "member %s: no md superblock (none at sector %u for "
                  "metadata 1.2, %u for 1.1 or %" PRIu64 " for 1.0)", member->name,
                  RAID_SB_OFFSET_1_2, RAID_SB_OFFSET_1_1,
                  raid_superblock_offset(RAID_METADATA_1_0, member->size >> SECTOR_SHIFT));
 out:
  free(c);
  raid_buf_free(buf);
  return r;
}

EXPORT int
raid_superblock_read_path(const char *path, unsigned flags, struct raid_superblock *sb)
{
  struct raid_member *m;
  int r;

  if (flags & ~RAID_MEMBER_BUFFERED)
    return set_error(EINVAL, "member %s: superblock read flags 0x%x: only "
                     "RAID_MEMBER_BUFFERED is allowed", path, flags);
  r = raid_member_open(path, RAID_MEMBER_READONLY | flags, &m);
  if (r < 0)
    return r;
  r = raid_superblock_read(m, sb);
  raid_member_close(m);
  return r;
}

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

EXPORT int
raid_array_assemble(const char *name, struct raid_member *const *members,
                    unsigned n, unsigned flags, struct raid_array **arrayp)
{
  struct raid_superblock *sbs = NULL, *fresh;
  struct raid_member *slots[RAID_MAX_MEMBERS] = { NULL };
  uint64_t moff[RAID_MAX_MEMBERS] = { 0 };
  uint64_t recov[RAID_MAX_MEMBERS], repl_off[RAID_MAX_MEMBERS], rec;
  unsigned repl_idx[RAID_MAX_MEMBERS] = { 0 }, spare_idx[RAID_MAX_MEMBERS];
  unsigned nspares = 0;
  bool used[RAID_MAX_MEMBERS] = { false }, have[RAID_MAX_MEMBERS];
  struct behind *b = NULL;
  unsigned nb = 0, nforced = 0;
  struct raid_config cfg;
  struct raid_array *a = NULL;
  struct array_meta *m;
  char uuid[40], uuid2[40];
  const char *aname;
  unsigned i, j, found = 0, expected = 0, best = 0;
  struct raid_bitmap_super fresh_bsb;
  bool have_bsb = false;
  int r;

  *arrayp = NULL;
  if (flags & ~(RAID_ASSEMBLE_RUN | RAID_ASSEMBLE_FORCE))
    return set_error(EINVAL, "assemble: unknown flags 0x%x", flags);
  if (n == 0 || n > RAID_MAX_MEMBERS)
    return set_error(EINVAL, "assemble %s: %u members given: must be 1 to %u",
                     name ? name : "", n, RAID_MAX_MEMBERS);
  for (i = 0; i < n; i++)
    for (j = 0; j < i; j++)
      if (members[i] == members[j] || strcmp(members[i]->name, members[j]->name) == 0)
        return set_error(EINVAL, "assemble %s: member %s is given twice",
                         name ? name : "", members[i]->name);
  sbs = calloc(n, sizeof *sbs);
  b = calloc(n, sizeof *b);
  if (sbs == NULL || b == NULL) {
    free(sbs);
    free(b);
    return set_error(ENOMEM, "assemble: out of memory");
  }
  for (i = 0; i < n; i++) {
    r = raid_superblock_read(members[i], &sbs[i]);
    if (r < 0)
      goto out;
  }

  /* One set: the set UUID most members carry; the others are foreign. */
  {
    unsigned votes, top = 0, top_i = 0, tie = 0;
    for (i = 0; i < n; i++) {
      votes = 0;
      for (j = 0; j < n; j++)
        votes += memcmp(sbs[i].set_uuid, sbs[j].set_uuid, 16) == 0;
      if (votes > top) { top = votes; top_i = i; tie = 0; }
      else if (votes == top && memcmp(sbs[i].set_uuid, sbs[top_i].set_uuid, 16) != 0)
        tie = i + 1;
    }
    if (tie) {
      format_uuid(sbs[top_i].set_uuid, uuid);
      format_uuid(sbs[tie - 1].set_uuid, uuid2);
      r = set_error(EINVAL, "assemble: the members belong to different arrays "
                    "(%s is in %s, %s is in %s)", members[top_i]->name, uuid,
                    members[tie - 1]->name, uuid2);
      goto out;
    }
    for (i = 0; i < n; i++)
      if (memcmp(sbs[i].set_uuid, sbs[top_i].set_uuid, 16) != 0) {
        format_uuid(sbs[i].set_uuid, uuid);
        format_uuid(sbs[top_i].set_uuid, uuid2);
        r = set_error(EINVAL, "assemble: member %s belongs to another array "
                      "(UUID %s, name %s), not to %s (%s)", members[i]->name,
                      uuid, sbs[i].set_name, uuid2, sbs[top_i].set_name);
        goto out;
      }
  }

  /* The freshest superblock is the truth about roles. */
  for (i = 1; i < n; i++)
    if (sbs[i].events > sbs[best].events)
      best = i;
  fresh = &sbs[best];
  aname = name ? name : short_name(fresh->set_name);
  format_uuid(fresh->set_uuid, uuid);
  if (!level_supported(fresh->level)) {
    r = set_error(EINVAL, "assemble %s: RAID level %d is not supported (0, 1, "
                  "5 and 10 are)", aname, fresh->level);
    goto out;
  }
  if (fresh->raid_disks > RAID_MAX_MEMBERS) {
    r = set_error(EINVAL, "assemble %s: %u members is more than %u",
                  aname, fresh->raid_disks, RAID_MAX_MEMBERS);
    goto out;
  }
  {
    bool seen[RAID_MAX_MEMBERS] = { false };
    for (i = 0; i < fresh->max_dev; i++)
      if (fresh->dev_roles[i] < fresh->raid_disks && !seen[fresh->dev_roles[i]]) {
        seen[fresh->dev_roles[i]] = true;
        expected++;
      }
  }

  for (i = 0; i < n; i++) {
    struct raid_superblock *sb = &sbs[i];
    unsigned role = sb->dev_number < fresh->max_dev
      ? fresh->dev_roles[sb->dev_number] : RAID_SB_ROLE_SPARE;

    if (!same_geometry(sb, fresh)) {
      r = set_error(EINVAL, "assemble %s: member %s disagrees with the freshest "
                    "superblock (on %s) about the array's geometry",
                    aname, members[i]->name, members[best]->name);
      goto out;
    }
    if (raid_superblock_version(sb) != raid_superblock_version(fresh)) {
      r = set_error(EINVAL, "assemble %s: member %s has metadata %s, the freshest "
                    "superblock (on %s) has %s", aname, members[i]->name,
                    raid_metadata_name(raid_superblock_version(sb)), members[best]->name,
                    raid_metadata_name(raid_superblock_version(fresh)));
      goto out;
    }
    members[i]->dev_number = sb->dev_number;
    members[i]->super_offset = sb->super_offset;
    memcpy(members[i]->dev_uuid, sb->device_uuid, 16);
    members[i]->data_offset = sb->data_offset << SECTOR_SHIFT;
    members[i]->data_size = sb->data_size;
    members[i]->write_mostly = sb->devflags & RAID_SB_DEVFLAG_WRITE_MOSTLY;
    if (role == RAID_SB_ROLE_FAULTY) {
      raid_log(RAID_LOG_WARNING, "%s: member %s is marked faulty in the array "
               "(events %" PRIu64 "); not used", aname, members[i]->name,
               fresh->events);
      if (sb->events < fresh->events)
        b[nb++] = (struct behind){ .idx = i, .faulty = true,
                                   .role = sb->dev_number < sb->max_dev
                                     ? sb->dev_roles[sb->dev_number] : RAID_SB_ROLE_SPARE };
      continue;
    }
    if (role >= fresh->raid_disks) {
      if (nspares < RAID_MAX_MEMBERS) {
        spare_idx[nspares++] = i;
        used[i] = true;
      }
      continue;
    }
    if (sb->events < fresh->events && !raid_superblock_one_behind(sb, fresh)) {
      raid_log(RAID_LOG_WARNING, "%s: member %s (role %u) is stale: events "
               "%" PRIu64 " < %" PRIu64 "; not used, add it again to rebuild it",
               aname, members[i]->name, role, sb->events, fresh->events);
      b[nb++] = (struct behind){ .idx = i, .role = role };
      continue;
    }
    /* A recovery point past the data is "done" (md: recovery_offset at or
     * beyond the size): clamped before it is turned into bytes, so that no
     * on-disk value wraps around. */
    rec = (sb->feature_map & RAID_SB_FEATURE_RECOVERY_OFFSET)
      ? MIN(sb->recovery_offset, sb->data_size) : RAID_SB_MAX_SECTOR;
    if (sb->feature_map & RAID_SB_FEATURE_REPLACEMENT) {
      if (repl_idx[role]) {
        r = set_error(EINVAL, "assemble %s: members %s and %s both replace role %u",
                      aname, members[repl_idx[role] - 1]->name, members[i]->name, role);
        goto out;
      }
      repl_idx[role] = i + 1;
      repl_off[role] = rec == RAID_SB_MAX_SECTOR ? 0 : rec << SECTOR_SHIFT;
      used[i] = true;
      continue;
    }
    if (slots[role]) {
      r = set_error(EINVAL, "assemble %s: members %s and %s both claim role %u",
                    aname, slots[role]->name, members[i]->name, role);
      goto out;
    }
    slots[role] = members[i];
    moff[role] = sb->data_offset << SECTOR_SHIFT;
    recov[role] = rec == RAID_SB_MAX_SECTOR ? UINT64_MAX : rec << SECTOR_SHIFT;
    used[i] = true;
    found++;
  }
  /* A replacement whose role has no member left carries on as that role's
   * recovering member, as md does when the replaced member fails. */
  for (i = 0; i < fresh->raid_disks; i++)
    if (repl_idx[i] && slots[i] == NULL) {
      slots[i] = members[repl_idx[i] - 1];
      moff[i] = slots[i]->data_offset;
      recov[i] = repl_off[i];
      repl_idx[i] = 0;
      found++;
    }

  /* Too few to run: members behind may be forced back (see above). */
  for (i = 0; i < RAID_MAX_MEMBERS; i++)
    have[i] = i < fresh->raid_disks && slots[i] && recov[i] == UINT64_MAX;
  if (nb > 0 && !roles_work(fresh, have)) {
    bool works = force_choose(members, sbs, n, fresh, have, b, nb);

    if (!works || !(flags & RAID_ASSEMBLE_FORCE)) {
      r = force_error(aname, members, sbs, fresh, have, b, nb, works,
                      flags & RAID_ASSEMBLE_FORCE);
      goto out;
    }
    for (j = 0; j < nb; j++)
      if (b[j].taken) {
        i = b[j].idx;
        slots[b[j].role] = members[i];
        moff[b[j].role] = sbs[i].data_offset << SECTOR_SHIFT;
        recov[b[j].role] = UINT64_MAX;
        used[i] = true;
        found++;
        nforced++;
      }
  }

  /* md's internal bitmap: every member used must carry a good one (md's
   * md_bitmap_read_sb() checks, and the array's UUID), at the place the
   * freshest superblock says.  Nothing is written before this. */
  if (fresh->feature_map & RAID_SB_FEATURE_BITMAP) {
    if (fresh->level == RAID_LEVEL_0) {
      r = set_error(EINVAL, "assemble %s: the superblocks give a RAID 0 a "
                    "write-intent bitmap, which md never makes", aname);
      goto out;
    }
    for (i = 0; i < n; i++) {
      struct raid_bitmap_super bsb;

      if (!used[i])
        continue;
      r = bitmap_load(members[i], &sbs[i], fresh->bitmap_offset, &bsb, NULL, NULL);
      if (r < 0) {
        r = set_error(-r, "assemble %s: %s", aname, raid_get_error());
        goto out;
      }
      if (i == best || !have_bsb) {
        fresh_bsb = bsb;
        have_bsb = true;
      }
    }
  }

  /* Sizes from the disk are checked in 64 bits before they become a
   * 32-bit chunk size (0x800008 sectors would wrap to 4 KiB). */
  if (fresh->level != RAID_LEVEL_1 &&
      (fresh->chunksize == 0 ||
       (uint64_t)fresh->chunksize << SECTOR_SHIFT > RAID_CHUNK_MAX)) {
    r = set_error(EINVAL, "assemble %s: chunk size of %" PRIu32 " sectors is %s "
                  "(libraid supports %u to %u bytes)", aname, fresh->chunksize,
                  fresh->chunksize ? "too large" : "invalid", RAID_CHUNK_MIN,
                  RAID_CHUNK_MAX);
    goto out;
  }
  memset(&cfg, 0, sizeof cfg);
  cfg.name = aname;
  cfg.level = fresh->level;
  cfg.layout = fresh->level == RAID_LEVEL_5 || fresh->level == RAID_LEVEL_10
    ? (int)fresh->layout : RAID_LAYOUT_DEFAULT;
  cfg.chunk_size = fresh->level == RAID_LEVEL_1 ? 0
    : (uint32_t)((uint64_t)fresh->chunksize << SECTOR_SHIFT);
  cfg.raid_disks = fresh->raid_disks;
  cfg.member_size = fresh->size << SECTOR_SHIFT;
  cfg.metadata = raid_superblock_version(fresh);

  if (found < expected && !(flags & RAID_ASSEMBLE_RUN)) {
    r = set_error(EINVAL, "assemble %s: only %u of the %u members that were "
                  "active are present; refusing to start degraded without "
                  "--run", aname, found, expected);
    goto out;
  }
  r = array_new(&cfg, slots, moff, &a);
  if (r < 0)
    goto out;
  /* Recovering members hold data only below their recovery offset. */
  for (i = 0; i < a->raid_disks; i++)
    if (slots[i] && recov[i] != UINT64_MAX) {
      uint64_t done = MIN(recov[i], a->member_size);
      atomic_store(&a->recovered[i], done);
      atomic_store(&a->state[i], RAID_MEMBER_RECOVERING);
      atomic_fetch_add(&a->degraded, 1);
      raid_log(RAID_LOG_WARNING, "%s %s: member %s (role %u) is being rebuilt: "
               "%" PRIu64 " of %" PRIu64 " bytes done", a->pers->name, a->name,
               slots[i]->name, i, done, a->member_size);
    }
  if (!a->pers->enough(a)) {
    r = set_error(EINVAL, "assemble %s: too few members are in sync: %u of %u "
                  "roles are missing or still being rebuilt, %s tolerates %u",
                  aname, raid_array_degraded(a), a->raid_disks, a->pers->name,
                  a->pers->max_degraded(a));
    for (i = 0; i < a->raid_disks; i++)
      a->members[i] = NULL;
    raid_array_free(a);
    goto out;
  }
  if (a->level == RAID_LEVEL_5 && fresh->resync_offset != RAID_SB_MAX_SECTOR &&
      raid_array_degraded(a) > 0 && !(flags & RAID_ASSEMBLE_FORCE)) {
    r = dirty_degraded_error(a, fresh);
    for (i = 0; i < a->raid_disks; i++)
      a->members[i] = NULL;
    raid_array_free(a);
    goto out;
  }

  m = calloc(1, sizeof *m);
  if (m == NULL) {
    for (i = 0; i < a->raid_disks; i++)
      a->members[i] = NULL;
    raid_array_free(a);
    r = set_error(ENOMEM, "assemble %s: out of memory", aname);
    goto out;
  }
  pthread_mutex_init(&m->lock, NULL);
  m->sb = *fresh;
  m->sb.max_dev = MAX(fresh->max_dev, a->raid_disks);
  if (have_bsb) {
    /* As md does, the bitmap covers this array's resync range, whatever
     * sync_size said; its place must still hold it. */
    fresh_bsb.sync_size = bitmap_sync_size(a);
    a->bitmap = true;
    r = bitmap_new(&fresh_bsb, fresh->bitmap_offset, &m->bm);
    if (r == 0)
      r = bitmap_check_place(fresh, m->bm->offset, m->bm->area, members[best]->name);
    if (r == 0) {
      /* The bits of the freshest member: the chunks that may disagree. */
      struct raid_bitmap_super bsb;
      uint8_t *area = NULL;
      uint64_t len = 0;

      r = bitmap_load(members[best], &sbs[best], fresh->bitmap_offset, &bsb, &area, &len);
      if (r == 0)
        bitmap_load_bits(m->bm, area, len);
      raid_buf_free(area);
    }
    if (r < 0) {
      r = set_error(-r, "assemble %s: %s", aname, raid_get_error());
      a->meta = m;
      assembly_undo(a);
      goto out;
    }
  }
  for (i = 0; i < fresh->max_dev && i < RAID_SB_MAX_DEV; i++)
    m->awaited[i] = fresh->dev_roles[i] < fresh->raid_disks;
  for (i = 0; i < n; i++)
    if (used[i] && sbs[i].dev_number < RAID_SB_MAX_DEV)
      m->awaited[sbs[i].dev_number] = false;
  m->needs_resync = fresh->resync_offset != RAID_SB_MAX_SECTOR &&
    a->level != RAID_LEVEL_0;
  m->resync_done = m->needs_resync
    ? MIN(fresh->resync_offset, a->member_size >> SECTOR_SHIFT) << SECTOR_SHIFT
    : a->member_size;
  /* Forced: writes in flight when they left may be on some members only;
   * the whole array is resynced (unclean, as mdadm leaves it). */
  if (nforced && a->level != RAID_LEVEL_0) {
    m->needs_resync = true;
    m->resync_done = 0;
    /* A member taken back by force may miss more than the bits say. */
    if (m->bm)
      bitmap_set_all(m->bm, true);
  }
  /* Forced to start a RAID 5 that is degraded and unclean: its parity is
   * taken as it is and the array marked clean, as mdadm --assemble
   * --force does ("force-array"): a degraded RAID 5 has nothing to resync,
   * and the rebuild of the missing role makes every row's parity match
   * again.  So the next start needs no force. */
  if (a->level == RAID_LEVEL_5 && (flags & RAID_ASSEMBLE_FORCE) && m->needs_resync &&
      raid_array_degraded(a) > 0) {
    raid_log(RAID_LOG_WARNING, "%s %s: starting dirty degraded array (forced): rows "
             "being written when it stopped or lost members may read back wrong "
             "where the missing data comes from parity; marked clean",
             a->pers->name, a->name);
    m->needs_resync = false;
    m->resync_done = a->member_size;
  }
  for (j = 0; j < nb; j++)
    if (b[j].taken)
      m->forced[m->nforced++] = (struct raid_forced_member){
        .name = members[b[j].idx]->name, .role = b[j].role,
        .events_from = sbs[b[j].idx].events, .was_faulty = b[j].faulty };
  /* As in create, beyond the resync point mirrors read the first copy. */
  if (m->needs_resync)
    atomic_store(&a->resync_front, m->resync_done);
  for (i = 0; i < a->raid_disks; i++)
    if (repl_idx[i]) {
      struct raid_member *x = members[repl_idx[i] - 1];
      atomic_store(&a->repl_done[i], MIN(repl_off[i], a->member_size));
      atomic_store(&a->repl[i], x);
      raid_log(RAID_LOG_INFO, "%s %s: member %s is replacing %s (role %u)",
               a->pers->name, a->name, x->name, a->members[i] ? a->members[i]->name
               : "(missing)", i);
    }
  for (i = 0; i < nspares; i++)
    a->spares[a->nspares++] = members[spare_idx[i]];
  if (m->needs_resync && !nforced && m->resync_done == 0)
    raid_log(RAID_LOG_WARNING, "%s %s: the array needs a resync (new, or not "
             "stopped cleanly); parity or mirrors may disagree until then",
             a->pers->name, a->name);
  else if (m->needs_resync && !nforced)
    /* Stopped cleanly in the middle of a resync: it goes on from the
     * checkpoint the superblocks keep, as md's resync_offset does. */
    raid_log(RAID_LOG_WARNING, "%s %s: the array's resync was interrupted at byte "
             "%" PRIu64 " of %" PRIu64 " per member; parity or mirrors beyond it "
             "may disagree until it resumes and ends", a->pers->name, a->name,
             m->resync_done, a->member_size);
  a->meta = m;
  r = meta_start(a);
  if (r == 0 && nforced)
    r = forced_started(a);
  if (r < 0) {
    assembly_undo(a);
    goto out;
  }
  /* The array owns every member now: those it does not use are closed. */
  for (i = 0; i < n; i++)
    if (!used[i])
      raid_member_close(members[i]);
  *arrayp = a;
  r = 0;

 out:
  free(sbs);
  free(b);
  return r;
}

/* ---- members that come back ----------------------------------------------------- */

/* Is there a role with no working member (faulty or missing, nothing
 * rebuilding into it)? */
static bool
free_role(struct raid_array *a)
{
  bool free = false;
  unsigned i;

  pthread_mutex_lock(&a->conf_lock);
  for (i = 0; i < a->raid_disks && !free; i++) {
    int st = atomic_load(&a->state[i]);
    free = (st == RAID_MEMBER_FAULTY || st == RAID_MEMBER_MISSING) &&
      atomic_load(&a->repl[i]) == NULL;
  }
  pthread_mutex_unlock(&a->conf_lock);
  return free;
}

EXPORT int
raid_array_readd_check(struct raid_array *a, const struct raid_superblock *sb,
                       const char *who)
{
  struct array_meta *m = a->meta;
  struct raid_superblock *cur;
  unsigned own, k;
  int r = 0;

  if (m == NULL)
    return set_error(EINVAL, "array %s has no md metadata", a->name);
  if (memcmp(sb->set_uuid, m->sb.set_uuid, 16) != 0)
    return set_error(EINVAL, "member %s belongs to another array (%s), not to %s",
                     who, sb->set_name, a->name);
  own = sb->dev_number < sb->max_dev ? sb->dev_roles[sb->dev_number] : RAID_SB_ROLE_SPARE;
  if (own >= sb->raid_disks)
    return set_error(EINVAL, "member %s was %s of %s, not in a role: add it by hand "
                     "if it is wanted", who, own == RAID_SB_ROLE_SPARE ? "a spare" :
                     "marked faulty", a->name);
  if (raid_array_is_failed(a))
    return set_error(EIO, "array %s has failed: %s cannot bring its data back",
                     a->name, who);
  cur = malloc(sizeof *cur);
  if (cur == NULL)
    return set_error(ENOMEM, "array %s: out of memory", a->name);
  pthread_mutex_lock(&m->lock);
  meta_current_locked(a, cur);
  if (sb->dev_number >= RAID_SB_MAX_DEV || !m->awaited[sb->dev_number])
    r = set_error(EPERM, "member %s (device %u of %s) was not missing when the array "
                  "started: it was there, or failed or removed since; add it by "
                  "hand to rebuild it", who, sb->dev_number, a->name);
  pthread_mutex_unlock(&m->lock);
  if (r == 0 && !free_role(a))
    r = set_error(EBUSY, "array %s has no role free for %s: every role has a member",
                  a->name, who);
  /* Used on its own since it left (a split mirror): started without the
   * others, it marked faulty the devices the array still runs on, or its
   * events ran ahead. */
  if (r == 0 && raid_superblock_split(sb, cur, &k)) {
    if (k != sb->dev_number)
      r = set_error(EEXIST, "member %s of %s was used without device %u (role %u) "
                    "since it left, or that device joined after: a split mirror, "
                    "whose writes a rebuild would overwrite; not taking it back "
                    "(add it by hand to discard them)", who, a->name, k,
                    cur->dev_roles[k]);
    else
      r = set_error(EEXIST, "member %s of %s has newer events (%" PRIu64 ") than the "
                    "running array (%" PRIu64 "): it was used on its own since it left; "
                    "not taking it back (add it by hand to discard its writes)",
                    who, a->name, sb->events, cur->events);
  }
  free(cur);
  return r;
}

void
meta_taken_back(struct raid_array *a, unsigned dev_number)
{
  pthread_mutex_lock(&a->meta->lock);
  a->meta->awaited[dev_number] = false;
  pthread_mutex_unlock(&a->meta->lock);
}

EXPORT int
raid_array_superblock(const struct raid_array *a, struct raid_superblock *sb)
{
  if (a->meta == NULL)
    return set_error(EINVAL, "array %s has no md metadata", a->name);
  pthread_mutex_lock(&a->meta->lock);
  meta_current_locked((struct raid_array *)a, sb);   /* takes conf_lock */
  pthread_mutex_unlock(&a->meta->lock);
  return 0;
}

EXPORT int
raid_array_clean(const struct raid_array *a)
{
  return a->meta && atomic_load(&a->meta->says_clean);
}

bool
meta_may_say_clean(struct raid_array *a)
{
  return a->meta && atomic_load(&a->meta->may_say_clean);
}

EXPORT int
raid_array_needs_resync(const struct raid_array *a)
{
  int r = 0;

  /* Under the lock: the sync engine clears it as the resync ends, while
   * raidd's status reads it (ThreadSanitizer saw the race). */
  if (a->meta) {
    pthread_mutex_lock(&a->meta->lock);
    r = a->meta->needs_resync;
    pthread_mutex_unlock(&a->meta->lock);
  }
  return r;
}

EXPORT int
raid_array_bitmap(struct raid_array *a, struct raid_bitmap_info *info)
{
  struct array_meta *m = a->meta;

  memset(info, 0, sizeof *info);
  if (m == NULL)
    return 0;
  pthread_mutex_lock(&m->lock);
  if (m->bm) {
    info->present = 1;
    info->offset = m->bm->offset;
    info->chunk_size = m->bm->sb.chunksize;
    info->chunks = m->bm->chunks;
    info->pages = DIV_ROUND_UP(m->bm->chunks, BITMAP_PAGE_CHUNKS);
    info->dirty = bitmap_dirty(m->bm, &info->pages_used);
    info->events = m->bm->sb.events;
    info->events_cleared = m->bm->sb.events_cleared;
    info->daemon_sleep = m->bm->sb.daemon_sleep;
    info->write_behind = m->bm->sb.write_behind;
  }
  info->behind_writes = atomic_load(&a->behind_writes);
  pthread_mutex_unlock(&m->lock);
  return 0;
}

/* mdadm --grow --bitmap=internal|none on a running array.  Under the lock
 * the bitmap and the superblocks cannot change under us; writes in flight
 * are covered by every bit being set (see the top).  Not from a thread
 * that runs a queue with requests of A in flight (array_quiesce()). */
EXPORT int
raid_array_set_bitmap(struct raid_array *a, int mode, uint32_t want_chunk)
{
  struct array_meta *m = a->meta;
  struct live l[2 * RAID_MAX_MEMBERS + RAID_MAX_MEMBERS];
  struct raid_bitmap_super b;
  struct meta_bitmap *bm = NULL;
  uint64_t room = UINT64_MAX;
  uint32_t chunk;
  unsigned i, n;
  int r;

  if (m == NULL)
    return set_error(EINVAL, "array %s has no md metadata", a->name);
  if (mode != RAID_BITMAP_INTERNAL && mode != RAID_BITMAP_NONE)
    return set_error(EINVAL, "array %s: bitmap mode %d is not internal or none",
                     a->name, mode);
  if (want_chunk && (mode == RAID_BITMAP_NONE || !IS_POWER_OF_2(want_chunk) ||
                     want_chunk < RAID_BITMAP_CHUNK_MIN))
    return set_error(EINVAL, "array %s: bitmap chunk %" PRIu32 " bytes is invalid%s",
                     a->name, want_chunk, mode == RAID_BITMAP_NONE
                     ? ": there is no bitmap to have one"
                     : ": it must be a power of two of at least 4096 bytes");
  if (mode == RAID_BITMAP_INTERNAL && a->level == RAID_LEVEL_0)
    return set_error(EINVAL, "array %s: RAID 0 cannot have a write-intent bitmap: "
                     "it has no copies or parity to resync (md refuses one too)",
                     a->name);
  pthread_mutex_lock(&m->lock);
  if (mode == RAID_BITMAP_NONE) {
    if (m->bm == NULL) {
      pthread_mutex_unlock(&m->lock);
      return set_error(ENOENT, "array %s has no write-intent bitmap to remove", a->name);
    }
    struct bitmap_run *run = bitmap_run_take(a);

    bm = m->bm;
    m->bm = NULL;
    a->bitmap = false;
    r = meta_write_locked(a, true);
    pthread_mutex_unlock(&m->lock);
    /* Requests that passed its gate finish (the writer releases the
     * parked ones, without writing a bitmap that is gone), then it goes. */
    array_quiesce(a);
    bitmap_run_free(run);
    bitmap_free(bm);
    if (r == 0)
      raid_log(RAID_LOG_INFO, "%s %s: write-intent bitmap removed", a->pers->name, a->name);
    return r;
  }
  r = 0;
  if (m->bm)
    r = set_error(EEXIST, "array %s has a write-intent bitmap already (chunk %" PRIu32
                  " bytes)", a->name, m->bm->sb.chunksize);
  else if (a->metadata == RAID_METADATA_1_0)
    r = set_error(ENOSPC, "array %s: metadata 1.0 keeps the bitmap between the data "
                  "and the superblock, and this array was made without room there; "
                  "create it with a bitmap instead", a->name);
  if (r < 0) {
    pthread_mutex_unlock(&m->lock);
    return r;
  }
  /* mdadm's hot-add room: between the superblock and the data offset,
   * less 4 KiB for the superblock and 4 KiB for a bad block log. */
  n = live_members(a, l);
  for (i = 0; i < n; i++) {
    uint64_t so = l[i].m->super_offset, dof = l[i].m->data_offset >> SECTOR_SHIFT;

    room = MIN(room, dof > so + 16 ? dof - so - 16 : 0);
  }
  r = bitmap_choose_chunk(a->name, room, bitmap_sync_size(a), want_chunk, &chunk);
  if (r == 0) {
    bitmap_sb_init(a, m, chunk, &b);
    b.events_cleared = m->sb.events;
    r = bitmap_new(&b, 8, &bm);
  }
  for (i = 0; r == 0 && i < n; i++) {
    struct raid_superblock *xs = calloc(1, sizeof *xs);

    if (xs == NULL) {
      r = set_error(ENOMEM, "array %s: out of memory", a->name);
      break;
    }
    xs->super_offset = l[i].m->super_offset;
    xs->data_offset = l[i].m->data_offset >> SECTOR_SHIFT;
    xs->size = a->member_size >> SECTOR_SHIFT;
    xs->max_dev = m->sb.max_dev;
    r = bitmap_check_place(xs, bm->offset, bm->area, l[i].m->name);
    free(xs);
  }
  if (r < 0 && bm) {
    bitmap_free(bm);
    bm = NULL;
  }
  if (r == 0) {
    struct bitmap_run *run = NULL;

    /* Every bit set on every member before the superblocks point at it:
     * writes in flight that passed no gate are covered; the writer clears
     * the bits once idle. */
    bitmap_set_all(bm, true);
    m->bm = bm;
    a->bitmap = true;
    r = meta_write_locked(a, true);
    if (r == 0) {
      r = bitmap_run_new(a, bm, &run);
      if (r == 0)
        atomic_store(&a->gate[GATE_BITMAP], bitmap_run_gate(run));
      else {
        /* Without its writer it cannot stay: the superblocks drop it. */
        m->bm = NULL;
        a->bitmap = false;
        meta_write_locked(a, true);
        bitmap_free(bm);
      }
    }
    else {
      /* No member took it: nothing points at it. */
      m->bm = NULL;
      a->bitmap = false;
      bitmap_free(bm);
    }
  }
  pthread_mutex_unlock(&m->lock);
  if (r == 0)
    raid_log(RAID_LOG_INFO, "%s %s: write-intent bitmap added: %" PRIu32 "-byte chunks",
             a->pers->name, a->name, chunk);
  return r;
}
