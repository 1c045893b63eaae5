#!/bin/bash
# Description: the README's "Grow an array" walk-through, run as it stands:
# its ```sh blocks marked readme-grow (tests/readme.sh), with raidd's
# sockets and /var/tmp moved into a private directory.  Then what the
# walk-through says should be true is checked: the mirror grew (raidctl
# said "grown" and that it resyncs the new region, and wait saw the resync
# end), the file system on it grew (df before and after, resize2fs) and
# e2fsck finds it clean, the files copied before the grow are still there,
# the scrub found 0 mismatches; its clean-up stopped the array and
# removed its members.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
. "${top_srcdir:-.}/tests/readme.sh"
requires_nbd_loop
requires sh -c "command -v resize2fs"

mktmpdir test-readme-grow
raidd_env "$tmpdir"
nbdfuse=
cleanup_fn readme_unmount
start_raidd
raidctl () { R "$@"; }

readme_script readme-grow "$d/walk.sh"
readme_run "$d/walk.sh"

grep -q "grown: grown from 127.00 MiB to 383.00 MiB" "$d/out" || fail "grow did not say what it did: $(cat "$d/out")"
grep -q "resyncing the new region" "$d/out" || fail "grow did not resync the new region"
grep -q "grown: resync done" "$d/out" || fail "wait did not see the resync end"
sizes=$(awk '$NF ~ /mnt$/ { print $2 }' "$d/out")
[ "$(echo "$sizes" | wc -l)" = 2 ] || fail "df did not run twice: $(cat "$d/out")"
before=$(echo "$sizes" | head -1) after=$(echo "$sizes" | tail -1)
[ "${before%M}" -lt 130 ] && [ "${after%M}" -gt 300 ] || fail "the file system went from $before to $after"
grep -q ": [0-9]*/97536 files .*/392192 blocks" "$d/out" ||
  fail "e2fsck -fn after the grow did not pass over the grown file system: $(cat "$d/out")"
grep -q "check done: mismatch_cnt 0" "$d/out" || fail "scrub did not find 0 mismatches"
grep -q "The filesystem on .* is now .* blocks long" "$d/out" || fail "resize2fs did not grow it"
for f in $(ls /etc/default); do
  grep -qx "$f" "$d/out" || fail "default/$f is gone after the grow"
done
R status | grep -q grown && fail "the walk-through left the array running"
[ ! -e "$d/g0" ] || fail "the walk-through left its members"
echo "$0: OK"
