#!/bin/bash
# Description: raidd killed (SIGKILL) at a random moment of raidctl grow
# --raid-devices 4 of a RAID 5 of 3 (the restripe: lib/sync/reshape.c), or
# of raidctl grow --layout left-asymmetric --chunk 128K (every other
# trial: over as many members), with a client rewriting the first 8 MiB
# the whole time; 12 trials (RAID_TEST_SCALE scales them).  Each time
# raidd starts again and assembles the four members without --force: the
# array is either the old one (the kill came before the superblocks said
# the reshape: the grow is asked again) or in the middle of its reshape,
# which goes on by itself from its checkpoint (examine shows where), or
# done; once done the array has three members' worth (the restripe) or
# its old size in the new layout, the 8 MiB pattern written before the
# grow past the client's range and the client's 8 MiB read back
# identical, and a scrub finds mismatch_cnt 0.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires nbdcopy --version
requires nbdkit --version
requires nbdinfo --version
requires qemu-io --version

mktmpdir test-raidd-reshape-kill
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

before=0 during=0 after=0
for (( t = 0; t < trials; t++ )); do
  name=k$t
  m=()
  for i in 0 1 2 3; do truncate -s 64M "$d/$name-$i"; m+=("$d/$name-$i"); done
  R create "$name" --level 5 --chunk 64K --assume-clean "${m[@]:0:3}" > /dev/null
  R add "$name" "${m[3]}" > /dev/null
  old=$(nbdinfo --size "$(uri "$name")")
  qemu-io -f raw -c "write -s $d/pattern $((8 * MiB)) $((8 * MiB))" "$(uri "$name")" > /dev/null
  nbdcopy "$d/client" "$(uri "$name")"
  ( while nbdcopy "$d/client" "$(uri "$name")" 2>/dev/null; do :; done ) &
  writer_pid=$!
  # Unthrottled: under the writer's load the reshape would keep to
  # rebuild-min (1000 KiB/s) and every kill would land near its start.
  R set "$name" rebuild-min=0 rebuild-max=0 > /dev/null
  if (( t % 2 )); then
    grow=(--layout left-asymmetric --chunk 128K) want=$old
  else
    grow=(--raid-devices 4) want=$((old / 2 * 3))
  fi
  R grow "$name" "${grow[@]}" > /dev/null 2>&1 &
  grow_pid=$!
  # A third of the kills within 30 ms of the command (the superblocks'
  # update), the rest within 1.5 s (the reshape, as far as it got).
  if (( t % 3 )); then ms=$((RANDOM % 1500)); else ms=$((RANDOM % 30)); fi
  sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
  kill -9 "$raidd_pid"; wait "$raidd_pid" 2>/dev/null || :; raidd_pid=
  wait "$grow_pid" 2>/dev/null || :
  wait "$writer_pid" 2>/dev/null || :; writer_pid=
  start_raidd
  R assemble "$name" "${m[@]}" > "$d/out" 2>&1 || fail "trial $t: assemble: $(cat "$d/out")"
  # "3 left-symmetric": the old array; "... at N": the reshape on record
  # (and where); "4 left-symmetric" or "3 left-asymmetric": done.
  raid_disks=$(R examine --json "${m[0]}" | python3 -c "import json,sys
e = json.load(sys.stdin)[0]
print(e['raid_disks'], e['layout'], 'at %d' % e['reshape']['position'] if 'reshape' in e else '')")
  if [ "$raid_disks" = "3 left-symmetric " ]; then
    R wait "$name" > /dev/null || fail "trial $t: wait for the resync"
    R grow "$name" "${grow[@]}" > /dev/null || fail "trial $t: grow again"
    before=$((before + 1))
  elif [ "$raid_disks" = "4 left-symmetric " ] || [ "$raid_disks" = "3 left-asymmetric " ]; then
    after=$((after + 1))
  else
    during=$((during + 1))
  fi
  R wait "$name" > "$d/out" || fail "trial $t: wait: $(cat "$d/out")"
  new=$(nbdinfo --size "$(uri "$name")")
  [ "$new" = "$want" ] || fail "trial $t: $new bytes after the reshape (${grow[*]}), not $want"
  nbdcopy "$(uri "$name")" "$d/back"
  cmp -n $((8 * MiB)) -i $((8 * MiB)):0 "$d/back" "$d/pattern" || fail "trial $t: the pattern changed"
  cmp -n $((8 * MiB)) "$d/back" "$d/client" || fail "trial $t: the client's data is not whole"
  R scrub "$name" --wait > "$d/out" || fail "trial $t: scrub"
  grep -q "mismatch_cnt 0" "$d/out" || fail "trial $t: scrub: $(cat "$d/out")"
  echo "trial $t: grow ${grow[*]}: killed at ${ms} ms, on record: $raid_disks"
  R stop "$name" > /dev/null
  rm -f "${m[@]}"
done
echo "test-raidd-reshape-kill: $trials trials ok: killed before the reshape was recorded $before, during it $during (resumed by assembly), after it $after"
