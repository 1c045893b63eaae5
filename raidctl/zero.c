/* raidctl zero [--force] MEMBER...   (mdadm --zero-superblock)
 *
 * Erases the md superblock of each member, and only that: the
 * RAID_SB_BYTES where the superblock lies (1.2: 4 KiB from the start, 1.1:
 * the start, 1.0: near the end), again while another version's superblock
 * still reads, and says what it erased.  The data, and any other
 * signature, stay where they are.  A remote member (an NBD URI) is
 * erased the same way, through its server.
 *
 * Every fact is gathered for every member before any is erased
 * (facts.c): a member that a running array holds (raidd's, through any
 * name, or one that another process has open exclusively) is refused,
 * --force or not; a member with no md superblock is refused unless
 * --force (then it is left alone). */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "raidctl.h"

/* Write zeroes over the superblock F's superblock says it is at, through
 * the member F->m holds claimed (a remote member too), and flush.  0 or -1
 * (error printed). */
static int
erase(const struct member_facts *f)
{
  if (raid_superblock_erase(f->m, &f->sb) < 0) {
    error("zero: %s", raid_get_error());
    return -1;
  }
  return 0;
}

int
cmd_zero(int argc, char **argv)
{
  static const struct option opts[] = {
    { "force", no_argument, NULL, 'f' },
    { "json", no_argument, NULL, 'J' },
    { NULL, 0, NULL, 0 },
  };
  static struct member_facts f[RAID_MAX_MEMBERS * 4];
  json_object *status, *out = NULL;
  bool force = false, failed;
  unsigned n, i;
  int c, rc = EXIT_FAIL;

  while ((c = verb_getopt(argc, argv, "", opts)) != -1) {
    switch (c) {
    case 'f': force = true; break;
    case 'J': opt.json = true; break;
    }
  }
  n = argc - optind;
  if (n == 0)
    usage_error("zero", "no members given");
  if (n > sizeof f / sizeof f[0])
    usage_error("zero", "%u members: at most %zu at once", n, sizeof f / sizeof f[0]);

  status = raidd_status(&failed);
  if (failed)
    return EXIT_FAIL;
  if (facts_gather("zero", argv + optind, n, status, f) < 0)
    goto out;
  for (i = 0; i < n; i++)
    if (!f[i].has_sb && !force) {
      error("zero: member %s has no md superblock%s%s (--force: leave it and go on)",
            f[i].arg, f[i].probe.what[0] ? "; it contains " : "", f[i].probe.what);
      goto out;
    }

  /* Decided: erase. */
  if (opt.json)
    out = json_object_new_array();
  for (i = 0; i < n; i++) {
    char what[256];
    unsigned rounds = 0;

    if (!f[i].has_sb) {
      if (!opt.json)
        printf("raidctl: %s: no md superblock; nothing erased (--force)\n", f[i].arg);
      continue;
    }
    /* Another version's superblock may lie elsewhere (1.0 at the end, 1.2
     * near the start): erase until none reads. */
    do {
      facts_describe_sb(&f[i], what, sizeof what);
      if (erase(&f[i]) < 0)
        goto out;
      if (opt.json) {
        json_object *e = json_object_new_object();
        char uuid[40];

        uuid_format(f[i].sb.set_uuid, uuid);
        json_object_object_add(e, "member", json_object_new_string(f[i].arg));
        json_object_object_add(e, "array", json_object_new_string(f[i].sb.set_name));
        json_object_object_add(e, "uuid", json_object_new_string(uuid));
        json_object_object_add(e, "metadata", json_object_new_string(
          raid_metadata_name(raid_superblock_version(&f[i].sb))));
        json_object_object_add(e, "offset", json_object_new_int64(
          (int64_t)f[i].sb.super_offset * 512));
        json_object_array_add(out, e);
      }
      else
        printf("raidctl: %s: erased the metadata %s superblock at byte %" PRIu64
               " (of %s); nothing else was written\n", f[i].arg,
               raid_metadata_name(raid_superblock_version(&f[i].sb)),
               f[i].sb.super_offset * 512, what);
    } while (++rounds < 3 && raid_superblock_read(f[i].m, &f[i].sb) == 0);
  }
  if (opt.json) {
    json_result(out);
    out = NULL;
  }
  rc = EXIT_OK;

 out:
  json_object_put(out);
  facts_release(f, n);
  json_object_put(status);
  return rc;
}
