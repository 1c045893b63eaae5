#!/bin/bash
# Description: protocol misuse against raidd's NBD server, with a raw
# socket client (tests/nbd-misuse.py): unknown options (ERR_UNSUP, never a
# dropped connection), unknown exports (ERR_UNKNOWN), oversized and
# malformed options, out-of-range, misaligned, unknown and oversize
# requests, bad magic, writes to a read-only export, clients dying
# mid-request, silent clients in the handshake; each gets the reply the
# spec asks for or a clean close of that connection only, while a
# bystander connection keeps working and the daemon stays up.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires python3 --version

raidd=$top_builddir/raidd/raidd
raidctl=$top_builddir/raidctl/raidctl
mktmpdir test-raidd-nbd-misuse
d=$tmpdir
R () { "$raidctl" --control "$d/control.sock" "$@"; }
fail () { echo "$0: FAIL: $*" >&2; tail -20 "$d/raidd.log" >&2; exit 1; }

"$raidd" --foreground --control "$d/control.sock" --nbd-socket "$d/nbd.sock" --threads 2 \
  > "$d/raidd.log" 2>&1 &
pid=$!
cleanup_fn kill_pid "$pid"
for _ in $(seq 50); do R status >/dev/null 2>&1 && break; sleep 0.1; done

# md0: 192 MiB of RAID 5 (4 x 64 MiB after the 1 MiB data offset).
for i in 0 1 2 3; do truncate -s 65M "$d/a$i"; done
R create md0 --level 5 --assume-clean "$d"/a{0,1,2,3} >/dev/null
for i in 0 1 2; do truncate -s 17M "$d/b$i"; done
R create md1 --level 5 --chunk 64K --assume-clean "$d"/b{0,1,2} >/dev/null
for i in 0 1; do truncate -s 17M "$d/c$i"; done
R create ro --level 1 --assume-clean --no-start "$d"/c{0,1} >/dev/null
R assemble ro --readonly "$d"/c{0,1} >/dev/null

python3 "$top_srcdir/tests/nbd-misuse.py" "$d/nbd.sock" > "$d/out" 2>&1 ||
  { cat "$d/out"; fail "protocol misuse"; }
grep -c "^ok" "$d/out"
kill -0 "$pid" || fail "raidd died"
grep -q "bad request magic" "$d/raidd.log" || fail "no log line for the bad magic"
R status >/dev/null || fail "raidd stopped answering"
echo "$0: ok"
