/* md's names for levels, layouts, UUIDs and times, as mdadm prints them,
 * and its chunk sizes as mdadm reads them. */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "raidctl.h"
#include "sizes.h"

/* Indexed by md's layout number; mdadm has no short names for the last two. */
static const char *const raid5_layouts[] = {
  "left-asymmetric", "right-asymmetric", "left-symmetric", "right-symmetric",
  "parity-first", "parity-last",
};
#define NLAYOUTS5 (int)(sizeof raid5_layouts / sizeof raid5_layouts[0])

int
layout_parse(int level, const char *s, int *layout)
{
  static const char *const short5[] = { "la", "ra", "ls", "rs", "", "" };
  unsigned i;
  char *end;
  long n;

  if (level == RAID_LEVEL_5) {
    for (i = 0; i < (unsigned)NLAYOUTS5; i++)
      if (strcasecmp(s, raid5_layouts[i]) == 0 ||
          (short5[i][0] && strcasecmp(s, short5[i]) == 0)) {
        *layout = i;
        return 0;
      }
    return -EINVAL;
  }
  if (level == RAID_LEVEL_10) {
    /* mdadm's "n2", "near2" (far and offset layouts are not supported). */
    if (strncasecmp(s, "near", 4) == 0)
      s += 4;
    else if (s[0] == 'n' || s[0] == 'N')
      s += 1;
    else
      return -EINVAL;
    n = strtol(s, &end, 10);
    if (*s == '\0' || *end || n < 2 || n > 255)
      return -EINVAL;
    *layout = RAID_LAYOUT_RAID10_NEAR(n);
    return 0;
  }
  return -EINVAL;
}

void
layout_name(int level, int layout, char *buf, size_t len)
{
  if (level == RAID_LEVEL_5 && layout >= 0 && layout < NLAYOUTS5)
    snprintf(buf, len, "%s", raid5_layouts[layout]);
  else if (level == RAID_LEVEL_10)
    snprintf(buf, len, "near=%d", layout & 0xff);
  else
    snprintf(buf, len, "%d", layout);
}

/* --chunk SIZE in bytes, for VERB's usage errors. */
uint64_t
chunk_parse(const char *verb, const char *s)
{
  uint64_t chunk;

  if (size_parse(s, &chunk) < 0 || chunk == 0)
    usage_error(verb, "bad chunk size '%s' (e.g. 64K, 512K, 1M)", s);
  if (chunk < 1024 && strspn(s, "0123456789") == strlen(s))
    chunk <<= 10;               /* mdadm: a bare number is KiB */
  return chunk;
}

void
time_format(uint64_t md_time, char *buf, size_t len)
{
  time_t t = (time_t)(md_time & ((1ull << 40) - 1));
  struct tm tm;

  if (localtime_r(&t, &tm) == NULL || strftime(buf, len, "%a %b %e %H:%M:%S %Y", &tm) == 0)
    snprintf(buf, len, "%lld", (long long)t);
}
