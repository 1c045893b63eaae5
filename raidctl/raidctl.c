/* raidctl: create, inspect and (with raidd) run arrays, in mdadm's
 * vocabulary.  See raidctl(8).
 *
 *   raidctl [--config FILE] [--control PATH] [--json] [--verbose] VERB [ARGS...]
 *
 * Exit status: 0 success, 1 failure, 2 usage error. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "raidctl.h"

struct global opt = { .control = "/run/raidd/control.sock" };


/* ---- The verbs and their usage ---------------------------------------------
 * Each verb's usage lives here once: the top-level usage lists them all,
 * and verb_getopt() prints a verb's own for --help, -h, "raidctl help
 * VERB" and after a usage error.  A usage holds one line per form of the
 * verb; the help string names every option the verb's getopt table
 * accepts (tests/test-raidctl-cli.sh checks that, and that raidctl(8)
 * describes each). */
static int cmd_help(int argc, char **argv);

static const struct verb {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *usage;            /* forms, one per line, without "raidctl " */
  const char *what;             /* one sentence */
} verbs[] = {
  { "create", cmd_create,
    "create NAME --level 0|1|5|10 [--chunk SIZE] [--layout LAYOUT] [--metadata 1.0|1.1|1.2] "
    "[--bitmap internal|none] [--bitmap-chunk SIZE] [--data-offset SIZE] "
    "[--force] [--assume-clean] [--no-start] [--write-mostly MEMBER]... [--write-behind[=N]] "
    "[--ublk] [--json] {MEMBER|missing}...",
    "Write md superblocks on the members and start the array in raidd (mdadm --create)." },
  { "examine", cmd_examine,
    "examine [--json] MEMBER...\n"
    "examine --scan [--verbose | -v] [--json]",
    "Print the members' md superblocks, or the arrays found on the block devices." },
  { "examine-bitmap", cmd_examine_bitmap, "examine-bitmap [--json] MEMBER...",
    "Print the members' internal write-intent bitmaps (mdadm --examine-bitmap)." },
  { "assemble", cmd_assemble,
    "assemble NAME MEMBER... [--run] [--force] [--readonly] [--ublk] [--json]\n"
    "assemble --scan [NAME] [--timeout SECONDS] [--no-degraded] [--force] [--readonly] [--ublk] "
    "[--json]",
    "Start an array in raidd from its members' superblocks." },
  { "stop", cmd_stop,
    "stop NAME [--force] [--json]\n"
    "stop --scan [--force] [--json]",
    "Stop serving an array in raidd; --scan stops every running array." },
  { "attach", cmd_attach, "attach NAME [/dev/nbdN] [--connections N] [--json]",
    "Connect the kernel's NBD client to the array: a /dev/nbdN block device." },
  { "detach", cmd_detach, "detach NAME|/dev/nbdN [--force] [--json]",
    "Flush and disconnect the array's /dev/nbdN (refused while mounted, unless --force)." },
  { "status", cmd_status, "status [NAME] [--json]",
    "Show the running arrays, like /proc/mdstat." },
  { "detail", cmd_detail, "detail NAME [--test] [--json]",
    "Show one running array in detail, like mdadm --detail; --test: exit 1 degraded, 2 failed, 4 no array." },
  { "fail", cmd_fail, "fail NAME MEMBER [--force] [--json]",
    "Mark a member faulty (mdadm --fail)." },
  { "remove", cmd_remove, "remove NAME MEMBER [--force] [--json]",
    "Take a failed member, a spare or a replacement out of the array." },
  { "add", cmd_add, "add NAME MEMBER [--force] [--write-mostly] [--json]",
    "Add a member: rebuilt into a degraded role, or a hot spare." },
  { "replace", cmd_replace, "replace NAME OLD NEW [--force] [--json]",
    "Rebuild OLD's data onto NEW while OLD keeps serving." },
  { "scrub", cmd_scrub,
    "scrub NAME [--repair | --stop] [--wait] [--json]\n"
    "scrub --all [--repair | --stop] [--wait] [--json]",
    "Check (or repair) that the copies or the parity agree; --all: on every running "
    "array that is neither degraded nor read-only." },
  { "wait", cmd_wait, "wait NAME [--json]",
    "Wait until no rebuild, resync, scrub or reshape runs on the array." },
  { "set", cmd_set,
    "set NAME [rebuild-min=RATE] [rebuild-max=RATE] [bitmap=internal|none [bitmap-chunk=SIZE]] [safe-mode-delay=MS] [spares-expected=N] [--json]",
    "Set the array's rebuild speed limits; add or remove its write-intent bitmap." },
  { "grow", cmd_grow,
    "grow NAME --size max|SIZE [--assume-clean] [--force] [--json]\n"
    "grow NAME --array-size max|SIZE [--json]\n"
    "grow NAME [--level 0|1|5] [--raid-devices N] [--layout LAYOUT] [--chunk SIZE] [--json]\n"
    "grow NAME --raid-devices N --add MEMBER [--add MEMBER]... [--json]\n"
    "grow NAME --stop|--continue [--json]",
    "Take the room the members grew by (mdadm --grow --size; a smaller SIZE needs --force), "
    "show less than the members hold (mdadm --grow --array-size), "
    "change a RAID 1's number of mirrors, turn a RAID 1 of 2 or a RAID 0 into a RAID 5 and "
    "back, reshape a RAID 5 or 10 over more members or a RAID 5 to another layout or chunk, "
    "restripe a RAID 0 over the members given with --add; stop or continue a reshape." },
  { "stats", cmd_stats,
    "stats NAME [--reset] [--interval SECONDS [--count N]] [--json]",
    "Show what the array and its members did, and the RAID level's cost." },
  { "monitor", cmd_monitor, "monitor [--oneshot] [--test] [--json] [NAME...]",
    "Follow the arrays' events (Fail, DegradedArray, Rebuild...) as mdadm --monitor." },
  { "ublk", cmd_ublk, "ublk NAME [--json]",
    "Serve the running array as a block device, /dev/ublkbN (ublk, Linux >= 6.0)." },
  { "unublk", cmd_unublk, "unublk NAME [--force] [--json]",
    "Remove the array's ublk device; --force even while it is in use (mounted)." },
  { "zero", cmd_zero, "zero [--force] [--json] MEMBER...",
    "Erase the md superblock of each member (mdadm --zero-superblock)." },
  { "help", cmd_help, "help [VERB]",
    "Show the usage of raidctl or of one verb." },
};

#define NVERBS (sizeof verbs / sizeof verbs[0])

static const struct verb *
find_verb(const char *name)
{
  size_t i;

  for (i = 0; name && i < NVERBS; i++)
    if (strcmp(name, verbs[i].name) == 0)
      return &verbs[i];
  return NULL;
}

/* Each line of USAGE after FIRST ("usage: raidctl " or its indent). */
static void
print_forms(FILE *f, const char *first, const char *rest, const char *usage)
{
  const char *p = usage, *nl;

  for (; *p; p = nl + 1) {
    nl = strchr(p, '\n');
    if (nl == NULL)
      nl = p + strlen(p);
    fprintf(f, "%s%.*s\n", p == usage ? first : rest, (int)(nl - p), p);
    if (*nl == '\0')
      break;
  }
}

static void
usage(FILE *f)
{
  size_t i;

  fprintf(f, "usage: raidctl [--config FILE|none] [--control PATH] [--json] [--verbose] VERB [ARGS...]\n\nverbs:\n");
  for (i = 0; i < NVERBS; i++)
    print_forms(f, "  ", "  ", verbs[i].usage);
  fprintf(f, "\n\"raidctl VERB --help\" shows one verb's usage.  See raidctl(8).\n");
}

void
verb_usage(const char *verb, FILE *f)
{
  const struct verb *v = find_verb(verb);

  if (v == NULL) {
    usage(f);
    return;
  }
  print_forms(f, "usage: raidctl ", "       raidctl ", v->usage);
  fprintf(f, "%s  See raidctl(8).\n", v->what);
}

static int
cmd_help(int argc, char **argv)
{
  static const struct option opts[] = { { NULL, 0, NULL, 0 } };

  while (verb_getopt(argc, argv, "", opts) != -1)
    ;
  if (argc - optind > 1)
    usage_error("help", "give at most one VERB");
  if (optind < argc && find_verb(argv[optind]) == NULL)
    usage_error("help", "unknown verb '%s'", argv[optind]);
  if (optind < argc)
    verb_usage(argv[optind], stdout);
  else
    usage(stdout);
  exit(EXIT_OK);                /* text, as --help: no JSON document */
}

/* NAME (up to '=') abbreviates an option of OPTS that takes no value. */
static bool
takes_no_value(const struct option *opts, const char *name)
{
  size_t len = strcspn(name, "=");

  for (; opts->name; opts++)
    if (strncmp(opts->name, name, len) == 0 && opts->has_arg == no_argument)
      return true;
  return false;
}

/* getopt_long for a verb (ARGV[0]): LONGOPTS plus --help and -h, which
 * print the verb's usage on stdout and exit 0.  An unknown option, or an
 * option missing its value or given one it does not take, is a usage
 * error naming it.  Returns the next option's value, or -1 at the end
 * (optind is then at the first operand).  Starts afresh for each ARGV. */
int
verb_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
  static struct option all[64];
  static char **parsing;
  static char shorts[64];
  const char *arg;
  size_t n;
  int c;

  if (argv != parsing) {
    for (n = 0; longopts[n].name && n < sizeof all / sizeof all[0] - 2; n++)
      all[n] = longopts[n];
    all[n++] = (struct option){ "help", no_argument, NULL, 'h' };
    all[n] = (struct option){ NULL, 0, NULL, 0 };
    snprintf(shorts, sizeof shorts, ":%sh", shortopts);
    parsing = argv;
    optind = 0;                 /* glibc: start over completely */
  }
  opterr = 0;                   /* we say what was wrong */
  c = getopt_long(argc, argv, shorts, all, NULL);
  arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
  switch (c) {
  case 'h':
    verb_usage(argv[0], stdout);
    exit(EXIT_OK);
  case ':':
    usage_error(argv[0], "option '%s' needs a value", arg);
  case '?':
    /* glibc: optopt is 0 for an unknown long option, the option's value
     * for "--flag=VALUE", the letter for an unknown short one (and then
     * ARG is the element before when the letter was inside "-xy"). */
    if (optopt != 0 && strncmp(arg, "--", 2) == 0 && strchr(arg, '=') &&
        takes_no_value(all, arg + 2))
      usage_error(argv[0], "option '%.*s' takes no value", (int)strcspn(arg, "="), arg);
    if (optopt == 0 && strncmp(arg, "--", 2) == 0)
      usage_error(argv[0], "unknown option '%.*s'", (int)strcspn(arg, "="), arg);
    usage_error(argv[0], "unknown option '-%c'", optopt);
  }
  return c;
}

/* ---- Messages, and what a run prints with --json ---------------------------
 * With --json a run prints exactly one JSON document on stdout, whatever
 * happens, so that a script always has one thing to parse:
 *  - a verb hands its result to json_result() instead of printing it;
 *  - error() and usage_error() record their message (and still print it
 *    on stderr, for the human);
 *  - finish() (main's return, and usage_error's exit) prints the result,
 *    or, when the run failed, the error object
 *      {"ok": false, "verb": VERB, "error": FIRST, "errors": [ALL],
 *       "exit": 1 or 2, "result": WHAT-THE-VERB-HAD-PRODUCED}
 *    ("result" only when there was one, e.g. stop --scan's report; "verb"
 *    is null when none was given).
 * This is the one place that knows about --json failures: verbs call
 * error() and return EXIT_FAIL as they always did.  The exception is a
 * stream (stats --interval): json_stream() prints each report at once,
 * one per line, and a failure is one more line. */
static const char *verb_name;
static json_object *json_doc;           /* the verb's result */
static json_object *json_errors;        /* messages of error() and usage_error() */
static bool json_streamed;

static void
record(const char *fmt, va_list ap)
{
  char msg[4096];

  if (!opt.json)
    return;
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (json_errors == NULL)
    json_errors = json_object_new_array();
  json_object_array_add(json_errors, json_object_new_string(msg));
}

void
json_result(json_object *o)
{
  json_object_put(json_doc);
  json_doc = o;
}

void
json_merge(json_object *o)
{
  if (json_doc == NULL || !json_object_is_type(json_doc, json_type_object) ||
      !json_object_is_type(o, json_type_object)) {
    json_result(o);
    return;
  }
  json_object_object_foreach(o, key, val) {
    if (!json_object_object_get_ex(json_doc, key, NULL))
      json_object_object_add(json_doc, key, json_object_get(val));
  }
  json_object_put(o);
}

void
json_stream(json_object *o)
{
  printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                JSON_C_TO_STRING_NOSLASHESCAPE));
  fflush(stdout);
  json_object_put(o);
  json_streamed = true;
}

static int
finish(int status)
{
  json_object *out;

  if (!opt.json)
    return status;
  if (status != EXIT_OK && (json_errors || json_doc == NULL)) {
    json_object *first = json_errors ? json_object_array_get_idx(json_errors, 0) : NULL;
    char msg[256];

    out = json_object_new_object();
    json_object_object_add(out, "ok", json_object_new_boolean(0));
    json_object_object_add(out, "verb", verb_name ? json_object_new_string(verb_name)
                                                  : NULL);
    if (first == NULL) {
      snprintf(msg, sizeof msg, "%s failed", verb_name ? verb_name : "raidctl");
      first = json_object_new_string(msg);
      json_errors = json_object_new_array();
      json_object_array_add(json_errors, first);
    }
    json_object_object_add(out, "error", json_object_get(first));
    json_object_object_add(out, "errors", json_errors);
    json_object_object_add(out, "exit", json_object_new_int(status));
    if (json_doc)
      json_object_object_add(out, "result", json_doc);
    json_errors = json_doc = NULL;
  }
  else if (json_streamed) {
    json_object_put(json_doc);
    json_doc = NULL;
    return status;
  }
  else if (json_doc) {
    out = json_doc;
    json_doc = NULL;
  }
  else {
    out = json_object_new_object();
    json_object_object_add(out, "ok", json_object_new_boolean(1));
    json_object_object_add(out, "verb", json_object_new_string(verb_name));
  }
  printf("%s\n", json_object_to_json_string_ext(out, JSON_C_TO_STRING_NOSLASHESCAPE |
                                                (json_streamed ? JSON_C_TO_STRING_PLAIN
                                                 : JSON_C_TO_STRING_PRETTY)));
  json_object_put(out);
  fflush(stdout);
  return status;
}

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
  va_start(ap, fmt);
  record(fmt, ap);
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

/* "raidctl VERB: MESSAGE" and VERB's usage on stderr; exit 2. */
void
usage_error(const char *verb, const char *fmt, ...)
{
  va_list ap;

  fprintf(stderr, "raidctl%s%s: ", verb ? " " : "", verb ? verb : "");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  va_start(ap, fmt);
  record(fmt, ap);
  va_end(ap);
  verb_usage(verb, stderr);
  exit(finish(EXIT_USAGE));
}

/* The configuration file: read at start (raidd's control socket may be
 * set there), its refused lines kept until a verb that uses its ARRAY and
 * DEVICE lines (the --scan forms) asks for them, so that other verbs do
 * not repeat them. */
static char *conf_errors;

static void
conf_error(const char *msg, void *opaque)
{
  size_t old = conf_errors ? strlen(conf_errors) : 0;
  char *p = realloc(conf_errors, old + strlen(msg) + 2);

  if (p == NULL)
    abort();
  conf_errors = p;
  sprintf(conf_errors + old, "%s\n", msg);
}

static void
config_load(const char *path, bool control_given)
{
  unsigned i;
  int r;

  if (path && strcmp(path, "none") == 0)
    return;
  r = conf_read(path ? path : RAIDD_CONF_DEFAULT, conf_error, NULL, &opt.conf);
  if (r == -ENOENT && path == NULL) {
    free(conf_errors);
    conf_errors = NULL;
    return;
  }
  if (r < 0) {
    fprintf(stderr, "raidctl: error: configuration file %s", conf_errors ? conf_errors : "\n");
    exit(finish(EXIT_FAIL));
  }
  for (i = 0; i < opt.conf->nsettings && !control_given; i++)
    if (strcmp(opt.conf->settings[i].key, "control") == 0)
      opt.control = opt.conf->settings[i].value;
}

void
config_report(void)
{
  char *line, *save = NULL;

  if (conf_errors == NULL)
    return;
  for (line = strtok_r(conf_errors, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
    warning("%s: line left out", line);
  free(conf_errors);
  conf_errors = NULL;
}

static void
log_to_stderr(int priority, const char *msg, void *opaque)
{
  fprintf(stderr, "raidctl: %s\n", msg);
}

int
main(int argc, char **argv)
{
  const struct verb *v;
  const char *config = NULL;
  bool control_given = false;
  int i, j;

  raid_set_log_handler(log_to_stderr, NULL, RAID_LOG_INFO);
  /* --json anywhere among the verb's options counts from the start, so
   * that a usage error found before it is reported in JSON too. */
  for (j = 1; j < argc && strcmp(argv[j], "--") != 0; j++)
    if (strcmp(argv[j], "--json") == 0)
      opt.json = true;
  for (i = 1; i < argc && argv[i][0] == '-'; i++) {
    if (strcmp(argv[i], "--control") == 0 && i + 1 < argc) {
      opt.control = argv[++i];
      control_given = true;
    }
    else if (strncmp(argv[i], "--control=", 10) == 0) {
      opt.control = argv[i] + 10;
      control_given = true;
    }
    else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
      config = argv[++i];
    else if (strncmp(argv[i], "--config=", 9) == 0)
      config = argv[i] + 9;
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
    else if (strcmp(argv[i], "--control") == 0 || strcmp(argv[i], "--config") == 0)
      usage_error(NULL, "option '%s' needs a value", argv[i]);
    else
      usage_error(NULL, "unknown option '%s'", argv[i]);
  }
  if (i >= argc)
    usage_error(NULL, "no VERB given");
  config_load(config, control_given);
  verb_name = argv[i];
  if ((v = find_verb(argv[i])) == NULL)
    usage_error(NULL, "unknown verb '%s'", argv[i]);
  return finish(v->fn(argc - i, argv + i));
}
