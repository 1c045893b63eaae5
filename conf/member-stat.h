/* stat() of a member spec, for raidctl and raidd to compare members with
 * same_member() (common/member-id.h).  Here, not in common/: it calls
 * libraid, and common/ is linked into libraid. */
#ifndef RAID_CONF_MEMBER_STAT_H
#define RAID_CONF_MEMBER_STAT_H

#include <errno.h>
#include <limits.h>
#include <sys/stat.h>

#include <raid/raid.h>

/* stat() the file or device behind member spec SPEC (a "sim:" spec's
 * backing file).  0 or -1 (errno set). */
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

#endif
