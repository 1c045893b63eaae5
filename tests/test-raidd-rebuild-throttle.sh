#!/bin/bash
# Description: a rebuild under client load never stalls.  A RAID 1 of
# simulated drives (files behind a 32 MB/s bandwidth limit, so that the
# unthrottled part takes seconds) rebuilds a fresh member with
# rebuild-min=4M and no maximum; once a quarter is done (no client yet:
# unthrottled, in 32 MiB steps), fio's nbd engine starts
# random writes and keeps them up for the whole rebuild.  Every second the
# test reads status: progress moves at least every 3 seconds, the rate is
# above 0 and the finish estimate is shown, and the rebuild ends within 3
# times what rebuild-min alone would take.  A scrub then finds the mirrors
# identical.  (Before: the throttle "repaid" the unthrottled bytes at
# rebuild-min once clients came, and sat at the same percentage, speed 0,
# for minutes.)
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires fio --enghelp=nbd
requires python3 --version

mktmpdir test-raidd-rebuild-throttle
raidd_env "$tmpdir"
start_raidd


size=256 min=4
for i in 0 1 2; do truncate -s ${size}M "$d/m$i"; done
sim () { echo "sim:$d/m$1?bw=32M,depth=4"; }
R create t --level 1 --assume-clean "$(sim 0)" "$(sim 1)" > /dev/null || fail "create"
R set t rebuild-min=${min}M rebuild-max=0 > /dev/null || fail "set"
R fail t "$(sim 1)" > /dev/null || fail "fail m1"
R remove t "$(sim 1)" > /dev/null || fail "remove m1"
R add t "$(sim 2)" > /dev/null || fail "add m2"

for (( i = 0; i < 600; i++ )); do
  [ "$(st t "a['sync']['action'] == 'recover' and a['sync']['done'] * 4 >= a['sync']['total']")" = True ] && break
  [ "$(st t "a['sync']['action']")" = idle ] && skip "the rebuild finished before the client load started"
  sleep 0.01
done

fio --name=load --ioengine=nbd --uri="nbd+unix:///t?socket=$sock" --rw=randwrite \
  --bs=4k --size=64M --iodepth=4 --time_based=1 --runtime=600 \
  --output="$d/fio.out" >/dev/null 2>&1 &
fio_pid=$!
cleanup_fn kill_pid "$fio_pid"

# The whole member at rebuild-min alone, seconds; the bound is 3 times it.
limit=$(( 3 * size / min ))
last=-1 t_last=0 t=0
while :; do
  sleep 1
  t=$((t + 1))
  R status t > "$d/status.txt"
  read -r act done rate < <(st t "a['sync']['action'], a['sync']['done'], a['sync']['rate']")
  [ "$act" = recover ] || break
  kill -0 "$fio_pid" || fail "fio stopped: $(cat "$d/fio.out")"
  echo "t=${t}s done=$done rate=$rate: $(grep recovery "$d/status.txt" || :)"
  if [ "$done" -gt "$last" ]; then last=$done t_last=$t; fi
  [ $((t - t_last)) -le 3 ] ||
    fail "no progress for $((t - t_last)) s at $done bytes: $(cat "$d/status.txt")"
  if [ "$t" -ge 4 ]; then
    [ "$rate" -gt 0 ] || fail "rate 0 at t=${t}s: $(cat "$d/status.txt")"
    grep -q "finish=.*min speed=" "$d/status.txt" ||
      fail "no finish estimate at t=${t}s: $(cat "$d/status.txt")"
  fi
  [ "$t" -le "$limit" ] || fail "rebuild still running after $t s (bound $limit s)"
done
kill_pid "$fio_pid"
wait "$fio_pid" 2>/dev/null || :
echo "rebuild done after ${t}s under load (bound ${limit}s)"
[ "$(st t "a['degraded']")" = 0 ] || fail "not in sync after the rebuild: $(R status t)"

R scrub t --wait > "$d/scrub" || fail "scrub: $(cat "$d/scrub")"
grep -q "mismatch_cnt 0" "$d/scrub" || fail "scrub after the rebuild: $(cat "$d/scrub")"
echo "$0: PASS"
