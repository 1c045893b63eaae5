/* The assemble verb, through raidd:
 *   assemble NAME MEMBER... [--run] [--force] [--readonly] [--ublk]
 *   assemble --scan [NAME] [--timeout S] [--no-degraded] [--readonly] [--force]
 *
 * With named members the array is started on them (assemble_in_raidd(),
 * create's start_in_raidd() too).  With --scan the members are found and
 * grouped by conf/scan.c (examine --scan prints the same groups): on every
 * block device, or where the configuration file's DEVICE and ARRAY lines
 * say; with ARRAY lines, only the arrays they list, under the names they
 * give (raidd.conf(5)).
 *
 * This is md's boot-time assembly with its last-resort timer
 * (mdadm-last-resort@.timer), the driver raidd's start uses too
 * (conf/assemble.c): an array whose active members are all there is
 * started at once; one that misses some is waited for, rescanning every
 * second, for --timeout seconds (30, md's), and then started degraded if
 * it can run, loudly, unless --no-degraded.  An array raidd runs already
 * takes back its members that were missing when it started and have
 * returned (raidd's "incremental" verb, raid_array_readd_check()): they
 * are rebuilt.  With --force, each array is assembled as assemble --force
 * does (members behind taken back when the others cannot run it). */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "raidctl.h"
#include "assemble.h"

/* What --force did, as raidd reports it: each member taken back, and the
 * resync that follows. */
static void
print_forced(json_object *rep)
{
  json_object *list = jget(rep, "forced");
  const char *name = jstr(rep, "name");
  size_t i, n = list ? json_object_array_length(list) : 0;

  for (i = 0; i < n; i++) {
    json_object *f = json_object_array_get_idx(list, i);

    printf("raidctl: %s: forced %s back in as role %" PRId64 ": events %" PRId64
           " raised to %" PRId64 " (%s)\n", name, jstr(f, "member"), jint(f, "role"),
           jint(f, "events_from"), jint(f, "events_to"), jbool(f, "was_faulty")
           ? "it was marked faulty" : "it had missed an update");
  }
  if (n > 0 && jint(rep, "degraded"))
    printf("raidctl: %s: running degraded: %" PRId64 " role(s) without a member\n",
           name, jint(rep, "degraded"));
  if (jbool(rep, "needs_resync") && jint(rep, "level") == 5 && jint(rep, "degraded"))
    printf("raidctl: %s: started dirty and degraded: parity is taken as it is (rows "
           "being written when it stopped may read back wrong); those rows stay "
           "marked and are resynced once a member is added and rebuilt\n", name);
  else if (n > 0 && jbool(rep, "needs_resync"))
    printf("raidctl: %s: marked for a full resync (writes in flight when the members "
           "failed may be on some members only); it runs in raidd in the background\n",
           name);
}

/* With --json, assemble --scan reports {"ok": true, "arrays": [REPLY...]}:
 * raidd's reply for each array it started. */
static json_object *scan_started;
/* ... and {"readded": [REPLY...]}: raidd's reply for each member put back
 * into an array already running, with "member" added. */
static json_object *scan_readded;

static void
scan_report_readd(const char *member, json_object *rep)
{
  if (scan_readded == NULL)
    return;
  json_object_object_add(rep, "member", json_object_new_string(member));
  json_object_array_add(scan_readded, json_object_get(rep));
}

/* Start the array on MEMBERS in raidd; NAME may be NULL (from the
 * superblocks).  Used by assemble and by create. */
int
start_in_raidd(const char *name, char **members, int n, bool run, bool readonly)
{
  return assemble_in_raidd(name, members, n, run, readonly, false, NULL);
}

/* As start_in_raidd(), with FORCE: mdadm's --assemble --force. */
int
assemble_in_raidd(const char *name, char *const *members, int n, bool run, bool readonly,
                  bool force, const char *blockdev)
{
  json_object *req = json_object_new_object(), *ms = json_object_new_array(), *rep;
  char path[PATH_MAX];
  int i, status = EXIT_OK;

  json_object_object_add(req, "verb", json_object_new_string("assemble"));
  if (name)
    json_object_object_add(req, "name", json_object_new_string(name));
  for (i = 0; i < n; i++) {
    /* raidd runs elsewhere (cwd "/"): send absolute paths (a remote
     * member's URI as given). */
    if (member_abs(members[i], true, path, sizeof path) < 0) {
      json_object_put(req);
      json_object_put(ms);
      return EXIT_FAIL;
    }
    json_object_array_add(ms, json_object_new_string(path));
  }
  json_object_object_add(req, "members", ms);
  json_object_object_add(req, "run", json_object_new_boolean(run));
  json_object_object_add(req, "readonly", json_object_new_boolean(readonly));
  if (force)
    json_object_object_add(req, "force", json_object_new_boolean(true));
  rep = raidd_call(req);
  json_object_put(req);
  if (rep == NULL)
    return EXIT_FAIL;
  /* --ublk or blockdev=: the block device too; the array runs whether it
   * comes or not.  raidd may have taken back the device a killed raidd
   * left ("device"). */
  if (opt.ublk)
    blockdev = "ublk";
  if (blockdev && blockdev[0] && !jget(rep, "device")) {
    json_object *u = json_object_new_object(), *urep;
    const char *device, *verb = conf_blockdev_verb(blockdev, &device);

    json_object_object_add(u, "verb", json_object_new_string(verb));
    json_object_object_add(u, "name", json_object_new_string(jstr(rep, "name")));
    if (device)
      json_object_object_add(u, "device", json_object_new_string(device));
    urep = raidd_call(u);       /* says why it failed */
    json_object_put(u);
    if (urep)
      json_object_object_add(rep, "device", json_object_get(jget(urep, "device")));
    else
      status = EXIT_FAIL;
    json_object_put(urep);
  }
  if (opt.json && scan_started)
    json_object_array_add(scan_started, json_object_get(rep));
  else if (opt.json)
    json_merge(json_object_get(rep));   /* after create's own report */
  else if (jget(rep, "uri"))
    printf("raidctl: %s started in raidd: %s\n", jstr(rep, "name"), jstr(rep, "uri"));
  else
    printf("raidctl: %s started in raidd\n", jstr(rep, "name"));
  if (!opt.json)
    print_forced(rep);
  if (!opt.json && jget(rep, "device"))
    printf("raidctl: %s is %s%s\n", jstr(rep, "name"), jstr(rep, "device"),
           jget(rep, "recovered") ? " (recovered)" : "");
  json_object_put(rep);
  return status;
}

void
scan_note(enum scan_note_level level, const char *msg, void *opaque)
{
  if (level == SCAN_NOTE_CONFIGURED)
    error("%s", msg);
  else if (level == SCAN_NOTE_REMOTE)
    warning("%s", msg);
  else if (opt.verbose > 1)
    info("%s", msg);
}

/* assemble --scan's side of conf/assemble.c: what raidd runs (its status,
 * asked at each look), and the messages. */
struct scan_run {
  json_object *st;              /* raidd's status at the last look */
  bool readonly, force;
};

static int
scan_look(void *opaque)
{
  struct scan_run *sr = opaque;
  json_object *req = json_object_new_object();

  json_object_object_add(req, "verb", json_object_new_string("status"));
  json_object_put(sr->st);
  sr->st = raidd_call(req);     /* says why not */
  json_object_put(req);
  return sr->st ? 0 : -1;
}

static json_object *
scan_status_of(const struct scan_group *g, const struct scan_run *sr)
{
  char uuid[40];

  uuid_format(g->uuid, uuid);
  return status_array(sr->st, "uuid", uuid);
}

static bool
scan_running(const struct scan_group *g, void *opaque)
{
  return scan_status_of(g, opaque) != NULL;
}

static bool
scan_line_running(const struct conf_array *line, void *opaque)
{
  const struct scan_run *sr = opaque;

  return status_array(sr->st, "name", line->name) != NULL;
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

/* G runs: its members that are back are taken back. */
static void
scan_take_back(const struct scan_group *g, void *opaque)
{
  json_object *a = scan_status_of(g, opaque);
  unsigned k;

  for (k = 0; k < g->n; k++) {
    json_object *req, *r;

    if (array_has_member(a, g->paths[k]))
      continue;
    req = json_object_new_object();
    json_object_object_add(req, "verb", json_object_new_string("incremental"));
    json_object_object_add(req, "member", json_object_new_string(g->paths[k]));
    r = raidd_call(req);          /* prints why not */
    json_object_put(req);
    if (r && opt.json)
      scan_report_readd(g->paths[k], r);
    else if (r && json_object_get_boolean(jget(r, "already")))
      printf("raidctl: %s: %s is back in it already\n",
             json_object_get_string(jget(r, "name")), g->paths[k]);
    else if (r)
      printf("raidctl: %s: re-added %s in role %d; it is being rebuilt\n",
             json_object_get_string(jget(r, "name")), g->paths[k],
             json_object_get_int(jget(r, "role")));
    json_object_put(r);
  }
}

static bool
scan_start(const struct scan_group *g, bool run, void *opaque)
{
  const struct scan_run *sr = opaque;

  return assemble_in_raidd(g->name, g->paths, (int)g->n, run,
                           sr->readonly || (g->conf && g->conf->readonly), sr->force,
                           g->conf ? g->conf->blockdev : NULL) == EXIT_OK;
}

static void
scan_report(enum assemble_event ev, const struct assemble_report *r, void *opaque)
{
  const struct scan_group *g = r->group;

  switch (ev) {
  case ASSEMBLE_SCAN_FAILED:
    break;                      /* the end (ASSEMBLE_SCAN_FATAL); scan_note said why */
  case ASSEMBLE_WAITING:
    info("%s: %u of %u members present; waiting up to %d s for the others "
         "(--timeout)", g->name, g->present, g->expected, r->timeout);
    break;
  case ASSEMBLE_WAITING_UNSEEN:
    info("%u configured arra%s with no member found yet; waiting up to %d s "
         "(--timeout)", r->count, r->count == 1 ? "y" : "ys", r->timeout);
    break;
  case ASSEMBLE_REFUSED:
    error("%s: not assembled: %s", g->name, g->refused);
    break;
  case ASSEMBLE_NOT_FOUND:
    error("%s (%s line %u): no member found", r->line->name, opt.conf->path,
          r->line->line);
    break;
  case ASSEMBLE_LEFT_OUT:
    warning("%s: only %u of %u members present; not started (--no-degraded)",
            g->name, g->present, g->expected);
    break;
  case ASSEMBLE_LAST_RESORT:
    warning("%s: only %u of %u members present after %d s; starting it DEGRADED "
            "(last resort)", g->name, g->present, g->expected, r->timeout);
    break;
  }
}

static const struct assemble_ops scan_ops = {
  .look = scan_look,
  .running = scan_running,
  .line_running = scan_line_running,
  .take_back = scan_take_back,
  .start = scan_start,
  .report = scan_report,
};

/* assemble --scan.  ONLY: just the array of that name.  Each array is
 * dealt with once (ASSEMBLE_ONCE): a refusal is said at once, a start
 * that failed is not tried again; a scan that fails ends it. */
static int
assemble_scan(const char *only, int timeout, bool no_degraded, bool readonly,
              bool force)
{
  struct scan_run sr = { NULL, readonly, force };
  struct assemble as = {
    .conf = opt.conf, .only = only, .timeout = timeout,
    .flags = ASSEMBLE_ONCE | ASSEMBLE_SCAN_FATAL | (no_degraded ? ASSEMBLE_NO_DEGRADED : 0),
    .note = scan_note, .ops = &scan_ops, .opaque = &sr,
  };
  bool any = false;
  int failed;

  config_report();
  failed = assemble_run(&as, &any);
  json_object_put(sr.st);
  if (failed < 0)
    return EXIT_FAIL;
  if (!any) {
    if (only)
      error("no members of an array named %s found %s", only, opt.conf ?
            "where the configuration file says to look" : "on the block devices");
    else
      info("no md members found %s", opt.conf ?
           "where the configuration file says to look" : "on the block devices");
    return only ? EXIT_FAIL : EXIT_OK;
  }
  return failed ? EXIT_FAIL : EXIT_OK;
}

int
cmd_assemble(int argc, char **argv)
{
  static const struct option opts[] = {
    { "run", no_argument, NULL, 'R' },
    { "readonly", no_argument, NULL, 'r' },
    { "scan", no_argument, NULL, 's' },
    { "timeout", required_argument, NULL, 't' },
    { "no-degraded", no_argument, NULL, 'D' },
    { "force", no_argument, NULL, 'f' },
    { "ublk", no_argument, NULL, 'U' },
    { "json", no_argument, NULL, 'J' },
    { NULL, 0, NULL, 0 },
  };
  bool run = false, readonly = false, scan = false, no_degraded = false, force = false;
  int timeout = 30;             /* md's last-resort timer */
  const char *name;
  char *end;
  long t;
  int c;

  while ((c = verb_getopt(argc, argv, "", opts)) != -1) {
    switch (c) {
    case 'R': run = true; break;
    case 'r': readonly = true; break;
    case 's': scan = true; break;
    case 't':
      t = strtol(optarg, &end, 10);
      if (*optarg == '\0' || *end || t < 0 || t > 86400)
        usage_error("assemble", "--timeout '%s' is not a number of seconds (0 to 86400)",
                    optarg);
      timeout = (int)t;
      break;
    case 'D': no_degraded = true; break;
    case 'f': force = true; break;
    case 'U': opt.ublk = true; break;
    case 'J': opt.json = true; break;
    }
  }
  if (scan) {
    if (run)
      usage_error("assemble", "--scan decides when to start degraded (--timeout, "
                  "--no-degraded); --run is for named members");
    if (argc - optind > 1)
      usage_error("assemble", "--scan takes at most one array NAME, not members");
    if (opt.json) {
      json_object *report = json_object_new_object();

      scan_started = json_object_new_array();
      scan_readded = json_object_new_array();
      json_object_object_add(report, "ok", json_object_new_boolean(1));
      json_object_object_add(report, "arrays", scan_started);
      json_object_object_add(report, "readded", scan_readded);
      json_result(report);
    }
    return assemble_scan(optind < argc ? argv[optind] : NULL, timeout, no_degraded,
                         readonly, force);
  }
  if (optind >= argc)
    usage_error("assemble", "missing the array NAME");
  name = argv[optind++];
  if (optind >= argc)
    usage_error("assemble", "no members given");
  return assemble_in_raidd(name, argv + optind, argc - optind, run, readonly, force, NULL);
}

