/* Sizes as users write and read them. */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sizes.h"

/* size_parse() with a bare number in units of 2^BARE bytes. */
static int
parse(const char *s, uint64_t *bytes, unsigned bare)
{
  static const char units[] = "KMGT";
  unsigned long long v;
  const char *u;
  char *end;
  unsigned shift = bare;

  if (s == NULL || !isdigit((unsigned char)*s))
    return -EINVAL;
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno)
    return -EINVAL;
  if (*end) {
    u = strchr(units, toupper((unsigned char)*end));
    if (u == NULL)
      return -EINVAL;
    shift = 10 * (unsigned)(u - units + 1);
    end++;
    if (strcasecmp(end, "iB") == 0 || strcasecmp(end, "B") == 0)
      end += strlen(end);
    if (*end)
      return -EINVAL;
  }
  if (shift && v > (UINT64_MAX >> shift))
    return -EINVAL;
  *bytes = (uint64_t)v << shift;
  return 0;
}

int
size_parse(const char *s, uint64_t *bytes)
{
  return parse(s, bytes, 0);
}

int
size_parse_kib(const char *s, uint64_t *bytes)
{
  return parse(s, bytes, 10);
}

void
size_format(uint64_t bytes, char *buf, size_t len)
{
  static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
  double v = (double)bytes;
  unsigned i = 0;

  if (bytes < 1024) {
    snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    return;
  }
  v /= 1024;
  while (v >= 1024 && i + 1 < sizeof units / sizeof units[0]) {
    v /= 1024;
    i++;
  }
  snprintf(buf, len, "%.2f %s", v, units[i]);
}
