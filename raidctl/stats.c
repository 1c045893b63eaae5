/* stats NAME [--json] [--reset] [--interval SECONDS [--count N]]
 *
 * What a running array was asked to do and what its members did for it,
 * from raidd's "stats" verb (raidd/describe.c): one line for the array and
 * one per member (reads and writes in ops and MiB, requests in flight,
 * p50/p99 latency, each member's share of the reads), then the cost of
 * the RAID level: write amplification, RAID 5 stripe writes by method,
 * and how reads spread over mirrors.
 *
 * With --interval, like iostat: the first report covers the time since
 * assembly (or the last reset), each following one the interval just
 * ended.  Counters are differences; latency percentiles cannot be
 * subtracted, so they stay cumulative unless --reset is given, which
 * zeroes everything after each report (then every figure is the
 * interval's). */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "raidctl.h"

#define MIB (1024.0 * 1024.0)

static double jdbl(json_object *o, const char *k) { return json_object_get_double(jget(o, k)); }

/* Counter K of CUR, less PREV's when there is one. */
static int64_t
delta(json_object *cur, json_object *prev, const char *k)
{
  return jint(cur, k) - (prev ? jint(prev, k) : 0);
}

/* Latency in microseconds, with a decimal below 10; "-" when none. */
static void
fmt_us(json_object *lat, const char *k, char *buf, size_t len)
{
  double us = jdbl(lat, k);

  if (jget(lat, k) == NULL || us <= 0)       /* nothing measured */
    snprintf(buf, len, "-");
  else if (us < 10)
    snprintf(buf, len, "%.1f", us);
  else
    snprintf(buf, len, "%.0f", us);
}

static int name_width;

static void
print_row(const char *name, json_object *cur, json_object *prev, const char *share)
{
  json_object *rl = jget(cur, "read_latency_us"), *wl = jget(cur, "write_latency_us");
  char r50[16], r99[16], w50[16], w99[16];

  fmt_us(rl, "p50", r50, sizeof r50);
  fmt_us(rl, "p99", r99, sizeof r99);
  fmt_us(wl, "p50", w50, sizeof w50);
  fmt_us(wl, "p99", w99, sizeof w99);
  printf("%-*s %10" PRId64 " %10.1f %10" PRId64 " %10.1f %6" PRId64
         " %8s %8s %8s %8s %7s\n", name_width, name,
         delta(cur, prev, "read_ops"), delta(cur, prev, "read_bytes") / MIB,
         delta(cur, prev, "write_ops"), delta(cur, prev, "write_bytes") / MIB,
         jint(cur, "in_flight"), r50, r99, w50, w99, share);
}

/* The member of PREV's list matching member I of CUR (same name and
 * role), or NULL: members come and go between reports. */
static json_object *
prev_member(json_object *prev, json_object *m, size_t i)
{
  json_object *pm, *pms = prev ? jget(prev, "members") : NULL;
  const char *n = jstr(m, "name"), *pn;

  if (pms == NULL || i >= json_object_array_length(pms))
    return NULL;
  pm = json_object_array_get_idx(pms, i);
  pn = jstr(pm, "name");
  if (jint(pm, "role") != jint(m, "role") || (n == NULL) != (pn == NULL) ||
      (n && strcmp(n, pn) != 0))
    return NULL;
  return pm;
}

static double
pct(int64_t part, int64_t whole)
{
  return whole > 0 ? 100.0 * part / whole : 0;
}

/* The "RAID overhead" block, from differences of the counters. */
static void
print_overhead(json_object *cur, json_object *prev)
{
  json_object *d = jget(cur, "derived"), *pd = prev ? jget(prev, "derived") : NULL;
  json_object *a = jget(cur, "array"), *pa = prev ? jget(prev, "array") : NULL;
  json_object *ms = jget(cur, "members");
  int level = jint(cur, "level");
  int64_t written = delta(a, pa, "write_bytes") + delta(a, pa, "zero_bytes");
  int64_t mwritten = delta(d, pd, "member_write_bytes");
  int64_t reads = 0;
  size_t i, n = json_object_array_length(ms);

  printf("\nRAID overhead:\n");
  if (written > 0)
    printf("  write amplification      %.2f  (%.1f MiB written to members for %.1f MiB "
           "written to the array)\n", (double)mwritten / written, mwritten / MIB,
           written / MIB);
  else
    printf("  write amplification      -     (nothing written to the array)\n");
  if (level == 5) {
    int64_t full = delta(d, pd, "full_stripe_writes"), rmw = delta(d, pd, "rmw_writes");
    int64_t rcw = delta(d, pd, "rcw_writes"), deg = delta(d, pd, "degraded_writes");
    int64_t all = full + rmw + rcw + deg;

    printf("  stripe writes            %" PRId64 "\n", all);
    printf("    full-stripe            %" PRId64 " (%.1f%%)\n", full, pct(full, all));
    printf("    read-modify-write      %" PRId64 " (%.1f%%)\n", rmw, pct(rmw, all));
    printf("    reconstruct-write      %" PRId64 " (%.1f%%)\n", rcw, pct(rcw, all));
    if (deg)
      printf("    degraded (no parity)   %" PRId64 " (%.1f%%)\n", deg, pct(deg, all));
    printf("  member reads for parity  %.1f MiB", delta(d, pd, "stripe_read_bytes") / MIB);
    if (written > 0)
      printf(" (%.2f bytes read per byte written)",
             (double)delta(d, pd, "stripe_read_bytes") / written);
    printf("\n");
    if (delta(d, pd, "plugged_writes"))
      printf("  plugged stripe writes    %" PRId64 " (%" PRId64 " filled, %" PRId64
             " timed out)\n", delta(d, pd, "plugged_writes"), delta(d, pd, "plugs_filled"),
             delta(d, pd, "plugs_expired"));
    if (delta(d, pd, "degraded_reads"))
      printf("  degraded reads           %" PRId64 " (rebuilt from parity)\n",
             delta(d, pd, "degraded_reads"));
  }
  if (level == 1 || level == 10) {
    for (i = 0; i < n; i++) {
      json_object *m = json_object_array_get_idx(ms, i);
      reads += delta(m, prev_member(prev, m, i), "read_ops");
    }
    printf("  read share per mirror%s\n", reads ? "" : "    (no reads)");
    for (i = 0; i < n && reads; i++) {
      json_object *m = json_object_array_get_idx(ms, i);

      if (jint(m, "role") < 0 || jstr(m, "name") == NULL)
        continue;
      printf("    [%" PRId64 "] %-*s %5.1f%%\n", jint(m, "role"), name_width,
             jstr(m, "name"), pct(delta(m, prev_member(prev, m, i), "read_ops"), reads));
    }
  }
}

static void
print_report(json_object *cur, json_object *prev, bool cumulative_latency)
{
  json_object *ms = jget(cur, "members");
  size_t i, n = json_object_array_length(ms);
  int64_t reads = 0;
  char share[16];

  name_width = 8;
  for (i = 0; i < n; i++) {
    json_object *m = json_object_array_get_idx(ms, i);
    int w = jstr(m, "name") ? (int)strlen(jstr(m, "name")) + 5 : 12;
    if (w > name_width)
      name_width = w;
    reads += delta(m, prev_member(prev, m, i), "read_ops");
  }
  if (prev)
    printf("%s: raid%" PRId64 ", last %.1f s%s\n", jstr(cur, "name"), jint(cur, "level"),
           jdbl(cur, "seconds") - jdbl(prev, "seconds"),
           cumulative_latency ? " (latency: since the start)" : "");
  else
    printf("%s: raid%" PRId64 ", %.1f s since assembly or reset\n", jstr(cur, "name"),
           jint(cur, "level"), jdbl(cur, "seconds"));
  printf("%-*s %10s %10s %10s %10s %6s %8s %8s %8s %8s %7s\n", name_width, "",
         "read ops", "read MiB", "write ops", "write MiB", "in-fl",
         "r p50us", "r p99us", "w p50us", "w p99us", "r share");
  print_row("array", jget(cur, "array"), prev ? jget(prev, "array") : NULL, "-");
  for (i = 0; i < n; i++) {
    json_object *m = json_object_array_get_idx(ms, i);
    json_object *pm = prev_member(prev, m, i);
    char label[512];

    if (jint(m, "role") >= 0)
      snprintf(label, sizeof label, "%s[%" PRId64 "]",
               jstr(m, "name") ? jstr(m, "name") : "(missing)", jint(m, "role"));
    else
      snprintf(label, sizeof label, "%s", jstr(m, "name"));
    if (strcmp(jstr(m, "state"), "in_sync") != 0) {
      size_t l = strlen(label);
      snprintf(label + l, sizeof label - l, " %s", jstr(m, "state"));
    }
    if (reads > 0)
      snprintf(share, sizeof share, "%.1f%%", pct(delta(m, pm, "read_ops"), reads));
    else
      snprintf(share, sizeof share, "-");
    print_row(label, m, pm, share);
  }
  print_overhead(cur, prev);
}

static json_object *
fetch(const char *name, bool reset)
{
  json_object *req = json_object_new_object(), *rep;

  json_object_object_add(req, "verb", json_object_new_string("stats"));
  json_object_object_add(req, "name", json_object_new_string(name));
  if (reset)
    json_object_object_add(req, "reset", json_object_new_boolean(1));
  rep = raidd_call(req);
  json_object_put(req);
  return rep;
}

int
cmd_stats(int argc, char **argv)
{
  static const struct option opts[] = {
    { "json", no_argument, NULL, 'J' },
    { "reset", no_argument, NULL, 'r' },
    { "interval", required_argument, NULL, 'i' },
    { "count", required_argument, NULL, 'c' },
    { NULL, 0, NULL, 0 },
  };
  json_object *cur, *prev = NULL;
  double interval = 0;
  long count = 0, k;
  bool reset = false;
  char *end;
  int c;

  while ((c = verb_getopt(argc, argv, "", opts)) != -1) {
    switch (c) {
    case 'J': opt.json = true; break;
    case 'r': reset = true; break;
    case 'i':
      interval = strtod(optarg, &end);
      if (*end || end == optarg || !(interval > 0) || interval > 86400)
        usage_error("stats", "--interval %s: give seconds, more than 0", optarg);
      break;
    case 'c':
      count = strtol(optarg, &end, 10);
      if (*end || end == optarg || count <= 0)
        usage_error("stats", "--count %s: give a number of reports, 1 or more", optarg);
      break;
    }
  }
  if (argc - optind != 1)
    usage_error("stats", "give exactly one array NAME");
  if (count && interval == 0)
    usage_error("stats", "--count needs --interval");

  for (k = 0; ; k++) {
    if ((cur = fetch(argv[optind], reset)) == NULL) {
      json_object_put(prev);
      return EXIT_FAIL;
    }
    /* With --json: one report, or with --interval a stream of them, one
     * per line (JSON Lines), printed as they come. */
    if (opt.json && interval)
      json_stream(json_object_get(cur));
    else if (opt.json)
      json_result(json_object_get(cur));
    else {
      if (k > 0)
        printf("\n");
      print_report(cur, reset ? NULL : prev, !reset);
    }
    fflush(stdout);
    json_object_put(prev);
    prev = cur;
    if (interval == 0 || (count && k + 1 >= count))
      break;
    {
      struct timespec ts = { (time_t)interval,
                             (long)((interval - (time_t)interval) * 1e9) };
      while (nanosleep(&ts, &ts) != 0)
        ;
    }
  }
  json_object_put(prev);
  return EXIT_OK;
}
