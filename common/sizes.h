/* Sizes as users write and read them: "64K", "1M", "1.5G"; "63.00 MiB". */
#ifndef RAID_COMMON_SIZES_H
#define RAID_COMMON_SIZES_H

#include <stddef.h>
#include <stdint.h>

/* Parse a size: digits with an optional binary suffix (K, M, G, T, with or
 * without "iB", any case); a bare number is bytes.  Returns 0 or -EINVAL
 * (nothing parsed, trailing junk, overflow). */
int size_parse(const char *s, uint64_t *bytes);
/* The same as mdadm reads its sizes (--size, --bitmap-chunk,
 * --data-offset): a bare number is KiB. */
int size_parse_kib(const char *s, uint64_t *bytes);

/* "63.00 MiB" (binary units, two decimals; plain bytes under 1 KiB). */
void size_format(uint64_t bytes, char *buf, size_t len);

#endif
