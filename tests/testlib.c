/* Shared helpers for libraid's Check tests (see testlib.h), the generic
 * part: process-wide setup and cleanup (the top directory, loop devices,
 * the reaper), the PRNG, buffers, member sets and member files by name.
 * md's layouts are in testlib-md.c, the test array and its workload in
 * testlib-array.c.
 */
#include <config.h>

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
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

/* ---- the library's log, captured ------------------------------------------------------ */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[65536];
static size_t log_len;

static void
log_capture(int priority, const char *msg, void *opaque)
{
  size_t n = strlen(msg);

  (void)priority;               /* raid_set_log_handler() filtered it */
  (void)opaque;
  pthread_mutex_lock(&log_lock);
  if (log_len + n + 2 < sizeof log_text) {
    memcpy(log_text + log_len, msg, n);
    log_len += n;
    log_text[log_len++] = '\n';
    log_text[log_len] = '\0';
  }
  pthread_mutex_unlock(&log_lock);
}

void
test_log_capture(int priority)
{
  pthread_mutex_lock(&log_lock);
  log_len = 0;
  log_text[0] = '\0';
  pthread_mutex_unlock(&log_lock);
  raid_set_log_handler(log_capture, NULL, priority);
}

char *
test_log_copy(void)
{
  char *s;

  pthread_mutex_lock(&log_lock);
  s = strdup(log_text);
  pthread_mutex_unlock(&log_lock);
  ck_assert(s != NULL);
  return s;
}

void
test_log_assert_line(const char *desc, const char *const *words)
{
  char *line, *save = NULL, *copy = test_log_copy(), *all = test_log_copy();
  bool ok = false;
  unsigned i;

  for (line = strtok_r(copy, "\n", &save); line && !ok; line = strtok_r(NULL, "\n", &save)) {
    ok = true;
    for (i = 0; words[i]; i++)
      ok = ok && strstr(line, words[i]) != NULL;
  }
  free(copy);
  tassert(ok, "%s: no message holds \"%s\", \"%s\"...; the log was:\n%s", desc,
          words[0], words[1] ? words[1] : "", all);
  free(all);
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
tfile_bitmap_bits(const char *set, unsigned i, uint8_t *bits, size_t maxbits,
                  uint64_t *nbits)
{
  struct raid_superblock sb;
  struct raid_bitmap_super b;
  struct raid_member *m;
  uint64_t dirty;
  char p[PATH_MAX];
  size_t len;
  int fd;

  tfile_path(p, sizeof p, set, i);
  ck_assert_msg(raid_member_open(p, RAID_MEMBER_READONLY, &m) == 0, "%s", raid_get_error());
  ck_assert_msg(raid_superblock_read(m, &sb) == 0, "%s", raid_get_error());
  ck_assert_msg(raid_bitmap_read(m, &sb, &b, &dirty) == 0, "%s", raid_get_error());
  raid_member_close(m);
  *nbits = raid_bitmap_chunks(&b);
  ck_assert_uint_le(*nbits, maxbits);
  len = (size_t)(*nbits + 7) / 8;
  ck_assert_int_ge(fd = open(p, O_RDONLY), 0);
  ck_assert_int_eq(pread(fd, bits, len, ((off_t)sb.super_offset + sb.bitmap_offset) * 512 +
                         RAID_BITMAP_SB_BYTES), (ssize_t)len);
  close(fd);
}

bool
tbit(const uint8_t *bits, uint64_t k)
{
  return bits[k / 8] & (1u << (k % 8));
}

void
tfile_write_sb(const char *set, unsigned i, const struct raid_superblock *sb)
{
  uint8_t buf[RAID_SB_BYTES];
  char path[PATH_MAX];
  int fd;

  ck_assert_int_eq(raid_superblock_encode(sb, buf), 0);
  tfile_path(path, sizeof path, set, i);
  ck_assert_int_ge(fd = open(path, O_WRONLY), 0);
  ck_assert_int_eq(pwrite(fd, buf, sizeof buf, (off_t)(sb->super_offset * 512)),
                   (ssize_t)sizeof buf);
  close(fd);
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
