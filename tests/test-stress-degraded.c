/* Description: the stress harness (tests/stress.h) on arrays losing
 * members under load, every read checked against the shadow:
 *   degraded  a role is missing (or failed) from the start; levels that
 *             survive it lose a second one in the middle;
 *   fail      a member fails in the middle of the load (a second one later
 *             where the level survives it).
 * Afterwards the array is made whole, read back and checked (scrub), and
 * the members hold md's layout.
 */

#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stress.h"

/* A role went missing (or failed) before the load started (setup());
 * here a second one is lost where the level survives it. */
static void
sc_degraded(struct stress *s)
{
  unsigned round = 0;

  while (more(s, &round, 1)) {
    int y;
    char *name;

    if (!wait_ops(s, s->target / 3 + 1))
      return;
    y = pick_victim(s);
    if (y < 0) {
      if (s->deadline)
        continue;               /* RAID 5: stays degraded by one */
      return;
    }
    if (!ctl_fail(s, (unsigned)y) || !wait_ops(s, s->target / 3 + 1))
      return;
    if (!s->deadline)
      return;
    /* Torture: bring the second one back and lose it again later. */
    name = role_name(s, (unsigned)y);
    if (name && !cycle_role(s, (unsigned)y, false, false)) {
      free(name);
      return;
    }
    free(name);
  }
}

static void
sc_fail(struct stress *s)
{
  unsigned round = 0;

  while (more(s, &round, 1)) {
    int x, y, role;
    unsigned i;

    if (!wait_ops(s, s->target / 4 + 1))
      return;
    if ((x = pick_victim(s)) < 0 || !ctl_fail(s, (unsigned)x))
      return;
    if (!wait_ops(s, s->target / 4 + 1))
      return;
    if ((y = pick_victim(s)) >= 0 && (!ctl_fail(s, (unsigned)y) ||
                                      !wait_ops(s, s->target / 4 + 1)))
      return;
    if (!s->deadline)
      return;
    /* Torture: make it whole again under load, then again. */
    for (i = 0; i < s->cf->disks; i++) {
      char *old;
      if (raid_array_member_state(s->a, i) != RAID_MEMBER_FAULTY)
        continue;
      old = role_name(s, i);
      if (!ctl_remove(s, old, 0) || !ctl_add(s, &role, NULL)) {
        free(old);
        return;
      }
      free(old);
    }
    if (!rebuild(s, "rebuilding"))
      return;
  }
}

int
main(void)
{
  static const struct stress_scenario scenarios[] = {
    { SC_DEGRADED, sc_degraded },
    { SC_FAIL, sc_fail },
  };

  return stress_main("test-stress-degraded", scenarios, ARRAY_SIZE(scenarios));
}
