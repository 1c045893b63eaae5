/* Memory for the I/O path: aligned buffers for member I/O and parity, and
 * the small allocations of requests and their member I/Os.
 *
 * RAID 5 needs a few scratch buffers for every stripe operation, at rates
 * of hundreds of thousands per second.  posix_memalign() + free() at that
 * rate makes glibc trim and re-fault the top of its heap on every call, so
 * buffers are recycled through small per-thread caches, one per power-of-
 * two size class from 4 KiB to 4 MiB.  A buffer is always freed on the
 * thread that allocated it (a request runs on its queue's thread), but
 * nothing breaks if not: it just moves to the freeing thread's cache.
 *
 * Running out of memory fails the request that needed it (ENOMEM), never
 * the process.  To prove that, every allocation here can be made to fail
 * on purpose: mem_fail_every(N) fails one allocation in N, on every
 * thread (the tests' allocation fault injector).
 */
#include <config.h>

#include <stdlib.h>
#include <sys/mman.h>

#include "internal.h"

#define CLASS_MIN_SHIFT 12             /* 4 KiB */
#define CLASS_MAX_SHIFT 22             /* 4 MiB */
#define NCLASSES (CLASS_MAX_SHIFT - CLASS_MIN_SHIFT + 1)
#define CACHE_DEPTH 64                 /* buffers kept per class */
#define CACHE_BYTES (8u << 20)         /* bytes kept per thread, at most */

/* CACHE_BYTES bounds what a burst of large stripe operations leaves
 * resident: 64 buffers of each class up to 4 MiB would be half a GiB per
 * thread, held for good.  Small buffers, where the rate is, still fit. */
struct buf_cache {
  void *free[NCLASSES][CACHE_DEPTH];
  unsigned n[NCLASSES];
  size_t bytes;                        /* in free[][] */
};

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void
cache_destroy(void *p)
{
  struct buf_cache *c = p;
  unsigned i, j;

  for (i = 0; i < NCLASSES; i++)
    for (j = 0; j < c->n[i]; j++)
      free(c->free[i][j]);
  free(c);
}

static void
cache_key_init(void)
{
  pthread_key_create(&cache_key, cache_destroy);
}

static struct buf_cache *
cache(void)
{
  struct buf_cache *c;

  pthread_once(&cache_once, cache_key_init);
  c = pthread_getspecific(cache_key);
  if (c == NULL && (c = calloc(1, sizeof *c)) != NULL)
    pthread_setspecific(cache_key, c);
  return c;
}

/* Size class of LEN, or -1 when it is too large to cache. */
static int
size_class(size_t len)
{
  unsigned shift = CLASS_MIN_SHIFT;

  while (((size_t)1 << shift) < len)
    shift++;
  return shift <= CLASS_MAX_SHIFT ? (int)(shift - CLASS_MIN_SHIFT) : -1;
}

static _Atomic unsigned fail_every;
static _Atomic unsigned fail_count;

void
mem_fail_every(unsigned n)
{
  atomic_store(&fail_count, 0);
  atomic_store(&fail_every, n);
}

/* True when the fault injector says this allocation fails. */
static bool
inject_failure(void)
{
  unsigned n = atomic_load_explicit(&fail_every, memory_order_relaxed);

  return n && atomic_fetch_add_explicit(&fail_count, 1, memory_order_relaxed) % n == n - 1;
}

void *
raid_malloc(size_t len)
{
  return inject_failure() ? NULL : malloc(len);
}

void *
raid_calloc(size_t n, size_t len)
{
  return inject_failure() ? NULL : calloc(n, len);
}

void
raid_free(void *p)
{
  free(p);
}

void *
raid_buf_alloc(size_t len)
{
  void *p;

  if (inject_failure())
    return NULL;
  if (posix_memalign(&p, RAID_BUF_ALIGN, len ? len : RAID_BUF_ALIGN) != 0)
    return NULL;
  return p;
}

void
raid_buf_free(void *p)
{
  free(p);
}

void *
raid_buf_get(size_t len)
{
  int cls = size_class(len);
  struct buf_cache *c;

  if (cls >= 0) {
    c = cache();
    if (inject_failure())
      return NULL;
    if (c && c->n[cls]) {
      c->bytes -= (size_t)1 << (cls + CLASS_MIN_SHIFT);
      return c->free[cls][--c->n[cls]];
    }
    len = (size_t)1 << (cls + CLASS_MIN_SHIFT);
  }
  return raid_buf_alloc(len);
}

void
raid_buf_put(void *p, size_t len)
{
  int cls = size_class(len);
  struct buf_cache *c;

  if (p == NULL)
    return;
  if (cls >= 0 && (c = cache()) != NULL && c->n[cls] < CACHE_DEPTH &&
      c->bytes + ((size_t)1 << (cls + CLASS_MIN_SHIFT)) <= CACHE_BYTES) {
    c->free[cls][c->n[cls]++] = p;
    c->bytes += (size_t)1 << (cls + CLASS_MIN_SHIFT);
    return;
  }
  free(p);
}

/* One read-only region of zeroes for writes of zeroes, made once, never
 * freed: an anonymous mapping, so every page is the kernel's shared zero
 * page and costs neither memory nor a memset. */
static void *zeroes;
static pthread_once_t zeroes_once = PTHREAD_ONCE_INIT;

static void
zeroes_init(void)
{
  void *p = mmap(NULL, RAID_MAX_REQUEST, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  zeroes = p == MAP_FAILED ? NULL : p;
}

const void *
zero_buf(size_t len)
{
  pthread_once(&zeroes_once, zeroes_init);
  return len <= RAID_MAX_REQUEST ? zeroes : NULL;
}
