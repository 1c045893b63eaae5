/* Description: the member back-ends (file, block device, RAM, fault
 * injector) driven directly through a raid_queue with the internal member
 * API: round trips of read, write, FUA write, flush, discard and write
 * zeroes; O_DIRECT on /var/tmp and buffered on tmpfs; unaligned buffers
 * (the bounce path); many I/Os in flight on a small ring; end of file;
 * injected errors by range, after N ops and from a call, delays that
 * reorder completions, rules changed from another thread; and the open
 * errors (missing path, directory, empty file, read-only member).  The
 * simulated drives ("sim:" specs: RAM-backed, timing of latency, channels
 * and bandwidth, discard mode, bad options).  The
 * block device case uses a loop device and is skipped when not root or
 * when losetup fails.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include <check.h>

#include "internal.h"

#define MIB (1024 * 1024)

/* Made in main(), removed there whatever the tests did: every file the
 * tests create lives under them. */
static char vartmp_dir[] = "/var/tmp/libraid-test-member.XXXXXX";
static char shm_dir[] = "/dev/shm/libraid-test-member.XXXXXX";
static bool have_shm;

/* ---- helpers ------------------------------------------------------------ */

struct tio {
  struct member_io io;
  int res;
  bool done;
  unsigned seq;                 /* completion order */
};

static unsigned completions;

/* RAID_TEST_SCALE percent (default 100; valgrind runs use 10) of N. */
static unsigned
scaled(unsigned n)
{
  const char *s = getenv("RAID_TEST_SCALE");
  unsigned long pc = s && *s ? strtoul(s, NULL, 10) : 100;

  n = n * (pc ? pc : 1) / 100;
  return n ? n : 1;
}

static void
tio_done(struct member_io *io, int res)
{
  struct tio *t = (struct tio *)((char *)io - offsetof(struct tio, io));

  ck_assert_msg(!t->done, "done called twice");
  t->res = res;
  t->done = true;
  t->seq = completions++;
  queue_user_done(io->q);
}

static void
tio_start(struct raid_queue *q, struct raid_member *m, struct tio *t,
          enum mop op, void *buf, uint64_t off, size_t len, unsigned flags)
{
  memset(t, 0, sizeof *t);
  t->io.m = m;
  t->io.op = op;
  t->io.flags = flags;
  t->io.buf = buf;
  t->io.offset = off;
  t->io.len = len;
  t->io.done = tio_done;
  queue_user_start(q);
  member_submit(q, &t->io);
  ck_assert_msg(!t->done, "completion ran inside submit");
}

static void
tio_wait(struct raid_queue *q, struct tio *t)
{
  while (!t->done)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
}

static int
mio(struct raid_queue *q, struct raid_member *m, enum mop op, void *buf,
    uint64_t off, size_t len, unsigned flags)
{
  struct tio t;

  tio_start(q, m, &t, op, buf, off, len, flags);
  tio_wait(q, &t);
  return t.res;
}

static void
fill(uint8_t *p, size_t len, unsigned seed)
{
  uint32_t x = seed * 2654435761u + 1;
  size_t i;

  for (i = 0; i < len; i++) {
    x = x * 1103515245u + 12345u;
    p[i] = x >> 16;
  }
}

static bool
all_zero(const uint8_t *p, size_t len)
{
  size_t i;

  for (i = 0; i < len; i++)
    if (p[i])
      return false;
  return true;
}

static struct raid_queue *
new_queue(unsigned entries)
{
  struct raid_queue *q;

  ck_assert_int_eq(raid_queue_new(entries, &q), 0);
  return q;
}

static void
make_file(const char *path, uint64_t size)
{
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, size), 0);
  close(fd);
}

static double
now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Every op on M, checked by reading back: BUF is used at ALIGN_OFF bytes
 * past a 4096-aligned address (0: aligned; 1: forces the bounce path
 * under O_DIRECT). */
static void
exercise(struct raid_queue *q, struct raid_member *m, size_t align_off)
{
  const size_t len = 64 << 10;
  uint64_t size = raid_member_size(m);
  uint64_t off = 3 * 4096 + 512;             /* sector- but not page-aligned */
  uint8_t *wraw = raid_buf_alloc(len + 4096), *rraw = raid_buf_alloc(len + 4096);
  uint8_t *w = wraw + align_off, *r = rraw + align_off;
  uint8_t *expect = malloc(len);

  ck_assert_ptr_nonnull(wraw);
  ck_assert_ptr_nonnull(rraw);
  ck_assert_ptr_nonnull(expect);
  ck_assert_uint_ge(size, 1 * MIB);

  /* write, read back */
  fill(w, len, 1);
  memcpy(expect, w, len);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, w, off, len, 0), 0);
  memset(r, 0xee, len);
  ck_assert_int_eq(mio(q, m, MOP_READ, r, off, len, 0), 0);
  ck_assert_mem_eq(r, expect, len);

  /* FUA write of the last 8 KiB, flush */
  fill(w, 8192, 2);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, w, size - 8192, 8192, MIO_FUA), 0);
  memset(r, 0, 8192);
  ck_assert_int_eq(mio(q, m, MOP_READ, r, size - 8192, 8192, 0), 0);
  ck_assert_mem_eq(r, w, 8192);
  ck_assert_int_eq(mio(q, m, MOP_FLUSH, NULL, 0, 0, 0), 0);

  /* discard a range cutting through pages: zeroes there, data around */
  ck_assert_int_eq(mio(q, m, MOP_DISCARD, NULL, off + 1024, 9216, 0), 0);
  memset(expect + 1024, 0, 9216);
  memset(r, 0xee, len);
  ck_assert_int_eq(mio(q, m, MOP_READ, r, off, len, 0), 0);
  ck_assert_mem_eq(r, expect, len);

  /* write zeroes (FUA), likewise */
  ck_assert_int_eq(mio(q, m, MOP_ZERO, NULL, off + 20480, 12800, MIO_FUA), 0);
  memset(expect + 20480, 0, 12800);
  memset(r, 0xee, len);
  ck_assert_int_eq(mio(q, m, MOP_READ, r, off, len, 0), 0);
  ck_assert_mem_eq(r, expect, len);

  /* a large discard and write zeroes, then the whole range reads zero */
  fill(w, len, 3);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, w, 1 * MIB - len, len, 0), 0);
  ck_assert_int_eq(mio(q, m, MOP_DISCARD, NULL, 512 * 1024, 512 * 1024, 0), 0);
  memset(r, 0xee, len);
  ck_assert_int_eq(mio(q, m, MOP_READ, r, 1 * MIB - len, len, 0), 0);
  ck_assert(all_zero(r, len));
  ck_assert_int_eq(mio(q, m, MOP_WRITE, w, 1 * MIB - len, len, 0), 0);
  ck_assert_int_eq(mio(q, m, MOP_ZERO, NULL, 512 * 1024, 512 * 1024, 0), 0);
  memset(r, 0xee, len);
  ck_assert_int_eq(mio(q, m, MOP_READ, r, 1 * MIB - len, len, 0), 0);
  ck_assert(all_zero(r, len));

  /* the last sector is in range, one past it is not */
  ck_assert_int_eq(mio(q, m, MOP_READ, r, size - 512, 512, 0), 0);
  ck_assert_int_eq(mio(q, m, MOP_READ, r, size - 512, 1024, 0), -EIO);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), raid_member_name(m)));
  ck_assert_int_eq(mio(q, m, MOP_WRITE, w, size, 512, 0), -EIO);

  raid_buf_free(wraw);
  raid_buf_free(rraw);
  free(expect);
}

/* O_DIRECT alignment /var/tmp's file system reports, 0 if unknown. */
static unsigned
dio_offset_align(const char *path)
{
  struct statx stx;

  if (statx(AT_FDCWD, path, 0, 0x2000 /* STATX_DIOALIGN */, &stx) == 0 &&
      (stx.stx_mask & 0x2000))
    return ((uint32_t *)&stx)[0x9c / 4];
  return 0;
}

/* ---- file members --------------------------------------------------------- */

START_TEST(test_file_direct)
{
  char path[256];
  struct raid_member *m;
  struct raid_queue *q = new_queue(64);
  unsigned a;

  snprintf(path, sizeof path, "%s/direct.img", vartmp_dir);
  make_file(path, 4 * MIB + 100);            /* partial sector: ignored */
  ck_assert_int_eq(raid_member_open(path, 0, &m), 0);
  ck_assert_str_eq(raid_member_kind(m), "file");
  ck_assert_str_eq(raid_member_name(m), path);
  ck_assert_uint_eq(raid_member_size(m), 4 * MIB);
  ck_assert_uint_eq(raid_member_logical_block_size(m), 512);
  a = dio_offset_align(path);
  printf("test-member: %s: O_DIRECT offset alignment %u (0: not reported), "
         "memory alignment %u, direct %d\n", vartmp_dir, a, m->mem_align,
         raid_member_is_direct(m));
  if (a == 0 || a <= 512)
    ck_assert_int_eq(raid_member_is_direct(m), 1);
  else
    ck_assert_int_eq(raid_member_is_direct(m), 0);
  exercise(q, m, 0);
  exercise(q, m, 1);                          /* bounce buffers */
  exercise(q, m, 512 + 8);
  {
    uint8_t *buf = raid_buf_alloc(4096);

    /* nothing to do; and under O_DIRECT, less than a sector is refused */
    ck_assert_int_eq(mio(q, m, MOP_READ, buf, 4096, 0, 0), 0);
    if (raid_member_is_direct(m)) {
      ck_assert_int_eq(mio(q, m, MOP_READ, buf, 4096, 100, 0), -EINVAL);
      ck_assert_ptr_nonnull(strstr(raid_get_error(), path));
      ck_assert_int_eq(mio(q, m, MOP_WRITE, buf, 4096 + 100, 512, 0), -EINVAL);
    }
    raid_buf_free(buf);
  }
  raid_member_close(m);

  /* the same file, buffered on request */
  ck_assert_int_eq(raid_member_open(path, RAID_MEMBER_BUFFERED, &m), 0);
  ck_assert_int_eq(raid_member_is_direct(m), 0);
  exercise(q, m, 1);
  raid_member_close(m);
  raid_queue_free(q);
}
END_TEST

START_TEST(test_file_tmpfs)
{
  char path[256];
  struct raid_member *m;
  struct raid_queue *q;

  if (!have_shm) {
    printf("test-member: skipping the tmpfs test: /dev/shm is not a tmpfs\n");
    return;
  }
  q = new_queue(64);
  snprintf(path, sizeof path, "%s/shm.img", shm_dir);
  make_file(path, 2 * MIB);
  ck_assert_int_eq(raid_member_open(path, 0, &m), 0);
  ck_assert_int_eq(raid_member_is_direct(m), 0);
  ck_assert_uint_eq(raid_member_logical_block_size(m), 512);
  exercise(q, m, 0);                          /* write zeroes falls back to writes */
  exercise(q, m, 3);
  raid_member_close(m);
  raid_queue_free(q);
}
END_TEST

/* 64 writes then 64 reads in flight at once on a ring of 16 entries. */
START_TEST(test_file_many)
{
  enum { N = 64, LEN = 8192 };
  char path[256];
  struct raid_member *m;
  struct raid_queue *q = new_queue(16);
  struct tio *t = calloc(N, sizeof *t);
  uint8_t *w = raid_buf_alloc(N * LEN), *r = raid_buf_alloc(N * LEN + 1);
  unsigned i, done;
  int pass;

  ck_assert_ptr_nonnull(t);
  snprintf(path, sizeof path, "%s/many.img", vartmp_dir);
  make_file(path, 4 * MIB);
  ck_assert_int_eq(raid_member_open(path, 0, &m), 0);
  fill(w, N * LEN, 7);
  memset(r, 0, N * LEN + 1);
  for (pass = 0; pass < 2; pass++) {
    for (i = 0; i < N; i++) {
      /* scattered offsets; reads into a misaligned buffer on the 2nd pass */
      uint64_t off = (uint64_t)((i * 37) % N) * LEN + 512;

      if (pass == 0)
        tio_start(q, m, &t[i], MOP_WRITE, w + i * LEN, off, LEN, i % 4 == 0 ? MIO_FUA : 0);
      else
        tio_start(q, m, &t[i], MOP_READ, r + 1 + i * LEN, off, LEN, 0);
    }
    ck_assert_uint_eq(q->user_in_flight, N);
    for (;;) {
      for (done = 0, i = 0; i < N; i++)
        done += t[i].done;
      if (done == N)
        break;
      ck_assert_int_ge(raid_queue_run(q, 1), 1);
    }
    for (i = 0; i < N; i++)
      ck_assert_int_eq(t[i].res, 0);
  }
  ck_assert_mem_eq(r + 1, w, N * LEN);
  raid_member_close(m);
  raid_queue_free(q);
  raid_buf_free(w);
  raid_buf_free(r);
  free(t);
}
END_TEST

/* The file shrinks under the member: reads past the new end are -EIO. */
START_TEST(test_file_eof)
{
  char path[256];
  struct raid_member *m;
  struct raid_queue *q = new_queue(8);
  uint8_t *buf = raid_buf_alloc(8192);

  snprintf(path, sizeof path, "%s/eof.img", vartmp_dir);
  make_file(path, 1 * MIB);
  ck_assert_int_eq(raid_member_open(path, 0, &m), 0);
  ck_assert_int_eq(truncate(path, 512 * 1024), 0);
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 512 * 1024 - 4096, 4096, 0), 0);
  /* short read, then end of file */
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 512 * 1024 - 4096, 8192, 0), -EIO);
  ck_assert_int_eq(raid_get_errno(), EIO);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), path));
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 768 * 1024, 4096, 0), -EIO);
  raid_member_close(m);
  raid_queue_free(q);
  raid_buf_free(buf);
}
END_TEST

START_TEST(test_file_readonly)
{
  char path[256];
  struct raid_member *m;
  struct raid_queue *q = new_queue(8);
  uint8_t *w = raid_buf_alloc(4096), *r = raid_buf_alloc(4096);

  snprintf(path, sizeof path, "%s/ro.img", vartmp_dir);
  make_file(path, 1 * MIB);
  ck_assert_int_eq(raid_member_open(path, 0, &m), 0);
  fill(w, 4096, 11);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, w, 8192, 4096, 0), 0);
  raid_member_close(m);

  ck_assert_int_eq(raid_member_open(path, RAID_MEMBER_READONLY, &m), 0);
  memset(r, 0xaa, 4096);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, r, 8192, 4096, 0), -EPERM);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), path));
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "read-only"));
  ck_assert_int_eq(mio(q, m, MOP_DISCARD, NULL, 8192, 4096, 0), -EPERM);
  ck_assert_int_eq(mio(q, m, MOP_ZERO, NULL, 8192, 4096, 0), -EPERM);
  ck_assert_int_eq(mio(q, m, MOP_FLUSH, NULL, 0, 0, 0), 0);
  memset(r, 0, 4096);
  ck_assert_int_eq(mio(q, m, MOP_READ, r, 8192, 4096, 0), 0);
  ck_assert_mem_eq(r, w, 4096);
  raid_member_close(m);
  raid_queue_free(q);
  raid_buf_free(w);
  raid_buf_free(r);
}
END_TEST

/* ---- the claim of a member opened for writing ------------------------------ */

/* A regular file (or a simulated drive's backing file) opened for writing
 * is locked (flock): a second open for writing fails with EBUSY naming it,
 * through another name too, also a simulated drive over the same file;
 * read-only opens are not stopped; closing releases it. */
START_TEST(test_file_claim)
{
  char path[256], link[256], spec[300];
  struct raid_member *m, *m2;

  snprintf(path, sizeof path, "%s/claim.img", vartmp_dir);
  snprintf(link, sizeof link, "%s/claim.link", vartmp_dir);
  make_file(path, 1 * MIB);
  unlink(link);
  ck_assert_int_eq(symlink(path, link), 0);
  ck_assert_int_eq(raid_member_open(path, 0, &m), 0);
  ck_assert_int_eq(raid_member_open(path, 0, &m2), -EBUSY);
  ck_assert_msg(strstr(raid_get_error(), "claim.img is in use") != NULL, "%s",
                raid_get_error());
  ck_assert_int_eq(raid_member_open(link, 0, &m2), -EBUSY);
  snprintf(spec, sizeof spec, "sim:%s", path);
  ck_assert_int_eq(raid_member_open(spec, 0, &m2), -EBUSY);
  ck_assert_int_eq(raid_member_open(link, RAID_MEMBER_READONLY, &m2), 0);
  raid_member_close(m2);
  raid_member_close(m);

  /* A simulated drive holds it the same way. */
  ck_assert_msg(raid_member_open(spec, 0, &m) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_member_open(link, 0, &m2), -EBUSY);
  raid_member_close(m);
  ck_assert_int_eq(raid_member_open(link, 0, &m2), 0);
  raid_member_close(m2);
  unlink(link);
}
END_TEST

/* ---- open errors ---------------------------------------------------------- */

START_TEST(test_open_errors)
{
  char path[256];
  struct raid_member *m = (void *)1;

  snprintf(path, sizeof path, "%s/does-not-exist", vartmp_dir);
  ck_assert_int_eq(raid_member_open(path, 0, &m), -ENOENT);
  ck_assert_ptr_null(m);
  ck_assert_int_eq(raid_get_errno(), ENOENT);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), path));
  ck_assert_ptr_nonnull(strstr(raid_get_error(), strerror(ENOENT)));

  ck_assert_int_eq(raid_member_open(vartmp_dir, 0, &m), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), vartmp_dir));
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "not a regular file or block device"));
  ck_assert_int_eq(raid_member_open(vartmp_dir, RAID_MEMBER_READONLY, &m), -EINVAL);

  ck_assert_int_eq(raid_member_open("/dev/null", 0, &m), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "/dev/null"));

  snprintf(path, sizeof path, "%s/empty.img", vartmp_dir);
  make_file(path, 0);
  ck_assert_int_eq(raid_member_open(path, 0, &m), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), path));
  make_file(path, 511);
  ck_assert_int_eq(raid_member_open(path, 0, &m), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), path));

  make_file(path, 4096);
  ck_assert_int_eq(raid_member_open(path, 0x100, &m), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), path));
  ck_assert_ptr_null(m);
}
END_TEST

/* ---- block devices ---------------------------------------------------------- */

static const char *
skip_block(void)
{
  if (geteuid() != 0)
    return "not root";
  if (system("losetup --version >/dev/null 2>&1") != 0)
    return "losetup not found";
  return NULL;
}

/* Attach PATH to a free loop device with losetup OPTIONS, open it as a
 * member, and detach it at once: the kernel keeps the device until our fd
 * closes (autoclear), so nothing is left behind however the test ends.
 * Returns the member, or NULL with *WHY set when losetup failed. */
static struct raid_member *
loop_member(const char *path, const char *options, char *dev, size_t devlen,
            const char **why)
{
  static char msg[256];
  struct raid_member *m;
  char cmd[600];
  FILE *f;
  int r;

  snprintf(cmd, sizeof cmd, "losetup --find --show %s '%s' 2>&1", options, path);
  f = popen(cmd, "r");
  ck_assert_ptr_nonnull(f);
  if (fgets(dev, devlen, f) == NULL)
    dev[0] = '\0';
  dev[strcspn(dev, "\n")] = '\0';
  if (pclose(f) != 0 || strncmp(dev, "/dev/", 5) != 0) {
    snprintf(msg, sizeof msg, "losetup %s failed: %s", options, dev);
    *why = msg;
    return NULL;
  }
  r = raid_member_open(dev, 0, &m);
  snprintf(cmd, sizeof cmd, "losetup -d '%s'", dev);
  ck_assert_int_eq(system(cmd), 0);
  ck_assert_msg(r == 0, "cannot open %s: %s", dev, raid_get_error());
  return m;
}

START_TEST(test_block)
{
  char path[256], cmd[600], dev[64] = "";
  struct raid_member *m, *m2;
  struct raid_queue *q;
  const char *why = skip_block();
  uint8_t *w, *r;
  int fd;

  if (why) {
    printf("test-member: skipping the block device test: %s\n", why);
    return;
  }
  snprintf(path, sizeof path, "%s/loop.img", vartmp_dir);
  make_file(path, 8 * MIB);
  m = loop_member(path, "--direct-io=on", dev, sizeof dev, &why);
  if (m == NULL) {
    printf("test-member: skipping the block device test: %s\n", why);
    return;
  }
  printf("test-member: %s: logical block %u, direct %d, memory alignment %u\n",
         dev, raid_member_logical_block_size(m), raid_member_is_direct(m), m->mem_align);
  ck_assert_str_eq(raid_member_kind(m), "block");
  ck_assert_str_eq(raid_member_name(m), dev);
  ck_assert_uint_eq(raid_member_size(m), 8 * MIB);
  ck_assert_int_eq(raid_member_is_direct(m),
                   raid_member_logical_block_size(m) <= 512);

  /* claimed exclusively while open for writing; read-only opens are fine */
  ck_assert_int_eq(raid_member_open(dev, 0, &m2), -EBUSY);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), dev));
  ck_assert_int_eq(raid_member_open(dev, RAID_MEMBER_READONLY, &m2), 0);
  raid_member_close(m2);

  q = new_queue(32);
  exercise(q, m, 0);
  exercise(q, m, 1);

  /* what the device holds is in the backing file */
  w = raid_buf_alloc(65536);
  r = raid_buf_alloc(65536);
  fill(w, 65536, 21);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, w, 2 * MIB + 512, 65536, MIO_FUA), 0);
  ck_assert_int_eq(mio(q, m, MOP_FLUSH, NULL, 0, 0, 0), 0);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(pread(fd, r, 65536, 2 * MIB + 512), 65536);
  close(fd);
  ck_assert_mem_eq(r, w, 65536);

  /* an error from the kernel: the device made read-only under us */
  snprintf(cmd, sizeof cmd, "blockdev --setro '%s'", dev);
  if (system(cmd) == 0) {
    ck_assert_int_eq(mio(q, m, MOP_WRITE, w, 0, 4096, 0), -EPERM);
    ck_assert_ptr_nonnull(strstr(raid_get_error(), dev));
    ck_assert_ptr_nonnull(strstr(raid_get_error(), "failed"));
    snprintf(cmd, sizeof cmd, "blockdev --setrw '%s'", dev);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(mio(q, m, MOP_WRITE, w, 0, 4096, 0), 0);
  }
  raid_member_close(m);

  /* 4096-byte logical blocks: buffered, 512-byte requests still work */
  m = loop_member(path, "--direct-io=on --sector-size 4096", dev, sizeof dev, &why);
  if (m == NULL)
    printf("test-member: skipping the 4Kn block device case: %s\n", why);
  else {
    ck_assert_uint_eq(raid_member_logical_block_size(m), 4096);
    ck_assert_int_eq(raid_member_is_direct(m), 0);
    exercise(q, m, 0);
    exercise(q, m, 1);
    raid_member_close(m);
  }

  raid_queue_free(q);
  raid_buf_free(w);
  raid_buf_free(r);
}
END_TEST

/* ---- RAM members ------------------------------------------------------------ */

START_TEST(test_ram)
{
  struct raid_member *m = (void *)1;
  struct raid_queue *q = new_queue(8);
  uint8_t buf[4096];

  ck_assert_int_eq(raid_member_new_ram("ram0", 0, &m), -EINVAL);
  ck_assert_ptr_null(m);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "ram0"));
  ck_assert_int_eq(raid_member_new_ram("ram0", 1000, &m), -EINVAL);

  ck_assert_int_eq(raid_member_new_ram("ram0", 4 * MIB, &m), 0);
  ck_assert_str_eq(raid_member_kind(m), "ram");
  ck_assert_str_eq(raid_member_name(m), "ram0");
  ck_assert_uint_eq(raid_member_size(m), 4 * MIB);
  ck_assert_uint_eq(raid_member_logical_block_size(m), 512);
  ck_assert_int_eq(raid_member_is_direct(m), 0);

  memset(buf, 0xee, sizeof buf);
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 4 * MIB - 4096, 4096, 0), 0);
  ck_assert(all_zero(buf, sizeof buf));        /* starts zero-filled */
  exercise(q, m, 0);
  exercise(q, m, 5);

  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 4 * MIB, 512, 0), -EIO);
  ck_assert_int_eq(raid_get_errno(), EIO);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "ram0"));
  ck_assert_int_eq(mio(q, m, MOP_WRITE, buf, UINT64_MAX - 511, 512, 0), -EIO);
  ck_assert_int_eq(mio(q, m, MOP_ZERO, NULL, 4 * MIB - 512, 1024, 0), -EIO);
  raid_member_close(m);
  raid_queue_free(q);
}
END_TEST

/* ---- simulated drives ------------------------------------------------------ */

static struct raid_member *
open_sim(const char *opts, char *spec, size_t len)
{
  struct raid_member *m;
  char path[256];

  snprintf(path, sizeof path, "%s/sim", have_shm ? shm_dir : vartmp_dir);
  make_file(path, 4 * MIB);
  snprintf(spec, len, "sim:%s%s%s", path, *opts ? "?" : "", opts);
  ck_assert_msg(raid_member_open(spec, 0, &m) == 0, "%s", raid_get_error());
  return m;
}

START_TEST(test_sim_ram)
{
  struct raid_queue *q = new_queue(8);
  struct raid_member *m, *f;
  char spec[300], file[256];
  uint8_t a[4096], b[4096];

  m = open_sim("", spec, sizeof spec);
  ck_assert_str_eq(raid_member_kind(m), "sim");
  ck_assert_str_eq(raid_member_name(m), spec);
  ck_assert_uint_eq(raid_member_size(m), 4 * MIB);
  exercise(q, m, 0);
  exercise(q, m, 5);

  /* The data is kept in the backing file, where a plain member sees it. */
  fill(a, sizeof a, 11);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, a, 8192, 4096, 0), 0);
  raid_member_close(m);
  ck_assert_int_eq(raid_member_spec_file(spec, file, sizeof file), 0);
  ck_assert_str_eq(file, spec + 4);
  ck_assert_int_eq(raid_member_open(file, RAID_MEMBER_BUFFERED, &f), 0);
  ck_assert_int_eq(mio(q, f, MOP_READ, b, 8192, 4096, 0), 0);
  ck_assert_mem_eq(a, b, 4096);
  raid_member_close(f);
  raid_queue_free(q);
}
END_TEST

START_TEST(test_sim_timing)
{
  struct raid_queue *q = new_queue(16);
  struct raid_member *m;
  struct tio t[4];
  uint8_t *buf = raid_buf_alloc(MIB);
  double t0, first = 0, ms;
  char spec[300];
  unsigned i, done;

  /* Two channels of 20 ms: four I/Os at once finish in two waves. */
  m = open_sim("lat=20ms,depth=2", spec, sizeof spec);
  t0 = now_ms();
  for (i = 0; i < 4; i++)
    tio_start(q, m, &t[i], MOP_READ, buf + i * 4096, i * 4096, 4096, 0);
  do {
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
    for (done = 0, i = 0; i < 4; i++)
      done += t[i].done;
    if (done && first == 0)
      first = now_ms() - t0;
  } while (done < 4);
  ms = now_ms() - t0;
  for (i = 0; i < 4; i++)
    ck_assert_int_eq(t[i].res, 0);
  ck_assert_double_ge(first, 19.5);
  ck_assert_double_ge(ms, 39.5);
  raid_member_close(m);

  /* 10 MiB/s with no latency: 1 MiB takes 100 ms, a flush no time. */
  m = open_sim("bw=10M,depth=4", spec, sizeof spec);
  t0 = now_ms();
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 0, MIB, 0), 0);
  ck_assert_double_ge(now_ms() - t0, 99.5);
  t0 = now_ms();
  ck_assert_int_eq(mio(q, m, MOP_FLUSH, NULL, 0, 0, 0), 0);
  raid_member_close(m);
  raid_buf_free(buf);
  raid_queue_free(q);
}
END_TEST

START_TEST(test_sim_discard)
{
  struct raid_queue *q = new_queue(8);
  struct raid_member *m;
  uint8_t a[4096], b[4096];
  char spec[300];

  m = open_sim("discard,lat=10us,depth=8", spec, sizeof spec);
  fill(a, sizeof a, 12);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, a, 0, 4096, 0), 0);
  memset(b, 0xee, sizeof b);
  ck_assert_int_eq(mio(q, m, MOP_READ, b, 0, 4096, 0), 0);
  ck_assert_uint_eq(b[0], 0xee);               /* data dropped, buffer untouched */
  ck_assert_int_eq(mio(q, m, MOP_WRITE, a, 4096, 4096, MIO_META), 0);
  ck_assert_int_eq(mio(q, m, MOP_READ, b, 4096, 4096, MIO_META), 0);
  ck_assert_mem_eq(a, b, 4096);                /* metadata is kept */
  raid_member_close(m);
  raid_queue_free(q);
}
END_TEST

START_TEST(test_sim_errors)
{
  static const struct { const char *opts; const char *msg; } bad[] = {
    { "speed=1", "speed" }, { "lat=fast", "lat" }, { "lat=5parsecs", "lat" },
    { "depth=0", "depth" }, { "depth=100000", "depth" }, { "bw=1Q", "bw" },
    { "discard=yes", "discard" },
  };
  struct raid_queue *q = new_queue(8);
  struct raid_member *m = (void *)1;
  char spec[300], path[256];
  uint8_t buf[512] = { 0 };
  size_t i;

  snprintf(path, sizeof path, "%s/sim", vartmp_dir);
  make_file(path, MIB);
  for (i = 0; i < ARRAY_SIZE(bad); i++) {
    snprintf(spec, sizeof spec, "sim:%s?%s", path, bad[i].opts);
    ck_assert_int_eq(raid_member_open(spec, 0, &m), -EINVAL);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(raid_get_error(), bad[i].msg) != NULL, "%s: %s",
                  bad[i].opts, raid_get_error());
  }
  ck_assert_int_eq(raid_member_open("sim:", 0, &m), -EINVAL);
  ck_assert_int_eq(raid_member_open("sim:?lat=1us", 0, &m), -EINVAL);
  snprintf(spec, sizeof spec, "sim:%s/missing?lat=1us", vartmp_dir);
  ck_assert_int_eq(raid_member_open(spec, 0, &m), -ENOENT);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "missing"));
  ck_assert_int_eq(raid_member_spec_file("sim:/x?lat=1", path, 2), -ENAMETOOLONG);

  snprintf(spec, sizeof spec, "sim:%s", path);
  ck_assert_int_eq(raid_member_open(spec, RAID_MEMBER_READONLY, &m), 0);
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 0, 512, 0), 0);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, buf, 0, 512, 0), -EROFS);
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, MIB, 512, 0), -EIO);
  raid_member_close(m);
  raid_queue_free(q);
}
END_TEST

/* ---- fault injector ------------------------------------------------------------ */

static struct raid_member *
new_fault_ram(const char *name, uint64_t size)
{
  struct raid_member *inner, *m;

  ck_assert_int_eq(raid_member_new_ram(name, size, &inner), 0);
  ck_assert_int_eq(raid_member_new_fault(inner, &m), 0);
  return m;
}

START_TEST(test_fault_passthrough)
{
  struct raid_member *m = new_fault_ram("disk7", 2 * MIB), *ram;
  struct raid_queue *q = new_queue(8);
  struct raid_fault bad = { .ops = RAID_FAULT_READ, .error = EIO };

  ck_assert_str_eq(raid_member_kind(m), "fault");
  ck_assert_str_eq(raid_member_name(m), "disk7");
  ck_assert_uint_eq(raid_member_size(m), 2 * MIB);
  ck_assert_uint_eq(raid_member_logical_block_size(m), 512);
  ck_assert_uint_eq(raid_fault_count(m), 0);
  exercise(q, m, 0);
  ck_assert_uint_eq(raid_fault_count(m), 0);

  /* rules only on fault members, and only sensible ones */
  ck_assert_int_eq(raid_member_new_ram("plain", MIB, &ram), 0);
  ck_assert_int_eq(raid_fault_add(ram, &bad), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "plain"));
  ck_assert_int_eq(raid_fault_clear(ram), -EINVAL);
  ck_assert_uint_eq(raid_fault_count(ram), 0);
  raid_member_close(ram);
  bad.ops = 0;
  ck_assert_int_eq(raid_fault_add(m, &bad), -EINVAL);
  bad.ops = 0x10;
  ck_assert_int_eq(raid_fault_add(m, &bad), -EINVAL);
  bad.ops = RAID_FAULT_READ;
  bad.error = 0;
  ck_assert_int_eq(raid_fault_add(m, &bad), -EINVAL);      /* does nothing */
  bad.error = EIO;
  bad.offset = 2 * MIB;
  ck_assert_int_eq(raid_fault_add(m, &bad), -EINVAL);      /* beyond the end */
  bad.offset = MIB;
  bad.length = MIB + 512;
  ck_assert_int_eq(raid_fault_add(m, &bad), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "disk7"));

  raid_member_close(m);                        /* closes the RAM member too */
  raid_queue_free(q);
}
END_TEST

/* Reads of [4096, 12288) fail after two of them have passed. */
START_TEST(test_fault_range_after)
{
  struct raid_member *m = new_fault_ram("disk1", MIB);
  struct raid_queue *q = new_queue(8);
  struct raid_fault rule = {
    .ops = RAID_FAULT_READ, .offset = 4096, .length = 8192, .after = 2, .error = EIO,
  };
  uint8_t buf[8192];

  ck_assert_int_eq(raid_fault_add(m, &rule), 0);
  memset(buf, 0, sizeof buf);
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 0, 4096, 0), 0);        /* outside */
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 4096, 512, 0), 0);      /* 1st match */
  ck_assert_int_eq(mio(q, m, MOP_WRITE, buf, 4096, 4096, 0), 0);    /* not a read */
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 12288 - 512, 512, 0), 0); /* 2nd */
  ck_assert_uint_eq(raid_fault_count(m), 0);
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 8192, 512, 0), -EIO);   /* 3rd: fails */
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "disk1"));
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 0, 8192, 0), -EIO);     /* overlaps */
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 12288, 4096, 0), 0);    /* just after */
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 0, 4096, 0), 0);        /* just before */
  ck_assert_int_eq(mio(q, m, MOP_FLUSH, NULL, 0, 0, 0), 0);
  ck_assert_uint_eq(raid_fault_count(m), 2);

  /* a second rule with its own error */
  rule.offset = 65536;
  rule.length = 512;
  rule.after = 0;
  rule.error = ENOSPC;
  ck_assert_int_eq(raid_fault_add(m, &rule), 0);
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 65536, 512, 0), -ENOSPC);
  ck_assert_uint_eq(raid_fault_count(m), 3);

  ck_assert_int_eq(raid_fault_clear(m), 0);
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 8192, 512, 0), 0);
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 65536, 512, 0), 0);
  ck_assert_uint_eq(raid_fault_count(m), 3);
  raid_member_close(m);
  raid_queue_free(q);
}
END_TEST

/* Every write fails from the call on; the data stays as it was. */
START_TEST(test_fault_from_call)
{
  struct raid_member *m = new_fault_ram("disk2", MIB);
  struct raid_queue *q = new_queue(8);
  struct raid_fault rule = { .ops = RAID_FAULT_WRITE, .error = EIO };
  uint8_t w[4096], r[4096];

  fill(w, sizeof w, 5);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, w, 0, 4096, 0), 0);
  ck_assert_int_eq(raid_fault_add(m, &rule), 0);
  memset(r, 0x55, sizeof r);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, r, 0, 4096, 0), -EIO);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, r, MIB - 512, 512, MIO_FUA), -EIO);
  ck_assert_int_eq(mio(q, m, MOP_DISCARD, NULL, 0, 4096, 0), -EIO);
  ck_assert_int_eq(mio(q, m, MOP_ZERO, NULL, 0, 4096, 0), -EIO);
  ck_assert_int_eq(mio(q, m, MOP_FLUSH, NULL, 0, 0, 0), 0);
  ck_assert_int_eq(mio(q, m, MOP_READ, r, 0, 4096, 0), 0);
  ck_assert_mem_eq(r, w, 4096);
  ck_assert_uint_eq(raid_fault_count(m), 4);

  /* flushes too */
  rule.ops = RAID_FAULT_FLUSH;
  ck_assert_int_eq(raid_fault_add(m, &rule), 0);
  ck_assert_int_eq(mio(q, m, MOP_FLUSH, NULL, 0, 0, 0), -EIO);
  ck_assert_uint_eq(raid_fault_count(m), 5);

  ck_assert_int_eq(raid_fault_clear(m), 0);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, r, 0, 4096, 0), 0);
  ck_assert_int_eq(mio(q, m, MOP_FLUSH, NULL, 0, 0, 0), 0);
  ck_assert_int_eq(mio(q, m, MOP_READ, w, 0, 4096, 0), 0);
  ck_assert_mem_eq(r, w, 4096);
  raid_member_close(m);
  raid_queue_free(q);
}
END_TEST

/* A 20 ms delay on one range: an undelayed read submitted after it
 * completes first; with an error too, it fails after the delay. */
START_TEST(test_fault_delay)
{
  struct raid_member *m = new_fault_ram("disk3", MIB);
  struct raid_queue *q = new_queue(8);
  struct raid_fault rule = {
    .ops = RAID_FAULT_READ | RAID_FAULT_WRITE, .offset = 0, .length = 4096,
    .delay_us = 20000,
  };
  uint8_t a[4096], b[4096];
  struct tio ta, tb;
  double t0, ta_ms = 0;

  fill(a, sizeof a, 9);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, a, 65536, 4096, 0), 0);
  ck_assert_int_eq(raid_fault_add(m, &rule), 0);

  t0 = now_ms();
  tio_start(q, m, &ta, MOP_WRITE, a, 0, 4096, 0);        /* delayed */
  tio_start(q, m, &tb, MOP_READ, b, 65536, 4096, 0);     /* not */
  while (!ta.done || !tb.done) {
    ck_assert_int_ge(raid_queue_run(q, 1), 1);
    if (ta.done && ta_ms == 0)
      ta_ms = now_ms() - t0;
  }
  ck_assert_int_eq(ta.res, 0);
  ck_assert_int_eq(tb.res, 0);
  ck_assert_uint_lt(tb.seq, ta.seq);                     /* out of order */
  ck_assert_double_ge(ta_ms, 19.5);
  ck_assert_mem_eq(b, a, 4096);
  memset(b, 0, sizeof b);
  ck_assert_int_eq(mio(q, m, MOP_READ, b, 0, 4096, 0), 0);  /* delayed write landed */
  ck_assert_mem_eq(b, a, 4096);
  ck_assert_uint_eq(raid_fault_count(m), 0);

  /* delay and error together */
  ck_assert_int_eq(raid_fault_clear(m), 0);
  rule.error = EIO;
  ck_assert_int_eq(raid_fault_add(m, &rule), 0);
  t0 = now_ms();
  ck_assert_int_eq(mio(q, m, MOP_READ, b, 512, 512, 0), -EIO);
  ck_assert_double_ge(now_ms() - t0, 19.5);
  ck_assert_uint_eq(raid_fault_count(m), 1);
  raid_member_close(m);
  raid_queue_free(q);
}
END_TEST

/* Rules added and cleared from another thread while I/O runs here. */
struct toggler {
  struct raid_member *m;
  _Atomic bool stop;
  unsigned rounds;
};

static void *
toggle_rules(void *arg)
{
  struct toggler *tg = arg;
  struct raid_fault rule = { .ops = RAID_FAULT_READ, .error = EIO };

  while (!atomic_load(&tg->stop)) {
    if (raid_fault_add(tg->m, &rule) != 0)
      abort();
    sched_yield();
    if (raid_fault_clear(tg->m) != 0)
      abort();
    sched_yield();
    tg->rounds++;
  }
  return NULL;
}

START_TEST(test_fault_threads)
{
  enum { N = 16 };
  struct toggler tg = { .m = new_fault_ram("disk4", MIB) };
  struct raid_queue *q = new_queue(32);
  struct tio t[N];
  uint8_t buf[N][512];
  pthread_t th;
  unsigned i, round, rounds = scaled(200), failed = 0;

  ck_assert_int_eq(pthread_create(&th, NULL, toggle_rules, &tg), 0);
  for (round = 0; round < rounds; round++) {
    for (i = 0; i < N; i++)
      tio_start(q, tg.m, &t[i], MOP_READ, buf[i], i * 512, 512, 0);
    for (i = 0; i < N; i++) {
      tio_wait(q, &t[i]);
      ck_assert(t[i].res == 0 || t[i].res == -EIO);
      failed += t[i].res != 0;
    }
  }
  atomic_store(&tg.stop, true);
  pthread_join(th, NULL);
  ck_assert_uint_eq(raid_fault_count(tg.m), failed);
  printf("test-member: %u rule changes during %u reads, %u failed\n",
         tg.rounds, rounds * N, failed);
  ck_assert_int_eq(raid_fault_clear(tg.m), 0);
  ck_assert_int_eq(mio(q, tg.m, MOP_READ, buf[0], 0, 512, 0), 0);
  raid_member_close(tg.m);
  raid_queue_free(q);
}
END_TEST

/* A fault injector over a file member: delays go through the same ring as
 * the file's I/O. */
START_TEST(test_fault_file)
{
  char path[256];
  struct raid_member *inner, *m;
  struct raid_queue *q = new_queue(16);
  struct raid_fault rule = {
    .ops = RAID_FAULT_READ, .offset = 0, .length = 512, .delay_us = 20000,
  };
  uint8_t *buf = raid_buf_alloc(8192);
  struct tio ta, tb;

  snprintf(path, sizeof path, "%s/fault.img", vartmp_dir);
  make_file(path, 2 * MIB);
  ck_assert_int_eq(raid_member_open(path, 0, &inner), 0);
  ck_assert_int_eq(raid_member_new_fault(inner, &m), 0);
  ck_assert_str_eq(raid_member_name(m), path);
  ck_assert_int_eq(raid_member_is_direct(m), raid_member_is_direct(inner));
  exercise(q, m, 1);
  ck_assert_int_eq(raid_fault_add(m, &rule), 0);
  tio_start(q, m, &ta, MOP_READ, buf, 0, 4096, 0);
  tio_start(q, m, &tb, MOP_READ, buf + 4096, 4096, 4096, 0);
  tio_wait(q, &ta);
  tio_wait(q, &tb);
  ck_assert_int_eq(ta.res, 0);
  ck_assert_int_eq(tb.res, 0);
  ck_assert_uint_lt(tb.seq, ta.seq);
  raid_member_close(m);
  raid_queue_free(q);
  raid_buf_free(buf);
}
END_TEST

/* ---- main ------------------------------------------------------------------- */

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

/* Detach any loop device still backed by our image (the test detaches it
 * itself; this is for a test killed half-way). */
static void
detach_loops(void)
{
  char path[256], cmd[600], dev[64];
  FILE *f;

  snprintf(path, sizeof path, "%s/loop.img", vartmp_dir);
  if (access(path, F_OK) != 0 || geteuid() != 0)
    return;
  snprintf(cmd, sizeof cmd, "losetup -n -O NAME -j '%s' 2>/dev/null", path);
  f = popen(cmd, "r");
  if (f == NULL)
    return;
  while (fgets(dev, sizeof dev, f)) {
    dev[strcspn(dev, "\n")] = '\0';
    if (strncmp(dev, "/dev/loop", 9) == 0) {
      snprintf(cmd, sizeof cmd, "losetup -d '%s'", dev);
      if (system(cmd) != 0)
        fprintf(stderr, "test-member: could not detach %s\n", dev);
    }
  }
  pclose(f);
}

static Suite *
member_suite(void)
{
  Suite *s = suite_create("member");
  TCase *tc;

  tc = tcase_create("file");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_file_direct);
  tcase_add_test(tc, test_file_tmpfs);
  tcase_add_test(tc, test_file_many);
  tcase_add_test(tc, test_file_eof);
  tcase_add_test(tc, test_file_readonly);
  tcase_add_test(tc, test_open_errors);
  tcase_add_test(tc, test_file_claim);
  tcase_add_test(tc, test_block);
  suite_add_tcase(s, tc);

  tc = tcase_create("ram");
  tcase_add_test(tc, test_ram);
  suite_add_tcase(s, tc);

  tc = tcase_create("sim");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_sim_ram);
  tcase_add_test(tc, test_sim_timing);
  tcase_add_test(tc, test_sim_discard);
  tcase_add_test(tc, test_sim_errors);
  suite_add_tcase(s, tc);

  tc = tcase_create("fault");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_fault_passthrough);
  tcase_add_test(tc, test_fault_range_after);
  tcase_add_test(tc, test_fault_from_call);
  tcase_add_test(tc, test_fault_delay);
  tcase_add_test(tc, test_fault_threads);
  tcase_add_test(tc, test_fault_file);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  SRunner *sr;
  struct statfs sfs;
  int failed;

  if (mkdtemp(vartmp_dir) == NULL) {
    perror(vartmp_dir);
    return 1;
  }
  have_shm = statfs("/dev/shm", &sfs) == 0 && sfs.f_type == TMPFS_MAGIC &&
    mkdtemp(shm_dir) != NULL;

  sr = srunner_create(member_suite());
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);

  detach_loops();
  nftw(vartmp_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  if (have_shm)
    nftw(shm_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return failed ? 1 : 0;
}
