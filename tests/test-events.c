/* Description: the library's event hook (raid_array_set_event_handler(),
 * lib/events.c), which raidd turns into md's monitor events.  Each case
 * drives a drill on RAM members and compares the whole sequence of events
 * the handler got, in order, with what md's mdadm --monitor would report:
 *
 *  - hot spare: failing a member of a RAID 5 with a hot spare (auto sync)
 *    gives Fail (that member, its role), DegradedArray, then the spare
 *    taking the role gives RebuildStarted (recover), Rebuild20, 40, 60,
 *    80, RebuildFinished (result 0) and SpareActive (the spare, the role);
 *    a second failure of the now whole array gives Fail and DegradedArray
 *    again;
 *  - failed rebuild: a member added to a degraded RAID 1 whose writes
 *    fail gives RebuildStarted, FailSpare (that member) and
 *    RebuildFinished with an error, and no SpareActive; no second
 *    DegradedArray (the array was degraded already);
 *  - no handler: after raid_array_set_event_handler(a, NULL, NULL) a
 *    failure reports nothing; raid_event_name() gives md's names.
 * The sync engine's step is larger than these members, so a rebuild
 * crosses every fifth in one step: each crossing is still reported. */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define MAX_EVENTS 64

/* What the handler copied, as "NAME array member role" lines. */
struct seen {
  pthread_mutex_t lock;
  unsigned n;
  char line[MAX_EVENTS][160];
  int result[MAX_EVENTS];
};

static void
record(void *opaque, const struct raid_event *ev)
{
  struct seen *s = opaque;

  pthread_mutex_lock(&s->lock);
  if (s->n < MAX_EVENTS) {
    snprintf(s->line[s->n], sizeof s->line[s->n], "%s %s %s %d", raid_event_name(ev),
             ev->array, ev->member ? ev->member : "-", ev->role);
    s->result[s->n] = ev->result;
    s->n++;
  }
  pthread_mutex_unlock(&s->lock);
}

static void
seen_init(struct seen *s)
{
  memset(s, 0, sizeof *s);
  pthread_mutex_init(&s->lock, NULL);
}

/* Everything seen so far, one per line (for messages). */
static const char *
seen_text(struct seen *s)
{
  static char buf[MAX_EVENTS * 162];
  size_t len = 0;
  unsigned i;

  buf[0] = '\0';
  pthread_mutex_lock(&s->lock);
  for (i = 0; i < s->n; i++)
    len += snprintf(buf + len, sizeof buf - len, "  %s\n", s->line[i]);
  pthread_mutex_unlock(&s->lock);
  return buf;
}

/* The events seen are exactly WANT[0..n-1], in order; then forget them. */
static void
expect(struct seen *s, const char *what, const char *const *want, unsigned n)
{
  unsigned i;

  pthread_mutex_lock(&s->lock);
  for (i = 0; i < n && i < s->n; i++)
    if (strcmp(s->line[i], want[i]) != 0)
      break;
  pthread_mutex_unlock(&s->lock);
  tassert(i == n && s->n == n, "%s: event %u should be '%s'; the events were:\n%s",
          what, i, i < n ? want[i] : "(none)", seen_text(s));
  s->n = 0;
}

static struct raid_member *
ram(const char *name, uint64_t size)
{
  struct raid_member *m = NULL;
  int r = raid_member_new_ram(name, size, &m);

  tassert(r == 0, "raid_member_new_ram(%s): %d %s", name, r, raid_get_error());
  return m;
}

static struct raid_array *
new_array(const char *name, int level, unsigned n, const char *prefix)
{
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_config cfg = { .name = name, .level = level, .raid_disks = n,
                             .chunk_size = level == RAID_LEVEL_1 ? 0 : 64 * KiB };
  struct raid_array *a = NULL;
  char mname[64];
  unsigned i;
  int r;

  for (i = 0; i < n; i++) {
    snprintf(mname, sizeof mname, "%s%u", prefix, i);
    m[i] = ram(mname, 4 * MiB);
  }
  r = raid_array_new(&cfg, m, &a);
  tassert(r == 0, "raid_array_new(%s): %d %s", name, r, raid_get_error());
  return a;
}

START_TEST(test_hot_spare_events)
{
  struct raid_array *a = new_array("ev5", RAID_LEVEL_5, 3, "e5-");
  struct seen s;
  int role = 0, r;
  static const char *const first[] = {
    "Fail ev5 e5-1 1", "DegradedArray ev5 - -1", "RebuildStarted ev5 - -1",
    "Rebuild20 ev5 - -1", "Rebuild40 ev5 - -1", "Rebuild60 ev5 - -1",
    "Rebuild80 ev5 - -1", "RebuildFinished ev5 - -1", "SpareActive ev5 e5-spare 1",
  };
  static const char *const second[] = { "Fail ev5 e5-0 0", "DegradedArray ev5 - -1" };

  seen_init(&s);
  raid_array_set_auto_sync(a, 1);
  r = raid_array_add_member(a, ram("e5-spare", 4 * MiB), &role);
  tassert(r == 0 && role == -1, "add spare: %d role %d %s", r, role, raid_get_error());
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  raid_array_set_event_handler(a, record, &s);

  ck_assert_int_eq(raid_array_fail_member(a, 1), 0);
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  ck_assert_int_eq(raid_array_member_state(a, 1), RAID_MEMBER_IN_SYNC);
  tassert(s.n != ARRAY_SIZE(first) || s.result[7] == 0, "RebuildFinished result %d",
          s.result[7]);
  expect(&s, "hot spare", first, ARRAY_SIZE(first));

  /* Whole again: the next failure degrades it again (no spare left). */
  ck_assert_int_eq(raid_array_fail_member(a, 0), 0);
  ck_assert_int_eq(raid_array_sync_wait(a), 0);
  expect(&s, "second failure", second, ARRAY_SIZE(second));
  raid_array_free(a);
  pthread_mutex_destroy(&s.lock);
}
END_TEST

START_TEST(test_failed_rebuild_events)
{
  struct raid_array *a = new_array("ev1", RAID_LEVEL_1, 2, "e1-");
  struct raid_fault rule = { .ops = RAID_FAULT_WRITE, .error = EIO };
  struct raid_member *f = NULL;
  struct seen s;
  int role = -1, r;
  static const char *const fail[] = { "Fail ev1 e1-1 1", "DegradedArray ev1 - -1" };
  static const char *const rebuild[] = {
    "RebuildStarted ev1 - -1", "FailSpare ev1 bad 1", "RebuildFinished ev1 - -1",
  };

  seen_init(&s);
  raid_array_set_event_handler(a, record, &s);
  ck_assert_int_eq(raid_array_fail_member(a, 1), 0);
  expect(&s, "fail", fail, ARRAY_SIZE(fail));
  /* Failing it again changes nothing, and says nothing. */
  ck_assert_int_eq(raid_array_fail_member(a, 1), 0);
  expect(&s, "fail again", NULL, 0);
  ck_assert_int_eq(raid_array_remove_member(a, "e1-1", 0), 0);

  r = raid_member_new_fault(ram("bad", 4 * MiB), &f);
  tassert(r == 0, "raid_member_new_fault: %d %s", r, raid_get_error());
  ck_assert_int_eq(raid_fault_add(f, &rule), 0);
  r = raid_array_add_member(a, f, &role);
  tassert(r == 0 && role == 1, "add: %d role %d %s", r, role, raid_get_error());
  ck_assert_int_eq(raid_array_sync_start(a, RAID_SYNC_RECOVER), 0);
  r = raid_array_sync_wait(a);
  tassert(r < 0, "a rebuild onto a failing member returned %d", r);
  tassert(s.n != ARRAY_SIZE(rebuild) || s.result[2] < 0,
          "RebuildFinished should carry the error, not %d; events:\n%s", s.result[2],
          seen_text(&s));
  expect(&s, "failed rebuild", rebuild, ARRAY_SIZE(rebuild));
  raid_array_free(a);
  pthread_mutex_destroy(&s.lock);
}
END_TEST

START_TEST(test_no_handler)
{
  struct raid_array *a = new_array("ev0", RAID_LEVEL_1, 3, "e0-");
  struct raid_event ev = { .type = RAID_EVENT_REBUILD_PROGRESS, .percent = 60 };
  struct seen s;
  static const char *const fail[] = { "Fail ev0 e0-2 2", "DegradedArray ev0 - -1" };
  static const char *const fail2[] = { "Fail ev0 e0-1 1" };

  seen_init(&s);
  raid_array_set_event_handler(a, record, &s);
  ck_assert_int_eq(raid_array_fail_member(a, 2), 0);
  expect(&s, "fail", fail, ARRAY_SIZE(fail));
  /* Degraded already: a second role lost is a Fail alone. */
  ck_assert_int_eq(raid_array_fail_member(a, 1), 0);
  expect(&s, "second role", fail2, ARRAY_SIZE(fail2));
  raid_array_set_event_handler(a, NULL, NULL);
  ck_assert_int_eq(raid_array_remove_member(a, "e0-1", 0), 0);
  ck_assert_int_eq(raid_array_fail_member(a, 0), 0);
  expect(&s, "no handler", NULL, 0);
  ck_assert_str_eq(raid_event_name(&ev), "Rebuild60");
  ev.type = RAID_EVENT_FAIL_SPARE;
  ck_assert_str_eq(raid_event_name(&ev), "FailSpare");
  ev.type = RAID_EVENT_DEGRADED;
  ck_assert_str_eq(raid_event_name(&ev), "DegradedArray");
  raid_array_free(a);
  pthread_mutex_destroy(&s.lock);
}
END_TEST

int
main(void)
{
  Suite *s;
  TCase *tc;

  test_init("test-events");
  s = suite_create("events");
  tc = test_tcase("events");
  tcase_add_test(tc, test_hot_spare_events);
  tcase_add_test(tc, test_failed_rebuild_events);
  tcase_add_test(tc, test_no_handler);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
