#!/bin/bash
# Description: mdadm's "missing" at create.  raidctl create NAME --level 1
# missing B makes a degraded mirror whose role 0 has no device (examine's
# array state says so, as mdadm's does); data written to it through NBD
# survives raidctl add of a member into that role and its rebuild (the
# new member's data area then equals the survivor's), and a restart.  The
# same for RAID 5 (one missing, the data area checked by a scrub: 0
# mismatches) and RAID 10.  Refused before anything is written: missing
# on RAID 0, more missing roles than the level tolerates, every member
# missing.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires nbdcopy --version

mktmpdir test-missing
raidd_env "$tmpdir"

start_raidd
cd "$d"
for f in m0 m1 m2 m3 n0 n1 n2; do truncate -s 40M "$f"; done
head -c 16M /dev/urandom > pattern

# Refusals: nothing written.
sha256sum m0 m1 m2 > sums
refuse () {
  local pattern=$1 rc=0
  shift
  R "$@" > out 2> err || rc=$?
  [ $rc != 0 ] || fail "raidctl $* succeeded (must be refused)"
  grep -q -- "$pattern" err || fail "raidctl $*: expected '$pattern', got: $(cat err)"
  sha256sum -c --quiet sums || fail "raidctl $* wrote to a member"
}
refuse "RAID 0 has no redundancy" create z --level 0 m0 missing
refuse "2 of 3 members missing" create z --level 5 m0 missing missing
refuse "2 of 4 members missing" create z --level 10 missing missing m0 m1
refuse "every member is missing" create z --level 1 missing missing

# RAID 1: "missing" first, as in mdadm's examples.
R create mir --level 1 missing m0 > out || fail "create mir: $(cat out)"
grep -q "1 of them missing" out || fail "create mir does not say it is degraded: $(cat out)"
R examine m0 > out
grep -q "Array State : \.A" out || fail "examine m0 does not show role 0 missing: $(cat out)"
R status mir | grep -q "\[2/1\] \[_U\]" || fail "mir is not degraded: $(R status mir)"
nbdcopy pattern "$(uri mir)" || fail "nbdcopy to mir"
R add mir m1 > out || fail "add m1: $(cat out)"
grep -q "in role 0: rebuilding" out || fail "add m1: $(cat out)"
R wait mir > /dev/null || fail "rebuild of mir"
R status mir | grep -q "\[2/2\] \[UU\]" || fail "mir not whole after the rebuild: $(R status mir)"
# The rebuilt member's data area is the survivor's (data at 1 MiB).
cmp <(tail -c +1048577 m0) <(tail -c +1048577 m1) || fail "mir: m1 differs from m0"
R stop mir > /dev/null
R assemble mir m0 m1 > /dev/null || fail "assemble mir"
nbdcopy "$(uri mir)" readback
cmp -n $((16 << 20)) pattern readback || fail "mir: data changed"
R stop mir > /dev/null

# rebuild_check NAME STATE MEMBER [ADD-OPTION...]: add MEMBER to the
# degraded array NAME, wait for the rebuild, check that status shows STATE
# (whole), that a scrub finds 0 mismatches and that the pattern reads
# back; stop NAME.
rebuild_check () {
  local name=$1 state=$2
  shift 2
  R add "$name" "$@" > out || fail "add $1 to $name: $(cat out)"
  R wait "$name" > /dev/null || fail "rebuild of $name"
  R status "$name" | grep -q "$state" || fail "$name not whole: $(R status "$name")"
  R scrub "$name" --wait > out || fail "scrub $name"
  grep -q "mismatch_cnt 0" out || fail "$name after the rebuild: $(cat out)"
  nbdcopy "$(uri "$name")" readback
  cmp -n $((16 << 20)) pattern readback || fail "$name: data changed"
  R stop "$name" > /dev/null
}

# RAID 5 with its middle role missing.
R create par --level 5 --chunk 64K m2 missing m3 > out || fail "create par: $(cat out)"
R examine m2 | grep -q "Array State : A\.A" || fail "examine m2: $(R examine m2)"
nbdcopy pattern "$(uri par)" || fail "nbdcopy to par"
rebuild_check par "\[3/3\] \[UUU\]" n0

# RAID 10, near 2, one copy of the first pair missing.
R create ten --level 10 --chunk 64K missing n1 n2 m1 --force > out || fail "create ten: $(cat out)"
R wait ten > /dev/null
nbdcopy pattern "$(uri ten)" || fail "nbdcopy to ten"
rebuild_check ten "\[4/4\] \[UUUU\]" m0 --force
