/* Aligned buffers for member I/O and parity. */
#include <config.h>

#include <stdlib.h>

#include "internal.h"

void *
raid_buf_alloc(size_t len)
{
  void *p;

  if (posix_memalign(&p, RAID_BUF_ALIGN, len ? len : RAID_BUF_ALIGN) != 0)
    return NULL;
  return p;
}

void
raid_buf_free(void *p)
{
  free(p);
}

/* One zeroed region for writes of zeroes, made once, never freed. */
static void *zeroes;
static pthread_once_t zeroes_once = PTHREAD_ONCE_INIT;

static void
zeroes_init(void)
{
  if (posix_memalign(&zeroes, RAID_BUF_ALIGN, RAID_MAX_REQUEST) == 0)
    __builtin_memset(zeroes, 0, RAID_MAX_REQUEST);
}

const void *
zero_buf(size_t len)
{
  pthread_once(&zeroes_once, zeroes_init);
  return len <= RAID_MAX_REQUEST ? zeroes : NULL;
}
