/* Description: raid_xor() (ISA-L fast path) against raid_xor_ref() (its
 * portable twin), and raid_xor_ref() against a naive byte loop written
 * here, with a fixed seed: every length 0..4096 in steps of 8 plus odd
 * lengths, every source count 1..16 (and up to 64), buffers aligned and
 * misaligned (0, 1, 8, 16, 31 bytes past a 64-byte boundary), the
 * destination aliasing srcs[0], and buffers that end exactly where their
 * allocation ends so that valgrind or ASan see any read or write past
 * them; guard bytes around the destination catch stray writes without
 * either.  Also the error paths (-EINVAL, raid_get_errno(), the message)
 * and the RAID 5 property: XOR of the parity with all but one source
 * gives back the missing one.
 *
 * RAID_TEST_SCALE (percent, default 100) runs a deterministic subset,
 * for valgrind.
 */
#include <config.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <raid/raid.h>

#define MAX_SRC 64
#define GUARD 64                    /* guard bytes around a guarded dst */

static const size_t offsets[] = { 0, 1, 8, 16, 31 };
#define N_OFFSETS (sizeof offsets / sizeof offsets[0])

static const size_t odd_lengths[] = {
  1, 2, 3, 5, 7, 15, 17, 31, 33, 63, 65, 95, 127, 129, 255, 257, 4095, 4097,
  4096 + 31, 4096 + 33, 8191,
};
#define N_ODD (sizeof odd_lengths / sizeof odd_lengths[0])

/* ---- helpers ------------------------------------------------------------ */

static uint64_t rng_state;

static void
rng_seed(uint64_t seed)
{
  rng_state = seed;
}

/* xorshift64*: a fixed, reproducible stream. */
static uint64_t
rng(void)
{
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}

static void
fill_random(unsigned char *p, size_t len)
{
  size_t i;

  for (i = 0; i < len; i++)
    p[i] = (unsigned char)(rng() >> 56);
}

static unsigned
test_scale(void)
{
  const char *s = getenv("RAID_TEST_SCALE");
  long v;

  if (s == NULL || *s == '\0')
    return 100;
  v = strtol(s, NULL, 10);
  if (v < 1)
    return 1;
  if (v > 100)
    return 100;
  return (unsigned)v;
}

/* Whether case number N belongs to the RAID_TEST_SCALE subset: a fixed
 * spread over the cases, not the first few. */
static int
keep_case(unsigned long n)
{
  unsigned scale = test_scale();

  return scale >= 100 || (n * 61) % 100 < scale;
}

/* A buffer of LEN bytes at OFF past a 64-byte aligned allocation, with
 * TAIL more bytes after it (0: the buffer ends where the allocation
 * ends).  Everything allocated is filled with random bytes. */
struct tbuf {
  unsigned char *base;
  unsigned char *p;
  size_t off, len, tail;
};

static void
tbuf_alloc(struct tbuf *b, size_t off, size_t len, size_t tail)
{
  size_t size = off + len + tail;
  void *base;

  if (posix_memalign(&base, 64, size > 0 ? size : 1) != 0)
    ck_abort_msg("posix_memalign %zu bytes failed", size);
  b->base = base;
  b->p = b->base + off;
  b->off = off;
  b->len = len;
  b->tail = tail;
  fill_random(b->base, size);
}

static void
tbuf_free(struct tbuf *b)
{
  free(b->base);
  b->base = b->p = NULL;
}

/* The reference of the reference: one byte at a time, into OUT. */
static void
naive_xor(unsigned char *out, void *const *srcs, unsigned nsrc, size_t len)
{
  size_t i;
  unsigned j;

  for (i = 0; i < len; i++) {
    unsigned char x = 0;

    for (j = 0; j < nsrc; j++)
      x ^= ((const unsigned char *)srcs[j])[i];
    out[i] = x;
  }
}

/* Index of the first byte where A and B differ, or -1. */
static long
first_diff(const unsigned char *a, const unsigned char *b, size_t len)
{
  size_t i;

  if (memcmp(a, b, len) == 0)
    return -1;
  for (i = 0; a[i] == b[i]; i++)
    ;
  return (long)i;
}

typedef int (*xor_fn)(void *dst, void *const *srcs, unsigned nsrc, size_t len);

/* One case: NSRC sources of LEN bytes, source J at SRC_OFF[J], the
 * destination at DST_OFF or aliasing source 0, buffers ending at the end
 * of their allocations (AT_END) or followed by guard bytes.  Checks
 * raid_xor_ref() against the naive loop and raid_xor() against
 * raid_xor_ref(), and that no source and no byte around the destination
 * changed. */
static void
check_case(size_t len, unsigned nsrc, const size_t *src_off, size_t dst_off,
           int alias, int at_end)
{
  static const struct {
    const char *name;
    xor_fn fn;
  } impls[] = {
    { "raid_xor_ref", raid_xor_ref },
    { "raid_xor", raid_xor },
  };
  struct tbuf src[MAX_SRC], dst;
  void *srcp[MAX_SRC];
  unsigned char *expect, *ref_out, *saved;
  size_t tail = at_end ? 0 : GUARD;
  unsigned j, k;

  for (j = 0; j < nsrc; j++) {
    tbuf_alloc(&src[j], src_off[j], len, tail);
    srcp[j] = src[j].p;
  }
  /* A guarded destination: GUARD random bytes before and after it, or
   * only before when it must end at the end of its allocation. */
  tbuf_alloc(&dst, dst_off + GUARD, len, tail);

  expect = malloc(len + 1);
  ref_out = malloc(len + 1);
  saved = malloc((size_t)nsrc * len + dst.off + len + tail + 1);
  ck_assert(expect != NULL && ref_out != NULL && saved != NULL);

  naive_xor(expect, srcp, nsrc, len);
  for (j = 0; j < nsrc; j++)
    memcpy(saved + (size_t)j * len, src[j].p, len);
  memcpy(saved + (size_t)nsrc * len, dst.base, dst.off + len + tail);

  for (k = 0; k < sizeof impls / sizeof impls[0]; k++) {
    unsigned char *out;
    long d;
    int r;

    /* Start each from the same random bytes, so that no implementation
     * passes by finding the previous one's result in place. */
    memcpy(dst.base, saved + (size_t)nsrc * len, dst.off + len + tail);
    if (alias) {
      /* dst == srcs[0]: XOR the others into the first. */
      memcpy(src[0].p, saved, len);
      out = src[0].p;
    }
    else
      out = dst.p;

    r = impls[k].fn(out, srcp, nsrc, len);
    if (r != 0)
      ck_abort_msg("%s returned %d (%s) for len %zu nsrc %u",
                   impls[k].name, r, raid_get_error(), len, nsrc);

    /* raid_xor_ref against the naive loop, raid_xor against raid_xor_ref. */
    d = first_diff(out, k == 0 ? expect : ref_out, len);
    if (d >= 0)
      ck_abort_msg("%s differs from %s at byte %ld: len %zu nsrc %u "
                   "dst_off %zu src_off[0] %zu alias %d at_end %d",
                   impls[k].name, k == 0 ? "the naive loop" : "raid_xor_ref",
                   d, len, nsrc, dst_off, src_off[0], alias, at_end);
    if (k == 0)
      memcpy(ref_out, out, len);

    for (j = alias ? 1 : 0; j < nsrc; j++)
      if (memcmp(src[j].p, saved + (size_t)j * len, len) != 0)
        ck_abort_msg("%s modified source %u: len %zu nsrc %u alias %d",
                     impls[k].name, j, len, nsrc, alias);
    if (memcmp(dst.base, saved + (size_t)nsrc * len,
               alias ? dst.off + len + tail : dst.off) != 0 ||
        memcmp(dst.p + len, saved + (size_t)nsrc * len + dst.off + len,
               tail) != 0)
      ck_abort_msg("%s wrote outside the destination: len %zu nsrc %u "
                   "dst_off %zu alias %d", impls[k].name, len, nsrc,
                   dst_off, alias);
  }

  free(saved);
  free(ref_out);
  free(expect);
  tbuf_free(&dst);
  for (j = 0; j < nsrc; j++)
    tbuf_free(&src[j]);
}

/* ---- tests -------------------------------------------------------------- */

/* Every length and every source count, cycling through offset patterns
 * (all buffers at one offset, which takes ISA-L's path, or each at its
 * own, which does not), aliasing and placement. */
START_TEST(test_lengths)
{
  size_t src_off[MAX_SRC];
  unsigned long n = 0;
  size_t len, li;
  unsigned nsrc, j;

  rng_seed(0x5eed0001);
  for (li = 0; li <= 4096 / 8 + N_ODD; li++) {
    len = li <= 4096 / 8 ? li * 8 : odd_lengths[li - 4096 / 8 - 1];
    for (nsrc = 1; nsrc <= 16; nsrc++, n++) {
      size_t dst_off;
      int mixed = n % 3 == 2;

      if (!keep_case(n))
        continue;
      dst_off = offsets[n % N_OFFSETS];
      for (j = 0; j < nsrc; j++)
        src_off[j] = mixed ? offsets[rng() % N_OFFSETS] : dst_off;
      check_case(len, nsrc, src_off, dst_off, (n / 3) % 2, (n / 6) % 2);
    }
  }
}
END_TEST

/* Every destination offset against every source offset, for the lengths
 * around ISA-L's boundaries. */
START_TEST(test_alignment)
{
  static const size_t lens[] = {
    0, 1, 7, 8, 31, 32, 33, 63, 64, 96, 127, 128, 129, 160, 200, 256 + 8,
    1000, 4096, 4096 + 31,
  };
  static const unsigned nsrcs[] = { 1, 2, 3, 5, 8, 13 };
  size_t src_off[MAX_SRC];
  unsigned long n = 0;
  unsigned li, si, di, oi, j;
  int alias, at_end;

  rng_seed(0x5eed0002);
  for (li = 0; li < sizeof lens / sizeof lens[0]; li++)
    for (si = 0; si < sizeof nsrcs / sizeof nsrcs[0]; si++)
      for (di = 0; di < N_OFFSETS; di++)
        for (oi = 0; oi < N_OFFSETS; oi++)
          for (alias = 0; alias <= 1; alias++)
            for (at_end = 0; at_end <= 1; at_end++, n++) {
              if (!keep_case(n))
                continue;
              /* Source 0 at offset OI, the others there too or at the
               * destination's, so both the same-misalignment path and
               * the mixed one are taken. */
              for (j = 0; j < nsrcs[si]; j++)
                src_off[j] = j == 0 || (n & 1) ? offsets[oi] : offsets[di];
              check_case(lens[li], nsrcs[si], src_off,
                         alias ? offsets[oi] : offsets[di], alias, at_end);
            }
}
END_TEST

/* More sources than a RAID 5 stripe usually has, up to the maximum. */
START_TEST(test_many_sources)
{
  static const size_t lens[] = { 0, 5, 32, 100, 4096, 4096 + 13 };
  static const unsigned nsrcs[] = { 17, 31, 32, 33, 63, 64 };
  size_t src_off[MAX_SRC];
  unsigned long n = 0;
  unsigned li, si, j;

  rng_seed(0x5eed0003);
  for (li = 0; li < sizeof lens / sizeof lens[0]; li++)
    for (si = 0; si < sizeof nsrcs / sizeof nsrcs[0]; si++, n++) {
      if (!keep_case(n))
        continue;
      for (j = 0; j < nsrcs[si]; j++)
        src_off[j] = n % 2 ? offsets[j % N_OFFSETS] : 16;
      check_case(lens[li], nsrcs[si], src_off, 16, n % 3 == 0, n % 4 < 2);
    }
}
END_TEST

/* Each error path returns -EINVAL, sets raid_get_errno() and names the
 * function, and leaves the destination alone. */
static void
check_error(xor_fn fn, const char *name, void *dst, void *const *srcs,
            unsigned nsrc, const char *what)
{
  int r = fn(dst, srcs, nsrc, 16);

  ck_assert_msg(r == -EINVAL, "%s with %s returned %d, not -EINVAL",
                name, what, r);
  ck_assert_msg(raid_get_errno() == EINVAL, "%s with %s: raid_get_errno() %d",
                name, what, raid_get_errno());
  ck_assert_msg(strstr(raid_get_error(), name) != NULL,
                "%s with %s: message \"%s\" does not name it",
                name, what, raid_get_error());
}

START_TEST(test_errors)
{
  static const struct {
    const char *name;
    xor_fn fn;
  } impls[] = {
    { "raid_xor", raid_xor },
    { "raid_xor_ref", raid_xor_ref },
  };
  unsigned char bufs[MAX_SRC + 1][16], dst[16], zero[16];
  void *srcs[MAX_SRC + 1];
  unsigned k, j;

  for (j = 0; j <= MAX_SRC; j++) {
    memset(bufs[j], (int)j, sizeof bufs[j]);
    srcs[j] = bufs[j];
  }
  memset(zero, 0, sizeof zero);

  for (k = 0; k < sizeof impls / sizeof impls[0]; k++) {
    const char *name = impls[k].name;
    xor_fn fn = impls[k].fn;

    memset(dst, 0, sizeof dst);
    check_error(fn, name, dst, srcs, 0, "no sources");
    check_error(fn, name, dst, srcs, RAID_MAX_MEMBERS + 1, "65 sources");
    check_error(fn, name, dst, srcs, 1000000, "a million sources");
    check_error(fn, name, NULL, srcs, 2, "a NULL destination");
    check_error(fn, name, dst, NULL, 2, "a NULL source array");
    srcs[3] = NULL;
    check_error(fn, name, dst, srcs, 4, "a NULL source");
    srcs[3] = bufs[3];
    ck_assert_msg(memcmp(dst, zero, sizeof dst) == 0,
                  "%s wrote the destination on an error", name);

    /* The limits themselves are fine. */
    ck_assert_int_eq(fn(dst, srcs, 1, sizeof dst), 0);
    ck_assert_int_eq(fn(dst, srcs, RAID_MAX_MEMBERS, sizeof dst), 0);
    /* 0 ^ 1 ^ ... ^ 63 == 0 */
    ck_assert(memcmp(dst, zero, sizeof dst) == 0);
    ck_assert_int_eq(fn(dst, srcs, 2, 0), 0);
  }
}
END_TEST

/* RAID 5: P = D0 ^ ... ^ Dn-1, and P with all but Dk gives back Dk, for
 * every k, into a fresh buffer and in place over a copy of P. */
START_TEST(test_reconstruct)
{
  static const size_t lens[] = { 4096, 512 + 5 };
  unsigned scale = test_scale();
  unsigned ndata, k, j, li;
  unsigned long n = 0;

  rng_seed(0x5eed0004);
  for (li = 0; li < sizeof lens / sizeof lens[0]; li++)
    for (ndata = 1; ndata <= RAID_MAX_MEMBERS; ndata++, n++) {
      size_t len = lens[li];
      unsigned char *mem, *data[MAX_SRC], *parity, *out;
      void *srcs[MAX_SRC];
      void *mem_v;

      if (ndata > 16 && !keep_case(n) && ndata != RAID_MAX_MEMBERS)
        continue;
      /* One allocation: data, parity, out, each LEN (rounded to 64). */
      {
        size_t stride = (len + 63) & ~(size_t)63;

        ck_assert(posix_memalign(&mem_v, 64, (ndata + 2) * stride) == 0);
        mem = mem_v;
        for (j = 0; j < ndata; j++) {
          data[j] = mem + j * stride;
          fill_random(data[j], len);
          srcs[j] = data[j];
        }
        parity = mem + ndata * stride;
        out = mem + (ndata + 1) * stride;
      }

      ck_assert_int_eq(raid_xor(parity, srcs, ndata, len), 0);

      for (k = 0; k < ndata; k++) {
        unsigned m = 0;

        if (scale < 100 && ndata > 8 && k % (100 / scale + 1) != 0)
          continue;
        srcs[m++] = parity;
        for (j = 0; j < ndata; j++)
          if (j != k)
            srcs[m++] = data[j];

        memset(out, 0, len);
        ck_assert_int_eq(raid_xor(out, srcs, m, len), 0);
        if (memcmp(out, data[k], len) != 0)
          ck_abort_msg("reconstructing data %u of %u (len %zu) failed",
                       k, ndata, len);

        /* In place: the parity buffer's copy becomes the lost data. */
        memcpy(out, parity, len);
        srcs[0] = out;
        ck_assert_int_eq(raid_xor(out, srcs, m, len), 0);
        if (memcmp(out, data[k], len) != 0)
          ck_abort_msg("reconstructing data %u of %u (len %zu) in place "
                       "failed", k, ndata, len);
      }
      free(mem);
    }
}
END_TEST

static Suite *
xor_suite(void)
{
  Suite *s = suite_create("xor");
  TCase *tc = tcase_create("xor");

  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_lengths);
  tcase_add_test(tc, test_alignment);
  tcase_add_test(tc, test_many_sources);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_reconstruct);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  SRunner *sr = srunner_create(xor_suite());
  int failed;

  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
