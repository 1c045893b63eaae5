#!/bin/bash
# Description: raidctl fail refuses to fail the last copy of the data
# without --force, as md does.  Through raidd:
#  - RAID 0: fail of a member is refused (naming the array, the member and
#    why) and the data still reads back; fail --force fails the array;
#  - RAID 5: the first fail is accepted, a second is refused ("raid5
#    already degraded: member ... faulty"), fail --force kills it;
#  - RAID 1: failing the last member in sync is refused without --force.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires nbdcopy --version
requires python3 --version

mktmpdir test-assemble-force
raidd_env "$tmpdir"
uri () { echo "nbd+unix:///$1?socket=$sock"; }
# st NAME EXPR: a field of the array's status (python on "a").
st () {
  R status --json "$1" > "$d/st.json"
  python3 -c "import json,sys; a=json.load(open(sys.argv[1]))[0]; print($2)" "$d/st.json"
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

# ---- RAID 1 ----
truncate -s 32M "$d/r1-0" "$d/r1-1"
R create r1 --level 1 --assume-clean "$d/r1-0" "$d/r1-1" > /dev/null || fail "create r1"
R fail r1 "$d/r1-0" > /dev/null || fail "fail of the first r1 member was refused"
R fail r1 "$d/r1-1" 2> "$d/err" && fail "fail of the last r1 member succeeded"
grep -qF "failing $d/r1-1 would leave array r1 without its data (raid1: it is the last member in sync); use --force" "$d/err" ||
  fail "fail r1 message: $(cat "$d/err")"
[ "$(st r1 "a['failed']")" = False ] || fail "r1 failed after a refused fail"
R stop r1 > /dev/null

echo "$0: OK"
