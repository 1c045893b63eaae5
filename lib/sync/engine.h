/* sync/'s calls for the floors above it: a step (struct sync_op) and its
 * member I/O for the personalities' sync_step, and the engine's calls for
 * the top (manage.c, blocking.c) and the unit tests.  The core never
 * includes this: it reaches the engine through struct sync_ops
 * (internal.h, "the doors").  What only sync/'s own files share is
 * sync.h. */
#ifndef RAID_SYNC_ENGINE_H
#define RAID_SYNC_ENGINE_H

#include "internal.h"

/* ---- sync/step.c: a step, for the personalities' sync_step -------- */

/* One step of the engine: member bytes [pos, pos + len) of every role. */
struct sync_lock;
struct sync_arena;
struct sync_op {
  struct raid_array *a;
  struct raid_queue *q;          /* the engine's */
  int action;                    /* RAID_SYNC_* */
  uint64_t pos, len;
  uint64_t mismatches;           /* sectors, added by sync_step */
  struct sync_lock *locks;       /* filled by sync_locks() */
  unsigned nlocks, max_locks;
  struct sync_arena *arena;      /* sync_buf() */
  unsigned in_flight;            /* lock grants not yet done (reads and
                                    writes: counted per arena) */
  int error;                     /* first sync_io() error */
  /* Set by the engine for the whole step: the members RECOVER rebuilds,
   * by role (NULL: that role is not rebuilt). */
  struct raid_member *target[RAID_MAX_MEMBERS];
};
/* A piece's reads issued ahead: a personality's sync_read() sends them
 * and notes here what it read where; its sync_step() for the same piece
 * finds them again (issued set), waits for them with sync_io_wait() and
 * goes on.  Kept with the piece's buffers, cleared when they are reused. */
struct sync_reads {
  bool issued;
  int source;                    /* the personality's: RAID 1's copy read */
  struct raid_member *mem[RAID_MAX_MEMBERS];
  uint8_t *buf[RAID_MAX_MEMBERS];
  void *jobs;                    /* the personality's: RAID 10's list */
  unsigned njobs;
};
/* The reads of OP's piece (op->pos, op->len), in its buffers. */
struct sync_reads *sync_piece_reads(struct sync_op *op);
/* Add a lock on ROW, bytes [LO, HI) to OP's set. */
void sync_add_lock(struct sync_op *op, uint64_t row, uint32_t lo, uint32_t hi);
/* Member I/O for a sync step, run in parallel: queue with sync_io(), then
 * wait with sync_io_wait(), which returns the first error so far, after
 * failing members whose I/O failed (unless it was a replacement's).  It
 * waits for the reads into the piece's own buffers only: writes stay in
 * flight, and the next piece's reads too, while this piece is computed;
 * the engine waits for them all before the step ends. */
void sync_io(struct sync_op *op, struct raid_member *m, unsigned slot,
             enum mop mop, void *buf, uint64_t pos, size_t len);
int sync_io_wait(struct sync_op *op);
/* The sync step's buffers (a per-op arena, freed after the step). */
void *sync_buf(struct sync_op *op, size_t len);
/* Count 4 KiB blocks (as sectors) where X and Y differ. */
uint64_t sync_count_mismatch(const uint8_t *x, const uint8_t *y, size_t len);

/* ---- sync/engine.c: the engine, for the top and the tests --------- */

/* Something changed (member failed, added): let the engine look. */
void sync_kick(struct raid_array *a);
void sync_engine_free(struct raid_array *a);
/* Wait up to MS milliseconds for A's engine (started) to be idle with
 * nothing asked of it: true when it was so at the call. */
bool sync_wait_idle(struct raid_array *a, unsigned ms);
/* Keep A's engine from starting anything while the caller changes the
 * array's size (raid_array_grow_size()): 0, or -EBUSY naming the action
 * that is running (md's update_size() refuses then too).  sync_release()
 * lets it look again, as after any change. */
int sync_hold(struct raid_array *a);
/* A reshape is due (a->reshape_pos set): start A's engine if it is not
 * running, and wake it.  0, or -errno when the engine cannot start. */
int sync_reshape_kick(struct raid_array *a);
/* Freeze (FROZEN) or let go on the reshape under way: 0, or -errno when the
 * engine cannot start.  Freezing returns once the reshape has stopped at a
 * checkpoint. */
int sync_reshape_freeze(struct raid_array *a, bool frozen);
bool sync_reshape_frozen(struct raid_array *a);
void sync_release(struct raid_array *a);
/* Bytes of each member the last (or running) action went over: less than
 * done for a resync that the bitmap let skip clean chunks. */
uint64_t sync_synced(struct raid_array *a);

#endif
