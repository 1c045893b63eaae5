/* raidd internals: one section per source file. */
#ifndef RAIDD_H
#define RAIDD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <raid/raid.h>

/* ---- log.c: stderr, syslog or the journal (raidd --log) ---------------- */
enum log_mode { LOGTO_AUTO, LOGTO_STDERR, LOGTO_SYSLOG, LOGTO_JOURNAL };
/* "auto", "stderr", "syslog", "journal": 0, or -EINVAL. */
int log_parse_mode(const char *s, enum log_mode *out);
/* Before any thread starts.  LOGTO_AUTO: the journal under systemd, stderr
 * in the foreground, syslog for a daemon. */
void log_init(enum log_mode mode, bool foreground, int verbose);
/* Where the log goes, LOGTO_AUTO resolved. */
enum log_mode log_mode(void);
/* A daemon's errors and warnings go to stderr too until it detaches. */
void log_detached(void);
void log_msg(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A message about ARRAY and its MEMBER, an EVENT ("failed", "rebuilt"):
 * the journal gets them as RAID_ARRAY=, RAID_MEMBER=, RAID_EVENT= (each
 * may be NULL); elsewhere only the message goes, which names them. */
void log_event(int priority, const char *array, const char *member, const char *event,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A message that can come in a storm (a refused connection: one per
 * client) goes through its own struct log_limit, one per cause: it is
 * logged at most once every LOG_LIMIT_SECONDS, and the next one logged
 * says how many were not ("(and 37 more like it in the last 10 s, not
 * logged)").  Thread-safe. */
#define LOG_LIMIT_SECONDS 10
struct log_limit {
  pthread_mutex_t lock;
  int64_t last_ns;              /* when one was last logged, CLOCK_MONOTONIC; 0: never */
  unsigned suppressed;          /* not logged since */
};
#define LOG_LIMIT_INIT { PTHREAD_MUTEX_INITIALIZER, 0, 0 }
void log_limited(struct log_limit *l, int priority, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
#define log_err(...) log_msg(RAID_LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(RAID_LOG_WARNING, __VA_ARGS__)
#define log_info(...) log_msg(RAID_LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(RAID_LOG_DEBUG, __VA_ARGS__)

/* ---- exports.c: the running arrays, by name ------------------------------ */
/* An export is a running array served over NBD under its name.  Lookups
 * (at NBD handshake, from the control socket) take a reference; the data
 * path then uses the array without any lock. */
struct export;
/* Reference to the export NAME, or NULL.  Thread-safe. */
struct export *export_get(const char *name);
/* Another reference to E, which the caller holds one of. */
void export_ref(struct export *e);
void export_put(struct export *e);
struct raid_array *export_array(const struct export *e);
const char *export_name(const struct export *e);
const char *export_description(const struct export *e);   /* "raid5, 4 members, ..." */
bool export_readonly(const struct export *e);
/* Call FN for every export (NBD_OPT_LIST, raidctl status).  Thread-safe. */
void exports_foreach(void (*fn)(struct export *e, void *opaque), void *opaque);
/* Number of NBD connections using E (counted by nbd_conn_*). */
void export_conn_add(struct export *e, int delta);
int export_conns(const struct export *e);

/* ---- nbd-*.c: the NBD server (NetworkBlockDevice/nbd doc/proto.md) ------- */
enum nbd_tls_mode { NBD_TLS_OFF, NBD_TLS_ON, NBD_TLS_REQUIRE };
struct nbd_acl;
struct nbd_server_config {
  const char *unix_path;         /* NULL: no unix socket */
  const char *tcp_listen;        /* "HOST:PORT" or NULL */
  unsigned threads;              /* worker threads, >= 1 */
  enum nbd_tls_mode tls;         /* --tls: off, on (offered), require */
  const char *tls_certificates;  /* DIR: ca-cert.pem, server-cert.pem, server-key.pem */
  const char *tls_psk;           /* psktool's USERNAME:HEXKEY file */
  bool tls_verify_peer;          /* client certificates checked against the CA */
  struct nbd_acl *allow;         /* TCP clients let in; NULL: all (--allow) */
  const char *group;             /* unix socket's group (0660), or NULL */
};
/* --tls's VALUE: the mode, or -1 (not off, on or require). */
int nbd_tls_parse_mode(const char *value);
/* Append --allow's ADDR[/PREFIXLEN][,...] to *ACL: 0, or -1 (logged). */
int nbd_acl_add(struct nbd_acl **acl, const char *spec);
void nbd_acl_free(struct nbd_acl *acl);
/* Bind the sockets and start the worker threads.  0 or -errno (logged). */
int nbd_server_start(const struct nbd_server_config *cfg);
/* Before nbd_server_start(): serve FD, a listening socket systemd passed
 * (unix unless TCP); it replaces the socket of its kind in the config,
 * which then only names it.  0 or -errno (logged; FD closed). */
int nbd_server_adopt(int fd, bool tcp);
/* Stop accepting, finish every request in flight, reply, close every
 * connection, join the threads. */
void nbd_server_stop(void);
/* Close every connection to export E (after finishing their requests);
 * returns when they are gone.  For raidctl stop --force. */
void nbd_server_disconnect(struct export *e);
/* The number of worker threads (at least 1). */
unsigned nbd_server_threads(void);

/* ---- blockdev.c: the block devices raidd makes ---------------------------- */
/* Whether the block device PATH is open exclusively (mounted, or held by
 * md, device-mapper, mkfs...); false also when it cannot be opened. */
bool blockdev_in_use(const char *path);

/* ---- nbd-attach.c: the kernel's NBD client on an export ------------------ */
#define NBD_ATTACH_MAX_CONNS 16
/* Connect /dev/nbdINDEX (INDEX -1: a free one the kernel picks) to export
 * E over NCONNS connections.  0 with *INDEXP set, or -errno with ERR
 * saying why (no NBD driver, device busy, ...). */
int nbd_attach(struct export *e, int index, unsigned nconns, int *indexp,
               char *err, size_t len);
/* The index of E's kernel NBD device, or -1. */
int nbd_attached(const struct export *e);
/* Tell E's kernel NBD device (if any) the array's size now (raidctl
 * grow).  0, or -errno with ERR saying why. */
int nbd_attached_resize(struct export *e, char *err, size_t len);
/* manage.c: ARRAY's reshape ended; its devices take the new size. */
void grow_reshape_done(const char *array);
/* The export attached to /dev/nbdINDEX, or NULL.  No reference is taken:
 * it stays valid while the caller holds the control lock (the verbs). */
struct export *nbd_attached_export(int index);
/* Flush and disconnect E's device.  -EBUSY (ERR set) while it is mounted
 * or held, unless FORCE; -ENOENT when E has none. */
int nbd_detach(struct export *e, bool force, char *err, size_t len);
/* Disconnect /dev/nbdINDEX that an earlier raidd attached (its backend
 * says "raidd:"), whose sockets died with it. */
int nbd_detach_stale(int index, char *err, size_t len);
/* Detach every device (raidd's exit; in use or not). */
void nbd_detach_all(void);

/* ---- ublk.c, ublk-queue.c: arrays as /dev/ublkbN (Linux >= 6.0) ---------- */
#define UBLK_DEFAULT_QUEUE_DEPTH 128
#define UBLK_MAX_QUEUE_DEPTH_OPT 1024
/* Every device made from now on: QUEUES queues (raidd --threads; the
 * kernel takes at most one per CPU), DEPTH requests each; their records
 * (ublk-recover.c) in the directory of the control socket CONTROL. */
void ublk_configure(unsigned queues, unsigned depth, const char *control);
/* Whether /dev/ublk-control exists; if not, ERR says so and what to do. */
bool ublk_available(char *err, size_t errlen);
/* N of the /dev/ublkbN serving E, or -1. */
int ublk_dev_of(const struct export *e);
/* Delete E's device (refused while it is open exclusively, e.g. mounted,
 * unless FORCE): 0, or -1 with ERR saying why. */
int ublk_remove(struct export *e, bool force, char *err, size_t errlen);
/* Delete every device, their requests finished (raidd's shutdown). */
void ublk_stop_all(void);

/* ---- service.c: running under systemd ------------------------------------ */
/* Sockets systemd passed (LISTEN_FDS, matched by FileDescriptorName= "nbd"
 * or "nbd-tcp", else by type): handed to the NBD server, NBD's fields set
 * to their addresses.  SERVICE_NBD_UNIX and/or SERVICE_NBD_TCP for those
 * taken, 0 for none, or -1 (logged). */
/* Take what systemd passed before raidd forks: 0, or -errno (reported by
 * service_sockets()). */
int service_init(void);
#define SERVICE_NBD_UNIX 1
#define SERVICE_NBD_TCP 2
int service_sockets(const char *control, struct nbd_server_config *nbd);
/* Whether systemd waits for our notices (NOTIFY_SOCKET): raidd then stays
 * in the foreground (Type=notify). */
bool service_notify_wanted(void);
/* READY=1 with MAINPID and STATUS "serving N arrays". */
void service_ready(void);
/* STATUS: the arrays served now (an array started or stopped). */
void service_status(void);
/* STOPPING=1: the stop signal came; arrays are being flushed. */
void service_stopping(void);

#endif
