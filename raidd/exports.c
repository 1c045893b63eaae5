/* The running arrays, by name: raidd's registry.
 *
 * An export is a running array plus its name.  The
 * registry (a mutex-protected list) is touched only at NBD handshake and
 * by the control socket; the data path holds a reference and uses the
 * array without locks.  The array is freed (which marks it clean on disk)
 * when the registry has dropped it and the last reference goes. */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raidd.h"
#include "exports-internal.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct export *list;

struct export *
export_get(const char *name)
{
  struct export *e;

  pthread_mutex_lock(&lock);
  for (e = list; e; e = e->next)
    if (strcmp(e->name, name) == 0) {
      atomic_fetch_add(&e->refs, 1);
      break;
    }
  pthread_mutex_unlock(&lock);
  return e;
}

void
export_ref(struct export *e)
{
  atomic_fetch_add(&e->refs, 1);
}

void
export_put(struct export *e)
{
  if (e == NULL || atomic_fetch_sub(&e->refs, 1) != 1)
    return;
  if (raid_array_needs_resync(e->array))
    log_info("%s: stopping: its resync is not done; the superblocks keep the point it "
             "reached, and it resumes there at the next assembly", e->name);
  else
    log_info("%s: stopping: marking the array clean on its members", e->name);
  raid_array_free(e->array);
  free(e->name);
  free(e);
}

struct raid_array *export_array(const struct export *e) { return e->array; }
const char *export_name(const struct export *e) { return e->name; }
bool export_readonly(const struct export *e) { return e->readonly; }
void export_conn_add(struct export *e, int delta) { atomic_fetch_add(&e->conns, delta); }
int export_conns(const struct export *e) { return atomic_load(&e->conns); }

const char *
export_description(const struct export *e)
{
  return e->description;
}

void
exports_foreach(void (*fn)(struct export *e, void *opaque), void *opaque)
{
  struct export *e, *snap[RAIDD_MAX_EXPORTS];
  unsigned n = 0, i;

  /* Call FN outside the lock, on referenced exports. */
  pthread_mutex_lock(&lock);
  for (e = list; e && n < RAIDD_MAX_EXPORTS; e = e->next) {
    atomic_fetch_add(&e->refs, 1);
    snap[n++] = e;
  }
  pthread_mutex_unlock(&lock);
  for (i = 0; i < n; i++) {
    fn(snap[i], opaque);
    export_put(snap[i]);
  }
}

int
exports_add(const char *name, struct raid_array *a, bool readonly)
{
  struct export *e, *x;
  char size[32];

  e = calloc(1, sizeof *e);
  if (e == NULL || (e->name = strdup(name)) == NULL) {
    free(e);
    return -ENOMEM;
  }
  e->array = a;
  e->readonly = readonly;
  atomic_init(&e->refs, 1);     /* the registry's */
  snprintf(size, sizeof size, "%llu MiB",
           (unsigned long long)(raid_array_size(a) >> 20));
  snprintf(e->description, sizeof e->description, "raid%d over %u members, %s",
           raid_array_level(a), raid_array_raid_disks(a), size);

  pthread_mutex_lock(&lock);
  for (x = list; x; x = x->next)
    if (strcmp(x->name, name) == 0)
      break;
  if (x == NULL) {
    e->next = list;
    list = e;
  }
  pthread_mutex_unlock(&lock);
  if (x) {
    free(e->name);
    free(e);
    return -EEXIST;
  }
  service_status();
  return 0;
}

struct export *
exports_remove(const char *name)
{
  struct export **pp, *e = NULL;

  pthread_mutex_lock(&lock);
  for (pp = &list; *pp; pp = &(*pp)->next)
    if (strcmp((*pp)->name, name) == 0) {
      e = *pp;
      *pp = e->next;
      break;
    }
  pthread_mutex_unlock(&lock);
  if (e)
    service_status();
  return e;                     /* carries the registry's reference */
}
