/* Arrays started and stopped: the assemble and stop verbs, raidd's own
 * stop of every array as it exits, and which members running arrays hold.
 *   {"verb": "assemble", "members": [...], "name": "md0", "run": false,
 *    "force": false}
 *   {"verb": "stop", "name": "md0", "force": false} */
#include <config.h>

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "raidd.h"
#include "control.h"
#include "exports-internal.h"
#include "member-id.h"
#include "member-stat.h"
#include "events.h"

static const char *nbd_socket;     /* for the URIs we hand out */
/* raidd --rebuild-min/--rebuild-max (md's speed_limit_min/max): for every
 * array assembled; -1: the library's own. */
static int64_t rebuild_min = -1, rebuild_max = -1;

void
control_set_rebuild_limits(int64_t min, int64_t max)
{
  rebuild_min = min;
  rebuild_max = max;
}

void
control_set_nbd_socket(const char *path)
{
  nbd_socket = path;
}

/* ---- assemble ------------------------------------------------------------- */

/* S percent-encoded at P, for a URI: every byte outside RFC 3986's
 * unreserved set (and '/', which a path and a query may hold as it is),
 * so that a socket path with a space, '&', '?', '#' or '%' still parses
 * (libnbd decodes it).  Returns the end of what was written. */
static char *
percent_encode(char *p, char *end, const char *s)
{
  static const char hex[] = "0123456789ABCDEF";

  for (; *s && p + 4 <= end; s++) {
    unsigned char c = *s;

    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
        c == '-' || c == '.' || c == '_' || c == '~' || c == '/')
      *p++ = c;
    else {
      *p++ = '%';
      *p++ = hex[c >> 4];
      *p++ = hex[c & 15];
    }
  }
  *p = '\0';
  return p;
}

void
export_uri(const char *name, char *buf, size_t len)
{
  char *p = buf, *end = buf + len - 1;

  p += snprintf(buf, len, "nbd+unix:///");
  p = percent_encode(p, end, name);
  if (p + 8 < end) {
    strcpy(p, "?socket=");
    percent_encode(p + 8, end, nbd_socket ? nbd_socket : "");
  }
}

/* A member is in use when a running array holds it under that name or
 * under another name for the same file or device (a symlink, a second
 * path): names are compared first, then what stat() says they are. */
struct in_use {
  const char *path;
  struct stat st;
  bool have_st;
  const char *by;
};

static void
check_in_use(struct export *e, void *opaque)
{
  struct raid_member_info info[RAID_MAX_MEMBERS * 3];
  struct in_use *u = opaque;
  struct stat st;
  unsigned i, n;
  int role;

  if (u->by)
    return;
  if (raid_array_find_member(export_array(e), u->path, &role) == 0) {
    u->by = export_name(e);
    return;
  }
  if (!u->have_st)
    return;
  n = raid_array_members(export_array(e), info, RAID_MAX_MEMBERS * 3);
  for (i = 0; i < n && i < RAID_MAX_MEMBERS * 3 && !u->by; i++)
    if (info[i].name && stat_member(info[i].name, &st) == 0 && same_member(&st, &u->st))
      u->by = export_name(e);
}

json_object *
member_name_check(const char *who, const char *path)
{
  char file[PATH_MAX], why[PATH_MAX + 256];

  if (path == NULL || path[0] == '\0')
    return ctl_fail("%s: no member named", who);
  /* A remote member is named by its URI, whatever raidd's cwd. */
  if (member_spec_check_uri(path, why, sizeof why) < 0)
    return ctl_fail("%s: %s", who, why);
  if (member_spec_remote(path))
    return NULL;
  /* A simulated drive, "sim:FILE?...", is named by its file. */
  if (raid_member_spec_file(path, file, sizeof file) == 0 && file[0] == '/')
    return NULL;
  return ctl_fail("%s: member '%s' is neither an absolute path nor a remote member's "
                  "URI (nbd://, nbds://, nbd+unix://, nbds+unix://)", who, path);
}

const char *
member_in_use(const char *path)
{
  struct in_use u = { .path = path };

  u.have_st = stat_member(path, &u.st) == 0;
  exports_foreach(check_in_use, &u);
  return u.by;
}

/* What --force did, for the reply: "level", "degraded", "needs_resync",
 * and "forced": [{"member", "role", "events_from", "events_to",
 * "was_faulty"}] when members were taken back. */
static void
add_forced(json_object *r, struct raid_array *a)
{
  struct raid_forced_member fm[RAID_MAX_MEMBERS];
  unsigned i, n = raid_array_forced_members(a, fm, RAID_MAX_MEMBERS);
  json_object *list;

  /* Always: a dirty degraded RAID 5 forced with no member taken back
   * says so too (raidctl: its resync waits for the rebuild). */
  json_object_object_add(r, "level", json_object_new_int(raid_array_level(a)));
  json_object_object_add(r, "degraded", json_object_new_int(raid_array_degraded(a)));
  json_object_object_add(r, "needs_resync",
                         json_object_new_boolean(raid_array_needs_resync(a)));
  if (n == 0)
    return;
  list = json_object_new_array();
  for (i = 0; i < n && i < RAID_MAX_MEMBERS; i++) {
    json_object *o = json_object_new_object();

    json_object_object_add(o, "member", json_object_new_string(fm[i].name));
    json_object_object_add(o, "role", json_object_new_int(fm[i].role));
    json_object_object_add(o, "events_from", json_object_new_int64(fm[i].events_from));
    json_object_object_add(o, "events_to", json_object_new_int64(fm[i].events_to));
    json_object_object_add(o, "was_faulty", json_object_new_boolean(fm[i].was_faulty));
    json_object_array_add(list, o);
  }
  json_object_object_add(r, "forced", list);
}

json_object *
do_assemble(json_object *req)
{
  json_object *jm, *r;
  struct raid_member *m[RAID_MAX_MEMBERS];
  const char *name = ctl_get_string(req, "name");
  struct raid_array *a;
  struct export *e;
  size_t n, i;
  int rc;

  if (!json_object_object_get_ex(req, "members", &jm) ||
      !json_object_is_type(jm, json_type_array) ||
      (n = json_object_array_length(jm)) == 0)
    return ctl_fail("assemble: no members given");
  if (n > RAID_MAX_MEMBERS)
    return ctl_fail("assemble: %zu members, at most %u", n, RAID_MAX_MEMBERS);
  if (name && (e = export_get(name)) != NULL) {
    export_put(e);
    return ctl_fail("array %s is already running", name);
  }
  for (i = 0; i < n; i++) {
    const char *p = json_object_get_string(json_object_array_get_idx(jm, i));
    const char *by;

    if ((r = member_name_check("assemble", p)) != NULL)
      return r;
    if ((by = member_in_use(p)) != NULL)
      return ctl_fail("member %s is already in running array %s", p, by);
  }
  for (i = 0; i < n; i++) {
    const char *p = json_object_get_string(json_object_array_get_idx(jm, i));
    rc = raid_member_open(p, 0, &m[i]);
    if (rc < 0) {
      r = ctl_fail("%s", raid_get_error());
      while (i-- > 0)
        raid_member_close(m[i]);
      return r;
    }
  }
  rc = raid_array_assemble(name, m, n, (ctl_get_bool(req, "run") ? RAID_ASSEMBLE_RUN : 0) |
                           (ctl_get_bool(req, "force") ? RAID_ASSEMBLE_FORCE : 0), &a);
  if (rc < 0) {
    r = ctl_fail("%s", raid_get_error());
    for (i = 0; i < n; i++)
      raid_member_close(m[i]);
    return r;
  }
  rc = exports_add(raid_array_name(a), a, ctl_get_bool(req, "readonly"));
  if (rc < 0) {
    r = ctl_fail("array %s is already running", raid_array_name(a));
    raid_array_free(a);
    return r;
  }
  if (rebuild_min >= 0 || rebuild_max >= 0) {
    struct raid_sync_status st;

    raid_array_sync_status(a, &st);
    raid_array_set_sync_limits(a, rebuild_min >= 0 ? (uint64_t)rebuild_min : st.min_rate,
                               rebuild_max >= 0 ? (uint64_t)rebuild_max : st.max_rate);
  }
  events_array_started(a);
  /* md's behaviour: rebuilds, hot spares and resyncs start by themselves
   * (a RAID 0's too, once a takeover makes it a RAID 5). */
  if (!ctl_get_bool(req, "readonly"))
    raid_array_set_auto_sync(a, 1);
  log_event(RAID_LOG_INFO, raid_array_name(a), NULL, "assembled",
            "%s: assembled: raid%d, %u of %u members%s", raid_array_name(a),
           raid_array_level(a), raid_array_raid_disks(a) - raid_array_degraded(a),
           raid_array_raid_disks(a), raid_array_degraded(a) ? " (degraded)" : "");
  /* Why it needs one (new, unclean, or a resync interrupted by a clean
   * stop, resumed where it was) is the library's warning, just before. */
  if (raid_array_needs_resync(a) && !ctl_get_bool(req, "readonly"))
    log_info("%s: needs a resync: it runs in the background", raid_array_name(a));
  else if (raid_array_needs_resync(a))
    log_warn("%s: needs a resync, but is read-only: mirrors or parity may disagree",
             raid_array_name(a));
  r = ctl_ok();
  json_object_object_add(r, "name", json_object_new_string(raid_array_name(a)));
  add_forced(r, a);
  /* The ublk device a killed raidd left for this array comes back. */
  ublk_assembled(raid_array_name(a), r);
  if (nbd_socket) {
    char uri[1024];
    export_uri(raid_array_name(a), uri, sizeof uri);
    json_object_object_add(r, "uri", json_object_new_string(uri));
  }
  return r;
}

/* ---- stop ------------------------------------------------------------------- */

json_object *
do_stop(json_object *req)
{
  const char *name = ctl_get_string(req, "name");
  bool force = ctl_get_bool(req, "force");
  struct export *e;
  int conns, i, ublk, nbd;
  char err[512], path[64];

  if (name == NULL)
    return ctl_fail("stop: no array name given");
  e = export_get(name);
  if (e == NULL)
    return ctl_fail("array %s is not running", name);
  /* Everything is checked before anything changes.  A client that has
   * just closed its connection is counted until its worker sees the
   * socket close: give that two seconds, as mdadm --stop retries a busy
   * array for a while. */
  for (i = 0; (conns = export_conns(e)) > 0 && !force && i < 20; i++)
    usleep(100000);
  if (conns > 0 && !force) {
    export_put(e);
    return ctl_fail("array %s is in use by %d NBD connection%s; stop them or use "
                "--force", name, conns, conns == 1 ? "" : "s");
  }
  /* Its block devices: refused while one is mounted or held (then
   * --force pulls it away); an unused one goes with the array. */
  ublk = ublk_dev_of(e);
  nbd = nbd_attached(e);
  for (i = 0; i < 2 && !force; i++) {
    int n = i ? nbd : ublk;

    snprintf(path, sizeof path, i ? "/dev/nbd%d" : "/dev/ublkb%d", n);
    if (n >= 0 && blockdev_in_use(path)) {
      export_put(e);
      return ctl_fail("stop %s: %s is in use (mounted, or held by md, device-mapper or "
                  "another program): unmount it first, or use --force", name, path);
    }
  }
  if ((ublk >= 0 && ublk_remove(e, true, err, sizeof err) < 0) ||
      (nbd >= 0 && nbd_detach(e, true, err, sizeof err) < 0)) {
    export_put(e);
    return ctl_fail("stop %s: %s", name, err);
  }
  export_put(e);
  e = exports_remove(name);
  if (e == NULL)
    return ctl_fail("array %s is not running", name);
  nbd_server_disconnect(e);
  export_put(e);                /* frees it once the last user is gone */
  log_event(RAID_LOG_INFO, name, NULL, "stopped", "%s: stopped", name);
  return ctl_ok();
}

static void
stop_one(struct export *e, void *opaque)
{
  char **names = opaque;
  unsigned i;

  for (i = 0; names[i]; i++)
    ;
  if (i < RAIDD_MAX_EXPORTS)
    names[i] = strdup(export_name(e));
}

void
control_stop_all_arrays(void)
{
  char *names[RAIDD_MAX_EXPORTS + 1] = { NULL };
  unsigned i;

  exports_foreach(stop_one, names);
  for (i = 0; names[i]; i++) {
    struct export *e = exports_remove(names[i]);
    if (e)
      export_put(e);
    free(names[i]);
  }
}
