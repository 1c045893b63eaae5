/* Whether two names are one member: raidctl checks it before it writes,
 * raidd before it opens a member another array may hold.  Names are not
 * enough (a symlink, a second path, "sim:" around a file), so both compare
 * what stat() says: the same block device (st_rdev), or the same file
 * (device and inode).  A member spec's stat() is conf/member-stat.h's
 * stat_member(): it asks libraid for the file behind the spec, which
 * common/ (linked into libraid) must not. */
#ifndef RAID_COMMON_MEMBER_ID_H
#define RAID_COMMON_MEMBER_ID_H

#include <stdbool.h>
#include <sys/stat.h>

static inline bool
same_member(const struct stat *x, const struct stat *y)
{
  if (S_ISBLK(x->st_mode) || S_ISBLK(y->st_mode))
    return S_ISBLK(x->st_mode) && S_ISBLK(y->st_mode) && x->st_rdev == y->st_rdev;
  return x->st_dev == y->st_dev && x->st_ino == y->st_ino;
}

#endif
