/* The control verbs that give an array a kernel block device:
 *   {"verb": "attach", "name": "md0", "device": "/dev/nbd3", "connections": 2}
 *     -> {"ok": true, "device": "/dev/nbd3", "connections": 2}
 *   {"verb": "detach", "name": "md0", "force": false}
 *   {"verb": "detach", "device": "/dev/nbd3"}
 * The device and the number of connections are optional: a free device the
 * kernel picks, one connection per NBD worker thread.  nbd-attach.c does
 * the work; here are the requests' checks and replies. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raidd.h"
#include "control.h"

/* "/dev/nbdN" -> N, or -1. */
static int
nbd_index(const char *dev)
{
  const char *p = dev;
  char *end;
  long n;

  if (strncmp(p, "/dev/", 5) == 0)
    p += 5;
  if (strncmp(p, "nbd", 3) != 0 || p[3] < '0' || p[3] > '9')
    return -1;
  errno = 0;
  n = strtol(p + 3, &end, 10);
  if (errno || *end || n < 0 || n > 1000000)
    return -1;
  return (int)n;
}

json_object *
do_attach(json_object *req)
{
  const char *name = ctl_get_string(req, "name"), *dev = ctl_get_string(req, "device");
  json_object *v, *r;
  struct export *e, *other;
  int64_t nconns = nbd_server_threads();
  int index = -1, got, old;
  char err[512], buf[32];

  if (json_object_object_get_ex(req, "connections", &v)) {
    nconns = json_object_get_int64(v);
    if (nconns < 1 || nconns > NBD_ATTACH_MAX_CONNS)
      return ctl_fail("attach: connections %" PRId64 ": give 1 to %d", nconns,
                  NBD_ATTACH_MAX_CONNS);
  }
  if (nconns > NBD_ATTACH_MAX_CONNS)
    nconns = NBD_ATTACH_MAX_CONNS;
  if (dev && (index = nbd_index(dev)) < 0)
    return ctl_fail("attach: device \"%s\" is not a kernel NBD device (/dev/nbdN)", dev);
  if ((e = export_get(name)) == NULL)
    return ctl_fail("array %s is not running", name);
  if (index >= 0 && (other = nbd_attached_export(index)) != NULL) {
    r = ctl_fail("/dev/nbd%d is attached to array %s already", index,
             other == e ? name : export_name(other));
    export_put(e);
    return r;
  }
  if ((old = nbd_attached(e)) >= 0) {
    export_put(e);
    return ctl_fail("array %s is attached as /dev/nbd%d already", name, old);
  }
  if (nbd_attach(e, index, (unsigned)nconns, &got, err, sizeof err) < 0) {
    export_put(e);
    return ctl_fail("attach %s: %s", name, err);
  }
  export_put(e);
  r = ctl_ok();
  snprintf(buf, sizeof buf, "/dev/nbd%d", got);
  json_object_object_add(r, "device", json_object_new_string(buf));
  json_object_object_add(r, "connections", json_object_new_int64(nconns));
  return r;
}

json_object *
do_detach(json_object *req)
{
  const char *name = ctl_get_string(req, "name"), *dev = ctl_get_string(req, "device");
  bool force = ctl_get_bool(req, "force");
  struct export *e;
  char err[512];
  int index = -1, r;

  if ((name == NULL) == (dev == NULL))
    return ctl_fail("detach: give the array's name or its device, not %s",
                name ? "both" : "neither");
  if (dev) {
    if ((index = nbd_index(dev)) < 0)
      return ctl_fail("detach: device \"%s\" is not a kernel NBD device (/dev/nbdN)", dev);
    if ((e = nbd_attached_export(index)) == NULL) {
      /* Not ours now; perhaps a raidd before this one's. */
      if (nbd_detach_stale(index, err, sizeof err) < 0)
        return ctl_fail("detach: %s", err);
      return ctl_ok();
    }
    export_ref(e);
  }
  else if ((e = export_get(name)) == NULL)
    return ctl_fail("array %s is not running", name);
  r = nbd_detach(e, force, err, sizeof err);
  export_put(e);
  if (r < 0)
    return ctl_fail("detach: %s", err);
  return ctl_ok();
}
