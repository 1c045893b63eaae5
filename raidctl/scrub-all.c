/* raidctl scrub --all [--repair | --stop] [--wait]: scrub every running
 * array, as Debian's mdcheck does for md (raidd-scrub.timer runs it once a
 * month).  Arrays where a check would prove nothing or cannot run are
 * skipped with a note, and that is no failure: a degraded array (it has no
 * second copy or parity to compare; rebuild it first), a failed one, a
 * read-only one, RAID 0 (nothing redundant), and one already busy with a
 * rebuild, resync or scrub.  --stop stops what runs on every array.
 * --wait waits until every scrub started is done and reports each one's
 * mismatch count; the exit status is 1 when any request or scrub failed.
 *
 * With --json the result is {"arrays": [...]}: per array its "name" and
 * either "skipped" (why) or "action" (and with --wait "sync", the array's
 * sync object as in raidctl status --json). */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "raidctl.h"

/* Why array A cannot be scrubbed now (into BUF), or NULL. */
static const char *
skip_reason(json_object *a, char *buf, size_t len)
{
  const char *act = json_object_get_string(jget(jget(a, "sync"), "action"));
  int degraded = json_object_get_int(jget(a, "degraded"));

  if (json_object_get_boolean(jget(a, "failed")))
    return "it has failed";
  if (json_object_get_int(jget(a, "level")) == RAID_LEVEL_0)
    return "RAID 0 has no redundancy to check";
  if (degraded > 0) {
    snprintf(buf, len, "it is degraded (%d member%s missing): rebuild it first", degraded,
             degraded == 1 ? "" : "s");
    return buf;
  }
  if (json_object_get_boolean(jget(a, "readonly")))
    return "it is read-only";
  if (act && strcmp(act, "idle") != 0) {
    snprintf(buf, len, "busy: a %s is running", act);
    return buf;
  }
  return NULL;
}

/* The sync object of NAME in a fresh status, or NULL (gone; said). */
static json_object *
sync_of(const char *name)
{
  json_object *status, *a, *s = NULL;
  bool failed;

  if ((status = raidd_status(&failed)) == NULL) {
    if (!failed)
      error("scrub --all: raidd stopped answering at %s", opt.control);
    return NULL;
  }
  if ((a = status_array(status, "name", name)) == NULL)
    error("scrub --all: array %s stopped while it was scrubbed", name);
  else
    s = json_object_get(jget(a, "sync"));
  json_object_put(status);
  return s;
}

int
scrub_all(const char *action, bool wait)
{
  struct timespec ts = { 0, 200000000 };
  json_object *status, *arrays, *out, *req, *rep, *s;
  bool failed, stop = strcmp(action, "idle") == 0;
  int status_code = EXIT_OK;
  size_t i, n;
  char why[128];

  if ((status = raidd_status(&failed)) == NULL) {
    if (!failed)
      error("scrub --all: cannot reach raidd at %s: is it running?", opt.control);
    return EXIT_FAIL;
  }
  arrays = jget(status, "arrays");
  n = arrays ? json_object_array_length(arrays) : 0;
  out = json_object_new_array();
  if (n == 0 && !opt.json)
    printf("raidctl: no array is running\n");
  for (i = 0; i < n; i++) {
    json_object *a = json_object_array_get_idx(arrays, i), *o = json_object_new_object();
    const char *name = json_object_get_string(jget(a, "name"));
    const char *reason = stop ? NULL : skip_reason(a, why, sizeof why);

    json_object_object_add(o, "name", json_object_new_string(name));
    json_object_array_add(out, o);
    if (reason) {
      json_object_object_add(o, "skipped", json_object_new_string(reason));
      if (!opt.json)
        printf("raidctl: %s: skipped: %s\n", name, reason);
      continue;
    }
    req = json_object_new_object();
    json_object_object_add(req, "verb", json_object_new_string("sync"));
    json_object_object_add(req, "name", json_object_new_string(name));
    json_object_object_add(req, "action", json_object_new_string(action));
    rep = raidd_call(req);          /* an error is printed */
    json_object_put(req);
    if (rep == NULL) {
      json_object_object_add(o, "error", json_object_new_string("refused by raidd"));
      status_code = EXIT_FAIL;
      continue;
    }
    json_object_put(rep);
    json_object_object_add(o, "action", json_object_new_string(action));
    if (!opt.json && !wait)
      printf(stop ? "raidctl: %s: stopped what was running\n" : "raidctl: %s: %s started\n",
             name, action);
  }
  json_object_put(status);

  /* --wait: each started scrub to its end, in order. */
  for (i = 0; wait && !stop && i < json_object_array_length(out); i++) {
    json_object *o = json_object_array_get_idx(out, i);
    const char *name = json_object_get_string(jget(o, "name"));
    const char *act, *last;

    if (jget(o, "action") == NULL)
      continue;
    for (;;) {
      if ((s = sync_of(name)) == NULL) {
        status_code = EXIT_FAIL;
        break;
      }
      act = json_object_get_string(jget(s, "action"));
      if (strcmp(act, "idle") == 0 && !json_object_get_boolean(jget(s, "due")))
        break;
      json_object_put(s);
      nanosleep(&ts, NULL);
    }
    if (s == NULL)
      continue;
    last = json_object_get_string(jget(s, "last_action"));
    if (json_object_get_int(jget(s, "last_result")) < 0)
      status_code = EXIT_FAIL;
    if (!opt.json)
      printf("raidctl: %s: %s %s: mismatch_cnt %" PRId64 "\n", name, last,
             json_object_get_int(jget(s, "last_result")) < 0 ? "stopped" : "done",
             json_object_get_int64(jget(s, "mismatches")));
    json_object_object_add(o, "sync", s);
  }
  if (opt.json) {
    json_object *doc = json_object_new_object();

    json_object_object_add(doc, "arrays", out);
    json_result(doc);
  }
  else
    json_object_put(out);
  return status_code;
}
