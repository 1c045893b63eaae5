#!/bin/bash
# Description: the README's "Mirror a disk to another machine"
# walk-through, run as it stands: the blocks marked readme-remote
# (tests/readme.sh moves /var/tmp and raidd's sockets into the test's own
# directory; port 10849 becomes a free one).  An nbdkit with TLS-PSK as
# the far member of a RAID 1 written behind; the far server killed, the
# pair written alone ([2/1] [U_]); the server back, raidd re-adds the
# member by itself, rebuilding only what changed, and the pair ends whole
# ([2/2] [UU]) with 0 mismatches.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
. "${top_srcdir:-.}/tests/readme.sh"
requires nbdkit --version
requires nbdcopy --version
requires qemu-io --version
requires psktool --version
requires python3 --version

mktmpdir test-readme-remote
raidd_env "$tmpdir"
# The walk-through's nbdkit, should it stop half-way.
stop_far () { [ ! -s "$d/far.pid" ] || kill_pid "$(cat "$d/far.pid")"; }
cleanup_fn stop_far
start_raidd
raidctl () { R "$@"; }

readme_script readme-remote "$d/walk.sh"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -i "s|10849|$port|g" "$d/walk.sh"
readme_run "$d/walk.sh"

grep -q "\[2/1\] \[U_\]" "$d/out" || fail "status with the far side gone is not [2/1] [U_]"
grep -q "remote member nbds://mirror@localhost:$port/?tls-psk-file=$d/mirror.psk is back: re-added" "$d/raidd.log" ||
  fail "raidd did not re-add the far member by itself"
grep -q "check done: mismatch_cnt 0" "$d/out" || fail "scrub did not find 0 mismatches"
grep -q "\[2/2\] \[UU\]" "$d/out" || fail "the pair is not whole at the end"
R status | grep -q pair && fail "the walk-through left the pair running"
[ ! -e "$d/far.img" ] || fail "the walk-through left its disks"
echo "$0: OK"
