/* What raidctl, raidd and conf/ know of a member spec without opening it:
 * stat() of its file, to compare members with same_member()
 * (common/member-id.h), and whether it is a remote member (an NBD URI,
 * which has no file: it is compared by its string, as given).  Here, not
 * in common/: it calls libraid, and common/ is linked into libraid. */
#ifndef RAID_CONF_MEMBER_STAT_H
#define RAID_CONF_MEMBER_STAT_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <raid/raid.h>

/* stat() the file or device behind member spec SPEC (a "sim:" spec's
 * backing file).  0 or -1 (errno set; EINVAL for a remote member, which
 * has none). */
static inline int
stat_member(const char *spec, struct stat *st)
{
  char file[PATH_MAX];

  if (raid_member_spec_file(spec, file, sizeof file) < 0) {
    errno = EINVAL;
    return -1;
  }
  return stat(file, st);
}

/* SPEC is written as a URI, "SCHEME://...", whatever the scheme. */
static inline bool
member_spec_is_uri(const char *spec)
{
  size_t n = strspn(spec, "abcdefghijklmnopqrstuvwxyz"
                    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");

  return n > 0 && strncmp(spec + n, "://", 3) == 0;
}

/* SPEC is a remote member: a URI of one of libnbd's schemes. */
static inline bool
member_spec_remote(const char *spec)
{
  return raid_member_spec_is_remote(spec) != 0;
}

/* A URI that names no member raidd can open: its scheme is not one of
 * libnbd's.  0 (a path, a "sim:" spec or an NBD URI), or -1 with why in
 * BUF ("member http://x/y: unknown URI scheme 'http' ..."). */
static inline int
member_spec_check_uri(const char *spec, char *buf, size_t len)
{
  if (!member_spec_is_uri(spec) || member_spec_remote(spec))
    return 0;
  snprintf(buf, len, "member %s: unknown URI scheme '%.*s': a remote member is "
           "nbd://HOST[:PORT]/EXPORT, nbds://..., nbd+unix:///EXPORT?socket=PATH "
           "or nbds+unix://...", spec, (int)strcspn(spec, ":"), spec);
  return -1;
}

/* Two specs for one remote member: by their strings, as given. */
static inline bool
same_remote(const char *x, const char *y)
{
  return member_spec_remote(x) && strcmp(x, y) == 0;
}

#endif
