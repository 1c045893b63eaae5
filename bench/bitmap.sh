#!/bin/bash
# bench/bitmap.sh: what md's write-intent bitmap buys and costs (issue 16).
#
#   bench/bitmap.sh [--quick] [--size ARRAY_SIZE] [--members sim|DIR]
#                   [--sim OPTS] [--fast-sim OPTS] [--perf-size ARRAY_SIZE]
#                   [--bitmap-chunk SIZE] [--sync-rounds N] [--rounds N]
#                   [--runtime SECONDS] [--out DIR] [--build BUILD_DIR]
#
# Starts its own raidd and, for a RAID 1 over 2 and a RAID 5 over 3, each
# made once with `raidctl create --bitmap internal --bitmap-chunk CHUNK`
# and once with `--bitmap none`, measures side by side in one run:
#  1. resync after a crash: 1 % of the array written (fio's nbd engine,
#     random 4K to 1M writes, the same seed for both arrays), raidd killed
#     with SIGKILL as soon as the writes are acknowledged (safe mode off,
#     `raidctl set NAME safe-mode-delay=0`, so the array is still dirty:
#     idle, it would be clean and the crash cost nothing), started again,
#     the array assembled; seconds from the end of `raidctl assemble` to
#     the end of `raidctl wait`, and the bytes the resync read from each
#     member (`raidctl stats --json`, counted since the assembly) with the
#     dirty bitmap chunks at assembly (`raidctl detail --json`) and the
#     chunks the writes touched (fio's I/O log: what a bitmap that marks
#     only the chunks being written would hold dirty);
#  2. re-add: the member in role 1 failed and removed, 1 % written, the
#     same member added back (`raidctl add`, or `add --force` when raidctl
#     refuses a member of this very array, which is then rebuilt in full);
#     seconds from the end of the add to in sync and the bytes written to
#     it.  The assembly and the add themselves (opening the members: a
#     simulated drive maps its whole file) are not counted in the tables,
#     only in bitmap.csv's command_s.  1 and 2 run --sync-rounds times
#     (default 1), the two arrays in turn, a fresh array each time; the
#     tables show the median;
#  3. 4K random writes, iodepth 32, RUNTIME seconds (default 5), ROUNDS
#     rounds (default 3) taking the two arrays in turn (median), on fast
#     simulated drives (--fast-sim), IOPS with and without the bitmap.
# Ratios are bitmap / none.  Nothing passes or fails on a number; the
# exit status is 1 when a step failed or a tool is missing.
#
# Members of 1 and 2 (--members): sim (the default) simulated drives that
# keep their data, sim:FILE?OPTS with FILE on /dev/shm and OPTS from --sim
# (default bench/run's drive without discard: the bitmap and the data
# must survive raidd's death); they hold the whole array in RAM, twice
# for RAID 1 (8 GiB at the default --size 4G). DIR: member files in DIR
# (O_DIRECT where its file system allows). 3 always runs on simulated
# drives on /dev/shm, arrays of --perf-size (default the smaller of
# --size and 1G).
#
# --quick: 32 MiB arrays, 1 MiB bitmap chunks, one round of 1 s (about
# half a minute; tests/test-bench-smoke.sh runs it).
# Outputs in --out DIR (default bench/out): bitmap.md (also printed),
# bitmap.csv (every measurement), bitmap-raidd.log.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")

quick=0
size=
perf_size=
members=sim
sim_opts='lat=1ms,bw=100M,depth=4'
fast_opts='lat=80us,depth=64,bw=3G'
bchunk=
rounds=
sync_rounds=1
runtime=
out=$top/bench/out
build=$top/build

usage () {
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --size) size=$2; shift ;;
    --size=*) size=${1#*=} ;;
    --perf-size) perf_size=$2; shift ;;
    --perf-size=*) perf_size=${1#*=} ;;
    --members) members=$2; shift ;;
    --members=*) members=${1#*=} ;;
    --sim) sim_opts=$2; shift ;;
    --sim=*) sim_opts=${1#*=} ;;
    --fast-sim) fast_opts=$2; shift ;;
    --fast-sim=*) fast_opts=${1#*=} ;;
    --bitmap-chunk) bchunk=$2; shift ;;
    --bitmap-chunk=*) bchunk=${1#*=} ;;
    --rounds) rounds=$2; shift ;;
    --rounds=*) rounds=${1#*=} ;;
    --sync-rounds) sync_rounds=$2; shift ;;
    --sync-rounds=*) sync_rounds=${1#*=} ;;
    --runtime) runtime=$2; shift ;;
    --runtime=*) runtime=${1#*=} ;;
    --out) out=$2; shift ;;
    --out=*) out=${1#*=} ;;
    --build) build=$2; shift ;;
    --build=*) build=${1#*=} ;;
    -h|--help) usage 0 ;;
    *) echo "bench/bitmap.sh: unknown argument: $1" >&2; usage 2 >&2 ;;
  esac
  shift
done

die () { echo "bench/bitmap.sh: $*" >&2; exit 1; }
say () { echo "bench/bitmap.sh: $*" >&2; }

if [ $quick = 1 ]; then
  : "${size:=32M}" "${bchunk:=1M}" "${rounds:=1}" "${runtime:=1}"
else
  : "${size:=4G}" "${bchunk:=64M}" "${rounds:=3}" "${runtime:=5}"
fi
to_bytes () { numfmt --from=iec "${1%B}"; }
size_b=$(to_bytes "$size") || die "--size: not a size: $size"
if [ -z "$perf_size" ]; then
  perf_size_b=$(( size_b < 1073741824 ? size_b : 1073741824 ))
else
  perf_size_b=$(to_bytes "$perf_size") || die "--perf-size: not a size: $perf_size"
fi
case $sim_opts in *discard*) die "--sim: the members must keep their data (no discard)" ;; esac
case $fast_opts in *discard*) die "--fast-sim: the members must keep their data (no discard)" ;; esac

raidd=$build/raidd/raidd
raidctl=$build/raidctl/raidctl
[ -x "$raidd" ] && [ -x "$raidctl" ] || die "no raidd/raidctl in $build (build first, or --build DIR)"
for t in fio jq numfmt; do
  command -v "$t" >/dev/null || die "$t not found (bash scripts/setup.sh installs it)"
done
fio --enghelp=nbd >/dev/null 2>&1 || die "fio has no nbd engine"

# ---- work directory, raidd, cleanup --------------------------------------------
shm=/dev/shm
sdir=$(mktemp -d "$shm/raid-bitmap.XXXXXX")   # sockets, sim members
if [ "$members" = sim ]; then
  mdir=$sdir
else
  [ -d "$members" ] || die "--members: $members is neither sim nor a directory"
  mdir=$(mktemp -d "$(cd "$members" && pwd)/raid-bitmap.XXXXXX")
fi
ctl=$sdir/c.sock
nsock=$sdir/n.sock
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$out/bitmap-raidd.log
csv=$out/bitmap.csv
md=$out/bitmap.md
: > "$log"
raidd_pid=

stop_pid () {  # stop_pid PID: TERM, then KILL after 5 s; only our own children
  local p=$1 i
  [ -n "$p" ] || return 0
  kill "$p" 2>/dev/null || return 0
  for (( i = 0; i < 50; i++ )); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null
  wait "$p" 2>/dev/null || :
}
cleanup () {
  local st=$?
  set +e
  trap '' INT TERM
  stop_pid "$raidd_pid"
  rm -rf "$sdir"
  [ "$mdir" = "$sdir" ] || rm -rf "$mdir"
  exit $st
}
trap cleanup EXIT
trap 'exit 130' INT TERM

R () { "$raidctl" --control "$ctl" "$@"; }
start_raidd () {
  "$raidd" --foreground --control "$ctl" --nbd-socket "$nsock" >>"$log" 2>&1 &
  raidd_pid=$!
  for _ in $(seq 100); do R status >/dev/null 2>&1 && return 0; sleep 0.1; done
  die "raidd did not come up (see $log)"
}
# crash_raidd: SIGKILL, as a crash would; the member files keep what was written.
crash_raidd () {
  kill -9 "$raidd_pid"
  wait "$raidd_pid" 2>/dev/null || :
  raidd_pid=
}

now () { date +%s.%N; }
secs () { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
ratio () { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
mib () { awk -v b="$1" 'BEGIN { if (b == "") print "-"; else printf "%.0f", b / 1048576 }'; }
median () {  # median <<< "V..."; of an even count, the mean of the middle two
  tr ' ' '\n' | awk NF | sort -g |
    awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else if (NR) print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

failures=0
echo "test,level,members,bitmap,round,command_s,seconds,bytes,dirty_chunks,chunks_written,bitmap_chunk,iops,note" > "$csv"
csv_row () { local IFS=, f=("${@//,/;}"); echo "${f[*]}" >> "$csv"; }

# ---- arrays ------------------------------------------------------------------------
# make_array NAME LEVEL N BITMAP SIZE OPTS|-: member files of SIZE bytes of
# array, created --assume-clean; sets specs=(...).  OPTS: sim options;
# "-": plain files in mdir.
specs=()
make_array () {
  local name=$1 level=$2 n=$3 bm=$4 asize=$5 opts=$6 i msize f dir=$mdir
  [ "$opts" = - ] || dir=$sdir
  msize=$(( level == 1 ? asize : asize / (n - 1) ))
  msize=$(( (msize + 2097152 + 1048575) / 1048576 * 1048576 ))   # + md's data offset
  specs=()
  for (( i = 0; i < n; i++ )); do
    f=$dir/$name-m$i
    if [ "$opts" = - ]; then
      fallocate -l "$msize" "$f"; specs+=("$f")
    else
      truncate -s "$msize" "$f"; specs+=("sim:$f${opts:+?$opts}")
    fi
  done
  local bmargs=(--bitmap none)
  [ "$bm" = none ] || bmargs=(--bitmap internal --bitmap-chunk "$bchunk")
  R create "$name" --level "$level" "${bmargs[@]}" --assume-clean "${specs[@]}" >>"$log" 2>&1 ||
    die "raidctl create $name failed (see $log)"
  R set "$name" rebuild-min=0 rebuild-max=0 >>"$log" 2>&1
}
drop_array () { R stop "$1" >>"$log" 2>&1 || :; rm -f "$mdir/$1"-m* "$sdir/$1"-m*; }
array_size () { R --json detail "$1" | jq -r .size; }
# write_pct NAME: 1 % of the array in random writes of 4K to 1M, the same
# offsets and sizes for every array of that size (fixed seed).
write_pct () {
  local asize; asize=$(array_size "$1")
  fio --name=pct --ioengine=nbd --uri="nbd+unix:///$1?socket=$nsock" --rw=randwrite \
    --bsrange=4k-1m --size="$asize" --io_size=$(( asize / 100 / 4096 * 4096 )) --iodepth=16 \
    --randseed=16 --write_iolog="$sdir/iolog" --output="$sdir/fio.out" >/dev/null 2>"$sdir/fio.err" ||
    die "fio (1 % write on $1) failed: $(tr '\n' ' ' < "$sdir/fio.err")"
}
# written NAME: how many bitmap chunks the last write_pct wrote to (from
# fio's I/O log), what a bitmap that marks only the chunks being written
# would have dirty.  A bit covers CHUNK bytes of each member (md's
# sync_size): for RAID 1 the array's offsets, for RAID 5 the member rows
# that a write touches (data and parity).
written () {
  local level n rchunk
  read -r level n rchunk <<<"$(R --json detail "$1" | jq -r '"\(.level) \(.raid_disks) \(.chunk_size)"')"
  awk -v level="$level" -v n="$n" -v rc="$rchunk" -v bc="$(to_bytes "$bchunk")" '
    { for (i = 1; i < NF - 1; i++) if ($i == "write") break
      if (i >= NF - 1) next
      a = $(i + 1); b = a + $(i + 2)
      if (level == 5) { row = rc * (n - 1); a = int(a / row) * rc; b = int((b - 1) / row) * rc + rc }
      for (c = int(a / bc); c <= int((b - 1) / bc); c++) hit[c] = 1 }
    END { print length(hit) }' "$sdir/iolog"
}
# wait_sync NAME: raidctl wait, with a limit so that a stuck engine ends the run.
wait_sync () {
  timeout 3600 "$raidctl" --control "$ctl" wait "$1" >>"$log" 2>&1 ||
    die "raidctl wait $1 failed or timed out (see $log)"
}
# dirty NAME: "DIRTY of CHUNKS" of the bitmap now, or "-" without one.
dirty () { R --json detail "$1" | jq -r 'if .bitmap then "\(.bitmap.dirty) of \(.bitmap.chunks)" else "-" end'; }
# sync_read NAME: the most any member read since the assembly or the last
# stats reset (a resync reads its range on every member).
sync_read () { R stats --json "$1" | jq -r '[.members[].read_bytes] | max'; }
member_written () {  # member_written NAME SPEC
  R stats --json "$1" | jq -r --arg m "$2" '.members[] | select(.name == $m) | .write_bytes' | head -1
}

# ---- 1 and 2: crash resync and re-add -------------------------------------------------
declare -A crash_all crash_b crash_d readd_all readd_b readd_d readd_how crash_s readd_s
member_opts=$sim_opts
[ "$members" = sim ] || member_opts=-
# order R: the two arrays of round R, taken in turn (none first in odd rounds).
order () { if (( $1 % 2 )); then echo none internal; else echo internal none; fi; }
start_raidd
for cfg in "1 2" "5 3"; do
  read -r level n <<<"$cfg"
  for (( r = 1; r <= sync_rounds; r++ )); do
    for bm in $(order "$r"); do
      name=r$level-$bm k=$level,$bm
      say "RAID $level over $n, bitmap $bm, round $r: crash resync"
      make_array "$name" "$level" "$n" "$bm" "$size_b" "$member_opts"
      # A crash with these writes outstanding: idle for 200 ms, raidd's
      # safe mode would mark the array clean and the crash would cost
      # nothing at all (what an idle crash costs now).
      R set "$name" safe-mode-delay=0 >>"$log" 2>&1 || die "raidctl set $name safe-mode-delay=0 failed (see $log)"
      write_pct "$name"
      w=$(written "$name")
      crash_raidd
      start_raidd
      t0=$(now)
      R assemble "$name" "${specs[@]}" >>"$log" 2>&1 || die "assemble $name after the kill failed (see $log)"
      t1=$(now)
      d=$(dirty "$name")
      wait_sync "$name"
      t2=$(now)
      crash_all[$k]+=" $(secs "$t1" "$t2")" crash_b[$k]=$(sync_read "$name") crash_d[$k]="$d ($w written)"
      csv_row crash "$level" "$n" "$bm" "$r" "$(secs "$t0" "$t1")" "$(secs "$t1" "$t2")" "${crash_b[$k]}" "$d" "$w" \
        "$([ "$bm" = none ] || echo "$bchunk")" "" "bytes: resync read per member"

      say "RAID $level over $n, bitmap $bm, round $r: re-add"
      m=$(R --json detail "$name" | jq -r '.members[] | select(.role == 1) | .path')
      R fail "$name" "$m" >>"$log" 2>&1 && R remove "$name" "$m" >>"$log" 2>&1 ||
        die "raidctl fail/remove $name $m failed (see $log)"
      write_pct "$name"
      w=$(written "$name")
      R stats --reset "$name" >/dev/null
      how=add
      t0=$(now)
      if ! R add "$name" "$m" > "$sdir/add.out" 2>&1; then
        cat "$sdir/add.out" >>"$log"
        grep -q "belongs to md array $name " "$sdir/add.out" ||
          die "raidctl add $name $m failed: $(cat "$sdir/add.out")"
        how="add --force"
        R add "$name" "$m" --force >>"$log" 2>&1 || die "raidctl add --force $name $m failed (see $log)"
      fi
      t1=$(now)
      d=$(dirty "$name")
      wait_sync "$name"
      t2=$(now)
      readd_all[$k]+=" $(secs "$t1" "$t2")" readd_b[$k]=$(member_written "$name" "$m") readd_how[$k]=$how
      readd_d[$k]="$d ($w written)"
      csv_row readd "$level" "$n" "$bm" "$r" "$(secs "$t0" "$t1")" "$(secs "$t1" "$t2")" "${readd_b[$k]}" "$d" "$w" \
        "$([ "$bm" = none ] || echo "$bchunk")" "" "bytes: written to the member; $how"
      drop_array "$name"
    done
  done
  for bm in none internal; do
    crash_s[$level,$bm]=$(median <<<"${crash_all[$level,$bm]}")
    readd_s[$level,$bm]=$(median <<<"${readd_all[$level,$bm]}")
  done
done

# ---- 3: 4K random writes, the two arrays in turn ----------------------------------------
declare -A iops_med iops_all
for cfg in "1 2" "5 3"; do
  read -r level n <<<"$cfg"
  for bm in none internal; do make_array "p$level-$bm" "$level" "$n" "$bm" "$perf_size_b" "$fast_opts"; done
  for (( r = 1; r <= rounds; r++ )); do
    for bm in $(order "$r"); do
      name=p$level-$bm
      fio --name=rw4k --ioengine=nbd --uri="nbd+unix:///$name?socket=$nsock" --rw=randwrite --bs=4k \
        --iodepth=32 --size="$(array_size "$name")" --time_based --runtime="$runtime" \
        --output-format=json --output="$sdir/fio.json" >/dev/null 2>"$sdir/fio.err" || {
        say "fio on $name failed: $(tr '\n' ' ' < "$sdir/fio.err")"; failures=$((failures + 1)); continue; }
      v=$(sed -n '/^{/,$p' "$sdir/fio.json" | jq -r '.jobs[0].write.iops | floor')
      iops_all[$level,$bm]+=" $v"
      csv_row randwrite-4k "$level" "$n" "$bm" "$r" "" "$runtime" "" "" "" \
        "$([ "$bm" = none ] || echo "$bchunk")" "$v" "iodepth 32; $fast_opts"
      say "RAID $level over $n, bitmap $bm, round $r: $v IOPS"
    done
  done
  for bm in none internal; do
    iops_med[$level,$bm]=$(median <<<"${iops_all[$level,$bm]:-}")
    drop_array "p$level-$bm"
  done
done
stop_pid "$raidd_pid"; raidd_pid=

of_rounds () { [ "$1" = 1 ] && echo ", one round" || echo ", median of $1 rounds"; }
# ---- the report ------------------------------------------------------------------------------
kind="sim($sim_opts) on $shm"
[ "$members" = sim ] || kind="files in $members ($(df --output=fstype "$members" | tail -1))"
{
  echo "\`bench/bitmap.sh$([ $quick = 1 ] && echo " --quick") --size $size --bitmap-chunk $bchunk --sync-rounds $sync_rounds --rounds $rounds --runtime $runtime\`, $(date -u '+%Y-%m-%d %H:%M UTC')."
  echo "Machine: $(nproc) CPUs ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)),"
  echo "$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r); $(fio --version)."
  echo "Arrays of $(numfmt --to=iec "$size_b") (RAID 1 over 2, RAID 5 over 3), members $kind;"
  echo "bitmap: internal, $bchunk chunks, against none. Ratios are bitmap / none."
  echo
  echo "Resync after SIGKILL (1 % of the array written just before; seconds from the end of \`raidctl assemble\` to the end of \`raidctl wait\`$(of_rounds "$sync_rounds")):"
  echo
  echo "| array | none: s | none: MiB resynced | bitmap: s | bitmap: MiB resynced | bitmap: dirty chunks at assembly | time bitmap / none |"
  echo "|---|---|---|---|---|---|---|"
  for level in 1 5; do
    printf '| RAID %s | %s | %s | %s | %s | %s | %s |\n' "$level" \
      "${crash_s[$level,none]}" "$(mib "${crash_b[$level,none]}")" \
      "${crash_s[$level,internal]}" "$(mib "${crash_b[$level,internal]}")" "${crash_d[$level,internal]}" \
      "$(ratio "${crash_s[$level,internal]}" "${crash_s[$level,none]}")"
  done
  echo
  echo "Re-add of a failed and removed member after 1 % was written (seconds from the end of \`raidctl add\` to in sync$(of_rounds "$sync_rounds")):"
  echo
  echo "| array | none: s | none: MiB rebuilt | bitmap: s | bitmap: MiB rebuilt | bitmap: dirty chunks at the add | how (bitmap) | time bitmap / none |"
  echo "|---|---|---|---|---|---|---|---|"
  for level in 1 5; do
    printf '| RAID %s | %s | %s | %s | %s | %s | %s | %s |\n' "$level" \
      "${readd_s[$level,none]}" "$(mib "${readd_b[$level,none]}")" \
      "${readd_s[$level,internal]}" "$(mib "${readd_b[$level,internal]}")" "${readd_d[$level,internal]}" \
      "${readd_how[$level,internal]}" \
      "$(ratio "${readd_s[$level,internal]}" "${readd_s[$level,none]}")"
  done
  echo
  echo "4K random writes, iodepth 32, $runtime s$(of_rounds "$rounds"), the two arrays in turn; arrays of $(numfmt --to=iec "$perf_size_b") on sim($fast_opts):"
  echo
  echo "| array | none: IOPS | bitmap: IOPS | bitmap / none | rounds (none; bitmap) |"
  echo "|---|---|---|---|---|"
  for level in 1 5; do
    printf '| RAID %s | %s | %s | %s | %s; %s |\n' "$level" \
      "${iops_med[$level,none]:--}" "${iops_med[$level,internal]:--}" \
      "$(ratio "${iops_med[$level,internal]:-}" "${iops_med[$level,none]:-}")" \
      "$(echo ${iops_all[$level,none]:-})" "$(echo ${iops_all[$level,internal]:-})"
  done
} > "$md"
cat "$md"
say "results: $md, $csv"
[ $failures = 0 ] || die "$failures measurements failed (see $log)"
