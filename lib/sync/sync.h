/* sync/: what the engine (engine.c) and its step plumbing (step.c)
 * share.  The floors above see sync/ through engine.h; the core through
 * struct sync_ops (internal.h). */
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
