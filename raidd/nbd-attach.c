/* The kernel's NBD client on an export: raidctl attach and detach.
 *
 * raidd connects /dev/nbdN to one of its own exports with no network and
 * no handshake.  It makes socket pairs; one end of each goes to the NBD
 * workers as a connection already in the transmission phase (simple
 * replies, the export's transmission flags), the other to the kernel over
 * the "nbd" generic-netlink family (NBD_CMD_CONNECT, as nbd-client does
 * it).  The kernel keeps its own reference to its ends, so raidd closes
 * its copies.  Each pair is one of the device's hardware queues: the
 * kernel spreads requests over them (multi-conn), and raidd spreads them
 * over its workers, round-robin.
 *
 * nbd.ko is loaded on the first attach (libkmod), as modprobe would.
 *
 * Timeouts: none is set, so the kernel never fails a request for taking
 * long (it logs a stuck request and waits on).  raidd is on the same
 * machine: a rebuild or a slow member is not a dead server.
 *
 * Detaching (raidctl detach, raidctl stop, raidd's exit): the kernel's
 * NBD_CMD_DISCONNECT sends NBD_CMD_DISC on each socket, shuts them down
 * and fails whatever it still holds.  So first raidd checks the device is
 * not in use (blockdev_in_use(): mounted, or held by md, device-mapper or
 * mkfs; refused unless --force), and fsync()s it: pages written through
 * the page cache (by a reader-writer that still has it open) reach the
 * array and a flush makes them stable.  Then it disconnects.  The workers see
 * the sockets close and drop those connections.
 *
 * Kernel connections are not counted as NBD clients (export_conns): what
 * keeps an array from stopping is the device being in use, not its being
 * attached; raidctl stop detaches an unused device itself.
 *
 * The table of attached devices is guarded by attach_lock.  The verbs run
 * under control_lock() already; the lock is for raidd's exit. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include <libkmod.h>
#include <linux/nbd.h>
#include <linux/nbd-netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include <netlink/netlink.h>

#include "nbd-internal.h"

#define MAX_ATTACHED 64

struct attached {
  struct export *e;                /* reference; NULL: free slot */
  int index;                       /* /dev/nbdINDEX */
  unsigned nconns;
};

static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;
static struct attached table[MAX_ATTACHED];

/* ---- the driver ---------------------------------------------------------------- */

/* Load nbd.ko (and what it needs) as modprobe would, through libkmod: the
 * kernel does not load it for a netlink look-up.  Quietly does nothing
 * when it is loaded or built in; a failure is left for the look-up to
 * report. */
static void
load_nbd_module(void)
{
  struct kmod_ctx *ctx = kmod_new(NULL, NULL);
  struct kmod_module *mod = NULL;
  int r;

  if (ctx == NULL)
    return;
  if (kmod_module_new_from_name(ctx, "nbd", &mod) == 0) {
    r = kmod_module_probe_insert_module(mod, 0, NULL, NULL, NULL, NULL);
    if (r < 0)
      log_warn("nbd: cannot load the kernel module nbd: %s", strerror(-r));
    else
      log_info("nbd: loaded the kernel module nbd");
    kmod_module_unref(mod);
  }
  kmod_unref(ctx);
}

/* ---- netlink ------------------------------------------------------------------ */

/* A generic-netlink socket and the nbd family's id: 0, or -1 with ERR. */
static int
nl_open(struct nl_sock **skp, int *familyp, char *err, size_t len)
{
  struct nl_sock *sk = nl_socket_alloc();
  int r;

  if (sk == NULL) {
    snprintf(err, len, "out of memory");
    return -1;
  }
  if ((r = genl_connect(sk)) < 0) {
    snprintf(err, len, "cannot open a generic netlink socket: %s", nl_geterror(r));
    nl_socket_free(sk);
    return -1;
  }
  if ((*familyp = genl_ctrl_resolve(sk, NBD_GENL_FAMILY_NAME)) < 0) {
    load_nbd_module();
    *familyp = genl_ctrl_resolve(sk, NBD_GENL_FAMILY_NAME);
  }
  if (*familyp < 0) {
    snprintf(err, len, "the kernel has no NBD driver (no \"nbd\" netlink family: "
             "modprobe nbd, or the kernel lacks CONFIG_BLK_DEV_NBD)");
    nl_socket_free(sk);
    return -1;
  }
  *skp = sk;
  return 0;
}

static int
connect_reply(struct nl_msg *msg, void *arg)
{
  struct nlattr *attrs[NBD_ATTR_MAX + 1];
  int *indexp = arg;

  if (genlmsg_parse(nlmsg_hdr(msg), 0, attrs, NBD_ATTR_MAX, NULL) == 0 &&
      attrs[NBD_ATTR_INDEX])
    *indexp = (int)nla_get_u32(attrs[NBD_ATTR_INDEX]);
  return NL_OK;
}

/* Why the kernel said no, in words for the user. */
static void
nl_reason(int r, int index, char *err, size_t len)
{
  if (r == -NLE_BUSY || r == -NLE_EXIST)
    snprintf(err, len, "/dev/nbd%d is already connected (to another server, or to "
             "a raidd that is gone: nbd-client -d /dev/nbd%d frees it)", index, index);
  else if (r == -NLE_PERM)
    snprintf(err, len, "the kernel's NBD driver refused: only root may connect a device");
  else
    snprintf(err, len, "the kernel's NBD driver refused: %s", nl_geterror(r));
}

/* The backend identifier a device attached to E carries (its sysfs file
 * "backend"): the kernel refuses to reconfigure the device unless told it
 * again ("must specify backend"). */
static void
backend_id(const struct export *e, char *buf, size_t len)
{
  snprintf(buf, len, "raidd:%s", export_name(e));
}

/* NBD_CMD_CONNECT: FDS[0..n-1] to /dev/nbdINDEX (-1: any free one). */
static int
kernel_connect(struct export *e, int index, const int *fds, unsigned n, int *indexp,
               char *err, size_t len)
{
  struct nl_sock *sk;
  struct nl_msg *msg;
  struct nlattr *socks;
  uint32_t min, pref, max;
  char backend[NBD_PEER_MAX];
  int family, r = -1, got = -1;

  if (nl_open(&sk, &family, err, len) < 0)
    return -ENODEV;
  nbd_export_block_sizes(e, &min, &pref, &max);
  backend_id(e, backend, sizeof backend);
  if ((msg = nlmsg_alloc()) == NULL ||
      genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, 0, NBD_CMD_CONNECT, 0) == NULL)
    goto nomem;
  if (index >= 0 && nla_put_u32(msg, NBD_ATTR_INDEX, (uint32_t)index) < 0)
    goto nomem;
  if (nla_put_u64(msg, NBD_ATTR_SIZE_BYTES, raid_array_size(export_array(e))) < 0 ||
      nla_put_u64(msg, NBD_ATTR_BLOCK_SIZE_BYTES, min) < 0 ||
      nla_put_u64(msg, NBD_ATTR_SERVER_FLAGS, nbd_export_tflags(e)) < 0 ||
      nla_put_string(msg, NBD_ATTR_BACKEND_IDENTIFIER, backend) < 0 ||
      (socks = nla_nest_start(msg, NBD_ATTR_SOCKETS)) == NULL)
    goto nomem;
  for (unsigned i = 0; i < n; i++) {
    struct nlattr *item = nla_nest_start(msg, NBD_SOCK_ITEM);

    if (item == NULL || nla_put_u32(msg, NBD_SOCK_FD, (uint32_t)fds[i]) < 0)
      goto nomem;
    nla_nest_end(msg, item);
  }
  nla_nest_end(msg, socks);
  nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, connect_reply, &got);
  r = nl_send_sync(sk, msg);       /* frees MSG */
  msg = NULL;
  if (r < 0) {
    nl_reason(r, index, err, len);
    r = r == -NLE_BUSY || r == -NLE_EXIST ? -EBUSY : -EIO;
  }
  else if (got < 0) {
    snprintf(err, len, "the kernel's NBD driver did not say which device it connected");
    r = -EIO;
  }
  else
    *indexp = got;
  goto out;
 nomem:
  snprintf(err, len, "out of memory building the netlink request");
  r = -ENOMEM;
 out:
  nlmsg_free(msg);
  nl_socket_free(sk);
  return r;
}

/* A request about /dev/nbdINDEX that the kernel answers with a status
 * only: CMD, with BACKEND and SIZE when given (NULL, 0: left out).  WHAT
 * says what was refused ("disconnect /dev/nbd0"). */
static int
kernel_request(uint8_t cmd, int index, const char *backend, uint64_t size,
               const char *what, char *err, size_t len)
{
  struct nl_sock *sk;
  struct nl_msg *msg;
  int family, r;

  if (nl_open(&sk, &family, err, len) < 0)
    return -ENODEV;
  if ((msg = nlmsg_alloc()) == NULL ||
      genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, 0, cmd, 0) == NULL ||
      nla_put_u32(msg, NBD_ATTR_INDEX, (uint32_t)index) < 0 ||
      (backend && nla_put_string(msg, NBD_ATTR_BACKEND_IDENTIFIER, backend) < 0) ||
      (size && nla_put_u64(msg, NBD_ATTR_SIZE_BYTES, size) < 0)) {
    nlmsg_free(msg);
    nl_socket_free(sk);
    snprintf(err, len, "out of memory building the netlink request");
    return -ENOMEM;
  }
  r = nl_send_sync(sk, msg);
  nl_socket_free(sk);
  if (r < 0) {
    snprintf(err, len, "the kernel's NBD driver refused to %s: %s", what, nl_geterror(r));
    return -EIO;
  }
  return 0;
}

/* NBD_CMD_DISCONNECT for /dev/nbdINDEX. */
static int
kernel_disconnect(int index, char *err, size_t len)
{
  char what[64];

  snprintf(what, sizeof what, "disconnect /dev/nbd%d", index);
  return kernel_request(NBD_CMD_DISCONNECT, index, NULL, 0, what, err, len);
}

/* NBD_CMD_RECONFIGURE of /dev/nbdINDEX's size (the kernel takes
 * NBD_ATTR_SIZE_BYTES there since Linux 5.3): the device shows the
 * array's new size at once, as a resized disk does.  The request names
 * the backend the device was connected with, E's: without it the kernel
 * says "must specify backend" and refuses (EINVAL). */
static int
kernel_resize(const struct export *e, int index, uint64_t size, char *err, size_t len)
{
  char backend[NBD_PEER_MAX], what[80];

  backend_id(e, backend, sizeof backend);
  snprintf(what, sizeof what, "give /dev/nbd%d its new size", index);
  return kernel_request(NBD_CMD_RECONFIGURE, index, backend, size, what, err, len);
}

/* ---- the table ------------------------------------------------------------------ */

static struct attached *
find_export(const struct export *e)
{
  for (unsigned i = 0; i < MAX_ATTACHED; i++)
    if (table[i].e == e)
      return &table[i];
  return NULL;
}

int
nbd_attached(const struct export *e)
{
  struct attached *t;
  int index;

  pthread_mutex_lock(&attach_lock);
  t = find_export(e);
  index = t ? t->index : -1;
  pthread_mutex_unlock(&attach_lock);
  return index;
}

int
nbd_attached_resize(struct export *e, char *err, size_t len)
{
  int index = nbd_attached(e);

  if (index < 0)
    return 0;
  return kernel_resize(e, index, raid_array_size(export_array(e)), err, len);
}

struct export *
nbd_attached_export(int index)
{
  struct export *e = NULL;

  pthread_mutex_lock(&attach_lock);
  for (unsigned i = 0; i < MAX_ATTACHED; i++)
    if (table[i].e && table[i].index == index) {
      e = table[i].e;
      break;
    }
  pthread_mutex_unlock(&attach_lock);
  return e;
}

/* ---- attach ---------------------------------------------------------------------- */

int
nbd_attach(struct export *e, int index, unsigned nconns, int *indexp,
           char *err, size_t len)
{
  int fds[NBD_ATTACH_MAX_CONNS][2];
  struct attached *slot;
  unsigned made = 0, i;
  int r;

  if (nconns < 1 || nconns > NBD_ATTACH_MAX_CONNS) {
    snprintf(err, len, "connections must be 1 to %d", NBD_ATTACH_MAX_CONNS);
    return -EINVAL;
  }
  pthread_mutex_lock(&attach_lock);
  if ((slot = find_export(e)) != NULL) {
    snprintf(err, len, "array %s is already attached as /dev/nbd%d", export_name(e),
             slot->index);
    pthread_mutex_unlock(&attach_lock);
    return -EEXIST;
  }
  /* The free slot is filled only at the end, outside this lock: safe
   * because attaches never overlap (every verb runs under the control
   * socket's lock, see the top of this file); only nbd_detach_all() at exit
   * takes the lock for its own reasons. */
  slot = find_export(NULL);
  pthread_mutex_unlock(&attach_lock);
  if (slot == NULL) {
    snprintf(err, len, "%d devices are attached already, the most raidd keeps", MAX_ATTACHED);
    return -ENOSPC;
  }

  /* The server's ends go to the workers first: the kernel may send a
   * request (the partition scan) as soon as it is connected.  If the
   * connect fails, closing the kernel's ends makes the workers drop
   * theirs. */
  for (made = 0; made < nconns; made++) {
    struct nbd_client c = { .tls = NULL, .structured = false, .kernel = true };
    uint32_t pref, max;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds[made]) < 0) {
      snprintf(err, len, "socketpair: %s", strerror(errno));
      r = -errno;
      goto fail;
    }
    if (fcntl(fds[made][0], F_SETFL, O_NONBLOCK) < 0) {
      snprintf(err, len, "fcntl: %s", strerror(errno));
      r = -errno;
      close(fds[made][0]);
      close(fds[made][1]);
      goto fail;
    }
    c.fd = fds[made][0];
    c.exp = e;
    export_ref(e);
    c.tflags = nbd_export_tflags(e);
    nbd_export_block_sizes(e, &c.min_block, &pref, &max);
    snprintf(c.peer, sizeof c.peer, "kernel nbd (%u of %u)", made + 1, nconns);
    if ((r = nbd_server_add_client(&c)) < 0) {    /* took the fd and the reference */
      snprintf(err, len, "the NBD server is stopping");
      close(fds[made][1]);
      goto fail;
    }
  }
  {
    int kfds[NBD_ATTACH_MAX_CONNS];

    for (i = 0; i < nconns; i++)
      kfds[i] = fds[i][1];
    r = kernel_connect(e, index, kfds, nconns, indexp, err, len);
  }
  for (i = 0; i < nconns; i++)
    close(fds[i][1]);
  if (r < 0)
    return r;

  pthread_mutex_lock(&attach_lock);
  export_ref(e);
  slot->e = e;
  slot->index = *indexp;
  slot->nconns = nconns;
  pthread_mutex_unlock(&attach_lock);
  log_event(RAID_LOG_INFO, export_name(e), NULL, "attached",
            "%s: attached as /dev/nbd%d (%u connection%s)", export_name(e), *indexp,
            nconns, nconns == 1 ? "" : "s");
  return 0;

 fail:
  for (i = 0; i < made; i++)
    close(fds[i][1]);
  return r;
}

/* ---- detach ---------------------------------------------------------------------- */

/* Make /dev/nbdINDEX safe to disconnect: not in use (unless FORCE), its
 * cached writes on the array and stable.  0, or -EBUSY with ERR. */
static int
quiesce(int index, bool force, char *err, size_t len)
{
  char path[32];
  int fd;

  snprintf(path, sizeof path, "/dev/nbd%d", index);
  if (blockdev_in_use(path)) {
    if (!force) {
      snprintf(err, len, "%s is in use (mounted, or held by md, device-mapper or "
               "another program): unmount it first, or use --force", path);
      return -EBUSY;
    }
    log_warn("nbd: %s is in use; disconnecting it anyway (--force): its users get "
             "I/O errors", path);
  }
  if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
    /* No node (a container without devtmpfs): nothing cached to flush
     * that raidd could reach. */
    log_warn("nbd: cannot open %s (%m) to flush it; disconnecting anyway", path);
    return 0;
  }
  if (fsync(fd) < 0)
    log_warn("nbd: %s: fsync: %m", path);
  close(fd);
  return 0;
}

int
nbd_detach(struct export *e, bool force, char *err, size_t len)
{
  struct attached *t;
  int index, r;

  pthread_mutex_lock(&attach_lock);
  t = find_export(e);
  index = t ? t->index : -1;
  pthread_mutex_unlock(&attach_lock);
  if (index < 0) {
    snprintf(err, len, "array %s is not attached to a kernel NBD device", export_name(e));
    return -ENOENT;
  }
  if ((r = quiesce(index, force, err, len)) < 0)
    return r;
  if ((r = kernel_disconnect(index, err, len)) < 0)
    return r;
  pthread_mutex_lock(&attach_lock);
  t = find_export(e);
  if (t) {
    t->e = NULL;
    t->index = -1;
  }
  pthread_mutex_unlock(&attach_lock);
  log_event(RAID_LOG_INFO, export_name(e), NULL, "detached", "%s: /dev/nbd%d detached",
            export_name(e), index);
  if (t)
    export_put(e);
  return 0;
}

int
nbd_detach_stale(int index, char *err, size_t len)
{
  char path[64], backend[128] = "";
  FILE *f;
  int r;

  /* A device raidd does not know: one a raidd that is gone connected
   * (its sockets are dead).  Only those whose backend raidd named. */
  snprintf(path, sizeof path, "/sys/block/nbd%d/backend", index);
  if ((f = fopen(path, "r")) != NULL) {
    if (fgets(backend, sizeof backend, f) == NULL)
      backend[0] = '\0';
    fclose(f);
  }
  backend[strcspn(backend, "\n")] = '\0';
  if (strncmp(backend, "raidd:", 6) != 0) {
    snprintf(err, len, "/dev/nbd%d is not attached by raidd%s%s%s", index,
             backend[0] ? " (its backend is \"" : "", backend, backend[0] ? "\")" : "");
    return -ENOENT;
  }
  if ((r = quiesce(index, true, err, len)) < 0 ||
      (r = kernel_disconnect(index, err, len)) < 0)
    return r;
  log_info("nbd: /dev/nbd%d (left by an earlier raidd, %s) disconnected", index, backend);
  return 0;
}

void
nbd_detach_all(void)
{
  for (unsigned i = 0; i < MAX_ATTACHED; i++) {
    struct export *e;
    char err[256];

    pthread_mutex_lock(&attach_lock);
    e = table[i].e;
    if (e)
      export_ref(e);
    pthread_mutex_unlock(&attach_lock);
    if (e == NULL)
      continue;
    if (nbd_detach(e, true, err, sizeof err) < 0)
      log_err("nbd: %s: %s", export_name(e), err);
    export_put(e);
  }
}
