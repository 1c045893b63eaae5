/* libraid: userspace software RAID 0/1/5/10 over block devices and files.
 *
 * Conventions (see libraid(3)):
 *  - Every function that can fail returns 0 (or a non-negative value) on
 *    success and a negative errno on failure.  errno itself is never the
 *    channel.  raid_get_error() returns a human message for the last failure
 *    of the calling thread, naming the array, the member and the sector.
 *  - Handles are opaque.  Offsets and lengths are in bytes and must be
 *    multiples of RAID_SECTOR_SIZE.
 *  - Asynchronous requests are submitted to a struct raid_queue, which is
 *    owned by one thread and must only be used from it.  Arrays and members
 *    may be shared by many threads, each with its own queue.
 */
#ifndef RAID_RAID_H
#define RAID_RAID_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RAID_ATTR_NONNULL(...) __attribute__((__nonnull__(__VA_ARGS__)))
#define RAID_ATTR_WUR __attribute__((__warn_unused_result__))
#else
#define RAID_ATTR_NONNULL(...)
#define RAID_ATTR_WUR
#endif

struct raid_array;
struct raid_member;
struct raid_queue;

#define RAID_SECTOR_SIZE 512u
#define RAID_MAX_MEMBERS 64u
#define RAID_MAX_REQUEST (32u << 20)          /* largest read or write, bytes;
                                                 discards and zeroes may be longer */
#define RAID_CHUNK_MIN (4u << 10)
#define RAID_CHUNK_MAX (256u << 20)
#define RAID_CHUNK_DEFAULT (512u << 10)

/* RAID levels (md's numbers). */
#define RAID_LEVEL_0 0
#define RAID_LEVEL_1 1
#define RAID_LEVEL_5 5
#define RAID_LEVEL_10 10

/* RAID 5 layouts, numbered as md numbers them (ALGORITHM_* in raid5.h). */
#define RAID_LAYOUT_DEFAULT (-1)
#define RAID_LAYOUT_LEFT_ASYMMETRIC 0
#define RAID_LAYOUT_RIGHT_ASYMMETRIC 1
#define RAID_LAYOUT_LEFT_SYMMETRIC 2
#define RAID_LAYOUT_RIGHT_SYMMETRIC 3
/* Parity on a fixed member: the first (md's ALGORITHM_PARITY_0), or the
 * last (ALGORITHM_PARITY_N), with data on the others in order. */
#define RAID_LAYOUT_PARITY_FIRST 4
#define RAID_LAYOUT_PARITY_LAST 5
/* RAID 10 layouts as md encodes them: near copies in bits 0-7, far copies
 * in bits 8-15.  Only "near" layouts (far copies = 1) are supported. */
#define RAID_LAYOUT_RAID10_NEAR(copies) (0x100 | (copies))

/* ---- errors ---------------------------------------------------------- */

/* Message describing the calling thread's last failure, never NULL. */
const char *raid_get_error(void);
/* errno value (positive) of the calling thread's last failure, or 0. */
int raid_get_errno(void);

/* Log messages (member failures, degraded operation).  The default
 * handler writes "libraid: MESSAGE" to stderr. */
#define RAID_LOG_ERR 3
#define RAID_LOG_WARNING 4
#define RAID_LOG_INFO 6
#define RAID_LOG_DEBUG 7
typedef void (*raid_log_fn)(int priority, const char *msg, void *opaque);
/* Install a handler (NULL restores the default); messages with a priority
 * above max_priority are not generated. */
void raid_set_log_handler(raid_log_fn fn, void *opaque, int max_priority);

/* ---- members --------------------------------------------------------- */

#define RAID_MEMBER_READONLY 0x1u  /* open read-only */
#define RAID_MEMBER_BUFFERED 0x2u  /* never use O_DIRECT */

/* Open a regular file or a block device as a member.  O_DIRECT is used
 * when the file system accepts it and its alignment is at most 512 bytes;
 * otherwise buffered I/O (see raid_member_is_direct()).
 *
 * PATH may instead be a simulated drive, a benchmark and test device:
 * "sim:FILE[?lat=DURATION,bw=BYTES_PER_S,depth=N,discard,cache=volatile]",
 * FILE mapped as its store (on tmpfs: a RAM drive), each I/O completing
 * after the latency and bandwidth a drive with N channels would take (kind
 * "sim"); cache=volatile loses unflushed writes at a simulated power cut. */
int raid_member_open(const char *path, unsigned flags,
                     struct raid_member **memberp)
  RAID_ATTR_NONNULL(1, 3) RAID_ATTR_WUR;
/* A member on an NBD server, named by its URI as libnbd spells it
 * (nbd_connect_uri(3)): "nbd://HOST[:PORT]/EXPORT", "nbds://..." (TLS),
 * "nbd+unix:///EXPORT?socket=PATH", "nbds+unix://...", with TLS from
 * "tls-psk-file=FILE" or "tls-certificates=DIR" in the query, never a key
 * itself.  raidd's own query parameters, which libnbd never sees:
 * "timeout=SECONDS" (a request unanswered that long fails the member;
 * default 10), "connect-timeout=SECONDS" (default 10), "connections=N"
 * (when the server offers multi-conn; default 4, 1 otherwise).  Kind "nbd".
 * 1 when SPEC is such a URI (one of libnbd's schemes: nbd, nbds, nbd+unix,
 * nbds+unix, nbd+vsock, nbds+vsock), else 0. */
int raid_member_spec_is_remote(const char *spec) RAID_ATTR_NONNULL(1);
/* The file or device a member spec names: SPEC itself for a path, FILE for
 * "sim:FILE?...".  0, or -errno (nothing named, BUF too small, a remote
 * member: -EINVAL, it has no local file). */
int raid_member_spec_file(const char *spec, char *buf, size_t len)
  RAID_ATTR_NONNULL(1, 2);
/* A member held in memory, zero-filled, for tests. */
int raid_member_new_ram(const char *name, uint64_t size,
                        struct raid_member **memberp)
  RAID_ATTR_NONNULL(1, 3) RAID_ATTR_WUR;
/* A fault injector wrapping INNER, which it owns from then on.  Without
 * rules it passes everything through. */
int raid_member_new_fault(struct raid_member *inner,
                          struct raid_member **memberp)
  RAID_ATTR_NONNULL(1, 2) RAID_ATTR_WUR;

/* Fault rules, for members made with raid_member_new_fault(). */
#define RAID_FAULT_READ 0x1u
#define RAID_FAULT_WRITE 0x2u
#define RAID_FAULT_FLUSH 0x4u
struct raid_fault {
  unsigned ops;        /* RAID_FAULT_* the rule applies to */
  uint64_t offset;     /* byte range of the member the rule covers; */
  uint64_t length;     /* length 0 means the whole member */
  uint64_t after;      /* let this many matching ops pass first */
  int error;           /* errno to fail with (e.g. EIO); 0 = only delay */
  unsigned delay_us;   /* delay each matching op by this much */
};
int raid_fault_add(struct raid_member *member, const struct raid_fault *rule)
  RAID_ATTR_NONNULL(1, 2);
/* Remove every rule. */
int raid_fault_clear(struct raid_member *member) RAID_ATTR_NONNULL(1);
/* Number of ops the rules have failed so far. */
uint64_t raid_fault_count(const struct raid_member *member) RAID_ATTR_NONNULL(1);

/* Close a member that is not part of an array. */
void raid_member_close(struct raid_member *member);
const char *raid_member_name(const struct raid_member *member) RAID_ATTR_NONNULL(1);
/* "file", "block", "ram", "sim", "nbd" or "fault". */
const char *raid_member_kind(const struct raid_member *member) RAID_ATTR_NONNULL(1);
uint64_t raid_member_size(const struct raid_member *member) RAID_ATTR_NONNULL(1);
unsigned raid_member_logical_block_size(const struct raid_member *member)
  RAID_ATTR_NONNULL(1);
/* 1 when the member is accessed with O_DIRECT, 0 when buffered. */
int raid_member_is_direct(const struct raid_member *member) RAID_ATTR_NONNULL(1);
/* md's write-mostly flag (superblock devflags bit 0): a RAID 1 or RAID 10
 * copy on this member is read only when no other copy can serve, for a
 * slow disk mirroring a fast one.  Set it before raid_array_create() or
 * raid_array_add_member(); assembly takes it from the superblock. */
void raid_member_set_write_mostly(struct raid_member *member, int on) RAID_ATTR_NONNULL(1);
int raid_member_is_write_mostly(const struct raid_member *member) RAID_ATTR_NONNULL(1);

/* ---- arrays ---------------------------------------------------------- */

struct raid_config {
  const char *name;        /* array name used in messages ("md0") */
  int level;               /* RAID_LEVEL_* */
  int layout;              /* RAID_LAYOUT_*, or RAID_LAYOUT_DEFAULT */
  uint32_t chunk_size;     /* bytes, power of two; 0 = RAID_CHUNK_DEFAULT */
  unsigned raid_disks;     /* number of member slots */
  uint64_t data_offset;    /* where data starts on each member, bytes */
  uint64_t member_size;    /* bytes of each member holding data; 0 = the
                              smallest member's, refused when the members
                              differ by more than 2x */
  int metadata;            /* RAID_METADATA_*: where the superblock goes
                              (0 = RAID_METADATA_1_2) */
  int bitmap;              /* RAID_BITMAP_*: md's write-intent bitmap
                              (0 = RAID_BITMAP_DEFAULT) */
  uint32_t bitmap_chunk;   /* bytes of array data per bitmap bit, a power
                              of two from RAID_BITMAP_CHUNK_MIN; 0 = mdadm's
                              default (64 MiB, or more when the bitmap
                              would not fit the space md reserves) */
  uint32_t write_behind;   /* RAID 1 with a bitmap: md's --write-behind, the
                              writes that may be outstanding on write-mostly
                              members after they are acknowledged (1 to
                              RAID_BITMAP_WRITE_BEHIND_MAX); 0 = none */
};

/* raid_config.bitmap: whether raid_array_create() gives the array md's
 * internal write-intent bitmap.  DEFAULT does what mdadm --create does:
 * internal for RAID 1, 5 and 10 when each member holds more than 100 GiB
 * of data, none otherwise.  RAID 0 has nothing to resync and refuses
 * INTERNAL. */
#define RAID_BITMAP_DEFAULT 0
#define RAID_BITMAP_NONE 1
#define RAID_BITMAP_INTERNAL 2
#define RAID_BITMAP_CHUNK_MIN 4096u         /* mdadm's smallest */
#define RAID_BITMAP_CHUNK_DEFAULT (64u << 20)

/* Member states. */
#define RAID_MEMBER_IN_SYNC 0
#define RAID_MEMBER_FAULTY 1
#define RAID_MEMBER_MISSING 2
#define RAID_MEMBER_RECOVERING 3   /* being rebuilt: in sync below its recovery offset */
#define RAID_MEMBER_SPARE 4        /* no role: takes over when a member fails */
#define RAID_MEMBER_REPLACEMENT 5  /* being rebuilt to take over its role's member */

/* Assemble an array over MEMBERS[0..raid_disks-1] in role order; a NULL
 * entry is a missing member.  On success the array owns the members and
 * closes them in raid_array_free().  Fails with -EINVAL (and a message)
 * for invalid geometry or too many missing members. */
int raid_array_new(const struct raid_config *config,
                   struct raid_member *const *members,
                   struct raid_array **arrayp)
  RAID_ATTR_NONNULL(1, 2, 3) RAID_ATTR_WUR;
/* Check CONFIG against members of MEMBER_SIZES[0..raid_disks-1] bytes,
 * named NAMES[i] in messages (NAMES may be NULL), without touching any:
 * 0 (and the array's size) or what raid_array_new() would refuse, or
 * raid_name_check() of CONFIG->name (when not NULL).  A size of 0 is a
 * missing member. */
int raid_config_check(const struct raid_config *config,
                      const uint64_t *member_sizes, const char *const *names,
                      uint64_t *array_size)
  RAID_ATTR_NONNULL(1, 2);
/* Whether NAME may name a new array: md's rule, 1 to 32 characters of
 * A-Z a-z 0-9 . _ - (no ':', '/', space, '?', '&', newline...).  0, or
 * -EINVAL with raid_get_error() naming the name and what is wrong. */
int raid_name_check(const char *name) RAID_ATTR_WUR;
/* Free the array and close its members.  No request may be in flight;
 * write-behind I/O (raid_queue_in_flight() counts it) still running on
 * queues that other threads run is waited for. */
void raid_array_free(struct raid_array *array);

const char *raid_array_name(const struct raid_array *a) RAID_ATTR_NONNULL(1);
/* The bytes the array shows and serves: all its members hold, or less
 * (raid_array_set_array_size()). */
uint64_t raid_array_size(const struct raid_array *a) RAID_ATTR_NONNULL(1);
/* The bytes its members hold, in its shape now. */
uint64_t raid_array_full_size(const struct raid_array *a) RAID_ATTR_NONNULL(1);
int raid_array_level(const struct raid_array *a) RAID_ATTR_NONNULL(1);
int raid_array_layout(const struct raid_array *a) RAID_ATTR_NONNULL(1);
uint32_t raid_array_chunk_size(const struct raid_array *a) RAID_ATTR_NONNULL(1);
unsigned raid_array_raid_disks(const struct raid_array *a) RAID_ATTR_NONNULL(1);
/* Bytes of each member used for data (after data_offset). */
uint64_t raid_array_member_size(const struct raid_array *a) RAID_ATTR_NONNULL(1);
/* RAID_METADATA_* of the array's superblocks. */
int raid_array_metadata(const struct raid_array *a) RAID_ATTR_NONNULL(1);
/* Smallest request size that is efficient: the logical block size of the
 * members, and the full data stripe (RAID 5 avoids read-modify-write). */
unsigned raid_array_logical_block_size(const struct raid_array *a) RAID_ATTR_NONNULL(1);
uint64_t raid_array_stripe_width(const struct raid_array *a) RAID_ATTR_NONNULL(1);
/* The member in role SLOT, or NULL when missing. */
struct raid_member *raid_array_member(const struct raid_array *a, unsigned slot)
  RAID_ATTR_NONNULL(1);
/* RAID_MEMBER_* state of role SLOT, or -EINVAL. */
int raid_array_member_state(const struct raid_array *a, unsigned slot)
  RAID_ATTR_NONNULL(1);
/* Mark role SLOT faulty, as if its I/O had failed.  It does so even when
 * the array cannot work without it; raid_array_fail_check() says first. */
int raid_array_fail_member(struct raid_array *a, unsigned slot) RAID_ATTR_NONNULL(1);
/* 0 when the array keeps its data with role SLOT failed (md refuses to
 * fail a member otherwise); else -EBUSY and why, as "failing MEMBER would
 * leave array NAME without its data (raid5 already degraded: member Z
 * (role 2) faulty)": any RAID 0 member, the last member in sync of a
 * RAID 1 or of a RAID 10 copy set, a member of a RAID 5 that is degraded
 * or still being rebuilt.  -EINVAL for a role the array does not have. */
int raid_array_fail_check(struct raid_array *a, unsigned slot) RAID_ATTR_NONNULL(1);
/* Every member the array holds, in role order, then replacements, spares
 * and failed members not yet removed.  NAME and KIND stay valid until that
 * member is removed or the array freed. */
struct raid_member_info {
  const char *name;
  const char *kind;              /* "file", "block", "ram", "sim", "nbd", "fault" */
  int role;                      /* 0..raid_disks-1, or -1 (spare, failed) */
  int state;                     /* RAID_MEMBER_* */
  uint64_t recovery_offset;      /* bytes of its data rebuilt (RECOVERING,
                                    REPLACEMENT) */
  int direct;                    /* 1 when it uses O_DIRECT */
  uint64_t devnum;               /* st_rdev of a block device member, or 0 */
  int write_mostly;              /* 1: mirrors read it only when nothing
                                    else can serve (md's --write-mostly) */
  int lost;                      /* 1: its device is gone, not just its
                                    I/O failing (a remote member whose
                                    server dropped or stopped answering,
                                    or a member file cut short) */
};
/* Fill INFO[0..max-1]; returns how many members there are (which may be
 * more than MAX). */
unsigned raid_array_members(struct raid_array *a, struct raid_member_info *info,
                            unsigned max) RAID_ATTR_NONNULL(1);
/* Find the member named NAME: 0 and its role in *ROLEP (-1 for a spare or
 * a failed member without a role; for a replacement, the role it
 * replaces), or -ENOENT. */
int raid_array_find_member(struct raid_array *a, const char *name, int *rolep)
  RAID_ATTR_NONNULL(1, 2, 3);

/* Add member M (the array owns it from then on, also when this fails).
 * Into a degraded array it takes the first faulty or missing role and is
 * rebuilt (RAID_MEMBER_RECOVERING); otherwise it becomes a hot spare.
 * md's re-add: when M's superblock says it held a role of this array,
 * that role is free and the array's write-intent bitmap covers what M
 * missed (its events not behind the bitmap's events_cleared), it takes
 * that role back and only the chunks whose bits are set are rebuilt.  It
 * must hold the array's member size after the data offset.  0 and its
 * role in *ROLEP (-1 for a spare), or a negative errno. */
int raid_array_add_member(struct raid_array *a, struct raid_member *m, int *rolep)
  RAID_ATTR_NONNULL(1, 2, 3);
#define RAID_REMOVE_FORCE 0x1u
/* Remove the member named NAME: a spare, a failed member, or (with
 * RAID_REMOVE_FORCE only, and only if the array survives it) one that
 * holds data, which is failed first.  The member is closed. */
int raid_array_remove_member(struct raid_array *a, const char *name, unsigned flags)
  RAID_ATTR_NONNULL(1, 2);
/* md's --replace: rebuild the data of role SLOT onto M while the member in
 * that role keeps serving, then retire the old member (it becomes a failed
 * member to remove).  Redundancy never drops.  The array owns M. */
int raid_array_replace_member(struct raid_array *a, unsigned slot, struct raid_member *m)
  RAID_ATTR_NONNULL(1, 3);

/* ---- background synchronisation ------------------------------------------ */

/* The array's sync engine runs on a thread of its own while clients keep
 * using the array.  Actions, as md's sync_action: */
#define RAID_SYNC_IDLE 0
#define RAID_SYNC_RESYNC 1       /* make copies / parity agree (new or unclean array) */
#define RAID_SYNC_RECOVER 2      /* rebuild recovering members and replacements */
#define RAID_SYNC_CHECK 3        /* scrub: count mismatches, change nothing */
#define RAID_SYNC_REPAIR 4       /* scrub: rewrite what disagrees */
#define RAID_SYNC_RESHAPE 5      /* restripe over more members (raid_array_grow_disks()) */

struct raid_sync_status {
  int action;                    /* RAID_SYNC_*: running now, or IDLE */
  int due;                       /* 1: asked or kicked, not yet looked at */
  uint64_t done, total;          /* bytes of each member's data */
  uint64_t rate;                 /* bytes of member data per second, recently */
  uint64_t mismatches;           /* sectors found to disagree (md's mismatch_cnt) */
  int last_action;               /* the last action that ended */
  int last_result;               /* 0, or -errno if it stopped early */
  uint64_t last_mismatches;
  uint64_t min_rate, max_rate;   /* limits in bytes/s; max 0 = none */
};
void raid_array_sync_status(struct raid_array *a, struct raid_sync_status *st)
  RAID_ATTR_NONNULL(1, 2);
/* Start ACTION (CHECK, REPAIR, or RESYNC / RECOVER when there is work for
 * them): -EBUSY while another runs. */
int raid_array_sync_start(struct raid_array *a, int action) RAID_ATTR_NONNULL(1);
/* Interrupt what runs, keeping its checkpoint; it is not restarted until
 * raid_array_sync_start() or (with auto sync) an event asks for it. */
int raid_array_sync_stop(struct raid_array *a) RAID_ATTR_NONNULL(1);
/* Block until no action runs or is due; its result. */
int raid_array_sync_wait(struct raid_array *a) RAID_ATTR_NONNULL(1);
/* md's automatic recovery: with ON, the engine rebuilds members added to a
 * degraded array, turns hot spares into members when one fails, resumes a
 * rebuild or resync found in the superblocks, all without being asked. */
void raid_array_set_auto_sync(struct raid_array *a, int on) RAID_ATTR_NONNULL(1);
/* Rate limits, bytes of member data per second: the engine goes no faster
 * than MAX (0: unlimited) and, while clients use the array, no faster than
 * MIN (md's speed_limit_min/max). */
void raid_array_set_sync_limits(struct raid_array *a, uint64_t min_rate,
                                uint64_t max_rate) RAID_ATTR_NONNULL(1);
/* Name of a RAID_SYNC_* action: "idle", "resync", "recover", "check", "repair". */
const char *raid_sync_action_name(int action);

/* Number of roles that are faulty or missing. */
unsigned raid_array_degraded(const struct raid_array *a) RAID_ATTR_NONNULL(1);
/* 1 when more members are lost than the level tolerates: I/O fails. */
int raid_array_is_failed(const struct raid_array *a) RAID_ATTR_NONNULL(1);

/* ---- events --------------------------------------------------------------- */

/* What happens to an array's members and its sync engine, as it happens,
 * for monitoring (raidd turns them into md's mdadm --monitor events).
 * Types, with md's names (raid_event_name()): */
#define RAID_EVENT_FAIL 1             /* "Fail": a member in sync failed */
#define RAID_EVENT_FAIL_SPARE 2       /* "FailSpare": a member being rebuilt
                                         (a spare taken into a role, an added
                                         member, a replacement) failed */
#define RAID_EVENT_DEGRADED 3         /* "DegradedArray": the array had every
                                         role in sync and now has not */
#define RAID_EVENT_SPARE_ACTIVE 4     /* "SpareActive": a rebuilt member (or a
                                         replacement) is in sync in its role */
#define RAID_EVENT_REBUILD_STARTED 5  /* "RebuildStarted": a sync action began */
#define RAID_EVENT_REBUILD_PROGRESS 6 /* "Rebuild20" .. "Rebuild80": it crossed
                                         PERCENT (20, 40, 60, 80) */
#define RAID_EVENT_REBUILD_FINISHED 7 /* "RebuildFinished": it ended, done or
                                         stopped (RESULT) */

struct raid_event {
  int type;                      /* RAID_EVENT_* */
  const char *array;             /* the array's name */
  const char *member;            /* the member concerned, or NULL */
  int role;                      /* its role, or -1 */
  int action;                    /* REBUILD_*: the RAID_SYNC_* action */
  int percent;                   /* REBUILD_PROGRESS: 20, 40, 60 or 80 */
  int result;                    /* REBUILD_FINISHED: 0 (done) or -errno */
};
/* Called on the library's threads (a request's completion, the sync
 * engine, the caller of raid_array_fail_member()...), possibly with the
 * array's locks held: it must copy what it needs from EV (whose strings
 * live only during the call) and return, without calling into the
 * library or blocking. */
typedef void (*raid_event_fn)(void *opaque, const struct raid_event *ev);
/* Call FN for each event of A from now on (FN NULL: no more).  Once it
 * returns, the previous handler is not running and will not be called. */
void raid_array_set_event_handler(struct raid_array *a, raid_event_fn fn, void *opaque)
  RAID_ATTR_NONNULL(1);
/* md's name of EV: "Fail", "FailSpare", "DegradedArray", "SpareActive",
 * "RebuildStarted", "Rebuild20" .. "Rebuild80", "RebuildFinished". */
const char *raid_event_name(const struct raid_event *ev) RAID_ATTR_NONNULL(1);

/* ---- statistics -------------------------------------------------------- */

/* Counters of the I/O an array is asked for and of the I/O its members
 * do, and latency percentiles, to measure what RAID costs (see
 * libraid(3)).  They are kept with relaxed atomics and cost two clock
 * readings and a few additions per I/O; a snapshot is consistent per
 * counter, not across counters taken while I/O runs. */

/* Latency percentiles, indices into the *_lat_ns arrays.  Each is the
 * upper bound of the histogram bucket holding it (at most 12.5% above the
 * true value) but never more than the maximum, which is exact; 0 when
 * nothing was measured. */
#define RAID_STATS_P50 0
#define RAID_STATS_P90 1
#define RAID_STATS_P99 2
#define RAID_STATS_P999 3       /* 99.9th percentile */
#define RAID_STATS_MAX 4
#define RAID_STATS_NPCT 5

/* Requests to an array, or I/O to a member, since the start or the last
 * reset.  Ops are counted when they complete, errors included. */
struct raid_io_stats {
  uint64_t read_ops, read_bytes;
  uint64_t write_ops, write_bytes;
  uint64_t flush_ops;
  uint64_t discard_ops, discard_bytes;
  uint64_t zero_ops, zero_bytes;       /* write zeroes */
  uint64_t errors;                     /* ops that completed with an error */
  unsigned in_flight;                  /* submitted, not yet completed */
  uint64_t read_lat_ns[RAID_STATS_NPCT];   /* submission to completion */
  uint64_t write_lat_ns[RAID_STATS_NPCT];
};

/* A member's figures count everything it does: I/O for requests, the
 * sync engine's (rebuild, resync, scrub) and superblock writes. */
struct raid_member_stats {
  const char *name;              /* NULL for a missing role */
  const char *kind;              /* as raid_member_kind(), NULL when missing */
  int role;                      /* as in struct raid_member_info */
  int state;                     /* RAID_MEMBER_* */
  struct raid_io_stats io;
};

struct raid_array_stats {
  uint64_t elapsed_ns;           /* since the array was made or last reset */
  struct raid_io_stats io;       /* the array's requests */
  /* Member I/O issued for requests (not the sync engine's): write
   * amplification is member_write_bytes / (io.write_bytes + io.zero_bytes). */
  uint64_t member_read_bytes;
  uint64_t member_write_bytes;   /* writes and write zeroes */
  /* RAID 5: each request is cut into row pieces ("stripe writes"), each
   * counted once by how its parity was made.  A piece mixing methods in
   * different columns counts as RCW if any column used it, else RMW. */
  uint64_t full_stripe_writes;   /* every data chunk written: no reads */
  uint64_t rmw_writes;           /* read-modify-write: old data and parity read */
  uint64_t rcw_writes;           /* reconstruct-write: the other data read */
  uint64_t degraded_writes;      /* parity member gone: data written alone */
  uint64_t degraded_reads;       /* row pieces read by rebuilding from parity */
  uint64_t stripe_read_bytes;    /* member bytes read by RMW and RCW */
  /* RAID 5 plugs: row pieces of a sequential stream that waited for the
   * writes bringing the rest of their stripe, and how many of those
   * waits were filled (written as part of a full stripe) or expired
   * (their time ran out: the mean write latency, or longer for a stream
   * that takes longer to bring the rest).  The rest went at once when a
   * request they could not take queued behind them. */
  uint64_t plugged_writes;
  uint64_t plugs_filled;
  uint64_t plugs_expired;
};

/* Fill *ST with the array's figures and MEMBERS[0..max-1] with each
 * member's, in the order of raid_array_members() (roles, replacements,
 * spares, failed members).  Returns how many members there are (which may
 * be more than MAX), or -EINVAL when MEMBERS is NULL with MAX > 0. */
int raid_array_stats(struct raid_array *a, struct raid_array_stats *st,
                     struct raid_member_stats *members, unsigned max)
  RAID_ATTR_NONNULL(1, 2);
/* Zero the counters of the array and of every member it holds. */
void raid_array_stats_reset(struct raid_array *a) RAID_ATTR_NONNULL(1);
/* One member's figures (any member, in an array or not). */
void raid_member_io_stats(struct raid_member *member, struct raid_io_stats *st)
  RAID_ATTR_NONNULL(1, 2);

/* ---- asynchronous I/O -------------------------------------------------- */

/* RESULT is 0 or a negative errno.  Called exactly once, from
 * raid_queue_run() on the queue's own thread. */
typedef void (*raid_completion_fn)(void *opaque, int result);

/* A per-thread submission and completion queue; ENTRIES sizes its io_uring. */
int raid_queue_new(unsigned entries, struct raid_queue **queuep)
  RAID_ATTR_NONNULL(2) RAID_ATTR_WUR;
/* Free the queue.  No request may be in flight. */
void raid_queue_free(struct raid_queue *q);
/* A file descriptor that becomes readable when raid_queue_run() has work,
 * for use with poll(2) or epoll in an event loop. */
int raid_queue_fd(const struct raid_queue *q) RAID_ATTR_NONNULL(1);
/* Submit pending member I/O and run completions.  Blocks until at least
 * MIN_COMPLETE requests have completed (0: never blocks).  Returns the
 * number of requests completed, or a negative errno. */
int raid_queue_run(struct raid_queue *q, unsigned min_complete) RAID_ATTR_NONNULL(1);
/* Requests submitted on Q and not yet completed, and the write-behind
 * I/O that RAID 1 still has in flight for requests already completed
 * (raid_config.write_behind).  Keep running Q while this is not 0: a
 * behind write holds the bytes it writes (later writes to them, on any
 * queue, wait for it), and only Q's thread finishes it; and run Q until
 * it is 0 before freeing Q or the array.  The synchronous calls
 * (raid_pwrite() ...) return once their queue has nothing in flight. */
unsigned raid_queue_in_flight(const struct raid_queue *q) RAID_ATTR_NONNULL(1);

#define RAID_REQ_FUA 0x1u   /* stable on every member before completion */

/* Each returns 0 when the request was queued (the callback will run), or a
 * negative errno when it was refused at once (the callback will not run):
 * -EINVAL for a misaligned or out-of-range request, -EIO for an array that
 * has failed.  BUF must stay valid until the callback runs. */
int raid_aio_read(struct raid_queue *q, struct raid_array *a, void *buf,
                  size_t count, uint64_t offset,
                  raid_completion_fn cb, void *opaque)
  RAID_ATTR_NONNULL(1, 2, 3, 6);
int raid_aio_write(struct raid_queue *q, struct raid_array *a, const void *buf,
                   size_t count, uint64_t offset, unsigned flags,
                   raid_completion_fn cb, void *opaque)
  RAID_ATTR_NONNULL(1, 2, 3, 7);
int raid_aio_flush(struct raid_queue *q, struct raid_array *a,
                   raid_completion_fn cb, void *opaque)
  RAID_ATTR_NONNULL(1, 2, 3);
/* Discard: the range reads back as zeroes afterwards on every level. */
int raid_aio_discard(struct raid_queue *q, struct raid_array *a,
                     size_t count, uint64_t offset,
                     raid_completion_fn cb, void *opaque)
  RAID_ATTR_NONNULL(1, 2, 5);
int raid_aio_write_zeroes(struct raid_queue *q, struct raid_array *a,
                          size_t count, uint64_t offset, unsigned flags,
                          raid_completion_fn cb, void *opaque)
  RAID_ATTR_NONNULL(1, 2, 6);

/* ---- synchronous wrappers ---------------------------------------------- */

/* These use a queue private to the calling thread.  Return 0 or -errno. */
int raid_pread(struct raid_array *a, void *buf, size_t count, uint64_t offset)
  RAID_ATTR_NONNULL(1, 2) RAID_ATTR_WUR;
int raid_pwrite(struct raid_array *a, const void *buf, size_t count,
                uint64_t offset, unsigned flags)
  RAID_ATTR_NONNULL(1, 2) RAID_ATTR_WUR;
int raid_flush(struct raid_array *a) RAID_ATTR_NONNULL(1) RAID_ATTR_WUR;
int raid_discard(struct raid_array *a, size_t count, uint64_t offset)
  RAID_ATTR_NONNULL(1) RAID_ATTR_WUR;
int raid_write_zeroes(struct raid_array *a, size_t count, uint64_t offset,
                      unsigned flags)
  RAID_ATTR_NONNULL(1) RAID_ATTR_WUR;

/* ---- parity ------------------------------------------------------------ */

/* XOR the NSRC buffers SRCS[0..nsrc-1], each LEN bytes, into DST.  Any
 * alignment and any length; DST may alias SRCS[0].  Uses ISA-L where the
 * buffers allow, a portable loop otherwise.  Returns 0 or -EINVAL. */
int raid_xor(void *dst, void *const *srcs, unsigned nsrc, size_t len);
/* The portable reference twin of raid_xor(). */
int raid_xor_ref(void *dst, void *const *srcs, unsigned nsrc, size_t len);

/* ---- md v1.2 superblocks ------------------------------------------------ */

/* The on-disk metadata is Linux md's version-1 superblock
 * (mdp_superblock_1 in the kernel's include/uapi/linux/raid/md_p.h): 256
 * bytes of fixed little-endian fields, then a 16-bit role per device
 * number.  Metadata 1.2 puts it 8 sectors (4 KiB) from the member's start.
 * This is its decoded, host-endian form; sizes and offsets in 512-byte
 * sectors, as md keeps them. */
#define RAID_SB_MAGIC 0xa92b4efcu
#define RAID_SB_OFFSET_1_2 8u            /* sectors from the member's start */
#define RAID_SB_OFFSET_1_1 0u
/* Metadata versions, md's placements of the superblock:
 *   1.2  8 sectors (4 KiB) from the start, data after it (the default);
 *   1.1  at sector 0, data after it;
 *   1.0  near the end ((sectors - 16) rounded down to 8 sectors), data
 *        from sector 0: a RAID 1 member alone is a plain copy of the data,
 *        readable by boot loaders and firmware that know nothing of RAID. */
#define RAID_METADATA_1_0 0x100
#define RAID_METADATA_1_1 0x101
#define RAID_METADATA_1_2 0x102
#define RAID_SB_BYTES 4096u              /* bytes read and written */
#define RAID_SB_MAX_DEV 1920u            /* (4096 - 256) / 2 roles */
#define RAID_SB_ROLE_SPARE 0xffffu
#define RAID_SB_ROLE_FAULTY 0xfffeu
#define RAID_SB_ROLE_JOURNAL 0xfffdu
#define RAID_SB_DEVFLAG_WRITE_MOSTLY 0x1u  /* devflags: md's WriteMostly1 */
#define RAID_SB_MAX_SECTOR UINT64_MAX      /* resync_offset/recovery: "all" */
/* feature_map bits libraid understands (md's MD_FEATURE_*). */
#define RAID_SB_FEATURE_BITMAP 0x1u        /* internal bitmap at bitmap_offset */
#define RAID_SB_FEATURE_RECOVERY_OFFSET 0x2u
#define RAID_SB_FEATURE_RESHAPE_ACTIVE 0x4u  /* a reshape: reshape_position and new_* */
#define RAID_SB_FEATURE_REPLACEMENT 0x10u  /* rebuilt to replace its role's member */
#define RAID_SB_FEATURE_RESHAPE_BACKWARDS 0x20u
#define RAID_SB_FEATURE_NEW_OFFSET 0x40u   /* new_offset: where the new shape's data starts */
#define RAID_SB_FEATURES_KNOWN (RAID_SB_FEATURE_BITMAP | RAID_SB_FEATURE_RECOVERY_OFFSET | \
                                RAID_SB_FEATURE_REPLACEMENT | RAID_SB_FEATURE_RESHAPE_ACTIVE | \
                                RAID_SB_FEATURE_RESHAPE_BACKWARDS | RAID_SB_FEATURE_NEW_OFFSET)
#define RAID_SB_DEVFLAG_WRITEMOSTLY 0x1u
#define RAID_SB_DEVFLAG_FAILFAST 0x2u

struct raid_superblock {
  uint32_t feature_map;
  uint8_t set_uuid[16];
  char set_name[33];                /* NUL-terminated (32 bytes on disk) */
  uint64_t ctime;                   /* md's encoding: low 40 bits seconds */
  int32_t level;
  uint32_t layout;
  uint64_t size;                    /* sectors of each member in the array */
  uint32_t chunksize;               /* sectors */
  uint32_t raid_disks;
  int32_t bitmap_offset;            /* sectors from the superblock to the
                                       bitmap (RAID_SB_FEATURE_BITMAP) */
  uint64_t data_offset;             /* sectors */
  uint64_t data_size;               /* sectors */
  uint64_t super_offset;            /* sectors */
  uint64_t recovery_offset;         /* sectors, from data_offset */
  uint32_t dev_number;
  uint32_t cnt_corrected_read;
  uint8_t device_uuid[16];
  uint8_t devflags;
  uint8_t bblog_shift;
  uint16_t bblog_size;
  int32_t bblog_offset;
  uint64_t utime;                   /* md's encoding: low 40 bits seconds */
  uint64_t events;
  uint64_t resync_offset;           /* sectors; RAID_SB_MAX_SECTOR = clean */
  /* A reshape (RAID_SB_FEATURE_RESHAPE_ACTIVE): raid_disks is then the
   * new shape's, level, layout and chunksize the old one's, as md writes
   * them: */
  uint64_t reshape_position;        /* array sectors moved to the new shape */
  int32_t new_level;
  int32_t delta_disks;              /* raid_disks less the old shape's */
  uint32_t new_layout;
  uint32_t new_chunk;               /* sectors */
  int32_t new_offset;               /* sectors from data_offset to the new
                                       shape's data (RAID_SB_FEATURE_NEW_OFFSET) */
  uint32_t sb_csum;                 /* as found on disk (decode) */
  uint32_t max_dev;
  uint16_t dev_roles[RAID_SB_MAX_DEV];
};

/* Where VERSION (RAID_METADATA_*) puts the superblock on a member of
 * MEMBER_SECTORS sectors: a sector number, or UINT64_MAX when the member is
 * too small to hold one there or VERSION is unknown. */
uint64_t raid_superblock_offset(int version, uint64_t member_sectors);
/* The RAID_METADATA_* version of a decoded superblock, from where it says
 * it lies (sector 8: 1.2, sector 0: 1.1, elsewhere: 1.0). */
int raid_superblock_version(const struct raid_superblock *sb) RAID_ATTR_NONNULL(1);
/* "1.0", "1.1", "1.2" for a RAID_METADATA_* version, or NULL. */
const char *raid_metadata_name(int version);

/* Decode and validate the RAID_SB_BYTES at BUF, read from sector
 * READ_AT_SECTOR of a member of MEMBER_SECTORS sectors.  Refuses, each with
 * its own message (raid_get_error()) and -EINVAL: a wrong magic or major
 * version, a checksum mismatch, a super_offset other than READ_AT_SECTOR,
 * unknown feature bits, non-zero reserved padding, data_offset/data_size
 * or size that do not fit the member, max_dev over RAID_SB_MAX_DEV,
 * raid_disks of 0 or over RAID_MAX_MEMBERS, or a role out of range.
 * WHO names the member in messages.  On failure *SB holds the fields as
 * parsed, for display only. */
int raid_superblock_decode(const void *buf, uint64_t read_at_sector,
                           uint64_t member_sectors, const char *who,
                           struct raid_superblock *sb)
  RAID_ATTR_NONNULL(1, 4, 5) RAID_ATTR_WUR;
/* Encode SB into RAID_SB_BYTES at BUF (zero padding, md's checksum). */
int raid_superblock_encode(const struct raid_superblock *sb, void *buf)
  RAID_ATTR_NONNULL(1, 2);
/* md's calc_sb_1_csum() over the encoded superblock at BUF. */
uint32_t raid_superblock_csum(const void *buf) RAID_ATTR_NONNULL(1);

/* A split mirror: was the member whose superblock is MINE used on its
 * own since it left the array whose current superblock is CUR (both of
 * one array)?  It was when it marks faulty a device that holds a role in
 * CUR (*DEV: that device) or when its events ran past CUR's (*DEV: MINE's
 * own device number); taking it back would throw away what was written
 * to it then.  1 (split) or 0. */
int raid_superblock_split(const struct raid_superblock *mine,
                          const struct raid_superblock *cur, unsigned *dev)
  RAID_ATTR_NONNULL(1, 2, 3);

/* Does the member whose superblock is SB count as current beside the
 * freshest superblock FRESH of its array although it is one update
 * behind?  1 when its events are FRESH's minus one and its own superblock
 * gives it, in sync (not rebuilding or replacing), the role FRESH gives
 * it: a crash in the middle of an update (md's event margin of one). */
int raid_superblock_one_behind(const struct raid_superblock *sb,
                               const struct raid_superblock *fresh)
  RAID_ATTR_NONNULL(1, 2);

/* Read and decode MEMBER's superblock, wherever a version puts it (as
 * mdadm does: at 1.2's, 1.1's and 1.0's places; when more than one is
 * valid, the most recently created).  Fails naming the member: the error
 * of a superblock found but refused, else that there is none. */
int raid_superblock_read(struct raid_member *member, struct raid_superblock *sb)
  RAID_ATTR_NONNULL(1, 2) RAID_ATTR_WUR;

/* raid_superblock_read() of the member at PATH, opened read-only for the
 * read alone: FLAGS is 0 or RAID_MEMBER_BUFFERED (through the page cache:
 * what a scan of many devices wants; without it, O_DIRECT where the
 * member allows, so that what another writer put on the disk is seen). */
int raid_superblock_read_path(const char *path, unsigned flags, struct raid_superblock *sb)
  RAID_ATTR_NONNULL(1, 3) RAID_ATTR_WUR;
/* Erase the superblock SB (as raid_superblock_read() read it from MEMBER):
 * RAID_SB_BYTES of zeroes at its super_offset, written after a flush and
 * with FUA, through MEMBER whatever its kind (a file, a block device, a
 * remote member): md's --zero-superblock.  Nothing else is written.  0, or
 * -errno with a message naming the member and the byte. */
int raid_superblock_erase(struct raid_member *member, const struct raid_superblock *sb)
  RAID_ATTR_NONNULL(1, 2) RAID_ATTR_WUR;

/* ---- arrays with md metadata ---------------------------------------------- */

#define RAID_DATA_OFFSET_DEFAULT (1u << 20)  /* bytes: md's 2048 sectors */
#define RAID_CREATE_ASSUME_CLEAN 0x1u        /* skip the initial resync */

/* Create an array as raid_array_new() does and write md version-1
 * superblocks on every member, where config->metadata puts them.  A NULL
 * member is a role created missing (mdadm's "missing"): the array starts
 * degraded, as many roles missing as the level tolerates, and a member
 * added later is rebuilt into it.  A data_offset of 0 means
 * RAID_DATA_OFFSET_DEFAULT, or 0 for RAID_METADATA_1_0.  Without
 * RAID_CREATE_ASSUME_CLEAN a new RAID 1/5/10 needs a resync
 * (raid_array_needs_resync()) before its redundancy can be trusted, except
 * where nothing can disagree: a RAID 5 with a role missing, a RAID 1 with
 * one member present.  The superblocks say "active" while writes run
 * and "clean" once idle (raid_array_clean()) and after raid_array_free(). */
int raid_array_create(const struct raid_config *config,
                      struct raid_member *const *members, unsigned flags,
                      struct raid_array **arrayp)
  RAID_ATTR_NONNULL(1, 2, 4) RAID_ATTR_WUR;

#define RAID_ASSEMBLE_RUN 0x1u   /* start even with fewer members than were active */
/* mdadm's --assemble --force: when the current members cannot run the
 * array, take back members whose superblocks are behind (failed, or an
 * update that missed them), the freshest first and only as many as make
 * it work; never one that the array is known to have run without.  Their
 * events are raised to the array's, their roles restored, and an array
 * with redundancy is marked for a full resync.  Also md's "dirty degraded"
 * start: a RAID 5 that was not stopped cleanly (its resync offset is not
 * "all") with a role missing or being rebuilt is refused without it, as
 * its parity may not match data written when it stopped (the write hole). */
#define RAID_ASSEMBLE_FORCE 0x2u

/* Assemble the array whose members (in any order) are MEMBERS[0..n-1] from
 * their superblocks: one set UUID (a foreign member is refused, named),
 * the freshest events decide roles, stale members and members marked
 * faulty are left out (and logged) unless RAID_ASSEMBLE_FORCE takes them
 * back, duplicate roles are refused.  When the members left cannot run
 * the array, the error names those that are behind and says whether
 * RAID_ASSEMBLE_FORCE would start it.  NAME
 * overrides the name in the superblock (NULL: use it).  On success the
 * array owns every member given; those it does not use are closed. */
int raid_array_assemble(const char *name, struct raid_member *const *members,
                        unsigned n, unsigned flags, struct raid_array **arrayp)
  RAID_ATTR_NONNULL(2, 5) RAID_ATTR_WUR;

/* What RAID_ASSEMBLE_FORCE did: the members it took back. */
struct raid_forced_member {
  const char *name;              /* valid until the member is removed */
  unsigned role;
  uint64_t events_from;          /* its superblock's events before */
  uint64_t events_to;            /* the array's events it was given */
  int was_faulty;                /* 1: the freshest superblock had it faulty;
                                    0: it was only behind */
};
/* Fill INFO[0..max-1] with the members assembly forced in; returns how
 * many there are (0 when nothing was forced). */
unsigned raid_array_forced_members(const struct raid_array *a,
                                   struct raid_forced_member *info, unsigned max)
  RAID_ATTR_NONNULL(1);

/* Members that come back (md's incremental re-add): a member that held a
 * role when A was assembled but was missing then.  0 when the member whose
 * superblock is SB (named WHO in messages) may be taken back: it carries
 * A's set UUID, held a role, was missing at assembly and has not been
 * taken back since, A has a role with no working member, and it was not
 * used on its own since it left (its superblock marks none of A's active
 * devices faulty, its events are not ahead of A's).  Else -errno and the
 * reason (raid_get_error()).  Members that were there and failed, or were
 * removed, are not taken back: raid_array_add_member() does that. */
int raid_array_readd_check(struct raid_array *a, const struct raid_superblock *sb,
                           const char *who) RAID_ATTR_NONNULL(1, 2, 3);
/* Check MEMBER's superblock as raid_array_readd_check() does and add it
 * (raid_array_add_member(): into the free role, rebuilt in full, or over
 * the bitmap's set bits when it covers what MEMBER missed).  The
 * array owns MEMBER either way (closed on failure). */
int raid_array_readd_member(struct raid_array *a, struct raid_member *member, int *rolep)
  RAID_ATTR_NONNULL(1, 2, 3);

/* The array's current superblock (set-wide fields, events, roles). */
int raid_array_superblock(const struct raid_array *a, struct raid_superblock *sb)
  RAID_ATTR_NONNULL(1, 2);
/* 1 when copies or parity may disagree (new array, unclean shutdown). */
int raid_array_needs_resync(const struct raid_array *a) RAID_ATTR_NONNULL(1);
/* 1 when the superblocks say "clean" (mdadm's State : clean): no write
 * has been in flight for the safe mode delay (200 ms, md's
 * safe_mode_delay), so a crash now costs no resync; 0 while writes run
 * ("active"), and for an array without md metadata. */
int raid_array_clean(const struct raid_array *a) RAID_ATTR_NONNULL(1);
/* md's safe_mode_delay: the milliseconds without a write in flight after
 * which the superblocks are marked clean (200 by default; 0: never while
 * the array runs, as md's 0).  -EINVAL for an array without md metadata;
 * the getter returns 0 then. */
int raid_array_set_safe_mode_delay(struct raid_array *a, unsigned ms) RAID_ATTR_NONNULL(1);
unsigned raid_array_safe_mode_delay(const struct raid_array *a) RAID_ATTR_NONNULL(1);

/* Progress callback: DONE of TOTAL bytes; return non-zero to stop. */
typedef int (*raid_progress_fn)(void *opaque, uint64_t done, uint64_t total);
/* Make copies and parity agree over the whole array, synchronously, with
 * the sync engine (other users may keep using the array). */
int raid_array_resync(struct raid_array *a, raid_progress_fn progress, void *opaque)
  RAID_ATTR_NONNULL(1);

/* ---- md's internal write-intent bitmap -------------------------------------- */

/* The bitmap lies bitmap_offset sectors from each member's superblock
 * (RAID_SB_FEATURE_BITMAP), as md keeps it (bitmap_super_t in the
 * kernel's drivers/md/md-bitmap.h): a 256-byte little-endian superblock,
 * then one bit per bitmap chunk, bit K at byte 256 + K / 8, bit K % 8.
 * A set bit: the chunk's copies or parity may disagree.  Every member
 * carries the same bitmap.  Decoded, host-endian form: */
#define RAID_BITMAP_MAGIC 0x6d746962u       /* "bitm" */
#define RAID_BITMAP_VERSION 4u              /* md's BITMAP_MAJOR_HI */
#define RAID_BITMAP_SB_BYTES 256u
#define RAID_BITMAP_STATE_STALE 0x2u        /* md: out of date, resync all */
#define RAID_BITMAP_STATE_WRITE_ERROR 0x4u
#define RAID_BITMAP_DAEMON_SLEEP 5u         /* seconds: md's default */
#define RAID_BITMAP_WRITE_BEHIND_MAX 16383u /* md's COUNTER_MAX */

struct raid_bitmap_super {
  uint32_t magic;
  uint32_t version;                 /* 3 or 4; 5 is md-cluster's */
  uint8_t uuid[16];                 /* the array's set UUID */
  uint64_t events;                  /* the array's events when written */
  uint64_t events_cleared;          /* events when bits were last cleared */
  uint64_t sync_size;               /* sectors the bitmap covers */
  uint32_t state;                   /* RAID_BITMAP_STATE_* */
  uint32_t chunksize;               /* bytes per bit */
  uint32_t daemon_sleep;            /* seconds before idle bits are cleared */
  uint32_t write_behind;            /* writes allowed behind (0: none) */
  uint32_t sectors_reserved;        /* sectors kept for the bitmap (0: unknown) */
  uint32_t nodes;                   /* md-cluster nodes (0) */
  char cluster_name[65];            /* NUL-terminated (64 bytes on disk) */
};

/* Decode and validate the RAID_BITMAP_SB_BYTES at BUF as md's
 * md_bitmap_read_sb() does: -EINVAL with a message naming WHO and the
 * field for a wrong magic, a version other than 3 or 4 (5 is a clustered
 * bitmap, which libraid does not support), a chunk size under 512 bytes
 * or not a power of two, a daemon_sleep of 0, or a write_behind over
 * RAID_BITMAP_WRITE_BEHIND_MAX.  On failure *BSB holds what was parsed. */
int raid_bitmap_decode(const void *buf, const char *who, struct raid_bitmap_super *bsb)
  RAID_ATTR_NONNULL(1, 2, 3) RAID_ATTR_WUR;
/* Encode BSB into RAID_BITMAP_SB_BYTES at BUF (reserved bytes zero). */
void raid_bitmap_encode(const struct raid_bitmap_super *bsb, void *buf)
  RAID_ATTR_NONNULL(1, 2);
/* Bits in the bitmap: sync_size rounded up to whole chunks. */
uint64_t raid_bitmap_chunks(const struct raid_bitmap_super *bsb) RAID_ATTR_NONNULL(1);
/* Read MEMBER's internal bitmap, SB being its superblock (which must have
 * RAID_SB_FEATURE_BITMAP): validated as raid_bitmap_decode() does, its
 * UUID checked against SB's set UUID and its place against SB's data
 * area; *DIRTY (when not NULL) counts the bits set.  0, or -errno with a
 * message naming the member and what is wrong. */
int raid_bitmap_read(struct raid_member *member, const struct raid_superblock *sb,
                     struct raid_bitmap_super *bsb, uint64_t *dirty)
  RAID_ATTR_NONNULL(1, 2, 3) RAID_ATTR_WUR;
/* Sectors metadata VERSION leaves for a bitmap on a member of
 * MEMBER_SECTORS sectors when the array gets one, as mdadm reserves it:
 * for 1.0 the space between the data and the superblock (up to 128 KiB
 * for the bitmap and 4 KiB mdadm keeps for a bad block log); 0 for 1.1 and
 * 1.2, whose bitmap lies between the superblock and the data offset. */
uint64_t raid_bitmap_space(int version, uint64_t member_sectors);

/* A running array's bitmap. */
struct raid_bitmap_info {
  int present;                      /* 0: the array has no bitmap */
  int32_t offset;                   /* sectors from each superblock */
  uint32_t chunk_size;              /* bytes */
  uint64_t chunks;                  /* bits */
  uint64_t dirty;                   /* bits set now */
  uint64_t pages, pages_used;       /* md's 4 KiB counter pages (2048 chunks
                                       each), and those with dirty chunks */
  uint64_t events, events_cleared;
  uint32_t daemon_sleep;            /* seconds */
  uint32_t write_behind;            /* writes allowed behind (0: none) */
  uint32_t behind_writes;           /* write-behind I/O outstanding now */
};
int raid_array_bitmap(struct raid_array *a, struct raid_bitmap_info *info)
  RAID_ATTR_NONNULL(1, 2);
/* Add an internal bitmap to a running array with md metadata (MODE
 * RAID_BITMAP_INTERNAL, CHUNK bytes per bit or 0 for mdadm's default) or
 * remove it (RAID_BITMAP_NONE, CHUNK 0), as mdadm --grow --bitmap does.
 * The bitmap is written, every bit set, before the superblocks that point
 * at it; removing it writes superblocks without it.  Metadata 1.1 and 1.2
 * keep it between the superblock and the data offset; metadata 1.0 arrays
 * made without one have no room for it (-ENOSPC).  -EEXIST when adding
 * to an array that has one, -ENOENT when removing from one that has
 * none, -EINVAL for RAID 0 or a bad chunk; nothing is written then. */
int raid_array_set_bitmap(struct raid_array *a, int mode, uint32_t chunk)
  RAID_ATTR_NONNULL(1) RAID_ATTR_WUR;

/* mdadm --grow --size on a running array with md metadata:
 * each member holds MEMBER_SIZE bytes of data from now on, or (0) as much
 * as the smallest member has room for now (files grown with truncate,
 * block devices whose capacity grew: each member's size is looked at
 * again).  MEMBER_SIZE is a multiple of the chunk (RAID 1: of 4 KiB).
 * Growing writes the superblocks first, then the array serves the new
 * bytes; the new region is resynced (md's recovery_cp at the old end)
 * unless RAID_GROW_ASSUME_CLEAN.  A smaller MEMBER_SIZE shrinks the array:
 * requests past the new end fail from then on, and what was there is
 * gone.  A write-intent bitmap is taken off and put back over the new
 * size (its chunk kept where the room allows), as mdadm does on kernels
 * that cannot resize one.  Metadata 1.0's superblocks move to the grown
 * members' ends.  Refused, with nothing written: RAID 0 (md has no
 * resize for it), metadata 1.0 with a bitmap (-ENOTSUP), a failed array, a rebuild, resync or
 * scrub running (-EBUSY), a member without room (-ENOSPC, naming it).
 * Not from a thread that runs a queue with requests of A in flight. */
#define RAID_GROW_ASSUME_CLEAN 0x1u
int raid_array_grow_size(struct raid_array *a, uint64_t member_size, unsigned flags)
  RAID_ATTR_NONNULL(1) RAID_ATTR_WUR;
/* mdadm --grow --array-size: A shows and serves SIZE bytes from now on,
 * fewer than its members hold (raid_array_full_size()), or (0) all of
 * them.  Nothing is written: the bytes past SIZE stay on the members,
 * and as md's array_size the setting lives in memory only (an assembly
 * shows all).  A later raid_array_grow_size() does not enlarge what is
 * shown past SIZE (md's external size); a reshape to fewer members needs
 * SIZE at most what they hold.  Requests past SIZE fail from then on.
 * -EINVAL: SIZE more than the members hold or not whole sectors. */
int raid_array_set_array_size(struct raid_array *a, uint64_t size)
  RAID_ATTR_NONNULL(1) RAID_ATTR_WUR;
/* mdadm --grow --raid-devices N of a running RAID 1 with md metadata: N
 * mirrors from now on.  More: the new roles start missing (the array is
 * degraded) until a hot spare or an added member takes them and is
 * rebuilt; fewer: only when at most N members hold roles (fail and
 * remove the others first, -EBUSY otherwise), members in roles from N up
 * moving into the free roles below, as md renumbers them.  The
 * superblocks say it, events bumped.  A RAID 5 or 10 is restriped instead
 * (raid_array_grow_shape() with N members), a RAID 0 by
 * raid_array_grow_disks_add() (-EINVAL here: it keeps no hot spares).
 * Refused with nothing written: N outside 2 to
 * RAID_MAX_MEMBERS, a failed array, a rebuild, resync, scrub or
 * replacement running (-EBUSY).  Not from a thread that runs a queue with
 * requests of A in flight. */
int raid_array_grow_disks(struct raid_array *a, unsigned n) RAID_ATTR_NONNULL(1) RAID_ATTR_WUR;
/* mdadm --grow --raid-devices N --add MEMBER...: A grows to N members, the
 * NADD members of ADD new to it (N is A's number of members plus NADD).
 * The call owns them: each joins the array or is closed, also when it
 * fails.  A RAID 0 (metadata 1.1 or 1.2) is restriped md's way, online:
 * taken over as a RAID 5 of one member more in the parity-last layout
 * missing its parity role (mdadm's RAID 4: the same bytes), reshaped over
 * the new members (the first takes the empty role and is written by the
 * reshape; the new shape's parity role stays empty), and a RAID 0 of N
 * again when the reshape ends (raid_array_reshape_status() until then;
 * the superblocks say the RAID 5 meanwhile, so after a crash the reshape
 * goes on at assembly and ends as a RAID 5 missing its parity role, which
 * raid_array_grow_level() to 0 takes back, as mdadm --grow --continue).
 * Refused with nothing written: as raid_array_grow_shape(), a member too
 * small or read-only (naming it), N not A's members plus NADD (-EINVAL).
 * Other levels: each member added (raid_array_add_member()), then
 * raid_array_grow_disks(). */
int raid_array_grow_disks_add(struct raid_array *a, unsigned n, struct raid_member **add,
                              unsigned nadd) RAID_ATTR_NONNULL(1) RAID_ATTR_WUR;
/* mdadm --grow --raid-devices N --layout L --chunk C of a running RAID 5
 * (or --raid-devices N --chunk C of a RAID 10, near layouts: its layout
 * stays, -EINVAL otherwise, as md keeps the copies) with md metadata 1.1
 * or 1.2: one reshape, online, to RAID_DISKS members
 * (0: as many as now; more: hot spares take the new roles), LAYOUT
 * (RAID_LAYOUT_DEFAULT: as now) and CHUNK_SIZE bytes (0: as now).  The
 * data moves in the background (raid_array_reshape_status()); the new data
 * offset lies before the old one, so no backup file is kept.  Fewer
 * members: md's backwards reshape, from the end down, the new data offset
 * after the old one (the member size cut when the room after the data is
 * short), the array showing no more than they hold first
 * (raid_array_set_array_size(); -EINVAL otherwise, the message giving the
 * size), the members that leave hot spares at the end.  Refused with
 * nothing written: a level other than RAID 5 and 10 (-ENOTSUP),
 * metadata 1.0 or a write-intent bitmap (-ENOTSUP), an unknown
 * layout, a chunk size not a power of two from RAID_CHUNK_MIN to
 * RAID_CHUNK_MAX or not dividing the member size (-EINVAL), too few hot
 * spares (-EINVAL), too little room before the data (-ENOSPC, naming the
 * member), a degraded array or a resync due (-EAGAIN), a reshape or a
 * replacement under way (-EBUSY), a failed array (-EIO).  0 when nothing
 * would change.  Not from a thread that runs a queue with requests of A
 * in flight. */
int raid_array_grow_shape(struct raid_array *a, unsigned raid_disks, int layout,
                          uint32_t chunk_size) RAID_ATTR_NONNULL(1) RAID_ATTR_WUR;

/* mdadm --grow --level of a running array with md metadata, md's takeover:
 * a RAID 1 of 2 members becomes a RAID 5 of 2 (left-symmetric, the
 * largest chunk up to 64 KiB that divides the member size, as md chooses)
 * and a RAID 5 of 2 a RAID 1; the members' bytes stay as they are (a RAID
 * 5 of 2's parity is a copy of its data); a RAID 0 of N becomes a RAID 5
 * of N + 1, parity-last, the same chunk, its parity role (the last)
 * missing, and a parity-last RAID 5 a RAID 0 of one member fewer, its
 * parity member closed (md's raid45_takeover_raid0() and
 * raid0_takeover_raid45()).  Requests wait meanwhile (a superblock
 * write); more members come after by raid_array_grow_shape().  A RAID 5
 * in another layout to RAID 0 is reshaped to parity-last first (mdadm's
 * way, raid_array_reshape_status() meanwhile) and becomes the RAID 0 of
 * one member fewer when that reshape ends; 0 once it has started, and
 * the refusals of raid_array_grow_shape().
 * Refused with nothing written: another pair of levels or of member counts
 * (-ENOTSUP), a write-intent bitmap (-ENOTSUP), a
 * degraded array (but for a RAID 5 to RAID 0 missing its parity) or a
 * resync due (-EAGAIN), hot spares for a RAID 0, a reshape or a
 * replacement under way (-EBUSY), a failed array (-EIO).  0 when LEVEL is the array's.  Not from a thread
 * that runs a queue with requests of A in flight. */
int raid_array_grow_level(struct raid_array *a, int level) RAID_ATTR_NONNULL(1) RAID_ATTR_WUR;

/* A reshape under way (raid_array_grow_disks() or _grow_shape() of a
 * RAID 5, or one found half done at assembly): where it is, from which
 * shape to which. */
struct raid_reshape_status {
  int active;                    /* 1: a reshape is under way (running or frozen) */
  int frozen;                    /* 1: held by raid_array_reshape_freeze() */
  unsigned raid_disks_from, raid_disks_to;
  uint64_t position;             /* array bytes moved to the new shape (to
                                    fewer members, backwards: those from md's
                                    reshape_position up to size_to) */
  uint64_t size_from, size_to;   /* the array's bytes before and after */
  int layout_from, layout_to;    /* RAID_LAYOUT_* */
  uint32_t chunk_from, chunk_to; /* bytes */
};
/* Fill ST: 1 when a reshape is under way, else 0 (ST all zero). */
int raid_array_reshape_status(struct raid_array *a, struct raid_reshape_status *st)
  RAID_ATTR_NONNULL(1, 2);
/* md's "frozen" (FROZEN 1) and "idle" (0) in sync_action during a reshape:
 * freezing stops the reshape at a checkpoint (returns once it has) and
 * nothing of the engine runs until it is let go on; requests go on,
 * served by the new shape below the position and the old one above.  Not
 * kept across a stop: assembly resumes a reshape.  0, or -EINVAL when no
 * reshape is under way. */
int raid_array_reshape_freeze(struct raid_array *a, int frozen) RAID_ATTR_NONNULL(1);

#ifdef __cplusplus
}
#endif

#endif /* RAID_RAID_H */
