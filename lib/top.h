/* The top floor's own (manage.c, grow.c, takeover.c): what one of its
 * files lends another.  No lower floor includes it (tests/floors.sh). */
#ifndef RAID_TOP_H
#define RAID_TOP_H

#include "internal.h"

/* manage.c: can M hold a role of A whose data starts at DATA_OFFSET?  0,
 * or set_error() naming what is wrong. */
int member_fits(struct raid_array *a, struct raid_member *m, uint64_t data_offset);
/* manage.c: the data offset a new member of A gets (the first present
 * role's). */
uint64_t member_offset_default(struct raid_array *a);

/* takeover.c: md's takeover of A to LEVEL, the sync engine held by the
 * caller: decided (nothing changed when refused), every request parked,
 * the roles and the personality changed, and, with WRITE, the
 * superblocks; without, the superblocks are the caller's to write (a RAID
 * 0 restriped: its reshape's first write says the level).  0, or
 * set_error() with A as it was. */
int takeover_held(struct raid_array *a, int level, bool write);

/* grow.c: a RAID 5 in another layout than parity-last to a RAID 0,
 * mdadm's way: reshaped to parity-last over as many members, a RAID 0 of
 * one fewer at the reshape's end (sync/reshape.c), its parity member
 * leaving then.  The caller has refused what a RAID 0 cannot take
 * (takeover.c); refused as a reshape; 0 once the reshape is started. */
int grow_to_stripe(struct raid_array *a);

#endif
