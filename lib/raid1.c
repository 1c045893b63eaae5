/* RAID 1: mirroring with load-balanced reads.
 *
 * Every member holds the whole array at the same offset.  Reads go to one
 * in-sync member chosen by read_balance() (balance.c); a read that fails
 * marks that member faulty and is retried on another, so the caller sees
 * an error only when no copy can be read.  Writes, discards and zeroes go
 * to every in-sync member; one that fails is marked faulty, and the write
 * succeeds as long as some member still holds it (md's rule: an
 * acknowledged write is on every member that is still in the array).
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "internal.h"

static int
raid1_setup(struct raid_array *a)
{
  if (a->raid_disks < 2)
    return set_error(EINVAL, "raid1 %s: %u member: RAID 1 needs at least 2",
                     a->name, a->raid_disks);
  if (a->layout != RAID_LAYOUT_DEFAULT && a->layout != 0)
    return set_error(EINVAL, "raid1 %s: unknown layout %d", a->name, a->layout);
  a->layout = 0;
  a->copies = a->raid_disks;
  a->size = a->member_size;
  return 0;
}

static unsigned
raid1_max_degraded(const struct raid_array *a)
{
  return a->raid_disks - 1;
}

static bool
raid1_enough(const struct raid_array *a)
{
  return raid_array_degraded(a) < a->raid_disks;
}

static void raid1_read(struct raid_request *r);

static void
raid1_read_done(struct member_io *io, int res)
{
  struct raid_request *r = mio_req(io);

  if (res == 0)
    return;
  array_member_failed(r->a, io->slot, res, mio_data_offset(r->a, io), "read");
  raid1_read(r);                /* another copy, if any */
}

static void
raid1_read(struct raid_request *r)
{
  struct raid_array *a = r->a;
  struct read_candidate c[RAID_MAX_MEMBERS];
  unsigned i;
  int pick;

  for (i = 0; i < a->raid_disks; i++) {
    c[i].slot = i;
    c[i].offset = r->offset;
  }
  pick = read_balance(a, c, a->raid_disks, r->len);
  if (pick < 0) {
    set_error(EIO, "raid1 %s: read of %zu bytes at sector %" PRIu64 " failed: "
              "no member left to read", a->name, r->len, r->offset >> SECTOR_SHIFT);
    req_error(r, -EIO);
    return;
  }
  req_mio_submit(req_mio(r, pick, MOP_READ, r->buf, r->offset, r->len,
                         raid1_read_done));
}

static void
raid1_write_done(struct member_io *io, int res)
{
  struct raid_request *r = mio_req(io);

  if (res == 0)
    return;
  array_member_failed(r->a, io->slot, res, mio_data_offset(r->a, io),
                      io->op == MOP_WRITE ? "write" : "discard");
  if (raid_array_is_failed(r->a)) {
    set_error(EIO, "raid1 %s: write at sector %" PRIu64 " failed on the last "
              "member %s", r->a->name, r->offset >> SECTOR_SHIFT, io->m->name);
    req_error(r, -EIO);
  }
}

static void
raid1_submit(struct raid_request *r)
{
  struct raid_array *a = r->a;
  unsigned i;

  switch (r->op) {
  case REQ_READ:
    raid1_read(r);
    break;
  case REQ_FLUSH:
    array_flush_members(r);
    break;
  default:
    for (i = 0; i < a->raid_disks; i++)
      if (slot_ok(a, i))
        req_mio_submit(req_mio(r, i, req_mop(r), r->buf, r->offset, r->len,
                               raid1_write_done));
  }
}

const struct personality raid1_personality = {
  .level = RAID_LEVEL_1,
  .name = "raid1",
  .setup = raid1_setup,
  .max_degraded = raid1_max_degraded,
  .enough = raid1_enough,
  .submit = raid1_submit,
};
