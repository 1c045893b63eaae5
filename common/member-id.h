/* Whether two names are one member: raidctl checks it before it writes,
 * raidd before it opens a member another array may hold.  Names are not
 * enough (a symlink, a second path, "sim:" around a file), so both compare
 * what stat() says: the same block device (st_rdev), or the same file
 * (device and inode). */
#ifndef RAID_COMMON_MEMBER_ID_H
#define RAID_COMMON_MEMBER_ID_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
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

static inline bool
same_member(const struct stat *x, const struct stat *y)
{
  if (S_ISBLK(x->st_mode) || S_ISBLK(y->st_mode))
    return S_ISBLK(x->st_mode) && S_ISBLK(y->st_mode) && x->st_rdev == y->st_rdev;
  return x->st_dev == y->st_dev && x->st_ino == y->st_ino;
}

#endif
