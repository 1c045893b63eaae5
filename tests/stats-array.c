/* Helpers of the statistics suites (tests/stats-array.h). */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testlib.h"
#include "stats-array.h"

/* An array of N RAM members (each wrapped in a fault injector with
 * FAULT) at offset 0. */
void
sarray_new(struct sarray *s, int level, unsigned n, bool fault)
{
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_config cfg = {
    .name = "st", .level = level, .layout = RAID_LAYOUT_DEFAULT,
    .chunk_size = level == RAID_LEVEL_1 ? 0 : CHUNK, .raid_disks = n,
  };
  char name[32];
  unsigned i;
  int r;

  memset(s, 0, sizeof *s);
  for (i = 0; i < n; i++) {
    snprintf(name, sizeof name, "ram%u", i);
    ck_assert_int_eq(raid_member_new_ram(name, MEMBER_BYTES, &m[i]), 0);
    if (fault) {
      struct raid_member *inner = m[i];
      ck_assert_int_eq(raid_member_new_fault(inner, &m[i]), 0);
    }
  }
  r = raid_array_new(&cfg, m, &s->a);
  ck_assert_msg(r == 0, "raid_array_new: %s", raid_get_error());
}

void
sarray_free(struct sarray *s)
{
  raid_array_free(s->a);
}

/* Take a snapshot into S->st and S->ms. */
void
snap(struct sarray *s)
{
  int r = raid_array_stats(s->a, &s->st, s->ms, RAID_MAX_MEMBERS);

  ck_assert_msg(r >= 0, "raid_array_stats: %s", raid_get_error());
  s->n = r;
}

void
write_at(struct sarray *s, uint64_t off, size_t len)
{
  void *buf = test_alloc(len);
  int r;

  memset(buf, 0x5a, len);
  r = raid_pwrite(s->a, buf, len, off, 0);
  ck_assert_msg(r == 0, "write of %zu at %" PRIu64 ": %s", len, off, raid_get_error());
  test_free(buf);
}

void
read_at(struct sarray *s, uint64_t off, size_t len)
{
  void *buf = test_alloc(len);
  int r = raid_pread(s->a, buf, len, off);

  ck_assert_msg(r == 0, "read of %zu at %" PRIu64 ": %s", len, off, raid_get_error());
  test_free(buf);
}

uint64_t
sum_members(const struct sarray *s, size_t field)
{
  uint64_t t = 0;
  unsigned i;

  for (i = 0; i < s->n; i++)
    t += *(const uint64_t *)((const char *)&s->ms[i].io + field);
  return t;
}

void
rdone_cb(void *opaque, int res)
{
  struct rdone *d = opaque;

  d->done++;
  if (res < 0 && d->err == 0)
    d->err = res;
}
