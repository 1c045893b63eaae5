#!/bin/bash
# Description: the README's write-mostly example (its ```sh block marked
# readme-write-mostly), run as it stands but on files, not disks: /dev/sdb,
# /dev/sdc and /dev/nvme0n1p3 become files in a private directory (and
# raidd's sockets move there).  Then what it says is checked: the pair
# is made with sdb write-mostly (status tags it (W)) and write-behind
# (detail says up to 256 writes), sdc is added as a spare, tagged (W)(S)
# as mdstat does, and its superblock says write-mostly.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
. "${top_srcdir:-.}/tests/readme.sh"

mktmpdir test-readme-write-mostly
raidd_env "$tmpdir"
start_raidd
raidctl () { R "$@"; }

readme_script readme-write-mostly "$d/walk.sh"
for disk in sdb sdc nvme0n1p3; do
  grep -q "/dev/$disk\b" "$d/walk.sh" || fail "the example does not use /dev/$disk any more"
  truncate -s 64M "$d/$disk"
done
sed -i -E "s#/dev/(sdb|sdc|nvme0n1p3)\b#$d/\1#g" "$d/walk.sh"
! grep -n "/dev/" "$d/walk.sh" || fail "the example uses a disk this test does not make"
readme_run "$d/walk.sh"

R status pair > "$d/status" || fail "pair is not running"
cat "$d/status"
grep -q "$d/sdb\[1\](W)" "$d/status" || fail "status does not tag sdb (W) in role 1"
grep -q "$d/sdc(W)(S)" "$d/status" || fail "status does not show sdc as a write-mostly spare (W)(S)"
R examine "$d/sdc" | grep -q "Flags : write-mostly" || fail "examine sdc: not write-mostly"
R detail pair | grep -q "Write Behind : up to 256 writes" || fail "pair does not write behind: $(R detail pair)"
R stop pair > /dev/null
echo "$0: OK"
