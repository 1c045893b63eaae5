/* Description: md's internal write-intent bitmap on disk.  The bitmap
 * superblock encodes field by field at md's offsets and decodes back; each
 * thing md_bitmap_read_sb() refuses (magic, version, chunk size, daemon
 * sleep, write-behind) is refused with its own message; mdadm's placement
 * and chunk choice (4 KiB after a 1.1/1.2 superblock, before a 1.0 one with
 * the data ending there; 64 MiB chunks or larger when the bits would not
 * fit) come out as mdadm computes them; arrays created with a bitmap carry
 * it on every member (feature 0x1, the array's UUID); a write sets exactly
 * its chunks' bits on every member before it completes (RAID 1 and 5 map
 * member bytes, RAID 5 whole rows, RAID 10 array bytes), none are set
 * after a clean stop, events_cleared then equal to events; a crash copy
 * keeps the written chunk's bit and its resync goes over that chunk only
 * and leaves the copies consistent; with 64 KiB bitmap chunks a few
 * scattered 4 KiB writes cost a resync of about their chunks on each
 * member (bytes read counted), not a 1 MiB piece each; idle chunks are cleared after
 * daemon_sleep when in sync, kept while a member is failed; writes parked
 * for their bits all land; a member failed, removed and added again is
 * rebuilt over the set bits only (md's re-add), in full when bits were
 * cleared while it was away; assembly reads it back for levels 1, 5
 * and 10 and every metadata version, and refuses a member whose bitmap is
 * bad (naming the member and what is wrong) without writing anything;
 * RAID 0 refuses a bitmap; mdadm's default gives arrays of members over
 * 100 GiB a bitmap and smaller ones none.  A running array gets a bitmap
 * (mdadm --grow --bitmap=internal: every bit set on every member, then
 * superblocks pointing at it, data untouched) and loses it again; adding
 * a second one, removing none, RAID 0 and a metadata 1.0 array without
 * room are refused with nothing written. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "internal.h"
#include "md/meta.h"
#include "sync/engine.h"

#define MEMBER_SIZE (8u << 20)
#define MAXM 4

static uint64_t
le_get(const uint8_t *p, unsigned n)
{
  uint64_t v = 0;

  while (n--)
    v = v << 8 | p[n];
  return v;
}

static void
sample(struct raid_bitmap_super *b)
{
  unsigned i;

  memset(b, 0, sizeof *b);
  b->magic = RAID_BITMAP_MAGIC;
  b->version = RAID_BITMAP_VERSION;
  for (i = 0; i < 16; i++)
    b->uuid[i] = (uint8_t)(0xa0 + i);
  b->events = UINT64_C(0x1122334455667788);
  b->events_cleared = 41;
  b->sync_size = 2097152;
  b->state = RAID_BITMAP_STATE_STALE;
  b->chunksize = 64u << 20;
  b->daemon_sleep = 5;
  b->write_behind = 256;
  b->sectors_reserved = 24;
  b->nodes = 0;
  strcpy(b->cluster_name, "cl");
}

START_TEST(test_format)
{
  struct raid_bitmap_super b, got;
  uint8_t buf[RAID_BITMAP_SB_BYTES];
  unsigned i;

  sample(&b);
  memset(buf, 0xee, sizeof buf);
  raid_bitmap_encode(&b, buf);
  ck_assert_mem_eq(buf, "bitm", 4);                        /* 0x6d746962 LE */
  ck_assert_uint_eq(le_get(buf + 4, 4), 4);
  ck_assert_mem_eq(buf + 8, b.uuid, 16);
  ck_assert_uint_eq(le_get(buf + 24, 8), b.events);
  ck_assert_uint_eq(le_get(buf + 32, 8), 41);
  ck_assert_uint_eq(le_get(buf + 40, 8), 2097152);
  ck_assert_uint_eq(le_get(buf + 48, 4), 2);
  ck_assert_uint_eq(le_get(buf + 52, 4), 64u << 20);
  ck_assert_uint_eq(le_get(buf + 56, 4), 5);
  ck_assert_uint_eq(le_get(buf + 60, 4), 256);
  ck_assert_uint_eq(le_get(buf + 64, 4), 24);
  ck_assert_uint_eq(le_get(buf + 68, 4), 0);
  ck_assert_mem_eq(buf + 72, "cl\0\0", 4);
  for (i = 74; i < RAID_BITMAP_SB_BYTES; i++)
    ck_assert_msg(buf[i] == 0, "byte %u is 0x%02x", i, buf[i]);
  ck_assert_int_eq(raid_bitmap_decode(buf, "M", &got), 0);
  ck_assert_mem_eq(&got, &b, sizeof b);
  ck_assert_uint_eq(raid_bitmap_chunks(&got), 16);        /* 1 GiB / 64 MiB */
  got.sync_size = 2097153;
  ck_assert_uint_eq(raid_bitmap_chunks(&got), 17);        /* rounded up */
  /* Version 3 (md's host-endian one, the same on little-endian) reads. */
  buf[4] = 3;
  ck_assert_int_eq(raid_bitmap_decode(buf, "M", &got), 0);
}
END_TEST

struct bad {
  const char *what;
  unsigned off, len;
  uint64_t value;
  const char *expect;
};

static const struct bad bads[] = {
  { "magic", 0, 4, 0x6d746963, "member M: no bitmap superblock (magic 0x6d746963, expected 0x6d746962)" },
  { "version 5", 4, 4, 5, "member M: bitmap version 5 is md-cluster's clustered bitmap" },
  { "version 2", 4, 4, 2, "member M: bitmap version 2 is not one md has (3 or 4)" },
  { "version 6", 4, 4, 6, "member M: bitmap version 6 is not one md has" },
  { "chunk 256", 52, 4, 256, "member M: bitmap chunk size 256 bytes is too small (md needs at least 512)" },
  { "chunk 3 MiB", 52, 4, 3u << 20, "member M: bitmap chunk size 3145728 bytes is not a power of two" },
  { "daemon 0", 56, 4, 0, "member M: bitmap daemon_sleep is 0 seconds" },
  { "write-behind", 60, 4, 16384, "member M: bitmap write_behind 16384 is out of range (0 to 16383)" },
};

START_TEST(test_refusals)
{
  const struct bad *d = &bads[_i];
  struct raid_bitmap_super b, got;
  uint8_t buf[RAID_BITMAP_SB_BYTES];
  unsigned k;

  sample(&b);
  raid_bitmap_encode(&b, buf);
  for (k = 0; k < d->len; k++)
    buf[d->off + k] = (uint8_t)(d->value >> (8 * k));
  ck_assert_int_eq(raid_bitmap_decode(buf, "M", &got), -EINVAL);
  ck_assert_msg(strstr(raid_get_error(), d->expect), "%s: got \"%s\"", d->what,
                raid_get_error());
}
END_TEST

/* mdadm's add_internal_bitmap1() and write_init_super1(), by hand. */
START_TEST(test_plan)
{
  uint32_t chunk;
  int32_t off;

  /* Small members: 4 KiB of room, 64 MiB chunks, 4 KiB after 1.1/1.2. */
  ck_assert_int_eq(bitmap_plan("t", RAID_METADATA_1_2, 32768, 32768, 0, &chunk, &off), 0);
  ck_assert_uint_eq(chunk, 64u << 20);
  ck_assert_int_eq(off, 8);
  ck_assert_int_eq(bitmap_plan("t", RAID_METADATA_1_1, 32768, 32768, 0, &chunk, &off), 0);
  ck_assert_int_eq(off, 8);
  /* 1.0: one 4 KiB block for the bitmap, then 8 sectors mdadm keeps for a
   * bad block log, then the superblock. */
  ck_assert_int_eq(bitmap_plan("t", RAID_METADATA_1_0, 32768, 32768, 0, &chunk, &off), 0);
  ck_assert_int_eq(off, -16);
  ck_assert_uint_eq(raid_bitmap_space(RAID_METADATA_1_0, 32768), 16);
  ck_assert_uint_eq(raid_bitmap_space(RAID_METADATA_1_2, 32768), 0);
  /* An asked-for chunk whose bits fit: 4 KiB of room holds 30720 bits. */
  ck_assert_int_eq(bitmap_plan("t", RAID_METADATA_1_2, 32768, 32768, 4096, &chunk, &off), 0);
  ck_assert_uint_eq(chunk, 4096);
  /* 8 GiB members: still 4 KiB of room, so 4 KiB chunks do not fit
   * (2097153 bits) and the smallest that does is 512 KiB. */
  ck_assert_int_eq(bitmap_plan("t", RAID_METADATA_1_2, UINT64_C(16) << 20, UINT64_C(16) << 20,
                               4096, &chunk, &off), -EINVAL);
  ck_assert_msg(strstr(raid_get_error(), "bitmap chunk 4096 bytes is too small: its bits "
                       "would not fit the 4 KiB md keeps for the bitmap; it must be "
                       "at least 524288 bytes"), "%s", raid_get_error());
  /* 4 TiB members: 128 KiB of room (200 GiB and up), which 8 MiB chunks
   * fit and 4 MiB ones do not; the default stays 64 MiB; 1.0 puts 65537
   * bits in 12 KiB. */
  ck_assert_int_eq(bitmap_plan("t", RAID_METADATA_1_2, UINT64_C(8) << 30, UINT64_C(8) << 30,
                               0, &chunk, &off), 0);
  ck_assert_uint_eq(chunk, 64u << 20);
  ck_assert_uint_eq(raid_bitmap_space(RAID_METADATA_1_0, UINT64_C(8) << 30), 256 + 8);
  ck_assert_int_eq(bitmap_plan("t", RAID_METADATA_1_0, UINT64_C(8) << 30, UINT64_C(8) << 30,
                               0, &chunk, &off), 0);
  ck_assert_int_eq(off, -24 - 8);
  ck_assert_int_eq(bitmap_plan("t", RAID_METADATA_1_2, UINT64_C(8) << 30, UINT64_C(8) << 30,
                               8u << 20, &chunk, &off), 0);
  ck_assert_uint_eq(chunk, 8u << 20);
  ck_assert_int_eq(bitmap_plan("t", RAID_METADATA_1_2, UINT64_C(8) << 30, UINT64_C(8) << 30,
                               4u << 20, &chunk, &off), -EINVAL);
  /* 100 GiB members: 64 KiB of room. */
  ck_assert_uint_eq(raid_bitmap_space(RAID_METADATA_1_0, UINT64_C(200) << 21), 128 + 8);
}
END_TEST

/* Member I's superblock and bitmap; *DIRTY the bits set. */
static void
read_bm(const char *set, unsigned i, struct raid_superblock *sb,
        struct raid_bitmap_super *b, uint64_t *dirty)
{
  struct raid_member *m;
  char p[256];

  tfile_path(p, sizeof p, set, i);
  ck_assert_int_eq(raid_member_open(p, RAID_MEMBER_READONLY, &m), 0);
  ck_assert_msg(raid_superblock_read(m, sb) == 0, "%s", raid_get_error());
  ck_assert_msg(raid_bitmap_read(m, sb, b, dirty) == 0, "%s", raid_get_error());
  raid_member_close(m);
}

static struct raid_array *
create_bitmap_array(const char *set, int level, unsigned n, int metadata, uint32_t chunk)
{
  struct raid_config cfg = { .name = set, .level = level, .layout = RAID_LAYOUT_DEFAULT,
                             .chunk_size = 64 << 10, .raid_disks = n,
                             .metadata = metadata, .bitmap = RAID_BITMAP_INTERNAL,
                             .bitmap_chunk = chunk };
  struct raid_member *m[MAXM];
  struct raid_array *a;

  tfile_create(set, n, MEMBER_SIZE);
  tfile_open(set, NULL, n, m);
  ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  return a;
}

/* Overwrite LEN bytes at byte OFF of member I of SET. */
static void
poke(const char *set, unsigned i, uint64_t off, const void *bytes, size_t len)
{
  char p[256];
  int fd;

  tfile_path(p, sizeof p, set, i);
  fd = open(p, O_WRONLY);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(pwrite(fd, bytes, len, (off_t)off), (ssize_t)len);
  close(fd);
}

/* The resync or check of A to its end; the mismatches it found. */
static uint64_t
run_sync(struct raid_array *a, int action)
{
  struct raid_sync_status st;

  ck_assert_msg(raid_array_sync_start(a, action) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  raid_array_sync_status(a, &st);
  return st.last_mismatches;
}

/* The bitmap chunk (1 MiB) that a 64 KiB write at array byte 3 MiB sets:
 * RAID 1 covers member bytes, the same; RAID 5 (4 members, 64 KiB chunks)
 * the member bytes of the row: row 16, member bytes 1 MiB on; RAID 10 the
 * array's bytes. */
static uint64_t
written_chunk(int level)
{
  return level == 5 ? 1 : 3;
}

/* Levels 1, 5, 10 by metadata 1.0, 1.1, 1.2. */
START_TEST(test_lifecycle)
{
  static const int levels[] = { 1, 5, 10 };
  static const int versions[] = { RAID_METADATA_1_0, RAID_METADATA_1_1, RAID_METADATA_1_2 };
  int level = levels[_i / 3], version = versions[_i % 3];
  struct raid_superblock sb;
  struct raid_bitmap_super b;
  struct raid_bitmap_info info;
  struct raid_member *m[MAXM];
  struct raid_array *a;
  uint8_t data[65536], back[65536], bits[64], junk[4096];
  char set[32], crash[32], from[256], to[256];
  uint64_t dirty, chunks, nbits, k;
  unsigned i, n = 4;

  snprintf(set, sizeof set, "bl%d-%d-", level, _i % 3);
  snprintf(crash, sizeof crash, "bc%d-%d-", level, _i % 3);
  /* The copy below stands for a crash with the write in flight: safe
   * mode must not mark the array clean meanwhile (test-safemode.c
   * covers the idle crash). */
  safe_mode_set_default_delay(0);
  a = create_bitmap_array(set, level, n, version, 1 << 20);
  ck_assert_int_eq(raid_array_bitmap(a, &info), 0);
  ck_assert_int_eq(info.present, 1);
  ck_assert_uint_eq(info.chunk_size, 1 << 20);
  chunks = info.chunks;
  ck_assert_uint_eq(chunks, DIV_ROUND_UP((level == 10 ? raid_array_size(a)
                                          : raid_array_member_size(a)), 1 << 20));
  ck_assert_uint_eq(info.dirty, 0);               /* created clean, nothing written */
  ck_assert_uint_eq(info.pages, 1);
  ck_assert_uint_eq(info.pages_used, 0);
  for (i = 0; i < sizeof data; i++)
    data[i] = (uint8_t)(i * 13 + level);
  ck_assert_int_eq(raid_pwrite(a, data, sizeof data, 3 << 20, 0), 0);

  /* Every member, once the write is done: feature 0x1 at mdadm's place,
   * the array's UUID, exactly the written chunk's bit set, the same
   * events as the superblock. */
  for (i = 0; i < n; i++) {
    read_bm(set, i, &sb, &b, &dirty);
    ck_assert_uint_eq(sb.feature_map & RAID_SB_FEATURE_BITMAP, RAID_SB_FEATURE_BITMAP);
    if (version == RAID_METADATA_1_0) {
      ck_assert_int_eq(sb.bitmap_offset, -16);
      ck_assert_uint_eq(sb.data_offset + sb.data_size, sb.super_offset - 16);
      ck_assert_uint_eq(b.sectors_reserved, 16);
    }
    else {
      ck_assert_int_eq(sb.bitmap_offset, 8);
      ck_assert_uint_eq(b.sectors_reserved, 0);
    }
    ck_assert_mem_eq(b.uuid, sb.set_uuid, 16);
    ck_assert_uint_eq(b.version, 4);
    ck_assert_uint_eq(b.daemon_sleep, 5);
    ck_assert_uint_eq(b.write_behind, 0);
    ck_assert_uint_eq(b.chunksize, 1 << 20);
    ck_assert_uint_eq(b.events, sb.events);
    ck_assert_uint_eq(dirty, 1);
    tfile_bitmap_bits(set, i, bits, sizeof bits * 8, &nbits);
    for (k = 0; k < nbits; k++)
      ck_assert_msg(tbit(bits, k) == (k == written_chunk(level)),
                    "member %u: bit %" PRIu64 " is %d", i, k, tbit(bits, k));
  }
  ck_assert_int_eq(raid_array_bitmap(a, &info), 0);
  ck_assert_uint_eq(info.dirty, 1);
  /* A copy now is what a crash leaves. */
  for (i = 0; i < n; i++) {
    tfile_path(from, sizeof from, set, i);
    tfile_path(to, sizeof to, crash, i);
    tfile_copy(from, to);
  }
  raid_array_free(a);

  /* Clean stop: no bit set, events_cleared the last update's. */
  for (i = 0; i < n; i++) {
    read_bm(set, i, &sb, &b, &dirty);
    ck_assert_uint_eq(dirty, 0);
    ck_assert_uint_eq(b.events, sb.events);
    ck_assert_uint_eq(b.events_cleared, sb.events);
  }
  tfile_open(set, NULL, n, m);
  ck_assert_msg(raid_array_assemble(NULL, m, n, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_needs_resync(a), 0);
  ck_assert_int_eq(raid_array_bitmap(a, &info), 0);
  ck_assert_int_eq(info.present, 1);
  ck_assert_uint_eq(info.dirty, 0);
  ck_assert_int_eq(raid_pread(a, back, sizeof back, 3 << 20), 0);
  ck_assert_mem_eq(back, data, sizeof data);
  raid_array_free(a);

  /* The crash copy: the written chunk's bit set.  Make its copies
   * disagree there, as a write that reached one member only leaves them
   * (member 1's data where the write went: it holds a copy or parity of
   * it at every level here). */
  read_bm(crash, 0, &sb, &b, &dirty);
  ck_assert_uint_eq(dirty, 1);
  memset(junk, 0x5a, sizeof junk);
  tfile_read_sb(crash, 1, &sb);
  poke(crash, 1, (sb.data_offset << 9) + (level == 1 ? 3 << 20 : level == 5 ? 1 << 20
                                           : 3 << 19), junk, sizeof junk);
  tfile_open(crash, NULL, n, m);
  ck_assert_msg(raid_array_assemble(NULL, m, n, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_needs_resync(a), 1);
  ck_assert_int_eq(raid_array_resync(a, NULL, NULL), 0);
  /* Only the dirty chunk was resynced: one piece (1 MiB) of each member,
   * not the 7 or 8 MiB of a full resync; and it made it consistent. */
  ck_assert_uint_gt(sync_synced(a), 0);
  ck_assert_uint_le(sync_synced(a), 1 << 20);
  ck_assert_uint_eq(run_sync(a, RAID_SYNC_CHECK), 0);
  ck_assert_int_eq(raid_pread(a, back, sizeof back, 3 << 20), 0);
  ck_assert_mem_eq(back, data, sizeof data);
  raid_array_free(a);
  read_bm(crash, 2, &sb, &b, &dirty);
  ck_assert_uint_eq(dirty, 0);
  safe_mode_set_default_delay(SAFE_MODE_DELAY_MS);
}
END_TEST

/* Bitmap chunks smaller than the engine's 1 MiB pieces: a crash after a
 * few scattered 4 KiB writes leaves their 64 KiB chunks dirty, and the
 * resync reads each member over those chunks only (RAID 5 and 10: the
 * 64 KiB chunk rows holding them), as md's does, not a piece per chunk;
 * the copies agree afterwards.  Levels 1, 5 and 10 over 4 members. */
START_TEST(test_small_chunks)
{
  static const int levels[] = { 1, 5, 10 };
  static const uint64_t offs[] = { 300 << 10, 2100 << 10, 4500 << 10, 6100 << 10 };
  int level = levels[_i];
  struct raid_member_stats ms[MAXM];
  struct raid_array_stats st;
  struct raid_bitmap_info info;
  struct raid_superblock sb;
  struct raid_member *m[MAXM];
  struct raid_array *a;
  uint8_t data[4096], back[4096], junk[4096];
  char set[32], crash[32], from[256], to[256];
  uint64_t bound, piece_bound;
  unsigned i, k, n = 4;

  snprintf(set, sizeof set, "bs%d-", level);
  snprintf(crash, sizeof crash, "bsc%d-", level);
  safe_mode_set_default_delay(0);       /* the copy is a crash mid-write */
  a = create_bitmap_array(set, level, n, RAID_METADATA_1_2, 64 << 10);
  for (k = 0; k < ARRAY_SIZE(offs); k++) {
    memset(data, (int)(0x10 + k), sizeof data);
    ck_assert_int_eq(raid_pwrite(a, data, sizeof data, offs[k], 0), 0);
  }
  ck_assert_int_eq(raid_array_bitmap(a, &info), 0);
  ck_assert_uint_eq(info.chunk_size, 64 << 10);
  ck_assert_uint_eq(info.dirty, ARRAY_SIZE(offs));
  for (i = 0; i < n; i++) {
    tfile_path(from, sizeof from, set, i);
    tfile_path(to, sizeof to, crash, i);
    tfile_copy(from, to);
  }
  raid_array_free(a);

  /* The last write as if it reached one copy only: the member the
   * resync overwrites disagrees (RAID 1: the second mirror; RAID 5: row
   * 31, member bytes 1984 KiB on, parity on member 0; RAID 10 near 2:
   * array chunk 95, row 47, the second copy on member 3). */
  memset(junk, 0x5a, sizeof junk);
  i = level == 1 ? 1 : level == 5 ? 0 : 3;
  tfile_read_sb(crash, i, &sb);
  poke(crash, i, (sb.data_offset << 9) + (level == 1 ? offs[3] : level == 5 ? 1984 << 10
                                          : (47 << 16) + (20 << 10)), junk, sizeof junk);
  tfile_open(crash, NULL, n, m);
  ck_assert_msg(raid_array_assemble(NULL, m, n, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_needs_resync(a), 1);
  ck_assert_int_eq(raid_array_bitmap(a, &info), 0);
  ck_assert_uint_eq(info.dirty, ARRAY_SIZE(offs));
  raid_array_stats_reset(a);
  ck_assert_int_eq(raid_array_resync(a, NULL, NULL), 0);
  /* Each dirty chunk is one 64 KiB grain of each member (RAID 10's
   * member rows of 64 KiB hold two array chunks, one of them dirty). */
  bound = info.dirty * (64 << 10);
  piece_bound = 1 << 20;
  ck_assert_msg(sync_synced(a) > 0 && sync_synced(a) <= bound,
                "raid%d: resynced %" PRIu64 " bytes per member, more than %u dirty "
                "chunks of 64 KiB", level, sync_synced(a), (unsigned)info.dirty);
  ck_assert_int_eq(raid_array_stats(a, &st, ms, MAXM), (int)n);
  for (i = 0; i < n; i++)
    ck_assert_msg(ms[i].io.read_bytes > 0 && ms[i].io.read_bytes <= bound &&
                  ms[i].io.read_bytes < piece_bound,
                  "raid%d: the resync read %" PRIu64 " bytes of member %u, not at most "
                  "%" PRIu64 " (%u dirty chunks of 64 KiB)", level, ms[i].io.read_bytes,
                  i, bound, (unsigned)info.dirty);
  ck_assert_uint_eq(run_sync(a, RAID_SYNC_CHECK), 0);
  for (k = 0; k < ARRAY_SIZE(offs); k++) {
    memset(data, (int)(0x10 + k), sizeof data);
    ck_assert_int_eq(raid_pread(a, back, sizeof back, offs[k]), 0);
    ck_assert_mem_eq(back, data, sizeof back);
  }
  raid_array_free(a);
  safe_mode_set_default_delay(SAFE_MODE_DELAY_MS);
}
END_TEST

static void
count_done(void *opaque, int err)
{
  int *left = opaque;

  ck_assert_int_eq(err, 0);
  (*left)--;
}

/* md's lazy clearing: a chunk idle for daemon_sleep (shortened here) with
 * every role in sync loses its bit on every member, events_cleared then
 * the current events; while a member is failed the bits stay (md keeps
 * them for its return), and a bitmap without a writer pass leaves them.
 * Discards and write zeroes set bits like writes. */
START_TEST(test_clear)
{
  struct raid_superblock sb;
  struct raid_bitmap_super b;
  struct raid_array *a;
  struct raid_queue *q;
  uint8_t data[8192], bits[64];
  uint64_t dirty = 0, nbits, events;
  unsigned i, tries;
  int left = 2;

  a = create_bitmap_array("bclr", 1, 3, RAID_METADATA_1_2, 1 << 20);
  memset(data, 0x33, sizeof data);
  ck_assert_int_eq(raid_pwrite(a, data, sizeof data, 5 << 20, 0), 0);
  ck_assert_int_eq(raid_queue_new(0, &q), 0);
  ck_assert_int_eq(raid_aio_write_zeroes(q, a, 4096, 2 << 20, 0, count_done, &left), 0);
  ck_assert_int_eq(raid_aio_discard(q, a, 1 << 20, 0, count_done, &left), 0);
  while (left > 0)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
  raid_queue_free(q);
  tfile_bitmap_bits("bclr", 0, bits, sizeof bits * 8, &nbits);
  ck_assert(tbit(bits, 5) && tbit(bits, 2) && tbit(bits, 0));
  read_bm("bclr", 1, &sb, &b, &dirty);
  ck_assert_uint_eq(dirty, 3);
  events = sb.events;

  /* Idle and in sync: cleared within two passes of 50 ms, events_cleared
   * then the events of that moment: at least those after the writes, and
   * at most the superblock's (safe mode's clean update, which does not
   * touch the bits, may bump them before or after; md's too).  (read_bm()
   * reads the bitmap superblock and the bits apart: a look between them
   * may see the bits of a write and the superblock from before it.) */
  bitmap_run_set_period(a, 50);
  for (tries = 0; tries < 200; tries++) {
    read_bm("bclr", 2, &sb, &b, &dirty);
    if (dirty == 0 && b.events_cleared >= events && b.events_cleared <= sb.events)
      break;
    usleep(20000);
  }
  ck_assert_uint_eq(dirty, 0);
  ck_assert_uint_ge(b.events_cleared, events);
  ck_assert_uint_le(b.events_cleared, sb.events);
  ck_assert_uint_eq(b.events, sb.events);

  /* A member fails: new bits stay set, pass after pass. */
  ck_assert_int_eq(raid_array_fail_member(a, 2), 0);
  ck_assert_int_eq(raid_pwrite(a, data, sizeof data, 6 << 20, 0), 0);
  usleep(400000);                       /* eight passes */
  for (i = 0; i < 2; i++) {
    read_bm("bclr", i, &sb, &b, &dirty);
    ck_assert_uint_eq(dirty, 1);
  }
  raid_array_free(a);
  /* Stopped degraded: the bit is kept for the member's return. */
  read_bm("bclr", 0, &sb, &b, &dirty);
  ck_assert_uint_eq(dirty, 1);
}
END_TEST

/* md's re-add: a member failed and removed comes back (added again, its
 * superblock the array's, its events not behind the bitmap's
 * events_cleared): it goes back into its role and only the chunks with
 * bits set (written while it was away, or before, since nothing is
 * cleared while degraded) are rebuilt; the mirrors agree afterwards.  A
 * member that was away while bits were cleared (another member rebuilt in
 * its place) is rebuilt in full. */
START_TEST(test_readd)
{
  struct raid_bitmap_info info;
  struct raid_array *a;
  struct raid_member *m;
  uint8_t data[8192], back[8192];
  char p[256], x[256];
  uint64_t cleared;
  unsigned tries;
  int role;

  a = create_bitmap_array("bra", 1, 3, RAID_METADATA_1_2, 1 << 20);
  memset(data, 0x42, sizeof data);
  ck_assert_int_eq(raid_pwrite(a, data, sizeof data, 1 << 20, 0), 0);
  ck_assert_int_eq(raid_array_fail_member(a, 1), 0);
  tfile_path(p, sizeof p, "bra", 1);
  ck_assert_msg(raid_array_remove_member(a, p, 0) == 0, "%s", raid_get_error());
  memset(data, 0x43, sizeof data);
  ck_assert_int_eq(raid_pwrite(a, data, sizeof data, 5 << 20, 0), 0);

  ck_assert_int_eq(raid_member_open(p, 0, &m), 0);
  ck_assert_msg(raid_array_add_member(a, m, &role) == 0, "%s", raid_get_error());
  ck_assert_int_eq(role, 1);
  ck_assert_uint_eq(run_sync(a, RAID_SYNC_RECOVER), 0);
  ck_assert_int_eq(raid_array_degraded(a), 0);
  /* Chunks 1 and 5: two 1 MiB pieces of the 7 MiB a full rebuild copies. */
  ck_assert_uint_gt(sync_synced(a), 0);
  ck_assert_uint_le(sync_synced(a), 2 << 20);
  ck_assert_uint_eq(run_sync(a, RAID_SYNC_CHECK), 0);
  ck_assert_int_eq(raid_pread(a, back, sizeof back, 5 << 20), 0);
  ck_assert_mem_eq(back, data, sizeof back);

  /* Member 2 leaves; a new member takes its role and is rebuilt; the
   * bits clear (events_cleared moves past member 2's events). */
  ck_assert_int_eq(raid_array_fail_member(a, 2), 0);
  tfile_path(p, sizeof p, "bra", 2);
  ck_assert_msg(raid_array_remove_member(a, p, 0) == 0, "%s", raid_get_error());
  tfile_create("brx", 1, MEMBER_SIZE);
  tfile_path(x, sizeof x, "brx", 0);
  ck_assert_int_eq(raid_member_open(x, 0, &m), 0);
  ck_assert_msg(raid_array_add_member(a, m, &role) == 0, "%s", raid_get_error());
  ck_assert_int_eq(role, 2);
  ck_assert_uint_eq(run_sync(a, RAID_SYNC_RECOVER), 0);
  ck_assert_uint_eq(sync_synced(a), raid_array_member_size(a));
  ck_assert_int_eq(raid_array_bitmap(a, &info), 0);
  cleared = info.events_cleared;
  bitmap_run_set_period(a, 20);
  for (tries = 0; tries < 250; tries++) {
    ck_assert_int_eq(raid_array_bitmap(a, &info), 0);
    if (info.dirty == 0 && info.events_cleared > cleared)
      break;
    usleep(20000);
  }
  ck_assert_uint_eq(info.dirty, 0);
  ck_assert_uint_gt(info.events_cleared, cleared);
  /* The old member 2 comes back in place of the new one: full rebuild. */
  ck_assert_int_eq(raid_array_fail_member(a, 2), 0);
  ck_assert_msg(raid_array_remove_member(a, x, 0) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_member_open(p, 0, &m), 0);
  ck_assert_msg(raid_array_add_member(a, m, &role) == 0, "%s", raid_get_error());
  ck_assert_int_eq(role, 2);
  ck_assert_uint_eq(run_sync(a, RAID_SYNC_RECOVER), 0);
  ck_assert_uint_eq(sync_synced(a), raid_array_member_size(a));
  ck_assert_uint_eq(run_sync(a, RAID_SYNC_CHECK), 0);
  raid_array_free(a);
}
END_TEST

/* Many writers at once on chunks without bits: each is parked until its
 * bits are written, one bitmap write serving many, and every one lands. */

START_TEST(test_parked)
{
  struct raid_queue *q;
  struct raid_array *a;
  static uint8_t data[16][4096], back[4096];
  uint64_t dirty;
  struct raid_superblock sb;
  struct raid_bitmap_super b;
  int left = 16;
  unsigned i;

  a = create_bitmap_array("bpark", 5, 4, RAID_METADATA_1_2, 64 << 10);
  ck_assert_int_eq(raid_queue_new(0, &q), 0);
  for (i = 0; i < 16; i++) {
    memset(data[i], (int)(i + 1), sizeof data[i]);
    ck_assert_int_eq(raid_aio_write(q, a, data[i], sizeof data[i],
                                    (uint64_t)i * (192 << 10), 0, count_done, &left), 0);
  }
  while (left > 0)
    ck_assert_int_ge(raid_queue_run(q, 1), 0);
  raid_queue_free(q);
  /* RAID 5 rows of 192 KiB: row i is member bytes i * 64 KiB, chunk i. */
  read_bm("bpark", 3, &sb, &b, &dirty);
  ck_assert_uint_eq(dirty, 16);
  for (i = 0; i < 16; i++) {
    ck_assert_int_eq(raid_pread(a, back, sizeof back, (uint64_t)i * (192 << 10)), 0);
    ck_assert_mem_eq(back, data[i], sizeof back);
  }
  raid_array_free(a);
}
END_TEST

static void
read_file(const char *set, unsigned i, uint8_t *buf, size_t len)
{
  char p[256];
  FILE *f;

  tfile_path(p, sizeof p, set, i);
  f = fopen(p, "rb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fread(buf, 1, len, f), len);
  fclose(f);
}

START_TEST(test_assemble_refusals)
{
  static const struct {
    unsigned off;               /* into the bitmap superblock */
    uint8_t byte;
    const char *expect;
  } cases[] = {
    { 0, 0x00, "no bitmap superblock (magic 0x6d746900" },
    { 4, 0x05, "bitmap version 5 is md-cluster's" },
    { 9, 0x5a, "bitmap UUID" },
    { 52, 0x03, "not a power of two" },
  };
  struct raid_superblock sb;
  struct raid_member *m[3];
  struct raid_array *a;
  uint8_t *before = malloc(1 << 20), *after = malloc(1 << 20);
  char set[32], who[256];
  unsigned k = (unsigned)_i;

  snprintf(set, sizeof set, "br%u-", k);
  a = create_bitmap_array(set, 1, 3, RAID_METADATA_1_2, 0);
  raid_array_free(a);
  tfile_read_sb(set, 1, &sb);
  poke(set, 1, ((sb.super_offset + 8) << 9) + cases[k].off, &cases[k].byte, 1);
  read_file(set, 0, before, 1 << 20);
  tfile_open(set, NULL, 3, m);
  ck_assert_int_eq(raid_array_assemble(NULL, m, 3, 0, &a), -EINVAL);
  tfile_path(who, sizeof who, set, 1);
  ck_assert_msg(strstr(raid_get_error(), cases[k].expect) &&
                strstr(raid_get_error(), who) && strstr(raid_get_error(), "assemble"),
                "got \"%s\"", raid_get_error());
  tfile_close(m, 3);
  /* Refused: nothing written (member 0's metadata unchanged). */
  read_file(set, 0, after, 1 << 20);
  ck_assert_mem_eq(before, after, 1 << 20);
  free(before);
  free(after);
}
END_TEST

START_TEST(test_raid0_refused)
{
  struct raid_config cfg = { .name = "b0", .level = 0, .layout = RAID_LAYOUT_DEFAULT,
                             .raid_disks = 2, .bitmap = RAID_BITMAP_INTERNAL };
  uint64_t sizes[2] = { MEMBER_SIZE, MEMBER_SIZE };
  struct raid_member *m[2];
  struct raid_array *a;

  ck_assert_int_eq(raid_config_check(&cfg, sizes, NULL, NULL), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "RAID 0 cannot have a write-intent bitmap"));
  tfile_create("b0-", 2, MEMBER_SIZE);
  tfile_open("b0-", NULL, 2, m);
  ck_assert_int_eq(raid_array_create(&cfg, m, 0, &a), -EINVAL);
  tfile_close(m, 2);
  cfg.level = 1;
  cfg.bitmap_chunk = 3000;
  ck_assert_int_eq(raid_config_check(&cfg, sizes, NULL, NULL), -EINVAL);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "bitmap chunk 3000 bytes is invalid"));
}
END_TEST

/* mdadm's default: members holding more than 100 GiB get a bitmap. */
START_TEST(test_default)
{
  static const uint64_t extra[] = { 1u << 20, 2u << 20 };   /* + the data offset */
  struct raid_config cfg = { .name = "bd", .level = 1, .layout = RAID_LAYOUT_DEFAULT,
                             .raid_disks = 2 };
  struct raid_member *m[2];
  struct raid_array *a;
  struct raid_bitmap_info info;
  char p[2][512];
  unsigned i, k = (unsigned)_i;
  int fd;

  for (i = 0; i < 2; i++) {
    snprintf(p[i], sizeof p[i], "%s/big%u-%u.img", test_dir(), k, i);
    fd = open(p[i], O_CREAT | O_RDWR | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, (off_t)((UINT64_C(100) << 30) + extra[k])), 0);
    close(fd);
    ck_assert_int_eq(raid_member_open(p[i], 0, &m[i]), 0);
  }
  ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  ck_assert_int_eq(raid_array_bitmap(a, &info), 0);
  ck_assert_int_eq(info.present, k == 1);
  if (k == 1) {
    ck_assert_uint_eq(info.chunk_size, 64u << 20);
    ck_assert_uint_eq(info.chunks, 1601);
  }
  raid_array_free(a);
  for (i = 0; i < 2; i++)
    unlink(p[i]);
}
END_TEST

/* raid_array_set_bitmap() on running arrays. */
START_TEST(test_grow)
{
  struct raid_config cfg = { .name = "bg", .level = 5, .layout = RAID_LAYOUT_DEFAULT,
                             .chunk_size = 64 << 10, .raid_disks = 3 };
  struct raid_member *m[3];
  struct raid_array *a;
  struct raid_superblock sb;
  struct raid_bitmap_super b;
  struct raid_bitmap_info info;
  uint8_t data[65536], back[65536];
  uint8_t *before = malloc(1 << 20), *after = malloc(1 << 20);
  uint64_t dirty;
  unsigned i;

  tfile_create("bg-", 3, MEMBER_SIZE);
  tfile_open("bg-", NULL, 3, m);
  ck_assert_int_eq(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a), 0);
  for (i = 0; i < sizeof data; i++)
    data[i] = (uint8_t)(i * 31);
  ck_assert_int_eq(raid_pwrite(a, data, sizeof data, 1 << 20, 0), 0);
  ck_assert_int_eq(raid_array_set_bitmap(a, RAID_BITMAP_NONE, 0), -ENOENT);
  ck_assert_int_eq(raid_array_set_bitmap(a, RAID_BITMAP_INTERNAL, 3000), -EINVAL);
  ck_assert_msg(raid_array_set_bitmap(a, RAID_BITMAP_INTERNAL, 1 << 20) == 0, "%s",
                raid_get_error());
  ck_assert_int_eq(raid_array_bitmap(a, &info), 0);
  ck_assert_int_eq(info.present, 1);
  ck_assert_uint_eq(info.dirty, info.chunks);
  for (i = 0; i < 3; i++) {
    read_bm("bg-", i, &sb, &b, &dirty);
    ck_assert_int_eq(sb.bitmap_offset, 8);
    ck_assert_uint_eq(dirty, raid_bitmap_chunks(&b));
    ck_assert_uint_eq(b.events, sb.events);
  }
  ck_assert_int_eq(raid_array_set_bitmap(a, RAID_BITMAP_INTERNAL, 0), -EEXIST);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "has a write-intent bitmap already"));
  ck_assert_int_eq(raid_pread(a, back, sizeof back, 1 << 20), 0);
  ck_assert_mem_eq(back, data, sizeof data);
  raid_array_free(a);
  read_bm("bg-", 1, &sb, &b, &dirty);
  ck_assert_uint_eq(dirty, 0);

  /* It assembles with it; removing it clears the feature bit. */
  tfile_open("bg-", NULL, 3, m);
  ck_assert_msg(raid_array_assemble(NULL, m, 3, 0, &a) == 0, "%s", raid_get_error());
  ck_assert_int_eq(raid_array_set_bitmap(a, RAID_BITMAP_NONE, 0), 0);
  ck_assert_int_eq(raid_array_bitmap(a, &info), 0);
  ck_assert_int_eq(info.present, 0);
  tfile_read_sb("bg-", 2, &sb);
  ck_assert_uint_eq(sb.feature_map & RAID_SB_FEATURE_BITMAP, 0);
  ck_assert_int_eq(raid_pread(a, back, sizeof back, 1 << 20), 0);
  ck_assert_mem_eq(back, data, sizeof data);
  raid_array_free(a);
  tfile_read_sb("bg-", 0, &sb);
  ck_assert_uint_eq(sb.feature_map & RAID_SB_FEATURE_BITMAP, 0);

  /* Metadata 1.0 made without one: refused (only create places one
   * there), nothing written. */
  cfg.name = "bg10";
  cfg.metadata = RAID_METADATA_1_0;
  tfile_create("bg10-", 3, MEMBER_SIZE);
  tfile_open("bg10-", NULL, 3, m);
  ck_assert_int_eq(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a), 0);
  read_file("bg10-", 0, before, 1 << 20);
  ck_assert_int_eq(raid_array_set_bitmap(a, RAID_BITMAP_INTERNAL, 0), -ENOSPC);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "metadata 1.0 keeps the bitmap"));
  read_file("bg10-", 0, after, 1 << 20);
  ck_assert_mem_eq(before, after, 1 << 20);
  raid_array_free(a);

  /* RAID 0. */
  cfg.name = "bg0";
  cfg.level = 0;
  cfg.metadata = 0;
  tfile_create("bg0-", 2, MEMBER_SIZE);
  tfile_open("bg0-", NULL, 2, m);
  cfg.raid_disks = 2;
  ck_assert_int_eq(raid_array_create(&cfg, m, 0, &a), 0);
  ck_assert_int_eq(raid_array_set_bitmap(a, RAID_BITMAP_INTERNAL, 0), -EINVAL);
  raid_array_free(a);
  free(before);
  free(after);
}
END_TEST

static Suite *
bitmap_suite(void)
{
  Suite *s = suite_create("bitmap");
  TCase *tc = test_tcase("bitmap");

  tcase_add_test(tc, test_format);
  tcase_add_loop_test(tc, test_refusals, 0, ARRAY_SIZE(bads));
  tcase_add_test(tc, test_plan);
  tcase_add_loop_test(tc, test_lifecycle, 0, 9);
  tcase_add_loop_test(tc, test_small_chunks, 0, 3);
  tcase_add_test(tc, test_clear);
  tcase_add_test(tc, test_parked);
  tcase_add_test(tc, test_readd);
  tcase_add_loop_test(tc, test_assemble_refusals, 0, 4);
  tcase_add_test(tc, test_raid0_refused);
  tcase_add_loop_test(tc, test_default, 0, 2);
  tcase_add_test(tc, test_grow);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  test_init("test-bitmap");
  raid_set_log_handler(NULL, NULL, -1);
  return test_run_suite(bitmap_suite());
}
