/* Description: scrubbing (check and repair), for RAID 1 over 2 and 3
 * members, RAID 5 over 3 and 4 (left-symmetric and the asymmetric
 * layouts) and RAID 10 near-2 over 4 and 3: corruption written straight
 * into a member file is counted by check (8 sectors per 4 KiB block)
 * without changing anything, and fixed by repair (RAID 5 rewrites parity
 * from the data, as md does).
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "recovery.h"

/* ---- scrub ------------------------------------------------------------------------------------ */

enum corrupt { C_MIRROR, C_DATA, C_PARITY };

static enum corrupt
corrupt_kind(unsigned i)
{
  if (rconfs[i].level != RAID_LEVEL_5)
    return C_MIRROR;
  return rconfs[i].layout == RAID_LAYOUT_RIGHT_ASYMMETRIC ? C_PARITY : C_DATA;
}

/* A 4 KiB block of garbage written straight into one member: check counts
 * 8 sectors and changes no byte of any member; repair rewrites it (mirrors:
 * from the first copy; RAID 5: parity from the data, so corrupt data stays
 * and parity follows it, as md does); a second check finds nothing. */
START_TEST(test_scrub)
{
  const struct tconf *c = &rconfs[_i];
  enum corrupt kind = corrupt_kind(_i);
  struct tarray t;
  unsigned disks[RAID_MAX_MEMBERS], disk, n, i;
  uint64_t msec[RAID_MAX_MEMBERS], X, moff, mism;
  uint8_t garbage[4096], back[4096];
  uint8_t *before[RAID_MAX_MEMBERS], *after;
  const char *what;

  tarray_setup(&t, c, TA_NO_PATTERN, 0, test_seed_for(400 + _i));
  tarray_fill(&t);
  assert_check_clean(t.a, t.desc);

  /* Where the block goes. */
  X = rng_below(&t.rng, t.size / 4096) * 4096;
  n = ref_locate(c, X / 512, disks, msec);
  switch (kind) {
  case C_MIRROR:
    tassert(n >= 2, "%s: %u copies", t.desc, n);
    disk = disks[1];            /* the second copy */
    moff = msec[1] * 512;
    what = "second copy";
    break;
  case C_DATA:
    disk = disks[0];
    moff = msec[0] * 512;
    what = "data chunk";
    break;
  default: {
    unsigned dd, pd;
    uint64_t stripe, ms;
    ref_raid5_map(tconf_layout(c), c->disks, tconf_chunk(c) / 512, X / 512, &dd, &pd,
                  &stripe, &ms);
    disk = pd;
    moff = ms * 512;
    what = "parity chunk";
    break;
  }
  }
  rng_fill(&t.rng, garbage, sizeof garbage);
  tassert(raid_flush(t.a) == 0, "%s: flush", t.desc);
  file_rw(t.tm.path[disk], true, garbage, sizeof garbage, c->data_offset + moff);
  test_verbose("%s: garbage in the %s of array byte %" PRIu64 ": member %u byte %"
               PRIu64, t.desc, what, X, disk, c->data_offset + moff);

  /* Check: counts, changes nothing. */
  for (i = 0; i < c->disks; i++) {
    before[i] = test_alloc(t.tm.size[i]);
    file_rw(t.tm.path[i], false, before[i], t.tm.size[i], 0);
  }
  mism = run_action(t.a, t.desc, RAID_SYNC_CHECK);
  tassert(mism == 8, "%s: check counted %" PRIu64 " mismatched sectors for one "
          "corrupt 4 KiB block in the %s of member %u, expected 8", t.desc, mism,
          what, disk);
  after = test_alloc(t.tm.size[0]);
  for (i = 0; i < c->disks; i++) {
    uint64_t j;
    file_rw(t.tm.path[i], false, after, t.tm.size[i], 0);
    for (j = 0; j < t.tm.size[i] && after[j] == before[i][j]; j++)
      ;
    tassert(j == t.tm.size[i], "%s: check changed member %u at byte %" PRIu64,
            t.desc, i, j);
    test_free(before[i]);
  }
  test_free(after);

  /* Repair: counts and rewrites. */
  mism = run_action(t.a, t.desc, RAID_SYNC_REPAIR);
  tassert(mism == 8, "%s: repair counted %" PRIu64 " mismatched sectors, expected 8",
          t.desc, mism);
  file_rw(t.tm.path[disk], false, back, sizeof back, c->data_offset + moff);
  if (kind == C_DATA) {
    /* md trusts the data: it stays, parity now covers it. */
    tassert(memcmp(back, garbage, sizeof back) == 0, "%s: repair changed the data "
            "chunk instead of the parity", t.desc);
    memcpy(t.shadow + X, garbage, sizeof garbage);
  }
  else if (kind == C_MIRROR)
    tassert(memcmp(back, t.shadow + X, sizeof back) == 0, "%s: repair did not "
            "restore the second copy from the first", t.desc);
  tarray_check_placement(&t);   /* every copy and every parity chunk right */
  tarray_check_all(&t);
  assert_check_clean(t.a, t.desc);
  tarray_teardown(&t);
}
END_TEST

int
main(void)
{
  Suite *s;
  TCase *tc;

  test_init("test-scrub");
  build_confs();
  s = suite_create("scrub");

  tc = test_tcase("scrub");
  tcase_add_loop_test(tc, test_scrub, 0, nrconfs);
  suite_add_tcase(s, tc);

  return test_run_suite(s);
}
