#!/bin/bash
# Description: the README's "Mirror a boot pair" walk-through, run as it
# stands: the commands between its test-readme-bootpair markers, with
# raidd's sockets and /var/tmp moved into a private directory.  Then what
# the walk-through says should be true is checked: the member alone held
# the files and was clean, the scan waited and started the pair degraded
# ([2/1] [U_]), the returned disk was re-added and rebuilt, the scrub found
# 0 mismatches and the pair ended whole ([2/2] [UU]).
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires_nbd_loop

mktmpdir test-readme-bootpair
raidd_env "$tmpdir"
cleanup_fn "${top_srcdir:-.}/tests/detach-loops.sh" "$d"
cleanup_fn unmount_mnt
unmount_mnt () { umount "$d/mnt" 2>/dev/null || :; umount -l "$d/nbd" 2>/dev/null || :; }
start_raidd
raidctl () { R "$@"; }

sed -n '/<!-- test-readme-bootpair begin -->/,/<!-- test-readme-bootpair end -->/p' \
  "${top_srcdir:-.}/README.md" | sed '1d;$d; s/^    //' |
  sed "s|/var/tmp/|$d/|g; s|/run/raidd/nbd.sock|$sock|g" > "$d/walk.sh"
[ "$(wc -l < "$d/walk.sh")" -gt 20 ] || fail "no boot pair walk-through found in README.md"
set -x
. "$d/walk.sh" > "$d/out" 2> "$d/err"
set +x
cat "$d/out" "$d/err"

for f in $(ls /etc/default); do
  grep -qx "$f" "$d/out" || fail "the member alone does not hold default/$f"
done
grep -Eq "^boot: [0-9]+/[0-9]+ files" "$d/out" || fail "e2fsck -fn on the member alone: $(cat "$d/out")"
grep -q "waiting up to 5 s" "$d/err" || fail "the scan did not wait for boot1"
grep -q "starting it DEGRADED (last resort)" "$d/err" || fail "the scan did not start boot degraded"
grep -q "\[2/1\] \[U_\]" "$d/out" || fail "status after the degraded start is not [2/1] [U_]"
grep -q "boot: member $d1 is back" "$d/raidd.log" || grep -q "re-added $d1 in role 1" "$d/out" ||
  fail "the returned disk was not re-added"
grep -q "check done: mismatch_cnt 0" "$d/out" || fail "scrub did not find 0 mismatches"
grep -q "\[2/2\] \[UU\]" "$d/out" || fail "the pair is not whole at the end"
R stop boot > /dev/null
echo "$0: OK"
