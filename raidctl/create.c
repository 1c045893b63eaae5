/* raidctl create NAME --level L [--chunk SIZE] [--layout L] [--force]
 *                [--metadata 1.0|1.1|1.2] [--assume-clean] [--no-start]
 *                [--bitmap internal|none] [--bitmap-chunk SIZE]
 *                [--write-mostly MEMBER]... [--write-behind[=N]] MEMBER|missing...
 *
 * Like mdadm --create, in three steps:
 *  1. gather every fact (facts.c): raidd's running arrays (NAME must not
 *     be one, --no-start or not), each member resolved, stat()ed, claimed
 *     exclusively (O_EXCL, or the flock raidd holds on its members),
 *     probed with libblkid and its md superblock read;
 *  2. decide: a member named twice, one that a running array holds or
 *     that is in use is refused, --force or not; one holding a file
 *     system, a partition table or a RAID signature is refused unless
 *     --force (naming the array it belongs to); the geometry is checked
 *     (data at 1 MiB aligned to the members' optimal I/O size, at sector
 *     0 with metadata 1.0), and "missing" roles (mdadm's word: the array
 *     is created degraded) only as many as the level tolerates;
 *  3. write, the members still claimed: wipe the old signatures, write md
 *     version-1 superblocks where --metadata puts them, and (unless
 *     --assume-clean) run the initial resync so that mirrors and parity
 *     agree from the start.
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

/* Bytes of a member of SIZE bytes before the metadata 1.0 superblock and,
 * with BITMAP, the room mdadm keeps before it for the bitmap (all of it
 * for the other versions, whose bitmap lies before the data offset). */
static uint64_t
data_end(int version, bool bitmap, uint64_t size)
{
  uint64_t so, keep;

  if (version != RAID_METADATA_1_0)
    return size;
  so = raid_superblock_offset(version, size >> 9);
  keep = bitmap ? raid_bitmap_space(version, size >> 9) : 0;
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

int
cmd_create(int argc, char **argv)
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
    { "write-behind", optional_argument, NULL, 'w' },
    { "json", no_argument, NULL, 'J' },
    { NULL, 0, NULL, 0 },
  };
  struct raid_config cfg = { .layout = RAID_LAYOUT_DEFAULT, .level = -1,
                             .metadata = RAID_METADATA_1_2 };
  struct raid_member *members[RAID_MAX_MEMBERS] = { NULL };
  static struct member_facts facts[RAID_MAX_MEMBERS];
  struct member_facts *f[RAID_MAX_MEMBERS] = { NULL };   /* by role; NULL: missing */
  char *present[RAID_MAX_MEMBERS];
  struct raid_superblock sb;
  struct raid_array *a = NULL;
  json_object *status = NULL;
  const char *layout = NULL, *wm[RAID_MAX_MEMBERS];
  unsigned nwm = 0, np = 0;
  bool force = false, assume_clean = false, no_start = false, failed;
  uint64_t chunk = 0, offset = RAID_DATA_OFFSET_DEFAULT, align = 0, bchunk = 0;
  bool bitmap = false;
  uint64_t min_avail = UINT64_MAX;
  unsigned n, i, j;
  char buf[64], uuid[40];
  int c, r, status_code = EXIT_FAIL;

  while ((c = verb_getopt(argc, argv, "", opts)) != -1) {
    switch (c) {
    case 'l':
      if (level_parse(optarg, &cfg.level) < 0)
        usage_error("create", "unknown level '%s' (0, 1, 5 or 10)", optarg);
      break;
    case 'c':
      if (size_parse(optarg, &chunk) < 0 || chunk == 0)
        usage_error("create", "bad chunk size '%s' (e.g. 64K, 512K, 1M)", optarg);
      if (chunk < 1024 && strspn(optarg, "0123456789") == strlen(optarg))
        chunk <<= 10;           /* mdadm: a bare number is KiB */
      break;
    case 'p': layout = optarg; break;
    case 'e': cfg.metadata = metadata_parse(optarg); break;
    case 'b': cfg.bitmap = bitmap_parse(optarg); break;
    case 'B':
      if (size_parse(optarg, &bchunk) < 0 || bchunk == 0)
        usage_error("create", "bad bitmap chunk size '%s' (e.g. 64M, 128M)", optarg);
      if (strspn(optarg, "0123456789") == strlen(optarg))
        bchunk <<= 10;          /* mdadm: a bare number is KiB */
      if (bchunk > (UINT64_C(1) << 31) || (bchunk & (bchunk - 1)) ||
          bchunk < RAID_BITMAP_CHUNK_MIN)
        usage_error("create", "--bitmap-chunk %s: must be a power of two from 4K "
                    "to 2G", optarg);
      break;
    case 'f': force = true; break;
    case 'A': assume_clean = true; break;
    case 'N': no_start = true; break;
    case 'U': opt.ublk = true; break;
    case 'W':
      if (nwm == RAID_MAX_MEMBERS)
        usage_error("create", "too many --write-mostly members");
      wm[nwm++] = optarg;
      break;
    case 'w': write_behind_parse(argc, argv, &cfg.write_behind); break;
    case 'J': opt.json = true; break;
    }
  }
  if (optind >= argc)
    usage_error("create", "missing the array NAME");
  cfg.name = argv[optind++];
  if (cfg.level < 0)
    usage_error("create", "--level is required");
  n = argc - optind;
  if (n == 0)
    usage_error("create", "no members given");
  if (n > RAID_MAX_MEMBERS)
    usage_error("create", "%u members: at most %u", n, RAID_MAX_MEMBERS);
  if (layout && layout_parse(cfg.level, layout, &cfg.layout) < 0)
    usage_error("create", "layout '%s' is not valid for %s", layout,
                level_name(cfg.level));
  if (chunk > UINT32_MAX)
    usage_error("create", "chunk size '%" PRIu64 "' is too large", chunk);
  if (cfg.level == RAID_LEVEL_0 && cfg.bitmap == RAID_BITMAP_INTERNAL)
    usage_error("create", "--bitmap internal: RAID 0 has no copies or parity to "
                "resync, md allows no write-intent bitmap on it");
  if (bchunk && cfg.bitmap == RAID_BITMAP_NONE)
    usage_error("create", "--bitmap-chunk with --bitmap none: there is no bitmap");
  cfg.bitmap_chunk = (uint32_t)bchunk;
  if (cfg.write_behind && cfg.level != RAID_LEVEL_1)
    usage_error("create", "--write-behind: only RAID 1 has write-mostly mirrors to "
                "write behind (md's rule too)");
  if (cfg.write_behind && cfg.bitmap == RAID_BITMAP_NONE)
    usage_error("create", "--write-behind with --bitmap none: write-behind needs the "
                "bitmap, which keeps what is behind for a resync");
  cfg.chunk_size = chunk;
  cfg.raid_disks = n;
  for (i = 0; i < nwm; i++) {
    if (cfg.level != 1 && cfg.level != 10)
      usage_error("create", "--write-mostly applies to mirrors (RAID 1 and 10), "
                  "not %s", level_name(cfg.level));
    for (j = 0; j < n && strcmp(wm[i], argv[optind + j]) != 0; j++)
      ;
    if (j == n || strcmp(wm[i], "missing") == 0)
      usage_error("create", "--write-mostly %s: not one of the members given", wm[i]);
  }

  /* Gather every fact before anything is written: raidd's running arrays
   * (this name must not run there, with --no-start too: the new array
   * could never be started next to it), then each member (facts.c).
   * "missing" is a role created without a member, as with mdadm. */
  status = raidd_status(&failed);
  if (failed)
    return EXIT_FAIL;
  if (status && status_array(status, "name", cfg.name)) {
    error("create: an array named %s is already running in raidd; stop it or "
          "choose another name", cfg.name);
    goto out;
  }
  for (i = 0; i < n; i++)
    if (strcmp(argv[optind + i], "missing") != 0)
      present[np++] = argv[optind + i];
  if (np == 0) {
    error("create: every member is missing: at least one must be present");
    goto out;
  }
  if (np < n && cfg.level == RAID_LEVEL_0) {
    error("create: RAID 0 has no redundancy: no member can be missing");
    goto out;
  }
  if (facts_gather("create", present, np, status, facts) < 0)
    goto out;
  for (i = 0, j = 0; i < n; i++)
    if (strcmp(argv[optind + i], "missing") != 0)
      f[i] = &facts[j++];
  for (i = 0; i < np; i++) {
    /* Data starts at 1 MiB, aligned to what the device says is optimal. */
    align = facts[i].probe.optimal_io > align ? facts[i].probe.optimal_io : align;
    align = facts[i].probe.physical_sector > align ? facts[i].probe.physical_sector : align;
  }
  if (cfg.metadata == RAID_METADATA_1_0)
    offset = 0;                 /* md's 1.0: data from sector 0 */
  else {
    offset = round_up(offset, align);
    for (i = 0; i < np; i++)
      if (facts[i].probe.alignment_offset && align) {
        offset += facts[i].probe.alignment_offset % align;   /* misaligned device */
        break;
      }
  }
  /* mdadm's default: a bitmap when each member holds more than 100 GiB;
   * with metadata 1.0 its room then comes off the data (a second pass). */
  bitmap = cfg.bitmap == RAID_BITMAP_INTERNAL;
 again:
  min_avail = UINT64_MAX;
  for (i = 0; i < np; i++) {
    uint64_t end = data_end(cfg.metadata, bitmap, facts[i].probe.size);

    if (end <= offset) {
      if (cfg.metadata == RAID_METADATA_1_0)
        error("member %s is too small: %" PRIu64 " bytes, no room for data "
              "before its metadata 1.0 superblock", facts[i].arg, facts[i].probe.size);
      else
        error("member %s is too small: %" PRIu64 " bytes, the data starts at %" PRIu64,
              facts[i].arg, facts[i].probe.size, offset);
      goto out;
    }
    if (end - offset < min_avail)
      min_avail = end - offset;
  }
  if (!bitmap && cfg.bitmap == RAID_BITMAP_DEFAULT && cfg.level != RAID_LEVEL_0 &&
      min_avail > (UINT64_C(100) << 30)) {
    bitmap = true;
    if (cfg.metadata == RAID_METADATA_1_0)
      goto again;
  }
  if (cfg.bitmap == RAID_BITMAP_DEFAULT)
    cfg.bitmap = bitmap ? RAID_BITMAP_INTERNAL : RAID_BITMAP_NONE;
  if (bchunk && !bitmap) {
    error("create: --bitmap-chunk but no bitmap: mdadm's default gives one only "
          "to arrays whose members hold more than 100 GiB (add --bitmap internal)");
    goto out;
  }
  if (cfg.write_behind && !bitmap) {
    error("create: --write-behind but no bitmap: mdadm's default gives one only "
          "to arrays whose members hold more than 100 GiB (add --bitmap internal)");
    goto out;
  }
  for (i = 0; i < np; i++)
    if (data_end(cfg.metadata, bitmap, facts[i].probe.size) - offset > min_avail + (1 << 20)) {
      size_format(data_end(cfg.metadata, bitmap, facts[i].probe.size) - offset - min_avail,
                  buf, sizeof buf);
      warning("members differ in size: %s of %s will not be used", buf, facts[i].arg);
    }
  cfg.data_offset = offset;
  cfg.member_size = min_avail;

  /* Refuse bad geometry (and more missing roles than the level
   * tolerates) before anything is wiped. */
  {
    uint64_t sizes[RAID_MAX_MEMBERS];
    const char *names[RAID_MAX_MEMBERS];

    for (i = 0; i < n; i++) {
      sizes[i] = f[i] ? f[i]->probe.size : 0;     /* 0: missing */
      names[i] = f[i] ? f[i]->arg : "missing";
    }
    if (raid_config_check(&cfg, sizes, names, NULL) < 0) {
      error("%s", raid_get_error());
      goto out;
    }
  }
  if (facts_check_signatures("create", facts, np, force) < 0)
    goto out;

  /* Decided: write.  The members stay claimed (facts[].m) throughout. */
  for (i = 0; i < n; i++) {
    if (f[i] == NULL)
      continue;
    if (wipe_member(f[i]->abs) < 0)
      goto out;
    members[i] = f[i]->m;
    for (j = 0; j < nwm; j++)
      if (strcmp(wm[j], f[i]->arg) == 0)
        raid_member_set_write_mostly(members[i], 1);
  }
  r = raid_array_create(&cfg, members, assume_clean ? RAID_CREATE_ASSUME_CLEAN : 0, &a);
  if (r < 0) {
    error("%s", raid_get_error());
    goto out;
  }
  for (i = 0; i < np; i++)
    facts[i].m = NULL;          /* the array's now */

  /* Like md, the initial resync runs in the background once the array is
   * started in raidd; without raidd it runs here, with the same engine. */
  if (raid_array_needs_resync(a) && (no_start || status == NULL)) {
    struct progress p = { cfg.name, isatty(2), -1, time(NULL) };

    r = raid_array_resync(a, show_progress, &p);
    if (r < 0) {
      error("initial resync of %s failed: %s", cfg.name, raid_get_error());
      goto out;
    }
  }
  if (raid_array_superblock(a, &sb) < 0) {
    error("%s", raid_get_error());
    goto out;
  }
  uuid_format(sb.set_uuid, uuid);
  size_format(raid_array_size(a), buf, sizeof buf);
  if (opt.json) {
    json_object *o = json_object_new_object(), *ms = json_object_new_array();

    json_object_object_add(o, "name", json_object_new_string(cfg.name));
    json_object_object_add(o, "uuid", json_object_new_string(uuid));
    json_object_object_add(o, "level", json_object_new_string(level_name(cfg.level)));
    json_object_object_add(o, "raid_disks", json_object_new_int(n));
    json_object_object_add(o, "chunk_size", json_object_new_int64(raid_array_chunk_size(a)));
    json_object_object_add(o, "size", json_object_new_int64(raid_array_size(a)));
    json_object_object_add(o, "data_offset", json_object_new_int64(offset));
    json_object_object_add(o, "metadata",
                           json_object_new_string(raid_metadata_name(cfg.metadata)));
    json_object_object_add(o, "bitmap", json_object_new_string(bitmap ? "internal" : "none"));
    if (bitmap) {
      struct raid_bitmap_info bi;

      raid_array_bitmap(a, &bi);
      json_object_object_add(o, "bitmap_chunk", json_object_new_int64(bi.chunk_size));
      json_object_object_add(o, "write_behind", json_object_new_int64(bi.write_behind));
    }
    for (i = 0; i < n; i++)
      json_object_array_add(ms, json_object_new_string(argv[optind + i]));
    json_object_object_add(o, "members", ms);
    json_result(o);
  }
  else if (np < n)
    printf("raidctl: created %s array %s (UUID %s): %u members, %u of them missing "
           "(degraded: add members to rebuild them), %s, metadata %s\n",
           level_name(cfg.level), cfg.name, uuid, n, n - np, buf,
           raid_metadata_name(cfg.metadata));
  else
    printf("raidctl: created %s array %s (UUID %s): %u members, %s, metadata %s\n",
           level_name(cfg.level), cfg.name, uuid, n, buf, raid_metadata_name(cfg.metadata));
  if (bitmap && !opt.json) {
    struct raid_bitmap_info bi;
    char cb[32];

    raid_array_bitmap(a, &bi);
    size_format(bi.chunk_size, cb, sizeof cb);
    printf("raidctl: %s has an internal write-intent bitmap: %" PRIu64 " bits of %s\n",
           cfg.name, bi.chunks, cb);
    if (bi.write_behind)
      printf("raidctl: %s writes behind on write-mostly members: up to %" PRIu32
             " writes\n", cfg.name, bi.write_behind);
  }
  status_code = EXIT_OK;

 out:
  raid_array_free(a);           /* marks it clean, closes the members */
  facts_release(facts, np);     /* those it did not take */
  /* Like mdadm --create, the new array starts running: in raidd, when it
   * is there. */
  if (status_code == EXIT_OK && !no_start && status) {
    char *abs[RAID_MAX_MEMBERS];

    for (i = 0; i < np; i++)
      abs[i] = facts[i].abs;
    status_code = start_in_raidd(cfg.name, abs, np, false, false);
  }
  json_object_put(status);
  return status_code;
}
