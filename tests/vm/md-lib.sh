# What the VM halves of the md tests share (tests/vm/md-interop.sh,
# md-reshape.sh, raid6.sh source it from beside them: the source tree is
# shared with the guest at its host path).

# md_idle: wait until md0 runs no resync, recovery, check or reshape (5
# minutes at most); 1 if it still does then.  Right after "echo check >
# sync_action" md already says "check".
md_idle() {
  local i
  for (( i = 0; i < 600; i++ )); do
    [ "$(cat /sys/block/md0/md/sync_action)" = idle ] && return 0
    sleep 0.5
  done
  return 1
}
