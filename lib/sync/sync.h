/* sync/: what its files share: the engine (engine.c: the thread and the
 * calls), a pass over the members (pass.c), the pace (pace.c: speed
 * limits and the throttle), a step's plumbing (step.c) and the reshape
 * (reshape.c).  The floors above see sync/ through engine.h; the core
 * through struct sync_ops (internal.h). */
#ifndef RAID_SYNC_H
#define RAID_SYNC_H

#include "sync/engine.h"

struct sync_lock {
  struct range_lock l;
  struct sync_op *op;
};

/* A piece's buffers.  SYNC_ARENAS arenas take turns, piece by piece:
 * before one is reused, the writes of the piece that used it must be
 * done.  With three, the next piece's reads go out (the personality's
 * sync_read()) while this piece is computed and written and the writes
 * of the one before are still in flight. */
#define SYNC_ARENAS 3u
struct sync_arena {
  uint8_t *base;
  size_t size, used;
  unsigned reads;                /* reads into these buffers in flight */
  unsigned writes;               /* writes from these buffers in flight */
  struct sync_reads rd;          /* what sync_read() issued for the piece */
  struct extra { struct extra *next; } *extra;
};

/* ---- engine.c ------------------------------------------------------------------ */

/* An array's engine (a->sync): engine.c starts it and picks its actions,
 * pass.c and pace.c run them and keep its progress, under its lock. */
struct sync_engine {
  struct daemon d;              /* the engine's thread; its lock guards
                                   everything below, its wake means work
                                   for the thread and news for waiters */
  bool auto_sync, kicked, paused;
  bool reshape_frozen;          /* raid_array_reshape_freeze(): the reshape
                                   under way waits (md's frozen sync_action),
                                   a kick does not wake it */
  int request;                  /* action asked for, or IDLE */
  int action;                   /* running */
  int failed_auto;              /* automatic action that failed: not retried
                                   until something changes */
  uint64_t done, total, rate, mismatches;
  uint64_t synced;              /* bytes of each member the action went over
                                   (a resync guided by the bitmap skips) */
  int last_action, last_result;
  uint64_t last_mismatches;
  uint64_t min_rate, max_rate;
  struct sync_arena arena[SYNC_ARENAS];
};

/* ---- pass.c -------------------------------------------------------------------- */

/* Bytes of each member in a piece (a step is SYNC_PIECES of them). */
uint64_t sync_piece(const struct raid_array *a);
/* A member is being rebuilt or replaced (pick() and a rebuild's pass ask). */
bool recovery_due(struct raid_array *a);
/* Run action ACT (not a reshape) over A's members on the engine E's queue
 * Q: 0 or -errno, -EINTR when stopped. */
int run_pass(struct raid_array *a, struct sync_engine *e, struct raid_queue *q, int act);

/* ---- pace.c -------------------------------------------------------------------- */

#define SYNC_RATE_NS 2000000000ull      /* rate window: 2 to 4 seconds */
/* The rate status shows: bytes done over two windows, previous and
 * current. */
struct sync_rate {
  uint64_t t[2], pos[2];
};
void sync_rate_start(struct sync_rate *r, uint64_t pos, uint64_t now);
/* At POS, NOW: move the windows on, and set E's rate once there is 0.2 s
 * of history (takes E's lock). */
void sync_rate_update(struct sync_engine *e, struct sync_rate *r, uint64_t pos, uint64_t now);
/* The speed limit that applies now (0: none); see its comment in pace.c. */
uint64_t step_limit(struct raid_array *a, struct sync_engine *e, uint64_t *seen_ios,
                    uint64_t *t_busy, bool assume_busy, bool *busyp);
/* Keep the pace after a step of LEN bytes planned under STEP_LIM: sleep
 * until it is due (*DUE).  False when the engine was stopped meanwhile. */
bool throttle(struct raid_array *a, struct sync_engine *e, uint64_t len, uint64_t step_lim,
              uint64_t *due, uint64_t *seen_ios, uint64_t *t_busy);
/* The reshape under way, at the rebuild's pace, between md's events. */
int run_reshape(struct raid_array *a, struct sync_engine *e, struct raid_queue *q);

/* ---- step.c ------------------------------------------------------------------ */

/* Empty arena AR (its buffers reused from the start). */
void arena_reset(struct sync_arena *ar);
/* Take every lock in OP's set, in order, and wait for them (op->error
 * says whether that went wrong); release them all. */
void lock_all(struct sync_op *op);
void unlock_all(struct sync_op *op);
/* The end of a step: the reads and writes of all SYNC_ARENAS ARENAS done
 * too.  0 or the step's first error. */
int sync_io_drain(struct sync_op *op, struct sync_arena *arenas);
/* Make AR OP's buffers for the next piece, once the I/O of the piece
 * that used it before is done. */
int use_arena(struct sync_op *op, struct sync_arena *ar);
/* The replacements in DID (chosen at the step's start) get a copy of the
 * piece OP covers from their role's member. */
int copy_replacements(struct sync_op *op, const bool *did);

/* ---- reshape.c ----------------------------------------------------------------- */

/* Move A from a->geo_old to a->geo_new from a->reshape_pos on, on the
 * engine's queue Q; GO(CTX, DONE, TOTAL, &STEP_MAX) before each step says
 * whether to go on: it takes the progress (bytes of each member in the new
 * shape, DONE of TOTAL), keeps the pace (it may sleep) and sets how many
 * bytes of each member the next step may write at most (0: no limit).
 * 0 once the array has its new shape, -EINTR when GO said stop (the
 * position recorded), else -errno. */
int reshape_run(struct raid_array *a, struct raid_queue *q,
                bool (*go)(void *ctx, uint64_t done, uint64_t total, uint64_t *step_max),
                void *ctx);

#endif /* RAID_SYNC_H */
