/* RAID 0: striping without redundancy.
 *
 * Chunk C of the array lives on member C mod N, at chunk C div N of that
 * member (md's raid0 with one zone: every member is used for the same
 * size).  A request is cut at chunk boundaries and each piece goes to its
 * member; the request fails with EIO if any piece fails, since no other
 * copy exists, and the array fails with it.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "internal.h"
#include "raid/levels.h"

static int
raid0_setup(struct raid_array *a)
{
  if (a->raid_disks < 2)
    return set_error(EINVAL, "raid0 %s: %u member: RAID 0 needs at least 2",
                     a->name, a->raid_disks);
  if (a->layout != RAID_LAYOUT_DEFAULT && a->layout != 0)
    return set_error(EINVAL, "raid0 %s: unknown layout %d", a->name, a->layout);
  a->layout = 0;
  a->size = geo_array_size(a->level, a->raid_disks, a->copies, a->chunk_size,
                           a->member_size);
  return 0;
}

static unsigned
raid0_max_degraded(const struct raid_array *a)
{
  return 0;
}

static bool
raid0_enough(const struct raid_array *a)
{
  return raid_array_degraded(a) == 0;
}

/* No other copy exists: the member is failed, and with it the array (md
 * calls a RAID 0 that lost a member "broken"), so that nothing more is
 * written to a volume that has lost data; the request fails with EIO. */
static void
raid0_done(struct member_io *io, int res)
{
  struct raid_request *r = mio_req(io);
  const char *what = io->op == MOP_READ ? "read" : "write";

  if (res == 0)
    return;
  array_member_failed(r->a, io->slot, io->m, res, mio_data_offset(r->a, io), what);
  set_error(EIO, "raid0 %s: member %s (role %u): %s error at sector %" PRIu64
            ": %s; the array has failed", r->a->name, io->m->name, io->slot,
            what, mio_data_offset(r->a, io) >> SECTOR_SHIFT, strerror(-res));
  req_error(r, -EIO);
}

/* A piece goes to its member, which is the only copy; without a member
 * (failed and removed) or without memory, the piece and so the request
 * fail.  The pieces that did start run to their end. */
static void
raid0_submit(struct raid_request *r)
{
  struct raid_array *a = r->a;
  uint64_t pos = r->offset, end = r->offset + r->len;

  if (r->op == REQ_FLUSH) {
    array_flush_members(r);
    return;
  }
  while (pos < end) {
    uint64_t in_chunk = pos % a->chunk_size;
    size_t len = MIN(end - pos, a->chunk_size - in_chunk);
    uint64_t msector;
    unsigned disk;
    struct raid_member *m;
    struct member_io *io;

    geo_raid0_map(a->raid_disks, a->chunk_sectors, pos >> SECTOR_SHIFT,
                  &disk, &msector);
    m = slot_member_at(a, disk, msector << SECTOR_SHIFT, len);
    if (m == NULL) {
      set_error(EIO, "raid0 %s: role %u has no working member; the array has "
                "failed", a->name, disk);
      req_error(r, -EIO);
      return;
    }
    io = req_mio(r, disk, m, req_mop(r), r->buf ? r->buf + (pos - r->offset) : NULL,
                 msector << SECTOR_SHIFT, len, raid0_done);
    if (io == NULL) {
      req_error(r, -ENOMEM);
      return;
    }
    io->aoff = pos;
    req_mio_submit(io);
    pos += len;
  }
}

const struct personality raid0_personality = {
  .level = RAID_LEVEL_0,
  .name = "raid0",
  .setup = raid0_setup,
  .max_degraded = raid0_max_degraded,
  .enough = raid0_enough,
  .submit = raid0_submit,
};
