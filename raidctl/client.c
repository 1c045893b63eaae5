/* Talking to raidd: one JSON request per connection to the control
 * socket, one JSON reply (raidd/control.c describes the protocol). */
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

json_object *
raidd_call(json_object *req)
{
  const char *s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
  size_t len = strlen(s), got = 0, cap = 65536;
  char *buf;
  json_object *rep, *okv;
  ssize_t r;
  int fd;

  fd = connect_raidd(false);
  json_object_get(req);
  if (fd < 0) {
    json_object_put(req);
    return NULL;
  }
  if (write(fd, s, len) != (ssize_t)len || write(fd, "\n", 1) != 1) {
    error("cannot send to raidd at %s: %s", opt.control, strerror(errno));
    close(fd);
    json_object_put(req);
    return NULL;
  }
  json_object_put(req);
  buf = malloc(cap);
  while (buf && (r = read(fd, buf + got, cap - got - 1)) != 0) {
    if (r < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    got += r;
    if (got + 1 == cap && (buf = realloc(buf, cap *= 2)) == NULL)
      break;
  }
  close(fd);
  if (buf == NULL)
    return NULL;
  buf[got] = '\0';
  rep = json_tokener_parse(buf);
  free(buf);
  if (rep == NULL || !json_object_object_get_ex(rep, "ok", &okv)) {
    error("raidd sent a malformed reply");
    json_object_put(rep);
    return NULL;
  }
  if (!json_object_get_boolean(okv)) {
    json_object *e;
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
