/* raid-bench: library-level throughput of an array, without any server in
 * the way: what the RAID path itself costs.
 *
 *   raid-bench [--level L] [--members N] [--member-size MiB] [--chunk KiB]
 *              [--bs BYTES] [--rw read|write|randread|randwrite|randrw]
 *              [--qd N] [--threads N] [--seconds S]
 *              [--ram | --dir DIR [--sim OPTS]] [--no-prefill] [--verify]
 *
 * Each thread has its own queue and keeps QD requests in flight for the
 * given time.  Members are RAM by default (CPU cost of the RAID path),
 * files in DIR, or with --sim simulated drives "sim:DIR/benchN.img?OPTS"
 * (the members bench/run gives raidd).  Prints one line: configuration,
 * IOPS, MiB/s and the process's CPU time per I/O (user + system, every
 * thread: the RAID path and the members' own work, nothing else).
 *
 * Prefill.  Before the clock starts the whole array is written once, 1 MiB
 * at a time: a RAM member's pages are faulted in (a 3 s run on fresh
 * 256 MiB members otherwise measures page faults: 65k IOPS against 632k
 * warm) and parity is consistent.  --no-prefill measures the cold case.
 *
 * Verification.  Every write, the prefill's too, stamps each 512-byte
 * sector with its own array offset and a magic word; --verify then reads
 * the whole array back and checks every stamp (a write that landed in the
 * wrong place, a read that returned the wrong sectors) and, on a level with
 * redundancy, runs the array's check (scrub), which must count no
 * mismatch (parity and copies agree with the data after the run's writes).
 * Reads in the timed part check nothing: they measure.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include <raid/raid.h>

#define STAMP_MAGIC 0x7261696462656e63ull   /* "raidbenc" */
#define PREFILL_BS (1024u * 1024u)

static struct raid_array *array;
static unsigned bs = 4096, qd = 32;
static double seconds = 5;
static const char *rw = "randread";
static volatile bool stop;

struct job {
  struct raid_queue *q;
  uint64_t rng;
  uint64_t ops;
  uint64_t next_seq;
  unsigned in_flight;
  int errors;
  pthread_t thread;
};

struct slot {
  struct job *job;
  uint8_t *buf;
};

static uint64_t
rnd(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The stamp of each sector of LEN bytes at array offset OFF: its offset,
 * then the magic word xor the offset. */
static void
stamp(uint8_t *buf, size_t len, uint64_t off)
{
  size_t i;

  for (i = 0; i < len; i += 512) {
    uint64_t w[2] = { off + i, STAMP_MAGIC ^ (off + i) };
    memcpy(buf + i, w, sizeof w);
  }
}

/* 0 when every sector of BUF holds its stamp; else the first bad offset + 1. */
static uint64_t
stamp_check(const uint8_t *buf, size_t len, uint64_t off)
{
  size_t i;

  for (i = 0; i < len; i += 512) {
    uint64_t w[2];

    memcpy(w, buf + i, sizeof w);
    if (w[0] != off + i || w[1] != (STAMP_MAGIC ^ (off + i)))
      return off + i + 1;
  }
  return 0;
}

static void issue(struct slot *s);

static void
done(void *opaque, int result)
{
  struct slot *s = opaque;

  s->job->in_flight--;
  if (result < 0 && s->job->errors++ == 0)
    fprintf(stderr, "raid-bench: I/O error: %s\n", raid_get_error());
  s->job->ops++;
  if (!stop)
    issue(s);
}

static void
issue(struct slot *s)
{
  struct job *j = s->job;
  uint64_t blocks = raid_array_size(array) / bs, off;
  bool write;
  int r;

  if (strncmp(rw, "rand", 4) == 0)
    off = rnd(&j->rng) % blocks * bs;
  else {
    off = j->next_seq % blocks * bs;
    j->next_seq++;
  }
  if (strcmp(rw, "randrw") == 0)
    write = rnd(&j->rng) % 100 < 33;          /* the reviews' 67/33 mix */
  else
    write = strstr(rw, "write") != NULL;
  if (write)
    stamp(s->buf, bs, off);
  r = write ? raid_aio_write(j->q, array, s->buf, bs, off, 0, done, s)
            : raid_aio_read(j->q, array, s->buf, bs, off, done, s);
  if (r < 0) {
    fprintf(stderr, "raid-bench: %s\n", raid_get_error());
    exit(1);
  }
  j->in_flight++;
}

static void *
run(void *arg)
{
  struct job *j = arg;
  struct slot *slots = calloc(qd, sizeof *slots);
  unsigned i;

  if (slots == NULL || raid_queue_new(qd * 8, &j->q) < 0) {
    fprintf(stderr, "raid-bench: %s\n", slots ? raid_get_error() : strerror(ENOMEM));
    exit(1);
  }
  for (i = 0; i < qd; i++) {
    slots[i].job = j;
    if (posix_memalign((void **)&slots[i].buf, 4096, bs) != 0)
      abort();
    memset(slots[i].buf, 0xa5, bs);
    issue(&slots[i]);
  }
  while (j->in_flight)
    raid_queue_run(j->q, 1);
  for (i = 0; i < qd; i++)
    free(slots[i].buf);
  free(slots);
  raid_queue_free(j->q);
  return NULL;
}

/* Walk the whole array in PREFILL_BS pieces: write stamped data (WRITE) or
 * read it back and check the stamps.  Synchronous calls: this is not
 * timed.  0, or -1 after saying what went wrong. */
static int
walk(bool write)
{
  uint64_t size = raid_array_size(array), off, bad;
  uint8_t *buf;
  int r = 0;

  if (posix_memalign((void **)&buf, 4096, PREFILL_BS) != 0)
    abort();
  memset(buf, 0x5a, PREFILL_BS);
  for (off = 0; off < size && r == 0; off += PREFILL_BS) {
    size_t len = size - off < PREFILL_BS ? size - off : PREFILL_BS;

    if (write) {
      stamp(buf, len, off);
      r = raid_pwrite(array, buf, len, off, 0);
    }
    else {
      r = raid_pread(array, buf, len, off);
      if (r == 0 && (bad = stamp_check(buf, len, off)) != 0) {
        fprintf(stderr, "raid-bench: verify: the sector at array offset %" PRIu64
                " does not hold what was written there\n", bad - 1);
        r = -1;
        break;
      }
    }
    if (r < 0)
      fprintf(stderr, "raid-bench: %s at array offset %" PRIu64 ": %s\n",
              write ? "prefill" : "verify", off, raid_get_error());
  }
  free(buf);
  return r < 0 ? -1 : 0;
}

/* The redundancy check: copies and parity must agree with the data. */
static int
scrub(void)
{
  struct raid_sync_status st;

  if (raid_array_sync_start(array, RAID_SYNC_CHECK) < 0 ||
      raid_array_sync_wait(array) < 0) {
    fprintf(stderr, "raid-bench: verify: check: %s\n", raid_get_error());
    return -1;
  }
  raid_array_sync_status(array, &st);
  if (st.last_result != 0 || st.last_mismatches != 0) {
    fprintf(stderr, "raid-bench: verify: check found %" PRIu64 " mismatched sectors%s\n",
            st.last_mismatches, st.last_result ? " and stopped early" : "");
    return -1;
  }
  return 0;
}

/* An unsigned option argument in [MIN, MAX], or exit 2 naming the option. */
static unsigned
arg_uint(const char *opt, const char *s, unsigned min, unsigned max)
{
  char *end;
  unsigned long v;

  errno = 0;
  v = strtoul(s, &end, 10);
  if (errno || end == s || *end || *s == '-' || v < min || v > max) {
    fprintf(stderr, "raid-bench: --%s: '%s' is not a whole number from %u to %u\n",
            opt, s, min, max);
    exit(2);
  }
  return v;
}

static double
cpu_seconds(void)
{
  struct rusage ru;

  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
         ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

int
main(int argc, char **argv)
{
  static const struct option opts[] = {
    { "level", required_argument, NULL, 'l' },
    { "members", required_argument, NULL, 'n' },
    { "member-size", required_argument, NULL, 'm' },
    { "chunk", required_argument, NULL, 'c' },
    { "bs", required_argument, NULL, 'b' },
    { "rw", required_argument, NULL, 'w' },
    { "qd", required_argument, NULL, 'q' },
    { "threads", required_argument, NULL, 't' },
    { "seconds", required_argument, NULL, 's' },
    { "ram", no_argument, NULL, 'R' },
    { "dir", required_argument, NULL, 'd' },
    { "sim", required_argument, NULL, 'S' },
    { "no-prefill", no_argument, NULL, 'P' },
    { "verify", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
  };
  static const char *const rws[] = { "read", "write", "randread", "randwrite", "randrw" };
  struct raid_config cfg = { .name = "bench", .level = 0, .layout = RAID_LAYOUT_DEFAULT };
  struct raid_member *members[RAID_MAX_MEMBERS] = { NULL };
  unsigned n = 4, msize = 256, nthreads = 1, i;
  const char *dir = NULL, *sim = NULL;
  bool prefill = true, verify = false;
  struct job *jobs;
  struct timespec t0, t1;
  uint64_t ops = 0;
  double secs, cpu0, cpu1;
  char *end;
  int c, st = 0;

  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case 'l': cfg.level = arg_uint("level", optarg, 0, 10); break;
    case 'n': n = arg_uint("members", optarg, 1, RAID_MAX_MEMBERS); break;
    case 'm': msize = arg_uint("member-size", optarg, 1, 1u << 20); break;
    case 'c': cfg.chunk_size = arg_uint("chunk", optarg, 4, 1u << 20) * 1024u; break;
    case 'b': bs = arg_uint("bs", optarg, 512, 64u << 20); break;
    case 'w': rw = optarg; break;
    case 'q': qd = arg_uint("qd", optarg, 1, 4096); break;
    case 't': nthreads = arg_uint("threads", optarg, 1, 256); break;
    case 's':
      seconds = strtod(optarg, &end);
      if (end == optarg || *end || !(seconds > 0 && seconds <= 86400)) {
        fprintf(stderr, "raid-bench: --seconds: '%s' is not a time from 0 to 86400 seconds\n", optarg);
        return 2;
      }
      break;
    case 'R': dir = NULL; sim = NULL; break;
    case 'd': dir = optarg; break;
    case 'S': sim = optarg; break;
    case 'P': prefill = false; break;
    case 'V': verify = true; break;
    default:
      fprintf(stderr, "raid-bench: see the comment at the top of bench/raid-bench.c\n");
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "raid-bench: unexpected argument '%s'\n", argv[optind]);
    return 2;
  }
  for (i = 0; i < sizeof rws / sizeof *rws && strcmp(rw, rws[i]) != 0; i++)
    ;
  if (i == sizeof rws / sizeof *rws) {
    fprintf(stderr, "raid-bench: --rw: '%s' is not read, write, randread, randwrite or randrw\n", rw);
    return 2;
  }
  if (bs % 512) {
    fprintf(stderr, "raid-bench: --bs: %u is not a multiple of 512 bytes\n", bs);
    return 2;
  }
  if (sim && !dir) {
    fprintf(stderr, "raid-bench: --sim needs --dir (where the drives' stores go)\n");
    return 2;
  }
  if (verify && !prefill) {
    fprintf(stderr, "raid-bench: --verify needs the prefill (every sector stamped)\n");
    return 2;
  }
  cfg.raid_disks = n;
  for (i = 0; i < n; i++) {
    char name[4096];
    int r;

    if (dir) {
      int fd;
      snprintf(name, sizeof name, "%s/bench%u.img", dir, i);
      fd = open(name, O_RDWR | O_CREAT, 0600);
      if (fd < 0 || ftruncate(fd, (off_t)msize << 20) < 0) {
        fprintf(stderr, "raid-bench: %s: %s\n", name, strerror(errno));
        return 1;
      }
      close(fd);
      if (sim)
        snprintf(name, sizeof name, "sim:%s/bench%u.img%s%s", dir, i, *sim ? "?" : "", sim);
      r = raid_member_open(name, 0, &members[i]);
    }
    else {
      snprintf(name, sizeof name, "ram%u", i);
      r = raid_member_new_ram(name, (uint64_t)msize << 20, &members[i]);
    }
    if (r < 0) {
      fprintf(stderr, "raid-bench: %s\n", raid_get_error());
      return 1;
    }
  }
  if (raid_array_new(&cfg, members, &array) < 0) {
    fprintf(stderr, "raid-bench: %s\n", raid_get_error());
    return 1;
  }
  if (raid_array_size(array) / bs == 0) {
    fprintf(stderr, "raid-bench: --bs %u is larger than the array\n", bs);
    return 2;
  }
  if (prefill && walk(true) < 0)
    return 1;

  jobs = calloc(nthreads, sizeof *jobs);
  if (jobs == NULL)
    abort();
  cpu0 = cpu_seconds();
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (i = 0; i < nthreads; i++) {
    jobs[i].rng = 12345 + i;
    jobs[i].next_seq = (raid_array_size(array) / bs) / nthreads * i;
    pthread_create(&jobs[i].thread, NULL, run, &jobs[i]);
  }
  usleep((useconds_t)(seconds * 1e6));
  stop = true;
  for (i = 0; i < nthreads; i++) {
    pthread_join(jobs[i].thread, NULL);
    ops += jobs[i].ops;
    if (jobs[i].errors)
      st = 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  cpu1 = cpu_seconds();
  secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  if (verify && st == 0 &&
      (walk(false) < 0 || (cfg.level != 0 && scrub() < 0)))
    st = 1;
  printf("raid%d members=%u %s bs=%u %s qd=%u threads=%u: %.0f IOPS, %.1f MiB/s, "
         "%.2f us CPU per I/O%s\n",
         cfg.level, n, sim ? "sim" : dir ? "file" : "ram", bs, rw, qd, nthreads,
         ops / secs, ops * (double)bs / secs / 1048576,
         ops ? (cpu1 - cpu0) * 1e6 / ops : 0.0,
         verify ? (st == 0 ? ", verified" : ", VERIFY FAILED") : "");
  free(jobs);
  raid_array_free(array);
  return st;
}
