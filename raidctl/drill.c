/* The verbs of a drive-failure drill, through raidd:
 *   fail NAME MEMBER [--force]  mark a member faulty (mdadm --fail); the last
 *                               copy of the data only with --force
 *   remove NAME MEMBER [--force]
 *   add NAME MEMBER [--force]   rebuild into a degraded role, or hot spare
 *   replace NAME OLD NEW        rebuild onto NEW while OLD serves
 *   scrub NAME [--repair | --stop]
 *   scrub --all [--repair | --stop]   every running array (scrub-all.c)
 *   wait NAME                   until no rebuild, resync or scrub runs
 *   set NAME rebuild-min=RATE rebuild-max=RATE safe-mode-delay=MS
 * Members are named by path, or by URI for a remote member; raidd knows
 * them by their absolute path, or by their URI as given. */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "raidctl.h"
#include "member-id.h"
#include "member-stat.h"
#include "sizes.h"

/* PATH made absolute without requiring it to exist (a member that is
 * gone can still be named for fail and remove); a URI as given, as raidd
 * names a remote member. */
static const char *
abs_path(const char *path, char *buf)
{
  if (member_spec_is_uri(path))
    return path;
  return member_abs(path, false, buf, PATH_MAX) == 0 ? buf : path;
}

/* raidd_verb(), then print MSG (without --json).  Exit status. */
static int
call(const char *verb, const char *name, json_object *extra, const char *msg)
{
  json_object *rep;
  int r = raidd_verb(verb, name, extra, &rep);

  if (rep && msg)
    printf("raidctl: %s\n", msg);
  json_object_put(rep);
  return r;
}

/* Options common to the simple verbs: --json, and --force for those that
 * pass FORCE.  NARGS operands.  Returns the index of the first. */
/* add --write-mostly (parse() sets it). */
static bool add_write_mostly;

static int
parse(int argc, char **argv, int nargs, bool *force)
{
  static const struct option opts[] = {
    { "force", no_argument, NULL, 'f' },
    { "write-mostly", no_argument, NULL, 'W' },
    { "json", no_argument, NULL, 'J' },
    { NULL, 0, NULL, 0 },
  };
  const char *verb = argv[0];
  int c;

  while ((c = verb_getopt(argc, argv, "", opts)) != -1) {
    switch (c) {
    case 'f':
      if (force == NULL)
        usage_error(verb, "unknown option '--force'");
      *force = true;
      break;
    case 'W':
      if (strcmp(verb, "add") != 0)
        usage_error(verb, "unknown option '--write-mostly'");
      add_write_mostly = true;
      break;
    case 'J': opt.json = true; break;
    }
  }
  if (argc - optind != nargs)
    usage_error(verb, "%s operand%s expected, %d given", nargs == 1 ? "one" :
                nargs == 2 ? "two" : "three", nargs == 1 ? "" : "s", argc - optind);
  return optind;
}

int
cmd_fail(int argc, char **argv)
{
  char path[PATH_MAX];
  bool force = false;
  int i = parse(argc, argv, 2, &force);
  json_object *x = json_object_new_object(), *rep;
  const char *p = abs_path(argv[i + 1], path);
  int r;

  json_object_object_add(x, "member", json_object_new_string(p));
  if (force)
    json_object_object_add(x, "force", json_object_new_boolean(true));
  r = raidd_verb("fail", argv[i], x, &rep);
  if (rep == NULL)
    return r;
  if (json_object_get_boolean(jget(rep, "failed")))
    printf("raidctl: marked %s faulty in %s; %s has FAILED: it refuses I/O until "
           "stopped and assembled again with --force\n", p, argv[i], argv[i]);
  else
    printf("raidctl: marked %s faulty in %s\n", p, argv[i]);
  json_object_put(rep);
  return EXIT_OK;
}

int
cmd_remove(int argc, char **argv)
{
  char path[PATH_MAX], msg[PATH_MAX + 64];
  bool force = false;
  int i = parse(argc, argv, 2, &force);
  json_object *x = json_object_new_object();
  const char *p = abs_path(argv[i + 1], path);

  json_object_object_add(x, "member", json_object_new_string(p));
  json_object_object_add(x, "force", json_object_new_boolean(force));
  snprintf(msg, sizeof msg, "removed %s from %s", p, argv[i]);
  return call("remove", argv[i], x, msg);
}

/* The array NAME in raidd's STATUS, if a new member ARG can be rebuilt
 * into it: running, writable, not failed, redundant.  NULL (error
 * printed, names VERB) if not. */
static json_object *
array_to_rebuild(const char *verb, const char *name, const char *arg,
                 json_object *status)
{
  json_object *a;

  if ((a = status_array(status, "name", name)) == NULL) {
    error("%s: array %s is not running", verb, name);
    return NULL;
  }
  if (json_object_get_boolean(jget(a, "readonly"))) {
    error("%s: array %s is read-only: it cannot rebuild onto %s", verb, name, arg);
    return NULL;
  }
  if (json_object_get_boolean(jget(a, "failed"))) {
    error("%s: array %s has failed: a new member cannot bring its data back", verb, name);
    return NULL;
  }
  if (json_object_get_int(jget(a, "level")) == RAID_LEVEL_0) {
    error("%s: array %s is RAID 0: it has no redundancy to rebuild %s from", verb, name,
          arg);
    return NULL;
  }
  return a;
}

/* Whether OLD (by name, or the same file or device) is a member of the
 * array A (raidd's status) in a role and in sync. */
static bool
old_in_sync(json_object *a, const char *old)
{
  json_object *ms = jget(a, "members");
  size_t i, n = ms ? json_object_array_length(ms) : 0;
  char buf[PATH_MAX];
  const char *oldp = abs_path(old, buf);
  struct stat ost, st;
  bool found = false, have = !member_spec_is_uri(old) && stat(old, &ost) == 0;

  for (i = 0; i < n && !found; i++) {
    json_object *m = json_object_array_get_idx(ms, i);
    const char *p = json_object_get_string(jget(m, "path"));

    found = p && json_object_get_int(jget(m, "role")) >= 0 &&
      strcmp(json_object_get_string(jget(m, "state")), "in_sync") == 0 &&
      (strcmp(p, oldp) == 0 || (have && stat(p, &st) == 0 && same_member(&st, &ost)));
  }
  return found;
}

/* The bytes a member of the array A (raidd's status) needs, from the
 * superblock of a member in sync, read into *CUR; 0 when none reads. */
static uint64_t
member_room_needed(json_object *a, struct raid_superblock *cur)
{
  json_object *ms = jget(a, "members");
  size_t i, n = ms ? json_object_array_length(ms) : 0;
  const char *meta = json_object_get_string(jget(a, "metadata"));
  uint64_t need = 0;

  for (i = 0; i < n && need == 0; i++) {
    json_object *m = json_object_array_get_idx(ms, i);
    const char *p = json_object_get_string(jget(m, "path"));

    if (p && strcmp(json_object_get_string(jget(m, "state")), "in_sync") == 0 &&
        raid_superblock_read_path(p, RAID_MEMBER_BUFFERED, cur) == 0) {
      need = cur->data_offset * 512 + (uint64_t)json_object_get_int64(jget(a, "member_size"));
      if (meta && strcmp(meta, "1.0") == 0)
        need = (need + 4095) / 4096 * 4096 + 8192;
    }
  }
  return need;
}

/* The checks before a new member is written (add, replace): raidd's view
 * of the array NAME first (array_to_rebuild(); for replace, OLD in a role
 * and in sync; the new member large enough), then the member's own facts
 * (facts.c: not named twice, not in a running array by any name, not in
 * use, no signature unless FORCE), and only then are its old signatures
 * wiped.  The member's claim is released before raidd is asked to open
 * it: raidd claims it in turn and checks again.  ABS gets the member's
 * absolute name, *READD whether it is one of this array's own members
 * coming back (add only).  0 or -1 (error printed). */
static int
prepare_new_member(const char *verb, const char *name, const char *old, char *arg,
                   bool force, char *abs, bool *readd)
{
  static struct member_facts f;
  static struct raid_superblock cur;     /* a member in sync's */
  json_object *status, *a;
  uint64_t need;
  bool failed;
  int r = -1;

  status = raidd_status(&failed);
  if (status == NULL) {
    if (!failed)
      error("%s: cannot reach raidd at %s: is it running?", verb, opt.control);
    return -1;
  }
  if ((a = array_to_rebuild(verb, name, arg, status)) == NULL)
    goto out;
  if (old && !old_in_sync(a, old)) {
    error("%s: array %s has no member %s in sync in a role", verb, name, old);
    goto out;
  }
  need = member_room_needed(a, &cur);

  if (facts_gather(verb, &arg, 1, status, &f) < 0)
    goto out;
  /* A member this array had (its superblock carries the array's UUID:
   * failed, removed, or missing at assembly; facts_gather() refused it if
   * it is still in the array) comes back without --force and keeps its
   * superblock, as mdadm --add re-adds it: raidd reads what it held (its
   * events, against the bitmap) before writing its new role. */
  if (!old && f.has_sb && need && memcmp(f.sb.set_uuid, cur.set_uuid, 16) == 0) {
    unsigned dev;

    *readd = !raid_superblock_split(&f.sb, &cur, &dev);
    if (!*readd && !force) {
      error("%s: member %s of %s was used on its own since it left (a split mirror: "
            "events %" PRIu64 ", the array's %" PRIu64 "); adding it discards what was "
            "written to it then: use --force to do that", verb, arg, name, f.sb.events,
            cur.events);
      goto out;
    }
  }
  if (!*readd && facts_check_signatures(verb, &f, 1, force) < 0)
    goto out;
  if (need && raid_member_size(f.m) < need) {
    error("%s: member %s is too small: %" PRIu64 " bytes, array %s needs %" PRIu64,
          verb, arg, raid_member_size(f.m), name, need);
    goto out;
  }
  /* Decided: wipe what it held (not a returning member's superblock). */
  if (!*readd && facts_wipe(&f) < 0)
    goto out;
  snprintf(abs, PATH_MAX, "%s", f.abs);
  r = 0;

 out:
  facts_release(&f, 1);
  json_object_put(status);
  return r;
}

int
cmd_add(int argc, char **argv)
{
  char path[PATH_MAX], msg[PATH_MAX + 64];
  bool force = false;
  int i = parse(argc, argv, 2, &force);
  json_object *x, *rep;
  const char *p;
  bool readd = false;
  int r;

  if (prepare_new_member("add", argv[i], NULL, argv[i + 1], force, path, &readd) < 0)
    return EXIT_FAIL;
  p = path;
  x = json_object_new_object();
  json_object_object_add(x, "member", json_object_new_string(p));
  if (add_write_mostly)
    json_object_object_add(x, "write_mostly", json_object_new_boolean(true));
  r = raidd_verb("add", argv[i], x, &rep);
  if (rep == NULL)
    return r;
  if (json_object_get_boolean(jget(rep, "spare")))
    snprintf(msg, sizeof msg, "%s %s to %s as a hot spare", readd ? "re-added" : "added",
             p, argv[i]);
  else
    snprintf(msg, sizeof msg, "%s %s to %s in role %d: rebuilding", readd ? "re-added" : "added",
             p, argv[i], json_object_get_int(jget(rep, "role")));
  printf("raidctl: %s\n", msg);
  json_object_put(rep);
  return EXIT_OK;
}

int
cmd_replace(int argc, char **argv)
{
  char buf[PATH_MAX], newp[PATH_MAX], msg[3 * PATH_MAX + 128];
  bool force = false;
  int i = parse(argc, argv, 3, &force);
  const char *oldp = abs_path(argv[i + 1], buf);
  json_object *x = json_object_new_object();
  bool readd = false;

  if (prepare_new_member("replace", argv[i], argv[i + 1], argv[i + 2], force, newp,
                         &readd) < 0) {
    json_object_put(x);
    return EXIT_FAIL;
  }
  json_object_object_add(x, "old", json_object_new_string(oldp));
  json_object_object_add(x, "new", json_object_new_string(newp));
  snprintf(msg, sizeof msg, "rebuilding %s onto %s in %s; %s keeps serving until then",
           oldp, newp, argv[i], oldp);
  return call("replace", argv[i], x, msg);
}

int
cmd_scrub(int argc, char **argv)
{
  static const struct option opts[] = {
    { "repair", no_argument, NULL, 'r' },
    { "stop", no_argument, NULL, 's' },
    { "wait", no_argument, NULL, 'w' },
    { "all", no_argument, NULL, 'a' },
    { "json", no_argument, NULL, 'J' },
    { NULL, 0, NULL, 0 },
  };
  const char *action = "check";
  bool wait = false, all = false;
  json_object *x;
  char msg[256];
  int c, r;

  while ((c = verb_getopt(argc, argv, "", opts)) != -1) {
    switch (c) {
    case 'r': action = "repair"; break;
    case 's': action = "idle"; break;
    case 'w': wait = true; break;
    case 'a': all = true; break;
    case 'J': opt.json = true; break;
    }
  }
  if (all && argc - optind != 0)
    usage_error("scrub", "--all scrubs every running array: give no NAME with it");
  if (all)
    return scrub_all(action, wait);
  if (argc - optind != 1)
    usage_error("scrub", "give exactly one array NAME");
  x = json_object_new_object();
  json_object_object_add(x, "action", json_object_new_string(action));
  if (strcmp(action, "idle") == 0)
    snprintf(msg, sizeof msg, "stopped what was running on %s", argv[optind]);
  else
    snprintf(msg, sizeof msg, "%s of %s started", action, argv[optind]);
  /* With --wait, what wait prints (the sync object with --json) is the
   * one report: raidd's reply to the start is not printed. */
  r = call("sync", argv[optind], x, wait ? NULL : msg);
  if (r == EXIT_OK && wait) {
    char *wargv[] = { "wait", argv[optind], NULL };
    return cmd_wait(2, wargv);
  }
  return r;
}

static json_object *
array_status(const char *name)
{
  json_object *req = json_object_new_object(), *rep, *arrays, *a;

  json_object_object_add(req, "verb", json_object_new_string("status"));
  json_object_object_add(req, "name", json_object_new_string(name));
  rep = raidd_call(req);
  json_object_put(req);
  if (rep == NULL)
    return NULL;
  arrays = jget(rep, "arrays");
  a = json_object_get(json_object_array_get_idx(arrays, 0));
  json_object_put(rep);
  return a;
}

int
cmd_wait(int argc, char **argv)
{
  int i = parse(argc, argv, 1, NULL);
  /* A look every 20 ms: the end of a rebuild is seen within 20 ms (bench/
   * times rebuilds of a second with it), for a status request (tens of
   * microseconds of raidd's time) each. */
  struct timespec ts = { 0, 20000000 };
  json_object *a, *s;
  int status;

  for (;;) {
    const char *act;

    if ((a = array_status(argv[i])) == NULL)
      return EXIT_FAIL;
    s = jget(a, "sync");
    act = json_object_get_string(jget(s, "action"));
    if (strcmp(act, "idle") == 0 && !json_object_get_boolean(jget(s, "due")))
      break;
    json_object_put(a);
    nanosleep(&ts, NULL);
  }
  status = json_object_get_int(jget(s, "last_result")) < 0 ? EXIT_FAIL : EXIT_OK;
  if (jget(a, "reshape")) {
    /* Idle with a reshape under way: it is frozen (raidctl grow --stop),
     * and waiting would be for ever. */
    json_object *r = jget(a, "reshape");

    status = EXIT_FAIL;
    if (opt.json)
      json_result(json_object_get(s));
    else
      printf("raidctl: %s: the reshape is stopped at %.1f%%%s: raidctl grow %s "
             "--continue\n", argv[i], reshape_percent(r), jbool(r, "frozen") ? " (frozen)" :
             " by an error (see raidd's log)", argv[i]);
  }
  else if (opt.json)
    json_result(json_object_get(s));
  else {
    const char *last = json_object_get_string(jget(s, "last_action"));

    if (strcmp(last, "check") == 0 || strcmp(last, "repair") == 0)
      printf("raidctl: %s: %s %s: mismatch_cnt %" PRId64 "\n", argv[i], last,
             status == EXIT_OK ? "done" : "stopped",
             json_object_get_int64(jget(s, "mismatches")));
    else if (strcmp(last, "idle") != 0)
      printf("raidctl: %s: %s %s\n", argv[i], last,
             status == EXIT_OK ? "done" : "stopped early (see raidd's log)");
    else
      printf("raidctl: %s: nothing running\n", argv[i]);
  }
  json_object_put(a);
  return status;
}

/* "100M", "50MiB", "1000K", "0": bytes per second; K/M/G are KiB/MiB/GiB,
 * as md's speed limits are KiB/s. */
static int
parse_rate(const char *s, uint64_t *out)
{
  uint64_t v;

  if (size_parse(s, &v) < 0)
    return -1;
  *out = v;
  return 0;
}

int
cmd_set(int argc, char **argv)
{
  static const struct option opts[] = {
    { "json", no_argument, NULL, 'J' },
    { NULL, 0, NULL, 0 },
  };
  json_object *x;
  char msg[256] = "";
  int i, first, c;

  while ((c = verb_getopt(argc, argv, "", opts)) != -1)
    if (c == 'J')
      opt.json = true;
  first = optind;
  if (argc - first < 2)
    usage_error("set", "give the array NAME and at least one setting");
  x = json_object_new_object();
  for (i = first + 1; i < argc; i++) {
    const char *eq = strchr(argv[i], '=');
    uint64_t v = 0;

    /* mdadm --grow --bitmap=internal|none [--bitmap-chunk=SIZE] */
    if (strncmp(argv[i], "bitmap=", 7) == 0) {
      if (strcmp(eq + 1, "internal") != 0 && strcmp(eq + 1, "none") != 0) {
        json_object_put(x);
        usage_error("set", "'%s': bitmap is internal or none", argv[i]);
      }
      json_object_object_add(x, "bitmap", json_object_new_string(eq + 1));
      snprintf(msg, sizeof msg, "%s: write-intent bitmap %s", argv[first],
               strcmp(eq + 1, "none") == 0 ? "removed" : "added");
      continue;
    }
    if (strncmp(argv[i], "bitmap-chunk=", 13) == 0) {
      if (size_parse_kib(eq + 1, &v) < 0 || v == 0) {
        json_object_put(x);
        usage_error("set", "'%s': bad bitmap chunk size (e.g. 64M)", argv[i]);
      }
      json_object_object_add(x, "bitmap_chunk", json_object_new_int64((int64_t)v));
      continue;
    }
    /* md's safe_mode_delay, in milliseconds. */
    if (strncmp(argv[i], "safe-mode-delay=", 16) == 0) {
      if (eq[1] == '\0' || strspn(eq + 1, "0123456789") != strlen(eq + 1) ||
          strlen(eq + 1) > 9) {
        json_object_put(x);
        usage_error("set", "'%s': safe-mode-delay is in milliseconds (0: never)", argv[i]);
      }
      json_object_object_add(x, "safe_mode_delay",
                             json_object_new_int64(strtoll(eq + 1, NULL, 10)));
      snprintf(msg, sizeof msg, "%s: safe mode delay set", argv[first]);
      continue;
    }
    /* mdadm.conf's spares=N: raidd reports SparesMissing below it. */
    if (strncmp(argv[i], "spares-expected=", 16) == 0) {
      if (eq[1] == '\0' || strspn(eq + 1, "0123456789") != strlen(eq + 1) ||
          strtol(eq + 1, NULL, 10) > RAID_MAX_MEMBERS) {
        json_object_put(x);
        usage_error("set", "'%s': spares-expected is a number of spares, 0 to %d", argv[i],
                    RAID_MAX_MEMBERS);
      }
      json_object_object_add(x, "spares_expected",
                             json_object_new_int64(strtol(eq + 1, NULL, 10)));
      snprintf(msg, sizeof msg, "%s: expected spares set", argv[first]);
      continue;
    }
    if (eq == NULL || parse_rate(eq + 1, &v) < 0) {
      json_object_put(x);
      usage_error("set", "'%s': expected rebuild-min=RATE or rebuild-max=RATE "
                  "(bytes per second, K/M/G suffixes)", argv[i]);
    }
    if (strncmp(argv[i], "rebuild-min=", 12) == 0)
      json_object_object_add(x, "rebuild_min", json_object_new_int64(v));
    else if (strncmp(argv[i], "rebuild-max=", 12) == 0)
      json_object_object_add(x, "rebuild_max", json_object_new_int64(v));
    else {
      json_object_put(x);
      usage_error("set", "unknown setting '%.*s' (rebuild-min, rebuild-max, bitmap, "
                  "bitmap-chunk, safe-mode-delay, spares-expected)", (int)(eq - argv[i]), argv[i]);
    }
    snprintf(msg, sizeof msg, "%s: rebuild speed limits set", argv[first]);
  }
  return call("set", argv[first], x, msg);
}
