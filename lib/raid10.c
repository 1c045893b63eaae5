/* RAID 10, md's "near" layout: striping over mirrored chunks.
 *
 * With N members and c copies, the copies of array chunk C are the slots
 * C*c .. C*c+c-1 of a sequence that fills the members row by row: slot s
 * is on member s mod N, at chunk row s div N (geometry.c).  With N = 4 and
 * c = 2 this is the classic "stripe over two mirrored pairs"; N need not
 * be a multiple of c (md allows 3 members with 2 copies).
 *
 * A request is cut at chunk boundaries.  Each read piece goes to one copy
 * chosen by read_balance(), retried on the other copies if it fails; each
 * write piece goes to every in-sync copy.  The array has failed when some
 * chunk has lost all of its copies.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "internal.h"

static int
raid10_setup(struct raid_array *a)
{
  unsigned copies;

  if (a->layout == RAID_LAYOUT_DEFAULT)
    a->layout = RAID_LAYOUT_RAID10_NEAR(2);
  copies = a->layout & 0xff;
  if ((a->layout & ~0x1ff) != 0 || ((a->layout >> 8) & 0xff) != 1)
    return set_error(EINVAL, "raid10 %s: layout 0x%x is not supported: only "
                     "near layouts (far copies 1) are", a->name, (unsigned)a->layout);
  if (copies < 2)
    return set_error(EINVAL, "raid10 %s: layout near-%u: RAID 10 needs at least "
                     "2 copies", a->name, copies);
  if (a->raid_disks < copies)
    return set_error(EINVAL, "raid10 %s: %u members cannot hold %u copies: "
                     "RAID 10 near-%u needs at least %u members",
                     a->name, a->raid_disks, copies, copies, copies);
  a->copies = copies;
  /* md's raid10_size(): whole chunks, N/c of them per row. */
  a->size = a->member_size / a->chunk_size * a->raid_disks / copies * a->chunk_size;
  return 0;
}

static unsigned
raid10_max_degraded(const struct raid_array *a)
{
  return a->copies - 1;
}

/* Every chunk keeps a copy: the copies of chunk C start at slot C*c mod N,
 * and that start cycles through at most N values. */
static bool
raid10_enough(const struct raid_array *a)
{
  unsigned n = a->raid_disks, c = a->copies, ch, k;

  for (ch = 0; ch < n; ch++) {
    unsigned start = (ch * c) % n;
    bool any = false;

    for (k = 0; k < c && !any; k++)
      any = atomic_load(&a->state[(start + k) % n]) == RAID_MEMBER_IN_SYNC;
    if (!any)
      return false;
  }
  return true;
}

static void raid10_read_piece(struct raid_request *r, uint64_t pos, size_t len);

static void
raid10_read_done(struct member_io *io, int res)
{
  struct raid_request *r = mio_req(io);

  if (res == 0)
    return;
  array_member_failed(r->a, io->slot, res, mio_data_offset(r->a, io), "read");
  raid10_read_piece(r, io->aoff, io->len);   /* another copy, if any */
}

static void
raid10_read_piece(struct raid_request *r, uint64_t pos, size_t len)
{
  struct raid_array *a = r->a;
  struct read_candidate c[RAID_MAX_MEMBERS];
  struct member_io *io;
  unsigned k;
  int pick;

  for (k = 0; k < a->copies; k++) {
    uint64_t ms;
    geo_raid10_map(a->raid_disks, a->copies, a->chunk_sectors, pos >> SECTOR_SHIFT,
                   k, &c[k].slot, &ms);
    c[k].offset = ms << SECTOR_SHIFT;
  }
  pick = read_balance(a, c, a->copies, len);
  if (pick < 0) {
    set_error(EIO, "raid10 %s: read at sector %" PRIu64 " failed: every copy "
              "of the chunk is lost", a->name, pos >> SECTOR_SHIFT);
    req_error(r, -EIO);
    return;
  }
  io = req_mio(r, c[pick].slot, MOP_READ, r->buf + (pos - r->offset),
               c[pick].offset, len, raid10_read_done);
  io->aoff = pos;
  req_mio_submit(io);
}

static void
raid10_write_done(struct member_io *io, int res)
{
  struct raid_request *r = mio_req(io);
  struct raid_array *a = r->a;
  unsigned k, slot;
  uint64_t ms;
  bool any = false;

  if (res == 0)
    return;
  array_member_failed(a, io->slot, res, mio_data_offset(a, io),
                      io->op == MOP_WRITE ? "write" : "discard");
  /* The write stands if another copy of this chunk is still in sync. */
  for (k = 0; k < a->copies && !any; k++) {
    geo_raid10_map(a->raid_disks, a->copies, a->chunk_sectors,
                   io->aoff >> SECTOR_SHIFT, k, &slot, &ms);
    any = slot_ok(a, slot);
  }
  if (!any) {
    set_error(EIO, "raid10 %s: write at sector %" PRIu64 " failed on the last "
              "copy, member %s", a->name, io->aoff >> SECTOR_SHIFT, io->m->name);
    req_error(r, -EIO);
  }
}

static void
raid10_submit(struct raid_request *r)
{
  struct raid_array *a = r->a;
  uint64_t pos = r->offset, end = r->offset + r->len;

  if (r->op == REQ_FLUSH) {
    array_flush_members(r);
    return;
  }
  while (pos < end) {
    size_t len = MIN(end - pos, a->chunk_size - pos % a->chunk_size);
    unsigned k, slot;
    uint64_t ms;

    if (r->op == REQ_READ)
      raid10_read_piece(r, pos, len);
    else {
      unsigned sent = 0;

      for (k = 0; k < a->copies; k++) {
        struct member_io *io;

        geo_raid10_map(a->raid_disks, a->copies, a->chunk_sectors,
                       pos >> SECTOR_SHIFT, k, &slot, &ms);
        if (!slot_ok(a, slot))
          continue;
        io = req_mio(r, slot, req_mop(r), r->buf ? r->buf + (pos - r->offset) : NULL,
                     ms << SECTOR_SHIFT, len, raid10_write_done);
        io->aoff = pos;
        req_mio_submit(io);
        sent++;
      }
      if (sent == 0) {
        set_error(EIO, "raid10 %s: write at sector %" PRIu64 " failed: every "
                  "copy of the chunk is lost", a->name, pos >> SECTOR_SHIFT);
        req_error(r, -EIO);
      }
    }
    pos += len;
  }
}

const struct personality raid10_personality = {
  .level = RAID_LEVEL_10,
  .name = "raid10",
  .setup = raid10_setup,
  .max_degraded = raid10_max_degraded,
  .enough = raid10_enough,
  .submit = raid10_submit,
};
