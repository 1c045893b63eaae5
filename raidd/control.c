/* The control socket: raidctl talks to raidd here.
 *
 * A Unix stream socket (root-only: mode 0600 and the peer's credentials
 * checked with SO_PEERCRED).  Each connection carries one request, one
 * JSON object on one line, and gets one JSON reply line:
 *   {"verb": "assemble", "members": [...], "name": "md0", "run": false,
 *    "force": false}
 *   {"verb": "stop", "name": "md0", "force": false}
 *   {"verb": "status"}            {"verb": "detail", "name": "md0"}
 *   {"verb": "stats", "name": "md0", "reset": false}
 * the drill verbs of manage.c (fail, remove, add, replace, sync, set),
 * and {"verb": "incremental", "member": PATH} (incremental.c),
 * and the reply is {"ok": true, ...} or {"ok": false, "error": "..."},
 * the error naming what was wrong.  Requests are served one at a time by
 * one thread: they are rare, and assembly does synchronous metadata I/O. */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <json-c/json.h>

#include "raidd.h"
#include "control.h"
#include "exports-internal.h"

#define MAX_REQUEST (1 << 20)

static int listen_fd = -1;
static const char *nbd_socket;     /* for the URIs we hand out */

void
control_set_nbd_socket(const char *path)
{
  nbd_socket = path;
}
static pthread_t thread;
static char sock_path[108];
/* Requests change arrays one at a time; so do members coming back (a
 * uevent, on udev-watch's thread): the two never interleave. */
static pthread_mutex_t manage_mutex = PTHREAD_MUTEX_INITIALIZER;

void control_lock(void) { pthread_mutex_lock(&manage_mutex); }
void control_unlock(void) { pthread_mutex_unlock(&manage_mutex); }

json_object *
fail(const char *fmt, ...)
{
  json_object *r = json_object_new_object();
  char msg[1024];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_object_object_add(r, "ok", json_object_new_boolean(0));
  json_object_object_add(r, "error", json_object_new_string(msg));
  return r;
}

json_object *
ok(void)
{
  json_object *r = json_object_new_object();
  json_object_object_add(r, "ok", json_object_new_boolean(1));
  return r;
}

const char *
get_string(json_object *req, const char *key)
{
  json_object *v;
  return json_object_object_get_ex(req, key, &v) && json_object_is_type(v, json_type_string)
    ? json_object_get_string(v) : NULL;
}

bool
get_bool(json_object *req, const char *key)
{
  json_object *v;
  return json_object_object_get_ex(req, key, &v) && json_object_get_boolean(v);
}

/* ---- assemble ------------------------------------------------------------- */

struct in_use {
  const char *path;
  const char *by;
};

static void
check_in_use(struct export *e, void *opaque)
{
  struct in_use *u = opaque;
  int role;

  if (!u->by && raid_array_find_member(export_array(e), u->path, &role) == 0)
    u->by = export_name(e);
}

bool
member_absolute(const char *path)
{
  char file[PATH_MAX];

  /* A simulated drive, "sim:FILE?...", is named by its file. */
  return path && raid_member_spec_file(path, file, sizeof file) == 0 &&
    file[0] == '/';
}

const char *
member_in_use(const char *path)
{
  struct in_use u = { path, NULL };

  exports_foreach(check_in_use, &u);
  return u.by;
}

/* What --force did, for the reply: "forced": [{"member", "role",
 * "events_from", "events_to", "was_faulty"}], "degraded", "needs_resync". */
static void
add_forced(json_object *r, struct raid_array *a)
{
  struct raid_forced_member fm[RAID_MAX_MEMBERS];
  unsigned i, n = raid_array_forced_members(a, fm, RAID_MAX_MEMBERS);
  json_object *list;

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
  json_object_object_add(r, "level", json_object_new_int(raid_array_level(a)));
  json_object_object_add(r, "degraded", json_object_new_int(raid_array_degraded(a)));
  json_object_object_add(r, "needs_resync",
                         json_object_new_boolean(raid_array_needs_resync(a)));
}

static json_object *
do_assemble(json_object *req)
{
  json_object *jm, *r;
  struct raid_member *m[RAID_MAX_MEMBERS];
  const char *name = get_string(req, "name");
  struct raid_array *a;
  struct export *e;
  size_t n, i;
  int rc;

  if (!json_object_object_get_ex(req, "members", &jm) ||
      !json_object_is_type(jm, json_type_array) ||
      (n = json_object_array_length(jm)) == 0)
    return fail("assemble: no members given");
  if (n > RAID_MAX_MEMBERS)
    return fail("assemble: %zu members, at most %u", n, RAID_MAX_MEMBERS);
  if (name && (e = export_get(name)) != NULL) {
    export_put(e);
    return fail("array %s is already running", name);
  }
  for (i = 0; i < n; i++) {
    const char *p = json_object_get_string(json_object_array_get_idx(jm, i));
    const char *by;

    if (!member_absolute(p))
      return fail("assemble: member '%s' is not an absolute path", p ? p : "");
    if ((by = member_in_use(p)) != NULL)
      return fail("member %s is already in running array %s", p, by);
  }
  for (i = 0; i < n; i++) {
    const char *p = json_object_get_string(json_object_array_get_idx(jm, i));
    rc = raid_member_open(p, 0, &m[i]);
    if (rc < 0) {
      r = fail("%s", raid_get_error());
      while (i-- > 0)
        raid_member_close(m[i]);
      return r;
    }
  }
  rc = raid_array_assemble(name, m, n, (get_bool(req, "run") ? RAID_ASSEMBLE_RUN : 0) |
                           (get_bool(req, "force") ? RAID_ASSEMBLE_FORCE : 0), &a);
  if (rc < 0) {
    r = fail("%s", raid_get_error());
    for (i = 0; i < n; i++)
      raid_member_close(m[i]);
    return r;
  }
  rc = exports_add(raid_array_name(a), a, get_bool(req, "readonly"));
  if (rc < 0) {
    r = fail("array %s is already running", raid_array_name(a));
    raid_array_free(a);
    return r;
  }
  /* md's behaviour: rebuilds, hot spares and resyncs start by themselves. */
  if (raid_array_level(a) != RAID_LEVEL_0 && !get_bool(req, "readonly"))
    raid_array_set_auto_sync(a, 1);
  log_info("%s: assembled: raid%d, %u of %u members%s", raid_array_name(a),
           raid_array_level(a), raid_array_raid_disks(a) - raid_array_degraded(a),
           raid_array_raid_disks(a), raid_array_degraded(a) ? " (degraded)" : "");
  if (raid_array_needs_resync(a) && !get_bool(req, "readonly"))
    log_info("%s: needs a resync (new, or not stopped cleanly): it runs in the "
             "background", raid_array_name(a));
  else if (raid_array_needs_resync(a))
    log_warn("%s: needs a resync (new, or not stopped cleanly), but is read-only: "
             "mirrors or parity may disagree", raid_array_name(a));
  r = ok();
  json_object_object_add(r, "name", json_object_new_string(raid_array_name(a)));
  add_forced(r, a);
  if (nbd_socket) {
    char uri[512];
    snprintf(uri, sizeof uri, "nbd+unix:///%s?socket=%s", raid_array_name(a), nbd_socket);
    json_object_object_add(r, "uri", json_object_new_string(uri));
  }
  return r;
}

/* ---- stop ------------------------------------------------------------------- */

static json_object *
do_stop(json_object *req)
{
  const char *name = get_string(req, "name");
  struct export *e;
  int conns, i;

  if (name == NULL)
    return fail("stop: no array name given");
  e = export_get(name);
  if (e == NULL)
    return fail("array %s is not running", name);
  /* A client that has just closed its connection is counted until its
   * worker sees the socket close: give that two seconds, as mdadm --stop
   * retries a busy array for a while. */
  for (i = 0; (conns = export_conns(e)) > 0 && !get_bool(req, "force") && i < 20; i++)
    usleep(100000);
  export_put(e);
  if (conns > 0 && !get_bool(req, "force"))
    return fail("array %s is in use by %d NBD connection%s; stop them or use "
                "--force", name, conns, conns == 1 ? "" : "s");
  e = exports_remove(name);
  if (e == NULL)
    return fail("array %s is not running", name);
  nbd_server_disconnect(e);
  export_put(e);                /* frees it once the last user is gone */
  log_info("%s: stopped", name);
  return ok();
}

/* ---- status / detail -------------------------------------------------------- */

json_object *
control_describe(struct export *e)
{
  struct raid_array *a = export_array(e);
  json_object *o = json_object_new_object(), *ms = json_object_new_array();
  struct raid_member_info info[RAID_MAX_MEMBERS * 3];
  struct raid_sync_status st;
  struct raid_superblock sb;
  unsigned i, n;

#define ADD(k, v) json_object_object_add(o, k, v)
  ADD("name", json_object_new_string(export_name(e)));
  ADD("level", json_object_new_int(raid_array_level(a)));
  ADD("layout", json_object_new_int(raid_array_layout(a)));
  ADD("chunk_size", json_object_new_int64(raid_array_chunk_size(a)));
  ADD("size", json_object_new_int64(raid_array_size(a)));
  ADD("member_size", json_object_new_int64(raid_array_member_size(a)));
  ADD("raid_disks", json_object_new_int(raid_array_raid_disks(a)));
  ADD("metadata", json_object_new_string(raid_metadata_name(raid_array_metadata(a))));
  ADD("degraded", json_object_new_int(raid_array_degraded(a)));
  ADD("failed", json_object_new_boolean(raid_array_is_failed(a)));
  ADD("needs_resync", json_object_new_boolean(raid_array_needs_resync(a)));
  ADD("readonly", json_object_new_boolean(export_readonly(e)));
  ADD("connections", json_object_new_int(export_conns(e)));
  if (raid_array_superblock(a, &sb) == 0) {
    char uuid[40];
    const uint8_t *u = sb.set_uuid;
    snprintf(uuid, sizeof uuid, "%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
             u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    ADD("uuid", json_object_new_string(uuid));
    ADD("events", json_object_new_int64(sb.events));
  }
  n = raid_array_members(a, info, RAID_MAX_MEMBERS * 3);
  for (i = 0; i < n && i < RAID_MAX_MEMBERS * 3; i++) {
    json_object *m = json_object_new_object();

    json_object_object_add(m, "role", json_object_new_int(info[i].role));
    json_object_object_add(m, "path", info[i].name ? json_object_new_string(info[i].name) : NULL);
    json_object_object_add(m, "state", json_object_new_string(member_state_name(info[i].state)));
    if (info[i].state == RAID_MEMBER_RECOVERING || info[i].state == RAID_MEMBER_REPLACEMENT)
      json_object_object_add(m, "recovery_offset", json_object_new_int64(info[i].recovery_offset));
    if (info[i].name) {
      json_object_object_add(m, "kind", json_object_new_string(info[i].kind));
      json_object_object_add(m, "direct_io", json_object_new_boolean(info[i].direct));
      json_object_object_add(m, "write_mostly", json_object_new_boolean(info[i].write_mostly));
    }
    json_object_array_add(ms, m);
  }
  ADD("members", ms);
  raid_array_sync_status(a, &st);
  {
    json_object *so = json_object_new_object();
#define SADD(k, v) json_object_object_add(so, k, v)
    SADD("action", json_object_new_string(raid_sync_action_name(st.action)));
    SADD("due", json_object_new_boolean(st.due));
    SADD("done", json_object_new_int64(st.done));
    SADD("total", json_object_new_int64(st.total));
    SADD("rate", json_object_new_int64(st.rate));
    SADD("mismatches", json_object_new_int64(st.action ? st.mismatches : st.last_mismatches));
    SADD("last_action", json_object_new_string(raid_sync_action_name(st.last_action)));
    SADD("last_result", json_object_new_int(st.last_result));
    SADD("rebuild_min", json_object_new_int64(st.min_rate));
    SADD("rebuild_max", json_object_new_int64(st.max_rate));
#undef SADD
    ADD("sync", so);
  }
#undef ADD
  return o;
}

static void
add_status(struct export *e, void *opaque)
{
  json_object_array_add(opaque, control_describe(e));
}

static json_object *
do_status(json_object *req)
{
  const char *name = get_string(req, "name");
  json_object *r = ok(), *arr = json_object_new_array();
  struct export *e;

  if (name) {
    e = export_get(name);
    if (e == NULL) {
      json_object_put(r);
      json_object_put(arr);
      return fail("array %s is not running", name);
    }
    json_object_array_add(arr, control_describe(e));
    export_put(e);
  }
  else
    exports_foreach(add_status, arr);
  json_object_object_add(r, "arrays", arr);
  return r;
}

/* ---- stats ------------------------------------------------------------------ */

/* {"p50": .., "p90": .., "p99": .., "p99.9": .., "max": ..} in microseconds. */
static json_object *
latency_us(const uint64_t *ns)
{
  static const char *const keys[RAID_STATS_NPCT] = {
    [RAID_STATS_P50] = "p50", [RAID_STATS_P90] = "p90", [RAID_STATS_P99] = "p99",
    [RAID_STATS_P999] = "p99.9", [RAID_STATS_MAX] = "max",
  };
  json_object *o = json_object_new_object();
  char buf[32];
  unsigned i;


  /* Nanosecond resolution, printed as such ("2003.125", not 2003.1249999). */
  for (i = 0; i < RAID_STATS_NPCT; i++) {
    snprintf(buf, sizeof buf, "%.3f", ns[i] / 1000.0);
    json_object_object_add(o, keys[i], json_object_new_double_s(ns[i] / 1000.0, buf));
  }
  return o;
}

static void
add_io_stats(json_object *o, const struct raid_io_stats *s)
{
#define ADD(k) json_object_object_add(o, #k, json_object_new_int64(s->k))
  ADD(read_ops);
  ADD(read_bytes);
  ADD(write_ops);
  ADD(write_bytes);
  ADD(flush_ops);
  ADD(discard_ops);
  ADD(discard_bytes);
  ADD(zero_ops);
  ADD(zero_bytes);
  ADD(errors);
  ADD(in_flight);
#undef ADD
  json_object_object_add(o, "read_latency_us", latency_us(s->read_lat_ns));
  json_object_object_add(o, "write_latency_us", latency_us(s->write_lat_ns));
}

/* {"verb": "stats", "name": NAME, "reset": false}: the array's figures
 * and its members' (then zeroed, with reset), and what they say about the
 * cost of RAID: write amplification, RAID 5 stripe write methods. */
static json_object *
do_stats(json_object *req)
{
  const char *name = get_string(req, "name");
  struct raid_member_stats *ms;
  struct raid_array_stats st;
  struct raid_array *a;
  struct export *e;
  json_object *r, *jo, *jms, *d;
  uint64_t reads = 0, written;
  unsigned max = RAID_MAX_MEMBERS * 3, i, n;
  int rc;

  if (name == NULL)
    return fail("stats: no array name given");
  if ((e = export_get(name)) == NULL)
    return fail("array %s is not running", name);
  a = export_array(e);
  ms = calloc(max, sizeof *ms);
  if (ms == NULL) {
    export_put(e);
    return fail("array %s: stats: out of memory", name);
  }
  rc = raid_array_stats(a, &st, ms, max);
  if (rc < 0) {
    r = fail("%s", raid_get_error());
    goto out;
  }
  n = (unsigned)rc < max ? (unsigned)rc : max;
  if (get_bool(req, "reset"))
    raid_array_stats_reset(a);  /* after the snapshot: nothing is lost */

  r = ok();
  json_object_object_add(r, "name", json_object_new_string(export_name(e)));
  json_object_object_add(r, "level", json_object_new_int(raid_array_level(a)));
  json_object_object_add(r, "raid_disks", json_object_new_int(raid_array_raid_disks(a)));
  json_object_object_add(r, "seconds", json_object_new_double(st.elapsed_ns / 1e9));
  jo = json_object_new_object();
  add_io_stats(jo, &st.io);
  json_object_object_add(r, "array", jo);

  for (i = 0; i < n; i++)
    reads += ms[i].io.read_ops;
  jms = json_object_new_array();
  for (i = 0; i < n; i++) {
    json_object *m = json_object_new_object();

    json_object_object_add(m, "name", ms[i].name ? json_object_new_string(ms[i].name) : NULL);
    json_object_object_add(m, "kind", ms[i].kind ? json_object_new_string(ms[i].kind) : NULL);
    json_object_object_add(m, "role", json_object_new_int(ms[i].role));
    json_object_object_add(m, "state", json_object_new_string(member_state_name(ms[i].state)));
    add_io_stats(m, &ms[i].io);
    json_object_object_add(m, "read_share", reads
                           ? json_object_new_double((double)ms[i].io.read_ops / reads) : NULL);
    json_object_array_add(jms, m);
  }
  json_object_object_add(r, "members", jms);

  d = json_object_new_object();
  written = st.io.write_bytes + st.io.zero_bytes;
#define ADD(k, v) json_object_object_add(d, k, v)
  ADD("write_amplification", written
      ? json_object_new_double((double)st.member_write_bytes / written) : NULL);
  ADD("member_read_bytes", json_object_new_int64(st.member_read_bytes));
  ADD("member_write_bytes", json_object_new_int64(st.member_write_bytes));
  ADD("full_stripe_writes", json_object_new_int64(st.full_stripe_writes));
  ADD("rmw_writes", json_object_new_int64(st.rmw_writes));
  ADD("rcw_writes", json_object_new_int64(st.rcw_writes));
  ADD("degraded_writes", json_object_new_int64(st.degraded_writes));
  ADD("degraded_reads", json_object_new_int64(st.degraded_reads));
  ADD("stripe_read_bytes", json_object_new_int64(st.stripe_read_bytes));
#undef ADD
  json_object_object_add(r, "derived", d);
 out:
  free(ms);
  export_put(e);
  return r;
}

/* ---- the socket ------------------------------------------------------------- */

static json_object *
dispatch(json_object *req)
{
  const char *verb = get_string(req, "verb");

  if (verb == NULL)
    return fail("request has no verb");
  if (strcmp(verb, "assemble") == 0)
    return do_assemble(req);
  if (strcmp(verb, "stop") == 0)
    return do_stop(req);
  if (strcmp(verb, "status") == 0 || strcmp(verb, "detail") == 0)
    return do_status(req);
  if (strcmp(verb, "stats") == 0)
    return do_stats(req);
  if (strcmp(verb, "ping") == 0)
    return ok();
  if (strcmp(verb, "fail") == 0)
    return do_fail(req);
  if (strcmp(verb, "remove") == 0)
    return do_remove(req);
  if (strcmp(verb, "incremental") == 0)
    return do_incremental(req);
  if (strcmp(verb, "add") == 0)
    return do_add(req);
  if (strcmp(verb, "replace") == 0)
    return do_replace(req);
  if (strcmp(verb, "sync") == 0)
    return do_sync(req);
  if (strcmp(verb, "set") == 0)
    return do_set(req);
  return fail("unknown verb '%s'", verb);
}

static void
serve(int fd)
{
  struct ucred cred;
  socklen_t len = sizeof cred;
  char *buf = malloc(MAX_REQUEST + 1);
  size_t got = 0;
  json_object *req = NULL, *rep;
  const char *out;
  ssize_t r;

  if (buf == NULL)
    return;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != 0) {
    rep = fail("permission denied: raidd's control socket is for root only");
    log_warn("control: refused a request from uid %d", (int)cred.uid);
    goto reply;
  }
  while (got < MAX_REQUEST && (got == 0 || buf[got - 1] != '\n')) {
    r = read(fd, buf + got, MAX_REQUEST - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += r;
  }
  if (got == 0) {               /* a probe (raidctl checking we are up) */
    free(buf);
    return;
  }
  buf[got] = '\0';
  req = json_tokener_parse(buf);
  if (req == NULL || !json_object_is_type(req, json_type_object))
    rep = fail("malformed request: not a JSON object");
  else {
    control_lock();
    rep = dispatch(req);
    control_unlock();
  }
 reply:
  out = json_object_to_json_string_ext(rep, JSON_C_TO_STRING_PLAIN);
  len = strlen(out);
  if (write(fd, out, len) != (ssize_t)len || write(fd, "\n", 1) != 1)
    log_warn("control: could not send the reply: %m");
  json_object_put(rep);
  json_object_put(req);
  free(buf);
}

static void *
control_thread(void *arg)
{
  for (;;) {
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      break;                    /* closed by control_stop() */
    }
    serve(fd);
    close(fd);
  }
  return NULL;
}

int
control_start(const char *path)
{
  struct sockaddr_un sun = { .sun_family = AF_UNIX };
  int err;

  if (strlen(path) >= sizeof sun.sun_path) {
    log_err("control socket path %s is too long", path);
    return -ENAMETOOLONG;
  }
  strcpy(sun.sun_path, path);
  strcpy(sock_path, path);
  listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd < 0)
    return -errno;
  unlink(path);
  if (bind(listen_fd, (struct sockaddr *)&sun, sizeof sun) < 0 ||
      chmod(path, 0600) < 0 || listen(listen_fd, 16) < 0) {
    err = errno;
    log_err("control socket %s: %s", path, strerror(err));
    close(listen_fd);
    return -err;
  }
  if ((err = pthread_create(&thread, NULL, control_thread, NULL)) != 0) {
    close(listen_fd);
    return -err;
  }
  return 0;
}

void
control_stop(void)
{
  if (listen_fd < 0)
    return;
  shutdown(listen_fd, SHUT_RDWR);
  pthread_join(thread, NULL);
  close(listen_fd);
  listen_fd = -1;
  unlink(sock_path);
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
