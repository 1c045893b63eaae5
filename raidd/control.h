/* The control socket and the verbs it serves, one section per file. */
#ifndef RAIDD_CONTROL_H
#define RAIDD_CONTROL_H

#include <stddef.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "raidd.h"

/* ---- control.c: the socket and its threads ------------------------------ */

/* Listen on PATH (root-only).  Refused (logged, -EADDRINUSE) when another
 * process answers on PATH; a stale socket file there is replaced.  0 or
 * -errno.  Connections wait in the backlog until control_serve(). */
int control_start(const char *path);
/* Serve requests, each connection on a thread of its own: called once the
 * rest of raidd (the NBD server) is set up, so that no request sees it
 * half made.  0 or -errno (logged; the socket is removed). */
int control_serve(void);
/* Whether something listens on the Unix socket PATH: 1 (*PIDP its PID, or
 * 0 when unknown), 0 (no such file, or a stale socket that refuses
 * connections), or -errno. */
int socket_in_use(const char *path, pid_t *pidp);
/* Stop serving and remove the socket: clients still sending their request
 * are cut off, requests running finish and are answered. */
void control_stop(void);
/* Held while a request is served; take it to change arrays from another
 * thread (udev-watch.c). */
void control_lock(void);
void control_unlock(void);
/* Run one request as if it came over the socket (checked, under
 * control_lock()): the reply, which the caller puts.  For raidd's own
 * assembly at start (boot.c). */
json_object *control_request(json_object *req);
/* Send REP and a newline to FD within a deadline (also the streams of
 * events-monitor.c). */
void send_reply(int fd, json_object *rep);

/* ---- control-parse.c: a request's text into its object ----------------- */

/* Parse TEXT (LEN bytes, a request line) into *REQP: NULL, or the error
 * reply (*REQP NULL) when it is not one JSON object (strict JSON), or an
 * object in it, at any depth, holds a key twice (json-c would keep the
 * last), or a key holds a NUL. */
json_object *control_parse(const char *text, size_t len, json_object **reqp);

/* ---- control-reply.c: replies and request fields, for the verbs' files -- */

/* {"ok": false, "error": FMT...}. */
json_object *ctl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* {"ok": true}. */
json_object *ctl_ok(void);
/* Field KEY of REQ: the string (NULL: absent or not a string); true only
 * when present and true. */
const char *ctl_get_string(json_object *req, const char *key);
bool ctl_get_bool(json_object *req, const char *key);

/* ---- control-fields.c: what each verb takes ----------------------------- */

/* Check REQ against its verb's fields, then run the verb: the reply.
 * Called under control_lock(). */
json_object *control_dispatch(json_object *req);

/* ---- assemble.c: arrays started and stopped ----------------------------- */

/* The NBD URI of export NAME, percent-encoded, into BUF. */
void export_uri(const char *name, char *buf, size_t len);
/* The NBD socket path, for the URIs in replies (NULL: none). */
void control_set_nbd_socket(const char *path);
/* Rebuild speed limits (bytes/s; max 0: none; -1: the library's
 * default) given to every array assembled from now on. */
void control_set_rebuild_limits(int64_t min, int64_t max);
/* Stop every array (marking each clean on its members). */
void control_stop_all_arrays(void);
/* NULL when PATH names a member raidd can open whatever its cwd: an
 * absolute path (for a "sim:" spec, its file) or a remote member's URI;
 * else the reply that refuses it, naming PATH after WHO (the verb, or the
 * array). */
json_object *member_name_check(const char *who, const char *path);
/* The running array using member PATH, or NULL. */
const char *member_in_use(const char *path);
json_object *do_assemble(json_object *req);
json_object *do_stop(json_object *req);

/* ---- describe.c: status, detail, stats ---------------------------------- */

/* A JSON description of a running array (status / detail). */
json_object *control_describe(struct export *e);
/* {"verb": "status"/"detail", "name": NAME (optional)}. */
json_object *do_status(json_object *req);
/* {"verb": "stats", "name": NAME, "reset": false}. */
json_object *do_stats(json_object *req);

/* ---- manage.c: the drill verbs ------------------------------------------ */

const char *member_state_name(int state);
json_object *do_fail(json_object *req);
json_object *do_remove(json_object *req);
json_object *do_add(json_object *req);
json_object *do_replace(json_object *req);
json_object *do_sync(json_object *req);
json_object *do_set(json_object *req);
json_object *do_grow(json_object *req);

/* ---- attach.c: the kernel NBD client on an array (nbd-attach.c) --------- */

json_object *do_attach(json_object *req);
json_object *do_detach(json_object *req);

/* ---- ublk.c: an array as /dev/ublkbN ("ublk"), and back ("unublk") ------ */

json_object *do_ublk(json_object *req);
json_object *do_unublk(json_object *req);

/* ---- ublk-recover.c ----------------------------------------------------- */

/* Array NAME was just assembled: take back the ublk device a killed raidd
 * left for it, if any ("device" and "recovered" added to REPLY). */
void ublk_assembled(const char *name, json_object *reply);

/* ---- incremental.c: members that come back ------------------------------ */

/* Put PATH back into the running array whose member it was, to be rebuilt
 * (see there for the rules): 0, with ARRAY and *ROLEP set, or -1 with ERR
 * saying why not.  FROM_UDEV only changes the log line. */
int member_return(const char *path, bool from_udev, char *array, size_t len,
                  int *rolep, char *err, size_t errlen);
/* The name of the running array SB belongs to (by set UUID): 0, or -1. */
int array_of_superblock(const struct raid_superblock *sb, char *name, size_t len);
int array_of_uuid(const uint8_t *uuid, char *name, size_t len);
json_object *do_incremental(json_object *req);

#endif
