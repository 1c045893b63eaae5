/* Helpers of the sync engine's suites (tests/recovery.h). */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

/* ---- members and time ------------------------------------------------------------- */

/* The role an add or a lookup gave (-1: spare or no role), or -errno. */
int
add_member(struct raid_array *a, struct raid_member *m)
{
  int role, r = raid_array_add_member(a, m, &role);
  return r < 0 ? r : role;
}

int
find_member(struct raid_array *a, const char *name)
{
  int role, r = raid_array_find_member(a, name, &role);
  return r < 0 ? r : role;
}

double
now_s(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

void
sleep_ms(unsigned ms)
{
  struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

  nanosleep(&ts, NULL);
}

/* ---- the log (testlib's test_log_capture(RAID_LOG_INFO)) ----------------------- */

/* The byte offset in the last "ACTION started at N" message, or -1. */
int64_t
log_action_start(const char *action)
{
  char *s = test_log_copy(), *p, *last = NULL, key[64];
  int64_t v = -1;

  snprintf(key, sizeof key, "%s started at ", action);
  for (p = strstr(s, key); p; p = strstr(p + 1, key))
    last = p;
  if (last)
    v = (int64_t)strtoull(last + strlen(key), NULL, 10);
  free(s);
  return v;
}

int64_t
log_recover_start(void)
{
  return log_action_start("recover");
}

/* ---- configurations ----------------------------------------------------------------- */

struct tconf rconfs[8];
unsigned nrconfs;
uint64_t data_bytes;     /* bytes of each member holding data */

static void
add_rconf(int level, int layout, unsigned disks, uint32_t chunk, uint64_t off)
{
  rconfs[nrconfs++] = (struct tconf){ level, layout, disks, chunk, off, off + data_bytes };
}

void
build_confs(void)
{
  /* 8 MiB of data per member (4 steps of the engine), 4 MiB when scaled
   * down (valgrind): still two steps, so writes land on both sides of the
   * recovery point. */
  data_bytes = (test_scale(100) >= 50 ? 8 : 4) * MiB;
  add_rconf(RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 2, 0, 0);
  add_rconf(RAID_LEVEL_1, RAID_LAYOUT_DEFAULT, 3, 0, 1 * MiB);
  add_rconf(RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 3, 64 * KiB, 0);
  add_rconf(RAID_LEVEL_5, RAID_LAYOUT_LEFT_SYMMETRIC, 4, 64 * KiB, 1 * MiB);
  add_rconf(RAID_LEVEL_5, RAID_LAYOUT_RIGHT_ASYMMETRIC, 4, 64 * KiB, 0);
  add_rconf(RAID_LEVEL_5, RAID_LAYOUT_LEFT_ASYMMETRIC, 3, 64 * KiB, 0);
  add_rconf(RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 4, 64 * KiB, 0);
  add_rconf(RAID_LEVEL_10, RAID_LAYOUT_RAID10_NEAR(2), 3, 64 * KiB, 0);
}

/* The member to lose in configuration I: a different one from one
 * configuration to the next. */
unsigned
victim(unsigned i)
{
  return (i * 5 + 1) % rconfs[i].disks;
}

/* ---- member listing ------------------------------------------------------------------ */

/* The entry of raid_array_members() for NAME. */
bool
find_info(struct raid_array *a, const char *name, struct raid_member_info *out)
{
  struct raid_member_info info[3 * RAID_MAX_MEMBERS];
  unsigned n = raid_array_members(a, info, ARRAY_SIZE(info)), i;

  for (i = 0; i < n && i < ARRAY_SIZE(info); i++)
    if (info[i].name && strcmp(info[i].name, name) == 0) {
      *out = info[i];
      return true;
    }
  return false;
}

void
assert_listed(struct raid_array *a, const char *desc, const char *name, int role,
              int state)
{
  struct raid_member_info mi;

  tassert(find_info(a, name, &mi), "%s: raid_array_members() does not list %s",
          desc, name);
  tassert(mi.role == role && mi.state == state,
          "%s: raid_array_members() lists %s with role %d state %d, expected role %d "
          "state %d", desc, name, mi.role, mi.state, role, state);
}

void
assert_state(struct raid_array *a, const char *desc, unsigned slot, int state)
{
  int s = raid_array_member_state(a, slot);

  tassert(s == state, "%s: role %u state %d, expected %d", desc, slot, s, state);
}

/* R is REF (negative errno) and the message names WHAT. */
void
assert_refused(int r, int ref, const char *what, const char *desc, const char *call)
{
  tassert(r == ref, "%s: %s returned %d (%s), expected %d (%s)", desc, call, r,
          r < 0 ? strerror(-r) : "success", ref, strerror(-ref));
  tassert(raid_get_errno() == -ref, "%s: %s: raid_get_errno() %d, expected %d",
          desc, call, raid_get_errno(), -ref);
  if (what)
    tassert(strstr(raid_get_error(), what) != NULL,
            "%s: %s: the message does not name %s: %s", desc, call, what,
            raid_get_error());
}

/* ---- sync helpers -------------------------------------------------------------------------- */

void
get_sync_status(struct raid_array *a, struct raid_sync_status *st)
{
  raid_array_sync_status(a, st);
}

/* Wait for the engine while running POLL (if any) each round; fails the
 * test if it takes unreasonably long.  Returns raid_array_sync_wait(). */
int
wait_sync(struct raid_array *a, const char *desc, void (*poll)(void *), void *arg)
{
  struct raid_sync_status st;
  double t0 = now_s();

  for (;;) {
    get_sync_status(a, &st);
    if (st.action == RAID_SYNC_IDLE && !st.due)
      break;
    tassert(now_s() - t0 < SYNC_DEADLINE_S, "%s: %s still running after %.0f s "
            "(%" PRIu64 " of %" PRIu64 " bytes)", desc,
            raid_sync_action_name(st.action), SYNC_DEADLINE_S, st.done, st.total);
    if (poll)
      poll(arg);
    else
      sleep_ms(2);
  }
  return raid_array_sync_wait(a);
}

/* Run ACTION to its end; assert it succeeded; return its mismatches. */
uint64_t
run_action(struct raid_array *a, const char *desc, int action)
{
  struct raid_sync_status st;
  int r;

  r = raid_array_sync_start(a, action);
  tassert(r == 0, "%s: raid_array_sync_start(%s): %d %s", desc,
          raid_sync_action_name(action), r, raid_get_error());
  r = wait_sync(a, desc, NULL, NULL);
  tassert(r == 0, "%s: %s failed: %d %s", desc, raid_sync_action_name(action), r,
          raid_get_error());
  get_sync_status(a, &st);
  tassert(st.last_action == action && st.last_result == 0,
          "%s: after %s: last action %s result %d", desc, raid_sync_action_name(action),
          raid_sync_action_name(st.last_action), st.last_result);
  return st.last_mismatches;
}

void
assert_check_clean(struct raid_array *a, const char *desc)
{
  uint64_t n = run_action(a, desc, RAID_SYNC_CHECK);

  tassert(n == 0, "%s: check found %" PRIu64 " mismatched sectors, expected none",
          desc, n);
}

/* ---- member files ------------------------------------------------------------------------------ */

/* Fill the whole array with tagged data. */
void
tarray_fill(struct tarray *t)
{
  uint64_t off;

  for (off = 0; off < t->size; off += MIN(t->size - off, 1 * MiB))
    tarray_write(t, off, (size_t)MIN(t->size - off, 1 * MiB), 0);
}

/* Member file J of X now backs role SLOT of T (for the placement check),
 * and the file it replaced belongs to X. */
void
swap_in(struct tarray *t, unsigned slot, struct tmembers *x, unsigned j)
{
  char *f = t->tm.file[slot], *p = t->tm.path[slot];
  uint64_t s = t->tm.size[slot];

  t->tm.file[slot] = x->file[j];
  t->tm.path[slot] = x->path[j];
  t->tm.size[slot] = x->size[j];
  x->file[j] = f;
  x->path[j] = p;
  x->size[j] = s;
}

/* Every member except SLOT that has to go for SLOT to be the only copy of
 * some of the data (RAID 1: all the others; RAID 10: a member sharing
 * chunks with SLOT; RAID 5: any other member, so SLOT's chunks take part
 * in every reconstruction). */
static uint64_t
others_to_fail(const struct tconf *c, unsigned slot)
{
  unsigned disks[RAID_MAX_MEMBERS], k, n;
  uint64_t msec[RAID_MAX_MEMBERS], ci, cs = tconf_chunk(c) / 512;

  switch (c->level) {
  case RAID_LEVEL_1:
    return ((UINT64_C(1) << c->disks) - 1) & ~(UINT64_C(1) << slot);
  case RAID_LEVEL_5:
    return UINT64_C(1) << ((slot + 1) % c->disks);
  default:
    for (ci = 0; ci < 64; ci++) {
      n = ref_locate(c, ci * cs, disks, msec);
      for (k = 0; k < n; k++)
        if (disks[k] == slot)
          return UINT64_C(1) << disks[(k + 1) % n];
    }
    ck_abort_msg("no chunk of member %u found", slot);
  }
  return 0;
}

/* Read everything with the rebuilt member SLOT as the only copy. */
void
verify_from(struct tarray *t, unsigned slot)
{
  uint64_t fail = others_to_fail(&t->c, slot);
  unsigned i;

  for (i = 0; i < t->c.disks; i++)
    if ((fail >> i) & 1) {
      int r = raid_array_fail_member(t->a, i);
      tassert(r == 0, "%s: raid_array_fail_member(%u): %d", t->desc, i, r);
    }
  t->lost |= fail;
  tassert(!raid_array_is_failed(t->a), "%s: array failed with members 0x%" PRIx64
          " failed and %u rebuilt", t->desc, fail, slot);
  tarray_check_all(t);
}

/* Read or write LEN bytes of the file PATH at OFF, bypassing the cache. */
void
file_rw(const char *path, bool write, void *buf, size_t len, uint64_t off)
{
  int fd = open(path, O_RDWR | O_CLOEXEC);
  ssize_t n;

  tassert(fd >= 0, "open %s: %m", path);
  if (write) {
    n = pwrite(fd, buf, len, off);
    tassert(n == (ssize_t)len, "pwrite %s at %" PRIu64 ": %m", path, off);
    tassert(fsync(fd) == 0, "fsync %s: %m", path);
  }
  else {
    /* Drop cached pages first: the library writes with O_DIRECT. */
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    n = pread(fd, buf, len, off);
    tassert(n == (ssize_t)len, "pread %s at %" PRIu64 ": %m", path, off);
  }
  close(fd);
}

/* ---- arrays of RAM members ------------------------------------------------------------------------ */

struct raid_member *
ram_member(const char *name, uint64_t size, bool fault)
{
  struct raid_member *m = NULL, *f = NULL;
  int r = raid_member_new_ram(name, size, &m);

  tassert(r == 0, "raid_member_new_ram(%s): %d %s", name, r, raid_get_error());
  if (!fault)
    return m;
  r = raid_member_new_fault(m, &f);
  tassert(r == 0, "raid_member_new_fault(%s): %d %s", name, r, raid_get_error());
  return f;
}

void
rarray_new(struct rarray *ra, int level, int layout, unsigned n, uint64_t member,
           uint64_t fault_mask, unsigned id)
{
  struct raid_config cfg;
  unsigned i;
  int r;

  memset(ra, 0, sizeof *ra);
  ra->n = n;
  ra->id = id;
  rng_seed(&ra->rng, test_seed_for(id));
  snprintf(ra->aname, sizeof ra->aname, "mdr%u", id);
  snprintf(ra->desc, sizeof ra->desc, "[raid%d %s %u x %" PRIu64 " KiB RAM seed=0x%016"
           PRIx64 "]", level, layout_name(level, layout), n, member / KiB,
           test_seed_for(id));
  for (i = 0; i < n; i++) {
    snprintf(ra->mname[i], sizeof ra->mname[i], "ram%u-%u", id, i);
    ra->m[i] = ram_member(ra->mname[i], member, (fault_mask >> i) & 1);
  }
  memset(&cfg, 0, sizeof cfg);
  cfg.name = ra->aname;
  cfg.level = level;
  cfg.layout = layout;
  cfg.chunk_size = level == RAID_LEVEL_1 ? 0 : 64 * KiB;
  cfg.raid_disks = n;
  r = raid_array_new(&cfg, ra->m, &ra->a);
  tassert(r == 0, "%s: raid_array_new: %d %s", ra->desc, r, raid_get_error());
  ra->size = raid_array_size(ra->a);
  ra->shadow = calloc(1, ra->size);
  ck_assert(ra->shadow != NULL);
}

void
rarray_fill(struct rarray *ra)
{
  uint8_t *buf = test_alloc(1 * MiB);
  uint64_t off;
  size_t len;
  int r;

  for (off = 0; off < ra->size; off += len) {
    len = (size_t)MIN(ra->size - off, 1 * MiB);
    tag_data(&ra->rng, buf, off, len, ++ra->gen);
    r = raid_pwrite(ra->a, buf, len, off, 0);
    tassert(r == 0, "%s: write at %" PRIu64 ": %d %s", ra->desc, off, r, raid_get_error());
    memcpy(ra->shadow + off, buf, len);
  }
  test_free(buf);
}

/* Read all of array A (SIZE bytes) and compare it with SHADOW; a
 * difference fails the test naming DESC, WHEN, the byte and both tags. */
void
verify_shadow(struct raid_array *a, const uint8_t *shadow, uint64_t size,
              const char *desc, const char *when)
{
  uint8_t *buf = test_alloc(1 * MiB);
  uint64_t off, j;
  size_t len;
  int r;

  for (off = 0; off < size; off += len) {
    len = (size_t)MIN(size - off, 1 * MiB);
    r = raid_pread(a, buf, len, off);
    tassert(r == 0, "%s: %s: read at %" PRIu64 ": %d %s", desc, when, off, r,
            raid_get_error());
    if (memcmp(buf, shadow + off, len) != 0) {
      char g[128], w[128];
      for (j = 0; buf[j] == shadow[off + j]; j++)
        ;
      j = j / 512 * 512;
      ck_abort_msg("%s: %s: array byte %" PRIu64 " reads %s, expected %s", desc,
                   when, off + j, tag_str(buf + j, g, sizeof g),
                   tag_str(shadow + off + j, w, sizeof w));
    }
  }
  test_free(buf);
}

void
rarray_verify(struct rarray *ra, const char *when)
{
  verify_shadow(ra->a, ra->shadow, ra->size, ra->desc, when);
}

void
rarray_free(struct rarray *ra)
{
  raid_array_free(ra->a);
  free(ra->shadow);
}

/* Fail role SLOT and add a fresh RAM member (fault-wrapped if FAULT) in
 * its place; returns it. */
struct raid_member *
rarray_renew(struct rarray *ra, unsigned slot, const char *suffix, bool fault)
{
  char name[64];
  struct raid_member *m;
  int r;

  snprintf(name, sizeof name, "ram%u-%s", ra->id, suffix);
  if (raid_array_member_state(ra->a, slot) != RAID_MEMBER_FAULTY) {
    r = raid_array_fail_member(ra->a, slot);
    tassert(r == 0, "%s: fail %u: %d", ra->desc, slot, r);
  }
  m = ram_member(name, raid_array_member_size(ra->a), fault);
  r = add_member(ra->a, m);
  tassert(r == (int)slot, "%s: add_member(%s) returned %d (%s), expected role %u",
          ra->desc, name, r, r < 0 ? raid_get_error() : "", slot);
  return m;
}

