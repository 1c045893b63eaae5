/* Description: md v1.2 superblocks (lib/superblock.c) against mdadm's.
 *  - Real mdadm: superblocks written by mdadm 4.2 and Linux 6.1 in a VM
 *    (tests/data/mdadm-*.sb: first 8 KiB of members of RAID 1 with a failed
 *    peer, RAID 5 with a spare, RAID 10 near-2) decode to what mdadm
 *    --examine printed there and re-encode byte for byte; so does one of
 *    ours after the kernel assembled, ran and stopped the array
 *    (tests/data/kernel-raid5-libraid-member2.sb).
 *  - Interop: when mdadm and blkid are installed, a member file carrying
 *    our superblock is read by `mdadm --examine` and `blkid -p`, which
 *    must agree on level, layout, chunk, UUIDs, role, state and checksum.
 *    Skipped, with the reason, when a tool is missing.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "internal.h"
#include "testlib.h"
#include "sb-bytes.h"

/* ---- superblocks written by mdadm 4.2 and Linux 6.1 ----------------------------- */

struct fixture {
  const char *file;
  int level;
  uint32_t layout, chunksize, raid_disks, dev_number;
  uint64_t data_offset;         /* mdadm: 1 MiB, 2 MiB for RAID 10 */
  uint16_t roles[5];
  uint32_t nroles;
  uint64_t events;
  const char *name;
  uint8_t uuid[16];
  uint8_t device_uuid[16];
  uint32_t csum;                /* as mdadm --examine printed it */
};

#define UUID_RAID1 { 0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x22, 0x22, \
                     0x33, 0x33, 0x33, 0x33, 0x44, 0x44, 0x44, 0x44 }
#define UUID_RAID5 { 0x01, 0x23, 0xab, 0xcd, 0x45, 0x67, 0xef, 0x01, \
                     0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98 }
#define UUID_RAID10 { 0xa0, 0xa1, 0xa2, 0xa3, 0xb0, 0xb1, 0xb2, 0xb3, \
                      0xc0, 0xc1, 0xc2, 0xc3, 0xd0, 0xd1, 0xd2, 0xd3 }

/* mdadm --create --metadata=1.2 --assume-clean --homehost=vmhost on 64 MiB
 * loop devices; RAID 1 member 1 then failed (member 0 rewritten by the
 * kernel: role 0xfffe, events 2), the arrays stopped.  mdadm's --examine
 * of each member gave the checksums and device UUIDs below. */
static const struct fixture fixtures[] = {
  { "mdadm-raid1-member0.sb", 1, 0, 0, 2, 0, 2048, { 0, 0xfffe }, 2, 2, "vmhost:raid1",
    UUID_RAID1, { 0xc4, 0x28, 0x5b, 0x23, 0xcf, 0xe5, 0xa9, 0x9c,
                  0xf1, 0x23, 0x7e, 0x3e, 0xec, 0x4e, 0x9d, 0x12 }, 0x4e20ab0e },
  { "mdadm-raid5-member0.sb", 5, 2, 128, 4, 0, 2048, { 0, 1, 2, 3, 0xffff }, 5, 0, "vmhost:raid5",
    UUID_RAID5, { 0xd8, 0xb3, 0x49, 0x66, 0x40, 0xfd, 0x06, 0x4e,
                  0x9b, 0xeb, 0xab, 0x07, 0x82, 0xca, 0x15, 0xd3 }, 0x7d90f988 },
  { "mdadm-raid5-member2.sb", 5, 2, 128, 4, 2, 2048, { 0, 1, 2, 3, 0xffff }, 5, 0, "vmhost:raid5",
    UUID_RAID5, { 0x91, 0x71, 0x10, 0x6a, 0xab, 0xa3, 0xd2, 0x4a,
                  0xac, 0x9e, 0x60, 0x6f, 0x09, 0xd7, 0xf6, 0x96 }, 0xa9b91d46 },
  { "mdadm-raid5-member4.sb", 5, 2, 128, 4, 4, 2048, { 0, 1, 2, 3, 0xffff }, 5, 0, "vmhost:raid5",
    UUID_RAID5, { 0x6e, 0x74, 0x59, 0xee, 0x84, 0x6d, 0x2c, 0xd5,
                  0x6f, 0xaf, 0x82, 0x90, 0x9b, 0x14, 0xed, 0xb0 }, 0xf3743854 },
  { "mdadm-raid10-member0.sb", 10, 0x102, 1024, 4, 0, 4096, { 0, 1, 2, 3 }, 4, 0, "vmhost:raid10",
    UUID_RAID10, { 0xd7, 0x93, 0xfd, 0xbf, 0x99, 0x64, 0x2d, 0x4e,
                   0x00, 0x4e, 0xf4, 0x0c, 0xc4, 0x3f, 0x70, 0x08 }, 0xa4d5e957 },
  /* Ours, the other way round: four members encoded by libraid, assembled
   * by mdadm --assemble on Linux 6.1, written to and stopped; the kernel
   * rewrote the superblock (events 5 -> 7, utime). */
  { "kernel-raid5-libraid-member2.sb", 5, 2, 128, 4, 2, 2048, { 0, 1, 2, 3 }, 4, 7,
    "libraid:ours", { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                      0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10 },
    { 0xde, 0xad, 0xbe, 0xef, 0x00, 0x11, 0x22, 0x33,
      0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0x02 }, 0x36c6a8d5 },
};

/* tests/data in the source tree: $top_srcdir, or next to this file. */
static void
data_path(const char *file, char *buf, size_t len)
{
  const char *top = getenv("top_srcdir");

  if (top && *top)
    snprintf(buf, len, "%s/tests/data/%s", top, file);
  else {
    const char *src = __FILE__;
    const char *slash = strrchr(src, '/');
    int dirlen = slash ? (int)(slash - src) : 1;

    snprintf(buf, len, "%.*s/data/%s", dirlen, slash ? src : ".", file);
  }
}

START_TEST(test_mdadm_fixture)
{
  const struct fixture *f = &fixtures[_i];
  struct raid_superblock *sb = malloc(sizeof *sb);
  uint8_t *img = test_alloc(2 * RAID_SB_BYTES), *buf = test_alloc(RAID_SB_BYTES);
  char path[PATH_MAX];
  unsigned i;
  ssize_t n;
  int fd;

  ck_assert_ptr_nonnull(sb);
  data_path(f->file, path, sizeof path);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    printf("test-sb-mdadm: %s skipped: cannot open %s: %m\n", f->file, path);
    goto out;
  }
  n = read(fd, img, 2 * RAID_SB_BYTES);
  close(fd);
  ck_assert_int_eq(n, 2 * RAID_SB_BYTES);

  ck_assert_msg(raid_superblock_decode(img + RAID_SB_BYTES, RAID_SB_OFFSET_1_2,
                                       MEMBER_SECTORS, f->file, sb) == 0,
                "%s", raid_get_error());
  ck_assert_uint_eq(sb->sb_csum, f->csum);
  ck_assert_uint_eq(raid_superblock_csum(img + RAID_SB_BYTES), f->csum);
  ck_assert_int_eq(sb->level, f->level);
  ck_assert_uint_eq(sb->layout, f->layout);
  ck_assert_uint_eq(sb->chunksize, f->chunksize);
  ck_assert_uint_eq(sb->raid_disks, f->raid_disks);
  ck_assert_mem_eq(sb->set_uuid, f->uuid, 16);
  ck_assert_mem_eq(sb->device_uuid, f->device_uuid, 16);
  ck_assert_str_eq(sb->set_name, f->name);
  ck_assert_uint_eq(sb->dev_number, f->dev_number);
  ck_assert_uint_eq(sb->events, f->events);
  ck_assert_uint_eq(sb->feature_map, 0);
  /* mdadm 4.2's defaults on a 64 MiB device (which we copied). */
  ck_assert_uint_eq(sb->max_dev, 128);
  ck_assert_uint_eq(sb->data_offset, f->data_offset);
  ck_assert_uint_eq(sb->data_size, MEMBER_SECTORS - f->data_offset);
  ck_assert_uint_eq(sb->size, MEMBER_SECTORS - f->data_offset);
  ck_assert_uint_eq(sb->super_offset, 8);
  ck_assert_uint_eq(sb->bblog_shift, 0);
  ck_assert_uint_eq(sb->bblog_size, 8);
  ck_assert_int_eq(sb->bblog_offset, 16);
  ck_assert_uint_eq(sb->resync_offset, RAID_SB_MAX_SECTOR);
  ck_assert_uint_eq(sb->devflags, 0);
  ck_assert_uint_eq(sb->ctime >> 40, 0);
  ck_assert_uint_ge(sb->utime, sb->ctime);
  for (i = 0; i < sb->max_dev; i++)
    ck_assert_msg(sb->dev_roles[i] == (i < f->nroles ? f->roles[i] : RAID_SB_ROLE_SPARE),
                  "%s: dev_roles[%u] = 0x%x", f->file, i, sb->dev_roles[i]);

  /* We write what they wrote, byte for byte. */
  ck_assert_int_eq(raid_superblock_encode(sb, buf), 0);
  for (i = 0; i < RAID_SB_BYTES; i++)
    ck_assert_msg(buf[i] == img[RAID_SB_BYTES + i], "%s: byte 0x%x: ours 0x%02x, mdadm's 0x%02x",
                  f->file, i, buf[i], img[RAID_SB_BYTES + i]);
 out:
  test_free(img);
  test_free(buf);
  free(sb);
}
END_TEST

/* ---- mdadm --examine and blkid on our superblock -------------------------------- */

/* Full path of TOOL in $PATH or the sbin directories, or NULL. */
static const char *
find_tool(const char *tool, char *buf, size_t len)
{
  const char *path = getenv("PATH");
  char dirs[4096];
  char *dir, *save = NULL;

  snprintf(dirs, sizeof dirs, "%s:/usr/sbin:/sbin", path ? path : "/usr/bin:/bin");
  for (dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    snprintf(buf, len, "%s/%s", *dir ? dir : ".", tool);
    if (access(buf, X_OK) == 0)
      return buf;
  }
  return NULL;
}

/* Run CMD; its output (stdout and stderr) into OUT. Returns the exit status. */
static int
run_capture(const char *cmd, char *out, size_t len)
{
  FILE *fp = popen(cmd, "r");
  size_t n = 0, got;
  int status;

  ck_assert_msg(fp != NULL, "popen %s: %m", cmd);
  while (n + 1 < len && (got = fread(out + n, 1, len - 1 - n, fp)) > 0)
    n += got;
  out[n] = '\0';
  status = pclose(fp);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void
assert_has(const char *out, const char *tool, const char *want)
{
  ck_assert_msg(strstr(out, want) != NULL, "%s output lacks \"%s\":\n%s", tool, want, out);
}

/* "0123abcd:4567ef01:..." as mdadm prints UUIDs, or "0123abcd-4567-..." as blkid. */
static void
uuid_str(const uint8_t *u, bool blkid, char *buf)
{
  static const unsigned dash[] = { 4, 6, 8, 10 };
  unsigned i, k = 0;
  char *p = buf;

  for (i = 0; i < 16; i++) {
    if (blkid ? (k < 4 && i == dash[k]) : (i && i % 4 == 0)) {
      *p++ = blkid ? '-' : ':';
      k++;
    }
    p += sprintf(p, "%02x", u[i]);
  }
}

struct examine_case {
  unsigned dev_number;
  uint16_t role3;               /* dev_roles[3] */
  const char *role_line;
  const char *state_line;
};

static const struct examine_case examine_cases[] = {
  { 2, 3, "Device Role : Active device 2", "Array State : AAAA " },
  { 4, 3, "Device Role : spare", "Array State : AAAA " },
  { 0, RAID_SB_ROLE_FAULTY, "Device Role : Active device 0", "Array State : AAA. " },
};

START_TEST(test_mdadm_examine)
{
  const struct examine_case *ec = &examine_cases[_i];
  struct raid_superblock *sb = malloc(sizeof *sb);
  uint8_t *buf = test_alloc(RAID_SB_BYTES);
  char mdadm[PATH_MAX], blkid[PATH_MAX], file[] = "/var/tmp/libraid-sb.XXXXXX";
  char cmd[PATH_MAX * 3], want[256], uuid[40], *out;
  int fd, st;

  ck_assert_ptr_nonnull(sb);
  out = malloc(65536);
  ck_assert_ptr_nonnull(out);
  if (!find_tool("mdadm", mdadm, sizeof mdadm) && !find_tool("blkid", blkid, sizeof blkid)) {
    printf("test-sb-mdadm: mdadm --examine and blkid checks skipped: neither is installed\n");
    goto out;
  }

  sb_raid5(sb, ec->dev_number);
  strcpy(sb->set_name, "testhost:sbtest");
  sb->dev_roles[3] = ec->role3;
  ck_assert_int_eq(raid_superblock_encode(sb, buf), 0);
  fd = mkstemp(file);
  ck_assert_msg(fd >= 0, "mkstemp %s: %m", file);
  ck_assert_int_eq(ftruncate(fd, (off_t)MEMBER_SECTORS * 512), 0);
  ck_assert_int_eq(pwrite(fd, buf, RAID_SB_BYTES, RAID_SB_OFFSET_1_2 * 512), RAID_SB_BYTES);
  close(fd);

  if (find_tool("mdadm", mdadm, sizeof mdadm)) {
    snprintf(cmd, sizeof cmd, "'%s' --examine '%s' 2>&1", mdadm, file);
    st = run_capture(cmd, out, 65536);
    ck_assert_msg(st == 0, "%s exited %d:\n%s", cmd, st, out);
    assert_has(out, "mdadm", "Magic : a92b4efc");
    assert_has(out, "mdadm", "Version : 1.2");
    assert_has(out, "mdadm", "Feature Map : 0x0");
    uuid_str(sb->set_uuid, false, uuid);
    snprintf(want, sizeof want, "Array UUID : %s", uuid);
    assert_has(out, "mdadm", want);
    assert_has(out, "mdadm", "Name : testhost:sbtest");
    assert_has(out, "mdadm", "Raid Level : raid5");
    assert_has(out, "mdadm", "Raid Devices : 4");
    assert_has(out, "mdadm", "Array Size : 193536 KiB");
    assert_has(out, "mdadm", "Data Offset : 2048 sectors");
    assert_has(out, "mdadm", "Super Offset : 8 sectors");
    assert_has(out, "mdadm", "State : clean");
    uuid_str(sb->device_uuid, false, uuid);
    snprintf(want, sizeof want, "Device UUID : %s", uuid);
    assert_has(out, "mdadm", want);
    assert_has(out, "mdadm", "Bad Block Log : 512 entries available at offset 16 sectors");
    snprintf(want, sizeof want, "Checksum : %" PRIx32 " - correct", (uint32_t)le_get(buf + 0xd8, 4));
    assert_has(out, "mdadm", want);
    assert_has(out, "mdadm", "Events : 42");
    assert_has(out, "mdadm", "Layout : left-symmetric");
    assert_has(out, "mdadm", "Chunk Size : 64K");
    assert_has(out, "mdadm", ec->role_line);
    assert_has(out, "mdadm", ec->state_line);
  } else
    printf("test-sb-mdadm: mdadm --examine checks skipped: mdadm is not installed\n");

  if (find_tool("blkid", blkid, sizeof blkid)) {
    snprintf(cmd, sizeof cmd, "'%s' -p '%s' 2>&1", blkid, file);
    st = run_capture(cmd, out, 65536);
    ck_assert_msg(st == 0, "%s exited %d:\n%s", cmd, st, out);
    assert_has(out, "blkid", "TYPE=\"linux_raid_member\"");
    uuid_str(sb->set_uuid, true, uuid);
    snprintf(want, sizeof want, " UUID=\"%s\"", uuid);
    assert_has(out, "blkid", want);
    uuid_str(sb->device_uuid, true, uuid);
    snprintf(want, sizeof want, "UUID_SUB=\"%s\"", uuid);
    assert_has(out, "blkid", want);
    assert_has(out, "blkid", "LABEL=\"testhost:sbtest\"");
    assert_has(out, "blkid", "VERSION=\"1.2\"");
  } else
    printf("test-sb-mdadm: blkid checks skipped: blkid is not installed\n");
  unlink(file);
 out:
  free(out);
  test_free(buf);
  free(sb);
}
END_TEST

int
main(void)
{
  Suite *s = suite_create("sb-mdadm");
  TCase *tc;

  test_init("test-sb-mdadm");
  tc = test_tcase("interop");
  tcase_add_loop_test(tc, test_mdadm_fixture, 0, ARRAY_SIZE(fixtures));
  tcase_add_loop_test(tc, test_mdadm_examine, 0, ARRAY_SIZE(examine_cases));
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
