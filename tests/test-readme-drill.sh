#!/bin/bash
# Description: the README's "Drill a drive failure" walk-through, run as
# it stands: its ```sh blocks marked readme-drill (tests/readme.sh), with
# raidd's sockets and /var/tmp moved into a private directory.  Then what
# the walk-through says should be true is checked: fio ended with no
# errors, the scrub found 0 mismatches, the spare took role 2, the array
# was whole again, stats showed its RAID overhead, and its clean-up
# stopped the array and removed its files.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
. "${top_srcdir:-.}/tests/readme.sh"
requires fio --enghelp=nbd
requires python3 --version

raidd=$top_builddir/raidd/raidd
mktmpdir test-readme-drill
d=$tmpdir
ctl=$d/control.sock
sock=$d/nbd.sock
raidctl () { "$top_builddir/raidctl/raidctl" --control "$ctl" "$@"; }
fail () { echo "$0: FAIL: $*" >&2; tail -30 "$d/raidd.log" >&2; exit 1; }

"$raidd" --foreground --control "$ctl" --nbd-socket "$sock" --threads 2 >"$d/raidd.log" 2>&1 &
pid=$!
stop_raidd () { kill_pid "$pid"; wait "$pid" 2>/dev/null || :; }
cleanup_fn stop_raidd
for _ in $(seq 50); do raidctl status >/dev/null 2>&1 && break; sleep 0.1; done

readme_script readme-drill "$d/drill.sh"
fio=
kill_fio () { [ -z "$fio" ] || kill_pid "$fio"; }
cleanup_fn kill_fio
readme_run "$d/drill.sh"

grep -q "err= 0" "$d/out" || fail "fio reported errors"
grep -q "check done: mismatch_cnt 0" "$d/out" || fail "scrub: $(cat "$d/out")"
grep -q "\[4/3\] \[U_UU\]" "$d/out" || fail "status after fail did not show [4/3] [U_UU]"
grep -q "$d/d1\[1\](F)" "$d/out" || fail "status after fail did not mark d1 (F)"
grep -q "added $d/d5 to drill as a hot spare" "$d/out" || fail "d5 was not a spare"
grep -Eq "^ +2 +active +[a-z]+ +$d/d5$" "$d/out" || fail "the spare did not take role 2"
grep -Eq "State : (clean|active)$" "$d/out" || fail "the array is not whole at the end"
grep -q "RAID overhead:" "$d/out" || fail "stats drill showed no RAID overhead"
raidctl status | grep -q drill && fail "the walk-through left drill running"
[ ! -e "$d/d0" ] || fail "the walk-through left its member files"
echo "$0: OK"
