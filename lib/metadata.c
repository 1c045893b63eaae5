/* Arrays with md v1.2 metadata: create, assemble, keep superblocks current.
 *
 * Every member carries md's version-1 superblock 4 KiB from its start
 * (superblock.c encodes it).  What we keep in it, as md does:
 *  - set-wide: set UUID, name ("host:name", as mdadm writes it), creation
 *    time, level, layout, chunk, raid_disks, per-member size;
 *  - per member: its device number (an index into dev_roles[], not its
 *    role), device UUID, data offset and size;
 *  - state: an events counter bumped on every update, the role of every
 *    device number (0xfffe faulty, 0xffff spare), and resync_offset, which
 *    is "all" (MaxSector) while the array is clean and 0 while it is
 *    running (dirty), so that an array not stopped cleanly is known to need
 *    a resync.
 *
 * Assembly follows md (super_1_validate() and mdadm's Assemble.c): all
 * members must carry one set UUID; the superblock with the most events is
 * the truth about roles; a member whose events are behind is stale and not
 * used (it needs recovery); a member that the freshest superblock calls
 * faulty or spare is not used as an active member; two members claiming
 * one role are refused.  An array that would start with fewer members
 * than were active at its last update needs RAID_ASSEMBLE_RUN, and one
 * missing more than its level tolerates never starts.
 *
 * Updates are synchronous and rare (start, stop, a member failing), and
 * are written to every member still in sync before the I/O that caused
 * them completes: so a failed member can never come back as current after
 * a crash, since the survivors' events have moved past it.
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
  uint32_t dev_number[RAID_MAX_MEMBERS];
  uint8_t dev_uuid[RAID_MAX_MEMBERS][16];
  uint64_t data_size[RAID_MAX_MEMBERS]; /* sectors */
  bool needs_resync;
};

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

/* md's level numbers are ours; superblock layouts likewise. */
static int
level_supported(int32_t level)
{
  return level == 0 || level == 1 || level == 5 || level == 10;
}

/* The superblock for member SLOT as things stand.  Caller holds the lock. */
static void
meta_build(struct raid_array *a, unsigned slot, struct raid_superblock *sb)
{
  struct array_meta *m = a->meta;
  unsigned i;

  *sb = m->sb;
  sb->dev_number = m->dev_number[slot];
  memcpy(sb->device_uuid, m->dev_uuid[slot], 16);
  sb->data_offset = a->moff[slot] >> SECTOR_SHIFT;
  sb->data_size = m->data_size[slot];
  sb->super_offset = RAID_SB_OFFSET_1_2;
  sb->feature_map = 0;
  sb->recovery_offset = 0;
  /* md's super_1_sync(): every device number faulty, then the members we
   * know: in sync ones get their role, failed ones stay faulty. */
  for (i = 0; i < sb->max_dev; i++)
    sb->dev_roles[i] = RAID_SB_ROLE_FAULTY;
  for (i = 0; i < a->raid_disks; i++)
    if (a->members[i] && atomic_load(&a->state[i]) == RAID_MEMBER_IN_SYNC)
      sb->dev_roles[m->dev_number[i]] = i;
}

/* Bump events and write every in-sync member's superblock.  A member whose
 * write fails is failed (without recursing into a new update) and the
 * round is repeated, so the survivors record it.  Caller holds the lock. */
static int
meta_write_locked(struct raid_array *a)
{
  struct array_meta *m = a->meta;
  uint8_t *buf = raid_buf_alloc(RAID_SB_BYTES);
  struct raid_superblock sb;
  unsigned i, written;
  bool again;
  int r, err = 0;

  if (buf == NULL)
    return set_error(ENOMEM, "array %s: out of memory", a->name);
  do {
    again = false;
    written = 0;
    m->sb.events++;
    m->sb.utime = md_time();
    for (i = 0; i < a->raid_disks; i++) {
      if (a->members[i] == NULL || !slot_ok(a, i))
        continue;
      meta_build(a, i, &sb);
      raid_superblock_encode(&sb, buf);
      r = member_pio(a->members[i], true, buf, RAID_SB_BYTES,
                     (uint64_t)RAID_SB_OFFSET_1_2 << SECTOR_SHIFT);
      if (r == 0) {
        written++;
        continue;
      }
      err = r;
      int expected = RAID_MEMBER_IN_SYNC;
      if (atomic_compare_exchange_strong(&a->state[i], &expected, RAID_MEMBER_FAULTY)) {
        atomic_fetch_add(&a->degraded, 1);
        if (!a->pers->enough(a))
          atomic_store(&a->failed, true);
        raid_log(RAID_LOG_ERR, "%s %s: member %s (role %u) failed: %s",
                 a->pers->name, a->name, a->members[i]->name, i, raid_get_error());
        again = true;
      }
    }
  } while (again && written > 0);
  raid_buf_free(buf);
  return written > 0 ? 0 : err;
}

void
meta_member_failed(struct raid_array *a, unsigned slot)
{
  pthread_mutex_lock(&a->meta->lock);
  meta_write_locked(a);
  pthread_mutex_unlock(&a->meta->lock);
}

void
meta_stop(struct raid_array *a)
{
  struct array_meta *m = a->meta;

  pthread_mutex_lock(&m->lock);
  if (!m->needs_resync)
    m->sb.resync_offset = RAID_SB_MAX_SECTOR;
  if (meta_write_locked(a) < 0)
    raid_log(RAID_LOG_ERR, "%s %s: could not mark the array clean: %s",
             a->pers->name, a->name, raid_get_error());
  pthread_mutex_unlock(&m->lock);
  pthread_mutex_destroy(&m->lock);
  free(m);
  a->meta = NULL;
}

/* Mark the array running (dirty) on every member. */
static int
meta_start(struct raid_array *a)
{
  int r;

  pthread_mutex_lock(&a->meta->lock);
  a->meta->sb.resync_offset = 0;
  r = meta_write_locked(a);
  pthread_mutex_unlock(&a->meta->lock);
  return r;
}

/* ---- create ---------------------------------------------------------------- */

EXPORT int
raid_array_create(const struct raid_config *cfg, struct raid_member *const *members,
                  unsigned flags, struct raid_array **arrayp)
{
  struct raid_config c = *cfg;
  struct raid_array *a;
  struct array_meta *m;
  char host[64] = "";
  unsigned i;
  int r;

  *arrayp = NULL;
  if (flags & ~RAID_CREATE_ASSUME_CLEAN)
    return set_error(EINVAL, "array %s: unknown create flags 0x%x",
                     cfg->name ? cfg->name : "md", flags);
  for (i = 0; i < cfg->raid_disks && i < RAID_MAX_MEMBERS; i++)
    if (members[i] == NULL)
      return set_error(EINVAL, "array %s: role %u has no member: every member "
                       "must be present to create an array",
                       cfg->name ? cfg->name : "md", i);
  if (c.data_offset == 0)
    c.data_offset = RAID_DATA_OFFSET_DEFAULT;
  if (c.data_offset < (RAID_SB_OFFSET_1_2 << SECTOR_SHIFT) + RAID_SB_BYTES)
    return set_error(EINVAL, "array %s: data offset %" PRIu64 " overlaps the "
                     "superblock at 4096..8191", cfg->name ? cfg->name : "md",
                     c.data_offset);
  if (c.name && (strlen(c.name) == 0 || strlen(c.name) > 32 || strchr(c.name, ':')))
    return set_error(EINVAL, "array %s: the name must be 1 to 32 characters "
                     "without ':'", c.name);
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
  m->sb.resync_offset = (flags & RAID_CREATE_ASSUME_CLEAN) || a->level == RAID_LEVEL_0
    ? RAID_SB_MAX_SECTOR : 0;
  m->needs_resync = m->sb.resync_offset != RAID_SB_MAX_SECTOR;
  for (i = 0; i < a->raid_disks; i++) {
    m->dev_number[i] = i;
    if ((r = random_bytes(m->dev_uuid[i], 16)) < 0)
      goto fail;
    /* RAID 0 records exactly the size it uses, so that md sees one zone. */
    m->data_size[i] = a->level == RAID_LEVEL_0
      ? a->member_size >> SECTOR_SHIFT
      : (a->members[i]->size - a->moff[i]) >> SECTOR_SHIFT;
  }
  a->meta = m;
  r = meta_start(a);
  if (r < 0)
    goto fail;
  *arrayp = a;
  return 0;

 fail:
  a->meta = NULL;
  pthread_mutex_destroy(&m->lock);
  free(m);
  for (i = 0; i < a->raid_disks; i++)
    a->members[i] = NULL;       /* still the caller's */
  raid_array_free(a);
  return r;
}

/* ---- assemble ----------------------------------------------------------------- */

EXPORT int
raid_superblock_read(struct raid_member *member, struct raid_superblock *sb)
{
  uint8_t buf[RAID_SB_BYTES];
  int r;

  if (member->size < (RAID_SB_OFFSET_1_2 << SECTOR_SHIFT) + RAID_SB_BYTES)
    return set_error(EINVAL, "member %s: too small (%" PRIu64 " bytes) to hold "
                     "an md superblock", member->name, member->size);
  r = member_pio(member, false, buf, sizeof buf,
                 (uint64_t)RAID_SB_OFFSET_1_2 << SECTOR_SHIFT);
  if (r < 0)
    return r;
  return raid_superblock_decode(buf, RAID_SB_OFFSET_1_2,
                                member->size >> SECTOR_SHIFT, member->name, sb);
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

EXPORT int
raid_array_assemble(const char *name, struct raid_member *const *members,
                    unsigned n, unsigned flags, struct raid_array **arrayp)
{
  struct raid_superblock *sbs = NULL, *fresh;
  struct raid_member *slots[RAID_MAX_MEMBERS] = { NULL };
  unsigned owner[RAID_MAX_MEMBERS];
  uint64_t moff[RAID_MAX_MEMBERS] = { 0 };
  bool used[RAID_MAX_MEMBERS] = { false };
  struct raid_config cfg;
  struct raid_array *a = NULL;
  struct array_meta *m;
  char uuid[40], uuid2[40];
  const char *aname;
  unsigned i, j, found = 0, expected = 0, best = 0;
  int r;

  *arrayp = NULL;
  if (flags & ~(RAID_ASSEMBLE_RUN))
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
  if (sbs == NULL)
    return set_error(ENOMEM, "assemble: out of memory");
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
  for (i = 0; i < fresh->max_dev; i++)
    if (fresh->dev_roles[i] < fresh->raid_disks)
      expected++;

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
    if (role == RAID_SB_ROLE_FAULTY) {
      raid_log(RAID_LOG_WARNING, "%s: member %s is marked faulty in the array "
               "(events %" PRIu64 "); not used", aname, members[i]->name,
               fresh->events);
      continue;
    }
    if (role >= fresh->raid_disks) {
      raid_log(RAID_LOG_WARNING, "%s: member %s is a spare; not used as an "
               "active member", aname, members[i]->name);
      continue;
    }
    if (sb->events < fresh->events) {
      raid_log(RAID_LOG_WARNING, "%s: member %s (role %u) is stale: events "
               "%" PRIu64 " < %" PRIu64 "; not used, it needs recovery",
               aname, members[i]->name, role, sb->events, fresh->events);
      continue;
    }
    if ((sb->feature_map & RAID_SB_FEATURE_RECOVERY_OFFSET) &&
        sb->recovery_offset != RAID_SB_MAX_SECTOR) {
      raid_log(RAID_LOG_WARNING, "%s: member %s (role %u) was being recovered "
               "(%" PRIu64 " sectors done); not used, it needs recovery",
               aname, members[i]->name, role, sb->recovery_offset);
      continue;
    }
    if (slots[role]) {
      r = set_error(EINVAL, "assemble %s: members %s and %s both claim role %u",
                    aname, slots[role]->name, members[i]->name, role);
      goto out;
    }
    slots[role] = members[i];
    owner[role] = i;
    moff[role] = sb->data_offset << SECTOR_SHIFT;
    used[i] = true;
    found++;
  }

  memset(&cfg, 0, sizeof cfg);
  cfg.name = aname;
  cfg.level = fresh->level;
  cfg.layout = fresh->level == RAID_LEVEL_5 || fresh->level == RAID_LEVEL_10
    ? (int)fresh->layout : RAID_LAYOUT_DEFAULT;
  cfg.chunk_size = fresh->level == RAID_LEVEL_1 ? 0 : fresh->chunksize << SECTOR_SHIFT;
  cfg.raid_disks = fresh->raid_disks;
  cfg.member_size = fresh->size << SECTOR_SHIFT;

  if (found < expected && !(flags & RAID_ASSEMBLE_RUN)) {
    r = set_error(EINVAL, "assemble %s: only %u of the %u members that were "
                  "active are present; refusing to start degraded without "
                  "--run", aname, found, expected);
    goto out;
  }
  r = array_new(&cfg, slots, moff, &a);
  if (r < 0)
    goto out;

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
  m->needs_resync = fresh->resync_offset != RAID_SB_MAX_SECTOR &&
    a->level != RAID_LEVEL_0;
  for (i = 0; i < a->raid_disks; i++) {
    if (slots[i] == NULL)
      continue;
    m->dev_number[i] = sbs[owner[i]].dev_number;
    memcpy(m->dev_uuid[i], sbs[owner[i]].device_uuid, 16);
    m->data_size[i] = sbs[owner[i]].data_size;
  }
  if (m->needs_resync)
    raid_log(RAID_LOG_WARNING, "%s %s: the array was not stopped cleanly; "
             "parity or mirrors may disagree until it is resynced",
             a->pers->name, a->name);
  a->meta = m;
  r = meta_start(a);
  if (r < 0) {
    a->meta = NULL;
    pthread_mutex_destroy(&m->lock);
    free(m);
    for (i = 0; i < a->raid_disks; i++)
      a->members[i] = NULL;
    raid_array_free(a);
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
  return r;
}

EXPORT int
raid_array_superblock(const struct raid_array *a, struct raid_superblock *sb)
{
  if (a->meta == NULL)
    return set_error(EINVAL, "array %s has no md metadata", a->name);
  pthread_mutex_lock(&a->meta->lock);
  *sb = a->meta->sb;
  pthread_mutex_unlock(&a->meta->lock);
  return 0;
}

EXPORT int
raid_array_needs_resync(const struct raid_array *a)
{
  return a->meta && a->meta->needs_resync;
}

/* ---- resync -------------------------------------------------------------------- */

/* The initial sync of a new array, or after an unclean shutdown: make every
 * copy agree (RAID 1/10) and every parity chunk match (RAID 5).  Reading a
 * range through the array and writing it back does exactly that: a mirror
 * read comes from one copy and the write goes to all, and a RAID 5 write of
 * whole stripes computes parity from the data alone.  It must run with no
 * other writer on the array (raidctl create runs it before serving). */
#define RESYNC_UNIT (4u << 20)

EXPORT int
raid_array_resync(struct raid_array *a, raid_progress_fn progress, void *opaque)
{
  uint64_t unit, pos = 0;
  uint8_t *buf;
  int r = 0;

  unit = raid_array_stripe_width(a);
  unit = unit > RESYNC_UNIT ? unit : RESYNC_UNIT / unit * unit;
  if (unit > RAID_MAX_REQUEST)
    unit = RAID_MAX_REQUEST / raid_array_stripe_width(a) * raid_array_stripe_width(a);
  if (unit == 0)
    unit = RAID_MAX_REQUEST;
  buf = raid_buf_alloc(unit);
  if (buf == NULL)
    return set_error(ENOMEM, "array %s: out of memory", a->name);
  if (a->level != RAID_LEVEL_0) {
    while (pos < a->size) {
      size_t len = MIN(unit, a->size - pos);

      if ((r = raid_pread(a, buf, len, pos)) < 0 ||
          (r = raid_pwrite(a, buf, len, pos, 0)) < 0)
        break;
      pos += len;
      if (progress && progress(opaque, pos, a->size) != 0) {
        r = set_error(EINTR, "array %s: resync stopped at %" PRIu64 " of %"
                      PRIu64 " bytes", a->name, pos, a->size);
        break;
      }
    }
    if (r == 0)
      r = raid_flush(a);
  }
  raid_buf_free(buf);
  if (r == 0 && a->meta) {
    pthread_mutex_lock(&a->meta->lock);
    a->meta->needs_resync = false;
    pthread_mutex_unlock(&a->meta->lock);
  }
  return r;
}
