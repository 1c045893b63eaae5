/* Shared by the md v1.2 superblock suites (test-sb-format, test-sb-damage,
 * test-sb-mdadm): little-endian bytes and md's checksum written here
 * independently of the library, a RAID 5 superblock as mdadm 4.2 fills
 * it, random valid superblocks, and a field-by-field comparison
 * (tests/sb-bytes.c). */

#ifndef RAID_TEST_SB_BYTES_H
#define RAID_TEST_SB_BYTES_H

#include <stdint.h>

#include "internal.h"
#include "testlib.h"

#define WHO "/dev/test-member"
#define MEMBER_SECTORS (UINT64_C(64) << 11)     /* 64 MiB */

void le16_put(uint8_t *p, uint16_t v);
void le32_put(uint8_t *p, uint32_t v);
void le64_put(uint8_t *p, uint64_t v);
uint64_t le_get(const uint8_t *p, unsigned n);

/* Like md: copy, zero sb_csum in the copy, sum 32-bit words over 256 + 2 *
 * max_dev bytes (a trailing 16-bit word when odd), fold the carries. */
uint32_t ref_csum(const uint8_t *buf);
/* Recompute the checksum of a damaged buffer, for tests about a field. */
void fix_csum(uint8_t *buf);

/* The array's and the devices' UUIDs of sb_raid5(). */
extern const uint8_t uuid_a[16];
extern const uint8_t uuid_d[16];
/* A 4-member RAID 5 left-symmetric, 64 KiB chunks, filled as mdadm 4.2
 * fills a new member of 64 MiB with metadata 1.2: member DEV. */
void sb_raid5(struct raid_superblock *sb, unsigned dev);
/* Report the first field where A and B differ (sb_csum aside). */
void sb_assert_equal(const struct raid_superblock *a, const struct raid_superblock *b,
                     const char *what);
/* A random superblock that decode accepts. */
void sb_random(struct rng *r, struct raid_superblock *sb);

#endif
