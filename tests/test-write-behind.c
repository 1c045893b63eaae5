/* Description: md's write-behind on RAID 1.  With a bitmap whose
 * write_behind is not 0, a write is acknowledged once the members that
 * are not write-mostly have it: the write-mostly member (slowed down here
 * by a fault rule's delay) gets it afterwards from a private copy, its
 * chunk's bit held meanwhile, and raid_queue_in_flight() counts it until
 * it lands, the array not marked clean meanwhile (safe mode).  Without
 * write-behind the same write waits for the slow member.  At most
 * write_behind writes are behind at once; the others wait for every
 * member.  FUA writes are never behind, and a flush waits for the writes
 * behind before it.  A read that only the write-mostly member can serve
 * waits for the behind write to the bytes it reads, and gets the new
 * data.  A crash with a write behind resyncs that chunk from the member
 * that is not write-mostly, so the write-mostly member (role 0, the first
 * copy) ends with the new data instead of spreading its old data.  The
 * bitmap superblock carries write_behind (mdadm -X reads it there).
 * Write-behind on RAID 5, without a bitmap, or over md's limit is refused
 * with nothing written. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "internal.h"

#define MEMBER_SIZE (8u << 20)
#define WOFF (3u << 20)                 /* where the tests write */
#define WLEN (64u << 10)
#define DELAY_US 2000000u               /* the write-mostly member's writes */

/* A RAID 1 over files SET0 (write-mostly, behind a fault injector) and
 * SET1, bitmap chunk 1 MiB, write-behind WB; *SLOW is role 0's member. */
static struct raid_array *
create_wb(const char *set, uint32_t wb, struct raid_member **slow)
{
  struct raid_config cfg = { .name = set, .level = RAID_LEVEL_1,
                             .layout = RAID_LAYOUT_DEFAULT, .raid_disks = 2,
                             .bitmap = RAID_BITMAP_INTERNAL, .bitmap_chunk = 1 << 20,
                             .write_behind = wb };
  struct raid_member *m[2], *f;
  struct raid_array *a;

  tfile_create(set, 2, MEMBER_SIZE);
  tfile_open(set, NULL, 2, m);
  ck_assert_int_eq(raid_member_new_fault(m[0], &f), 0);
  m[0] = f;
  raid_member_set_write_mostly(m[0], 1);
  ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  *slow = f;
  return a;
}

/* Delay role 0's data writes at [WOFF, WOFF + LEN) (not its superblock
 * or bitmap). */
static void
slow_down(struct raid_member *slow, uint64_t len)
{
  struct raid_fault rule = { .ops = RAID_FAULT_WRITE, .offset = slow->data_offset + WOFF,
                             .length = len, .delay_us = DELAY_US };

  ck_assert_int_eq(raid_fault_add(slow, &rule), 0);
}

/* LEN bytes of member I of SET at data byte OFF (data at 1 MiB). */
static void
member_read(const char *set, unsigned i, uint64_t off, void *buf, size_t len)
{
  char p[256];
  int fd;

  tfile_path(p, sizeof p, set, i);
  fd = open(p, O_RDONLY);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(pread(fd, buf, len, (off_t)(RAID_DATA_OFFSET_DEFAULT + off)), (ssize_t)len);
  close(fd);
}

struct done {
  int n;                                /* callbacks so far */
  int err;
};

static void
on_done(void *opaque, int err)
{
  struct done *d = opaque;

  d->n++;
  if (err && d->err == 0)
    d->err = err;
}

static uint32_t
behind_now(struct raid_array *a)
{
  struct raid_bitmap_info bi;

  ck_assert_int_eq(raid_array_bitmap(a, &bi), 0);
  return bi.behind_writes;
}

/* Run Q until every request and behind write on it is over. */
static void
drain(struct raid_queue *q)
{
  while (raid_queue_in_flight(q) > 0)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
}

/* _i 0: write-behind 16; 1: none. */
START_TEST(test_ack)
{
  bool wb = _i == 0;
  const char *set = wb ? "wba" : "wbn";
  struct raid_member *slow;
  struct raid_array *a = create_wb(set, wb ? 16 : 0, &slow);
  struct raid_bitmap_info bi;
  struct raid_queue *q;
  struct done d = { 0, 0 }, rd = { 0, 0 };
  uint8_t *data = test_alloc(WLEN), *back = test_alloc(WLEN), *m0 = test_alloc(WLEN);
  uint8_t *m1 = test_alloc(WLEN);

  ck_assert_int_eq(raid_array_bitmap(a, &bi), 0);
  ck_assert_uint_eq(bi.write_behind, wb ? 16 : 0);
  memset(data, 0xa5, WLEN);
  slow_down(slow, WLEN);
  ck_assert_int_eq(raid_queue_new(32, &q), 0);
  ck_assert_int_eq(raid_aio_write(q, a, data, WLEN, WOFF, 0, on_done, &d), 0);
  while (d.n == 0)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
  ck_assert_int_eq(d.err, 0);
  member_read(set, 0, WOFF, m0, WLEN);
  member_read(set, 1, WOFF, m1, WLEN);
  ck_assert_mem_eq(m1, data, WLEN);
  if (!wb) {
    /* Acknowledged when both members had it. */
    ck_assert_mem_eq(m0, data, WLEN);
    ck_assert_uint_eq(raid_queue_in_flight(q), 0);
    ck_assert_uint_eq(behind_now(a), 0);
  }
  else {
    /* Acknowledged before the slow member had it (its write waits
     * DELAY_US), the caller's buffer free to change, the chunk counted. */
    ck_assert_msg(m0[0] == 0 && m0[WLEN - 1] == 0, "the write-mostly member has "
                  "the data already: the write was not behind");
    ck_assert_uint_eq(raid_queue_in_flight(q), 1);
    ck_assert_uint_eq(behind_now(a), 1);
    /* Not marked clean (safe mode's 200 ms) while a write is behind. */
    usleep(500000);
    ck_assert_int_eq(raid_array_clean(a), 0);
    memset(data, 0x11, WLEN);
    /* Only the write-mostly member left to read: the read waits for the
     * behind write and sees the new data, not the copy's old zeroes. */
    ck_assert_int_eq(raid_array_fail_member(a, 1), 0);
    ck_assert_int_eq(raid_aio_read(q, a, back, WLEN, WOFF, on_done, &rd), 0);
    while (rd.n == 0)
      ck_assert_int_ge(raid_queue_run(q, 1), 0);
    ck_assert_int_eq(rd.err, 0);
    memset(data, 0xa5, WLEN);
    ck_assert_mem_eq(back, data, WLEN);
  }
  drain(q);
  ck_assert_uint_eq(behind_now(a), 0);
  member_read(set, 0, WOFF, m0, WLEN);
  ck_assert_mem_eq(m0, data, WLEN);
  raid_queue_free(q);
  raid_array_free(a);
  test_free(data);
  test_free(back);
  test_free(m0);
  test_free(m1);
}
END_TEST

/* write_behind 2: of four writes at once, two are behind and
 * acknowledged early; the other two wait for the slow member. */
START_TEST(test_limit)
{
  struct raid_member *slow;
  struct raid_array *a = create_wb("wbl", 2, &slow);
  struct raid_queue *q;
  struct done d = { 0, 0 };
  uint8_t *data = test_alloc(4 * WLEN);
  unsigned i;

  memset(data, 0x3c, 4 * WLEN);
  slow_down(slow, 4 * WLEN);
  ck_assert_int_eq(raid_queue_new(32, &q), 0);
  for (i = 0; i < 4; i++)
    ck_assert_int_eq(raid_aio_write(q, a, data + i * WLEN, WLEN, WOFF + i * WLEN, 0,
                                    on_done, &d), 0);
  while (d.n < 2)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
  ck_assert_int_eq(d.n, 2);
  ck_assert_uint_eq(behind_now(a), 2);
  drain(q);
  ck_assert_int_eq(d.n, 4);
  ck_assert_int_eq(d.err, 0);
  ck_assert_uint_eq(behind_now(a), 0);
  raid_queue_free(q);
  raid_array_free(a);
  test_free(data);
}
END_TEST

/* A FUA write is not behind: it completes once the slow member has it.
 * A flush waits for the write behind before it: when it completes, the
 * slow member has that write too. */
START_TEST(test_flush)
{
  struct raid_member *slow;
  struct raid_array *a = create_wb("wbf", 16, &slow);
  struct raid_queue *q;
  struct done d = { 0, 0 }, fd = { 0, 0 };
  uint8_t *data = test_alloc(2 * WLEN), *m0 = test_alloc(WLEN);

  memset(data, 0x5e, 2 * WLEN);
  slow_down(slow, 2 * WLEN);
  ck_assert_int_eq(raid_queue_new(32, &q), 0);
  ck_assert_int_eq(raid_aio_write(q, a, data + WLEN, WLEN, WOFF + WLEN, RAID_REQ_FUA,
                                  on_done, &fd), 0);
  while (fd.n == 0)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
  ck_assert_int_eq(fd.err, 0);
  member_read("wbf", 0, WOFF + WLEN, m0, WLEN);
  ck_assert_mem_eq(m0, data + WLEN, WLEN);
  ck_assert_uint_eq(behind_now(a), 0);

  ck_assert_int_eq(raid_aio_write(q, a, data, WLEN, WOFF, 0, on_done, &d), 0);
  while (d.n == 0)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
  ck_assert_uint_eq(behind_now(a), 1);
  fd.n = 0;
  ck_assert_int_eq(raid_aio_flush(q, a, on_done, &fd), 0);
  while (fd.n == 0)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
  ck_assert_int_eq(fd.err, 0);
  ck_assert_uint_eq(behind_now(a), 0);
  member_read("wbf", 0, WOFF, m0, WLEN);
  ck_assert_mem_eq(m0, data, WLEN);
  drain(q);
  raid_queue_free(q);
  raid_array_free(a);
  test_free(data);
  test_free(m0);
}
END_TEST

/* A crash while a write is behind: the copy of the members then has the
 * chunk's bit set and the write on role 1 only; the resync goes by role 1,
 * although role 0 is the first copy. */
START_TEST(test_crash)
{
  struct raid_member *slow, *m[2];
  struct raid_array *a = create_wb("wbc", 16, &slow);
  struct raid_superblock sb;
  struct raid_bitmap_super b;
  struct raid_queue *q;
  struct done d = { 0, 0 };
  uint8_t *data = test_alloc(WLEN), *back = test_alloc(WLEN);
  char from[256], to[256];
  uint64_t dirty;
  unsigned i;

  memset(data, 0x77, WLEN);
  slow_down(slow, WLEN);
  ck_assert_int_eq(raid_queue_new(32, &q), 0);
  ck_assert_int_eq(raid_aio_write(q, a, data, WLEN, WOFF, 0, on_done, &d), 0);
  while (d.n == 0)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
  ck_assert_uint_eq(behind_now(a), 1);
  for (i = 0; i < 2; i++) {
    tfile_path(from, sizeof from, "wbc", i);
    tfile_path(to, sizeof to, "wbx", i);
    tfile_copy(from, to);
  }
  drain(q);
  raid_queue_free(q);
  raid_array_free(a);

  member_read("wbx", 0, WOFF, back, WLEN);
  ck_assert_msg(back[0] == 0, "role 0 had the behind write at the crash");
  tfile_open("wbx", NULL, 2, m);
  for (i = 0; i < 2; i++) {
    ck_assert_int_eq(raid_superblock_read(m[i], &sb), 0);
    ck_assert_int_eq(raid_bitmap_read(m[i], &sb, &b, &dirty), 0);
    ck_assert_uint_eq(b.write_behind, 16);         /* what mdadm -X shows */
    ck_assert_uint_eq(dirty, 1);
  }
  ck_assert_int_eq(raid_member_is_write_mostly(m[0]), 0);  /* set by assembly */
  ck_assert_msg(raid_array_assemble(NULL, m, 2, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_member_is_write_mostly(m[0]), 1);
  ck_assert_int_eq(raid_array_needs_resync(a), 1);
  ck_assert_int_eq(raid_array_resync(a, NULL, NULL), 0);
  ck_assert_int_eq(raid_pread(a, back, WLEN, WOFF), 0);
  ck_assert_mem_eq(back, data, WLEN);
  raid_array_free(a);
  member_read("wbx", 0, WOFF, back, WLEN);
  ck_assert_mem_eq(back, data, WLEN);
  member_read("wbx", 1, WOFF, back, WLEN);
  ck_assert_mem_eq(back, data, WLEN);
  test_free(data);
  test_free(back);
}
END_TEST

/* Refused, each with its reason, and nothing written on the members. */
static const struct {
  int level, bitmap;
  uint32_t wb;
  const char *why;
} bads[] = {
  { RAID_LEVEL_5, RAID_BITMAP_INTERNAL, 16, "RAID 1 only" },
  { RAID_LEVEL_1, RAID_BITMAP_NONE, 16, "needs the write-intent bitmap" },
  { RAID_LEVEL_1, RAID_BITMAP_DEFAULT, 16, "needs the write-intent bitmap" },
  { RAID_LEVEL_1, RAID_BITMAP_INTERNAL, RAID_BITMAP_WRITE_BEHIND_MAX + 1, "out of range" },
};

START_TEST(test_refused)
{
  struct raid_config cfg = { .name = "wbr", .level = bads[_i].level,
                             .layout = RAID_LAYOUT_DEFAULT, .raid_disks = 3,
                             .bitmap = bads[_i].bitmap, .write_behind = bads[_i].wb };
  struct raid_member *m[3];
  struct raid_array *a = NULL;
  uint8_t *buf = test_alloc(MEMBER_SIZE);
  uint64_t k;
  unsigned i;
  char p[256];
  int fd;

  tfile_create("wbr", 3, MEMBER_SIZE);
  tfile_open("wbr", NULL, 3, m);
  ck_assert_int_eq(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a), -EINVAL);
  ck_assert_ptr_null(a);
  ck_assert_msg(strstr(raid_get_error(), bads[_i].why) != NULL, "%s", raid_get_error());
  tfile_close(m, 3);
  for (i = 0; i < 3; i++) {
    tfile_path(p, sizeof p, "wbr", i);
    fd = open(p, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pread(fd, buf, MEMBER_SIZE, 0), MEMBER_SIZE);
    close(fd);
    for (k = 0; k < MEMBER_SIZE && buf[k] == 0; k++)
      ;
    ck_assert_msg(k == MEMBER_SIZE, "member %u written at byte %" PRIu64, i, k);
  }
  test_free(buf);
}
END_TEST

static Suite *
wb_suite(void)
{
  Suite *s = suite_create("write-behind");
  TCase *tc = test_tcase("write-behind");

  tcase_add_loop_test(tc, test_ack, 0, 2);
  tcase_add_test(tc, test_limit);
  tcase_add_test(tc, test_flush);
  tcase_add_test(tc, test_crash);
  tcase_add_loop_test(tc, test_refused, 0, ARRAY_SIZE(bads));
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  test_init("test-write-behind");
  raid_set_log_handler(NULL, NULL, -1);
  return test_run_suite(wb_suite());
}
