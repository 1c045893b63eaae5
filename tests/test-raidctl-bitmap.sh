#!/bin/bash
# Description: raidctl create --bitmap internal|none [--bitmap-chunk SIZE]
# and raidctl examine-bitmap.  An internal bitmap is where mdadm puts it
# (examine: feature 0x1, 8 sectors after a 1.2 superblock, 16 before a
# 1.0 one), examine-bitmap prints it like mdadm -X (version 4, the array's
# UUID, the chunk asked for, the bits, none dirty after a clean stop) and
# as JSON; mdadm's default gives members over 100 GiB a 64 MiB-chunk
# bitmap and small ones none; RAID 0 with a bitmap, a bad mode, a chunk
# that is no power of two or too small for the space md keeps, and a
# chunk without a bitmap are refused with a message and nothing written.
# Running in raidd: status shows /proc/mdstat's bitmap line, detail
# "Intent Bitmap : Internal", no bit set on disk while an array created
# --assume-clean runs unwritten (bits are set chunk by chunk by writes,
# tests/test-bitmap.c) and none after stop; assembly refuses a member whose bitmap is damaged,
# naming it, and writes nothing; a member failed, removed and added back
# (a re-add: no --force) is rebuilt over the chunks written while it was
# away only.  raidctl set NAME bitmap=internal
# [bitmap-chunk=SIZE] adds one to a running array (status shows it, every
# bit set on disk, none after stop) and bitmap=none removes it; a second
# one, removing none and a chunk without a bitmap are refused.  Last, the README's bitmap walk-through
# (its ```sh block marked raidctl-bitmap) runs as it stands, on files in
# the test's directory, and says what it claims.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
. "${top_srcdir:-.}/tests/readme.sh"
requires qemu-io --version

mktmpdir test-raidctl-bitmap
raidd_env "$tmpdir"
cd "$d"
# No raidd yet: the offline half must not find one.
O () { "$raidctl" --control "$d/nowhere.sock" "$@"; }
field () { sed -n "s/^ *$1 : //p"; }

for f in a0 a1 a2 b0 b1 c0 c1 z0 z1; do truncate -s 20M "$f"; done

# ---- offline: create, examine, examine-bitmap ---------------------------------
O create a --level 5 --bitmap internal --bitmap-chunk 1M --assume-clean --no-start \
  a0 a1 a2 > out || fail "create a: $(cat out)"
grep -q "a has an internal write-intent bitmap: 19 bits of 1.00 MiB" out || fail "create a: $(cat out)"
O examine a1 > ex
[ "$(field 'Feature Map' < ex)" = 0x1 ] || fail "examine a1: $(cat ex)"
[ "$(field 'Internal Bitmap' < ex)" = "8 sectors from superblock" ] || fail "examine a1: $(cat ex)"
O examine-bitmap a1 > x || fail "examine-bitmap a1: $(cat x)"
[ "$(field Magic < x)" = 6d746962 ] && [ "$(field Version < x)" = 4 ] &&
  [ "$(field UUID < x)" = "$(field 'Array UUID' < ex)" ] &&
  [ "$(field Chunksize < x)" = "1 MB" ] && [ "$(field State < x)" = OK ] &&
  [ "$(field Daemon < x)" = "5s flush period" ] && [ "$(field 'Write Mode' < x)" = Normal ] &&
  [ "$(field 'Sync Size' < x)" = "19456 (19.00 MiB 19.92 MB)" ] &&
  [ "$(field Bitmap < x)" = "19 bits (chunks), 0 dirty (0.0%)" ] || fail "examine-bitmap a1: $(cat x)"
O --json examine-bitmap a0 a2 | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert len(r) == 2, r
for b in r:
    assert b["version"] == 4 and b["chunk_size"] == 1 << 20 and b["bits"] == 19, b
    assert b["dirty"] == 0 and b["bitmap_offset"] == 4096 and b["events"] == b["events_cleared"], b
' || fail "examine-bitmap --json"
O --json examine a0 | python3 -c '
import json, sys
e = json.load(sys.stdin)[0]
assert e["bitmap"] == "internal" and e["bitmap_offset"] == 4096, e
' || fail "examine --json bitmap"

# Metadata 1.0: before the superblock, with mdadm's 8 sectors between.
O create b --level 1 --metadata 1.0 --bitmap internal --assume-clean --no-start b0 b1 \
  > out || fail "create b: $(cat out)"
[ "$(O examine b0 | field 'Internal Bitmap')" = "-16 sectors from superblock" ] ||
  fail "examine b0: $(O examine b0)"
[ "$(O examine-bitmap b0 | field Chunksize)" = "64 MB" ] || fail "examine-bitmap b0"

# mdadm's default: none on small members.
O create c --level 1 --assume-clean --no-start c0 c1 > out || fail "create c: $(cat out)"
[ "$(O examine c0 | field 'Feature Map')" = 0x0 ] || fail "examine c0: $(O examine c0)"
O examine-bitmap c0 > out 2>&1 && fail "examine-bitmap c0 succeeded: $(cat out)"
grep -q "member c0 has no internal bitmap (feature map 0x0)" out || fail "examine-bitmap c0: $(cat out)"

# ... and one with 64 MiB chunks on members over 100 GiB (sparse files).
truncate -s 101G big0 big1
O create big --level 1 --assume-clean --no-start big0 big1 > out || fail "create big: $(cat out)"
[ "$(O examine-bitmap big1 | field Bitmap)" = "1616 bits (chunks), 0 dirty (0.0%)" ] ||
  fail "examine-bitmap big1: $(O examine-bitmap big1)"
[ "$(O examine-bitmap big1 | field Chunksize)" = "64 MB" ] || fail "big1's chunk"
rm -f big0 big1

# ---- refusals: nothing written ---------------------------------------------------------
cp z0 z0.before
O create z --level 0 --bitmap internal --no-start z0 z1 > out 2>&1 && fail "RAID 0 with a bitmap"
grep -q "RAID 0 has no copies or parity to resync, md allows no write-intent bitmap" out ||
  fail "RAID 0 with a bitmap: $(cat out)"
O create z --level 1 --bitmap file --no-start z0 z1 > out 2>&1 && fail "--bitmap file"
grep -q "'file' is not internal or none" out || fail "--bitmap file: $(cat out)"
O create z --level 1 --bitmap-chunk 3K --no-start z0 z1 > out 2>&1 && fail "--bitmap-chunk 3K"
grep -q "must be a power of two" out || fail "--bitmap-chunk 3K: $(cat out)"
O create z --level 1 --bitmap none --bitmap-chunk 1M --no-start z0 z1 > out 2>&1 &&
  fail "--bitmap none --bitmap-chunk"
grep -q "with --bitmap none: there is no bitmap" out || fail "none with a chunk: $(cat out)"
O create z --level 1 --bitmap-chunk 1M --no-start z0 z1 > out 2>&1 && fail "a chunk, no bitmap"
grep -q "bitmap-chunk but no bitmap" out || fail "a chunk, no bitmap: $(cat out)"
truncate -s 9G h0 h1
cp --sparse=always h0 h0.before
O create h --level 1 --bitmap internal --bitmap-chunk 4K --no-start h0 h1 > out 2>&1 &&
  fail "a 4K chunk on 9 GiB members (64 KiB of room: 32K chunks at least)"
grep -q "bitmap chunk 4096 bytes is too small: its bits would not fit the 64 KiB md keeps" out ||
  fail "4K chunk: $(cat out)"
cmp h0 h0.before || fail "a refused create wrote h0"
rm -f h0 h1 h0.before
cmp z0 z0.before || fail "a refused create wrote z0"

# ---- in raidd ----------------------------------------------------------------------
start_raidd
R create r --level 1 --bitmap internal --bitmap-chunk 1M --assume-clean z0 z1 > out ||
  fail "create r: $(cat out)"
R status r > st
# md's line: no page holds a set bit yet (created clean, not written).
grep -q "^      bitmap: 0/1 pages \[0KB\], 1024KB chunk$" st || fail "status r: $(cat st)"
R detail r > det
[ "$(field 'Intent Bitmap' < det)" = Internal ] || fail "detail r: $(cat det)"
[ "$(field 'Bitmap Chunk' < det)" = "1024K, 0 of 19 chunks dirty" ] || fail "detail r: $(cat det)"
R --json detail r | python3 -c '
import json, sys
b = json.load(sys.stdin)["bitmap"]
assert b["chunk_size"] == 1 << 20 and b["chunks"] == 19 and b["dirty"] == 0, b
' || fail "detail --json bitmap"
# Running, created clean and not written: no bit set on disk (a write
# sets its chunks' bits before it reaches a member).
[ "$(O examine-bitmap z1 | field Bitmap)" = "19 bits (chunks), 0 dirty (0.0%)" ] ||
  fail "running r: $(O examine-bitmap z1)"
R stop r > /dev/null || fail "stop r"
[ "$(O examine-bitmap z1 | field Bitmap)" = "19 bits (chunks), 0 dirty (0.0%)" ] ||
  fail "stopped r: $(O examine-bitmap z1)"

# A damaged bitmap: assembly names the member and what is wrong.
printf 'X' | dd of=z1 bs=1 seek=$((16 * 512)) conv=notrunc status=none
cp z0 z0.before
cp z1 z1.before
R assemble r z0 z1 > out 2>&1 && fail "assembled with a damaged bitmap"
grep -q "$d/z1: no bitmap superblock (magic 0x6d746958, expected 0x6d746962)" out ||
  fail "damaged bitmap: $(cat out)"
cmp z0 z0.before && cmp z1 z1.before || fail "a refused assembly wrote a member"
printf 'b' | dd of=z1 bs=1 seek=$((16 * 512)) conv=notrunc status=none
R assemble r z0 z1 > out 2>&1 || fail "assemble r: $(cat out)"
R stop r > /dev/null

# ---- re-add: a member back by a plain add is rebuilt over the set bits only ------
# r (RAID 1 over 19 chunks of 1 MiB): z1 fails and is removed, 1 MiB is
# written at 8 MiB while it is away, and raidctl add takes it back (no
# --force: its superblock names r) into its old role; the rebuild writes
# the chunks whose bits are set (the write at 8 MiB, and the one at 0
# whose bit daemon_sleep has not cleared yet: two 1 MiB pieces) and the
# metadata, not 19 MiB.
R assemble r z0 z1 > /dev/null
qemu-io -f raw "nbd+unix:///r?socket=$sock" -c "write -P 0x5a 0 1M" > /dev/null
R fail r "$d/z1" > /dev/null && R remove r "$d/z1" > /dev/null || fail "fail and remove z1"
qemu-io -f raw "nbd+unix:///r?socket=$sock" -c "write -P 0xa5 8M 1M" > /dev/null
R add r z1 > out || fail "re-add z1: $(cat out)"
grep -q "re-added $d/z1 to r in role 1: rebuilding" out || fail "re-add z1: $(cat out)"
R wait r > /dev/null
written=$(R --json stats r | python3 -c '
import json, sys
print([m for m in json.load(sys.stdin)["members"] if m["name"].endswith("/z1")][0]["write_bytes"])')
[ "$written" -le $((3 << 20)) ] || fail "re-add of z1 wrote $written bytes: a full rebuild, not the set bits"
R scrub r --wait | grep -q "mismatch_cnt 0" || fail "scrub after the re-add"
R stop r > /dev/null
# z1's data (from 1 MiB: metadata 1.2's data offset) is z0's again.
[ "$(O examine z1 | field 'Data Offset')" = "2048 sectors" ] || fail "z1: $(O examine z1)"
cmp -i $((1 << 20)):$((1 << 20)) z1 z0 || fail "the re-added z1 differs from z0"
echo "re-add of z1: $written bytes written to it (19 MiB in full)"

# ---- set NAME bitmap=internal|none on a running array ------------------------------
R create g --level 1 --bitmap none --assume-clean --force c0 c1 > out 2>&1 || fail "create g: $(cat out)"
R set g bitmap-chunk=1M > out 2>&1 && fail "a chunk without a bitmap"
grep -q "bitmap_chunk needs bitmap: internal" out || fail "chunk alone: $(cat out)"
R set g bitmap=none > out 2>&1 && fail "removing no bitmap"
grep -q "array g has no write-intent bitmap to remove" out || fail "remove none: $(cat out)"
R set g bitmap=internal bitmap-chunk=1M > out || fail "set g bitmap=internal: $(cat out)"
grep -q "g: write-intent bitmap added" out || fail "set g: $(cat out)"
R status g | grep -q "bitmap: 1/1 pages \[4KB\], 1024KB chunk" || fail "status g: $(R status g)"
[ "$(O examine-bitmap c1 | field Bitmap)" = "19 bits (chunks), 19 dirty (100.0%)" ] ||
  fail "grown g: $(O examine-bitmap c1)"
R set g bitmap=internal > out 2>&1 && fail "a second bitmap"
grep -q "has a write-intent bitmap already" out || fail "second bitmap: $(cat out)"
R stop g > /dev/null
[ "$(O examine-bitmap c1 | field Bitmap)" = "19 bits (chunks), 0 dirty (0.0%)" ] ||
  fail "stopped g: $(O examine-bitmap c1)"
R assemble g c0 c1 > out 2>&1 || fail "assemble g: $(cat out)"
R set g bitmap=none > out || fail "set g bitmap=none: $(cat out)"
[ "$(O examine c0 | field 'Feature Map')" = 0x0 ] || fail "g still has a bitmap: $(O examine c0)"
R status g | grep -q "bitmap:" && fail "status g still shows a bitmap"
R stop g > /dev/null

# ---- the README's walk-through --------------------------------------------------------
raidctl () { R "$@"; }
readme_script raidctl-bitmap "$d/walk.sh"
readme_run "$d/walk.sh" > walk.out
grep -q "bitmap: 1/1 pages \[4KB\], 4096KB chunk" walk.out || fail "walk-through status: $(cat walk.out)"
grep -q "Bitmap : 16 bits (chunks), 16 dirty (100.0%)" walk.out || fail "walk-through running: $(cat walk.out)"
grep -q "Bitmap : 16 bits (chunks), 0 dirty (0.0%)" walk.out || fail "walk-through stopped: $(cat walk.out)"
stop_raidd
