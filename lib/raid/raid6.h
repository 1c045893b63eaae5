/* RAID 6's syndromes, P and Q, as md computes them (raid/raid6.c): what
 * the raid/ floor's RAID 6 personality and the tests share.
 *
 * A syndrome set is NDATA data blocks D_0..D_{NDATA-1}, in md's syndrome
 * order (the order md's raid6 hands them to gen_syndrome(): the
 * personality's layout decides which member holds D_i), then P and Q:
 *   P = D_0 ^ D_1 ^ ... ^ D_{NDATA-1}
 *   Q = g^0·D_0 ^ g^1·D_1 ^ ... ^ g^{NDATA-1}·D_{NDATA-1}
 * in GF(2^8) with md's polynomial x^8+x^4+x^3+x^2+1 (0x11d) and generator
 * g = 2, byte by byte.  ISA-L's pq_gen() computes the same (its own
 * reference is md's), its GF routines the multiplications of recovery.
 *
 * BLOCKS[] below is the set in that order: BLOCKS[0..NDATA-1] the data,
 * BLOCKS[NDATA] P, BLOCKS[NDATA + 1] Q, each LEN bytes. */
#ifndef RAID_RAID6_H
#define RAID_RAID6_H

#include <stddef.h>

/* The most data blocks in a set: md's raid6 syndrome takes up to 253. */
#define RAID6_MAX_DATA 253u

/* P and Q (BLOCKS[NDATA], BLOCKS[NDATA + 1]) from the data: with ISA-L
 * when every buffer shares its offset from a 32-byte boundary and NDATA
 * >= 2, else portably.  0, or set_error() (bad arguments). */
int raid6_gen(void *const *blocks, unsigned ndata, size_t len);
/* The portable reference twin of raid6_gen(). */
int raid6_gen_ref(void *const *blocks, unsigned ndata, size_t len);

/* Rewrite blocks FAILA and FAILB (indices into BLOCKS; FAILB -1 for one
 * block; FAILA != FAILB) from the others: any one or two of the data, P
 * and Q, as md's raid6 recovers them (raid6_2data_recov(),
 * raid6_datap_recov()).  SCRATCH: 2 * LEN bytes, RAID_BUF_ALIGN-aligned.
 * 0, or set_error(). */
int raid6_recover(void *const *blocks, unsigned ndata, size_t len, int faila, int failb,
                  void *scratch);

#endif
