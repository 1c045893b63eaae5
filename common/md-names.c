/* md's names for levels and UUIDs (md-names.h). */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "md-names.h"

const char *
level_name(int level)
{
  switch (level) {
  case 0: return "raid0";
  case 1: return "raid1";
  case 4: return "raid4";
  case 5: return "raid5";
  case 6: return "raid6";
  case 10: return "raid10";
  case -1: return "linear";
  default: return "unknown";
  }
}

int
level_parse(const char *s, int *level)
{
  static const struct { const char *name; int level; } names[] = {
    { "0", 0 }, { "raid0", 0 }, { "stripe", 0 },
    { "1", 1 }, { "raid1", 1 }, { "mirror", 1 },
    { "5", 5 }, { "raid5", 5 },
    { "10", 10 }, { "raid10", 10 },
  };
  size_t i;

  for (i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcasecmp(s, names[i].name) == 0) {
      *level = names[i].level;
      return 0;
    }
  return -EINVAL;
}

void
uuid_format(const uint8_t *u, char *buf)
{
  sprintf(buf, "%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x",
          u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
          u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

int
uuid_parse(const char *s, uint8_t *u)
{
  unsigned n = 0;
  int hi = -1, v;

  for (; *s; s++) {
    if (strchr(":.- ", *s))
      continue;
    if (!isxdigit((unsigned char)*s) || n == 16)
      return -EINVAL;
    v = isdigit((unsigned char)*s) ? *s - '0' : tolower((unsigned char)*s) - 'a' + 10;
    if (hi < 0)
      hi = v;
    else {
      u[n++] = (uint8_t)(hi << 4 | v);
      hi = -1;
    }
  }
  return n == 16 && hi < 0 ? 0 : -EINVAL;
}
