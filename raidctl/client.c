/* Talking to raidd: one JSON request per connection to the control
 * socket, one JSON reply (raidd/control.c describes the protocol).
 *
 * raidd may close a connection at any moment: a client over its limit
 * gets a "busy" reply and is closed at once, maybe before raidctl sent
 * its request; a raidd that stops closes the rest.  So raidctl never
 * writes with SIGPIPE raised (send() with MSG_NOSIGNAL: an EPIPE instead),
 * reads the reply even when its request could not be sent (the "busy"
 * may be waiting there), and says which control socket closed on it and
 * when: raidctl never dies of a signal here, it prints why and exits 1. */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <json-c/json.h>

#include "raidctl.h"

static int
connect_raidd(bool quiet)
{
  struct sockaddr_un sun = { .sun_family = AF_UNIX };
  int fd;

  if (strlen(opt.control) >= sizeof sun.sun_path) {
    error("control socket path %s is too long", opt.control);
    return -1;
  }
  strcpy(sun.sun_path, opt.control);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof sun) < 0) {
    if (!quiet)
      error("cannot reach raidd at %s: %s", opt.control, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  return fd;
}

int
raidd_connect(void)
{
  return connect_raidd(false);
}

bool
raidd_running(void)
{
  int fd = connect_raidd(true);

  if (fd < 0)
    return false;
  close(fd);
  return true;
}

int
raidd_send(int fd, json_object *req)
{
  const char *s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
  size_t len = strlen(s), done = 0;
  char *line = malloc(len + 1);
  ssize_t r;
  int ret = 0;

  if (line == NULL) {
    error("out of memory for a request to raidd");
    return -1;
  }
  memcpy(line, s, len);
  line[len++] = '\n';
  while (done < len) {
    r = send(fd, line + done, len - done, MSG_NOSIGNAL);
    if (r > 0)
      done += r;
    else if (r < 0 && errno == EINTR)
      continue;
    else {
      /* Closed by raidd (EPIPE, ECONNRESET): its reply, if it gave one,
       * is still there to read. */
      if (r == 0 || (errno != EPIPE && errno != ECONNRESET)) {
        error("cannot send to raidd at %s: %s", opt.control,
              r < 0 ? strerror(errno) : "nothing sent");
        ret = -1;
      }
      break;
    }
  }
  free(line);
  return ret;
}

void
raidd_closed(size_t got, int err)
{
  if (got == 0)
    error("raidd closed the connection on its control socket %s without answering%s%s "
          "(it may be stopping); try again", opt.control, err ? ": " : "",
          err ? strerror(err) : "");
  else
    error("raidd closed the connection on its control socket %s in the middle of its "
          "reply (after %zu bytes)%s%s", opt.control, got, err ? ": " : "",
          err ? strerror(err) : "");
}

/* Read raidd's reply on FD, up to its newline or the end: the reply, or
 * NULL (said why). */
static json_object *
read_reply(int fd)
{
  size_t got = 0, cap = 65536;
  char *buf = malloc(cap), *bigger;
  json_object *rep;
  ssize_t r;
  int err = 0;

  if (buf == NULL) {
    error("out of memory for raidd's reply");
    return NULL;
  }
  while (got == 0 || buf[got - 1] != '\n') {
    if (got + 1 == cap) {
      if ((bigger = realloc(buf, cap * 2)) == NULL) {
        error("out of memory for raidd's reply (more than %zu bytes)", got);
        free(buf);
        return NULL;
      }
      buf = bigger;
      cap *= 2;
    }
    r = read(fd, buf + got, cap - got - 1);
    if (r > 0)
      got += r;
    else if (r < 0 && errno == EINTR)
      continue;
    else {
      err = r < 0 ? errno : 0;  /* the end, or ECONNRESET: what came is all */
      break;
    }
  }
  if (got == 0 || buf[got - 1] != '\n') {
    if (err != 0 && err != ECONNRESET && err != EPIPE)
      error("cannot read raidd's reply on its control socket %s: %s", opt.control,
            strerror(err));
    else
      raidd_closed(got, err);
    free(buf);
    return NULL;
  }
  buf[got] = '\0';
  rep = json_tokener_parse(buf);
  free(buf);
  if (rep == NULL || !json_object_is_type(rep, json_type_object)) {
    error("raidd sent a malformed reply on its control socket %s", opt.control);
    json_object_put(rep);
    return NULL;
  }
  return rep;
}

json_object *
raidd_call(json_object *req)
{
  json_object *rep, *okv, *e;
  int fd;

  if ((fd = connect_raidd(false)) < 0)
    return NULL;
  if (raidd_send(fd, req) < 0) {
    close(fd);
    return NULL;
  }
  rep = read_reply(fd);
  close(fd);
  if (rep == NULL)
    return NULL;
  if (!json_object_object_get_ex(rep, "ok", &okv)) {
    error("raidd sent a malformed reply on its control socket %s: no \"ok\"", opt.control);
    json_object_put(rep);
    return NULL;
  }
  if (!json_object_get_boolean(okv)) {
    error("%s", json_object_object_get_ex(rep, "error", &e)
          ? json_object_get_string(e) : "raidd refused the request");
    json_object_put(rep);
    return NULL;
  }
  return rep;
}

json_object *
jget(json_object *o, const char *key)
{
  json_object *v = NULL;
  json_object_object_get_ex(o, key, &v);
  return v;
}

int64_t
jint(json_object *o, const char *key)
{
  return json_object_get_int64(jget(o, key));
}

const char *
jstr(json_object *o, const char *key)
{
  return json_object_get_string(jget(o, key));
}

bool
jbool(json_object *o, const char *key)
{
  return json_object_get_boolean(jget(o, key));
}

double
reshape_percent(json_object *o)
{
  int64_t to = jint(o, "size_to");

  return to ? 100.0 * jint(o, "position") / to : 0.0;
}

int
raidd_verb(const char *verb, const char *name, json_object *extra, json_object **repp)
{
  json_object *req = extra ? extra : json_object_new_object(), *rep;

  *repp = NULL;
  json_object_object_add(req, "verb", json_object_new_string(verb));
  if (name)
    json_object_object_add(req, "name", json_object_new_string(name));
  rep = raidd_call(req);
  json_object_put(req);
  if (rep == NULL)
    return EXIT_FAIL;
  if (opt.json)
    json_result(rep);
  else
    *repp = rep;
  return EXIT_OK;
}
