/* RAID 5 internals shared by raid5.c (the personality: planning,
 * read-modify-write, reconstruct-write, reads, sync) and raid5-merge.c
 * (merging and plugging).  Not part of internal.h: nothing else needs
 * them.
 *
 * A stripe op (struct r5op) is one row piece of a request, under the
 * stripe lock of the columns it touches; it lives on its request's queue
 * ("Ownership and threads" in raid5.c and raid5-merge.c).
 */
#ifndef RAID5_H
#define RAID5_H

#include "internal.h"
#include "raid/levels.h"
#include "sync/engine.h"

enum seg_how { S_FULL, S_RMW, S_RCW, S_NOPARITY, S_RECON, S_DIRECT };

/* The columns [x0, x1) of a row in which data indices i0..i1 (inclusive)
 * are written, or, for a read op, index i0 is rebuilt (S_RECON) or the
 * indices wanted are read as they are (S_DIRECT). */
struct r5seg {
  uint32_t x0, x1;
  unsigned i0, i1;
  enum seg_how how;
  uint8_t *old[RAID_MAX_MEMBERS];  /* per member slot: what we read */
  uint8_t *parity;                 /* new parity */
};

/* Data index I of a row over columns [x0, x1): a piece a merge or a
 * plug's gather counts (raid5-merge.c). */
struct r5span {
  unsigned i;
  uint32_t x0, x1;
};

struct r5timer;

struct r5op {
  struct raid_request *r;
  struct range_lock lock;
  bool write;                      /* false: reconstruct read */
  uint64_t share;                  /* read op: data indices whose reads go
                                    * straight to the caller; the index it
                                    * was started for is in too */
  unsigned pd;                     /* parity member of the row */
  unsigned nseg;
  struct r5seg seg[3];
  unsigned pending;                /* member I/Os of the current phase */
  bool replan;                     /* a read failed: plan again */
  int err;                         /* out of memory: the op fails with it */
  void *mem;                       /* every buffer of the op */
  size_t mem_len;
  /* A lead op: the write ops done as part of this one, and every member
   * I/O of the merge (its own and theirs), allocated together. */
  struct r5op *merged;
  struct r5op *merged_next;
  struct member_io **mios;
  /* A merged op: its lead, its writes (in the lead's mios), a message to
   * the lead, and the result the lead gives it. */
  struct r5op *lead;
  struct member_io **mio;
  unsigned nmio;
  struct qtask notify;
  int result;
  bool plug_ok;                    /* may wait for the rest of its row */
  _Atomic bool plugged;            /* waiting: whoever clears it runs it */
  struct r5timer *timer;           /* while plugged */
  /* While plugged, under the stripe table's lock (r5_op_poke()): the
   * pieces over its columns, its own and those of the writes waiting
   * behind it that it could take over; full, it goes. */
  struct r5gather {
    unsigned n;
    struct r5span span[16];
  } gather;
};

/* The array's RAID 5 state (a->priv). */
struct r5conf {
  struct r5stream {                /* recent sequential write streams: */
    _Atomic uint64_t end;          /* where the last write ended */
    _Atomic uintptr_t req;         /* that write while in flight, or 0 */
  } stream[8];
  _Atomic unsigned stream_next;    /* the entry a new stream takes */
  _Atomic uint64_t write_lat_ns;   /* moving mean */
  _Atomic uint64_t write_bytes;    /* of the writes in flight */
  _Atomic uint64_t write_window;   /* their recent peak, decaying */
  _Atomic uint64_t last_write_ns;  /* when the last write came */
  _Atomic uint64_t write_gap_ns;   /* moving mean of the time between two */
  _Atomic uint64_t write_len;      /* moving mean of their length */
  _Atomic int plug_score;          /* plugs that filled their stripe, less
                                    * 4 per plug whose time ran out */
  _Atomic unsigned plug_probe;     /* plug candidates seen */
  _Atomic unsigned plug_us;        /* fixed plug window, or 0: adaptive */
};

/* The shape (struct raid_geo) comes with the request: a->raid_disks and
 * friends are the array's shape now, not necessarily the request's. */
static inline uint64_t
row_bytes(const struct raid_geo *g)
{
  return (uint64_t)g->chunk_size * (g->raid_disks - 1);
}

static inline unsigned
dd_slot(const struct raid_geo *g, unsigned pd, unsigned i)
{
  return geo_raid5_dd_idx(g->layout, g->raid_disks, pd, i);
}

/* Where the caller's bytes for data index I, column X of OP's row are. */
static inline uint8_t *
user_data(const struct r5op *op, unsigned i, uint32_t x)
{
  const struct raid_geo *g = op->r->geo;
  uint64_t aoff = op->lock.row * row_bytes(g) + (uint64_t)i * g->chunk_size + x;

  return op->r->buf + (aoff - op->r->offset);
}

/* Row ROW's column on member SLOT, bound (slot_member_at()), or NULL. */
static inline struct raid_member *
row_member(const struct raid_array *a, const struct raid_geo *g, unsigned slot, uint64_t row)
{
  return slot_member_at(a, slot, row * g->chunk_size, g->chunk_size);
}

/* ---- raid5.c ---------------------------------------------------------------- */

/* Decide how OP's segments are written (or read), allocate its buffers
 * and start its reads; then parity and writes, then r5_op_finish(). */
void r5_op_plan(struct r5op *op);
/* OP is over with ERR (0 or -errno): the ops it merged are unlocked and
 * sent their result, then OP's lock is released and its request told. */
void r5_op_finish(struct r5op *op, int err);
/* Drop a reference on OP's write phase (the last one finishes it). */
void r5_op_write_put(struct r5op *op);
/* The completion of OP's own writes (io->ctx is OP). */
void r5_op_write_done(struct member_io *io, int res);
/* A member I/O of OP's row on member SLOT (M, bound by the caller), for
 * request R, columns [X0, X0 + LEN); NULL when out of memory. */
struct member_io *r5_op_mio(struct r5op *op, struct raid_request *r, unsigned slot,
                            struct raid_member *m, enum mop mop, void *buf,
                            uint32_t x0, uint32_t len,
                            void (*done)(struct member_io *, int));

/* ---- raid5-merge.c ------------------------------------------------------------ */

/* OP's stripe lock is granted (its task): merge the writes waiting behind
 * it into full stripes, plug it, or plan it. */
void r5_op_locked(struct qtask *t, int res);
/* The stripe lock table's poke hook of write ops (range-lock.c). */
void r5_op_poke(struct range_lock *l, struct range_lock *w);
/* On a merged op's own queue: the lead is done, with f->result. */
void r5_op_merged_finish(struct qtask *t, int res);
/* Whether write R, array bytes [POS, END), continues a recent sequential
 * stream (R becomes its last write), and whether that stream's previous
 * write is still in flight. */
enum r5_stream { R5_STREAM_NONE, R5_STREAM_AFTER, R5_STREAM_BEHIND };
enum r5_stream r5_stream_continue(struct r5conf *c, struct raid_request *r, uint64_t pos,
                                  uint64_t end);
/* Recent plugs filled their stripes (see r5_plug_worth()). */
bool r5_plugs_fill(struct r5conf *c);
/* Count write R in flight (r->counted) and its arrival in the writes'
 * pace; the bytes of writes in flight, with it. */
uint64_t r5_write_arrived(struct r5conf *c, struct raid_request *r);
/* The recent peak of the bytes of writes in flight, NOW of them now. */
uint64_t r5_write_window(struct r5conf *c, uint64_t now);
/* Whether a piece of a stream's write that could wait for the rest of
 * its columns' stripe (raid5_submit()) should: the stream is known to
 * run deep enough (BUSY: a row's bytes in flight), recent plugs filled
 * their stripes, or this one probes. */
bool r5_plug_worth(struct r5conf *c, bool busy);
/* The personality's request_done(): streams, write latency, the bytes
 * of writes in flight. */
void raid5_request_done(struct raid_request *r);

#endif /* RAID5_H */
