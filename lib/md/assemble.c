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
#include "md/assemble.h"

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

/* ---- assembly in phases: gather, decide, write ------------------------------- */

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
  if (sb_roles(x->fresh) > RAID_MAX_MEMBERS)
    return set_error(EINVAL, "assemble %s: %u members is more than %u",
                     x->aname, sb_roles(x->fresh), RAID_MAX_MEMBERS);
  for (i = 0; i < x->fresh->max_dev; i++)
    if (x->fresh->dev_roles[i] < sb_roles(x->fresh) && !seen[x->fresh->dev_roles[i]]) {
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
    if (asm_missed_reshape_start(sb, fresh, role) || asm_missed_reshape_finish(sb, fresh, role))
      raid_log(RAID_LOG_INFO, "%s: member %s missed the superblock update that %s the "
               "reshape; taken as the freshest says", x->aname, members[i]->name,
               fresh->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE ? "started" : "ended");
    if (!asm_same_geometry(sb, fresh)) {
      if (!asm_regrown(sb, fresh))
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
    if (role >= sb_roles(fresh)) {
      if (x->nspares < RAID_MAX_MEMBERS) {
        x->spare_idx[x->nspares++] = i;
        x->used[i] = true;
      }
      continue;
    }
    filled = asm_filled_one_behind(sb, fresh, role, &fill_rec);
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
  for (i = 0; i < sb_roles(fresh); i++)
    if (x->repl_idx[i] && x->slots[i] == NULL) {
      x->slots[i] = members[x->repl_idx[i] - 1];
      x->moff[i] = x->slots[i]->data_offset;
      x->recov[i] = x->repl_off[i];
      x->repl_idx[i] = 0;
      x->found++;
    }
  return 0;
}

/* Phase 2c, members behind forced back, is asm_force() (assemble-force.c). */

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
  cfg->raid_disks = sb_roles(fresh);
  cfg->member_size = fresh->size << SECTOR_SHIFT;
  cfg->metadata = raid_superblock_version(fresh);
  if (x->found < x->expected && !(x->flags & RAID_ASSEMBLE_RUN))
    return set_error(EINVAL, "assemble %s: only %u of the %u members that were "
                     "active are present; refusing to start degraded without "
                     "--run", x->aname, x->found, x->expected);
  return asm_reshape_check(x);
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

/* asm_meta()'s bitmap: as md does, it covers the array's resync range,
 * whatever sync_size said, with the freshest member's bits; its place must
 * still hold it.  0, or -errno with the error set. */
static int
asm_meta_bitmap(struct assembly *x, struct raid_array *a, struct array_meta *m)
{
  const struct raid_superblock *fresh = x->fresh;
  struct raid_superblock place = *fresh;
  int r;

  x->fresh_bsb.sync_size = bitmap_sync_size(a);
  a->bitmap = true;
  r = bitmap_new(&x->fresh_bsb, fresh->bitmap_offset, &m->bm);
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
  /* A reshape forwards (md's own, with its bitmap) moves the data
   * offset earlier: the bitmap must end before the new one too, its
   * chunk doubled while its bits (over the larger size of a RAID 10)
   * do not fit, as md's md_bitmap_resize() chooses one that fits. */
  if ((fresh->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE) &&
      (fresh->feature_map & RAID_SB_FEATURE_NEW_OFFSET) && fresh->new_offset < 0)
    place.data_offset -= (uint64_t)-(int64_t)fresh->new_offset;
  while (r == 0 && m->bm->offset > 0 && m->bm->sb.chunksize < UINT32_C(1) << 30 &&
         place.super_offset < place.data_offset &&
         place.super_offset + (uint64_t)m->bm->offset +
         DIV_ROUND_UP(m->bm->area, RAID_SECTOR_SIZE) > place.data_offset)
    bitmap_coarsen(m->bm);
  if (r == 0)
    r = bitmap_check_place(&place, m->bm->offset, m->bm->area,
                           x->members[x->best]->name);
  return r;
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
  if (x->have_bsb && (r = asm_meta_bitmap(x, a, m)) < 0) {
    r = set_error(-r, "assemble %s: %s", x->aname, raid_get_error());
    assembly_undo(a);
    return r;
  }
  for (i = 0; i < fresh->max_dev && i < RAID_SB_MAX_DEV; i++)
    m->awaited[i] = fresh->dev_roles[i] < sb_roles(fresh);
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
    r = asm_forced_started(a);
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
