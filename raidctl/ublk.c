/* The verbs that give a running array a block device through raidd's
 * ublk server (Linux >= 6.0):
 *   ublk NAME [--json]             /dev/ublkbN appears, served by raidd
 *   unublk NAME [--force] [--json] it goes; refused while mounted, unless
 *                                  --force
 * raidd does the work (raidd/ublk.c); the reply names the device. */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "raidctl.h"

/* Parse VERB's options; the array NAME is the one operand. */
static const char *
parse(int argc, char **argv, bool *force)
{
  static const struct option opts[] = {
    { "force", no_argument, NULL, 'f' },
    { "json", no_argument, NULL, 'J' },
    { NULL, 0, NULL, 0 },
  };
  int c;

  while ((c = verb_getopt(argc, argv, "", opts)) != -1) {
    switch (c) {
    case 'f':
      if (force == NULL)
        usage_error(argv[0], "unknown option '--force'");
      *force = true;
      break;
    case 'J': opt.json = true; break;
    }
  }
  if (argc - optind != 1)
    usage_error(argv[0], "give exactly one array NAME");
  return argv[optind];
}

int
cmd_ublk(int argc, char **argv)
{
  const char *name = parse(argc, argv, NULL);
  json_object *rep;
  int status = raidd_verb("ublk", name, NULL, &rep);

  if (rep)
    printf("raidctl: %s is %s%s\n", name, json_object_get_string(jget(rep, "device")),
           jget(rep, "recovered") ? " (recovered)" : "");
  json_object_put(rep);
  return status;
}

int
cmd_unublk(int argc, char **argv)
{
  bool force = false;
  const char *name = parse(argc, argv, &force);
  json_object *req = json_object_new_object(), *rep;
  int status;

  if (force)
    json_object_object_add(req, "force", json_object_new_boolean(true));
  status = raidd_verb("unublk", name, req, &rep);
  if (rep)
    printf("raidctl: %s has no ublk device any more\n", name);
  json_object_put(rep);
  return status;
}
