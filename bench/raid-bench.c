/* raid-bench: library-level throughput of an array, without any server in
 * the way: what the RAID path itself costs.
 *
 *   raid-bench [--level L] [--members N] [--member-size MiB] [--chunk KiB]
 *              [--bs BYTES] [--rw read|write|randread|randwrite|randrw]
 *              [--qd N] [--threads N] [--seconds S] [--ram | --dir DIR]
 *
 * Each thread has its own queue and keeps QD requests in flight for the
 * given time.  Members are RAM by default (CPU cost of the RAID path) or
 * files in DIR.  Prints one line: configuration, IOPS, MiB/s.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <raid/raid.h>

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

static void issue(struct slot *s);

static void
done(void *opaque, int result)
{
  struct slot *s = opaque;

  s->job->in_flight--;
  if (result < 0 && s->job->errors++ == 0)
    fprintf(stderr, "raid-bench: %s\n", raid_get_error());
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

  if (raid_queue_new(qd * 8, &j->q) < 0) {
    fprintf(stderr, "raid-bench: %s\n", raid_get_error());
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
    { NULL, 0, NULL, 0 },
  };
  struct raid_config cfg = { .name = "bench", .level = 0, .layout = RAID_LAYOUT_DEFAULT };
  struct raid_member *members[RAID_MAX_MEMBERS] = { NULL };
  unsigned n = 4, msize = 256, nthreads = 1, i;
  const char *dir = NULL;
  struct job *jobs;
  struct timespec t0, t1;
  uint64_t ops = 0;
  double secs;
  int c;

  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case 'l': cfg.level = atoi(optarg); break;
    case 'n': n = atoi(optarg); break;
    case 'm': msize = atoi(optarg); break;
    case 'c': cfg.chunk_size = atoi(optarg) * 1024u; break;
    case 'b': bs = atoi(optarg); break;
    case 'w': rw = optarg; break;
    case 'q': qd = atoi(optarg); break;
    case 't': nthreads = atoi(optarg); break;
    case 's': seconds = atof(optarg); break;
    case 'R': dir = NULL; break;
    case 'd': dir = optarg; break;
    default:
      fprintf(stderr, "raid-bench: see the comment at the top of bench/raid-bench.c\n");
      return 2;
    }
  }
  if (n < 1 || n > RAID_MAX_MEMBERS || qd < 1 || nthreads < 1 || bs < 512) {
    fprintf(stderr, "raid-bench: bad arguments\n");
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

  jobs = calloc(nthreads, sizeof *jobs);
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
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  printf("raid%d members=%u %s bs=%u %s qd=%u threads=%u: %.0f IOPS, %.1f MiB/s\n",
         cfg.level, n, dir ? "file" : "ram", bs, rw, qd, nthreads,
         ops / secs, ops * (double)bs / secs / 1048576);
  for (i = 0; i < nthreads; i++)
    if (jobs[i].errors)
      return 1;
  free(jobs);
  raid_array_free(array);
  return 0;
}
