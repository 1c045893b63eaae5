/* md's names for levels and array UUIDs, as mdadm writes and reads them:
 * for raidctl's output and the configuration file (conf.c). */
#ifndef RAID_COMMON_MD_NAMES_H
#define RAID_COMMON_MD_NAMES_H

#include <stdint.h>

/* "raid5" for 5, "linear" for -1, "unknown" for what md does not know. */
const char *level_name(int level);
/* "0", "raid0", "stripe", "1", "raid1", "mirror", "5", "raid5", "10",
 * "raid10" (any case).  0 or -EINVAL. */
int level_parse(const char *s, int *level);
/* mdadm's form, 8:8:8:8 hex digits; BUF holds at least 36 bytes. */
void uuid_format(const uint8_t *u, char *buf);
/* Read a UUID as mdadm does: 32 hex digits, in any grouping by ':', '.',
 * '-' or ' '.  0 or -EINVAL. */
int uuid_parse(const char *s, uint8_t *u);

#endif
