/* The stress harness (tests/stress.c, tests/stress-control.c) shared by
 * the stress suites (test-stress-sync, test-stress-degraded,
 * test-stress-rebuild, test-stress-spares): one array shared by many
 * threads while its membership changes, built to find races that only
 * show under load.  Each suite runs some of the scenarios below, on every
 * configuration; a case keeps its number (its seed) from the full list.
 *
 * Load.  THREADS threads (more than the cores), each with its own
 * raid_queue and up to QD asynchronous requests in flight, share a small
 * array (a few MiB: requests meet on the same rows all the time).  Requests
 * are reads, writes (some FUA), write-zeroes, discards and flushes of
 * random sizes and alignments, from one sector to several rows, plus three
 * shapes made to collide across threads:
 *   - whole rows (full-stripe writes);
 *   - "jobs": the same columns of every data chunk of one row, one piece
 *     per chunk, the pieces handed out to whichever threads come next
 *     (a shared ticket), so different threads write complementary chunks
 *     of a row at the same moment (RAID 5 merges such pieces into one
 *     full-stripe write);
 *   - "streams": sequential writes of 1.5 and 0.5 rows whose consecutive
 *     segments go to different threads (RAID 5 plugs a segment ending in
 *     the middle of a row and merges the next one into it).
 * Some members are wrapped in fault injectors that only delay (a different
 * delay per range), so member I/O completes out of order.  One RAID 1 has
 * a bitmap and writes behind on its slow write-mostly member (md's
 * write-behind), so writes complete before one of their copies lands.
 *
 * Checking under any interleaving.  A shared claim table holds an atomic
 * word per 512-byte sector: a writer claims every sector of its request
 * exclusively, a reader shares them, all or nothing, before submitting, and
 * releases them when the request completes.  So no two requests touch the
 * same bytes at once (the expected contents are always defined), yet
 * threads constantly write different bytes of the same rows and the same
 * bytes at different times.  A shadow copy is updated when a write
 * completes; every read is compared with it when it completes.  Each
 * completion must run exactly once, on the thread that owns the queue,
 * inside raid_queue_run(), with success, and raid_queue_in_flight() must
 * match the thread's count.  Writes carry sector tags (array sector and
 * thread/write number), so misplaced data is named.
 *
 * Membership changes.  Meanwhile a control thread (the test's own) changes
 * the array in one of eight scenarios, only in ways the array survives:
 *   sync      nothing changes; redundant levels run check (scrub) under
 *             load, which must find no mismatch;
 *   degraded  a role is missing (or failed) from the start; levels that
 *             survive it lose a second one in the middle;
 *   fail      a member fails in the middle of the load (a second one later
 *             where the level survives it);
 *   rebuild   fail, remove, add a new member, rebuild under load;
 *   replace   raid_array_replace_member() under load, then remove the old;
 *   spare     add hot spares (as many as the array takes, then back to
 *             two), fail roles with auto sync on: the spares take over;
 *   remove    a forced removal of an in-sync member, and the removal of a
 *             failed member right after it failed, with its I/O in flight;
 *   cycle     repeated fail -> remove -> add -> rebuild.
 * Rebuilds run with auto sync on or with raid_array_sync_start(), half of
 * them under a rate limit so they overlap more of the load.  The suites:
 * test-stress-sync (sync), test-stress-degraded (degraded, fail),
 * test-stress-rebuild (rebuild, replace, cycle), test-stress-spares (spare,
 * remove).
 *
 * Afterwards: every thread's requests completed, the whole array reads
 * back as the shadow (degraded if it is), then the array is made whole
 * (members added, rebuilt), read back again, a check (scrub) must find no
 * mismatch, and the members, read directly, must hold md's layout with
 * every RAID 5 parity chunk the XOR of its row and every mirror copy equal.
 * One line per case reports the requests, bytes written and verified,
 * membership changes and errors.
 *
 * Knobs (environment):
 *   RAID_TEST_SCALE  percent of the default request count (testlib);
 *   TORTURE_SECONDS=N  run each case N seconds of wall time instead,
 *                      repeating its membership changes (make check-torture);
 *   STRESS_ONLY=TEXT   run only the cases whose name contains TEXT
 *                      ("raid5", "cycle", "raid10 near-2 disks=3");
 *   STRESS_HANG_SECONDS=N  the watchdog's patience (default 60): when no
 *                      request completes and the control thread makes no
 *                      progress for that long, it prints every request in
 *                      flight and aborts.
 * Nothing waits on time for correctness: waits are for conditions (a count
 * of completed requests, the sync engine going idle); the watchdog and
 * Check's timeout are only safety nets against hangs.
 */

#ifndef RAID_TEST_STRESS_H
#define RAID_TEST_STRESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "testlib.h"

#define THREADS 4
#define QD 16
/* Requests per case, all threads together, at RAID_TEST_SCALE=100. */
#define OPS_DEFAULT 3000
#define OPS_SANITIZER 1200
#define HANG_DEFAULT_S 60
#define MAX_ERRORS_KEPT 6
#define SPARE_PROBE (RAID_MAX_MEMBERS + 4)

/* ---- configurations and cases (tests/stress-control.c lists them) */

struct sconf {
  int level;
  int layout;
  unsigned disks;
  uint32_t chunk;
  uint64_t data;             /* bytes of data per member */
  unsigned delay_mask;       /* roles wrapped in fault injectors that delay */
  unsigned delay_us;         /* largest delay */
  bool create;               /* raid_array_create() (md superblocks) */
  unsigned wm_mask;          /* RAID 1: write-mostly roles (with create: a bitmap */
  uint32_t write_behind;     /* and write-behind of this many writes) */
};

/* The scenarios, in the order that numbers the cases. */
enum scen { SC_SYNC, SC_DEGRADED, SC_FAIL, SC_REBUILD, SC_REPLACE, SC_SPARE,
            SC_REMOVE, SC_CYCLE, SC_N };

struct stress;

struct scase {
  unsigned id;               /* in the full list: seeds, names (STRESS_ONLY keeps them) */
  unsigned conf;
  enum scen sc;
  void (*run)(struct stress *s);
  char name[160];
};

/* A scenario: what the control thread does to the array while the load
 * runs (the suites' own files). */
struct stress_scenario {
  enum scen sc;
  void (*run)(struct stress *s);
};

/* ---- the shared state of a case */

enum kind { K_READ, K_WRITE, K_ZERO, K_DISCARD, K_FLUSH };
enum src { SRC_RANDOM, SRC_ROWS, SRC_JOB, SRC_STREAM };

struct sthread;

/* One request slot of a thread.  The descriptor is written under the
 * thread's lock (the watchdog reads it from its own thread). */
struct sreq {
  struct sthread *th;
  bool busy;
  enum kind kind;
  enum src src;
  unsigned flags;
  uint64_t off;
  size_t len;
  uint8_t *buf;
  uint64_t t0_ns;
};

/* A request to make: what try_submit() needs. */
struct sdesc {
  enum kind kind;
  enum src src;
  unsigned flags;
  uint64_t off;
  size_t len;
};

struct sthread {
  struct stress *s;
  unsigned id;
  pthread_t tid;
  struct raid_queue *q;
  struct rng rng;
  pthread_mutex_t lock;      /* guards req[] descriptors */
  struct sreq req[QD];
  unsigned in_flight;
  bool in_run;               /* inside raid_queue_run() */
  bool event_loop;           /* poll(2) on raid_queue_fd() */
  bool owed;                 /* a ticket taken but not yet submitted */
  struct sdesc owed_d;
  uint64_t gen;
  /* counts */
  uint64_t submitted, completed;
  uint64_t n[5], bytes[5];
  uint64_t whole_rows;       /* RAID 5 rows written whole by one request */
  uint64_t late_wakeups;     /* poll timed out, then requests were done */
};

struct stream {
  uint64_t base, len, n;     /* segment k: base + (k % n) * len */
  _Atomic uint64_t ticket;
};

struct stress {
  const struct sconf *cf;
  const struct scase *k;
  unsigned idx;
  uint64_t seed;
  struct tconf c;            /* for tcheck_layout() and tconf_survives() */
  struct tarray ref;         /* only c, desc, shadow, size: for tarray_diff() */
  char desc[256];
  struct raid_array *a;
  uint64_t size, member_size, data_offset, member_bytes;
  /* Geometry of the shapes: rows of D pieces of C bytes. */
  uint64_t C, rb, rows;
  unsigned D;
  uint64_t maxreq;
  uint8_t *shadow;
  _Atomic uint16_t *claim;   /* per sector: readers, or CLAIM_W */
  struct sthread th[THREADS];
  _Atomic bool stop;
  _Atomic bool load_running;       /* the watchdog expects completions */
  _Atomic uint64_t completed;      /* requests, every thread */
  _Atomic uint64_t ctl_progress;   /* control steps and sync progress */
  _Atomic(const char *) phase;     /* what the control thread does */
  _Atomic uint64_t job_ticket;
  struct stream stream[2];
  /* errors, from any thread */
  pthread_mutex_t err_lock;
  _Atomic unsigned errors;
  char err[MAX_ERRORS_KEPT][1024];
  /* control thread only */
  struct rng crng;
  bool auto_sync, limited;
  uint64_t target;
  uint64_t t_start, deadline;      /* ns; deadline 0: count bound */
  unsigned changes;
  unsigned members_made;
  /* watchdog */
  pthread_t wd;
  pthread_mutex_t wd_lock;
  pthread_cond_t wd_cond;
  bool wd_quit;
};

extern unsigned hang_s;        /* STRESS_HANG_SECONDS: the watchdog's patience */
extern const char *stress_prog; /* the suite's name, in messages */

/* ---- tests/stress.c: the load, the watchdog, errors */

void log_fn(int priority, const char *msg, void *opaque);
/* Print the library's last log messages. */
void log_dump(void);
uint64_t now_ns(void);
/* Let other threads run while waiting for a condition. */
void nap(void);
/* Record an error (from any thread) and stop the case. */
void serr(struct stress *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool failed(struct stress *s);
void set_phase(struct stress *s, const char *what);
/* A load thread: requests on its own queue until s->stop. */
void *thread_main(void *arg);
/* Aborts with every request in flight printed when nothing moves for
 * hang_s seconds. */
void *watchdog_main(void *arg);

/* ---- tests/stress-control.c: members and control steps for the
 * scenarios, the test case, main() */

struct raid_member *new_member(struct stress *s, bool delayed, struct rng *r);
bool redundant(const struct stress *s);
/* Roles that are not in sync (faulty, missing, recovering). */
uint64_t lost_mask(struct stress *s);
/* A random in-sync role whose loss the array survives, or -1. */
int pick_victim(struct stress *s);
/* The name of role SLOT's member (free it), or NULL. */
char *role_name(struct stress *s, unsigned slot);
bool timed_out(struct stress *s);
/* Wait until the load has completed N more requests. */
bool wait_ops(struct stress *s, uint64_t n);
/* Wait for the sync engine to be idle with nothing due; it must have
 * succeeded. */
bool wait_sync(struct stress *s, const char *what);
/* Start recovery unless auto sync does, then wait for it. */
bool rebuild(struct stress *s, const char *what);
bool expect_state(struct stress *s, unsigned slot, int state, const char *when);
bool ctl_fail(struct stress *s, unsigned slot);
bool ctl_remove(struct stress *s, const char *name, unsigned flags);
/* Add a new member; its role (-1: spare) in *ROLEP. */
bool ctl_add(struct stress *s, int *rolep, char **namep);
/* Fail role SLOT (unless FORCE: remove it in sync), remove it, add a new
 * member into it, rebuild. */
bool cycle_role(struct stress *s, unsigned slot, bool force, bool wait_between);
/* Spares removed until KEEP are left. */
bool remove_spares(struct stress *s, unsigned keep);
/* Repeat while there is time (torture) or for N rounds. */
bool more(struct stress *s, unsigned *round, unsigned n);

/* Run the cases of the scenarios in SC (N of them) on every configuration:
 * the suite's main(). */
int stress_main(const char *program, const struct stress_scenario *sc, unsigned n);

#endif
