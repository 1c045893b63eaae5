/* Finding members and grouping them into arrays (scan.h). */
#include <config.h>

#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <blkid.h>
#include <libudev.h>

#include "scan.h"
#include "md-names.h"
#include "array-size.h"
#include "member-id.h"
#include "member-stat.h"

static void __attribute__((format(printf, 4, 5)))
note(scan_note_fn fn, void *opaque, enum scan_note_level level, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;

  if (fn == NULL)
    return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fn(level, msg, opaque);
}

static bool
is_raid_member(const char *path)
{
  blkid_probe pr = blkid_new_probe_from_filename(path);
  const char *type = NULL;
  bool yes = false;

  if (pr == NULL)
    return false;
  blkid_probe_enable_superblocks(pr, 1);
  blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
  if (blkid_do_safeprobe(pr) == 0 &&
      blkid_probe_lookup_value(pr, "TYPE", &type, NULL) == 0)
    yes = strcmp(type, "linux_raid_member") == 0;
  blkid_free_probe(pr);
  return yes;
}

/* The places to look, each device or file once (by what stat() says it
 * is, so a symlink and its target are one), each remote member once (by
 * its URI, as written). */
struct candidate {
  char *path;
  struct stat st;                /* a local one's */
  bool remote;                   /* an NBD URI */
  bool configured;               /* a URI an ARRAY line's devices= names */
};

struct candidates {
  struct candidate *c;
  size_t n;
};

static struct candidate *
candidate_add(struct candidates *c, const char *path)
{
  struct candidate *k;

  c->c = reallocarray(c->c, c->n + 1, sizeof *c->c);
  if (c->c == NULL)
    abort();
  k = &c->c[c->n++];
  memset(k, 0, sizeof *k);
  if ((k->path = strdup(path)) == NULL)
    abort();
  return k;
}

static void
candidate(struct candidates *c, const char *path)
{
  struct stat st;
  size_t i;

  if (stat(path, &st) < 0 || (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode)))
    return;
  for (i = 0; i < c->n; i++)
    if (!c->c[i].remote && same_member(&c->c[i].st, &st))
      return;
  candidate_add(c, path)->st = st;
}

/* A remote member, URI: no glob, no stat(); CONFIGURED when an ARRAY line
 * names it. */
static void
candidate_remote(struct candidates *c, const char *uri, bool configured)
{
  size_t i;

  for (i = 0; i < c->n; i++)
    if (c->c[i].remote && strcmp(c->c[i].path, uri) == 0) {
      c->c[i].configured |= configured;
      return;
    }
  candidate_add(c, uri)->remote = true;
  c->c[c->n - 1].configured = configured;
}

static void
candidates_glob(struct candidates *c, const char *pattern, bool configured)
{
  glob_t g;
  size_t i;

  if (member_spec_remote(pattern)) {
    candidate_remote(c, pattern, configured);
    return;
  }
  if (glob(pattern, 0, NULL, &g) != 0)
    return;
  for (i = 0; i < g.gl_pathc; i++)
    candidate(c, g.gl_pathv[i]);
  globfree(&g);
}

static void
candidates_free(struct candidates *c)
{
  size_t i;

  for (i = 0; i < c->n; i++)
    free(c->c[i].path);
  free(c->c);
}

/* Read the superblock of candidate K into *SB: a local one only when
 * libblkid calls it an md member (a scan reads many devices, through the
 * page cache), a remote one through the library (libblkid cannot reach
 * it).  0, or -1 with NOTE told why: quietly for a device that is no
 * member, loudly for a remote member that cannot be read, which a
 * configuration names. */
static int
candidate_read(const struct candidate *k, scan_note_fn fn, void *opaque,
               struct raid_superblock *sb)
{
  if (!k->remote && !is_raid_member(k->path)) {
    note(fn, opaque, SCAN_NOTE_SKIP, "%s: not an md version-1 member", k->path);
    return -1;
  }
  if (raid_superblock_read_path(k->path, RAID_MEMBER_BUFFERED, sb) == 0)
    return 0;
  if (k->remote)
    note(fn, opaque, k->configured ? SCAN_NOTE_CONFIGURED : SCAN_NOTE_REMOTE,
         "%s (skipped)", raid_get_error());
  else
    note(fn, opaque, SCAN_NOTE_SKIP, "%s: %s", k->path, raid_get_error());
  return -1;
}

static int
candidates_udev(struct candidates *c, scan_note_fn fn, void *opaque)
{
  struct udev *udev = udev_new();
  struct udev_enumerate *en;
  struct udev_list_entry *e;

  if (udev == NULL) {
    note(fn, opaque, SCAN_NOTE_SKIP, "libudev: cannot start: the block devices cannot "
         "be listed");
    return -1;
  }
  en = udev_enumerate_new(udev);
  udev_enumerate_add_match_subsystem(en, "block");
  udev_enumerate_scan_devices(en);
  udev_list_entry_foreach(e, udev_enumerate_get_list_entry(en)) {
    struct udev_device *d = udev_device_new_from_syspath(udev, udev_list_entry_get_name(e));
    const char *node = d ? udev_device_get_devnode(d) : NULL;

    if (node)
      candidate(c, node);
    udev_device_unref(d);
  }
  udev_enumerate_unref(en);
  udev_unref(udev);
  return 0;
}

int
scan_members(const struct conf *conf, scan_note_fn fn, void *opaque,
             struct scanned **out, size_t *nout)
{
  struct candidates c = { NULL, 0 };
  struct scanned *found = NULL;
  size_t n = 0, i, k;

  *out = NULL;
  *nout = 0;
  for (i = 0; conf && i < conf->ndevice_globs; i++)
    candidates_glob(&c, conf->device_globs[i], false);
  for (i = 0; conf && i < conf->ndevice_uris; i++)
    candidate_remote(&c, conf->device_uris[i], false);
  for (i = 0; conf && i < conf->narrays; i++)
    for (k = 0; k < conf->arrays[i].ndevices; k++)
      candidates_glob(&c, conf->arrays[i].devices[k], true);
  if ((conf == NULL || conf->devices_all) && candidates_udev(&c, fn, opaque) < 0) {
    candidates_free(&c);
    return -1;
  }
  for (i = 0; i < c.n; i++) {
    found = reallocarray(found, n + 1, sizeof *found);
    if (found == NULL)
      abort();
    if (candidate_read(&c.c[i], fn, opaque, &found[n].sb) == 0) {
      found[n++].path = c.c[i].path;
      c.c[i].path = NULL;       /* the scan's now */
    }
  }
  candidates_free(&c);
  *out = found;
  *nout = n;
  return 0;
}

void
scan_free(struct scanned *s, size_t n)
{
  size_t i;

  for (i = 0; i < n; i++)
    free(s[i].path);
  free(s);
}

static const char *
short_name(const char *set_name)
{
  const char *colon = strchr(set_name, ':');
  return colon ? colon + 1 : set_name;
}

/* What the ARRAY line says that SB contradicts, into G->refused. */
static void
check_line(struct scan_group *g, const struct raid_superblock *sb)
{
  const struct conf_array *a = g->conf;
  const char *md = raid_metadata_name(raid_superblock_version(sb));

  if (a->level != -100 && a->level != sb->level)
    snprintf(g->refused, sizeof g->refused, "its members are %s, the ARRAY line %u "
             "says level=%s", level_name(sb->level), a->line, level_name(a->level));
  else if (a->raid_disks && (unsigned)a->raid_disks != sb->raid_disks)
    snprintf(g->refused, sizeof g->refused, "its members say %u members, the ARRAY "
             "line %u says num-devices=%d", sb->raid_disks, a->line, a->raid_disks);
  else if (a->metadata[0] && strcmp(a->metadata, "1") != 0 && strcmp(a->metadata, md) != 0)
    snprintf(g->refused, sizeof g->refused, "its members carry metadata %s, the ARRAY "
             "line %u says metadata=%s", md, a->line, a->metadata);
}

unsigned
scan_group(struct scanned *s, size_t ns, const struct conf *conf, const char *only,
           struct scan_group *g, unsigned max)
{
  bool by_conf = conf && conf->narrays > 0;
  unsigned ng = 0, i, k;
  size_t j;

  for (j = 0; j < ns; j++) {
    const struct conf_array *line = NULL;
    const char *name = short_name(s[j].sb.set_name);

    if (by_conf) {
      line = conf_find_array(conf, s[j].sb.set_uuid, s[j].sb.set_name, s[j].path);
      if (line == NULL)
        continue;
      name = line->name;
    }
    if (only && strcmp(only, name) != 0)
      continue;
    for (i = 0; i < ng && memcmp(g[i].uuid, s[j].sb.set_uuid, 16) != 0; i++)
      ;
    if (i == ng) {
      if (ng == max)
        continue;
      memset(&g[ng], 0, sizeof g[ng]);
      memcpy(g[ng].uuid, s[j].sb.set_uuid, 16);
      snprintf(g[ng].name, sizeof g[ng].name, "%s", name);
      g[ng].conf = line;
      ng++;
    }
    if (g[i].n < ARRAY_SIZE(g[i].paths))
      g[i].paths[g[i].n++] = s[j].path;
  }
  for (i = 0; i < ng; i++) {
    const struct raid_superblock *fresh = NULL;
    bool active[RAID_MAX_MEMBERS] = { false }, here[RAID_MAX_MEMBERS] = { false };

    for (k = 0; k < g[i].n; k++)
      for (j = 0; j < ns; j++)
        if (s[j].path == g[i].paths[k] && (!fresh || s[j].sb.events > fresh->events))
          fresh = &s[j].sb;
    if (g[i].conf)
      check_line(&g[i], fresh);
    for (k = 0; k < fresh->max_dev; k++)
      if (fresh->dev_roles[k] < fresh->raid_disks && fresh->dev_roles[k] < RAID_MAX_MEMBERS)
        active[fresh->dev_roles[k]] = true;
    for (k = 0; k < g[i].n; k++)
      for (j = 0; j < ns; j++) {
        const struct raid_superblock *sb = &s[j].sb;
        unsigned role;

        if (s[j].path != g[i].paths[k] || sb->dev_number >= fresh->max_dev ||
            (sb->events != fresh->events && !raid_superblock_one_behind(sb, fresh)))
          continue;
        role = fresh->dev_roles[sb->dev_number];
        if (role < fresh->raid_disks && role < RAID_MAX_MEMBERS)
          here[role] = true;
      }
    for (k = 0; k < RAID_MAX_MEMBERS; k++) {
      g[i].expected += active[k];
      g[i].present += active[k] && here[k];
    }
  }
  return ng;
}
