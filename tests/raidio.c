/* raidio: move bytes in and out of an array assembled from its members'
 * md superblocks, for the interoperability tests (tests/vm/).
 *
 *   raidio read OUT MEMBER...    assemble, write the array's contents to OUT
 *   raidio write IN MEMBER...    assemble, write IN at offset 0, flush
 *   raidio size MEMBER...        print the array's size in bytes
 *
 * Assembly uses RAID_ASSEMBLE_RUN, so a degraded array starts too. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <raid/raid.h>

#define BUFSZ (4u << 20)

static void
die(const char *what)
{
  fprintf(stderr, "raidio: %s: %s\n", what, raid_get_error());
  exit(1);
}

/* Write everything, also to a pipe someone left non-blocking. */
static int
write_all(int fd, const uint8_t *p, size_t len)
{
  while (len) {
    ssize_t w = write(fd, p, len);

    if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
      struct pollfd pfd = { .fd = fd, .events = POLLOUT };
      poll(&pfd, 1, -1);
      continue;
    }
    if (w <= 0)
      return -1;
    p += w;
    len -= w;
  }
  return 0;
}

int
main(int argc, char **argv)
{
  struct raid_member *m[RAID_MAX_MEMBERS];
  struct raid_array *a;
  uint64_t pos = 0, size;
  uint8_t *buf;
  int i, n, fd = -1;

  if (argc < 3 || (strcmp(argv[1], "size") != 0 && argc < 4)) {
    fprintf(stderr, "usage: raidio read OUT|write IN|size MEMBER...\n");
    return 2;
  }
  i = strcmp(argv[1], "size") == 0 ? 2 : 3;
  for (n = 0; i < argc; i++, n++)
    if (raid_member_open(argv[i], 0, &m[n]) < 0)
      die(argv[i]);
  if (raid_array_assemble(NULL, m, n, RAID_ASSEMBLE_RUN, &a) < 0)
    die("assemble");
  size = raid_array_size(a);
  if (strcmp(argv[1], "size") == 0) {
    printf("%" PRIu64 "\n", size);
    raid_array_free(a);
    return 0;
  }
  if (posix_memalign((void **)&buf, 4096, BUFSZ) != 0)
    return 1;
  if (strcmp(argv[1], "read") == 0) {
    fd = strcmp(argv[2], "-") == 0 ? 1 : open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      perror(argv[2]);
      return 1;
    }
    for (; pos < size; pos += BUFSZ) {
      size_t len = size - pos < BUFSZ ? size - pos : BUFSZ;
      if (raid_pread(a, buf, len, pos) < 0)
        die("read");
      if (write_all(fd, buf, len) < 0) {
        perror("write");
        return 1;
      }
    }
  }
  else if (strcmp(argv[1], "write") == 0) {
    ssize_t got;

    fd = open(argv[2], O_RDONLY);
    if (fd < 0) {
      perror(argv[2]);
      return 1;
    }
    while (pos < size && (got = read(fd, buf, BUFSZ)) > 0) {
      size_t len = (got + 511) / 512 * 512;
      memset(buf + got, 0, len - got);
      if (len > size - pos)
        len = size - pos;
      if (raid_pwrite(a, buf, len, pos, 0) < 0)
        die("write");
      pos += len;
    }
    if (raid_flush(a) < 0)
      die("flush");
  }
  else {
    fprintf(stderr, "raidio: unknown verb %s\n", argv[1]);
    return 2;
  }
  if (fd > 1)
    close(fd);
  free(buf);
  raid_array_free(a);
  return 0;
}
