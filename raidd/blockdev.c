/* The block devices raidd gives arrays (/dev/nbdN from nbd-attach.c,
 * /dev/ublkbN from ublk.c): whether one is in use.
 *
 * "In use" is what the kernel says to an exclusive open: a mounted file
 * system, md, device-mapper or a program like mkfs holds the device
 * exclusively, and O_EXCL then fails with EBUSY.  A reader with a plain
 * open (dd, blkid) does not count, as it does not for md's own stop. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "raidd.h"

bool
blockdev_in_use(const char *path)
{
  int fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC | O_NONBLOCK);

  if (fd >= 0) {
    close(fd);
    return false;
  }
  return errno == EBUSY;
}
