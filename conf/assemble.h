/* The assembly of the arrays found on the devices, md's boot-time
 * assembly with its last-resort timer (mdadm-last-resort@.timer), written
 * once for raidctl's assemble --scan and for raidd at start (boot.c).
 *
 * Each look scans the members (scan.h) and groups them by array: an array
 * that runs already is left alone (or has its returned members taken
 * back), one whose active members are all there is started, one that
 * misses some is waited for, rescanning every second, up to a timeout;
 * then, as the last resort, those still incomplete are started degraded.
 * Configured arrays with no member found are waited for too.  What "runs"
 * and "start" mean, and every message, are the caller's (struct
 * assemble_ops); the driver only decides what happens when. */
#ifndef RAID_CONF_ASSEMBLE_H
#define RAID_CONF_ASSEMBLE_H

#include <stdbool.h>

#include "conf.h"
#include "scan.h"

/* What the driver tells its caller (struct assemble_ops's report). */
enum assemble_event {
  ASSEMBLE_SCAN_FAILED,     /* the devices could not be listed */
  ASSEMBLE_WAITING,         /* GROUP misses members: waited for (said once) */
  ASSEMBLE_WAITING_UNSEEN,  /* COUNT configured arrays with no member yet (once) */
  ASSEMBLE_REFUSED,         /* GROUP must not be assembled (group->refused) */
  ASSEMBLE_NOT_FOUND,       /* LINE: no member found, and it does not run */
  ASSEMBLE_LEFT_OUT,        /* GROUP incomplete at the end: ASSEMBLE_NO_DEGRADED */
  ASSEMBLE_LAST_RESORT,     /* GROUP incomplete at the end: started degraded */
};

struct assemble_report {
  const struct scan_group *group;   /* or NULL */
  const struct conf_array *line;    /* ASSEMBLE_NOT_FOUND's ARRAY line */
  unsigned count;                   /* ASSEMBLE_WAITING_UNSEEN */
  int timeout;                      /* the wait allowed, in seconds */
  int waited;                       /* seconds since the first look */
};

/* ASSEMBLE_ONCE: an array dealt with (started, taken back into, refused)
 * is not looked at again on a rescan; without it each look asks RUNNING
 * again and tries again a start that failed.
 * ASSEMBLE_SCAN_FATAL: a failed scan ends the assembly (assemble_run()
 * returns -1); without it the look goes on with what was found.
 * ASSEMBLE_REPORT_LAST: refused arrays and configured ones with no member
 * found are reported after the last resort, not as soon as known.
 * ASSEMBLE_NO_DEGRADED: the last resort starts nothing (md's --no-degraded). */
#define ASSEMBLE_ONCE         0x1u
#define ASSEMBLE_SCAN_FATAL   0x2u
#define ASSEMBLE_REPORT_LAST  0x4u
#define ASSEMBLE_NO_DEGRADED  0x8u

struct assemble_ops {
  /* After each scan, before the arrays are looked at (raidctl asks raidd
   * what runs).  NULL, or < 0 to end the assembly (assemble_run() returns
   * -1). */
  int (*look)(void *opaque);
  /* Whether the array of GROUP runs already. */
  bool (*running)(const struct scan_group *group, void *opaque);
  /* Whether the configured array LINE runs already (no member found). */
  bool (*line_running)(const struct conf_array *line, void *opaque);
  /* GROUP runs: take back its members that have returned.  May be NULL. */
  void (*take_back)(const struct scan_group *group, void *opaque);
  /* Start GROUP (RUN: even degraded).  true if it runs now. */
  bool (*start)(const struct scan_group *group, bool run, void *opaque);
  /* Say what happens (enum assemble_event). */
  void (*report)(enum assemble_event ev, const struct assemble_report *r, void *opaque);
  /* Whether to stop waiting now (a stop signal).  May be NULL. */
  bool (*stop)(void *opaque);
};

struct assemble {
  const struct conf *conf;        /* may be NULL: every block device, no ARRAY lines */
  const char *only;               /* may be NULL: just the array of that name */
  int timeout;                    /* seconds to wait for missing members */
  unsigned flags;                 /* ASSEMBLE_* */
  scan_note_fn note;              /* what a scan skips (scan_members()); a
                                     remote member that does not answer is
                                     said at the first look only */
  const struct assemble_ops *ops;
  void *opaque;                   /* passed to NOTE and OPS */
};

/* Assemble as AS says.  Returns how many arrays could not be started
 * (refused, failed to start, not found, left out by ASSEMBLE_NO_DEGRADED;
 * each reported) plus how many remote members named by ARRAY lines'
 * devices= did not answer at the last look (SCAN_NOTE_CONFIGURED: their
 * arrays run without them, if at all), or -1 when a look ended the
 * assembly.  *ANY (may be
 * NULL): whether any array was found or is configured and missing. */
int assemble_run(const struct assemble *as, bool *any);

#endif
