/* md's internal write-intent bitmap on a member: its superblock and bits,
 * where each metadata version puts it, read, validated and written.
 *
 * The format is md's (bitmap_super_t in the kernel's drivers/md/md-bitmap.h,
 * the same in mdadm's bitmap.h), so that the kernel and mdadm -X read our
 * bitmaps and we read theirs:
 *   - a 256-byte superblock of little-endian fields (the table below), then
 *     the bits: one per bitmap chunk of chunksize bytes of what the array
 *     resyncs (sync_size sectors: each member's data for RAID 1 and 5, the
 *     array's for RAID 10, as md's resync_max_sectors), bit K at byte
 *     256 + K / 8, value 1 << (K % 8) (md's set_bit_le());
 *   - it lies bitmap_offset sectors (signed) from the member's superblock
 *     (md superblock feature 0x1), the same offset on every member;
 *   - md counts writes per chunk in memory (16-bit counters, 2048 to a 4 KiB
 *     page); on disk there is one bit per chunk, set while the chunk may be
 *     out of sync.
 *
 * Placement, as mdadm's add_internal_bitmap1() and write_init_super1()
 * put it when creating an array:
 *   - 1.1 and 1.2: 4 KiB after the superblock (bitmap_offset +8), in the
 *     gap before the data offset;
 *   - 1.0: before the superblock, after the data: bitmap_offset is minus
 *     the bitmap's size rounded up to 4 KiB, minus the 8 sectors mdadm
 *     keeps there for a bad block log; data_size ends where the bitmap
 *     starts;
 *   - the space: choose_bm_space() of the member's data size (4 KiB up to
 *     8 GiB, 64 KiB up to 200 GiB, 128 KiB above), the default chunk the
 *     larger of 64 MiB and the smallest chunk whose bits fit that space
 *     (at most 128 KiB of it), a chunk asked for refused when its bits do
 *     not fit.
 *
 * Validation mirrors the kernel's md_bitmap_read_sb(): magic, version 3 or
 * 4 (5 is md-cluster's: refused), chunk size at least 512 bytes and a
 * power of two, daemon_sleep not 0, write_behind at most 16383; and the
 * UUID must be the array's set UUID.  On top, the bitmap's place must
 * neither overlap the data nor (1.0) run into the superblock, as md's
 * write_sb_page() refuses.
 *
 * The bitmap of a running array (struct meta_bitmap) is an image of the
 * whole on-disk area, kept by md/meta.c under its lock and written with
 * the superblocks, and page by page by the bitmap writer (bitmap-run.c,
 * which sets and clears bits chunk by chunk); bitmap.c only formats,
 * loads and writes it.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "md/meta.h"

/* Byte offsets of bitmap_super_t's fields. */
enum {
  BM_MAGIC = 0,                 /* le32 RAID_BITMAP_MAGIC */
  BM_VERSION = 4,               /* le32 */
  BM_UUID = 8,                  /* 16 bytes */
  BM_EVENTS = 24,               /* le64 */
  BM_EVENTS_CLEARED = 32,       /* le64 */
  BM_SYNC_SIZE = 40,            /* le64 sectors */
  BM_STATE = 48,                /* le32 */
  BM_CHUNKSIZE = 52,            /* le32 bytes */
  BM_DAEMON_SLEEP = 56,         /* le32 seconds */
  BM_WRITE_BEHIND = 60,         /* le32 */
  BM_SECTORS_RESERVED = 64,     /* le32 */
  BM_NODES = 68,                /* le32 */
  BM_CLUSTER_NAME = 72,         /* 64 bytes */
  BM_PAD = 136,                 /* to 256: zero */
};
#define BM_CLUSTER_NAME_LEN 64

static uint32_t
get32(const uint8_t *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
    (uint32_t)p[3] << 24;
}

static uint64_t
get64(const uint8_t *p)
{
  return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void
put32(uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static void
put64(uint8_t *p, uint64_t v)
{
  put32(p, (uint32_t)v);
  put32(p + 4, (uint32_t)(v >> 32));
}

/* ---- the superblock ---------------------------------------------------------- */

EXPORT void
raid_bitmap_encode(const struct raid_bitmap_super *b, void *buf)
{
  uint8_t *p = buf;

  memset(p, 0, RAID_BITMAP_SB_BYTES);
  put32(p + BM_MAGIC, b->magic);
  put32(p + BM_VERSION, b->version);
  memcpy(p + BM_UUID, b->uuid, 16);
  put64(p + BM_EVENTS, b->events);
  put64(p + BM_EVENTS_CLEARED, b->events_cleared);
  put64(p + BM_SYNC_SIZE, b->sync_size);
  put32(p + BM_STATE, b->state);
  put32(p + BM_CHUNKSIZE, b->chunksize);
  put32(p + BM_DAEMON_SLEEP, b->daemon_sleep);
  put32(p + BM_WRITE_BEHIND, b->write_behind);
  put32(p + BM_SECTORS_RESERVED, b->sectors_reserved);
  put32(p + BM_NODES, b->nodes);
  memcpy(p + BM_CLUSTER_NAME, b->cluster_name,
         strnlen(b->cluster_name, BM_CLUSTER_NAME_LEN));
}

EXPORT int
raid_bitmap_decode(const void *buf, const char *who, struct raid_bitmap_super *b)
{
  const uint8_t *p = buf;

  memset(b, 0, sizeof *b);
  b->magic = get32(p + BM_MAGIC);
  b->version = get32(p + BM_VERSION);
  memcpy(b->uuid, p + BM_UUID, 16);
  b->events = get64(p + BM_EVENTS);
  b->events_cleared = get64(p + BM_EVENTS_CLEARED);
  b->sync_size = get64(p + BM_SYNC_SIZE);
  b->state = get32(p + BM_STATE);
  b->chunksize = get32(p + BM_CHUNKSIZE);
  b->daemon_sleep = get32(p + BM_DAEMON_SLEEP);
  b->write_behind = get32(p + BM_WRITE_BEHIND);
  b->sectors_reserved = get32(p + BM_SECTORS_RESERVED);
  b->nodes = get32(p + BM_NODES);
  memcpy(b->cluster_name, p + BM_CLUSTER_NAME,
         strnlen((const char *)p + BM_CLUSTER_NAME, BM_CLUSTER_NAME_LEN));

  if (b->magic != RAID_BITMAP_MAGIC)
    return set_error(EINVAL, "member %s: no bitmap superblock (magic 0x%08" PRIx32
                     ", expected 0x%08x)", who, b->magic, RAID_BITMAP_MAGIC);
  if (b->version == 5)
    return set_error(EINVAL, "member %s: bitmap version 5 is md-cluster's "
                     "clustered bitmap, which libraid does not support", who);
  if (b->version < 3 || b->version > RAID_BITMAP_VERSION)
    return set_error(EINVAL, "member %s: bitmap version %" PRIu32 " is not one md "
                     "has (3 or 4)", who, b->version);
  if (b->chunksize < 512)
    return set_error(EINVAL, "member %s: bitmap chunk size %" PRIu32 " bytes is "
                     "too small (md needs at least 512)", who, b->chunksize);
  if (!IS_POWER_OF_2(b->chunksize))
    return set_error(EINVAL, "member %s: bitmap chunk size %" PRIu32 " bytes is "
                     "not a power of two", who, b->chunksize);
  if (b->daemon_sleep == 0)
    return set_error(EINVAL, "member %s: bitmap daemon_sleep is 0 seconds (md "
                     "needs at least 1)", who);
  if (b->write_behind > RAID_BITMAP_WRITE_BEHIND_MAX)
    return set_error(EINVAL, "member %s: bitmap write_behind %" PRIu32 " is out "
                     "of range (0 to %u)", who, b->write_behind,
                     RAID_BITMAP_WRITE_BEHIND_MAX);
  return 0;
}

EXPORT uint64_t
raid_bitmap_chunks(const struct raid_bitmap_super *b)
{
  uint64_t chunk_sectors = b->chunksize >> SECTOR_SHIFT;

  return chunk_sectors ? DIV_ROUND_UP(b->sync_size, chunk_sectors) : 0;
}

/* Bytes of the bitmap on disk: superblock and bits, rounded up as mdadm
 * writes it (4 KiB when the offset is 4 KiB aligned, else sectors). */
uint64_t
bitmap_area_bytes(uint64_t chunks, int32_t offset)
{
  uint64_t bytes = RAID_BITMAP_SB_BYTES + DIV_ROUND_UP(chunks, 8);
  uint64_t unit = offset % 8 ? RAID_SECTOR_SIZE : 4096;

  return DIV_ROUND_UP(bytes, unit) * unit;
}

/* ---- placement ------------------------------------------------------------------ */

/* mdadm's choose_bm_space(): sectors it leaves for a bitmap on a member
 * of SECTORS. */
static uint64_t
choose_bm_space(uint64_t sectors)
{
  if (sectors < 64 * 2)
    return 0;
  if (sectors - 64 * 2 >= UINT64_C(200) * 1024 * 1024 * 2)
    return 128 * 2;
  if (sectors - 4 * 2 > UINT64_C(8) * 1024 * 1024 * 2)
    return 64 * 2;
  return 4 * 2;
}

/* The sectors mdadm keeps for a bad block log next to the bitmap. */
#define BBL_SECTORS 8

EXPORT uint64_t
raid_bitmap_space(int version, uint64_t member_sectors)
{
  return version == RAID_METADATA_1_0 ? choose_bm_space(member_sectors) + BBL_SECTORS : 0;
}

int
bitmap_plan(const char *aname, int version, uint64_t member_sectors, uint64_t sync_size,
            uint32_t want_chunk, uint32_t *chunkp, int32_t *offsetp)
{
  uint32_t chunk;
  int r;

  r = bitmap_choose_chunk(aname, choose_bm_space(member_sectors), sync_size, want_chunk,
                          &chunk);
  if (r < 0)
    return r;
  *chunkp = chunk;
  if (version == RAID_METADATA_1_0) {
    /* Before the superblock, 4 KiB aligned, with mdadm's bad block log
     * space between them. */
    uint64_t nbits = sync_size * RAID_SECTOR_SIZE / chunk + 1;
    uint64_t sectors = DIV_ROUND_UP(DIV_ROUND_UP(nbits, 8) + RAID_BITMAP_SB_BYTES, 4096) * 8;

    *offsetp = -(int32_t)sectors - BBL_SECTORS;
  }
  else
    *offsetp = 8;
  return 0;
}

int
bitmap_choose_chunk(const char *aname, uint64_t room, uint64_t sync_size,
                    uint32_t want_chunk, uint32_t *chunkp)
{
  uint64_t max_bits, bits, min_chunk = RAID_BITMAP_CHUNK_MIN, chunk;

  /* mdadm caps the bitmap at 128 KiB unless a chunk size was asked for. */
  if (want_chunk == 0 && room > 128 * 2)
    room = 128 * 2;
  if (room <= 1)
    return set_error(ENOSPC, "array %s: no room for a write-intent bitmap (%" PRIu64
                     " sectors)", aname, room);
  max_bits = (room * RAID_SECTOR_SIZE - RAID_BITMAP_SB_BYTES) * 8;
  bits = sync_size * RAID_SECTOR_SIZE / min_chunk + 1;
  while (bits > max_bits) {
    min_chunk *= 2;
    bits = (bits + 1) / 2;
  }
  if (want_chunk == 0)
    chunk = MAX(min_chunk, RAID_BITMAP_CHUNK_DEFAULT);
  else if (want_chunk < min_chunk)
    return set_error(EINVAL, "array %s: bitmap chunk %" PRIu32 " bytes is too "
                     "small: its bits would not fit the %" PRIu64 " KiB md keeps "
                     "for the bitmap; it must be at least %" PRIu64 " bytes",
                     aname, want_chunk, room / 2, min_chunk);
  else
    chunk = want_chunk;
  if (chunk > UINT32_C(1) << 31)
    return set_error(EINVAL, "array %s: bitmap chunk of %" PRIu64 " bytes is too "
                     "large", aname, chunk);
  *chunkp = (uint32_t)chunk;
  return 0;
}

/* Is a bitmap of AREA bytes at OFFSET sectors from SB's superblock clear
 * of SB's data and superblock?  WHO names the member. */
int
bitmap_check_place(const struct raid_superblock *sb, int32_t offset, uint64_t area,
                   const char *who)
{
  uint64_t sectors = DIV_ROUND_UP(area, RAID_SECTOR_SIZE);
  uint64_t sb_sectors = DIV_ROUND_UP(256 + 2 * (uint64_t)sb->max_dev, RAID_SECTOR_SIZE);

  if (offset == 0 || (offset > 0 && (uint64_t)offset < sb_sectors))
    return set_error(EINVAL, "member %s: bitmap_offset %" PRId32 " puts the bitmap "
                     "on the superblock", who, offset);
  if (offset < 0) {
    /* DATA BITMAP SUPERBLOCK: the bitmap ends by the superblock, the data
     * before the bitmap. */
    if ((uint64_t)-(int64_t)offset < sectors)
      return set_error(EINVAL, "member %s: bitmap of %" PRIu64 " sectors at "
                       "bitmap_offset %" PRId32 " runs into the superblock",
                       who, sectors, offset);
    if ((uint64_t)-(int64_t)offset > sb->super_offset ||
        sb->data_offset + sb->size > sb->super_offset + offset)
      return set_error(EINVAL, "member %s: data (sectors %" PRIu64 " to %" PRIu64
                       ") runs into the bitmap at sector %" PRId64, who,
                       sb->data_offset, sb->data_offset + sb->size,
                       (int64_t)sb->super_offset + offset);
  }
  else if (sb->super_offset < sb->data_offset &&
           sb->super_offset + (uint64_t)offset + sectors > sb->data_offset)
    return set_error(EINVAL, "member %s: bitmap of %" PRIu64 " sectors at "
                     "bitmap_offset %" PRId32 " runs into the data at sector %" PRIu64,
                     who, sectors, offset, sb->data_offset);
  return 0;
}

/* ---- on a member ------------------------------------------------------------------ */

static uint64_t
count_bits(const uint8_t *bits, uint64_t n)
{
  uint64_t i, c = 0;

  for (i = 0; i < n / 8; i++)
    c += (uint64_t)__builtin_popcount(bits[i]);
  if (n % 8)
    c += (uint64_t)__builtin_popcount(bits[n / 8] & ((1u << (n % 8)) - 1));
  return c;
}

int
bitmap_load(struct raid_member *m, const struct raid_superblock *sb, int32_t offset,
            struct raid_bitmap_super *b, uint8_t **areap, uint64_t *areap_len)
{
  uint8_t *buf = raid_buf_alloc(4096), *area;
  uint64_t at, len;
  char want[40], got[40];
  int r;

  if (buf == NULL)
    return set_error(ENOMEM, "member %s: out of memory", m->name);
  if (offset < 0 && (uint64_t)-(int64_t)offset > sb->super_offset) {
    raid_buf_free(buf);
    return set_error(EINVAL, "member %s: bitmap_offset %" PRId32 " is before the "
                     "member's start", m->name, offset);
  }
  at = (sb->super_offset + (int64_t)offset) << SECTOR_SHIFT;
  r = member_pio(m, false, buf, 4096, at);
  if (r < 0) {
    raid_buf_free(buf);
    return r;
  }
  r = raid_bitmap_decode(buf, m->name, b);
  if (r == 0 && memcmp(b->uuid, sb->set_uuid, 16) != 0) {
    const uint8_t *u = b->uuid, *v = sb->set_uuid;

    snprintf(got, sizeof got, "%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x:"
             "%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
             u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    snprintf(want, sizeof want, "%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x:"
             "%02x%02x%02x%02x", v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7],
             v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15]);
    r = set_error(EINVAL, "member %s: bitmap UUID %s is not the array's %s (a "
                  "bitmap left from another array?)", m->name, got, want);
  }
  if (r == 0)
    r = bitmap_check_place(sb, offset, bitmap_area_bytes(raid_bitmap_chunks(b), offset),
                           m->name);
  raid_buf_free(buf);
  if (r < 0 || areap == NULL)
    return r;
  len = bitmap_area_bytes(raid_bitmap_chunks(b), offset);
  len = DIV_ROUND_UP(len, 4096) * 4096;
  area = raid_buf_alloc(len);
  if (area == NULL)
    return set_error(ENOMEM, "member %s: out of memory for a bitmap of %" PRIu64
                     " bytes", m->name, len);
  /* Whole 4 KiB blocks for O_DIRECT; the area itself is clear of the data
   * (checked above), the tail of a 1.0 one within the room mdadm keeps. */
  r = member_pio(m, false, area, len, at);
  if (r < 0) {
    raid_buf_free(area);
    return r;
  }
  *areap = area;
  *areap_len = len;
  return 0;
}

EXPORT int
raid_bitmap_read(struct raid_member *m, const struct raid_superblock *sb,
                 struct raid_bitmap_super *b, uint64_t *dirty)
{
  uint8_t *area = NULL;
  uint64_t len = 0;
  int r;

  if (!(sb->feature_map & RAID_SB_FEATURE_BITMAP))
    return set_error(ENOENT, "member %s has no internal bitmap (feature map 0x%"
                     PRIx32 ")", m->name, sb->feature_map);
  r = bitmap_load(m, sb, sb->bitmap_offset, b, dirty ? &area : NULL, &len);
  if (r == 0 && dirty) {
    uint64_t n = raid_bitmap_chunks(b);

    if (RAID_BITMAP_SB_BYTES + DIV_ROUND_UP(n, 8) > len)
      n = (len - RAID_BITMAP_SB_BYTES) * 8;
    *dirty = count_bits(area + RAID_BITMAP_SB_BYTES, n);
  }
  raid_buf_free(area);
  return r;
}

/* ---- a running array's bitmap -------------------------------------------------------- */

int
bitmap_new(const struct raid_bitmap_super *sb, int32_t offset, struct meta_bitmap **bp)
{
  struct meta_bitmap *b = calloc(1, sizeof *b);

  *bp = NULL;
  if (b == NULL)
    return set_error(ENOMEM, "bitmap: out of memory");
  b->sb = *sb;
  b->offset = offset;
  b->chunks = raid_bitmap_chunks(sb);
  b->area = bitmap_area_bytes(b->chunks, offset);
  b->buf = raid_buf_alloc(b->area);
  if (b->buf == NULL) {
    uint64_t area = b->area;

    free(b);
    return set_error(ENOMEM, "bitmap: out of memory for %" PRIu64 " bytes", area);
  }
  memset(b->buf, 0, b->area);
  *bp = b;
  return 0;
}

void
bitmap_free(struct meta_bitmap *b)
{
  if (b) {
    raid_buf_free(b->buf);
    free(b);
  }
}

void
bitmap_set_all(struct meta_bitmap *b, bool dirty)
{
  uint8_t *bits = b->buf + RAID_BITMAP_SB_BYTES;

  /* Only the bits of real chunks: what follows them stays zero, as md
   * leaves it. */
  memset(bits, 0, b->area - RAID_BITMAP_SB_BYTES);
  if (dirty) {
    memset(bits, 0xff, b->chunks / 8);
    if (b->chunks % 8)
      bits[b->chunks / 8] = (uint8_t)((1u << (b->chunks % 8)) - 1);
  }
}

void
bitmap_load_bits(struct meta_bitmap *b, const uint8_t *area, uint64_t len)
{
  uint8_t *bits = b->buf + RAID_BITMAP_SB_BYTES;
  uint64_t n = MIN(len, b->area) - RAID_BITMAP_SB_BYTES;

  if (len <= RAID_BITMAP_SB_BYTES)
    return;
  memcpy(bits, area + RAID_BITMAP_SB_BYTES, MIN(n, DIV_ROUND_UP(b->chunks, 8)));
  /* Nothing past the last chunk, as md leaves it. */
  if (b->chunks % 8 && b->chunks / 8 < n)
    bits[b->chunks / 8] &= (uint8_t)((1u << (b->chunks % 8)) - 1);
}

void
bitmap_coarsen(struct meta_bitmap *b)
{
  uint8_t *bits = b->buf + RAID_BITMAP_SB_BYTES;
  uint64_t k, n = b->chunks;

  b->sb.chunksize *= 2;
  b->chunks = raid_bitmap_chunks(&b->sb);
  /* In place, upwards: bit K is written after bits 2K and 2K + 1 (at or
   * above it) were read, and no later bit reads below 2K + 2. */
  for (k = 0; k < b->chunks; k++) {
    bool set = bits[2 * k / 8] & 1u << (2 * k % 8) ||
      (2 * k + 1 < n && bits[(2 * k + 1) / 8] & 1u << ((2 * k + 1) % 8));

    bits[k / 8] = (uint8_t)(set ? bits[k / 8] | 1u << (k % 8)
                            : bits[k / 8] & ~(1u << (k % 8)));
  }
  /* Nothing past the last chunk, as md leaves it. */
  if (b->chunks % 8)
    bits[b->chunks / 8] &= (uint8_t)((1u << (b->chunks % 8)) - 1);
  memset(bits + DIV_ROUND_UP(b->chunks, 8), 0,
         b->area - RAID_BITMAP_SB_BYTES - DIV_ROUND_UP(b->chunks, 8));
  b->area = bitmap_area_bytes(b->chunks, b->offset);
}

uint32_t
bitmap_refit_chunk(uint32_t chunk, uint64_t chunks, uint64_t sync_bytes)
{
  uint64_t space = DIV_ROUND_UP(DIV_ROUND_UP(chunks, 8) + RAID_BITMAP_SB_BYTES,
                                RAID_SECTOR_SIZE) * RAID_SECTOR_SIZE;
  uint64_t c = chunk;

  while (DIV_ROUND_UP(DIV_ROUND_UP(sync_bytes, c), 8) + RAID_BITMAP_SB_BYTES > space &&
         c < UINT32_C(1) << 31)
    c *= 2;
  return (uint32_t)c;
}

uint64_t
bitmap_dirty(const struct meta_bitmap *b, uint64_t *pages_used)
{
  const uint8_t *bits = b->buf + RAID_BITMAP_SB_BYTES;
  uint64_t p, pages = DIV_ROUND_UP(b->chunks, BITMAP_PAGE_CHUNKS), used = 0, c = 0;

  for (p = 0; p < pages; p++) {
    uint64_t lo = p * BITMAP_PAGE_CHUNKS, n = MIN(BITMAP_PAGE_CHUNKS, b->chunks - lo);
    uint64_t d = count_bits(bits + lo / 8, n);

    c += d;
    used += d > 0;
  }
  if (pages_used)
    *pages_used = used;
  return c;
}

int
bitmap_write(struct meta_bitmap *b, struct raid_member *m)
{
  uint64_t at;

  raid_bitmap_encode(&b->sb, b->buf);
  at = (m->super_offset + (int64_t)b->offset) << SECTOR_SHIFT;
  return member_pio(m, true, b->buf, b->area, at);
}
