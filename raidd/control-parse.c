/* A request's text made into its JSON object (control.c reads the line,
 * control-fields.c checks the object's fields).
 *
 * json-c parses strictly here (no trailing commas, no comments, nothing
 * after the object), but it keeps the last of two members with the same
 * key and has no option to say so: {"verb": "status", "verb": "stop",
 * "name": "x"} would stop x.  So once json-c has accepted the text, a
 * scan over it walks every object, at any depth, and refuses one that
 * holds a key twice, naming the key.  Keys are compared as json-c stores
 * them, decoded by json-c itself: "ver\u0062" is "verb".  A key holding
 * a NUL is refused too: json-c cuts it there, so "verb\u0000x" would be
 * "verb".
 *
 * The scan trusts json-c's verdict for the grammar and only finds where
 * each object, key and value starts and ends: strings in double quotes
 * (keys in single quotes too: json-c takes them even when strict) with
 * backslash escapes, objects, arrays, and every other value a run of
 * characters up to the next delimiter.  json-c's nesting limit (32)
 * bounds its recursion. */
#include <config.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "control.h"

#define MAX_DEPTH 64            /* beyond json-c's own limit */

struct scan {
  const char *p, *end;
  struct json_tokener *keys;    /* decodes a key, as json-c does */
  json_object *err;             /* the error reply, once there is one */
};

/* KEY (LEN bytes) as JSON for a message, quoted, cut short. */
static const char *
shown_key(const char *key, size_t len, char *buf, size_t size)
{
  json_object *s = json_object_new_string_len(key, len);
  const char *j = s ? json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN |
                                                     JSON_C_TO_STRING_NOSLASHESCAPE)
                    : "(a key)";

  snprintf(buf, size, "%.64s%s", j, strlen(j) > 64 ? "...\"" : "");
  json_object_put(s);
  return buf;
}

static void
skip_space(struct scan *s)
{
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
    s->p++;
}

static bool
malformed(struct scan *s)
{
  if (s->err == NULL)
    s->err = ctl_fail("malformed request: not one JSON object");
  return false;
}

/* Past the string at s->p, in double or single quotes. */
static bool
skip_string(struct scan *s)
{
  char quote = *s->p++;

  while (s->p < s->end && *s->p != quote)
    s->p += *s->p == '\\' ? 2 : 1;
  if (s->p >= s->end)
    return malformed(s);
  s->p++;
  return true;
}

/* WHERE and KEY as the path of the object in KEY, into BUF: "x",
 * "x.y", "members[0].y"; a key cut short, its control characters shown
 * as '?'. */
static void
inner_path(char *buf, size_t size, const char *where, const char *key)
{
  size_t n = (size_t)snprintf(buf, size, "%s%s", where, *where ? "." : "");
  size_t i;

  for (i = 0; key[i] && i < 64 && n + 1 < size; i++)
    buf[n++] = (unsigned char)key[i] < 0x20 || key[i] == 0x7f ? '?' : key[i];
  if (n < size)
    buf[n] = '\0';
}

static bool scan_value(struct scan *s, const char *where, int depth);

/* The object at s->p: each key once.  WHERE is its path, for messages:
 * "" for the request itself, "x" for the object in its field "x", "x.y"
 * deeper, "members[0]" in a list. */
static bool
scan_object(struct scan *s, const char *where, int depth)
{
  json_object *seen = json_object_new_object(), *key;
  char buf[96], inner[256];
  const char *start, *k;
  size_t len;
  bool ok = false;

  if (seen == NULL) {
    s->err = ctl_fail("out of memory for the request");
    return false;
  }
  s->p++;
  skip_space(s);
  if (s->p < s->end && *s->p == '}') {
    s->p++;
    ok = true;
  }
  while (!ok) {
    if (s->p >= s->end || (*s->p != '"' && *s->p != '\''))
      break;
    start = s->p;
    if (!skip_string(s))
      break;
    json_tokener_reset(s->keys);
    key = json_tokener_parse_ex(s->keys, start, s->p - start);
    if (key == NULL || !json_object_is_type(key, json_type_string)) {
      json_object_put(key);
      malformed(s);
      break;
    }
    k = json_object_get_string(key);
    len = json_object_get_string_len(key);
    if (strlen(k) != len)
      s->err = ctl_fail("key %s in the request%s%s%s holds a NUL character (byte %zu)",
                        shown_key(k, len, buf, sizeof buf), *where ? "'s \"" : "", where,
                        *where ? "\"" : "", strlen(k));
    else if (json_object_object_get_ex(seen, k, NULL))
      s->err = ctl_fail("duplicate key %s in the request%s%s%s: each key may be given once",
                        shown_key(k, len, buf, sizeof buf), *where ? "'s \"" : "", where,
                        *where ? "\"" : "");
    else if (json_object_object_add(seen, k, NULL) < 0)
      s->err = ctl_fail("out of memory for the request");
    inner_path(inner, sizeof inner, where, k);
    json_object_put(key);
    if (s->err)
      break;
    skip_space(s);
    if (s->p >= s->end || *s->p != ':') {
      malformed(s);
      break;
    }
    s->p++;
    skip_space(s);
    if (!scan_value(s, inner, depth + 1))
      break;
    skip_space(s);
    if (s->p < s->end && *s->p == ',') {
      s->p++;
      skip_space(s);
      continue;
    }
    if (s->p < s->end && *s->p == '}') {
      s->p++;
      ok = true;
      break;
    }
    malformed(s);
    break;
  }
  json_object_put(seen);
  return ok || (s->err == NULL && malformed(s));
}

/* The array at s->p: its objects checked, WHERE[I] naming each. */
static bool
scan_array(struct scan *s, const char *where, int depth)
{
  char inner[256];
  size_t i;

  s->p++;
  skip_space(s);
  if (s->p < s->end && *s->p == ']') {
    s->p++;
    return true;
  }
  for (i = 0;; i++) {
    snprintf(inner, sizeof inner, "%s[%zu]", where, i);
    if (!scan_value(s, inner, depth + 1))
      return false;
    skip_space(s);
    if (s->p < s->end && *s->p == ',') {
      s->p++;
      skip_space(s);
      continue;
    }
    if (s->p < s->end && *s->p == ']') {
      s->p++;
      return true;
    }
    return malformed(s);
  }
}

static bool
scan_value(struct scan *s, const char *where, int depth)
{
  if (s->p >= s->end || depth > MAX_DEPTH)
    return malformed(s);
  switch (*s->p) {
  case '{':
    return scan_object(s, where, depth);
  case '[':
    return scan_array(s, where, depth);
  case '"':
  case '\'':
    return skip_string(s);
  default:                      /* a number, true, false, null, NaN... */
    while (s->p < s->end && !strchr(" \t\n\r,]}", *s->p))
      s->p++;
    return true;
  }
}

json_object *
control_parse(const char *text, size_t len, json_object **reqp)
{
  struct json_tokener *tok = json_tokener_new();
  struct scan s = { .err = NULL };
  enum json_tokener_error jerr;
  json_object *req;

  *reqp = NULL;
  if (tok == NULL || (s.keys = json_tokener_new()) == NULL) {
    json_tokener_free(tok);
    return ctl_fail("out of memory for the request");
  }
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
  req = json_tokener_parse_ex(tok, text, len);
  jerr = json_tokener_get_error(tok);
  if (req == NULL)
    s.err = ctl_fail("malformed request: %s at byte %zu: a request is one JSON object",
                     jerr == json_tokener_continue ? "the JSON ends early"
                     : json_tokener_error_desc(jerr), json_tokener_get_parse_end(tok));
  else if (!json_object_is_type(req, json_type_object))
    s.err = ctl_fail("malformed request: not a JSON object");
  else {
    s.p = text;
    s.end = text + json_tokener_get_parse_end(tok);
    skip_space(&s);
    scan_value(&s, "", 0);
  }
  json_tokener_free(s.keys);
  json_tokener_free(tok);
  if (s.err) {
    json_object_put(req);
    return s.err;
  }
  *reqp = req;
  return NULL;
}
