/* The assembly driver (assemble.h): scan, start what is complete, rescan
 * every second until the timeout, then the last resort.
 *
 * One look is a scan, the caller's LOOK, and a pass over the groups it
 * found: each is done (it runs, was started, was refused and said so) or
 * waited for.  The looks stop when nothing is waited for, the timeout has
 * passed since the first look, or the caller's STOP says so; the groups
 * of the last look that are still waited for then get the last resort. */
#include <config.h>

#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "assemble.h"
#include "array-size.h"

#define MAX_GROUPS 64

struct run {
  const struct assemble *as;
  struct scanned *s;
  size_t ns;
  struct scan_group g[MAX_GROUPS];
  bool done[MAX_GROUPS];
  unsigned ng;
  uint8_t handled[MAX_GROUPS][16];   /* ASSEMBLE_ONCE: not again on a rescan */
  unsigned nhandled;
  time_t start;
  unsigned looks;                    /* scans made */
  unsigned unanswered;               /* ARRAY lines' remote members that did
                                        not answer at the last look */
  int failed;
  bool any;
};

/* The scan's notes for the caller's NOTE: what it skips at every look (a
 * verbose caller hears it each time), a remote member that does not answer
 * at the first look only, not once a second while the others are waited
 * for. */
static void
run_note(enum scan_note_level level, const char *msg, void *opaque)
{
  struct run *r = opaque;

  r->unanswered += level == SCAN_NOTE_CONFIGURED;
  if (r->as->note && (level == SCAN_NOTE_SKIP || r->looks == 0))
    r->as->note(level, msg, r->as->opaque);
}

static void
report(struct run *r, enum assemble_event ev, const struct scan_group *g,
       const struct conf_array *line, unsigned count)
{
  struct assemble_report rep = {
    .group = g, .line = line, .count = count, .timeout = r->as->timeout,
    .waited = (int)(time(NULL) - r->start),
  };

  r->as->ops->report(ev, &rep, r->as->opaque);
}

/* The configured arrays that no member was found of, and that do not run:
 * waited for like missing members.  SAY: report each. */
static unsigned
not_found(struct run *r, bool say)
{
  const struct assemble *as = r->as;
  unsigned i, k, n = 0;

  for (i = 0; as->conf && i < as->conf->narrays; i++) {
    const struct conf_array *a = &as->conf->arrays[i];

    if (as->only && strcmp(as->only, a->name) != 0)
      continue;
    for (k = 0; k < r->ng && r->g[k].conf != a; k++)
      ;
    if (k < r->ng || as->ops->line_running(a, as->opaque))
      continue;
    n++;
    if (say)
      report(r, ASSEMBLE_NOT_FOUND, NULL, a, 0);
  }
  return n;
}

static bool
handled(const struct run *r, const struct scan_group *g)
{
  unsigned k;

  for (k = 0; k < r->nhandled && memcmp(r->handled[k], g->uuid, 16) != 0; k++)
    ;
  return k < r->nhandled;
}

/* Group I is dealt with: done in this look, and with ASSEMBLE_ONCE in the
 * next ones. */
static void
deal(struct run *r, unsigned i)
{
  r->any = r->done[i] = true;
  if ((r->as->flags & ASSEMBLE_ONCE) && r->nhandled < ARRAY_SIZE(r->handled))
    memcpy(r->handled[r->nhandled++], r->g[i].uuid, 16);
}

/* Scan, and look at every group found: start those that are complete.
 * Returns how many arrays are waited for (missing members, or none found
 * yet), *UNSEEN how many of them are configured with no member found, or
 * -1 when the assembly ends. */
static int
look(struct run *r, unsigned *unseen)
{
  const struct assemble *as = r->as;
  const struct assemble_ops *ops = as->ops;
  unsigned i, left;

  scan_free(r->s, r->ns);
  r->s = NULL;
  r->ns = 0;
  r->unanswered = 0;
  if (scan_members(as->conf, run_note, r, &r->s, &r->ns) < 0) {
    report(r, ASSEMBLE_SCAN_FAILED, NULL, NULL, 0);
    if (as->flags & ASSEMBLE_SCAN_FATAL)
      return -1;
  }
  r->looks++;
  if (ops->look && ops->look(as->opaque) < 0)
    return -1;
  /* The wait counts from the first look, however long that took. */
  if (r->start == 0)
    r->start = time(NULL);
  r->ng = scan_group(r->s, r->ns, as->conf, as->only, r->g, MAX_GROUPS);
  left = *unseen = not_found(r, false);
  for (i = 0; i < r->ng; i++) {
    struct scan_group *g = &r->g[i];

    r->done[i] = false;
    if ((as->flags & ASSEMBLE_ONCE) && handled(r, g))
      r->done[i] = true;
    else if (ops->running(g, as->opaque)) {
      if (ops->take_back)
        ops->take_back(g, as->opaque);
      deal(r, i);
    }
    else if (g->refused[0]) {
      /* Said at once, or once at the end: it will not change by waiting. */
      if (!(as->flags & ASSEMBLE_REPORT_LAST)) {
        report(r, ASSEMBLE_REFUSED, g, NULL, 0);
        r->failed++;
        deal(r, i);
      }
    }
    else if (g->present < g->expected)
      left++;
    else {
      deal(r, i);
      if (!ops->start(g, false, as->opaque))
        r->failed++;
    }
  }
  return (int)left;
}

/* Start what can run without its missing members. */
static void
last_resort(struct run *r)
{
  const struct assemble *as = r->as;
  unsigned i;

  for (i = 0; i < r->ng; i++) {
    const struct scan_group *g = &r->g[i];

    if (r->done[i] || as->ops->running(g, as->opaque))
      continue;
    r->any = true;
    if (g->refused[0]) {
      report(r, ASSEMBLE_REFUSED, g, NULL, 0);
      r->failed++;
    }
    else if (as->flags & ASSEMBLE_NO_DEGRADED) {
      report(r, ASSEMBLE_LEFT_OUT, g, NULL, 0);
      r->failed++;
    }
    else {
      report(r, ASSEMBLE_LAST_RESORT, g, NULL, 0);
      if (!as->ops->start(g, true, as->opaque))
        r->failed++;
    }
  }
}

/* The first look that waits says for what. */
static void
say_waiting(struct run *r, unsigned unseen)
{
  unsigned i;

  for (i = 0; i < r->ng; i++)
    if (!r->done[i] && !r->g[i].refused[0])
      report(r, ASSEMBLE_WAITING, &r->g[i], NULL, 0);
  if (unseen)
    report(r, ASSEMBLE_WAITING_UNSEEN, NULL, NULL, unseen);
}

/* The configured arrays with no member found, at the end. */
static void
say_not_found(struct run *r)
{
  unsigned n = not_found(r, true);

  r->failed += (int)n;
  if (n)
    r->any = true;
}

int
assemble_run(const struct assemble *as, bool *any)
{
  struct run r = { .as = as };
  bool said = false;
  unsigned unseen;
  int left;

  for (;;) {
    if ((left = look(&r, &unseen)) < 0) {
      scan_free(r.s, r.ns);
      return -1;
    }
    if (left == 0 || time(NULL) - r.start >= as->timeout ||
        (as->ops->stop && as->ops->stop(as->opaque)))
      break;
    if (!said)
      say_waiting(&r, unseen);
    said = true;
    sleep(1);
  }
  if (!(as->flags & ASSEMBLE_REPORT_LAST))
    say_not_found(&r);
  last_resort(&r);
  if (as->flags & ASSEMBLE_REPORT_LAST)
    say_not_found(&r);
  scan_free(r.s, r.ns);
  if (any)
    *any = r.any;
  return r.failed + (int)r.unanswered;
}
