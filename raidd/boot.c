/* The configured arrays (raidd.conf(5)): assembled when raidd starts, and
 * when their members appear later.
 *
 * At start raidd does what md's boot does with udev, mdadm --incremental
 * and the last-resort timer (mdadm-last-resort@.timer), in one place: it
 * looks for the members where the configuration says (conf/scan.c) and,
 * through the driver raidctl's assemble --scan uses too (conf/assemble.c),
 * starts every ARRAY whose active members are all there, waits for the
 * others, rescanning every second, up to --assemble-timeout seconds (30,
 * md's), then starts degraded those that can run without what is missing,
 * loudly.  Only then does raidd say it is ready, so that systemd's
 * "started" means the configured arrays are up.  A stop signal ends the
 * wait.
 *
 * An ARRAY that could not start (too few members even for a degraded
 * start, or none found) is not forgotten: when a device appears later
 * (udev-watch.c) that is one of its members, the ARRAY is looked at again
 * and started once every active member is there.  Members of running
 * arrays that come back are incremental.c's business.
 *
 * Every assembly goes through the control socket's own "assemble" verb
 * (control_request()), so the checks and refusals are those of
 * raidctl assemble.  An ARRAY line's spares=N is the count of hot spares
 * below which events.c reports SparesMissing; its blockdev= the device
 * ("ublk", "attach" verbs) the array gets once it runs. */
#include <config.h>

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "raidd.h"
#include "control.h"
#include "boot.h"
#include "events.h"
#include "md-names.h"
#include "scan.h"
#include "assemble.h"

#define MAX_GROUPS 64

static const struct conf *conf;
static atomic_bool booting;

void
boot_set_conf(const struct conf *c)
{
  conf = c;
}

bool
boot_configured(void)
{
  return conf && conf->narrays > 0;
}

/* The boot's scan: a remote member that does not answer is said (an
 * error when an ARRAY line's devices= names it: its array misses it). */
static void
scan_note(enum scan_note_level level, const char *msg, void *opaque)
{
  if (level == SCAN_NOTE_CONFIGURED)
    log_err("scan: %s", msg);
  else if (level == SCAN_NOTE_REMOTE)
    log_warn("scan: %s", msg);
  else
    log_debug("scan: %s", msg);
}

/* A rescan when a device appears: what the boot said already, quietly. */
static void
rescan_note(enum scan_note_level level, const char *msg, void *opaque)
{
  log_debug("scan: %s", msg);
}

static bool
running(const struct scan_group *g, void *opaque)
{
  struct export *e = export_get(g->name);
  char name[64];

  export_put(e);
  return e != NULL || array_of_uuid(g->uuid, name, sizeof name) == 0;
}

static bool
stop_asked(void *opaque)
{
  sigset_t p;

  return sigpending(&p) == 0 && (sigismember(&p, SIGTERM) == 1 || sigismember(&p, SIGINT) == 1);
}

/* The ARRAY line's blockdev=: give array NAME its block device, as
 * raidctl ublk or raidctl attach would.  A device that cannot be made is
 * logged; the array runs all the same (as raidctl create --ublk). */
static void
give_blockdev(const char *name, const struct conf_array *c)
{
  json_object *req = json_object_new_object(), *rep;
  const char *device, *verb = conf_blockdev_verb(c->blockdev, &device);

  json_object_object_add(req, "verb", json_object_new_string(verb));
  json_object_object_add(req, "name", json_object_new_string(name));
  if (device)
    json_object_object_add(req, "device", json_object_new_string(device));
  rep = control_request(req);
  if (json_object_get_boolean(json_object_object_get(rep, "ok")))
    log_info("%s: %s (%s line %u: blockdev=%s)", name,
             json_object_get_string(json_object_object_get(rep, "device")), conf->path,
             c->line, c->blockdev);
  else
    log_err("%s (%s line %u): runs without its block device (blockdev=%s): %s", name,
            conf->path, c->line, c->blockdev,
            json_object_get_string(json_object_object_get(rep, "error")));
  json_object_put(rep);
  json_object_put(req);
}

/* Assemble G (RUN: even degraded).  true if it runs now. */
static bool
start(const struct scan_group *g, bool run, void *opaque)
{
  json_object *req = json_object_new_object(), *members = json_object_new_array(), *rep;
  unsigned i;
  bool ok;

  json_object_object_add(req, "verb", json_object_new_string("assemble"));
  json_object_object_add(req, "name", json_object_new_string(g->name));
  for (i = 0; i < g->n; i++)
    json_object_array_add(members, json_object_new_string(g->paths[i]));
  json_object_object_add(req, "members", members);
  if (run)
    json_object_object_add(req, "run", json_object_new_boolean(1));
  if (g->conf && g->conf->readonly)
    json_object_object_add(req, "readonly", json_object_new_boolean(1));
  rep = control_request(req);
  ok = json_object_get_boolean(json_object_object_get(rep, "ok"));
  if (!ok)
    log_err("%s (%s line %u): not assembled: %s", g->name, conf->path,
            g->conf ? g->conf->line : 0,
            json_object_get_string(json_object_object_get(rep, "error")));
  /* Its block device, unless the assembly took back the one a killed
   * raidd left (ublk-recover.c: the reply names it). */
  else if (g->conf && g->conf->blockdev[0] && !json_object_object_get(rep, "device"))
    give_blockdev(g->name, g->conf);
  json_object_put(rep);
  json_object_put(req);
  return ok;
}

static bool
line_running(const struct conf_array *line, void *opaque)
{
  struct export *e = export_get(line->name);

  export_put(e);
  return e != NULL;
}

static void
report(enum assemble_event ev, const struct assemble_report *r, void *opaque)
{
  const struct scan_group *g = r->group;

  switch (ev) {
  case ASSEMBLE_SCAN_FAILED:
    log_err("cannot list the block devices: looking at the configured files only");
    break;
  case ASSEMBLE_WAITING:
    log_info("%s: %u of %u members present; waiting up to %d s for the others",
             g->name, g->present, g->expected, r->timeout);
    break;
  case ASSEMBLE_WAITING_UNSEEN:
    log_info("%u configured arra%s with no member found yet; waiting up to %d s",
             r->count, r->count == 1 ? "y" : "ys", r->timeout);
    break;
  case ASSEMBLE_REFUSED:
    log_err("%s (%s line %u): not assembled: %s", g->name, conf->path, g->conf->line,
            g->refused);
    break;
  case ASSEMBLE_NOT_FOUND:
    log_err("%s (%s line %u): no member found: not assembled", r->line->name,
            conf->path, r->line->line);
    break;
  case ASSEMBLE_LEFT_OUT:
    break;                      /* not asked for */
  case ASSEMBLE_LAST_RESORT:
    log_warn("%s: only %u of %u members present after %d s; starting it DEGRADED "
             "(last resort)", g->name, g->present, g->expected, r->waited);
    break;
  }
}

static const struct assemble_ops boot_ops = {
  .running = running,
  .line_running = line_running,
  .start = start,
  .report = report,
  .stop = stop_asked,
};

/* Is the array of LINE running, under its name or (found by its UUID)
 * another? */
static bool
line_up(const struct conf_array *line)
{
  char name[64];

  return line_running(line, NULL) ||
         (line->has_uuid && array_of_uuid(line->uuid, name, sizeof name) == 0);
}

/* Refused arrays and those with no member found are logged after the
 * last resort (ASSEMBLE_REPORT_LAST).  Without ASSEMBLE_ONCE each look
 * asks running() again, so a start that failed is tried again on the next
 * rescan (a member busy at first may be free by then).  So the driver's
 * count of failures counts such an array once a try: what did not come up
 * is counted here, line by line, once the driver is done. */
unsigned
boot_assemble(int timeout)
{
  struct assemble as = {
    .conf = conf, .timeout = timeout, .flags = ASSEMBLE_REPORT_LAST,
    .note = scan_note, .ops = &boot_ops,
  };
  unsigned i, down = 0;

  if (conf == NULL || conf->narrays == 0)
    return 0;
  /* spares=N: SparesMissing when an array runs with fewer (events.c). */
  for (i = 0; i < conf->narrays; i++)
    if (conf->arrays[i].spares >= 0)
      events_set_expected_spares(conf->arrays[i].name, conf->arrays[i].spares);
  atomic_store(&booting, true);
  (void)assemble_run(&as, NULL);      /* never -1: no look, no ASSEMBLE_SCAN_FATAL */
  atomic_store(&booting, false);
  for (i = 0; i < conf->narrays; i++)
    if (!line_up(&conf->arrays[i]))
      down++;
  return down;
}

void
boot_device_appeared(const char *path, const struct raid_superblock *sb)
{
  struct scan_group g[MAX_GROUPS];
  struct scanned *s = NULL;
  size_t ns = 0;
  unsigned ng, i;

  if (conf == NULL || atomic_load(&booting) ||
      conf_find_array(conf, sb->set_uuid, sb->set_name, path) == NULL)
    return;
  if (scan_members(conf, rescan_note, NULL, &s, &ns) < 0)
    return;
  ng = scan_group(s, ns, conf, NULL, g, MAX_GROUPS);
  for (i = 0; i < ng; i++) {
    if (memcmp(g[i].uuid, sb->set_uuid, 16) != 0 || running(&g[i], NULL))
      continue;
    if (g[i].refused[0])
      log_err("%s (%s line %u): not assembled: %s", g[i].name, conf->path,
              g[i].conf->line, g[i].refused);
    else if (g[i].present < g[i].expected)
      log_info("%s: member %s appeared: %u of %u members present, waiting for the others",
               g[i].name, path, g[i].present, g[i].expected);
    else {
      log_info("%s: member %s appeared: all %u members present, assembling it",
               g[i].name, path, g[i].expected);
      start(&g[i], false, NULL);
    }
  }
  scan_free(s, ns);
}
