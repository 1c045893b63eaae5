#!/bin/bash
# Description: raidd killed (SIGKILL) at a random moment of a reshape
# (lib/sync/reshape.c), in turns: raidctl grow --raid-devices 4 of a RAID
# 5 of 3 (the restripe), raidctl grow --layout left-asymmetric --chunk
# 128K of one (over as many members), raidctl grow --raid-devices 6 of a
# RAID 10 near-2 of 4, raidctl grow --raid-devices 3 --add of a RAID 0
# of 2 (md's way, as a RAID 5 missing its parity role; resumed by
# assembly it ends as that RAID 5, and grow --level 0 makes it a RAID 0 of
# 3, as mdadm --grow --continue), raidctl grow --level 0 of a
# left-symmetric RAID 5 of 3 (reshaped to parity-last, then a RAID 0 of
# 2; resumed, it ends as the parity-last RAID 5, and --level 0 again
# finishes it), raidctl grow --raid-devices 3 of a RAID 5 of 4 (md's
# backwards reshape, the array shown no larger than three hold first,
# by the --array-size the refusal names); with a client rewriting the
# first 8 MiB the whole time; 24 trials (RAID_TEST_SCALE scales them).  Each time raidd starts
# again and assembles the members without --force: the array is either
# the old one (the kill came before the superblocks said the reshape: the
# grow is asked again) or in the middle of its reshape, which goes on by
# itself from its checkpoint (examine shows where), or done; once done the
# array has its new size (half as much again for both restripes, what
# three members hold for the one to fewer) or its old size in the new
# layout, the 8 MiB pattern written before the grow
# past the client's range and the client's 8 MiB read back identical, and
# a scrub finds mismatch_cnt 0.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires nbdcopy --version
requires nbdkit --version
requires nbdinfo --version
requires qemu-io --version

mktmpdir test-raidd-reshape-kill
raidd_env "$tmpdir"
MiB=$((1 << 20))
trials=$(( ${RAID_TEST_SCALE:-100} * 24 / 100 ))
[ "$trials" -ge 6 ] || trials=6

nbdcopy -- [ nbdkit random size=8M seed=7 ] "$d/pattern"
nbdcopy -- [ nbdkit random size=8M seed=8 ] "$d/client"
start_raidd
writer_pid=
stop_writer () {
  [ -z "$writer_pid" ] || { kill_pid "$writer_pid"; writer_pid=; }
}
cleanup_fn stop_writer

# shrink_for NAME: NAME shown no larger than the fewer members of its
# grow will hold, by the --array-size the refused grow names (memory only:
# an assembly after a kill before the reshape was recorded shows all).
shrink_for () {
  local out want
  if out=$(R grow "$1" "${grow[@]}" 2>&1); then fail "trial $t: grow ${grow[*]} worked: $out"; fi
  want=$(grep -o -- "--array-size [0-9]*K" <<< "$out") || fail "trial $t: $out"
  R grow "$1" $want > /dev/null || fail "trial $t: grow $want"
}

before=0 during=0 after=0
for (( t = 0; t < trials; t++ )); do
  name=k$t
  # What examine says (members, layout) of the array before the reshape
  # and after it.
  final= shrink=
  case $(( t % 6 )) in
    0) level=5 n=3 total=4 grow=(--raid-devices 4) was="3 left-symmetric" will="4 left-symmetric" ;;
    1) level=5 n=3 total=3 grow=(--layout left-asymmetric --chunk 128K)
       was="3 left-symmetric" will="3 left-asymmetric" ;;
    2) level=10 n=4 total=6 grow=(--raid-devices 6) was="4 near=2" will="6 near=2" ;;
    3) level=0 n=2 total=3 grow=(--raid-devices 3 --add "$d/$name-2") was="2 raid0"
       will="3 raid0" ;;
    4) level=5 n=3 total=3 grow=(--level 0) was="3 left-symmetric" will="2 raid0" final=0 ;;
    5) level=5 n=4 total=3 grow=(--raid-devices 3) was="4 left-symmetric"
       will="3 left-symmetric" shrink=1 ;;
  esac
  final=${final:-$level}
  m=()
  for (( i = 0; i < total || i < n; i++ )); do truncate -s 64M "$d/$name-$i"; m+=("$d/$name-$i"); done
  R create "$name" --level "$level" --chunk 64K --assume-clean "${m[@]:0:n}" > /dev/null
  # A RAID 0's new member comes with the grow (--add).
  [ "$level" = 0 ] || for x in "${m[@]:n}"; do R add "$name" "$x" > /dev/null; done
  old=$(nbdinfo --size "$(uri "$name")")
  want=$old
  [ "$total" = "$n" ] || want=$((old / 2 * 3))
  [ -z "$shrink" ] || { shrink_for "$name"; want=$(nbdinfo --size "$(uri "$name")"); }
  qemu-io -f raw -c "write -s $d/pattern $((8 * MiB)) $((8 * MiB))" "$(uri "$name")" > /dev/null
  nbdcopy "$d/client" "$(uri "$name")"
  ( while nbdcopy "$d/client" "$(uri "$name")" 2>/dev/null; do :; done ) &
  writer_pid=$!
  # Unthrottled: under the writer's load the reshape would keep to
  # rebuild-min (1000 KiB/s) and every kill would land near its start.
  R set "$name" rebuild-min=0 rebuild-max=0 > /dev/null
  R grow "$name" "${grow[@]}" > /dev/null 2>&1 &
  grow_pid=$!
  # A quarter of the kills within 30 ms of the command (the superblocks'
  # update), the rest within 1.5 s (the reshape, as far as it got).
  if (( t / 6 % 4 )); then ms=$((RANDOM % 1500)); else ms=$((RANDOM % 30)); fi
  sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
  kill -9 "$raidd_pid"; wait "$raidd_pid" 2>/dev/null || :; raidd_pid=
  wait "$grow_pid" 2>/dev/null || :
  wait "$writer_pid" 2>/dev/null || :; writer_pid=
  start_raidd
  # A RAID 0's new member has no superblock until the reshape's first
  # write: the array is assembled from what has one.
  have=("${m[@]}")
  R examine "${m[-1]}" > /dev/null 2>&1 || have=("${m[@]:0:n}")
  # A RAID 5 made a RAID 0: the parity member that left is not given.
  [ "$(R examine --json "${m[0]}" | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['level'])")" = raid0 ] &&
    [ "$level" = 5 ] && have=("${m[@]:0:n-1}")
  R assemble "$name" "${have[@]}" > "$d/out" 2>&1 || fail "trial $t: assemble: $(cat "$d/out")"
  # "$was": the old array; "... at N": the reshape on record (and where);
  # "$will": done.  A RAID 0's reshape is on record as a RAID 5's of one
  # more (parity-last).
  raid_disks=$(R examine --json "${m[0]}" | python3 -c "import json,sys
e = json.load(sys.stdin)[0]
print(e['raid_disks'], e.get('layout', e['level']), 'at %d' % e['reshape']['position'] if 'reshape' in e else '')")
  if [ "$raid_disks" = "$was " ]; then
    R wait "$name" > /dev/null || fail "trial $t: wait for the resync"
    [ -z "$shrink" ] || shrink_for "$name"
    R grow "$name" "${grow[@]}" > /dev/null || fail "trial $t: grow again"
    before=$((before + 1))
  elif [ "$raid_disks" = "$will " ]; then
    after=$((after + 1))
  else
    during=$((during + 1))
  fi
  R wait "$name" > "$d/out" || fail "trial $t: wait: $(cat "$d/out")"
  # Resumed by assembly, a RAID 0's reshape ends as a RAID 5 missing its
  # parity role (raidd does not know it was a RAID 0, as md's does not):
  # mdadm --grow --continue's last step by hand.
  if [ "$final" = 0 ] && R detail "$name" | grep -q "Raid Level : raid5"; then
    R grow "$name" --level 0 > /dev/null || fail "trial $t: to RAID 0"
    R wait "$name" > /dev/null || fail "trial $t: wait for RAID 0"
  fi
  R detail "$name" | grep -q "Raid Level : raid$final" || fail "trial $t: not a RAID $final"
  new=$(nbdinfo --size "$(uri "$name")")
  [ "$new" = "$want" ] || fail "trial $t: $new bytes after the reshape (${grow[*]}), not $want"
  nbdcopy "$(uri "$name")" "$d/back"
  cmp -n $((8 * MiB)) -i $((8 * MiB)):0 "$d/back" "$d/pattern" || fail "trial $t: the pattern changed"
  cmp -n $((8 * MiB)) "$d/back" "$d/client" || fail "trial $t: the client's data is not whole"
  if [ "$final" != 0 ]; then
    R scrub "$name" --wait > "$d/out" || fail "trial $t: scrub"
    grep -q "mismatch_cnt 0" "$d/out" || fail "trial $t: scrub: $(cat "$d/out")"
  fi
  echo "trial $t: RAID $level grow ${grow[*]}: killed at ${ms} ms, on record: $raid_disks"
  R stop "$name" > /dev/null
  rm -f "${m[@]}"
done
echo "test-raidd-reshape-kill: $trials trials ok: killed before the reshape was recorded $before, during it $during (resumed by assembly), after it $after"
