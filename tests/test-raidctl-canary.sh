#!/bin/bash
# Description: no verb that writes to members can damage a running array.
# A canary RAID 5 over four files runs in raidd with a known pattern
# written through NBD (nbdcopy); the sha256 of each of its members is
# recorded.  Then every refused form of create, add, replace and zero is
# run against it: its members named plainly, with --force, --no-start and
# --assume-clean, through a symlink and through another relative path;
# its name for a new array; a member named twice (same path, symlink);
# add and replace of its members into another array; add and replace into
# a read-only array (the new member, an old md member, must not be wiped);
# zero of its members; assemble of its name (with --force too) and of its
# members into a new array; fail and remove of its members named on
# another array; and, with raidd not reachable on the control
# socket, the member lock raidd holds.  Each must exit non-zero with a
# message naming the member or the array, and after each the canary's
# members (and the other files involved) must be byte-identical.  At the
# end the canary is stopped, raidd restarted, the canary assembled again
# with all four members, and the pattern reads back.  With loop devices
# (root, losetup), the same over a canary on loop devices: O_EXCL and
# st_rdev instead of flock and inodes, and the loop devices' backing files
# named instead (that part is skipped, not the test, when loop devices
# cannot be set up).
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires nbdcopy --version
requires sha256sum --version

mktmpdir test-raidctl-canary
raidd_env "$tmpdir"

start_raidd
cd "$d"
for i in 0 1 2 3; do truncate -s 40M "k$i"; done
for f in a0 a1 b0 b1 r0 r1; do truncate -s 40M "$f"; done
ln -s k1 lk1
ln -s a0 la0
mkdir sub

R create canary --level 5 --chunk 64K k0 k1 k2 k3 > out || fail "create canary: $(cat out)"
R wait canary > /dev/null || fail "initial resync of canary"
head -c 24M /dev/urandom > pattern
nbdcopy pattern "$(uri canary)" || fail "nbdcopy to canary"
R wait canary > /dev/null

# b0 and b1: an old, stopped md array, so that a wipe would show.
R create old --level 1 --assume-clean --no-start b0 b1 > /dev/null || fail "create old"
# ro: a read-only array (assembled --readonly).
R create ro --level 1 --assume-clean --no-start r0 r1 > /dev/null || fail "create ro"
R assemble ro r0 r1 --readonly > /dev/null || fail "assemble ro --readonly"
# other: a degraded mirror that would take a new member.
R create other --level 1 a1 missing > out || fail "create other: $(cat out)"

# wait_clean NAME...: raidd's safe mode writes the superblocks of an array
# clean 200 ms after its last write (and after its assembly); from then
# on an idle array's members stay byte-identical.
wait_clean () {
  local a i
  for a in "$@"; do
    for (( i = 0; i < 100; i++ )); do
      R detail "$a" | grep -q "State : clean$" && break
      sleep 0.1
    done
    R detail "$a" | grep -q "State : clean$" || fail "$a not clean after 10 s idle: $(R detail "$a")"
  done
}
wait_clean canary ro

sums () { sha256sum k0 k1 k2 k3 a0 b0 b1 r0 r1; }
sums > sums.before

n=0
# refuse PATTERN ARGS...: raidctl ARGS must fail saying PATTERN, and leave
# every member above as it was.
refuse () {
  local pattern=$1 rc=0
  shift
  n=$((n + 1))
  R "$@" > out 2> err || rc=$?
  [ $rc != 0 ] || fail "raidctl $* succeeded (must be refused): $(cat out)"
  grep -q -- "$pattern" err || fail "raidctl $*: expected '$pattern', got: $(cat err)"
  sums > sums.after
  cmp -s sums.before sums.after ||
    fail "raidctl $* changed a member: $(diff sums.before sums.after)"
}

# create over the canary's members, every way of naming them.
refuse "member k0 is in running array canary" create x --level 1 k0 a0
refuse "member k0 is in running array canary" create x --level 1 --force k0 a0
refuse "member k1 is in running array canary" create x --level 1 --force --no-start a0 k1
refuse "member k1 is in running array canary" create x --level 1 --force --assume-clean a0 k1
refuse "member lk1 is in running array canary" create x --level 1 --force a0 lk1
refuse "member sub/../k2 is in running array canary" create x --level 1 --force a0 sub/../k2
refuse "member ./k3 is in running array canary" create x --level 5 --force --no-start --assume-clean b0 b1 ./k3
refuse "member $d/k0 is in running array canary" create x --level 1 --force "$d/k0" a0
# the canary's name.
refuse "an array named canary is already running" create canary --level 1 a0 b0
refuse "an array named canary is already running" create canary --level 1 --force --no-start a0 b0
# a member named twice.
refuse "a0 and a0 are the same file" create dup --level 1 --force a0 a0
refuse "a0 and la0 are the same file" create dup --level 1 --force a0 la0
refuse "la0 and ./a0 are the same file" create dup --level 1 --force --no-start la0 ./a0
# add and replace: the canary's members into another array, or its own.
refuse "member k0 is in running array canary" add other k0
refuse "member lk1 is in running array canary" add other --force lk1
refuse "member k2 is in running array canary" add canary --force k2
refuse "member k3 is in running array canary" replace canary k0 k3
refuse "member lk1 is in running array canary" replace canary k0 --force lk1
# add and replace into a read-only array: b0 (an old md member) untouched.
refuse "array ro is read-only" add ro b0
refuse "array ro is read-only" add ro --force b0
refuse "array ro is read-only" replace ro r0 --force b0
refuse "array nosuch is not running" add nosuch --force b0
# b0 holds another array's superblock: refused without --force.
refuse "member b0 belongs to md array old" add other b0
# zero of the canary's members.
refuse "member k0 is in running array canary" zero k0
refuse "member lk1 is in running array canary" zero --force lk1
refuse "member k2 is in running array canary" zero b0 k2

# assemble, fail and remove naming the canary or its members elsewhere.
refuse "array canary is already running" assemble canary k0 k1 k2 k3
refuse "array canary is already running" assemble canary k0 k1 k2 k3 --force
refuse "k0 is already in running array canary" assemble x k0 k1 --run
refuse "k1 is already in running array canary" assemble x a0 lk1 --run --force
refuse "array other has no member $d/k0" fail other k0 --force
refuse "array other has no member $d/k1" remove other lk1 --force
# raidd not reachable here (another socket): the lock it holds refuses.
refuse "member k0 is in use by another process" --control "$d/nowhere.sock" create x --level 1 --force k0 a0
refuse "member k1 is in use by another process" --control "$d/nowhere.sock" zero k1
echo "$0: $n refused forms, the canary unchanged"

# The canary survives a restart and reads back.
R stop canary > /dev/null || fail "stop canary"
stop_raidd
start_raidd
R assemble canary k0 k1 k2 k3 > out || fail "assemble canary: $(cat out)"
R status canary > out
grep -q "\[4/4\] \[UUUU\]" out || fail "canary not whole after the restart: $(cat out)"
nbdcopy "$(uri canary)" readback || fail "nbdcopy from canary"
cmp -n $((24 << 20)) pattern readback || fail "the canary's data changed"
R stop canary > /dev/null
rm -f readback
R assemble other a1 > /dev/null || fail "assemble other again"

# ---- the same on loop devices -----------------------------------------------------
loops=()
detach_loops () {
  local l
  for l in "${loops[@]}"; do losetup -d "$l" 2>/dev/null || :; done
}
loop_variant () {
  local i l
  [ "$(id -u)" = 0 ] || { echo "$0: loop variant skipped: not root"; return 0; }
  command -v losetup > /dev/null || { echo "$0: loop variant skipped: no losetup"; return 0; }
  [ -e /dev/loop-control ] || { echo "$0: loop variant skipped: no /dev/loop-control"; return 0; }
  cleanup_fn detach_loops
  for i in 0 1 2 3; do
    truncate -s 40M "lf$i"
    l=$(losetup --find --show "$d/lf$i" 2>/dev/null) ||
      { echo "$0: loop variant skipped: losetup cannot attach a loop device"; return 0; }
    loops+=("$l")
  done
  R create lcanary --level 5 --chunk 64K "${loops[@]}" > out || fail "create lcanary: $(cat out)"
  R wait lcanary > /dev/null
  nbdcopy pattern "$(uri lcanary)" || fail "nbdcopy to lcanary"
  R wait lcanary > /dev/null
  wait_clean lcanary
  ln -s "${loops[1]}" lloop1
  sums () { sha256sum "${loops[@]}" a0; }
  sums > sums.before
  refuse "member ${loops[0]} is in running array lcanary" create x --level 1 --force "${loops[0]}" a0
  refuse "member ${loops[0]} is in running array lcanary" create x --level 1 --force --no-start a0 "${loops[0]}"
  refuse "member lloop1 is in running array lcanary" create x --level 1 --force a0 lloop1
  refuse "${loops[1]} and lloop1 are the same device" create x --level 1 --force "${loops[1]}" lloop1
  refuse "member ${loops[2]} is in running array lcanary" add other --force "${loops[2]}"
  refuse "member ${loops[3]} is in running array lcanary" zero "${loops[3]}"
  refuse "member lf0 is the backing file of loop device ${loops[0]}" create x --level 1 --force lf0 a0
  refuse "member lf2 is the backing file of loop device ${loops[2]}" zero --force a0 lf2
  refuse "device ${loops[0]} is in use" --control "$d/nowhere.sock" create x --level 1 --force "${loops[0]}" a0
  refuse "device ${loops[3]} is in use" --control "$d/nowhere.sock" zero "${loops[3]}"
  R stop lcanary > /dev/null || fail "stop lcanary"
  R assemble lcanary "${loops[@]}" > /dev/null || fail "assemble lcanary again"
  nbdcopy "$(uri lcanary)" readback || fail "nbdcopy from lcanary"
  cmp -n $((24 << 20)) pattern readback || fail "lcanary's data changed"
  R stop lcanary > /dev/null
  detach_loops
  loops=()
  echo "$0: loop variant done"
}
loop_variant
R stop other > /dev/null
