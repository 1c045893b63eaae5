/* Shared helpers for libraid's Check tests (see testlib.h): md's layouts.
 * The configurations the suites loop over, an independent reference of
 * where md puts every chunk, and the placement check that reads the
 * members directly.
 *
 * The md reference here is deliberately written from md's formulas
 * (drivers/md/raid0.c, raid5.c raid5_compute_sector(), raid10.c
 * __raid10_find_phys() and enough()) and shares no code with lib/, so a
 * mistake in lib/geometry.c cannot hide behind the same mistake here.
 */
#include <config.h>

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "testlib.h"
#include "testlib-private.h"

/* ---- configurations and the md reference --------------------------------------------- */

const char *
layout_name(int level, int layout)
{
  if (level == RAID_LEVEL_5) {
    switch (layout) {
    case RAID_LAYOUT_DEFAULT: return "default-layout";
    case RAID_LAYOUT_LEFT_ASYMMETRIC: return "left-asymmetric";
    case RAID_LAYOUT_RIGHT_ASYMMETRIC: return "right-asymmetric";
    case RAID_LAYOUT_LEFT_SYMMETRIC: return "left-symmetric";
    case RAID_LAYOUT_RIGHT_SYMMETRIC: return "right-symmetric";
    case RAID_LAYOUT_PARITY_FIRST: return "parity-first";
    case RAID_LAYOUT_PARITY_LAST: return "parity-last";
    }
  }
  if (level == RAID_LEVEL_10) {
    static _Thread_local char buf[16];
    if (layout == RAID_LAYOUT_DEFAULT)
      return "default-layout";
    snprintf(buf, sizeof buf, "near-%d", layout & 0xff);
    return buf;
  }
  return "";
}

static void
size_str(uint64_t v, char *buf, size_t len)
{
  if (v && v % MiB == 0)
    snprintf(buf, len, "%" PRIu64 "M", v / MiB);
  else if (v >= MiB && (v % MiB) % KiB == 0)
    snprintf(buf, len, "%" PRIu64 "M+%" PRIu64 "K", v / MiB, (v % MiB) / KiB);
  else if (v && v % KiB == 0)
    snprintf(buf, len, "%" PRIu64 "K", v / KiB);
  else
    snprintf(buf, len, "%" PRIu64, v);
}

const char *
tconf_str(const struct tconf *c, char *buf, size_t len)
{
  char chunk[32], off[32], mem[32];

  size_str(c->chunk, chunk, sizeof chunk);
  size_str(c->data_offset, off, sizeof off);
  size_str(c->member_bytes, mem, sizeof mem);
  snprintf(buf, len, "raid%d %s disks=%u chunk=%s data_offset=%s member=%s",
           c->level, layout_name(c->level, c->layout), c->disks, chunk, off, mem);
  return buf;
}

int
tconf_layout(const struct tconf *c)
{
  if (c->layout != RAID_LAYOUT_DEFAULT)
    return c->layout;
  if (c->level == RAID_LEVEL_5)
    return RAID_LAYOUT_LEFT_SYMMETRIC;
  if (c->level == RAID_LEVEL_10)
    return RAID_LAYOUT_RAID10_NEAR(2);
  return c->layout;
}

uint32_t
tconf_chunk(const struct tconf *c)
{
  return c->chunk ? c->chunk : RAID_CHUNK_DEFAULT;
}

unsigned
tconf_copies(const struct tconf *c)
{
  if (c->level == RAID_LEVEL_1)
    return c->disks;
  if (c->level == RAID_LEVEL_10)
    return tconf_layout(c) & 0xff;
  return 1;
}

uint64_t
tconf_member_size(const struct tconf *c, unsigned round)
{
  uint64_t usable = c->member_bytes - c->data_offset;

  if (c->level == RAID_LEVEL_1)
    return usable / round * round;
  return usable / tconf_chunk(c) * tconf_chunk(c);
}

uint64_t
tconf_array_size(const struct tconf *c, uint64_t ms)
{
  uint64_t chunk = tconf_chunk(c);

  switch (c->level) {
  case RAID_LEVEL_0: return ms * c->disks;
  case RAID_LEVEL_1: return ms;
  case RAID_LEVEL_5: return ms * (c->disks - 1);
  case RAID_LEVEL_10: return (ms / chunk) * c->disks / tconf_copies(c) * chunk;
  }
  return 0;
}

bool
tconf_survives(const struct tconf *c, uint64_t lost)
{
  unsigned n = c->disks, i, lost_count = 0;

  for (i = 0; i < n; i++)
    lost_count += (lost >> i) & 1;
  switch (c->level) {
  case RAID_LEVEL_0: return lost_count == 0;
  case RAID_LEVEL_1: return lost_count < n;
  case RAID_LEVEL_5: return lost_count <= 1;
  case RAID_LEVEL_10: {
    /* md's enough(): every group of COPIES consecutive slots, starting at
     * multiples of COPIES (mod N), keeps a member. */
    unsigned copies = tconf_copies(c), first = 0;
    do {
      unsigned k, cnt = 0, this = first;
      for (k = 0; k < copies; k++) {
        if (!((lost >> this) & 1))
          cnt++;
        this = (this + 1) % n;
      }
      if (cnt == 0)
        return false;
      first = (first + copies) % n;
    } while (first != 0);
    return true;
  }
  }
  return false;
}

void
ref_raid0_map(unsigned disks, unsigned chunk_sectors, uint64_t sector,
              unsigned *disk, uint64_t *member_sector)
{
  uint64_t chunk = sector / chunk_sectors;

  *disk = (unsigned)(chunk % disks);
  *member_sector = (chunk / disks) * chunk_sectors + sector % chunk_sectors;
}

void
ref_raid5_map(int layout, unsigned disks, unsigned chunk_sectors,
              uint64_t sector, unsigned *dd, unsigned *pd,
              uint64_t *stripe, uint64_t *member_sector)
{
  unsigned data_disks = disks - 1;
  uint64_t chunk_number = sector / chunk_sectors;
  uint64_t chunk_offset = sector % chunk_sectors;
  uint64_t s = chunk_number / data_disks;
  unsigned d = (unsigned)(chunk_number % data_disks);
  unsigned p = 0;

  switch (layout) {
  case RAID_LAYOUT_LEFT_ASYMMETRIC:
    p = data_disks - (unsigned)(s % disks);
    if (d >= p)
      d++;
    break;
  case RAID_LAYOUT_RIGHT_ASYMMETRIC:
    p = (unsigned)(s % disks);
    if (d >= p)
      d++;
    break;
  case RAID_LAYOUT_LEFT_SYMMETRIC:
    p = data_disks - (unsigned)(s % disks);
    d = (p + 1 + d) % disks;
    break;
  case RAID_LAYOUT_RIGHT_SYMMETRIC:
    p = (unsigned)(s % disks);
    d = (p + 1 + d) % disks;
    break;
  case RAID_LAYOUT_PARITY_FIRST:        /* P D0 D1 .. in every row */
    p = 0;
    d = d + 1;
    break;
  case RAID_LAYOUT_PARITY_LAST:         /* D0 D1 .. P in every row */
    p = data_disks;
    break;
  default:
    ck_abort_msg("ref_raid5_map: layout %d", layout);
  }
  *dd = d;
  *pd = p;
  *stripe = s;
  *member_sector = s * chunk_sectors + chunk_offset;
}

void
ref_raid10_map(unsigned disks, unsigned copies, unsigned chunk_sectors,
               uint64_t sector, unsigned k, unsigned *disk,
               uint64_t *member_sector)
{
  uint64_t chunk = sector / chunk_sectors;
  uint64_t slot = chunk * copies + k;

  *disk = (unsigned)(slot % disks);
  *member_sector = (slot / disks) * chunk_sectors + sector % chunk_sectors;
}

unsigned
ref_locate(const struct tconf *c, uint64_t sector, unsigned *disks,
           uint64_t *member_sectors)
{
  unsigned cs = tconf_chunk(c) / 512, k, pd;
  uint64_t stripe;

  switch (c->level) {
  case RAID_LEVEL_0:
    ref_raid0_map(c->disks, cs, sector, &disks[0], &member_sectors[0]);
    return 1;
  case RAID_LEVEL_1:
    for (k = 0; k < c->disks; k++) {
      disks[k] = k;
      member_sectors[k] = sector;
    }
    return c->disks;
  case RAID_LEVEL_5:
    ref_raid5_map(tconf_layout(c), c->disks, cs, sector, &disks[0], &pd,
                  &stripe, &member_sectors[0]);
    return 1;
  case RAID_LEVEL_10:
    for (k = 0; k < tconf_copies(c); k++)
      ref_raid10_map(c->disks, tconf_copies(c), cs, sector, k, &disks[k],
                     &member_sectors[k]);
    return tconf_copies(c);
  }
  return 0;
}

/* ---- placement --------------------------------------------------------------------------- */

/* Fail with what member DISK holds at data offset MOFF instead of the
 * expected bytes. */
static void
placement_fail(const struct tconf *c, const char *desc, const char *const *names,
               const char *what, unsigned disk, uint64_t moff,
               const uint8_t *got, const uint8_t *want, size_t len, bool parity)
{
  size_t i, j;
  char g[128], w[128];

  for (i = 0; i + 512 <= len && memcmp(got + i, want + i, 512) == 0; i += 512)
    ;
  for (j = i; j < len && got[j] == want[j]; j++)
    ;
  if (parity)
    snprintf(g, sizeof g, "byte %02x", got[j]);
  else
    tag_str(got + i, g, sizeof g);
  if (parity)
    snprintf(w, sizeof w, "%02x, the XOR of the stripe's data", want[j]);
  else
    tag_str(want + i, w, sizeof w);
  ck_abort_msg("%s: placement: member %u (%s) byte %" PRIu64 " (%s; first difference "
               "at byte %zu of the sector): holds %s, md's layout says %s",
               desc, disk, names[disk], c->data_offset + moff + j, what,
               j - i, g, w);
}

static void
check_guard(struct tarray *t, unsigned disk, const uint8_t *mem, uint64_t off,
            uint64_t end)
{
  uint8_t *want;

  if (end <= off)
    return;
  want = test_alloc(end - off);
  guard_fill(want, disk, off, end - off);
  if (memcmp(mem + off, want, end - off) != 0) {
    uint64_t i;
    char g[128];
    for (i = 0; memcmp(mem + off + i, want + i, 512) == 0; i += 512)
      ;
    ck_abort_msg("%s: member %u (%s) byte %" PRIu64 " outside the data area "
                 "[%" PRIu64 ", %" PRIu64 ") was overwritten: holds %s",
                 t->desc, disk, t->tm.path[disk], off + i, t->c.data_offset,
                 t->c.data_offset + t->member_size, tag_str(mem + off + i, g, sizeof g));
  }
  test_free(want);
}

void
tcheck_layout(const struct tconf *c, const char *desc, const char *const *names,
              const uint8_t *const *data, uint64_t member_size, const uint8_t *shadow,
              uint64_t size)
{
  unsigned n = c->disks, i, k;
  uint64_t chunk = tconf_chunk(c), cs = chunk / 512, ci;

  switch (c->level) {
  case RAID_LEVEL_1:
    /* Every member holds the whole array at the same place. */
    for (i = 0; i < n; i++)
      if (data[i] && memcmp(data[i], shadow, size) != 0)
        placement_fail(c, desc, names, "mirror", i, 0, data[i], shadow, size, false);
    break;

  case RAID_LEVEL_0:
  case RAID_LEVEL_10:
    for (ci = 0; ci < size / chunk; ci++) {
      unsigned disks[RAID_MAX_MEMBERS];
      uint64_t msec[RAID_MAX_MEMBERS];
      unsigned copies = ref_locate(c, ci * cs, disks, msec);
      for (k = 0; k < copies; k++) {
        const uint8_t *got;
        if (data[disks[k]] == NULL)
          continue;
        got = data[disks[k]] + msec[k] * 512;
        if (memcmp(got, shadow + ci * chunk, chunk) != 0) {
          char what[64];
          snprintf(what, sizeof what, "copy %u of array chunk %" PRIu64, k, ci);
          placement_fail(c, desc, names, what, disks[k], msec[k] * 512, got,
                         shadow + ci * chunk, chunk, false);
        }
      }
    }
    break;

  case RAID_LEVEL_5: {
    uint64_t rows = member_size / chunk, row;
    uint8_t *parity = test_alloc(chunk);
    for (row = 0; row < rows; row++) {
      unsigned pd = 0;
      memset(parity, 0, chunk);
      for (k = 0; k < n - 1; k++) {
        uint64_t cn = row * (n - 1) + k, stripe, msec, j;
        const uint8_t *want = shadow + cn * chunk;
        unsigned dd;
        ref_raid5_map(tconf_layout(c), n, cs, cn * cs, &dd, &pd, &stripe, &msec);
        tassert(stripe == row && msec == row * cs, "reference map is inconsistent");
        for (j = 0; j < chunk; j += 8) {
          uint64_t a, b;
          memcpy(&a, parity + j, 8);
          memcpy(&b, want + j, 8);
          a ^= b;
          memcpy(parity + j, &a, 8);
        }
        if (data[dd] && memcmp(data[dd] + msec * 512, want, chunk) != 0) {
          char what[64];
          snprintf(what, sizeof what, "data chunk %u of stripe %" PRIu64, k, row);
          placement_fail(c, desc, names, what, dd, msec * 512, data[dd] + msec * 512,
                         want, chunk, false);
        }
      }
      if (data[pd] && memcmp(data[pd] + row * chunk, parity, chunk) != 0) {
        char what[64];
        snprintf(what, sizeof what, "parity of stripe %" PRIu64, row);
        placement_fail(c, desc, names, what, pd, row * chunk, data[pd] + row * chunk,
                       parity, chunk, true);
      }
    }
    test_free(parity);
    break;
  }
  }
}

void
tarray_check_placement(struct tarray *t)
{
  const struct tconf *c = &t->c;
  unsigned n = c->disks, i;
  uint8_t *mem[RAID_MAX_MEMBERS] = { NULL };
  const uint8_t *data[RAID_MAX_MEMBERS] = { NULL };
  uint64_t mapped = 0;
  int r;

  if (t->a && !raid_array_is_failed(t->a)) {
    r = raid_flush(t->a);
    tassert(r == 0, "%s: raid_flush: %d %s", t->desc, r, raid_get_error());
  }
  test_verbose("flushed");
  for (i = 0; i < n; i++) {
    int fd;
    void *p;
    if ((t->lost >> i) & 1)
      continue;
    /* Mapped, not read: no copy, no buffer to fault in.  O_DIRECT writes
     * invalidate the page cache, but an invalidation that races with
     * readahead (or a loop device number reused by an earlier check) can
     * leave stale clean pages behind: drop them first, so the mapping
     * shows what is on the member. */
    fd = open(t->tm.path[i], O_RDONLY | O_CLOEXEC);
    tassert(fd >= 0, "open %s: %m", t->tm.path[i]);
    drop_cache(fd);
    p = mmap(NULL, t->tm.size[i], PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      mem[i] = test_alloc(t->tm.size[i]);
      read_all(t->tm.path[i], fd, mem[i], t->tm.size[i], 0);
    }
    else {
      madvise(p, t->tm.size[i], MADV_SEQUENTIAL | MADV_WILLNEED);
      mem[i] = p;
      mapped |= UINT64_C(1) << i;
    }
    close(fd);
    if (!(t->flags & TA_NO_PATTERN)) {
      check_guard(t, i, mem[i], 0, c->data_offset);
      check_guard(t, i, mem[i], c->data_offset + tconf_member_size(c, 512),
                  t->tm.size[i]);
    }
  }
  for (i = 0; i < n; i++)
    data[i] = mem[i] ? mem[i] + c->data_offset : NULL;
  test_verbose("members read");
  tcheck_layout(c, t->desc, (const char *const *)t->tm.path, data, t->member_size,
                t->shadow, t->size);
  for (i = 0; i < n; i++) {
    if ((mapped >> i) & 1)
      munmap(mem[i], t->tm.size[i]);
    else
      test_free(mem[i]);
  }
  test_verbose("placement checked");
}
