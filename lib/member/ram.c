/* RAM members: zero-filled anonymous memory, for tests and benchmarks.
 *
 * Everything happens at once inside submit() (memcpy, or zeroes for
 * discard and write zeroes; flush has nothing to do), and the completion
 * goes through queue_defer() so that it runs from the queue's run loop like
 * any other.  The memory is an anonymous mapping with MAP_NORESERVE: a big
 * member costs only the pages written, and discarding whole pages gives
 * them back (MADV_DONTNEED, after which they read as zeroes).
 *
 * A RAM member may be used from several queues (threads) at once; like a
 * disk it makes no promise about overlapping requests in flight together.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "internal.h"

/* Discards at least this long give whole pages back instead of memset. */
#define RAM_MADVISE_MIN (64u << 10)

static void
ram_done(struct qtask *t, int res)
{
  struct member_io *io = (struct member_io *)((char *)t - offsetof(struct member_io, task));

  member_complete(io, res);
}

static void
ram_zero(void *p, size_t len)
{
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
  uintptr_t hi = ((uintptr_t)p + len) & ~(page - 1);

  if (len >= RAM_MADVISE_MIN && hi > lo &&
      madvise((void *)lo, hi - lo, MADV_DONTNEED) == 0) {
    memset(p, 0, lo - (uintptr_t)p);
    memset((void *)hi, 0, (uintptr_t)p + len - hi);
  }
  else
    memset(p, 0, len);
}

static void
ram_submit(struct raid_queue *q, struct member_io *io)
{
  struct raid_member *m = io->m;
  uint8_t *data = m->priv;
  int res = 0;

  if (io->op != MOP_FLUSH &&
      (io->len > m->size || io->offset > m->size - io->len))
    res = set_error(EIO, "member %s: %s of %zu bytes at offset %" PRIu64
                    " is beyond the end (%" PRIu64 " bytes)", m->name,
                    mop_name(io->op), io->len, io->offset, m->size);
  else
    member_mem_io(data, io, ram_zero);
  io->task.fn = ram_done;
  queue_defer(q, &io->task, res);
}

static void
ram_close(struct raid_member *m)
{
  if (m->priv)
    munmap(m->priv, m->size);
}

static const struct member_ops ram_ops = {
  .kind = "ram",
  .submit = ram_submit,
  .close = ram_close,
};

EXPORT int
raid_member_new_ram(const char *name, uint64_t size, struct raid_member **memberp)
{
  struct raid_member *m;
  void *p;

  *memberp = NULL;
  if (size == 0 || size % RAID_SECTOR_SIZE)
    return set_error(EINVAL, "member %s: RAM size %" PRIu64 " is not a positive "
                     "multiple of %u bytes", name, size, RAID_SECTOR_SIZE);
  if (size > SIZE_MAX)
    return set_error(EINVAL, "member %s: RAM size %" PRIu64 " is too large",
                     name, size);
  m = member_alloc(&ram_ops, name);
  if (m == NULL)
    return set_error(ENOMEM, "member %s: out of memory", name);
  p = mmap(NULL, size, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    int e = errno;

    raid_member_close(m);
    return set_error(e, "member %s: cannot map %" PRIu64 " bytes of RAM: %s",
                     name, size, strerror(e));
  }
  m->priv = p;
  m->size = size;
  m->lbs = RAID_SECTOR_SIZE;
  m->mem_align = 1;
  m->direct = false;
  *memberp = m;
  return 0;
}
