/* Description: libFuzzer target for raidd's NBD server (built and run by
 * tests/test-raidd-fuzz-nbd.sh): the handshake (raidd/nbd-handshake.c) and
 * the transmission phase (raidd/nbd-request.c, nbd-conn.c, nbd-worker.c)
 * fed an arbitrary client stream.
 *
 * Input: the bytes a client sends, from its first (the client flags) to
 * its last; then the client half-closes.  A client thread writes them into
 * one end of a socketpair while reading and discarding whatever the server
 * answers; the server end runs nbd_handshake() and, when a client reached
 * the transmission phase, nbd_conn_serve_here() on the fuzzing thread until
 * the connection closes.  Exports: "md0", RAID 5 over four 256 KiB RAM
 * members with 4 KiB chunks (768 KiB), and "ro", a read-only RAID 1 (so
 * that reads, even maximal ones, stay cheap).
 * Properties: nothing crashes, hangs, leaks or reads out of bounds (ASan,
 * UBSan); every connection ends with its export reference dropped and its
 * connection count back to zero.
 *
 * Built with -DFUZZ_MAKE_SEED instead, it is a program writing seeds (whole
 * client sessions) into the directory named by its argument.
 */
#include <config.h>

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "nbd-internal.h"
#include "nbd-proto.h"

#define CHECK(cond) \
  do { \
    if (!(cond)) { \
      fprintf(stderr, "fuzz-nbd: %s:%d: %s failed\n", __FILE__, __LINE__, #cond); \
      abort(); \
    } \
  } while (0)

#ifndef FUZZ_MAKE_SEED

/* ---- the parts of raidd the server uses, over RAM arrays ---------------- */

struct export {
  const char *name;
  struct raid_array *a;
  bool ro;
  int refs;
  int conns;
};
static struct export exports[2] = { { .name = "md0" }, { .name = "ro", .ro = true } };
static struct raid_queue *queue;

void log_init(enum log_mode mode, bool foreground, int verbose) { }
void
log_msg(int priority, const char *fmt, ...)
{
  static int verbose = -1;

  if (verbose < 0)
    verbose = getenv("FUZZ_VERBOSE") != NULL;
  if (verbose) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
  }
}
struct export *
export_get(const char *name)
{
  for (unsigned i = 0; i < 2; i++)
    if (strcmp(exports[i].name, name) == 0) {
      exports[i].refs++;
      return &exports[i];
    }
  return NULL;
}
void export_put(struct export *e) { CHECK(--e->refs >= 0); }
struct raid_array *export_array(const struct export *e) { return e->a; }
const char *export_name(const struct export *e) { return e->name; }
const char *export_description(const struct export *e) { return e->ro ? "" : "raid5 fuzz"; }
bool export_readonly(const struct export *e) { return e->ro; }
void
exports_foreach(void (*fn)(struct export *e, void *opaque), void *opaque)
{
  for (unsigned i = 0; i < 2; i++)
    fn(&exports[i], opaque);
}
void export_conn_add(struct export *e, int delta) { CHECK((e->conns += delta) >= 0); }
int export_conns(const struct export *e) { return e->conns; }
bool nbd_server_stopping(void) { return false; }

static struct raid_array *
make_array(const char *name, int level, unsigned n, uint64_t size)
{
  struct raid_config cfg = {
    .name = name, .level = level, .layout = RAID_LAYOUT_DEFAULT,
    .chunk_size = 4096, .raid_disks = n,
  };
  struct raid_member *m[4];
  struct raid_array *a;

  for (unsigned i = 0; i < n; i++)
    CHECK(raid_member_new_ram(name, size, &m[i]) == 0);
  CHECK(raid_array_new(&cfg, m, &a) == 0);
  return a;
}

static void
setup(void)
{
  raid_set_log_handler(NULL, NULL, 0);
  exports[0].a = make_array("md0", RAID_LEVEL_5, 4, 256 << 10);
  exports[1].a = make_array("ro", RAID_LEVEL_1, 2, 64 << 10);
  CHECK(raid_queue_new(64, &queue) == 0);
}

/* ---- the client ------------------------------------------------------------ */

struct client {
  int fd;
  const uint8_t *data;
  size_t size;
};

/* Write the input while draining the answers, so that neither side can
 * block the other; half-close after the input, read until EOF. */
static void *
client_main(void *p)
{
  struct client *cl = p;
  size_t done = 0;
  static char sink[1 << 16];

  if (cl->size == 0)
    shutdown(cl->fd, SHUT_WR);
  for (;;) {
    struct pollfd pfd = { .fd = cl->fd, .events = POLLIN };
    ssize_t n;

    if (done < cl->size)
      pfd.events |= POLLOUT;
    if (poll(&pfd, 1, -1) < 0)
      continue;
    if (pfd.revents & POLLIN) {
      n = recv(cl->fd, sink, sizeof sink, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
        break;
    }
    else if (pfd.revents & (POLLHUP | POLLERR)) {
      break;
    }
    if (done < cl->size && (pfd.revents & POLLOUT)) {
      n = send(cl->fd, cl->data + done, cl->size - done, MSG_NOSIGNAL);
      if (n > 0 && (done += n) == cl->size)
        shutdown(cl->fd, SHUT_WR);
      else if (n < 0 && errno != EAGAIN && errno != EINTR)
        break;              /* the server closed: the rest is not read */
    }
  }
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct client cl = { .data = data, .size = size };
  struct nbd_client c;
  pthread_t t;
  int sv[2];

  if (queue == NULL)
    setup();
  CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0);
  cl.fd = sv[1];
  CHECK(pthread_create(&t, NULL, client_main, &cl) == 0);

  if (nbd_handshake(sv[0], "fuzz client", &c) == 0) {
    CHECK(c.fd == sv[0] && c.exp != NULL);
    nbd_conn_serve_here(queue, &c);      /* closes sv[0] */
  }
  else
    close(sv[0]);
  pthread_join(t, NULL);
  close(sv[1]);

  for (unsigned i = 0; i < 2; i++) {
    CHECK(exports[i].refs == 0);
    CHECK(exports[i].conns == 0);
  }
  CHECK(raid_queue_in_flight(queue) == 0);
  return 0;
}

#else /* FUZZ_MAKE_SEED */

/* ---- seeds: whole client sessions ------------------------------------------- */

static uint8_t buf[1 << 20];
static size_t len;

static void put(const void *p, size_t n) { CHECK(len + n <= sizeof buf); memcpy(buf + len, p, n); len += n; }
static void put16(uint16_t v) { v = htobe16(v); put(&v, 2); }
static void put32(uint32_t v) { v = htobe32(v); put(&v, 4); }
static void put64(uint64_t v) { v = htobe64(v); put(&v, 8); }

static void
option(uint32_t opt, const void *data, uint32_t n)
{
  put64(NBD_IHAVEOPT);
  put32(opt);
  put32(n);
  put(data, n);
}

static void
go(uint32_t opt, const char *name)
{
  uint8_t d[64];
  uint32_t n = strlen(name), be = htobe32(n);
  uint16_t infos[3] = { htobe16(NBD_INFO_NAME), htobe16(NBD_INFO_DESCRIPTION),
                        htobe16(NBD_INFO_BLOCK_SIZE) }, ni = htobe16(3);

  memcpy(d, &be, 4);
  memcpy(d + 4, name, n);
  memcpy(d + 4 + n, &ni, 2);
  memcpy(d + 6 + n, infos, 6);
  option(opt, d, 12 + n);
}

static void
request(uint16_t flags, uint16_t type, uint64_t cookie, uint64_t off, uint32_t count)
{
  put32(NBD_REQUEST_MAGIC);
  put16(flags);
  put16(type);
  put64(cookie);
  put64(off);
  put32(count);
  if (type == NBD_CMD_WRITE)
    for (uint32_t i = 0; i < count; i++)
      buf[len++] = (uint8_t)(i * 7 + cookie);
}

static void
transmission(void)
{
  request(0, NBD_CMD_WRITE, 1, 0, 4096);
  request(NBD_CMD_FLAG_FUA, NBD_CMD_WRITE, 2, 8192, 12288);
  request(0, NBD_CMD_READ, 3, 0, 16384);
  request(0, NBD_CMD_FLUSH, 4, 0, 0);
  request(NBD_CMD_FLAG_FUA, NBD_CMD_TRIM, 5, 4096, 4096);
  request(NBD_CMD_FLAG_NO_HOLE, NBD_CMD_WRITE_ZEROES, 6, 65536, 65536);
  request(0, NBD_CMD_CACHE, 7, 0, 4096);
  request(0, NBD_CMD_READ, 8, 786432 - 512, 1024);   /* beyond the end */
  request(0, NBD_CMD_WRITE, 9, 100, 512);            /* misaligned */
  request(0, NBD_CMD_DISC, 10, 0, 0);
}

static void
save(const char *dir, const char *name)
{
  char path[4096];
  FILE *f;

  snprintf(path, sizeof path, "%s/%s", dir, name);
  CHECK((f = fopen(path, "wb")) != NULL);
  CHECK(fwrite(buf, 1, len, f) == len);
  CHECK(fclose(f) == 0);
  len = 0;
}

int
main(int argc, char **argv)
{
  const char *dir = argc > 1 ? argv[1] : ".";

  /* GO with structured replies. */
  put32(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
  option(NBD_OPT_STRUCTURED_REPLY, NULL, 0);
  option(NBD_OPT_LIST, NULL, 0);
  go(NBD_OPT_INFO, "ro");
  go(NBD_OPT_GO, "md0");
  transmission();
  save(dir, "go-structured");

  /* EXPORT_NAME, simple replies. */
  put32(NBD_FLAG_C_FIXED_NEWSTYLE);
  option(NBD_OPT_EXPORT_NAME, "md0", 3);
  transmission();
  save(dir, "export-name-simple");

  /* The read-only export, and options refused along the way. */
  put32(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
  option(99, "x", 1);
  option(NBD_OPT_SET_META_CONTEXT, "\0\0\0\0\0\0\0\0", 8);
  go(NBD_OPT_GO, "nosuch");
  go(NBD_OPT_GO, "ro");
  request(0, NBD_CMD_WRITE, 1, 0, 512);
  request(0, NBD_CMD_READ, 2, 0, 65536);
  request(0, NBD_CMD_DISC, 3, 0, 0);
  save(dir, "readonly");

  /* Abort. */
  put32(NBD_FLAG_C_FIXED_NEWSTYLE);
  option(NBD_OPT_ABORT, NULL, 0);
  save(dir, "abort");
  return 0;
}

#endif /* FUZZ_MAKE_SEED */
