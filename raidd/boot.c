/* The configured arrays (raidd.conf(5)): assembled when raidd starts, and
 * when their members appear later.
 *
 * At start raidd does what md's boot does with udev, mdadm --incremental
 * and the last-resort timer (mdadm-last-resort@.timer), in one place: it
 * looks for the members where the configuration says (conf/scan.c),
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
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "raidd.h"
#include "control.h"
#include "boot.h"
#include "events.h"
#include "md-names.h"
#include "scan.h"

#define ARRAY_SIZE(a) (sizeof (a) / sizeof ((a)[0]))
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

static void
scan_note(const char *msg, void *opaque)
{
  log_debug("scan: %s", msg);
}

static bool
running(const struct scan_group *g)
{
  struct export *e = export_get(g->name);
  char name[64];

  export_put(e);
  return e != NULL || array_of_uuid(g->uuid, name, sizeof name) == 0;
}

static bool
stop_asked(void)
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
start(const struct scan_group *g, bool run)
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

/* The configured arrays that no member of was found and that do not run. */
static unsigned
not_found(const struct scan_group *g, unsigned ng, bool say)
{
  unsigned i, k, n = 0;

  for (i = 0; i < conf->narrays; i++) {
    struct export *e;

    for (k = 0; k < ng && g[k].conf != &conf->arrays[i]; k++)
      ;
    if (k < ng)
      continue;
    if ((e = export_get(conf->arrays[i].name)) != NULL) {
      export_put(e);
      continue;
    }
    n++;
    if (say)
      log_err("%s (%s line %u): no member found: not assembled", conf->arrays[i].name,
              conf->path, conf->arrays[i].line);
  }
  return n;
}

unsigned
boot_assemble(int timeout)
{
  struct scan_group g[MAX_GROUPS];
  bool done[MAX_GROUPS];
  struct scanned *s = NULL;
  size_t ns = 0;
  unsigned ng = 0, i, left, unseen, failed = 0;
  time_t begin = 0;
  bool said = false;

  if (conf == NULL || conf->narrays == 0)
    return 0;
  /* spares=N: SparesMissing when an array runs with fewer (events.c). */
  for (i = 0; i < conf->narrays; i++)
    if (conf->arrays[i].spares >= 0)
      events_set_expected_spares(conf->arrays[i].name, conf->arrays[i].spares);
  atomic_store(&booting, true);
  for (;;) {
    scan_free(s, ns);
    s = NULL;
    ns = 0;
    if (scan_members(conf, scan_note, NULL, &s, &ns) < 0)
      log_err("cannot list the block devices: looking at the configured files only");
    if (begin == 0)
      begin = time(NULL);         /* the wait counts from the first look */
    ng = scan_group(s, ns, conf, NULL, g, MAX_GROUPS);
    left = unseen = not_found(g, ng, false);
    for (i = 0; i < ng; i++) {
      done[i] = true;
      if (running(&g[i]))
        continue;
      if (g[i].refused[0]) {
        /* Said once, at the end: it will not change by waiting. */
        done[i] = false;
        continue;
      }
      if (g[i].present < g[i].expected) {
        done[i] = false;
        left++;
        continue;
      }
      if (!start(&g[i], false))
        failed++;
    }
    if (left == 0 || time(NULL) - begin >= timeout || stop_asked())
      break;
    if (!said) {
      for (i = 0; i < ng; i++)
        if (!done[i] && !g[i].refused[0])
          log_info("%s: %u of %u members present; waiting up to %d s for the others",
                   g[i].name, g[i].present, g[i].expected, timeout);
      if (unseen)
        log_info("%u configured arra%s with no member found yet; waiting up to %d s",
                 unseen, unseen == 1 ? "y" : "ys", timeout);
      said = true;
    }
    sleep(1);
  }
  /* The last resort. */
  for (i = 0; i < ng; i++) {
    if (done[i] || running(&g[i]))
      continue;
    if (g[i].refused[0]) {
      log_err("%s (%s line %u): not assembled: %s", g[i].name, conf->path,
              g[i].conf->line, g[i].refused);
      failed++;
      continue;
    }
    log_warn("%s: only %u of %u members present after %d s; starting it DEGRADED "
             "(last resort)", g[i].name, g[i].present, g[i].expected,
             (int)(time(NULL) - begin));
    if (!start(&g[i], true))
      failed++;
  }
  failed += not_found(g, ng, true);
  scan_free(s, ns);
  atomic_store(&booting, false);
  return failed;
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
  if (scan_members(conf, scan_note, NULL, &s, &ns) < 0)
    return;
  ng = scan_group(s, ns, conf, NULL, g, MAX_GROUPS);
  for (i = 0; i < ng; i++) {
    if (memcmp(g[i].uuid, sb->set_uuid, 16) != 0 || running(&g[i]))
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
      start(&g[i], false);
    }
  }
  scan_free(s, ns);
}
