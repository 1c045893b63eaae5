/* raidctl examine-bitmap [--json] MEMBER...      (mdadm --examine-bitmap, -X)
 *
 * Offline: reads each member's md superblock and the internal write-intent
 * bitmap it points at (libraid's raid_bitmap_read() validates it as md
 * does, and checks its UUID against the array's), and prints it the way
 * mdadm -X does, field for field, so that scripts written for mdadm's
 * output ("Bitmap : N bits (chunks), M dirty") read ours. */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "raidctl.h"
#include "member-stat.h"

/* mdadm's human_chunksize(): "64 MB", "512 KB". */
static void
chunk_text(uint32_t bytes, char *buf, size_t len)
{
  static const char *const units[] = { "B", "KB", "MB", "GB" };
  unsigned i = 0;

  while (bytes >= 1024 && i + 1 < sizeof units / sizeof units[0] && bytes % 1024 == 0) {
    bytes /= 1024;
    i++;
  }
  snprintf(buf, len, "%" PRIu32 " %s", bytes, units[i]);
}

/* mdadm's human_size() for Sync Size: " (1023.94 MiB 1073.68 MB)". */
static void
size_text(uint64_t bytes, char *buf, size_t len)
{
  if (bytes < (UINT64_C(2) << 30))
    snprintf(buf, len, " (%.2f MiB %.2f MB)", bytes / 1048576.0, bytes / 1e6);
  else
    snprintf(buf, len, " (%.2f GiB %.2f GB)", bytes / 1073741824.0, bytes / 1e9);
}

static const char *
state_text(uint32_t state)
{
  if (state & RAID_BITMAP_STATE_STALE)
    return "Out of date";
  if (state & RAID_BITMAP_STATE_WRITE_ERROR)
    return "Write error";
  return "OK";
}

static void
print_text(const char *path, const struct raid_bitmap_super *b, uint64_t dirty)
{
  uint64_t bits = raid_bitmap_chunks(b);
  char uuid[40], buf[64];

  printf("%16s : %s\n", "Filename", path);
  printf("%16s : %08" PRIx32 "\n", "Magic", b->magic);
  printf("%16s : %" PRIu32 "\n", "Version", b->version);
  uuid_format(b->uuid, uuid);
  printf("%16s : %s\n", "UUID", uuid);
  printf("%16s : %" PRIu64 "\n", "Events", b->events);
  printf("%16s : %" PRIu64 "\n", "Events Cleared", b->events_cleared);
  printf("%16s : %s\n", "State", state_text(b->state));
  chunk_text(b->chunksize, buf, sizeof buf);
  printf("%16s : %s\n", "Chunksize", buf);
  printf("%16s : %" PRIu32 "s flush period\n", "Daemon", b->daemon_sleep);
  if (b->write_behind)
    printf("%16s : Allow write behind, max %" PRIu32 "\n", "Write Mode", b->write_behind);
  else
    printf("%16s : Normal\n", "Write Mode");
  size_text(b->sync_size * 512, buf, sizeof buf);
  printf("%16s : %" PRIu64 "%s\n", "Sync Size", b->sync_size / 2, buf);
  printf("%16s : %" PRIu64 " bits (chunks), %" PRIu64 " dirty (%.1f%%)\n", "Bitmap",
         bits, dirty, 100.0 * (double)dirty / (double)(bits ? bits : 1));
}

static json_object *
to_json(const char *path, const struct raid_superblock *sb,
        const struct raid_bitmap_super *b, uint64_t dirty)
{
  json_object *o = json_object_new_object();
  char uuid[40];

#define ADD(k, v) json_object_object_add(o, k, v)
  ADD("member", json_object_new_string(path));
  ADD("magic", json_object_new_int64(b->magic));
  ADD("version", json_object_new_int64(b->version));
  uuid_format(b->uuid, uuid);
  ADD("uuid", json_object_new_string(uuid));
  ADD("events", json_object_new_int64((int64_t)b->events));
  ADD("events_cleared", json_object_new_int64((int64_t)b->events_cleared));
  ADD("state", json_object_new_string(state_text(b->state)));
  ADD("chunk_size", json_object_new_int64(b->chunksize));
  ADD("daemon_sleep", json_object_new_int64(b->daemon_sleep));
  ADD("write_behind", json_object_new_int64(b->write_behind));
  ADD("sync_size", json_object_new_int64((int64_t)(b->sync_size * 512)));
  ADD("sectors_reserved", json_object_new_int64(b->sectors_reserved));
  ADD("bitmap_offset", json_object_new_int64((int64_t)sb->bitmap_offset * 512));
  ADD("bits", json_object_new_int64((int64_t)raid_bitmap_chunks(b)));
  ADD("dirty", json_object_new_int64((int64_t)dirty));
#undef ADD
  return o;
}

int
cmd_examine_bitmap(int argc, char **argv)
{
  static const struct option opts[] = {
    { "json", no_argument, NULL, 'J' },
    { NULL, 0, NULL, 0 },
  };
  json_object *arr = NULL;
  int c, i, status = EXIT_OK;

  while ((c = verb_getopt(argc, argv, "", opts)) != -1)
    if (c == 'J')
      opt.json = true;
  if (optind >= argc)
    usage_error("examine-bitmap", "no members given");
  if (opt.json)
    arr = json_object_new_array();
  for (i = optind; i < argc; i++) {
    struct raid_superblock sb;
    struct raid_bitmap_super b;
    struct raid_member *m;
    uint64_t dirty = 0;
    char why[1024];
    int r;

    if (member_spec_check_uri(argv[i], why, sizeof why) < 0) {
      error("%s", why);
      status = EXIT_FAIL;
      continue;
    }
    r = raid_member_open(argv[i], RAID_MEMBER_READONLY | RAID_MEMBER_BUFFERED, &m);
    if (r == 0) {
      r = raid_superblock_read(m, &sb);
      if (r == 0)
        r = raid_bitmap_read(m, &sb, &b, &dirty);
      raid_member_close(m);
    }
    if (r < 0) {
      error("%s", raid_get_error());
      status = EXIT_FAIL;
      continue;
    }
    if (arr)
      json_object_array_add(arr, to_json(argv[i], &sb, &b, dirty));
    else {
      if (i > optind)
        printf("\n");
      print_text(argv[i], &b, dirty);
    }
  }
  if (arr)
    json_result(arr);
  return status;
}
