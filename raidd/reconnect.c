/* Remote members that come back by themselves: md's re-add, done by raidd
 * for members on NBD servers.
 *
 * A remote member whose server drops, or stops answering, is lost
 * (lib/member/nbd.c): its I/O fails and its array fails it as it would a
 * dead disk, the write-intent bitmap recording what it misses.  This
 * thread then keeps looking at every faulty member named by a URI whose
 * connection was lost (raid_member_info's lost: not one failed by hand,
 * raidctl fail, nor one whose server answered with errors, which stay
 * failed as md leaves them), with a backoff (0.5 s doubling to 10 s), and
 * when the URI answers again:
 *  - its superblock is of this array and it was not used on its own since
 *    it left (raid_superblock_split(): its events not ahead of the
 *    array's, none of the array's working devices marked faulty in it):
 *    the faulty member is removed and the new connection added, which the
 *    library turns into md's re-add (only the bitmap's dirty chunks are
 *    rebuilt) when the bitmap covers what it missed, or a full recovery;
 *  - no superblock at all (a new, empty disk behind the same URI): added,
 *    so rebuilt in full;
 *  - another array's superblock, or a split mirror: refused and said once,
 *    and not tried again while it stays faulty; nothing is written to it.
 * The look at the URI (connect, read the superblock) happens without
 * control_lock(), since a connect may take its connect-timeout; the
 * decision and the change happen under it, after checking that the member
 * is still faulty.  raidd --no-re-add turns this off, as it turns off the
 * re-add of local disks that reappear. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "raidd.h"
#include "control.h"
#include "reconnect.h"

#define MAX_WATCHED (RAID_MAX_MEMBERS * 4)
#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 10000

struct watched {
  char array[64];
  char uri[1024];
  uint64_t next_ms;             /* when to look next */
  unsigned backoff_ms;
  bool refused;                 /* said why not; wait until it leaves */
  bool seen;                    /* still faulty in the last walk */
};

static struct watched watched[MAX_WATCHED];
static unsigned nwatched;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_t thread;
static bool running;
static _Atomic bool quitting;

static uint64_t
now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct watched *
find(const char *array, const char *uri)
{
  unsigned i;

  for (i = 0; i < nwatched; i++)
    if (strcmp(watched[i].array, array) == 0 && strcmp(watched[i].uri, uri) == 0)
      return &watched[i];
  return NULL;
}

/* exports_foreach(): note every faulty remote member of E. */
static void
note_faulty(struct export *e, void *opaque)
{
  struct raid_member_info info[RAID_MAX_MEMBERS * 3];
  unsigned i, n = raid_array_members(export_array(e), info, RAID_MAX_MEMBERS * 3);
  struct watched *w;

  for (i = 0; i < n && i < RAID_MAX_MEMBERS * 3; i++) {
    if (info[i].name == NULL || info[i].state != RAID_MEMBER_FAULTY ||
        !raid_member_spec_is_remote(info[i].name) || !info[i].lost)
      continue;
    if ((w = find(export_name(e), info[i].name)) == NULL && nwatched < MAX_WATCHED) {
      w = &watched[nwatched++];
      memset(w, 0, sizeof *w);
      snprintf(w->array, sizeof w->array, "%s", export_name(e));
      snprintf(w->uri, sizeof w->uri, "%s", info[i].name);
      w->backoff_ms = BACKOFF_MIN_MS;
      w->next_ms = now_ms() + BACKOFF_MIN_MS;
      log_info("%s: remote member %s is faulty: raidd takes it back when its "
               "server answers again", w->array, w->uri);
    }
    if (w)
      w->seen = true;
  }
}

/* Is URI still a faulty member of E? */
static bool
still_faulty(struct export *e, const char *uri)
{
  struct raid_member_info info[RAID_MAX_MEMBERS * 3];
  unsigned i, n = raid_array_members(export_array(e), info, RAID_MAX_MEMBERS * 3);

  for (i = 0; i < n && i < RAID_MAX_MEMBERS * 3; i++)
    if (info[i].name && strcmp(info[i].name, uri) == 0)
      return info[i].state == RAID_MEMBER_FAULTY;
  return false;
}

enum look { LOOK_AWAY, LOOK_OURS, LOOK_EMPTY, LOOK_REFUSE };

/* Connect to W's URI and read its superblock (no lock held): what came
 * back.  WHY gets the reason of a refusal. */
static enum look
look(struct watched *w, struct export *e, char *why, size_t len)
{
  struct raid_superblock *sb = malloc(sizeof *sb), *cur = malloc(sizeof *cur);
  struct raid_member *m;
  enum look r = LOOK_AWAY;
  unsigned k;

  if (sb == NULL || cur == NULL)
    goto out;
  if (raid_member_open(w->uri, RAID_MEMBER_READONLY, &m) < 0)
    goto out;                   /* not back yet */
  if (raid_superblock_read(m, sb) < 0)
    r = LOOK_EMPTY;
  else if (raid_array_superblock(export_array(e), cur) < 0 ||
           memcmp(sb->set_uuid, cur->set_uuid, 16) != 0) {
    snprintf(why, len, "it now holds a member of another array (%s)", sb->set_name);
    r = LOOK_REFUSE;
  }
  else if (raid_superblock_split(sb, cur, &k)) {
    snprintf(why, len, "it was written on its own since it left (events %" PRIu64
             ", the array's %" PRIu64 "): a split mirror, whose writes a rebuild "
             "would overwrite; add it by hand to discard them", sb->events, cur->events);
    r = LOOK_REFUSE;
  }
  else
    r = LOOK_OURS;
  raid_member_close(m);
 out:
  free(sb);
  free(cur);
  return r;
}

/* Take W's member back into E (control_lock() held): the faulty one
 * removed, the URI opened anew and added.  False when it could not be
 * opened (gone again: look later). */
static bool
take_back(struct watched *w, struct export *e, enum look what)
{
  struct raid_array *a = export_array(e);
  struct raid_member *m;
  int role;

  if (raid_member_open(w->uri, 0, &m) < 0) {
    log_warn("%s: remote member %s answers but cannot be opened for writing: %s",
             w->array, w->uri, raid_get_error());
    return false;
  }
  if (raid_array_remove_member(a, w->uri, 0) < 0) {
    log_warn("%s: remote member %s: %s", w->array, w->uri, raid_get_error());
    raid_member_close(m);
    return true;
  }
  if (raid_array_add_member(a, m, &role) < 0) {       /* owns m */
    log_err("%s: remote member %s is back but could not be added: %s; it is "
            "out of the array now (raidctl add puts it back)", w->array, w->uri,
            raid_get_error());
    return true;
  }
  log_warn("%s: remote member %s is back%s: %s", w->array, w->uri,
           what == LOOK_EMPTY ? " without a superblock (a new disk?)" : "",
           role < 0 ? "added as a hot spare"
           : what == LOOK_EMPTY ? "added, rebuilding it in full"
           : "re-added, rebuilding what it missed");
  return true;
}

static void
back_off(struct watched *w)
{
  w->next_ms = now_ms() + w->backoff_ms;
  w->backoff_ms = w->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : w->backoff_ms * 2;
}

static void
try_one(struct watched *w)
{
  struct export *e = export_get(w->array);
  char why[512] = "";
  enum look what;

  if (e == NULL)
    return;
  what = look(w, e, why, sizeof why);
  if (what == LOOK_AWAY)
    back_off(w);
  else if (what == LOOK_REFUSE) {
    w->refused = true;
    log_err("%s: remote member %s answers again, but raidd does not take it "
            "back: %s", w->array, w->uri, why);
  }
  else {
    bool done = true;

    control_lock();
    if (still_faulty(e, w->uri) && !export_readonly(e))
      done = take_back(w, e, what);
    control_unlock();
    if (done)
      w->refused = true;        /* done with it, whatever happened */
    else
      back_off(w);
  }
  export_put(e);
}

static void *
reconnect_thread(void *arg)
{
  struct timespec ts;
  unsigned i;

  pthread_mutex_lock(&lock);
  while (!quitting) {
    pthread_mutex_unlock(&lock);
    for (i = 0; i < nwatched; i++)
      watched[i].seen = false;
    exports_foreach(note_faulty, NULL);
    for (i = 0; i < nwatched;)
      if (!watched[i].seen)
        watched[i] = watched[--nwatched];
      else
        i++;
    for (i = 0; i < nwatched && !quitting; i++)
      if (!watched[i].refused && now_ms() >= watched[i].next_ms)
        try_one(&watched[i]);
    pthread_mutex_lock(&lock);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 250 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    if (!quitting)
      pthread_cond_timedwait(&cond, &lock, &ts);
  }
  pthread_mutex_unlock(&lock);
  return NULL;
}

int
reconnect_start(void)
{
  pthread_condattr_t ca;
  int err;

  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_destroy(&cond);
  pthread_cond_init(&cond, &ca);
  pthread_condattr_destroy(&ca);
  quitting = false;
  if ((err = pthread_create(&thread, NULL, reconnect_thread, NULL)) != 0) {
    log_err("reconnect: cannot start its thread: %s; remote members that come "
            "back must be added by hand", strerror(err));
    return -err;
  }
  running = true;
  return 0;
}

void
reconnect_stop(void)
{
  if (!running)
    return;
  pthread_mutex_lock(&lock);
  quitting = true;
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&lock);
  pthread_join(thread, NULL);
  running = false;
}
