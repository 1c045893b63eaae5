/* What is on a member before we use it, through libblkid: signatures of
 * file systems, partition tables and RAID members (refused unless
 * --force, then wiped so nothing stale is detected later), and the
 * device's topology (sector sizes, alignment, optimal I/O size), which
 * places the data offset.  A remote member (an NBD URI) has no file to
 * hand libblkid: facts.c reads its md superblock through the library
 * instead, and it has no topology. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <blkid.h>

#include "raidctl.h"
#include "member-stat.h"

/* A remote member's name is its URI, as given (it is its name in raidd's
 * status, detail and examine); a URI of another scheme is refused here,
 * before it could be taken for a relative path. */
static int
member_uri(const char *arg, char *buf, size_t len)
{
  char why[PATH_MAX + 256];

  if (member_spec_check_uri(arg, why, sizeof why) < 0) {
    error("%s", why);
    return -1;
  }
  if ((size_t)snprintf(buf, len, "%s", arg) >= len) {
    error("member %s: name too long", arg);
    return -1;
  }
  return 0;
}

int
member_abs(const char *arg, bool must_exist, char *buf, size_t len)
{
  const char *opts = NULL, *prefix = "";
  char file[PATH_MAX], absf[PATH_MAX];

  if (member_spec_is_uri(arg))
    return member_uri(arg, buf, len);
  /* raidd runs elsewhere (cwd "/"), so it gets absolute names; a simulated
   * drive keeps its "sim:" prefix and options around its file's. */
  if (raid_member_spec_file(arg, file, sizeof file) < 0) {
    error("%s", raid_get_error());
    return -1;
  }
  if (strcmp(file, arg) != 0) {
    prefix = "sim:";
    opts = strchr(arg + strlen(prefix), '?');
  }
  if (realpath(file, absf) == NULL) {
    if (must_exist) {
      error("member %s: %m", file);
      return -1;
    }
    if (file[0] == '/' || getcwd(absf, sizeof absf) == NULL)
      snprintf(absf, sizeof absf, "%s", file);
    else {
      size_t n = strlen(absf);

      if ((size_t)snprintf(absf + n, sizeof absf - n, "/%s", file) >= sizeof absf - n) {
        error("member %s: name too long", arg);
        return -1;
      }
    }
  }
  if ((size_t)snprintf(buf, len, "%s%s%s", prefix, absf, opts ? opts : "") >= len) {
    error("member %s: name too long", arg);
    return -1;
  }
  return 0;
}

static blkid_probe
open_probe(const char *spec, int flags, int *fdp)
{
  char path[PATH_MAX];
  blkid_probe pr;
  int fd;

  /* A simulated drive is probed through its backing file. */
  if (raid_member_spec_file(spec, path, sizeof path) < 0) {
    error("%s", raid_get_error());
    return NULL;
  }
  fd = open(path, flags | O_CLOEXEC);
  if (fd < 0) {
    error("%s: %s", path, strerror(errno));
    return NULL;
  }
  pr = blkid_new_probe();
  if (pr == NULL || blkid_probe_set_device(pr, fd, 0, 0) != 0) {
    error("%s: libblkid cannot probe it", path);
    if (pr)
      blkid_free_probe(pr);
    close(fd);
    return NULL;
  }
  *fdp = fd;
  return pr;
}

int
probe_member(const char *path, struct probe_info *info)
{
  blkid_probe pr;
  blkid_topology tp;
  const char *type = NULL, *uuid = NULL, *label = NULL;
  int fd, r;

  memset(info, 0, sizeof *info);
  pr = open_probe(path, O_RDONLY, &fd);
  if (pr == NULL)
    return -EIO;
  info->size = blkid_probe_get_size(pr);

  blkid_probe_enable_superblocks(pr, 1);
  blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_UUID |
                                    BLKID_SUBLKS_LABEL | BLKID_SUBLKS_USAGE);
  blkid_probe_enable_partitions(pr, 1);
  blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);

  r = blkid_do_safeprobe(pr);
  if (r == -2)
    snprintf(info->what, sizeof info->what, "several conflicting signatures");
  else if (r == 0) {
    const char *usage = NULL;

    blkid_probe_lookup_value(pr, "TYPE", &type, NULL);
    blkid_probe_lookup_value(pr, "USAGE", &usage, NULL);
    blkid_probe_lookup_value(pr, "UUID", &uuid, NULL);
    blkid_probe_lookup_value(pr, "LABEL", &label, NULL);
    if (type && usage && strcmp(usage, "raid") == 0)
      snprintf(info->what, sizeof info->what, "a RAID signature (%s%s%s)",
               type, uuid ? ", UUID " : "", uuid ? uuid : "");
    else if (type)
      snprintf(info->what, sizeof info->what, "%s %s signature%s%s%s%s",
               usage && strcmp(usage, "filesystem") == 0 ? "a file system:" : "a",
               type, uuid ? " UUID " : "", uuid ? uuid : "",
               label ? " LABEL " : "", label ? label : "");
    else if (blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL) == 0)
      snprintf(info->what, sizeof info->what, "a partition table (%s)", type);
  }
  else if (r < 0) {
    error("%s: libblkid failed to probe it", path);
    blkid_free_probe(pr);
    close(fd);
    return -EIO;
  }

  /* Topology comes from the block layer; a regular file has none. */
  tp = blkid_probe_get_devno(pr) ? blkid_probe_get_topology(pr) : NULL;
  if (tp) {
    info->logical_sector = blkid_topology_get_logical_sector_size(tp);
    info->physical_sector = blkid_topology_get_physical_sector_size(tp);
    info->alignment_offset = blkid_topology_get_alignment_offset(tp);
    info->minimum_io = blkid_topology_get_minimum_io_size(tp);
    info->optimal_io = blkid_topology_get_optimal_io_size(tp);
  }
  blkid_free_probe(pr);
  close(fd);
  return 0;
}

int
wipe_member(const char *path)
{
  blkid_probe pr;
  int fd, r = 0;

  pr = open_probe(path, O_RDWR, &fd);
  if (pr == NULL)
    return -EIO;
  blkid_probe_enable_superblocks(pr, 1);
  blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_MAGIC);
  blkid_probe_enable_partitions(pr, 1);
  blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
  while (blkid_do_probe(pr) == 0) {
    if (blkid_do_wipe(pr, 0) != 0) {
      error("%s: failed to wipe an old signature: %s", path, strerror(errno));
      r = -EIO;
      break;
    }
  }
  if (r == 0 && fsync(fd) != 0) {
    error("%s: fsync: %s", path, strerror(errno));
    r = -EIO;
  }
  blkid_free_probe(pr);
  close(fd);
  return r;
}
