/* assemble --scan [NAME] [--timeout S] [--no-degraded] [--readonly] [--force]
 *
 * The members are found and grouped by conf/scan.c (examine --scan
 * prints the same groups): on every block device, or where the
 * configuration file's DEVICE and ARRAY lines say; with ARRAY lines, only
 * the arrays they list, under the names they give (raidd.conf(5)).
 *
 * This is md's boot-time assembly with its last-resort timer
 * (mdadm-last-resort@.timer): an array whose active members are all there
 * is started at once; one that misses some is waited for, rescanning every
 * second, for --timeout seconds (30, md's), and then started degraded if
 * it can run, loudly, unless --no-degraded.  An array raidd runs already
 * takes back its members that were missing when it started and have
 * returned (raidd's "incremental" verb, raid_array_readd_check()): they
 * are rebuilt.  With --force, each array is assembled as assemble --force
 * does (members behind taken back when the others cannot run it). */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "raidctl.h"

#define ARRAY_SIZE(a) (sizeof (a) / sizeof ((a)[0]))

void
scan_note(const char *msg, void *opaque)
{
  if (opt.verbose > 1)
    info("%s", msg);
}

/* The configured arrays that no member was found of, and that raidd does
 * not run: waited for like missing members. */
static unsigned
conf_missing(json_object *st, const char *only, const struct scan_group *g, unsigned ng,
             bool say)
{
  unsigned i, k, n = 0;

  for (i = 0; opt.conf && i < opt.conf->narrays; i++) {
    const struct conf_array *a = &opt.conf->arrays[i];

    if (only && strcmp(only, a->name) != 0)
      continue;
    for (k = 0; k < ng && g[k].conf != a; k++)
      ;
    if (k < ng || status_array(st, "name", a->name))
      continue;
    n++;
    if (say)
      error("%s (%s line %u): no member found", a->name, opt.conf->path, a->line);
  }
  return n;
}

static bool
array_has_member(json_object *a, const char *path)
{
  json_object *ms = jget(a, "members");
  size_t i, n = ms ? json_object_array_length(ms) : 0;

  for (i = 0; i < n; i++) {
    const char *p = json_object_get_string(jget(json_object_array_get_idx(ms, i), "path"));
    if (p && strcmp(p, path) == 0)
      return true;
  }
  return false;
}

int
assemble_scan(const char *only, int timeout, bool no_degraded, bool readonly,
              bool force)
{
  uint8_t handled[64][16];      /* arrays dealt with: not again on a rescan */
  unsigned nhandled = 0;
  struct scan_group g[64];
  struct scanned *s = NULL;
  size_t ns = 0;
  unsigned ng = 0, i, k, left, unseen = 0;
  bool done[ARRAY_SIZE(g)];
  time_t start = 0;
  bool said_waiting = false, any = false;
  int status = EXIT_OK;

  config_report();
  for (;;) {
    json_object *req, *st;

    scan_free(s, ns);
    if (scan_members(opt.conf, scan_note, NULL, &s, &ns) < 0)
      return EXIT_FAIL;
    req = json_object_new_object();
    json_object_object_add(req, "verb", json_object_new_string("status"));
    st = raidd_call(req);
    json_object_put(req);
    if (st == NULL) {
      scan_free(s, ns);
      return EXIT_FAIL;
    }
    /* The wait counts from the first look, however long that took. */
    if (start == 0)
      start = time(NULL);
    ng = scan_group(s, ns, opt.conf, only, g, ARRAY_SIZE(g));
    left = unseen = conf_missing(st, only, g, ng, false);
    for (i = 0; i < ng; i++) {
      char uuid[40];
      json_object *a;

      done[i] = false;

      for (k = 0; k < nhandled && memcmp(handled[k], g[i].uuid, 16) != 0; k++)
        ;
      if (k < nhandled) {
        done[i] = true;
        continue;
      }
      uuid_format(g[i].uuid, uuid);
      if ((a = status_array(st, "uuid", uuid)) != NULL) {
        /* Running: members of it that are back are taken back. */
        for (k = 0; k < g[i].n; k++) {
          json_object *r;

          if (array_has_member(a, g[i].paths[k]))
            continue;
          req = json_object_new_object();
          json_object_object_add(req, "verb", json_object_new_string("incremental"));
          json_object_object_add(req, "member", json_object_new_string(g[i].paths[k]));
          r = raidd_call(req);          /* prints why not */
          json_object_put(req);
          if (r && opt.json)
            scan_report_readd(g[i].paths[k], r);
          else if (r && json_object_get_boolean(jget(r, "already")))
            printf("raidctl: %s: %s is back in it already\n",
                   json_object_get_string(jget(r, "name")), g[i].paths[k]);
          else if (r)
            printf("raidctl: %s: re-added %s in role %d; it is being rebuilt\n",
                   json_object_get_string(jget(r, "name")), g[i].paths[k],
                   json_object_get_int(jget(r, "role")));
          json_object_put(r);
        }
        any = true;
        done[i] = true;
        if (nhandled < ARRAY_SIZE(handled))
          memcpy(handled[nhandled++], g[i].uuid, 16);
        continue;
      }
      if (g[i].refused[0]) {
        error("%s: not assembled: %s", g[i].name, g[i].refused);
        status = EXIT_FAIL;
        any = done[i] = true;
        if (nhandled < ARRAY_SIZE(handled))
          memcpy(handled[nhandled++], g[i].uuid, 16);
        continue;
      }
      if (g[i].present < g[i].expected) {
        left++;
        continue;
      }
      any = true;
      done[i] = true;
      if (nhandled < ARRAY_SIZE(handled))
        memcpy(handled[nhandled++], g[i].uuid, 16);
      if (assemble_in_raidd(g[i].name, g[i].paths, (int)g[i].n, false,
                            readonly || (g[i].conf && g[i].conf->readonly), force,
                          g[i].conf ? g[i].conf->blockdev : NULL) != EXIT_OK)
        status = EXIT_FAIL;
    }
    if (left == 0 || time(NULL) - start >= timeout) {
      if (unseen) {
        conf_missing(st, only, g, ng, true);
        status = EXIT_FAIL;
        any = true;
      }
      json_object_put(st);
      break;
    }
    json_object_put(st);
    if (!said_waiting) {
      for (i = 0; i < ng; i++)
        if (!done[i])
          info("%s: %u of %u members present; waiting up to %d s for the others "
               "(--timeout)", g[i].name, g[i].present, g[i].expected, timeout);
      if (unseen)
        info("%u configured arra%s with no member found yet; waiting up to %d s "
             "(--timeout)", unseen, unseen == 1 ? "y" : "ys", timeout);
      said_waiting = true;
    }
    sleep(1);
  }

  /* The last resort: start what can run without its missing members. */
  for (i = 0; i < ng; i++) {
    if (done[i])
      continue;
    any = true;
    if (no_degraded) {
      warning("%s: only %u of %u members present; not started (--no-degraded)",
              g[i].name, g[i].present, g[i].expected);
      status = EXIT_FAIL;
      continue;
    }
    warning("%s: only %u of %u members present after %d s; starting it DEGRADED "
            "(last resort)", g[i].name, g[i].present, g[i].expected, timeout);
    if (assemble_in_raidd(g[i].name, g[i].paths, (int)g[i].n, true,
                          readonly || (g[i].conf && g[i].conf->readonly), force,
                          g[i].conf ? g[i].conf->blockdev : NULL) != EXIT_OK)
      status = EXIT_FAIL;
  }
  scan_free(s, ns);
  if (!any) {
    if (only)
      error("no members of an array named %s found %s", only, opt.conf ?
            "where the configuration file says to look" : "on the block devices");
    else
      info("no md members found %s", opt.conf ?
           "where the configuration file says to look" : "on the block devices");
    return only ? EXIT_FAIL : EXIT_OK;
  }
  return status;
}
