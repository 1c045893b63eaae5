/* XOR parity: raid_xor() with ISA-L, raid_xor_ref() its portable twin.
 *
 * ISA-L's xor_gen(vects, len, array) XORs array[0..vects-2] into
 * array[vects-1].  What it needs, read from its headers and kernels
 * (raid/raid_base.c, xor_gen_{sse,avx,avx512}.asm):
 *  - at least two sources: vects < 3 returns 1 without doing anything,
 *    so one source (a copy) is ours to handle;
 *  - every pointer 32-byte aligned: the SSE and AVX kernels use aligned
 *    loads and stores (movntdqa, vmovdqa) that fault otherwise.  The
 *    AVX-512 kernel happens to use unaligned loads, so a machine that
 *    picks it will not show an alignment bug: never rely on that;
 *  - LEN is an int, so very long buffers go in chunks;
 *  - the kernels cope with any length (byte and word tails, from the
 *    end) but we hand them multiples of 32 and do the tail ourselves.
 * Every kernel, ISA-L's and ours, reads all sources at a position
 * before it stores the result there, so DST may be the very same
 * pointer as a source ("XOR the others into SRCS[0]").  Partial overlap
 * is not supported.
 *
 * raid_xor() therefore takes the ISA-L path when all the buffers share
 * the same offset from a 32-byte boundary: a portable head up to the
 * boundary, ISA-L over the 32-byte multiples, a portable tail.  Buffers
 * misaligned differently from each other (rare: the library's own
 * buffers are RAID_BUF_ALIGN-aligned) go through the portable loop,
 * which is also raid_xor_ref(), the reference the tests compare with.
 */
#include <config.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <isa-l/raid.h>

#include "internal.h"

/* ISA-L's buffer alignment and the granule we hand it. */
#define XOR_ALIGN 32u
/* Largest LEN per xor_gen() call: a multiple of XOR_ALIGN below INT_MAX. */
#define XOR_MAX_CHUNK ((size_t)1 << 30)

/* Check the arguments shared by raid_xor() and raid_xor_ref(). */
static int
xor_check_args(const char *fn, const void *dst, void *const *srcs,
               unsigned nsrc)
{
  unsigned i;

  if (nsrc == 0)
    return set_error(EINVAL, "%s: no source buffers", fn);
  if (nsrc > RAID_MAX_MEMBERS)
    return set_error(EINVAL, "%s: %u source buffers is more than %u",
                     fn, nsrc, RAID_MAX_MEMBERS);
  if (dst == NULL)
    return set_error(EINVAL, "%s: destination buffer is NULL", fn);
  if (srcs == NULL)
    return set_error(EINVAL, "%s: source array is NULL", fn);
  for (i = 0; i < nsrc; i++)
    if (srcs[i] == NULL)
      return set_error(EINVAL, "%s: source buffer %u is NULL", fn, i);
  return 0;
}

/* The portable loop: DST[i] = SRCS[0][i] ^ ... ^ SRCS[nsrc-1][i] for i in
 * [OFF, OFF + LEN), a 64-bit word at a time, then bytes.  Each word of
 * every source is loaded before the result is stored, so DST may equal
 * any source; with one source it is a copy. */
static void
xor_portable(void *dst, void *const *srcs, unsigned nsrc,
             size_t off, size_t len)
{
  unsigned char *d = dst;
  size_t i = off, end = off + len;
  unsigned j;

  for (; end - i >= sizeof (uint64_t); i += sizeof (uint64_t)) {
    uint64_t acc, w;

    memcpy(&acc, (const unsigned char *)srcs[0] + i, sizeof acc);
    for (j = 1; j < nsrc; j++) {
      memcpy(&w, (const unsigned char *)srcs[j] + i, sizeof w);
      acc ^= w;
    }
    memcpy(d + i, &acc, sizeof acc);
  }
  for (; i < end; i++) {
    unsigned char acc = ((const unsigned char *)srcs[0])[i];

    for (j = 1; j < nsrc; j++)
      acc ^= ((const unsigned char *)srcs[j])[i];
    d[i] = acc;
  }
}

/* ISA-L over [OFF, OFF + LEN): every pointer plus OFF is 32-byte aligned,
 * LEN is a multiple of 32 and NSRC >= 2. */
static void
xor_isal(void *dst, void *const *srcs, unsigned nsrc, size_t off, size_t len)
{
  void *vects[RAID_MAX_MEMBERS + 1];
  unsigned j;

  while (len > 0) {
    size_t n = MIN(len, XOR_MAX_CHUNK);

    for (j = 0; j < nsrc; j++)
      vects[j] = (unsigned char *)srcs[j] + off;
    vects[nsrc] = (unsigned char *)dst + off;
    /* Fails only for fewer than two sources, excluded above; stay
     * correct even so. */
    if (xor_gen((int)nsrc + 1, (int)n, vects) != 0)
      xor_portable(dst, srcs, nsrc, off, n);
    off += n;
    len -= n;
  }
}

EXPORT int
raid_xor(void *dst, void *const *srcs, unsigned nsrc, size_t len)
{
  uintptr_t mis;
  size_t head, bulk;
  unsigned j;
  int r;

  r = xor_check_args("raid_xor", dst, srcs, nsrc);
  if (r < 0)
    return r;

  if (nsrc == 1) {
    if (dst != srcs[0])
      memcpy(dst, srcs[0], len);
    return 0;
  }

  /* Same offset from a 32-byte boundary everywhere, or no ISA-L. */
  mis = (uintptr_t)dst & (XOR_ALIGN - 1);
  for (j = 0; j < nsrc; j++)
    if (((uintptr_t)srcs[j] & (XOR_ALIGN - 1)) != mis) {
      xor_portable(dst, srcs, nsrc, 0, len);
      return 0;
    }

  head = MIN(len, (XOR_ALIGN - mis) & (XOR_ALIGN - 1));
  bulk = (len - head) & ~(size_t)(XOR_ALIGN - 1);
  xor_portable(dst, srcs, nsrc, 0, head);
  xor_isal(dst, srcs, nsrc, head, bulk);
  xor_portable(dst, srcs, nsrc, head + bulk, len - head - bulk);
  return 0;
}

EXPORT int
raid_xor_ref(void *dst, void *const *srcs, unsigned nsrc, size_t len)
{
  int r;

  r = xor_check_args("raid_xor_ref", dst, srcs, nsrc);
  if (r < 0)
    return r;
  xor_portable(dst, srcs, nsrc, 0, len);
  return 0;
}
