/* Members: the back-end independent part.  A member is a file, a block
 * device, RAM or a fault injector wrapping another member, all behind
 * struct member_ops. */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct raid_member *
member_alloc(const struct member_ops *ops, const char *name)
{
  struct raid_member *m = calloc(1, sizeof *m);

  if (m == NULL)
    return NULL;
  m->name = strdup(name);
  if (m->name == NULL) {
    free(m);
    return NULL;
  }
  m->ops = ops;
  m->lbs = RAID_SECTOR_SIZE;
  m->mem_align = 1;
  return m;
}

void
member_submit(struct raid_queue *q, struct member_io *io)
{
  io->q = q;
  io->xfered = 0;
  io->bounce = NULL;
  atomic_fetch_add_explicit(&io->m->in_flight, 1, memory_order_relaxed);
  io->m->ops->submit(q, io);
}

void
member_complete(struct member_io *io, int res)
{
  atomic_fetch_sub_explicit(&io->m->in_flight, 1, memory_order_relaxed);
  io->done(io, res);
}

EXPORT int
raid_member_open(const char *path, unsigned flags, struct raid_member **memberp)
{
  return member_file_open(path, flags, memberp);
}

EXPORT void
raid_member_close(struct raid_member *m)
{
  if (m == NULL)
    return;
  if (m->ops->close)
    m->ops->close(m);
  free(m->name);
  free(m);
}

EXPORT const char *
raid_member_name(const struct raid_member *m)
{
  return m->name;
}

EXPORT const char *
raid_member_kind(const struct raid_member *m)
{
  return m->ops->kind;
}

EXPORT uint64_t
raid_member_size(const struct raid_member *m)
{
  return m->size;
}

EXPORT unsigned
raid_member_logical_block_size(const struct raid_member *m)
{
  return m->lbs;
}

EXPORT int
raid_member_is_direct(const struct raid_member *m)
{
  return m->direct;
}
