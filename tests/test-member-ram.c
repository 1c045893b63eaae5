/* Description: the RAM member back-end and the simulated drives ("sim:"
 * specs: RAM-backed, timing of latency, channels and bandwidth, discard
 * mode, bad options), driven directly through a raid_queue with the
 * internal member API.
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
  fill_pattern(a, sizeof a, 11);
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
  fill_pattern(a, sizeof a, 12);
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

int
main(void)
{
  Suite *s = suite_create("member-ram");
  TCase *tc;

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

  return member_main("test-member-ram", s);
}
