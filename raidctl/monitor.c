/* raidctl monitor: md's mdadm --monitor, through raidd.
 *
 *   monitor [--json] [NAME...]            follow the events as they come
 *   monitor --oneshot [--json] [NAME...]  report the standing ones, exit
 *   monitor --test [--oneshot] [NAME...]  a TestMessage for each array
 *
 * raidd finds the events (raidd/events.c says which and when) and sends
 * each to its log, its --program, its --mailaddr and every monitor
 * following them.  Following is a "monitor" request that keeps the
 * connection open: raidd replies {"ok": true}, then writes one JSON
 * object per event, one per line, until raidctl or raidd goes away.
 * Printed as "TIME EVENT ARRAY [MEMBER]", TIME local (2026-12-02T14:03:05),
 * or with --json as raidd sent them, one per line.
 *
 * With --oneshot, raidd reports through every channel the events that
 * stand (DegradedArray for a degraded array, SparesMissing for one short
 * of its expected spares; with --test a TestMessage for each array) and
 * the reply lists them; raidctl prints them and exits 0, as mdadm
 * --monitor --oneshot does from cron. */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "raidctl.h"

static void
print_event(json_object *ev)
{
  time_t t = (time_t)json_object_get_int64(jget(ev, "time"));
  json_object *m = jget(ev, "member");
  char when[32];
  struct tm tm;

  if (opt.json) {
    json_stream(json_object_get(ev));
    return;
  }
  localtime_r(&t, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  printf("%s %s %s%s%s\n", when, json_object_get_string(jget(ev, "event")),
         json_object_get_string(jget(ev, "array")), m ? " " : "",
         m ? json_object_get_string(m) : "");
  fflush(stdout);
}

/* Read the stream on FD: the reply line, then events, until raidd closes
 * it.  EXIT_FAIL (raidd went away, or refused) or never returns. */
static int
follow(int fd)
{
  struct json_tokener *tok = json_tokener_new();
  bool replied = false;
  char buf[65536];
  size_t got = 0;
  ssize_t r;
  int err = 0;

  while ((r = read(fd, buf, sizeof buf)) != 0) {
    char *p = buf, *end, *nl;

    if (r < 0) {
      if (errno == EINTR)
        continue;
      err = errno;
      if (replied)
        error("reading raidd's events on its control socket %s: %s", opt.control,
              strerror(err));
      break;
    }
    got += r;
    end = buf + r;
    for (; p < end; p = nl + 1) {
      json_object *o;

      nl = memchr(p, '\n', end - p);
      if (nl == NULL)
        nl = end;
      o = json_tokener_parse_ex(tok, p, nl - p);
      if (o == NULL && json_tokener_get_error(tok) == json_tokener_continue)
        continue;               /* the rest comes in the next read */
      json_tokener_reset(tok);
      if (o == NULL) {
        error("raidd sent a malformed event");
        continue;
      }
      if (!replied) {
        replied = true;
        if (!json_object_get_boolean(jget(o, "ok"))) {
          error("%s", jget(o, "error") ? json_object_get_string(jget(o, "error"))
                                       : "raidd refused to send its events");
          json_object_put(o);
          json_tokener_free(tok);
          return EXIT_FAIL;
        }
      }
      else
        print_event(o);
      json_object_put(o);
    }
  }
  json_tokener_free(tok);
  if (!replied)
    raidd_closed(got, err);     /* before its reply: stopping */
  else if (err == 0)
    error("raidd closed the connection on its control socket %s (it stopped): no more "
          "events", opt.control);
  return EXIT_FAIL;
}

int
cmd_monitor(int argc, char **argv)
{
  static const struct option opts[] = {
    { "json", no_argument, NULL, 'J' },
    { "oneshot", no_argument, NULL, '1' },
    { "test", no_argument, NULL, 't' },
    { NULL, 0, NULL, 0 },
  };
  json_object *req, *names = NULL, *rep, *evs;
  bool oneshot = false, test = false;
  size_t i;
  int c, fd;

  while ((c = verb_getopt(argc, argv, "", opts)) != -1)
    switch (c) {
    case 'J': opt.json = true; break;
    case '1': oneshot = true; break;
    case 't': test = true; break;
    }
  req = json_object_new_object();
  json_object_object_add(req, "verb", json_object_new_string("monitor"));
  if (optind < argc) {
    names = json_object_new_array();
    for (i = optind; i < (size_t)argc; i++)
      json_object_array_add(names, json_object_new_string(argv[i]));
    json_object_object_add(req, "names", names);
  }
  json_object_object_add(req, "oneshot", json_object_new_boolean(oneshot));
  json_object_object_add(req, "test", json_object_new_boolean(test));
  if (oneshot) {
    rep = raidd_call(req);
    json_object_put(req);
    if (rep == NULL)
      return EXIT_FAIL;
    evs = jget(rep, "events");
    if (opt.json)
      json_result(json_object_get(evs));
    else
      for (i = 0; evs && i < json_object_array_length(evs); i++)
        print_event(json_object_array_get_idx(evs, i));
    json_object_put(rep);
    return EXIT_OK;
  }
  fd = raidd_connect();
  if (fd >= 0 && raidd_send(fd, req) < 0) {
    close(fd);
    fd = -1;
  }
  json_object_put(req);
  if (fd < 0)
    return EXIT_FAIL;
  c = follow(fd);
  close(fd);
  return c;
}
