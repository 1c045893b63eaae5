/* The verbs that act on running arrays, through raidd (assemble is
 * assemble.c's):
 *   stop NAME [--force], stop --scan [--force]
 *   status [NAME]          mdstat-like
 *   detail NAME            mdadm --detail-like */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "raidctl.h"
#include "sizes.h"


/* Ask raidd to stop NAME.  raidd's reply, or NULL (error printed). */
static json_object *
stop_one(const char *name, bool force)
{
  json_object *req = json_object_new_object(), *rep;

  json_object_object_add(req, "verb", json_object_new_string("stop"));
  json_object_object_add(req, "name", json_object_new_string(name));
  json_object_object_add(req, "force", json_object_new_boolean(force));
  rep = raidd_call(req);
  json_object_put(req);
  return rep;
}

/* stop --scan, as mdadm --stop --scan: every array raidd runs, each
 * reported; those that could not be stopped (in use without --force) are
 * named and make the exit status 1.  The JSON result:
 *   {"ok": BOOL, "stopped": [NAME...], "failed": [NAME...]}
 * (with --json a failure wraps it as the error object's "result", whose
 * "errors" hold raidd's reasons). */
static int
stop_scan(bool force)
{
  json_object *req = json_object_new_object(), *st, *arrays, *report, *stopped, *failed;
  size_t i, n;
  int status = EXIT_OK;

  json_object_object_add(req, "verb", json_object_new_string("status"));
  st = raidd_call(req);
  json_object_put(req);
  if (st == NULL)
    return EXIT_FAIL;
  arrays = jget(st, "arrays");
  n = json_object_array_length(arrays);
  report = json_object_new_object();
  stopped = json_object_new_array();
  failed = json_object_new_array();
  for (i = 0; i < n; i++) {
    const char *name = jstr(json_object_array_get_idx(arrays, i), "name");
    json_object *rep = stop_one(name, force);

    if (rep) {
      json_object_array_add(stopped, json_object_new_string(name));
      if (!opt.json)
        printf("raidctl: stopped %s\n", name);
    }
    else {
      json_object_array_add(failed, json_object_new_string(name));   /* raidd said why */
      status = EXIT_FAIL;
    }
    json_object_put(rep);
  }
  if (n == 0 && !opt.json)
    printf("raidctl: no arrays running\n");
  if (json_object_array_length(failed) > 0) {
    char names[1024] = "";

    for (i = 0; i < json_object_array_length(failed); i++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
               i ? ", " : "", json_object_get_string(json_object_array_get_idx(failed, i)));
    error("stop --scan: could not stop %s", names);
  }
  json_object_object_add(report, "ok", json_object_new_boolean(status == EXIT_OK));
  json_object_object_add(report, "stopped", stopped);
  json_object_object_add(report, "failed", failed);
  json_result(report);
  json_object_put(st);
  return status;
}

int
cmd_stop(int argc, char **argv)
{
  static const struct option opts[] = {
    { "force", no_argument, NULL, 'f' },
    { "scan", no_argument, NULL, 's' },
    { "json", no_argument, NULL, 'J' },
    { NULL, 0, NULL, 0 },
  };
  json_object *rep;
  bool force = false, scan = false;
  int c;

  while ((c = verb_getopt(argc, argv, "", opts)) != -1) {
    switch (c) {
    case 'f': force = true; break;
    case 's': scan = true; break;
    case 'J': opt.json = true; break;
    }
  }
  if (scan) {
    if (optind != argc)
      usage_error("stop", "--scan stops every running array: give no NAME");
    return stop_scan(force);
  }
  if (optind + 1 != argc)
    usage_error("stop", "give exactly one array NAME (or --scan)");
  rep = stop_one(argv[optind], force);
  if (rep == NULL)
    return EXIT_FAIL;
  if (opt.json)
    json_result(rep);
  else {
    printf("raidctl: stopped %s\n", argv[optind]);
    json_object_put(rep);
  }
  return EXIT_OK;
}

/* "[UU_U]" from the states of the members in roles. */
static void
bitmap(json_object *ms, int raid_disks, char *buf, int *working)
{
  size_t i, n = json_object_array_length(ms);

  *working = 0;
  memset(buf, '_', raid_disks + 2);
  buf[0] = '[';
  for (i = 0; i < n; i++) {
    json_object *m = json_object_array_get_idx(ms, i);
    int role = jint(m, "role");
    bool up = strcmp(jstr(m, "state"), "in_sync") == 0;

    if (role < 0 || role >= raid_disks || strcmp(jstr(m, "state"), "replacement") == 0)
      continue;
    buf[role + 1] = up ? 'U' : '_';
    *working += up;
  }
  buf[raid_disks + 1] = ']';
  buf[raid_disks + 2] = '\0';
}

/* The member's tag after its name, as mdstat writes it. */
static const char *
state_tag(const char *st)
{
  if (strcmp(st, "faulty") == 0) return "(F)";
  if (strcmp(st, "spare") == 0) return "(S)";
  if (strcmp(st, "replacement") == 0) return "(R)";
  return "";
}

/* mdstat's progress line:
 *   [=====>...............]  recovery = 27.3% (28160/102400) finish=0.1min speed=10240K/sec */
static void
print_progress(json_object *s)
{
  const char *act = jstr(s, "action");
  int64_t done = jint(s, "done"), total = jint(s, "total"), rate = jint(s, "rate");
  char bar[21];
  int i, fill;
  double pct;

  if (strcmp(act, "idle") == 0 || total <= 0)
    return;
  pct = 100.0 * done / total;
  fill = (int)(pct / 5);
  for (i = 0; i < 20; i++)
    bar[i] = i < fill ? '=' : i == fill ? '>' : '.';
  bar[20] = '\0';
  /* mdstat says "recovery" for md's "recover" action. */
  printf("      [%s]  %s = %.1f%% (%" PRId64 "/%" PRId64 ")", bar,
         strcmp(act, "recover") == 0 ? "recovery" : act, pct,
         done / 1024, total / 1024);
  if (rate > 0)
    printf(" finish=%.1fmin speed=%" PRId64 "K/sec",
           (double)(total - done) / rate / 60.0, rate / 1024);
  printf("\n");
}

/* Members that are simulated drives (benchmark and test devices). */
static int
count_sim(json_object *ms)
{
  size_t i, n = json_object_array_length(ms);
  int sim = 0;

  for (i = 0; i < n; i++) {
    const char *kind = jstr(json_object_array_get_idx(ms, i), "kind");
    sim += kind && strcmp(kind, "sim") == 0;
  }
  return sim;
}

static void
print_mdstat(json_object *a)
{
  json_object *ms = jget(a, "members"), *s = jget(a, "sync");
  size_t i, n = json_object_array_length(ms);
  int level = jint(a, "level"), raid_disks = jint(a, "raid_disks"), working;
  char bits[RAID_MAX_MEMBERS + 3];

  printf("%s : active%s raid%d", jstr(a, "name"),
         jbool(a, "readonly") ? " (read-only)" : "", level);
  for (i = 0; i < n; i++) {
    json_object *m = json_object_array_get_idx(ms, i);
    const char *st = jstr(m, "state");
    if (jget(m, "path") == NULL)
      continue;
    if (jint(m, "role") >= 0)
      printf(" %s[%" PRId64 "]%s%s", jstr(m, "path"), jint(m, "role"),
             jbool(m, "write_mostly") ? "(W)" : "", state_tag(st));
    else
      printf(" %s%s%s", jstr(m, "path"), jbool(m, "write_mostly") ? "(W)" : "",
             state_tag(st));
  }
  printf("\n      %" PRId64 " blocks super %s", jint(a, "size") / 1024,
         jstr(a, "metadata") ? jstr(a, "metadata") : "1.2");
  if (level == 5)
    printf(" level 5, %" PRId64 "k chunk, algorithm %" PRId64, jint(a, "chunk_size") / 1024,
           jint(a, "layout"));
  else if (level == 10)
    printf(" %" PRId64 "K chunks %" PRId64 " near-copies", jint(a, "chunk_size") / 1024,
           jint(a, "layout") & 0xff);
  else if (level == 0)
    printf(" %" PRId64 "k chunks", jint(a, "chunk_size") / 1024);
  bitmap(ms, raid_disks, bits, &working);
  if (level != 0)
    printf(" [%d/%d] %s", raid_disks, working, bits);
  printf("\n");
  if (jget(a, "nbd_device"))
    printf("      block device: %s (kernel NBD client)\n", jstr(a, "nbd_device"));
  if (jstr(a, "ublk"))
    printf("      block device: %s (ublk)\n", jstr(a, "ublk"));
  if (s)
    print_progress(s);
  if (jget(a, "reshape") && jbool(jget(a, "reshape"), "frozen")) {
    json_object *r = jget(a, "reshape");

    printf("      reshape = %.1f%% frozen (raidctl grow %s --continue)\n",
           reshape_percent(r),
           jstr(a, "name"));
  }
  if (jget(a, "bitmap")) {
    /* /proc/mdstat's line: counter pages in use of all, their memory, the
     * chunk. */
    json_object *b = jget(a, "bitmap");
    int64_t ck = jint(b, "chunk_size");

    printf("      bitmap: %" PRId64 "/%" PRId64 " pages [%" PRId64 "KB], %" PRId64 "%s chunk\n",
           jint(b, "pages_used"), jint(b, "pages"), jint(b, "pages_used") * 4,
           ck >= 1024 ? ck / 1024 : ck, ck >= 1024 ? "KB" : "B");
  }
  if (jbool(a, "failed"))
    printf("      FAILED: more members lost than raid%d tolerates; I/O is refused\n", level);
  else if (jint(a, "degraded"))
    printf("      degraded: %" PRId64 " of %d members not in sync\n", jint(a, "degraded"),
           raid_disks);
  if (count_sim(ms))
    printf("      simulated drives: %d member(s) are sim: benchmark devices, not for data\n",
           count_sim(ms));
  if (jstr(a, "resync_pending"))
    printf("      resync pending: %s (dirty and degraded, e.g. a forced start: rows "
           "written when it stopped may disagree)\n", jstr(a, "resync_pending"));
  else if (jbool(a, "needs_resync") && !(s && strcmp(jstr(s, "action"), "resync") == 0))
    printf("      resync needed (new array, or not stopped cleanly)\n");
  if (s && strcmp(jstr(s, "action"), "idle") == 0 &&
      (strcmp(jstr(s, "last_action"), "check") == 0 ||
       strcmp(jstr(s, "last_action"), "repair") == 0))
    printf("      last %s: mismatch_cnt %" PRId64 "%s\n", jstr(s, "last_action"),
           jint(s, "mismatches"), jint(s, "last_result") < 0 ? " (stopped early)" : "");
  printf("\n");
}

static void
print_detail(json_object *a)
{
  json_object *ms = jget(a, "members"), *s = jget(a, "sync");
  size_t i, n = json_object_array_length(ms);
  int level = jint(a, "level"), raid_disks = jint(a, "raid_disks");
  char buf[64];

  printf("%s:\n", jstr(a, "name"));
  printf("%18s : %s\n", "Version", jstr(a, "metadata") ? jstr(a, "metadata") : "1.2");
  printf("%18s : raid%d\n", "Raid Level", level);
  size_format(jint(a, "size"), buf, sizeof buf);
  printf("%18s : %" PRId64 " (%s)", "Array Size", jint(a, "size") / 1024, buf);
  /* Less than the members hold: raidctl grow --array-size. */
  if (jget(a, "full_size") && jint(a, "full_size") > jint(a, "size")) {
    size_format(jint(a, "full_size"), buf, sizeof buf);
    printf(" of %s the members hold (--array-size)", buf);
  }
  printf("\n");
  size_format(jint(a, "member_size"), buf, sizeof buf);
  printf("%18s : %" PRId64 " (%s)\n", "Used Dev Size", jint(a, "member_size") / 1024, buf);
  /* mdadm -D's: the count the reshape under way ends with (md's raid_disks
   * from its start), the roles in use now are the active ones. */
  printf("%18s : %d\n", "Raid Devices", jget(a, "reshape")
         ? (int)jint(jget(a, "reshape"), "raid_disks_to") : raid_disks);
  /* mdadm's: "clean" while idle (safe mode), "active" while writing. */
  printf("%18s : %s%s%s\n", "State", jbool(a, "failed") ? "failed"
         : jstr(a, "state") && strcmp(jstr(a, "state"), "clean") == 0 ? "clean" : "active",
         jint(a, "degraded") ? ", degraded" : "",
         jbool(a, "needs_resync") ? ", resync needed" : "");
  printf("%18s : %" PRId64 "\n", "Active Devices", (int64_t)raid_disks - jint(a, "degraded"));
  printf("%18s : %" PRId64 "\n", "Degraded Roles", jint(a, "degraded"));
  if (jstr(a, "resync_pending"))
    printf("%18s : %s (forced start of a dirty degraded array, or a member lost "
           "before a resync ended)\n", "Resync Pending", jstr(a, "resync_pending"));
  if (s) {
    printf("%18s : %s", "Sync Action", jstr(s, "action"));
    if (strcmp(jstr(s, "action"), "idle") != 0 && jint(s, "total") > 0)
      printf(" %.1f%% complete", 100.0 * jint(s, "done") / jint(s, "total"));
    printf("\n%18s : %" PRId64 "\n", "Mismatch Count", jint(s, "mismatches"));
    printf("%18s : %" PRId64 "K/sec min, ", "Rebuild Speed", jint(s, "rebuild_min") / 1024);
    if (jint(s, "rebuild_max"))
      printf("%" PRId64 "K/sec max\n", jint(s, "rebuild_max") / 1024);
    else
      printf("no max\n");
  }
  if (jget(a, "reshape")) {
    /* mdadm -D's lines for a reshape under way: what changes. */
    json_object *r = jget(a, "reshape");

    printf("%18s : %.0f%% complete%s\n", "Reshape Status",
           reshape_percent(r),
           jbool(r, "frozen") ? " (frozen)" : "");
    if (jint(r, "raid_disks_to") != jint(r, "raid_disks_from"))
      printf("%18s : %" PRId64 ", (%" PRId64 "->%" PRId64 ")\n", "Delta Devices",
             jint(r, "raid_disks_to") - jint(r, "raid_disks_from"),
             jint(r, "raid_disks_from"), jint(r, "raid_disks_to"));
    if (jint(r, "layout_to") != jint(r, "layout_from")) {
      layout_name(level, (int)jint(r, "layout_to"), buf, sizeof buf);
      printf("%18s : %s\n", "New Layout", buf);
    }
    if (jint(r, "chunk_to") != jint(r, "chunk_from"))
      printf("%18s : %" PRId64 "K\n", "New Chunksize", jint(r, "chunk_to") / 1024);
  }
  if (level == 5 || level == 10) {
    layout_name(level, jint(a, "layout"), buf, sizeof buf);
    printf("%18s : %s\n", "Layout", buf);
  }
  if (level != 1)
    printf("%18s : %" PRId64 "K\n", "Chunk Size", jint(a, "chunk_size") / 1024);
  if (jget(a, "bitmap")) {
    json_object *b = jget(a, "bitmap");

    printf("%18s : Internal\n", "Intent Bitmap");      /* as mdadm -D says it */
    printf("%18s : %" PRId64 "K, %" PRId64 " of %" PRId64 " chunks dirty\n", "Bitmap Chunk",
           jint(b, "chunk_size") / 1024, jint(b, "dirty"), jint(b, "chunks"));
    if (jint(b, "write_behind"))
      printf("%18s : up to %" PRId64 " writes, %" PRId64 " in flight\n", "Write Behind",
             jint(b, "write_behind"), jint(b, "behind_writes"));
  }
  if (jget(a, "uuid"))
    printf("%18s : %s\n%18s : %" PRId64 "\n", "UUID", jstr(a, "uuid"), "Events",
           jint(a, "events"));
  printf("%18s : %" PRId64 "\n", "NBD connections", jint(a, "connections"));
  if (jstr(a, "nbd_device"))
    printf("%18s : %s (kernel NBD client)\n", "Block Device", jstr(a, "nbd_device"));
  if (jstr(a, "ublk"))
    printf("%18s : %s (ublk)\n", "Block Device", jstr(a, "ublk"));
  printf("\n");
  printf("    Role     State        I/O        Device\n");
  for (i = 0; i < n; i++) {
    json_object *m = json_object_array_get_idx(ms, i);
    const char *st = jstr(m, "state");
    char role[16] = "-";

    if (jint(m, "role") >= 0)
      snprintf(role, sizeof role, "%" PRId64, jint(m, "role"));
    printf("    %-6s   %-11s  %-9s  %s", role,
           strcmp(st, "in_sync") == 0 ? "active" : st,
           !jget(m, "path") ? "-" : strcmp(jstr(m, "kind"), "sim") == 0 ? "simulated" :
           jbool(m, "direct_io") ? "direct" : "buffered",
           jget(m, "path") ? jstr(m, "path") : "-");
    if (jbool(m, "write_mostly"))
      printf("  (write-mostly)");
    if (jget(m, "recovery_offset") && jint(a, "member_size") > 0)
      printf("  (%.1f%% rebuilt)", 100.0 * jint(m, "recovery_offset") / jint(a, "member_size"));
    printf("\n");
  }
}

static int
status_or_detail(int argc, char **argv, bool detail)
{
  static const struct option detail_opts[] = {
    { "json", no_argument, NULL, 'J' },
    { "test", no_argument, NULL, 't' },
    { NULL, 0, NULL, 0 },
  };
  static const struct option status_opts[] = {
    { "json", no_argument, NULL, 'J' },
    { NULL, 0, NULL, 0 },
  };
  json_object *req, *rep, *arrays, *a;
  bool test = false;
  size_t i;
  int c, status = EXIT_OK;

  while ((c = verb_getopt(argc, argv, "", detail ? detail_opts : status_opts)) != -1)
    if (c == 'J')
      opt.json = true;
    else if (c == 't')
      test = true;
  if (detail ? optind + 1 != argc : optind + 1 < argc)
    usage_error(argv[0], detail ? "give exactly one array NAME" : "at most one array NAME");
  req = json_object_new_object();
  json_object_object_add(req, "verb", json_object_new_string("status"));
  if (optind < argc)
    json_object_object_add(req, "name", json_object_new_string(argv[optind]));
  rep = raidd_call(req);
  json_object_put(req);
  if (rep == NULL)
    return test ? EXIT_DETAIL_ERROR : EXIT_FAIL;
  arrays = jget(rep, "arrays");
  /* mdadm --detail --test: 1 degraded, 2 failed (unusable). */
  a = json_object_array_get_idx(arrays, 0);
  if (test && a && json_object_get_boolean(jget(a, "failed")))
    status = EXIT_DETAIL_FAILED;
  else if (test && a && json_object_get_int(jget(a, "degraded")) > 0)
    status = EXIT_DETAIL_DEGRADED;
  if (opt.json) {
    json_object *out = detail ? json_object_array_get_idx(arrays, 0) : arrays;
    json_result(json_object_get(out));
  }
  else if (detail)
    print_detail(json_object_array_get_idx(arrays, 0));
  else {
    printf("Personalities : [raid0] [raid1] [raid5] [raid10]\n");
    for (i = 0; i < json_object_array_length(arrays); i++)
      print_mdstat(json_object_array_get_idx(arrays, i));
    if (json_object_array_length(arrays) == 0)
      printf("no arrays running\n");
  }
  json_object_put(rep);
  return status;
}

int cmd_status(int argc, char **argv) { return status_or_detail(argc, argv, false); }
int cmd_detail(int argc, char **argv) { return status_or_detail(argc, argv, true); }
