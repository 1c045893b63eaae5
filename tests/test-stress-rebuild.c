/* Description: the stress harness (tests/stress.h) with rebuilds under
 * load, every read checked against the shadow:
 *   rebuild   fail, remove, add a new member, rebuild under load;
 *   replace   raid_array_replace_member() under load, then remove the old;
 *   cycle     repeated fail -> remove -> add -> rebuild.
 * Rebuilds run with auto sync on or with raid_array_sync_start(), half of
 * them under a rate limit so they overlap more of the load.
 */

#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stress.h"

static void
sc_rebuild(struct stress *s)
{
  unsigned round = 0;

  while (more(s, &round, 1)) {
    int x;

    if (!wait_ops(s, s->target / 5 + 1))
      return;
    if ((x = pick_victim(s)) < 0 || !cycle_role(s, (unsigned)x, false, false))
      return;
  }
}

static void
sc_replace(struct stress *s)
{
  unsigned round = 0;

  while (more(s, &round, 2)) {
    struct raid_member *m;
    char *old, *name;
    int x, r;
    bool ok = true;

    if (!wait_ops(s, s->target / 6 + 1))
      return;
    x = (int)rng_below(&s->crng, s->cf->disks);
    old = role_name(s, (unsigned)x);
    m = new_member(s, rng_percent(&s->crng, 50), &s->crng);
    name = strdup(raid_member_name(m));
    set_phase(s, "replacing a member");
    r = raid_array_replace_member(s->a, (unsigned)x, m);
    if (r != 0) {
      serr(s, "%s: raid_array_replace_member(%d, %s): %d %s", s->desc, x, name, r,
           raid_get_error());
      ok = false;
    }
    else
      s->changes++;
    if (ok && raid_array_degraded(s->a) != 0) {
      serr(s, "%s: degraded %u while replacing role %d", s->desc,
           raid_array_degraded(s->a), x);
      ok = false;
    }
    if (ok)
      ok = rebuild(s, "replacing");
    if (ok && raid_array_member(s->a, (unsigned)x) != m) {
      serr(s, "%s: after the replacement, role %d is not %s", s->desc, x, name);
      ok = false;
    }
    if (ok)
      ok = expect_state(s, (unsigned)x, RAID_MEMBER_IN_SYNC, "after the replacement");
    if (ok)
      ok = wait_ops(s, s->target / 16 + 1);
    if (ok)
      ok = ctl_remove(s, old, 0);
    free(old);
    free(name);
    if (!ok)
      return;
  }
}

static void
sc_cycle(struct stress *s)
{
  unsigned round = 0, n = UNDER_SANITIZER ? 3 : 4;

  while (more(s, &round, n)) {
    int x;

    if (!wait_ops(s, s->target / 10 + 1))
      return;
    if ((x = pick_victim(s)) < 0 ||
        !cycle_role(s, (unsigned)x, round % 3 == 2, round % 2 == 1))
      return;
  }
}

int
main(void)
{
  static const struct stress_scenario scenarios[] = {
    { SC_REBUILD, sc_rebuild },
    { SC_REPLACE, sc_replace },
    { SC_CYCLE, sc_cycle },
  };

  return stress_main("test-stress-rebuild", scenarios, ARRAY_SIZE(scenarios));
}
