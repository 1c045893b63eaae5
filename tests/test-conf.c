/* Description: the configuration file's parser (conf/conf.c) and the
 * member scan's grouping by it (conf/scan.c).
 *  - A file with every kind of line (DEVICE, ARRAY with a continuation
 *    line as `raidctl examine --scan -v` prints it, quotes, comments,
 *    mdadm's alert lines, raidd settings in any case) reads back field by
 *    field.
 *  - Each wrong line is reported once with its file and line number and
 *    left out whole, and the lines after it are still read: a bad UUID, an
 *    unknown tag, a level raidd does not run, a bad spares count, a
 *    relative devices= path, a duplicate name or UUID, an unclosed quote,
 *    mdadm-only keywords, containers.
 *  - conf_find_array(): by UUID, by name= (with or without the homehost),
 *    by the ARRAY name alone, every given identity must match, devices=
 *    globs restrict.
 *  - uuid_parse() takes mdadm's and other groupings and refuses the rest.
 *  - scan_group() on member files: with ARRAY lines only those arrays, under
 *    their names; a level that contradicts the line refuses the array; a
 *    missing member counts as missing.
 *  - Remote members (NBD URIs) on DEVICE lines and in devices=: kept as
 *    written (never globs: '?' and '[' are theirs), a DEVICE line of URIs
 *    alone still leaves every block device to look at, a URI of another
 *    scheme is refused naming it; a scan reports a URI that does not answer
 *    and skips it, louder when an ARRAY line names it. */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testlib.h"
#include "conf.h"
#include "md-names.h"
#include "scan.h"

static char errors[8192];
static unsigned nerrors;

static void
collect(const char *msg, void *opaque)
{
  strncat(errors, msg, sizeof errors - strlen(errors) - 2);
  strcat(errors, "\n");
  nerrors++;
}

static struct conf *
read_text(const char *text)
{
  char path[256];
  struct conf *c;
  FILE *f;

  errors[0] = '\0';
  nerrors = 0;
  snprintf(path, sizeof path, "%s/raidd.conf", test_dir());
  f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  ck_assert_int_eq(conf_read(path, collect, NULL, &c), 0);
  return c;
}

static const struct conf_setting *
setting(const struct conf *c, const char *key)
{
  unsigned i;

  for (i = 0; i < c->nsettings; i++)
    if (strcmp(c->settings[i].key, key) == 0)
      return &c->settings[i];
  return NULL;
}

START_TEST(test_every_line)
{
  struct conf *c = read_text(
    "# raidd.conf\n"
    "DEVICE /dev/sd* /srv/raid/*.img   # two globs\n"
    "\n"
    "ARRAY /dev/md/boot  metadata=1.2 UUID=01234567:89abcdef:00112233:44556677 name=host:boot\n"
    "   devices=/dev/sda1,/dev/sdb1\n"
    "array scratch level=raid0 num-devices=4 spares=0 readonly=yes blockdev=ublk\n"
    "ARRAY name=other:data blockdev=/dev/nbd12\n"
    "MAILADDR root@example.com\n"
    "PROGRAM \"/usr/local/bin/raid alert\"\n"
    "Threads 2\n"
    "nbd-listen 0.0.0.0:10809\n"
    "VERBOSE\n");

  ck_assert_int_eq(nerrors, 0);
  ck_assert(!c->devices_all);
  ck_assert_int_eq(c->ndevice_globs, 2);
  ck_assert_str_eq(c->device_globs[1], "/srv/raid/*.img");
  ck_assert_int_eq(c->narrays, 3);
  ck_assert_str_eq(c->arrays[0].name, "boot");
  ck_assert_int_eq(c->arrays[0].line, 4);
  ck_assert(c->arrays[0].has_uuid);
  ck_assert_int_eq(c->arrays[0].uuid[0], 0x01);
  ck_assert_int_eq(c->arrays[0].uuid[15], 0x77);
  ck_assert_str_eq(c->arrays[0].set_name, "host:boot");
  ck_assert_str_eq(c->arrays[0].metadata, "1.2");
  ck_assert_int_eq(c->arrays[0].ndevices, 2);
  ck_assert_str_eq(c->arrays[0].devices[1], "/dev/sdb1");
  ck_assert_int_eq(c->arrays[0].spares, -1);
  ck_assert_int_eq(c->arrays[0].level, -100);
  ck_assert_str_eq(c->arrays[1].name, "scratch");
  ck_assert_int_eq(c->arrays[1].level, 0);
  ck_assert_int_eq(c->arrays[1].raid_disks, 4);
  ck_assert_int_eq(c->arrays[1].spares, 0);
  ck_assert(c->arrays[1].readonly);
  ck_assert(!c->arrays[1].has_uuid);
  ck_assert_str_eq(c->arrays[0].blockdev, "");
  ck_assert_str_eq(c->arrays[1].blockdev, "ublk");
  ck_assert_str_eq(c->arrays[2].name, "data");
  ck_assert_str_eq(c->arrays[2].blockdev, "/dev/nbd12");
  {
    const char *dev = "x";

    ck_assert_str_eq(conf_blockdev_verb(c->arrays[1].blockdev, &dev), "ublk");
    ck_assert_ptr_null(dev);
    ck_assert_str_eq(conf_blockdev_verb(c->arrays[2].blockdev, &dev), "attach");
    ck_assert_str_eq(dev, "/dev/nbd12");
    ck_assert_str_eq(conf_blockdev_verb("nbd", &dev), "attach");
    ck_assert_ptr_null(dev);
  }
  ck_assert_int_eq(c->nsettings, 5);
  ck_assert_str_eq(setting(c, "mailaddr")->value, "root@example.com");
  ck_assert_str_eq(setting(c, "program")->value, "/usr/local/bin/raid alert");
  ck_assert_str_eq(setting(c, "threads")->value, "2");
  ck_assert_int_eq(setting(c, "threads")->line, 10);
  ck_assert_str_eq(setting(c, "verbose")->value, "");
  conf_free(c);

  /* No DEVICE line: every block device. */
  c = read_text("ARRAY x\n");
  ck_assert(c->devices_all);
  conf_free(c);
  /* blockdev=: the kernel's NBD client on any free device, or none. */
  c = read_text("ARRAY x blockdev=nbd\nARRAY y blockdev=ublk blockdev=none\n");
  ck_assert_int_eq(nerrors, 0);
  ck_assert_str_eq(c->arrays[0].blockdev, "nbd");
  ck_assert_str_eq(c->arrays[1].blockdev, "");
  conf_free(c);
  c = read_text("DEVICE partitions /srv/*.img\n");
  ck_assert(c->devices_all);
  ck_assert_int_eq(c->ndevice_globs, 1);
  conf_free(c);
}
END_TEST

/* Each bad line: reported with its line number and the words that say
 * what is wrong, left out, and the good line after it still read. */
START_TEST(test_bad_lines)
{
  static const struct { const char *line, *says; } bad[] = {
    { "ARRAY a UUID=xyz", ":1: ARRAY a: UUID=xyz is not a UUID" },
    { "ARRAY a UUID=01234567:89abcdef:00112233:445566", "is not a UUID" },
    { "ARRAY a colour=red", "unknown tag 'colour'" },
    { "ARRAY a level=6", "level=6 is not a level raidd runs" },
    { "ARRAY a spares=-1", "spares=-1 is not a number of spares" },
    { "ARRAY a spares=many", "spares=many is not a number" },
    { "ARRAY a num-devices=0", "num-devices=0" },
    { "ARRAY a devices=sda1", "devices=sda1: 'sda1' is neither an absolute path nor a "
      "remote member's URI" },
    { "ARRAY a devices=/dev/sda1,nbdx://h/e", "ARRAY a: devices=: member nbdx://h/e: "
      "unknown URI scheme 'nbdx'" },
    { "ARRAY a devices=http://h/e", "member http://h/e: unknown URI scheme 'http'" },
    { "DEVICE nbd://h/e file:///srv/x.img", "DEVICE member file:///srv/x.img: unknown URI "
      "scheme 'file'" },
    { "ARRAY a metadata=0.90", "metadata=0.90: raidd reads md's version-1" },
    { "ARRAY a readonly=maybe", "readonly=maybe: say yes or no" },
    { "ARRAY a blockdev=/dev/sda", "blockdev=/dev/sda: say ublk, nbd, /dev/nbdN or none" },
    { "ARRAY a blockdev=/dev/nbd", "blockdev=/dev/nbd: say ublk" },
    { "ARRAY a blockdev=/dev/nbd+1", "blockdev=/dev/nbd+1: say ublk" },
    { "ARRAY a blockdev=/dev/nbd1x", "blockdev=/dev/nbd1x: say ublk" },
    { "ARRAY a blockdev=UBLK", "blockdev=UBLK: say ublk" },
    { "ARRAY a uuid", "'uuid' is not KEY=VALUE" },
    { "ARRAY bad/name", "ARRAY bad/name: array name 'bad/name' holds '/'" },
    { "ARRAY a container=/dev/md/imsm0", "containers (IMSM, DDF) are not supported" },
    { "ARRAY", "ARRAY: no array named" },
    { "ARRAY UUID=01234567:89abcdef:00112233:44556677", "neither a name nor name=" },
    { "ARRAY a name=\"x", "a quote is not closed" },
    { "DEVICE", "DEVICE: nothing listed" },
    { "DEVICE sd*", "DEVICE sd*: not an absolute path" },
    { "HOMEHOST <system>", "HOMEHOST is mdadm's; raidd does not use it" },
    { "AUTO +all", "AUTO is mdadm's" },
  };
  char text[512];
  size_t i;

  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct conf *c;

    snprintf(text, sizeof text, "%s\nARRAY good UUID=01234567-89abcdef-00112233-44556677\n",
             bad[i].line);
    c = read_text(text);
    ck_assert_msg(nerrors == 1 && strstr(errors, bad[i].says) && strstr(errors, "raidd.conf:1: "),
                  "'%s': %u errors: %s", bad[i].line, nerrors, errors);
    ck_assert_uint_eq(c->errors, 1);
    ck_assert_int_eq(c->narrays, 1);
    ck_assert_str_eq(c->arrays[0].name, "good");
    conf_free(c);
  }

  /* Duplicates: the second line is refused, naming the first. */
  {
    struct conf *c = read_text(
      "ARRAY a UUID=01234567:89abcdef:00112233:44556677\n"
      "ARRAY a\n"
      "ARRAY b UUID=0123456789abcdef0011223344556677\n");
    ck_assert_int_eq(nerrors, 2);
    ck_assert_msg(strstr(errors, ":2: ARRAY a: the name is taken already by the ARRAY line 1") &&
                  strstr(errors, ":3: ARRAY b: its UUID is that of the ARRAY a line 1"),
                  "%s", errors);
    ck_assert_int_eq(c->narrays, 1);
    conf_free(c);
  }
  /* A missing file: -ENOENT, told. */
  {
    struct conf *c;
    errors[0] = '\0';
    ck_assert_int_eq(conf_read("/nonexistent/raidd.conf", collect, NULL, &c), -ENOENT);
    ck_assert_ptr_null(c);
    ck_assert_ptr_nonnull(strstr(errors, "/nonexistent/raidd.conf: No such file"));
  }
}
END_TEST

/* Remote members: DEVICE URIs beside the globs, devices= URIs matched as
 * written. */
START_TEST(test_uris)
{
  static const uint8_t u[16] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                 0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77 };
  struct conf *c = read_text(
    "DEVICE nbd://store:10810/m1 nbd+unix:///x?socket=/run/x.sock\n"
    "DEVICE nbds://[::1]/m2?tls-psk-file=/etc/raidd/psk&timeout=5\n"
    "ARRAY one UUID=01234567:89abcdef:00112233:44556677\n"
    "   devices=/srv/*.img,nbd+unix:///x?socket=/run/x.sock,nbd://[::1]:10809/y\n");

  ck_assert_msg(nerrors == 0, "%s", errors);
  ck_assert(c->devices_all);             /* URIs alone: every block device too */
  ck_assert_int_eq(c->ndevice_globs, 0);
  ck_assert_int_eq(c->ndevice_uris, 3);
  ck_assert_str_eq(c->device_uris[0], "nbd://store:10810/m1");
  ck_assert_str_eq(c->device_uris[2], "nbds://[::1]/m2?tls-psk-file=/etc/raidd/psk&timeout=5");
  ck_assert_int_eq(c->arrays[0].ndevices, 3);
  ck_assert_str_eq(c->arrays[0].devices[1], "nbd+unix:///x?socket=/run/x.sock");
  ck_assert_ptr_nonnull(conf_find_array(c, u, "x", "/srv/m0.img"));
  ck_assert_ptr_nonnull(conf_find_array(c, u, "x", "nbd+unix:///x?socket=/run/x.sock"));
  ck_assert_ptr_nonnull(conf_find_array(c, u, "x", "nbd://[::1]:10809/y"));
  /* Not globs: '?' and '[' match only themselves. */
  ck_assert_ptr_null(conf_find_array(c, u, "x", "nbd+unix:///xXsocket=/run/x.sock"));
  ck_assert_ptr_null(conf_find_array(c, u, "x", "nbd://:]:10809/y"));
  ck_assert_ptr_null(conf_find_array(c, u, "x", "nbd://store:10810/m1"));
  conf_free(c);

  c = read_text("DEVICE /dev/sd* nbd://store/m1\n");
  ck_assert(!c->devices_all);
  ck_assert_int_eq(c->ndevice_globs, 1);
  ck_assert_int_eq(c->ndevice_uris, 1);
  conf_free(c);
}
END_TEST

static char notes[4096];
static unsigned nnotes[3];

static void
collect_note(enum scan_note_level level, const char *msg, void *opaque)
{
  strncat(notes, msg, sizeof notes - strlen(notes) - 2);
  strcat(notes, "\n");
  nnotes[level]++;
}

/* A remote member that does not answer: reported naming it, skipped; a
 * note (SCAN_NOTE_REMOTE) for a DEVICE line's, an error
 * (SCAN_NOTE_CONFIGURED) for one an ARRAY line names; the local members
 * are still found. */
START_TEST(test_scan_unreachable)
{
  struct raid_array *a;
  struct scanned *s;
  struct conf *c;
  size_t ns;
  char text[2048], dir[256], u1[320], u2[320];

  a = tfile_array_create("sr", RAID_LEVEL_1, 2, 8 << 20);
  raid_array_free(a);
  tfile_path(dir, sizeof dir, "sr", 0);
  *strrchr(dir, '/') = '\0';
  snprintf(u1, sizeof u1, "nbd+unix:///a?socket=%s/none-1.sock", dir);
  snprintf(u2, sizeof u2, "nbd+unix:///b?socket=%s/none-2.sock", dir);
  snprintf(text, sizeof text, "DEVICE %s/sr?.img %s\nARRAY sr devices=%s/sr*,%s\n",
           dir, u1, dir, u2);
  c = read_text(text);
  ck_assert_msg(nerrors == 0, "%s", errors);
  notes[0] = '\0';
  memset(nnotes, 0, sizeof nnotes);
  ck_assert_int_eq(scan_members(c, collect_note, NULL, &s, &ns), 0);
  ck_assert_uint_eq(ns, 2);
  ck_assert_uint_eq(nnotes[SCAN_NOTE_REMOTE], 1);
  ck_assert_uint_eq(nnotes[SCAN_NOTE_CONFIGURED], 1);
  ck_assert_msg(strstr(notes, u1) && strstr(notes, u2), "%s", notes);
  scan_free(s, ns);
  conf_free(c);
}
END_TEST

START_TEST(test_find)
{
  static const uint8_t u1[16] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                  0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77 };
  uint8_t u2[16];
  struct conf *c = read_text(
    "ARRAY one UUID=01234567:89abcdef:00112233:44556677 devices=/dev/sd[ab]1,/srv/*.img\n"
    "ARRAY two name=home:two\n"
    "ARRAY three name=three\n"
    "ARRAY four\n"
    "ARRAY five UUID=ffffffff:89abcdef:00112233:44556677 name=x:five\n");

  ck_assert_int_eq(nerrors, 0);
  memset(u2, 0xee, sizeof u2);
  ck_assert_str_eq(conf_find_array(c, u1, "whatever", NULL)->name, "one");
  ck_assert_str_eq(conf_find_array(c, u1, "whatever", "/dev/sdb1")->name, "one");
  ck_assert_str_eq(conf_find_array(c, u1, "whatever", "/srv/m0.img")->name, "one");
  ck_assert_ptr_null(conf_find_array(c, u1, "whatever", "/dev/sdc1"));
  ck_assert_ptr_null(conf_find_array(c, u1, "whatever", "/srv/sub/m0.img"));
  ck_assert_str_eq(conf_find_array(c, u2, "home:two", NULL)->name, "two");
  ck_assert_ptr_null(conf_find_array(c, u2, "away:two", NULL));
  ck_assert_str_eq(conf_find_array(c, u2, "any:three", NULL)->name, "three");
  ck_assert_str_eq(conf_find_array(c, u2, "host:four", NULL)->name, "four");
  ck_assert_ptr_null(conf_find_array(c, u2, "five", NULL));       /* UUID differs */
  ck_assert_ptr_null(conf_find_array(c, u2, "x:five", NULL));
  ck_assert_ptr_null(conf_find_array(c, u2, "host:six", NULL));
  ck_assert_ptr_null(conf_find_array(NULL, u2, "host:four", NULL));
  conf_free(c);
}
END_TEST

START_TEST(test_uuid)
{
  uint8_t u[16];
  char s[40];

  ck_assert_int_eq(uuid_parse("01234567:89abcdef:00112233:44556677", u), 0);
  uuid_format(u, s);
  ck_assert_str_eq(s, "01234567:89abcdef:00112233:44556677");
  ck_assert_int_eq(uuid_parse("01234567-89AB-CDEF-0011-223344556677", u), 0);
  uuid_format(u, s);
  ck_assert_str_eq(s, "01234567:89abcdef:00112233:44556677");
  ck_assert_int_eq(uuid_parse("0123456789abcdef0011223344556677", u), 0);
  ck_assert_int_eq(uuid_parse("0123456789abcdef001122334455667", u), -EINVAL);
  ck_assert_int_eq(uuid_parse("0123456789abcdef00112233445566778", u), -EINVAL);
  ck_assert_int_eq(uuid_parse("0123456789abcdef00112233445566zz", u), -EINVAL);
  ck_assert_int_eq(uuid_parse("", u), -EINVAL);
}
END_TEST

/* Member files of two arrays, grouped by a configuration. */
START_TEST(test_group)
{
  struct raid_array *a5, *a1;
  struct raid_superblock sb;
  struct scanned *s;
  struct scan_group g[8];
  struct conf *c;
  size_t ns;
  unsigned ng;
  char text[1024], uuid[40], p[256];

  a5 = tfile_array_create("g5", RAID_LEVEL_5, 3, 8 << 20);
  a1 = tfile_array_create("g1", RAID_LEVEL_1, 2, 8 << 20);
  raid_array_free(a5);
  raid_array_free(a1);
  tfile_read_sb("g5", 0, &sb);
  uuid_format(sb.set_uuid, uuid);
  tfile_path(p, sizeof p, "g5", 0);
  *strrchr(p, '/') = '\0';

  /* No configuration: both, under their own names. */
  snprintf(text, sizeof text, "DEVICE %s/g5?.img %s/g1?.img\n", p, p);
  c = read_text(text);
  ck_assert_int_eq(scan_members(c, NULL, NULL, &s, &ns), 0);
  ck_assert_uint_eq(ns, 5);
  ng = scan_group(s, ns, c, NULL, g, 8);
  ck_assert_uint_eq(ng, 2);
  ck_assert_uint_eq(g[0].present + g[1].present, 5);
  ck_assert_ptr_null(g[0].conf);
  scan_free(s, ns);
  conf_free(c);

  /* One ARRAY line: only that array, under the line's name; a member file
   * gone counts as missing. */
  snprintf(text, sizeof text, "DEVICE %s/g5?.img %s/g1?.img\nARRAY renamed UUID=%s\n", p, p, uuid);
  c = read_text(text);
  tfile_path(p, sizeof p, "g5", 2);
  ck_assert_int_eq(rename(p, strcat(strcpy(text, p), ".away")), 0);
  ck_assert_int_eq(scan_members(c, NULL, NULL, &s, &ns), 0);
  ng = scan_group(s, ns, c, NULL, g, 8);
  ck_assert_uint_eq(ng, 1);
  ck_assert_str_eq(g[0].name, "renamed");
  ck_assert_ptr_eq(g[0].conf, &c->arrays[0]);
  ck_assert_uint_eq(g[0].expected, 3);
  ck_assert_uint_eq(g[0].present, 2);
  ck_assert_str_eq(g[0].refused, "");
  ck_assert_uint_eq(scan_group(s, ns, c, "other", g, 8), 0);
  scan_free(s, ns);
  conf_free(c);
  ck_assert_int_eq(rename(text, p), 0);

  /* A level the line contradicts: refused, saying so. */
  tfile_path(p, sizeof p, "g5", 0);
  *strrchr(p, '/') = '\0';
  snprintf(text, sizeof text, "DEVICE %s/g5*\nARRAY x UUID=%s level=1\n", p, uuid);
  c = read_text(text);
  ck_assert_int_eq(scan_members(c, NULL, NULL, &s, &ns), 0);
  ng = scan_group(s, ns, c, NULL, g, 8);
  ck_assert_uint_eq(ng, 1);
  ck_assert_msg(strstr(g[0].refused, "its members are raid5, the ARRAY line 2 says level=raid1"),
                "%s", g[0].refused);
  scan_free(s, ns);
  conf_free(c);
}
END_TEST

int
main(void)
{
  Suite *s;
  TCase *tc;

  test_init("test-conf");
  s = suite_create("conf");
  tc = test_tcase("conf");
  tcase_add_test(tc, test_every_line);
  tcase_add_test(tc, test_bad_lines);
  tcase_add_test(tc, test_find);
  tcase_add_test(tc, test_uuid);
  tcase_add_test(tc, test_group);
  tcase_add_test(tc, test_uris);
  tcase_add_test(tc, test_scan_unreachable);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
