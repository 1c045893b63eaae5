/* File and block device members: I/O through the queue's io_uring.
 *
 * One back-end serves regular files ("file") and block devices ("block");
 * they differ only in how size and block size are found and in the kind
 * reported.  The fd is shared by every queue (thread) using the member;
 * each queue brings its own ring, so nothing here takes a lock.
 *
 * O_DIRECT.  Requests come at 512-byte granularity (RAID_SECTOR_SIZE), so
 * O_DIRECT is used only where the device or file system accepts 512-byte
 * aligned offsets and lengths; anything stricter (a 4Kn disk, btrfs) and
 * anything that refuses O_DIRECT is accessed buffered, and the choice is
 * reported by raid_member_is_direct().  The alignment comes from, in order:
 *  - BLKSSZGET for block devices (and STATX_DIOALIGN for the memory side);
 *  - STATX_DIOALIGN for files (Linux 6.1+, when the file system reports it;
 *    0 means the file does not support O_DIRECT at all);
 *  - otherwise a probe: one O_DIRECT read of 512 bytes at offset 512, first
 *    into a 512-aligned buffer, then into a 4096-aligned one.
 * tmpfs and ramfs accept O_DIRECT since Linux 6.6 but are the page cache
 * either way, so they are used buffered.  Buffers that are not aligned as
 * O_DIRECT needs (m->mem_align) go through a bounce buffer.
 *
 * Completion.  Every step is an SQE whose user_data is io->task; the task's
 * fn is the step's completion handler, so the handler in use *is* the
 * state.  Short transfers are resubmitted for the rest (io->xfered counts
 * progress); -EAGAIN and -EINTR are retried; a read that hits end of file is
 * -EIO.  Errors found in submit() (read-only member, out of range) complete
 * through queue_defer(), never inline.
 *
 * Discard and write zeroes.  Both must leave the range reading back as
 * zeroes.  Discard tries FALLOC_FL_PUNCH_HOLE (a hole in a file; on a block
 * device a zero-out that may unmap and that fails rather than write zeroes),
 * write zeroes starts at FALLOC_FL_ZERO_RANGE (unwritten extents in a file;
 * a zero-out on a block device).  EOPNOTSUPP moves one step down the chain
 * punch hole -> zero range -> writing zeroes from zero_buf().  A FUA discard
 * or write zeroes is followed by fdatasync, since fallocate changes
 * metadata that RWF_DSYNC cannot cover.
 *
 * A file that shrinks.  A member file cut short behind raidd's back
 * (truncate(1), a copy over it) must fail the member, never serve the
 * zeroes of a hole as data.  Reads see a cut: past the new end they come
 * back short or empty.  Writes do not: a write past a regular file's end
 * extends it again, and the range between the cut and the write then
 * reads back as zeroes in full, which nothing can tell from data.  So the
 * rule, against m->size (the file's size when opened, or since a grow;
 * the member's superblocks and data all lie below it):
 *  - a read that comes back short or at end of file looks at the size
 *    (fstat); a file now shorter than m->size fails the read with -EIO,
 *    which fails the member through the array's failure path, and the
 *    read is served from the other members; a short read of a file still
 *    whole (not expected, but allowed) goes on for the rest;
 *  - a read that comes back whole looks at the size too when it completes:
 *    a write in flight at the cut may have landed past it, extending the
 *    file, and the range between the cut and that write then reads back
 *    whole, as zeroes (CI saw fio's verify catch one: tests/
 *    test-raidd-shrink.sh); the file is still shorter than m->size, so the
 *    read fails as above;
 *  - a write (or discard, or write zeroes) to a regular file looks at
 *    the size before it is issued and is refused with -EIO when the file
 *    is short, so raidd never extends a file cut before that look; and
 *    looks again when it completes, so a cut made while it was in flight
 *    (which may have extended the file) fails it too, before it is
 *    acknowledged.  One look (fstat(), about 0.2 us) serves every write a
 *    queue prepares or completes between two of its submissions, reaps
 *    or waits (check_whole_on(): the queue's epoch), so a
 *    batch of writes to a member costs two (bench/raid-bench, RAID 1,
 *    4 KiB random writes at queue depth 32: no change on O_DIRECT files,
 *    a few per cent more CPU per write at most on tmpfs, where the CPU is
 *    all there is to measure); reads pay the same (one look serves every
 *    completion a queue reaps at once; RAID 1, 4 KiB random reads at queue
 *    depth 32, four runs each way side by side: 1.9 % more CPU per read on
 *    tmpfs, 1.4 % on O_DIRECT ext4 files, within the runs' spread);
 *  - once seen short, the member is shrunk for good: every later I/O on
 *    it fails with -EIO, lost() says so, and the finding is logged once,
 *    naming the file and both sizes.
 * Block devices need none of this: I/O past a device's end fails by
 * itself, and no write extends one.  What cannot be seen: a file cut and
 * then extended again to its full size (truncate -s) before raidd
 * touched the cut part; and a cut re-extended to full size by a write of
 * raidd's to the member's last bytes that was in flight when the cut
 * came.  The size is right then and the holes read as zeroes: the data is
 * gone as if a disk had been overwritten, which md does not see either; a
 * scrub counts the mismatches.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/magic.h>

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#endif
#endif
#ifndef VALGRIND_MAKE_MEM_DEFINED
#define VALGRIND_MAKE_MEM_DEFINED(p, n) ((void)(p), (void)(n))
#endif

#include "internal.h"

/* Headers older than Linux 6.1 lack STATX_DIOALIGN and the two fields it
 * fills, which then sit in the spare space at these offsets. */
#ifdef STATX_DIOALIGN
#define STX_DIO_MEM_ALIGN(s) ((s)->stx_dio_mem_align)
#define STX_DIO_OFFSET_ALIGN(s) ((s)->stx_dio_offset_align)
#else
#define STATX_DIOALIGN 0x2000U
#define STX_DIO_MEM_ALIGN(s) stx_u32((s), 0x98)
#define STX_DIO_OFFSET_ALIGN(s) stx_u32((s), 0x9c)
static uint32_t
stx_u32(const struct statx *s, size_t off)
{
  uint32_t v;

  memcpy(&v, (const char *)s + off, sizeof v);
  return v;
}
#endif

#ifndef RAMFS_MAGIC
#define RAMFS_MAGIC 0x858458f6
#endif
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

struct file_member {
  int fd;
  bool block;
  unsigned dio_align;            /* offset/length alignment O_DIRECT needs; 1 if buffered */
  /* A file found cut short (check_whole()): the size it had then, and the
   * flag, set once (release) after it, never cleared.  Any thread. */
  _Atomic uint64_t cut_size;
  _Atomic bool shrunk;
  /* The epoch of a queue (struct raid_queue) in which the file was last
   * seen whole, by that queue's thread: check_whole_on(). */
  _Atomic uint64_t whole_epoch;
};

/* ---- a file cut short (the rule is at the top) ------------------------ */

/* Is M's file, a regular file, still at least M's size long?  0, or an
 * error for the I/O with a message naming the file and both sizes: -EIO
 * once it was seen shorter (the first time also logged), or fstat's. */
static int
check_whole(struct raid_member *m)
{
  struct file_member *fm = m->priv;
  uint64_t want = atomic_load_explicit(&m->size, memory_order_relaxed);
  struct stat st;

  if (!atomic_load_explicit(&fm->shrunk, memory_order_acquire)) {
    if (fstat(fm->fd, &st) == -1)
      return set_error(errno, "member %s: fstat: %s", m->name, strerror(errno));
    if ((uint64_t)st.st_size >= want)
      return 0;
    atomic_store_explicit(&fm->cut_size, (uint64_t)st.st_size, memory_order_relaxed);
    if (!atomic_exchange_explicit(&fm->shrunk, true, memory_order_acq_rel))
      raid_log(RAID_LOG_ERR, "member %s: the file is %" PRIu64 " bytes, shorter than "
               "the %" PRIu64 " it had when opened: it was cut short while in use, "
               "and what it held past its end is gone; every I/O on it fails from "
               "now on (an array fails the member)", m->name, (uint64_t)st.st_size,
               want);
  }
  return set_error(EIO, "member %s: the file was cut short to %" PRIu64 " bytes, "
                   "less than the %" PRIu64 " it had when opened",
                   m->name, atomic_load_explicit(&fm->cut_size, memory_order_relaxed),
                   want);
}

/* check_whole() once per epoch of Q: a look in this epoch comes before
 * every SQE prepared in it reaches the kernel and after every completion
 * reaped so far (lib/internal.h, struct raid_queue), so it stands for a
 * look at each of them; a batch of writes to a member costs one fstat()
 * before and one after. */
static int
check_whole_on(struct raid_member *m, const struct raid_queue *q)
{
  struct file_member *fm = m->priv;
  int r;

  if (atomic_load_explicit(&fm->whole_epoch, memory_order_relaxed) == q->epoch)
    return 0;
  r = check_whole(m);
  if (r == 0)
    atomic_store_explicit(&fm->whole_epoch, q->epoch, memory_order_relaxed);
  return r;
}

static bool
is_shrunk(const struct raid_member *m)
{
  const struct file_member *fm = m->priv;

  return fm && atomic_load_explicit(&fm->shrunk, memory_order_acquire);
}

/* ---- completion ------------------------------------------------------- */

static bool
retry_errno(int res)
{
  return res == -EAGAIN || res == -EINTR;
}

/* Drop the bounce buffer and hand IO back (its done() may free it). */
static void
complete(struct member_io *io, int res)
{
  if (io->bounce) {
    raid_buf_free(io->bounce);
    io->bounce = NULL;
  }
  member_complete(io, res);
}

/* The last step, with a message for errors from the kernel. */
static void
finish(struct member_io *io, int res)
{
  if (res < 0)
    set_error(-res, "member %s: %s of %zu bytes at offset %" PRIu64 " failed: %s",
              io->m->name, mop_name(io->op), io->len, io->offset, strerror(-res));
  complete(io, res);
}

/* For errors found in submit(): the message is already set. */
static void
refused_fn(struct qtask *t, int res)
{
  complete(task_io(t), res);
}

static void
refuse(struct raid_queue *q, struct member_io *io, int res)
{
  io->task.fn = refused_fn;
  queue_defer(q, &io->task, res);
}

/* ---- read, write, and writing zeroes ------------------------------------ */

static void rw_done(struct qtask *t, int res);

/* Issue the rest of a read or write; MOP_DISCARD and MOP_ZERO arrive here
 * when fallocate could not do them and write zeroes instead. */
static void
rw_issue(struct member_io *io)
{
  struct file_member *fm = io->m->priv;
  struct io_uring_sqe *sqe = queue_get_sqe(io->q);
  char *p = io->bounce ? io->bounce : io->buf;
  size_t n = io->len - io->xfered;
  uint64_t off = io->offset + io->xfered;

  switch (io->op) {
  case MOP_READ:
    io_uring_prep_read(sqe, fm->fd, p + io->xfered, n, off);
    break;
  case MOP_WRITE:
    io_uring_prep_write(sqe, fm->fd, p + io->xfered, n, off);
    break;
  default:
    n = MIN(n, (size_t)RAID_MAX_REQUEST);
    io_uring_prep_write(sqe, fm->fd, zero_buf(n), n, off);
    break;
  }
  if (io->op != MOP_READ && (io->flags & MIO_FUA))
    sqe->rw_flags = RWF_DSYNC;
  io->task.fn = rw_done;
  queue_sqe_task(io->q, sqe, &io->task);
}

static void
rw_done(struct qtask *t, int res)
{
  struct member_io *io = task_io(t);
  struct file_member *fm = io->m->priv;
  int r;

  if (retry_errno(res)) {
    rw_issue(io);
    return;
  }
  if (res < 0) {
    finish(io, res);
    return;
  }
  /* Short: at the end of a file cut short?  Then none of it counts. */
  if (!fm->block && (size_t)res < io->len - io->xfered && (r = check_whole(io->m)) < 0) {
    complete(io, r);
    return;
  }
  if (res == 0) {
    /* End of file (the file shrank under us), or a device that will not
     * take any more: either way the data is not there. */
    set_error(EIO, "member %s: %s at offset %" PRIu64 " stopped at end of file "
              "after %zu of %zu bytes", io->m->name, mop_name(io->op),
              io->offset, io->xfered, io->len);
    complete(io, -EIO);
    return;
  }
  if (io->op == MOP_READ) {
    /* Written by the kernel through the ring, which valgrind cannot see. */
    char *p = io->bounce ? io->bounce : io->buf;

    VALGRIND_MAKE_MEM_DEFINED(p + io->xfered, (size_t)res);
  }
  io->xfered += res;
  if (io->xfered < io->len) {
    rw_issue(io);
    return;
  }
  if (io->op == MOP_READ && io->bounce)
    memcpy(io->buf, io->bounce, io->len);
  /* A write that a cut in flight let extend the file fails, unacknowledged;
   * so does a read that came back whole from the hole such a write leaves
   * between the cut and itself. */
  if (!fm->block && (r = check_whole_on(io->m, io->q)) < 0) {
    complete(io, r);
    return;
  }
  finish(io, 0);
}

/* ---- flush ---------------------------------------------------------------- */

static void fsync_done(struct qtask *t, int res);

static void
fsync_issue(struct member_io *io)
{
  struct file_member *fm = io->m->priv;
  struct io_uring_sqe *sqe = queue_get_sqe(io->q);

  io_uring_prep_fsync(sqe, fm->fd, IORING_FSYNC_DATASYNC);
  io->task.fn = fsync_done;
  queue_sqe_task(io->q, sqe, &io->task);
}

static void
fsync_done(struct qtask *t, int res)
{
  struct member_io *io = task_io(t);

  if (retry_errno(res))
    fsync_issue(io);
  else
    finish(io, res);
}

/* ---- discard and write zeroes ------------------------------------------------ */

static void
falloc_issue(struct member_io *io, int mode, void (*fn)(struct qtask *, int))
{
  struct file_member *fm = io->m->priv;
  struct io_uring_sqe *sqe = queue_get_sqe(io->q);

  io_uring_prep_fallocate(sqe, fm->fd, mode, io->offset, io->len);
  io->task.fn = fn;
  queue_sqe_task(io->q, sqe, &io->task);
}

static void
falloc_ok(struct member_io *io)
{
  if (io->flags & MIO_FUA)
    fsync_issue(io);
  else
    finish(io, 0);
}

static void
zero_range_done(struct qtask *t, int res)
{
  struct member_io *io = task_io(t);

  if (retry_errno(res))
    falloc_issue(io, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, zero_range_done);
  else if (res == -EOPNOTSUPP)
    rw_issue(io);               /* write zeroes */
  else if (res < 0)
    finish(io, res);
  else
    falloc_ok(io);
}

static void
punch_done(struct qtask *t, int res)
{
  struct member_io *io = task_io(t);

  if (retry_errno(res))
    falloc_issue(io, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, punch_done);
  else if (res == -EOPNOTSUPP)
    falloc_issue(io, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, zero_range_done);
  else if (res < 0)
    finish(io, res);
  else
    falloc_ok(io);
}

/* ---- submit ---------------------------------------------------------------- */

static void
file_submit(struct raid_queue *q, struct member_io *io)
{
  struct raid_member *m = io->m;
  struct file_member *fm = m->priv;
  int r;

  if (is_shrunk(m)) {
    refuse(q, io, check_whole(m));      /* -EIO, with its message */
    return;
  }
  if (m->readonly && io->op != MOP_READ && io->op != MOP_FLUSH) {
    refuse(q, io, set_error(EPERM, "member %s: %s at offset %" PRIu64 " refused: "
                            "opened read-only", m->name, mop_name(io->op), io->offset));
    return;
  }
  if (io->op != MOP_FLUSH) {
    if (io->len > m->size || io->offset > m->size - io->len) {
      refuse(q, io, set_error(EIO, "member %s: %s of %zu bytes at offset %" PRIu64
                              " is beyond the end (%" PRIu64 " bytes)", m->name,
                              mop_name(io->op), io->len, io->offset, m->size));
      return;
    }
    if ((io->offset | io->len) & (fm->dio_align - 1)) {
      refuse(q, io, set_error(EINVAL, "member %s: %s of %zu bytes at offset %" PRIu64
                              " is not aligned to %u bytes", m->name,
                              mop_name(io->op), io->len, io->offset, fm->dio_align));
      return;
    }
    if (io->len == 0) {
      refuse(q, io, 0);
      return;
    }
    /* A write never extends a file cut short (the rule is at the top). */
    if (!fm->block && io->op != MOP_READ && (r = check_whole_on(m, q)) < 0) {
      refuse(q, io, r);
      return;
    }
  }

  switch (io->op) {
  case MOP_READ:
  case MOP_WRITE:
    if ((uintptr_t)io->buf & (m->mem_align - 1)) {
      io->bounce = raid_buf_alloc(io->len);
      if (io->bounce == NULL) {
        refuse(q, io, set_error(ENOMEM, "member %s: %s of %zu bytes: no memory "
                                "for a bounce buffer", m->name, mop_name(io->op),
                                io->len));
        return;
      }
      if (io->op == MOP_WRITE)
        memcpy(io->bounce, io->buf, io->len);
    }
    rw_issue(io);
    break;
  case MOP_FLUSH:
    fsync_issue(io);
    break;
  case MOP_DISCARD:
  case MOP_ZERO:
    /* A block device only zeroes whole logical blocks. */
    if (fm->block && ((io->offset | io->len) & (m->lbs - 1)))
      rw_issue(io);
    else if (io->op == MOP_DISCARD)
      falloc_issue(io, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, punch_done);
    else
      falloc_issue(io, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, zero_range_done);
    break;
  }
}

static void
file_close(struct raid_member *m)
{
  struct file_member *fm = m->priv;

  if (fm) {
    close(fm->fd);
    free(fm);
  }
}

/* A file grown with truncate, a block device whose capacity grew (an LV
 * extended, losetup -c): what it holds now. */
static int
file_size_now(struct raid_member *m, uint64_t *size)
{
  struct file_member *fm = m->priv;
  struct stat st;

  if (fm->block) {
    if (ioctl(fm->fd, BLKGETSIZE64, size) == -1)
      return set_error(errno, "member %s: BLKGETSIZE64: %s", m->name, strerror(errno));
    return 0;
  }
  if (fstat(fm->fd, &st) == -1)
    return set_error(errno, "member %s: fstat: %s", m->name, strerror(errno));
  *size = (uint64_t)st.st_size;
  return 0;
}

/* A file cut short is gone for good (raidctl status says "lost"). */
static bool
file_lost(const struct raid_member *m)
{
  return is_shrunk(m);
}

static const struct member_ops file_ops = {
  .kind = "file",
  .submit = file_submit,
  .close = file_close,
  .lost = file_lost,
  .size_now = file_size_now,
};

static const struct member_ops block_ops = {
  .kind = "block",
  .submit = file_submit,
  .close = file_close,
  .size_now = file_size_now,
};

/* ---- open ------------------------------------------------------------------ */

/* Switch FD between buffered and O_DIRECT; also clears the O_NONBLOCK it
 * was opened with (io_uring would return -EAGAIN instead of waiting). */
static int
set_direct(int fd, bool direct)
{
  int fl = fcntl(fd, F_GETFL);

  if (fl == -1)
    return -errno;
  fl &= ~(O_NONBLOCK | O_DIRECT);
  if (direct)
    fl |= O_DIRECT;
  if (fcntl(fd, F_SETFL, fl) == -1)
    return -errno;
  return 0;
}

/* Probe a file whose file system does not report its O_DIRECT alignment:
 * can FD (in O_DIRECT mode) read 512 bytes at a 512-byte offset, and into
 * which buffer alignment?  Returns the memory alignment, 0 if neither. */
static unsigned
probe_direct(int fd, uint64_t size)
{
  off_t off = size >= 2 * RAID_SECTOR_SIZE ? RAID_SECTOR_SIZE : 0;
  char *buf = raid_buf_alloc(2 * RAID_BUF_ALIGN);
  unsigned align = 0;

  if (buf == NULL)
    return 0;
  if (pread(fd, buf + RAID_SECTOR_SIZE, RAID_SECTOR_SIZE, off) >= 0)
    align = RAID_SECTOR_SIZE;
  else if (errno == EINVAL && pread(fd, buf, RAID_SECTOR_SIZE, off) >= 0)
    align = RAID_BUF_ALIGN;
  raid_buf_free(buf);
  return align;
}

/* Choose O_DIRECT or buffered for FD and leave FD in that mode.  Sets
 * *DIRECT, *DIO_ALIGN and *MEM_ALIGN (1 and 1 when buffered) and *WHY, the
 * reason for the choice.  Returns 0 or -errno. */
static int
choose_direct(int fd, bool block, unsigned lbs, uint64_t size, unsigned flags,
              bool *direct, unsigned *dio_align, unsigned *mem_align,
              const char **why)
{
  struct statx stx;
  struct statfs sfs;
  unsigned off_align = block ? lbs : 0, mem = block ? lbs : 0;
  bool known = block;
  int r;

  *direct = false;
  *dio_align = *mem_align = 1;
  r = set_direct(fd, false);
  if (r < 0)
    return r;
  if (flags & RAID_MEMBER_BUFFERED) {
    *why = "buffered I/O requested";
    return 0;
  }
  if (!block && fstatfs(fd, &sfs) == 0 &&
      (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC)) {
    *why = "memory file system";
    return 0;
  }
  memset(&stx, 0, sizeof stx);
  if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
      (stx.stx_mask & STATX_DIOALIGN)) {
    if (STX_DIO_OFFSET_ALIGN(&stx) == 0) {
      *why = "O_DIRECT not supported";
      return 0;
    }
    off_align = MAX(off_align, STX_DIO_OFFSET_ALIGN(&stx));
    mem = STX_DIO_MEM_ALIGN(&stx);
    known = true;
  }
  if (known && off_align > RAID_SECTOR_SIZE) {
    *why = "O_DIRECT alignment larger than 512 bytes";
    return 0;
  }
  if (known && mem > RAID_BUF_ALIGN) {
    *why = "O_DIRECT memory alignment larger than 4096 bytes";
    return 0;
  }
  if (set_direct(fd, true) < 0) {
    *why = "O_DIRECT refused";
    return set_direct(fd, false);
  }
  if (!known) {
    mem = probe_direct(fd, size);
    if (mem == 0) {
      *why = "O_DIRECT probe failed";
      return set_direct(fd, false);
    }
    off_align = RAID_SECTOR_SIZE;
  }
  *direct = true;
  *dio_align = MAX(off_align, 1u);
  *mem_align = MAX(mem, 1u);
  *why = known ? "O_DIRECT" : "O_DIRECT (probed)";
  return 0;
}

int
member_file_open(const char *path, unsigned flags, struct raid_member **mp)
{
  struct stat st;
  struct file_member *fm = NULL;
  struct raid_member *m = NULL;
  const char *why = "";
  unsigned dio_align, mem_align, lbs = RAID_SECTOR_SIZE;
  uint64_t size;
  bool block, direct;
  int fd, oflags, r;

  *mp = NULL;
  if (flags & ~(RAID_MEMBER_READONLY | RAID_MEMBER_BUFFERED))
    return set_error(EINVAL, "member %s: unknown flags 0x%x", path,
                     flags & ~(RAID_MEMBER_READONLY | RAID_MEMBER_BUFFERED));
  /* Look before opening: opening a FIFO or a tty has side effects. */
  if (stat(path, &st) == -1)
    return set_error(errno, "member %s: %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
    return set_error(EINVAL, "member %s: not a regular file or block device", path);
  block = S_ISBLK(st.st_mode);

  /* A writable block device is claimed exclusively (O_EXCL), as md does:
   * it fails with EBUSY while mounted or used by another array. */
  oflags = (flags & RAID_MEMBER_READONLY ? O_RDONLY : O_RDWR) |
    O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  if (block && !(flags & RAID_MEMBER_READONLY))
    oflags |= O_EXCL;
  fd = open(path, oflags);
  if (fd == -1) {
    r = errno;
    if (r == EBUSY)
      return set_error(r, "member %s: device is in use (mounted, or claimed "
                       "by md or another array)", path);
    return set_error(r, "member %s: %s", path, strerror(r));
  }
  if (fstat(fd, &st) == -1) {
    r = set_error(errno, "member %s: fstat: %s", path, strerror(errno));
    goto err;
  }
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
    r = set_error(EINVAL, "member %s: not a regular file or block device", path);
    goto err;
  }
  block = S_ISBLK(st.st_mode);
  /* A file opened for writing is claimed as a block device is (O_EXCL
   * above): see member_lock_file(). */
  if (!block && !(flags & RAID_MEMBER_READONLY) && (r = member_lock_file(fd, path)) < 0)
    goto err;
  if (block) {
    int ssz;

    if (ioctl(fd, BLKGETSIZE64, &size) == -1) {
      r = set_error(errno, "member %s: BLKGETSIZE64: %s", path, strerror(errno));
      goto err;
    }
    if (ioctl(fd, BLKSSZGET, &ssz) == -1) {
      r = set_error(errno, "member %s: BLKSSZGET: %s", path, strerror(errno));
      goto err;
    }
    if (ssz < (int)RAID_SECTOR_SIZE || !IS_POWER_OF_2((unsigned)ssz)) {
      r = set_error(EINVAL, "member %s: unsupported logical block size %d", path, ssz);
      goto err;
    }
    lbs = ssz;
  }
  else
    size = st.st_size;
  /* Members are used in whole sectors; a trailing partial one is ignored. */
  if (size < RAID_SECTOR_SIZE) {
    r = set_error(EINVAL, "member %s: size %" PRIu64 " bytes is less than one "
                  "%u-byte sector", path, size, RAID_SECTOR_SIZE);
    goto err;
  }
  size -= size % RAID_SECTOR_SIZE;

  r = choose_direct(fd, block, lbs, size, flags, &direct, &dio_align, &mem_align,
                    &why);
  if (r < 0) {
    r = set_error(-r, "member %s: fcntl: %s", path, strerror(-r));
    goto err;
  }

  fm = calloc(1, sizeof *fm);
  m = member_alloc(block ? &block_ops : &file_ops, path);
  if (fm == NULL || m == NULL) {
    r = set_error(ENOMEM, "member %s: out of memory", path);
    goto err;
  }
  fm->fd = fd;
  fm->block = block;
  fm->dio_align = dio_align;
  m->priv = fm;
  m->size = size;
  m->lbs = lbs;
  m->mem_align = mem_align;
  m->direct = direct;
  m->readonly = flags & RAID_MEMBER_READONLY;
  m->devnum = block ? (uint64_t)st.st_rdev : 0;
  raid_log(RAID_LOG_DEBUG, "member %s: %s, %" PRIu64 " bytes, logical block %u, %s%s",
           path, block ? "block device" : "file", size, lbs,
           m->direct ? "direct I/O" : "buffered I/O: ", m->direct ? "" : why);
  *mp = m;
  return 0;

 err:
  if (m)
    raid_member_close(m);     /* no priv yet: frees only the member */
  free(fm);
  close(fd);
  return r;
}
