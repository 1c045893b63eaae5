/* raidctl attach / detach: the kernel's NBD client on a running array.
 *
 *   raidctl attach NAME [/dev/nbdN] [--connections N]   prints /dev/nbdN
 *   raidctl detach NAME|/dev/nbdN [--force]
 *
 * raidd does the work (raidd/nbd-attach.c): it connects the device to the
 * array over socket pairs, with no network and no handshake, and flushes
 * and disconnects it at detach, at stop and when raidd exits. */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raidctl.h"

int
cmd_attach(int argc, char **argv)
{
  static const struct option opts[] = {
    { "connections", required_argument, NULL, 'c' },
    { "json", no_argument, NULL, 'J' },
    { NULL, 0, NULL, 0 },
  };
  json_object *req, *rep;
  long conns = 0;
  int status;
  char *end;
  int c;

  while ((c = verb_getopt(argc, argv, "", opts)) != -1) {
    switch (c) {
    case 'c':
      errno = 0;
      conns = strtol(optarg, &end, 10);
      if (errno || *end || end == optarg || conns < 1 || conns > 16)
        usage_error("attach", "--connections %s: give a number from 1 to 16", optarg);
      break;
    case 'J': opt.json = true; break;
    }
  }
  if (optind == argc || argc - optind > 2)
    usage_error("attach", "give the array's NAME and, if you want one, the /dev/nbdN to use");
  req = json_object_new_object();
  if (argc - optind == 2)
    json_object_object_add(req, "device", json_object_new_string(argv[optind + 1]));
  if (conns)
    json_object_object_add(req, "connections", json_object_new_int64(conns));
  status = raidd_verb("attach", argv[optind], req, &rep);
  if (rep)
    printf("%s\n", json_object_get_string(jget(rep, "device")));
  json_object_put(rep);
  return status;
}

int
cmd_detach(int argc, char **argv)
{
  static const struct option opts[] = {
    { "force", no_argument, NULL, 'f' },
    { "json", no_argument, NULL, 'J' },
    { NULL, 0, NULL, 0 },
  };
  json_object *req, *rep;
  bool force = false, is_device;
  const char *what;
  int c, status;

  while ((c = verb_getopt(argc, argv, "", opts)) != -1) {
    switch (c) {
    case 'f': force = true; break;
    case 'J': opt.json = true; break;
    }
  }
  if (argc - optind != 1)
    usage_error("detach", "give exactly one array NAME or /dev/nbdN");
  what = argv[optind];
  is_device = strncmp(what, "/dev/", 5) == 0;
  req = json_object_new_object();
  if (is_device)
    json_object_object_add(req, "device", json_object_new_string(what));
  json_object_object_add(req, "force", json_object_new_boolean(force));
  status = raidd_verb("detach", is_device ? NULL : what, req, &rep);
  if (rep)
    printf("raidctl: detached %s\n", what);
  json_object_put(rep);
  return status;
}
