/* Shared by the statistics suites (test-io-stats, test-raid5-merge):
 * arrays of RAM members (optionally behind fault injectors) with a
 * snapshot of their statistics, plain reads and writes, and a completion
 * counter (tests/stats-array.c). */

#ifndef RAID_TEST_STATS_ARRAY_H
#define RAID_TEST_STATS_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "testlib.h"

#define CHUNK (64 * KiB)
#define MEMBER_BYTES (8 * MiB)

struct sarray {
  struct raid_array *a;
  struct raid_member_stats ms[RAID_MAX_MEMBERS];
  struct raid_array_stats st;
  unsigned n;
};

/* An array of N RAM members (each wrapped in a fault injector with
 * FAULT) at offset 0. */
void sarray_new(struct sarray *s, int level, unsigned n, bool fault);
void sarray_free(struct sarray *s);
/* Take a snapshot into S->st and S->ms. */
void snap(struct sarray *s);
void write_at(struct sarray *s, uint64_t off, size_t len);
void read_at(struct sarray *s, uint64_t off, size_t len);
/* The sum over the members of the snapshot of one raid_io_stats field. */
uint64_t sum_members(const struct sarray *s, size_t field);
#define SUM(s, f) sum_members(s, offsetof(struct raid_io_stats, f))

/* Completions counted, the first error kept (rdone_cb's opaque). */
struct rdone {
  unsigned done;
  int err;
};

void rdone_cb(void *opaque, int res);

#endif
