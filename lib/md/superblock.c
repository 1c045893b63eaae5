/* md version-1 superblocks (1.0, 1.1, 1.2): encode, decode, checksum.
 *
 * The format is Linux md's version-1 superblock (struct mdp_superblock_1
 * in the kernel's include/uapi/linux/raid/md_p.h), so that blkid, mdadm
 * and the kernel's md read our members and we read theirs:
 *
 *   - 256 bytes of fixed fields, every number little-endian, at fixed
 *     offsets (the table below), then a 16-bit little-endian role per
 *     device number, dev_roles[0 .. max_dev-1]: 0..raid_disks-1 is the
 *     slot the device fills, 0xffff a spare, 0xfffe faulty, 0xfffd a
 *     journal.  dev_number is the device's own index into that table.
 *   - Sizes and offsets are in 512-byte sectors, whatever the device's
 *     block size: data_offset and super_offset from the member's start,
 *     data_size from data_offset, size (the part of each member the array
 *     uses) likewise, recovery_offset and resync_offset from data_offset.
 *     chunksize is in sectors too.  ctime and utime keep seconds in the
 *     low 40 bits (md puts microseconds or 0 in the top 24).
 *   - Metadata 1.2 puts it 8 sectors (4 KiB) from the member's start,
 *     1.1 at sector 0, 1.0 16 to 23 sectors before the end (the end less 8
 *     KiB, rounded down to 4 KiB); the kernel reads RAID_SB_BYTES but
 *     only 256 + 2 * max_dev bytes are the superblock.  What lies between
 *     dev_roles[max_dev] and 4096 is nobody's: mdadm fills it with 0xff
 *     in memory and writes only the first 512 bytes, so it is neither
 *     checked on decode nor preserved (encode writes zeroes).
 *   - The checksum (calc_sb_1_csum() in md.c, the same in mdadm) is the
 *     64-bit sum of the little-endian 32-bit words of those 256 + 2 *
 *     max_dev bytes with sb_csum counted as 0, plus a trailing 16-bit
 *     word when max_dev is odd, folded to 32 bits as (sum & 0xffffffff) +
 *     (sum >> 32) and truncated.
 *
 * The buffer is never cast to a struct: every field is read and written
 * byte by byte at its offset (the packed struct below exists only so the
 * compiler checks the offset table against md's declaration order).
 *
 * Decoding mirrors the kernel's super_1_load(), which rejects a superblock
 * with a wrong magic or major version, a max_dev over (4096 - 256) / 2, a
 * super_offset other than where it was read, feature bits it does not
 * know, a bad checksum, a data_size under 10 sectors, non-zero pad0 or
 * pad3 ("might be a new feature"), data starting inside the superblock,
 * or a data_size beyond the device.  We refuse the same, each with its
 * own message, and more:
 *   - every md feature except the internal bitmap (bitmap.c), recovery
 *     offset, replacement and a reshape (bad block list, journal, PPL...):
 *     we cannot honour them, so using such a member would corrupt data;
 *   - what md only checks later or tolerates: size over data_size,
 *     raid_disks of 0 or over RAID_MAX_MEMBERS, a role that is neither
 *     spare, faulty, journal nor below raid_disks, a dev_number with no
 *     role (md would take the device for a spare), a level other than
 *     -1, 0, 1, 4, 5, 6, 10 (any of those decodes; whether we can run it
 *     is decided elsewhere).
 * The checks run in that order: magic, major version, max_dev (the
 * checksum's length depends on it), checksum, super_offset, features,
 * pad0, pad3, level, raid_disks, dev_number, roles, data area; the first
 * failure is reported, naming WHO, the field and the values.  The fields
 * are parsed before any check, so on failure SB shows what was found (for
 * a tool to print) but must not be used.
 * Only md's defined pads (pad0, pad3) must be zero.  The reshape fields
 * and bitmap_offset/ppl at 0x60-0x7f are not padding: md leaves stale
 * values there after a reshape or when a bitmap is removed, so they are
 * ignored (parsed as 0) unless the feature bit says otherwise (bitmap_offset is parsed
 * and kept, and means something only with RAID_SB_FEATURE_BITMAP).  Whether the superblock belongs with the others of an array
 * (set_uuid, events, roles) is for the caller, which sees all of them.
 */
#include <config.h>

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "md.h"

/* Byte offsets of the fields, as in struct mdp_superblock_1. */
enum {
  SB_MAGIC = 0x00,              /* le32 RAID_SB_MAGIC */
  SB_MAJOR_VERSION = 0x04,      /* le32 1 */
  SB_FEATURE_MAP = 0x08,        /* le32 MD_FEATURE_* */
  SB_PAD0 = 0x0c,               /* le32 must be 0 */
  SB_SET_UUID = 0x10,           /* 16 bytes */
  SB_SET_NAME = 0x20,           /* 32 bytes, NUL-padded, not terminated */
  SB_CTIME = 0x40,              /* le64 seconds (40 bits) | usec << 40 */
  SB_LEVEL = 0x48,              /* le32, signed */
  SB_LAYOUT = 0x4c,             /* le32 */
  SB_SIZE = 0x50,               /* le64 sectors of each member used */
  SB_CHUNKSIZE = 0x58,          /* le32 sectors */
  SB_RAID_DISKS = 0x5c,         /* le32 */
  SB_BITMAP_OFFSET = 0x60,      /* le32 signed sectors from sb (feature 0x1),
                                   or le16 ppl offset + le16 ppl size */
  SB_NEW_LEVEL = 0x64,          /* le32, reshape (feature 0x4) */
  SB_RESHAPE_POSITION = 0x68,   /* le64 array sectors */
  SB_DELTA_DISKS = 0x70,        /* le32 */
  SB_NEW_LAYOUT = 0x74,         /* le32 */
  SB_NEW_CHUNK = 0x78,          /* le32 sectors */
  SB_NEW_OFFSET = 0x7c,         /* le32 signed sectors (feature 0x40) */
  SB_DATA_OFFSET = 0x80,        /* le64 sectors from the member's start */
  SB_DATA_SIZE = 0x88,          /* le64 sectors from data_offset */
  SB_SUPER_OFFSET = 0x90,       /* le64 sectors from the member's start */
  SB_RECOVERY_OFFSET = 0x98,    /* le64 sectors from data_offset */
  SB_DEV_NUMBER = 0xa0,         /* le32 index into dev_roles */
  SB_CNT_CORRECTED_READ = 0xa4, /* le32 */
  SB_DEVICE_UUID = 0xa8,        /* 16 bytes */
  SB_DEVFLAGS = 0xb8,           /* u8: 1 write-mostly, 2 failfast */
  SB_BBLOG_SHIFT = 0xb9,        /* u8 */
  SB_BBLOG_SIZE = 0xba,         /* le16 sectors */
  SB_BBLOG_OFFSET = 0xbc,       /* le32 signed sectors from the superblock */
  SB_UTIME = 0xc0,              /* le64 like ctime */
  SB_EVENTS = 0xc8,             /* le64 */
  SB_RESYNC_OFFSET = 0xd0,      /* le64 sectors; all ones = clean */
  SB_SB_CSUM = 0xd8,            /* le32 */
  SB_MAX_DEV = 0xdc,            /* le32 entries of dev_roles */
  SB_PAD3 = 0xe0,               /* 32 bytes, must be 0 */
  SB_DEV_ROLES = 0x100,         /* le16 [max_dev] */
};
#define SB_PAD3_LEN 32
#define SB_NAME_LEN 32
#define SB_FIXED_BYTES 256u

/* md's declaration, byte for byte: documentation the compiler checks.
 * Never used to access a buffer. */
struct md_sb1_layout {
  uint32_t magic, major_version, feature_map, pad0;
  uint8_t set_uuid[16];
  char set_name[32];
  uint64_t ctime;
  uint32_t level, layout;
  uint64_t size;
  uint32_t chunksize, raid_disks, bitmap_offset, new_level;
  uint64_t reshape_position;
  uint32_t delta_disks, new_layout, new_chunk, new_offset;
  uint64_t data_offset, data_size, super_offset, recovery_offset;
  uint32_t dev_number, cnt_corrected_read;
  uint8_t device_uuid[16];
  uint8_t devflags, bblog_shift;
  uint16_t bblog_size;
  uint32_t bblog_offset;
  uint64_t utime, events, resync_offset;
  uint32_t sb_csum, max_dev;
  uint8_t pad3[32];
  uint16_t dev_roles[];
} __attribute__((packed));

#define PIN(field, off) \
  static_assert(offsetof(struct md_sb1_layout, field) == (off), #field " at " #off)
static_assert(sizeof (struct md_sb1_layout) == SB_FIXED_BYTES, "256 fixed bytes");
PIN(magic, SB_MAGIC);
PIN(major_version, SB_MAJOR_VERSION);
PIN(feature_map, SB_FEATURE_MAP);
PIN(pad0, SB_PAD0);
PIN(set_uuid, SB_SET_UUID);
PIN(set_name, SB_SET_NAME);
PIN(ctime, SB_CTIME);
PIN(level, SB_LEVEL);
PIN(layout, SB_LAYOUT);
PIN(size, SB_SIZE);
PIN(chunksize, SB_CHUNKSIZE);
PIN(raid_disks, SB_RAID_DISKS);
PIN(bitmap_offset, SB_BITMAP_OFFSET);
PIN(new_level, SB_NEW_LEVEL);
PIN(reshape_position, SB_RESHAPE_POSITION);
PIN(delta_disks, SB_DELTA_DISKS);
PIN(new_layout, SB_NEW_LAYOUT);
PIN(new_chunk, SB_NEW_CHUNK);
PIN(new_offset, SB_NEW_OFFSET);
PIN(data_offset, SB_DATA_OFFSET);
PIN(data_size, SB_DATA_SIZE);
PIN(super_offset, SB_SUPER_OFFSET);
PIN(recovery_offset, SB_RECOVERY_OFFSET);
PIN(dev_number, SB_DEV_NUMBER);
PIN(cnt_corrected_read, SB_CNT_CORRECTED_READ);
PIN(device_uuid, SB_DEVICE_UUID);
PIN(devflags, SB_DEVFLAGS);
PIN(bblog_shift, SB_BBLOG_SHIFT);
PIN(bblog_size, SB_BBLOG_SIZE);
PIN(bblog_offset, SB_BBLOG_OFFSET);
PIN(utime, SB_UTIME);
PIN(events, SB_EVENTS);
PIN(resync_offset, SB_RESYNC_OFFSET);
PIN(sb_csum, SB_SB_CSUM);
PIN(max_dev, SB_MAX_DEV);
PIN(pad3, SB_PAD3);
PIN(dev_roles, SB_DEV_ROLES);
static_assert(sizeof ((struct md_sb1_layout *)0)->pad3 == SB_PAD3_LEN, "pad3");
static_assert(SB_FIXED_BYTES + 2 * RAID_SB_MAX_DEV == RAID_SB_BYTES,
              "dev_roles fill the 4 KiB block");
static_assert(sizeof ((struct raid_superblock *)0)->set_name == SB_NAME_LEN + 1,
              "set_name keeps a NUL");

/* md's smallest data_size (super_1_load). */
#define SB_MIN_DATA_SIZE 10

/* ---- little-endian access ------------------------------------------------ */

static inline uint16_t
get16(const uint8_t *p)
{
  return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static inline uint32_t
get32(const uint8_t *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
    (uint32_t)p[3] << 24;
}

static inline uint64_t
get64(const uint8_t *p)
{
  return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static inline void
put16(uint8_t *p, uint16_t v)
{
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

static inline void
put32(uint8_t *p, uint32_t v)
{
  put16(p, (uint16_t)v);
  put16(p + 2, (uint16_t)(v >> 16));
}

static inline void
put64(uint8_t *p, uint64_t v)
{
  put32(p, (uint32_t)v);
  put32(p + 4, (uint32_t)(v >> 32));
}

/* ---- where each version puts it ---------------------------------------------- */

EXPORT uint64_t
raid_superblock_offset(int version, uint64_t member_sectors)
{
  switch (version) {
  case RAID_METADATA_1_2:
    return member_sectors >= RAID_SB_OFFSET_1_2 + RAID_SB_BYTES / RAID_SECTOR_SIZE
      ? RAID_SB_OFFSET_1_2 : UINT64_MAX;
  case RAID_METADATA_1_1:
    return member_sectors >= RAID_SB_BYTES / RAID_SECTOR_SIZE
      ? RAID_SB_OFFSET_1_1 : UINT64_MAX;
  case RAID_METADATA_1_0:
    /* md's super_1_load(): 8 KiB from the end, rounded down to 4 KiB, so
     * the 4 KiB read there always fits. */
    if (member_sectors < 3 * 8)
      return UINT64_MAX;
    return (member_sectors - 8 * 2) & ~(uint64_t)(4 * 2 - 1);
  default:
    return UINT64_MAX;
  }
}

EXPORT int
raid_superblock_version(const struct raid_superblock *sb)
{
  return sb->super_offset == RAID_SB_OFFSET_1_2 ? RAID_METADATA_1_2
    : sb->super_offset == RAID_SB_OFFSET_1_1 ? RAID_METADATA_1_1 : RAID_METADATA_1_0;
}

EXPORT const char *
raid_metadata_name(int version)
{
  switch (version) {
  case RAID_METADATA_1_0: return "1.0";
  case RAID_METADATA_1_1: return "1.1";
  case RAID_METADATA_1_2: return "1.2";
  default: return NULL;
  }
}

/* ---- checksum -------------------------------------------------------------- */

EXPORT uint32_t
raid_superblock_csum(const void *buf)
{
  const uint8_t *p = buf;
  /* A max_dev over the limit is refused by decode before it looks at the
   * checksum; clamped here so nothing past RAID_SB_BYTES is read. */
  uint32_t max_dev = MIN(get32(p + SB_MAX_DEV), RAID_SB_MAX_DEV);
  size_t size = SB_FIXED_BYTES + 2 * (size_t)max_dev;
  uint64_t sum = 0;
  size_t i;

  for (i = 0; i + 4 <= size; i += 4)
    if (i != SB_SB_CSUM)
      sum += get32(p + i);
  if (size - i == 2)
    sum += get16(p + i);
  return (uint32_t)((sum & 0xffffffff) + (sum >> 32));
}

EXPORT int
raid_superblock_split(const struct raid_superblock *mine, const struct raid_superblock *cur,
                      unsigned *dev)
{
  unsigned k;

  for (k = 0; k < cur->max_dev && k < mine->max_dev && k < RAID_SB_MAX_DEV; k++)
    if (k != mine->dev_number && cur->dev_roles[k] < cur->raid_disks &&
        mine->dev_roles[k] == RAID_SB_ROLE_FAULTY) {
      *dev = k;
      return 1;
    }
  *dev = mine->dev_number;
  return mine->events > cur->events;
}

/* A member that missed only the last superblock update: a crash while
 * the update went from member to member (safe mode, safemode.c, makes
 * updates frequent).  md takes it as current (the kernel's
 * super_1_validate() allows events one behind, mdadm's event_margin of
 * 1), and so do we when its own superblock calls it an active member in
 * sync in the role the freshest gives it: the last update did not mark it
 * faulty (that is the freshest's role), and nothing but a failure, which
 * an update records, makes a member in sync miss a write.  A member that
 * was rebuilding or replacing is stale as before. */
EXPORT int
raid_superblock_one_behind(const struct raid_superblock *sb,
                           const struct raid_superblock *fresh)
{
  unsigned role = sb->dev_number < fresh->max_dev
    ? fresh->dev_roles[sb->dev_number] : RAID_SB_ROLE_SPARE;

  return sb->events + 1 == fresh->events && sb->dev_number < sb->max_dev &&
    sb->dev_number < RAID_SB_MAX_DEV && sb->dev_roles[sb->dev_number] == role &&
    !(sb->feature_map & (RAID_SB_FEATURE_RECOVERY_OFFSET | RAID_SB_FEATURE_REPLACEMENT));
}

/* ---- encode ------------------------------------------------------------------ */

EXPORT int
raid_superblock_encode(const struct raid_superblock *sb, void *buf)
{
  uint8_t *p = buf;
  uint32_t i;

  if (sb->max_dev > RAID_SB_MAX_DEV)
    return set_error(EINVAL, "superblock encode: max_dev %" PRIu32 " is more than %u",
                     sb->max_dev, RAID_SB_MAX_DEV);

  memset(p, 0, RAID_SB_BYTES);
  put32(p + SB_MAGIC, RAID_SB_MAGIC);
  put32(p + SB_MAJOR_VERSION, 1);
  put32(p + SB_FEATURE_MAP, sb->feature_map);
  memcpy(p + SB_SET_UUID, sb->set_uuid, 16);
  memcpy(p + SB_SET_NAME, sb->set_name, strnlen(sb->set_name, SB_NAME_LEN));
  put64(p + SB_CTIME, sb->ctime);
  put32(p + SB_LEVEL, (uint32_t)sb->level);
  put32(p + SB_LAYOUT, sb->layout);
  put64(p + SB_SIZE, sb->size);
  put32(p + SB_CHUNKSIZE, sb->chunksize);
  put32(p + SB_RAID_DISKS, sb->raid_disks);
  put32(p + SB_BITMAP_OFFSET, (uint32_t)sb->bitmap_offset);
  put64(p + SB_DATA_OFFSET, sb->data_offset);
  put64(p + SB_DATA_SIZE, sb->data_size);
  put64(p + SB_SUPER_OFFSET, sb->super_offset);
  put64(p + SB_RECOVERY_OFFSET, sb->recovery_offset);
  put32(p + SB_DEV_NUMBER, sb->dev_number);
  put32(p + SB_CNT_CORRECTED_READ, sb->cnt_corrected_read);
  memcpy(p + SB_DEVICE_UUID, sb->device_uuid, 16);
  p[SB_DEVFLAGS] = sb->devflags;
  p[SB_BBLOG_SHIFT] = sb->bblog_shift;
  put16(p + SB_BBLOG_SIZE, sb->bblog_size);
  put32(p + SB_BBLOG_OFFSET, (uint32_t)sb->bblog_offset);
  put64(p + SB_UTIME, sb->utime);
  put64(p + SB_EVENTS, sb->events);
  put64(p + SB_RESYNC_OFFSET, sb->resync_offset);
  if (sb->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE) {
    put32(p + SB_NEW_LEVEL, (uint32_t)sb->new_level);
    put64(p + SB_RESHAPE_POSITION, sb->reshape_position);
    put32(p + SB_DELTA_DISKS, (uint32_t)sb->delta_disks);
    put32(p + SB_NEW_LAYOUT, sb->new_layout);
    put32(p + SB_NEW_CHUNK, sb->new_chunk);
  }
  if (sb->feature_map & RAID_SB_FEATURE_NEW_OFFSET)
    put32(p + SB_NEW_OFFSET, (uint32_t)sb->new_offset);
  put32(p + SB_MAX_DEV, sb->max_dev);
  for (i = 0; i < sb->max_dev; i++)
    put16(p + SB_DEV_ROLES + 2 * i, sb->dev_roles[i]);
  put32(p + SB_SB_CSUM, raid_superblock_csum(p));
  return 0;
}

/* ---- decode ------------------------------------------------------------------ */

static const char *const feature_names[] = {
  "write-intent bitmap",          /* 0x1 */
  "recovery offset",              /* 0x2 */
  "reshape in progress",          /* 0x4 */
  "bad block list",               /* 0x8 */
  "replacement device",           /* 0x10 */
  "backwards reshape",            /* 0x20 */
  "new data offset",              /* 0x40 */
  "bitmap-guided recovery",       /* 0x80 */
  "clustered md",                 /* 0x100 */
  "write journal",                /* 0x200 */
  "partial parity log",           /* 0x400 */
  "multiple partial parity logs", /* 0x800 */
  "RAID 0 layout",                /* 0x1000 */
};

/* "write-intent bitmap, bad block list" for the bits in FEATURES. */
static const char *
describe_features(uint32_t features, char *buf, size_t len)
{
  size_t used = 0;
  unsigned bit;

  buf[0] = '\0';
  for (bit = 0; bit < 32; bit++) {
    const char *name;
    int n;

    if (!(features & (UINT32_C(1) << bit)))
      continue;
    name = bit < ARRAY_SIZE(feature_names) ? feature_names[bit] : "unknown to md";
    n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name);
    if (n < 0 || (size_t)n >= len - used)
      break;
    used += (size_t)n;
  }
  return buf;
}

static bool
level_known(int32_t level)
{
  switch (level) {
  case -1: case 0: case 1: case 4: case 5: case 6: case 10:
    return true;
  default:
    return false;
  }
}

/* Fill SB from the bytes at P, without judging them. */
static void
parse(const uint8_t *p, struct raid_superblock *sb)
{
  uint32_t i, n;

  memset(sb, 0, sizeof *sb);
  sb->feature_map = get32(p + SB_FEATURE_MAP);
  memcpy(sb->set_uuid, p + SB_SET_UUID, 16);
  memcpy(sb->set_name, p + SB_SET_NAME, strnlen((const char *)p + SB_SET_NAME, SB_NAME_LEN));
  sb->ctime = get64(p + SB_CTIME);
  sb->level = (int32_t)get32(p + SB_LEVEL);
  sb->layout = get32(p + SB_LAYOUT);
  sb->size = get64(p + SB_SIZE);
  sb->chunksize = get32(p + SB_CHUNKSIZE);
  sb->raid_disks = get32(p + SB_RAID_DISKS);
  sb->bitmap_offset = (int32_t)get32(p + SB_BITMAP_OFFSET);
  sb->data_offset = get64(p + SB_DATA_OFFSET);
  sb->data_size = get64(p + SB_DATA_SIZE);
  sb->super_offset = get64(p + SB_SUPER_OFFSET);
  sb->recovery_offset = get64(p + SB_RECOVERY_OFFSET);
  sb->dev_number = get32(p + SB_DEV_NUMBER);
  sb->cnt_corrected_read = get32(p + SB_CNT_CORRECTED_READ);
  memcpy(sb->device_uuid, p + SB_DEVICE_UUID, 16);
  sb->devflags = p[SB_DEVFLAGS];
  sb->bblog_shift = p[SB_BBLOG_SHIFT];
  sb->bblog_size = get16(p + SB_BBLOG_SIZE);
  sb->bblog_offset = (int32_t)get32(p + SB_BBLOG_OFFSET);
  sb->utime = get64(p + SB_UTIME);
  sb->events = get64(p + SB_EVENTS);
  sb->resync_offset = get64(p + SB_RESYNC_OFFSET);
  if (sb->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE) {
    sb->new_level = (int32_t)get32(p + SB_NEW_LEVEL);
    sb->reshape_position = get64(p + SB_RESHAPE_POSITION);
    sb->delta_disks = (int32_t)get32(p + SB_DELTA_DISKS);
    sb->new_layout = get32(p + SB_NEW_LAYOUT);
    sb->new_chunk = get32(p + SB_NEW_CHUNK);
  }
  if (sb->feature_map & RAID_SB_FEATURE_NEW_OFFSET)
    sb->new_offset = (int32_t)get32(p + SB_NEW_OFFSET);
  sb->sb_csum = get32(p + SB_SB_CSUM);
  sb->max_dev = get32(p + SB_MAX_DEV);
  n = MIN(sb->max_dev, RAID_SB_MAX_DEV);
  for (i = 0; i < n; i++)
    sb->dev_roles[i] = get16(p + SB_DEV_ROLES + 2 * i);
}

/* The data area [data_offset, data_offset + data_size) and where the
 * superblock lies: inside the member, clear of each other. */
static int
check_data_area(const struct raid_superblock *sb, uint64_t member_sectors,
                const char *who)
{
  uint64_t dstart = sb->data_offset, dlen = sb->data_size;
  uint64_t sstart = sb->super_offset;
  uint64_t slen = DIV_ROUND_UP(SB_FIXED_BYTES + 2 * (uint64_t)sb->max_dev, RAID_SECTOR_SIZE);
  bool overlap;

  if (dlen < SB_MIN_DATA_SIZE)
    return set_error(EINVAL, "member %s: superblock data_size %" PRIu64
                     " sectors is too small (md needs at least %u)",
                     who, dlen, SB_MIN_DATA_SIZE);
  if (dstart > member_sectors || dlen > member_sectors - dstart)
    return set_error(EINVAL, "member %s: superblock data_offset %" PRIu64
                     " + data_size %" PRIu64 " sectors ends beyond the member"
                     " (%" PRIu64 " sectors): cut short, or a damaged superblock",
                     who, dstart, dlen, member_sectors);
  /* Both ranges are non-empty; compare without overflowing. */
  if (dstart >= sstart)
    overlap = dstart - sstart < slen;
  else
    overlap = sstart - dstart < dlen;
  if (overlap)
    return set_error(EINVAL, "member %s: superblock data area (sectors %" PRIu64
                     " to %" PRIu64 ") overlaps the superblock (sectors %" PRIu64
                     " to %" PRIu64 ")", who, dstart, dstart + dlen - 1, sstart,
                     sstart + slen - 1);
  if (sb->size > dlen)
    return set_error(EINVAL, "member %s: superblock size %" PRIu64
                     " sectors used per member is more than data_size %" PRIu64,
                     who, sb->size, dlen);
  return 0;
}

EXPORT int
raid_superblock_decode(const void *buf, uint64_t read_at_sector,
                       uint64_t member_sectors, const char *who,
                       struct raid_superblock *sb)
{
  const uint8_t *p = buf;
  uint32_t magic = get32(p + SB_MAGIC);
  uint32_t version = get32(p + SB_MAJOR_VERSION);
  uint32_t csum, unknown, pad0, i;
  char names[256];
  int r;

  /* Parse everything first: on failure SB still shows what was there (a
   * tool can print it), but must not be used. */
  parse(p, sb);

  if (magic != RAID_SB_MAGIC)
    return set_error(EINVAL, "member %s: no md superblock at sector %" PRIu64
                     " (magic 0x%08" PRIx32 ", expected 0x%08x)",
                     who, read_at_sector, magic, RAID_SB_MAGIC);
  if (version != 1)
    return set_error(EINVAL, "member %s: superblock major version %" PRIu32
                     " is not 1", who, version);
  if (sb->max_dev > RAID_SB_MAX_DEV)
    return set_error(EINVAL, "member %s: superblock max_dev %" PRIu32
                     " is more than %u roles fit in %u bytes",
                     who, sb->max_dev, RAID_SB_MAX_DEV, RAID_SB_BYTES);
  csum = raid_superblock_csum(p);
  if (csum != sb->sb_csum)
    return set_error(EINVAL, "member %s: superblock checksum 0x%08" PRIx32
                     " does not match 0x%08" PRIx32 " computed",
                     who, sb->sb_csum, csum);
  if (sb->super_offset != read_at_sector)
    return set_error(EINVAL, "member %s: superblock read at sector %" PRIu64
                     " says its super_offset is sector %" PRIu64,
                     who, read_at_sector, sb->super_offset);
  unknown = sb->feature_map & ~(uint32_t)RAID_SB_FEATURES_KNOWN;
  if (unknown)
    return set_error(EINVAL, "member %s: superblock uses md features 0x%" PRIx32
                     " (%s) that libraid does not support", who, unknown,
                     describe_features(unknown, names, sizeof names));
  pad0 = get32(p + SB_PAD0);
  if (pad0)
    return set_error(EINVAL, "member %s: superblock reserved field pad0 is 0x%08" PRIx32
                     ", not 0 (written by a newer md?)", who, pad0);
  for (i = 0; i < SB_PAD3_LEN; i++)
    if (p[SB_PAD3 + i])
      return set_error(EINVAL, "member %s: superblock reserved field pad3 has"
                       " 0x%02x at byte %" PRIu32 " (offset 0x%x), not 0"
                       " (written by a newer md?)", who, p[SB_PAD3 + i], i,
                       SB_PAD3 + i);
  if (!level_known(sb->level))
    return set_error(EINVAL, "member %s: superblock RAID level %" PRId32
                     " is not one md has (-1, 0, 1, 4, 5, 6, 10)", who, sb->level);
  if (sb->raid_disks == 0)
    return set_error(EINVAL, "member %s: superblock raid_disks is 0", who);
  if (sb->raid_disks > RAID_MAX_MEMBERS)
    return set_error(EINVAL, "member %s: superblock raid_disks %" PRIu32
                     " is more than libraid's %u", who, sb->raid_disks,
                     RAID_MAX_MEMBERS);
  if (sb->dev_number >= sb->max_dev)
    return set_error(EINVAL, "member %s: superblock dev_number %" PRIu32
                     " has no role: max_dev is %" PRIu32, who, sb->dev_number,
                     sb->max_dev);
  for (i = 0; i < sb->max_dev; i++) {
    uint16_t role = sb->dev_roles[i];

    if (role == RAID_SB_ROLE_SPARE || role == RAID_SB_ROLE_FAULTY ||
        role == RAID_SB_ROLE_JOURNAL)
      continue;
    /* A reshape to fewer members keeps the old roles until its end. */
    if (role >= sb_roles(sb))
      return set_error(EINVAL, "member %s: superblock dev_roles[%" PRIu32 "] is %u,"
                       " out of range for raid_disks %" PRIu32, who, i, role,
                       sb->raid_disks);
  }
  r = check_data_area(sb, member_sectors, who);
  if (r < 0)
    return r;
  return 0;
}
