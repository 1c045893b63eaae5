/* Helpers of the member back-ends' suites (tests/member-io.h). */

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
#include "member-io.h"

/* Made in member_main(), removed there whatever the tests did: every file
 * the tests create lives under them. */
char vartmp_dir[] = "/var/tmp/libraid-test-member.XXXXXX";
char shm_dir[] = "/dev/shm/libraid-test-member.XXXXXX";
bool have_shm;
static const char *prog = "test-member";

/* ---- helpers ------------------------------------------------------------ */

static unsigned completions;

/* RAID_TEST_SCALE percent (default 100; valgrind runs use 10) of N. */
unsigned
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

void
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

void
tio_wait(struct raid_queue *q, struct tio *t)
{
  while (!t->done)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
}

int
mio(struct raid_queue *q, struct raid_member *m, enum mop op, void *buf,
    uint64_t off, size_t len, unsigned flags)
{
  struct tio t;

  tio_start(q, m, &t, op, buf, off, len, flags);
  tio_wait(q, &t);
  return t.res;
}

void
fill_pattern(uint8_t *p, size_t len, unsigned seed)
{
  uint32_t x = seed * 2654435761u + 1;
  size_t i;

  for (i = 0; i < len; i++) {
    x = x * 1103515245u + 12345u;
    p[i] = x >> 16;
  }
}

bool
all_zero(const uint8_t *p, size_t len)
{
  size_t i;

  for (i = 0; i < len; i++)
    if (p[i])
      return false;
  return true;
}

struct raid_queue *
new_queue(unsigned entries)
{
  struct raid_queue *q;

  ck_assert_int_eq(raid_queue_new(entries, &q), 0);
  return q;
}

void
make_file(const char *path, uint64_t size)
{
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, size), 0);
  close(fd);
}

double
now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Every op on M, checked by reading back: BUF is used at ALIGN_OFF bytes
 * past a 4096-aligned address (0: aligned; 1: forces the bounce path
 * under O_DIRECT). */
void
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
  fill_pattern(w, len, 1);
  memcpy(expect, w, len);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, w, off, len, 0), 0);
  memset(r, 0xee, len);
  ck_assert_int_eq(mio(q, m, MOP_READ, r, off, len, 0), 0);
  ck_assert_mem_eq(r, expect, len);

  /* FUA write of the last 8 KiB, flush */
  fill_pattern(w, 8192, 2);
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
  fill_pattern(w, len, 3);
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
unsigned
dio_offset_align(const char *path)
{
  struct statx stx;

  if (statx(AT_FDCWD, path, 0, 0x2000 /* STATX_DIOALIGN */, &stx) == 0 &&
      (stx.stx_mask & 0x2000))
    return ((uint32_t *)&stx)[0x9c / 4];
  return 0;
}

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
        fprintf(stderr, "%s: could not detach %s\n", prog, dev);
    }
  }
  pclose(f);
}

int
member_main(const char *program, Suite *s)
{
  SRunner *sr;
  struct statfs sfs;
  int failed;

  prog = program;
  if (mkdtemp(vartmp_dir) == NULL) {
    perror(vartmp_dir);
    return 1;
  }
  have_shm = statfs("/dev/shm", &sfs) == 0 && sfs.f_type == TMPFS_MAGIC &&
    mkdtemp(shm_dir) != NULL;

  sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);

  detach_loops();
  nftw(vartmp_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  if (have_shm)
    nftw(shm_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return failed ? 1 : 0;
}
