/* What raidd says about a running array: its description (status,
 * detail, and the status in events-sinks.c's mails) and its figures (stats).
 *   {"verb": "status"}            {"verb": "detail", "name": "md0"}
 *   {"verb": "stats", "name": "md0", "reset": false} */
#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "raidd.h"
#include "control.h"

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
  ADD("full_size", json_object_new_int64(raid_array_full_size(a)));
  ADD("member_size", json_object_new_int64(raid_array_member_size(a)));
  ADD("raid_disks", json_object_new_int(raid_array_raid_disks(a)));
  ADD("metadata", json_object_new_string(raid_metadata_name(raid_array_metadata(a))));
  ADD("degraded", json_object_new_int(raid_array_degraded(a)));
  ADD("failed", json_object_new_boolean(raid_array_is_failed(a)));
  ADD("needs_resync", json_object_new_boolean(raid_array_needs_resync(a)));
  /* A RAID 5 that runs degraded with a resync due (a forced start of a
   * dirty degraded array, or a member lost before a resync ended): the
   * rows that may disagree stay marked, and the resync runs once the
   * rebuild has made the array whole (issue 33). */
  ADD("resync_pending", raid_array_needs_resync(a) && raid_array_level(a) == 5 &&
      raid_array_degraded(a) > 0 && !raid_array_is_failed(a)
      ? json_object_new_string("after the rebuild") : NULL);
  /* What the superblocks say, as examine's "state": "clean" once safe
   * mode has found the array idle, "active" while writes run. */
  ADD("state", json_object_new_string(raid_array_clean(a) ? "clean" : "active"));
  ADD("safe_mode_delay", json_object_new_int64(raid_array_safe_mode_delay(a)));
  ADD("readonly", json_object_new_boolean(export_readonly(e)));
  ADD("connections", json_object_new_int(export_conns(e)));
  {
    int index = nbd_attached(e);
    char dev[32];

    snprintf(dev, sizeof dev, "/dev/nbd%d", index);
    ADD("nbd_device", index >= 0 ? json_object_new_string(dev) : NULL);
  }
  {
    int ublk = ublk_dev_of(e);
    char dev[32];

    snprintf(dev, sizeof dev, "/dev/ublkb%d", ublk);
    ADD("ublk", ublk >= 0 ? json_object_new_string(dev) : NULL);
  }
  ADD("logical_block_size", json_object_new_int(raid_array_logical_block_size(a)));
  if (raid_array_superblock(a, &sb) == 0) {
    char uuid[40];
    const uint8_t *u = sb.set_uuid;
    snprintf(uuid, sizeof uuid, "%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
             u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    ADD("uuid", json_object_new_string(uuid));
    ADD("events", json_object_new_int64(sb.events));
  }
  {
    struct raid_bitmap_info bi;

    raid_array_bitmap(a, &bi);
    if (bi.present) {
      json_object *b = json_object_new_object();
#define BADD(k, v) json_object_object_add(b, k, v)
      BADD("chunk_size", json_object_new_int64(bi.chunk_size));
      BADD("chunks", json_object_new_int64((int64_t)bi.chunks));
      BADD("dirty", json_object_new_int64((int64_t)bi.dirty));
      BADD("pages", json_object_new_int64((int64_t)bi.pages));
      BADD("pages_used", json_object_new_int64((int64_t)bi.pages_used));
      BADD("offset", json_object_new_int64((int64_t)bi.offset * 512));
      BADD("events_cleared", json_object_new_int64((int64_t)bi.events_cleared));
      BADD("daemon_sleep", json_object_new_int64(bi.daemon_sleep));
      BADD("write_behind", json_object_new_int64(bi.write_behind));
      BADD("behind_writes", json_object_new_int64(bi.behind_writes));
#undef BADD
      ADD("bitmap", b);
    }
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
      json_object_object_add(m, "lost", json_object_new_boolean(info[i].lost));
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
  {
    /* A reshape under way (md's reshape_position, delta_disks, new_*). */
    struct raid_reshape_status rs;

    if (raid_array_reshape_status(a, &rs)) {
      json_object *ro = json_object_new_object();

      json_object_object_add(ro, "raid_disks_from", json_object_new_int((int)rs.raid_disks_from));
      json_object_object_add(ro, "raid_disks_to", json_object_new_int((int)rs.raid_disks_to));
      json_object_object_add(ro, "position", json_object_new_int64((int64_t)rs.position));
      json_object_object_add(ro, "size_from", json_object_new_int64((int64_t)rs.size_from));
      json_object_object_add(ro, "size_to", json_object_new_int64((int64_t)rs.size_to));
      json_object_object_add(ro, "layout_from", json_object_new_int(rs.layout_from));
      json_object_object_add(ro, "layout_to", json_object_new_int(rs.layout_to));
      json_object_object_add(ro, "chunk_from", json_object_new_int64(rs.chunk_from));
      json_object_object_add(ro, "chunk_to", json_object_new_int64(rs.chunk_to));
      json_object_object_add(ro, "frozen", json_object_new_boolean(rs.frozen));
      ADD("reshape", ro);
    }
  }
#undef ADD
  return o;
}

static void
add_status(struct export *e, void *opaque)
{
  json_object_array_add(opaque, control_describe(e));
}

json_object *
do_status(json_object *req)
{
  const char *name = ctl_get_string(req, "name");
  json_object *r = ctl_ok(), *arr = json_object_new_array();
  struct export *e;

  if (name) {
    e = export_get(name);
    if (e == NULL) {
      json_object_put(r);
      json_object_put(arr);
      return ctl_fail("array %s is not running", name);
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
json_object *
do_stats(json_object *req)
{
  const char *name = ctl_get_string(req, "name");
  struct raid_member_stats *ms;
  struct raid_array_stats st;
  struct raid_array *a;
  struct export *e;
  json_object *r, *jo, *jms, *d;
  uint64_t reads = 0, written;
  unsigned max = RAID_MAX_MEMBERS * 3, i, n;
  int rc;

  if (name == NULL)
    return ctl_fail("stats: no array name given");
  if ((e = export_get(name)) == NULL)
    return ctl_fail("array %s is not running", name);
  a = export_array(e);
  ms = calloc(max, sizeof *ms);
  if (ms == NULL) {
    export_put(e);
    return ctl_fail("array %s: stats: out of memory", name);
  }
  rc = raid_array_stats(a, &st, ms, max);
  if (rc < 0) {
    r = ctl_fail("%s", raid_get_error());
    goto out;
  }
  n = (unsigned)rc < max ? (unsigned)rc : max;
  if (ctl_get_bool(req, "reset"))
    raid_array_stats_reset(a);  /* after the snapshot: nothing is lost */

  r = ctl_ok();
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
  ADD("plugged_writes", json_object_new_int64(st.plugged_writes));
  ADD("plugs_filled", json_object_new_int64(st.plugs_filled));
  ADD("plugs_expired", json_object_new_int64(st.plugs_expired));
#undef ADD
  json_object_object_add(r, "derived", d);
 out:
  free(ms);
  export_put(e);
  return r;
}
