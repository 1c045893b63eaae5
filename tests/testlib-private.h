/* Between the parts of the Check tests' helper library (testlib.c,
 * testlib-md.c, testlib-array.c); the tests use testlib.h. */

#ifndef RAID_TESTLIB_PRIVATE_H
#define RAID_TESTLIB_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

/* The guard pattern of member MEMBER's bytes [OFF, OFF + LEN), written
 * around the data so that a stray write shows (testlib-array.c). */
void guard_fill(uint8_t *buf, unsigned member, uint64_t off, size_t len);
/* Drop FD's cached pages, so that reads see the member (testlib-array.c). */
void drop_cache(int fd);
/* LEN bytes of PATH (open as FD) at OFF, or the test fails (testlib-array.c). */
void read_all(const char *path, int fd, void *buf, size_t len, uint64_t off);

#endif
