/* The configuration file, /etc/raidd.conf (raidd.conf(5)), read by raidd
 * and raidctl: mdadm.conf's syntax where the two overlap.
 *
 *   DEVICE partitions | GLOB... | URI... where members are looked for
 *   ARRAY NAME [UUID=..] [name=..] [devices=GLOB|URI,..] [spares=N] [level=..]
 *              [num-devices=N] [metadata=..] [readonly=yes]
 *              [blockdev=ublk|nbd|/dev/nbdN|none]
 *   MAILADDR, MAILFROM, PROGRAM          alerts (raidd --mailaddr ...)
 *   any other keyword                    one of raidd's long options
 *                                        ("THREADS 2" is --threads=2)
 *
 * Comments start with '#'; a line starting with white space continues
 * the one before; keywords are case-insensitive.  conf_read() only parses:
 * what a setting means is for raidd's option parser, which is given
 * each setting with its line number, so one set of checks serves the
 * command line and the file. */
#ifndef RAID_COMMON_CONF_H
#define RAID_COMMON_CONF_H

#include <stdbool.h>
#include <stdint.h>

#define RAIDD_CONF_DEFAULT "/etc/raidd.conf"

struct conf_array {
  unsigned line;
  char name[64];                 /* "/dev/md/NAME" and "NAME" give NAME */
  bool has_uuid;
  uint8_t uuid[16];
  char set_name[64];             /* name=, "" if not given */
  char **devices;                /* devices= globs, and remote members' URIs */
  unsigned ndevices;
  int spares;                    /* spares=, -1 if not given */
  int level;                     /* level=, -100 if not given */
  int raid_disks;                /* num-devices=, 0 if not given */
  char metadata[8];              /* metadata=, "" if not given */
  bool readonly;                 /* readonly=yes */
  char blockdev[24];             /* blockdev=: "ublk", "nbd", "/dev/nbdN"; "" none */
};

struct conf_setting {
  unsigned line;
  char *key;                     /* lower case: "threads", "mailaddr" */
  char *value;                   /* the rest of the line, "" if none */
};

struct conf {
  char *path;
  bool devices_all;              /* no DEVICE glob, or "DEVICE partitions" */
  char **device_globs;
  unsigned ndevice_globs;
  char **device_uris;            /* DEVICE's remote members (NBD URIs): looked */
  unsigned ndevice_uris;         /* at besides the globs or every block device */
  struct conf_array *arrays;
  unsigned narrays;
  struct conf_setting *settings;
  unsigned nsettings;
  unsigned errors;               /* lines refused (each reported) */
};

/* Called with "PATH:LINE: what is wrong" for each line refused. */
typedef void (*conf_error_fn)(const char *msg, void *opaque);

/* Read PATH.  Lines that are wrong are reported through ERR and left out
 * (the rest is still read: arrays that are right still come back).
 * 0 with *OUT set, or -errno when the file cannot be read (-ENOENT: it
 * does not exist), with ERR told why. */
int conf_read(const char *path, conf_error_fn err, void *opaque, struct conf **out);
void conf_free(struct conf *c);

/* The configured array that a member with this superblock identity
 * belongs to (by UUID, else name=, else the ARRAY's own name against the
 * set name's part after ':'), or NULL.  PATH, when not NULL, must also
 * match the ARRAY's devices= globs if it has any. */
const struct conf_array *conf_find_array(const struct conf *c, const uint8_t *uuid,
                                         const char *set_name, const char *path);
/* PATH matches one of A's devices= globs or is one of its URIs, or A has
 * none. */
bool conf_array_has_device(const struct conf_array *a, const char *path);

/* The control verb that gives an array the device its ARRAY line's
 * BLOCKDEV names (non-empty): "ublk", or "attach" with *DEVICE the
 * /dev/nbdN to use (NULL: a free one). */
const char *conf_blockdev_verb(const char *blockdev, const char **device);

#endif
