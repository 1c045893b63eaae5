#!/bin/bash
# Description: raidctl fail refuses to fail the last copy of the data
# without --force, and raidctl assemble --force brings back an array that
# lost too many members, as mdadm's does.  Through raidd:
#  - RAID 0: fail of a member is refused (naming the array, the member and
#    why) and the data still reads back; fail --force fails the array;
#    after a stop, assemble is refused, saying --force may start it and
#    which member it would take; assemble --force takes it back, says
#    what it did (events raised from X to Y), and the data reads identical;
#  - RAID 5: the first fail is accepted, a second is refused ("raid5
#    already degraded: member ... faulty"), fail --force kills it; after
#    a stop, assemble --force brings it back degraded with the member that
#    failed last (the first one stays out), its rows still marked for a
#    resync that waits for the rebuild (status: "resync_pending"; md's
#    resync point kept, issue 33), and the data written before the first
#    failure reads identical;
#  - RAID 1: failing the last member in sync is refused without --force;
#  - assemble --scan (on loop devices, as root) is refused the same way
#    and --scan --force brings the RAID 0 back.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires nbdcopy --version
requires python3 --version

mktmpdir test-raidctl-assemble-force
raidd_env "$tmpdir"
events () {
  R examine --json "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['events'])"
}
# events_run NAME MEMBER: the events of the update that started array
# NAME, which MEMBER is in.  raidd's safe mode marks an array idle for
# 200 ms clean, one update more (the start marks it active): so one less
# once raidd says it is clean.  (Not from the superblock's state: with a
# resync due it says "active" while clean, as md's resync point does.)
events_run () {
  local i
  for (( i = 0; i < 100; i++ )); do
    [ "$(st "$1" "a['state']")" = clean ] && break
    sleep 0.1
  done
  [ "$(st "$1" "a['state']")" = clean ] || fail "$1 never marked clean: $(cat "$d/st.json")"
  echo $(( $(events "$2") - 1 ))
}
# same_data NAME: the array starts with $d/data.
same_data () {
  rm -f "$d/back"
  nbdcopy "$(uri "$1")" "$d/back" && cmp -n "$(stat -c %s "$d/data")" "$d/back" "$d/data"
}

start_raidd
head -c 16M /dev/urandom > "$d/data"

# ---- RAID 0 ----
truncate -s 32M "$d/r0-0" "$d/r0-1"
R create r0 --level 0 --chunk 64K "$d/r0-0" "$d/r0-1" > /dev/null || fail "create r0"
nbdcopy "$d/data" "$(uri r0)" || fail "nbdcopy into r0"
R fail r0 "$d/r0-1" > "$d/out" 2> "$d/err" && fail "fail of a RAID 0 member succeeded"
grep -qF "failing $d/r0-1 would leave array r0 without its data (raid0 has no redundancy: every member holds data); use --force to fail it anyway" "$d/err" ||
  fail "fail r0 message: $(cat "$d/err")"
[ "$(st r0 "a['failed'], a['degraded']")" = "False 0" ] || fail "r0 changed after a refused fail"
same_data r0 || fail "r0 data after a refused fail"

R fail r0 "$d/r0-1" --force > "$d/out" || fail "fail --force r0"
grep -q "r0 has FAILED" "$d/out" || fail "fail --force output: $(cat "$d/out")"
[ "$(st r0 "a['failed']")" = True ] || fail "r0 not failed after fail --force"
R stop r0 > /dev/null
behind=$(events "$d/r0-1")
R assemble r0 "$d/r0-0" "$d/r0-1" 2> "$d/err" && fail "assembly of the failed RAID 0 succeeded"
grep -qF "$d/r0-1 (role 1, events $behind, marked faulty); --force may start it, taking back $d/r0-1" "$d/err" ||
  fail "assemble r0 message: $(cat "$d/err")"
[ "$(events "$d/r0-1")" = "$behind" ] || fail "a refused assembly wrote r0-1's superblock"
R assemble r0 "$d/r0-0" "$d/r0-1" --force > "$d/out" || fail "assemble --force r0"
now=$(events_run r0 "$d/r0-0")
grep -qF "r0: forced $d/r0-1 back in as role 1: events $behind raised to $now (it was marked faulty)" "$d/out" ||
  fail "assemble --force r0 output: $(cat "$d/out")"
[ "$(events_run r0 "$d/r0-1")" = "$now" ] || fail "r0-1's events were not raised"
[ "$(st r0 "a['failed'], a['degraded']")" = "False 0" ] || fail "r0 not whole after assemble --force"
same_data r0 || fail "r0 data after assemble --force"
R stop r0 > /dev/null
R assemble r0 "$d/r0-0" "$d/r0-1" > /dev/null || fail "r0 needs --force again"
R stop r0 > /dev/null

# ---- RAID 5 ----
m=()
for i in 0 1 2 3; do truncate -s 32M "$d/r5-$i"; m+=("$d/r5-$i"); done
R create r5 --level 5 --chunk 64K --assume-clean "${m[@]}" > /dev/null || fail "create r5"
nbdcopy "$d/data" "$(uri r5)" || fail "nbdcopy into r5"
R fail r5 "$d/r5-0" > /dev/null || fail "the first fail of r5 was refused"
R fail r5 "$d/r5-1" 2> "$d/err" && fail "a second fail of r5 succeeded"
grep -qF "failing $d/r5-1 would leave array r5 without its data (raid5 already degraded: member $d/r5-0 (role 0) faulty); use --force" "$d/err" ||
  fail "fail r5 message: $(cat "$d/err")"
same_data r5 || fail "r5 data after a refused fail"
R fail r5 "$d/r5-1" --force > /dev/null || fail "fail --force r5"
[ "$(st r5 "a['failed']")" = True ] || fail "r5 not failed"
R stop r5 > /dev/null
e0=$(events "$d/r5-0") e1=$(events "$d/r5-1")
R assemble r5 "${m[@]}" 2> "$d/err" && fail "assembly of the dead RAID 5 succeeded"
grep -qF "$d/r5-0 (role 0, events $e0, marked faulty), $d/r5-1 (role 1, events $e1, marked faulty); --force may start it, taking back $d/r5-1" "$d/err" ||
  fail "assemble r5 message: $(cat "$d/err")"
R assemble r5 "${m[@]}" --force > "$d/out" || fail "assemble --force r5"
cat "$d/out"
grep -qF "r5: forced $d/r5-1 back in as role 1: events $e1 raised to $(events_run r5 "$d/r5-2")" "$d/out" ||
  fail "assemble --force r5 output: $(cat "$d/out")"
grep -q "r5: running degraded: 1 role(s) without a member" "$d/out" || fail "no word of degraded"
grep -q "r5: started dirty and degraded: parity is taken as it is" "$d/out" ||
  fail "no word of the parity taken as it is"
[ "$(events "$d/r5-0")" = "$e0" ] || fail "r5-0, which the array ran without, was written"
[ "$(st r5 "a['failed'], a['degraded'], a['needs_resync'], a['resync_pending']")" = \
  "False 1 True after the rebuild" ] ||
  fail "r5 state after assemble --force: $(cat "$d/st.json")"
[ "$(st r5 "[x['role'] for x in a['members'] if x['path'] == '$d/r5-1' and x['state'] == 'in_sync']")" = "[1]" ] ||
  fail "r5-1 is not back in role 1"
same_data r5 || fail "r5 data after assemble --force"
R stop r5 > /dev/null

# ---- RAID 1 ----
truncate -s 32M "$d/r1-0" "$d/r1-1"
R create r1 --level 1 --assume-clean "$d/r1-0" "$d/r1-1" > /dev/null || fail "create r1"
R fail r1 "$d/r1-0" > /dev/null || fail "fail of the first r1 member was refused"
R fail r1 "$d/r1-1" 2> "$d/err" && fail "fail of the last r1 member succeeded"
grep -qF "failing $d/r1-1 would leave array r1 without its data (raid1: it is the last member in sync); use --force" "$d/err" ||
  fail "fail r1 message: $(cat "$d/err")"
[ "$(st r1 "a['failed']")" = False ] || fail "r1 failed after a refused fail"
R stop r1 > /dev/null

# ---- assemble --scan --force, on loop devices ----
if [ "$(id -u)" = 0 ] && losetup --version >/dev/null 2>&1 && [ -e /dev/loop-control ]; then
  cleanup_fn "${top_srcdir:-.}/tests/detach-loops.sh" "$d"
  truncate -s 32M "$d/lo-0" "$d/lo-1"
  l0=$(losetup --show -f "$d/lo-0") l1=$(losetup --show -f "$d/lo-1")
  name=scan-$$
  R create $name --level 0 --chunk 64K "$l0" "$l1" > /dev/null || fail "create $name"
  nbdcopy "$d/data" "$(uri $name)" || fail "nbdcopy into $name"
  R fail $name "$l1" --force > /dev/null || fail "fail --force $name"
  R stop $name > /dev/null
  R assemble --scan $name > "$d/out" 2> "$d/err" && fail "assemble --scan of the failed RAID 0 succeeded"
  grep -qF -- "--force may start it, taking back $l1" "$d/err" || fail "assemble --scan message: $(cat "$d/err")"
  R assemble --scan $name --force > "$d/out" || fail "assemble --scan --force: $(cat "$d/out")"
  grep -qF "$name: forced $l1 back in as role 1" "$d/out" || fail "assemble --scan --force output: $(cat "$d/out")"
  same_data $name || fail "$name data after assemble --scan --force"
  R stop $name > /dev/null
else
  echo "$0: note: assemble --scan --force not tested (needs root and loop devices)"
fi

echo "$0: OK"
