#!/bin/bash
# Description: the README's "Mirror a boot pair" walk-through, run as it
# stands: its ```sh blocks marked readme-bootpair (tests/readme.sh), with
# raidd's sockets and /var/tmp moved into a private directory.  Then what
# the walk-through says should be true is checked: the member alone held
# the files and was clean, the scan waited and started the pair degraded
# ([2/1] [U_]), the returned disk was re-added and rebuilt, the scrub found
# 0 mismatches and the pair ended whole ([2/2] [UU]); its clean-up stopped
# the pair and detached and removed its disks.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
. "${top_srcdir:-.}/tests/readme.sh"
requires_nbd_loop

mktmpdir test-readme-bootpair
raidd_env "$tmpdir"
nbdfuse=
cleanup_fn readme_unmount
start_raidd
raidctl () { R "$@"; }

readme_script readme-bootpair "$d/walk.sh"
readme_run "$d/walk.sh"

for f in $(ls /etc/default); do
  grep -qx "$f" "$d/out" || fail "the member alone does not hold default/$f"
done
grep -Eq "^boot: [0-9]+/[0-9]+ files" "$d/out" || fail "e2fsck -fn on the member alone: $(cat "$d/out")"
grep -q "waiting up to 5 s" "$d/err" || fail "the scan did not wait for boot1"
grep -q "starting it DEGRADED (last resort)" "$d/err" || fail "the scan did not start boot degraded"
grep -q "\[2/1\] \[U_\]" "$d/out" || fail "status after the degraded start is not [2/1] [U_]"
grep -q "boot: member $d1 is back" "$d/raidd.log" || grep -q "re-added $d1 in role 1" "$d/out" ||
  fail "the returned disk was not re-added"
grep -q "check done: mismatch_cnt 0" "$d/out" || fail "scrub did not find 0 mismatches"
grep -q "\[2/2\] \[UU\]" "$d/out" || fail "the pair is not whole at the end"
R status | grep -q boot && fail "the walk-through left boot running"
[ -z "$(loop_devices_under "$d")" ] || fail "the walk-through left loop devices: $(loop_devices_under "$d")"
[ ! -e "$d/boot0" ] || fail "the walk-through left its disks"
echo "$0: OK"
