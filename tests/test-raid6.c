/* Description: RAID 6's P and Q (lib/raid/raid6.c) against a formula
 * written here from md's definition, not from the code under test: P the
 * XOR of the data, Q the sum of g^i times data block i in GF(2^8) with
 * md's polynomial 0x11d and g = 2, each product computed bit by bit
 * (shift and add), with a fixed seed.
 *
 * test_gen: raid6_gen() (ISA-L's pq_gen() when aligned) and
 * raid6_gen_ref() (the portable twin) equal the formula for 1 to 16 data
 * blocks (and 253, md's most), lengths of 32 to 64 KiB and odd ones (the
 * largest sets and lengths left out under valgrind's RAID_TEST_SCALE),
 * buffers aligned and not (the portable path), with guard bytes after P
 * and Q; md's known values: Q of a single 1 in block I is g^I, and g^255
 * = 1 (g^8 = 0x1d under 0x11d).
 *
 * test_recover: every one and two of the blocks of a set of 4 data
 * blocks, P and Q (6 members), and of 14 + 2 (not under valgrind), 3 + 2
 * and 2 + 2, overwritten with
 * garbage and recovered by raid6_recover(): every block byte for byte as
 * before (the others untouched); refusals: the same block twice, an
 * index past Q, no scratch buffer.
 */
#include <config.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "internal.h"
#include "raid/raid6.h"

#define GUARD 64

/* A·B in GF(2^8) under x^8+x^4+x^3+x^2+1, bit by bit. */
static unsigned char
mul(unsigned char a, unsigned char b)
{
  unsigned char r = 0;

  while (b) {
    if (b & 1)
      r ^= a;
    a = (unsigned char)((a << 1) ^ (a & 0x80 ? 0x1d : 0));
    b >>= 1;
  }
  return r;
}

/* g^N, N multiplications by 2. */
static unsigned char
pow2(unsigned n)
{
  unsigned char x = 1;

  while (n--)
    x = mul(x, 2);
  return x;
}

/* P and Q of DATA[0..N-1] (LEN bytes) by the definition. */
static void
formula(uint8_t *const *data, unsigned n, size_t len, uint8_t *p, uint8_t *q)
{
  unsigned char g[256];
  size_t k;
  unsigned i;

  for (i = 0; i < n; i++)
    g[i] = pow2(i);
  for (k = 0; k < len; k++) {
    unsigned char bp = 0, bq = 0;

    for (i = 0; i < n; i++) {
      bp ^= data[i][k];
      bq ^= mul(g[i], data[i][k]);
    }
    p[k] = bp;
    q[k] = bq;
  }
}

/* N + 2 blocks of LEN bytes at offset OFF from a 4096-byte boundary, each
 * followed by GUARD bytes of 0xa5; the data random from R. */
static uint8_t **
blocks_new(unsigned n, size_t len, size_t off, struct rng *r)
{
  uint8_t **b = calloc(n + 2, sizeof *b);
  unsigned i;

  ck_assert_ptr_nonnull(b);
  for (i = 0; i < n + 2; i++) {
    uint8_t *m = test_alloc(off + len + GUARD);

    b[i] = m + off;
    rng_fill(r, b[i], len);
    memset(b[i] + len, 0xa5, GUARD);
  }
  return b;
}

static void
blocks_free(uint8_t **b, unsigned n, size_t off)
{
  unsigned i;

  for (i = 0; i < n + 2; i++)
    test_free(b[i] - off);
  free(b);
}

static void
guards_intact(uint8_t **b, unsigned n, size_t len)
{
  unsigned i, k;

  for (i = 0; i < n + 2; i++)
    for (k = 0; k < GUARD; k++)
      ck_assert_msg(b[i][len + k] == 0xa5, "block %u: byte %u past its end written", i, k);
}

static const size_t lens[] = { 32, 64, 96, 512, 4096, 65536, 1, 7, 33, 4097 };
#define NLENS (sizeof lens / sizeof lens[0])

START_TEST(test_gen)
{
  static const unsigned counts[] = { 1, 2, 3, 4, 5, 8, 13, 16, 253 };
  static const size_t offs[] = { 0, 32, 1, 8 };
  bool full = test_scale(100) == 100;
  struct rng r;
  unsigned ci, li, oi, n;

  rng_seed(&r, test_seed_for(6));
  for (ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
    for (li = 0; li < NLENS; li++)
      for (oi = 0; oi < sizeof offs / sizeof offs[0]; oi++) {
        size_t len = lens[li], off = offs[oi];
        uint8_t **b, *p, *q;
        int ref;

        n = counts[ci];
        /* Under valgrind (RAID_TEST_SCALE 10) the smaller sets only. */
        if ((n == 253 && len > 4096) || (!full && (n > 16 || len > 4097)))
          continue;
        p = test_alloc(len);
        q = test_alloc(len);
        b = blocks_new(n, len, off, &r);
        formula(b, n, len, p, q);
        for (ref = 0; ref < 2; ref++) {
          memset(b[n], 0, len);
          memset(b[n + 1], 0, len);
          ck_assert_int_eq(ref ? raid6_gen_ref((void *const *)b, n, len)
                           : raid6_gen((void *const *)b, n, len), 0);
          ck_assert_msg(memcmp(b[n], p, len) == 0, "%s: P of %u blocks of %zu at +%zu",
                        ref ? "ref" : "gen", n, len, off);
          ck_assert_msg(memcmp(b[n + 1], q, len) == 0, "%s: Q of %u blocks of %zu at +%zu",
                        ref ? "ref" : "gen", n, len, off);
          guards_intact(b, n, len);
        }
        blocks_free(b, n, off);
        test_free(p);
        test_free(q);
      }

  /* md's known values: a single 1 in block I gives Q = g^I; g^8 = 0x1d,
   * g^255 = 1. */
  ck_assert_uint_eq(pow2(8), 0x1d);
  ck_assert_uint_eq(pow2(255), 1);
  for (n = 0; n < 16; n++) {
    uint8_t **b = blocks_new(16, 64, 0, &r);
    unsigned i;

    for (i = 0; i < 16; i++)
      memset(b[i], i == n ? 1 : 0, 64);
    ck_assert_int_eq(raid6_gen((void *const *)b, 16, 64), 0);
    for (i = 0; i < 64; i++) {
      ck_assert_uint_eq(b[16][i], 1);
      ck_assert_uint_eq(b[17][i], pow2(n));
    }
    blocks_free(b, 16, 0);
  }
}
END_TEST

/* Every one and two of N data blocks, P and Q lost and recovered. */
static void
recover_all(unsigned n, size_t len, size_t off, struct rng *r)
{
  uint8_t **b = blocks_new(n, len, off, r), **want = calloc(n + 2, sizeof *want);
  void *scratch = raid_buf_alloc(2 * len);
  int x, y;
  unsigned i;

  ck_assert(want && scratch);
  ck_assert_int_eq(raid6_gen((void *const *)b, n, len), 0);
  for (i = 0; i < n + 2; i++) {
    want[i] = test_alloc(len);
    memcpy(want[i], b[i], len);
  }
  for (x = 0; x < (int)n + 2; x++)
    for (y = -1; y < (int)n + 2; y++) {
      if (y == x || (y >= 0 && y < x))
        continue;
      rng_fill(r, b[x], len);
      if (y >= 0)
        rng_fill(r, b[y], len);
      ck_assert_msg(raid6_recover((void *const *)b, n, len, x, y, scratch) == 0,
                    "%s", raid_get_error());
      for (i = 0; i < n + 2; i++)
        ck_assert_msg(memcmp(b[i], want[i], len) == 0, "%u + 2, %zu bytes at +%zu: block "
                      "%u wrong after losing %d and %d", n, len, off, i, x, y);
      guards_intact(b, n, len);
    }
  /* The same loss named the other way round. */
  if (n >= 2) {
    rng_fill(r, b[0], len);
    rng_fill(r, b[1], len);
    ck_assert_int_eq(raid6_recover((void *const *)b, n, len, 1, 0, scratch), 0);
    ck_assert(memcmp(b[0], want[0], len) == 0 && memcmp(b[1], want[1], len) == 0);
  }
  for (i = 0; i < n + 2; i++)
    test_free(want[i]);
  free(want);
  raid_buf_free(scratch);
  blocks_free(b, n, off);
}

START_TEST(test_recover)
{
  struct rng r;
  uint8_t **b;
  void *scratch;

  rng_seed(&r, test_seed_for(7));
  recover_all(4, 4096, 0, &r);
  recover_all(4, 4097, 1, &r);
  if (test_scale(100) == 100) {
    recover_all(4, 65536, 0, &r);
    recover_all(14, 4096, 0, &r);
  }
  recover_all(2, 512, 0, &r);
  recover_all(3, 96, 8, &r);

  b = blocks_new(4, 4096, 0, &r);
  scratch = raid_buf_alloc(2 * 4096);
  ck_assert_int_eq(raid6_recover((void *const *)b, 4, 4096, 2, 2, scratch), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "cannot be recovered"));
  ck_assert_int_eq(raid6_recover((void *const *)b, 4, 4096, 6, -1, scratch), -EINVAL);
  ck_assert_int_eq(raid6_recover((void *const *)b, 4, 4096, 0, 1, NULL), -EINVAL);
  ck_assert_int_eq(raid6_gen((void *const *)b, 0, 4096), -EINVAL);
  ck_assert_int_eq(raid6_gen((void *const *)b, RAID6_MAX_DATA + 1, 4096), -EINVAL);
  raid_buf_free(scratch);
  blocks_free(b, 4, 0);
}
END_TEST

int
main(void)
{
  Suite *s;
  TCase *tc;

  test_init("test-raid6");
  s = suite_create("raid6");
  tc = test_tcase("raid6");
  tcase_add_test(tc, test_gen);
  tcase_add_test(tc, test_recover);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
