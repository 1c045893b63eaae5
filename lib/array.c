/* Arrays: assembly and validation, the request life cycle shared by every
 * personality, member failure, and the public asynchronous entry points.
 *
 * A request (struct raid_request) is reference counted: the submitter holds
 * one reference while it issues member I/Os, and every member I/O holds one
 * until its completion handler has run.  A handler may issue more member
 * I/O (a retry on a mirror, RAID 5's write phase after its read phase),
 * taking new references before its own is dropped, so the count only
 * reaches zero when the request is really over.  The user's callback then
 * runs from the queue's run loop, never from inside raid_aio_*().
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static const struct personality *
find_personality(int level)
{
  switch (level) {
  case RAID_LEVEL_0: return &raid0_personality;
  case RAID_LEVEL_1: return &raid1_personality;
  case RAID_LEVEL_5: return &raid5_personality;
  case RAID_LEVEL_10: return &raid10_personality;
  default: return NULL;
  }
}

/* Work out how much of each member holds data: the configured size, or
 * the smallest member's, refusing members too small for it and (when it
 * was not configured) members so different that most space would be lost. */
static int
choose_member_size(struct raid_array *a, const struct raid_config *cfg,
                   struct raid_member *const *members)
{
  const struct raid_member *small = NULL, *big = NULL;
  uint64_t min = UINT64_MAX, max = 0, unit;
  unsigned i;

  for (i = 0; i < a->raid_disks; i++) {
    const struct raid_member *m = members[i];
    uint64_t avail, end;

    if (m == NULL)
      continue;
    end = meta_data_end(a->metadata, meta_bitmap_reserve(a, m->size), m->size);
    if (end <= a->moff[i])
      return set_error(EINVAL, "array %s: member %s is too small: %" PRIu64
                       " bytes, not more than the data offset %" PRIu64 "%s",
                       a->name, m->name, m->size, a->moff[i],
                       end < m->size ? " and the metadata 1.0 superblock at its end" : "");
    avail = end - a->moff[i];
    if (cfg->member_size && avail < cfg->member_size)
      return set_error(EINVAL, "array %s: member %s is too small: %" PRIu64
                       " bytes after the data offset, the array needs %" PRIu64,
                       a->name, m->name, avail, cfg->member_size);
    if (avail < min) { min = avail; small = m; }
    if (avail > max) { max = avail; big = m; }
    if (m->lbs > a->lbs)
      a->lbs = m->lbs;
  }
  if (small == NULL)
    return set_error(EINVAL, "array %s: no member present", a->name);
  if (cfg->member_size)
    min = cfg->member_size;
  else if (max / 2 > min)
    return set_error(EINVAL, "array %s: members differ too much in size: %s has "
                     "%" PRIu64 " bytes, %s has %" PRIu64 "; set the member size "
                     "to use only %" PRIu64 " bytes of each",
                     a->name, small->name, min, big->name, max, min);

  /* Striped levels use whole chunks, as md does; a mirror whole 4 KiB
   * blocks so the array keeps 4K-aligned I/O aligned. */
  unit = a->level == RAID_LEVEL_1 ? 4096 : a->chunk_size;
  if (unit < a->lbs)
    unit = a->lbs;
  a->member_size = min / unit * unit;
  if (a->member_size == 0)
    return set_error(EINVAL, "array %s: member %s is too small: %" PRIu64
                     " bytes after the data offset, less than one %s of %" PRIu64,
                     a->name, small->name, min,
                     a->level == RAID_LEVEL_1 ? "block" : "chunk", unit);
  return 0;
}

static bool
level_has_chunks(int level)
{
  return level != RAID_LEVEL_1;
}

/* array_new(); QUIET for raid_config_check(), whose array never runs. */
static int
array_build(const struct raid_config *cfg, struct raid_member *const *members,
            const uint64_t *moff, bool quiet, struct raid_array **arrayp)
{
  struct raid_array *a;
  const struct personality *pers;
  const char *name = cfg->name ? cfg->name : "md";
  unsigned i, j, missing = 0;
  int r;

  *arrayp = NULL;
  pers = find_personality(cfg->level);
  if (pers == NULL)
    return set_error(EINVAL, "array %s: unknown RAID level %d (0, 1, 5 and 10 "
                     "are supported)", name, cfg->level);
  if (cfg->raid_disks == 0 || cfg->raid_disks > RAID_MAX_MEMBERS)
    return set_error(EINVAL, "array %s: %u members: must be 1 to %u",
                     name, cfg->raid_disks, RAID_MAX_MEMBERS);
  if (cfg->data_offset % RAID_SECTOR_SIZE)
    return set_error(EINVAL, "array %s: data offset %" PRIu64 " is not a "
                     "multiple of %u bytes", name, cfg->data_offset,
                     RAID_SECTOR_SIZE);
  if (meta_version(cfg->metadata) < 0)
    return set_error(EINVAL, "array %s: metadata version 0x%x is unknown (1.0, "
                     "1.1 and 1.2 are)", name, (unsigned)cfg->metadata);
  if (cfg->bitmap != RAID_BITMAP_DEFAULT && cfg->bitmap != RAID_BITMAP_NONE &&
      cfg->bitmap != RAID_BITMAP_INTERNAL)
    return set_error(EINVAL, "array %s: bitmap mode %d is unknown (default, none "
                     "and internal are)", name, cfg->bitmap);
  if (cfg->bitmap == RAID_BITMAP_INTERNAL && cfg->level == RAID_LEVEL_0)
    return set_error(EINVAL, "array %s: RAID 0 cannot have a write-intent bitmap: "
                     "it has no copies or parity to resync (md refuses one too)",
                     name);
  if (cfg->bitmap_chunk && (!IS_POWER_OF_2(cfg->bitmap_chunk) ||
                            cfg->bitmap_chunk < RAID_BITMAP_CHUNK_MIN))
    return set_error(EINVAL, "array %s: bitmap chunk %" PRIu32 " bytes is invalid: "
                     "it must be a power of two of at least %u bytes", name,
                     cfg->bitmap_chunk, RAID_BITMAP_CHUNK_MIN);
  if (cfg->bitmap_chunk && cfg->bitmap == RAID_BITMAP_NONE)
    return set_error(EINVAL, "array %s: a bitmap chunk is given but the array "
                     "has no bitmap", name);
  if (cfg->write_behind > RAID_BITMAP_WRITE_BEHIND_MAX)
    return set_error(EINVAL, "array %s: write-behind %" PRIu32 " is out of range "
                     "(1 to %u)", name, cfg->write_behind, RAID_BITMAP_WRITE_BEHIND_MAX);
  if (cfg->write_behind && cfg->level != RAID_LEVEL_1)
    return set_error(EINVAL, "array %s: write-behind is for RAID 1 only (md's "
                     "write-mostly mirrors)", name);
  if (cfg->write_behind && cfg->bitmap == RAID_BITMAP_NONE)
    return set_error(EINVAL, "array %s: write-behind needs the write-intent "
                     "bitmap, which keeps the chunks behind for a resync", name);
  if (cfg->member_size % RAID_SECTOR_SIZE)
    return set_error(EINVAL, "array %s: member size %" PRIu64 " is not a "
                     "multiple of %u bytes", name, cfg->member_size,
                     RAID_SECTOR_SIZE);
  if (level_has_chunks(cfg->level) && cfg->chunk_size != 0 &&
      (!IS_POWER_OF_2(cfg->chunk_size) || cfg->chunk_size < RAID_CHUNK_MIN ||
       cfg->chunk_size > RAID_CHUNK_MAX))
    return set_error(EINVAL, "array %s: chunk size %" PRIu32 " is invalid: it "
                     "must be a power of two from %u to %u bytes",
                     name, cfg->chunk_size, RAID_CHUNK_MIN, RAID_CHUNK_MAX);
  for (i = 0; i < cfg->raid_disks; i++)
    for (j = 0; j < i; j++)
      if (members[i] && members[i] == members[j])
        return set_error(EINVAL, "array %s: member %s is given twice (roles "
                         "%u and %u)", name, members[i]->name, j, i);

  a = calloc(1, sizeof *a);
  if (a == NULL || (a->name = strdup(name)) == NULL) {
    free(a);
    return set_error(ENOMEM, "array %s: out of memory", name);
  }
  a->pers = pers;
  a->level = cfg->level;
  a->layout = cfg->layout;
  a->chunk_size = level_has_chunks(cfg->level)
    ? (cfg->chunk_size ? cfg->chunk_size : RAID_CHUNK_DEFAULT) : 0;
  a->chunk_sectors = a->chunk_size >> SECTOR_SHIFT;
  a->raid_disks = cfg->raid_disks;
  a->metadata = meta_version(cfg->metadata);
  a->bitmap = cfg->bitmap == RAID_BITMAP_INTERNAL;
  a->bitmap_chunk = cfg->bitmap_chunk;
  a->write_behind = cfg->write_behind;
  for (i = 0; i < cfg->raid_disks; i++) {
    a->moff[i] = moff ? moff[i] : cfg->data_offset;
    if (a->moff[i] % RAID_SECTOR_SIZE) {
      r = set_error(EINVAL, "array %s: data offset %" PRIu64 " of role %u is "
                    "not a multiple of %u bytes", name, a->moff[i], i,
                    RAID_SECTOR_SIZE);
      goto fail;
    }
  }
  a->lbs = RAID_SECTOR_SIZE;
  atomic_init(&a->resync_front, UINT64_MAX);
  atomic_init(&a->fail_gen, 0);
  pthread_mutex_init(&a->conf_lock, NULL);
  pthread_mutex_init(&a->quiesce_lock, NULL);
  events_init(a);
  if (cfg->level != RAID_LEVEL_0 && (a->locks = stripe_lock_table_new()) == NULL) {
    r = set_error(ENOMEM, "array %s: out of memory", name);
    goto fail;
  }

  r = pers->setup(a);           /* layout, member count, copies */
  if (r == 0)
    r = choose_member_size(a, cfg, members);
  /* mdadm's default: an internal bitmap for RAID 1, 5 and 10 whose members
   * hold more than 100 GiB each (Create.c's s->size > 100 GiB); with
   * metadata 1.0 the members then keep its room before the superblock. */
  if (r == 0 && cfg->bitmap == RAID_BITMAP_DEFAULT && cfg->level != RAID_LEVEL_0 &&
      a->member_size > (UINT64_C(100) << 30)) {
    a->bitmap = true;
    if (a->metadata == RAID_METADATA_1_0)
      r = choose_member_size(a, cfg, members);
  }
  if (r == 0)
    r = pers->setup(a);         /* again, now that the size is known */
  if (r < 0)
    goto fail;

  for (i = 0; i < a->raid_disks; i++) {
    a->members[i] = members[i];
    atomic_init(&a->state[i], members[i] ? RAID_MEMBER_IN_SYNC : RAID_MEMBER_MISSING);
    atomic_init(&a->recovered[i], 0);
    if (members[i] == NULL)
      missing++;
    else
      members[i]->data_offset = a->moff[i];
  }
  atomic_init(&a->degraded, missing);
  if (!pers->enough(a)) {
    r = set_error(EINVAL, "array %s: %u of %u members missing: %s cannot run "
                  "(it tolerates %u)", a->name, missing, a->raid_disks,
                  pers->name, pers->max_degraded(a));
    for (i = 0; i < a->raid_disks; i++)
      a->members[i] = NULL;     /* still the caller's */
    goto fail;
  }
  if (missing && !quiet)
    raid_log(RAID_LOG_WARNING, "%s %s: starting degraded, %u of %u members missing",
             pers->name, a->name, missing, a->raid_disks);
  raid_array_stats_reset(a);    /* members count from here (stats.c) */
  *arrayp = a;
  return 0;

 fail:
  if (pers->free)
    pers->free(a);
  stripe_lock_table_free(a->locks);
  pthread_mutex_destroy(&a->conf_lock);
  pthread_mutex_destroy(&a->quiesce_lock);
  events_destroy(a);
  free(a->name);
  free(a);
  return r;
}

int
array_new(const struct raid_config *cfg, struct raid_member *const *members,
          const uint64_t *moff, struct raid_array **arrayp)
{
  return array_build(cfg, members, moff, false, arrayp);
}

EXPORT int
raid_array_new(const struct raid_config *cfg, struct raid_member *const *members,
               struct raid_array **arrayp)
{
  return array_new(cfg, members, NULL, arrayp);
}

/* raid_config_check()'s members never see I/O; if one did, it fails. */
static void
fake_done(struct qtask *t, int res)
{
  member_complete(task_io(t), res);
}

static void
fake_submit(struct raid_queue *q, struct member_io *io)
{
  io->task.fn = fake_done;
  queue_defer(q, &io->task, -EIO);
}

static const struct member_ops fake_ops = { .kind = "none", .submit = fake_submit };

/* NAME (its first 48 bytes) for a message, with anything unprintable as
 * \xNN, so that a name holding a newline reads as one line. */
static const char *
name_for_message(const char *name, char *buf, size_t len)
{
  size_t i, o = 0;

  for (i = 0; name[i] && i < 48 && o + 5 < len; i++) {
    unsigned char c = name[i];

    if (c >= 0x20 && c < 0x7f && c != '\\')
      buf[o++] = c;
    else
      o += snprintf(buf + o, len - o, "\\x%02x", c);
  }
  snprintf(buf + o, len - o, "%s", name[i] ? "..." : "");
  return buf;
}

/* md's rule for array names (mdadm's is_name_posix_compatible()): they
 * become a device name, an NBD export name in a URI and a line of status,
 * so only [A-Za-z0-9._-], 1 to 32 bytes (the superblock's set_name, which
 * may also hold "homehost:" in front: a name read from a superblock has
 * that stripped and is not checked here, so arrays made elsewhere still
 * assemble). */
EXPORT int
raid_name_check(const char *name)
{
  static const char allowed[] = "1 to 32 characters of A-Z a-z 0-9 . _ -";
  char shown[256], bad[8];
  size_t i, len;

  if (name == NULL || name[0] == '\0')
    return set_error(EINVAL, "the array name is empty: it must be %s", allowed);
  len = strlen(name);
  for (i = 0; i < len; i++) {
    unsigned char c = name[i];

    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
        c == '.' || c == '_' || c == '-')
      continue;
    if (c > 0x20 && c < 0x7f)
      snprintf(bad, sizeof bad, "'%c'", c);
    else
      snprintf(bad, sizeof bad, "0x%02x", c);
    return set_error(EINVAL, "array name '%s' holds %s (byte %zu): an array name "
                     "is %s", name_for_message(name, shown, sizeof shown), bad, i,
                     allowed);
  }
  if (len > 32)
    return set_error(EINVAL, "array name '%s' is %zu bytes long: an array name is %s",
                     name_for_message(name, shown, sizeof shown), len, allowed);
  return 0;
}

EXPORT int
raid_config_check(const struct raid_config *cfg, const uint64_t *sizes,
                  const char *const *names, uint64_t *array_size)
{
  struct raid_member *m[RAID_MAX_MEMBERS] = { NULL };
  struct raid_array *a = NULL;
  unsigned i, n = MIN(cfg->raid_disks, RAID_MAX_MEMBERS);
  char name[32];
  int r = 0;

  if (cfg->name && (r = raid_name_check(cfg->name)) < 0)
    return r;
  for (i = 0; i < n && r == 0; i++) {
    if (sizes[i] == 0)
      continue;                 /* missing */
    snprintf(name, sizeof name, "member %u", i);
    m[i] = member_alloc(&fake_ops, names ? names[i] : name);
    if (m[i] == NULL)
      r = set_error(ENOMEM, "out of memory");
    else
      m[i]->size = sizes[i];
  }
  if (r == 0)
    r = array_build(cfg, m, NULL, true, &a);
  if (r == 0 && array_size)
    *array_size = a->size;
  if (a) {
    for (i = 0; i < n; i++)
      a->members[i] = NULL;
    raid_array_free(a);
  }
  for (i = 0; i < n; i++)
    raid_member_close(m[i]);
  return r;
}

EXPORT void
raid_array_free(struct raid_array *a)
{
  unsigned i;

  if (a == NULL)
    return;
  /* RAID 1 write-behind outlives its requests (raid1.c): the queues that
   * run it finish it. */
  while (atomic_load(&a->behind_writes) > 0)
    usleep(100);
  sync_engine_free(a);          /* checkpoints what it was doing */
  if (a->meta)
    meta_stop(a);
  if (a->pers->free)
    a->pers->free(a);
  for (i = 0; i < a->raid_disks; i++) {
    raid_member_close(a->members[i]);
    raid_member_close(a->repl[i]);
  }
  for (i = 0; i < a->nspares; i++)
    raid_member_close(a->spares[i]);
  while (a->retired) {
    struct raid_member *m = a->retired;

    a->retired = m->retired_next;
    raid_member_close(m);
  }
  stripe_lock_table_free(a->locks);
  pthread_mutex_destroy(&a->conf_lock);
  pthread_mutex_destroy(&a->quiesce_lock);
  events_destroy(a);
  free(a->name);
  free(a);
}

EXPORT const char *raid_array_name(const struct raid_array *a) { return a->name; }
EXPORT uint64_t raid_array_size(const struct raid_array *a) { return a->size; }
EXPORT int raid_array_level(const struct raid_array *a) { return a->level; }
EXPORT int raid_array_layout(const struct raid_array *a) { return a->layout; }
EXPORT uint32_t raid_array_chunk_size(const struct raid_array *a) { return a->chunk_size; }
EXPORT unsigned raid_array_raid_disks(const struct raid_array *a) { return a->raid_disks; }
EXPORT uint64_t raid_array_member_size(const struct raid_array *a) { return a->member_size; }
EXPORT int raid_array_metadata(const struct raid_array *a) { return a->metadata; }
EXPORT unsigned raid_array_logical_block_size(const struct raid_array *a) { return a->lbs; }

EXPORT uint64_t
raid_array_stripe_width(const struct raid_array *a)
{
  switch (a->level) {
  case RAID_LEVEL_0: return (uint64_t)a->chunk_size * a->raid_disks;
  case RAID_LEVEL_5: return (uint64_t)a->chunk_size * (a->raid_disks - 1);
  case RAID_LEVEL_10: return (uint64_t)a->chunk_size * (a->raid_disks / a->copies
                                                        ? a->raid_disks / a->copies : 1);
  default: return a->lbs;
  }
}

EXPORT struct raid_member *
raid_array_member(const struct raid_array *a, unsigned slot)
{
  return slot < a->raid_disks ? atomic_load(&a->members[slot]) : NULL;
}

EXPORT int
raid_array_member_state(const struct raid_array *a, unsigned slot)
{
  if (slot >= a->raid_disks)
    return set_error(EINVAL, "array %s: no role %u (it has %u)", a->name, slot,
                     a->raid_disks);
  return atomic_load(&a->state[slot]);
}

EXPORT unsigned
raid_array_degraded(const struct raid_array *a)
{
  return atomic_load(&a->degraded);
}

EXPORT int
raid_array_is_failed(const struct raid_array *a)
{
  return atomic_load(&a->failed);
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
  if (st == RAID_MEMBER_IN_SYNC)
    atomic_fetch_add(&a->degraded, 1);
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
  if (a->meta)
    meta_member_failed(a, slot);
  sync_kick(a);
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
  if (a->meta)
    meta_update(a);
  sync_kick(a);
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

/* ---- requests --------------------------------------------------------------- */

static void split_next_piece(struct raid_request *r);

static void
req_finish(struct qtask *t, int res)
{
  struct raid_request *r = (struct raid_request *)((char *)t - offsetof(struct raid_request, task));
  struct raid_request *parent = r->parent;

  if (parent) {
    /* A piece of a split request is over: the next one takes its place
     * (see submit()), unless one has failed. */
    if (r->error == 0 && parent->error == 0)
      split_next_piece(parent);
    req_put(parent, r->error);
  }
  else {
    /* A write, flush, discard or write zeroes is not acknowledged while a
     * member failure is not yet on stable storage in the superblocks
     * (md holds such bios on bio_end_io_list while MD_SB_CHANGE_PENDING):
     * it may have left out the failed member, or seen the failure when
     * another thread was still writing the superblocks that record it.
     * Acknowledged before, it could be lost at a power cut: the failed
     * member would come back as if in sync and a resync could copy its
     * stale data over the survivors' (tests/test-powerloss.c found it on
     * RAID 1, one member's power cut first; its regression test is
     * test_failure_recorded_before_ack). */
    if (r->op != REQ_READ && r->a->meta)
      meta_failures_recorded(r->a);
    if (r->bmrun)
      bitmap_end_write(r->bmrun, r);
    if (r->safe)
      safe_end_write(r->safe);
    stats_io_done(&r->a->stats.io, r->op, r->len, r->start_ns, r->error);
    atomic_fetch_sub_explicit(&r->a->stats.in_flight, 1, memory_order_relaxed);
    array_exit(r->a, r->epoch);
    if (r->a->pers->request_done)
      r->a->pers->request_done(r);
    queue_user_done(r->q);
    r->cb(r->opaque, r->error);
  }
  raid_free(r);
}

void
req_get(struct raid_request *r)
{
  r->pending++;
}

void
req_put(struct raid_request *r, int res)
{
  if (res < 0)
    req_error(r, res);
  if (--r->pending == 0)
    queue_defer(r->q, &r->task, 0);
}

unsigned
array_enter(struct raid_array *a)
{
  /* Count it in the current epoch; if array_quiesce() moved on between
   * our two looks, count it in the new one (whose requests it does not
   * wait for: they see what it changed). */
  for (;;) {
    uint64_t e = atomic_load(&a->epoch);

    atomic_fetch_add(&a->epoch_reqs[e & 1], 1);
    if (atomic_load(&a->epoch) == e)
      return e & 1;
    atomic_fetch_sub(&a->epoch_reqs[e & 1], 1);
  }
}

void
array_exit(struct raid_array *a, unsigned epoch)
{
  atomic_fetch_sub(&a->epoch_reqs[epoch], 1);
}

void
array_quiesce(struct raid_array *a)
{
  uint64_t e;

  pthread_mutex_lock(&a->quiesce_lock);
  e = atomic_fetch_add(&a->epoch, 1);
  while (atomic_load(&a->epoch_reqs[e & 1]) > 0)
    usleep(100);
  pthread_mutex_unlock(&a->quiesce_lock);
}

/* A member I/O of a request, and its twin: a write to a role being
 * replaced also goes to the replacement where that is rebuilt already.
 * The submitter's DONE runs once both are over, so whatever the submitter
 * holds (a RAID 5 stripe lock, its buffers) covers the twin too. */
struct mio_wrap {
  struct member_io io;
  void (*done)(struct member_io *io, int res);
  struct member_io twin;
  unsigned parts;               /* I/Os still in flight: 1 or 2 */
  int res;                      /* IO's own result */
};

static void
mio_part_done(struct mio_wrap *w)
{
  struct raid_request *r = w->io.priv;

  if (--w->parts)
    return;
  w->done(&w->io, w->res);
  raid_free(w);
  req_put(r, 0);
}

static void
mio_done(struct member_io *io, int res)
{
  struct mio_wrap *w = (struct mio_wrap *)io;

  w->res = res;
  mio_part_done(w);
}

static void
twin_done(struct member_io *io, int res)
{
  struct mio_wrap *w = (struct mio_wrap *)((char *)io - offsetof(struct mio_wrap, twin));
  struct raid_request *r = w->io.priv;

  if (res < 0)
    array_repl_failed(r->a, io->slot, io->m, res);
  mio_part_done(w);
}

struct member_io *
req_mio(struct raid_request *r, unsigned slot, struct raid_member *m, enum mop op,
        void *buf, uint64_t member_offset, size_t len,
        void (*done)(struct member_io *io, int res))
{
  struct mio_wrap *w = raid_malloc(sizeof *w);

  if (w == NULL) {
    set_error(ENOMEM, "%s %s: out of memory for a member I/O", r->a->pers->name,
              r->a->name);
    return NULL;
  }
  memset(&w->io, 0, sizeof w->io);
  w->io.m = m;
  w->io.op = op;
  w->io.flags = (r->flags & RAID_REQ_FUA) && op != MOP_READ ? MIO_FUA : 0;
  w->io.buf = buf;
  w->io.offset = m->data_offset + member_offset;
  w->io.len = len;
  w->io.done = mio_done;
  w->io.priv = r;
  w->io.slot = slot;
  w->done = done;
  w->parts = 1;
  return &w->io;
}

void
req_mio_discard(struct member_io *io)
{
  raid_free(io);
}

void
req_mio_submit(struct member_io *io)
{
  struct mio_wrap *w = (struct mio_wrap *)io;
  struct raid_request *r = mio_req(io);
  struct raid_array *a = r->a;
  struct raid_member *rp, *cur;
  uint64_t doff;

  req_get(r);
  if (io->op != MOP_READ && io->op != MOP_FLUSH) {
    /* The role may have changed since IO's member was bound (see "Roles
     * and members").  Load the replacement before the member: one that
     * took over is stored as the member before it is cleared, so we
     * either see the replacement (and write both) or the new member (and
     * write it instead: the old one left the role). */
    rp = atomic_load(&a->repl[io->slot]);
    cur = atomic_load(&a->members[io->slot]);
    doff = io->offset - io->m->data_offset;
    if (rp == NULL && cur != io->m && cur) {
      io->m = cur;
      io->offset = cur->data_offset + doff;
    }
    else if (rp && rp != io->m &&
             doff + io->len <= atomic_load(&a->repl_done[io->slot])) {
      w->twin = w->io;
      w->twin.m = rp;
      w->twin.offset = rp->data_offset + doff;
      w->twin.done = twin_done;
      w->twin.repl = true;
      w->parts = 2;
      member_submit(r->q, &w->twin);
    }
  }
  if (io->op == MOP_READ || io->op == MOP_WRITE || io->op == MOP_ZERO)
    stats_add(io->op == MOP_READ ? &a->stats.mread_bytes : &a->stats.mwrite_bytes,
              (uint64_t)io->len * w->parts);
  member_submit(r->q, io);
}

int
req_mio_batch_submit(struct raid_request *r, struct member_io **io, unsigned n)
{
  unsigned i;

  for (i = 0; i < n; i++)
    if (io[i] == NULL) {
      for (i = 0; i < n; i++)
        if (io[i])
          req_mio_discard(io[i]);
      return -ENOMEM;
    }
  for (i = 0; i < n; i++)
    req_mio_submit(io[i]);
  return 0;
}

/* Flush: every member that is in sync.  A member whose flush fails is
 * failed like one whose write failed; the flush succeeds as long as the
 * array still holds all its data on members that flushed. */
static void
flush_done(struct member_io *io, int res)
{
  struct raid_request *r = mio_req(io);
  struct raid_array *a = r->a;

  if (res == 0)
    return;
  if (io->repl) {
    array_repl_failed(a, io->slot, io->m, res);
    return;
  }
  array_member_failed(a, io->slot, io->m, res, 0, "flush");
  if (raid_array_is_failed(a)) {
    set_error(EIO, "%s %s: flush failed on member %s (role %u) and the array "
              "has failed", a->pers->name, a->name, io->m->name, io->slot);
    req_error(r, -EIO);
  }
}

void
array_flush_members(struct raid_request *r)
{
  struct raid_array *a = r->a;
  struct member_io *io[2 * RAID_MAX_MEMBERS];
  unsigned i, n = 0;

  for (i = 0; i < a->raid_disks; i++) {
    struct raid_member *m = slot_member_alive(a, i);
    struct raid_member *rp = atomic_load(&a->repl[i]);

    if (m)
      io[n++] = req_mio(r, i, m, MOP_FLUSH, NULL, 0, 0, flush_done);
    if (rp) {
      io[n] = req_mio(r, i, rp, MOP_FLUSH, NULL, 0, 0, flush_done);
      if (io[n])
        io[n]->repl = true;
      n++;
    }
  }
  if (req_mio_batch_submit(r, io, n) < 0)
    req_error(r, -ENOMEM);
}

static const char *const op_names[] = { "read", "write", "flush", "discard", "write zeroes" };

/* A discard or write-zeroes longer than the largest request is split into
 * pieces of up to RAID_MAX_REQUEST that end on multiples of it (so they
 * stay stripe-aligned), and at most SPLIT_WINDOW of them run at once: a
 * piece that completes starts the next.  Memory then does not grow with
 * the request's length: on RAID 5 a piece that is not whole rows needs
 * parity buffers, and a gigabyte started at once held half a gigabyte of
 * them.  Start R's next piece, if any. */
#define SPLIT_WINDOW 2u

static void
split_next_piece(struct raid_request *r)
{
  struct raid_array *a = r->a;
  uint64_t pos = r->split_next, end = r->offset + r->len, next;
  struct raid_request *c;

  if (pos >= end)
    return;
  next = MIN(end, (pos / RAID_MAX_REQUEST + 1) * RAID_MAX_REQUEST);
  c = raid_malloc(sizeof *c);
  if (c == NULL) {
    /* The pieces started so far finish; the rest is not done. */
    set_error(ENOMEM, "%s %s: %s: out of memory", a->pers->name, a->name,
              op_names[r->op]);
    req_error(r, -ENOMEM);
    r->split_next = end;
    return;
  }
  *c = *r;
  c->offset = pos;
  c->len = next - pos;
  c->parent = r;
  c->pending = 1;
  c->error = 0;
  r->split_next = next;
  req_get(r);
  a->pers->submit(c);
  req_put(c, 0);
}

/* Start R's member I/O (whole, or its first pieces), then drop the
 * submitter's reference. */
static void
req_dispatch(struct raid_request *r)
{
  if (r->len > RAID_MAX_REQUEST) {
    unsigned k;

    r->split_next = r->offset;
    for (k = 0; k < SPLIT_WINDOW; k++)
      split_next_piece(r);
  }
  else
    r->a->pers->submit(r);
  req_put(r, 0);
}

/* R was parked at the bitmap's gate: its bits are written (RES 0), or
 * could not be (the write is not done). */
static void
req_resume(struct qtask *t, int res)
{
  struct raid_request *r = (struct raid_request *)((char *)t - offsetof(struct raid_request, task));

  r->task.fn = req_finish;
  if (res < 0)
    req_put(r, res);
  else
    req_dispatch(r);
}

/* The write-intent bitmap's gate (bitmap-run.c): the bits of what R
 * writes are on stable storage before any of it reaches a member.
 * Parked, R comes back through req_resume() on its queue. */
static void
req_bitmap_gate(struct raid_request *r)
{
  if ((r->bmrun = atomic_load(&r->a->bmrun)) != NULL) {
    r->task.fn = req_resume;
    if (!bitmap_start_write(r->bmrun, r))
      return;
    r->task.fn = req_finish;
  }
  req_dispatch(r);
}

/* R was parked at safe mode's gate: the superblocks say "active" on
 * every member (RES 0), or could not be written (the write is not done). */
static void
req_safe_resume(struct qtask *t, int res)
{
  struct raid_request *r = (struct raid_request *)((char *)t - offsetof(struct raid_request, task));

  r->task.fn = req_finish;
  if (res < 0)
    req_put(r, res);
  else
    req_bitmap_gate(r);
}

/* Check and start one request. */
static int
submit(struct raid_queue *q, struct raid_array *a, enum req_op op, void *buf,
       size_t count, uint64_t offset, unsigned flags, raid_completion_fn cb,
       void *opaque)
{
  struct raid_request *r;

  if (flags & ~RAID_REQ_FUA)
    return set_error(EINVAL, "%s %s: %s: unknown flags 0x%x", a->pers->name,
                     a->name, op_names[op], flags & ~RAID_REQ_FUA);
  if (op != REQ_FLUSH) {
    if (count == 0)
      return set_error(EINVAL, "%s %s: %s of 0 bytes at offset %" PRIu64,
                       a->pers->name, a->name, op_names[op], offset);
    if (offset % RAID_SECTOR_SIZE || count % RAID_SECTOR_SIZE)
      return set_error(EINVAL, "%s %s: %s of %zu bytes at offset %" PRIu64
                       " is not aligned to %u-byte sectors", a->pers->name,
                       a->name, op_names[op], count, offset, RAID_SECTOR_SIZE);
    if (offset > a->size || count > a->size - offset)
      return set_error(EINVAL, "%s %s: %s of %zu bytes at offset %" PRIu64
                       " goes beyond the end of the array (%" PRIu64 " bytes)",
                       a->pers->name, a->name, op_names[op], count, offset, a->size);
    if ((op == REQ_READ || op == REQ_WRITE) && count > RAID_MAX_REQUEST)
      return set_error(EINVAL, "%s %s: %s of %zu bytes is larger than the "
                       "maximum request of %u bytes", a->pers->name, a->name,
                       op_names[op], count, RAID_MAX_REQUEST);
  }
  if (raid_array_is_failed(a))
    return set_error(EIO, "%s %s: the array has failed (%u of %u members lost); "
                     "%s refused", a->pers->name, a->name,
                     raid_array_degraded(a), a->raid_disks, op_names[op]);

  r = raid_calloc(1, sizeof *r);
  if (r == NULL)
    return set_error(ENOMEM, "%s %s: out of memory", a->pers->name, a->name);
  atomic_fetch_add_explicit(&a->user_ios, 1, memory_order_relaxed);
  r->a = a;
  r->q = q;
  r->op = op;
  r->flags = flags;
  r->buf = buf;
  r->offset = offset;
  r->len = count;
  r->cb = cb;
  r->opaque = opaque;
  r->pending = 1;
  r->task.fn = req_finish;
  r->start_ns = stats_now();
  atomic_fetch_add_explicit(&a->stats.in_flight, 1, memory_order_relaxed);
  r->epoch = array_enter(a);
  queue_user_start(q);

  if (op == REQ_READ || op == REQ_FLUSH) {
    req_dispatch(r);
    return 0;
  }
  /* A request that changes member data passes two gates before any of
   * its member I/O: safe mode's (safemode.c: the superblocks say
   * "active" on every member, so that a crash now means a resync), then
   * the bitmap's.  Parked, R comes back through req_safe_resume() on
   * this queue. */
  if ((r->safe = atomic_load(&a->safe)) != NULL) {
    r->task.fn = req_safe_resume;
    if (!safe_start_write(r->safe, r))
      return 0;
    r->task.fn = req_finish;
  }
  req_bitmap_gate(r);
  return 0;
}

EXPORT int
raid_aio_read(struct raid_queue *q, struct raid_array *a, void *buf,
              size_t count, uint64_t offset, raid_completion_fn cb, void *opaque)
{
  return submit(q, a, REQ_READ, buf, count, offset, 0, cb, opaque);
}

EXPORT int
raid_aio_write(struct raid_queue *q, struct raid_array *a, const void *buf,
               size_t count, uint64_t offset, unsigned flags,
               raid_completion_fn cb, void *opaque)
{
  return submit(q, a, REQ_WRITE, (void *)buf, count, offset, flags, cb, opaque);
}

EXPORT int
raid_aio_flush(struct raid_queue *q, struct raid_array *a,
               raid_completion_fn cb, void *opaque)
{
  return submit(q, a, REQ_FLUSH, NULL, 0, 0, 0, cb, opaque);
}

EXPORT int
raid_aio_discard(struct raid_queue *q, struct raid_array *a, size_t count,
                 uint64_t offset, raid_completion_fn cb, void *opaque)
{
  return submit(q, a, REQ_DISCARD, NULL, count, offset, 0, cb, opaque);
}

EXPORT int
raid_aio_write_zeroes(struct raid_queue *q, struct raid_array *a, size_t count,
                      uint64_t offset, unsigned flags, raid_completion_fn cb,
                      void *opaque)
{
  return submit(q, a, REQ_ZERO, NULL, count, offset, flags, cb, opaque);
}
