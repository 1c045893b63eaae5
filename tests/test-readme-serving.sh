#!/bin/bash
# Description: the README's "Serving arrays" and "Creating and inspecting
# arrays" walk-through, run as it stands where the main job leaves a
# reader: its ```sh blocks marked readme-serving (tests/readme.sh), raidd
# and raidctl the build tree's, raidd's sockets, /var/tmp and /mnt moved
# into a private directory.  Then what it says should be true is checked:
# raidd came up, md0 was made over the four files it made and served
# (nbdinfo, qemu-img), ext4 was made and mounted through nbdfuse and the
# files were on it, status and detail showed md0, the stop found no client
# (nbdfuse had exited), md0 came back from its superblocks, examine read
# a member (text and JSON), and the clean-up left no array, mount, loop
# device, nbdfuse or member file behind, with raidd still up.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
. "${top_srcdir:-.}/tests/readme.sh"
requires_nbd_loop
requires nbdinfo --version
requires qemu-img --version
requires python3 --version

mktmpdir test-readme-serving
raidd_env "$tmpdir"
nbdfuse=
cleanup_fn readme_unmount
raidd () { start_raidd "$@"; }   # like the installed raidd: returns once it answers
raidctl () { R "$@"; }

readme_script readme-serving "$d/walk.sh"
readme_run "$d/walk.sh"

[ -n "$raidd_pid" ] && kill -0 "$raidd_pid" || fail "the walk-through did not start raidd, or it died"
grep -Eq "^[[:space:]]*export-size: [1-9][0-9]* " "$d/out" || fail "nbdinfo did not describe md0"
grep -q "^virtual size: " "$d/out" || fail "qemu-img info did not describe md0"
grep -q " $d/mnt/fs\$" "$d/out" || fail "df did not show the file system mounted"
grep -q "^md0 : active raid5 " "$d/out" && grep -q "\[4/4\] \[UUUU\]" "$d/out" ||
  fail "status did not show md0 as a whole RAID 5"
grep -q "Raid Level : raid5" "$d/out" || fail "detail md0 did not show a RAID 5"
grep -q "Chunk Size : 64K" "$d/out" || fail "detail md0 did not show the 64K chunk"
[ "$(grep -c "md0: stopped" "$d/raidd.log")" = 2 ] ||
  fail "md0 was not stopped twice (after the clients, at the clean-up)"
grep -q "in use by" "$d/raidd.log" "$d/err" && fail "stop found a client still connected"
python3 - "$d/out" <<'PY' || fail "raidctl --json examine printed no JSON document for m2"
import json, sys
text = open(sys.argv[1]).read()
doc, _ = json.JSONDecoder().raw_decode(text[text.index("\n[") + 1:])
assert doc[0]["member"].endswith("/m2") and doc[0]["level"] == "raid5", doc
PY
pid_gone "$nbdfuse" 10 || fail "nbdfuse still runs after the walk-through"
R status | grep -q md0 && fail "the walk-through left md0 running"
awk -v d="$d/" 'index($2, d) == 1' /proc/self/mounts | grep . && fail "the walk-through left mounts"
[ -z "$(loop_devices_under "$d")" ] || fail "the walk-through left loop devices"
[ ! -e "$d/m0" ] && [ ! -e "$d/mnt/md0" ] || fail "the walk-through left its files"
echo "$0: OK"
