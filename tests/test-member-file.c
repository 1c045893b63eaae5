/* Description: the file and block device member back-ends driven
 * directly through a raid_queue with the internal member API: round trips
 * of read, write, FUA write, flush, discard and write zeroes; O_DIRECT on
 * /var/tmp and buffered on tmpfs; unaligned buffers (the bounce path);
 * many I/Os in flight on a small ring; a file cut short under the member
 * (fails for good, never extended again; cut under writes in flight: they
 * fail); a read-only member;
 * the claim of a member opened for writing; and the open errors (missing
 * path, directory, empty file, read-only member).  The block device case
 * uses a loop device and is skipped when not root or when losetup fails.
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
#include "member-io.h"

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
  printf("test-member-file: %s: O_DIRECT offset alignment %u (0: not reported), "
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
    printf("test-member-file: skipping the tmpfs test: /dev/shm is not a tmpfs\n");
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
  fill_pattern(w, N * LEN, 7);
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

/* The file is cut short under the member (issue 33): a read is -EIO once
 * it completes, one inside the new end too (a write in flight at a cut may
 * extend the file and leave a hole that reads back whole), naming the file
 * and both sizes; a short read is -EIO; from then on every I/O is -EIO and
 * the member says it is lost, so nothing reads a hole as data; a write is
 * refused before it could extend the file again (its size is unchanged),
 * even where it would land inside the file. */
START_TEST(test_file_eof)
{
  char path[256];
  struct raid_member *m;
  struct raid_queue *q = new_queue(8);
  uint8_t *buf = raid_buf_alloc(8192);
  struct stat st;
  int i;

  snprintf(path, sizeof path, "%s/eof.img", vartmp_dir);
  make_file(path, 1 * MIB);
  ck_assert_int_eq(raid_member_open(path, 0, &m), 0);
  ck_assert_int_eq(m->ops->lost(m), 0);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, buf, 768 * 1024, 4096, 0), 0);
  ck_assert_int_eq(truncate(path, 512 * 1024), 0);
  /* A read that stays inside: the file is looked at when it completes. */
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 512 * 1024 - 4096, 4096, 0), -EIO);
  ck_assert_int_eq(raid_get_errno(), EIO);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), path));
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "cut short to 524288 bytes, less than "
                               "the 1048576"));
  ck_assert_int_eq(m->ops->lost(m), 1);
  /* lost for good: inside the file too, and flushes */
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 0, 4096, 0), -EIO);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, buf, 0, 4096, 0), -EIO);
  ck_assert_int_eq(mio(q, m, MOP_FLUSH, NULL, 0, 0, 0), -EIO);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, buf, 768 * 1024, 4096, 0), -EIO);
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_eq(st.st_size, 512 * 1024);
  raid_member_close(m);

  /* A write first: refused before it extends the file. */
  make_file(path, 1 * MIB);
  ck_assert_int_eq(raid_member_open(path, 0, &m), 0);
  ck_assert_int_eq(truncate(path, 512 * 1024), 0);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, buf, 768 * 1024, 4096, 0), -EIO);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "cut short"));
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_eq(st.st_size, 512 * 1024);
  ck_assert_int_eq(mio(q, m, MOP_ZERO, NULL, 768 * 1024, 4096, 0), -EIO);
  raid_member_close(m);
  /* Reads past the end: short (it crosses the end), and entirely past it
   * (end of file at once). */
  for (i = 0; i < 2; i++) {
    make_file(path, 1 * MIB);
    ck_assert_int_eq(raid_member_open(path, 0, &m), 0);
    ck_assert_int_eq(truncate(path, 512 * 1024), 0);
    ck_assert_int_eq(mio(q, m, MOP_READ, buf, i ? 768 * 1024 : 512 * 1024 - 4096, 8192, 0),
                     -EIO);
    ck_assert_ptr_nonnull(strstr(raid_get_error(), "cut short"));
    ck_assert_int_eq(m->ops->lost(m), 1);
    raid_member_close(m);
  }

  /* Grown behind its back is fine. */
  make_file(path, 1 * MIB);
  ck_assert_int_eq(raid_member_open(path, 0, &m), 0);
  ck_assert_int_eq(truncate(path, 2 * MIB), 0);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, buf, 1 * MIB - 4096, 4096, 0), 0);
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 1 * MIB - 8192, 8192, 0), 0);
  ck_assert_int_eq(m->ops->lost(m), 0);
  raid_member_close(m);
  raid_queue_free(q);
  raid_buf_free(buf);
}
END_TEST

/* A cut between the look at the size a write's submission made and the
 * write reaching the kernel (two writes prepared in one epoch of the
 * queue, the file cut in between, as if while they were in flight): the
 * writes may extend the file, but the look after they complete fails
 * them, so neither is acknowledged and the member is lost. */
START_TEST(test_file_cut_in_flight)
{
  char path[256];
  struct raid_member *m;
  struct raid_queue *q = new_queue(8);
  uint8_t *buf = raid_buf_alloc(8192);
  struct tio a, b;

  snprintf(path, sizeof path, "%s/inflight.img", vartmp_dir);
  make_file(path, 1 * MIB);
  ck_assert_int_eq(raid_member_open(path, 0, &m), 0);
  tio_start(q, m, &a, MOP_WRITE, buf, 768 * 1024, 4096, 0);
  ck_assert_int_eq(truncate(path, 512 * 1024), 0);
  tio_start(q, m, &b, MOP_WRITE, buf + 4096, 640 * 1024, 4096, 0);
  tio_wait(q, &a);
  tio_wait(q, &b);
  ck_assert_int_eq(a.res, -EIO);
  ck_assert_int_eq(b.res, -EIO);
  ck_assert_int_eq(m->ops->lost(m), 1);
  ck_assert_int_eq(mio(q, m, MOP_READ, buf, 600 * 1024, 4096, 0), -EIO);
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
  fill_pattern(w, 4096, 11);
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
    printf("test-member-file: skipping the block device test: %s\n", why);
    return;
  }
  snprintf(path, sizeof path, "%s/loop.img", vartmp_dir);
  make_file(path, 8 * MIB);
  m = loop_member(path, "--direct-io=on", dev, sizeof dev, &why);
  if (m == NULL) {
    printf("test-member-file: skipping the block device test: %s\n", why);
    return;
  }
  printf("test-member-file: %s: logical block %u, direct %d, memory alignment %u\n",
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
  fill_pattern(w, 65536, 21);
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
    printf("test-member-file: skipping the 4Kn block device case: %s\n", why);
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

int
main(void)
{
  Suite *s = suite_create("member-file");
  TCase *tc;

  tc = tcase_create("file");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_file_direct);
  tcase_add_test(tc, test_file_tmpfs);
  tcase_add_test(tc, test_file_many);
  tcase_add_test(tc, test_file_eof);
  tcase_add_test(tc, test_file_cut_in_flight);
  tcase_add_test(tc, test_file_readonly);
  tcase_add_test(tc, test_open_errors);
  tcase_add_test(tc, test_file_claim);
  tcase_add_test(tc, test_block);
  suite_add_tcase(s, tc);

  return member_main("test-member-file", s);
}
