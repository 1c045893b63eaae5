/* Description: the fault injector member back-end, driven directly
 * through a raid_queue with the internal member API: passthrough, injected
 * errors by range, after N ops and from a call, delays that reorder
 * completions, rules changed from another thread, over a file member.
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

  fill_pattern(w, sizeof w, 5);
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

  fill_pattern(a, sizeof a, 9);
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
  printf("test-member-fault: %u rule changes during %u reads, %u failed\n",
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

int
main(void)
{
  Suite *s = suite_create("member-fault");
  TCase *tc;

  tc = tcase_create("fault");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_fault_passthrough);
  tcase_add_test(tc, test_fault_range_after);
  tcase_add_test(tc, test_fault_from_call);
  tcase_add_test(tc, test_fault_delay);
  tcase_add_test(tc, test_fault_threads);
  tcase_add_test(tc, test_fault_file);
  suite_add_tcase(s, tc);

  return member_main("test-member-fault", s);
}
