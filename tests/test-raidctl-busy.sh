#!/bin/bash
# Description: raidctl against a raidd whose control connections are all
# taken (issue 33): 80 idle clients hold raidd's 64 and more; every raidctl
# verb then exits 1 with "raidd is busy: ..." on stderr, never on a signal
# (it died of SIGPIPE, status 141 and no message, when raidd closed the
# refused connection before raidctl wrote its request), and changes
# nothing; raidd logs the refusals at most once every 10 s, not once a
# connection; once the idle clients go, raidctl works again.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires python3 --version
requires_root

mktmpdir test-raidctl-busy
raidd_env "$tmpdir"
misuse=$top_srcdir/tests/control-misuse.py
sums () { sha256sum "$@" | cut -d' ' -f1; }

start_raidd
for f in a0 a1 c0 c1; do truncate -s 40M "$d/$f"; done
R create x --level 1 --assume-clean --force "$d/a0" "$d/a1" > /dev/null || fail "create x"
want=$(sums "$d/c0" "$d/c1")

# 80 idle clients: raidd serves 64 and refuses the rest; each one it cuts
# off after its 10 s is opened again at once, so that raidd stays full.
storm_start=$SECONDS
python3 "$misuse" hold "$ctl" 80 > "$d/hold.out" &
hold_pid=$!
cleanup_fn kill_pid "$hold_pid"
for (( i = 0; i < 300; i++ )); do
  grep -qs holding "$d/hold.out" && break
  kill -0 "$hold_pid" 2>/dev/null || fail "the idle clients could not connect"
  sleep 0.1
done
grep -qs holding "$d/hold.out" || fail "the idle clients could not connect within 30 s"
# raidd may still be taking the last ones from its backlog: until the
# first "busy", raidctl may be served.
for (( i = 0; i < 100; i++ )); do
  if ! R status > /dev/null 2> "$d/err" && grep -q "raidd is busy" "$d/err"; then
    break
  fi
  sleep 0.1
done
grep -q "raidd is busy" "$d/err" || fail "raidd never said busy with 80 idle clients"

# Every verb goes through raidctl's client code: each call exits 1 saying
# busy.  A call may be served instead only if raidd has just cut off an
# idle client after its 10 s (it says so in its log before it frees the
# slot): then the call must do what it does when raidd is free.
busy=0 served=0
run () {  # run OUTCOME-WHEN-SERVED ARGS...: raidctl ARGS, checked
  local want_served=$1 rc=0
  shift
  timeout 20 "$raidctl" --control "$ctl" "$@" > "$d/out" 2> "$d/err" || rc=$?
  if [ $rc -gt 128 ]; then
    fail "raidctl $* died of signal $((rc - 128)) (status $rc): $(cat "$d/err")"
  fi
  if [ $rc = 1 ] && grep -q "^raidctl: error: raidd is busy: 64 control connections are open already, its limit; try again$" "$d/err"; then
    busy=$(( busy + 1 ))
    return 0
  fi
  grep -q "sent no request within" "$d/raidd.log" ||
    fail "raidctl $* with raidd full: status $rc, stderr: $(cat "$d/err")"
  case $want_served in
    ok) [ $rc = 0 ] ;;
    follows) [ $rc = 124 ] ;;       # monitor: it follows until the timeout
    running) [ $rc = 1 ] && grep -q "an array named x is already running" "$d/err" ;;
  esac || fail "raidctl $* served while raidd was full: status $rc: $(cat "$d/err")"
  served=$(( served + 1 ))
}
for (( round = 0; round < 30; round++ )); do
  run ok status
  run ok --json status
  run ok detail x
  run ok stats x
  run ok monitor --oneshot
  run follows monitor
  run running create x --level 1 --force "$d/c0" "$d/c1"
done
echo "raidctl with raidd full: $busy calls said busy, $served were served"

# raidd logs the refusals at most once every 10 s, counting those it did
# not log, not once per connection (it flooded the journal).
refused=$((busy + $(grep -c refused "$d/hold.out" || true)))
lines=$(grep -c "refusing another (busy)" "$d/raidd.log" || true)
most=$(( 2 + (SECONDS - storm_start) / 10 ))
echo "raidd logged $lines lines for $refused refused connections in $((SECONDS - storm_start)) s"
[ "$refused" -ge 80 ] || fail "only $refused connections were refused, want 80 or more"
[ "$lines" -ge 1 ] || fail "raidd did not log the refused connections: $(cat "$d/raidd.log")"
[ "$lines" -le "$most" ] ||
  fail "raidd logged $lines lines for $refused refused connections, want at most $most: $(grep busy "$d/raidd.log")"
if [ "$lines" -ge 2 ]; then
  grep -Eq "refusing another \(busy\) \(and [0-9]+ more like it in the last [0-9]+ s, not logged\)$" "$d/raidd.log" ||
    fail "raidd's later busy lines do not count what they left out: $(grep busy "$d/raidd.log")"
fi
kill -0 "$raidd_pid" 2>/dev/null || fail "raidd died"
[ "$(sums "$d/c0" "$d/c1")" = "$want" ] || fail "a refused create wrote to its members"

# The idle clients go: raidd serves again.
kill_pid "$hold_pid"
for (( i = 0; i < 100; i++ )); do
  R status > /dev/null 2>&1 && break
  sleep 0.1
done
R status > /dev/null || fail "raidctl status after the idle clients left"
R detail x > "$d/out" || fail "raidctl detail x after the idle clients left"
grep -q "State : *clean" "$d/out" || fail "x after the busy spell: $(cat "$d/out")"
echo "$0: ok"
