#!/bin/bash
# Description: raidctl grow --size (mdadm --grow --size) through raidd, on
# RAID 1, 5 and 10 over member files grown with truncate, while fio's nbd
# engine writes and verifies (crc32c) the first 16 MiB the whole time:
#  - --size max takes what the smallest member has room for, in whole
#    chunks (the expected size is worked out here from the data offset
#    examine reports); a new NBD connection sees the new size (nbdinfo);
#  - 16 MiB of pattern data written before reads back identical after;
#    the new region takes new data and returns it; raidctl wait sees the
#    resync of the new region end, and a scrub then finds mismatch_cnt 0;
#  - fio ends with zero verify errors;
#  - stopped and assembled again, the array has the new size, and examine
#    says it on every member;
#  - a smaller --size is refused without --force (nothing changes), done
#    with it; a RAID 0, a grow while a scrub runs, a size beyond the
#    members' room and a bad size are refused with messages that say why,
#    and no refusal changes a member's data or its superblock's events;
#  - a boot pair (metadata 1.0) grows: the superblocks move to the new
#    ends, each disk alone still holds the array from sector 0;
#  - a RAID 1 goes from 2 to 3 mirrors (a hot spare takes the new role by
#    itself and is rebuilt under fio) and back to 2 once a member is failed
#    and removed (refused before); assembled from the two left, in sync;
#    a RAID 5 restriped from 3 to 4 members under fio (refused without a
#    hot spare, nothing changed), throttled by rebuild-min/max (it goes
#    no faster), shown in status and detail as md does, frozen by grow
#    --stop (nothing moves, raidctl wait says so, another grow refused)
#    and let go on by --continue, md's events (RebuildStarted...Finished,
#    action reshape) for it: its new size, its data, scrub 0; then to
#    another layout and chunk over as many members (mdadm --grow --layout
#    --chunk), refusals first, detail and examine as mdadm's meanwhile;
#  - a mirror of 2 made a RAID 5 of 3 in one command (mdadm --grow --level 5
#    --raid-devices 3) under fio, twice the size, its data, scrub 0; then a
#    RAID 0 of 2 under fio (left-symmetric: reshaped to parity-last first,
#    mdadm's way; refused with a chunk at once), the member that left
#    keeping its superblock, assembled so with its data; another to
#    RAID 5 and back to RAID 1, assembled so;
#  - a RAID 0 of 2 made a RAID 5 of 3 missing its parity (md's takeover)
#    under fio, the member added rebuilt as its parity by itself, scrub 0,
#    and back to a RAID 0 of 2 (the parity member leaves, its superblock
#    left as it was), the data as written, assembled so;
#  - a RAID 0 of 2 restriped over 4 with its new members (mdadm --grow
#    --raid-devices 4 --add): refused without them, with one given twice
#    or too few, nothing changed; under fio, md's way (a RAID 5 missing
#    its parity role while it reshapes), a RAID 0 of 4 at the end, twice
#    the size, the pattern as written, the new room zeroes, examine and
#    assembly say it.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires fio --enghelp=nbd
requires nbdinfo --version
requires nbdcopy --version
requires nbdkit --version
requires python3 --version
requires qemu-io --version

mktmpdir test-raidd-grow
raidd_env "$tmpdir"
size_of () { nbdinfo --size "$(uri "$1")"; }
# grow_under_fio NAME SAYS LEVEL N SIZE GROW-ARGS...: raidctl grow NAME
# GROW-ARGS while fio writes and verifies; grow's message matches SAYS,
# and once raidctl wait returns NAME is a RAID LEVEL of N members and
# SIZE bytes.
grow_under_fio () {
  local name=$1 says=$2 level=$3 n=$4 size=$5
  shift 5
  fio_start "$name" 6 16M
  sleep 1
  R grow "$name" "$@" > "$d/out" || fail "$name: grow $*"
  grep -q "$says" "$d/out" || fail "$name: grow $* said: $(cat "$d/out")"
  R wait "$name" > /dev/null || fail "$name: wait"
  fio_end "$name"
  R detail "$name" > "$d/out"
  grep -q "Raid Level : raid$level" "$d/out" && grep -q "Raid Devices : $n" "$d/out" ||
    fail "$name: detail after grow $*: $(cat "$d/out")"
  [ "$(size_of "$name")" = "$size" ] || fail "$name: $(size_of "$name") bytes, not $size"
}
# qw NAME FILE OFFSET LEN: FILE's first LEN bytes to the array at OFFSET.
qw () {
  qemu-io -f raw -c "write -s $2 $3 $4" -c flush "$(uri "$1")" > "$d/qw.out" 2>&1 ||
    { cat "$d/qw.out" >&2; return 1; }
}


nbdcopy -- [ nbdkit pattern size=16M ] "$d/pattern"
nbdcopy -- [ nbdkit random size=8M seed=31 ] "$d/new"
start_raidd
MiB=$((1 << 20))

# name level n chunk(KiB, - for RAID 1) bitmap
for cfg in "g1 1 2 - internal" "g5 5 3 64 none" "g10 10 4 64 internal"; do
  set -- $cfg
  name=$1 level=$2 n=$3 chunk=$4 bitmap=$5
  m=()
  for i in $(seq 0 $((n - 1))); do truncate -s 40M "$d/$name-$i"; m+=("$d/$name-$i"); done
  args=(--level "$level" --bitmap "$bitmap" --assume-clean)
  [ "$chunk" != - ] && args+=(--chunk "${chunk}K")
  R create "$name" "${args[@]}" "${m[@]}" > /dev/null || fail "create $name"
  old=$(size_of "$name")
  # 16 MiB of pattern after fio's 16 MiB.
  qw "$name" "$d/pattern" $((16 * MiB)) $((16 * MiB)) || fail "$name: pattern write"

  # Nothing grew: nothing changes.
  R grow "$name" --size max > "$d/out" || fail "$name: grow with no room"
  grep -q "size unchanged" "$d/out" || fail "$name: $(cat "$d/out")"

  # Member 0 grows less than the others.
  truncate -s 64M "${m[0]}"
  for i in $(seq 1 $((n - 1))); do truncate -s 72M "${m[$i]}"; done
  doff=$(ex "${m[0]}" "e['data_offset']")
  if [ "$chunk" = - ]; then unit=4096; else unit=$((chunk * 1024)); fi
  ms=$(( (64 * MiB - doff) / unit * unit ))
  case $level in
    1) want=$ms ;;
    5) want=$((ms * (n - 1))) ;;
    10) want=$((ms / unit * n / 2 * unit)) ;;
  esac

  # Refused: more than the smallest member's room, and a bad size.
  settle "$name"
  sha_before=$(snap "${m[@]}")
  R grow "$name" --size $(( (ms + unit) / 1024 ))K 2> "$d/err" && fail "$name: grow past the room"
  grep -q "member ${m[0]} has room for" "$d/err" || fail "$name: room error: $(cat "$d/err")"
  R grow "$name" --size lots 2> "$d/err" && fail "$name: bad size taken"
  grep -q "bad --size 'lots'" "$d/err" || fail "$name: bad size error: $(cat "$d/err")"
  R grow "$name" 2> "$d/err" && fail "$name: grow without --size"
  grep -q "give --size" "$d/err" || fail "$name: no-size error: $(cat "$d/err")"
  now=$(snap "${m[@]}"); [ "$now" = "$sha_before" ] || fail "$name: a refused grow changed a member: $sha_before / $now"

  # Grown while fio writes and verifies.
  fio_start "$name" 5 16M
  sleep 1
  R grow "$name" --size max > "$d/out" || fail "$name: grow"
  grep -q "grown from" "$d/out" || fail "$name: grow said: $(cat "$d/out")"
  grep -q "resyncing the new region" "$d/out" || fail "$name: no resync: $(cat "$d/out")"
  [ "$(size_of "$name")" = "$want" ] || fail "$name: size $(size_of "$name"), expected $want"
  R wait "$name" > "$d/out" || fail "$name: wait"
  grep -q "resync done" "$d/out" || fail "$name: wait said: $(cat "$d/out")"
  fio_end "$name"
  R scrub "$name" --wait > "$d/out" || fail "$name: scrub"
  grep -q "mismatch_cnt 0" "$d/out" || fail "$name: scrub after grow: $(cat "$d/out")"

  # Old data identical; the new region holds what is written there.
  nbdcopy "$(uri "$name")" "$d/back"
  cmp -n $((16 * MiB)) -i $((16 * MiB)):0 "$d/back" "$d/pattern" || fail "$name: old data changed"
  qw "$name" "$d/new" "$old" $((8 * MiB)) || fail "$name: write into the new region"

  # Stopped and assembled: the new size, on every member's superblock.
  R stop "$name" > /dev/null || fail "$name: stop"
  for x in "${m[@]}"; do
    [ "$(ex "$x" "e['used_dev_size']")" = "$ms" ] ||
      fail "$name: examine $x: $(R examine --json "$x")"
  done
  R assemble "$name" "${m[@]}" > /dev/null || fail "$name: assemble"
  [ "$(size_of "$name")" = "$want" ] || fail "$name: assembled size $(size_of "$name")"
  nbdcopy "$(uri "$name")" "$d/back"
  cmp -n $((16 * MiB)) -i $((16 * MiB)):0 "$d/back" "$d/pattern" || fail "$name: old data after assemble"
  cmp -n $((8 * MiB)) -i "$old":0 "$d/back" "$d/new" || fail "$name: new data after assemble"

  # Smaller: refused without --force, nothing written; done with it.
  settle "$name"
  sha_before=$(snap "${m[@]}")
  R grow "$name" --size 32M 2> "$d/err" && fail "$name: shrink without --force"
  grep -q "the array would shrink" "$d/err" || fail "$name: shrink error: $(cat "$d/err")"
  [ "$(snap "${m[@]}")" = "$sha_before" ] || fail "$name: a refused shrink changed a member"
  R grow "$name" --size 32M --force > "$d/out" || fail "$name: shrink --force"
  grep -q "shrunk from" "$d/out" || fail "$name: shrink said: $(cat "$d/out")"
  [ "$(size_of "$name")" -lt "$want" ] || fail "$name: not smaller after shrink"
  nbdcopy "$(uri "$name")" "$d/back"
  cmp -n $((16 * MiB)) -i $((16 * MiB)):0 "$d/back" "$d/pattern" || fail "$name: data after shrink"
  R stop "$name" > /dev/null
done

# A boot pair (metadata 1.0: the data from sector 0, the superblock at the
# end) grows: the superblocks move to the disks' new ends, where examine
# finds them; each disk alone still holds the whole array from sector 0;
# stopped and assembled, the pair has its new size.
b=("$d/b0" "$d/b1")
truncate -s 40M "${b[@]}"
R create boot --level 1 --metadata 1.0 --assume-clean "${b[@]}" > /dev/null
qw boot "$d/pattern" 0 $((16 * MiB)) || fail "boot: pattern write"
truncate -s 72M "${b[@]}"
R grow boot --size max > "$d/out" || fail "boot: grow"
R wait boot > /dev/null
bsize=$(size_of boot)
so=$(( ((72 * MiB / 512 - 16) & ~7) ))
# Up to md's room for a bitmap and a bad block log (4 KiB each here) below
# the superblock, as md's own grow leaves it.
[ "$bsize" = $(((so - 16) * 512)) ] || fail "boot: size $bsize, expected $(((so - 16) * 512))"
for x in "${b[@]}"; do
  [ "$(ex "$x" "e['super_offset']")" = $((so * 512)) ] || fail "boot: $x: $(R examine --json "$x")"
done
nbdcopy "$(uri boot)" "$d/back"
for x in "${b[@]}"; do
  cmp -n "$bsize" "$d/back" "$x" || fail "boot: $x alone is not the array from sector 0"
done
R stop boot > /dev/null
R assemble boot "${b[@]}" > /dev/null || fail "boot: assemble"
[ "$(size_of boot)" = "$bsize" ] || fail "boot: assembled at $(size_of boot)"
cmp -n $((16 * MiB)) "$d/back" "$d/pattern" || fail "boot: pattern"
R stop boot > /dev/null

# A RAID 1's number of mirrors (mdadm --grow --raid-devices), with fio
# writing and verifying: 2 -> 3 with a hot spare there, which takes the new
# role by itself and is rebuilt; back to 2 only once a member is failed and
# removed (refused before, naming what to do).
m=("$d/m1-0" "$d/m1-1" "$d/m1-2")
truncate -s 40M "${m[@]}"
R create m1 --level 1 --bitmap internal --assume-clean "${m[0]}" "${m[1]}" > /dev/null
R add m1 "${m[2]}" | grep -q "as a hot spare" || fail "m1: spare not added"
fio_start m1 5 16M
sleep 1
R grow m1 --raid-devices 3 > "$d/out" || fail "m1: grow to 3 mirrors"
grep -q "3 mirrors now (were 2)" "$d/out" || fail "m1: grow said: $(cat "$d/out")"
R wait m1 > /dev/null || fail "m1: wait"
fio_end m1
R status m1 | grep -q "\[3/3\] \[UUU\]" || fail "m1: not [3/3] after the spare's rebuild: $(R status m1)"
R scrub m1 --wait | grep -q "mismatch_cnt 0" || fail "m1: scrub after the grow"
[ "$(ex "${m[2]}" "e['raid_disks']")" = 3 ] || fail "m1: the superblocks do not say 3 mirrors"
settle m1
before=$(snap "${m[@]}")
R grow m1 --raid-devices 2 2> "$d/err" && fail "m1: 3 members went into 2 roles"
grep -q "fail and remove 1 of them first" "$d/err" || fail "m1: shrink error: $(cat "$d/err")"
[ "$(snap "${m[@]}")" = "$before" ] || fail "m1: a refused shrink changed a member"
R fail m1 "${m[0]}" > /dev/null
R remove m1 "${m[0]}" > /dev/null
R grow m1 --raid-devices 2 > "$d/out" || fail "m1: back to 2 mirrors"
R status m1 | grep -q "\[2/2\] \[UU\]" || fail "m1: not [2/2] [UU]: $(R status m1)"
R stop m1 > /dev/null
R assemble m1 "${m[1]}" "${m[2]}" > /dev/null || fail "m1: assemble the two left"
R status m1 | grep -q "\[2/2\] \[UU\]" || fail "m1: assembled not [2/2] [UU]: $(R status m1)"
R scrub m1 --wait | grep -q "mismatch_cnt 0" || fail "m1: scrub after assembly"
R stop m1 > /dev/null

# Refused with every member byte for byte as it was: a RAID 0 and a grow
# while a scrub runs.
truncate -s 40M "$d/z0" "$d/z1"
R create z --level 0 "$d/z0" "$d/z1" > /dev/null
truncate -s 64M "$d/z0" "$d/z1"
settle z
sha_before=$(snap "$d/z0" "$d/z1")
R grow z --size max 2> "$d/err" && fail "RAID 0 grew"
grep -q "a RAID 0 cannot change its size" "$d/err" || fail "RAID 0 error: $(cat "$d/err")"
[ "$(snap "$d/z0" "$d/z1")" = "$sha_before" ] || fail "a refused RAID 0 grow changed a member"
R stop z > /dev/null
# A RAID 5 restriped over 4 (mdadm --grow --raid-devices), with fio
# writing and verifying through it the whole time: refused without a hot
# spare (nothing changed), then with one; the new size once done, on a new
# connection, after a stop and an assembly; the data as written; scrub 0.
truncate -s 40M "$d/f0" "$d/f1" "$d/f2" "$d/f3"
R create f --level 5 --chunk 64K --assume-clean "$d/f0" "$d/f1" "$d/f2" > /dev/null
qw f "$d/pattern" $((16 * MiB)) $((16 * MiB))
fsize=$(size_of f)
settle f
sha_before=$(snap "$d/f0" "$d/f1" "$d/f2")
R grow f --raid-devices 4 2> "$d/err" && fail "RAID 5 restriped without a spare"
grep -q "add 1 with raidctl add first" "$d/err" || fail "restripe error: $(cat "$d/err")"
[ "$(snap "$d/f0" "$d/f1" "$d/f2")" = "$sha_before" ] || fail "a refused restripe changed a member"
R add f "$d/f3" > /dev/null
R monitor --json f > "$d/monitor-f.json" 2> /dev/null &
mon_pid=$!
cleanup_fn kill_pid "$mon_pid"
for _ in $(seq 100); do
  R monitor --test --oneshot f > /dev/null
  grep -q '"TestMessage"' "$d/monitor-f.json" && break
  sleep 0.1
done
grep -q '"TestMessage"' "$d/monitor-f.json" || fail "raidctl monitor f never saw a TestMessage"
fio_start f 6 16M
sleep 1
# Throttled as a rebuild is (fio keeps the array busy: rebuild-min holds).
R set f rebuild-min=512K rebuild-max=512K > /dev/null
t0=$(date +%s.%N)
R grow f --raid-devices 4 > "$d/out" || fail "f: restripe"
grep -q "restriping from 3 to 4 members" "$d/out" || fail "f: grow said: $(cat "$d/out")"
# rs EXPR: python on the status JSON's array "a" and its reshape "r".
rs () {
  R status --json f | python3 -c "import json,sys; a=json.load(sys.stdin)[0]; r=a.get('reshape', {}); print($1)"
}
for _ in $(seq 100); do
  R status f | grep -q "reshape = " && break
  sleep 0.1
done
R status f | grep -q "reshape = " || fail "f: no reshape progress in status: $(R status f)"
R detail f > "$d/out"
grep -q "Delta Devices : 1, (3->4)" "$d/out" && grep -q "Reshape Status : [0-9]*% complete" "$d/out" ||
  fail "f: detail during the reshape: $(cat "$d/out")"
# raidctl grow --stop freezes it where it is: nothing moves, wait says so.
R grow f --stop > "$d/out" || fail "f: grow --stop"
t1=$(date +%s.%N)
grep -q "reshape stopped at" "$d/out" || fail "f: grow --stop said: $(cat "$d/out")"
p1=$(rs "r['position']")
[ "$(rs "r['frozen'], a['sync']['action']")" = "True idle" ] || fail "f: not frozen: $(rs "r, a['sync']")"
# At 512 KiB/s of each member (3 of data in the new shape), with the one
# second the throttle may catch up and a step: no further than that.
limit=$(python3 -c "print(int(3 * (512 * 1024 * ($t1 - $t0 + 1) + 256 * 1024)))")
[ "$p1" -le "$limit" ] || fail "f: the reshape got to $p1 bytes in $t0..$t1 at 512K/s: more than $limit"
[ "$p1" -lt "$((fsize / 2 * 3))" ] || fail "f: the throttled reshape is done already"
sleep 1.5
[ "$(rs "r['position']")" = "$p1" ] || fail "f: a frozen reshape moved from $p1 to $(rs "r['position']")"
R status f | grep -q "reshape = .* frozen (raidctl grow f --continue)" || fail "f: status: $(R status f)"
rc=0; R wait f > "$d/out" || rc=$?
[ $rc = 1 ] && grep -q "reshape is stopped at .* (frozen)" "$d/out" || fail "f: wait on a frozen reshape: $rc $(cat "$d/out")"
R grow f --stop > /dev/null 2>&1 || fail "f: a second grow --stop"
R grow f --raid-devices 5 2> "$d/err" && fail "f: restriped again during a reshape"
grep -q "a reshape is under way already" "$d/err" || fail "f: $(cat "$d/err")"
# --continue, unthrottled: it finishes under fio.
R set f rebuild-min=0 rebuild-max=0 > /dev/null
R grow f --continue > "$d/out" || fail "f: grow --continue"
grep -q "reshape goes on at" "$d/out" || fail "f: grow --continue said: $(cat "$d/out")"
R wait f > /dev/null || fail "f: wait"
fio_end f
R grow f --stop 2> "$d/err" && fail "f: grow --stop with no reshape"
grep -q "no reshape is under way" "$d/err" || fail "f: $(cat "$d/err")"
R detail f | grep -q "Reshape Status" && fail "f: detail shows a reshape after it ended"
# md's events for it (mdadm --monitor): started (twice: at the grow and
# at --continue), each fifth, finished; all with the action reshape.
for ev in RebuildStarted Rebuild20 Rebuild40 Rebuild60 Rebuild80 RebuildFinished; do
  grep "\"$ev\"" "$d/monitor-f.json" | grep -q '"action": *"reshape"' ||
    fail "f: no $ev event for the reshape: $(cat "$d/monitor-f.json")"
done
[ "$(grep -c '"RebuildStarted"' "$d/monitor-f.json")" = 2 ] || fail "f: RebuildStarted: $(cat "$d/monitor-f.json")"
kill_pid "$mon_pid"
[ "$(size_of f)" = $((fsize / 2 * 3)) ] || fail "f: $(size_of f) bytes after the restripe, not $((fsize / 2 * 3))"
R status f | grep -q "\[4/4\] \[UUUU\]" || fail "f: not [4/4]: $(R status f)"
nbdcopy "$(uri f)" "$d/back"
cmp -i $((16 * MiB)):0 -n $((16 * MiB)) "$d/back" "$d/pattern" || fail "f: pattern after the restripe"
R scrub f --wait | grep -q "mismatch_cnt 0" || fail "f: scrub after the restripe"
for x in "$d/f0" "$d/f1" "$d/f2" "$d/f3"; do
  [ "$(ex "$x" "e['raid_disks']")" = 4 ] || fail "f: $x does not say 4 members"
done
R stop f > /dev/null
R assemble f "$d/f0" "$d/f1" "$d/f2" "$d/f3" > /dev/null || fail "f: assemble"
[ "$(size_of f)" = $((fsize / 2 * 3)) ] || fail "f: assembled at $(size_of f)"
nbdcopy "$(uri f)" "$d/back"
cmp -i $((16 * MiB)):0 -n $((16 * MiB)) "$d/back" "$d/pattern" || fail "f: pattern after assembly"

# The same array to another layout and chunk (mdadm --grow --layout
# --chunk: over as many members), under fio: refusals first (nothing
# changed), detail and examine say the new shape as mdadm does while it
# runs, then the array has it, its size, its data; scrub 0; assembled so.
settle f
sha_before=$(snap "$d/f0" "$d/f1" "$d/f2" "$d/f3")
R grow f --chunk 96K 2> "$d/err" && fail "f: a chunk of 96K"
grep -q "power of two" "$d/err" || fail "f: chunk error: $(cat "$d/err")"
R grow f --layout near2 2> "$d/err" && fail "f: a RAID 10 layout"
grep -q "bad layout 'near2'" "$d/err" || fail "f: layout error: $(cat "$d/err")"
R grow f --chunk 128K --size max 2> "$d/err" && fail "f: shape and size at once"
[ "$(snap "$d/f0" "$d/f1" "$d/f2" "$d/f3")" = "$sha_before" ] || fail "a refused reshape changed a member"
fio_start f 6 16M
sleep 1
R set f rebuild-min=512K rebuild-max=512K > /dev/null
R grow f --layout left-asymmetric --chunk 128K > "$d/out" || fail "f: grow --layout --chunk"
grep -q "reshaping layout left-symmetric to left-asymmetric, chunk 64K to 128K; the size stays" "$d/out" ||
  fail "f: grow --layout said: $(cat "$d/out")"
R detail f > "$d/out"
grep -q "New Layout : left-asymmetric" "$d/out" && grep -q "New Chunksize : 128K" "$d/out" &&
  ! grep -q "Delta Devices" "$d/out" || fail "f: detail during the layout change: $(cat "$d/out")"
[ "$(rs "r['layout_to'], r['chunk_to']")" = "0 131072" ] || fail "f: status --json: $(rs "r")"
R examine "$d/f1" | grep -q "New Chunksize : 128K" || fail "f: examine: $(R examine "$d/f1")"
R set f rebuild-min=0 rebuild-max=0 > /dev/null
R wait f > /dev/null || fail "f: wait for the layout change"
fio_end f
R detail f > "$d/out"
grep -q "Layout : left-asymmetric" "$d/out" && grep -q "Chunk Size : 128K" "$d/out" ||
  fail "f: detail after the layout change: $(cat "$d/out")"
[ "$(size_of f)" = $((fsize / 2 * 3)) ] || fail "f: $(size_of f) bytes after the layout change"
nbdcopy "$(uri f)" "$d/back"
cmp -i $((16 * MiB)):0 -n $((16 * MiB)) "$d/back" "$d/pattern" || fail "f: pattern after the layout change"
R scrub f --wait | grep -q "mismatch_cnt 0" || fail "f: scrub after the layout change"
R stop f > /dev/null
R assemble f "$d/f0" "$d/f1" "$d/f2" "$d/f3" > /dev/null || fail "f: assemble"
R detail f | grep -q "Chunk Size : 128K" || fail "f: assembled with $(R detail f | grep Chunk)"
nbdcopy "$(uri f)" "$d/back"
cmp -i $((16 * MiB)):0 -n $((16 * MiB)) "$d/back" "$d/pattern" || fail "f: pattern after assembly"
R stop f > /dev/null

# A RAID 10 near-2 restriped from 4 to 6 members (md reshapes it:
# mdadm --add twice, --grow --raid-devices 6) under fio: refusals first
# (without the spares; another layout, as md keeps the copies), nothing
# changed; detail during it; then its new size, its data, scrub 0,
# assembled so; then to another chunk over as many members.  And one
# whose copies do not divide its members (near-2 over 3 to 5: rows of
# one and a half chunks, two and a half after).
for i in 0 1 2 3 4 5; do truncate -s 40M "$d/n$i"; done
R create n --level 10 --chunk 64K --assume-clean "$d/n0" "$d/n1" "$d/n2" "$d/n3" > /dev/null
qw n "$d/pattern" $((16 * MiB)) $((16 * MiB))
nsize=$(size_of n)
settle n
sha_before=$(snap "$d/n0" "$d/n1" "$d/n2" "$d/n3")
R grow n --raid-devices 6 2> "$d/err" && fail "n: RAID 10 restriped without spares"
grep -q "add 2 with raidctl add first" "$d/err" || fail "n: restripe error: $(cat "$d/err")"
R grow n --layout left-symmetric 2> "$d/err" && fail "n: a RAID 10 given a RAID 5 layout"
grep -q "a RAID 10 keeps its layout (near-2)" "$d/err" || fail "n: layout error: $(cat "$d/err")"
[ "$(snap "$d/n0" "$d/n1" "$d/n2" "$d/n3")" = "$sha_before" ] || fail "n: a refused restripe changed a member"
R add n "$d/n4" > /dev/null
R add n "$d/n5" > /dev/null
fio_start n 6 16M
sleep 1
R set n rebuild-min=1M rebuild-max=1M > /dev/null
R grow n --raid-devices 6 > "$d/out" || fail "n: restripe"
grep -q "restriping from 4 to 6 members; the array takes its new size" "$d/out" ||
  fail "n: grow said: $(cat "$d/out")"
R detail n > "$d/out"
grep -q "Delta Devices : 2, (4->6)" "$d/out" || fail "n: detail during the restripe: $(cat "$d/out")"
R set n rebuild-min=0 rebuild-max=0 > /dev/null
R wait n > /dev/null || fail "n: wait"
fio_end n
[ "$(size_of n)" = $((nsize / 2 * 3)) ] || fail "n: $(size_of n) bytes after the restripe, not $((nsize / 2 * 3))"
R status n | grep -q "\[6/6\] \[UUUUUU\]" || fail "n: not [6/6]: $(R status n)"
nbdcopy "$(uri n)" "$d/back"
cmp -i $((16 * MiB)):0 -n $((16 * MiB)) "$d/back" "$d/pattern" || fail "n: pattern after the restripe"
R scrub n --wait | grep -q "mismatch_cnt 0" || fail "n: scrub after the restripe"
[ "$(ex "$d/n5" "e['raid_disks']")" = 6 ] || fail "n: $d/n5 does not say 6 members"
R stop n > /dev/null
R assemble n "$d/n0" "$d/n1" "$d/n2" "$d/n3" "$d/n4" "$d/n5" > /dev/null || fail "n: assemble"
[ "$(size_of n)" = $((nsize / 2 * 3)) ] || fail "n: assembled at $(size_of n)"
fio_start n 4 16M
R grow n --chunk 128K > "$d/out" || fail "n: grow --chunk"
grep -q "reshaping chunk 64K to 128K; the size stays" "$d/out" || fail "n: grow --chunk said: $(cat "$d/out")"
R wait n > /dev/null || fail "n: wait for the chunk change"
fio_end n
R detail n | grep -q "Chunk Size : 128K" || fail "n: chunk after the reshape: $(R detail n | grep Chunk)"
nbdcopy "$(uri n)" "$d/back"
cmp -i $((16 * MiB)):0 -n $((16 * MiB)) "$d/back" "$d/pattern" || fail "n: pattern after the chunk change"
R scrub n --wait | grep -q "mismatch_cnt 0" || fail "n: scrub after the chunk change"
R stop n > /dev/null
for i in 0 1 2 3 4; do truncate -s 40M "$d/o$i"; done
R create o --level 10 --chunk 64K --assume-clean "$d/o0" "$d/o1" "$d/o2" > /dev/null
qw o "$d/pattern" 0 $((16 * MiB))
osize=$(size_of o)
R add o "$d/o3" > /dev/null
R add o "$d/o4" > /dev/null
fio_start o 4 4M
R grow o --raid-devices 5 > /dev/null || fail "o: restripe 3 -> 5"
R wait o > /dev/null || fail "o: wait"
fio_end o
# md's raid10_size(): whole chunks of each member, 5 over 2 copies.
ochunks=$(( $(ex "$d/o0" "e['used_dev_size']") / (64 * 1024) ))
[ "$(size_of o)" = $(( ochunks * 5 / 2 * 64 * 1024 )) ] && [ "$osize" = $(( ochunks * 3 / 2 * 64 * 1024 )) ] ||
  fail "o: $(size_of o) bytes after the restripe (was $osize; $ochunks chunks of each member)"
nbdcopy "$(uri o)" "$d/back"
cmp -i $((4 * MiB)):$((4 * MiB)) -n $((12 * MiB)) "$d/back" "$d/pattern" || fail "o: pattern after the restripe"
R scrub o --wait | grep -q "mismatch_cnt 0" || fail "o: scrub after the restripe"
R stop o > /dev/null
R assemble o "$d/o0" "$d/o1" "$d/o2" "$d/o3" "$d/o4" > /dev/null || fail "o: assemble"
R stop o > /dev/null

# A mirror of 2 becomes a RAID 5 and gets a third member in one command
# (mdadm --grow --level 5 --raid-devices 3: md's takeover, then a
# restripe), under fio; another goes to RAID 5 and back to RAID 1.
for i in 0 1 2; do truncate -s 40M "$d/t$i"; done
R create t --level 1 --assume-clean "$d/t0" "$d/t1" > /dev/null
qw t "$d/pattern" $((16 * MiB)) $((16 * MiB))
tsize=$(size_of t)
R grow t --level 6 2> "$d/err" && fail "t: level 6"
grep -q "bad level '6'" "$d/err" || fail "t: level error: $(cat "$d/err")"
R add t "$d/t2" > /dev/null
fio_start t 6 16M
sleep 1
R grow t --level 5 --raid-devices 3 > "$d/out" || fail "t: grow --level 5 --raid-devices 3"
grep -q "a RAID 5 of 2 now (was a RAID 1), left-symmetric, chunk 64K" "$d/out" &&
  grep -q "restriping from 2 to 3 members" "$d/out" || fail "t: grow said: $(cat "$d/out")"
R wait t > /dev/null || fail "t: wait"
fio_end t
R detail t > "$d/out"
grep -q "Raid Level : raid5" "$d/out" && grep -q "Raid Devices : 3" "$d/out" ||
  fail "t: detail after the takeover and restripe: $(cat "$d/out")"
[ "$(size_of t)" = $((tsize * 2)) ] || fail "t: $(size_of t) bytes, not $((tsize * 2))"
nbdcopy "$(uri t)" "$d/back"
cmp -i $((16 * MiB)):0 -n $((16 * MiB)) "$d/back" "$d/pattern" || fail "t: pattern after the takeover"
R scrub t --wait | grep -q "mismatch_cnt 0" || fail "t: scrub after the takeover"
[ "$(ex "$d/t0" "e['level']")" = raid5 ] || fail "t: $d/t0 does not say RAID 5"
# Then to a RAID 0 of 2, mdadm's way: reshaped to parity-last, a RAID 0
# when that ends, its parity member gone (refused first with more to
# change at once, nothing changed).
settle t
sha_before=$(snap "$d/t0" "$d/t1" "$d/t2")
R grow t --level 0 --chunk 128K 2> "$d/err" && fail "t: level 0 and a chunk at once"
grep -q "give --level 0 alone" "$d/err" || fail "t: level 0 error: $(cat "$d/err")"
[ "$(snap "$d/t0" "$d/t1" "$d/t2")" = "$sha_before" ] || fail "t: a refused level 0 changed a member"
grow_under_fio t "reshaping from left-symmetric to parity-last.*then a RAID 0 of 2" 0 2 \
  $((tsize * 2)) --level 0
R stop t > /dev/null
[ "$(ex "$d/t2" "e['level']")" = raid5 ] || fail "t: $d/t2 (the parity that left) changed"
R assemble t "$d/t0" "$d/t1" > /dev/null || fail "t: assemble the RAID 0"
R detail t | grep -q "Raid Devices : 2" || fail "t: assembled: $(R detail t)"
nbdcopy "$(uri t)" "$d/back"
cmp -i $((16 * MiB)):0 -n $((16 * MiB)) "$d/back" "$d/pattern" || fail "t: pattern as a RAID 0"
R stop t > /dev/null
for i in 0 1; do truncate -s 40M "$d/u$i"; done
R create u --level 1 --assume-clean "$d/u0" "$d/u1" > /dev/null
qw u "$d/pattern" 0 $((16 * MiB))
R grow u --level 5 > /dev/null || fail "u: grow --level 5"
[ "$(ex "$d/u1" "e['level']")" = raid5 ] || fail "u: $d/u1 does not say RAID 5"
R grow u --level 1 > "$d/out" || fail "u: grow --level 1"
grep -q "a RAID 1 of 2 now (was a RAID 5 of 2)" "$d/out" || fail "u: grow said: $(cat "$d/out")"
R stop u > /dev/null
R assemble u "$d/u0" "$d/u1" > /dev/null || fail "u: assemble"
R detail u | grep -q "Raid Level : raid1" || fail "u: assembled as $(R detail u | grep Level)"
nbdcopy "$(uri u)" "$d/back"
cmp -n $((16 * MiB)) "$d/back" "$d/pattern" || fail "u: pattern after RAID 5 and back"
R stop u > /dev/null

# A RAID 0 of 2 becomes a RAID 5 of 3 missing its parity member (md's
# takeover), a member added is rebuilt as the parity by itself, and back
# to a RAID 0 of 2, its parity member leaving: under fio, the data as
# written, scrub 0 in between, assembled again as a RAID 0.
for i in 0 1 2; do truncate -s 40M "$d/w$i"; done
R create w --level 0 --chunk 64K "$d/w0" "$d/w1" > /dev/null
qw w "$d/pattern" $((16 * MiB)) $((16 * MiB))
wsize=$(size_of w)
fio_start w 6 16M
sleep 1
R grow w --level 5 > "$d/out" || fail "w: grow --level 5"
grep -q "a RAID 5 of 3 now (was a RAID 0), parity-last, chunk 64K.*parity role is missing" \
  "$d/out" || fail "w: grow said: $(cat "$d/out")"
R detail w > "$d/out"
grep -q "Raid Level : raid5" "$d/out" && grep -q "Raid Devices : 3" "$d/out" &&
  grep -q "State : .*degraded" "$d/out" && grep -q "Layout : parity-last" "$d/out" ||
  fail "w: detail after the takeover: $(cat "$d/out")"
R add w "$d/w2" > /dev/null
R wait w > /dev/null || fail "w: wait"
R scrub w --wait | grep -q "mismatch_cnt 0" || fail "w: scrub of the rebuilt parity"
R grow w --level 0 > "$d/out" || fail "w: grow --level 0"
grep -q "a RAID 0 of 2 now (was a RAID 5 of 3).*parity member has left" "$d/out" ||
  fail "w: grow --level 0 said: $(cat "$d/out")"
fio_end w
R detail w > "$d/out"
grep -q "Raid Level : raid0" "$d/out" && grep -q "Raid Devices : 2" "$d/out" ||
  fail "w: detail after RAID 0 again: $(cat "$d/out")"
[ "$(size_of w)" = "$wsize" ] || fail "w: $(size_of w) bytes, not $wsize"
R stop w > /dev/null
[ "$(ex "$d/w0" "e['level']")" = raid0 ] || fail "w: $d/w0 does not say RAID 0"
[ "$(ex "$d/w2" "e['level']")" = raid5 ] || fail "w: $d/w2 (the parity that left) changed"
R assemble w "$d/w0" "$d/w1" > /dev/null || fail "w: assemble"
nbdcopy "$(uri w)" "$d/back"
cmp -i $((16 * MiB)):0 -n $((16 * MiB)) "$d/back" "$d/pattern" || fail "w: pattern after RAID 5 and back"
R stop w > /dev/null

# A RAID 0 of 2 restriped over 4 (mdadm --grow --raid-devices 4 --add
# ...): md's way, a RAID 5 of 3 missing its parity role reshaped over the
# new members, then a RAID 0 of 4 again; under fio, the pattern as written,
# twice the size, the new room zeroes; refused first with a member given
# twice and without --add, nothing changed; assembled again as a RAID 0 of
# 4 (examine says it on every member).
for i in 0 1 2 3; do truncate -s 40M "$d/x$i"; done
R create x --level 0 --chunk 64K "$d/x0" "$d/x1" > /dev/null
qw x "$d/pattern" $((16 * MiB)) $((16 * MiB))
xsize=$(size_of x)
settle x
sha_before=$(snap "$d/x0" "$d/x1")
R grow x --raid-devices 4 2> "$d/err" && fail "x: a RAID 0 grew without its new members"
grep -q "name the new members with the grow" "$d/err" || fail "x: error: $(cat "$d/err")"
R grow x --raid-devices 4 --add "$d/x2" --add "$d/x2" 2> "$d/err" &&
  fail "x: a member given twice"
grep -q "given twice" "$d/err" || fail "x: twice error: $(cat "$d/err")"
R grow x --raid-devices 5 --add "$d/x2" --add "$d/x3" 2> "$d/err" &&
  fail "x: 5 members from 2 with 2 new"
[ "$(snap "$d/x0" "$d/x1")" = "$sha_before" ] || fail "x: a refused grow changed a member"
grow_under_fio x "restriping from 2 to 4 members, md's way.*a RAID 0 of 4 again" 0 4 \
  $((xsize * 2)) --raid-devices 4 --add "$d/x2" --add "$d/x3"
nbdcopy "$(uri x)" "$d/back"
cmp -i $((16 * MiB)):0 -n $((16 * MiB)) "$d/back" "$d/pattern" || fail "x: pattern after the restripe"
cmp -i "$xsize" -n "$xsize" "$d/back" /dev/zero || fail "x: the new room is not zeroes"
R stop x > /dev/null
for i in 0 1 2 3; do
  [ "$(ex "$d/x$i" "(e['level'], e['raid_disks'], e['role'])")" = "('raid0', 4, 'Active device $i')" ] ||
    fail "x: examine $d/x$i: $(ex "$d/x$i" "(e['level'], e['raid_disks'], e['role'])")"
done
R assemble x "$d/x0" "$d/x1" "$d/x2" "$d/x3" > /dev/null || fail "x: assemble"
[ "$(size_of x)" = $((xsize * 2)) ] || fail "x: assembled at $(size_of x)"
nbdcopy "$(uri x)" "$d/back"
cmp -i $((16 * MiB)):0 -n $((16 * MiB)) "$d/back" "$d/pattern" || fail "x: pattern after assembly"
R stop x > /dev/null

for i in 0 1; do truncate -s 40M "$d/s$i"; done
R create s --level 1 --assume-clean "$d/s0" "$d/s1" > /dev/null
R set s rebuild-min=64K rebuild-max=64K
R scrub s > /dev/null
truncate -s 64M "$d/s0" "$d/s1"
R grow s --size max 2> "$d/err" && fail "grew while a scrub ran"
grep -q "a check is running" "$d/err" || fail "busy error: $(cat "$d/err")"
R scrub s --stop > /dev/null
R stop s > /dev/null
echo "test-raidd-grow: ok"
