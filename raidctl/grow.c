/* raidctl grow NAME --raid-devices N: mdadm --grow --raid-devices through
 * raidd: a RAID 1's number of mirrors, a RAID 5 or 10 restriped over N
 * members.
 * raidctl grow NAME --level 5|1|0 [--raid-devices N]: md's takeover of a
 * RAID 1 of 2 as a RAID 5 of 2 and back, or of a RAID 0 as a RAID 5 in the
 * parity-last layout (one role more, missing) and back, then (N) a
 * restripe.
 * raidctl grow NAME [--raid-devices N] [--layout L] [--chunk SIZE]: a RAID
 * 5's shape changed in one reshape (mdadm --grow --layout, --chunk).
 * raidctl grow NAME --raid-devices N --add MEMBER...: the new members with
 * the grow (mdadm --grow --add): a RAID 0 restriped over them, md's way (a
 * RAID 5 missing its parity role until the reshape ends).
 *
 * raidctl grow NAME --stop | --continue: the reshape under way frozen at a
 * checkpoint (md's "frozen" in sync_action), or let go on (mdadm --grow
 * --continue).
 *
 * raidctl grow NAME --size max|SIZE [--assume-clean] [--force]: mdadm
 * --grow --size through raidd.  SIZE is what each member gives the array,
 * as mdadm's --size: a bare number is KiB, or K, M, G, T suffixes; max is
 * all the members have room for now.  The array and its NBD exports take
 * the new size at once (an attached /dev/nbdN too; a ublk device after
 * unublk and ublk), the new region is resynced in the background (raidctl
 * wait), and a smaller size needs --force.
 *
 * raidctl grow NAME --array-size max|SIZE: mdadm --grow --array-size: the
 * array shows SIZE bytes (a bare number is KiB), less than its members
 * hold, or all of them (max), before a reshape to fewer members; nothing
 * is written, and it lasts until the array is stopped, as md's. */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "md-names.h"
#include "raidctl.h"
#include "sizes.h"

/* --add ARG, the NADD-th: ARG as raidd must get it (member_abs()), in
 * memory the caller frees; a usage error past RAID_MAX_MEMBERS or for a
 * member that is not there. */
static char *
add_arg(const char *arg, unsigned nadd)
{
  char *p;

  if (nadd == RAID_MAX_MEMBERS)
    usage_error("grow", "--add: at most %d members", RAID_MAX_MEMBERS);
  if ((p = malloc(PATH_MAX)) == NULL || member_abs(arg, true, p, PATH_MAX) < 0)
    usage_error("grow", "--add %s: no such member", arg);
  return p;
}

/* PATHS[0..N-1] as a JSON array of strings. */
static json_object *
paths_json(char *const *paths, unsigned n)
{
  json_object *a = json_object_new_array();
  unsigned k;

  for (k = 0; k < n; k++)
    json_object_array_add(a, json_object_new_string(paths[k]));
  return a;
}

/* raidd's reply REP to a grow that runs as a RAID 5 reshape and ends as
 * a RAID 0 ("reshape_level"): a RAID 5 in another layout reshaped to
 * parity-last first (one member fewer at the end), or a RAID 0 restriped
 * as a RAID 5 missing its parity role. */
static void
say_via_raid5(const char *name, json_object *rep)
{
  int before = json_object_get_int(jget(rep, "raid_devices_before"));
  int after = json_object_get_int(jget(rep, "raid_devices"));
  char from[64];

  if (after < before) {
    layout_name(RAID_LEVEL_5, json_object_get_int(jget(rep, "layout_before")), from,
                sizeof from);
    printf("raidctl: %s: reshaping from %s to parity-last (md takes over only that "
           "layout as a RAID 0), then a RAID 0 of %d; the parity member leaves the array "
           "then (raidctl wait %s)\n", name, from, after, name);
  }
  else
    printf("raidctl: %s: restriping from %d to %d members, md's way: a RAID 5 in the "
           "parity-last layout missing its parity role until it ends, a RAID 0 of %d "
           "again then, with its new size (raidctl wait %s)\n", name, before, after, after,
           name);
}

/* --level L, --raid-devices N, --layout L, --chunk SIZE: md's takeover,
 * a RAID 1's number of mirrors, or a RAID 5's or 10's shape (each NULL:
 * as now); with ADD (NADD paths, absolute already), the new members that
 * come with --raid-devices (a RAID 0's). */
static int
grow_shape(const char *name, const char *level, const char *devices, const char *layout,
           const char *chunk, char **add, unsigned nadd)
{
  json_object *x, *rep;
  char *end, from[64], to[64];
  long n = 0;
  int r, before, after, l, lv = 0, lb;

  if (devices) {
    n = strtol(devices, &end, 10);
    if (*devices == '\0' || *end != '\0' || n < 1 || n > RAID_MAX_MEMBERS)
      usage_error("grow", "bad number of members '%s' (2 to %d)", devices,
                  RAID_MAX_MEMBERS);
  }
  if (level && level_parse(level, &lv) < 0)
    usage_error("grow", "bad level '%s' (0, 1 or 5: raidd turns a RAID 1 of 2 into a "
                "RAID 5 and back, and a RAID 0 into a RAID 5 and back)", level);
  if (layout && layout_parse(RAID_LEVEL_5, layout, &l) < 0)
    usage_error("grow", "bad layout '%s' (a RAID 5's: left-symmetric, right-symmetric, "
                "left-asymmetric, right-asymmetric, parity-first, parity-last)", layout);
  x = json_object_new_object();
  if (level)
    json_object_object_add(x, "level", json_object_new_int(lv));
  if (devices)
    json_object_object_add(x, "raid_devices", json_object_new_int((int)n));
  if (layout)
    json_object_object_add(x, "layout", json_object_new_int(l));
  if (chunk)
    json_object_object_add(x, "chunk", json_object_new_int64(
                             (int64_t)chunk_parse("grow", chunk)));
  if (nadd)
    json_object_object_add(x, "add", paths_json(add, nadd));
  r = raidd_verb("grow", name, x, &rep);
  if (rep == NULL)
    return r;
  if (jget(rep, "reshape_level")) {
    say_via_raid5(name, rep);
    json_object_put(rep);
    return EXIT_OK;
  }
  before = json_object_get_int(jget(rep, "raid_devices_before"));
  after = json_object_get_int(jget(rep, "raid_devices"));
  lv = json_object_get_int(jget(rep, "level"));
  lb = json_object_get_int(jget(rep, "level_before"));
  /* After a takeover, the *_before fields are the new level's. */
  if (lv != lb) {
    int took = json_object_get_int(jget(rep, "takeover_raid_devices"));

    layout_name(RAID_LEVEL_5, json_object_get_int(jget(rep, "layout_before")), to, sizeof to);
    if (lv == RAID_LEVEL_5)
      printf("raidctl: %s: a RAID 5 of %d now (was a RAID %d), %s, chunk %" PRId64 "K; the "
             "members' bytes stay as they were%s\n", name, took, lb, to,
             json_object_get_int64(jget(rep, "chunk_before")) >> 10, lb == RAID_LEVEL_0
             ? ", and its parity role is missing: a hot spare takes it, or raidctl add one"
             : "");
    else
      printf("raidctl: %s: a RAID %d of %d now (was a RAID 5 of %d); the members' bytes "
             "stay as they were%s\n", name, lv, took, before, lv == RAID_LEVEL_0
             ? ", and the parity member has left the array" : "");
  }
  if (json_object_get_boolean(jget(rep, "reshape"))) {
    /* What changes, as "from 3 to 4 members, layout ... to ..., chunk ...". */
    int64_t c0 = json_object_get_int64(jget(rep, "chunk_before")) >> 10;
    int64_t c1 = json_object_get_int64(jget(rep, "chunk")) >> 10;
    int l0 = json_object_get_int(jget(rep, "layout_before"));
    int l1 = json_object_get_int(jget(rep, "layout"));
    char what[256] = "";
    size_t k = 0;

    layout_name(RAID_LEVEL_5, l0, from, sizeof from);
    layout_name(RAID_LEVEL_5, l1, to, sizeof to);
    if (after != before)
      k += (size_t)snprintf(what + k, sizeof what - k, ", from %d to %d members", before,
                            after);
    if (l1 != l0 && k < sizeof what)
      k += (size_t)snprintf(what + k, sizeof what - k, ", layout %s to %s", from, to);
    if (c1 != c0 && k < sizeof what)
      snprintf(what + k, sizeof what - k, ", chunk %" PRId64 "K to %" PRId64 "K", c0, c1);
    printf("raidctl: %s: %s %s; %s (raidctl wait %s)\n", name,
           l1 != l0 || c1 != c0 ? "reshaping" : "restriping", what + 2,
           after > before ? "the array takes its new size when done"
           : after < before ? "backwards, the array keeping the size it shows; the members "
           "left over become hot spares when done (raidctl remove takes them out)"
           : "the size stays", name);
  }
  else if (lv != lb && !devices && !layout && !chunk)
    ;                           /* the level: said above */
  else if (after == before && (layout || chunk || level))
    printf("raidctl: %s: that is its shape already\n", name);
  else if (after == before)
    printf("raidctl: %s: %d members already\n", name, after);
  else if (json_object_get_int(jget(rep, "degraded")) > 0)
    printf("raidctl: %s: %d mirrors now (were %d); %d without a member: a hot spare "
           "takes it, or raidctl add one\n", name, after, before,
           json_object_get_int(jget(rep, "degraded")));
  else
    printf("raidctl: %s: %d mirrors now (were %d)\n", name, after, before);
  json_object_put(rep);
  return EXIT_OK;
}

/* --stop, --continue: the reshape under way. */
static int
grow_reshape(const char *name, bool stop)
{
  json_object *x = json_object_new_object(), *rep;
  int r;

  json_object_object_add(x, "reshape", json_object_new_string(stop ? "stop" : "continue"));
  r = raidd_verb("grow", name, x, &rep);
  if (rep == NULL)
    return r;
  if (!json_object_get_boolean(jget(rep, "reshape_active")))
    printf("raidctl: %s: the reshape is done\n", name);
  else
    printf("raidctl: %s: reshape %s at %.1f%%%s%s%s\n", name, stop ? "stopped" : "goes on",
           reshape_percent(rep),
           stop ? "; requests are served meanwhile (raidctl grow " : "", stop ? name : "",
           stop ? " --continue)" : "");
  json_object_put(rep);
  return EXIT_OK;
}

/* SIZE as --size and --array-size (OPTION, which takes WHAT) take it,
 * into *WANT (0: max): a bare number is KiB, as mdadm's. */
static void
size_arg(const char *option, const char *what, const char *size, uint64_t *want)
{
  *want = 0;
  if (strcmp(size, "max") == 0)
    return;
  if (size_parse_kib(size, want) < 0 || *want == 0)
    usage_error("grow", "bad %s '%s' (max, or %s, e.g. 10G; a bare number is KiB, as "
                "mdadm's)", option, size, what);
}

/* What a change of NAME's size did to the devices on it (REP, raidd's
 * reply), once said how the size changed. */
static void
say_devices(const char *name, json_object *rep)
{
  if (jget(rep, "nbd_device"))
    printf("raidctl: %s: %s %s\n", name, json_object_get_string(jget(rep, "nbd_device")),
           jget(rep, "nbd_device_error") ? "keeps its old size: see raidd's log"
           : "has the new size");
  if (jget(rep, "ublk_device"))
    printf("raidctl: %s: /dev/ublkb%d keeps its old size until raidctl unublk %s "
           "and raidctl ublk %s\n", name, json_object_get_int(jget(rep, "ublk_device")),
           name, name);
  printf("raidctl: %s: %sNBD clients see the new size when they connect again\n",
         name, jget(rep, "nbd_device") ? "other " : "");
}

/* mdadm --grow --size: each member gives WANT bytes (0: all it has). */
static int
grow_size(const char *name, uint64_t want, bool assume_clean, bool force)
{
  char before[32], after[32], each[32];
  json_object *x = json_object_new_object(), *rep;
  uint64_t b, n;
  int r;

  json_object_object_add(x, "member_size", json_object_new_int64((int64_t)want));
  if (assume_clean)
    json_object_object_add(x, "assume_clean", json_object_new_boolean(true));
  if (force)
    json_object_object_add(x, "force", json_object_new_boolean(true));
  r = raidd_verb("grow", name, x, &rep);
  if (rep == NULL)
    return r;
  b = (uint64_t)json_object_get_int64(jget(rep, "size_before"));
  n = (uint64_t)json_object_get_int64(jget(rep, "size"));
  size_format(b, before, sizeof before);
  size_format(n, after, sizeof after);
  size_format((uint64_t)json_object_get_int64(jget(rep, "member_size")), each, sizeof each);
  if (n == b)
    printf("raidctl: %s: size unchanged, %s (%s of each member)%s\n", name, after, each,
           want ? "" : ": the members have no more room (did they grow?)");
  else {
    printf("raidctl: %s: %s from %s to %s (%s of each member)%s\n", name,
           n > b ? "grown" : "shrunk", before, after, each,
           n > b && !assume_clean ? "; resyncing the new region (raidctl wait)" : "");
    say_devices(name, rep);
  }
  json_object_put(rep);
  return EXIT_OK;
}

/* mdadm --grow --array-size: NAME shows WANT bytes (0: all). */
static int
grow_array_size(const char *name, uint64_t want)
{
  char before[32], after[32], full[32];
  json_object *x = json_object_new_object(), *rep;
  uint64_t b, n, f;
  int r;

  json_object_object_add(x, "array_size", json_object_new_int64((int64_t)want));
  r = raidd_verb("grow", name, x, &rep);
  if (rep == NULL)
    return r;
  b = (uint64_t)json_object_get_int64(jget(rep, "size_before"));
  n = (uint64_t)json_object_get_int64(jget(rep, "size"));
  f = (uint64_t)json_object_get_int64(jget(rep, "full_size"));
  size_format(b, before, sizeof before);
  size_format(n, after, sizeof after);
  size_format(f, full, sizeof full);
  if (n == b)
    printf("raidctl: %s: array size unchanged, %s of the %s its members hold\n", name,
           after, full);
  else {
    printf("raidctl: %s: array size %s from %s to %s, of the %s its members hold%s\n",
           name, n > b ? "grown" : "shrunk", before, after, full,
           n < f ? " (until it stops, as md's; max shows all again)" : "");
    say_devices(name, rep);
  }
  json_object_put(rep);
  return EXIT_OK;
}

int
cmd_grow(int argc, char **argv)
{
  static const struct option opts[] = {
    { "size", required_argument, NULL, 'z' },
    { "array-size", required_argument, NULL, 'Z' },
    { "raid-devices", required_argument, NULL, 'n' },
    { "layout", required_argument, NULL, 'l' },
    { "level", required_argument, NULL, 'L' },
    { "chunk", required_argument, NULL, 'C' },
    { "assume-clean", no_argument, NULL, 'a' },
    { "force", no_argument, NULL, 'f' },
    { "stop", no_argument, NULL, 's' },
    { "continue", no_argument, NULL, 'c' },
    { "add", required_argument, NULL, 'A' },
    { "json", no_argument, NULL, 'J' },
    { NULL, 0, NULL, 0 },
  };
  const char *size = NULL, *devices = NULL, *layout = NULL, *chunk = NULL, *level = NULL;
  const char *asize = NULL, *name;
  char *add[RAID_MAX_MEMBERS];
  unsigned nadd = 0, k;
  bool assume_clean = false, force = false, stop = false, cont = false, shape;
  uint64_t want;
  int c, r;

  while ((c = verb_getopt(argc, argv, "", opts)) != -1) {
    switch (c) {
    case 'z': size = optarg; break;
    case 'Z': asize = optarg; break;
    case 'n': devices = optarg; break;
    case 'l': layout = optarg; break;
    case 'L': level = optarg; break;
    case 'C': chunk = optarg; break;
    case 'a': assume_clean = true; break;
    case 'f': force = true; break;
    case 's': stop = true; break;
    case 'c': cont = true; break;
    case 'J': opt.json = true; break;
    case 'A': add[nadd] = add_arg(optarg, nadd); nadd++; break;
    }
  }
  if (argc - optind != 1)
    usage_error("grow", "give exactly one array NAME");
  name = argv[optind];
  shape = level || devices || layout || chunk;
  if (shape && size)
    usage_error("grow", "change the size or the shape (--level, --raid-devices, --layout, "
                "--chunk), not both at once (as mdadm)");
  if (asize && (shape || size || stop || cont || assume_clean || force))
    usage_error("grow", "--array-size goes alone (as mdadm's): set it, then reshape");
  if (stop && cont)
    usage_error("grow", "--stop or --continue, not both");
  if ((stop || cont) && (shape || size))
    usage_error("grow", "--%s applies to the reshape under way: give no --size, --level, "
                "--raid-devices, --layout or --chunk with it", stop ? "stop" : "continue");
  if (nadd && (!devices || level || layout || chunk || size || stop || cont))
    usage_error("grow", "--add goes with --raid-devices alone (the members a RAID 0 "
                "grows by, as mdadm's --grow --raid-devices N --add MEMBER)");
  if (stop || cont)
    return grow_reshape(name, stop);
  if (shape) {
    r = grow_shape(name, level, devices, layout, chunk, add, nadd);
    for (k = 0; k < nadd; k++)
      free(add[k]);
    return r;
  }
  if (asize) {
    size_arg("--array-size", "the bytes the array shows", asize, &want);
    return grow_array_size(name, want);
  }
  if (size == NULL)
    usage_error("grow", "nothing to change: give --size max or --size SIZE (of each "
                "member), --array-size, --level L, --raid-devices N, --layout L or "
                "--chunk SIZE");
  size_arg("--size", "what each member gives", size, &want);
  return grow_size(name, want, assume_clean, force);
}
