/* Replies to control requests and the fields they carry, for the verbs'
 * files: {"ok": true}, {"ok": false, "error": "..."}, a string or a
 * boolean field of a request (checked before its verb runs). */
#include <config.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include <json-c/json.h>

#include "control.h"

json_object *
ctl_fail(const char *fmt, ...)
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
ctl_ok(void)
{
  json_object *r = json_object_new_object();
  json_object_object_add(r, "ok", json_object_new_boolean(1));
  return r;
}

const char *
ctl_get_string(json_object *req, const char *key)
{
  json_object *v;
  return json_object_object_get_ex(req, key, &v) && json_object_is_type(v, json_type_string)
    ? json_object_get_string(v) : NULL;
}

bool
ctl_get_bool(json_object *req, const char *key)
{
  json_object *v;
  return json_object_object_get_ex(req, key, &v) && json_object_get_boolean(v);
}
