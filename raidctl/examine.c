/* raidctl examine MEMBER...      (mdadm --examine)
 * raidctl examine --scan [-v]    (mdadm --examine --scan)
 *
 * Offline: reads md version-1 superblocks (1.0, 1.1 or 1.2, wherever
 * they lie) straight from the members, with no daemon involved.  --scan
 * prints one ARRAY line per set UUID of what conf/scan.c finds on the
 * block devices. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "raidctl.h"
#include "member-stat.h"
#include "sizes.h"

/* "AAA." : which roles the superblock says are active. */
static void
array_state(const struct raid_superblock *sb, char *buf)
{
  unsigned i;

  for (i = 0; i < sb->raid_disks && i < RAID_MAX_MEMBERS; i++)
    buf[i] = '.';
  buf[i] = '\0';
  for (i = 0; i < sb->max_dev; i++)
    if (sb->dev_roles[i] < sb->raid_disks && sb->dev_roles[i] < RAID_MAX_MEMBERS)
      buf[sb->dev_roles[i]] = 'A';
}

static void
role_name(const struct raid_superblock *sb, char *buf, size_t len)
{
  unsigned role = sb->dev_number < sb->max_dev ? sb->dev_roles[sb->dev_number]
                                               : RAID_SB_ROLE_SPARE;
  if (role == RAID_SB_ROLE_SPARE)
    snprintf(buf, len, "spare");
  else if (role == RAID_SB_ROLE_FAULTY)
    snprintf(buf, len, "faulty");
  else
    snprintf(buf, len, "Active device %u", role);
}

/* Array size from the superblock, as md computes it. */
static uint64_t
array_sectors(const struct raid_superblock *sb)
{
  uint64_t size = sb->size;

  switch (sb->level) {
  case 0: return size * sb->raid_disks;
  case 1: return size;
  case 4: case 5: return size * (sb->raid_disks - 1);
  case 10:
    if (sb->chunksize == 0 || (sb->layout & 0xff) == 0)
      return 0;
    return size / sb->chunksize * sb->raid_disks / (sb->layout & 0xff) * sb->chunksize;
  default: return 0;
  }
}

static void
print_sectors(const char *label, uint64_t sectors)
{
  char h[32];
  size_format(sectors << 9, h, sizeof h);
  printf("%16s : %" PRIu64 " sectors (%s)\n", label, sectors, h);
}

static void
print_text(const char *path, const struct raid_superblock *sb)
{
  char uuid[40], buf[64], state[RAID_MAX_MEMBERS + 1];

  printf("%s:\n", path);
  printf("%16s : %08x\n", "Magic", RAID_SB_MAGIC);
  printf("%16s : %s\n", "Version", raid_metadata_name(raid_superblock_version(sb)));
  printf("%16s : 0x%x\n", "Feature Map", sb->feature_map);
  uuid_format(sb->set_uuid, uuid);
  printf("%16s : %s\n", "Array UUID", uuid);
  printf("%16s : %s\n", "Name", sb->set_name);
  time_format(sb->ctime, buf, sizeof buf);
  printf("%16s : %s\n", "Creation Time", buf);
  printf("%16s : %s\n", "Raid Level", level_name(sb->level));
  printf("%16s : %u\n\n", "Raid Devices", sb->raid_disks);
  print_sectors("Avail Dev Size", sb->data_size);
  print_sectors("Array Size", array_sectors(sb));
  print_sectors("Used Dev Size", sb->size);
  printf("%16s : %" PRIu64 " sectors\n", "Data Offset", sb->data_offset);
  if (sb->feature_map & RAID_SB_FEATURE_NEW_OFFSET)  /* as mdadm -E says it */
    printf("%16s : %" PRIu64 " sectors\n", "New Offset",
           sb->data_offset + (uint64_t)(int64_t)sb->new_offset);
  printf("%16s : %" PRIu64 " sectors\n", "Super Offset", sb->super_offset);
  if (sb->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE) {
    printf("%16s : %" PRIu64 " (%.2f MiB)\n", "Reshape pos'n", sb->reshape_position / 2,
           sb->reshape_position / 2048.0);
    if (sb->delta_disks)
      printf("%16s : %" PRId32 " (%" PRIu32 "->%" PRIu32 ")\n", "Delta Devices",
             sb->delta_disks, sb->raid_disks - (uint32_t)sb->delta_disks, sb->raid_disks);
    if (sb->new_layout != sb->layout) {
      char nl[64];

      layout_name(sb->level, (int)sb->new_layout, nl, sizeof nl);
      printf("%16s : %s\n", "New Layout", nl);
    }
    if (sb->new_chunk != sb->chunksize)
      printf("%16s : %" PRIu32 "K\n", "New Chunksize", sb->new_chunk / 2);
  }
  if (sb->feature_map & RAID_SB_FEATURE_BITMAP)     /* as mdadm -E says it */
    printf("%16s : %" PRId32 " sectors from superblock\n", "Internal Bitmap",
           sb->bitmap_offset);
  if (sb->feature_map & RAID_SB_FEATURE_RECOVERY_OFFSET)
    printf("%16s : %" PRIu64 " sectors\n", "Recovery Offset", sb->recovery_offset);
  printf("%16s : %s\n", "State",
         sb->resync_offset == RAID_SB_MAX_SECTOR ? "clean" : "active");
  uuid_format(sb->device_uuid, uuid);
  printf("%16s : %s\n", "Device UUID", uuid);
  if (sb->devflags & RAID_SB_DEVFLAG_WRITE_MOSTLY)
    printf("%16s : write-mostly\n", "Flags");        /* as mdadm says it */
  printf("\n");
  time_format(sb->utime, buf, sizeof buf);
  printf("%16s : %s\n", "Update Time", buf);
  printf("%16s : %08x - correct\n", "Checksum", sb->sb_csum);
  printf("%16s : %" PRIu64 "\n\n", "Events", sb->events);
  if (sb->level == 5 || sb->level == 10) {
    layout_name(sb->level, sb->layout, buf, sizeof buf);
    printf("%16s : %s\n", "Layout", buf);
  }
  if (sb->level != 1)
    printf("%16s : %uK\n\n", "Chunk Size", sb->chunksize / 2);
  role_name(sb, buf, sizeof buf);
  printf("%16s : %s\n", "Device Role", buf);
  array_state(sb, state);
  printf("%16s : %s ('A' == active, '.' == missing)\n", "Array State", state);
}

static json_object *
to_json(const char *path, const struct raid_superblock *sb)
{
  json_object *o = json_object_new_object();
  char uuid[40], buf[64], state[RAID_MAX_MEMBERS + 1];

#define ADD(k, v) json_object_object_add(o, k, v)
  ADD("member", json_object_new_string(path));
  ADD("version", json_object_new_string(raid_metadata_name(raid_superblock_version(sb))));
  ADD("feature_map", json_object_new_int64(sb->feature_map));
  uuid_format(sb->set_uuid, uuid);
  ADD("uuid", json_object_new_string(uuid));
  ADD("name", json_object_new_string(sb->set_name));
  ADD("ctime", json_object_new_int64(sb->ctime & ((1ull << 40) - 1)));
  ADD("level", json_object_new_string(level_name(sb->level)));
  if (sb->level == 5 || sb->level == 10) {
    layout_name(sb->level, sb->layout, buf, sizeof buf);
    ADD("layout", json_object_new_string(buf));
  }
  ADD("chunk_size", json_object_new_int64((int64_t)sb->chunksize << 9));
  ADD("raid_disks", json_object_new_int(sb->raid_disks));
  ADD("array_size", json_object_new_int64(array_sectors(sb) << 9));
  ADD("used_dev_size", json_object_new_int64(sb->size << 9));
  ADD("data_offset", json_object_new_int64(sb->data_offset << 9));
  ADD("data_size", json_object_new_int64(sb->data_size << 9));
  ADD("super_offset", json_object_new_int64(sb->super_offset << 9));
  ADD("bitmap", json_object_new_string(sb->feature_map & RAID_SB_FEATURE_BITMAP
                                       ? "internal" : "none"));
  if (sb->feature_map & RAID_SB_FEATURE_BITMAP)
    ADD("bitmap_offset", json_object_new_int64((int64_t)sb->bitmap_offset * 512));
  /* A reshape under way: how far (array bytes), by how many members, and
   * where the new layout's data starts (bytes from the member's start). */
  if (sb->feature_map & RAID_SB_FEATURE_RESHAPE_ACTIVE) {
    json_object *r = json_object_new_object();

    json_object_object_add(r, "position", json_object_new_int64((int64_t)sb->reshape_position << 9));
    json_object_object_add(r, "delta_disks", json_object_new_int(sb->delta_disks));
    json_object_object_add(r, "new_layout", json_object_new_int((int)sb->new_layout));
    json_object_object_add(r, "new_chunk", json_object_new_int64((int64_t)sb->new_chunk << 9));
    json_object_object_add(r, "new_offset", json_object_new_int64(
                             ((int64_t)sb->data_offset + sb->new_offset) << 9));
    ADD("reshape", r);
  }
  ADD("state", json_object_new_string(sb->resync_offset == RAID_SB_MAX_SECTOR
                                      ? "clean" : "active"));
  uuid_format(sb->device_uuid, uuid);
  ADD("device_uuid", json_object_new_string(uuid));
  ADD("utime", json_object_new_int64(sb->utime & ((1ull << 40) - 1)));
  ADD("events", json_object_new_int64(sb->events));
  ADD("write_mostly", json_object_new_boolean(sb->devflags & RAID_SB_DEVFLAG_WRITE_MOSTLY));
  ADD("dev_number", json_object_new_int(sb->dev_number));
  role_name(sb, buf, sizeof buf);
  ADD("role", json_object_new_string(buf));
  array_state(sb, state);
  ADD("array_state", json_object_new_string(state));
#undef ADD
  return o;
}

/* ---- --scan ------------------------------------------------------------------ */

static int
scan(void)
{
  struct scanned *found;
  size_t nfound, i, j;
  json_object *arr;

  config_report();
  if (scan_members(opt.conf, scan_note, NULL, &found, &nfound) < 0)
    return EXIT_FAIL;
  arr = opt.json ? json_object_new_array() : NULL;

  /* One line per set UUID, in the order first seen. */
  for (i = 0; i < nfound; i++) {
    bool seen = false;
    char uuid[40], devices[4096] = "";
    json_object *o, *devs;

    for (j = 0; j < i && !seen; j++)
      seen = memcmp(found[j].sb.set_uuid, found[i].sb.set_uuid, 16) == 0;
    if (seen)
      continue;
    uuid_format(found[i].sb.set_uuid, uuid);
    devs = opt.json ? json_object_new_array() : NULL;
    for (j = i; j < nfound; j++)
      if (memcmp(found[j].sb.set_uuid, found[i].sb.set_uuid, 16) == 0) {
        if (devs)
          json_object_array_add(devs, json_object_new_string(found[j].path));
        if (devices[0])
          strncat(devices, ",", sizeof devices - strlen(devices) - 1);
        strncat(devices, found[j].path, sizeof devices - strlen(devices) - 1);
      }
    if (opt.json) {
      const char *colon = strchr(found[i].sb.set_name, ':');
      o = json_object_new_object();
      json_object_object_add(o, "name", json_object_new_string(colon ? colon + 1 : found[i].sb.set_name));
      json_object_object_add(o, "set_name", json_object_new_string(found[i].sb.set_name));
      json_object_object_add(o, "uuid", json_object_new_string(uuid));
      json_object_object_add(o, "level", json_object_new_string(level_name(found[i].sb.level)));
      json_object_object_add(o, "raid_disks", json_object_new_int(found[i].sb.raid_disks));
      json_object_object_add(o, "devices", devs);
      json_object_array_add(arr, o);
    }
    else {
      const char *colon = strchr(found[i].sb.set_name, ':');
      printf("ARRAY /dev/md/%s  metadata=%s UUID=%s name=%s\n",
             colon ? colon + 1 : found[i].sb.set_name,
             raid_metadata_name(raid_superblock_version(&found[i].sb)), uuid,
             found[i].sb.set_name);
      if (opt.verbose)
        printf("   devices=%s\n", devices);
    }
  }
  if (arr)
    json_result(arr);
  scan_free(found, nfound);
  return EXIT_OK;
}

int
cmd_examine(int argc, char **argv)
{
  static const struct option opts[] = {
    { "scan", no_argument, NULL, 's' },
    { "json", no_argument, NULL, 'J' },
    { "verbose", no_argument, NULL, 'v' },
    { NULL, 0, NULL, 0 },
  };
  bool do_scan = false;
  json_object *arr = NULL;
  int c, i, status = EXIT_OK;

  while ((c = verb_getopt(argc, argv, "v", opts)) != -1) {
    switch (c) {
    case 's': do_scan = true; break;
    case 'J': opt.json = true; break;
    case 'v': opt.verbose++; break;
    }
  }
  if (do_scan) {
    if (optind < argc)
      usage_error("examine", "--scan takes no members");
    return scan();
  }
  if (optind >= argc)
    usage_error("examine", "no members given");
  if (opt.json)
    arr = json_object_new_array();
  for (i = optind; i < argc; i++) {
    struct raid_superblock sb;
    char why[1024];

    if (member_spec_check_uri(argv[i], why, sizeof why) < 0) {
      error("%s", why);
      status = EXIT_FAIL;
      continue;
    }
    if (raid_superblock_read_path(argv[i], RAID_MEMBER_BUFFERED, &sb) < 0) {
      error("%s", raid_get_error());
      status = EXIT_FAIL;
      continue;
    }
    if (arr)
      json_object_array_add(arr, to_json(argv[i], &sb));
    else {
      if (i > optind)
        printf("\n");
      print_text(argv[i], &sb);
    }
  }
  if (arr)
    json_result(arr);             /* with the errors, when some failed */
  return status;
}
