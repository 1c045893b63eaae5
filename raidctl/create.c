/* raidctl create NAME --level L [--chunk SIZE] [--layout L] [--force]
 *                [--metadata 1.0|1.1|1.2] [--assume-clean] [--no-start]
 *                [--write-mostly MEMBER]... MEMBER...
 *
 * Like mdadm --create: check every member with libblkid (a member that
 * already holds a file system, a partition table or a RAID signature is
 * refused unless --force), wipe the old signatures, place the data (at
 * 1 MiB aligned to the members' optimal I/O size; at sector 0 with
 * metadata 1.0), write md version-1 superblocks where --metadata puts them,
 * and (unless --assume-clean) run the initial resync so that mirrors and
 * parity agree from the start. */
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

/* Bytes of a member of SIZE bytes before the metadata 1.0 superblock (all
 * of it for the other versions). */
static uint64_t
data_end(int version, uint64_t size)
{
  uint64_t so;

  if (version != RAID_METADATA_1_0)
    return size;
  so = raid_superblock_offset(version, size >> 9);
  return so == UINT64_MAX ? 0 : so << 9;
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
    { "write-mostly", required_argument, NULL, 'W' },
    { "metadata", required_argument, NULL, 'e' },
    { "json", no_argument, NULL, 'J' },
    { NULL, 0, NULL, 0 },
  };
  struct raid_config cfg = { .layout = RAID_LAYOUT_DEFAULT, .level = -1,
                             .metadata = RAID_METADATA_1_2 };
  struct raid_member *members[RAID_MAX_MEMBERS] = { NULL };
  struct probe_info info[RAID_MAX_MEMBERS];
  struct raid_superblock sb;
  struct raid_array *a = NULL;
  const char *layout = NULL, *wm[RAID_MAX_MEMBERS];
  unsigned nwm = 0;
  bool force = false, assume_clean = false, no_start = false;
  uint64_t chunk = 0, offset = RAID_DATA_OFFSET_DEFAULT, align = 0;
  uint64_t min_avail = UINT64_MAX;
  unsigned n, i, j;
  char buf[64], uuid[40];
  int c, r, status = EXIT_FAIL;

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
    case 'f': force = true; break;
    case 'A': assume_clean = true; break;
    case 'N': no_start = true; break;
    case 'W':
      if (nwm == RAID_MAX_MEMBERS)
        usage_error("create", "too many --write-mostly members");
      wm[nwm++] = optarg;
      break;
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
  cfg.chunk_size = chunk;
  cfg.raid_disks = n;
  for (i = 0; i < nwm; i++) {
    if (cfg.level != 1 && cfg.level != 10)
      usage_error("create", "--write-mostly applies to mirrors (RAID 1 and 10), "
                  "not %s", level_name(cfg.level));
    for (j = 0; j < n && strcmp(wm[i], argv[optind + j]) != 0; j++)
      ;
    if (j == n)
      usage_error("create", "--write-mostly %s: not one of the members given", wm[i]);
  }

  /* Look at every member before touching any. */
  for (i = 0; i < n; i++) {
    const char *path = argv[optind + i];

    for (j = 0; j < i; j++)
      if (strcmp(path, argv[optind + j]) == 0) {
        error("member %s is given twice", path);
        return EXIT_FAIL;
      }
    if (probe_member(path, &info[i]) < 0)
      return EXIT_FAIL;
    if (info[i].what[0]) {
      if (!force) {
        error("member %s contains %s; use --force to overwrite it", path,
              info[i].what);
        return EXIT_FAIL;
      }
      warning("member %s contains %s: overwriting it (--force)", path, info[i].what);
    }
    /* Data starts at 1 MiB, aligned to what the device says is optimal. */
    align = info[i].optimal_io > align ? info[i].optimal_io : align;
    align = info[i].physical_sector > align ? info[i].physical_sector : align;
  }
  if (cfg.metadata == RAID_METADATA_1_0)
    offset = 0;                 /* md's 1.0: data from sector 0 */
  else {
    offset = round_up(offset, align);
    for (i = 0; i < n; i++)
      if (info[i].alignment_offset && align) {
        offset += info[i].alignment_offset % align;   /* misaligned device */
        break;
      }
  }
  for (i = 0; i < n; i++) {
    uint64_t end = data_end(cfg.metadata, info[i].size);

    if (end <= offset) {
      if (cfg.metadata == RAID_METADATA_1_0)
        error("member %s is too small: %" PRIu64 " bytes, no room for data "
              "before its metadata 1.0 superblock", argv[optind + i], info[i].size);
      else
        error("member %s is too small: %" PRIu64 " bytes, the data starts at %" PRIu64,
              argv[optind + i], info[i].size, offset);
      return EXIT_FAIL;
    }
    if (end - offset < min_avail)
      min_avail = end - offset;
  }
  for (i = 0; i < n; i++)
    if (data_end(cfg.metadata, info[i].size) - offset > min_avail + (1 << 20)) {
      size_format(data_end(cfg.metadata, info[i].size) - offset - min_avail, buf, sizeof buf);
      warning("members differ in size: %s of %s will not be used",
              buf, argv[optind + i]);
    }
  cfg.data_offset = offset;
  cfg.member_size = min_avail;

  /* Refuse bad geometry before anything is wiped. */
  {
    uint64_t sizes[RAID_MAX_MEMBERS];
    for (i = 0; i < n; i++)
      sizes[i] = info[i].size;
    if (raid_config_check(&cfg, sizes, (const char *const *)argv + optind, NULL) < 0) {
      error("%s", raid_get_error());
      return EXIT_FAIL;
    }
  }

  for (i = 0; i < n; i++) {
    if (wipe_member(argv[optind + i]) < 0)
      goto out;
    r = raid_member_open(argv[optind + i], 0, &members[i]);
    if (r < 0) {
      error("%s", raid_get_error());
      goto out;
    }
    for (j = 0; j < nwm; j++)
      if (strcmp(wm[j], argv[optind + i]) == 0)
        raid_member_set_write_mostly(members[i], 1);
  }
  r = raid_array_create(&cfg, members, assume_clean ? RAID_CREATE_ASSUME_CLEAN : 0, &a);
  if (r < 0) {
    error("%s", raid_get_error());
    goto out;
  }
  for (i = 0; i < n; i++)
    members[i] = NULL;          /* the array's now */

  /* Like md, the initial resync runs in the background once the array is
   * started in raidd; without raidd it runs here, with the same engine. */
  if (raid_array_needs_resync(a) && (no_start || !raidd_running())) {
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
    for (i = 0; i < n; i++)
      json_object_array_add(ms, json_object_new_string(argv[optind + i]));
    json_object_object_add(o, "members", ms);
    json_result(o);
  }
  else
    printf("raidctl: created %s array %s (UUID %s): %u members, %s, metadata %s\n",
           level_name(cfg.level), cfg.name, uuid, n, buf, raid_metadata_name(cfg.metadata));
  status = EXIT_OK;

 out:
  raid_array_free(a);           /* marks it clean */
  for (i = 0; i < n; i++)
    raid_member_close(members[i]);
  /* Like mdadm --create, the new array starts running: in raidd, when it
   * is there. */
  if (status == EXIT_OK && !no_start && raidd_running())
    status = start_in_raidd(cfg.name, argv + optind, n, false, false);
  return status;
}
