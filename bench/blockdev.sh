#!/bin/bash
# bench/blockdev.sh: what a kernel block device over raidd costs, against
# the kernel's own md on the same members, side by side in one VM run.
#
#   bench/blockdev.sh [--levels "0 5"] [--runtime SECONDS] [--out FILE]
#                     [--build BUILD_DIR] [--kernel stable|backports]
#
# One VM (tests/vm/run: Debian's kernel under qemu, 2 vCPUs) holds four
# member images (files on the guest's tmpfs, each behind a loop device).
# For each RAID level, over the same four loop devices in turn:
#   md      mdadm --create (no bitmap), fio on /dev/md0;
#   nbd     raidctl create (no bitmap) and raidctl attach: fio on /dev/nbdN,
#           the kernel's NBD client connected to raidd by raidd itself;
#   ublk    raidctl ublk: fio on /dev/ublkbN, when raidctl has the verb and
#           the kernel ublk_drv (--kernel backports).
# Workloads (fio, libaio, O_DIRECT): 1 MiB sequential write then read at
# iodepth 8; 4K random read at iodepth 1 and 32; 4K random write at
# iodepth 1 and 32.  Every write job verifies what it wrote (crc32c), so a
# figure comes only from data that reads back right.  The report: IOPS
# (MiB/s for 1 MiB) per target, and the ratios nbd/md, ublk/nbd and
# ublk/md.  The
# VM is emulated (TCG): only ratios within one run mean anything.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
levels="0 5"
runtime=5
out=
build=$top
kernel=

while [ $# -gt 0 ]; do
  case $1 in
    --levels) levels=$2; shift 2 ;;
    --runtime) runtime=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --kernel) kernel=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/blockdev.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
for l in $levels; do
  case $l in 0|1|5|10) ;; *) echo "bench/blockdev.sh: --levels: $l is not 0, 1, 5 or 10" >&2; exit 2 ;; esac
done
case $runtime in ''|*[!0-9]*) echo "bench/blockdev.sh: --runtime $runtime: give whole seconds" >&2; exit 2 ;; esac
for f in "$build/raidd/raidd" "$build/raidctl/raidctl"; do
  [ -x "$f" ] || { echo "bench/blockdev.sh: $f is not built (--build BUILD_DIR)" >&2; exit 1; }
done
command -v fio > /dev/null || { echo "bench/blockdev.sh: fio is not installed" >&2; exit 1; }

res=$(mktemp -d /var/tmp/blockdev-bench.XXXXXX)
trap 'rm -rf "$res"' EXIT
# fio runs from the shared folder (the initramfs has no fio).
cp "$(command -v fio)" "$res/fio"
vmargs=(--timeout 3000 --mem 2048 --share "$res" --env BUILD="$build" --env RES="$res"
        --libs-of "$res/fio"
        --env LEVELS="$levels" --env RUNTIME="$runtime"
        --libs-of "$build/raidd/raidd" --libs-of "$build/raidctl/raidctl")
[ -z "$kernel" ] || vmargs+=(--kernel "$kernel")
"$top/tests/vm/run" "${vmargs[@]}" -- "$here/blockdev-guest.sh" ||
  { echo "bench/blockdev.sh: the VM run failed" >&2; exit 1; }

# results.csv: level,workload,target,value,unit
report ()
{
  awk -F, '
    { v[$1 "," $2 "," $3] = $4; unit[$2] = $5
      if (!($1 in seenl)) { seenl[$1] = 1; ls[++nl] = $1 }
      if (!($2 in seenw)) { seenw[$2] = 1; ws[++nw] = $2 }
      if ($3 == "ublk") ublk = 1 }
    function r(a, b) { return (a != "" && b != "" && b > 0) ? sprintf("%.2f", a / b) : "-" }
    END {
      for (i = 1; i <= nl; i++) {
        l = ls[i]
        printf "\n#### RAID %s over 4 members\n\n", l
        printf "| workload | md | nbd (raidctl attach) |%s nbd / md |%s\n", ublk ? " ublk |" : "", ublk ? " ublk / nbd | ublk / md |" : ""
        printf "|---|---|---|%s---|%s\n", ublk ? "---|" : "", ublk ? "---|---|" : ""
        for (j = 1; j <= nw; j++) {
          w = ws[j]; k = l "," w
          md = v[k ",md"]; nbd = v[k ",nbd"]; ub = v[k ",ublk"]
          if (md == "" && nbd == "") continue
          printf "| %s | %s %s | %s %s |", w, md, unit[w], nbd, unit[w]
          if (ublk) printf " %s %s |", (ub == "" ? "-" : ub), unit[w]
          printf " %s |", r(nbd, md)
          if (ublk) printf " %s | %s |", r(ub, nbd), r(ub, md)
          printf "\n"
        }
      }
    }' "$res/results.csv"
}
{
  echo "Run $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) host cores, VM under $(cat "$res/accel" 2>/dev/null || echo qemu), kernel $(cat "$res/kver"), ${runtime} s per read job; every write job verified (crc32c)."
  report
} > "$res/report.md"
cat "$res/report.md"
[ -z "$out" ] || cp "$res/report.md" "$out"
