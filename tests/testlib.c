/* Shared helpers for libraid's Check tests: see testlib.h.
 *
 * The md reference here is deliberately written from md's formulas
 * (drivers/md/raid0.c, raid5.c raid5_compute_sector(), raid10.c
 * __raid10_find_phys() and enough()) and shares no code with lib/, so a
 * mistake in lib/geometry.c cannot hide behind the same mistake here.
 */
#include <config.h>

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "testlib.h"

/* lib/internal.h, which this library does not include (its users link
 * libraid_core, where this lives). */
void safe_mode_set_default_delay(unsigned ms);

#define DEFAULT_SEED UINT64_C(0x6c69627261696400)   /* "libraid\0" */
#define TEST_TIMEOUT 600                           /* seconds per test */

#define TAG_MAGIC UINT64_C(0x5241494454414721)       /* "RAIDTAG!" */
#define TAG_CHECK UINT64_C(0x9e3779b97f4a7c15)
#define GUARD_MAGIC UINT64_C(0x4755415244475244)     /* "GUARDGRD" */

#ifndef DIV_ROUND_UP
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#endif

static uint64_t seed = DEFAULT_SEED;
static bool verbose;
static unsigned scale = 100;
static bool loop_mode;
static char *top_dir;
static char *trash_dir;
static char *loop_registry;
static pid_t reaper_pid = -1;
static int reaper_fd = -1;                  /* closing it stops the reaper */
static pid_t owner_pid;

/* ---- process-wide setup ------------------------------------------------ */

static int
rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
  (void)st; (void)type; (void)ftw;
  remove(path);
  return 0;
}

/* Run ARGV; with OUT, capture the first line of its stdout.  Returns the
 * exit status, or -1 if it could not run. */
static int
run_cmd(char *const argv[], char *out, size_t outlen)
{
  int pfd[2];
  pid_t pid;
  int status;

  if (out && pipe(pfd) < 0)
    return -1;
  pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDWR);
    if (out) {
      dup2(pfd[1], 1);
      close(pfd[0]);
      close(pfd[1]);
    }
    else if (devnull >= 0)
      dup2(devnull, 1);
    if (devnull >= 0)
      dup2(devnull, 0);
    execvp(argv[0], argv);
    _exit(127);
  }
  if (out) {
    size_t n = 0;
    ssize_t r;
    close(pfd[1]);
    while (n + 1 < outlen && (r = read(pfd[0], out + n, outlen - 1 - n)) > 0)
      n += r;
    out[n] = '\0';
    out[strcspn(out, "\n")] = '\0';
    close(pfd[0]);
  }
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Detach loop device DEV, but only if it is still backed by FILE: the
 * number may have been reused by someone else since we let it go. */
static void
loop_detach_if_ours(const char *dev, const char *file)
{
  char sysfs[PATH_MAX], backing[PATH_MAX];
  const char *base = strrchr(dev, '/');
  FILE *fp;
  bool ours = false;

  snprintf(sysfs, sizeof sysfs, "/sys/block/%s/loop/backing_file",
           base ? base + 1 : dev);
  fp = fopen(sysfs, "r");
  if (fp) {
    if (fgets(backing, sizeof backing, fp)) {
      backing[strcspn(backing, "\n")] = '\0';
      ours = strcmp(backing, file) == 0;
    }
    fclose(fp);
  }
  if (ours) {
    char *argv[] = { (char *)"losetup", (char *)"-d", (char *)dev, NULL };
    if (run_cmd(argv, NULL, 0) != 0)
      fprintf(stderr, "testlib: warning: losetup -d %s failed\n", dev);
  }
}

/* Member sets not yet destroyed, so that a forked test that fails (Check
 * calls exit() there) detaches its loop devices at once. */
static struct tmembers *live_sets[8];

static void
live_add(struct tmembers *tm)
{
  unsigned i;

  for (i = 0; i < ARRAY_SIZE(live_sets); i++)
    if (live_sets[i] == NULL) {
      live_sets[i] = tm;
      return;
    }
}

static void
live_remove(struct tmembers *tm)
{
  unsigned i;

  for (i = 0; i < ARRAY_SIZE(live_sets); i++)
    if (live_sets[i] == tm)
      live_sets[i] = NULL;
}

static void
test_cleanup(void)
{
  FILE *fp;
  char line[2 * PATH_MAX + 2];
  unsigned i;

  if (top_dir == NULL)
    return;
  if (getpid() != owner_pid) {
    /* A test process exiting (after a failure): its own sets only. */
    for (i = 0; i < ARRAY_SIZE(live_sets); i++)
      if (live_sets[i])
        tmembers_destroy(live_sets[i]);
    return;
  }
  /* Let the reaper finish what it has and wait for it. */
  if (reaper_pid > 0) {
    close(reaper_fd);
    while (waitpid(reaper_pid, NULL, 0) < 0 && errno == EINTR)
      ;
    reaper_pid = -1;
  }
  /* Loop devices a test left attached (it failed half way). */
  fp = fopen(loop_registry, "r");
  if (fp) {
    while (fgets(line, sizeof line, fp)) {
      char *sp = strchr(line, ' ');
      if (sp == NULL)
        continue;
      *sp = '\0';
      sp[1 + strcspn(sp + 1, "\n")] = '\0';
      loop_detach_if_ours(line, sp + 1);
    }
    fclose(fp);
  }
  nftw(top_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(top_dir);
  free(trash_dir);
  free(loop_registry);
  top_dir = trash_dir = loop_registry = NULL;
}

/* Killed (a timeout, ^C, a closed pipe): clean up first, then die of the
 * signal.  Only the process that made the directory cleans up. */
static void
on_fatal_signal(int sig)
{
  if (getpid() == owner_pid)
    test_cleanup();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* Removing member files is slow where the file system discards freed
 * blocks synchronously (ext4 -o discard: tens of milliseconds a file), and
 * the tests do nothing meanwhile.  So tests move their member directories
 * into TRASH_DIR, and this process, forked at start, removes them in the
 * background.  It stops when every copy of the pipe's write end is closed
 * (the test program's cleanup), after a last sweep. */
static void
reaper_sweep(void)
{
  nftw(trash_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  mkdir(trash_dir, 0700);
}

static void
reaper_start(void)
{
  int pfd[2];
  pid_t pid;

  if (pipe2(pfd, O_CLOEXEC) < 0)
    return;
  pid = fork();
  if (pid < 0) {
    close(pfd[0]);
    close(pfd[1]);
    return;
  }
  if (pid == 0) {
    struct pollfd p = { .fd = pfd[0], .events = POLLIN };
    close(pfd[1]);
    for (;;) {
      int r = poll(&p, 1, 50);
      reaper_sweep();
      if (r > 0)
        _exit(0);
    }
  }
  close(pfd[0]);
  reaper_pid = pid;
  reaper_fd = pfd[1];
}

void
test_init(const char *program)
{
  const char *s, *base;
  char tmpl[PATH_MAX];

  s = getenv("RAID_TEST_SEED");
  if (s && *s)
    seed = strtoull(s, NULL, 0);
  s = getenv("RAID_TEST_SCALE");
  if (s && *s) {
    scale = (unsigned)strtoul(s, NULL, 10);
    if (scale == 0)
      scale = 1;
  }
  s = getenv("RAID_TEST_VERBOSE");
  verbose = s && strcmp(s, "1") == 0;
  s = getenv("RAID_TEST_LOOP");
  loop_mode = s && strcmp(s, "1") == 0;
  base = getenv("RAID_TEST_MEMBER_DIR");
  if (base == NULL || *base == '\0')
    base = "/var/tmp";
  snprintf(tmpl, sizeof tmpl, "%s/libraid-test.XXXXXX", base);
  if (mkdtemp(tmpl) == NULL) {
    fprintf(stderr, "%s: mkdtemp %s: %m\n", program, tmpl);
    exit(EXIT_FAILURE);
  }
  top_dir = strdup(tmpl);
  if (asprintf(&loop_registry, "%s/loop-devices", top_dir) < 0 ||
      asprintf(&trash_dir, "%s/trash", top_dir) < 0 || mkdir(trash_dir, 0700) < 0)
    abort();
  owner_pid = getpid();
  /* Under valgrind a request parked at safe mode's gate (lib/safemode.c)
   * would wait in its queue's io_uring_enter for a thread that valgrind
   * never runs again (tests/Makefile.inc, VALGRIND_PROGS): no safe mode
   * there, as md's safe_mode_delay 0.  test-safemode runs under ASan and
   * ThreadSanitizer instead. */
  if (test_under_valgrind())
    safe_mode_set_default_delay(0);
  atexit(test_cleanup);
  signal(SIGINT, on_fatal_signal);
  signal(SIGTERM, on_fatal_signal);
  signal(SIGHUP, on_fatal_signal);
  signal(SIGPIPE, on_fatal_signal);
  fflush(stdout);
  fflush(stderr);
  reaper_start();
  printf("%s: seed=0x%016" PRIx64 " (RAID_TEST_SEED) scale=%u%% (RAID_TEST_SCALE) "
         "members: %s in %s\n",
         program, seed, scale, loop_mode ? "loop devices over files" : "files",
         top_dir);
  fflush(stdout);
}

void
test_verbose(const char *fmt, ...)
{
  static struct timespec last;
  struct timespec now;
  va_list ap;

  if (!verbose)
    return;
  clock_gettime(CLOCK_MONOTONIC, &now);
  fprintf(stderr, "[%8.3f] ", last.tv_sec ? (now.tv_sec - last.tv_sec) +
          (now.tv_nsec - last.tv_nsec) / 1e9 : 0.0);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  last = now;
}

TCase *
test_tcase(const char *name)
{
  TCase *tc = tcase_create(name);

  tcase_set_timeout(tc, TEST_TIMEOUT);
  return tc;
}

const char *
test_dir(void)
{
  return top_dir;
}

int
test_run_suite(Suite *s)
{
  SRunner *sr = srunner_create(s);
  int failed;

  srunner_run_all(sr, CK_ENV);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  test_cleanup();
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

unsigned
test_scale(unsigned n)
{
  uint64_t v = (uint64_t)n * scale / 100;

  return v ? (unsigned)v : 1;
}

uint64_t
test_seed(void)
{
  return seed;
}

uint64_t
test_seed_for(uint64_t i)
{
  struct rng r;

  rng_seed(&r, seed ^ (i * UINT64_C(0xd1b54a32d192ed03)));
  return rng_next(&r);
}

bool
test_loop_mode(void)
{
  return loop_mode;
}

bool
test_under_valgrind(void)
{
  /* Atomic: test threads ask at the same time (ThreadSanitizer). */
  static _Atomic int v = -1;
  int x = atomic_load_explicit(&v, memory_order_relaxed);

  if (x < 0) {
    const char *p = getenv("LD_PRELOAD");
    x = p && strstr(p, "vgpreload") != NULL;
    atomic_store_explicit(&v, x, memory_order_relaxed);
  }
  return x;
}

/* ---- PRNG: splitmix64 ---------------------------------------------------------- */

void
rng_seed(struct rng *r, uint64_t s)
{
  r->s = s;
}

uint64_t
rng_next(struct rng *r)
{
  uint64_t z = (r->s += UINT64_C(0x9e3779b97f4a7c15));

  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

uint64_t
rng_below(struct rng *r, uint64_t n)
{
  return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

uint64_t
rng_between(struct rng *r, uint64_t lo, uint64_t hi)
{
  return lo + rng_below(r, hi - lo + 1);
}

bool
rng_percent(struct rng *r, unsigned percent)
{
  return rng_below(r, 100) < percent;
}

void
rng_fill(struct rng *r, void *buf, size_t len)
{
  uint8_t *p = buf;
  uint64_t v;

  while (len >= 8) {
    v = rng_next(r);
    memcpy(p, &v, 8);
    p += 8;
    len -= 8;
  }
  if (len) {
    v = rng_next(r);
    memcpy(p, &v, len);
  }
}

/* ---- buffers ------------------------------------------------------------------- */

void *
test_alloc(size_t len)
{
  void *p;

  if (posix_memalign(&p, 4096, len ? len : 4096) != 0)
    ck_abort_msg("out of memory allocating %zu bytes", len);
  return p;
}

void
test_free(void *p)
{
  free(p);
}

/* ---- member sets --------------------------------------------------------------- */

static char *
xstrdup(const char *s)
{
  char *p = strdup(s);

  if (p == NULL)
    ck_abort_msg("out of memory");
  return p;
}

static char *
loop_attach(const char *file)
{
  char dev[PATH_MAX];
  char *argv[] = { (char *)"losetup", (char *)"--find", (char *)"--show",
                   (char *)"--direct-io=on", (char *)file, NULL };
  int r = run_cmd(argv, dev, sizeof dev);
  FILE *fp;

  tassert(r == 0 && strncmp(dev, "/dev/", 5) == 0,
                "losetup --find --show --direct-io=on %s failed (status %d)", file, r);
  /* Register it first thing, so the parent detaches it if we die. */
  fp = fopen(loop_registry, "a");
  tassert(fp != NULL, "open %s: %m", loop_registry);
  fprintf(fp, "%s %s\n", dev, file);
  fclose(fp);
  return xstrdup(dev);
}

void
tmembers_create(struct tmembers *tm, unsigned n, const uint64_t *sizes,
                uint64_t size)
{
  char tmpl[PATH_MAX], path[PATH_MAX];
  unsigned i;

  memset(tm, 0, sizeof *tm);
  tassert(top_dir != NULL, "test_init() was not called");
  live_add(tm);
  snprintf(tmpl, sizeof tmpl, "%s/set.XXXXXX", top_dir);
  tassert(mkdtemp(tmpl) != NULL, "mkdtemp %s: %m", tmpl);
  tm->dir = xstrdup(tmpl);
  tm->n = n;
  for (i = 0; i < n; i++) {
    int fd;

    tm->size[i] = sizes ? sizes[i] : size;
    snprintf(path, sizeof path, "%s/member%u", tm->dir, i);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    tassert(fd >= 0, "create %s: %m", path);
    /* Allocated (unwritten extents) rather than sparse where cheap: O_DIRECT
     * writes into holes allocate blocks under the inode lock one at a time
     * and are several times slower, and the data still reads as zeroes. */
    if (tm->size[i] > 64 * MiB || getenv("RAID_TEST_SPARSE") ||
        fallocate(fd, 0, 0, tm->size[i]) != 0)
      tassert(ftruncate(fd, tm->size[i]) == 0, "truncate %s: %m", path);
    close(fd);
    tm->file[i] = xstrdup(path);
    tm->path[i] = loop_mode ? loop_attach(path) : xstrdup(path);
  }
}

void
tmembers_destroy(struct tmembers *tm)
{
  unsigned i;

  live_remove(tm);
  for (i = 0; i < tm->n; i++) {
    if (tm->path[i] && tm->file[i] && strcmp(tm->path[i], tm->file[i]) != 0)
      loop_detach_if_ours(tm->path[i], tm->file[i]);
    free(tm->file[i]);
    free(tm->path[i]);
    tm->file[i] = tm->path[i] = NULL;
  }
  if (tm->dir) {
    /* Into the trash for the reaper; without one, remove it here. */
    char dst[PATH_MAX];
    const char *base = strrchr(tm->dir, '/') + 1;
    snprintf(dst, sizeof dst, "%s/%s", trash_dir, base);
    if (reaper_pid <= 0 || rename(tm->dir, dst) < 0)
      nftw(tm->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  }
  free(tm->dir);
  tm->dir = NULL;
  tm->n = 0;
}

/* Whether PATH's file system reports O_DIRECT support with an alignment of
 * at most 512 bytes (statx STATX_DIOALIGN); then the library must use it.
 * Unknown (old kernel or headers, or tmpfs, which reports nothing): false. */
static bool
direct_expected(const char *path)
{
#ifdef STATX_DIOALIGN
  struct statx stx;

  if (statx(AT_FDCWD, path, 0, STATX_DIOALIGN, &stx) != 0 ||
      !(stx.stx_mask & STATX_DIOALIGN))
    return false;
  return stx.stx_dio_offset_align != 0 && stx.stx_dio_offset_align <= 512 &&
    stx.stx_dio_mem_align != 0;
#else
  (void)path;
  return false;
#endif
}

struct raid_member *
tmembers_open(struct tmembers *tm, unsigned i, bool fault)
{
  struct raid_member *m = NULL, *f = NULL;
  int r;

  r = raid_member_open(tm->path[i], 0, &m);
  tassert(r == 0 && m != NULL, "raid_member_open %s: %d %s",
                tm->path[i], r, raid_get_error());
  tassert(raid_member_size(m) == tm->size[i],
                "raid_member_size(%s) = %" PRIu64 ", expected %" PRIu64,
                tm->path[i], raid_member_size(m), tm->size[i]);
  if (direct_expected(tm->path[i]))
    tassert(raid_member_is_direct(m) == 1,
            "%s supports O_DIRECT with 512-byte alignment but the member is not direct",
            tm->path[i]);
  tassert(strcmp(raid_member_kind(m), loop_mode ? "block" : "file") == 0,
                "member %s has kind %s", tm->path[i], raid_member_kind(m));
  if (!fault)
    return m;
  r = raid_member_new_fault(m, &f);
  tassert(r == 0 && f != NULL, "raid_member_new_fault %s: %d %s",
                tm->path[i], r, raid_get_error());
  return f;
}

/* ---- member files by name ---------------------------------------------------------- */

void
tfile_path(char *buf, size_t len, const char *set, unsigned i)
{
  snprintf(buf, len, "%s/%s%u.img", top_dir, set, i);
}

void
tfile_create(const char *set, unsigned n, uint64_t size)
{
  char p[PATH_MAX];
  unsigned i;
  int fd;

  for (i = 0; i < n; i++) {
    tfile_path(p, sizeof p, set, i);
    fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, size), 0);
    close(fd);
  }
}

void
tfile_read_sb(const char *set, unsigned i, struct raid_superblock *sb)
{
  struct raid_member *m;
  char p[PATH_MAX];

  tfile_path(p, sizeof p, set, i);
  ck_assert_msg(raid_member_open(p, RAID_MEMBER_READONLY, &m) == 0, "%s", raid_get_error());
  ck_assert_msg(raid_superblock_read(m, sb) == 0, "%s", raid_get_error());
  raid_member_close(m);
}

void
tfile_copy(const char *from, const char *to)
{
  char cmd[2 * PATH_MAX + 64];

  snprintf(cmd, sizeof cmd, "cp --sparse=always '%s' '%s'", from, to);
  ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
}

void
tfile_open(const char *set, const unsigned *idx, unsigned n, struct raid_member **m)
{
  char p[PATH_MAX];
  unsigned i;

  for (i = 0; i < n; i++) {
    tfile_path(p, sizeof p, set, idx ? idx[i] : i);
    ck_assert_msg(raid_member_open(p, 0, &m[i]) == 0, "%s", raid_get_error());
  }
}

void
tfile_close(struct raid_member **m, unsigned n)
{
  unsigned i;

  for (i = 0; i < n; i++)
    raid_member_close(m[i]);
}

struct raid_array *
tfile_array_create(const char *set, int level, unsigned n, uint64_t size)
{
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_config cfg = { .name = set, .level = level,
                             .layout = RAID_LAYOUT_DEFAULT, .chunk_size = 64 << 10,
                             .raid_disks = n };
  struct raid_array *a;

  tfile_create(set, n, size);
  tfile_open(set, NULL, n, m);
  ck_assert_msg(raid_array_create(&cfg, m, RAID_CREATE_ASSUME_CLEAN, &a) == 0, "%s",
                raid_get_error());
  return a;
}

/* ---- configurations and the md reference --------------------------------------------- */

const char *
layout_name(int level, int layout)
{
  if (level == RAID_LEVEL_5) {
    switch (layout) {
    case RAID_LAYOUT_DEFAULT: return "default-layout";
    case RAID_LAYOUT_LEFT_ASYMMETRIC: return "left-asymmetric";
    case RAID_LAYOUT_RIGHT_ASYMMETRIC: return "right-asymmetric";
    case RAID_LAYOUT_LEFT_SYMMETRIC: return "left-symmetric";
    case RAID_LAYOUT_RIGHT_SYMMETRIC: return "right-symmetric";
    case RAID_LAYOUT_PARITY_FIRST: return "parity-first";
    case RAID_LAYOUT_PARITY_LAST: return "parity-last";
    }
  }
  if (level == RAID_LEVEL_10) {
    static _Thread_local char buf[16];
    if (layout == RAID_LAYOUT_DEFAULT)
      return "default-layout";
    snprintf(buf, sizeof buf, "near-%d", layout & 0xff);
    return buf;
  }
  return "";
}

static void
size_str(uint64_t v, char *buf, size_t len)
{
  if (v && v % MiB == 0)
    snprintf(buf, len, "%" PRIu64 "M", v / MiB);
  else if (v >= MiB && (v % MiB) % KiB == 0)
    snprintf(buf, len, "%" PRIu64 "M+%" PRIu64 "K", v / MiB, (v % MiB) / KiB);
  else if (v && v % KiB == 0)
    snprintf(buf, len, "%" PRIu64 "K", v / KiB);
  else
    snprintf(buf, len, "%" PRIu64, v);
}

const char *
tconf_str(const struct tconf *c, char *buf, size_t len)
{
  char chunk[32], off[32], mem[32];

  size_str(c->chunk, chunk, sizeof chunk);
  size_str(c->data_offset, off, sizeof off);
  size_str(c->member_bytes, mem, sizeof mem);
  snprintf(buf, len, "raid%d %s disks=%u chunk=%s data_offset=%s member=%s",
           c->level, layout_name(c->level, c->layout), c->disks, chunk, off, mem);
  return buf;
}

int
tconf_layout(const struct tconf *c)
{
  if (c->layout != RAID_LAYOUT_DEFAULT)
    return c->layout;
  if (c->level == RAID_LEVEL_5)
    return RAID_LAYOUT_LEFT_SYMMETRIC;
  if (c->level == RAID_LEVEL_10)
    return RAID_LAYOUT_RAID10_NEAR(2);
  return c->layout;
}

uint32_t
tconf_chunk(const struct tconf *c)
{
  return c->chunk ? c->chunk : RAID_CHUNK_DEFAULT;
}

unsigned
tconf_copies(const struct tconf *c)
{
  if (c->level == RAID_LEVEL_1)
    return c->disks;
  if (c->level == RAID_LEVEL_10)
    return tconf_layout(c) & 0xff;
  return 1;
}

uint64_t
tconf_member_size(const struct tconf *c, unsigned round)
{
  uint64_t usable = c->member_bytes - c->data_offset;

  if (c->level == RAID_LEVEL_1)
    return usable / round * round;
  return usable / tconf_chunk(c) * tconf_chunk(c);
}

uint64_t
tconf_array_size(const struct tconf *c, uint64_t ms)
{
  uint64_t chunk = tconf_chunk(c);

  switch (c->level) {
  case RAID_LEVEL_0: return ms * c->disks;
  case RAID_LEVEL_1: return ms;
  case RAID_LEVEL_5: return ms * (c->disks - 1);
  case RAID_LEVEL_10: return (ms / chunk) * c->disks / tconf_copies(c) * chunk;
  }
  return 0;
}

bool
tconf_survives(const struct tconf *c, uint64_t lost)
{
  unsigned n = c->disks, i, lost_count = 0;

  for (i = 0; i < n; i++)
    lost_count += (lost >> i) & 1;
  switch (c->level) {
  case RAID_LEVEL_0: return lost_count == 0;
  case RAID_LEVEL_1: return lost_count < n;
  case RAID_LEVEL_5: return lost_count <= 1;
  case RAID_LEVEL_10: {
    /* md's enough(): every group of COPIES consecutive slots, starting at
     * multiples of COPIES (mod N), keeps a member. */
    unsigned copies = tconf_copies(c), first = 0;
    do {
      unsigned k, cnt = 0, this = first;
      for (k = 0; k < copies; k++) {
        if (!((lost >> this) & 1))
          cnt++;
        this = (this + 1) % n;
      }
      if (cnt == 0)
        return false;
      first = (first + copies) % n;
    } while (first != 0);
    return true;
  }
  }
  return false;
}

void
ref_raid0_map(unsigned disks, unsigned chunk_sectors, uint64_t sector,
              unsigned *disk, uint64_t *member_sector)
{
  uint64_t chunk = sector / chunk_sectors;

  *disk = (unsigned)(chunk % disks);
  *member_sector = (chunk / disks) * chunk_sectors + sector % chunk_sectors;
}

void
ref_raid5_map(int layout, unsigned disks, unsigned chunk_sectors,
              uint64_t sector, unsigned *dd, unsigned *pd,
              uint64_t *stripe, uint64_t *member_sector)
{
  unsigned data_disks = disks - 1;
  uint64_t chunk_number = sector / chunk_sectors;
  uint64_t chunk_offset = sector % chunk_sectors;
  uint64_t s = chunk_number / data_disks;
  unsigned d = (unsigned)(chunk_number % data_disks);
  unsigned p = 0;

  switch (layout) {
  case RAID_LAYOUT_LEFT_ASYMMETRIC:
    p = data_disks - (unsigned)(s % disks);
    if (d >= p)
      d++;
    break;
  case RAID_LAYOUT_RIGHT_ASYMMETRIC:
    p = (unsigned)(s % disks);
    if (d >= p)
      d++;
    break;
  case RAID_LAYOUT_LEFT_SYMMETRIC:
    p = data_disks - (unsigned)(s % disks);
    d = (p + 1 + d) % disks;
    break;
  case RAID_LAYOUT_RIGHT_SYMMETRIC:
    p = (unsigned)(s % disks);
    d = (p + 1 + d) % disks;
    break;
  case RAID_LAYOUT_PARITY_FIRST:        /* P D0 D1 .. in every row */
    p = 0;
    d = d + 1;
    break;
  case RAID_LAYOUT_PARITY_LAST:         /* D0 D1 .. P in every row */
    p = data_disks;
    break;
  default:
    ck_abort_msg("ref_raid5_map: layout %d", layout);
  }
  *dd = d;
  *pd = p;
  *stripe = s;
  *member_sector = s * chunk_sectors + chunk_offset;
}

void
ref_raid10_map(unsigned disks, unsigned copies, unsigned chunk_sectors,
               uint64_t sector, unsigned k, unsigned *disk,
               uint64_t *member_sector)
{
  uint64_t chunk = sector / chunk_sectors;
  uint64_t slot = chunk * copies + k;

  *disk = (unsigned)(slot % disks);
  *member_sector = (slot / disks) * chunk_sectors + sector % chunk_sectors;
}

unsigned
ref_locate(const struct tconf *c, uint64_t sector, unsigned *disks,
           uint64_t *member_sectors)
{
  unsigned cs = tconf_chunk(c) / 512, k, pd;
  uint64_t stripe;

  switch (c->level) {
  case RAID_LEVEL_0:
    ref_raid0_map(c->disks, cs, sector, &disks[0], &member_sectors[0]);
    return 1;
  case RAID_LEVEL_1:
    for (k = 0; k < c->disks; k++) {
      disks[k] = k;
      member_sectors[k] = sector;
    }
    return c->disks;
  case RAID_LEVEL_5:
    ref_raid5_map(tconf_layout(c), c->disks, cs, sector, &disks[0], &pd,
                  &stripe, &member_sectors[0]);
    return 1;
  case RAID_LEVEL_10:
    for (k = 0; k < tconf_copies(c); k++)
      ref_raid10_map(c->disks, tconf_copies(c), cs, sector, k, &disks[k],
                     &member_sectors[k]);
    return tconf_copies(c);
  }
  return 0;
}

/* ---- sector tags and the guard pattern ------------------------------------------------- */

static void
tag_sector(uint8_t *p, uint64_t sector, uint64_t gen)
{
  uint64_t v[3] = { TAG_MAGIC ^ sector, gen, TAG_CHECK ^ sector ^ gen };

  memcpy(p, v, sizeof v);
}

static void
guard_fill(uint8_t *buf, unsigned member, uint64_t off, size_t len)
{
  size_t i;

  /* Offsets are sector aligned. */
  for (i = 0; i < len; i += 8) {
    uint64_t v = GUARD_MAGIC ^ ((uint64_t)member << 56) ^ ((off + i) >> 3);
    memcpy(buf + i, &v, 8);
  }
}

const char *
tag_str(const void *sector, char *buf, size_t len)
{
  uint64_t v[3];
  const uint8_t *p = sector;
  size_t i;

  memcpy(v, p, sizeof v);
  if ((v[2] ^ v[1] ^ TAG_CHECK) == (v[0] ^ TAG_MAGIC)) {
    snprintf(buf, len, "data of array sector %" PRIu64 " (write %" PRIu64 ")",
             v[0] ^ TAG_MAGIC, v[1]);
    return buf;
  }
  for (i = 0; i < 512 && p[i] == 0; i++)
    ;
  if (i == 512)
    snprintf(buf, len, "zeroes");
  else if ((v[0] ^ GUARD_MAGIC) >> 56 < RAID_MAX_MEMBERS &&
           (((v[0] ^ GUARD_MAGIC) << 8) >> 8) % 64 == 0)
    snprintf(buf, len, "guard pattern of member %u at %" PRIu64,
             (unsigned)((v[0] ^ GUARD_MAGIC) >> 56),
             (((v[0] ^ GUARD_MAGIC) << 8) >> 8) << 3);
  else if (p[0] == 0xee && p[1] == 0xee && p[31] == 0xee)
    snprintf(buf, len, "the read buffer's fill (never written)");
  else
    snprintf(buf, len, "unrecognised bytes %02x %02x %02x %02x...",
             p[0], p[1], p[2], p[3]);
  return buf;
}

/* ---- a test array ------------------------------------------------------------------------ */

static void
write_all(const char *path, int fd, const void *buf, size_t len, uint64_t off)
{
  while (len) {
    ssize_t r = pwrite(fd, buf, len, off);
    tassert(r > 0, "pwrite %s at %" PRIu64 ": %m", path, off);
    buf = (const uint8_t *)buf + r;
    len -= r;
    off += r;
  }
}

/* Drop FD's clean cached pages (a block device's buffer cache too). */
static void
drop_cache(int fd)
{
  struct stat st;

  if (fstat(fd, &st) == 0 && S_ISBLK(st.st_mode))
    ioctl(fd, BLKFLSBUF, 0);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

static void
read_all(const char *path, int fd, void *buf, size_t len, uint64_t off)
{
  while (len) {
    ssize_t r = pread(fd, buf, len, off);
    tassert(r > 0, "pread %s at %" PRIu64 ": %s", path, off,
                  r == 0 ? "end of file" : strerror(errno));
    buf = (uint8_t *)buf + r;
    len -= r;
    off += r;
  }
}

/* Fill [0, data_offset) and everything after the largest possible data
 * area of every member with the guard pattern. */
static void
guard_write(struct tarray *t)
{
  uint64_t tail = t->c.data_offset + tconf_member_size(&t->c, 512);
  unsigned i;

  for (i = 0; i < t->c.disks; i++) {
    int fd = open(t->tm.path[i], O_RDWR | O_CLOEXEC);
    uint8_t *buf;
    tassert(fd >= 0, "open %s: %m", t->tm.path[i]);
    if (t->c.data_offset) {
      buf = test_alloc(t->c.data_offset);
      guard_fill(buf, i, 0, t->c.data_offset);
      write_all(t->tm.path[i], fd, buf, t->c.data_offset, 0);
      test_free(buf);
    }
    if (tail < t->tm.size[i]) {
      buf = test_alloc(t->tm.size[i] - tail);
      guard_fill(buf, i, tail, t->tm.size[i] - tail);
      write_all(t->tm.path[i], fd, buf, t->tm.size[i] - tail, tail);
      test_free(buf);
    }
    /* No fsync: the kernel writes back cached pages of a range before
     * O_DIRECT I/O to it, and the library should never touch it anyway. */
    close(fd);
  }
}

static struct raid_config
tarray_config(const struct tarray *t)
{
  struct raid_config cfg = {
    .name = t->name,
    .level = t->c.level,
    .layout = t->c.layout,
    .chunk_size = t->c.chunk,
    .raid_disks = t->c.disks,
    .data_offset = t->c.data_offset,
    .member_size = 0,
  };
  return cfg;
}

void
tarray_assemble(struct tarray *t)
{
  struct raid_config cfg = tarray_config(t);
  unsigned i, lost = 0;
  int r;

  for (i = 0; i < t->c.disks; i++) {
    t->m[i] = ((t->missing >> i) & 1) ? NULL
      : tmembers_open(&t->tm, i, t->flags & TA_FAULT);
    lost += (t->missing >> i) & 1;
  }
  r = raid_array_new(&cfg, t->m, &t->a);
  tassert(r == 0 && t->a != NULL, "%s: raid_array_new: %d %s",
                t->desc, r, raid_get_error());

  /* What the array reports about itself. */
  tassert(strcmp(raid_array_name(t->a), t->name) == 0, "%s: name %s",
                t->desc, raid_array_name(t->a));
  tassert(raid_array_level(t->a) == t->c.level, "%s: level %d", t->desc,
                raid_array_level(t->a));
  tassert(raid_array_raid_disks(t->a) == t->c.disks, "%s: raid_disks %u",
                t->desc, raid_array_raid_disks(t->a));
  if (t->c.level == RAID_LEVEL_5 || t->c.level == RAID_LEVEL_10)
    tassert(raid_array_layout(t->a) == tconf_layout(&t->c),
                  "%s: layout %d, expected %d", t->desc, raid_array_layout(t->a),
                  tconf_layout(&t->c));
  if (t->c.level != RAID_LEVEL_1)
    tassert(raid_array_chunk_size(t->a) == tconf_chunk(&t->c),
                  "%s: chunk %u, expected %u", t->desc, raid_array_chunk_size(t->a),
                  tconf_chunk(&t->c));

  t->member_size = raid_array_member_size(t->a);
  if (t->c.level == RAID_LEVEL_1)
    tassert(t->member_size == tconf_member_size(&t->c, 512) ||
                  t->member_size == tconf_member_size(&t->c, 4096),
                  "%s: member size %" PRIu64 ", expected %" PRIu64 " or %" PRIu64,
                  t->desc, t->member_size, tconf_member_size(&t->c, 512),
                  tconf_member_size(&t->c, 4096));
  else
    tassert(t->member_size == tconf_member_size(&t->c, 0),
                  "%s: member size %" PRIu64 ", expected %" PRIu64,
                  t->desc, t->member_size, tconf_member_size(&t->c, 0));
  tassert(raid_array_size(t->a) == tconf_array_size(&t->c, t->member_size),
                "%s: array size %" PRIu64 ", expected %" PRIu64 " for member size %" PRIu64,
                t->desc, raid_array_size(t->a),
                tconf_array_size(&t->c, t->member_size), t->member_size);
  if (t->c.level == RAID_LEVEL_0 || t->c.level == RAID_LEVEL_5)
    tassert(raid_array_stripe_width(t->a) ==
                  (uint64_t)tconf_chunk(&t->c) * (t->c.disks - (t->c.level == 5)),
                  "%s: stripe width %" PRIu64, t->desc, raid_array_stripe_width(t->a));
  tassert(raid_array_logical_block_size(t->a) == 512,
                "%s: logical block size %u", t->desc,
                raid_array_logical_block_size(t->a));

  for (i = 0; i < t->c.disks; i++) {
    int want = ((t->missing >> i) & 1) ? RAID_MEMBER_MISSING : RAID_MEMBER_IN_SYNC;
    tassert(raid_array_member_state(t->a, i) == want,
                  "%s: member %u state %d, expected %d", t->desc, i,
                  raid_array_member_state(t->a, i), want);
    tassert(raid_array_member(t->a, i) == t->m[i],
                  "%s: raid_array_member(%u) is not the member given", t->desc, i);
  }
  tassert(raid_array_degraded(t->a) == lost, "%s: degraded %u, expected %u",
                t->desc, raid_array_degraded(t->a), lost);
  tassert(raid_array_is_failed(t->a) == 0, "%s: failed at assembly", t->desc);
}

void
tarray_setup(struct tarray *t, const struct tconf *c, unsigned flags,
             uint64_t missing, uint64_t s)
{
  char buf[200];
  int r;

  memset(t, 0, sizeof *t);
  t->c = *c;
  t->flags = flags;
  t->missing = t->lost = missing;
  rng_seed(&t->rng, s);
  snprintf(t->name, sizeof t->name, "md-test%u", (unsigned)(s % 1000));
  snprintf(t->desc, sizeof t->desc, "[%s seed=0x%016" PRIx64 "%s]",
           tconf_str(c, buf, sizeof buf), s, test_loop_mode() ? " loop" : "");
  if (missing) {
    size_t l = strlen(t->desc) - 1;
    snprintf(t->desc + l, sizeof t->desc - l, " missing=0x%" PRIx64 "]", missing);
  }
  test_verbose("%s: setup", t->desc);
  tmembers_create(&t->tm, c->disks, NULL, c->member_bytes);
  if (!(flags & TA_NO_PATTERN))
    guard_write(t);
  test_verbose("members created, guard written");
  tarray_assemble(t);
  test_verbose("assembled");
  t->size = raid_array_size(t->a);
  t->rbuf = test_alloc(RBUF_SIZE);
  t->shadow = calloc(1, t->size);
  tassert(t->shadow != NULL, "out of memory for a %" PRIu64 " byte shadow", t->size);
  r = raid_queue_new(64, &t->q);
  tassert(r == 0, "raid_queue_new: %d %s", r, raid_get_error());
}

void
tarray_close_array(struct tarray *t)
{
  unsigned i;

  if (t->a)
    raid_array_free(t->a);
  t->a = NULL;
  for (i = 0; i < RAID_MAX_MEMBERS; i++)
    t->m[i] = NULL;
}

void
tarray_teardown(struct tarray *t)
{
  if (t->q)
    raid_queue_free(t->q);
  t->q = NULL;
  tarray_close_array(t);
  test_verbose("closed");
  tmembers_destroy(&t->tm);
  test_verbose("members removed");
  free(t->shadow);
  t->shadow = NULL;
  test_free(t->rbuf);
  t->rbuf = NULL;
}

void
tag_data(struct rng *r, void *buf, uint64_t off, size_t len, uint64_t gen)
{
  uint8_t *p = buf;
  size_t i;

  rng_fill(r, buf, len);
  for (i = 0; i < len; i += 512)
    tag_sector(p + i, (off + i) / 512, gen);
}

void
tarray_make_data(struct tarray *t, void *buf, uint64_t off, size_t len)
{
  tag_data(&t->rng, buf, off, len, ++t->gen);
}

/* Bytes of a "row": the unit whose crossing matters (data stripe). */
static uint64_t
row_bytes(const struct tconf *c)
{
  uint64_t chunk = tconf_chunk(c);

  switch (c->level) {
  case RAID_LEVEL_0: return chunk * c->disks;
  case RAID_LEVEL_5: return chunk * (c->disks - 1);
  case RAID_LEVEL_10: return chunk * c->disks;
  default: return 64 * KiB;
  }
}

void
tarray_random_range(struct tarray *t, uint64_t *off, size_t *len)
{
  struct rng *r = &t->rng;
  uint64_t size = t->size, chunk = tconf_chunk(&t->c), row = row_bytes(&t->c);
  uint64_t max = MIN(size, (uint64_t)RAID_MAX_REQUEST);
  uint64_t l, o;
  unsigned p = (unsigned)rng_below(r, 100);

  if (p < 78)                   /* small: 512 bytes .. 64 KiB */
    l = rng_between(r, 1, 128) * 512;
  else if (p < 90)              /* medium: up to 512 KiB */
    l = rng_between(r, 129, 1024) * 512;
  else if (p < 93)              /* large: up to 2 MiB */
    l = rng_between(r, 1025, 4096) * 512;
  else if (p < 97)              /* whole rows, row aligned */
    l = row * rng_between(r, 1, 2);
  else                          /* crossing rows at odd places */
    l = row + rng_between(r, 1, 2 * chunk / 512) * 512;
  if (l > max)
    l = max / 512 * 512;

  if (p >= 93 && p < 97)
    o = rng_below(r, (size - l) / row + 1) * row;
  else {
    switch (rng_below(r, 4)) {
    case 0:                       /* ends just past a chunk boundary */
      o = rng_below(r, size / chunk) * chunk;
      o = o >= l / 2 ? o - l / 2 / 512 * 512 : 0;
      break;
    case 1:                       /* 4 KiB aligned */
      o = rng_below(r, (size - l) / 4096 + 1) * 4096;
      break;
    default:                      /* any sector */
      o = rng_below(r, (size - l) / 512 + 1) * 512;
    }
    if (o + l > size)
      o = size - l;
  }
  *off = o;
  *len = (size_t)l;
}

bool
tarray_diff(const struct tarray *t, const void *buf, uint64_t off, size_t len,
            const char *what, char *msg, size_t msglen)
{
  const uint8_t *p = buf, *s = t->shadow + off;
  size_t i, bad = 0, first = SIZE_MAX;
  char got[128], want[128], where[256];
  unsigned disks[RAID_MAX_MEMBERS], n, k;
  uint64_t msec[RAID_MAX_MEMBERS];
  int w;

  if (memcmp(p, s, len) == 0)
    return false;
  for (i = 0; i < len; i += 512)
    if (memcmp(p + i, s + i, MIN((size_t)512, len - i)) != 0) {
      if (first == SIZE_MAX)
        first = i;
      bad++;
    }
  n = ref_locate(&t->c, (off + first) / 512, disks, msec);
  w = 0;
  for (k = 0; k < n && w < (int)sizeof where - 1; k++)
    w += snprintf(where + w, sizeof where - w, "%smember %u sector %" PRIu64,
                  k ? ", " : "", disks[k], msec[k] + t->c.data_offset / 512);
  for (i = first; i < len && p[i] == s[i]; i++)
    ;
  snprintf(msg, msglen, "%s: %s at offset %" PRIu64 " length %zu: %zu of %zu sectors "
           "differ; first at array offset %" PRIu64 " (md puts it on %s), byte %zu "
           "of the sector: read %s, expected %s",
           t->desc, what, off, len, bad, DIV_ROUND_UP(len, 512), off + first,
           where, i - first, tag_str(p + first, got, sizeof got),
           tag_str(s + first, want, sizeof want));
  return true;
}

void
tarray_compare(struct tarray *t, const void *buf, uint64_t off, size_t len,
               const char *what)
{
  char msg[1024];

  if (tarray_diff(t, buf, off, len, what, msg, sizeof msg))
    ck_abort_msg("%s", msg);
}

void
tarray_write(struct tarray *t, uint64_t off, size_t len, unsigned flags)
{
  uint8_t *buf = test_alloc(len);
  int r;

  tarray_make_data(t, buf, off, len);
  r = raid_pwrite(t->a, buf, len, off, flags);
  tassert(r == 0, "%s: raid_pwrite(offset %" PRIu64 ", length %zu%s) = %d: %s",
                t->desc, off, len, flags & RAID_REQ_FUA ? ", FUA" : "", r,
                raid_get_error());
  memcpy(t->shadow + off, buf, len);
  test_free(buf);
  t->nwrite++;
}

/* Mark BUF so that sectors a read leaves alone show up: the first bytes of
 * every sector, or (under valgrind, which does not see io_uring filling
 * buffers) every byte. */
static void
prefill(uint8_t *buf, size_t len)
{
  size_t i;

  if (test_under_valgrind()) {
    memset(buf, 0xee, len);
    return;
  }
  for (i = 0; i < len; i += 512)
    memset(buf + i, 0xee, 32);
}

void
tarray_read_check(struct tarray *t, uint64_t off, size_t len)
{
  uint8_t *buf = len <= RBUF_SIZE ? t->rbuf : test_alloc(len);
  int r;

  prefill(buf, len);
  r = raid_pread(t->a, buf, len, off);
  tassert(r == 0, "%s: raid_pread(offset %" PRIu64 ", length %zu) = %d: %s",
                t->desc, off, len, r, raid_get_error());
  tarray_compare(t, buf, off, len, "raid_pread");
  if (buf != t->rbuf)
    test_free(buf);
  t->nread++;
}

void
tarray_zero(struct tarray *t, uint64_t off, size_t len, bool discard)
{
  int r = discard ? raid_discard(t->a, len, off)
    : raid_write_zeroes(t->a, len, off, 0);

  tassert(r == 0, "%s: raid_%s(offset %" PRIu64 ", length %zu) = %d: %s",
                t->desc, discard ? "discard" : "write_zeroes", off, len, r,
                raid_get_error());
  memset(t->shadow + off, 0, len);
  t->nother++;
}

void
tarray_check_all(struct tarray *t)
{
  uint64_t off;
  size_t step = 4 * MiB;

  for (off = 0; off < t->size; off += step)
    tarray_read_check(t, off, (size_t)MIN((uint64_t)step, t->size - off));
  test_verbose("read all %" PRIu64 " bytes", t->size);
}

void
tarray_check_sample(struct tarray *t, unsigned n)
{
  uint64_t off;
  size_t len;
  unsigned i;

  tarray_read_check(t, 0, (size_t)MIN(64 * KiB, t->size));
  tarray_read_check(t, t->size - MIN(64 * KiB, t->size), (size_t)MIN(64 * KiB, t->size));
  for (i = 0; i < n; i++) {
    tarray_random_range(t, &off, &len);
    tarray_read_check(t, off, len);
  }
}

/* ---- the random workload ------------------------------------------------------------------ */

enum op { OP_WRITE, OP_WRITE_FUA, OP_READ, OP_DISCARD, OP_ZERO, OP_FLUSH };

static const char *const op_names[] = {
  "write", "FUA write", "read", "discard", "write-zeroes", "flush"
};

static enum op
random_op(struct rng *r)
{
  unsigned p = (unsigned)rng_below(r, 100);

  if (p < 42) return OP_WRITE;
  if (p < 45) return OP_WRITE_FUA;
  if (p < 90) return OP_READ;
  if (p < 94) return OP_DISCARD;
  if (p < 99) return OP_ZERO;
  return OP_FLUSH;
}

static double
now_s(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
sync_op(struct tarray *t, enum op op, uint64_t off, size_t len)
{
  int r;

  switch (op) {
  case OP_WRITE: tarray_write(t, off, len, 0); break;
  case OP_WRITE_FUA: tarray_write(t, off, len, RAID_REQ_FUA); break;
  case OP_READ: tarray_read_check(t, off, len); break;
  case OP_DISCARD: tarray_zero(t, off, len, true); break;
  case OP_ZERO: tarray_zero(t, off, len, false); break;
  case OP_FLUSH:
    r = raid_flush(t->a);
    tassert(r == 0, "%s: raid_flush = %d: %s", t->desc, r, raid_get_error());
    t->nother++;
    break;
  }
}

/* An asynchronous request of the workload. */
struct aop {
  double t0;
  bool in_use;
  enum op op;
  uint64_t off;
  size_t len;
  uint8_t *buf;
  int result;
  unsigned calls;
};

static void
aop_done(void *opaque, int result)
{
  struct aop *o = opaque;

  o->result = result;
  o->calls++;
}

#define MAX_DEPTH 16

/* Submit O (op, off, len filled in). */
static void
aop_submit(struct tarray *t, struct aop *o)
{
  int r;

  o->calls = 0;
  o->result = 1;
  o->buf = NULL;
  if (o->op == OP_WRITE || o->op == OP_WRITE_FUA || o->op == OP_READ)
    o->buf = test_alloc(o->len);
  switch (o->op) {
  case OP_WRITE:
  case OP_WRITE_FUA:
    tarray_make_data(t, o->buf, o->off, o->len);
    r = raid_aio_write(t->q, t->a, o->buf, o->len, o->off,
                       o->op == OP_WRITE_FUA ? RAID_REQ_FUA : 0, aop_done, o);
    break;
  case OP_READ:
    prefill(o->buf, o->len);
    r = raid_aio_read(t->q, t->a, o->buf, o->len, o->off, aop_done, o);
    break;
  case OP_DISCARD:
    r = raid_aio_discard(t->q, t->a, o->len, o->off, aop_done, o);
    break;
  case OP_ZERO:
    r = raid_aio_write_zeroes(t->q, t->a, o->len, o->off, 0, aop_done, o);
    break;
  default:
    r = raid_aio_flush(t->q, t->a, aop_done, o);
    break;
  }
  tassert(r == 0, "%s: raid_aio %s (offset %" PRIu64 ", length %zu) refused: %d %s",
          t->desc, op_names[o->op], o->off, o->len, r, raid_get_error());
  o->in_use = true;
  o->t0 = now_s();
}

/* O completed: check it ran its callback once, successfully, and bring
 * the shadow up to date (writes) or compare with it (reads).  Nothing in
 * flight overlaps O, so the order of completions does not matter. */
static double lat_sum[6];
static unsigned lat_n[6];

static void
aop_finish(struct tarray *t, struct aop *o)
{
  lat_sum[o->op] += now_s() - o->t0;
  lat_n[o->op]++;
  tassert(o->calls == 1, "%s: completion of %s ran %u times", t->desc,
          op_names[o->op], o->calls);
  tassert(o->result == 0, "%s: async %s (offset %" PRIu64 ", length %zu) failed: %d %s",
          t->desc, op_names[o->op], o->off, o->len, o->result,
          o->result == 1 ? "" : strerror(-o->result));
  switch (o->op) {
  case OP_WRITE: case OP_WRITE_FUA:
    memcpy(t->shadow + o->off, o->buf, o->len);
    t->nwrite++;
    break;
  case OP_DISCARD: case OP_ZERO:
    memset(t->shadow + o->off, 0, o->len);
    t->nother++;
    break;
  case OP_READ:
    tarray_compare(t, o->buf, o->off, o->len, "raid_aio_read");
    t->nread++;
    break;
  default:
    t->nother++;
    break;
  }
  test_free(o->buf);
  o->buf = NULL;
  o->in_use = false;
}

void
tarray_random_ops(struct tarray *t, unsigned nops)
{
  struct aop ops[MAX_DEPTH];
  unsigned submitted = 0, in_flight = 0, depth = 1, i;
  int r;

  memset(ops, 0, sizeof ops);
  while (submitted < nops || in_flight > 0) {
    /* Every 64 requests, a new queue depth: 1, 4 or 16. */
    if (submitted % 64 == 0)
      depth = (unsigned[]){ 1, 4, MAX_DEPTH, MAX_DEPTH }[rng_below(&t->rng, 4)];

    if (submitted < nops && in_flight == 0 && rng_percent(&t->rng, 10)) {
      /* The synchronous wrappers, with nothing else in flight. */
      uint64_t off;
      size_t len;
      enum op op = random_op(&t->rng);
      tarray_random_range(t, &off, &len);
      sync_op(t, op, off, len);
      submitted++;
      continue;
    }
    if (submitted < nops && in_flight < depth) {
      /* Another request on a range nothing in flight touches. */
      struct aop *o = NULL;
      bool overlap = true;
      int tries;

      for (i = 0; i < MAX_DEPTH && o == NULL; i++)
        if (!ops[i].in_use)
          o = &ops[i];
      o->op = random_op(&t->rng);
      for (tries = 0; tries < 8 && overlap; tries++) {
        tarray_random_range(t, &o->off, &o->len);
        overlap = false;
        for (i = 0; i < MAX_DEPTH && o->op != OP_FLUSH; i++)
          if (ops[i].in_use && ops[i].op != OP_FLUSH && o->off < ops[i].off + ops[i].len &&
              ops[i].off < o->off + o->len)
            overlap = true;
      }
      if (!overlap || in_flight == 0) {
        tassert(!overlap, "%s: no free range", t->desc);
        aop_submit(t, o);
        submitted++;
        in_flight++;
        continue;
      }
    }
    /* Wait for at least one completion. */
    r = raid_queue_run(t->q, 1);
    tassert(r >= 0, "%s: raid_queue_run: %d %s", t->desc, r, raid_get_error());
    for (i = 0; i < MAX_DEPTH; i++)
      if (ops[i].in_use && ops[i].calls) {
        aop_finish(t, &ops[i]);
        in_flight--;
      }
    tassert(raid_queue_in_flight(t->q) == in_flight,
            "%s: raid_queue_in_flight %u, %u requests outstanding", t->desc,
            raid_queue_in_flight(t->q), in_flight);
  }
  test_verbose("%u random ops; mean latency ms: write %.2f (%u) FUA %.2f (%u) read %.2f (%u) "
               "discard %.2f (%u) zero %.2f (%u) flush %.2f (%u)", nops,
               lat_n[0] ? lat_sum[0] * 1e3 / lat_n[0] : 0, lat_n[0],
               lat_n[1] ? lat_sum[1] * 1e3 / lat_n[1] : 0, lat_n[1],
               lat_n[2] ? lat_sum[2] * 1e3 / lat_n[2] : 0, lat_n[2],
               lat_n[3] ? lat_sum[3] * 1e3 / lat_n[3] : 0, lat_n[3],
               lat_n[4] ? lat_sum[4] * 1e3 / lat_n[4] : 0, lat_n[4],
               lat_n[5] ? lat_sum[5] * 1e3 / lat_n[5] : 0, lat_n[5]);
  memset(lat_sum, 0, sizeof lat_sum);
  memset(lat_n, 0, sizeof lat_n);
}

/* ---- placement --------------------------------------------------------------------------- */

/* Fail with what member DISK holds at data offset MOFF instead of the
 * expected bytes. */
static void
placement_fail(const struct tconf *c, const char *desc, const char *const *names,
               const char *what, unsigned disk, uint64_t moff,
               const uint8_t *got, const uint8_t *want, size_t len, bool parity)
{
  size_t i, j;
  char g[128], w[128];

  for (i = 0; i + 512 <= len && memcmp(got + i, want + i, 512) == 0; i += 512)
    ;
  for (j = i; j < len && got[j] == want[j]; j++)
    ;
  if (parity)
    snprintf(g, sizeof g, "byte %02x", got[j]);
  else
    tag_str(got + i, g, sizeof g);
  if (parity)
    snprintf(w, sizeof w, "%02x, the XOR of the stripe's data", want[j]);
  else
    tag_str(want + i, w, sizeof w);
  ck_abort_msg("%s: placement: member %u (%s) byte %" PRIu64 " (%s; first difference "
               "at byte %zu of the sector): holds %s, md's layout says %s",
               desc, disk, names[disk], c->data_offset + moff + j, what,
               j - i, g, w);
}

static void
check_guard(struct tarray *t, unsigned disk, const uint8_t *mem, uint64_t off,
            uint64_t end)
{
  uint8_t *want;

  if (end <= off)
    return;
  want = test_alloc(end - off);
  guard_fill(want, disk, off, end - off);
  if (memcmp(mem + off, want, end - off) != 0) {
    uint64_t i;
    char g[128];
    for (i = 0; memcmp(mem + off + i, want + i, 512) == 0; i += 512)
      ;
    ck_abort_msg("%s: member %u (%s) byte %" PRIu64 " outside the data area "
                 "[%" PRIu64 ", %" PRIu64 ") was overwritten: holds %s",
                 t->desc, disk, t->tm.path[disk], off + i, t->c.data_offset,
                 t->c.data_offset + t->member_size, tag_str(mem + off + i, g, sizeof g));
  }
  test_free(want);
}

void
tcheck_layout(const struct tconf *c, const char *desc, const char *const *names,
              const uint8_t *const *data, uint64_t member_size, const uint8_t *shadow,
              uint64_t size)
{
  unsigned n = c->disks, i, k;
  uint64_t chunk = tconf_chunk(c), cs = chunk / 512, ci;

  switch (c->level) {
  case RAID_LEVEL_1:
    /* Every member holds the whole array at the same place. */
    for (i = 0; i < n; i++)
      if (data[i] && memcmp(data[i], shadow, size) != 0)
        placement_fail(c, desc, names, "mirror", i, 0, data[i], shadow, size, false);
    break;

  case RAID_LEVEL_0:
  case RAID_LEVEL_10:
    for (ci = 0; ci < size / chunk; ci++) {
      unsigned disks[RAID_MAX_MEMBERS];
      uint64_t msec[RAID_MAX_MEMBERS];
      unsigned copies = ref_locate(c, ci * cs, disks, msec);
      for (k = 0; k < copies; k++) {
        const uint8_t *got;
        if (data[disks[k]] == NULL)
          continue;
        got = data[disks[k]] + msec[k] * 512;
        if (memcmp(got, shadow + ci * chunk, chunk) != 0) {
          char what[64];
          snprintf(what, sizeof what, "copy %u of array chunk %" PRIu64, k, ci);
          placement_fail(c, desc, names, what, disks[k], msec[k] * 512, got,
                         shadow + ci * chunk, chunk, false);
        }
      }
    }
    break;

  case RAID_LEVEL_5: {
    uint64_t rows = member_size / chunk, row;
    uint8_t *parity = test_alloc(chunk);
    for (row = 0; row < rows; row++) {
      unsigned pd = 0;
      memset(parity, 0, chunk);
      for (k = 0; k < n - 1; k++) {
        uint64_t cn = row * (n - 1) + k, stripe, msec, j;
        const uint8_t *want = shadow + cn * chunk;
        unsigned dd;
        ref_raid5_map(tconf_layout(c), n, cs, cn * cs, &dd, &pd, &stripe, &msec);
        tassert(stripe == row && msec == row * cs, "reference map is inconsistent");
        for (j = 0; j < chunk; j += 8) {
          uint64_t a, b;
          memcpy(&a, parity + j, 8);
          memcpy(&b, want + j, 8);
          a ^= b;
          memcpy(parity + j, &a, 8);
        }
        if (data[dd] && memcmp(data[dd] + msec * 512, want, chunk) != 0) {
          char what[64];
          snprintf(what, sizeof what, "data chunk %u of stripe %" PRIu64, k, row);
          placement_fail(c, desc, names, what, dd, msec * 512, data[dd] + msec * 512,
                         want, chunk, false);
        }
      }
      if (data[pd] && memcmp(data[pd] + row * chunk, parity, chunk) != 0) {
        char what[64];
        snprintf(what, sizeof what, "parity of stripe %" PRIu64, row);
        placement_fail(c, desc, names, what, pd, row * chunk, data[pd] + row * chunk,
                       parity, chunk, true);
      }
    }
    test_free(parity);
    break;
  }
  }
}

void
tarray_check_placement(struct tarray *t)
{
  const struct tconf *c = &t->c;
  unsigned n = c->disks, i;
  uint8_t *mem[RAID_MAX_MEMBERS] = { NULL };
  const uint8_t *data[RAID_MAX_MEMBERS] = { NULL };
  uint64_t mapped = 0;
  int r;

  if (t->a && !raid_array_is_failed(t->a)) {
    r = raid_flush(t->a);
    tassert(r == 0, "%s: raid_flush: %d %s", t->desc, r, raid_get_error());
  }
  test_verbose("flushed");
  for (i = 0; i < n; i++) {
    int fd;
    void *p;
    if ((t->lost >> i) & 1)
      continue;
    /* Mapped, not read: no copy, no buffer to fault in.  O_DIRECT writes
     * invalidate the page cache, but an invalidation that races with
     * readahead (or a loop device number reused by an earlier check) can
     * leave stale clean pages behind: drop them first, so the mapping
     * shows what is on the member. */
    fd = open(t->tm.path[i], O_RDONLY | O_CLOEXEC);
    tassert(fd >= 0, "open %s: %m", t->tm.path[i]);
    drop_cache(fd);
    p = mmap(NULL, t->tm.size[i], PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      mem[i] = test_alloc(t->tm.size[i]);
      read_all(t->tm.path[i], fd, mem[i], t->tm.size[i], 0);
    }
    else {
      madvise(p, t->tm.size[i], MADV_SEQUENTIAL | MADV_WILLNEED);
      mem[i] = p;
      mapped |= UINT64_C(1) << i;
    }
    close(fd);
    if (!(t->flags & TA_NO_PATTERN)) {
      check_guard(t, i, mem[i], 0, c->data_offset);
      check_guard(t, i, mem[i], c->data_offset + tconf_member_size(c, 512),
                  t->tm.size[i]);
    }
  }
  for (i = 0; i < n; i++)
    data[i] = mem[i] ? mem[i] + c->data_offset : NULL;
  test_verbose("members read");
  tcheck_layout(c, t->desc, (const char *const *)t->tm.path, data, t->member_size,
                t->shadow, t->size);
  for (i = 0; i < n; i++) {
    if ((mapped >> i) & 1)
      munmap(mem[i], t->tm.size[i]);
    else
      test_free(mem[i]);
  }
  test_verbose("placement checked");
}
