/* raid-demo: the library's own demonstration, an example that uses only
 * the public API (<raid/raid.h>, linked with libraid).
 *
 *   raid-demo [--level L] [--members N] [--size MiB] DIR
 *
 * Creates N member files in DIR, assembles an array over them (RAID 5 over
 * 4 by default), writes the whole array with random data through the
 * asynchronous API (32 requests in flight), reads it back and compares,
 * fails one member (when the level has redundancy), reads everything again
 * degraded, and prints what it measured.  Exit status 0 when every byte
 * came back as written.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <raid/raid.h>

#define IO_SIZE (256u << 10)
#define QD 32

struct slot {
  uint8_t *buf;
  uint8_t *expect;
  uint64_t offset;
  size_t len;
  bool busy, verify;
  uint64_t salt;
  int *errors;
};

static double
now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Deterministic contents: every 8 bytes hold their own offset, salted. */
static void
fill(uint8_t *buf, uint64_t offset, size_t len, uint64_t salt)
{
  size_t i;
  for (i = 0; i < len; i += 8) {
    uint64_t v = (offset + i) * 0x9e3779b97f4a7c15ull ^ salt;
    memcpy(buf + i, &v, 8);
  }
}

static void
done(void *opaque, int result)
{
  struct slot *s = opaque;

  s->busy = false;
  if (result < 0) {
    fprintf(stderr, "raid-demo: I/O at %" PRIu64 " failed: %s\n", s->offset,
            raid_get_error());
    (*s->errors)++;
  }
  else if (s->verify) {
    fill(s->expect, s->offset, s->len, s->salt);
    if (memcmp(s->expect, s->buf, s->len) != 0) {
      fprintf(stderr, "raid-demo: data at %" PRIu64 " read back wrong\n", s->offset);
      (*s->errors)++;
    }
  }
}

/* Write (or read and check) the whole array with QD requests in flight. */
static int
pass(struct raid_queue *q, struct raid_array *a, bool write, uint64_t salt,
     double *secs)
{
  struct slot slots[QD];
  uint64_t size = raid_array_size(a), next = 0;
  int errors = 0, r;
  unsigned i, busy;
  double t0 = now();

  for (i = 0; i < QD; i++) {
    if (posix_memalign((void **)&slots[i].buf, 4096, IO_SIZE) != 0 ||
        (slots[i].expect = malloc(IO_SIZE)) == NULL)
      abort();
    slots[i].busy = false;
    slots[i].verify = !write;
    slots[i].salt = salt;
    slots[i].errors = &errors;
  }
  do {
    busy = 0;
    for (i = 0; i < QD; i++) {
      struct slot *s = &slots[i];

      if (!s->busy && next < size) {
        s->offset = next;
        s->len = size - next < IO_SIZE ? size - next : IO_SIZE;
        s->busy = true;
        if (write) {
          fill(s->buf, next, s->len, salt);
          r = raid_aio_write(q, a, s->buf, s->len, next, 0, done, s);
        }
        else
          r = raid_aio_read(q, a, s->buf, s->len, next, done, s);
        if (r < 0) {
          fprintf(stderr, "raid-demo: %s\n", raid_get_error());
          return -1;
        }
        next += s->len;
      }
      busy += s->busy;
    }
    if (busy && raid_queue_run(q, 1) < 0) {
      fprintf(stderr, "raid-demo: %s\n", raid_get_error());
      return -1;
    }
  } while (busy);
  *secs = now() - t0;
  for (i = 0; i < QD; i++) {
    free(slots[i].buf);
    free(slots[i].expect);
  }
  return errors ? -1 : 0;
}

static void
usage(FILE *f)
{
  fprintf(f, "usage: raid-demo [--level 0|1|5|10] [--members N] [--size MiB] DIR\n");
}

int
main(int argc, char **argv)
{
  static const struct option opts[] = {
    { "level", required_argument, NULL, 'l' },
    { "members", required_argument, NULL, 'n' },
    { "size", required_argument, NULL, 's' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  struct raid_config cfg = { .name = "demo", .level = 5, .layout = RAID_LAYOUT_DEFAULT };
  struct raid_member *members[RAID_MAX_MEMBERS] = { NULL };
  struct raid_array *a;
  struct raid_queue *q;
  unsigned n = 4, mib = 64, i;
  double secs;
  int c;

  while ((c = getopt_long(argc, argv, "l:n:s:h", opts, NULL)) != -1) {
    switch (c) {
    case 'l': cfg.level = atoi(optarg); break;
    case 'n': n = atoi(optarg); break;
    case 's': mib = atoi(optarg); break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind + 1 != argc || n < 1 || n > RAID_MAX_MEMBERS || mib < 1) {
    usage(stderr);
    return 2;
  }
  cfg.raid_disks = n;

  for (i = 0; i < n; i++) {
    char path[4096];
    int fd;

    snprintf(path, sizeof path, "%s/member%u.img", argv[optind], i);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)mib << 20) < 0) {
      fprintf(stderr, "raid-demo: %s: %s\n", path, strerror(errno));
      return 1;
    }
    close(fd);
    if (raid_member_open(path, 0, &members[i]) < 0) {
      fprintf(stderr, "raid-demo: %s\n", raid_get_error());
      return 1;
    }
    printf("member %u: %s (%s, %s I/O)\n", i, path, raid_member_kind(members[i]),
           raid_member_is_direct(members[i]) ? "direct" : "buffered");
  }
  if (raid_array_new(&cfg, members, &a) < 0) {
    fprintf(stderr, "raid-demo: %s\n", raid_get_error());
    return 1;
  }
  if (raid_queue_new(256, &q) < 0) {
    fprintf(stderr, "raid-demo: %s\n", raid_get_error());
    return 1;
  }
  printf("array %s: raid%d over %u members, chunk %u KiB, %" PRIu64 " MiB\n",
         raid_array_name(a), raid_array_level(a), n,
         raid_array_chunk_size(a) >> 10, raid_array_size(a) >> 20);

  if (pass(q, a, true, 1, &secs) < 0)
    return 1;
  printf("write: %.0f MiB/s\n", (raid_array_size(a) >> 20) / secs);
  if (raid_flush(a) < 0) {
    fprintf(stderr, "raid-demo: flush: %s\n", raid_get_error());
    return 1;
  }
  if (pass(q, a, false, 1, &secs) < 0)
    return 1;
  printf("read and verify: %.0f MiB/s, all data correct\n",
         (raid_array_size(a) >> 20) / secs);
  if (cfg.level != RAID_LEVEL_0) {
    raid_set_log_handler(NULL, NULL, RAID_LOG_WARNING);
    if (raid_array_fail_member(a, n - 1) < 0)
      return 1;
    if (pass(q, a, false, 1, &secs) < 0)
      return 1;
    printf("member %u failed; degraded read and verify: %.0f MiB/s, all data correct\n",
           n - 1, (raid_array_size(a) >> 20) / secs);
  }
  raid_queue_free(q);
  raid_array_free(a);
  return 0;
}
