/* A simulated drive's volatile write cache ("sim:FILE?cache=volatile"),
 * for power-loss tests: writes that no FLUSH has covered yet, and that
 * were not FUA, are lost at a simulated power cut, or an arbitrary subset
 * of them is kept, torn at sector granularity, as a disk with a volatile
 * cache may leave them.
 *
 * The model.  The drive's store (member/sim.c's mapping of its file) holds
 * what reads return: the cache and the media as one.  Alongside, the
 * cache keeps the durable image of every sector written since the last
 * flush: the first write to a clean sector saves its old 512 bytes in a
 * pool (copy on first write, so memory grows with what is dirty, not with
 * the drive), and every write appends its extent to a log.
 *   - FLUSH makes everything written before it durable: the pool and the
 *     log are emptied (a write that completes after the flush was
 *     submitted may or may not be covered by it on a real drive; here it
 *     is covered when its data moved before the flush did, which is
 *     allowed).
 *   - A FUA write (and write zeroes / discard with FUA) is durable when it
 *     completes: its sectors are clean again, whatever earlier unflushed
 *     writes to them left in the pool.
 *   - A power cut (sim_cache_cut()) decides, for every dirty sector,
 *     between the durable image and the current one, and puts the durable
 *     one back where the current one is lost.  SIM_CUT_SUBSET decides per
 *     write in the log, in order (a later write to a sector overrides an
 *     earlier decision): lost, kept, or torn (each sector kept or lost by
 *     a coin).  A sector has only two versions here (durable and current):
 *     a real drive may also destage an intermediate one, which no test
 *     can rely on either way.
 * After the cut the drive is off: every I/O fails with EIO and touches
 * nothing, so teardown after a cut (the array marking members faulty,
 * writing superblocks) cannot change the persisted image.  "Powering on"
 * is opening the spec again: the file holds exactly the persisted image.
 *
 * Locking: one mutex per drive guards the pool, the log, the power state
 * and, in this mode, every data movement, so that a cut is atomic with
 * respect to the I/O of every queue: no write lands half before and half
 * after it, and member_sim_power_cut() takes the locks of all the drives
 * it cuts before cutting any, so a cut across an array is one instant.
 * Tests are what this serves; the lock costs nothing they measure.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SIM_SECTOR 512u

struct extent {
  uint64_t sector, count;
};

struct sim_cache {
  pthread_mutex_t lock;
  bool powered;
  uint64_t nsect;
  uint32_t *slot;                /* per sector: pool index + 1, 0 = clean */
  uint8_t *pool;                 /* saved durable sectors */
  uint64_t *pool_sector;         /* which sector each pool entry saves */
  size_t npool, pool_cap, sector_cap;
  struct extent *log;            /* writes since the last flush, in order */
  size_t nlog, log_cap;
};

struct sim_cache *
sim_cache_new(uint64_t size)
{
  struct sim_cache *c = calloc(1, sizeof *c);

  if (c == NULL)
    return NULL;
  c->nsect = size / SIM_SECTOR;
  c->slot = calloc(c->nsect, sizeof *c->slot);
  if (c->slot == NULL || c->nsect > UINT32_MAX) {
    free(c->slot);
    free(c);
    return NULL;
  }
  pthread_mutex_init(&c->lock, NULL);
  c->powered = true;
  return c;
}

void
sim_cache_free(struct sim_cache *c)
{
  if (c == NULL)
    return;
  pthread_mutex_destroy(&c->lock);
  free(c->slot);
  free(c->pool);
  free(c->pool_sector);
  free(c->log);
  free(c);
}

/* P (holding *CAP elements of SIZE bytes) grown to hold at least NEED
 * (> *CAP), *CAP updated; NULL when out of memory (P still valid). */
static void *
grow(void *p, size_t *cap, size_t need, size_t size)
{
  size_t n = *cap ? *cap : 64;
  void *q;

  while (n < need)
    n *= 2;
  q = realloc(p, n * size);
  if (q)
    *cap = n;
  return q;
}

/* Before sectors [S, S + N) of DATA change: save the durable image of
 * those that are clean and log the write.  False when out of memory. */
static bool
save(struct sim_cache *c, const uint8_t *data, uint64_t s, uint64_t n)
{
  uint64_t i, fresh = 0;
  void *p;

  for (i = s; i < s + n; i++)
    fresh += c->slot[i] == 0;
  if (c->npool + fresh > c->sector_cap) {
    if ((p = grow(c->pool_sector, &c->sector_cap, c->npool + fresh,
                  sizeof *c->pool_sector)) == NULL)
      return false;
    c->pool_sector = p;
  }
  if (c->npool + fresh > c->pool_cap) {
    if ((p = grow(c->pool, &c->pool_cap, c->npool + fresh, SIM_SECTOR)) == NULL)
      return false;
    c->pool = p;
  }
  if (c->nlog + 1 > c->log_cap) {
    if ((p = grow(c->log, &c->log_cap, c->nlog + 1, sizeof *c->log)) == NULL)
      return false;
    c->log = p;
  }
  for (i = s; i < s + n; i++) {
    if (c->slot[i])
      continue;
    memcpy(c->pool + c->npool * SIM_SECTOR, data + i * SIM_SECTOR, SIM_SECTOR);
    c->pool_sector[c->npool] = i;
    c->slot[i] = (uint32_t)++c->npool;
  }
  c->log[c->nlog++] = (struct extent){ s, n };
  return true;
}

/* Everything written so far is durable. */
static void
clean_all(struct sim_cache *c)
{
  size_t k;

  for (k = 0; k < c->npool; k++)
    c->slot[c->pool_sector[k]] = 0;
  c->npool = 0;
  c->nlog = 0;
}

int
sim_cache_io(struct sim_cache *c, uint8_t *data, struct member_io *io)
{
  uint64_t s = io->offset / SIM_SECTOR, n = io->len / SIM_SECTOR, i;
  bool fua = io->flags & MIO_FUA;
  int r = 0;

  if (io->op != MOP_FLUSH && (io->offset % SIM_SECTOR || io->len % SIM_SECTOR))
    return set_error(EINVAL, "member %s: %s of %zu bytes at offset %" PRIu64
                     " is not in whole sectors", io->m->name, mop_name(io->op),
                     io->len, io->offset);
  pthread_mutex_lock(&c->lock);
  if (!c->powered) {
    r = set_error(EIO, "member %s: %s after a simulated power cut",
                  io->m->name, mop_name(io->op));
    goto out;
  }
  if (io->op == MOP_FLUSH) {
    clean_all(c);
    goto out;
  }
  if (io->op != MOP_READ && !fua && n && !save(c, data, s, n)) {
    r = set_error(ENOMEM, "member %s: out of memory for the volatile cache",
                  io->m->name);
    goto out;
  }
  member_mem_io(data, io, NULL);
  /* Written through: durable as it is now, whatever the pool saved. */
  if (io->op != MOP_READ && fua)
    for (i = s; i < s + n; i++)
      c->slot[i] = 0;
 out:
  pthread_mutex_unlock(&c->lock);
  return r;
}

bool
sim_cache_powered(struct sim_cache *c)
{
  bool on;

  pthread_mutex_lock(&c->lock);
  on = c->powered;
  pthread_mutex_unlock(&c->lock);
  return on;
}

void
sim_cache_lock(struct sim_cache *c)
{
  pthread_mutex_lock(&c->lock);
}

void
sim_cache_unlock(struct sim_cache *c)
{
  pthread_mutex_unlock(&c->lock);
}

/* splitmix64: the cut's decisions follow its seed alone. */
static uint64_t
next_rand(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int
sim_cache_cut(struct sim_cache *c, uint8_t *data, enum sim_cut how,
              uint64_t *seed, struct sim_cut_stats *st)
{
  uint8_t *keep = NULL;
  size_t k, e;

  if (!c->powered)
    return 0;
  if (how == SIM_CUT_SUBSET && c->npool) {
    keep = calloc(c->npool, 1);
    if (keep == NULL)
      return -ENOMEM;
    for (e = 0; e < c->nlog; e++) {
      unsigned mode = (unsigned)(next_rand(seed) % 3);   /* lost, kept, torn */
      uint64_t i;

      for (i = c->log[e].sector; i < c->log[e].sector + c->log[e].count; i++)
        if (c->slot[i])
          keep[c->slot[i] - 1] = mode == 1 || (mode == 2 && (next_rand(seed) & 1));
    }
  }
  for (k = 0; k < c->npool; k++) {
    uint64_t s = c->pool_sector[k];

    if (c->slot[s] != k + 1)
      continue;                 /* made durable by a FUA write since */
    st->dirty++;
    if (how == SIM_CUT_KEEP || (keep && keep[k]))
      continue;
    memcpy(data + s * SIM_SECTOR, c->pool + k * SIM_SECTOR, SIM_SECTOR);
    st->lost++;
  }
  free(keep);
  clean_all(c);
  c->powered = false;
  return 0;
}
