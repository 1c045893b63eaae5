#!/bin/bash
# Description: the README's "Arrays that come back: the configuration
# file" walk-through, run as it stands: its ```sh blocks marked
# readme-config (tests/readme.sh), raidd and raidctl the build tree's,
# raidd's sockets, pidfile and /var/tmp moved into a private directory.
# Then what it says should be true is checked: examine --scan wrote an
# ARRAY line for scratch, the first restart brought scratch back whole
# with its data, the second waited for the missing disk and started it
# degraded ([3/2]), the disk added back was rebuilt, and the clean-up
# left no array and no file behind.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
. "${top_srcdir:-.}/tests/readme.sh"
requires qemu-io --version

mktmpdir test-readme-config
raidd_env "$tmpdir"
# Like the installed raidd, which returns once it is ready: the configured
# arrays are up by then.
raidd ()
{
  local n
  n=$(grep -c "raidd: ready: " "$d/raidd.log" 2>/dev/null || :)
  start_raidd --pidfile "$d/raidd.pid" "$@"
  for _ in $(seq 300); do
    [ "$(grep -c "raidd: ready: " "$d/raidd.log")" -gt "${n:-0}" ] && return 0
    sleep 0.1
  done
  fail "raidd never said it was ready"
}
raidctl () { R "$@"; }
raidd --config none

readme_script readme-config "$d/walk.sh"
readme_run "$d/walk.sh"

grep -q "^ARRAY /dev/md/scratch  metadata=1.2 UUID=" "$d/out" || fail "no ARRAY line for scratch"
grep -q "scratch: assembled: raid5, 3 of 3 members" "$d/raidd.log" || fail "not back whole"
grep -q "\[3/3\] \[UUU\]" "$d/out" || fail "status after the restart is not [3/3] [UUU]"
grep -q "scratch: only 2 of 3 members present after [0-9]* s; starting it DEGRADED" "$d/raidd.log" ||
  fail "the missing disk was not waited for"
grep -q "\[3/2\] \[UU_\]" "$d/out" || fail "status after the degraded start is not [3/2] [UU_]"
[ "$(grep -c "read 16777216/16777216 bytes" "$d/out")" = 1 ] || fail "the data did not read back"
R status | grep -q scratch && fail "the walk-through left scratch running"
[ ! -e "$d/s0" ] && [ ! -e "$d/raidd.conf" ] || fail "the walk-through left its files"
echo "$0: OK"
