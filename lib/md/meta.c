/* Arrays with md version-1 metadata: keep the superblocks current (the
 * write path, and the core's door, struct meta_ops).  Creating is
 * create.c's, assembling assemble.c's, re-adding readd.c's, a bitmap on a
 * running array set-bitmap.c's, reading a member's superblock read.c's.
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
 * over the set bits only (sync/pass.c).  A clean stop with every role in
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

#include "internal.h"
#include "md.h"



/* md's ctime and utime as md itself writes them: seconds since the epoch
 * and nothing else.  md_p.h still says the top 24 bits may hold
 * microseconds, but the kernel's super_1_validate() takes all 64 bits as
 * the mddev's ctime, and update_array_info() (mdadm --grow --size,
 * --raid-devices, --bitmap: SET_ARRAY_INFO) refuses with EINVAL when
 * the ctime mdadm sends back, which GET_ARRAY_INFO clamped to 32 bits, is
 * not that: microseconds up there made md's own grow fail on every array
 * we created.  mdadm writes time(0) (super1.c), md
 * ktime_get_real_seconds(). */
uint64_t
md_time(void)
{
  return (uint64_t)time(NULL);
}

int
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
 * every member), else (creating) the room mdadm leaves for it.  A new
 * array's members (created, or raid_array_new()) keep that room with no
 * bitmap too, as mdadm's create does (avail_size1()) and md's grow
 * (meta_grow_end()): so md can add a bitmap later, and a member of the
 * same size that mdadm --add prepares holds as much data.  An array laid
 * out by its superblocks keeps what they say. */
uint64_t
meta_bitmap_reserve(const struct raid_array *a, uint64_t size)
{
  if (a->metadata != RAID_METADATA_1_0)
    return 0;
  if (a->meta && a->meta->bm)
    return (uint64_t)-(int64_t)a->meta->bm->offset << SECTOR_SHIFT;
  if (!a->bitmap && (a->meta || a->found_layout))
    return 0;
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
  .barrier = meta_barrier,
};

/* md's level numbers are ours; superblock layouts likewise. */
int
level_supported(int32_t level)
{
  return level == 0 || level == 1 || level == 5 || level == 10;
}

/* One member whose superblock we keep current, with what to write there. */

/* Every member still in the array: roles in sync or recovering,
 * replacements, spares.  Failed members are not written (md leaves them
 * alone: their stale events keep them out). */
unsigned
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
  sb->feature_map = l->features | (m->bm ? RAID_SB_FEATURE_BITMAP : 0) |
    (m->sb.feature_map & (RAID_SB_FEATURE_RESHAPE_ACTIVE | RAID_SB_FEATURE_RESHAPE_BACKWARDS));
  /* A reshape moving the data offset: the new shape's start, from this
   * member's data offset (every role's moves by the same). */
  sb->new_offset = 0;
  if ((sb->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE) && l->slot >= 0 &&
      a->geo_new && a->geo_new->shift) {
    sb->feature_map |= RAID_SB_FEATURE_NEW_OFFSET;
    sb->new_offset = (int32_t)((int64_t)a->geo_new->shift >> SECTOR_SHIFT);
  }
  sb->bitmap_offset = m->bm ? m->bm->offset : 0;
  sb->devflags = (uint8_t)((sb->devflags & ~RAID_SB_DEVFLAG_WRITE_MOSTLY) |
                           (l->m->write_mostly ? RAID_SB_DEVFLAG_WRITE_MOSTLY : 0));
  sb->recovery_offset = l->features ? l->recovery >> SECTOR_SHIFT : 0;
  meta_roles(all, n, sb);
}

/* The array's superblock as an update would write it now, roles and all
 * (m->sb's roles are those of the last superblocks read, not kept
 * current).  Caller holds the lock. */
void
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
int
meta_write_locked(struct raid_array *a, bool bump)
{
  struct array_meta *m = a->meta;
  uint8_t *buf = raid_buf_alloc(RAID_SB_BYTES);
  struct live l[2 * RAID_MAX_MEMBERS + RAID_MAX_MEMBERS];
  bool flushed[2 * RAID_MAX_MEMBERS + RAID_MAX_MEMBERS];
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
    /* Every member's cache flushed before any superblock is written: a
     * superblock vouches for what the others hold too (a reshape's
     * checkpoint, a recovery point), and a member whose own write a power
     * cut then stops (one event behind, which assembly takes, md's margin)
     * must hold it as well.  A member whose flush failed is flushed
     * again by its write below (member_pio()), which fails it then. */
    for (i = 0; i < n; i++)
      flushed[i] = n > 1 && member_flush_sync(l[i].m) == 0;
    for (i = 0; i < n; i++) {
      meta_build(a, l, n, &l[i], &sb);
      raid_superblock_encode(&sb, buf);
      /* The bitmap first, with these events (see the top of the file). */
      r = m->bm && bumped ? bitmap_write(m->bm, l[i].m) : 0;
      if (r == 0 && flushed[i])
        r = member_write_fua(l[i].m, buf, RAID_SB_BYTES,
                             l[i].m->super_offset << SECTOR_SHIFT);
      else if (r == 0)
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
int
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
void
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
