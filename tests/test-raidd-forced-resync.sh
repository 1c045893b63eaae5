#!/bin/bash
# Description: a forced start of a dirty degraded RAID 5 does not forget
# the rows that may disagree (issue 33).  A RAID 5 of three members loses
# one, a new member is being rebuilt (slowly: raidd --rebuild-max) while
# the array is written, and raidd is killed (kill -9, safe-mode-delay=0:
# the superblocks say "active").  A torn write is then made by hand: 4K
# of a row the rebuild had already passed change on one member only, so
# that the row's parity no longer matches its data.  That array is dirty
# and degraded (a member still being rebuilt): it starts only with
# --force.  Then, with and without a write-intent bitmap:
#  - assemble --run --force says the resync waits for the rebuild; status
#    --json has "resync_pending": "after the rebuild" and needs_resync,
#    detail says "Resync Pending", and the superblocks keep md's resync
#    point (examine: "active", not "clean", once safe mode has been there)
#    so that md would resync it too;
#  - the rebuild ends, then the resync of the marked rows (all of them, or
#    the bitmap's dirty chunks) runs by itself, and a scrub (check) finds
#    mismatch_cnt 0; the data outside the torn row reads back.
# Before: the forced start marked the array clean, the rebuild left the
# rows below its offset as they were, and the scrub found the torn row.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires nbdcopy --version
requires python3 --version

mktmpdir test-raidd-forced-resync
raidd_env "$tmpdir"
uri () { echo "nbd+unix:///$1?socket=$sock"; }
# st NAME EXPR: a field of the array's status (python on "a").
st () {
  R status --json "$1" > "$d/st.json"
  python3 -c "import json,sys; a=json.load(open(sys.argv[1]))[0]; print($2)" "$d/st.json"
}
# ex MEMBER KEY: a field of the member's superblock.
ex () {
  R examine --json "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['$2'])"
}
head -c 8M /dev/urandom > "$d/data"
# The data after the first row (two 64K data chunks): the torn row holds
# neither its old nor its new contents, as the write hole leaves it.
same_data_after_row0 () {
  rm -f "$d/back"
  nbdcopy "$(uri "$1")" "$d/back" &&
    cmp -i 131072 -n $(( $(stat -c %s "$d/data") - 131072 )) "$d/back" "$d/data"
}

trial () {
  local name=$1 bitmap=$2 p=$d/$1 i off
  echo "---- $name: bitmap $bitmap ----"
  rm -f "$p"-*
  truncate -s 32M "$p-0" "$p-1" "$p-2" "$p-3"
  start_raidd --rebuild-min 256K --rebuild-max 1M
  R create "$name" --level 5 --chunk 64K --assume-clean --bitmap "$bitmap" \
    "$p-0" "$p-1" "$p-2" > /dev/null || fail "$name: create"
  R set "$name" safe-mode-delay=0 > /dev/null || fail "$name: set safe-mode-delay=0"
  nbdcopy "$d/data" "$(uri "$name")" || fail "$name: nbdcopy"
  R fail "$name" "$p-2" > /dev/null || fail "$name: fail $p-2"
  R remove "$name" "$p-2" > /dev/null || fail "$name: remove $p-2"
  R add "$name" "$p-3" > /dev/null || fail "$name: add $p-3"
  # Written while degraded: the bitmap's bits for these rows stay set.
  nbdcopy "$d/data" "$(uri "$name")" || fail "$name: nbdcopy while rebuilding"
  for (( i = 0; i < 100; i++ )); do
    [ "$(st "$name" "a['sync']['action'] == 'recover' and a['sync']['done'] >= 2 << 20")" = True ] &&
      break
    sleep 0.1
  done
  [ "$(st "$name" "a['sync']['action']")" = recover ] ||
    fail "$name: no rebuild under way: $(cat "$d/st.json")"
  kill -9 "$raidd_pid"; wait "$raidd_pid" 2>/dev/null || :; raidd_pid=
  [ "$(ex "$p-0" state)" = active ] || fail "$name: not dirty after kill -9"
  # The torn write: row 0, already rebuilt, changed on member 0 only.
  off=$(ex "$p-0" data_offset)
  head -c 4096 /dev/urandom | dd of="$p-0" bs=4096 seek=$(( off / 4096 + 2 )) conv=notrunc status=none

  start_raidd --rebuild-min 256K --rebuild-max 1M
  R assemble "$name" "$p-0" "$p-1" "$p-3" --run 2> "$d/err" &&
    fail "$name: a dirty degraded start without --force"
  grep -qF "cannot start dirty degraded array" "$d/err" || fail "$name: $(cat "$d/err")"
  R assemble "$name" "$p-0" "$p-1" "$p-3" --run --force > "$d/out" ||
    fail "$name: assemble --force"
  grep -q "those rows stay marked and are resynced once a member is added and rebuilt" "$d/out" ||
    fail "$name: assemble --force says nothing of the resync: $(cat "$d/out")"
  # Meanwhile: the resync waits for the rebuild, and says so.
  [ "$(st "$name" "a['needs_resync'], a['resync_pending'], a['degraded']")" = \
    "True after the rebuild 1" ] || fail "$name: after assemble --force: $(cat "$d/st.json")"
  R detail "$name" > "$d/detail"
  grep -q "Resync Pending : after the rebuild (forced start of a dirty degraded array" "$d/detail" ||
    fail "$name: detail: $(cat "$d/detail")"
  grep -q "State : .*resync needed" "$d/detail" || fail "$name: detail: $(cat "$d/detail")"
  R status "$name" | grep -q "resync pending: after the rebuild" ||
    fail "$name: status: $(R status "$name")"
  # Idle (safe mode, 200 ms): md's resync point stays in the superblocks.
  for (( i = 0; i < 100; i++ )); do
    R detail "$name" | grep -q "State : clean" && break
    sleep 0.1
  done
  R detail "$name" | grep -q "State : clean" || fail "$name: never idle: $(R detail "$name")"
  [ "$(ex "$p-0" state)" = active ] ||
    fail "$name: the superblock says clean while the resync is due"
  R set "$name" rebuild-max=0 > /dev/null || fail "$name: set rebuild-max=0"
  # The rebuild, then the resync by itself.
  for (( i = 0; i < 300; i++ )); do
    [ "$(st "$name" "a['degraded'] == 0 and not a['needs_resync'] and a['sync']['action'] == 'idle'")" = True ] &&
      break
    sleep 0.1
  done
  [ "$(st "$name" "a['degraded'], a['sync']['action']")" = "0 idle" ] ||
    fail "$name: not whole after the rebuild and the resync: $(cat "$d/st.json")"
  [ "$(st "$name" "a['needs_resync']")" = False ] ||
    fail "$name: the resync after the rebuild did not run: $(cat "$d/st.json")"
  grep -q "raid5 $name: resync started at" "$d/raidd.log" || fail "$name: no resync in the log"
  R scrub "$name" --wait > "$d/scrub" || fail "$name: scrub: $(cat "$d/scrub")"
  grep -q "mismatch_cnt 0" "$d/scrub" ||
    fail "$name: rows still disagree after the rebuild: $(cat "$d/scrub")"
  same_data_after_row0 "$name" || fail "$name: data after the rebuild and the resync"
  R stop "$name" > /dev/null || fail "$name: stop"
  [ "$(ex "$p-0" state)" = clean ] || fail "$name: not clean after the resync and a stop"
  stop_raidd
}

trial n5 none
trial b5 internal
echo PASS
