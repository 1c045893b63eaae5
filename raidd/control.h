/* The control socket (control.c). */
#ifndef RAIDD_CONTROL_H
#define RAIDD_CONTROL_H

#include <json-c/json.h>

#include "raidd.h"

/* Listen on PATH (root-only) and serve requests on a thread of its own. */
int control_start(const char *path);
/* The NBD socket path, for the URIs in replies (NULL: none). */
void control_set_nbd_socket(const char *path);
/* Stop serving and remove the socket. */
void control_stop(void);
/* Stop every array (marking each clean on its members). */
void control_stop_all_arrays(void);
/* A JSON description of a running array (status / detail). */
json_object *control_describe(struct export *e);

/* Replies and request fields, for the verbs' files. */
json_object *fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
json_object *ok(void);
const char *get_string(json_object *req, const char *key);
bool get_bool(json_object *req, const char *key);
/* The running array using member PATH, or NULL. */
/* PATH is absolute (for a "sim:" spec, its file). */
bool member_absolute(const char *path);
const char *member_in_use(const char *path);

/* manage.c: the drill verbs. */
const char *member_state_name(int state);
json_object *do_fail(json_object *req);
json_object *do_remove(json_object *req);
json_object *do_add(json_object *req);
json_object *do_replace(json_object *req);
json_object *do_sync(json_object *req);
json_object *do_set(json_object *req);

#endif
