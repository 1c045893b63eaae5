#!/bin/bash
# Description: raidd under several NBD connections writing the same array
# at once (what CAN_MULTI_CONN invites), on every level.  For each array
# (file-backed members under /var/tmp, --assume-clean):
#   RAID 0 over 3 (64K chunk), RAID 1 over 2, RAID 5 over 3 with a 4K
#   chunk, RAID 5 over 4 of 256 MiB (default chunk), RAID 10 over 4, and
#   RAID 5 over 3 RAM-speed members (sim: over files) with a 4K chunk;
# raidd runs with 2 worker threads, or 4 (more than the cores), and:
#  1. nbdstress: 4 connections x 32 requests in flight, reads / writes
#     (FUA) / write-zeroes / trims / caches / flushes of 512 B..1 MiB, each
#     connection owning interleaved 4K..1M runs of every row, plus a
#     shared zone they all overwrite; every read and the whole export at
#     the end verified;
#  2. fio's nbd engine, numjobs=4 on disjoint regions (offset_increment),
#     crc32c verify: random 4K, sequential 256K, random 1M, sequential 4K;
#  3. the reproductions of the multi-connection crash and hang: 4 fio jobs
#     writing 4K at random over the same 64 KiB (iodepth 32), and 4 jobs
#     writing 256K sequentially over the same 64 MiB (several runs): the
#     data is undefined, but every request must be answered (fio exits 0,
#     err=0) and a scrub must then find parity and mirrors consistent
#     (mismatch_cnt 0);
#  4. degraded (raidctl fail of one member): nbdstress and fio verify;
#  5. rebuilding: the failed member removed, a fresh one added, the rebuild
#     slowed (raidctl set) so that nbdstress runs during it; raidctl wait;
#     scrub finds 0 mismatches;
#  6. SIGTERM with the array running: raidd exits 0 within 30 s and marks
#     the members clean.
# After every step raidd must be alive and answer raidctl status: a crash
# fails with raidd's signal and the end of its log; every client runs
# under a watchdog (and timeout), and a hang fails showing the requests
# nbdstress still waits for and a gdb backtrace of every raidd thread.
#
# Environment: TORTURE_SECONDS=N makes each client run last N seconds (a
# long torture run, outside CI; default: a few seconds per run).
# STRESS_LEVELS="r5c4 r10" runs only those rows (names below).
# STRESS_SEED=N gives nbdstress a fixed seed (default: a new one each run,
# printed).
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
nbdstress=$top_builddir/tests/nbdstress
requires_file "$nbdstress"
requires fio --enghelp=nbd
requires nbdinfo --version
requires python3 --version

mktmpdir test-raidd-stress
raidd_env "$tmpdir"

torture=${TORTURE_SECONDS:-0}
if [ "$torture" -gt 0 ]; then
  ns_secs=$torture         # nbdstress run
  fio_secs=$torture        # each fio verify group, each reproduction run
  repro_runs=3             # the sequential 256K reproduction, runs
  stall=60                 # nbdstress: no completion for this long is a hang
else
  ns_secs=2
  fio_secs=0               # fio verify: by size, not time
  repro_runs=2
  stall=20
fi
repro_secs=$(( torture > 0 ? torture : 2 ))   # the overlapping random writes
seq_secs=$(( torture > 0 ? torture : 1 ))     # each sequential run
# How long a client may take beyond its own run time before it is a hang
# (nbdstress finds one itself after $stall s without a completion).
grace=30

uri () { echo "nbd+unix:///$1?socket=$sock"; }
# st NAME EXPR: a field of raidctl status --json NAME (python on "a").
st () {
  timeout 20 "$raidctl" --control "$ctl" status --json "$1" > "$d/st.json" ||
    fail "raidctl status --json $1 did not answer"
  python3 -c "import json,sys; a=json.load(open(sys.argv[1]))[0]; print($2)" "$d/st.json"
}

# raidd_dead WHAT: if raidd is gone, fail saying how it ended.
raidd_dead () {
  local rc=0 how
  kill -0 "$raidd_pid" 2>/dev/null && return 0
  wait "$raidd_pid" 2>/dev/null || rc=$?
  if [ $rc -gt 128 ]; then how="killed by SIG$(kill -l $((rc - 128)))"; else how="exit status $rc"; fi
  raidd_pid=
  if grep -q 'ERROR: AddressSanitizer\|runtime error:\|WARNING: ThreadSanitizer' "$d/raidd.log"; then
    echo "$0: the sanitizer's report in raidd's log:" >&2
    sed -n '/ERROR: AddressSanitizer\|runtime error:\|WARNING: ThreadSanitizer/,/^SUMMARY: /p' \
      "$d/raidd.log" | head -n 200 >&2
  fi
  echo "$0: raidd's log (end, without the connection lines):" >&2
  grep -v ': connected to export \|): disconnected$\|^  0x\|^Shadow\|^  [A-Z].*: *[0-9a-f ]*$' \
    "$d/raidd.log" | tail -n 40 >&2
  fail "raidd died ($how) during $1"
}

# check_alive WHAT: raidd is alive and answers raidctl status.
check_alive () {
  raidd_dead "$1"
  timeout 20 "$raidctl" --control "$ctl" status > "$d/status.out" 2>&1 || {
    raidd_dead "$1"
    backtrace
    fail "raidd does not answer raidctl status after $1: $(cat "$d/status.out")"
  }
}

# backtrace: what raidd is doing, for a hang: the array's requests in
# flight (raidctl stats: in the array and on each member) and a gdb
# backtrace of every thread.
backtrace () {
  if [ -n "${cur_name:-}" ]; then
    echo "$0: raidctl stats $cur_name:" >&2
    timeout 20 "$raidctl" --control "$ctl" stats "$cur_name" >&2 || echo "(raidctl stats did not answer)" >&2
  fi
  if command -v gdb >/dev/null && [ -n "$raidd_pid" ]; then
    echo "$0: gdb backtrace of every raidd thread (PID $raidd_pid):" >&2
    timeout 120 gdb -p "$raidd_pid" -batch -ex 'thread apply all bt' > "$d/gdb.out" 2>&1 || :
    grep -v '^\[New LWP\|^warning:\|^Using host libthread_db\|^\[Thread debugging' "$d/gdb.out" |
      head -n 250 >&2
  else
    echo "$0: (no gdb: no backtrace of raidd)" >&2
  fi
}

# end_raidd NAME [MEMBER...]: SIGTERM with the array still running (the
# first round's hang left raidd deaf to it): raidd must exit 0 within 30 s,
# and each MEMBER (those of a redundant array still in it) must be marked
# clean.
end_raidd () {
  local name=$1 rc=0 f out
  shift
  check_alive "$name: before SIGTERM"
  kill -TERM "$raidd_pid"
  pid_gone "$raidd_pid" 30 || { backtrace; fail "$name: raidd did not stop within 30 s of SIGTERM"; }
  wait "$raidd_pid" || rc=$?
  raidd_pid=
  [ "$rc" = 0 ] || fail "$name: raidd exited $rc on SIGTERM"
  for f in "$@"; do
    out=$("$raidctl" examine "$f")
    grep -q "State : clean" <<<"$out" ||
      fail "$name: $f not marked clean after SIGTERM: $(grep State <<<"$out")"
  done
}

client_pid=
kill_client () { [ -z "$client_pid" ] || kill_pid "$client_pid"; client_pid=; }
cleanup_fn kill_client

# client WHAT LIMIT OUT CMD...: run a client with its output in OUT; it
# must end within LIMIT seconds (else: a hang: backtrace, fail) and raidd
# must outlive it.  Sets $rc to the client's exit status.
client () {
  local what=$1 limit=$2 out=$3 start=$SECONDS
  shift 3
  echo "$0: $what" >&2
  timeout -k 2 $((limit + 30)) "$@" > "$out" 2>&1 &
  client_pid=$!
  while kill -0 "$client_pid" 2>/dev/null; do
    if ! kill -0 "$raidd_pid" 2>/dev/null; then
      sleep 1; kill_client
      cat "$out" >&2
      raidd_dead "$what"
    fi
    if [ $((SECONDS - start)) -ge "$limit" ]; then
      echo "$0: HANG: $what has not finished after $limit s; its output:" >&2
      cat "$out" >&2
      backtrace
      kill_client
      fail "$what hung (no answer from raidd within $limit s)"
    fi
    sleep 0.2
  done
  rc=0
  wait "$client_pid" || rc=$?
  client_pid=
  echo "$0: ... exit $rc after $((SECONDS - start)) s" >&2
}

# stress NAME WHAT [NBDSTRESS ARGS...]: nbdstress with 4 connections.
stress () {
  local name=$1 what=$2 seed=()
  shift 2
  [ -z "${STRESS_SEED:-}" ] || seed=(-s "$STRESS_SEED")
  client "$name: $what: nbdstress" $((ns_secs + stall + grace)) "$d/ns.out" \
    "$nbdstress" -c 4 -q 32 -t "$ns_secs" -S "$stall" -l 48M "${seed[@]}" "$@" "$(uri "$name")"
  case $rc in
    0) ;;
    3) cat "$d/ns.out" >&2; backtrace; fail "$name: $what: nbdstress: requests hang in raidd" ;;
    4) cat "$d/ns.out" >&2; raidd_dead "$name: $what: nbdstress"
       fail "$name: $what: nbdstress: raidd dropped the connections" ;;
    *) cat "$d/ns.out" >&2; fail "$name: $what: nbdstress failed (exit $rc)" ;;
  esac
  grep -q " 0 mismatches, 0 errors$" "$d/ns.out" || { cat "$d/ns.out" >&2; fail "$name: $what: nbdstress counts"; }
  echo "$name: $what: $(tail -n 1 "$d/ns.out")"
  check_alive "$name: $what: nbdstress"
}

# fio_check NAME WHAT OUT: fio exited 0 ($rc) with err=0 in every job.
fio_check () {
  if [ "$rc" != 0 ] || ! grep -q "err= 0" "$3" || grep -q "err= *[1-9]" "$3" ||
     grep -qi "verify.*fail\|bad magic\|crc32c.*wanted\|io_u error" "$3"; then
    cat "$3" >&2
    raidd_dead "$1: $2"
    fail "$1: $2: fio exited $rc or reported errors"
  fi
  echo "$1: $2: fio: $(grep -E '^ +(READ|WRITE):' "$3" | sed 's/^ *//' | tr '\n' ' ')"
  check_alive "$1: $2: fio"
}

# fio_verify NAME WHAT [GROUPS]: 4 jobs per group on disjoint 2 MiB
# regions (offset_increment), writes verified with crc32c as they go and
# at the end; the groups run one after the other.
# serialize_overlap: time-based runs write each block again in every pass
# over the region, and fio then verifies a block of an earlier pass while
# the next pass may be rewriting it (verify_backlog).  NBD (like any disk)
# leaves a read that overlaps a write in flight undefined: striped over
# members, it returns part old and part new data.  fio's own answer is to
# hold an I/O back while an overlapping one of the same job is in flight
# (seen in the torture run: RAID 0, 1 MiB blocks over 16 MiB: old header,
# one member's chunks from the newer write).
fio_verify () {
  local name=$1 what=$2 groups=${3:-"randwrite:4k:32 write:256k:8 randwrite:1m:8 write:4k:16"}
  local g rw bs qd args=() per=2M
  [ "$fio_secs" -gt 0 ] && per=16M
  for g in $groups; do
    IFS=: read -r rw bs qd <<<"$g"
    args+=(--name="$rw-$bs" --stonewall --rw="$rw" --bs="$bs" --iodepth="$qd")
  done
  local timing=()
  [ "$fio_secs" -gt 0 ] && timing=(--time_based=1 --runtime="$fio_secs")
  client "$name: $what: fio verify ($groups)" $(( (fio_secs + 20) * 4 + grace )) "$d/fio.out" \
    fio --thread --ioengine=nbd --uri="$(uri "$name")" --numjobs=4 --offset_increment="$per" \
      --size="$per" --verify=crc32c --verify_backlog=64 --verify_fatal=1 --do_verify=1 \
      --verify_state_save=0 --serialize_overlap=1 --group_reporting "${timing[@]}" "${args[@]}"
  fio_check "$name" "$what: fio verify" "$d/fio.out"
}

# repro NAME: the reproductions; no verify: overlapping writers.
repro () {
  local name=$1 size i seq_size
  size=$(nbdinfo --size "$(uri "$name")")
  client "$name: overlapping random 4K writes, 4 jobs over 64 KiB" $((repro_secs + grace)) "$d/fio.out" \
    fio --thread --name=overlap --ioengine=nbd --uri="$(uri "$name")" --rw=randwrite --bs=4k \
      --size=64k --iodepth=32 --numjobs=4 --time_based --runtime="$repro_secs" --group_reporting
  fio_check "$name" "overlapping random 4K writes" "$d/fio.out"
  seq_size=$(( size < (64 << 20) ? size / (256 << 10) * (256 << 10) : 64 << 20 ))
  for i in $(seq "$repro_runs"); do
    client "$name: overlapping sequential 256K writes, 4 jobs over $((seq_size >> 20)) MiB, run $i" \
      $((seq_secs + grace)) "$d/fio.out" \
      fio --thread --name=seq --ioengine=nbd --uri="$(uri "$name")" --rw=write --bs=256k \
        --size="$seq_size" --iodepth=8 --numjobs=4 --time_based --runtime="$seq_secs" --group_reporting
    fio_check "$name" "overlapping sequential 256K writes, run $i" "$d/fio.out"
  done
}

# scrub NAME WHAT: a check finds mismatch_cnt 0.
scrub () {
  timeout $((120 + 4 * torture)) "$raidctl" --control "$ctl" scrub "$1" --wait > "$d/scrub.out" 2>&1 ||
    { raidd_dead "$1: scrub $2"; backtrace; fail "$1: scrub $2: $(cat "$d/scrub.out")"; }
  grep -q "check done: mismatch_cnt 0$" "$d/scrub.out" ||
    fail "$1: scrub $2: parity or mirrors inconsistent: $(cat "$d/scrub.out")"
  echo "$1: scrub $2: $(cat "$d/scrub.out")"
  check_alive "$1: scrub $2"
}

# level NAME LEVEL CHUNK N SIZE THREADS [sim]: the whole run on one array.
level () {
  local name=$1 lvl=$2 chunk=$3 n=$4 size=$5 threads=$6 kind=${7:-file}
  local m=() i args rate msize t0=$SECONDS
  case " ${STRESS_LEVELS:-$name} " in *" $name "*) ;; *) return 0 ;; esac
  cur_name=$name
  : > "$d/raidd.log"                    # one log per array: fail shows its end
  echo "== $name: RAID $lvl over $n x $size ($kind members), chunk $chunk, raidd --threads $threads"
  start_raidd --threads "$threads"
  for i in $(seq 0 $((n - 1))); do
    truncate -s "$size" "$d/$name-$i"
    if [ "$kind" = sim ]; then m+=("sim:$d/$name-$i"); else m+=("$d/$name-$i"); fi
  done
  args=(--level "$lvl" --assume-clean)
  [ "$chunk" != - ] && args+=(--chunk "$chunk")
  R create "$name" "${args[@]}" "${m[@]}" > "$d/out" 2>&1 || fail "create $name: $(cat "$d/out")"

  stress "$name" "healthy"
  if [ "$kind" = sim ]; then
    # RAM speed: many more requests per second; the overlapping writers.
    client "$name: overlapping random 4K writes, 4 jobs over 64 KiB" $((repro_secs + grace)) "$d/fio.out" \
      fio --thread --name=overlap --ioengine=nbd --uri="$(uri "$name")" --rw=randwrite --bs=4k \
        --size=64k --iodepth=32 --numjobs=4 --time_based --runtime="$repro_secs" --group_reporting
    fio_check "$name" "overlapping random 4K writes" "$d/fio.out"
    [ "$lvl" = 0 ] || scrub "$name" "after overlapping writers"
    end_raidd "$name"
    echo "== $name: ok ($((SECONDS - t0)) s)"
    return 0
  fi
  fio_verify "$name" "healthy"
  repro "$name"
  if [ "$lvl" = 0 ]; then
    end_raidd "$name"
    echo "== $name: ok ($((SECONDS - t0)) s)"
    return 0
  fi
  scrub "$name" "after overlapping writers"

  # Degraded: member 1 fails.
  R fail "$name" "${m[1]}" > /dev/null || fail "fail ${m[1]} in $name"
  [ "$(st "$name" "a['degraded']")" = 1 ] || fail "$name not degraded after fail"
  stress "$name" "degraded"
  fio_verify "$name" "degraded" "randwrite:4k:32 write:1m:8"

  # Rebuild under load: slowed so that it lasts about as long as nbdstress.
  R remove "$name" "${m[1]}" > /dev/null || fail "remove ${m[1]} from $name"
  truncate -s "$size" "$d/$name-new"
  local new="$d/$name-new"
  msize=$(st "$name" "a['member_size']")
  rate=$(( msize / (ns_secs + 2) ))
  [ "$rate" -ge $((1 << 20)) ] || rate=$((1 << 20))
  R set "$name" rebuild-min="$rate" rebuild-max="$rate" > /dev/null
  R add "$name" "$new" > "$d/out" || fail "add $new to $name: $(cat "$d/out")"
  grep -q "rebuilding" "$d/out" || fail "$name: add did not start a rebuild: $(cat "$d/out")"
  [ "$(st "$name" "a['sync']['action']")" != idle ] ||
    echo "$0: note: $name: the rebuild was over before nbdstress started"
  stress "$name" "rebuilding"
  echo "$name: rebuild at $(st "$name" "'%s %d%%' % (a['sync']['action'], a['sync']['done'] * 100 // max(1, a['sync']['total']))") when nbdstress ended"
  R set "$name" rebuild-min=0 rebuild-max=0 > /dev/null
  timeout $((300 + 4 * torture)) "$raidctl" --control "$ctl" wait "$name" > "$d/out" 2>&1 ||
    { raidd_dead "$name: wait for the rebuild"; backtrace; fail "$name: wait: $(cat "$d/out")"; }
  [ "$(st "$name" "a['degraded']")" = 0 ] || fail "$name still degraded after the rebuild"
  scrub "$name" "after the rebuild"
  end_raidd "$name" "${m[0]}" "${m[@]:2}" "$new"
  echo "== $name: ok ($((SECONDS - t0)) s)"
}

start=$SECONDS
#     name  level chunk members size threads [kind]
level r0    0     64K   3       64M  2
level r1    1     -     2       64M  4
level r5c4  5     4K    3       64M  2
level r5    5     -     4       256M 2
level r10   10    -     4       64M  4
level r5sim 5     4K    3       64M  4   sim
echo "$0: OK ($((SECONDS - start)) s)"
