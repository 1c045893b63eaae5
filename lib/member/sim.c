/* Simulated SSDs: a benchmark and test member that behaves like a drive
 * with a latency, a bandwidth and internal parallelism that you choose,
 * independently of the machine's own disk (the kernel's null_blk with
 * completion_nsec and memory_backed does the same job).
 *
 *   sim:PATH[?OPTION[,OPTION]...]
 *     lat=DURATION   time each I/O takes once a channel serves it
 *                    (ns, us, ms or s suffix; a bare number is microseconds)
 *     bw=SIZE        bandwidth cap in bytes per second, shared by all
 *                    channels (K, M, G suffixes are binary); 0 = none
 *     depth=N        channels: how many I/Os the drive serves at once
 *     discard        data writes are dropped and reads return whatever the
 *                    buffer held: pure throughput, nothing to verify
 *     cache=volatile a volatile write cache for power-loss tests: writes
 *                    not yet covered by a flush (nor FUA) are lost at a
 *                    simulated power cut, or some of them kept, torn per
 *                    sector (member/sim-cache.c; member_sim_power_cut())
 *     cache=safe     the default: flush is a no-op, as below
 *
 * PATH is the backing store, a file (on tmpfs for a RAM drive) or a block
 * device, mapped MAP_SHARED: its data is kept, so the superblocks that
 * raidctl writes are found again by raidd.  With "discard" only metadata
 * I/O (member_pio(), flagged MIO_META) touches it, so a large sparse file
 * costs nothing; otherwise the whole store is allocated when the member
 * is opened for writing.  Without options the member is plain RAM with no delay,
 * for CPU-cost runs.  Flush is a no-op that takes the latency, like a drive
 * with a power-loss-protected cache: this is not a device for data anyone
 * wants to keep.
 *
 * The timing model.  Each I/O takes the channel that frees up first and
 * starts when both it has arrived and that channel is free.  Its transfer
 * then queues on the shared bandwidth (a single pipe: LEN / BW seconds after
 * the pipe's previous transfer ends), and it completes when both its
 * latency has passed since its start and its transfer is done.  So a
 * drive with depth D and latency L serves at most D / L I/Os a second, and
 * large I/Os are limited by BW: a 4K random read test finds one figure and
 * a 1 MiB sequential test the other, as on a real SSD.  The data moves at
 * submit (memcpy to or from the mapping); the completion is an io_uring
 * timeout on the submitting queue for the time left, so nothing busy-waits
 * and the queue serves other I/O meanwhile.  The model state is shared by
 * every queue using the member, under a mutex held for a few instructions.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "internal.h"
#include "sizes.h"

#define SIM_PREFIX "sim:"
#define SIM_MAX_DEPTH 1024

struct sim_member {
  uint8_t *data;                 /* the mapping of the backing store */
  int fd;                        /* the backing store, held for its lock */
  uint64_t lat_ns;
  uint64_t bw;                   /* bytes per second, 0 = no cap */
  unsigned depth;
  bool discard;
  struct sim_cache *cache;       /* cache=volatile, else NULL */
  pthread_mutex_t lock;          /* guards the model below */
  uint64_t pipe_free;            /* ns: when the bandwidth pipe is free */
  uint64_t *chan_free;           /* ns: when each channel is free */
};

bool
member_is_sim_spec(const char *spec)
{
  return strncmp(spec, SIM_PREFIX, strlen(SIM_PREFIX)) == 0;
}

/* Nanoseconds from the model: when IO, arriving at NOW, completes. */
static uint64_t
sim_finish(struct sim_member *s, const struct member_io *io, uint64_t now)
{
  uint64_t start, end, xfer = 0;
  unsigned c, best = 0;

  if (s->bw && (io->op == MOP_READ || io->op == MOP_WRITE))
    xfer = (uint64_t)((double)io->len * 1e9 / (double)s->bw);
  pthread_mutex_lock(&s->lock);
  for (c = 1; c < s->depth; c++)
    if (s->chan_free[c] < s->chan_free[best])
      best = c;
  start = MAX(now, s->chan_free[best]);
  end = start + s->lat_ns;
  if (xfer) {
    s->pipe_free = MAX(s->pipe_free, start) + xfer;
    end = MAX(end, s->pipe_free);
  }
  s->chan_free[best] = end;
  pthread_mutex_unlock(&s->lock);
  return end;
}

/* The timer's own result (-ETIME) means nothing: io->xfered holds the
 * error to complete with, positive, or 0. */
static void
sim_done(struct qtask *t, int res)
{
  struct member_io *io = task_io(t);
  struct sim_member *s = io->m->priv;

  (void)res;
  /* An I/O still in flight at a power cut is not acknowledged: whatever
   * it did is what the cut left. */
  if (io->xfered == 0 && s->cache && !sim_cache_powered(s->cache))
    io->xfered = EIO;
  member_complete(io, -(int)io->xfered);
}

static void
sim_submit(struct raid_queue *q, struct member_io *io)
{
  struct raid_member *m = io->m;
  struct sim_member *s = m->priv;
  bool data = !s->discard || (io->flags & MIO_META);
  uint64_t now, end;
  int res = 0;

  io->task.fn = sim_done;
  io->xfered = 0;
  if (io->op != MOP_FLUSH &&
      (io->len > m->size || io->offset > m->size - io->len))
    res = set_error(EIO, "member %s: %s of %zu bytes at offset %" PRIu64
                    " is beyond the end (%" PRIu64 " bytes)", m->name,
                    mop_name(io->op), io->len, io->offset, m->size);
  else if (m->readonly && io->op != MOP_READ && io->op != MOP_FLUSH)
    res = set_error(EROFS, "member %s: %s on a read-only member", m->name,
                    mop_name(io->op));
  if (res < 0) {
    io->xfered = (size_t)-res;
    queue_defer(q, &io->task, 0);
    return;
  }
  if (s->cache)
    res = sim_cache_io(s->cache, s->data, io);
  if (res < 0) {
    io->xfered = (size_t)-res;
    queue_defer(q, &io->task, 0);
    return;
  }
  if (s->cache)
    data = false;               /* moved already */
  if (data)
    member_mem_io(s->data, io, NULL);
  if (s->lat_ns == 0 && s->bw == 0) {
    queue_defer(q, &io->task, 0);
    return;
  }
  now = mono_ns();
  end = sim_finish(s, io, now);
  if (end <= now)
    queue_defer(q, &io->task, 0);
  else
    queue_timer_at(q, &io->task, &io->ts, end);
}

static void
sim_close(struct raid_member *m)
{
  struct sim_member *s = m->priv;

  if (s == NULL)
    return;
  sim_cache_free(s->cache);
  if (s->data)
    munmap(s->data, m->size);
  if (s->fd >= 0)
    close(s->fd);
  pthread_mutex_destroy(&s->lock);
  free(s->chan_free);
  free(s);
}

static const struct member_ops sim_ops = {
  .kind = "sim",
  .submit = sim_submit,
  .close = sim_close,
};

/* Write to every page of the store once, leaving its data as it is (an
 * atomic add of 0 loses no concurrent write).  On a virtual machine the
 * first write to a page costs more than a copy (the hypervisor maps it
 * then: 0.8 GB/s against 20 GB/s afterwards, measured here), even after
 * MAP_POPULATE; paid at open, it stays out of the drive's timing. */
static void
prefault(uint8_t *p, uint64_t size)
{
  uint64_t off, page = (uint64_t)sysconf(_SC_PAGESIZE);

  for (off = 0; off < size; off += page)
    __atomic_fetch_add(p + off, 0, __ATOMIC_RELAXED);
}

/* "80us", "0.5ms", "100" (microseconds) -> nanoseconds. */
static int
parse_duration(const char *v, uint64_t *ns)
{
  static const struct { const char *suffix; double scale; } units[] = {
    { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "", 1e3 },
  };
  char *end;
  double d;
  size_t i;

  errno = 0;
  d = strtod(v, &end);
  if (end == v || errno || d < 0)
    return -EINVAL;
  for (i = 0; i < ARRAY_SIZE(units); i++)
    if (strcmp(end, units[i].suffix) == 0) {
      if (d * units[i].scale > 60e9)
        return -EINVAL;
      *ns = (uint64_t)(d * units[i].scale);
      return 0;
    }
  return -EINVAL;
}

/* Parse OPTS (the text after '?', NUL-terminated, modified) into S. */
static int
parse_options(const char *spec, char *opts, struct sim_member *s,
              bool *volatile_cache)
{
  char *save = NULL, *o;

  for (o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
    char *v = strchr(o, '=');
    uint64_t n;
    int r = 0;

    if (v)
      *v++ = '\0';
    if (strcmp(o, "discard") == 0 && v == NULL)
      s->discard = true;
    else if (strcmp(o, "cache") == 0 && v &&
             (strcmp(v, "volatile") == 0 || strcmp(v, "safe") == 0))
      *volatile_cache = strcmp(v, "volatile") == 0;
    else if (strcmp(o, "lat") == 0 && v)
      r = parse_duration(v, &s->lat_ns);
    else if (strcmp(o, "bw") == 0 && v)
      r = size_parse(v, &s->bw);
    else if (strcmp(o, "depth") == 0 && v) {
      r = size_parse(v, &n);
      if (r == 0 && (n == 0 || n > SIM_MAX_DEPTH))
        r = -EINVAL;
      s->depth = (unsigned)n;
    }
    else
      return set_error(EINVAL, "member %s: unknown simulated-drive option "
                       "'%s' (lat=DURATION, bw=BYTES/s, depth=N, discard, "
                       "cache=volatile|safe)",
                       spec, o);
    if (r < 0)
      return set_error(EINVAL, "member %s: bad value '%s' for %s", spec, v, o);
  }
  return 0;
}

EXPORT int
raid_member_spec_file(const char *spec, char *buf, size_t len)
{
  const char *p = spec, *q;
  size_t n;

  if (raid_member_spec_is_remote(spec))
    return set_error(EINVAL, "member %s is remote: it has no local file", spec);
  if (member_is_sim_spec(spec))
    p += strlen(SIM_PREFIX);
  q = member_is_sim_spec(spec) ? strchr(p, '?') : NULL;
  n = q ? (size_t)(q - p) : strlen(p);
  if (n == 0)
    return set_error(EINVAL, "member %s: no file named", spec);
  if (n >= len)
    return set_error(ENAMETOOLONG, "member %s: name too long", spec);
  memcpy(buf, p, n);
  buf[n] = '\0';
  return 0;
}

int
member_sim_open(const char *spec, unsigned flags, struct raid_member **mp)
{
  bool ro = flags & RAID_MEMBER_READONLY, volatile_cache = false;
  struct raid_member *m = NULL;
  struct sim_member *s;
  char *path = NULL, *opts;
  struct stat st;
  uint64_t size;
  void *p;
  int fd = -1, r;

  *mp = NULL;
  s = calloc(1, sizeof *s);
  path = strdup(spec + strlen(SIM_PREFIX));
  if (s == NULL || path == NULL) {
    r = set_error(ENOMEM, "member %s: out of memory", spec);
    goto fail;
  }
  s->depth = 1;
  s->fd = -1;
  pthread_mutex_init(&s->lock, NULL);
  if ((opts = strchr(path, '?')) != NULL) {
    *opts++ = '\0';
    if ((r = parse_options(spec, opts, s, &volatile_cache)) < 0)
      goto fail;
  }
  if (volatile_cache && s->discard) {
    r = set_error(EINVAL, "member %s: cache=volatile keeps data, discard drops "
                  "it: choose one", spec);
    goto fail;
  }
  if (*path == '\0') {
    r = set_error(EINVAL, "member %s: no backing file (sim:PATH?OPTIONS)", spec);
    goto fail;
  }
  s->chan_free = calloc(s->depth, sizeof *s->chan_free);
  m = member_alloc(&sim_ops, spec);
  if (s->chan_free == NULL || m == NULL) {
    r = set_error(ENOMEM, "member %s: out of memory", spec);
    goto fail;
  }
  m->priv = s;
  fd = open(path, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st) == -1) {
    r = set_error(errno, "member %s: %s: %s", spec, path, strerror(errno));
    goto fail;
  }
  /* Claimed for writing as a file member is (member_lock_file()); the
   * descriptor stays open while the mapping is used, to hold the lock. */
  if (!ro && (r = member_lock_file(fd, spec)) < 0)
    goto fail;
  if (S_ISBLK(st.st_mode)) {
    if (ioctl(fd, BLKGETSIZE64, &size) == -1) {
      r = set_error(errno, "member %s: BLKGETSIZE64: %s", spec, strerror(errno));
      goto fail;
    }
  }
  else if (S_ISREG(st.st_mode))
    size = (uint64_t)st.st_size;
  else {
    r = set_error(EINVAL, "member %s: %s is neither a file nor a block device",
                  spec, path);
    goto fail;
  }
  size -= size % RAID_SECTOR_SIZE;
  if (size == 0 || size > SIZE_MAX) {
    r = set_error(EINVAL, "member %s: backing file %s has no usable size "
                  "(%" PRIu64 " bytes)", spec, path, (uint64_t)st.st_size);
    goto fail;
  }
  /* Fault the whole store in now (a drive that keeps data, opened for
   * writing), not page by page under the benchmark: see prefault(). */
  p = mmap(NULL, size, ro ? PROT_READ : PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_NORESERVE | (ro || s->discard ? 0 : MAP_POPULATE), fd, 0);
  if (p == MAP_FAILED) {
    r = set_error(errno, "member %s: cannot map %s: %s", spec, path,
                  strerror(errno));
    goto fail;
  }
  if (!ro && !s->discard)
    prefault(p, size);
  if (volatile_cache && (s->cache = sim_cache_new(size)) == NULL) {
    munmap(p, size);
    r = set_error(ENOMEM, "member %s: out of memory for the volatile cache", spec);
    goto fail;
  }
  s->fd = fd;
  free(path);
  s->data = p;
  m->size = size;
  m->readonly = ro;
  *mp = m;
  return 0;

 fail:
  if (fd >= 0)
    close(fd);
  free(path);
  if (m)
    raid_member_close(m);       /* frees s through sim_close() */
  else if (s) {
    free(s->chan_free);
    free(s);
  }
  return r;
}

/* ---- power cuts (cache=volatile) ------------------------------------------ */

/* The simulated drive with a volatile cache under M (a fault injector is
 * looked through), or NULL. */
static struct sim_member *
volatile_sim(struct raid_member *m)
{
  m = member_fault_inner(m);
  if (m->ops != &sim_ops || ((struct sim_member *)m->priv)->cache == NULL)
    return NULL;
  return m->priv;
}

int
member_sim_powered(struct raid_member *m)
{
  struct sim_member *s = volatile_sim(m);

  if (s == NULL)
    return set_error(EINVAL, "member %s: not a simulated drive with "
                     "cache=volatile", m->name);
  return sim_cache_powered(s->cache);
}

/* Every drive's lock is taken before any is cut, so that no I/O of any
 * queue falls between two drives' cuts: the array sees one instant, as a
 * power supply failing under all its disks would give it.  Only cuts take
 * more than one lock, and they are serialised by CUT_LOCK. */
int
member_sim_power_cut(struct raid_member *const *m, unsigned n, enum sim_cut how,
                     uint64_t seed, struct sim_cut_stats *st)
{
  static pthread_mutex_t cut_lock = PTHREAD_MUTEX_INITIALIZER;
  struct sim_cut_stats dummy;
  struct sim_member *s[RAID_MAX_MEMBERS];
  unsigned i, j;
  int r = 0;

  if (st == NULL)
    st = &dummy;
  memset(st, 0, sizeof *st);
  if (n > RAID_MAX_MEMBERS)
    return set_error(EINVAL, "power cut: %u members, at most %u", n, RAID_MAX_MEMBERS);
  for (i = 0; i < n; i++) {
    if ((s[i] = volatile_sim(m[i])) == NULL)
      return set_error(EINVAL, "member %s: cannot cut its power: not a simulated "
                       "drive with cache=volatile", m[i]->name);
    for (j = 0; j < i; j++)
      if (s[j] == s[i])
        return set_error(EINVAL, "member %s: named twice in one power cut",
                         m[i]->name);
  }
  pthread_mutex_lock(&cut_lock);
  for (i = 0; i < n; i++)
    sim_cache_lock(s[i]->cache);
  for (i = 0; i < n && r == 0; i++)
    r = sim_cache_cut(s[i]->cache, s[i]->data, how, &seed, st);
  for (i = 0; i < n; i++)
    sim_cache_unlock(s[i]->cache);
  pthread_mutex_unlock(&cut_lock);
  if (r < 0)
    return set_error(-r, "power cut: out of memory");
  return 0;
}
