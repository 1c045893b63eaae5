/* Description: the stress harness (tests/stress.h) with spares and
 * removals under load, every read checked against the shadow:
 *   spare     add hot spares (as many as the array takes, then back to
 *             two), fail roles with auto sync on: the spares take over;
 *   remove    a forced removal of an in-sync member, and the removal of a
 *             failed member right after it failed, with its I/O in flight.
 */

#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stress.h"

/* Add spares until the array refuses one (or SPARE_PROBE of them), under
 * load: each must be accepted as a spare or refused cleanly, and the list
 * must hold what was accepted.  Then keep KEEP. */
static bool
spare_probe(struct stress *s, unsigned keep)
{
  unsigned accepted = 0, i, n, n0 = raid_array_members(s->a, NULL, 0);
  int r;

  set_phase(s, "adding spares");
  for (i = 0; i < SPARE_PROBE && !failed(s); i++) {
    struct raid_member *m = new_member(s, false, &s->crng);
    char name[64];
    int role = -2;

    snprintf(name, sizeof name, "%s", raid_member_name(m));
    r = raid_array_add_member(s->a, m, &role);
    if (r != 0) {
      test_verbose("%s: spare %u refused: %d %s", s->desc, i, r, raid_get_error());
      break;
    }
    if (role != -1) {
      serr(s, "%s: %s added to a whole array took role %d, not a spare", s->desc, name,
           role);
      return false;
    }
    accepted++;
    s->changes++;
    atomic_fetch_add(&s->ctl_progress, 1);
  }
  n = raid_array_members(s->a, NULL, 0);
  if (n != n0 + accepted) {
    serr(s, "%s: after %u more spares were accepted, raid_array_members() counts %u "
         "members, expected %u", s->desc, accepted, n, n0 + accepted);
    return false;
  }
  return remove_spares(s, keep);
}

/* Fail a role with a spare ready: the engine gives the spare the role. */
static bool
spare_takes_over(struct stress *s)
{
  int x = pick_victim(s);
  char *old;
  bool ok;

  if (x < 0)
    return true;
  old = role_name(s, (unsigned)x);
  ok = ctl_fail(s, (unsigned)x) && wait_sync(s, "hot spare taking over");
  if (ok && raid_array_member(s->a, (unsigned)x) == NULL) {
    serr(s, "%s: role %d has no member after a spare should have taken it", s->desc, x);
    ok = false;
  }
  if (ok && strcmp(raid_member_name(raid_array_member(s->a, (unsigned)x)), old) == 0) {
    serr(s, "%s: no spare took over failed role %d", s->desc, x);
    ok = false;
  }
  if (ok)
    ok = expect_state(s, (unsigned)x, RAID_MEMBER_IN_SYNC, "after a spare took over");
  if (ok)
    ok = wait_ops(s, s->target / 16 + 1);
  if (ok)
    ok = ctl_remove(s, old, 0);
  free(old);
  return ok;
}

static void
sc_spare(struct stress *s)
{
  unsigned round = 0;
  int role;

  if (!ctl_add(s, &role, NULL) || !ctl_add(s, &role, NULL))
    return;
  while (more(s, &round, 2)) {
    if (!wait_ops(s, s->target / 6 + 1) || !spare_takes_over(s))
      return;
    if (s->deadline && !ctl_add(s, &role, NULL))
      return;
  }
  /* Then, still under load, as many spares as the array takes, and none
   * again. */
  if (!failed(s))
    spare_probe(s, 0);
}

static void
sc_remove(struct stress *s)
{
  unsigned round = 0;

  while (more(s, &round, 1)) {
    int x;

    /* A forced removal of an in-sync member. */
    if (!wait_ops(s, s->target / 5 + 1))
      return;
    if ((x = pick_victim(s)) < 0 || !cycle_role(s, (unsigned)x, true, false))
      return;
    /* A failed member removed at once, its I/O still in flight. */
    if (!wait_ops(s, s->target / 5 + 1))
      return;
    if ((x = pick_victim(s)) < 0 || !cycle_role(s, (unsigned)x, false, false))
      return;
  }
}

int
main(void)
{
  static const struct stress_scenario scenarios[] = {
    { SC_SPARE, sc_spare },
    { SC_REMOVE, sc_remove },
  };

  return stress_main("test-stress-spares", scenarios, ARRAY_SIZE(scenarios));
}
