/* md/assemble*.c: what the phases of assembly share (assemble.c runs
 * them; assemble-shape.c and assemble-force.c decide parts of phase 2). */
#ifndef RAID_MD_ASSEMBLE_H
#define RAID_MD_ASSEMBLE_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* A member behind the freshest superblock, and what force makes of it. */
struct behind {
  unsigned idx;                 /* into the members given */
  unsigned role;                /* its own superblock's, or RAID_SB_ROLE_* */
  bool faulty;                  /* the freshest superblock has it faulty */
  bool taken;
  char why[512];                /* why it cannot be forced, or "" */
};

/* What assembly learns from the members' superblocks and decides from them
 * (phases 1 and 2); nothing is written before phase 3. */
struct assembly {
  struct raid_member *const *members;   /* the caller's, N of them */
  unsigned n, flags;
  const char *name;                     /* the caller's name, or NULL */
  const char *aname;                    /* the array's name */
  struct raid_superblock *sbs;          /* each member's */
  struct raid_superblock *fresh;        /* the freshest: the truth about roles */
  unsigned best;                        /* its index */
  char uuid[40];
  /* The roles: each role's member, its data offset and recovery point
   * (UINT64_MAX: in sync); a replacement per role (index + 1) and how far
   * it got; spares; which members are used. */
  struct raid_member *slots[RAID_MAX_MEMBERS];
  uint64_t moff[RAID_MAX_MEMBERS];
  uint64_t recov[RAID_MAX_MEMBERS], repl_off[RAID_MAX_MEMBERS];
  unsigned repl_idx[RAID_MAX_MEMBERS], spare_idx[RAID_MAX_MEMBERS], nspares;
  bool used[RAID_MAX_MEMBERS];
  unsigned found, expected;             /* active members present, were active */
  struct behind *b;                     /* members behind: forced assembly */
  unsigned nb, nforced;
  struct raid_bitmap_super fresh_bsb;   /* the bitmap's superblock, if any */
  bool have_bsb;
  struct raid_config cfg;
};

/* assemble-shape.c: members one update behind a change of shape. */
bool asm_same_geometry(const struct raid_superblock *x, const struct raid_superblock *y);
bool asm_regrown(const struct raid_superblock *sb, const struct raid_superblock *fresh);
bool asm_missed_reshape_start(struct raid_superblock *sb, const struct raid_superblock *fresh,
                              unsigned role);
bool asm_missed_reshape_finish(struct raid_superblock *sb, const struct raid_superblock *fresh,
                               unsigned role);
bool asm_filled_one_behind(const struct raid_superblock *sb,
                           const struct raid_superblock *fresh, unsigned role, uint64_t *recp);
/* Phase 2e's part for a reshape under way, and the array set up for it. */
int asm_reshape_check(struct assembly *x);
void asm_reshape_setup(struct assembly *x, struct raid_array *a);

/* assemble-force.c: phase 2c, members behind forced back (--force), and
 * what was forced said once the array started. */
int asm_force(struct assembly *x);
int asm_forced_started(struct raid_array *a);

#endif
