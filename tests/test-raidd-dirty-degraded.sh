#!/bin/bash
# Description: the RAID 5 write hole.  A RAID 5 that raidd did not stop
# cleanly (kill -9 while it ran) and that comes back with a member missing
# is not started, as md refuses it ("cannot start dirty degraded array"):
# a row being written at the crash may hold parity that does not match its
# data, and the missing member's data rebuilt from that parity would be
# silently wrong.  Through raidd and raidctl:
#  - after kill -9 during writes the superblocks say "active" (dirty);
#  - assemble of two of the three members is refused without --run (as
#    any degraded start), and with --run too, saying why (dirty degraded,
#    which role is missing, the write hole) and how to force it; neither
#    refusal writes a byte to any member (sha256 of all three unchanged);
#  - assemble --run --force starts it degraded, the data written before
#    the crash reads back, and the resync stays due (issue 33: it runs
#    after the rebuild): once stopped, the superblocks still say "active"
#    (md's resync point) and the next degraded start needs --force again;
#  - the same kind of array stopped cleanly starts degraded with --run alone
#    (a parity-first one: its first data member's chunks come from the
#    parity on member 0, and detail names the layout);
#  - killed while idle (safe mode: clean 200 ms after the last write,
#    detail says "State : clean"), every superblock says "clean" and the
#    array starts degraded with --run alone, with no resync; with
#    raidctl set safe-mode-delay=0 (md's 0) a written array stays active.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires nbdcopy --version
requires python3 --version
requires sha256sum --version

mktmpdir test-raidd-dirty-degraded
raidd_env "$tmpdir"
# state MEMBER: "clean" or "active" (dirty), from its superblock.
state () {
  R examine --json "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['state'])"
}
same_data () {
  rm -f "$d/back"
  nbdcopy "$(uri "$1")" "$d/back" && cmp -n "$(stat -c %s "$d/data")" "$d/back" "$d/data"
}

start_raidd
head -c 8M /dev/urandom > "$d/data"

# ---- crashed: kill -9 while the array is being written ----
# (Idle, safe mode would have marked it clean: see the end.)  The writer
# rewrites the same data over and over, so every row holds it whatever
# the kill interrupts.
truncate -s 16M "$d/m0" "$d/m1" "$d/m2"
R create r5 --level 5 --chunk 64K --assume-clean "$d/m0" "$d/m1" "$d/m2" > /dev/null ||
  fail "create r5"
nbdcopy "$d/data" "$(uri r5)" || fail "nbdcopy into r5"
( while nbdcopy "$d/data" "$(uri r5)" 2>/dev/null; do :; done ) &
writer_pid=$!
cleanup_fn kill_pid "$writer_pid"
sleep 1
kill -0 "$writer_pid" || fail "the writer stopped"
kill -9 "$raidd_pid"; wait "$raidd_pid" 2>/dev/null || :; raidd_pid=
wait "$writer_pid" 2>/dev/null || :
for m in m0 m1 m2; do
  [ "$(state "$d/$m")" = active ] || fail "$m is not dirty after kill -9 during writes"
done
start_raidd
before=$(sha256sum "$d/m0" "$d/m1" "$d/m2")

R assemble r5 "$d/m0" "$d/m1" 2> "$d/err" && fail "degraded start without --run"
grep -qF "only 2 of the 3 members that were active are present; refusing to start degraded without --run" "$d/err" ||
  fail "assemble without --run: $(cat "$d/err")"
R assemble r5 "$d/m0" "$d/m1" --run 2> "$d/err" && fail "dirty degraded start with --run alone"
cat "$d/err"
for want in "assemble r5: cannot start dirty degraded array: it was not stopped cleanly" \
            "role 2 is missing" "the RAID 5 write hole" "nothing was written" \
            "use --force (raidctl assemble --force, as mdadm --assemble --force)"; do
  grep -qF "$want" "$d/err" || fail "no '$want' in: $(cat "$d/err")"
done
[ "$(sha256sum "$d/m0" "$d/m1" "$d/m2")" = "$before" ] || fail "a refused assemble wrote to a member"
R status r5 > /dev/null 2>&1 && fail "r5 runs after the refusals"

R assemble r5 "$d/m0" "$d/m1" --run --force > "$d/out" || fail "assemble --run --force"
[ "$(st r5 "a['degraded'], a['needs_resync']")" = "1 True" ] ||
  fail "r5 after assemble --force: $(cat "$d/st.json")"
grep -q "raid5 r5: starting dirty degraded array (forced)" "$d/raidd.log" ||
  fail "the forced start is not logged"
same_data r5 || fail "r5 data after the forced start"
R stop r5 > /dev/null
[ "$(state "$d/m0")" = active ] || fail "m0 clean after the forced start and a stop"
R assemble r5 "$d/m0" "$d/m1" --run 2> "$d/err" && fail "assemble --run after the forced start"
grep -qF "cannot start dirty degraded array" "$d/err" || fail "second start: $(cat "$d/err")"
R assemble r5 "$d/m0" "$d/m1" --run --force > /dev/null || fail "the second assemble --force"
same_data r5 || fail "r5 data after the second start"
R stop r5 > /dev/null

# ---- stopped cleanly: a degraded start needs only --run ----
truncate -s 16M "$d/c0" "$d/c1" "$d/c2"
R create c5 --level 5 --layout parity-first --chunk 64K --assume-clean \
  "$d/c0" "$d/c1" "$d/c2" > /dev/null || fail "create c5"
nbdcopy "$d/data" "$(uri c5)" || fail "nbdcopy into c5"
R stop c5 > /dev/null
R assemble c5 "$d/c0" "$d/c2" --run > /dev/null || fail "clean degraded start with --run"
[ "$(st c5 "a['degraded'], a['layout']")" = "1 4" ] || fail "c5 is not degraded: $(cat "$d/st.json")"
R detail c5 | grep -q "Layout : parity-first$" || fail "detail c5: $(R detail c5)"
same_data c5 || fail "c5 data, degraded"
R stop c5 > /dev/null

# ---- killed while idle: safe mode had marked it clean ----
# 200 ms after its last write raidd marks an array clean (md's safe mode):
# kill -9 then costs nothing: no resync, and a degraded start needs only
# --run.
truncate -s 16M "$d/i0" "$d/i1" "$d/i2"
R create i5 --level 5 --chunk 64K --assume-clean "$d/i0" "$d/i1" "$d/i2" > /dev/null ||
  fail "create i5"
# md's safe_mode_delay 0: written, it stays active; back to 200 ms, clean.
R set i5 safe-mode-delay=0 > /dev/null || fail "set i5 safe-mode-delay=0"
[ "$(st i5 "a['safe_mode_delay']")" = 0 ] || fail "status i5: $(cat "$d/st.json")"
nbdcopy "$d/data" "$(uri i5)" || fail "nbdcopy into i5"
sleep 0.5
[ "$(st i5 "a['state']")" = active ] || fail "i5 marked clean with safe-mode-delay=0"
R set i5 safe-mode-delay=200 > /dev/null || fail "set i5 safe-mode-delay=200"
for (( i = 0; i < 100; i++ )); do
  R detail i5 | grep -q "State : clean$" && break
  sleep 0.1
done
R detail i5 | grep -q "State : clean$" || fail "detail i5 after 10 s idle: $(R detail i5)"
[ "$(st i5 "a['state']")" = clean ] || fail "status i5: $(cat "$d/st.json")"
kill -9 "$raidd_pid"; wait "$raidd_pid" 2>/dev/null || :; raidd_pid=
for m in i0 i1 i2; do
  [ "$(state "$d/$m")" = clean ] || fail "$m is not clean after kill -9 while idle"
done
start_raidd
before=$(grep -c "needs a resync" "$d/raidd.log" || :)
R assemble i5 "$d/i0" "$d/i1" --run > "$d/out" 2>&1 || fail "assemble i5 degraded after an idle kill: $(cat "$d/out")"
[ "$(st i5 "a['degraded'], a['needs_resync']")" = "1 False" ] ||
  fail "i5 after an idle kill: $(cat "$d/st.json")"
[ "$(grep -c "needs a resync" "$d/raidd.log" || :)" = "$before" ] ||
  fail "a resync after an idle kill: $(tail -5 "$d/raidd.log")"
same_data i5 || fail "i5 data after an idle kill"
R stop i5 > /dev/null
echo "ok"
