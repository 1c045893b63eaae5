/* Shared helpers for libraid's Check tests (tests/libtestlib.la: the
 * generic part in testlib.c, md's layouts in testlib-md.c, the test array
 * in testlib-array.c).
 *
 * - A deterministic PRNG (splitmix64) with a fixed seed that every program
 *   prints, overridable with RAID_TEST_SEED, and RAID_TEST_SCALE (percent,
 *   default 100) to scale workloads (valgrind runs use 10).
 * - Member sets: N zero-filled files (allocated, or sparse with
 *   RAID_TEST_SPARSE=1) in a private directory under /var/tmp (or
 *   RAID_TEST_MEMBER_DIR), or with RAID_TEST_LOOP=1 loop devices
 *   (losetup --direct-io=on) over those files.  Everything is removed at
 *   the end, even when a forked test dies half way: the top directory and
 *   a registry of attached loop devices belong to the parent process,
 *   which removes finished member sets in the background.
 * - RAID_TEST_VERBOSE=1 prints where each test spends its time.
 * - The library's log captured, and a check that some message holds
 *   given words.
 * - A test array: members, the array, an in-memory shadow copy, and a
 *   random workload that compares every read with the shadow.
 * - An independent reference of md's layouts (RAID 0, RAID 5 in its six
 *   layouts, RAID 10 near-N, RAID 1), written from md's formulas and not
 *   shared with lib/geometry.c, and a placement checker that reads the
 *   members directly and proves every chunk and every parity chunk is
 *   where md would put it.
 */
#ifndef RAID_TESTLIB_H
#define RAID_TESTLIB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <check.h>

#include "raid/raid.h"

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef ARRAY_SIZE
#include "array-size.h"
#endif

/* 1 in an AddressSanitizer or ThreadSanitizer build (GCC or clang), where
 * the stress tests make fewer requests. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif
#ifndef UNDER_SANITIZER
#define UNDER_SANITIZER 0
#endif

/* Like ck_assert_msg() but without Check's per-call bookkeeping (a write
 * to its pipe for every passing assertion), for assertions in loops. */
#define tassert(cond, ...) \
  do { if (!(cond)) ck_abort_msg(__VA_ARGS__); } while (0)

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)

/* ---- process-wide setup ------------------------------------------------ */

/* Call first in main(): creates the top temporary directory and prints the
 * seed, the scale and the member mode. */
void test_init(const char *program);
/* Run S (with a generous per-test timeout) and clean up; returns the exit
 * status for main(). */
int test_run_suite(Suite *s);
/* A test case with the timeout our workloads need. */
TCase *test_tcase(const char *name);
/* The top temporary directory (removed at the end), for files a test makes
 * itself. */
const char *test_dir(void);

/* With RAID_TEST_VERBOSE=1: print MSG to stderr with the seconds since the
 * previous call, to see where a test spends its time. */
void test_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* RAID_TEST_SCALE percent of N, at least 1. */
unsigned test_scale(unsigned n);
/* The program's seed, and a seed derived from it for test I. */
uint64_t test_seed(void);
uint64_t test_seed_for(uint64_t i);
/* Members are loop devices (RAID_TEST_LOOP=1). */
bool test_loop_mode(void);
/* Running under valgrind (its preload library is loaded). */
bool test_under_valgrind(void);

/* ---- PRNG ----------------------------------------------------------------- */

struct rng {
  uint64_t s;
};
void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, n); n > 0. */
uint64_t rng_below(struct rng *r, uint64_t n);
/* Uniform in [lo, hi]. */
uint64_t rng_between(struct rng *r, uint64_t lo, uint64_t hi);
/* True with probability PERCENT / 100. */
bool rng_percent(struct rng *r, unsigned percent);
void rng_fill(struct rng *r, void *buf, size_t len);

/* ---- buffers --------------------------------------------------------------- */

/* 4 KiB aligned, aborts the test on failure. */
void *test_alloc(size_t len);
void test_free(void *p);

/* ---- member sets ------------------------------------------------------------- */

struct tmembers {
  unsigned n;
  char *dir;                          /* private directory of this set */
  char *file[RAID_MAX_MEMBERS];       /* backing files */
  char *path[RAID_MAX_MEMBERS];       /* what the library opens: file or loop device */
  uint64_t size[RAID_MAX_MEMBERS];
};

/* Create N zero-filled member files of SIZES[i] bytes (loop devices over them in
 * loop mode).  SIZES may be NULL, then every member is SIZE bytes. */
void tmembers_create(struct tmembers *tm, unsigned n, const uint64_t *sizes,
                     uint64_t size);
/* Detach loop devices, remove the files and the directory. */
void tmembers_destroy(struct tmembers *tm);
/* raid_member_open() member I, optionally wrapped in a fault injector. */
struct raid_member *tmembers_open(struct tmembers *tm, unsigned i, bool fault);

/* ---- the library's log, captured ------------------------------------------------------ */

/* From now on keep the library's messages of PRIORITY (RAID_LOG_*) or more
 * urgent (raid_set_log_handler()), forgetting those kept before. */
void test_log_capture(int priority);
/* A copy of the messages kept, one a line (free it). */
char *test_log_copy(void);
/* Some message kept since test_log_capture() holds every one of WORDS
 * (NULL-terminated); otherwise the test fails, saying DESC and the log. */
void test_log_assert_line(const char *desc, const char *const *words);

/* ---- member files by name ---------------------------------------------------------- */

/* For tests that check messages naming several members: plain files named
 * "<test_dir()>/<SET><I>.img", short because the library cuts its messages
 * at 511 characters. */
void tfile_path(char *buf, size_t len, const char *set, unsigned i);
/* Create members 0..N-1 of SET: SIZE bytes, sparse (zeroes); an existing
 * file is truncated. */
void tfile_create(const char *set, unsigned n, uint64_t size);
/* Member I of SET's md superblock (the member opened read-only). */
void tfile_read_sb(const char *set, unsigned i, struct raid_superblock *sb);
/* Member I of SET's write-intent bitmap as on disk: *NBITS chunks (its
 * bitmap superblock's), their bits into BITS (room for MAXBITS). */
void tfile_bitmap_bits(const char *set, unsigned i, uint8_t *bits, size_t maxbits,
                       uint64_t *nbits);
/* Bit K of BITS. */
bool tbit(const uint8_t *bits, uint64_t k);
/* SB written as member I of SET's superblock (at its super_offset). */
void tfile_write_sb(const char *set, unsigned i, const struct raid_superblock *sb);
/* Copy file FROM to TO (sparse): a member's bytes as they are now, what a
 * crash would leave. */
void tfile_copy(const char *from, const char *to);
/* raid_member_open() members IDX[0..N-1] of SET (0..N-1 when IDX is NULL)
 * for writing, into M[0..N-1]. */
void tfile_open(const char *set, const unsigned *idx, unsigned n,
                struct raid_member **m);
/* raid_member_close() M[0..N-1]. */
void tfile_close(struct raid_member **m, unsigned n);
/* Create array SET (RAID LEVEL, default layout, 64 KiB chunks, assumed
 * clean) over N new members of SIZE bytes (tfile_create()). */
struct raid_array *tfile_array_create(const char *set, int level, unsigned n,
                                      uint64_t size);

/* ---- configurations and the md reference (testlib-md.c) -------------------------- */

struct tconf {
  int level;                 /* RAID_LEVEL_* */
  int layout;                /* as passed to the library (may be DEFAULT) */
  unsigned disks;
  uint32_t chunk;            /* as passed (0 = default) */
  uint64_t data_offset;      /* bytes */
  uint64_t member_bytes;     /* size of each member file, data_offset included */
};

/* "raid5 left-symmetric disks=4 chunk=64K data_offset=1M member=4M+12K" */
const char *tconf_str(const struct tconf *c, char *buf, size_t len);
/* The effective layout / chunk (defaults resolved as md resolves them). */
int tconf_layout(const struct tconf *c);
uint32_t tconf_chunk(const struct tconf *c);
/* Copies of each byte: RAID 1 disks, RAID 10 near copies, else 1. */
unsigned tconf_copies(const struct tconf *c);
/* Bytes of each member holding data, and the array size, by md's rules:
 * rounded down to the chunk (RAID 0/5/10) or to ROUND bytes (RAID 1, where
 * 512 and 4096 are both acceptable). */
uint64_t tconf_member_size(const struct tconf *c, unsigned round);
uint64_t tconf_array_size(const struct tconf *c, uint64_t member_size);
/* Whether the array still holds all data with the members in LOST gone
 * (md's enough() for RAID 10). */
bool tconf_survives(const struct tconf *c, uint64_t lost);
const char *layout_name(int level, int layout);

/* md's mappings, sector based, written from md's source (raid0.c
 * map_sector for one zone, raid5.c raid5_compute_sector, raid10.c
 * __raid10_find_phys for near layouts). */
void ref_raid0_map(unsigned disks, unsigned chunk_sectors, uint64_t sector,
                   unsigned *disk, uint64_t *member_sector);
void ref_raid5_map(int layout, unsigned disks, unsigned chunk_sectors,
                   uint64_t sector, unsigned *dd, unsigned *pd,
                   uint64_t *stripe, uint64_t *member_sector);
void ref_raid10_map(unsigned disks, unsigned copies, unsigned chunk_sectors,
                    uint64_t sector, unsigned k, unsigned *disk,
                    uint64_t *member_sector);
/* Every copy of array SECTOR under C: returns the number of copies and
 * fills DISKS and MEMBER_SECTORS (from the data start). */
unsigned ref_locate(const struct tconf *c, uint64_t sector, unsigned *disks,
                    uint64_t *member_sectors);

/* ---- a test array (testlib-array.c; the placement check: testlib-md.c) -------------- */

#define RBUF_SIZE (4 * MiB)

#define TA_FAULT 0x1u       /* wrap every member in a fault injector */
#define TA_NO_PATTERN 0x2u  /* don't write the guard pattern outside the data */

struct tarray {
  struct tconf c;
  char desc[256];            /* config and seed, for failure messages */
  char name[32];             /* array name */
  struct tmembers tm;
  struct raid_member *m[RAID_MAX_MEMBERS];   /* as handed to the array */
  struct raid_array *a;
  struct raid_queue *q;      /* for batches of asynchronous requests */
  uint64_t size;
  uint64_t member_size;
  uint8_t *shadow;
  uint8_t *rbuf;             /* RBUF_SIZE bytes for synchronous reads */
  uint64_t missing;          /* members left out at assembly */
  uint64_t lost;             /* members whose contents are no longer checked */
  struct rng rng;
  uint64_t gen;              /* write generation, in the sector tags */
  unsigned flags;
  uint64_t nread, nwrite, nother;
};

/* Create members, write the guard pattern, assemble (members in MISSING
 * left out) and check the sizes the array reports against md's rules. */
void tarray_setup(struct tarray *t, const struct tconf *c, unsigned flags,
                  uint64_t missing, uint64_t seed);
/* Assemble again over the same members (after tarray_close_array()). */
void tarray_assemble(struct tarray *t);
void tarray_close_array(struct tarray *t);
void tarray_teardown(struct tarray *t);

/* Fill BUF (for array offset OFF) with random data whose every sector is
 * tagged with its array sector and generation GEN, so misplaced data can
 * be named. */
void tag_data(struct rng *r, void *buf, uint64_t off, size_t len, uint64_t gen);
/* The same with T's generator and the next generation. */
void tarray_make_data(struct tarray *t, void *buf, uint64_t off, size_t len);
/* A random request: 512-aligned offset and length within the array, mostly
 * small, some up to 2 MiB, a few covering whole stripes. */
void tarray_random_range(struct tarray *t, uint64_t *off, size_t *len);

/* Synchronous operations that must succeed; the shadow follows. */
void tarray_write(struct tarray *t, uint64_t off, size_t len, unsigned flags);
void tarray_read_check(struct tarray *t, uint64_t off, size_t len);
void tarray_zero(struct tarray *t, uint64_t off, size_t len, bool discard);
/* Read the whole array and compare with the shadow. */
void tarray_check_all(struct tarray *t);
/* Read N random ranges, the first and the last 64 KiB, and compare. */
void tarray_check_sample(struct tarray *t, unsigned n);
/* A random mix of NOPS reads, writes (some FUA), discards, write-zeroes and
 * flushes, synchronous and in asynchronous batches of non-overlapping
 * requests, each read compared with the shadow. */
void tarray_random_ops(struct tarray *t, unsigned nops);
/* Flush the array, then read every member (except those in T->lost) and
 * prove each chunk is where md puts it, every RAID 5 parity chunk is the
 * XOR of its stripe, and the bytes outside the data area are untouched. */
void tarray_check_placement(struct tarray *t);

/* The checks of tarray_check_placement() on member images held anywhere
 * (e.g. read from RAM members): DATA[i] is member i's data area of
 * MEMBER_SIZE bytes (NULL: not checked), NAMES[i] names it in messages,
 * SHADOW the SIZE bytes the array should hold.  Every chunk must be where
 * md puts it, every RAID 5 parity chunk the XOR of its stripe, mirrors
 * equal; otherwise the test fails naming the first difference. */
void tcheck_layout(const struct tconf *c, const char *desc, const char *const *names,
                   const uint8_t *const *data, uint64_t member_size,
                   const uint8_t *shadow, uint64_t size);

/* Compare BUF with the shadow at OFF; on a difference fail with where the
 * reference puts the first differing sector and what the sector holds. */
void tarray_compare(struct tarray *t, const void *buf, uint64_t off, size_t len,
                    const char *what);
/* The same without failing (usable from any thread): returns true and a
 * description in MSG when BUF differs. */
bool tarray_diff(const struct tarray *t, const void *buf, uint64_t off, size_t len,
                 const char *what, char *msg, size_t msglen);
/* Describe a sector's tag ("array sector 123 gen 45", "zeroes", "other"). */
const char *tag_str(const void *sector, char *buf, size_t len);

/* A user of an array while it changes shape (a reshape, a takeover): a
 * thread that writes, reads and (FLUSH_PCT percent of the time) flushes
 * random 4 KiB-aligned ranges of its first SIZE bytes, keeping SHADOW as
 * written and comparing every read with it. */
struct tuser {
  struct raid_array *a;
  uint8_t *shadow;
  uint64_t size;
  unsigned flush_pct;
  unsigned writes, reads, flushes;
  char err[256];
  /* private */
  pthread_t thread;
  _Atomic bool stop;
};
void tuser_start(struct tuser *u);
/* Stop and join it: it must have written and read, and seen no error. */
void tuser_stop(struct tuser *u);
/* Read A's first SIZE bytes and compare them with SHADOW. */
void tcheck_shadow(struct raid_array *a, const uint8_t *shadow, uint64_t size);
/* A check (md's "check" sync action) of A to its end: its mismatches. */
uint64_t tscrub(struct raid_array *a);

/* The first SIZE bytes of each of SET's N member files as they are now;
 * tfile_same() fails (naming WHAT) unless the files still hold them. */
uint8_t **tfile_images(const char *set, unsigned n, uint64_t size);
void tfile_images_free(uint8_t **img, unsigned n);
void tfile_same(const char *set, unsigned n, uint8_t **img, uint64_t size,
                const char *what);
/* tcheck_layout() of the data areas of SET's C->disks member files (each
 * where its superblock says, of its member size). */
void tfile_check_layout(const char *set, const struct tconf *c, const char *what,
                        const uint8_t *shadow, uint64_t size);
/* Until safe mode has marked A clean: no superblock write follows. */
void tsettle(struct raid_array *a);
/* Once A's reshape has gone a third of the way, stopped (raidctl grow
 * --stop, or raidd stopped). */
void treshape_stop_at_third(struct raid_array *a);

/* md's backwards reshape (to fewer members) as the library plans it
 * (lib/grow.c's back_plan, after md's update_raid_disks() and mdadm's
 * set_new_data_offset()), worked out from the superblock SB0 of a RAID 5
 * or RAID 10 near-2 of CHUNK bytes going to N members of NEW_CHUNK: the
 * new shape starts GAP bytes later, four units of its rows over the
 * larger chunk when the room after the data allows (two at least), else
 * four with the member size cut (in whole units) by what is missing; MS is the member
 * size then, SIZE what the array holds over it (the most it may show
 * before the reshape), UNIT the array bytes of a unit. */
struct tback {
  uint64_t gap, ms, size, unit;
};
void tback_plan(int level, unsigned n, uint32_t chunk, uint32_t new_chunk,
                const struct raid_superblock *sb0, struct tback *p);
/* SB as the start of such a reshape leaves it (md's fields, as
 * meta_reshape_start() and mdadm write them): to N members of NEW_CHUNK
 * bytes, level and layout kept, the new shape P->gap bytes later, member
 * size P->ms, nothing moved yet (reshape_position at P->size), events one
 * more.  For tests that start a reshape as a crash or md would leave it. */
void tback_sb_start(struct raid_superblock *sb, unsigned n, uint32_t new_chunk,
                    const struct tback *p);

#endif /* RAID_TESTLIB_H */
