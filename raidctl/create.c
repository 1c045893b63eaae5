/* raidctl create NAME --level L [--chunk SIZE] [--layout L] [--force]
 *                [--metadata 1.0|1.1|1.2] [--assume-clean] [--no-start]
 *                [--bitmap internal|none] [--bitmap-chunk SIZE] [--data-offset SIZE]
 *                [--write-mostly MEMBER]... [--write-behind[=N]] MEMBER|missing...
 *
 * Like mdadm --create, in three steps, once the command line is read
 * (parse_create_args(): every usage error comes before any fact):
 *  1. gather every fact (gather_create_facts(), facts.c): raidd's running
 *     arrays (NAME must not be one, --no-start or not), each member
 *     resolved, stat()ed, claimed exclusively (O_EXCL, or the flock raidd
 *     holds on its members), probed with libblkid and its md superblock
 *     read;
 *  2. decide (check_create()): a member named twice, one that a running
 *     array holds or that is in use is refused, --force or not; one
 *     holding a file system, a partition table or a RAID signature is
 *     refused unless --force (naming the array it belongs to); the
 *     geometry is checked (data at 1 MiB aligned to the members' optimal
 *     I/O size, at sector 0 with metadata 1.0), and "missing" roles
 *     (mdadm's word: the array is created degraded) only as many as the
 *     level tolerates;
 *  3. write (write_create()), the members still claimed: wipe the old
 *     signatures, write md version-1 superblocks where --metadata puts
 *     them, and (unless --assume-clean) run the initial resync so that
 *     mirrors and parity agree from the start; then say what was made
 *     and start it in raidd.
 * A refusal in 1 or 2 leaves every member byte-identical. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "raidctl.h"
#include "sizes.h"

struct progress {
  const char *name;
  bool tty;
  int last;
  time_t start;
};

static int
show_progress(void *opaque, uint64_t done, uint64_t total)
{
  struct progress *p = opaque;
  int permille = (int)(done * 1000 / (total ? total : 1));

  if (opt.json || permille == p->last)
    return 0;
  if (p->tty) {
    fprintf(stderr, "\rraidctl: %s: resync %5.1f%% (%" PRIu64 "/%" PRIu64 " MiB)",
            p->name, permille / 10.0, done >> 20, total >> 20);
    if (done == total)
      fputc('\n', stderr);
  }
  else if (permille / 250 != p->last / 250 || done == total)
    fprintf(stderr, "raidctl: %s: resync %5.1f%%\n", p->name, permille / 10.0);
  p->last = permille;
  return 0;
}

static uint64_t
round_up(uint64_t v, uint64_t to)
{
  return to ? (v + to - 1) / to * to : v;
}

/* mdadm's -e/--metadata names: 1.0, 1.1, 1.2 (also "1" and "default"). */
static int
metadata_parse(const char *s)
{
  if (strcmp(s, "1.0") == 0 || strcmp(s, "1.00") == 0)
    return RAID_METADATA_1_0;
  if (strcmp(s, "1.1") == 0 || strcmp(s, "1.01") == 0)
    return RAID_METADATA_1_1;
  if (strcmp(s, "1.2") == 0 || strcmp(s, "1.02") == 0 || strcmp(s, "1") == 0 ||
      strcmp(s, "default") == 0)
    return RAID_METADATA_1_2;
  if (strncmp(s, "0.9", 3) == 0)
    usage_error("create", "--metadata %s: md's old 0.90 format is not supported "
                "(1.0 also keeps the superblock at the end)", s);
  usage_error("create", "--metadata '%s' is not 1.0, 1.1 or 1.2", s);
  return -1;
}

/* Bytes of a new array's member of SIZE bytes that data may use: under
 * metadata 1.0 up to the room mdadm keeps below the superblock for a
 * bitmap and a bad block log, with a bitmap or without (the library's
 * rule, meta_bitmap_reserve()); all of it for the other versions, whose
 * bitmap lies before the data offset. */
static uint64_t
data_end(int version, uint64_t size)
{
  uint64_t so, keep;

  if (version != RAID_METADATA_1_0)
    return size;
  so = raid_superblock_offset(version, size >> 9);
  keep = raid_bitmap_space(version, size >> 9);
  return so == UINT64_MAX || so <= keep ? 0 : (so - keep) << 9;
}

/* mdadm's --write-behind[=N]: writes allowed behind, 256 when no N is
 * given.  N must follow '=' (an optional argument): "--write-behind 64"
 * would make 64 a member, so it is refused with a hint. */
static void
write_behind_parse(int argc, char **argv, uint32_t *n)
{
  uint64_t v;
  char *end;

  if (optarg == NULL) {
    if (optind < argc && argv[optind][0] && strspn(argv[optind], "0123456789") ==
        strlen(argv[optind]))
      usage_error("create", "--write-behind %s: give the number after '=' "
                  "(--write-behind=%s)", argv[optind], argv[optind]);
    *n = 256;                   /* mdadm's DEFAULT_MAX_WRITE_BEHIND */
    return;
  }
  errno = 0;
  v = strtoull(optarg, &end, 10);
  if (errno || end == optarg || *end || v == 0 || v > RAID_BITMAP_WRITE_BEHIND_MAX)
    usage_error("create", "--write-behind=%s: must be a number of writes from 1 "
                "to %u", optarg, RAID_BITMAP_WRITE_BEHIND_MAX);
  *n = (uint32_t)v;
}

/* mdadm's --bitmap: internal or none (a bitmap file is not supported). */
static int
bitmap_parse(const char *s)
{
  if (strcmp(s, "internal") == 0)
    return RAID_BITMAP_INTERNAL;
  if (strcmp(s, "none") == 0)
    return RAID_BITMAP_NONE;
  if (strcmp(s, "clustered") == 0)
    usage_error("create", "--bitmap clustered: md-cluster's bitmaps are not supported");
  usage_error("create", "--bitmap '%s' is not internal or none (a bitmap in a "
              "file is not supported)", s);
  return -1;
}

/* What create was asked and what it decided.  parse_create_args() fills
 * the first part from the command line alone; check_create() gathers the
 * facts and decides the rest, refusing before anything is written;
 * write_create() writes; report_create() says what was made. */
struct create_plan {
  /* The command line. */
  struct raid_config cfg;
  char **args;                  /* the members as given, "missing" too */
  unsigned n;                   /* how many: the array's raid disks */
  const char *wm[RAID_MAX_MEMBERS];      /* --write-mostly members */
  unsigned nwm;
  uint64_t bchunk;              /* --bitmap-chunk, bytes; 0: the default */
  uint64_t want_offset;         /* --data-offset, bytes; 0: the default */
  bool force, assume_clean, no_start;
  /* The facts, and what they decide. */
  json_object *status;          /* raidd's, or NULL when it does not run */
  struct member_facts *facts;   /* the members present, in order */
  unsigned np;                  /* how many are present */
  struct member_facts *f[RAID_MAX_MEMBERS];      /* by role; NULL: missing */
  uint64_t offset;              /* where data starts on a member, bytes */
  uint64_t min_avail;           /* the data each member holds, bytes */
  bool bitmap;                  /* an internal bitmap: asked, or by default */
};

/* --bitmap-chunk SIZE in bytes. */
static uint64_t
bitmap_chunk_parse(const char *s)
{
  uint64_t bchunk;

  if (size_parse_kib(s, &bchunk) < 0 || bchunk == 0)
    usage_error("create", "bad bitmap chunk size '%s' (e.g. 64M, 128M)", s);
  if (bchunk > (UINT64_C(1) << 31) || (bchunk & (bchunk - 1)) ||
      bchunk < RAID_BITMAP_CHUNK_MIN)
    usage_error("create", "--bitmap-chunk %s: must be a power of two from 4K "
                "to 2G", s);
  return bchunk;
}

/* --data-offset SIZE in bytes (a bare number is KiB, as with mdadm). */
static uint64_t
data_offset_parse(const char *s)
{
  uint64_t off;

  if (size_parse_kib(s, &off) < 0 || off == 0)
    usage_error("create", "bad data offset '%s' (e.g. 128M, 2048K)", s);
  if (off % 4096)
    usage_error("create", "--data-offset %s: must be a multiple of 4K", s);
  return off;
}

/* The options, each checked alone as it comes.  *LAYOUT and *CHUNK wait
 * for the level and the end of the options. */
static void
parse_create_options(int argc, char **argv, struct create_plan *p,
                     const char **layout, uint64_t *chunk)
{
  static const struct option opts[] = {
    { "level", required_argument, NULL, 'l' },
    { "chunk", required_argument, NULL, 'c' },
    { "layout", required_argument, NULL, 'p' },
    { "force", no_argument, NULL, 'f' },
    { "assume-clean", no_argument, NULL, 'A' },
    { "no-start", no_argument, NULL, 'N' },
    { "ublk", no_argument, NULL, 'U' },
    { "write-mostly", required_argument, NULL, 'W' },
    { "metadata", required_argument, NULL, 'e' },
    { "bitmap", required_argument, NULL, 'b' },
    { "bitmap-chunk", required_argument, NULL, 'B' },
    { "data-offset", required_argument, NULL, 'D' },
    { "write-behind", optional_argument, NULL, 'w' },
    { "json", no_argument, NULL, 'J' },
    { NULL, 0, NULL, 0 },
  };
  int c;

  while ((c = verb_getopt(argc, argv, "", opts)) != -1) {
    switch (c) {
    case 'l':
      if (level_parse(optarg, &p->cfg.level) < 0)
        usage_error("create", "unknown level '%s' (0, 1, 5 or 10)", optarg);
      break;
    case 'c': *chunk = chunk_parse("create", optarg); break;
    case 'p': *layout = optarg; break;
    case 'e': p->cfg.metadata = metadata_parse(optarg); break;
    case 'b': p->cfg.bitmap = bitmap_parse(optarg); break;
    case 'B': p->bchunk = bitmap_chunk_parse(optarg); break;
    case 'D': p->want_offset = data_offset_parse(optarg); break;
    case 'f': p->force = true; break;
    case 'A': p->assume_clean = true; break;
    case 'N': p->no_start = true; break;
    case 'U': opt.ublk = true; break;
    case 'W':
      if (p->nwm == RAID_MAX_MEMBERS)
        usage_error("create", "too many --write-mostly members");
      p->wm[p->nwm++] = optarg;
      break;
    case 'w': write_behind_parse(argc, argv, &p->cfg.write_behind); break;
    case 'J': opt.json = true; break;
    }
  }
}

/* Step 0: the command line into P, and every usage error (exit status 2)
 * that needs no fact about the members. */
static void
parse_create_args(int argc, char **argv, struct create_plan *p)
{
  struct raid_config *cfg = &p->cfg;
  const char *layout = NULL;
  uint64_t chunk = 0;
  unsigned i, j;

  parse_create_options(argc, argv, p, &layout, &chunk);
  if (optind >= argc)
    usage_error("create", "missing the array NAME");
  cfg->name = argv[optind++];
  if (cfg->level < 0)
    usage_error("create", "--level is required");
  p->args = argv + optind;
  p->n = argc - optind;
  if (p->n == 0)
    usage_error("create", "no members given");
  if (p->n > RAID_MAX_MEMBERS)
    usage_error("create", "%u members: at most %u", p->n, RAID_MAX_MEMBERS);
  if (layout && layout_parse(cfg->level, layout, &cfg->layout) < 0)
    usage_error("create", "layout '%s' is not valid for %s", layout,
                level_name(cfg->level));
  if (chunk > UINT32_MAX)
    usage_error("create", "chunk size '%" PRIu64 "' is too large", chunk);
  if (cfg->level == RAID_LEVEL_0 && cfg->bitmap == RAID_BITMAP_INTERNAL)
    usage_error("create", "--bitmap internal: RAID 0 has no copies or parity to "
                "resync, md allows no write-intent bitmap on it");
  if (p->bchunk && cfg->bitmap == RAID_BITMAP_NONE)
    usage_error("create", "--bitmap-chunk with --bitmap none: there is no bitmap");
  cfg->bitmap_chunk = (uint32_t)p->bchunk;
  if (p->want_offset && cfg->metadata == RAID_METADATA_1_0)
    usage_error("create", "--data-offset with --metadata 1.0: its data starts at "
                "sector 0, the superblock at the end");
  if (cfg->write_behind && cfg->level != RAID_LEVEL_1)
    usage_error("create", "--write-behind: only RAID 1 has write-mostly mirrors to "
                "write behind (md's rule too)");
  if (cfg->write_behind && cfg->bitmap == RAID_BITMAP_NONE)
    usage_error("create", "--write-behind with --bitmap none: write-behind needs the "
                "bitmap, which keeps what is behind for a resync");
  cfg->chunk_size = chunk;
  cfg->raid_disks = p->n;
  for (i = 0; i < p->nwm; i++) {
    if (cfg->level != 1 && cfg->level != 10)
      usage_error("create", "--write-mostly applies to mirrors (RAID 1 and 10), "
                  "not %s", level_name(cfg->level));
    for (j = 0; j < p->n && strcmp(p->wm[i], p->args[j]) != 0; j++)
      ;
    if (j == p->n || strcmp(p->wm[i], "missing") == 0)
      usage_error("create", "--write-mostly %s: not one of the members given",
                  p->wm[i]);
  }
}

/* Step 1: gather every fact before anything is written: raidd's running
 * arrays (this name must not run there, with --no-start too: the new
 * array could never be started next to it), then each member (facts.c).
 * "missing" is a role created without a member, as with mdadm.  0 or -1
 * (error printed). */
static int
gather_create_facts(struct create_plan *p)
{
  char *present[RAID_MAX_MEMBERS];
  bool failed;
  unsigned i, j;

  p->status = raidd_status(&failed);
  if (failed)
    return -1;
  if (p->status && status_array(p->status, "name", p->cfg.name)) {
    error("create: an array named %s is already running in raidd; stop it or "
          "choose another name", p->cfg.name);
    return -1;
  }
  for (i = 0; i < p->n; i++)
    if (strcmp(p->args[i], "missing") != 0)
      present[p->np++] = p->args[i];
  if (p->np == 0) {
    error("create: every member is missing: at least one must be present");
    return -1;
  }
  if (p->np < p->n && p->cfg.level == RAID_LEVEL_0) {
    error("create: RAID 0 has no redundancy: no member can be missing");
    return -1;
  }
  if (facts_gather("create", present, p->np, p->status, p->facts) < 0)
    return -1;
  for (i = 0, j = 0; i < p->n; i++)
    if (strcmp(p->args[i], "missing") != 0)
      p->f[i] = &p->facts[j++];
  return 0;
}

/* Step 2a: where the data starts.  Where --data-offset says, else at 1
 * MiB, aligned to what the devices say is optimal; at sector 0 with
 * metadata 1.0. */
static void
plan_data_offset(struct create_plan *p)
{
  uint64_t align = 0;
  unsigned i;

  if (p->want_offset) {
    p->offset = p->want_offset;
    return;
  }
  for (i = 0; i < p->np; i++) {
    const struct probe_info *pi = &p->facts[i].probe;

    align = pi->optimal_io > align ? pi->optimal_io : align;
    align = pi->physical_sector > align ? pi->physical_sector : align;
  }
  if (p->cfg.metadata == RAID_METADATA_1_0) {
    p->offset = 0;              /* md's 1.0: data from sector 0 */
    return;
  }
  p->offset = round_up(RAID_DATA_OFFSET_DEFAULT, align);
  for (i = 0; i < p->np; i++)
    if (p->facts[i].probe.alignment_offset && align) {
      /* a misaligned device */
      p->offset += p->facts[i].probe.alignment_offset % align;
      break;
    }
}

/* The data each member can hold from the data offset (with P->bitmap's
 * room under metadata 1.0): the smallest into P->min_avail, refusing a
 * member with none.  0 or -1 (error printed). */
static int
plan_member_room(struct create_plan *p)
{
  unsigned i;

  p->min_avail = UINT64_MAX;
  for (i = 0; i < p->np; i++) {
    const struct member_facts *f = &p->facts[i];
    uint64_t end = data_end(p->cfg.metadata, f->probe.size);

    if (end <= p->offset) {
      if (p->cfg.metadata == RAID_METADATA_1_0)
        error("member %s is too small: %" PRIu64 " bytes, no room for data "
              "before its metadata 1.0 superblock", f->arg, f->probe.size);
      else
        error("member %s is too small: %" PRIu64 " bytes, the data starts at %"
              PRIu64, f->arg, f->probe.size, p->offset);
      return -1;
    }
    if (end - p->offset < p->min_avail)
      p->min_avail = end - p->offset;
  }
  return 0;
}

/* Step 2b: the size of the data on each member, and whether there is a
 * bitmap.  0 or -1 (error printed). */
static int
plan_sizes(struct create_plan *p)
{
  struct raid_config *cfg = &p->cfg;
  char buf[64];
  unsigned i;

  /* mdadm's default: a bitmap when each member holds more than 100 GiB;
   * with metadata 1.0 its room then comes off the data (a second pass). */
  p->bitmap = cfg->bitmap == RAID_BITMAP_INTERNAL;
  if (plan_member_room(p) < 0)
    return -1;
  if (!p->bitmap && cfg->bitmap == RAID_BITMAP_DEFAULT &&
      cfg->level != RAID_LEVEL_0 && p->min_avail > (UINT64_C(100) << 30)) {
    p->bitmap = true;
    if (cfg->metadata == RAID_METADATA_1_0 && plan_member_room(p) < 0)
      return -1;
  }
  if (cfg->bitmap == RAID_BITMAP_DEFAULT)
    cfg->bitmap = p->bitmap ? RAID_BITMAP_INTERNAL : RAID_BITMAP_NONE;
  if (p->bchunk && !p->bitmap) {
    error("create: --bitmap-chunk but no bitmap: mdadm's default gives one only "
          "to arrays whose members hold more than 100 GiB (add --bitmap internal)");
    return -1;
  }
  if (cfg->write_behind && !p->bitmap) {
    error("create: --write-behind but no bitmap: mdadm's default gives one only "
          "to arrays whose members hold more than 100 GiB (add --bitmap internal)");
    return -1;
  }
  for (i = 0; i < p->np; i++) {
    uint64_t avail = data_end(cfg->metadata, p->facts[i].probe.size) -
      p->offset;

    if (avail > p->min_avail + (1 << 20)) {
      size_format(avail - p->min_avail, buf, sizeof buf);
      warning("members differ in size: %s of %s will not be used", buf,
              p->facts[i].arg);
    }
  }
  cfg->data_offset = p->offset;
  cfg->member_size = p->min_avail;
  return 0;
}

/* Step 2: decide everything, refusing bad geometry (and more missing
 * roles than the level tolerates) and members holding signatures before
 * anything is wiped.  0 or -1 (error printed). */
static int
check_create(struct create_plan *p)
{
  uint64_t sizes[RAID_MAX_MEMBERS];
  const char *names[RAID_MAX_MEMBERS];
  unsigned i;

  if (gather_create_facts(p) < 0)
    return -1;
  plan_data_offset(p);
  if (plan_sizes(p) < 0)
    return -1;
  for (i = 0; i < p->n; i++) {
    sizes[i] = p->f[i] ? p->f[i]->probe.size : 0;     /* 0: missing */
    names[i] = p->f[i] ? p->f[i]->arg : "missing";
  }
  if (raid_config_check(&p->cfg, sizes, names, NULL) < 0) {
    error("%s", raid_get_error());
    return -1;
  }
  return facts_check_signatures("create", p->facts, p->np, p->force);
}

/* Step 3, decided: write.  The members stay claimed (facts[].m)
 * throughout; the array in *A takes them.  0 or -1 (error printed). */
static int
write_create(struct create_plan *p, struct raid_array **a)
{
  struct raid_member *members[RAID_MAX_MEMBERS] = { NULL };
  unsigned i, j;

  for (i = 0; i < p->n; i++) {
    if (p->f[i] == NULL)
      continue;
    if (facts_wipe(p->f[i]) < 0)
      return -1;
    members[i] = p->f[i]->m;
    for (j = 0; j < p->nwm; j++)
      if (strcmp(p->wm[j], p->f[i]->arg) == 0)
        raid_member_set_write_mostly(members[i], 1);
  }
  if (raid_array_create(&p->cfg, members, p->assume_clean ?
                        RAID_CREATE_ASSUME_CLEAN : 0, a) < 0) {
    error("%s", raid_get_error());
    return -1;
  }
  for (i = 0; i < p->np; i++)
    p->facts[i].m = NULL;       /* the array's now */

  /* Like md, the initial resync runs in the background once the array is
   * started in raidd; without raidd it runs here, with the same engine. */
  if (raid_array_needs_resync(*a) && (p->no_start || p->status == NULL)) {
    struct progress pr = { p->cfg.name, isatty(2), -1, time(NULL) };

    if (raid_array_resync(*a, show_progress, &pr) < 0) {
      error("initial resync of %s failed: %s", p->cfg.name, raid_get_error());
      return -1;
    }
  }
  return 0;
}

/* The new array A as JSON (--json). */
static void
report_create_json(const struct create_plan *p, struct raid_array *a,
                   const char *uuid)
{
  json_object *o = json_object_new_object(), *ms = json_object_new_array();
  unsigned i;

#define ADD(k, v) json_object_object_add(o, k, v)
  ADD("name", json_object_new_string(p->cfg.name));
  ADD("uuid", json_object_new_string(uuid));
  ADD("level", json_object_new_string(level_name(p->cfg.level)));
  ADD("raid_disks", json_object_new_int(p->n));
  ADD("chunk_size", json_object_new_int64(raid_array_chunk_size(a)));
  ADD("size", json_object_new_int64(raid_array_size(a)));
  ADD("data_offset", json_object_new_int64(p->offset));
  ADD("metadata", json_object_new_string(raid_metadata_name(p->cfg.metadata)));
  ADD("bitmap", json_object_new_string(p->bitmap ? "internal" : "none"));
  if (p->bitmap) {
    struct raid_bitmap_info bi;

    raid_array_bitmap(a, &bi);
    ADD("bitmap_chunk", json_object_new_int64(bi.chunk_size));
    ADD("write_behind", json_object_new_int64(bi.write_behind));
  }
  for (i = 0; i < p->n; i++)
    json_object_array_add(ms, json_object_new_string(p->args[i]));
  ADD("members", ms);
#undef ADD
  json_result(o);
}

/* Say what was made: the array A, its size, UUID and bitmap.  0 or -1
 * (error printed). */
static int
report_create(const struct create_plan *p, struct raid_array *a)
{
  const struct raid_config *cfg = &p->cfg;
  struct raid_superblock sb;
  char buf[64], uuid[40];

  if (raid_array_superblock(a, &sb) < 0) {
    error("%s", raid_get_error());
    return -1;
  }
  uuid_format(sb.set_uuid, uuid);
  size_format(raid_array_size(a), buf, sizeof buf);
  if (opt.json) {
    report_create_json(p, a, uuid);
    return 0;
  }
  if (p->np < p->n)
    printf("raidctl: created %s array %s (UUID %s): %u members, %u of them missing "
           "(degraded: add members to rebuild them), %s, metadata %s\n",
           level_name(cfg->level), cfg->name, uuid, p->n, p->n - p->np, buf,
           raid_metadata_name(cfg->metadata));
  else
    printf("raidctl: created %s array %s (UUID %s): %u members, %s, metadata %s\n",
           level_name(cfg->level), cfg->name, uuid, p->n, buf,
           raid_metadata_name(cfg->metadata));
  if (p->bitmap) {
    struct raid_bitmap_info bi;
    char cb[32];

    raid_array_bitmap(a, &bi);
    size_format(bi.chunk_size, cb, sizeof cb);
    printf("raidctl: %s has an internal write-intent bitmap: %" PRIu64
           " bits of %s\n", cfg->name, bi.chunks, cb);
    if (bi.write_behind)
      printf("raidctl: %s writes behind on write-mostly members: up to %" PRIu32
             " writes\n", cfg->name, bi.write_behind);
  }
  return 0;
}

/* Like mdadm --create, the new array starts running: in raidd, when it
 * is there.  Exit status. */
static int
start_create(const struct create_plan *p)
{
  char *abs[RAID_MAX_MEMBERS];
  unsigned i;

  for (i = 0; i < p->np; i++)
    abs[i] = p->facts[i].abs;
  return start_in_raidd(p->cfg.name, abs, p->np, false, false);
}

int
cmd_create(int argc, char **argv)
{
  static struct member_facts facts[RAID_MAX_MEMBERS];
  struct create_plan p = {
    .cfg = { .layout = RAID_LAYOUT_DEFAULT, .level = -1,
             .metadata = RAID_METADATA_1_2 },
    .facts = facts,
  };
  struct raid_array *a = NULL;
  int status_code = EXIT_FAIL;

  parse_create_args(argc, argv, &p);
  if (check_create(&p) == 0 && write_create(&p, &a) == 0 &&
      report_create(&p, a) == 0)
    status_code = EXIT_OK;
  raid_array_free(a);           /* marks it clean, closes the members */
  facts_release(facts, p.np);   /* those it did not take */
  if (status_code == EXIT_OK && !p.no_start && p.status)
    status_code = start_create(&p);
  json_object_put(p.status);
  return status_code;
}
