/* RAID 6's P and Q (raid6.h): ISA-L's pq_gen() and GF routines, and a
 * portable twin the tests compare them with.
 *
 * ISA-L's pq_gen(vects, len, array) writes P and Q of array[0..vects-3]
 * into array[vects-2] and array[vects-1]: every pointer 32-byte aligned,
 * LEN a multiple of 32 (an int), at least two data blocks (it returns 1
 * and does nothing otherwise).  Its Q is md's (the kernel's
 * lib/raid6/int.uc is its reference: Horner's rule, the data block of
 * index 0 multiplied by g^0).  Its ec_encode_data() multiplies and adds
 * vectors by GF constants (tables from ec_init_tables(), any alignment),
 * with the same polynomial (0x11d); gf_mul() and gf_inv() are its scalar
 * GF.  Recovery (raid6_recover()) works as md's lib/raid6/recov.c: the
 * missing blocks zeroed, P and Q of the rest into scratch buffers, the
 * differences with the real P and Q solved for the missing data.
 */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>

#include "internal.h"
#include "raid6.h"

#define PQ_ALIGN 32u
/* Largest LEN per ISA-L call: a multiple of PQ_ALIGN below INT_MAX. */
#define PQ_MAX_CHUNK ((size_t)1 << 30)

/* ---- GF(2^8), polynomial 0x11d, generator 2 ---------------------------------- */

/* g times every byte of the word W: a byte's top bit folds 0x1d back in. */
static uint64_t
gf_mul2_word(uint64_t w)
{
  uint64_t hi = w & UINT64_C(0x8080808080808080);

  return ((w << 1) & UINT64_C(0xfefefefefefefefe)) ^ ((hi >> 7) * 0x1d);
}

/* g times the byte X. */
static unsigned char
gf_mul2(unsigned char x)
{
  return (unsigned char)((x << 1) ^ (x & 0x80 ? 0x1d : 0));
}

/* g^N. */
static unsigned char
gf_exp(unsigned n)
{
  unsigned char x = 1;

  for (n %= 255; n > 0; n--)
    x = gf_mul2(x);
  return x;
}

/* OUT = sum over J < K of C[J] times SRCS[J], LEN bytes (OUT may be none of
 * the sources).  ISA-L's tables for K sources, one output row. */
static void
gf_combine(unsigned char *out, unsigned char **srcs, const unsigned char *c, int k,
           size_t len)
{
  unsigned char tbls[32 * 2];
  unsigned char *s[2];
  size_t off;
  int j;

  ec_init_tables(k, 1, (unsigned char *)c, tbls);
  for (off = 0; off < len; off += PQ_MAX_CHUNK) {
    size_t n = MIN(len - off, PQ_MAX_CHUNK);
    unsigned char *o = out + off;

    for (j = 0; j < k; j++)
      s[j] = srcs[j] + off;
    ec_encode_data((int)n, k, 1, tbls, s, &o);
  }
}

/* ---- the syndromes ------------------------------------------------------------ */

static int
check_args(const char *fn, void *const *blocks, unsigned ndata)
{
  unsigned i;

  if (ndata == 0 || ndata > RAID6_MAX_DATA)
    return set_error(EINVAL, "%s: %u data blocks: 1 to %u", fn, ndata, RAID6_MAX_DATA);
  if (blocks == NULL)
    return set_error(EINVAL, "%s: block array is NULL", fn);
  for (i = 0; i < ndata + 2; i++)
    if (blocks[i] == NULL)
      return set_error(EINVAL, "%s: block %u is NULL", fn, i);
  return 0;
}

/* P and Q a 64-bit word at a time (Horner's rule from the last data
 * block down, as md's int.uc), then the bytes left. */
static void
gen_portable(void *const *blocks, unsigned ndata, size_t len)
{
  unsigned char *p = blocks[ndata], *q = blocks[ndata + 1];
  size_t i = 0;
  unsigned j;

  for (; len - i >= sizeof (uint64_t); i += sizeof (uint64_t)) {
    uint64_t wp, wq, w;

    memcpy(&wp, (const unsigned char *)blocks[ndata - 1] + i, sizeof wp);
    wq = wp;
    for (j = ndata - 1; j-- > 0; ) {
      memcpy(&w, (const unsigned char *)blocks[j] + i, sizeof w);
      wp ^= w;
      wq = gf_mul2_word(wq) ^ w;
    }
    memcpy(p + i, &wp, sizeof wp);
    memcpy(q + i, &wq, sizeof wq);
  }
  for (; i < len; i++) {
    unsigned char bp = ((const unsigned char *)blocks[ndata - 1])[i], bq = bp;

    for (j = ndata - 1; j-- > 0; ) {
      unsigned char b = ((const unsigned char *)blocks[j])[i];

      bp ^= b;
      bq = gf_mul2(bq) ^ b;
    }
    p[i] = bp;
    q[i] = bq;
  }
}

int
raid6_gen(void *const *blocks, unsigned ndata, size_t len)
{
  void *v[RAID6_MAX_DATA + 2];
  unsigned i;
  size_t off;
  int r;

  if ((r = check_args("raid6_gen", blocks, ndata)) < 0)
    return r;
  for (i = 0; i < ndata + 2; i++)
    if ((uintptr_t)blocks[i] % PQ_ALIGN)
      break;
  if (ndata < 2 || i < ndata + 2 || len % PQ_ALIGN) {
    gen_portable(blocks, ndata, len);
    return 0;
  }
  for (off = 0; off < len; off += PQ_MAX_CHUNK) {
    size_t n = MIN(len - off, PQ_MAX_CHUNK);

    for (i = 0; i < ndata + 2; i++)
      v[i] = (unsigned char *)blocks[i] + off;
    if (pq_gen((int)ndata + 2, (int)n, v) != 0)
      return set_error(EIO, "raid6_gen: ISA-L's pq_gen() refused %u blocks of %zu bytes",
                       ndata, n);
  }
  return 0;
}

int
raid6_gen_ref(void *const *blocks, unsigned ndata, size_t len)
{
  int r;

  if ((r = check_args("raid6_gen_ref", blocks, ndata)) < 0)
    return r;
  gen_portable(blocks, ndata, len);
  return 0;
}

/* ---- recovery ----------------------------------------------------------------- */

/* BLOCKS with the data block X (and Y, if a data block) zeroed, P and Q
 * of the rest into A and B, then A ^= P, B ^= Q: A is the XOR of the
 * missing data, B their sum weighted by g^index. */
static int
partial(void *const *blocks, unsigned ndata, size_t len, int x, int y, unsigned char *a,
        unsigned char *b)
{
  void *v[RAID6_MAX_DATA + 2], *s[2];
  int r;

  memcpy(v, blocks, (ndata + 2) * sizeof *v);
  memset(v[x], 0, len);
  if (y >= 0 && (unsigned)y < ndata)
    memset(v[y], 0, len);
  v[ndata] = a;
  v[ndata + 1] = b;
  if ((r = raid6_gen(v, ndata, len)) < 0)
    return r;
  s[0] = a;
  s[1] = blocks[ndata];
  if ((r = raid_xor(a, s, 2, len)) < 0)
    return r;
  s[0] = b;
  s[1] = blocks[ndata + 1];
  return raid_xor(b, s, 2, len);
}

int
raid6_recover(void *const *blocks, unsigned ndata, size_t len, int faila, int failb,
              void *scratch)
{
  unsigned char *a = scratch, *b = a + len, *s[2], c[2];
  void *v2[2];
  int x = faila, y = failb, n = (int)ndata, r;

  if ((r = check_args("raid6_recover", blocks, ndata)) < 0)
    return r;
  if (y >= 0 && y < x) {
    x = failb;
    y = faila;
  }
  if (x < 0 || x >= n + 2 || y >= n + 2 || x == y || scratch == NULL)
    return set_error(EINVAL, "raid6_recover: blocks %d and %d of %u data, P and Q "
                     "cannot be recovered", faila, failb, ndata);
  if (x >= n)
    /* P, Q or both: made again from the data. */
    return raid6_gen(blocks, ndata, len);
  if (y < 0 || y == n + 1) {
    /* One data block, and perhaps Q: the data from P and the others,
     * then Q again. */
    void *v[RAID6_MAX_DATA + 1];
    int i, k = 0;

    for (i = 0; i <= n; i++)
      if (i != x)
        v[k++] = blocks[i];
    if ((r = raid_xor(blocks[x], v, (unsigned)k, len)) < 0)
      return r;
    return y < 0 ? 0 : raid6_gen(blocks, ndata, len);
  }
  if ((r = partial(blocks, ndata, len, x, y, a, b)) < 0)
    return r;
  if (y == n) {
    /* Data X and P: B = g^x·D_x, so D_x = g^-x·B; then P of the data
     * (A came from the lost P). */
    c[0] = gf_inv(gf_exp((unsigned)x));
    s[0] = b;
    gf_combine(blocks[x], s, c, 1, len);
    return raid_xor(blocks[n], blocks, ndata, len);
  }
  /* Data X and Y: A = D_x ^ D_y and B = g^x·D_x ^ g^y·D_y, so
   * D_x = (g^y·A ^ B) / (g^x ^ g^y), and D_y = A ^ D_x. */
  {
    unsigned char gx = gf_exp((unsigned)x), gy = gf_exp((unsigned)y);
    unsigned char inv = gf_inv(gx ^ gy);

    c[0] = gf_mul(gy, inv);
    c[1] = inv;
    s[0] = a;
    s[1] = b;
    gf_combine(blocks[x], s, c, 2, len);
    v2[0] = a;
    v2[1] = blocks[x];
    return raid_xor(blocks[y], v2, 2, len);
  }
}
