#!/bin/bash
# Description: raidctl zero MEMBER... (mdadm --zero-superblock) erases the
# md superblock and nothing else: afterwards examine finds none, and every
# byte outside the 4 KiB it names is as before (metadata 1.2 at byte 4096,
# 1.0 near the end).  It gathers facts for every member before erasing
# any: a member with no md superblock is refused (unless --force, which
# leaves it alone and says so), and then none of the others is erased
# either; a member named twice is refused.  (Members of running arrays:
# test-raidctl-canary.sh.)
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"

mktmpdir test-raidctl-zero
d=$tmpdir
raidctl=$top_builddir/raidctl/raidctl
# No raidd: raidctl must not find one.
R () { "$raidctl" --control "$d/nowhere.sock" "$@"; }
fail () { echo "$0: FAIL: $*" >&2; exit 1; }
cd "$d"

for f in z0 z1 e0 e1 plain; do truncate -s 20M "$f"; done
head -c 1M /dev/urandom | dd of=plain conv=notrunc status=none
R create z --level 1 --assume-clean --no-start z0 z1 > /dev/null || fail "create z"
R create e --level 1 --metadata 1.0 --assume-clean --no-start e0 e1 > /dev/null ||
  fail "create e"
for f in z0 z1 e0 e1 plain; do cp --sparse=always "$f" "$f.before"; done

# Refused: one member without a superblock, and a member named twice;
# nothing is erased.
R zero z0 plain > out 2> err && fail "zero z0 plain succeeded"
grep -q "member plain has no md superblock" err || fail "zero z0 plain: $(cat err)"
ln -s z1 lz1
R zero z1 lz1 > out 2> err && fail "zero z1 lz1 succeeded"
grep -q "z1 and lz1 are the same file" err || fail "zero z1 lz1: $(cat err)"
for f in z0 z1 plain; do cmp "$f" "$f.before" || fail "a refused zero changed $f"; done

# Erased: the superblock, only.
R zero z0 e0 > out || fail "zero z0 e0: $(cat out)"
grep -q "z0: erased the metadata 1.2 superblock at byte 4096 (of md array z" out ||
  fail "zero z0: $(cat out)"
grep -q "e0: erased the metadata 1.0 superblock" out || fail "zero e0: $(cat out)"
R examine z0 > out 2>&1 && fail "examine z0 still finds a superblock: $(cat out)"
R examine e0 > out 2>&1 && fail "examine e0 still finds a superblock: $(cat out)"
# Every byte that differs lies in the 4 KiB erased (cmp -l: 1-based).
differ () { cmp -l "$1" "$2" || :; }
differ z0 z0.before | awk '$1 <= 4096 || $1 > 8192 { bad = 1 } END { exit bad }' ||
  fail "zero z0 wrote outside its superblock"
at=$(( ($(stat -c %s e0) / 512 - 16) / 8 * 8 * 512 ))
differ e0 e0.before | awk -v at=$at '$1 <= at || $1 > at + 4096 { bad = 1 } END { exit bad }' ||
  fail "zero e0 wrote outside its superblock (at $at)"
cmp z1 z1.before || fail "zero z0 changed z1"

# Again: nothing to erase; --force goes on and says so.
R zero z0 > out 2> err && fail "zero z0 twice succeeded"
grep -q "member z0 has no md superblock" err || fail "zero z0 twice: $(cat err)"
R zero --force z0 plain z1 > out || fail "zero --force: $(cat out)"
grep -q "plain: no md superblock; nothing erased" out || fail "zero --force: $(cat out)"
grep -q "z1: erased the metadata 1.2 superblock" out || fail "zero --force z1: $(cat out)"
cmp plain plain.before || fail "zero --force changed plain"
R zero --help | grep -q "zero \[--force\] \[--json\] MEMBER" || fail "zero --help"
