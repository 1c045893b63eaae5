/* The reshape: a RAID 5 or a RAID 10 restriped over more members, or to
 * another layout or chunk size (mdadm --grow --raid-devices, --layout,
 * --chunk), online, md's way, on the sync engine's thread.
 *
 * The array's bytes move, in address order, from the old shape (geo_old)
 * to the new one (geo_new), which starts GAP bytes earlier on every member
 * (md's new_offset, negative: mdadm 4.x moves the data offset instead of
 * keeping a backup file).  With more members a row of the new shape holds
 * more data than a row of the old, so the new shape's write front on each
 * member runs behind the old shape's read front, the more so the further
 * the reshape goes; the gap makes that true from the first row on.  Over
 * as many members the fronts move together, the gap apart, so the gap is
 * also the most that may move between two checkpoints.
 *
 * The reshape moves whole units: rows of the new shape spanning the larger
 * of the two chunks on each member (md's reshape_position is a multiple of
 * that), so a step never leaves a new row half written.  A row holds
 * num/den data chunks (geo_row_chunks()): for a RAID 10 whose copies do
 * not divide its members a fraction, so a unit is as many rows as make
 * whole chunks (near-2 over 5 members: 2 rows, 5 chunks).  The last unit
 * may end past the array's end: the reshape stops there.  A RAID 10 may
 * also stop inside a row (no parity ties its chunks), where the gap leaves
 * no room for a unit: md moves its own chunk by chunk (a single chunk of
 * gap is all it asks), and its checkpoints fall on any 64 KiB (next_end(),
 * next_lo()); from there the next step forwards goes to the unit's end.
 *
 * Safe at a crash.  The superblocks say how far the reshape has come
 * (reshape_position, array sectors: the checkpoint); what lies below it
 * is read in the new shape, the rest in the old, and assembly resumes
 * from there, moving again what was moved since.  So before a step writes
 * the new shape up to member byte W, every old-shape byte from the
 * checkpoint on must lie at or beyond W (else a crash would lose old data
 * not yet recorded as moved): the step checkpoints first when it would
 * not (md's reshape_safe rule in reshape_request()).  A checkpoint is the
 * superblock write of every member, which flushes each member first
 * (member_pio()), so everything moved before it is on stable storage
 * before the superblocks say so.
 *
 * Online.  Requests keep coming through the core's window (request.c):
 * below its start they are served by the new shape, from its end by the
 * old, and in between (the step being moved, and what was moved since the
 * checkpoint, which a crash would move again over later writes) they wait.
 * A step checkpoints at once when requests wait, so none waits for more
 * than a step and a superblock write.
 *
 * When every old byte is moved, the rest of the new shape (the new room)
 * is written with zeroes, their parity or copies to match (md writes a
 * RAID 5's so; its RAID 10 resyncs the room instead), so the array needs
 * no resync of it; then, with every request parked, the members'
 * data offsets become the new ones, the superblocks forget the reshape,
 * and the array takes its new size.
 *
 * Backwards (md's reshape_backwards, to fewer members: lib/grow.c).  A
 * row of the new shape holds less than one of the old, so written from
 * the start the new shape would overtake the old data before it moved;
 * it starts GAP bytes later on every member instead (new_offset > 0) and
 * the bytes move from the end of the array down, the old shape below the
 * line and the new one from it on (the window the other way round, and
 * the checkpoint says how far down it has come).  The rule is the same
 * mirrored (next_lo()): before a step writes the new shape down to member
 * byte W, every old-shape byte below the checkpoint must end at or below
 * W.  The fronts part most at the top and close in to the gap at the
 * bottom, where the steps between checkpoints are the shortest.  At the
 * end the roles past the new shape's last leave the array, their members
 * hot spares (leave()), as md leaves them. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "md/meta.h"
#include "sync.h"

#define RESHAPE_STEP (16u << 20)        /* bytes moved per step, at most */
#define RESHAPE_CHECKPOINT_NS 1000000000ull

struct reshape {
  struct raid_array *a;
  struct raid_queue *q;
  const struct raid_geo *old, *new;
  uint64_t num_old, den_old;    /* data chunks per row: num / den */
  uint64_t num_new, den_new;
  uint64_t cmax;                /* the larger chunk */
  uint64_t unit, unit_member;   /* array bytes of a unit; its bytes on each member */
  uint64_t gap;                 /* bytes the new shape starts earlier (later: back) */
  bool back;                    /* from the end down (md's backwards reshape) */
  uint64_t old_size, new_size;
  uint64_t pos, safe;           /* moved so far; recorded (checkpoint) */
  uint64_t t_ck;
  uint64_t step_max;            /* member bytes a step may write (0: any) */
  uint8_t *buf;
  unsigned pending;
  int err;
  struct raid_member *drop;     /* the parity member leaving for a RAID 0 */
  int drop_st;
  /* Backwards, the roles past the new shape's last at its end (leave()):
   * their members and states, and which became hot spares. */
  struct raid_member *left[RAID_MAX_MEMBERS];
  int left_st[RAID_MAX_MEMBERS];
  bool left_spare[RAID_MAX_MEMBERS];
};

/* Where on each member (from the old data offset, plus GAP) the new
 * shape's rows up to array byte END end. */
static uint64_t
new_front(const struct reshape *x, uint64_t end)
{
  return geo_member_front(x->a->level, x->a->copies, x->new, end);
}

/* Where on each member the new shape's row holding array byte POS starts
 * (its chunk's first copy, for a RAID 10): the lowest a step from POS up
 * writes, POS anywhere (new_front() of a whole unit otherwise). */
static uint64_t
new_start(const struct reshape *x, uint64_t pos)
{
  uint64_t chunks = pos / x->new->chunk_size;

  return chunks * x->den_new / x->num_new * x->new->chunk_size;
}

/* Where the old shape's rows from array byte POS on start, plus GAP. */
static uint64_t
old_front(const struct reshape *x, uint64_t pos)
{
  uint64_t chunks = pos / x->old->chunk_size;

  return chunks * x->den_old / x->num_old * x->old->chunk_size + x->gap;
}

/* Backwards: where the old shape's rows holding array bytes below POS
 * end on each member, from the old data offset. */
static uint64_t
old_end(const struct reshape *x, uint64_t pos)
{
  return geo_member_front(x->a->level, x->a->copies, x->old, pos);
}

/* The window over the bytes a step from the line to END changes, with
 * those moved since the checkpoint: [checkpoint, END) forwards, [END,
 * checkpoint) backwards. */
static void
window(struct reshape *x, uint64_t end)
{
  if (x->back)
    array_window_set(x->a, end, x->safe);
  else
    array_window_set(x->a, x->safe, end);
}

static void
io_done(void *opaque, int res)
{
  struct reshape *x = opaque;

  if (res < 0 && x->err == 0)
    x->err = res;
  x->pending--;
}

/* Run the engine's queue until every I/O sent is done. */
static int
io_wait(struct reshape *x)
{
  struct pollfd p = { .fd = raid_queue_fd(x->q), .events = POLLIN };
  int r;

  for (;;) {
    if ((r = raid_queue_run(x->q, 0)) < 0)
      return r;
    if (x->pending == 0)
      return x->err;
    if (poll(&p, 1, 100) < 0 && errno != EINTR)
      return set_error(errno, "reshape: poll: %s", strerror(errno));
  }
}

/* Array bytes [POS, POS + LEN) in shape G, read into or written from BUF,
 * in requests of at most RAID_MAX_REQUEST. */
static int
move(struct reshape *x, const struct raid_geo *g, enum req_op op, uint8_t *buf,
     uint64_t pos, uint64_t len)
{
  uint64_t off;
  int r = 0;

  for (off = 0; off < len && r == 0; off += RAID_MAX_REQUEST) {
    size_t n = MIN(len - off, (uint64_t)RAID_MAX_REQUEST);

    x->pending++;
    if ((r = req_internal(x->q, x->a, g, op, buf + off, n, pos + off, io_done, x)) < 0)
      x->pending--;
  }
  if (r == 0)
    r = io_wait(x);
  else
    io_wait(x);
  if (r < 0 && x->err == 0)
    x->err = r;
  return r;
}

static int
checkpoint(struct reshape *x)
{
  int r;

  if (x->safe == x->pos && x->t_ck)
    return 0;
  if ((r = meta_reshape_checkpoint(x->a, x->pos)) < 0)
    return r;
  x->safe = x->pos;
  x->t_ck = mono_ns();
  return 0;
}

/* Roles recovering while the reshape adds members are filled by it, as
 * md's reshape_request() moves their recovery_offset along: the new
 * shape's rows of the step are written to them too, so their recovery
 * point goes to the step's end before its writes (slot_ok_at() then lets
 * them through).  Old-shape rows below that point on such a role are all
 * below END, where the old shape serves no request (a new row holds more
 * data than an old one), so the old shape still finds the role missing
 * wherever it serves.  The step's window holds every request out of the
 * rows it changes.  Only roles filled up to the step's start: a member
 * added into a free role while the reshape runs (raidctl add) missed the
 * rows moved before, and is rebuilt after it. */
static void
fill_front(struct reshape *x, uint64_t end)
{
  struct raid_array *a = x->a;
  uint64_t front = new_front(x, end), start = new_front(x, x->pos);
  unsigned i;

  if (x->new->raid_disks <= x->old->raid_disks)
    return;
  for (i = 0; i < x->new->raid_disks; i++) {
    uint64_t cur = atomic_load(&a->recovered[i]);

    if (atomic_load(&a->state[i]) == RAID_MEMBER_RECOVERING && cur >= start && cur < front)
      atomic_compare_exchange_strong(&a->recovered[i], &cur, front);
  }
}

/* One step: array bytes [x->pos, END) from the old shape to the new;
 * backwards [END, x->pos), every one of them in the old shape. */
static int
step(struct reshape *x, uint64_t end)
{
  uint64_t lo = x->back ? end : x->pos, hi = x->back ? x->pos : end;
  uint64_t have = lo < x->old_size ? MIN(hi, x->old_size) - lo : 0;
  int r;

  window(x, end);
  array_window_drain(x->a);
  if (have && (r = move(x, x->old, REQ_READ, x->buf, lo, have)) < 0)
    return r;
  memset(x->buf + have, 0, hi - lo - have);
  if (!x->back)
    fill_front(x, end);
  if ((r = move(x, x->new, REQ_WRITE, x->buf, lo, hi - lo)) < 0)
    return r;
  x->pos = end;
  atomic_store(&x->a->reshape_pos, end);
  return 0;
}

/* Backwards, the start of the next step (*ENDP): as far down as the
 * buffer goes, no further than the checkpoint allows.  The new shape's
 * rows from there on must start at or beyond the end of the old shape's
 * rows below the checkpoint (still read from the old shape after a crash):
 * a row of the new shape holds less, so its front runs ahead of the old
 * one's by more the higher it is, and by the gap at the bottom, where the
 * steps between checkpoints are the shortest (md's reshape_request() with
 * reshape_backwards: writepos against safepos, mirrored). */
static int
next_lo(struct reshape *x, uint64_t *endp)
{
  uint64_t down = MIN(x->pos, RESHAPE_STEP / x->unit * x->unit), lo, need, units;
  bool ck = array_window_waiting(x->a) || mono_ns() - x->t_ck > RESHAPE_CHECKPOINT_NS;
  int r;

  if (x->step_max)
    down = MIN(down, x->step_max / x->unit_member * x->unit);
  if (down == 0)
    down = MIN(x->pos, x->unit);
  lo = x->pos - down;
  ck = ck || new_start(x, lo) + x->gap < old_end(x, x->safe);
  if (ck && (r = checkpoint(x)) < 0)
    return r;
  need = old_end(x, x->safe);
  if (new_start(x, lo) + x->gap < need) {
    units = DIV_ROUND_UP(need - x->gap, x->unit_member);
    lo = units * x->unit;
    /* A RAID 10 holds no parity: a step may end inside a row, down to the
     * first new chunk whose copies all lie at or beyond NEED, as md's
     * raid10 reshape_request() moves chunk by chunk (md moves the data
     * offset by a single chunk, where whole units need more). */
    if (lo >= x->pos && x->a->level == RAID_LEVEL_10) {
      uint64_t rows = DIV_ROUND_UP(need - x->gap, x->new->chunk_size);

      lo = DIV_ROUND_UP(rows * x->num_new, x->den_new) * x->new->chunk_size;
    }
    if (lo >= x->pos)
      return set_error(ENOSPC, "%s %s: reshape at byte %" PRIu64 ": the new shape "
                       "would overwrite data not yet moved", x->a->pers->name,
                       x->a->name, x->pos);
  }
  *endp = lo;
  return 0;
}

/* The end of the next step: as far as the buffer goes, no further than
 * the checkpoint allows (checkpointing first when that is not a row).
 * Steps end on whole units; one from inside a unit (a RAID 10's: md's
 * checkpoints fall on any 64 KiB, and next_end() may end one there
 * itself) goes up to the unit's end first. */
static int
next_end(struct reshape *x, uint64_t *endp)
{
  uint64_t limit = x->new_size, from = x->pos / x->unit * x->unit;
  uint64_t end = MIN(limit, from + RESHAPE_STEP / x->unit * x->unit);
  uint64_t units;
  int r;
  bool ck = array_window_waiting(x->a) || mono_ns() - x->t_ck > RESHAPE_CHECKPOINT_NS;

  /* Under a speed limit, no more than the engine's pace allows. */
  if (x->step_max)
    end = MIN(end, from + x->step_max / x->unit_member * x->unit);
  if (end <= x->pos)
    end = MIN(limit, from + x->unit);
  /* Past the old bytes (the new room) nothing old is left to lose once
   * the checkpoint says they are all moved. */
  if (x->pos >= x->old_size)
    ck = ck || x->safe < x->old_size;
  else
    ck = ck || new_front(x, end) > old_front(x, x->safe);
  if (ck && (r = checkpoint(x)) < 0)
    return r;
  if (x->pos < x->old_size && new_front(x, end) > old_front(x, x->safe)) {
    uint64_t room = old_front(x, x->safe);

    units = room / x->unit_member;
    /* A RAID 10 holds no parity: a step may end inside a row, up to the
     * last new chunk whose copies all lie below ROOM, as md's raid10
     * reshape_request() moves chunk by chunk (md moves the data offset by
     * a single chunk, where whole units of an odd number of members need
     * two). */
    if (units * x->unit <= x->pos && x->a->level == RAID_LEVEL_10)
      end = MIN(end, room / x->new->chunk_size * x->num_new / x->den_new *
                x->new->chunk_size);
    else
      end = units * x->unit;
    if (end <= x->pos)
      return set_error(ENOSPC, "%s %s: reshape at byte %" PRIu64 ": the new shape "
                       "would overwrite data not yet moved", x->a->pers->name,
                       x->a->name, x->pos);
  }
  *endp = end;
  return 0;
}

/* to_stripe()'s roles undone: the parity role back, with its member. */
static void
to_stripe_roles_back(struct reshape *x)
{
  struct raid_array *a = x->a;
  unsigned n = x->new->raid_disks;

  pthread_mutex_lock(&a->conf_lock);
  roles_level_back_locked(a, n - 1, n, x->drop, x->drop_st);
  x->drop = NULL;
  pthread_mutex_unlock(&a->conf_lock);
}

/* The reshape ends as a RAID 0 (A->reshape_then, lib/grow.c): a RAID 0
 * restriped ran as a RAID 5 in the parity-last layout missing its parity
 * role (what mdadm does through its RAID 4), and a RAID 5 in another
 * layout was reshaped to parity-last first (mdadm's way to a RAID 0), so
 * both end as md's raid0_takeover_raid45() leaves them (mdadm's
 * impose_level()): with every request parked, flushes too, the parity
 * role goes, its member (if any) taken out into X->drop, and the RAID 0
 * personality serves the new shape (data chunk I of a row stays on
 * member I).  The superblocks say so in the write that ends the reshape.
 * True when it did; false when it stays a RAID 5: not asked, a hot spare
 * added meanwhile (a RAID 0 keeps none), or the RAID 0 could not be set
 * up (logged either way). */
static bool
to_stripe(struct reshape *x, struct raid_geo *g0)
{
  struct raid_array *a = x->a;
  unsigned n = x->new->raid_disks;
  bool go;

  pthread_mutex_lock(&a->conf_lock);
  go = a->reshape_then == RAID_LEVEL_0 && a->level == RAID_LEVEL_5 &&
    x->new->layout == RAID_LAYOUT_PARITY_LAST && a->nspares == 0;
  if (a->reshape_then == RAID_LEVEL_0 && !go)
    raid_log(RAID_LOG_ERR, "%s %s: reshape done, but not a RAID 0 again: it has a hot "
             "spare; raidctl remove it, then raidctl grow --level 0", a->pers->name, a->name);
  pthread_mutex_unlock(&a->conf_lock);
  if (!go)
    return false;
  array_window_park_all(a);
  pthread_mutex_lock(&a->conf_lock);
  roles_level_locked(a, n, n - 1, &x->drop, &x->drop_st);
  pthread_mutex_unlock(&a->conf_lock);
  atomic_store(&a->size, x->new_size);
  if (array_set_personality(a, RAID_LEVEL_0, 0, x->new->chunk_size, g0) == 0)
    return true;
  raid_log(RAID_LOG_ERR, "%s %s: reshape done, but not a RAID 0 again: %s; raidctl grow "
           "--level 0 makes it one", a->pers->name, a->name, raid_get_error());
  to_stripe_roles_back(x);
  return false;
}

/* Undo to_stripe(): a RAID 5 of the new shape again. */
static void
to_stripe_back(struct reshape *x)
{
  struct raid_array *a = x->a;
  struct raid_geo g5;

  if (array_set_personality(a, RAID_LEVEL_5, RAID_LAYOUT_PARITY_LAST, x->new->chunk_size,
                            &g5) < 0)
    raid_log(RAID_LOG_ERR, "%s %s: back to RAID 5: %s", a->pers->name, a->name,
             raid_get_error());
  to_stripe_roles_back(x);
}

/* Backwards, with every request parked: the roles past the new shape's
 * last leave the array (md's raid5_finish_reshape() takes their members
 * out of sync, and they become spares): a member in sync there becomes a
 * hot spare, its data offset moved as the others' (md_finish_reshape()
 * moves every member's), any other (failed meanwhile) is let go once the
 * superblocks say so (finish()). */
static void
leave(struct reshape *x)
{
  struct raid_array *a = x->a;
  unsigned i, n = x->new->raid_disks, old = x->old->raid_disks;

  pthread_mutex_lock(&a->conf_lock);
  for (i = n; i < old; i++) {
    x->left[i] = atomic_load(&a->members[i]);
    x->left_st[i] = atomic_load(&a->state[i]);
    x->left_spare[i] = x->left[i] && x->left_st[i] == RAID_MEMBER_IN_SYNC &&
      a->nspares < RAID_MAX_MEMBERS;
    /* The weaker state first (roles.c's "Roles and members"). */
    atomic_store(&a->state[i], RAID_MEMBER_MISSING);
    atomic_store(&a->members[i], NULL);
    if (x->left_spare[i]) {
      a->spares[a->nspares++] = x->left[i];
      x->left[i]->data_offset += x->new->shift;
      x->left[i]->data_size -= x->new->shift >> SECTOR_SHIFT;
    }
  }
  a->raid_disks = n;
  roles_count_locked(a);
  pthread_mutex_unlock(&a->conf_lock);
}

/* leave() undone: the superblocks did not take the end. */
static void
leave_back(struct reshape *x)
{
  struct raid_array *a = x->a;
  unsigned i, k, n = x->new->raid_disks, old = x->old->raid_disks;

  pthread_mutex_lock(&a->conf_lock);
  for (i = n; i < old; i++) {
    for (k = 0; x->left_spare[i] && k < a->nspares; k++)
      if (a->spares[k] == x->left[i]) {
        memmove(a->spares + k, a->spares + k + 1, (--a->nspares - k) * sizeof *a->spares);
        x->left[i]->data_offset -= x->new->shift;
        x->left[i]->data_size += x->new->shift >> SECTOR_SHIFT;
        break;
      }
    atomic_store(&a->members[i], x->left[i]);
    atomic_store(&a->state[i], x->left_st[i]);
  }
  a->raid_disks = old;
  roles_count_locked(a);
  pthread_mutex_unlock(&a->conf_lock);
}

/* Every request parked, the new shape at the members' new data offsets
 * and the new size; the superblocks forget the reshape.  Roles the
 * reshape filled hold every row of the new shape: in sync (md's
 * end_reshape()). */
static int
finish(struct reshape *x)
{
  struct raid_array *a = x->a;
  struct raid_geo *g = (struct raid_geo *)x->new, g0;
  uint64_t end = new_front(x, x->new_size);
  unsigned i;
  bool stripe;
  int r;

  array_window_set(a, 0, UINT64_MAX);
  array_window_drain(a);
  pthread_mutex_lock(&a->conf_lock);
  for (i = 0; i < a->raid_disks; i++)
    if (atomic_load(&a->state[i]) == RAID_MEMBER_RECOVERING &&
        atomic_load(&a->recovered[i]) >= end) {
      atomic_store(&a->recovered[i], a->member_size);
      atomic_store(&a->state[i], RAID_MEMBER_IN_SYNC);
    }
  roles_count_locked(a);
  pthread_mutex_unlock(&a->conf_lock);
  stripe = to_stripe(x, &g0);
  if (x->back)
    leave(x);
  if ((r = meta_reshape_finish(a)) < 0) {
    if (stripe) {
      to_stripe_back(x);
      atomic_store(&a->size, x->old_size);
    }
    if (x->back)
      leave_back(x);
    window(x, x->pos);
    return r;
  }
  if (stripe) {
    pthread_mutex_lock(&a->conf_lock);
    *g = g0;
    a->reshape_then = -1;
    pthread_mutex_unlock(&a->conf_lock);
  }
  g->shift = 0;
  atomic_store(&a->layout, g->layout);
  atomic_store(&a->chunk_size, g->chunk_size);
  atomic_store(&a->chunk_sectors, g->chunk_sectors);
  atomic_store(&a->size, x->new_size);
  /* No reshape, in one go for raid_array_reshape_status(), which reads
   * both under conf_lock (requests are all parked at the window). */
  pthread_mutex_lock(&a->conf_lock);
  atomic_store(&a->reshape_pos, UINT64_MAX);
  a->reshape_back = false;
  pthread_mutex_unlock(&a->conf_lock);
  array_window_close(a, g);
  /* The parity member that left: closed with its superblock as it was
   * (stale: the others say it faulty), as a takeover closes it. */
  if (x->drop)
    member_release(a, x->drop);
  for (i = x->new->raid_disks; x->back && i < x->old->raid_disks; i++)
    if (x->left[i] && !x->left_spare[i])
      member_release(a, x->left[i]);
  raid_log(RAID_LOG_INFO, "%s %s: reshape done: %u members, layout %d, chunk %" PRIu32
           " KiB, %" PRIu64 " bytes%s", a->pers->name, a->name, g->raid_disks, g->layout,
           g->chunk_size >> 10, x->new_size, x->back ? "; the members that left are hot "
           "spares (raidctl remove takes them out)" : "");
  return 0;
}

int
reshape_run(struct raid_array *a, struct raid_queue *q,
            bool (*go)(void *ctx, uint64_t done, uint64_t total, uint64_t *step_max),
            void *ctx)
{
  struct reshape x = { .a = a, .q = q };
  uint64_t end = 0, rows, chunks;
  int r = 0;

  x.old = a->geo_old;
  x.new = a->geo_new;
  geo_row_chunks(a->level, a->copies, x.old, &x.num_old, &x.den_old);
  geo_row_chunks(a->level, a->copies, x.new, &x.num_new, &x.den_new);
  x.cmax = MAX(x.old->chunk_size, x.new->chunk_size);
  /* The fewest whole chunks that fill whole new rows, over the larger chunk. */
  geo_row_unit(a->level, a->copies, x.new, &rows, &chunks);
  x.unit = x.cmax * chunks;
  x.unit_member = x.cmax * rows;
  x.back = a->reshape_back;
  x.gap = x.back ? x.new->shift : -x.new->shift;
  x.old_size = geo_data_size(a->level, a->copies, x.old, a->member_size);
  x.new_size = geo_data_size(a->level, a->copies, x.new, a->member_size);
  x.pos = x.safe = atomic_load(&a->reshape_pos);
  x.buf = raid_buf_alloc(RESHAPE_STEP + x.unit);
  if (x.buf == NULL)
    return set_error(ENOMEM, "%s %s: reshape: out of memory", a->pers->name, a->name);
  raid_log(RAID_LOG_INFO, "%s %s: reshape from %u to %u members (layout %d to %d, "
           "chunk %" PRIu32 " to %" PRIu32 " KiB), at byte %" PRIu64 " of %" PRIu64 "%s",
           a->pers->name, a->name, x.old->raid_disks, x.new->raid_disks, x.old->layout,
           x.new->layout, x.old->chunk_size >> 10, x.new->chunk_size >> 10, x.pos,
           x.new_size, x.back ? ", backwards" : "");
  array_window_open(a, x.pos, x.pos);
  while (x.back ? x.pos > 0 : x.pos < x.new_size) {
    /* Requests waiting for what was moved since the checkpoint go on
     * before GO may sleep for the pace (a throttled step's charge). */
    if (x.safe != x.pos && array_window_waiting(a)) {
      if ((r = checkpoint(&x)) < 0)
        break;
      array_window_set(a, x.safe, x.pos);
    }
    /* Progress in bytes of each member, as md's: the new shape's front
     * (backwards, what lies above it). */
    if (!go(ctx, x.back ? new_front(&x, x.new_size) - new_front(&x, x.pos)
            : new_front(&x, x.pos), new_front(&x, x.new_size), &x.step_max)) {
      r = -EINTR;
      break;
    }
    if (raid_array_is_failed(a)) {
      r = set_error(EIO, "%s %s: the array has failed: reshape stopped", a->pers->name,
                    a->name);
      break;
    }
    if ((r = (x.back ? next_lo : next_end)(&x, &end)) < 0 || (r = step(&x, end)) < 0)
      break;
  }
  if (r == 0 && (r = checkpoint(&x)) == 0)
    r = finish(&x);
  else {
    /* Stopped: what was moved is recorded, and requests are served by
     * both shapes either side of it until the reshape goes on. */
    if (checkpoint(&x) == 0)
      array_window_set(a, x.safe, x.safe);
    if (r != -EINTR)
      raid_log(RAID_LOG_ERR, "%s %s: reshape stopped at byte %" PRIu64 ": %s",
               a->pers->name, a->name, x.safe, raid_get_error());
  }
  raid_buf_free(x.buf);
  return r;
}
