/* Gather every fact, decide, then write: what raidctl knows about the
 * members of a verb that writes to them (create, add, replace, zero)
 * before the first byte goes out.
 *
 * For each member named:
 *  - its name made absolute with symlinks resolved (what raidd is sent),
 *    and the file or device behind it stat()ed: two names for one file
 *    (same device and inode) or one device (same st_rdev) are refused.
 *    A remote member (an NBD URI) has no file: its name is its URI as
 *    given, and two members are one when their URIs are;
 *  - whether a running array in raidd holds it: raidd's status names its
 *    members by path, and those are stat()ed too, so a member named
 *    through a symlink or another relative path is still recognised;
 *  - for a regular file, that no loop device serves it (a loop device
 *    does not lock its file, and may itself be a member);
 *  - an exclusive claim: the member is opened for writing through the
 *    library, which claims a block device with O_EXCL (EBUSY while it is
 *    mounted, or held by md, dm or any other program) and a regular file
 *    (or a simulated drive's backing file) with an exclusive flock() that
 *    raidd holds on every member of a running array.  The claim is held
 *    until the verb has written (facts_release()), so nothing can take
 *    the member between the check and the write;
 *  - what libblkid finds on it (signatures, topology), and its md
 *    superblock if one reads, to say which array it belongs to.  A remote
 *    member cannot be handed to libblkid: its superblock is read through
 *    the library all the same, and its size asked of its server.
 * The callers decide from these and only then write; a refusal leaves
 * every member as it was. */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "raidctl.h"
#include "member-id.h"
#include "member-stat.h"

json_object *
raidd_status(bool *failed)
{
  json_object *req, *rep;

  *failed = false;
  if (!raidd_running())
    return NULL;
  req = json_object_new_object();
  json_object_object_add(req, "verb", json_object_new_string("status"));
  rep = raidd_call(req);        /* prints why not */
  json_object_put(req);
  if (rep == NULL)
    *failed = true;
  return rep;
}

json_object *
status_array(json_object *status, const char *key, const char *value)
{
  json_object *arrays = jget(status, "arrays");
  size_t i, n = arrays ? json_object_array_length(arrays) : 0;

  for (i = 0; i < n; i++) {
    json_object *a = json_object_array_get_idx(arrays, i);
    const char *v = json_object_get_string(jget(a, key));

    if (v && strcmp(v, value) == 0)
      return a;
  }
  return NULL;
}

/* The loop device whose backing file F is, in BUF ("/dev/loop3"); false
 * when none.  A loop device does not lock its file, and what it serves
 * may be a member of a running array: writing the file under it would
 * change that member behind raidd's back. */
static bool
backs_loop_device(const struct member_facts *f, char *buf, size_t len)
{
  DIR *dir;
  struct dirent *e;
  bool found = false;

  if (f->remote || !S_ISREG(f->st.st_mode) || (dir = opendir("/sys/block")) == NULL)
    return false;
  while (!found && (e = readdir(dir)) != NULL) {
    char p[PATH_MAX], file[PATH_MAX];
    struct stat st;
    size_t n;
    FILE *fp;

    if (strncmp(e->d_name, "loop", 4) != 0)
      continue;
    snprintf(p, sizeof p, "/sys/block/%s/loop/backing_file", e->d_name);
    if ((fp = fopen(p, "re")) == NULL)
      continue;                 /* not attached */
    n = fread(file, 1, sizeof file - 1, fp);
    fclose(fp);
    file[n] = '\0';
    file[strcspn(file, "\n")] = '\0';
    if (stat(file, &st) == 0 && same_member(&st, &f->st)) {
      snprintf(buf, len, "/dev/%s", e->d_name);
      found = true;
    }
  }
  closedir(dir);
  return found;
}

/* The running array and the name it knows F by, when one holds it. */
static bool
held_by_raidd(json_object *status, const struct member_facts *f, const char **array,
              const char **as)
{
  json_object *arrays = jget(status, "arrays");
  size_t i, j, na = arrays ? json_object_array_length(arrays) : 0;

  for (i = 0; i < na; i++) {
    json_object *a = json_object_array_get_idx(arrays, i), *ms = jget(a, "members");
    size_t nm = ms ? json_object_array_length(ms) : 0;

    for (j = 0; j < nm; j++) {
      const char *p = json_object_get_string(jget(json_object_array_get_idx(ms, j), "path"));
      struct stat st;

      if (p == NULL)
        continue;
      if (f->remote ? !same_remote(p, f->abs)
                    : stat_member(p, &st) < 0 || !same_member(&st, &f->st))
        continue;
      *array = json_object_get_string(jget(a, "name"));
      *as = p;
      return true;
    }
  }
  return false;
}

void
facts_describe_sb(const struct member_facts *f, char *buf, size_t len)
{
  const struct raid_superblock *sb = &f->sb;
  const char *name = strchr(sb->set_name, ':') ? strchr(sb->set_name, ':') + 1 : sb->set_name;
  char uuid[40], role[32];
  unsigned r = sb->dev_number < sb->max_dev ? sb->dev_roles[sb->dev_number] : 0xffff;

  uuid_format(sb->set_uuid, uuid);
  if (r < sb->raid_disks)
    snprintf(role, sizeof role, "role %u of %u", r, sb->raid_disks);
  else
    snprintf(role, sizeof role, "%s", r == RAID_SB_ROLE_SPARE ? "a spare" : "a failed member");
  snprintf(buf, len, "md array %s (UUID %s, %s, %s, events %" PRIu64 ")", name, uuid,
           level_name(sb->level), role, sb->events);
}

/* F's name as raidd gets it and, for a local member, what stat() says it
 * is.  0 or -1 (error printed). */
static int
facts_name(const char *verb, struct member_facts *f)
{
  if (member_abs(f->arg, true, f->abs, sizeof f->abs) < 0)
    return -1;
  f->remote = member_spec_remote(f->abs);
  if (f->remote)
    return 0;
  if (stat_member(f->abs, &f->st) < 0) {
    error("%s: member %s: %m", verb, f->arg);
    return -1;
  }
  if (!S_ISREG(f->st.st_mode) && !S_ISBLK(f->st.st_mode)) {
    error("%s: member %s is not a regular file or a block device", verb, f->arg);
    return -1;
  }
  return 0;
}

/* X and Y name one member (X local or remote as Y is). */
static bool
facts_same(const struct member_facts *x, const struct member_facts *y)
{
  if (x->remote || y->remote)
    return same_remote(x->abs, y->abs);
  return same_member(&x->st, &y->st);
}

/* What is on F: libblkid's signatures and topology for a local member,
 * the size its server gives for a remote one; its md superblock through
 * the library either way.  0 or -1 (error printed). */
static int
facts_probe(struct member_facts *f)
{
  if (f->remote)
    f->probe.size = raid_member_size(f->m);
  else if (probe_member(f->abs, &f->probe) < 0)
    return -1;
  f->has_sb = raid_superblock_read(f->m, &f->sb) == 0;
  return 0;
}

int
facts_gather(const char *verb, char *const *args, unsigned n, json_object *status,
             struct member_facts *f)
{
  unsigned i, j;
  int r;

  memset(f, 0, n * sizeof *f);
  for (i = 0; i < n; i++) {
    f[i].arg = args[i];
    if (facts_name(verb, &f[i]) < 0)
      return -1;
    for (j = 0; j < i; j++)
      if (facts_same(&f[i], &f[j])) {
        error("%s: %s and %s are the same %s", verb, args[j], args[i],
              f[i].remote ? "remote member" : S_ISBLK(f[i].st.st_mode) ? "device" : "file");
        return -1;
      }
  }
  /* raidd's arrays first: its answer names the array. */
  for (i = 0; status && i < n; i++) {
    const char *array, *as;

    if (held_by_raidd(status, &f[i], &array, &as)) {
      if (strcmp(as, f[i].abs) == 0)
        error("%s: member %s is in running array %s", verb, f[i].arg, array);
      else
        error("%s: member %s is in running array %s (as %s)", verb, f[i].arg, array, as);
      return -1;
    }
  }
  for (i = 0; i < n; i++) {
    char loop[300];

    if (backs_loop_device(&f[i], loop, sizeof loop)) {
      error("%s: member %s is the backing file of loop device %s; name the loop "
            "device, or detach it (losetup -d %s) first", verb, f[i].arg, loop, loop);
      return -1;
    }
  }
  /* The exclusive claim: what raidd on another socket, md, dm, a mount or
   * any other program holds is refused here. */
  for (i = 0; i < n; i++) {
    r = raid_member_open(f[i].abs, 0, &f[i].m);
    if (r == -EBUSY) {
      if (S_ISBLK(f[i].st.st_mode))
        error("%s: device %s is in use (mounted, or held by md, dm or another program)",
              verb, f[i].arg);
      else
        error("%s: member %s is in use by another process (raidd?)", verb, f[i].arg);
      return -1;
    }
    if (r < 0) {
      error("%s: %s", verb, raid_get_error());
      return -1;
    }
  }
  for (i = 0; i < n; i++)
    if (facts_probe(&f[i]) < 0)
      return -1;
  return 0;
}

void
facts_release(struct member_facts *f, unsigned n)
{
  unsigned i;

  for (i = 0; i < n; i++) {
    raid_member_close(f[i].m);
    f[i].m = NULL;
  }
}

int
facts_wipe(struct member_facts *f)
{
  unsigned rounds = 0;

  if (!f->remote)
    return wipe_member(f->abs);
  /* Another version's superblock may lie elsewhere (1.0 at the end, 1.2
   * near the start): erase until none reads. */
  while (f->has_sb && rounds++ < 3) {
    if (raid_superblock_erase(f->m, &f->sb) < 0) {
      error("%s", raid_get_error());
      return -1;
    }
    f->has_sb = raid_superblock_read(f->m, &f->sb) == 0;
  }
  return 0;
}

int
facts_check_signatures(const char *verb, const struct member_facts *f, unsigned n,
                       bool force)
{
  char sb[256];
  unsigned i;

  for (i = 0; i < n; i++) {
    if (f[i].probe.what[0] == '\0' && !f[i].has_sb)
      continue;
    if (f[i].has_sb)
      facts_describe_sb(&f[i], sb, sizeof sb);
    if (!force) {
      if (f[i].has_sb)
        error("%s: member %s belongs to %s; use --force to overwrite it", verb,
              f[i].arg, sb);
      else
        error("%s: member %s contains %s; use --force to overwrite it", verb,
              f[i].arg, f[i].probe.what);
      return -1;
    }
  }
  for (i = 0; i < n; i++) {
    if (f[i].has_sb) {
      facts_describe_sb(&f[i], sb, sizeof sb);
      warning("member %s belongs to %s: overwriting it (--force)", f[i].arg, sb);
    }
    else if (f[i].probe.what[0])
      warning("member %s contains %s: overwriting it (--force)", f[i].arg,
              f[i].probe.what);
  }
  return 0;
}
