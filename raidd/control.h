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

#endif
