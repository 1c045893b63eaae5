/* Members: the back-end independent part.  A member is a file, a block
 * device, RAM or a fault injector wrapping another member, all behind
 * struct member_ops.  The back-ends call this file; which back-end opens
 * a spec is open.c's (the registry). */
#include <config.h>

#include <errno.h>
#include <poll.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

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

/* libnbd's schemes (nbd_connect_uri(3)); member/nbd.c lets libnbd judge
 * the rest of the URI. */
EXPORT int
raid_member_spec_is_remote(const char *spec)
{
  static const char *const schemes[] = {
    "nbd://", "nbds://", "nbd+unix://", "nbds+unix://", "nbd+vsock://", "nbds+vsock://",
  };
  size_t i;

  for (i = 0; i < ARRAY_SIZE(schemes); i++)
    if (strncmp(spec, schemes[i], strlen(schemes[i])) == 0)
      return 1;
  return 0;
}

const char *
mop_name(enum mop op)
{
  static const char *const names[] = {
    [MOP_READ] = "read", [MOP_WRITE] = "write", [MOP_FLUSH] = "flush",
    [MOP_DISCARD] = "discard", [MOP_ZERO] = "write zeroes",
  };
  return op < ARRAY_SIZE(names) ? names[op] : "?";
}

void
member_mem_io(uint8_t *base, const struct member_io *io, void (*zero)(void *, size_t))
{
  DMA_BEGIN();
  switch (io->op) {
  case MOP_READ:
    memcpy(io->buf, base + io->offset, io->len);
    break;
  case MOP_WRITE:
    memcpy(base + io->offset, io->buf, io->len);
    break;
  case MOP_DISCARD:
  case MOP_ZERO:
    if (zero)
      zero(base + io->offset, io->len);
    else
      memset(base + io->offset, 0, io->len);
    break;
  case MOP_FLUSH:
    break;
  }
  DMA_END();
}

void
member_submit(struct raid_queue *q, struct member_io *io)
{
  io->q = q;
  io->xfered = 0;
  io->bounce = NULL;
  io->start_ns = mono_ns();
  atomic_fetch_add_explicit(&io->m->in_flight, 1, memory_order_relaxed);
  io->m->ops->submit(q, io);
}

void
member_complete(struct member_io *io, int res)
{
  stats_io_done(&io->m->stats, io->op, io->len, io->start_ns, res);
  atomic_fetch_sub_explicit(&io->m->in_flight, 1, memory_order_relaxed);
  io->done(io, res);
}

/* Writers exclude each other, as md's exclusive claim of a block device
 * does (O_EXCL, member/file.c): a file that a running array uses (raidd
 * holds it open for writing) cannot be opened for writing again, by raidctl
 * create or zero, another raidd, or raidd itself through another name of
 * the same file.  flock() locks belong to the open file description, so a
 * second open in the same process conflicts too: a file named twice is
 * refused.  The lock is advisory: readers (examine) are not stopped, and
 * it goes away with the descriptor, also when the holder is killed, but
 * not at once then: a killed process's io_uring lets go of its files a
 * moment after the process is gone (the ring is torn down by a kernel
 * worker), so a conflict is looked at again for up to LOCK_WAIT_NS
 * before it is an error (a raidd restarted after a crash assembles). */
#define LOCK_WAIT_NS 1000000000ull

int
member_lock_file(int fd, const char *name)
{
  uint64_t deadline = mono_ns() + LOCK_WAIT_NS;

  while (flock(fd, LOCK_EX | LOCK_NB) == -1) {
    if (errno == EINTR)
      continue;
    if (errno == EWOULDBLOCK && mono_ns() < deadline) {
      poll(NULL, 0, 10);
      continue;
    }
    if (errno == EWOULDBLOCK)
      return set_error(EBUSY, "member %s is in use: another process (raidd?) "
                       "or another member of this array has it open for writing",
                       name);
    return set_error(errno, "member %s: flock: %s", name, strerror(errno));
  }
  return 0;
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

EXPORT void
raid_member_set_write_mostly(struct raid_member *m, int on)
{
  m->write_mostly = on != 0;
}

EXPORT int
raid_member_is_write_mostly(const struct raid_member *m)
{
  return m->write_mostly;
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

/* Metadata I/O is rare (assembly, a member failing, shutdown), so it uses a
 * queue of its own made per call: that keeps it out of whatever queue the
 * caller may be running, even when a member fails inside a completion. */
struct pio_wait {
  int res;
  bool done;
};

static void
pio_done(struct member_io *io, int res)
{
  struct pio_wait *w = io->priv;

  w->res = res;
  w->done = true;
  queue_user_done(io->q);
}

static int
pio_one(struct raid_queue *q, struct raid_member *m, enum mop op, unsigned flags,
        void *buf, size_t len, uint64_t offset)
{
  struct pio_wait w = { 0, false };
  struct member_io io;
  int r;

  memset(&io, 0, sizeof io);
  io.m = m;
  io.op = op;
  io.flags = MIO_META | flags;
  io.buf = buf;
  io.len = len;
  io.offset = offset;
  io.done = pio_done;
  io.priv = &w;
  queue_user_start(q);
  member_submit(q, &io);
  while (!w.done)
    if ((r = raid_queue_run(q, 1)) < 0)
      return r;
  return w.res;
}

int
member_refresh_size(struct raid_member *m, uint64_t *size)
{
  uint64_t now = m->size;
  int r;

  if (m->ops->size_now && (r = m->ops->size_now(m, &now)) < 0)
    return r;
  now -= now % RAID_SECTOR_SIZE;
  if (now > m->size)
    m->size = now;
  *size = now;
  return 0;
}

int
member_flush_sync(struct raid_member *m)
{
  struct raid_queue *q;
  int r;

  if ((r = raid_queue_new(8, &q)) < 0)
    return r;
  r = pio_one(q, m, MOP_FLUSH, 0, NULL, 0, 0);
  raid_queue_free(q);
  if (r < 0)
    return set_error(-r, "member %s: flush failed: %s", m->name, strerror(-r));
  return 0;
}

/* member_pio(), the flush before a write only when PREFLUSH. */
static int
pio(struct raid_member *m, bool write, bool preflush, void *buf, size_t len,
    uint64_t offset)
{
  const char *what = write ? "write" : "read";
  struct raid_queue *q;
  void *bounce;
  int r;

  r = raid_queue_new(8, &q);
  if (r < 0)
    return r;
  bounce = raid_buf_alloc(len);
  if (bounce == NULL) {
    raid_queue_free(q);
    return set_error(ENOMEM, "member %s: out of memory", m->name);
  }
  /* md's md_super_write() ordering.  Without the first flush, a drive
   * with a volatile cache may make the superblock durable before the data
   * it vouches for: a recovery_offset past rebuilt data that a power cut
   * then loses, or "clean" over parity that never reached the media. */
  if (write) {
    memcpy(bounce, buf, len);
    what = "flush";
    r = preflush ? pio_one(q, m, MOP_FLUSH, 0, NULL, 0, 0) : 0;
    if (r == 0) {
      what = "write";
      r = pio_one(q, m, MOP_WRITE, MIO_FUA, bounce, len, offset);
    }
  }
  else
    r = pio_one(q, m, MOP_READ, 0, bounce, len, offset);
  if (r == 0 && !write)
    memcpy(buf, bounce, len);
  raid_buf_free(bounce);
  raid_queue_free(q);
  if (r < 0)
    return set_error(-r, "member %s: superblock %s at byte %" PRIu64 " failed: %s",
                     m->name, what, offset,
                     strerror(-r));
  return 0;
}

int
member_pio(struct raid_member *m, bool write, void *buf, size_t len, uint64_t offset)
{
  return pio(m, write, true, buf, len, offset);
}

int
member_write_fua(struct raid_member *m, void *buf, size_t len, uint64_t offset)
{
  return pio(m, true, false, buf, len, offset);
}
