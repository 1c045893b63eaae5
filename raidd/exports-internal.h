/* The export registry's internals, for exports.c and the control socket. */
#ifndef RAIDD_EXPORTS_INTERNAL_H
#define RAIDD_EXPORTS_INTERNAL_H

#include <stdatomic.h>

#include "raidd.h"

#define RAIDD_MAX_EXPORTS 256

struct export {
  struct export *next;
  char *name;
  struct raid_array *array;
  bool readonly;
  char description[128];
  _Atomic int refs;
  _Atomic int conns;
};

/* Register array A as export NAME (taking ownership of A).
 * 0, -EEXIST (nothing taken) or -ENOMEM. */
int exports_add(const char *name, struct raid_array *a, bool readonly);
/* Take export NAME out of the registry; returns it with the registry's
 * reference (drop it with export_put()), or NULL. */
struct export *exports_remove(const char *name);

#endif
