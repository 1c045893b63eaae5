/* Reading a member's superblock wherever a metadata version puts it (as
 * mdadm's load_super1() with no version given): the candidates at 1.2's,
 * 1.1's and 1.0's places, and which of two valid ones is the member's;
 * and erasing the one read (mdadm --zero-superblock). */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/time.h>

#include "internal.h"
#include "md.h"


/* What one place of a member holds. */
enum place { P_NONE, P_VALID, P_REFUSED, P_BAD_CSUM };

struct candidate {
  enum place what;
  struct raid_superblock sb;
  char err[512];                /* why refused */
};

/* Read and decode the superblock VERSION puts on MEMBER into C: 0, or the
 * read's error. */
static int
read_version(struct raid_member *member, int version, uint8_t *buf, struct candidate *c)
{
  uint64_t sectors = member->size >> SECTOR_SHIFT;
  uint64_t at = raid_superblock_offset(version, sectors);
  int r;

  c->what = P_NONE;
  if (at == UINT64_MAX)
    return 0;
  r = member_pio(member, false, buf, RAID_SB_BYTES, at << SECTOR_SHIFT);
  if (r < 0)
    return r;
  if (buf[0] != (RAID_SB_MAGIC & 0xff) || buf[1] != ((RAID_SB_MAGIC >> 8) & 0xff) ||
      buf[2] != ((RAID_SB_MAGIC >> 16) & 0xff) || buf[3] != RAID_SB_MAGIC >> 24)
    return 0;
  if (raid_superblock_decode(buf, at, sectors, member->name, &c->sb) == 0) {
    c->what = P_VALID;
    return 0;
  }
  snprintf(c->err, sizeof c->err, "%s", raid_get_error());
  c->what = raid_superblock_csum(buf) == c->sb.sb_csum ? P_REFUSED : P_BAD_CSUM;
  return 0;
}

/* md's ctime: seconds in the low 40 bits, microseconds above. */
static bool
created_later(uint64_t x, uint64_t y)
{
  uint64_t xs = x & ((UINT64_C(1) << 40) - 1), ys = y & ((UINT64_C(1) << 40) - 1);

  return xs != ys ? xs > ys : x >> 40 > y >> 40;
}

/* Does X's data area hold the place of Y's superblock? */
static bool
holds(const struct raid_superblock *x, const struct raid_superblock *y)
{
  return y->super_offset >= x->data_offset &&
    y->super_offset - x->data_offset < x->data_size;
}

/* Which of two superblocks found on one member is the member's: the one
 * whose data area holds the other (the other is then data: an array
 * stacked on this one, or an old superblock the new data covers), else
 * the one created last, as mdadm's load_super1() with no version given. */
static bool
better(const struct raid_superblock *x, const struct raid_superblock *y)
{
  bool xy = holds(x, y), yx = holds(y, x);

  if (xy != yx)
    return xy;
  return created_later(x->ctime, y->ctime);
}

EXPORT int
raid_superblock_read(struct raid_member *member, struct raid_superblock *sb)
{
  static const int order[] = { RAID_METADATA_1_2, RAID_METADATA_1_1, RAID_METADATA_1_0 };
  uint8_t *buf = raid_buf_alloc(RAID_SB_BYTES);
  struct candidate *c = calloc(ARRAY_SIZE(order), sizeof *c);
  int best = -1, bad = -1, r = 0, read_err = 0;
  unsigned i;

  if (buf == NULL || c == NULL) {
    r = set_error(ENOMEM, "member %s: out of memory", member->name);
    goto out;
  }
  if (member->size < (uint64_t)3 * 8 << SECTOR_SHIFT) {
    r = set_error(EINVAL, "member %s: too small (%" PRIu64 " bytes) to hold "
                  "an md superblock", member->name, member->size);
    goto out;
  }
  for (i = 0; i < ARRAY_SIZE(order); i++) {
    r = read_version(member, order[i], buf, &c[i]);
    if (r < 0 && read_err == 0) {
      read_err = r;
      snprintf(c[i].err, sizeof c[i].err, "%s", raid_get_error());
    }
    if (c[i].what == P_VALID || c[i].what == P_REFUSED) {
      if (best < 0 || better(&c[i].sb, &c[best].sb))
        best = (int)i;
    }
    else if (c[i].what == P_BAD_CSUM && bad < 0)
      bad = (int)i;
  }
  if (best >= 0) {
    /* Found: what lies elsewhere (unreadable or not) does not matter. */
    *sb = c[best].sb;
    r = c[best].what == P_VALID ? 0 : set_error(EINVAL, "%s", c[best].err);
  }
  else if (bad >= 0) {
    *sb = c[bad].sb;            /* for display only */
    r = set_error(EINVAL, "%s", c[bad].err);
  }
  else if (read_err) {
    for (i = 0; i < ARRAY_SIZE(order) && c[i].err[0] == '\0'; i++)
      ;
    r = set_error(-read_err, "%s", c[i].err);
  }
  else
    r = set_error(EINVAL, "member %s: no md superblock (none at sector %u for "
                  "metadata 1.2, %u for 1.1 or %" PRIu64 " for 1.0)", member->name,
                  RAID_SB_OFFSET_1_2, RAID_SB_OFFSET_1_1,
                  raid_superblock_offset(RAID_METADATA_1_0, member->size >> SECTOR_SHIFT));
 out:
  free(c);
  raid_buf_free(buf);
  return r;
}

EXPORT int
raid_superblock_read_path(const char *path, unsigned flags, struct raid_superblock *sb)
{
  struct raid_member *m;
  int r;

  if (flags & ~RAID_MEMBER_BUFFERED)
    return set_error(EINVAL, "member %s: superblock read flags 0x%x: only "
                     "RAID_MEMBER_BUFFERED is allowed", path, flags);
  r = raid_member_open(path, RAID_MEMBER_READONLY | flags, &m);
  if (r < 0)
    return r;
  r = raid_superblock_read(m, sb);
  raid_member_close(m);
  return r;
}

EXPORT int
raid_superblock_erase(struct raid_member *member, const struct raid_superblock *sb)
{
  static const uint8_t zeroes[RAID_SB_BYTES];
  uint64_t at = sb->super_offset << SECTOR_SHIFT;

  if (at + RAID_SB_BYTES > member->size)
    return set_error(EINVAL, "member %s: no superblock can lie at byte %" PRIu64
                     " of %" PRIu64, member->name, at, member->size);
  /* member_pio() copies the buffer to one of its own before it writes. */
  return member_pio(member, true, (void *)zeroes, RAID_SB_BYTES, at);
}
