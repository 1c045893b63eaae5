/* md/'s calls for the floors above it: the sync engine (sync/), the top
 * (manage.c, blocking.c) and the unit tests.  The core never includes
 * this: it reaches md/ through struct meta_ops and the write gates
 * (internal.h, "the doors").  What only md/'s own files share is md.h. */
#ifndef RAID_MD_META_H
#define RAID_MD_META_H

#include "internal.h"

/* ---- md/bitmap.c ---------------------------------------------------------------- */

/* md's in-memory counters: 2048 chunks to a 4 KiB page (/proc/mdstat's
 * "bitmap: N/M pages"). */
#define BITMAP_PAGE_CHUNKS 2048u

/* A running array's bitmap: the image of its on-disk area (superblock and
 * bits), the same on every member.  Owned by md/meta.c and used under the
 * array_meta lock only. */
struct meta_bitmap {
  struct raid_bitmap_super sb;
  int32_t offset;                /* sectors from each member's superblock */
  uint64_t chunks;               /* bits */
  uint64_t area;                 /* bytes written: sb + bits, rounded */
  uint8_t *buf;                  /* area bytes, RAID_BUF_ALIGN */
};
/* B over chunks twice as large, each bit the OR of the two it covered
 * (md's md_bitmap_resize() to a larger chunk keeps every dirty chunk
 * dirty); its area shrinks to fit the bits. */
void bitmap_coarsen(struct meta_bitmap *b);

/* md's md_bitmap_resize() with no chunk asked for, where md knows no
 * room but what the bitmap takes now (metadata 1.1 and 1.2): CHUNK bytes,
 * doubled until the bits over SYNC_BYTES fit the sectors that CHUNKS bits
 * take. */
uint32_t bitmap_refit_chunk(uint32_t chunk, uint64_t chunks, uint64_t sync_bytes);
/* A reshape has started (its shapes and superblocks set): a bitmap that
 * no longer covers what it must (a RAID 10 to more members: the larger
 * size, bitmap_sync_size()) is put back over it, clear of both data
 * offsets, its chunk bitmap_refit_chunk()'s.  0 (nothing to do, or done)
 * or -errno (the array may be left without its bitmap). */
int meta_bitmap_refit(struct raid_array *a);

/* Bytes the bitmap of CHUNKS bits occupies at OFFSET, rounded as mdadm
 * writes it. */
uint64_t bitmap_area_bytes(uint64_t chunks, int32_t offset);
/* mdadm's placement for a new array (add_internal_bitmap1()): the chunk
 * (WANT_CHUNK, or 0 for the default) and bitmap_offset for metadata
 * VERSION, members of MEMBER_SECTORS of data, a bitmap over SYNC_SIZE
 * sectors.  0, or -errno naming array ANAME. */
int bitmap_plan(const char *aname, int version, uint64_t member_sectors, uint64_t sync_size,
                uint32_t want_chunk, uint32_t *chunkp, int32_t *offsetp);
/* The chunk for a bitmap over SYNC_SIZE sectors whose superblock and bits
 * must fit ROOM sectors (capped at mdadm's 128 KiB without WANT_CHUNK). */
int bitmap_choose_chunk(const char *aname, uint64_t room, uint64_t sync_size,
                        uint32_t want_chunk, uint32_t *chunkp);
/* Is a bitmap of AREA bytes at OFFSET clear of SB's data and superblock? */
int bitmap_check_place(const struct raid_superblock *sb, int32_t offset, uint64_t area,
                       const char *who);
/* Read and check the bitmap at OFFSET from member M's superblock SB (the
 * array's set UUID in SB): *B, and with AREAP the whole area (freed with
 * raid_buf_free()) and its length. */
int bitmap_load(struct raid_member *m, const struct raid_superblock *sb, int32_t offset,
                struct raid_bitmap_super *b, uint8_t **areap, uint64_t *area_len);
int bitmap_new(const struct raid_bitmap_super *sb, int32_t offset, struct meta_bitmap **bp);
void bitmap_free(struct meta_bitmap *b);
/* Take the bits of a bitmap area read from a member (bitmap_load()). */
void bitmap_load_bits(struct meta_bitmap *b, const uint8_t *area, uint64_t len);
/* Set every chunk's bit (DIRTY) or clear them all, in memory. */
void bitmap_set_all(struct meta_bitmap *b, bool dirty);
/* Bits set, and (PAGES_USED) md's counter pages that hold any. */
uint64_t bitmap_dirty(const struct meta_bitmap *b, uint64_t *pages_used);
/* Write the superblock (from B->sb) and bits to member M, flushed. */
int bitmap_write(struct meta_bitmap *b, struct raid_member *m);

/* ---- md/safemode.c ---------------------------------------------------------------- */

/* md's safe mode (the file's top comment): superblocks "clean" once no
 * write has been in flight for the delay, "active" again before the next
 * write reaches a member. */
#define SAFE_MODE_DELAY_MS 200u          /* md's safe_mode_delay default */
struct safe_mode;
/* Start A's safe mode; the superblocks say "active" (meta_start()). */
int safe_mode_new(struct raid_array *a, struct safe_mode **smp);
/* Stop the thread and free; no request may use SM any more.  NULL is fine. */
void safe_mode_free(struct safe_mode *sm);
/* Its gate (a->gate[GATE_SAFE], a struct write_gate): a write goes on
 * when the superblocks say "active", else it is parked until they do. */
struct write_gate *safe_mode_gate(struct safe_mode *sm);
/* A's safe mode, or NULL; _take() also takes it out of A's gates. */
struct safe_mode *safe_mode_of(const struct raid_array *a);
struct safe_mode *safe_mode_take(struct raid_array *a);
/* Tests: the idle time before "clean", in milliseconds (0: never, as
 * md's safe_mode_delay 0), of A, or of the arrays started from now on in
 * this process (a test whose copies of running members stand for a crash
 * while writes run). */
void safe_mode_set_delay(struct raid_array *a, unsigned ms);
void safe_mode_set_default_delay(unsigned ms);

/* ---- md/bitmap-run.c ------------------------------------------------------------ */

/* The write-intent bitmap of a running array: per-chunk counts, the gate
 * writes pass, the writer thread that sets and clears bits (the file's
 * top comment). */
struct bitmap_run;
/* Start the run of A's bitmap image BM (its bits are on the members). */
int bitmap_run_new(struct raid_array *a, struct meta_bitmap *bm, struct bitmap_run **runp);
/* Stop the writer and free; nothing may use RUN any more.  NULL is fine. */
void bitmap_run_free(struct bitmap_run *run);
/* Its gate (a->gate[GATE_BITMAP], a struct write_gate): a write goes on
 * when every chunk it writes has its bit on stable storage, else it is
 * parked until the writer has written them.  Its BEHIND is the bitmap
 * superblock's write_behind. */
struct write_gate *bitmap_run_gate(struct bitmap_run *run);
/* A's bitmap run, or NULL; _take() also takes it out of A's gates. */
struct bitmap_run *bitmap_run_of(const struct raid_array *a);
struct bitmap_run *bitmap_run_take(struct raid_array *a);
/* Bytes [*LO, *HI) of the space the bitmap covers that array bytes
 * [OFF, OFF + LEN) write, and that member bytes [POS, POS + LEN) hold. */
void bitmap_map_request(const struct raid_array *a, uint64_t off, uint64_t len,
                        uint64_t *lo, uint64_t *hi);
void bitmap_map_member(const struct raid_array *a, uint64_t pos, uint64_t len,
                       uint64_t *lo, uint64_t *hi);
/* May member bytes [POS, POS + LEN) disagree (a bit set or being set)?
 * True without a bitmap. */
bool bitmap_run_dirty(struct raid_array *a, uint64_t pos, uint64_t len);
/* Tests: a clearing pass every MS milliseconds instead of daemon_sleep. */
void bitmap_run_set_period(struct raid_array *a, unsigned ms);

/* ---- md/resize.c ---------------------------------------------------------- */

/* The superblocks say each member holds NEW bytes of data (it held OLD);
 * with RESYNC and NEW > OLD the bytes from OLD on are due a resync (md's
 * recovery_cp).  Events are bumped.  0, or -errno when no member took it
 * (nothing changed then).  The caller publishes the array's new sizes:
 * after this when growing, before it (and a quiesce) when shrinking. */
int meta_set_size(struct raid_array *a, uint64_t old, uint64_t new, bool resync);
/* Where data may end on a member of SIZE bytes that grew (md's room:
 * metadata 1.0 keeps a bitmap's and a bad block log's room below its
 * superblock at the end).  Bytes. */
uint64_t meta_grow_end(const struct raid_array *a, uint64_t size);
/* Where the room before each member's data starts, in bytes from its
 * superblock (metadata 1.1 and 1.2): the end of the superblock, of the
 * bitmap after it and of the bad block log, as mdadm measures it (a
 * reshape may move the data offset down to it).  Caller holds the meta
 * lock (meta_lock()), which keeps a bitmap from being added meanwhile. */
uint64_t meta_room_offset_locked(struct raid_array *a);
/* The superblocks say the array has N roles (a->raid_disks, already N,
 * and its members' roles, which the caller set): events bumped.  0, or
 * -errno when no member took it. */
int meta_set_disks(struct raid_array *a, unsigned n);
/* The superblocks say level LEVEL, LAYOUT, CHUNK_SECTORS and DISKS roles
 * (a takeover: the members' bytes stay): events bumped.  0, or -errno
 * (nothing said). */
int meta_set_level(struct raid_array *a, int level, int layout, uint32_t chunk_sectors,
                   unsigned disks);

/* A reshape's superblocks (md's fields, see resize.c): it starts (A has
 * its new roles, a->geo_new the new shape, OLD_DISKS members before), it
 * has moved POS array bytes (a checkpoint), it is done (the members' data
 * offsets move to the new shape's).  Events bumped.  0 or -errno. */
int meta_reshape_start(struct raid_array *a, unsigned old_disks);
int meta_reshape_checkpoint(struct raid_array *a, uint64_t pos);
int meta_reshape_finish(struct raid_array *a);

/* ---- md/meta.c ------------------------------------------------------------ */

/* The bitmap writer's access to the metadata (bitmap-run.c): the lock
 * that serialises superblock writes, the image while holding it, whether
 * bits may be cleared now (every role in sync, nothing being rebuilt or
 * replaced, no resync due), events_cleared brought to the events, and the
 * pages of the image marked in PAGES[0..NPAGES) (NULL: all) written to
 * every live member, flushed.  0 when any member took them. */
void meta_lock(struct raid_array *a);
void meta_unlock(struct raid_array *a);
struct meta_bitmap *meta_bitmap_locked(struct raid_array *a);
bool meta_bitmap_may_clear(struct raid_array *a);
/* md's re-add test: the role member M held in A when it left, when its
 * superblock says it is A's and its events are at least the bitmap's
 * events_cleared (every write it missed has its bit set) and not ahead of
 * A's; else -1.  Reads M's superblock; writes nothing. */
int meta_bitmap_readd_role(struct raid_array *a, struct raid_member *m);
void meta_bitmap_cleared_locked(struct raid_array *a);
int meta_bitmap_write_pages_locked(struct raid_array *a, const uint8_t *pages,
                                   uint64_t npages);

/* RAID_METADATA_* for a config's metadata field (0: the default), or -1. */
int meta_version(int config_metadata);
/* Bytes of a member of SIZE bytes that can hold data under VERSION: all of
 * it, or (1.0) up to its superblock near the end, less RESERVE bytes kept
 * before it for a bitmap; 0 if it cannot hold one. */
uint64_t meta_data_end(int version, uint64_t reserve, uint64_t size);
/* The RESERVE for a member of SIZE bytes of array A (a bitmap's room under
 * metadata 1.0, else 0). */
uint64_t meta_bitmap_reserve(const struct raid_array *a, uint64_t size);

/* Write the superblocks after a state change (member failed): events are
 * bumped and every live member gets the new roles.  Synchronous. */
void meta_member_failed(struct raid_array *a, unsigned slot);
/* Return once the superblocks on stable storage record every role failure
 * made so far (a->fail_gen): at once when they do (two atomic loads),
 * after the update in progress when that one records them, else after
 * writing them.  Synchronous; any thread not holding conf_lock. */
void meta_failures_recorded(struct raid_array *a);
/* Clean shutdown: mark clean and write. */
void meta_stop(struct raid_array *a);
/* Safe mode (safemode.c): write every member's superblock "clean" (what
 * meta_stop() writes) or "active", events bumped.  0 or -errno. */
int meta_mark_clean(struct raid_array *a);
int meta_mark_active(struct raid_array *a);
/* False when every member says "active" (no clean update has begun since
 * the last active one was written): a crash now needs a resync.  Unlike
 * raid_array_clean(), true as soon as a clean update begins. */
bool meta_may_say_clean(struct raid_array *a);
/* Wait for any superblock update in progress: one that began before the
 * call may still be writing to a member that has left the array since. */
void meta_barrier(struct raid_array *a);
/* Write every live member's superblock after a membership change (events
 * bumped).  0 or -errno. */
int meta_update(struct raid_array *a);
/* Record rebuild / resync progress in the superblocks without bumping
 * events: recovering members and replacements get their recovery offset,
 * RESYNC_DONE (bytes, or UINT64_MAX) is kept for a clean stop. */
void meta_checkpoint(struct raid_array *a, uint64_t resync_done);
/* Give M a device number and UUID of its own in A's metadata, and its
 * superblock's place. */
int meta_new_member(struct raid_array *a, struct raid_member *m);
/* Member DEV_NUMBER, awaited at assembly, is back in A (md's re-add):
 * not to be taken back twice. */
void meta_taken_back(struct raid_array *a, unsigned dev_number);
void meta_resync_done(struct raid_array *a);
/* Where a resync should start: bytes already resynced (member_size: none due). */
uint64_t meta_resync_start(struct raid_array *a);

#endif
