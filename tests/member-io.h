/* Shared by the member back-ends' suites (test-member-file,
 * test-member-ram, test-member-fault): member I/O through a raid_queue with
 * the internal member API, checked round trips, the directories the files
 * live in, and main() (tests/member-io.c). */

#ifndef RAID_TEST_MEMBER_IO_H
#define RAID_TEST_MEMBER_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <check.h>

#include "internal.h"

#define MIB (1024 * 1024)

/* Where the tests put their files: a directory under /var/tmp (O_DIRECT)
 * and, if have_shm, one on tmpfs (buffered). */
extern char vartmp_dir[];
extern char shm_dir[];
extern bool have_shm;

struct tio {
  struct member_io io;
  int res;
  bool done;
  unsigned seq;                 /* completion order */
};

/* RAID_TEST_SCALE percent (default 100; valgrind runs use 10) of N. */
unsigned scaled(unsigned n);
/* Submit one member I/O; its completion sets T's res, done and seq. */
void tio_start(struct raid_queue *q, struct raid_member *m, struct tio *t,
               enum mop op, void *buf, uint64_t off, size_t len, unsigned flags);
void tio_wait(struct raid_queue *q, struct tio *t);
/* One member I/O to its end: its result. */
int mio(struct raid_queue *q, struct raid_member *m, enum mop op, void *buf,
        uint64_t off, size_t len, unsigned flags);
/* LEN pseudo-random bytes from SEED. */
void fill_pattern(uint8_t *p, size_t len, unsigned seed);
bool all_zero(const uint8_t *p, size_t len);
struct raid_queue *new_queue(unsigned entries);
void make_file(const char *path, uint64_t size);
double now_ms(void);
/* Every op on M, checked by reading back: BUF is used at ALIGN_OFF bytes
 * past a 4096-aligned address (0: aligned; 1: forces the bounce path
 * under O_DIRECT). */
void exercise(struct raid_queue *q, struct raid_member *m, size_t align_off);
/* O_DIRECT alignment /var/tmp's file system reports, 0 if unknown. */
unsigned dio_offset_align(const char *path);

/* Make the directories, run S, remove them (and any loop device left on
 * them): the suites' main(). */
int member_main(const char *program, Suite *s);

#endif
