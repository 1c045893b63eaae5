#!/bin/bash
# Description: libraid's RAID 6 arithmetic and placement against md's own
# (issue 32): in the VM mdadm creates a RAID 6 of 6 members in each of
# md's eleven layouts (the six RAID 5 ones with Q, and the "-6" forms),
# md computes P and Q in its initial resync, and the array is filled with
# a pattern that names each sector (tests/vm/raid6.sh); on the host
# raid6-check verify reads the members: every data chunk must be where
# geo_raid6_map() puts it and every stripe's P and Q what raid6_gen()
# (ISA-L's pq_gen()) makes of the data in geo_raid6_slot()'s syndrome
# order.  Run by "make check-vm"; about a minute under TCG.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"

requires_vm
requires_file "$top_builddir/tests/raid6-check"
fail () { echo "$0: FAIL: $*" >&2; exit 1; }
mktmpdir raid-vm-raid6
dir=$tmpdir
layouts="left-symmetric left-asymmetric right-symmetric right-asymmetric parity-first
  parity-last left-symmetric-6 left-asymmetric-6 right-symmetric-6 right-asymmetric-6
  parity-first-6"
for l in $layouts; do mkdir -p "$dir/$l"; done
# Four members' worth of 8 MiB: more than any of the arrays holds.
"$top_builddir/tests/raid6-check" pattern $((32 << 20)) "$dir/pattern"
vm_run --share "$dir" --env DIR="$dir" --env LAYOUTS="$(echo $layouts)" --timeout 900 \
  -- "$top_srcdir/tests/vm/raid6.sh" || fail "the VM half failed"
for l in $layouts; do
  "$top_builddir/tests/raid6-check" verify "$dir/$l"/m*.img > "$dir/out" 2>&1 ||
    fail "$l: $(cat "$dir/out")"
  echo "ok   $l: $(cat "$dir/out")"
done
