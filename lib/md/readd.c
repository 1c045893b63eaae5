/* Members that come back: md's re-add test, for a member whose writes
 * missed are covered by the bitmap (the adding itself is manage.c's). */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/time.h>

#include "internal.h"
#include "md.h"


/* Is there a role with no working member (faulty or missing, nothing
 * rebuilding into it)? */
static bool
free_role(struct raid_array *a)
{
  bool free = false;
  unsigned i;

  pthread_mutex_lock(&a->conf_lock);
  for (i = 0; i < a->raid_disks && !free; i++) {
    int st = atomic_load(&a->state[i]);
    free = (st == RAID_MEMBER_FAULTY || st == RAID_MEMBER_MISSING) &&
      atomic_load(&a->repl[i]) == NULL;
  }
  pthread_mutex_unlock(&a->conf_lock);
  return free;
}

EXPORT int
raid_array_readd_check(struct raid_array *a, const struct raid_superblock *sb,
                       const char *who)
{
  struct array_meta *m = a->meta;
  struct raid_superblock *cur;
  unsigned own, k;
  int r = 0;

  if (m == NULL)
    return set_error(EINVAL, "array %s has no md metadata", a->name);
  if (memcmp(sb->set_uuid, m->sb.set_uuid, 16) != 0)
    return set_error(EINVAL, "member %s belongs to another array (%s), not to %s",
                     who, sb->set_name, a->name);
  own = sb->dev_number < sb->max_dev ? sb->dev_roles[sb->dev_number] : RAID_SB_ROLE_SPARE;
  if (own >= sb->raid_disks)
    return set_error(EINVAL, "member %s was %s of %s, not in a role: add it by hand "
                     "if it is wanted", who, own == RAID_SB_ROLE_SPARE ? "a spare" :
                     "marked faulty", a->name);
  if (raid_array_is_failed(a))
    return set_error(EIO, "array %s has failed: %s cannot bring its data back",
                     a->name, who);
  cur = malloc(sizeof *cur);
  if (cur == NULL)
    return set_error(ENOMEM, "array %s: out of memory", a->name);
  pthread_mutex_lock(&m->lock);
  meta_current_locked(a, cur);
  if (sb->dev_number >= RAID_SB_MAX_DEV || !m->awaited[sb->dev_number])
    r = set_error(EPERM, "member %s (device %u of %s) was not missing when the array "
                  "started: it was there, or failed or removed since; add it by "
                  "hand to rebuild it", who, sb->dev_number, a->name);
  pthread_mutex_unlock(&m->lock);
  if (r == 0 && !free_role(a))
    r = set_error(EBUSY, "array %s has no role free for %s: every role has a member",
                  a->name, who);
  /* Used on its own since it left (a split mirror): started without the
   * others, it marked faulty the devices the array still runs on, or its
   * events ran ahead. */
  if (r == 0 && raid_superblock_split(sb, cur, &k)) {
    if (k != sb->dev_number)
      r = set_error(EEXIST, "member %s of %s was used without device %u (role %u) "
                    "since it left, or that device joined after: a split mirror, "
                    "whose writes a rebuild would overwrite; not taking it back "
                    "(add it by hand to discard them)", who, a->name, k,
                    cur->dev_roles[k]);
    else
      r = set_error(EEXIST, "member %s of %s has newer events (%" PRIu64 ") than the "
                    "running array (%" PRIu64 "): it was used on its own since it left; "
                    "not taking it back (add it by hand to discard its writes)",
                    who, a->name, sb->events, cur->events);
  }
  free(cur);
  return r;
}

void
meta_taken_back(struct raid_array *a, unsigned dev_number)
{
  pthread_mutex_lock(&a->meta->lock);
  a->meta->awaited[dev_number] = false;
  pthread_mutex_unlock(&a->meta->lock);
}
