/* raidctl: one section per source file. */
#ifndef RAIDCTL_H
#define RAIDCTL_H

#include <stdbool.h>
#include <stdint.h>

#include <raid/raid.h>
#include "conf.h"
#include "md-names.h"
#include "scan.h"

/* Exit codes, as mdadm and the design card say. */
#define EXIT_OK 0
#define EXIT_FAIL 1
#define EXIT_USAGE 2
/* detail --test, as mdadm --detail --test. */
#define EXIT_DETAIL_DEGRADED 1
#define EXIT_DETAIL_FAILED 2
#define EXIT_DETAIL_ERROR 4

/* Global options. */
struct global {
  const char *control;           /* raidd's control socket */
  bool json;
  bool ublk;                     /* create/assemble --ublk: a ublk device too */
  int verbose;
  struct conf *conf;             /* the configuration file, or NULL */
};
extern struct global opt;
/* Print the configuration file's refused lines (once): for the verbs
 * that use its ARRAY and DEVICE lines. */
void config_report(void);

/* raidctl.c */
#include <stdio.h>
#include <getopt.h>
#include <json-c/json.h>
/* "raidctl: error: ..." on stderr; with --json also the run's error
 * (see finish() in raidctl.c).  The caller then returns EXIT_FAIL. */
void error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "raidctl VERB: ..." and VERB's usage on stderr (VERB NULL: raidctl's),
 * the JSON error with --json; exits 2. */
void usage_error(const char *verb, const char *fmt, ...)
  __attribute__((format(printf, 2, 3), noreturn));
/* VERB's usage (every form and option, from verbs[] in raidctl.c). */
void verb_usage(const char *verb, FILE *f);
/* getopt_long for verb ARGV[0], with --help/-h and the usage errors
 * handled (see raidctl.c); -1 at the end, optind then at the operands. */
int verb_getopt(int argc, char **argv, const char *shortopts,
                const struct option *longopts);
/* With --json, the verb's result: printed once at exit (takes O). */
void json_result(json_object *o);
/* Add O's fields to the result object, those it lacks (a verb of several
 * steps: create, then its start in raidd); or the result.  Takes O. */
void json_merge(json_object *o);
/* A report of a stream (stats --interval): printed at once, one line. */
void json_stream(json_object *o);

/* Verbs: argc/argv start at the verb. */
int cmd_create(int argc, char **argv);
int cmd_examine(int argc, char **argv);
int cmd_examine_bitmap(int argc, char **argv);
int cmd_assemble(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_detail(int argc, char **argv);
int cmd_fail(int argc, char **argv);
int cmd_remove(int argc, char **argv);
int cmd_add(int argc, char **argv);
int cmd_replace(int argc, char **argv);
int cmd_scrub(int argc, char **argv);
int cmd_wait(int argc, char **argv);
int cmd_set(int argc, char **argv);
int cmd_grow(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_zero(int argc, char **argv);
int cmd_monitor(int argc, char **argv);
int cmd_attach(int argc, char **argv);     /* attach.c */
int cmd_detach(int argc, char **argv);
int cmd_ublk(int argc, char **argv);       /* ublk.c */
int cmd_unublk(int argc, char **argv);

/* scrub-all.c: scrub --all, every running array that can be scrubbed;
 * ACTION "check", "repair" or "idle" (--stop).  Exit status. */
int scrub_all(const char *action, bool wait);

/* client.c: raidd's control socket. */
/* A connection to raidd's control socket, or -1 (error printed). */
int raidd_connect(void);
/* True when raidd answers on opt.control. */
bool raidd_running(void);
/* Send REQ and a newline on FD (from raidd_connect()), never raising
 * SIGPIPE: 0, also when raidd closed the connection first (its reply,
 * such as "busy", is then still there to read), or -1 (error printed). */
int raidd_send(int fd, json_object *req);
/* Say that raidd closed the connection after GOT bytes of its reply
 * (ERR: the errno the read ended with, or 0), naming the socket. */
void raidd_closed(size_t got, int err);
/* Send REQ, return the reply when it says ok (the caller puts it), or
 * NULL after printing raidd's error or why raidd cannot be reached. */
json_object *raidd_call(json_object *req);
/* Send {"verb": VERB, "name": NAME (unless NULL)} plus the fields of EXTRA
 * (taken; NULL for none).  Sets *REPP to raidd's reply for the caller to
 * describe and put, or to NULL: raidd refused or could not be reached
 * (said), or with --json the reply is the run's result (json_result()).
 * Exit status. */
int raidd_verb(const char *verb, const char *name, json_object *extra, json_object **repp);
/* Field KEY of object O, or NULL. */
json_object *jget(json_object *o, const char *key);
/* Field KEY of O as a number, a string (NULL when absent), a boolean. */
int64_t jint(json_object *o, const char *key);
const char *jstr(json_object *o, const char *key);
bool jbool(json_object *o, const char *key);
/* How far a reshape is, in %: O's position of its size_to (raidd's
 * "reshape" object, or its reply to grow --stop/--continue). */
double reshape_percent(json_object *o);

/* assemble.c: start an array in raidd (assemble, create) */
int start_in_raidd(const char *name, char **members, int n, bool run, bool readonly);
/* BLOCKDEV: the device the array gets once it runs, as an ARRAY line's
 * blockdev= says it ("ublk", "nbd", "/dev/nbdN"); NULL or "" none, but
 * --ublk asks for ublk whatever it says. */
int assemble_in_raidd(const char *name, char *const *members, int n, bool run, bool readonly,
                      bool force, const char *blockdev);

/* probe.c: what libblkid finds on a member before it is used. */
struct probe_info {
  char what[160];                /* "an ext4 file system (UUID ...)", "" if clean */
  uint64_t size;                 /* bytes */
  unsigned logical_sector;       /* topology, 0 when unknown */
  unsigned physical_sector;
  uint64_t alignment_offset;
  uint64_t minimum_io;
  uint64_t optimal_io;
};
/* Probe PATH: existing signatures and topology.  0 or -errno (message
 * printed). */
int probe_member(const char *path, struct probe_info *info);
/* Erase every signature libblkid finds on PATH.  0 or -errno. */
int wipe_member(const char *path);
/* ARG as raidd must get it: absolute, a "sim:" spec with its file made
 * absolute, a remote member's URI as given (a URI of a scheme that is not
 * NBD's is refused).  With MUST_EXIST, an error names a missing file.  0
 * or -1 (error printed). */
int member_abs(const char *arg, bool must_exist, char *buf, size_t len);

/* facts.c: every fact about the members of a verb that writes, gathered
 * before anything is written (see facts.c). */
#include <sys/stat.h>
struct member_facts {
  const char *arg;               /* as named on the command line */
  char abs[4096];                /* absolute, symlinks resolved: raidd's name */
  bool remote;                   /* an NBD URI: no file, no st; abs is the URI */
  struct stat st;                /* the file or device behind it */
  struct probe_info probe;       /* libblkid: signatures, topology */
  bool has_sb;                   /* an md superblock reads: */
  struct raid_superblock sb;
  struct raid_member *m;         /* open for writing: claimed exclusively */
};
/* raidd's status of every running array, or NULL when raidd does not
 * answer on opt.control; *FAILED when it answered with an error (printed). */
json_object *raidd_status(bool *failed);
/* The array in STATUS (raidd_status()) whose field KEY ("name", "uuid")
 * is VALUE, or NULL. */
json_object *status_array(json_object *status, const char *key, const char *value);
/* Fill F[0..N-1] for the members ARGS: resolve and stat them (refusing a
 * member named twice), refuse one that a running array in STATUS (may be
 * NULL) holds, claim each exclusively (refusing one in use), probe it and
 * read its md superblock.  0, or -1 with the error printed (names VERB);
 * either way facts_release() closes what was opened. */
int facts_gather(const char *verb, char *const *args, unsigned n, json_object *status,
                 struct member_facts *f);
void facts_release(struct member_facts *f, unsigned n);
/* Erase what F holds before it is written anew (create, add, replace):
 * every signature libblkid finds on a local member, every md superblock
 * that reads on a remote one.  0 or -1 (error printed). */
int facts_wipe(struct member_facts *f);
/* Refuse (unless FORCE) a member holding a signature or an md superblock,
 * naming what and which array; with FORCE warn about each.  0 or -1. */
int facts_check_signatures(const char *verb, const struct member_facts *f, unsigned n,
                           bool force);
/* "md array NAME (UUID ..., raid5, role 2 of 4, events 12)" from F's superblock. */
void facts_describe_sb(const struct member_facts *f, char *buf, size_t len);

/* assemble.c: SCAN_NOTE prints what a scan (scan.h) skips, with --verbose
 * given twice (assemble --scan, examine --scan); a remote member that did
 * not answer always, as an error when an ARRAY line's devices= names it. */
void scan_note(enum scan_note_level level, const char *msg, void *opaque);

/* names.c: md's names for layouts and times (levels, UUIDs: md-names.h). */
/* Layout NAME for LEVEL, e.g. "left-symmetric", "n2"; -EINVAL if unknown. */
int layout_parse(int level, const char *s, int *layout);
void layout_name(int level, int layout, char *buf, size_t len);
uint64_t chunk_parse(const char *verb, const char *s);
void time_format(uint64_t md_time, char *buf, size_t len);

#endif
