/* The configured arrays: assembled at start and when members appear (boot.c). */
#ifndef RAIDD_BOOT_H
#define RAIDD_BOOT_H

#include "conf.h"

/* The configuration (kept, not copied; NULL: none). */
void boot_set_conf(const struct conf *c);
/* Whether the configuration lists arrays. */
bool boot_configured(void);
/* Assemble the configured arrays: every one whose members are all there,
 * then, after waiting up to TIMEOUT seconds for the others, those that
 * can run degraded.  Returns how many configured arrays do not run once
 * it is done (each logged): each counted once, however often it was
 * tried. */
unsigned boot_assemble(int timeout);
/* A device with superblock SB appeared at PATH (udev-watch.c): if it
 * belongs to a configured array that does not run, start that array once
 * all its active members are there. */
void boot_device_appeared(const char *path, const struct raid_superblock *sb);

#endif
