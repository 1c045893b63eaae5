/* The drill verbs of the control socket: a drive failing, leaving, being
 * added, replaced; scrubs; rebuild speed limits.
 *   {"verb": "fail", "name": "md0", "member": "/dev/sdb", "force": false}
 *   {"verb": "remove", "name": "md0", "member": "/dev/sdb", "force": false}
 *   {"verb": "add", "name": "md0", "member": "/dev/sdc", "write_mostly": false}
 *   {"verb": "replace", "name": "md0", "old": "/dev/sdb", "new": "/dev/sdc"}
 *   {"verb": "sync", "name": "md0", "action": "check" | "repair" | "idle"}
 *   {"verb": "set", "name": "md0", "rebuild_min": 1048576, "rebuild_max": 0}
 *   {"verb": "set", "name": "md0", "safe_mode_delay": 200}   (milliseconds)
 *   {"verb": "grow", "name": "md0", "member_size": 0, "assume_clean": false,
 *    "force": false}
 *   {"verb": "grow", "name": "md0", "raid_devices": 3}
 *   {"verb": "grow", "name": "md0", "array_size": 1073741824}   (0: all)
 * Members are named by the absolute path they were assembled or added
 * with.  The work itself is the library's (lib/manage.c, lib/sync/engine.c);
 * this file finds the array and the member and says what happened. */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raidd.h"
#include "control.h"
#include "events.h"

const char *
member_state_name(int state)
{
  static const char *const names[] = {
    "in_sync", "faulty", "missing", "recovering", "spare", "replacement"
  };
  return state >= 0 && state < (int)(sizeof names / sizeof names[0]) ? names[state] : "unknown";
}

/* The export NAME with a reference, or NULL and *ERR set to the reply. */
static struct export *
find_export(json_object *req, const char *verb, json_object **err)
{
  const char *name = ctl_get_string(req, "name");
  struct export *e;

  if (name == NULL) {
    *err = ctl_fail("%s: no array name given", verb);
    return NULL;
  }
  if ((e = export_get(name)) == NULL)
    *err = ctl_fail("array %s is not running", name);
  return e;
}

/* What the array knows of member PATH: its info, or false. */
static bool
find_member(struct raid_array *a, const char *path, struct raid_member_info *out)
{
  struct raid_member_info info[RAID_MAX_MEMBERS * 3];
  unsigned i, n = raid_array_members(a, info, RAID_MAX_MEMBERS * 3);

  for (i = 0; i < n && i < RAID_MAX_MEMBERS * 3; i++)
    if (info[i].name && strcmp(info[i].name, path) == 0) {
      *out = info[i];
      return true;
    }
  return false;
}

static json_object *
done(struct export *e, json_object *r)
{
  export_put(e);
  return r;
}

json_object *
do_fail(json_object *req)
{
  const char *path = ctl_get_string(req, "member");
  struct raid_member_info mi;
  json_object *r = NULL;
  struct export *e = find_export(req, "fail", &r);
  struct raid_array *a;

  if (e == NULL)
    return r;
  a = export_array(e);
  if (path == NULL)
    return done(e, ctl_fail("fail: no member given"));
  if (!find_member(a, path, &mi))
    return done(e, ctl_fail("array %s has no member %s", export_name(e), path));
  if (mi.state == RAID_MEMBER_REPLACEMENT || mi.state == RAID_MEMBER_SPARE)
    return done(e, ctl_fail("member %s of %s is a %s: remove it instead", path,
                        export_name(e), member_state_name(mi.state)));
  if (mi.role < 0 || mi.state == RAID_MEMBER_FAULTY)
    return done(e, ctl_fail("member %s of %s has already failed", path, export_name(e)));
  /* md refuses to fail the last copy of anything; --force insists. */
  if (raid_array_fail_check(a, mi.role) < 0) {
    if (!ctl_get_bool(req, "force"))
      return done(e, ctl_fail("%s; use --force to fail it anyway", raid_get_error()));
    log_warn("%s: %s: failing it anyway (--force)", export_name(e), raid_get_error());
  }
  log_event(RAID_LOG_WARNING, export_name(e), path, "fail",
            "%s: failing member %s (role %d) on request", export_name(e), path, mi.role);
  if (raid_array_fail_member(a, mi.role) < 0)
    return done(e, ctl_fail("%s", raid_get_error()));
  r = ctl_ok();
  json_object_object_add(r, "role", json_object_new_int(mi.role));
  json_object_object_add(r, "degraded", json_object_new_int(raid_array_degraded(a)));
  json_object_object_add(r, "failed", json_object_new_boolean(raid_array_is_failed(a)));
  return done(e, r);
}

json_object *
do_remove(json_object *req)
{
  const char *path = ctl_get_string(req, "member");
  json_object *r = NULL;
  struct export *e = find_export(req, "remove", &r);

  if (e == NULL)
    return r;
  if (path == NULL)
    return done(e, ctl_fail("remove: no member given"));
  if (raid_array_remove_member(export_array(e), path,
                               ctl_get_bool(req, "force") ? RAID_REMOVE_FORCE : 0) < 0)
    return done(e, ctl_fail("%s", raid_get_error()));
  log_info("%s: removed member %s", export_name(e), path);
  return done(e, ctl_ok());
}

/* Open PATH as a new member of E, refusing one another array uses. */
static int
open_new_member(struct export *e, const char *path, struct raid_member **mp,
                json_object **err)
{
  const char *by;

  if ((*err = member_name_check(export_name(e), path)) != NULL)
    return -1;
  if (export_readonly(e)) {
    *err = ctl_fail("array %s is read-only: it cannot rebuild onto %s", export_name(e), path);
    return -1;
  }
  if ((by = member_in_use(path)) != NULL) {
    *err = ctl_fail("member %s is already in running array %s", path, by);
    return -1;
  }
  if (raid_member_open(path, 0, mp) < 0) {
    *err = ctl_fail("%s", raid_get_error());
    return -1;
  }
  return 0;
}

json_object *
do_add(json_object *req)
{
  const char *path = ctl_get_string(req, "member");
  struct raid_member *m;
  json_object *r = NULL;
  struct export *e = find_export(req, "add", &r);
  int role;

  if (e == NULL)
    return r;
  if (open_new_member(e, path, &m, &r) < 0)
    return done(e, r);
  raid_member_set_write_mostly(m, ctl_get_bool(req, "write_mostly"));
  if (raid_array_add_member(export_array(e), m, &role) < 0)   /* owns m */
    return done(e, ctl_fail("%s", raid_get_error()));
  if (role >= 0)
    log_info("%s: added %s in role %d: rebuilding it", export_name(e), path, role);
  else
    log_info("%s: added %s as a hot spare", export_name(e), path);
  r = ctl_ok();
  json_object_object_add(r, "role", json_object_new_int(role));
  json_object_object_add(r, "spare", json_object_new_boolean(role < 0));
  return done(e, r);
}

json_object *
do_replace(json_object *req)
{
  const char *old = ctl_get_string(req, "old"), *new = ctl_get_string(req, "new");
  struct raid_member_info mi;
  struct raid_member *m;
  json_object *r = NULL;
  struct export *e = find_export(req, "replace", &r);

  if (e == NULL)
    return r;
  if (old == NULL || new == NULL)
    return done(e, ctl_fail("replace: give the member to replace and the new one"));
  if (!find_member(export_array(e), old, &mi) || mi.role < 0 ||
      mi.state == RAID_MEMBER_REPLACEMENT)
    return done(e, ctl_fail("array %s has no member %s in a role", export_name(e), old));
  if (open_new_member(e, new, &m, &r) < 0)
    return done(e, r);
  if (raid_array_replace_member(export_array(e), mi.role, m) < 0)
    return done(e, ctl_fail("%s", raid_get_error()));
  log_info("%s: replacing %s (role %d) with %s", export_name(e), old, mi.role, new);
  r = ctl_ok();
  json_object_object_add(r, "role", json_object_new_int(mi.role));
  return done(e, r);
}

json_object *
do_sync(json_object *req)
{
  static const struct { const char *name; int action; } actions[] = {
    { "check", RAID_SYNC_CHECK }, { "repair", RAID_SYNC_REPAIR },
    { "resync", RAID_SYNC_RESYNC }, { "recover", RAID_SYNC_RECOVER },
  };
  const char *what = ctl_get_string(req, "action");
  json_object *r = NULL;
  struct export *e = find_export(req, "sync", &r);
  unsigned i;

  if (e == NULL)
    return r;
  if (what == NULL)
    return done(e, ctl_fail("sync: no action given"));
  if (strcmp(what, "idle") == 0 || strcmp(what, "stop") == 0) {
    raid_array_sync_stop(export_array(e));
    log_info("%s: sync stopped on request", export_name(e));
    return done(e, ctl_ok());
  }
  for (i = 0; i < sizeof actions / sizeof actions[0]; i++)
    if (strcmp(what, actions[i].name) == 0)
      break;
  if (i == sizeof actions / sizeof actions[0])
    return done(e, ctl_fail("sync: unknown action '%s' (check, repair, resync, "
                        "recover or idle)", what));
  if (export_readonly(e) && actions[i].action != RAID_SYNC_CHECK)
    return done(e, ctl_fail("array %s is read-only: only a check can run", export_name(e)));
  if (raid_array_sync_start(export_array(e), actions[i].action) < 0)
    return done(e, ctl_fail("%s", raid_get_error()));
  log_event(RAID_LOG_INFO, export_name(e), NULL, what, "%s: %s started on request",
            export_name(e), what);
  return done(e, ctl_ok());
}

json_object *
do_set(json_object *req)
{
  struct raid_sync_status st;
  json_object *r = NULL, *v;
  struct export *e = find_export(req, "set", &r);
  uint64_t min, max;

  if (e == NULL)
    return r;
  raid_array_sync_status(export_array(e), &st);
  min = st.min_rate;
  max = st.max_rate;
  if (json_object_object_get_ex(req, "rebuild_min", &v))
    min = json_object_get_int64(v);
  if (json_object_object_get_ex(req, "rebuild_max", &v))
    max = json_object_get_int64(v);
  if (max && min > max)
    return done(e, ctl_fail("rebuild-min (%llu bytes/s) is above rebuild-max (%llu bytes/s)",
                        (unsigned long long)min, (unsigned long long)max));
  /* The bitmap (mdadm --grow --bitmap): checked whole before any change. */
  if (json_object_object_get_ex(req, "bitmap", &v)) {
    const char *mode = json_object_get_string(v);
    json_object *c = NULL;
    int64_t chunk = 0;

    if (json_object_object_get_ex(req, "bitmap_chunk", &c))
      chunk = json_object_get_int64(c);
    if (strcmp(mode, "internal") != 0 && strcmp(mode, "none") != 0)
      return done(e, ctl_fail("bitmap '%s' is not internal or none", mode));
    if (chunk > UINT32_MAX)
      return done(e, ctl_fail("bitmap chunk of %lld bytes is too large", (long long)chunk));
    if (raid_array_set_bitmap(export_array(e), strcmp(mode, "none") == 0
                              ? RAID_BITMAP_NONE : RAID_BITMAP_INTERNAL,
                              (uint32_t)chunk) < 0)
      return done(e, ctl_fail("%s", raid_get_error()));
    log_info("%s: write-intent bitmap %s", export_name(e),
             strcmp(mode, "none") == 0 ? "removed" : "added");
  }
  else if (json_object_object_get_ex(req, "bitmap_chunk", &v))
    return done(e, ctl_fail("bitmap_chunk needs bitmap: internal"));
  /* md's /sys/block/mdX/md/safe_mode_delay, in milliseconds. */
  if (json_object_object_get_ex(req, "safe_mode_delay", &v)) {
    int64_t ms = json_object_get_int64(v);

    if (ms > 3600000)
      return done(e, ctl_fail("safe mode delay of %lld ms is more than an hour", (long long)ms));
    if (raid_array_set_safe_mode_delay(export_array(e), (unsigned)ms) < 0)
      return done(e, ctl_fail("%s", raid_get_error()));
    log_info("%s: safe mode delay now %lld ms%s", export_name(e), (long long)ms,
             ms ? "" : " (never marked clean while it runs)");
  }
  /* mdadm.conf's spares=N: SparesMissing when the array has fewer. */
  if (json_object_object_get_ex(req, "spares_expected", &v)) {
    int64_t n = json_object_get_int64(v);

    if (n > RAID_MAX_MEMBERS || events_set_expected_spares(export_name(e), (int)n) < 0)
      return done(e, ctl_fail("spares-expected=%lld: at most %d", (long long)n, RAID_MAX_MEMBERS));
    log_info("%s: %lld hot spare%s expected", export_name(e), (long long)n, n == 1 ? "" : "s");
  }
  if (json_object_object_get_ex(req, "rebuild_min", NULL) ||
      json_object_object_get_ex(req, "rebuild_max", NULL)) {
    raid_array_set_sync_limits(export_array(e), min, max);
    log_info("%s: rebuild speed limits now %llu .. %llu bytes/s%s", export_name(e),
             (unsigned long long)min, (unsigned long long)max, max ? "" : " (no maximum)");
  }
  return done(e, ctl_ok());
}

/* A grow request's shape: each field as given, or as now. */
struct grow_want {
  int64_t n, layout, chunk, level;
  bool has_n, has_chunk;
};

/* REQ's level, raid_devices, layout and chunk into W (level LEVEL_NOW
 * when not given): NULL, or the refusal. */
static json_object *
grow_parse(json_object *req, int level_now, struct grow_want *w)
{
  json_object *v;

  *w = (struct grow_want){ .layout = RAID_LAYOUT_DEFAULT, .level = level_now };
  if (json_object_object_get_ex(req, "level", &v))
    w->level = json_object_get_int64(v);
  if ((w->has_n = json_object_object_get_ex(req, "raid_devices", &v)))
    w->n = json_object_get_int64(v);
  if (json_object_object_get_ex(req, "layout", &v))
    w->layout = json_object_get_int64(v);
  if ((w->has_chunk = json_object_object_get_ex(req, "chunk", &v)))
    w->chunk = json_object_get_int64(v);
  if (w->has_n && (w->n < 1 || w->n > RAID_MAX_MEMBERS))
    return ctl_fail("grow: raid_devices %lld is out of range (2 to %d)", (long long)w->n,
                    RAID_MAX_MEMBERS);
  if (w->layout > INT_MAX)
    return ctl_fail("grow: layout %lld is out of range", (long long)w->layout);
  if (w->chunk > UINT32_MAX || (w->chunk == 0 && w->has_chunk))
    return ctl_fail("grow: chunk %lld is out of range", (long long)w->chunk);
  if (w->level != RAID_LEVEL_0 && w->level != RAID_LEVEL_1 && w->level != RAID_LEVEL_5 &&
      w->level != level_now)
    return ctl_fail("grow: level %lld: raidd changes a RAID 1 of 2 into a RAID 5 and back, "
                    "and a RAID 0 into a RAID 5 and back, only", (long long)w->level);
  return NULL;
}

/* A's members once the reshape under way ends (backwards, to fewer, the
 * array keeps its roles until then), or now. */
static unsigned
raid_devices_to(struct raid_array *a)
{
  struct raid_reshape_status st;

  return raid_array_reshape_status(a, &st) ? st.raid_disks_to : raid_array_raid_disks(a);
}

/* The reply to a grow of the shape: before (the *_before arguments) and now. */
static json_object *
grow_reply(struct raid_array *a, bool reshape, int level_before, unsigned before,
           int layout_before, uint32_t chunk_before, const struct grow_want *w)
{
  json_object *r = ctl_ok();

  json_object_object_add(r, "reshape", json_object_new_boolean(reshape));
  json_object_object_add(r, "level_before", json_object_new_int(level_before));
  json_object_object_add(r, "level", json_object_new_int(raid_array_level(a)));
  json_object_object_add(r, "raid_devices_before", json_object_new_int((int)before));
  json_object_object_add(r, "raid_devices", json_object_new_int((int)raid_devices_to(a)));
  json_object_object_add(r, "layout_before", json_object_new_int(layout_before));
  json_object_object_add(r, "layout", json_object_new_int(
                           w->layout == RAID_LAYOUT_DEFAULT ? layout_before : (int)w->layout));
  json_object_object_add(r, "chunk_before", json_object_new_int64(chunk_before));
  json_object_object_add(r, "chunk", json_object_new_int64(w->chunk ? w->chunk : chunk_before));
  json_object_object_add(r, "degraded", json_object_new_int((int)raid_array_degraded(a)));
  return r;
}

/* mdadm --grow --raid-devices N --add MEMBER...: the members opened (all
 * or none), then the library's grow with them (it owns them from then on:
 * a RAID 0's restripe, each added then the grow for other levels). */
static json_object *
grow_add(struct export *e, json_object *add, unsigned n)
{
  struct raid_member *m[RAID_MAX_MEMBERS];
  unsigned k, nadd = (unsigned)json_object_array_length(add);
  json_object *r = NULL;

  for (k = 0; k < nadd; k++) {
    const char *path = json_object_get_string(json_object_array_get_idx(add, k));
    unsigned j;

    for (j = 0; j < k && strcmp(path, raid_member_name(m[j])); j++)
      ;
    if (j < k) {
      r = ctl_fail("grow: %s is given twice", path);
      break;
    }
    if (open_new_member(e, path, &m[k], &r) < 0)
      break;
  }
  if (k < nadd) {
    while (k-- > 0)
      raid_member_close(m[k]);
    return r;
  }
  if (raid_array_grow_disks_add(export_array(e), n, m, nadd) < 0)
    return ctl_fail("%s", raid_get_error());
  for (k = 0; k < nadd; k++)
    log_info("%s: %s added with the grow", export_name(e),
             json_object_get_string(json_object_array_get_idx(add, k)));
  return NULL;
}

/* mdadm --grow --raid-devices N: a RAID 1's N mirrors, a RAID 5 or 10
 * restriped, a RAID 0 with its new members (--add, grow_add()); with
 * --layout and --chunk too, a RAID 5's shape (a RAID 10's chunk) changed
 * by a reshape (lib/grow.c); with --level first, md's takeover
 * (lib/takeover.c), then the rest:
 *   {"verb": "grow", "name": "md0", "level": 5, "raid_devices": 4,
 *    "layout": 2, "chunk": 131072, "add": ["/dev/sdd"]}
 *   (each optional: as now) */
static json_object *
grow_shape(struct export *e, json_object *req)
{
  struct raid_array *a = export_array(e);
  unsigned before = raid_array_raid_disks(a), now = before;
  int layout_before = raid_array_layout(a), level_before = raid_array_level(a);
  uint32_t chunk_before = raid_array_chunk_size(a);
  struct grow_want w;
  bool reshape, more;
  json_object *r, *add = NULL;
  int rc;

  if ((r = grow_parse(req, level_before, &w)) != NULL)
    return r;
  if (json_object_object_get_ex(req, "add", &add)) {
    if (!w.has_n || w.level != level_before || w.layout != RAID_LAYOUT_DEFAULT ||
        w.has_chunk)
      return ctl_fail("grow: add goes with raid_devices alone (mdadm --grow "
                      "--raid-devices N --add MEMBER)");
    if ((r = grow_add(e, add, (unsigned)w.n)) != NULL)
      return r;
    reshape = raid_array_level(a) != RAID_LEVEL_1;
    log_event(RAID_LOG_INFO, export_name(e), NULL, "grow", "%s: %s from %u to %lld "
              "members (on request)%s", export_name(e), reshape ? "reshaping" : "mirrors",
              before, (long long)w.n, level_before == RAID_LEVEL_0 ? ", as a RAID 5 "
              "missing its parity role until it ends" : "");
    r = grow_reply(a, reshape, level_before, before, layout_before, chunk_before, &w);
    /* A RAID 0 restriped is a RAID 5 of one more until its reshape ends,
     * a RAID 0 of N then. */
    if (level_before == RAID_LEVEL_0) {
      json_object_object_add(r, "level", json_object_new_int(RAID_LEVEL_0));
      json_object_object_add(r, "raid_devices", json_object_new_int((int)w.n));
      json_object_object_add(r, "reshape_level", json_object_new_int(raid_array_level(a)));
    }
    return r;
  }
  if (w.level == RAID_LEVEL_0 && level_before == RAID_LEVEL_5 &&
      layout_before != RAID_LAYOUT_PARITY_LAST &&
      (w.has_n || w.layout != RAID_LAYOUT_DEFAULT || w.has_chunk))
    return ctl_fail("grow: a RAID 5 in another layout than parity-last becomes a RAID 0 "
                    "by a reshape first: give --level 0 alone");
  /* The level first (mdadm's order: a takeover, then the reshape). */
  if (w.level != level_before) {
    if (raid_array_grow_level(a, (int)w.level) < 0)
      return ctl_fail("%s", raid_get_error());
    /* A RAID 5 in another layout goes to RAID 0 by a reshape to
     * parity-last first (mdadm's way): a RAID 0 when it ends. */
    if (raid_array_level(a) == level_before) {
      log_event(RAID_LOG_INFO, export_name(e), NULL, "grow", "%s: reshaping to the "
                "parity-last layout, a RAID %lld of %u when it ends (on request)",
                export_name(e), (long long)w.level, before - 1);
      r = grow_reply(a, true, level_before, before, layout_before, chunk_before, &w);
      json_object_object_add(r, "level", json_object_new_int((int)w.level));
      json_object_object_add(r, "raid_devices", json_object_new_int((int)before - 1));
      json_object_object_add(r, "layout", json_object_new_int(RAID_LAYOUT_PARITY_LAST));
      json_object_object_add(r, "reshape_level", json_object_new_int(level_before));
      return r;
    }
    log_event(RAID_LOG_INFO, export_name(e), NULL, "grow", "%s: now a RAID %lld, was "
              "RAID %d (on request)", export_name(e), (long long)w.level, level_before);
    layout_before = raid_array_layout(a);
    chunk_before = raid_array_chunk_size(a);
    now = raid_array_raid_disks(a);     /* a RAID 0 taken over has one more */
  }
  /* A RAID 5 or 10 whose shape is to change reshapes; the library says
   * when it may not. */
  more = (w.n && w.n != now) ||
    (w.layout != RAID_LAYOUT_DEFAULT && w.layout != layout_before) ||
    (w.chunk && w.chunk != chunk_before);
  reshape = (raid_array_level(a) == RAID_LEVEL_5 || raid_array_level(a) == RAID_LEVEL_10) &&
    more;
  if (!more)
    rc = 0;
  else if (w.layout == RAID_LAYOUT_DEFAULT && w.chunk == 0)
    rc = raid_array_grow_disks(a, (unsigned)w.n);
  else
    rc = raid_array_grow_shape(a, (unsigned)w.n, (int)w.layout, (uint32_t)w.chunk);
  if (rc < 0 && w.level != level_before)
    return ctl_fail("array %s is a RAID %lld now, but %s", export_name(e), (long long)w.level,
                    raid_get_error());
  if (rc < 0)
    return ctl_fail("%s", raid_get_error());
  if (reshape)
    log_event(RAID_LOG_INFO, export_name(e), NULL, "grow",
              "%s: reshaping from %u to %u members (on request)", export_name(e),
              before, raid_devices_to(a));
  else if (raid_array_level(a) == RAID_LEVEL_1 && raid_array_raid_disks(a) != before)
    log_event(RAID_LOG_INFO, export_name(e), NULL, "grow",
              "%s: %u mirrors now, were %u (on request)", export_name(e),
              raid_array_raid_disks(a), before);
  r = grow_reply(a, reshape, level_before, before, layout_before, chunk_before, &w);
  /* The members of the level taken over, before any reshape. */
  if (w.level != level_before)
    json_object_object_add(r, "takeover_raid_devices", json_object_new_int((int)now));
  return r;
}

/* The reshape under way stopped (md's "frozen" in sync_action) or let go
 * on ("idle"; mdadm --grow --continue):
 *   {"verb": "grow", "name": "md0", "reshape": "stop" | "continue"} */
static json_object *
grow_reshape(struct export *e, const char *what)
{
  struct raid_array *a = export_array(e);
  struct raid_reshape_status st;
  bool stop = strcmp(what, "stop") == 0;
  json_object *r;

  if (!stop && strcmp(what, "continue") != 0)
    return ctl_fail("grow: reshape '%s': stop or continue", what);
  if (raid_array_reshape_status(a, &st) == 0)
    return ctl_fail("array %s: no reshape is under way", export_name(e));
  if (raid_array_reshape_freeze(a, stop) < 0)
    return ctl_fail("%s", raid_get_error());
  raid_array_reshape_status(a, &st);
  if (st.active)
    log_event(RAID_LOG_INFO, export_name(e), NULL, "grow", "%s: reshape %s at %llu of "
              "%llu bytes (on request)", export_name(e), stop ? "stopped" : "goes on",
              (unsigned long long)st.position, (unsigned long long)st.size_to);
  r = ctl_ok();
  json_object_object_add(r, "reshape_active", json_object_new_boolean(st.active));
  json_object_object_add(r, "position", json_object_new_int64((int64_t)st.position));
  json_object_object_add(r, "size_to", json_object_new_int64((int64_t)st.size_to));
  return r;
}

/* A reshape ended (the events thread, on its RebuildFinished): the array
 * has its new size; the attached kernel NBD device gets it at once, as
 * after grow --size; NBD clients see it when they connect again. */
void
grow_reshape_done(const char *array)
{
  struct export *e = export_get(array);
  char err[256];

  if (e == NULL)
    return;
  if (nbd_attached(e) >= 0 && nbd_attached_resize(e, err, sizeof err) < 0)
    log_warn("%s: %s", export_name(e), err);
  if (ublk_dev_of(e) >= 0)
    log_info("%s: reshape done: the ublk device keeps its size until unublk and ublk "
             "(the kernel has no way to change it)", export_name(e));
  export_put(e);
}

/* R, the reply to a change of E's size from BEFORE bytes: the sizes, and
 * the devices on the array.  The kernel's NBD device, if attached, gets
 * the new size at once; a ublk device keeps the size it was made with. */
static json_object *
size_reply(struct export *e, json_object *r, uint64_t before)
{
  struct raid_array *a = export_array(e);
  uint64_t after = raid_array_size(a);
  char err[256];
  int dev;

  json_object_object_add(r, "size_before", json_object_new_int64((int64_t)before));
  json_object_object_add(r, "size", json_object_new_int64((int64_t)after));
  json_object_object_add(r, "full_size", json_object_new_int64((int64_t)raid_array_full_size(a)));
  json_object_object_add(r, "member_size",
                         json_object_new_int64((int64_t)raid_array_member_size(a)));
  if (after == before)
    return r;
  if ((dev = nbd_attached(e)) >= 0) {
    char path[32];

    snprintf(path, sizeof path, "/dev/nbd%d", dev);
    json_object_object_add(r, "nbd_device", json_object_new_string(path));
    if (nbd_attached_resize(e, err, sizeof err) < 0) {
      log_warn("%s: %s", export_name(e), err);
      json_object_object_add(r, "nbd_device_error", json_object_new_string(err));
    }
  }
  if ((dev = ublk_dev_of(e)) >= 0)
    json_object_object_add(r, "ublk_device", json_object_new_int(dev));
  return r;
}

/* mdadm --grow --array-size:
 *   {"verb": "grow", "name": "md0", "array_size": BYTES}
 * BYTES (0: all the members hold) is what the array shows from now on;
 * nothing is written, and an assembly shows all again, as md's. */
static json_object *
grow_array_size(struct export *e, uint64_t want)
{
  struct raid_array *a = export_array(e);
  uint64_t before = raid_array_size(a);

  if (raid_array_set_array_size(a, want) < 0)
    return ctl_fail("%s", raid_get_error());
  if (raid_array_size(a) != before)
    log_event(RAID_LOG_INFO, export_name(e), NULL, "grow",
              "%s: array size set to %llu bytes (%s, of %llu), on request", export_name(e),
              (unsigned long long)raid_array_size(a), want ? "shown" : "all",
              (unsigned long long)raid_array_full_size(a));
  return size_reply(e, ctl_ok(), before);
}

/* mdadm --grow --size:
 *   {"verb": "grow", "name": "md0", "member_size": 0, "assume_clean": false,
 *    "force": false}
 * MEMBER_SIZE is the bytes of each member to use, 0 for all they have room
 * for now (the library looks at each member again).  The kernel's NBD
 * device on the array, if attached, gets the new size at once; NBD
 * clients see it when they connect again; a ublk device keeps the size it
 * was made with (Linux 6.12 has no way to change it) until unublk and
 * ublk again.  The reply says which. */
json_object *
do_grow(json_object *req)
{
  json_object *r = NULL, *v;
  struct export *e = find_export(req, "grow", &r);
  struct raid_array *a;
  uint64_t want, before, after;
  bool shape;

  if (e == NULL)
    return r;
  a = export_array(e);
  if (export_readonly(e))
    return done(e, ctl_fail("array %s is read-only: it cannot grow", export_name(e)));
  shape = json_object_object_get_ex(req, "level", NULL) ||
    json_object_object_get_ex(req, "raid_devices", NULL) ||
    json_object_object_get_ex(req, "layout", NULL) ||
    json_object_object_get_ex(req, "chunk", NULL);
  if (json_object_object_get_ex(req, "reshape", &v)) {
    if (json_object_object_get_ex(req, "member_size", NULL) || shape)
      return done(e, ctl_fail("grow: stop or continue a reshape, or change the array, "
                              "not both at once"));
    return done(e, grow_reshape(e, json_object_get_string(v)));
  }
  if (json_object_object_get_ex(req, "array_size", &v)) {
    if (json_object_object_get_ex(req, "member_size", NULL) || shape)
      return done(e, ctl_fail("grow: change the array size alone (as mdadm's "
                              "--array-size)"));
    return done(e, grow_array_size(e, (uint64_t)json_object_get_int64(v)));
  }
  if (shape) {
    if (json_object_object_get_ex(req, "member_size", NULL))
      return done(e, ctl_fail("grow: change the size or the shape (raid_devices, layout, "
                              "chunk), not both at once (as mdadm)"));
    return done(e, grow_shape(e, req));
  }
  if (!json_object_object_get_ex(req, "member_size", &v))
    return done(e, ctl_fail("grow: nothing to change: give member_size (0: as much as "
                            "the members have room for), array_size, raid_devices, layout "
                            "or chunk"));
  want = (uint64_t)json_object_get_int64(v);
  before = raid_array_size(a);
  /* mdadm refuses to make an array smaller until told twice (--array-size
   * first); here --force is the second word. */
  if (want && want < raid_array_member_size(a) && !ctl_get_bool(req, "force"))
    return done(e, ctl_fail("array %s: %llu bytes of each member is less than the %llu "
                            "it uses: the array would shrink and the data past its new "
                            "end leave it; shrink the filesystem first, then use --force",
                            export_name(e), (unsigned long long)want,
                            (unsigned long long)raid_array_member_size(a)));
  if (raid_array_grow_size(a, want, ctl_get_bool(req, "assume_clean")
                           ? RAID_GROW_ASSUME_CLEAN : 0) < 0)
    return done(e, ctl_fail("%s", raid_get_error()));
  after = raid_array_size(a);
  if (after != before)
    log_event(RAID_LOG_INFO, export_name(e), NULL, "grow",
              "%s: size changed from %llu to %llu bytes on request%s", export_name(e),
              (unsigned long long)before, (unsigned long long)after,
              after > before && !ctl_get_bool(req, "assume_clean")
              ? "; the new region is resynced" : "");
  return done(e, size_reply(e, ctl_ok(), before));
}
