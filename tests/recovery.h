/* Shared by the sync engine's suites (test-rebuild, test-scrub,
 * test-resync, test-sync-errors): the configurations they loop over,
 * assertions on member listings and states, running a sync action to its
 * end, a captured log, and arrays of RAM members with a shadow copy
 * (tests/recovery.c). */

#ifndef RAID_TEST_RECOVERY_H
#define RAID_TEST_RECOVERY_H

#include <stdbool.h>
#include <stdint.h>

#include "testlib.h"

#define SYNC_DEADLINE_S 120.0   /* no sync action of ours takes this long */

/* ---- members and time */

/* The role an add or a lookup gave (-1: spare or no role), or -errno. */
int add_member(struct raid_array *a, struct raid_member *m);
int find_member(struct raid_array *a, const char *name);
double now_s(void);
void sleep_ms(unsigned ms);

/* ---- the library's messages since test_log_capture(RAID_LOG_INFO) (testlib.h) */

/* The byte offset in the last "ACTION started at N" message, or -1. */
int64_t log_action_start(const char *action);
int64_t log_recover_start(void);

/* ---- configurations: RAID 1 over 2 and 3, RAID 5 over 3 and 4 (three
 * layouts), RAID 10 near-2 over 4 and 3; build_confs() fills rconfs */

extern struct tconf rconfs[8];
extern unsigned nrconfs;
extern uint64_t data_bytes;     /* bytes of each member holding data */
void build_confs(void);
/* The member to lose in configuration I: a different one from one
 * configuration to the next. */
unsigned victim(unsigned i);

/* ---- member listing */

/* The entry of raid_array_members() for NAME. */
bool find_info(struct raid_array *a, const char *name, struct raid_member_info *out);
void assert_listed(struct raid_array *a, const char *desc, const char *name, int role,
                   int state);
void assert_state(struct raid_array *a, const char *desc, unsigned slot, int state);
/* R is REF (negative errno) and the message names WHAT. */
void assert_refused(int r, int ref, const char *what, const char *desc, const char *call);

/* ---- sync actions */

void get_sync_status(struct raid_array *a, struct raid_sync_status *st);
/* Wait for the engine while running POLL (if any) each round; fails the
 * test if it takes unreasonably long.  Returns raid_array_sync_wait(). */
int wait_sync(struct raid_array *a, const char *desc, void (*poll)(void *), void *arg);
/* Run ACTION to its end; assert it succeeded; return its mismatches. */
uint64_t run_action(struct raid_array *a, const char *desc, int action);
void assert_check_clean(struct raid_array *a, const char *desc);

/* ---- member files */

/* Fill the whole array with tagged data. */
void tarray_fill(struct tarray *t);
/* Member file J of X now backs role SLOT of T, and the file it replaced
 * belongs to X. */
void swap_in(struct tarray *t, unsigned slot, struct tmembers *x, unsigned j);
/* Read everything with the rebuilt member SLOT as the only copy. */
void verify_from(struct tarray *t, unsigned slot);
/* Read or write LEN bytes of the file PATH at OFF, bypassing the cache. */
void file_rw(const char *path, bool write, void *buf, size_t len, uint64_t off);

/* ---- arrays of RAM members */

struct rarray {
  struct raid_array *a;
  struct raid_member *m[RAID_MAX_MEMBERS];   /* as given (fault wrappers) */
  char mname[RAID_MAX_MEMBERS][48];
  char aname[32];
  char desc[160];
  unsigned n, id;
  uint64_t size;
  uint8_t *shadow;
  struct rng rng;
  uint64_t gen;
};

struct raid_member *ram_member(const char *name, uint64_t size, bool fault);
void rarray_new(struct rarray *ra, int level, int layout, unsigned n, uint64_t member,
                uint64_t fault_mask, unsigned id);
void rarray_fill(struct rarray *ra);
void rarray_verify(struct rarray *ra, const char *when);
/* Read all of array A (SIZE bytes) and compare it with SHADOW; a
 * difference fails the test naming DESC, WHEN and the byte. */
void verify_shadow(struct raid_array *a, const uint8_t *shadow, uint64_t size,
                   const char *desc, const char *when);
void rarray_free(struct rarray *ra);
/* Fail role SLOT and add a fresh RAM member (fault-wrapped if FAULT) in
 * its place; returns it. */
struct raid_member *rarray_renew(struct rarray *ra, unsigned slot, const char *suffix,
                                 bool fault);

#endif
