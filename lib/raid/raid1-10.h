/* raid/raid1-10.c: what RAID 1 and RAID 10 share, as md shares it in
 * drivers/md/raid1-10.c. */
#ifndef RAID_RAID1_10_H
#define RAID_RAID1_10_H

#include "internal.h"

/* A read IO of a mirrored level completed with RES: false when it went
 * well; true when it failed, the member is failed (the I/O path's rule:
 * roles.c) and the caller reads another copy, if any. */
bool mirror_read_failed(struct member_io *io, int res);

/* A write (or discard) IO of request bytes [POS, POS + LEN) completed
 * with RES: on failure its member is failed, and the write stands while a
 * copy still holds those bytes (HOLDS(R, POS, LEN), asked after the
 * failure, R the request: its array and shape); otherwise the request
 * fails with EIO, naming the member. */
void mirror_write_done(struct member_io *io, int res, uint64_t pos, size_t len,
                       bool (*holds)(const struct raid_request *r, uint64_t pos,
                                     size_t len));

/* Whether a sync step has a member to rebuild (op->target[], for
 * recovery): when it has none, a recovery step has nothing to do. */
bool mirror_any_target(const struct sync_op *op);

/* One copy of LEN bytes read for a sync step: its member and role, where
 * on the member, the buffer it was read into (NULL: not read). */
struct mirror_copy {
  struct raid_member *m;
  unsigned slot;
  uint64_t off;
  uint8_t *buf;
};
/* Resync and scrub: compare every copy in C[0..N-1] with C[SRC], count
 * the sectors that differ into op->mismatches and, unless only checking,
 * write C[SRC]'s data over the copies that differ (not waited for). */
void mirror_compare_repair(struct sync_op *op, const struct mirror_copy *c, unsigned n,
                           unsigned src, size_t len);

#endif /* RAID_RAID1_10_H */
