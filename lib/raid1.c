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
#include <stdlib.h>
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
  array_member_failed(r->a, io->slot, io->m, res, mio_data_offset(r->a, io), "read");
  raid1_read(r);                /* another copy, if any */
}

static void
raid1_read(struct raid_request *r)
{
  struct raid_array *a = r->a;
  struct read_candidate c[RAID_MAX_MEMBERS];
  struct member_io *io;
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
  io = req_mio(r, pick, c[pick].m, MOP_READ, r->buf, r->offset, r->len, raid1_read_done);
  if (io == NULL) {
    req_error(r, -ENOMEM);
    return;
  }
  req_mio_submit(io);
}

/* Writes take the range lock of what they write (1 MiB rows of the
 * member), so that the sync engine never copies a range while a write
 * changes it: its copy would land on the new member after the write and
 * undo it there. */
#define RAID1_ROW_SHIFT 20

struct r1write {
  struct raid_request *r;
  struct stripe_lock lock;
  uint64_t pos;
  size_t len;
  unsigned pending;
};

static void
r1w_finish(struct r1write *w)
{
  struct raid_request *r = w->r;

  stripe_unlock(r->a->locks, &w->lock, r->q);
  raid_free(w);
  req_put(r, 0);
}

static void
raid1_write_done(struct member_io *io, int res)
{
  struct raid_request *r = mio_req(io);
  struct r1write *w = io->ctx;

  if (res < 0) {
    array_member_failed(r->a, io->slot, io->m, res, mio_data_offset(r->a, io),
                        io->op == MOP_WRITE ? "write" : "discard");
    if (raid_array_is_failed(r->a)) {
      set_error(EIO, "raid1 %s: write at sector %" PRIu64 " failed on the last "
                "member %s", r->a->name, w->pos >> SECTOR_SHIFT, io->m->name);
      req_error(r, -EIO);
    }
  }
  if (--w->pending == 0)
    r1w_finish(w);
}

static void
r1w_locked(struct qtask *t, int res)
{
  struct r1write *w = (struct r1write *)((char *)t - offsetof(struct r1write, lock.task));
  struct raid_request *r = w->r;
  struct raid_array *a = r->a;
  struct member_io *io[RAID_MAX_MEMBERS];
  unsigned i, n = 0;

  /* Every copy or none (req_mio_batch_submit()). */
  for (i = 0; i < a->raid_disks; i++) {
    struct raid_member *m = slot_member_at(a, i, w->pos, w->len);

    if (m == NULL)
      continue;
    io[n] = req_mio(r, i, m, req_mop(r), r->buf ? r->buf + (w->pos - r->offset) : NULL,
                    w->pos, w->len, raid1_write_done);
    if (io[n])
      io[n]->ctx = w;
    n++;
  }
  w->pending = 1 + n;
  if (n == 0) {
    set_error(EIO, "raid1 %s: write at sector %" PRIu64 " failed: no member "
              "left", a->name, w->pos >> SECTOR_SHIFT);
    req_error(r, -EIO);
  }
  else if (req_mio_batch_submit(r, io, n) < 0) {
    req_error(r, -ENOMEM);
    w->pending = 1;
  }
  if (--w->pending == 0)
    r1w_finish(w);
}

static void
raid1_write(struct raid_request *r)
{
  uint64_t pos = r->offset, end = r->offset + r->len, row = 1ull << RAID1_ROW_SHIFT;

  while (pos < end) {
    uint64_t next = MIN(end, (pos / row + 1) * row);
    struct r1write *w = raid_calloc(1, sizeof *w);

    if (w == NULL) {
      /* The pieces locked so far go on; the request fails. */
      set_error(ENOMEM, "raid1 %s: out of memory", r->a->name);
      req_error(r, -ENOMEM);
      return;
    }
    w->r = r;
    w->pos = pos;
    w->len = next - pos;
    w->lock.row = pos >> RAID1_ROW_SHIFT;
    w->lock.lo = pos & (row - 1);
    w->lock.hi = w->lock.lo + w->len;
    w->lock.q = r->q;
    w->lock.task.fn = r1w_locked;
    req_get(r);
    stripe_lock(r->a->locks, &w->lock);
    pos = next;
  }
}

static void
raid1_submit(struct raid_request *r)
{
  switch (r->op) {
  case REQ_READ:
    raid1_read(r);
    break;
  case REQ_FLUSH:
    array_flush_members(r);
    break;
  default:
    raid1_write(r);
  }
}

/* ---- sync engine ------------------------------------------------------------ */

static void
raid1_sync_locks(struct sync_op *op)
{
  uint64_t row = 1ull << RAID1_ROW_SHIFT, pos = op->pos, end = op->pos + op->len;

  while (pos < end) {
    uint64_t next = MIN(end, (pos / row + 1) * row);
    sync_add_lock(op, pos >> RAID1_ROW_SHIFT, pos & (row - 1), (pos & (row - 1)) + (next - pos));
    pos = next;
  }
}

/* Recovery: read one copy, write it to every recovering member.  Resync
 * and scrub: read every copy, compare with the first; resync and repair
 * write the first over the others where they differ. */
static int
raid1_sync_step(struct sync_op *op)
{
  struct raid_array *a = op->a;
  uint8_t *data[RAID_MAX_MEMBERS] = { NULL };
  struct raid_member *mem[RAID_MAX_MEMBERS] = { NULL };
  int first = -1, r;
  unsigned i;

  if (op->action == RAID_SYNC_RECOVER) {
    bool any = false;

    for (i = 0; i < a->raid_disks; i++)
      if (op->target[i])
        any = true;
    if (!any)
      return 0;
    for (i = 0; i < a->raid_disks && first < 0; i++)
      if ((mem[i] = slot_member_at(a, i, op->pos, op->len)) != NULL)
        first = i;
    if (first < 0)
      return set_error(EIO, "raid1 %s: nothing to rebuild from", a->name);
    data[0] = sync_buf(op, op->len);
    sync_io(op, mem[first], first, MOP_READ, data[0], op->pos, op->len);
    if ((r = sync_io_wait(op)) < 0)
      return r;
    for (i = 0; i < a->raid_disks; i++)
      if (op->target[i])
        sync_io(op, op->target[i], i, MOP_WRITE, data[0], op->pos, op->len);
    return sync_io_wait(op);
  }

  for (i = 0; i < a->raid_disks; i++)
    if ((mem[i] = slot_member_at(a, i, op->pos, op->len)) != NULL) {
      data[i] = sync_buf(op, op->len);
      sync_io(op, mem[i], i, MOP_READ, data[i], op->pos, op->len);
      if (first < 0)
        first = i;
    }
  if (first < 0)
    return set_error(EIO, "raid1 %s: no member to read", a->name);
  if ((r = sync_io_wait(op)) < 0)
    return r;
  for (i = first + 1; i < a->raid_disks; i++) {
    uint64_t bad;

    if (data[i] == NULL)
      continue;
    bad = sync_count_mismatch(data[first], data[i], op->len);
    if (bad == 0)
      continue;
    op->mismatches += bad;
    if (op->action != RAID_SYNC_CHECK)
      sync_io(op, mem[i], i, MOP_WRITE, data[first], op->pos, op->len);
  }
  return sync_io_wait(op);
}

const struct personality raid1_personality = {
  .level = RAID_LEVEL_1,
  .name = "raid1",
  .setup = raid1_setup,
  .max_degraded = raid1_max_degraded,
  .enough = raid1_enough,
  .submit = raid1_submit,
  .sync_step = raid1_sync_step,
  .sync_locks = raid1_sync_locks,
};
