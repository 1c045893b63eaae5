/* raid6-check: libraid's RAID 6 against md's own arrays
 * (tests/test-vm-raid6.sh).
 *
 *   raid6-check pattern SIZE FILE
 *     FILE gets SIZE bytes (a multiple of 512) of a pattern that names
 *     each 512-byte sector: its number in the first 8 bytes (little
 *     endian), then bytes drawn from it.
 *   raid6-check verify MEMBER...
 *     MEMBER... are the member files of an md RAID 6 (any order: their
 *     superblocks give the roles, the layout, the chunk, the data offset
 *     and size) that md made and filled with the pattern.  Every data
 *     chunk must be where geo_raid6_map() puts it (each sector naming the
 *     array sector it is), and every stripe's P and Q what raid6_gen()
 *     makes of its data in geo_raid6_slot()'s order.
 *
 * Exit 0 when all of it holds, 1 naming the first stripe that does not,
 * 2 on bad usage or unreadable input.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "raid/levels.h"
#include "raid/raid6.h"

#define MAXM 32

/* The pattern of array sector S into P (512 bytes). */
static void
pattern(uint64_t s, uint8_t *p)
{
  uint64_t x = s * UINT64_C(0x9e3779b97f4a7c15) + 1;
  unsigned i;

  memcpy(p, &s, 8);
  for (i = 8; i < 512; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = (uint8_t)x;
  }
}

static int
write_pattern(uint64_t size, const char *path)
{
  uint8_t buf[512];
  FILE *f = fopen(path, "wb");
  uint64_t s;

  if (f == NULL) {
    perror(path);
    return 2;
  }
  for (s = 0; s < size / 512; s++) {
    pattern(s, buf);
    if (fwrite(buf, 512, 1, f) != 1) {
      perror(path);
      fclose(f);
      return 2;
    }
  }
  return fclose(f) == 0 ? 0 : 2;
}

struct member {
  int fd;
  const char *path;
  struct raid_superblock sb;
};

static int
read_at(const struct member *m, void *buf, size_t len, uint64_t off)
{
  ssize_t n = pread(m->fd, buf, len, (off_t)off);

  if (n != (ssize_t)len) {
    fprintf(stderr, "raid6-check: %s: short read at %" PRIu64 "\n", m->path, off);
    return -1;
  }
  return 0;
}

/* Stripe ST of the N members (by role) of CHUNK bytes: data where the
 * map puts it, P and Q as raid6_gen() makes them.  0, 1 (a mismatch,
 * said), -1 (I/O). */
static int
check_stripe(struct member **role, unsigned n, int layout, uint32_t chunk, uint64_t st,
             uint8_t **buf, uint8_t *p, uint8_t *q)
{
  void *blocks[MAXM];
  unsigned cs = chunk / 512, i, k, pd, qd;
  uint8_t want[512];

  for (i = 0; i < n; i++)
    if (read_at(role[i], buf[i], chunk, role[i]->sb.data_offset * 512 + st * chunk) < 0)
      return -1;
  for (i = 0; i < n - 2; i++) {
    struct raid6_map m;
    uint64_t first = (st * (n - 2) + i) * cs;

    geo_raid6_map(layout, n, cs, first, &m);
    for (k = 0; k < cs; k++) {
      pattern(first + k, want);
      if (memcmp(buf[m.dd_idx] + (size_t)k * 512, want, 512) != 0) {
        uint64_t got;

        memcpy(&got, buf[m.dd_idx] + (size_t)k * 512, 8);
        fprintf(stderr, "raid6-check: layout %d stripe %" PRIu64 ": array sector %" PRIu64
                " is not on disk %u at sector %u of the stripe (it holds sector %" PRIu64
                ")\n", layout, st, first + k, m.dd_idx, k, got);
        return 1;
      }
    }
    blocks[m.slot] = buf[m.dd_idx];
  }
  geo_raid6_pq(layout, n, st, &pd, &qd);
  blocks[n - 2] = p;
  blocks[n - 1] = q;
  if (raid6_gen(blocks, n - 2, chunk) < 0) {
    fprintf(stderr, "raid6-check: %s\n", raid_get_error());
    return -1;
  }
  if (memcmp(p, buf[pd], chunk) != 0 || memcmp(q, buf[qd], chunk) != 0) {
    fprintf(stderr, "raid6-check: layout %d stripe %" PRIu64 ": md's %s on disk %u is "
            "not libraid's\n", layout, st, memcmp(p, buf[pd], chunk) ? "P" : "Q",
            memcmp(p, buf[pd], chunk) ? pd : qd);
    return 1;
  }
  return 0;
}

static int
verify(int argc, char **argv)
{
  struct member mem[MAXM], *role[MAXM] = { 0 };
  unsigned n = (unsigned)argc, i, chunk;
  uint8_t *buf[MAXM], *p, *q;
  uint64_t st, stripes;
  int r = 0;

  if (n < 4 || n > MAXM) {
    fprintf(stderr, "raid6-check: verify: 4 to %u members\n", MAXM);
    return 2;
  }
  for (i = 0; i < n; i++) {
    unsigned rl;

    mem[i].path = argv[i];
    if (raid_superblock_read_path(argv[i], 0, &mem[i].sb) < 0) {
      fprintf(stderr, "raid6-check: %s\n", raid_get_error());
      return 2;
    }
    rl = mem[i].sb.dev_roles[mem[i].sb.dev_number];
    if (mem[i].sb.level != 6 || mem[i].sb.raid_disks != n || rl >= n || role[rl]) {
      fprintf(stderr, "raid6-check: %s: level %d, %u disks, role %u: not member %u of a "
              "RAID 6 of %u\n", argv[i], mem[i].sb.level, mem[i].sb.raid_disks, rl, i, n);
      return 2;
    }
    if ((mem[i].fd = open(argv[i], O_RDONLY)) < 0) {
      perror(argv[i]);
      return 2;
    }
    role[rl] = &mem[i];
  }
  chunk = mem[0].sb.chunksize * 512;
  stripes = mem[0].sb.size / mem[0].sb.chunksize;
  /* Aligned: raid6_gen() takes ISA-L's pq_gen(). */
  p = raid_buf_alloc(chunk);
  q = raid_buf_alloc(chunk);
  for (i = 0; i < n; i++)
    buf[i] = raid_buf_alloc(chunk);
  if (p == NULL || q == NULL) {
    fprintf(stderr, "raid6-check: out of memory\n");
    return 2;
  }
  for (st = 0; st < stripes && r == 0; st++)
    r = check_stripe(role, n, (int)mem[0].sb.layout, chunk, st, buf, p, q);
  if (r == 0)
    printf("raid6-check: layout %u over %u members, %u KiB chunks: %" PRIu64 " stripes, "
           "every data chunk where libraid maps it, every P and Q libraid's\n",
           mem[0].sb.layout, n, chunk >> 10, stripes);
  for (i = 0; i < n; i++) {
    raid_buf_free(buf[i]);
    close(mem[i].fd);
  }
  raid_buf_free(p);
  raid_buf_free(q);
  return r < 0 ? 2 : r;
}

int
main(int argc, char **argv)
{
  if (argc == 4 && strcmp(argv[1], "pattern") == 0)
    return write_pattern(strtoull(argv[2], NULL, 0), argv[3]);
  if (argc >= 2 && strcmp(argv[1], "verify") == 0)
    return verify(argc - 2, argv + 2);
  fprintf(stderr, "usage: raid6-check pattern SIZE FILE | verify MEMBER...\n");
  return 2;
}
