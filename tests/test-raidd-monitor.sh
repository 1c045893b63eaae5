#!/bin/bash
# Description: raidd's monitor events (md's mdadm --monitor) through every
# channel.  raidd runs with --program (a script appending its arguments to
# a file), --mailaddr/--mailfrom and --sendmail (a script recording its
# arguments and the mail on stdin), and raidctl monitor --json follows
# the events in the background.  A drill on a RAID 5 with a hot spare:
#  - NewArray as arrays start (then DegradedArray and SparesMissing when
#    they start so, as md reports on first sight); TestMessage for each running array from
#    raidctl monitor --test --oneshot, through the program, the mail and
#    the log (a program exiting non-zero is logged with its status);
#  - raidctl fail: Fail (array, member), DegradedArray, the spare taking
#    over: RebuildStarted, Rebuild20, 40, 60, 80, RebuildFinished (in that
#    order), SpareActive (the spare), and SparesMissing (spares-expected=1,
#    none left), once;
#  - a member added to the degraded array and failed while its rebuild
#    runs slowly (rebuild-max): FailSpare (that member);
#  - a loop-device member whose device goes away (udev "remove"):
#    DeviceDisappeared (that device), then Fail (root and loop devices
#    only);
#  - mail: one for each event md mails (Fail, FailSpare, DegradedArray,
#    SparesMissing, TestMessage, DeviceDisappeared), sent with sendmail
#    -t, with md's subject "EVENT event on ARRAY:HOST", the From and To
#    given and the array's status; none for RebuildStarted and the like;
#  - raidctl monitor --json recorded the same events as the program, and
#    raidctl monitor --json ev5 those of ev5 alone;
#    monitor --oneshot prints the standing DegradedArray and SparesMissing;
#  - raidctl detail --test exits 0 (whole), 1 (degraded), 2 (failed RAID
#    0), 4 (no such array, raidd not running);
#  - bad options: --program that cannot run, --mailfrom without --mailaddr,
#    a bad spares-expected, monitor of an array not running.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires python3 --version

mktmpdir test-raidd-monitor
raidd_env "$tmpdir"
host=$(hostname)

cat > "$d/prog" <<EOF
#!/bin/sh
echo "\$*" >> "$d/program.txt"
[ "\$1" != TestMessage ] || exit 3
EOF
cat > "$d/sendmail" <<EOF
#!/bin/sh
{ echo "ARGS: \$*"; cat; echo "--END--"; } >> "$d/mail.txt"
EOF
chmod +x "$d/prog" "$d/sendmail"
: > "$d/program.txt"

# Bad options are refused, saying what is wrong.
"$raidd" --foreground --control "$ctl" --nbd-socket "$sock" --program "$d/nonexistent" \
  2> "$d/err" && fail "raidd ran with a --program that does not exist"
grep -q -- "--program $d/nonexistent: No such file" "$d/err" || { cat "$d/err"; fail "no clear --program error"; }
rc=0
"$raidd" --foreground --control "$ctl" --mailfrom x@y 2> "$d/err" || rc=$?
[ $rc = 2 ] && grep -q -- "--mailfrom needs --mailaddr" "$d/err" || fail "--mailfrom alone: exit $rc"

start_raidd --program="$d/prog" --mailaddr=admin@example.org --mailfrom=raidd@example.org \
  --sendmail="$d/sendmail"

# ev_wait PATTERN [FILE]: until FILE (the program's) has a line matching PATTERN.
ev_wait () {
  local f=${2:-$d/program.txt}
  for _ in $(seq 200); do
    grep -q "$1" "$f" 2>/dev/null && return 0
    sleep 0.05
  done
  cat "$f" >&2
  fail "no event line matching '$1' in $f"
}
# line NUMBER of PATTERN's first match in the program's file.
line () { grep -n "$1" "$d/program.txt" | head -1 | cut -d: -f1; }

# detail --test without the array (and later without raidd): 4.
rc=0; R detail nosuch --test 2>/dev/null || rc=$?
[ $rc = 4 ] || fail "detail --test of an array not running exited $rc, not 4"

new_members "$d" 7 40M
m=("${members[@]}")
R create ev5 --level 5 --assume-clean "${m[0]}" "${m[1]}" "${m[2]}" > /dev/null
ev_wait "^NewArray ev5$"
R add ev5 "${m[3]}" > /dev/null
R set ev5 spares-expected=1 > /dev/null
rc=0; R detail ev5 --test > /dev/null || rc=$?
[ $rc = 0 ] || fail "detail --test of a whole array exited $rc"
rc=0; R set ev5 spares-expected=x 2> "$d/err" || rc=$?
[ $rc = 2 ] && grep -q "spares-expected is a number" "$d/err" || fail "bad spares-expected: $rc"
R monitor nosuch 2> "$d/err" && fail "monitor of an array not running succeeded"
grep -q "array nosuch is not running" "$d/err" || fail "monitor nosuch: $(cat "$d/err")"

# The monitor follows from when its TestMessage shows up.
R monitor --json > "$d/monitor.json" 2> "$d/monitor.err" &
mon_pid=$!
cleanup_fn kill_pid "$mon_pid"
R monitor --json ev5 > "$d/monitor-ev5.json" 2>/dev/null &
mon5_pid=$!
cleanup_fn kill_pid "$mon5_pid"
for _ in $(seq 100); do
  R monitor --test --oneshot ev5 > "$d/test.out"
  grep -q '"TestMessage"' "$d/monitor.json" && grep -q '"TestMessage"' "$d/monitor-ev5.json" && break
  sleep 0.1
done
grep -q '"TestMessage"' "$d/monitor.json" || fail "raidctl monitor never saw a TestMessage"
grep -q '"TestMessage"' "$d/monitor-ev5.json" || fail "raidctl monitor ev5 never saw a TestMessage"
grep -q "TestMessage ev5" "$d/test.out" || fail "monitor --test --oneshot printed: $(cat "$d/test.out")"
ev_wait "^TestMessage ev5$"
ev_wait "Subject: TestMessage event on ev5:$host" "$d/mail.txt"
for _ in $(seq 50); do
  grep -q "event TestMessage ev5: $d/prog exited with status 3" "$d/raidd.log" && break
  sleep 0.1
done
grep -q "event TestMessage ev5: $d/prog exited with status 3" "$d/raidd.log" ||
  fail "the program's exit status 3 was not logged"

# Fail a member: the hot spare takes over and is rebuilt.
: > "$d/program.txt"
R fail ev5 "${m[1]}" > /dev/null
R wait ev5 > /dev/null
ev_wait "^SpareActive ev5 ${m[3]}$"
ev_wait "^SparesMissing ev5$"
for e in "Fail ev5 ${m[1]}" "DegradedArray ev5" "RebuildStarted ev5" "Rebuild20 ev5" \
         "Rebuild40 ev5" "Rebuild60 ev5" "Rebuild80 ev5" "RebuildFinished ev5" \
         "SpareActive ev5 ${m[3]}"; do
  n=$(line "^$e$")
  [ -n "$n" ] || { cat "$d/program.txt"; fail "no '$e' event"; }
  [ -z "${prev:-}" ] || [ "$n" -gt "$prev" ] || { cat "$d/program.txt"; fail "'$e' out of order"; }
  prev=$n
done
prev=
[ "$(grep -c "^SparesMissing ev5$" "$d/program.txt")" = 1 ] || fail "SparesMissing not once"
rc=0; R detail ev5 --test > /dev/null || rc=$?
[ $rc = 0 ] || fail "detail --test after the spare rebuilt exited $rc"

# Without a spare: degraded.  A member added is rebuilt slowly and fails.
R remove ev5 "${m[1]}" > /dev/null
R fail ev5 "${m[0]}" > /dev/null
ev_wait "^Fail ev5 ${m[0]}$"
rc=0; R detail ev5 --test > /dev/null || rc=$?
[ $rc = 1 ] || fail "detail --test of a degraded array exited $rc, not 1"
R monitor --oneshot > "$d/oneshot.out"
grep -q " DegradedArray ev5$" "$d/oneshot.out" || fail "oneshot: $(cat "$d/oneshot.out")"
grep -q " SparesMissing ev5$" "$d/oneshot.out" || fail "oneshot: $(cat "$d/oneshot.out")"
R remove ev5 "${m[0]}" > /dev/null
R set ev5 rebuild-min=1M rebuild-max=1M > /dev/null
R add ev5 "${m[4]}" > /dev/null
ev_wait "^RebuildStarted ev5$"
R fail ev5 "${m[4]}" --force > /dev/null
ev_wait "^FailSpare ev5 ${m[4]}$"
ev_wait "Subject: FailSpare event on ev5:$host" "$d/mail.txt"

# RAID 0 losing a member: failed, detail --test 2.
R create ev0 --level 0 --assume-clean "${m[5]}" "${m[6]}" > /dev/null
R fail ev0 "${m[6]}" --force > /dev/null 2>&1 || :
ev_wait "^Fail ev0 ${m[6]}$"
rc=0; R detail ev0 --test > /dev/null || rc=$?
[ $rc = 2 ] || fail "detail --test of a failed RAID 0 exited $rc, not 2"
R stop ev0 > /dev/null

# A member's device removed from the system (udev): DeviceDisappeared.
udev=false
if [ "$(id -u)" = 0 ] && losetup --version >/dev/null 2>&1 && [ -w /sys/block ]; then
  truncate -s 48M "$d/lo-0" "$d/lo-1"
  cleanup_fn "${top_srcdir:-.}/tests/detach-loops.sh" "$d"
  l0=$(losetup --show -f "$d/lo-0") l1=$(losetup --show -f "$d/lo-1")
  R create evl --level 1 --assume-clean "$l0" "$l1" > /dev/null
  echo remove > "/sys/block/${l1#/dev/}/uevent"
  cleanup_fn bash -c "echo add > /sys/block/${l1#/dev/}/uevent"
  ev_wait "^Fail evl $l1$"
  [ "$(line "^DeviceDisappeared evl $l1$")" -lt "$(line "^Fail evl $l1$")" ] ||
    fail "DeviceDisappeared should come before the Fail"
  ev_wait "Subject: DeviceDisappeared event on evl:$host" "$d/mail.txt"
  R stop evl > /dev/null
  udev=true
else
  echo "$0: note: DeviceDisappeared not tested (needs root and loop devices)"
fi

# Mail: md's events only, sendmail -t, subject, From, To, the status.
ev_wait "Subject: SparesMissing event on ev5:$host" "$d/mail.txt"
for e in Fail DegradedArray; do
  grep -q "^Subject: $e event on ev5:$host$" "$d/mail.txt" || fail "no mail for $e"
done
grep -q "^ARGS: -t$" "$d/mail.txt" || fail "sendmail not run with -t"
grep -q "^From: raidd@example.org$" "$d/mail.txt" || fail "no From"
grep -q "^To: admin@example.org$" "$d/mail.txt" || fail "no To"
grep -q "It could be related to component device ${m[1]}\." "$d/mail.txt" || fail "no member in the mail"
grep -q "^ev5 : raid5, 3 roles, " "$d/mail.txt" || fail "no status in the mail"
grep -q "Subject: Rebuild\|Subject: SpareActive\|Subject: NewArray" "$d/mail.txt" &&
  fail "mail sent for an event md does not mail"

# The monitor saw what the program saw (since its TestMessage).
R stop ev5 > /dev/null
python3 - "$d/monitor.json" "$d/program.txt" "$udev" <<'EOF' || fail "monitor and program disagree"
import json, sys
mon = [json.loads(l) for l in open(sys.argv[1])]
mon = [" ".join([e["event"], e["array"]] + ([e["member"]] if "member" in e else [])) for e in mon]
mon = mon[mon.index("TestMessage ev5"):]
prog = [l.strip() for l in open(sys.argv[2])]
# The program file was emptied after the TestMessages: compare from the Fail.
start = mon.index(prog[0])
if mon[start:start + len(prog)] != prog:
    print("monitor:", mon[start:], "\nprogram:", prog, file=sys.stderr)
    sys.exit(1)
EOF
grep -q "event: Fail ev5 ${m[1]}" "$d/raidd.log" || fail "no log line for the Fail"
# The monitor of ev5 alone saw its events and no other array's.
python3 - "$d/monitor-ev5.json" <<'EOF' || fail "monitor ev5 saw other arrays' events"
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1])]
assert {e["array"] for e in evs} == {"ev5"}, evs
assert [e for e in evs if e["event"] == "Fail"], evs
EOF

# Assembled again, degraded and short of its spare: md's first look.
: > "$d/program.txt"
R assemble ev5 "${m[2]}" "${m[3]}" --run > /dev/null
ev_wait "^SparesMissing ev5$"
[ "$(cat "$d/program.txt")" = "$(printf 'NewArray ev5\nDegradedArray ev5\nSparesMissing ev5')" ] ||
  fail "assembling degraded reported: $(cat "$d/program.txt")"
R stop ev5 > /dev/null
grep -q "event: Rebuild40 ev5" "$d/raidd.log" || fail "no log line for Rebuild40"

stop_raidd
# raidd gone: the monitor says so and exits 1; detail --test exits 4.
rc=0; wait "$mon_pid" || rc=$?
[ $rc = 1 ] && grep -q "raidd closed the connection" "$d/monitor.err" ||
  fail "monitor after raidd stopped: exit $rc, $(cat "$d/monitor.err")"
wait "$mon5_pid" || :
rc=0; R detail ev5 --test 2>/dev/null || rc=$?
[ $rc = 4 ] || fail "detail --test without raidd exited $rc, not 4"
exit 0
