/* The fields of control requests: what each verb takes, and every request
 * checked against its verb's fields before the verb runs (control.c's
 * dispatch to the verbs' files). */
#include <config.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "raidd.h"
#include "control.h"
#include "events.h"

/* What each verb takes: every field's type and whether it must be there.
 * A request is checked against its verb's fields here, in one place,
 * before the verb runs, so that no verb sees a field of the wrong type
 * ("run": "yes" is not true, "rebuild_min": "fast" is not 0), a number
 * out of range (-1, 1e300), a string cut short by a NUL ("can\u0000ary"
 * is not "can"), or a field it does not know (a misspelt "force" would
 * otherwise be ignored).  The error names the verb and the field. */
enum field_type {
  FIELD_STRING,                 /* a string holding no NUL */
  FIELD_NAME,                   /* a string, a valid new array name */
  FIELD_BOOL,                   /* true or false */
  FIELD_RATE,                   /* an integer, 0 to INT64_MAX */
  FIELD_PATHS,                  /* 1 to RAID_MAX_MEMBERS FIELD_STRINGs */
};

struct field {
  const char *name;
  enum field_type type;
  bool required;
};

#define MAX_FIELDS 12

struct verb {
  const char *name;
  json_object *(*fn)(json_object *req);
  struct field fields[MAX_FIELDS];   /* up to the first without a name */
};

static json_object *do_ping(json_object *req) { return ctl_ok(); }

#define OPT(f, t) { f, t, false }
#define REQ(f, t) { f, t, true }
#define NAME REQ("name", FIELD_STRING)
static const struct verb verbs[] = {
  { "assemble", do_assemble, { OPT("name", FIELD_NAME), REQ("members", FIELD_PATHS),
                               OPT("run", FIELD_BOOL), OPT("readonly", FIELD_BOOL),
                               OPT("force", FIELD_BOOL) } },
  { "stop", do_stop, { NAME, OPT("force", FIELD_BOOL) } },
  { "status", do_status, { OPT("name", FIELD_STRING) } },
  { "detail", do_status, { OPT("name", FIELD_STRING) } },
  { "stats", do_stats, { NAME, OPT("reset", FIELD_BOOL) } },
  { "ping", do_ping, { OPT(NULL, FIELD_STRING) } },
  { "fail", do_fail, { NAME, REQ("member", FIELD_STRING), OPT("force", FIELD_BOOL) } },
  { "remove", do_remove, { NAME, REQ("member", FIELD_STRING), OPT("force", FIELD_BOOL) } },
  { "add", do_add, { NAME, REQ("member", FIELD_STRING), OPT("write_mostly", FIELD_BOOL) } },
  { "replace", do_replace, { NAME, REQ("old", FIELD_STRING), REQ("new", FIELD_STRING) } },
  { "sync", do_sync, { NAME, REQ("action", FIELD_STRING) } },
  { "set", do_set, { NAME, OPT("rebuild_min", FIELD_RATE), OPT("rebuild_max", FIELD_RATE),
                     OPT("bitmap", FIELD_STRING), OPT("bitmap_chunk", FIELD_RATE),
                     OPT("safe_mode_delay", FIELD_RATE), OPT("spares_expected", FIELD_RATE) } },
  { "grow", do_grow, { NAME, OPT("member_size", FIELD_RATE), OPT("assume_clean", FIELD_BOOL),
                       OPT("force", FIELD_BOOL), OPT("raid_devices", FIELD_RATE),
                       OPT("layout", FIELD_RATE), OPT("chunk", FIELD_RATE),
                       OPT("level", FIELD_RATE), OPT("add", FIELD_PATHS),
                       OPT("reshape", FIELD_STRING), OPT("array_size", FIELD_RATE) } },
  { "attach", do_attach, { NAME, OPT("device", FIELD_STRING), OPT("connections", FIELD_RATE) } },
  { "detach", do_detach, { OPT("name", FIELD_STRING), OPT("device", FIELD_STRING),
                           OPT("force", FIELD_BOOL) } },
  { "ublk", do_ublk, { NAME } },
  { "unublk", do_unublk, { NAME, OPT("force", FIELD_BOOL) } },
  { "incremental", do_incremental, { REQ("member", FIELD_STRING) } },
  { "monitor", do_monitor, { OPT("names", FIELD_PATHS), OPT("oneshot", FIELD_BOOL),
                             OPT("test", FIELD_BOOL) } },
};
#undef NAME
#undef REQ
#undef OPT

static const char *const field_wants[] = {
  [FIELD_STRING] = "a string",
  [FIELD_NAME] = "an array name (a string)",
  [FIELD_BOOL] = "true or false",
  [FIELD_RATE] = "an integer from 0 to 9223372036854775807 (bytes per second)",
  [FIELD_PATHS] = "a list of member paths (strings)",
};

/* V as JSON for a message, cut short, and its type: "fast" (a string). */
static const char *
shown(json_object *v, char *buf, size_t len)
{
  static const char *const types[] = {
    [json_type_null] = "", [json_type_boolean] = " (a boolean)",
    [json_type_double] = " (a number with a fraction or an exponent)",
    [json_type_int] = " (an integer)", [json_type_object] = " (an object)",
    [json_type_array] = " (a list)", [json_type_string] = " (a string)",
  };
  const char *j = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);

  snprintf(buf, len, "%.60s%s%s", j, strlen(j) > 60 ? "..." : "",
           types[json_object_get_type(v)]);
  return buf;
}

/* A string without NUL, or a reply saying what is wrong with it. */
static json_object *
check_string(const char *verb, const char *field, const char *what, json_object *v)
{
  char buf[128];
  const char *s;

  if (!json_object_is_type(v, json_type_string))
    return ctl_fail("%s: field \"%s\"%s must be a string, not %s", verb, field, what,
                shown(v, buf, sizeof buf));
  s = json_object_get_string(v);
  if (strlen(s) != (size_t)json_object_get_string_len(v))
    return ctl_fail("%s: field \"%s\"%s holds a NUL character (byte %zu)", verb, field,
                what, strlen(s));
  return NULL;
}

/* NULL when V suits F, or the error reply. */
static json_object *
check_field(const char *verb, const struct field *f, json_object *v)
{
  json_object *err;
  char buf[128], what[32];
  size_t i, n;

  switch (f->type) {
  case FIELD_STRING:
    return check_string(verb, f->name, "", v);
  case FIELD_NAME:
    if ((err = check_string(verb, f->name, "", v)) != NULL)
      return err;
    if (raid_name_check(json_object_get_string(v)) < 0)
      return ctl_fail("%s: field \"%s\": %s", verb, f->name, raid_get_error());
    return NULL;
  case FIELD_BOOL:
    if (json_object_is_type(v, json_type_boolean))
      return NULL;
    break;
  case FIELD_RATE:
    /* json-c keeps integers above INT64_MAX as unsigned (and clamps them
     * to UINT64_MAX): read it both ways. */
    if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 0 &&
        json_object_get_uint64(v) <= INT64_MAX)
      return NULL;
    break;
  case FIELD_PATHS:
    if (!json_object_is_type(v, json_type_array))
      break;
    n = json_object_array_length(v);
    if (n == 0 || n > RAID_MAX_MEMBERS)
      return ctl_fail("%s: field \"%s\" lists %zu members: give 1 to %u", verb, f->name,
                  n, RAID_MAX_MEMBERS);
    for (i = 0; i < n; i++) {
      snprintf(what, sizeof what, " (element %zu)", i);
      if ((err = check_string(verb, f->name, what, json_object_array_get_idx(v, i))) != NULL)
        return err;
    }
    return NULL;
  }
  return ctl_fail("%s: field \"%s\" must be %s, not %s", verb, f->name, field_wants[f->type],
              shown(v, buf, sizeof buf));
}

/* NULL when REQ suits its verb V, or the error reply. */
static json_object *
check_request(const struct verb *v, json_object *req)
{
  const struct field *f;
  json_object *err, *val;
  char known[256];
  size_t len = 0;

  json_object_object_foreach(req, key, value) {
    (void)value;
    if (strcmp(key, "verb") == 0)
      continue;
    for (f = v->fields; f < v->fields + MAX_FIELDS && f->name; f++)
      if (strcmp(key, f->name) == 0)
        break;
    if (f < v->fields + MAX_FIELDS && f->name)
      continue;
    known[0] = '\0';
    for (f = v->fields; f < v->fields + MAX_FIELDS && f->name; f++)
      len += snprintf(known + len, len < sizeof known ? sizeof known - len : 0, "%s%s",
                      len ? ", " : "", f->name);
    return ctl_fail("%s: unknown field \"%.64s\" (%s takes %s)", v->name, key, v->name,
                known[0] ? known : "no fields");
  }
  for (f = v->fields; f < v->fields + MAX_FIELDS && f->name; f++) {
    if (!json_object_object_get_ex(req, f->name, &val)) {
      if (f->required)
        return ctl_fail("%s: field \"%s\" is missing", v->name, f->name);
      continue;
    }
    if ((err = check_field(v->name, f, val)) != NULL)
      return err;
  }
  return NULL;
}

json_object *
control_dispatch(json_object *req)
{
  json_object *jv, *err;
  const char *verb;
  size_t i;

  if (!json_object_object_get_ex(req, "verb", &jv))
    return ctl_fail("request has no verb");
  if ((err = check_string("request", "verb", "", jv)) != NULL)
    return err;
  verb = json_object_get_string(jv);
  for (i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    if (strcmp(verb, verbs[i].name) == 0) {
      if ((err = check_request(&verbs[i], req)) != NULL)
        return err;
      return verbs[i].fn(req);
    }
  return ctl_fail("unknown verb '%.64s'", verb);
}
