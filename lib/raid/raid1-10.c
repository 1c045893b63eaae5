/* What RAID 1 and RAID 10 share (md's raid1-10.c): a failed read that
 * goes to another copy, a failed write that stands while a copy holds the
 * data, whether a sync step has a member to rebuild, and the
 * compare-and-repair of a resync or scrub step.  The copies
 * themselves (where each lives) are each level's own.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>

#include "internal.h"
#include "raid/levels.h"
#include "sync/engine.h"
#include "raid1-10.h"

bool
mirror_read_failed(struct member_io *io, int res)
{
  struct raid_request *r = mio_req(io);

  if (res == 0)
    return false;
  array_member_failed(r->a, io->slot, io->m, res, mio_data_offset(r->a, io), "read");
  return true;
}

void
mirror_write_done(struct member_io *io, int res, uint64_t pos, size_t len,
                  bool (*holds)(const struct raid_request *r, uint64_t pos, size_t len))
{
  struct raid_request *r = mio_req(io);
  struct raid_array *a = r->a;

  if (res >= 0)
    return;
  array_member_failed(a, io->slot, io->m, res, mio_data_offset(a, io),
                      io->op == MOP_WRITE ? "write" : "discard");
  if (holds(r, pos, len))
    return;                     /* the write stands: a copy holds it */
  set_error(EIO, "%s %s: write at sector %" PRIu64 " failed on the last copy, "
            "member %s", a->pers->name, a->name, pos >> SECTOR_SHIFT, io->m->name);
  req_error(r, -EIO);
}

bool
mirror_any_target(const struct sync_op *op)
{
  unsigned i;

  for (i = 0; i < op->a->raid_disks; i++)
    if (op->target[i])
      return true;
  return false;
}

void
mirror_compare_repair(struct sync_op *op, const struct mirror_copy *c, unsigned n,
                      unsigned src, size_t len)
{
  unsigned i;

  for (i = 0; i < n; i++) {
    uint64_t bad;

    if (c[i].buf == NULL || i == src)
      continue;
    bad = sync_count_mismatch(c[src].buf, c[i].buf, len);
    if (bad == 0)
      continue;
    op->mismatches += bad;
    if (op->action != RAID_SYNC_CHECK)
      sync_io(op, c[i].m, c[i].slot, MOP_WRITE, c[src].buf, c[i].off, len);
  }
}
