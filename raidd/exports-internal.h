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
  char *members[RAID_MAX_MEMBERS];   /* paths given at assembly */
  unsigned nmembers;
  bool readonly;
  char description[128];
  _Atomic int refs;
  _Atomic int conns;
};

/* Register array A as export NAME (taking ownership of A and of PATHS[]).
 * 0, -EEXIST (nothing taken) or -ENOMEM. */
int exports_add(const char *name, struct raid_array *a, char **paths,
                unsigned npaths, bool readonly);
/* Take export NAME out of the registry; returns it with the registry's
 * reference (drop it with export_put()), or NULL. */
struct export *exports_remove(const char *name);
/* Path of the member given at assembly at index I, or NULL. */
const char *export_member_path(const struct export *e, unsigned i);
unsigned export_nmembers(const struct export *e);

#endif
