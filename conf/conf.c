/* The configuration file (conf.h, raidd.conf(5)).
 *
 * Reading goes in three steps: the file becomes logical lines (comments
 * cut, continuation lines joined, with the number of the line each began
 * on), each logical line becomes words (quotes as mdadm takes them: "a b"
 * or 'a b' is one word), and the first word says what the line is.  A line
 * that is wrong is reported and left out, never half taken: an ARRAY line
 * with one bad tag describes no array, so no array is assembled from a
 * guess at what it meant. */
#include <config.h>

#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <raid/raid.h>

#include "conf.h"
#include "md-names.h"
#include "member-stat.h"

#define MAX_WORDS 256

struct parse {
  struct conf *c;
  conf_error_fn err;
  void *opaque;
  unsigned line;
};

static void __attribute__((format(printf, 2, 3)))
refuse(struct parse *p, const char *fmt, ...)
{
  char msg[1024];
  int n;
  va_list ap;

  n = snprintf(msg, sizeof msg, "%s:%u: ", p->c->path, p->line);
  va_start(ap, fmt);
  vsnprintf(msg + n, sizeof msg - n, fmt, ap);
  va_end(ap);
  p->c->errors++;
  if (p->err)
    p->err(msg, p->opaque);
}

static void *
xrealloc(void *ptr, size_t n, size_t size)
{
  void *r = reallocarray(ptr, n, size);

  if (r == NULL)
    abort();
  return r;
}

static char *
xstrdup(const char *s)
{
  char *r = strdup(s);

  if (r == NULL)
    abort();
  return r;
}

/* Split LINE (modified) into words; a '#' starting a word starts a
 * comment.  The number of words, or -1 for an unterminated quote. */
static int
split_words(char *line, char **w)
{
  char *in = line, *out = line;
  int n = 0;

  for (;;) {
    char quote = 0;

    while (*in == ' ' || *in == '\t' || *in == '\r')
      in++;
    if (*in == '\0' || *in == '#' || n == MAX_WORDS)
      return n;
    w[n++] = out;
    for (; *in && (quote || (*in != ' ' && *in != '\t' && *in != '\r')); in++) {
      if (quote && *in == quote)
        quote = 0;
      else if (!quote && (*in == '"' || *in == '\''))
        quote = *in;
      else
        *out++ = *in;
    }
    if (quote)
      return -1;
    if (*in)
      in++;
    *out++ = '\0';
  }
}

/* "/dev/md/NAME" and "/dev/NAME" name the array NAME, as mdadm's device
 * names do (a bare NAME too). */
static const char *
array_name(const char *word)
{
  if (strncmp(word, "/dev/md/", 8) == 0)
    return word + 8;
  if (strncmp(word, "/dev/", 5) == 0)
    return word + 5;
  return word;
}

static bool
yes_no(const char *s, bool *v)
{
  if (strcasecmp(s, "yes") == 0 || strcasecmp(s, "true") == 0 || strcmp(s, "1") == 0)
    *v = true;
  else if (strcasecmp(s, "no") == 0 || strcasecmp(s, "false") == 0 || strcmp(s, "0") == 0)
    *v = false;
  else
    return false;
  return true;
}

static bool
count(const char *s, int max, int *v)
{
  char *end;
  long n;

  n = strtol(s, &end, 10);
  if (*s == '\0' || *end || n < 0 || n > max)
    return false;
  *v = (int)n;
  return true;
}

static void
array_free(struct conf_array *a)
{
  unsigned i;

  for (i = 0; i < a->ndevices; i++)
    free(a->devices[i]);
  free(a->devices);
}

/* The tags of an ARRAY line that take more than a check: VALUE into A,
 * or false (reported) if it is wrong. */
static bool
tag_name(struct parse *p, struct conf_array *a, const char *v)
{
  const char *colon = strchr(v, ':');

  if (strlen(v) >= sizeof a->set_name || raid_name_check(colon ? colon + 1 : v) < 0) {
    refuse(p, "ARRAY %s: name=%s: %s", a->name, v,
           strlen(v) >= sizeof a->set_name ? "too long" : raid_get_error());
    return false;
  }
  snprintf(a->set_name, sizeof a->set_name, "%s", v);
  return true;
}

/* devices=: globs of absolute paths, and remote members' URIs (taken
 * as they are written, never as globs). */
static bool
tag_devices(struct parse *p, struct conf_array *a, const char *v)
{
  char *list = xstrdup(v), *save = NULL, *g, why[1024];

  for (g = strtok_r(list, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
    if (member_spec_check_uri(g, why, sizeof why) < 0) {
      refuse(p, "ARRAY %s: devices=: %s", a->name, why);
      free(list);
      return false;
    }
    if (g[0] != '/' && !member_spec_remote(g)) {
      refuse(p, "ARRAY %s: devices=%s: '%s' is neither an absolute path nor a remote "
             "member's URI", a->name, v, g);
      free(list);
      return false;
    }
    a->devices = xrealloc(a->devices, a->ndevices + 1, sizeof *a->devices);
    a->devices[a->ndevices++] = xstrdup(g);
  }
  free(list);
  return true;
}

/* The block device raidd gives the array once it is assembled: what
 * raidctl ublk or raidctl attach [/dev/nbdN] would do. */
static bool
tag_blockdev(struct parse *p, struct conf_array *a, const char *v)
{
  size_t pre = strlen("/dev/nbd");
  bool nbd_path = strncmp(v, "/dev/nbd", pre) == 0 && v[pre] &&
                  strspn(v + pre, "0123456789") == strlen(v + pre);

  if (strcmp(v, "none") == 0)
    a->blockdev[0] = '\0';
  else if (strcmp(v, "ublk") == 0 || strcmp(v, "nbd") == 0 ||
           (nbd_path && strlen(v) < sizeof a->blockdev))
    snprintf(a->blockdev, sizeof a->blockdev, "%s", v);
  else {
    refuse(p, "ARRAY %s: blockdev=%s: say ublk, nbd, /dev/nbdN or none", a->name, v);
    return false;
  }
  return true;
}

/* One tag of an ARRAY line into A: false (reported) if it is wrong. */
static bool
array_tag(struct parse *p, struct conf_array *a, const char *word)
{
  const char *eq = strchr(word, '='), *v = eq ? eq + 1 : NULL;
  size_t klen = eq ? (size_t)(eq - word) : strlen(word);
  char key[32];

  snprintf(key, sizeof key, "%.*s", (int)(klen < sizeof key ? klen : sizeof key - 1), word);
  if (v == NULL || *v == '\0') {
    refuse(p, "ARRAY %s: '%s' is not KEY=VALUE", a->name, word);
    return false;
  }
  if (strcasecmp(key, "uuid") == 0) {
    if (uuid_parse(v, a->uuid) < 0) {
      refuse(p, "ARRAY %s: UUID=%s is not a UUID (32 hex digits, as "
             "raidctl examine --scan prints it)", a->name, v);
      return false;
    }
    a->has_uuid = true;
  }
  else if (strcasecmp(key, "name") == 0)
    return tag_name(p, a, v);
  else if (strcasecmp(key, "devices") == 0)
    return tag_devices(p, a, v);
  else if (strcasecmp(key, "spares") == 0) {
    if (!count(v, RAID_MAX_MEMBERS, &a->spares)) {
      refuse(p, "ARRAY %s: spares=%s is not a number of spares (0 to %d)", a->name, v,
             RAID_MAX_MEMBERS);
      return false;
    }
  }
  else if (strcasecmp(key, "level") == 0) {
    if (level_parse(v, &a->level) < 0) {
      refuse(p, "ARRAY %s: level=%s is not a level raidd runs (0, 1, 5, 10)", a->name, v);
      return false;
    }
  }
  else if (strcasecmp(key, "num-devices") == 0) {
    if (!count(v, RAID_MAX_MEMBERS, &a->raid_disks) || a->raid_disks == 0) {
      refuse(p, "ARRAY %s: num-devices=%s is not a number of members (1 to %d)",
             a->name, v, RAID_MAX_MEMBERS);
      return false;
    }
  }
  else if (strcasecmp(key, "metadata") == 0) {
    if (strcmp(v, "1.0") != 0 && strcmp(v, "1.1") != 0 && strcmp(v, "1.2") != 0 &&
        strcmp(v, "1") != 0) {
      refuse(p, "ARRAY %s: metadata=%s: raidd reads md's version-1 superblocks "
             "(1.0, 1.1, 1.2) only", a->name, v);
      return false;
    }
    snprintf(a->metadata, sizeof a->metadata, "%s", v);
  }
  else if (strcasecmp(key, "readonly") == 0) {
    if (!yes_no(v, &a->readonly)) {
      refuse(p, "ARRAY %s: readonly=%s: say yes or no", a->name, v);
      return false;
    }
  }
  else if (strcasecmp(key, "blockdev") == 0)
    return tag_blockdev(p, a, v);
  else if (strcasecmp(key, "auto") == 0 || strcasecmp(key, "bitmap") == 0 ||
           strcasecmp(key, "super-minor") == 0) {
    /* mdadm's: what device node to make, an external bitmap file (mdadm
     * itself ignores it now), the old 0.90 minor.  Nothing to do here. */
  }
  else if (strcasecmp(key, "container") == 0 || strcasecmp(key, "member") == 0) {
    refuse(p, "ARRAY %s: %s=: containers (IMSM, DDF) are not supported by raidd",
           a->name, key);
    return false;
  }
  else {
    refuse(p, "ARRAY %s: unknown tag '%s' (known: UUID, name, devices, spares, level, "
           "num-devices, metadata, readonly, blockdev)", a->name, key);
    return false;
  }
  return true;
}

static void
parse_array(struct parse *p, char **w, int n)
{
  struct conf *c = p->c;
  struct conf_array a = { .line = p->line, .spares = -1, .level = -100 };
  const char *name;
  int i = 1;
  unsigned k;

  if (n < 2) {
    refuse(p, "ARRAY: no array named (ARRAY NAME UUID=...)");
    return;
  }
  if (strcmp(w[1], "<ignore>") == 0)
    return;                       /* mdadm: identity listed to be left alone */
  if (strchr(w[1], '=') == NULL) {
    name = array_name(w[1]);
    if (raid_name_check(name) < 0) {
      refuse(p, "ARRAY %s: %s", w[1], raid_get_error());
      return;
    }
    snprintf(a.name, sizeof a.name, "%s", name);
    i = 2;
  }
  for (; i < n; i++)
    if (!array_tag(p, &a, w[i])) {
      array_free(&a);
      return;
    }
  /* With no name word, the name comes from name= (mdadm's "ARRAY
   * UUID=..." lines name no device). */
  if (a.name[0] == '\0') {
    const char *colon = strchr(a.set_name, ':');
    if (a.set_name[0] == '\0') {
      refuse(p, "ARRAY: neither a name nor name= given");
      array_free(&a);
      return;
    }
    snprintf(a.name, sizeof a.name, "%s", colon ? colon + 1 : a.set_name);
  }
  for (k = 0; k < c->narrays; k++) {
    if (strcmp(c->arrays[k].name, a.name) == 0) {
      refuse(p, "ARRAY %s: the name is taken already by the ARRAY line %u", a.name,
             c->arrays[k].line);
      array_free(&a);
      return;
    }
    if (a.has_uuid && c->arrays[k].has_uuid && memcmp(c->arrays[k].uuid, a.uuid, 16) == 0) {
      refuse(p, "ARRAY %s: its UUID is that of the ARRAY %s line %u already", a.name,
             c->arrays[k].name, c->arrays[k].line);
      array_free(&a);
      return;
    }
  }
  c->arrays = xrealloc(c->arrays, c->narrays + 1, sizeof *c->arrays);
  c->arrays[c->narrays++] = a;
}

static void
parse_device(struct parse *p, char **w, int n)
{
  struct conf *c = p->c;
  int i;

  if (n < 2) {
    refuse(p, "DEVICE: nothing listed (DEVICE partitions, or globs such as /dev/sd*)");
    return;
  }
  for (i = 1; i < n; i++) {
    char why[1024];

    if (strcasecmp(w[i], "partitions") == 0)
      c->devices_all = true;
    else if (strcasecmp(w[i], "containers") == 0)
      ;                          /* mdadm's; raidd has none to look in */
    else if (member_spec_check_uri(w[i], why, sizeof why) < 0)
      refuse(p, "DEVICE %s", why);
    else if (member_spec_remote(w[i])) {
      c->device_uris = xrealloc(c->device_uris, c->ndevice_uris + 1,
                                sizeof *c->device_uris);
      c->device_uris[c->ndevice_uris++] = xstrdup(w[i]);
    }
    else if (w[i][0] != '/')
      refuse(p, "DEVICE %s: not an absolute path, a remote member's URI, 'partitions' "
             "or 'containers'", w[i]);
    else {
      c->device_globs = xrealloc(c->device_globs, c->ndevice_globs + 1,
                                 sizeof *c->device_globs);
      c->device_globs[c->ndevice_globs++] = xstrdup(w[i]);
    }
  }
}

/* Everything else is a setting: the key lower case, the rest of the line
 * its value.  What is a setting is raidd's to say (conf.h). */
static void
parse_setting(struct parse *p, char **w, int n)
{
  struct conf *c = p->c;
  struct conf_setting s = { .line = p->line };
  size_t len = 1;
  int i;
  char *q;

  for (i = 1; i < n; i++)
    len += strlen(w[i]) + 1;
  s.value = calloc(1, len);
  s.key = xstrdup(w[0]);
  if (s.value == NULL)
    abort();
  for (i = 1; i < n; i++) {
    if (i > 1)
      strcat(s.value, " ");
    strcat(s.value, w[i]);
  }
  for (q = s.key; *q; q++)
    if (*q >= 'A' && *q <= 'Z')
      *q += 'a' - 'A';
  c->settings = xrealloc(c->settings, c->nsettings + 1, sizeof *c->settings);
  c->settings[c->nsettings++] = s;
}

static void
parse_line(struct parse *p, char *line)
{
  static const char *const mdadm_only[] = {
    "HOMEHOST", "AUTO", "CREATE", "POLICY", "PART-POLICY", "SYSFS", "ENV",
  };
  char *w[MAX_WORDS];
  size_t i;
  int n;

  n = split_words(line, w);
  if (n < 0) {
    refuse(p, "a quote is not closed");
    return;
  }
  if (n == 0)
    return;
  if (n == MAX_WORDS) {
    refuse(p, "more than %d words", MAX_WORDS - 1);
    return;
  }
  if (strcasecmp(w[0], "ARRAY") == 0)
    parse_array(p, w, n);
  else if (strcasecmp(w[0], "DEVICE") == 0 || strcasecmp(w[0], "DEVICES") == 0)
    parse_device(p, w, n);
  else {
    for (i = 0; i < sizeof mdadm_only / sizeof mdadm_only[0]; i++)
      if (strcasecmp(w[0], mdadm_only[i]) == 0) {
        refuse(p, "%s is mdadm's; raidd does not use it (remove the line)", w[0]);
        return;
      }
    parse_setting(p, w, n);
  }
}

int
conf_read(const char *path, conf_error_fn err, void *opaque, struct conf **out)
{
  struct parse p = { .err = err, .opaque = opaque };
  char *line = NULL, *logical = NULL;
  size_t cap = 0, llen = 0;
  ssize_t len;
  unsigned lineno = 0;
  FILE *f;
  int e;

  *out = NULL;
  f = fopen(path, "re");
  if (f == NULL) {
    char msg[1024];
    e = errno;
    snprintf(msg, sizeof msg, "%s: %s", path, strerror(e));
    if (err)
      err(msg, opaque);
    return -e;
  }
  p.c = calloc(1, sizeof *p.c);
  if (p.c == NULL)
    abort();
  p.c->path = xstrdup(path);
  /* Each logical line is parsed once the next one starts (or the file
   * ends), so that continuation lines are part of it. */
  for (;;) {
    len = getline(&line, &cap, f);
    if (len >= 0) {
      lineno++;
      if (len > 0 && line[len - 1] == '\n')
        line[--len] = '\0';
      if ((line[0] == ' ' || line[0] == '\t') && logical) {
        logical = xrealloc(logical, llen + len + 2, 1);
        logical[llen++] = ' ';
        memcpy(logical + llen, line, len + 1);
        llen += len;
        continue;
      }
    }
    if (logical) {
      parse_line(&p, logical);
      free(logical);
      logical = NULL;
    }
    if (len < 0)
      break;
    p.line = lineno;
    logical = xstrdup(line);
    llen = len;
  }
  e = ferror(f) ? errno : 0;
  free(line);
  fclose(f);
  if (e) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s: %s", path, strerror(e));
    if (err)
      err(msg, opaque);
    conf_free(p.c);
    return -e;
  }
  if (p.c->ndevice_globs == 0)
    p.c->devices_all = true;
  *out = p.c;
  return 0;
}

void
conf_free(struct conf *c)
{
  unsigned i;

  if (c == NULL)
    return;
  for (i = 0; i < c->narrays; i++)
    array_free(&c->arrays[i]);
  for (i = 0; i < c->ndevice_globs; i++)
    free(c->device_globs[i]);
  for (i = 0; i < c->ndevice_uris; i++)
    free(c->device_uris[i]);
  free(c->device_uris);
  for (i = 0; i < c->nsettings; i++) {
    free(c->settings[i].key);
    free(c->settings[i].value);
  }
  free(c->arrays);
  free(c->device_globs);
  free(c->settings);
  free(c->path);
  free(c);
}

bool
conf_array_has_device(const struct conf_array *a, const char *path)
{
  unsigned i;

  for (i = 0; i < a->ndevices; i++)
    if (member_spec_remote(a->devices[i]) ? strcmp(a->devices[i], path) == 0
                                          : fnmatch(a->devices[i], path, FNM_PATHNAME) == 0)
      return true;
  return a->ndevices == 0;
}

const struct conf_array *
conf_find_array(const struct conf *c, const uint8_t *uuid, const char *set_name,
                const char *path)
{
  const char *colon = strchr(set_name, ':'), *shrt = colon ? colon + 1 : set_name;
  unsigned i;

  for (i = 0; c && i < c->narrays; i++) {
    const struct conf_array *a = &c->arrays[i];
    bool match = true;

    /* As mdadm: every identity the line gives must match. */
    if (a->has_uuid)
      match = memcmp(a->uuid, uuid, 16) == 0;
    if (a->set_name[0])
      match = match && (strcmp(a->set_name, set_name) == 0 ||
                        (strchr(a->set_name, ':') == NULL && strcmp(a->set_name, shrt) == 0));
    if (!a->has_uuid && !a->set_name[0])
      match = strcmp(a->name, shrt) == 0;
    if (match && (path == NULL || conf_array_has_device(a, path)))
      return a;
  }
  return NULL;
}

const char *
conf_blockdev_verb(const char *blockdev, const char **device)
{
  *device = blockdev[0] == '/' ? blockdev : NULL;
  return strcmp(blockdev, "ublk") == 0 ? "ublk" : "attach";
}
