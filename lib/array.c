/* Arrays: building one from a configuration (checks, geometry, member
 * sizes), freeing it, and its getters.  Requests are request.c's, roles
 * and member failure roles.c's.
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

/* A's personality and what goes with it (no setup). */
static void
set_shape(struct raid_array *a, const struct personality *pers, int level, int layout,
          uint32_t chunk, unsigned copies)
{
  a->pers = pers;
  a->level = level;
  a->layout = layout;
  a->chunk_size = chunk;
  a->chunk_sectors = chunk >> SECTOR_SHIFT;
  a->copies = copies;
}

int
array_set_personality(struct raid_array *a, int level, int layout, uint32_t chunk,
                      struct raid_geo *g)
{
  const struct personality *old = a->pers, *pers = find_personality(level);
  int old_level = a->level, old_layout = a->layout;
  uint32_t old_chunk = a->chunk_size;
  uint64_t size = a->size;
  unsigned copies = a->copies;
  int r;

  if (pers == NULL)
    return set_error(EINVAL, "array %s: no RAID level %d", a->name, level);
  if (old->free)
    old->free(a);
  set_shape(a, pers, level, layout, chunk, level == RAID_LEVEL_1 ? a->raid_disks : 0);
  if ((r = pers->setup(a)) == 0 && a->size != size)
    r = set_error(EINVAL, "array %s: as a RAID %d it would have %" PRIu64 " bytes, "
                  "not %" PRIu64, a->name, level, (uint64_t)a->size, size);
  if (r < 0) {
    if (pers->free)
      pers->free(a);
    set_shape(a, old, old_level, old_layout, old_chunk, copies);
    if (old->setup(a) < 0)
      raid_log(RAID_LOG_ERR, "%s %s: %s", old->name, a->name, raid_get_error());
    a->size = size;
    return r;
  }
  *g = (struct raid_geo){ .raid_disks = a->raid_disks, .layout = a->layout,
                          .chunk_size = a->chunk_size, .chunk_sectors = a->chunk_sectors,
                          .space = atomic_load(&a->geo_now)->space ^ 1 };
  return 0;
}

/* Striped levels use whole chunks of each member, as md does; a mirror
 * whole 4 KiB blocks so the array keeps 4K-aligned I/O aligned; never
 * less than a logical block. */
uint64_t
array_member_unit(const struct raid_array *a)
{
  uint64_t unit = a->level == RAID_LEVEL_1 ? 4096 : a->chunk_size;

  return unit < a->lbs ? a->lbs : unit;
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
    end = a->mops->data_end(a, m->size);
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

  unit = array_member_unit(a);
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

/* Check configuration CFG (array NAME) and its MEMBERS before anything is
 * built: every refusal names the field that is wrong. */
static int
config_check_fields(const struct raid_config *cfg, struct raid_member *const *members,
                    const char *name)
{
  unsigned i, j;

  if (find_personality(cfg->level) == NULL)
    return set_error(EINVAL, "array %s: unknown RAID level %d (0, 1, 5 and 10 "
                     "are supported)", name, cfg->level);
  if (cfg->raid_disks == 0 || cfg->raid_disks > RAID_MAX_MEMBERS)
    return set_error(EINVAL, "array %s: %u members: must be 1 to %u",
                     name, cfg->raid_disks, RAID_MAX_MEMBERS);
  if (cfg->data_offset % RAID_SECTOR_SIZE)
    return set_error(EINVAL, "array %s: data offset %" PRIu64 " is not a "
                     "multiple of %u bytes", name, cfg->data_offset,
                     RAID_SECTOR_SIZE);
  if (md_meta_ops.version(cfg->metadata) < 0)
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
      !CHUNK_SIZE_VALID(cfg->chunk_size))
    return set_error(EINVAL, "array %s: chunk size %" PRIu32 " is invalid: it "
                     "must be a power of two from %u to %u bytes",
                     name, cfg->chunk_size, RAID_CHUNK_MIN, RAID_CHUNK_MAX);
  for (i = 0; i < cfg->raid_disks; i++)
    for (j = 0; j < i; j++)
      if (members[i] && members[i] == members[j])
        return set_error(EINVAL, "array %s: member %s is given twice (roles "
                         "%u and %u)", name, members[i]->name, j, i);

  return 0;
}

/* array_new(); QUIET for raid_config_check(), whose array never runs. */
static int
array_build(const struct raid_config *cfg, struct raid_member *const *members,
            const uint64_t *moff, bool quiet, struct raid_array **arrayp)
{
  struct raid_array *a;
  const struct personality *pers;
  const char *name = cfg->name ? cfg->name : "md";
  unsigned i, missing = 0;
  int r;

  *arrayp = NULL;
  if ((r = config_check_fields(cfg, members, name)) < 0)
    return r;
  pers = find_personality(cfg->level);

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
  a->mops = &md_meta_ops;
  a->sops = &sync_engine_ops;   /* a RAID 0 too: a takeover may start its engine */
  a->metadata = a->mops->version(cfg->metadata);
  a->bitmap = cfg->bitmap == RAID_BITMAP_INTERNAL;
  a->found_layout = moff != NULL;
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
  atomic_init(&a->reshape_pos, UINT64_MAX);
  a->reshape_then = -1;
  atomic_init(&a->fail_gen, 0);
  pthread_mutex_init(&a->conf_lock, NULL);
  pthread_mutex_init(&a->quiesce_lock, NULL);
  pthread_mutex_init(&a->win_lock, NULL);
  a->win_parked_tail = &a->win_parked;
  events_init(a);
  a->sync_min = SYNC_DEFAULT_MIN;
  /* Every level has one: a RAID 0 taken over as a RAID 5 needs it. */
  if ((a->locks = range_lock_table_new()) == NULL) {
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
  a->geo[0] = (struct raid_geo){ .raid_disks = a->raid_disks, .layout = a->layout,
                                 .chunk_size = a->chunk_size,
                                 .chunk_sectors = a->chunk_sectors };
  atomic_init(&a->geo_now, &a->geo[0]);

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
  range_lock_table_free(a->locks);
  pthread_mutex_destroy(&a->conf_lock);
  pthread_mutex_destroy(&a->quiesce_lock);
  pthread_mutex_destroy(&a->win_lock);
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
  if (raid_member_spec_is_remote(name))
    return set_error(EINVAL, "array name '%s' is a remote member's URI: give the "
                     "array a name (%s), then its members",
                     name_for_message(name, shown, sizeof shown), allowed);
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
  if (a->sops)
    a->sops->free(a);           /* checkpoints what it was doing */
  a->mops->stop(a);
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
  range_lock_table_free(a->locks);
  pthread_mutex_destroy(&a->conf_lock);
  pthread_mutex_destroy(&a->quiesce_lock);
  pthread_mutex_destroy(&a->win_lock);
  events_destroy(a);
  free(a->name);
  free(a);
}

EXPORT const char *raid_array_name(const struct raid_array *a) { return a->name; }
EXPORT uint64_t raid_array_size(const struct raid_array *a) { return array_size_shown(a); }
EXPORT uint64_t raid_array_full_size(const struct raid_array *a) { return a->size; }
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
  switch (atomic_load(&a->level)) {
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
