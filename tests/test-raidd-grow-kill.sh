#!/bin/bash
# Description: raidd killed (SIGKILL) at a random moment of raidctl grow
# --size max and the resync of the new region that follows, with a client
# rewriting the first 8 MiB the whole time; 12 trials (RAID_TEST_SCALE
# scales them) over RAID 1 (bitmap), RAID 5 and RAID 10 (bitmap).  Each
# time raidd starts again and assembles the array without --force: its
# size is the old one or the new one (what the superblocks said when the
# kill came, never anything else); the 8 MiB pattern written before the
# grow past the client's range reads back identical, and the client's
# range holds its bytes; the resync ends and a scrub then finds
# mismatch_cnt 0; where the kill came before the superblocks said the new
# size, a grow --size max then takes it.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires nbdcopy --version
requires nbdkit --version
requires nbdinfo --version
requires qemu-io --version

mktmpdir test-raidd-grow-kill
raidd_env "$tmpdir"
MiB=$((1 << 20))
trials=$(( ${RAID_TEST_SCALE:-100} * 12 / 100 ))
[ "$trials" -ge 3 ] || trials=3

nbdcopy -- [ nbdkit random size=8M seed=7 ] "$d/pattern"
nbdcopy -- [ nbdkit random size=8M seed=8 ] "$d/client"
start_raidd
writer_pid=
stop_writer () {
  [ -z "$writer_pid" ] || { kill_pid "$writer_pid"; writer_pid=; }
}
cleanup_fn stop_writer

before=0 after=0
for (( t = 0; t < trials; t++ )); do
  case $((t % 3)) in
    0) level=1 n=2 args=(--bitmap internal) ;;
    1) level=5 n=3 args=(--bitmap none --chunk 64K) ;;
    2) level=10 n=4 args=(--bitmap internal --chunk 64K) ;;
  esac
  name=k$t
  m=()
  for i in $(seq 0 $((n - 1))); do truncate -s 32M "$d/$name-$i"; m+=("$d/$name-$i"); done
  R create "$name" --level $level "${args[@]}" --assume-clean "${m[@]}" > /dev/null
  old=$(nbdinfo --size "$(uri "$name")")
  qemu-io -f raw -c "write -s $d/pattern $((8 * MiB)) $((8 * MiB))" "$(uri "$name")" > /dev/null
  nbdcopy "$d/client" "$(uri "$name")"
  truncate -s 96M "${m[@]}"
  # The client: rewrites its 8 MiB (the same bytes) until raidd dies.
  ( while nbdcopy "$d/client" "$(uri "$name")" 2>/dev/null; do :; done ) &
  writer_pid=$!
  R grow "$name" --size max > /dev/null 2>&1 &
  grow_pid=$!
  # Half the kills within 30 ms of the command (the superblocks' update),
  # half within 400 ms (the resync, slowed to rebuild-min by the client).
  if (( t % 2 )); then sleep "0.$(printf %03d $((RANDOM % 400)))"
  else sleep "0.$(printf %03d $((RANDOM % 30)))"; fi
  kill -9 "$raidd_pid"; wait "$raidd_pid" 2>/dev/null || :; raidd_pid=
  wait "$grow_pid" 2>/dev/null || :
  wait "$writer_pid" 2>/dev/null || :; writer_pid=
  start_raidd
  R assemble "$name" "${m[@]}" > "$d/out" 2>&1 || fail "trial $t: assemble: $(cat "$d/out")"
  now=$(nbdinfo --size "$(uri "$name")")
  # Killed before the superblocks said the new size: grow again, once the
  # resync of the unclean array is over (a grow waits for it, as md's).
  if [ "$now" = "$old" ]; then
    R wait "$name" > /dev/null || fail "trial $t: wait for the resync"
    R grow "$name" --size max > /dev/null || fail "trial $t: grow again"
  fi
  R wait "$name" > "$d/out" || fail "trial $t: wait: $(cat "$d/out")"
  new=$(nbdinfo --size "$(uri "$name")")
  [ "$now" = "$old" ] || [ "$now" = "$new" ] || fail "trial $t: size $now after the kill: neither $old nor $new"
  [ "$new" -gt "$old" ] || fail "trial $t: the array did not grow: $old -> $new"
  nbdcopy "$(uri "$name")" "$d/back"
  cmp -n $((8 * MiB)) -i $((8 * MiB)):0 "$d/back" "$d/pattern" || fail "trial $t: the pattern changed"
  cmp -n $((8 * MiB)) "$d/back" "$d/client" || fail "trial $t: the client's data is not whole"
  R scrub "$name" --wait > "$d/out" || fail "trial $t: scrub"
  grep -q "mismatch_cnt 0" "$d/out" || fail "trial $t: scrub: $(cat "$d/out")"
  echo "trial $t: raid$level, size after the kill $now of $old -> $new"
  [ "$now" = "$old" ] && before=$((before + 1)) || after=$((after + 1))
  R stop "$name" > /dev/null
  rm -f "${m[@]}"
done
echo "test-raidd-grow-kill: $trials trials ok: $before killed before the new size was recorded, $after after"
