#!/bin/bash
# Description: raidd killed with SIGKILL in the middle of writes, then
# started again: crash consistency of the superblocks and the resync.
#
# raidd serves a RAID 5 (3 file members, 64K chunk, no bitmap: a full
# resync) and a RAID 1 (2 file members, md's internal bitmap with 1 MiB
# chunks: the resync goes over the chunks whose bits are set, and as
# nbdstress writes only its first 8 MiB there, it must read no more than
# that of each member, of 23, and its log line must say it resynced no
# more than it read); nbdstress writes both over NBD (2 connections x 16 requests,
# writes, FUA, write-zeroes, trims, flushes, reads verified) and keeps a
# journal (-J) of what every acknowledged request left.  Once both arrays
# have taken writes, after a random extra moment, raidd gets SIGKILL.
# Then raidd starts again, both arrays are assembled from their members
# (not stopped cleanly: each must resync), raidctl wait waits for the
# resync, nbdstress -V reads both arrays back and holds every sector to
# its journal (what the acknowledged requests wrote, or what a request
# unanswered at the kill would have written), and raidctl scrub finds
# mismatch_cnt 0.
#
# A member file is not volatile across SIGKILL (the page cache survives),
# so every acknowledged write must be there, flushed or not: this proves
# crash consistency, not power-loss safety (tests/test-powerloss.c does
# that with simulated volatile caches).
#
# CRASH_ROUNDS=N rounds (default 3); TORTURE_SECONDS=N: rounds until N
# seconds have passed (make check-torture).
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
nbdstress=$top_builddir/tests/nbdstress
requires_file "$nbdstress" "$top_builddir/raidd/raidd" "$top_builddir/raidctl/raidctl"
requires python3 --version

mktmpdir test-raidd-crash
raidd_env "$tmpdir"
rounds=${CRASH_ROUNDS:-3}
torture=${TORTURE_SECONDS:-0}
[ "$torture" -gt 0 ] && rounds=1000000
t_end=$(( SECONDS + torture ))
size=24M
ns_pids=()

# Stop any nbdstress still running when the test ends (by PID).
stop_clients () {
  local p
  for p in "${ns_pids[@]}"; do kill_pid "$p"; wait "$p" 2>/dev/null || :; done
}
cleanup_fn stop_clients

# limit NAME: how much of the array nbdstress uses (r1: its first 8 MiB).
limit () { case $1 in r1) echo 8M ;; *) echo 1G ;; esac; }
members () {
  case $1 in
    r5) echo "$d/r5-0 $d/r5-1 $d/r5-2" ;;
    r1) echo "$d/r1-0 $d/r1-1" ;;
  esac
}

# writes NAME: write requests the array has served since raidd started.
writes () {
  R stats --json "$1" 2>/dev/null | python3 -c '
import json, sys
j = json.load(sys.stdin)
j = j[0] if isinstance(j, list) else j
print(j["array"]["write_ops"])' 2>/dev/null || echo 0
}

for a in r5 r1; do
  for m in $(members $a); do truncate -s $size "$m"; done
done
start_raidd
R create r5 --level 5 --chunk 64K --assume-clean $(members r5) > "$d/out" 2>&1 ||
  fail "create r5: $(cat "$d/out")"
R create r1 --level 1 --bitmap internal --bitmap-chunk 1M --assume-clean $(members r1) > "$d/out" 2>&1 ||
  fail "create r1: $(cat "$d/out")"

for (( round = 1; round <= rounds; round++ )); do
  if [ "$torture" -gt 0 ] && [ $SECONDS -ge $t_end ]; then
    rounds=$(( round - 1 ))
    break
  fi
  ns_pids=()
  for a in r5 r1; do
    "$nbdstress" -c 2 -q 16 -t 600 -S 120 -O 0 -H 0 -M 256K -l "$(limit $a)" -J "$d/$a.journal" \
      -s $(( RANDOM * 32768 + RANDOM )) "$(uri $a)" > "$d/ns-$a.out" 2>&1 &
    ns_pids+=($!)
  done
  # Both arrays are being written (nbdstress reads the range in first),
  # then a random moment more.
  for a in r5 r1; do
    for (( i = 0; i < 600; i++ )); do
      [ "$(writes $a)" -ge 200 ] && break
      kill -0 "${ns_pids[0]}" 2>/dev/null && kill -0 "${ns_pids[1]}" 2>/dev/null ||
        fail "round $round: nbdstress ended early: $(cat "$d"/ns-*.out)"
      sleep 0.1
    done
    [ "$(writes $a)" -ge 200 ] || fail "round $round: $a took no writes in 60 s"
  done
  sleep "0.$(( RANDOM % 10 ))"
  echo "round $round: SIGKILL to raidd (PID $raidd_pid) at $(writes r5) writes on r5, $(writes r1) on r1"
  kill -9 "$raidd_pid"
  wait "$raidd_pid" 2>/dev/null || :
  raidd_pid=
  for i in 0 1; do
    st=0
    wait "${ns_pids[$i]}" || st=$?
    [ $st = 4 ] || { cat "$d"/ns-*.out >&2; fail "round $round: nbdstress exit status $st, not 4 (connection lost)"; }
  done
  ns_pids=()
  grep -h "journal" "$d"/ns-*.out

  start_raidd
  for a in r5 r1; do
    R assemble $a $(members $a) > "$d/out" 2>&1 || fail "round $round: assemble $a: $(cat "$d/out")"
  done
  # Both were running when raidd died: both need a resync (the log keeps
  # every round's lines).
  n=$(grep -c "needs a resync" "$d/raidd.log" || :)
  [ "$n" -ge $(( 2 * round )) ] || fail "round $round: no resync after the kill ($n in the log)"
  for a in r5 r1; do
    timeout 300 "$raidctl" --control "$ctl" wait $a > "$d/out" 2>&1 ||
      fail "round $round: wait $a: $(cat "$d/out")"
    st=0
    if [ $a = r1 ]; then
      # The bitmap's resync: the bytes read from each member since the
      # assembly (sync reads only, before nbdstress -V reads).
      rb=$(R stats --json r1 | python3 -c '
import json, sys
j = json.load(sys.stdin)
j = j[0] if isinstance(j, list) else j
print(max(m["read_bytes"] for m in j["members"]))')
      [ "$rb" -le $(( 9 << 20 )) ] ||
        fail "round $round: r1's bitmap resync read $rb bytes of a member: more than the 8 MiB written"
      # What raidd says it resynced: the dirty chunks, all it read.
      sy=$(sed -n 's/.* r1: resync done at [0-9]* of [0-9]* bytes, \([0-9]*\) bytes per member resynced.*/\1/p' "$d/raidd.log" | tail -1)
      [ -n "$sy" ] && [ "$sy" -gt 0 ] && [ "$sy" -le "$rb" ] ||
        fail "round $round: raidd logs r1's resync over ${sy:-no} bytes per member; it read $rb"
      echo "round $round: r1's bitmap resync read $rb bytes of each member, resynced $sy (23 MiB in full)"
    fi
    timeout 300 "$nbdstress" -c 2 -O 0 -H 0 -l "$(limit $a)" -V "$d/$a.journal" "$(uri $a)" > "$d/nsv-$a.out" 2>&1 || st=$?
    [ $st = 0 ] || { cat "$d/nsv-$a.out" >&2; fail "round $round: $a does not hold what was acknowledged"; }
    grep -q " 0 mismatches, 0 errors$" "$d/nsv-$a.out" ||
      { cat "$d/nsv-$a.out" >&2; fail "round $round: $a: nbdstress -V counts"; }
    timeout 300 "$raidctl" --control "$ctl" scrub $a --wait > "$d/scrub.out" 2>&1 ||
      fail "round $round: scrub $a: $(cat "$d/scrub.out")"
    grep -q "check done: mismatch_cnt 0$" "$d/scrub.out" ||
      fail "round $round: scrub $a: parity or mirrors inconsistent: $(cat "$d/scrub.out")"
    echo "round $round: $a verified after the kill ($(tail -1 "$d/nsv-$a.out" | sed 's/.*s: //')), scrub: mismatch_cnt 0"
  done
done
stop_raidd
echo "$0: $rounds rounds of SIGKILL mid-write: every acknowledged write read back, 0 mismatches"
