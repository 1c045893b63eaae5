/* Opening a member by its spec: the registry of back-ends.  A back-end
 * named by a prefix ("sim:" for a simulated drive, member/sim.c; an NBD
 * URI, "nbd://..." and the other schemes of libnbd, member/nbd.c) has its
 * entry in openers[]; any other spec is a path, a file or a block device
 * (member/file.c).  A new back-end adds its entry here.  This file sits
 * above the back-ends it names: they call member.c, never this file, so
 * no back-end and member.c call each other in a circle. */
#include <config.h>

#include <stdbool.h>

#include "internal.h"

static bool
member_is_nbd_spec(const char *spec)
{
  return raid_member_spec_is_remote(spec);
}

struct opener {
  bool (*claims)(const char *spec);      /* is SPEC this back-end's? */
  int (*open)(const char *spec, unsigned flags, struct raid_member **mp);
};

static const struct opener openers[] = {
  { member_is_sim_spec, member_sim_open },
  { member_is_nbd_spec, member_nbd_open },
};

EXPORT int
raid_member_open(const char *path, unsigned flags, struct raid_member **memberp)
{
  size_t i;

  for (i = 0; i < ARRAY_SIZE(openers); i++)
    if (openers[i].claims(path))
      return openers[i].open(path, flags, memberp);
  return member_file_open(path, flags, memberp);
}
