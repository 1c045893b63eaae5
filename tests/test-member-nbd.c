/* Description: the NBD member back-end (lib/member/nbd.c) against real
 * nbdkit servers the test starts on Unix sockets (each stopped by its PID):
 * round trips of every op on the memory and file plugins, several
 * connections with multi-conn and one without; a server without FUA or
 * write zeroes (the fua and nozero filters); a server's 4096-byte minimum
 * block size; a server error that fails one request and not the member;
 * a server killed (the member lost, every later I/O failing at once) and a
 * server that stops answering (the timeout); a server that replies to a
 * request never sent (tests/nbd-liar.py); nbdkit's noparallel filter;
 * qemu-nbd as the server; and the open errors: no such
 * socket, a wrong export name, a read-only export opened for writing, a
 * bad parameter, a URI that libnbd refuses.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <check.h>

#include "internal.h"
#include "member-io.h"

/* A server: nbdkit ARGS on socket NAME.sock in the test's directory.
 * nbdkit forks into the background at once and writes its PID file when
 * its socket listens: the member can connect as soon as it is there. */
struct server {
  char sock[300], pidfile[300];
  pid_t pid;
};

/* S's socket and PID file, NAME.sock and NAME.pid in the test's
 * directory, neither there yet. */
static void
server_paths(struct server *s, const char *name)
{
  snprintf(s->sock, sizeof s->sock, "%s/%s.sock", vartmp_dir, name);
  snprintf(s->pidfile, sizeof s->pidfile, "%s/%s.pid", vartmp_dir, name);
  unlink(s->sock);
  unlink(s->pidfile);
  s->pid = 0;
}

/* Run CMD, which starts a server in the background that writes its PID
 * file once its socket listens, and wait for that file (10 s). */
static void
server_spawn(struct server *s, const char *cmd)
{
  FILE *f;
  int r, i;

  r = system(cmd);
  ck_assert_msg(r == 0, "%s: status %d", cmd, r);
  for (i = 0; i < 1000; i++) {
    if ((f = fopen(s->pidfile, "r")) != NULL) {
      r = fscanf(f, "%d", &s->pid);
      fclose(f);
      if (r == 1)
        return;
    }
    usleep(10000);
  }
  ck_abort_msg("%s: no PID file within 10 s", cmd);
}

static void
server_start(struct server *s, const char *name, const char *args)
{
  char cmd[4096];

  server_paths(s, name);
  snprintf(cmd, sizeof cmd, "nbdkit -U %s -P %s %s", s->sock, s->pidfile, args);
  server_spawn(s, cmd);
}

/* Whether PID is gone: no such process, or a zombie (nbdkit forked away
 * from us, so whoever reaps it may take its time). */
static bool
gone(pid_t pid)
{
  char path[64], buf[256], *p;
  FILE *f;
  bool z = true;

  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  if ((f = fopen(path, "r")) == NULL)
    return true;
  if (fgets(buf, sizeof buf, f) && (p = strrchr(buf, ')')) != NULL)
    z = p[1] == ' ' && p[2] == 'Z';
  fclose(f);
  return z;
}

static void
server_stop(struct server *s)
{
  int i;

  if (s->pid <= 0)
    return;
  kill(s->pid, SIGKILL);
  for (i = 0; i < 500 && !gone(s->pid); i++)
    usleep(10000);
  s->pid = 0;
}

/* The member's URI for server S, with extra query parameters EXTRA. */
static char *
uri_of(const struct server *s, const char *export, const char *extra)
{
  static char buf[600];

  snprintf(buf, sizeof buf, "nbd+unix:///%s?socket=%s%s%s", export, s->sock,
           extra ? "&" : "", extra ? extra : "");
  return buf;
}

START_TEST(test_memory)
{
  struct server s;
  struct raid_member *m;
  struct raid_queue *q = new_queue(64);

  server_start(&s, "mem", "memory 8M");
  ck_assert_int_eq(raid_member_open(uri_of(&s, "", NULL), 0, &m), 0);
  ck_assert_str_eq(raid_member_kind(m), "nbd");
  ck_assert_uint_eq(raid_member_size(m), 8 * MIB);
  ck_assert_uint_eq(raid_member_logical_block_size(m), 512);
  ck_assert_int_eq(raid_member_spec_is_remote(raid_member_name(m)), 1);
  ck_assert_int_eq(raid_member_spec_is_remote("nbds://h:10809/e"), 1);
  ck_assert_int_eq(raid_member_spec_is_remote("nbds+vsock://2/e"), 1);
  ck_assert_int_eq(raid_member_spec_is_remote("nbdx://h/e"), 0);
  ck_assert_int_eq(raid_member_spec_is_remote("nbd:/h/e"), 0);
  ck_assert_int_eq(raid_member_spec_is_remote("/var/tmp/nbd://x"), 0);
  exercise(q, m, 0);
  exercise(q, m, 1);            /* any buffer alignment will do */
  raid_member_close(m);
  server_stop(&s);
  raid_queue_free(q);
}
END_TEST

/* Many I/Os in flight at once, spread over several connections (the
 * memory plugin offers multi-conn) or one (connections=1), each checked. */
static void
many_in_flight(const char *extra)
{
  enum { N = 96, LEN = 8192 };
  struct server s;
  struct raid_member *m;
  struct raid_queue *q = new_queue(32);
  struct tio *t = calloc(N, sizeof *t);
  uint8_t *buf = raid_buf_alloc((size_t)N * LEN), *rd = raid_buf_alloc((size_t)N * LEN);
  unsigned i;

  server_start(&s, "many", "memory 4M");
  ck_assert_int_eq(raid_member_open(uri_of(&s, "", extra), 0, &m), 0);
  fill_pattern(buf, (size_t)N * LEN, 7);
  for (i = 0; i < N; i++)
    tio_start(q, m, &t[i], MOP_WRITE, buf + (size_t)i * LEN, (uint64_t)i * LEN, LEN,
              i % 5 == 0 ? MIO_FUA : 0);
  for (i = 0; i < N; i++) {
    tio_wait(q, &t[i]);
    ck_assert_int_eq(t[i].res, 0);
  }
  ck_assert_int_eq(mio(q, m, MOP_FLUSH, NULL, 0, 0, 0), 0);
  for (i = 0; i < N; i++)
    tio_start(q, m, &t[i], MOP_READ, rd + (size_t)i * LEN, (uint64_t)i * LEN, LEN, 0);
  for (i = 0; i < N; i++) {
    tio_wait(q, &t[i]);
    ck_assert_int_eq(t[i].res, 0);
  }
  ck_assert_mem_eq(rd, buf, (size_t)N * LEN);
  raid_member_close(m);
  server_stop(&s);
  raid_buf_free(buf);
  raid_buf_free(rd);
  free(t);
  raid_queue_free(q);
}

START_TEST(test_many_multi_conn)
{
  many_in_flight(NULL);
  many_in_flight("connections=16");
}
END_TEST

START_TEST(test_many_one_conn)
{
  many_in_flight("connections=1");
}
END_TEST

/* The file plugin: what the member wrote is in the file, byte for byte. */
START_TEST(test_file_plugin)
{
  char path[300], args[400];
  struct server s;
  struct raid_member *m;
  struct raid_queue *q = new_queue(64);
  uint8_t *w = raid_buf_alloc(65536), *r = malloc(65536);
  int fd;

  snprintf(path, sizeof path, "%s/plugin.img", vartmp_dir);
  make_file(path, 4 * MIB);
  snprintf(args, sizeof args, "file %s", path);
  server_start(&s, "file", args);
  ck_assert_int_eq(raid_member_open(uri_of(&s, "", NULL), 0, &m), 0);
  exercise(q, m, 0);
  fill_pattern(w, 65536, 11);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, w, 2 * MIB, 65536, MIO_FUA), 0);
  fd = open(path, O_RDONLY);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(pread(fd, r, 65536, 2 * MIB), 65536);
  ck_assert_mem_eq(r, w, 65536);
  close(fd);
  raid_member_close(m);
  server_stop(&s);
  raid_buf_free(w);
  free(r);
  raid_queue_free(q);
}
END_TEST

/* A server without FUA (a FUA write becomes a write and a flush), without
 * write zeroes (zeroes are written), without trim, without multi-conn:
 * nbdkit's eval plugin over a file, with the nozero filter. */
START_TEST(test_plain_server)
{
  char path[300], args[1600];
  struct server s;
  struct raid_member *m;
  struct raid_queue *q = new_queue(64);

  snprintf(path, sizeof path, "%s/plain.img", vartmp_dir);
  make_file(path, 4 * MIB);
  snprintf(args, sizeof args, "--filter=nozero eval zeromode=none "
           "get_size='echo %d' "
           "pread='dd if=%s skip=$4 count=$3 iflag=skip_bytes,count_bytes status=none' "
           "pwrite='dd of=%s seek=$4 conv=notrunc oflag=seek_bytes status=none' "
           "can_write='exit 0' can_flush='exit 0' flush='exit 0' can_fua='echo none' "
           "can_trim='exit 3' can_multi_conn='exit 3'", 4 * MIB, path, path);
  server_start(&s, "plain", args);
  ck_assert_int_eq(raid_member_open(uri_of(&s, "", "connections=4"), 0, &m), 0);
  exercise(q, m, 0);
  raid_member_close(m);
  server_stop(&s);
  raid_queue_free(q);
}
END_TEST

/* A server whose smallest block is 4096: the member's logical block size. */
START_TEST(test_block_size)
{
  struct server s;
  struct raid_member *m;

  server_start(&s, "bs", "--filter=blocksize-policy memory 4M "
               "blocksize-minimum=4096 blocksize-preferred=65536 "
               "blocksize-maximum=1M blocksize-error-policy=error");
  ck_assert_int_eq(raid_member_open(uri_of(&s, "", NULL), 0, &m), 0);
  ck_assert_uint_eq(raid_member_logical_block_size(m), 4096);
  {
    struct raid_queue *q = new_queue(16);
    uint8_t *w = raid_buf_alloc(2 * MIB), *r = raid_buf_alloc(2 * MIB);

    /* Larger than the server's largest request: sent in pieces. */
    fill_pattern(w, 2 * MIB, 5);
    ck_assert_int_eq(mio(q, m, MOP_WRITE, w, 1 * MIB, 2 * MIB, 0), 0);
    ck_assert_int_eq(mio(q, m, MOP_READ, r, 1 * MIB, 2 * MIB, 0), 0);
    ck_assert_mem_eq(r, w, 2 * MIB);
    raid_buf_free(w);
    raid_buf_free(r);
    raid_queue_free(q);
  }
  raid_member_close(m);
  server_stop(&s);
}
END_TEST

/* The server fails one write with EIO (the error filter): that request
 * fails, with a message naming the member; the member goes on. */
START_TEST(test_server_error)
{
  struct server s;
  struct raid_member *m;
  struct raid_queue *q = new_queue(16);
  uint8_t *b = raid_buf_alloc(4096);
  char trigger[320];

  snprintf(trigger, sizeof trigger, "%s/err.trigger", vartmp_dir);
  unlink(trigger);
  {
    char args[600];

    snprintf(args, sizeof args, "--filter=error memory 4M error=EIO "
             "error-pwrite-rate=100%% error-pwrite-file=%s", trigger);
    server_start(&s, "err", args);
  }
  ck_assert_int_eq(raid_member_open(uri_of(&s, "", NULL), 0, &m), 0);
  fill_pattern(b, 4096, 1);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, b, 0, 4096, 0), 0);
  close(open(trigger, O_CREAT | O_WRONLY, 0644));
  ck_assert_int_eq(mio(q, m, MOP_WRITE, b, 4096, 4096, 0), -EIO);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), raid_member_name(m)));
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "the server says"));
  unlink(trigger);
  ck_assert_int_eq(mio(q, m, MOP_READ, b, 0, 4096, 0), 0);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, b, 4096, 4096, 0), 0);
  raid_member_close(m);
  server_stop(&s);
  raid_buf_free(b);
  raid_queue_free(q);
}
END_TEST

/* The server is killed: the member is lost, the I/O fails with EIO and a
 * message saying so, and every later I/O fails at once. */
START_TEST(test_server_killed)
{
  struct server s;
  struct raid_member *m;
  struct raid_queue *q = new_queue(16);
  uint8_t *b = raid_buf_alloc(4096);
  double t0;

  server_start(&s, "kill", "memory 4M");
  ck_assert_int_eq(raid_member_open(uri_of(&s, "", "timeout=30"), 0, &m), 0);
  ck_assert_int_eq(mio(q, m, MOP_READ, b, 0, 4096, 0), 0);
  server_stop(&s);
  t0 = now_ms();
  ck_assert_int_eq(mio(q, m, MOP_WRITE, b, 0, 4096, 0), -EIO);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), raid_member_name(m)));
  ck_assert_int_eq(mio(q, m, MOP_READ, b, 0, 4096, 0), -EIO);
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "lost"));
  ck_assert_int_eq(mio(q, m, MOP_FLUSH, NULL, 0, 0, 0), -EIO);
  /* No timeout was waited for: the closed socket said it at once. */
  ck_assert_double_lt(now_ms() - t0, 20000);
  raid_member_close(m);
  raid_buf_free(b);
  raid_queue_free(q);
}
END_TEST

/* The server stops answering (every read delayed 30 s): with timeout=0.5
 * the read fails well before the server would have answered. */
START_TEST(test_timeout)
{
  struct server s;
  struct raid_member *m;
  struct raid_queue *q = new_queue(16);
  uint8_t *b = raid_buf_alloc(4096);
  double t0, ms;

  server_start(&s, "slow", "--filter=delay memory 4M rdelay=30");
  ck_assert_int_eq(raid_member_open(uri_of(&s, "", "timeout=0.5"), 0, &m), 0);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, b, 0, 4096, 0), 0);
  t0 = now_ms();
  ck_assert_int_eq(mio(q, m, MOP_READ, b, 0, 4096, 0), -EIO);
  ms = now_ms() - t0;
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "no reply"));
  ck_assert_double_ge(ms, 400);
  ck_assert_double_lt(ms, 20000);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, b, 0, 4096, 0), -EIO);
  raid_member_close(m);
  server_stop(&s);
  raid_buf_free(b);
  raid_queue_free(q);
}
END_TEST

/* nbdkit's noparallel filter: one request at a time on the server, many
 * in flight from the member, all answered in order of the server's. */
START_TEST(test_noparallel)
{
  struct server s;
  struct raid_member *m;
  struct raid_queue *q = new_queue(64);

  server_start(&s, "nopar", "--filter=noparallel memory 4M serialize=connections");
  ck_assert_int_eq(raid_member_open(uri_of(&s, "", NULL), 0, &m), 0);
  exercise(q, m, 0);
  raid_member_close(m);
  server_stop(&s);
  raid_queue_free(q);
}
END_TEST

/* qemu-nbd serving a raw file: another server's handshake and replies. */
START_TEST(test_qemu_nbd)
{
  char path[300], cmd[1200];
  struct raid_member *m;
  struct raid_queue *q = new_queue(64);
  struct server s;

  snprintf(path, sizeof path, "%s/qemu.img", vartmp_dir);
  make_file(path, 4 * MIB);
  server_paths(&s, "qemu");
  snprintf(cmd, sizeof cmd, "qemu-nbd --fork --persistent --shared=8 -f raw "
           "--cache=none --aio=threads --pid-file=%s -k %s %s", s.pidfile, s.sock, path);
  server_spawn(&s, cmd);
  ck_assert_int_eq(raid_member_open(uri_of(&s, "", NULL), 0, &m), 0);
  ck_assert_uint_eq(raid_member_size(m), 4 * MIB);
  exercise(q, m, 0);
  raid_member_close(m);
  server_stop(&s);
  raid_queue_free(q);
}
END_TEST

/* A server that answers a request with a reply for one never sent
 * (tests/nbd-liar.py): the member is lost, the read fails rather than
 * return what the reply carried, and so does everything after. */
START_TEST(test_liar)
{
  char cmd[1200];
  struct raid_member *m;
  struct raid_queue *q = new_queue(16);
  uint8_t *b = raid_buf_alloc(4096);
  struct server s;
  const char *srcdir = getenv("top_srcdir") ? getenv("top_srcdir") : "..";

  server_paths(&s, "liar");
  snprintf(cmd, sizeof cmd, "python3 %s/tests/nbd-liar.py %s %s %d 2 </dev/null "
           ">/dev/null 2>&1 &", srcdir, s.sock, s.pidfile, 1 * MIB);
  server_spawn(&s, cmd);
  ck_assert_int_eq(raid_member_open(uri_of(&s, "", NULL), 0, &m), 0);
  fill_pattern(b, 4096, 9);
  ck_assert_int_eq(mio(q, m, MOP_WRITE, b, 0, 4096, 0), 0);     /* request 1 */
  memset(b, 0, 4096);
  ck_assert_int_eq(mio(q, m, MOP_READ, b, 0, 4096, 0), -EIO);   /* 2: the lie */
  ck_assert_ptr_nonnull(strstr(raid_get_error(), "lost"));
  ck_assert_int_eq(mio(q, m, MOP_READ, b, 0, 4096, 0), -EIO);
  raid_member_close(m);
  server_stop(&s);
  raid_buf_free(b);
  raid_queue_free(q);
}
END_TEST

/* Open errors: each names the URI, and nothing is left open. */
static void
open_fails(const char *spec, unsigned flags, const char *words)
{
  struct raid_member *m = (void *)1;
  int r = raid_member_open(spec, flags, &m);

  ck_assert_msg(r < 0, "%s opened", spec);
  ck_assert_ptr_null(m);
  ck_assert_msg(strstr(raid_get_error(), spec) != NULL || strstr(spec, "timeout=") ||
                strstr(spec, "connections="),
                "error for %s does not name it: %s", spec, raid_get_error());
  ck_assert_msg(strstr(raid_get_error(), words) != NULL,
                "error for %s lacks '%s': %s", spec, words, raid_get_error());
}

START_TEST(test_open_errors)
{
  struct server s, ro;
  char spec[600];

  snprintf(spec, sizeof spec, "nbd+unix:///?socket=%s/none.sock", vartmp_dir);
  open_fails(spec, 0, "connect");
  server_start(&s, "named", "--filter=exportname memory 1M exportname=disk1 "
               "exportname-strict=true");
  open_fails(uri_of(&s, "disk2", NULL), 0, "disk2");
  snprintf(spec, sizeof spec, "%s", uri_of(&s, "disk1", "timeout=abc"));
  open_fails(spec, 0, "timeout=abc");
  snprintf(spec, sizeof spec, "%s", uri_of(&s, "disk1", "connections=0"));
  open_fails(spec, 0, "connections=0");
  open_fails("nbd://", 0, "nbd://");
  server_start(&ro, "ro", "-r memory 1M");
  open_fails(uri_of(&ro, "", NULL), 0, "read-only");
  {
    struct raid_member *m;

    ck_assert_int_eq(raid_member_open(uri_of(&ro, "", NULL), RAID_MEMBER_READONLY, &m), 0);
    raid_member_close(m);
  }
  server_stop(&s);
  server_stop(&ro);
}
END_TEST

static Suite *
nbd_suite(void)
{
  Suite *s = suite_create("member-nbd");
  TCase *tc = tcase_create("nbd");

  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_memory);
  tcase_add_test(tc, test_many_multi_conn);
  tcase_add_test(tc, test_many_one_conn);
  tcase_add_test(tc, test_file_plugin);
  tcase_add_test(tc, test_plain_server);
  tcase_add_test(tc, test_block_size);
  tcase_add_test(tc, test_server_error);
  tcase_add_test(tc, test_server_killed);
  tcase_add_test(tc, test_timeout);
  tcase_add_test(tc, test_noparallel);
  tcase_add_test(tc, test_liar);
  tcase_add_test(tc, test_open_errors);
  if (system("qemu-nbd --version >/dev/null 2>&1") == 0)
    tcase_add_test(tc, test_qemu_nbd);
  else if (getenv("RAID_TEST_NO_SKIP")) {
    printf("test-member-nbd: qemu-nbd is not installed\n");
    exit(1);
  }
  else
    printf("test-member-nbd: qemu-nbd is not installed: its case is skipped\n");
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  if (system("nbdkit --version >/dev/null 2>&1") != 0) {
    printf("test-member-nbd: SKIP: nbdkit is not installed\n");
    return 77;
  }
  return member_main("test-member-nbd", nbd_suite());
}
