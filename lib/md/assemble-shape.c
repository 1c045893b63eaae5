/* Assembly across a change of shape: a grow, a takeover or a reshape
 * writes the superblocks one after the other, so a crash in the middle
 * leaves members one update behind with another geometry; which of them
 * assembly still takes (as md's margin of one would), and a reshape under
 * way checked and set up to go on (sync/reshape.c).  asm_place() and
 * asm_config() (assemble.c) call these; nothing here writes. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>

#include "internal.h"
#include "md.h"
#include "md/assemble.h"

/* Do two superblocks describe the same array geometry? */
bool
asm_same_geometry(const struct raid_superblock *x, const struct raid_superblock *y)
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

/* The array sectors of superblock SB's level and copies in a shape of
 * RAID_DISKS members and CHUNK sectors (geo_data_size()). */
static uint64_t
sb_data_sectors(const struct raid_superblock *sb, uint32_t raid_disks, uint32_t chunk)
{
  struct raid_geo g = { .raid_disks = raid_disks, .chunk_size = chunk };

  return geo_data_size((int)sb->level, sb->layout & 0xff, &g, sb->size);
}

/* SB missed just the update that started FRESH's reshape (a crash came
 * while the superblocks were written one after the other, before anything
 * moved): it is taken with the reshape's fields, and a hot spare that the
 * reshape gave a new role takes it (nothing is in the new shape yet, so a
 * new member holds nothing it needs).  True when it did. */
bool
asm_missed_reshape_start(struct raid_superblock *sb,
                         const struct raid_superblock *fresh, unsigned role)
{
  const uint32_t bits = RAID_SB_FEATURE_RESHAPE_ACTIVE | RAID_SB_FEATURE_NEW_OFFSET |
    RAID_SB_FEATURE_RESHAPE_BACKWARDS;
  /* Where it started: forwards at 0, backwards at the new shape's end. */
  uint64_t start = sb_backwards(fresh)
    ? sb_data_sectors(fresh, fresh->raid_disks, fresh->new_chunk) : 0;

  if (!(fresh->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE) ||
      fresh->reshape_position != start ||
      (sb->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE) ||
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
bool
asm_filled_one_behind(const struct raid_superblock *sb,
                      const struct raid_superblock *fresh, unsigned role, uint64_t *recp)
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

/* SB missed just the update that ended its reshape (meta_reshape_finish():
 * its position says every row moved): its data starts at the new offset,
 * in the new layout and chunk, as the freshest says.  A reshape that
 * ended as a RAID 0 (a RAID 0 restriped, a RAID 5 made one: the parity
 * role gone, sync/reshape.c) too, for a member FRESH gives a role in it
 * (ROLE; the parity member that left stays out, stale).  True when it
 * did. */
bool
asm_missed_reshape_finish(struct raid_superblock *sb,
                          const struct raid_superblock *fresh, unsigned role)
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
  /* Every row moved: forwards up to the new shape's end, backwards down
   * to 0. */
  if (sb_backwards(sb)
      ? sb->reshape_position != 0
      : sb->reshape_position < sb_data_sectors(sb, sb->raid_disks, sb->new_chunk))
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

/* SB, older than FRESH, says another size, number of roles or level over
 * the same bytes: a grow or a takeover, each one superblock update
 * (lib/grow.c, lib/takeover.c), that SB may have missed. */
bool
asm_regrown(const struct raid_superblock *sb, const struct raid_superblock *fresh)
{
  return (same_layout(sb, fresh) || takeover(sb, fresh)) && sb->events < fresh->events;
}

/* A reshape under way (md's RESHAPE_ACTIVE): the one raidd can resume is
 * its own kind, a RAID 5 restriped or to another layout or chunk, or a
 * RAID 10 restriped or to another chunk, with the data offset moved
 * (mdadm 4.x's way, no backup file) by the same on every member: earlier
 * going forwards, over as many or more members; later going backwards
 * (sb_backwards(): fewer members, or as many with md's RESHAPE_BACKWARDS),
 * the member size and the move within each member's data area (md's
 * new_offset_store()), for a RAID 5 by enough for raidd's steps of whole
 * rows (a RAID 10's steps may end inside one: md's single chunk will do).
 * Anything else is refused, naming what. */
int
asm_reshape_check(struct assembly *x)
{
  const struct raid_superblock *f = x->fresh;
  bool back = sb_backwards(f);
  uint64_t unit, cmax, rows, chunks, move, grain;
  int64_t old = (int64_t)f->raid_disks - f->delta_disks;
  struct raid_geo geo;
  unsigned i, least;

  if (!(f->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE))
    return 0;
  if ((f->level != RAID_LEVEL_5 && f->level != RAID_LEVEL_10) || f->new_level != f->level)
    return set_error(ENOTSUP, "assemble %s: a reshape from RAID %d to RAID %d is under "
                     "way, and raidd can resume only a RAID 5's or a RAID 10's reshape "
                     "of its members, layout or chunk: finish it with mdadm", x->aname,
                     f->level, f->new_level);
  if ((f->level == RAID_LEVEL_5 ? !RAID5_LAYOUT_VALID(f->new_layout)
       : f->new_layout != f->layout) ||
      !CHUNK_SIZE_VALID((uint64_t)f->new_chunk << SECTOR_SHIFT) ||
      f->size % f->new_chunk)
    return set_error(EINVAL, "assemble %s: the reshape's new layout %" PRIu32 " and "
                     "chunk of %" PRIu32 " sectors are not a RAID %d shape raidd knows "
                     "for members of %" PRIu64 " sectors", x->aname, f->new_layout,
                     f->new_chunk, f->level, f->size);
  least = f->level == RAID_LEVEL_5 ? 2 : f->layout & 0xff;
  if (old < least || f->raid_disks < least || old > RAID_MAX_MEMBERS)
    return set_error(EINVAL, "assemble %s: a reshape from %" PRId64 " to %u members "
                     "makes no RAID %d", x->aname, old, f->raid_disks, f->level);
  cmax = MAX(f->chunksize, f->new_chunk);
  geo = (struct raid_geo){ .raid_disks = f->raid_disks, .chunk_size = f->new_chunk };
  geo_row_unit((int)f->level, f->layout & 0xff, &geo, &rows, &chunks);
  unit = cmax * chunks;
  /* md's RAID 10 checkpoints on any 64 KiB or smaller chunk (raid10.c's
   * reshape_request(): every 10 seconds, besides where it must), which
   * raidd's steps resume from. */
  grain = f->level == RAID_LEVEL_10
    ? MIN(MIN(f->chunksize, f->new_chunk), (uint64_t)(64 << 10) >> SECTOR_SHIFT) : unit;
  for (i = 0; i < x->n; i++) {
    const struct raid_superblock *sb = &x->sbs[i];

    if (!x->used[i] || sb->dev_number >= f->max_dev ||
        f->dev_roles[sb->dev_number] >= sb_roles(f))
      continue;
    if (!(sb->feature_map & RAID_SB_FEATURE_NEW_OFFSET) ||
        (back ? sb->new_offset <= 0 : sb->new_offset >= 0) ||
        sb->new_offset != x->sbs[x->best].new_offset)
      return set_error(ENOTSUP, "assemble %s: member %s's reshape %s, and raidd resumes "
                       "only reshapes that move every member's data offset by the same, "
                       "%s (mdadm 4.x's way): finish it with mdadm", x->aname,
                       x->members[i]->name,
                       !(sb->feature_map & RAID_SB_FEATURE_NEW_OFFSET)
                         ? "keeps its data offset (a backup file holds the critical part)"
                         : "moves its data offset otherwise than the others' or the "
                           "wrong way", back ? "later going backwards" : "earlier");
    move = back ? (uint64_t)sb->new_offset : (uint64_t)-(int64_t)sb->new_offset;
    if (!back &&
        sb->data_offset - move < sb->super_offset + RAID_SB_BYTES / RAID_SECTOR_SIZE)
      return set_error(EINVAL, "assemble %s: member %s: the reshape's new data offset "
                       "(%" PRId32 " sectors from %" PRIu64 ") lies on the superblock",
                       x->aname, x->members[i]->name, sb->new_offset, sb->data_offset);
    if (back && move + f->size > sb->data_size)
      return set_error(EINVAL, "assemble %s: member %s: the reshape's new data offset "
                       "(%" PRId32 " sectors from %" PRIu64 ") leaves less than the "
                       "member size (%" PRIu64 " sectors) in its data area of %" PRIu64,
                       x->aname, x->members[i]->name, sb->new_offset, sb->data_offset,
                       f->size, sb->data_size);
    /* The new shape starts at least a chunk from the old (over as many
     * members, md refuses less too: an "in-place reshape"). */
    if (move < cmax)
      return set_error(ENOTSUP, "assemble %s: member %s: the reshape moves the data "
                       "offset %" PRId32 " sectors, less than a chunk of %" PRIu64
                       " (a backup file holds the rest): finish it with mdadm", x->aname,
                       x->members[i]->name, sb->new_offset, cmax);
    /* Backwards, a RAID 5's steps of whole rows of the new shape need the
     * fronts a unit and an old chunk apart at the bottom (sync/reshape.c's
     * next_lo()); a RAID 10's go down to a chunk, as md's. */
    if (back && f->level == RAID_LEVEL_5 && move < cmax * rows + f->chunksize)
      return set_error(ENOTSUP, "assemble %s: member %s: the reshape moves the data "
                       "offset %" PRId32 " sectors later, less than the %" PRIu64 " raidd "
                       "needs backwards: finish it with mdadm", x->aname,
                       x->members[i]->name, sb->new_offset, cmax * rows + f->chunksize);
  }
  /* md's raid5_run(): on whole rows of the new shape over the larger
   * chunk (sync/reshape.c's unit), or at its end; a RAID 10 on its
   * grain. */
  if (f->reshape_position % grain &&
      f->reshape_position != sb_data_sectors(f, f->raid_disks, f->new_chunk))
    return set_error(EINVAL, "assemble %s: reshape_position %" PRIu64 " is not on a "
                     "stripe of the new layout (%" PRIu64 " sectors)", x->aname,
                     f->reshape_position, grain);
  if (back && f->reshape_position > sb_data_sectors(f, f->raid_disks, f->new_chunk))
    return set_error(EINVAL, "assemble %s: reshape_position %" PRIu64 " lies past the "
                     "end of the new shape (%" PRIu64 " sectors)", x->aname,
                     f->reshape_position, sb_data_sectors(f, f->raid_disks, f->new_chunk));
  return 0;
}

/* The array in the middle of its reshape: the old shape from the
 * checkpoint on, the new one below it (backwards the other way round),
 * the smaller size of the two until it is done. */
void
asm_reshape_setup(struct assembly *x, struct raid_array *a)
{
  const struct raid_superblock *f = x->fresh;
  struct raid_geo *o = &a->geo[0], *g = &a->geo[1];

  if (!(f->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE))
    return;
  *g = *o;
  o->raid_disks = f->raid_disks - (uint32_t)f->delta_disks;
  g->raid_disks = f->raid_disks;
  g->layout = (int)f->new_layout;
  g->chunk_sectors = f->new_chunk;
  g->chunk_size = f->new_chunk << SECTOR_SHIFT;
  g->shift = (uint64_t)((int64_t)x->sbs[x->best].new_offset * RAID_SECTOR_SIZE);
  g->space = 1;
  a->geo_old = o;
  a->geo_new = g;
  a->reshape_back = sb_backwards(f);
  atomic_store(&a->size, MIN(geo_data_size(a->level, a->copies, o, a->member_size),
                             geo_data_size(a->level, a->copies, g, a->member_size)));
  atomic_store(&a->reshape_pos, f->reshape_position << SECTOR_SHIFT);
  /* Served by both shapes, either side of the checkpoint, from the start
   * (the engine moves the window when it goes on). */
  array_window_open(a, f->reshape_position << SECTOR_SHIFT,
                    f->reshape_position << SECTOR_SHIFT);
  raid_log(RAID_LOG_INFO, "%s %s: a reshape from %u to %u members (layout %d to %d, "
           "chunk %" PRIu32 " to %" PRIu32 " KiB) is under way%s, at byte %" PRIu64 ": "
           "it goes on", a->pers->name, a->name, o->raid_disks, g->raid_disks, o->layout,
           g->layout, o->chunk_size >> 10, g->chunk_size >> 10,
           a->reshape_back ? " backwards" : "", f->reshape_position << SECTOR_SHIFT);
}
