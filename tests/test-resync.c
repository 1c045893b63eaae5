/* Description: checkpoints, resume and resync of the sync engine, on
 * member files with md metadata and on RAM members.
 *
 *  - a rebuild or a replacement interrupted by raid_array_free() leaves
 *    recovery_offset in the new member's superblock and resumes there after
 *    assembly (the failed member keeps its device number, marked faulty, as
 *    in md);
 *  - a resync makes copies and parity agree, and one stopped half way
 *    resumes where it stopped;
 *  - unsynced mirrors always read the first copy;
 *  - sync_stop keeps the place (a second action is refused while one
 *    runs); the rate limit holds.
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

/* ---- checkpoints, resume, resync ------------------------------------------------------------- */

/* A set of member files with md metadata and a shadow. */
struct mdset {
  struct tconf c;
  char desc[200];
  char name[32];
  struct tmembers tm;
  unsigned n;                   /* files: raid_disks and extras */
  struct raid_array *a;
  uint64_t size, member_size;
  uint8_t *shadow;
  struct rng rng;
  uint64_t gen;
};

static void
mdset_init(struct mdset *s, const struct tconf *c, unsigned extra, uint64_t seed)
{
  char buf[160];

  memset(s, 0, sizeof *s);
  s->c = *c;
  s->c.data_offset = RAID_DATA_OFFSET_DEFAULT;
  s->c.member_bytes = RAID_DATA_OFFSET_DEFAULT + data_bytes;
  s->n = c->disks + extra;
  rng_seed(&s->rng, seed);
  snprintf(s->name, sizeof s->name, "rec%u", (unsigned)(seed % 1000));
  snprintf(s->desc, sizeof s->desc, "[md metadata %s seed=0x%016" PRIx64 "]",
           tconf_str(&s->c, buf, sizeof buf), seed);
  tmembers_create(&s->tm, s->n, NULL, s->c.member_bytes);
}

static void
mdset_create(struct mdset *s, unsigned flags)
{
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_config cfg = {
    .name = s->name, .level = s->c.level, .layout = s->c.layout,
    .chunk_size = s->c.chunk, .raid_disks = s->c.disks,
  };
  unsigned i;
  int r;

  for (i = 0; i < s->c.disks; i++)
    m[i] = tmembers_open(&s->tm, i, false);
  r = raid_array_create(&cfg, m, flags, &s->a);
  tassert(r == 0, "%s: raid_array_create: %d %s", s->desc, r, raid_get_error());
  s->size = raid_array_size(s->a);
  s->member_size = raid_array_member_size(s->a);
  s->shadow = calloc(1, s->size);
  ck_assert(s->shadow != NULL);
}

/* Assemble from every file but those in SKIP, given in reverse order. */
static void
mdset_assemble(struct mdset *s, uint64_t skip)
{
  struct raid_member *m[RAID_MAX_MEMBERS];
  unsigned i, count = 0;
  int r;

  for (i = s->n; i-- > 0;)
    if (!((skip >> i) & 1))
      m[count++] = tmembers_open(&s->tm, i, false);
  r = raid_array_assemble(NULL, m, count, 0, &s->a);
  tassert(r == 0, "%s: raid_array_assemble: %d %s", s->desc, r, raid_get_error());
}

static void
mdset_write(struct mdset *s, uint64_t off, size_t len)
{
  uint8_t *buf = test_alloc(len);
  int r;

  tag_data(&s->rng, buf, off, len, ++s->gen);
  r = raid_pwrite(s->a, buf, len, off, 0);
  tassert(r == 0, "%s: write at %" PRIu64 ": %d %s", s->desc, off, r, raid_get_error());
  memcpy(s->shadow + off, buf, len);
  test_free(buf);
}

static void
mdset_fill(struct mdset *s)
{
  uint64_t off;

  for (off = 0; off < s->size; off += MIN(s->size - off, 1 * MiB))
    mdset_write(s, off, (size_t)MIN(s->size - off, 1 * MiB));
}

static void
mdset_verify(struct mdset *s, const char *when)
{
  verify_shadow(s->a, s->shadow, s->size, s->desc, when);
}

static void
mdset_close(struct mdset *s)
{
  raid_array_free(s->a);
  s->a = NULL;
}

static void
mdset_destroy(struct mdset *s)
{
  if (s->a)
    mdset_close(s);
  tmembers_destroy(&s->tm);
  free(s->shadow);
}

static void
read_sb(struct mdset *s, unsigned file, struct raid_superblock *sb)
{
  struct raid_member *m;
  int r;

  r = raid_member_open(s->tm.path[file], RAID_MEMBER_READONLY, &m);
  tassert(r == 0, "%s: open %s: %d %s", s->desc, s->tm.path[file], r, raid_get_error());
  r = raid_superblock_read(m, sb);
  tassert(r == 0, "%s: superblock of %s: %d %s", s->desc, s->tm.path[file], r,
          raid_get_error());
  raid_member_close(m);
}

/* Configurations with metadata: RAID 5 over 3, RAID 1 over 2, RAID 10 over 4. */
static const unsigned md_confs[] = { 2, 0, 6 };

/* A rebuild interrupted by raid_array_free() half way leaves the new
 * member's superblock with a recovery offset strictly inside it; after
 * assembly the member is recovering from there, and the rebuild resumes
 * there (not at 0) and completes with the data intact. */
START_TEST(test_checkpoint_resume)
{
  const struct tconf *c = &rconfs[md_confs[_i]];
  unsigned slot = 1, nf = c->disks;    /* file nf: the new member */
  struct mdset s;
  struct raid_member *m;
  struct raid_superblock sb, sb0;
  struct raid_sync_status st;
  struct raid_member_info mi;
  uint64_t rate, rec;
  double t0;
  char *name;
  int64_t start;
  int r;

  mdset_init(&s, c, 1, test_seed_for(500 + _i));
  mdset_create(&s, RAID_CREATE_ASSUME_CLEAN);
  mdset_fill(&s);
  r = raid_array_fail_member(s.a, slot);
  tassert(r == 0, "%s: fail: %d", s.desc, r);
  m = tmembers_open(&s.tm, nf, false);
  name = strdup(raid_member_name(m));
  r = add_member(s.a, m);
  tassert(r == (int)slot, "%s: add_member returned %d (%s), expected %u", s.desc, r,
          r < 0 ? raid_get_error() : "", slot);

  /* About 2.5 s for the whole member. */
  rate = s.member_size * 2 / 5;
  raid_array_set_sync_limits(s.a, rate, rate);
  r = raid_array_sync_start(s.a, RAID_SYNC_RECOVER);
  tassert(r == 0, "%s: sync_start: %d %s", s.desc, r, raid_get_error());
  t0 = now_s();
  for (;;) {
    get_sync_status(s.a, &st);
    if (st.action == RAID_SYNC_RECOVER && st.done >= st.total / 2)
      break;
    if (st.action == RAID_SYNC_IDLE && !st.due)
      break;
    tassert(now_s() - t0 < SYNC_DEADLINE_S, "%s: rebuild stuck at %" PRIu64,
            s.desc, st.done);
    sleep_ms(5);
  }
  tassert(st.action == RAID_SYNC_RECOVER && st.done < st.total,
          "%s: the rebuild at %" PRIu64 " bytes/s was over (%" PRIu64 " of %"
          PRIu64 " bytes, result %d) after %.2f s: not throttled", s.desc, rate,
          st.done, st.total, st.last_result, now_s() - t0);
  mdset_close(&s);              /* interrupts and checkpoints */

  read_sb(&s, nf, &sb);
  tassert(sb.feature_map & RAID_SB_FEATURE_RECOVERY_OFFSET,
          "%s: the new member's superblock has feature_map 0x%x, without "
          "RECOVERY_OFFSET", s.desc, sb.feature_map);
  tassert(sb.recovery_offset > 0 && sb.recovery_offset < sb.size,
          "%s: recovery_offset %" PRIu64 " sectors, expected inside (0, %" PRIu64 ")",
          s.desc, sb.recovery_offset, sb.size);
  tassert(sb.dev_number < sb.max_dev && sb.dev_roles[sb.dev_number] == slot,
          "%s: the new member (device %u) has role 0x%x, expected %u", s.desc,
          sb.dev_number, sb.dev_number < sb.max_dev ? sb.dev_roles[sb.dev_number] : 0,
          slot);
  /* md keeps the failed member's device number (faulty) and gives the
   * new one a number of its own. */
  read_sb(&s, slot, &sb0);
  tassert(sb0.dev_number != sb.dev_number && sb.dev_roles[sb0.dev_number] ==
          RAID_SB_ROLE_FAULTY, "%s: the new member has device number %u, the "
          "failed one %u, which the new superblocks give role 0x%x (md: faulty, "
          "0x%x)", s.desc, sb.dev_number, sb0.dev_number,
          sb.dev_roles[sb0.dev_number], RAID_SB_ROLE_FAULTY);
  tassert(sb0.events < sb.events, "%s: the failed member's events %" PRIu64
          " are not behind %" PRIu64, s.desc, sb0.events, sb.events);
  read_sb(&s, 0, &sb0);
  tassert(sb0.feature_map == 0 && sb0.events == sb.events,
          "%s: member 0: feature_map 0x%x events %" PRIu64 ", new member events %"
          PRIu64, s.desc, sb0.feature_map, sb0.events, sb.events);
  tassert(sb0.resync_offset == RAID_SB_MAX_SECTOR, "%s: not marked clean", s.desc);
  rec = sb.recovery_offset * 512;

  /* Every file, the failed member's too: it is left out. */
  mdset_assemble(&s, 0);
  assert_state(s.a, s.desc, slot, RAID_MEMBER_RECOVERING);
  tassert(raid_array_degraded(s.a) == 1, "%s: degraded %u", s.desc,
          raid_array_degraded(s.a));
  tassert(find_info(s.a, name, &mi), "%s: %s not in the assembled array", s.desc, name);
  tassert(mi.role == (int)slot && mi.state == RAID_MEMBER_RECOVERING &&
          mi.recovery_offset == rec,
          "%s: %s listed with role %d state %d recovery offset %" PRIu64
          ", expected role %u recovering at %" PRIu64, s.desc, name, mi.role, mi.state,
          mi.recovery_offset, slot, rec);
  tassert(raid_array_members(s.a, NULL, 0) == c->disks, "%s: %u members",
          s.desc, raid_array_members(s.a, NULL, 0));
  mdset_verify(&s, "degraded, before the rebuild resumes");

  test_log_capture(RAID_LOG_INFO);
  raid_array_set_sync_limits(s.a, 0, 0);
  r = raid_array_sync_start(s.a, RAID_SYNC_RECOVER);
  tassert(r == 0, "%s: sync_start: %d %s", s.desc, r, raid_get_error());
  r = wait_sync(s.a, s.desc, NULL, NULL);
  tassert(r == 0, "%s: resumed rebuild: %d %s", s.desc, r, raid_get_error());
  start = log_recover_start();
  raid_set_log_handler(NULL, NULL, RAID_LOG_INFO);
  tassert(start == (int64_t)rec, "%s: the rebuild resumed at byte %" PRId64
          ", expected the checkpoint %" PRIu64, s.desc, start, rec);
  assert_state(s.a, s.desc, slot, RAID_MEMBER_IN_SYNC);
  tassert(raid_array_degraded(s.a) == 0, "%s: degraded %u", s.desc,
          raid_array_degraded(s.a));
  mdset_verify(&s, "after the resumed rebuild");
  assert_check_clean(s.a, s.desc);
  mdset_close(&s);

  read_sb(&s, nf, &sb);
  tassert(!(sb.feature_map & RAID_SB_FEATURE_RECOVERY_OFFSET),
          "%s: still a recovery offset after the rebuild: feature_map 0x%x", s.desc,
          sb.feature_map);
  mdset_assemble(&s, UINT64_C(1) << slot);   /* the current members */
  tassert(raid_array_degraded(s.a) == 0, "%s: degraded %u after reassembly", s.desc,
          raid_array_degraded(s.a));
  mdset_verify(&s, "reassembled");
  free(name);
  mdset_destroy(&s);
}
END_TEST

struct progress {
  unsigned calls;
  uint64_t done, total;
  bool backwards;
  uint64_t want_total;
  unsigned bad_calls;           /* total not the member size, or done > total */
  uint64_t bad_done, bad_total;
};

static int
progress_cb(void *opaque, uint64_t done, uint64_t total)
{
  struct progress *p = opaque;

  if (p->calls && done < p->done)
    p->backwards = true;
  if ((total != p->want_total || done > total) && p->bad_calls++ == 0) {
    p->bad_done = done;
    p->bad_total = total;
  }
  p->calls++;
  p->done = done;
  p->total = total;
  return 0;
}

/* Fill the data area of every member file of S with different garbage. */
static void
garble(struct mdset *s, unsigned files)
{
  uint8_t *buf = test_alloc(data_bytes);
  unsigned i;

  for (i = 0; i < files; i++) {
    rng_fill(&s->rng, buf, data_bytes);
    file_rw(s->tm.path[i], true, buf, data_bytes, s->c.data_offset);
  }
  test_free(buf);
}

/* An array created without ASSUME_CLEAN over members whose copies and
 * parity disagree: check finds mismatches, raid_array_resync() clears
 * needs_resync, reports progress up to the end, keeps what was written,
 * and afterwards check finds none and the array stops clean. */
START_TEST(test_resync)
{
  const struct tconf *c = &rconfs[md_confs[_i]];
  struct mdset s;
  struct raid_superblock sb;
  struct progress p = { 0 };
  uint64_t mism;
  int r;

  mdset_init(&s, c, 0, test_seed_for(600 + _i));
  garble(&s, c->disks);
  mdset_create(&s, 0);
  tassert(raid_array_needs_resync(s.a) == 1, "%s: a new array needs no resync?",
          s.desc);
  mdset_write(&s, 0, 1 * MiB);
  mdset_write(&s, s.size - 1 * MiB, 1 * MiB);
  mism = run_action(s.a, s.desc, RAID_SYNC_CHECK);
  tassert(mism > 0, "%s: check found no mismatch on members of garbage", s.desc);

  p.want_total = s.member_size;
  r = raid_array_resync(s.a, progress_cb, &p);
  tassert(r == 0, "%s: raid_array_resync: %d %s", s.desc, r, raid_get_error());
  tassert(p.bad_calls == 0, "%s: %u progress calls not out of %" PRIu64 " bytes, "
          "the first: %" PRIu64 " of %" PRIu64, s.desc, p.bad_calls, s.member_size,
          p.bad_done, p.bad_total);
  tassert(raid_array_needs_resync(s.a) == 0, "%s: still needs a resync", s.desc);
  tassert(p.calls > 0 && !p.backwards && p.done == p.total && p.total == s.member_size,
          "%s: progress: %u calls, last %" PRIu64 " of %" PRIu64 "%s", s.desc, p.calls,
          p.done, p.total, p.backwards ? ", went backwards" : "");
  assert_check_clean(s.a, s.desc);
  {
    uint8_t *buf = test_alloc(1 * MiB);
    uint64_t offs[2] = { 0, s.size - 1 * MiB };
    unsigned k;
    for (k = 0; k < 2; k++) {
      r = raid_pread(s.a, buf, 1 * MiB, offs[k]);
      tassert(r == 0 && memcmp(buf, s.shadow + offs[k], 1 * MiB) == 0,
              "%s: data written before the resync changed at %" PRIu64, s.desc, offs[k]);
    }
    test_free(buf);
  }
  mdset_close(&s);
  read_sb(&s, 0, &sb);
  tassert(sb.resync_offset == RAID_SB_MAX_SECTOR, "%s: resync_offset %" PRIu64
          " after a resync and a clean stop", s.desc, sb.resync_offset);
  mdset_assemble(&s, 0);
  tassert(raid_array_needs_resync(s.a) == 0, "%s: needs a resync after reassembly",
          s.desc);
  mdset_destroy(&s);
}
END_TEST

/* Wait until ACTION has done at least half its work; fail if it ends
 * first (the rate limit should make it last seconds). */
static void
wait_half(struct raid_array *a, const char *desc, int action, uint64_t rate)
{
  struct raid_sync_status st;
  double t0 = now_s();

  for (;;) {
    get_sync_status(a, &st);
    if (st.action == action && st.done >= st.total / 2)
      break;
    if (st.action == RAID_SYNC_IDLE && !st.due)
      break;
    tassert(now_s() - t0 < SYNC_DEADLINE_S, "%s: %s stuck at %" PRIu64, desc,
            raid_sync_action_name(action), st.done);
    sleep_ms(5);
  }
  tassert(st.action == action && st.done < st.total,
          "%s: the %s at %" PRIu64 " bytes/s was over (%" PRIu64 " of %" PRIu64
          " bytes, result %d) after %.2f s: not throttled", desc,
          raid_sync_action_name(action), rate, st.done, st.total, st.last_result,
          now_s() - t0);
}

/* md's --replace interrupted half way by raid_array_free(): the new
 * member's superblock says "replacement" with a recovery offset; after
 * assembly it is listed as the role's replacement from there, and with
 * auto sync the copy resumes by itself, completes, and the old member is
 * retired. */
START_TEST(test_replace_resume)
{
  const struct tconf *c = &rconfs[md_confs[_i]];
  unsigned slot = 0, nf = c->disks;
  struct mdset s;
  struct raid_member *m;
  struct raid_superblock sb;
  struct raid_member_info mi;
  uint64_t rate, rec;
  char *name, *old;
  int64_t start;
  int r;

  mdset_init(&s, c, 1, test_seed_for(1000 + _i));
  mdset_create(&s, RAID_CREATE_ASSUME_CLEAN);
  mdset_fill(&s);
  old = strdup(raid_member_name(raid_array_member(s.a, slot)));
  m = tmembers_open(&s.tm, nf, false);
  name = strdup(raid_member_name(m));
  r = raid_array_replace_member(s.a, slot, m);
  tassert(r == 0, "%s: replace: %d %s", s.desc, r, raid_get_error());
  rate = s.member_size * 2 / 5;
  raid_array_set_sync_limits(s.a, rate, rate);
  r = raid_array_sync_start(s.a, RAID_SYNC_RECOVER);
  tassert(r == 0, "%s: sync_start: %d %s", s.desc, r, raid_get_error());
  wait_half(s.a, s.desc, RAID_SYNC_RECOVER, rate);
  mdset_close(&s);

  read_sb(&s, nf, &sb);
  tassert((sb.feature_map & (RAID_SB_FEATURE_RECOVERY_OFFSET | RAID_SB_FEATURE_REPLACEMENT))
          == (RAID_SB_FEATURE_RECOVERY_OFFSET | RAID_SB_FEATURE_REPLACEMENT),
          "%s: the replacement's superblock has feature_map 0x%x", s.desc,
          sb.feature_map);
  tassert(sb.recovery_offset > 0 && sb.recovery_offset < sb.size,
          "%s: recovery_offset %" PRIu64 " sectors, expected inside (0, %" PRIu64 ")",
          s.desc, sb.recovery_offset, sb.size);
  tassert(sb.dev_roles[sb.dev_number] == slot, "%s: replacement role 0x%x", s.desc,
          sb.dev_roles[sb.dev_number]);
  rec = sb.recovery_offset * 512;

  mdset_assemble(&s, 0);
  tassert(raid_array_degraded(s.a) == 0, "%s: degraded %u", s.desc,
          raid_array_degraded(s.a));
  assert_listed(s.a, s.desc, old, (int)slot, RAID_MEMBER_IN_SYNC);
  tassert(find_info(s.a, name, &mi) && mi.role == (int)slot &&
          mi.state == RAID_MEMBER_REPLACEMENT && mi.recovery_offset == rec,
          "%s: %s listed with role %d state %d at %" PRIu64 ", expected the "
          "replacement of role %u at %" PRIu64, s.desc, name, mi.role, mi.state,
          mi.recovery_offset, slot, rec);
  test_log_capture(RAID_LOG_INFO);
  raid_array_set_sync_limits(s.a, 0, 0);
  raid_array_set_auto_sync(s.a, 1);
  r = wait_sync(s.a, s.desc, NULL, NULL);
  tassert(r == 0, "%s: resumed replacement: %d %s", s.desc, r, raid_get_error());
  start = log_recover_start();
  raid_set_log_handler(NULL, NULL, RAID_LOG_INFO);
  tassert(start == (int64_t)rec, "%s: the copy resumed at byte %" PRId64
          ", expected the checkpoint %" PRIu64, s.desc, start, rec);
  assert_listed(s.a, s.desc, name, (int)slot, RAID_MEMBER_IN_SYNC);
  assert_listed(s.a, s.desc, old, -1, RAID_MEMBER_FAULTY);
  mdset_verify(&s, "after the resumed replacement");
  assert_check_clean(s.a, s.desc);
  r = raid_array_remove_member(s.a, old, 0);
  tassert(r == 0, "%s: remove %s: %d %s", s.desc, old, r, raid_get_error());
  mdset_close(&s);
  mdset_assemble(&s, UINT64_C(1) << slot);
  tassert(raid_array_degraded(s.a) == 0 && raid_array_member_state(s.a, slot) ==
          RAID_MEMBER_IN_SYNC, "%s: after reassembly: degraded %u", s.desc,
          raid_array_degraded(s.a));
  tassert(strcmp(raid_member_name(raid_array_member(s.a, slot)), name) == 0,
          "%s: role %u is %s after reassembly", s.desc, slot,
          raid_member_name(raid_array_member(s.a, slot)));
  mdset_verify(&s, "reassembled after the replacement");
  free(name);
  free(old);
  mdset_destroy(&s);
}
END_TEST

/* A recovery offset that is not a multiple of the engine's step, as the
 * kernel's md leaves in a superblock (it checkpoints wherever it is): the
 * member is rebuilt from there (or before) and ends up in sync. */
START_TEST(test_resume_odd_offset)
{
  const struct tconf *c = &rconfs[0];      /* RAID 1 over 2 */
  unsigned slot = 1, nf = c->disks;
  struct mdset s;
  struct raid_member *m;
  struct raid_superblock sb;
  uint8_t *buf = test_alloc(RAID_SB_BYTES);
  int r;

  mdset_init(&s, c, 1, test_seed_for(1200));
  mdset_create(&s, RAID_CREATE_ASSUME_CLEAN);
  mdset_fill(&s);
  r = raid_array_fail_member(s.a, slot);
  tassert(r == 0, "%s: fail", s.desc);
  m = tmembers_open(&s.tm, nf, false);
  r = add_member(s.a, m);
  tassert(r == (int)slot, "%s: add: %d", s.desc, r);
  mdset_close(&s);              /* recovering, at 0 */

  /* As md would leave it after rebuilding 1 MiB + 24 KiB. */
  read_sb(&s, nf, &sb);
  tassert(sb.feature_map & RAID_SB_FEATURE_RECOVERY_OFFSET, "%s: feature_map 0x%x",
          s.desc, sb.feature_map);
  sb.recovery_offset = (1 * MiB + 24 * KiB) / 512;
  ck_assert(raid_superblock_encode(&sb, buf) == 0);
  file_rw(s.tm.path[nf], true, buf, RAID_SB_BYTES, RAID_SB_OFFSET_1_2 * 512);
  /* The part below the offset is rebuilt, as md says. */
  {
    uint8_t *d = test_alloc(1 * MiB + 24 * KiB);
    file_rw(s.tm.path[0], false, d, 1 * MiB + 24 * KiB, s.c.data_offset);
    file_rw(s.tm.path[nf], true, d, 1 * MiB + 24 * KiB, s.c.data_offset);
    test_free(d);
  }

  mdset_assemble(&s, UINT64_C(1) << slot);
  assert_state(s.a, s.desc, slot, RAID_MEMBER_RECOVERING);
  r = raid_array_sync_start(s.a, RAID_SYNC_RECOVER);
  tassert(r == 0, "%s: sync_start: %d %s", s.desc, r, raid_get_error());
  r = wait_sync(s.a, s.desc, NULL, NULL);
  tassert(r == 0, "%s: rebuild: %d %s", s.desc, r, raid_get_error());
  tassert(raid_array_member_state(s.a, slot) == RAID_MEMBER_IN_SYNC,
          "%s: a member recovering from byte %u is still in state %d after a "
          "rebuild", s.desc, (unsigned)(1 * MiB + 24 * KiB),
          raid_array_member_state(s.a, slot));
  r = raid_array_fail_member(s.a, 0);
  tassert(r == 0, "%s: fail 0", s.desc);
  mdset_verify(&s, "from the rebuilt member alone");
  test_free(buf);
  mdset_destroy(&s);
}
END_TEST

static int
stop_at_half(void *opaque, uint64_t done, uint64_t total)
{
  return done >= total / 2;
}

/* A resync stopped half way (its progress callback says stop) keeps its
 * place through a clean stop: resync_offset inside the member, and after
 * assembly the resync resumes there. */
START_TEST(test_resync_resume)
{
  const struct tconf *c = &rconfs[md_confs[_i]];
  struct mdset s;
  struct raid_superblock sb;
  uint64_t rate;
  int64_t start;
  int r;

  mdset_init(&s, c, 0, test_seed_for(1100 + _i));
  garble(&s, c->disks);
  mdset_create(&s, 0);
  mdset_write(&s, 0, 1 * MiB);
  rate = s.member_size * 2 / 5;
  raid_array_set_sync_limits(s.a, rate, rate);
  r = raid_array_resync(s.a, stop_at_half, NULL);
  tassert(r == -EINTR, "%s: a resync stopped by its callback returned %d", s.desc, r);
  tassert(raid_array_needs_resync(s.a) == 1, "%s: no resync needed after a stopped "
          "one", s.desc);
  mdset_close(&s);
  read_sb(&s, 0, &sb);
  tassert(sb.resync_offset > 0 && sb.resync_offset < sb.size,
          "%s: resync_offset %" PRIu64 " after a resync stopped half way (size %"
          PRIu64 ")", s.desc, sb.resync_offset, sb.size);

  mdset_assemble(&s, 0);
  tassert(raid_array_needs_resync(s.a) == 1, "%s: reassembled, no resync needed",
          s.desc);
  test_log_capture(RAID_LOG_INFO);
  r = raid_array_resync(s.a, NULL, NULL);
  start = log_action_start("resync");
  raid_set_log_handler(NULL, NULL, RAID_LOG_INFO);
  tassert(r == 0, "%s: resync: %d %s", s.desc, r, raid_get_error());
  tassert(start == (int64_t)(sb.resync_offset * 512), "%s: the resync resumed at %"
          PRId64 ", expected %" PRIu64, s.desc, start, sb.resync_offset * 512);
  tassert(raid_array_needs_resync(s.a) == 0, "%s: still needs a resync", s.desc);
  assert_check_clean(s.a, s.desc);
  {
    uint8_t *buf = test_alloc(1 * MiB);
    r = raid_pread(s.a, buf, 1 * MiB, 0);
    tassert(r == 0 && memcmp(buf, s.shadow, 1 * MiB) == 0,
            "%s: data written before the resync changed", s.desc);
    test_free(buf);
  }
  mdset_destroy(&s);
}
END_TEST

/* Mirrors that were never resynced may disagree; until the resync has
 * been over a range, every read of it comes from the first copy (md's
 * read_balance() "choose_first"), so reading the same bytes twice gives the
 * same answer. */
START_TEST(test_unsynced_reads_first_copy)
{
  const struct tconf *c = &rconfs[0];      /* RAID 1 over 2 */
  struct mdset s;
  uint8_t *first = test_alloc(data_bytes), *buf = test_alloc(64 * KiB);
  unsigned k, round;
  int r;

  mdset_init(&s, c, 0, test_seed_for(700));
  garble(&s, c->disks);
  file_rw(s.tm.path[0], false, first, data_bytes, s.c.data_offset);
  for (round = 0; round < 2; round++) {
    if (round == 0)
      mdset_create(&s, 0);
    else
      mdset_assemble(&s, 0);   /* still unclean: no resync ran */
    tassert(raid_array_needs_resync(s.a) == 1, "%s: no resync needed?", s.desc);
    for (k = 0; k < 24; k++) {
      uint64_t off = k < 8 ? 0 : k < 16 ? 1 * MiB + 4096 * (k % 2)
        : rng_below(&s.rng, (s.member_size - 64 * KiB) / 512) * 512;
      size_t len = k < 8 ? 4096 : k < 16 ? 64 * KiB : 512 * (1 + rng_below(&s.rng, 128));
      r = raid_pread(s.a, buf, len, off);
      tassert(r == 0, "%s: read: %d %s", s.desc, r, raid_get_error());
      tassert(memcmp(buf, first + off, len) == 0,
              "%s: read %u (%zu bytes at %" PRIu64 ") of an unsynced mirror did not "
              "come from the first copy%s", s.desc, k, len, off,
              round ? " (after reassembly)" : "");
    }
    mdset_close(&s);
  }
  test_free(first);
  test_free(buf);
  mdset_destroy(&s);
}
END_TEST

/* ---- sync_stop and the rate limit ----------------------------------------------------------- */

/* While a (slow) rebuild runs, another action is refused with -EBUSY;
 * sync_stop interrupts it, keeping its place (-EINTR, the member still
 * recovering part way); started again it resumes there and completes. */
START_TEST(test_busy_stop_resume)
{
  struct rarray ra;
  struct raid_sync_status st;
  struct raid_member_info mi;
  double t0;
  int64_t start;
  int r;

  rarray_new(&ra, RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, data_bytes, 0, 870);
  rarray_fill(&ra);
  rarray_renew(&ra, 1, "new", false);
  raid_array_set_sync_limits(ra.a, data_bytes / 4, data_bytes / 4);
  r = raid_array_sync_start(ra.a, RAID_SYNC_RECOVER);
  tassert(r == 0, "%s: sync_start: %d %s", ra.desc, r, raid_get_error());
  t0 = now_s();
  do {
    get_sync_status(ra.a, &st);
    tassert(now_s() - t0 < SYNC_DEADLINE_S, "%s: rebuild never started", ra.desc);
    sleep_ms(2);
  } while (st.done == 0 || st.action != RAID_SYNC_RECOVER);
  tassert(st.done < st.total, "%s: the rebuild at %" PRIu64 " bytes/s is over at "
          "once: not throttled", ra.desc, data_bytes / 4);
  r = raid_array_sync_start(ra.a, RAID_SYNC_CHECK);
  assert_refused(r, -EBUSY, "recover", ra.desc, "check during a rebuild");
  r = raid_array_sync_stop(ra.a);
  tassert(r == 0, "%s: sync_stop: %d", ra.desc, r);
  get_sync_status(ra.a, &st);
  tassert(st.action == RAID_SYNC_IDLE && st.last_action == RAID_SYNC_RECOVER &&
          st.last_result == -EINTR, "%s: after stop: action %d last %d result %d",
          ra.desc, st.action, st.last_action, st.last_result);
  assert_state(ra.a, ra.desc, 1, RAID_MEMBER_RECOVERING);
  tassert(find_info(ra.a, "ram870-new", &mi) && mi.recovery_offset > 0 &&
          mi.recovery_offset < raid_array_member_size(ra.a),
          "%s: recovery offset %" PRIu64 " after the stop", ra.desc, mi.recovery_offset);
  rarray_verify(&ra, "with the rebuild stopped");

  test_log_capture(RAID_LOG_INFO);
  raid_array_set_sync_limits(ra.a, 0, 0);
  run_action(ra.a, ra.desc, RAID_SYNC_RECOVER);
  start = log_recover_start();
  raid_set_log_handler(NULL, NULL, RAID_LOG_INFO);
  tassert(start == (int64_t)mi.recovery_offset, "%s: resumed at %" PRId64
          ", stopped at %" PRIu64, ra.desc, start, mi.recovery_offset);
  assert_state(ra.a, ra.desc, 1, RAID_MEMBER_IN_SYNC);
  r = raid_array_fail_member(ra.a, 0);
  tassert(r == 0, "%s: fail 0", ra.desc);
  rarray_verify(&ra, "from the rebuilt member alone");
  rarray_free(&ra);
}
END_TEST

/* The rate limit holds: a rebuild of S bytes per member at R bytes/s
 * takes about S/R (the engine may be one step, at most 2 MiB, ahead). */
START_TEST(test_rate_limit)
{
  struct rarray ra;
  uint64_t rate = data_bytes / 2, ms;
  double t0, dt, want;

  rarray_new(&ra, RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, data_bytes, 0, 880);
  rarray_renew(&ra, 1, "new", false);
  ms = raid_array_member_size(ra.a);
  raid_array_set_sync_limits(ra.a, rate, rate);
  t0 = now_s();
  run_action(ra.a, ra.desc, RAID_SYNC_RECOVER);
  dt = now_s() - t0;
  want = (double)(ms - 2 * MiB) / rate;
  tassert(dt >= 0.9 * want, "%s: a rebuild of %" PRIu64 " bytes limited to %" PRIu64
          " bytes/s took %.2f s, expected at least %.2f s", ra.desc, ms, rate, dt,
          0.9 * want);
  assert_state(ra.a, ra.desc, 1, RAID_MEMBER_IN_SYNC);
  rarray_free(&ra);
}
END_TEST

int
main(void)
{
  Suite *s;
  TCase *tc;

  test_init("test-resync");
  build_confs();
  s = suite_create("resync");

  tc = test_tcase("checkpoint");
  tcase_add_loop_test(tc, test_checkpoint_resume, 0, ARRAY_SIZE(md_confs));
  tcase_add_loop_test(tc, test_resync, 0, ARRAY_SIZE(md_confs));
  tcase_add_loop_test(tc, test_replace_resume, 0, ARRAY_SIZE(md_confs));
  tcase_add_loop_test(tc, test_resync_resume, 0, ARRAY_SIZE(md_confs));
  tcase_add_test(tc, test_resume_odd_offset);
  tcase_add_test(tc, test_unsynced_reads_first_copy);
  tcase_add_test(tc, test_busy_stop_resume);
  tcase_add_test(tc, test_rate_limit);
  suite_add_tcase(s, tc);

  return test_run_suite(s);
}
