/* Members that come back: md's incremental re-add, for running arrays.
 *
 * A mirror started degraded (raidctl assemble --run, or assemble --scan's
 * last resort) goes on without one member.  When that member's device
 * returns (a "change" or "add" uevent, seen by udev-watch.c) or raidctl
 * names it ("incremental" verb, from assemble --scan), it is put back if
 * the library's raid_array_readd_check() agrees: it carries the UUID of an
 * array raidd runs, held a role there, was missing when that array was
 * assembled (not a member that failed or was removed since: those are
 * added back by hand, as with md), a role is free, and it was not used on
 * its own since it left (a split mirror, whose writes a rebuild would
 * overwrite).  Its superblock is read through a read-only open first, so
 * nothing is opened for writing unless it is taken back.  Without a
 * write-intent bitmap nothing says which blocks it missed, so it is
 * rebuilt in full, as an added member is. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "raidd.h"
#include "control.h"

struct find {
  const uint8_t *uuid;
  char name[64];
};

static void
match_uuid(struct export *e, void *opaque)
{
  struct find *f = opaque;
  struct raid_superblock *sb = malloc(sizeof *sb);

  if (sb && f->name[0] == '\0' && raid_array_superblock(export_array(e), sb) == 0 &&
      memcmp(sb->set_uuid, f->uuid, 16) == 0)
    snprintf(f->name, sizeof f->name, "%s", export_name(e));
  free(sb);
}

int
array_of_superblock(const struct raid_superblock *sb, char *name, size_t len)
{
  return array_of_uuid(sb->set_uuid, name, len);
}

int
array_of_uuid(const uint8_t *uuid, char *name, size_t len)
{
  struct find f = { uuid, "" };

  exports_foreach(match_uuid, &f);
  snprintf(name, len, "%s", f.name);
  return f.name[0] ? 0 : -1;
}

int
member_return(const char *path, bool from_udev, char *array, size_t len, int *rolep,
              char *err, size_t errlen)
{
  struct raid_superblock *sb = NULL;
  struct raid_member *m;
  struct export *e = NULL;
  const char *by;
  int r = -1;

  err[0] = '\0';
  array[0] = '\0';
  if ((by = member_in_use(path)) != NULL) {
    snprintf(err, errlen, "member %s is already in running array %s", path, by);
    return -1;
  }
  if ((sb = malloc(sizeof *sb)) == NULL) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  /* Read-only first: nothing is opened for writing (which udevd answers
   * with a "change" uevent) unless the member is taken back. */
  if (raid_superblock_read_path(path, 0, sb) < 0) {
    snprintf(err, errlen, "%s", raid_get_error());
    goto out;
  }
  if (array_of_superblock(sb, array, len) < 0 || (e = export_get(array)) == NULL) {
    snprintf(err, errlen, "member %s belongs to array %s, which raidd is not running "
             "(assemble it)", path, sb->set_name);
    array[0] = '\0';
    goto out;
  }
  if (raid_array_readd_check(export_array(e), sb, path) < 0) {
    snprintf(err, errlen, "%s", raid_get_error());
    goto out;
  }
  if (export_readonly(e)) {
    snprintf(err, errlen, "array %s is read-only: it cannot rebuild %s", array, path);
    goto out;
  }
  if (raid_member_open(path, 0, &m) < 0 ||
      raid_array_readd_member(export_array(e), m, rolep) < 0) {     /* owns m */
    snprintf(err, errlen, "%s", raid_get_error());
    goto out;
  }
  log_warn("%s: member %s is back (events %" PRIu64 "%s): re-added in role %d, "
           "rebuilding it in full", array, path, sb->events,
           from_udev ? ", seen by udev" : "", *rolep);
  r = 0;

 out:
  export_put(e);
  free(sb);
  return r;
}

json_object *
do_incremental(json_object *req)
{
  const char *path = ctl_get_string(req, "member");
  char array[64] = "", err[1024];
  const char *by;
  json_object *r;
  int role = -1;

  if ((r = member_name_check("incremental", path)) != NULL)
    return r;
  /* Taken back already (by a uevent, just before): done. */
  if ((by = member_in_use(path)) != NULL) {
    r = ctl_ok();
    json_object_object_add(r, "name", json_object_new_string(by));
    json_object_object_add(r, "already", json_object_new_boolean(1));
    return r;
  }
  if (member_return(path, false, array, sizeof array, &role, err, sizeof err) < 0)
    return ctl_fail("%s", err);
  r = ctl_ok();
  json_object_object_add(r, "name", json_object_new_string(array));
  json_object_object_add(r, "role", json_object_new_int(role));
  return r;
}
