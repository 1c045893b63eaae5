/* raidctl: create, inspect and (with raidd) run arrays, in mdadm's
 * vocabulary.  See raidctl(8).
 *
 *   raidctl [--control PATH] [--json] [--verbose] VERB [ARGS...]
 *
 * Exit status: 0 success, 1 failure, 2 usage error. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raidctl.h"

struct global opt = { .control = "/run/raidd/control.sock" };

static void
vmsg(const char *prefix, const char *fmt, va_list ap)
{
  fprintf(stderr, "raidctl: %s", prefix);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

void
error(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vmsg("error: ", fmt, ap);
  va_end(ap);
}

void
warning(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vmsg("warning: ", fmt, ap);
  va_end(ap);
}

void
info(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vmsg("", fmt, ap);
  va_end(ap);
}

void
usage_error(const char *verb, const char *fmt, ...)
{
  va_list ap;

  fprintf(stderr, "raidctl %s: ", verb);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(EXIT_USAGE);
}

static const struct verb {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *help;
} verbs[] = {
  { "create", cmd_create, "create NAME --level L [--chunk SIZE] [--layout L] [--metadata 1.0|1.1|1.2] [--force] [--assume-clean] [--no-start] [--write-mostly MEMBER]... MEMBER..." },
  { "examine", cmd_examine, "examine [--json] MEMBER... | examine --scan [--verbose] [--json]" },
  { "assemble", cmd_assemble, "assemble NAME MEMBER... [--run] [--readonly] | assemble --scan [NAME] [--timeout S] [--no-degraded] [--readonly]" },
  { "stop", cmd_stop, "stop NAME [--force]" },
  { "status", cmd_status, "status [NAME] [--json]" },
  { "detail", cmd_detail, "detail NAME [--json]" },
  { "fail", cmd_fail, "fail NAME MEMBER" },
  { "remove", cmd_remove, "remove NAME MEMBER [--force]" },
  { "add", cmd_add, "add NAME MEMBER [--force] [--write-mostly]" },
  { "replace", cmd_replace, "replace NAME OLD NEW [--force]" },
  { "scrub", cmd_scrub, "scrub NAME [--repair | --stop] [--wait]" },
  { "wait", cmd_wait, "wait NAME" },
  { "set", cmd_set, "set NAME rebuild-min=RATE rebuild-max=RATE" },
  { "zero", cmd_zero, "zero [--force] MEMBER..." },
  { "stats", cmd_stats, "stats NAME [--json] [--reset] [--interval SECONDS [--count N]]" },
};

static void
usage(FILE *f)
{
  size_t i;

  fprintf(f, "usage: raidctl [--control PATH] [--json] [--verbose] VERB [ARGS...]\n\nverbs:\n");
  for (i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    fprintf(f, "  %s\n", verbs[i].help);
  fprintf(f, "\nSee raidctl(8).\n");
}

static void
log_to_stderr(int priority, const char *msg, void *opaque)
{
  fprintf(stderr, "raidctl: %s\n", msg);
}

int
main(int argc, char **argv)
{
  int i;
  size_t v;

  raid_set_log_handler(log_to_stderr, NULL, RAID_LOG_INFO);
  for (i = 1; i < argc && argv[i][0] == '-'; i++) {
    if (strcmp(argv[i], "--control") == 0 && i + 1 < argc)
      opt.control = argv[++i];
    else if (strncmp(argv[i], "--control=", 10) == 0)
      opt.control = argv[i] + 10;
    else if (strcmp(argv[i], "--json") == 0)
      opt.json = true;
    else if (strcmp(argv[i], "--verbose") == 0 || strcmp(argv[i], "-v") == 0)
      opt.verbose++;
    else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return EXIT_OK;
    }
    else if (strcmp(argv[i], "--version") == 0) {
      printf("raidctl %s\n", PACKAGE_VERSION);
      return EXIT_OK;
    }
    else {
      fprintf(stderr, "raidctl: unknown option '%s'\n", argv[i]);
      usage(stderr);
      return EXIT_USAGE;
    }
  }
  if (i >= argc) {
    usage(stderr);
    return EXIT_USAGE;
  }
  for (v = 0; v < sizeof verbs / sizeof verbs[0]; v++)
    if (strcmp(argv[i], verbs[v].name) == 0)
      return verbs[v].fn(argc - i, argv + i);
  fprintf(stderr, "raidctl: unknown verb '%s'\n", argv[i]);
  usage(stderr);
  return EXIT_USAGE;
}
