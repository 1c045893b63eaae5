/* Description: the stress harness (tests/stress.h) with no membership
 * change: THREADS threads share one array of every configuration (RAID 0,
 * 1, 5 and 10, delayed members, md metadata, write-behind) with requests
 * made to collide, every read checked against the shadow; redundant levels
 * run check (scrub) under load twice, which must find no mismatch.
 */

#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stress.h"

static void
sc_sync(struct stress *s)
{
  unsigned round = 0;

  while (more(s, &round, 2)) {
    struct raid_sync_status st;
    int r;

    if (!wait_ops(s, s->target / 4 + 1))
      return;
    if (!redundant(s))
      continue;
    set_phase(s, "check (scrub) under load");
    r = raid_array_sync_start(s->a, RAID_SYNC_CHECK);
    if (r != 0) {
      serr(s, "%s: raid_array_sync_start(check): %d %s", s->desc, r, raid_get_error());
      return;
    }
    if (!wait_sync(s, "check (scrub) under load"))
      return;
    raid_array_sync_status(s->a, &st);
    if (st.last_action != RAID_SYNC_CHECK || st.last_mismatches != 0) {
      serr(s, "%s: check under load: last action %s, %" PRIu64 " mismatched sectors "
           "(writes hold the locks a check takes: there must be none)", s->desc,
           raid_sync_action_name(st.last_action), st.last_mismatches);
      return;
    }
  }
}

int
main(void)
{
  static const struct stress_scenario scenarios[] = {
    { SC_SYNC, sc_sync },
  };

  return stress_main("test-stress-sync", scenarios, ARRAY_SIZE(scenarios));
}
