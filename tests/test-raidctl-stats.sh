#!/bin/bash
# Description: raidctl stats through raidd, with fio's nbd engine as the
# client.
#  - RAID 1 over 2 file members: 8 MiB written show as at least 8 MiB of
#    array writes and a write amplification of 2.0 (every byte on both
#    mirrors); random reads at depth 16 are spread over both mirrors;
#  - RAID 5 over 3 (64 KiB chunks): 128 KiB writes aligned to the row are
#    full-stripe writes with an amplification of 1.5 (3/2) and no member
#    reads; random 4 KiB writes are read-modify-write or reconstruct-write
#    and read members to make parity; a stream of 3/4-row writes plugs
#    row pieces (counted, and shown in the human report);
#  - the human report has a line per member and the "RAID overhead"
#    block; --interval --count prints that many reports;
#  - --reset zeroes the counters (after reporting them);
#  - an unknown array is refused, naming it; a missing NAME is a usage
#    error.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires fio --enghelp=nbd
requires python3 --version

mktmpdir test-raidctl-stats
raidd_env "$tmpdir"
start_raidd

# js NAME EXPR: EXPR in python over the JSON stats of NAME ("s").
js () {
  R stats --json "$1" > "$d/stats.json" || fail "stats --json $1"
  python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print($2)" "$d/stats.json"
}
check () {  # check NAME EXPR WHAT
  [ "$(js "$1" "$2")" = True ] || { cat "$d/stats.json" >&2; fail "$1: $3"; }
}
fio_run () {  # fio_run NAME ARGS...
  local name=$1; shift
  fio --name=stats --ioengine=nbd --uri="nbd+unix:///$name?socket=$sock" \
    --output="$d/fio.out" "$@" >/dev/null 2>&1 || { cat "$d/fio.out" >&2; fail "fio on $name"; }
}

# ---- errors --------------------------------------------------------------
R stats nosuch 2>"$d/err" && fail "stats of a missing array succeeded"
grep -q "array nosuch is not running" "$d/err" || fail "stats error: $(cat "$d/err")"
st=0; R stats 2>/dev/null || st=$?
[ $st = 2 ] || fail "stats without NAME exited $st, not 2 (usage)"

# ---- RAID 1: every byte twice, reads over both mirrors --------------------
for i in 0 1; do truncate -s 40M "$d/r1-$i"; done
R create r1 --level 1 --assume-clean "$d/r1-0" "$d/r1-1" >/dev/null || fail "create r1"
R stats r1 --reset >/dev/null || fail "stats --reset r1"   # superblock writes of create
fio_run r1 --rw=write --bs=1M --size=8M --iodepth=4
check r1 "s['array']['write_bytes'] >= 8 << 20" "array write_bytes below 8 MiB"
check r1 "abs(s['derived']['write_amplification'] - 2.0) <= 0.01" \
  "write amplification is not 2.0"
check r1 "all(m['write_bytes'] >= 8 << 20 for m in s['members'])" \
  "a mirror got less than 8 MiB"
check r1 "s['level'] == 1 and s['name'] == 'r1' and len(s['members']) == 2" "name, level, members"
check r1 "s['array']['write_latency_us']['p50'] > 0 and s['array']['write_latency_us']['p50'] <= s['array']['write_latency_us']['p99'] <= s['array']['write_latency_us']['max']" \
  "write latencies missing or out of order"
fio_run r1 --rw=randread --bs=4k --size=8M --io_size=8M --iodepth=16 --randrepeat=1
check r1 "s['array']['read_ops'] >= 2048" "array read_ops below 2048"
check r1 "sum(m['read_ops'] for m in s['members']) == s['array']['read_ops']" \
  "member reads do not add up to the array's"
check r1 "all(m['read_share'] > 0.1 for m in s['members'])" "reads not spread over both mirrors"
R stats r1 > "$d/human" || fail "stats r1"
grep -q "RAID overhead" "$d/human" || fail "no RAID overhead block: $(cat "$d/human")"
grep -q "write amplification *2.00" "$d/human" || fail "human WA: $(cat "$d/human")"
grep -q "read share per mirror" "$d/human" || fail "no read shares: $(cat "$d/human")"
grep -q "r1-1\[1\]" "$d/human" || fail "no line for member 1: $(cat "$d/human")"

# ---- RAID 5: full-stripe writes and small writes ------------------------
for i in 0 1 2; do truncate -s 40M "$d/r5-$i"; done
R create r5 --level 5 --chunk 64K --assume-clean "$d/r5-0" "$d/r5-1" "$d/r5-2" >/dev/null ||
  fail "create r5"
R stats r5 --reset >/dev/null || fail "stats --reset r5"
fio_run r5 --rw=write --bs=128k --size=8M --iodepth=4
check r5 "s['derived']['full_stripe_writes'] == 64" "full-stripe writes: not 64"
check r5 "s['derived']['rmw_writes'] + s['derived']['rcw_writes'] == 0" "partial writes counted"
check r5 "abs(s['derived']['write_amplification'] - 1.5) <= 0.01" "full-stripe WA is not 1.5"
check r5 "s['derived']['stripe_read_bytes'] == 0 and sum(m['read_ops'] for m in s['members']) == 0" \
  "full-stripe writes read members"
fio_run r5 --rw=randwrite --bs=4k --size=8M --io_size=1M --iodepth=8 --randrepeat=1
# Each 4 KiB write is a read-modify-write or a reconstruct-write, or, when
# it waited beside others of its row and was merged with them (more of
# them on a busy machine), part of a merged write, counted as full-stripe
# ones (raid5-merge.c): every one counted, some as RMW or RCW.
check r5 "s['derived']['rmw_writes'] + s['derived']['rcw_writes'] + s['derived']['full_stripe_writes'] - 64 >= 256" \
  "4 KiB writes not counted as RMW, RCW or merged"
check r5 "s['derived']['rmw_writes'] + s['derived']['rcw_writes'] > 0" \
  "no 4 KiB write counted as RMW or RCW"
# Each RMW or RCW of a 4 KiB write reads 4 KiB at least (the other data
# block of its row, or the old data and parity); merged ones read nothing
# (CI saw 254 RCW reading 1040384 bytes, two merged).
check r5 "s['derived']['stripe_read_bytes'] >= 4096 * (s['derived']['rmw_writes'] + s['derived']['rcw_writes'])" \
  "4 KiB writes read less than 4 KiB each of their RMW and RCW"
R stats r5 > "$d/human" || fail "stats r5"
for w in "RAID overhead" "full-stripe *[1-9]" "reconstruct-write" "read-modify-write" \
         "member reads for parity"; do
  grep -q "$w" "$d/human" || fail "human output lacks '$w': $(cat "$d/human")"
done
# A stream of 3/4-row writes: the piece that starts a row waits (plugs)
# for the next write to fill it, unless that one already waits behind it.
R stats r5 --reset >/dev/null || fail "stats --reset r5"
fio_run r5 --rw=write --bs=96k --size=12M --iodepth=8
check r5 "s['derived']['plugged_writes'] > 0" "a 3/4-row stream plugged nothing"
check r5 "s['derived']['plugs_filled'] + s['derived']['plugs_expired'] <= s['derived']['plugged_writes']" \
  "plugs filled and expired exceed the plugs"
check r5 "s['derived']['full_stripe_writes'] > 0" "a 3/4-row stream merged nothing"
R stats r5 > "$d/human" || fail "stats r5"
grep -q "plugged stripe writes *[1-9][0-9]* ([0-9]* filled, [0-9]* timed out)" "$d/human" ||
  fail "human output lacks the plugs: $(cat "$d/human")"

# ---- reset and intervals ----------------------------------------------------
# Safe mode's "clean" superblock write (member I/O) comes a moment after
# the last write: it lands before the reset, not after it.
for _ in $(seq 100); do
  [ "$(st r5 "a['state']")" = clean ] && break
  sleep 0.1
done
[ "$(st r5 "a['state']")" = clean ] || fail "r5 never became clean"
R stats r5 --reset --json > "$d/before.json" || fail "stats --reset"
python3 -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['array']['write_ops'] > 0" \
  "$d/before.json" || fail "--reset did not report the figures before zeroing"
check r5 "s['array']['write_ops'] == 0 and s['array']['write_bytes'] == 0" "reset: array not zeroed"
check r5 "all(m['write_ops'] == m['read_ops'] == 0 for m in s['members'])" "reset: members not zeroed"
check r5 "s['derived']['full_stripe_writes'] == s['derived']['rcw_writes'] == s['derived']['rmw_writes'] == 0" \
  "reset: stripe counters not zeroed"
check r5 "s['derived']['plugged_writes'] == s['derived']['plugs_filled'] == s['derived']['plugs_expired'] == 0" \
  "reset: plug counters not zeroed"
check r5 "s['derived']['write_amplification'] is None" "reset: WA not null"
check r5 "s['array']['write_latency_us']['max'] == 0" "reset: latency not zeroed"
R stats r5 --interval 0.2 --count 3 > "$d/iv" || fail "stats --interval"
[ "$(grep -c "RAID overhead" "$d/iv")" = 3 ] || fail "--count 3: $(cat "$d/iv")"
grep -q "last 0.[1-9] s" "$d/iv" || fail "--interval: no interval header: $(cat "$d/iv")"

R stop r1 >/dev/null && R stop r5 >/dev/null || fail "stop"
exit 0
