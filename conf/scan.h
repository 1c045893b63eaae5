/* Finding md members on the system and grouping them into arrays, for
 * raidctl's examine --scan and for the assembly driver (assemble.c) that
 * raidctl's assemble --scan and raidd's start (boot.c) share: one set of
 * rules for both.
 *
 * Where to look: every block device (libudev's "block" subsystem, from
 * sysfs, so no udevd is needed) unless the configuration's DEVICE lines
 * list globs, plus what the ARRAY lines' devices= globs match (files too:
 * file-backed members come back from the configuration alone), plus the
 * remote members (NBD URIs) that DEVICE lines and devices= name: those
 * cannot be found by looking, only by being named.  What is read:
 * whatever libblkid calls linux_raid_member, through a read-only open;
 * a remote member's superblock through the library alone (libblkid
 * cannot reach it). */
#ifndef RAID_COMMON_SCAN_H
#define RAID_COMMON_SCAN_H

#include <stdbool.h>
#include <stddef.h>

#include <raid/raid.h>

#include "conf.h"

struct scanned {
  char *path;                    /* device node or file */
  struct raid_superblock sb;
};

/* How much a scan's note matters. */
enum scan_note_level {
  SCAN_NOTE_SKIP,         /* a device that is no member, or unreadable (verbose) */
  SCAN_NOTE_REMOTE,       /* a DEVICE line's remote member that did not answer
                             with a superblock: skipped, to be said */
  SCAN_NOTE_CONFIGURED,   /* the same for a URI an ARRAY line's devices= names:
                             its array misses a member, an error */
};

/* Called with a message for what a scan skips or refuses. */
typedef void (*scan_note_fn)(enum scan_note_level level, const char *msg, void *opaque);

/* Every member found where CONF (may be NULL: every block device) says
 * to look, each path once.  NOTE (may be NULL) hears about each device
 * skipped.  0, or -1 when the devices cannot be listed (NOTE told why). */
int scan_members(const struct conf *conf, scan_note_fn note, void *opaque,
                 struct scanned **out, size_t *n);
void scan_free(struct scanned *s, size_t n);

/* One array found on the devices. */
struct scan_group {
  uint8_t uuid[16];
  char name[64];                 /* the ARRAY line's, else the set name's */
  const struct conf_array *conf; /* its ARRAY line, or NULL */
  char *paths[RAID_MAX_MEMBERS * 2];   /* into the scan */
  unsigned n;
  unsigned expected, present;    /* active roles: last recorded, here and current */
  char refused[256];             /* why it must not be assembled, or "" */
};

/* Group S by set UUID.  With CONF holding ARRAY lines, only the arrays
 * they name (a member outside its line's devices= is left out; a level,
 * member count or metadata that differs from the line's refuses the
 * array); otherwise every array.  ONLY (may be NULL): just the array of
 * that name.  Counts the roles the freshest superblock calls active and
 * how many are here with current events (or one update behind, as
 * raid_array_assemble() takes them).  Returns the number of groups. */
unsigned scan_group(struct scanned *s, size_t ns, const struct conf *conf, const char *only,
                    struct scan_group *g, unsigned max);

#endif
