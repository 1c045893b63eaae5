#!/bin/bash
# Description: raidctl grow --array-size (mdadm --grow --array-size)
# through raidd, on a RAID 5 of three 24 MiB file members (each holds
# 23 MiB of data after its data offset, the array 46), over NBD:
#  - the whole array written with random data (nbdcopy); --array-size 16M
#    makes it show 16 MiB: a new NBD connection sees it (nbdinfo), detail
#    says what the members hold beside it (full_size in status --json),
#    a read or a write past it fails and one before it works (qemu-io);
#  - refused, each naming what is wrong, with the members' superblock
#    events and data unchanged: more than the members hold, a bad size,
#    --array-size with --size; a reshape to two members (which hold 23
#    MiB less the 256 KiB each keeps for its data offset to move) while the
#    array shows more than that, the message giving the --array-size to
#    set (23296K);
#  - a bare number is KiB, as mdadm's: 20480 shows 20 MiB;
#  - the members grow and --size max takes the room: what the members hold
#    grows, what the array shows does not (md's external size);
#  - max shows all again, and the whole first 46 MiB read back as written,
#    the bytes past the array size too (nothing was written);
#  - memory only, as md's: after --array-size 8M, stopped and assembled,
#    the array shows all the members hold;
#  - to two members (md's backwards reshape), refused until the array
#    shows what they will hold, with the --array-size the refusal names,
#    then under fio: grow says so, wait sees it end, detail says two
#    members and a spare (the member that left), the array still shows
#    that size, every byte past fio's as written, scrub 0; stopped and
#    assembled again, the same.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires python3 --version
requires qemu-io --version
requires nbdcopy --version
requires nbdinfo --version

mktmpdir test-raidd-array-size
raidd_env "$tmpdir"
start_raidd
size_of () { nbdinfo --size "$(uri "$1")"; }
qio () { qemu-io -f raw -c "$1" "$(uri r5)" 2>&1; }
MIB=$((1 << 20))

m=()
for i in 0 1 2; do truncate -s 24M "$d/m$i"; m+=("$d/m$i"); done
R create r5 --level 5 --chunk 64K --assume-clean "${m[@]}" > /dev/null || fail "create r5"
full=$(st r5 "a['size']")
[ "$full" = $((46 * MIB)) ] || fail "r5 holds $full bytes, not 46 MiB"
# What two members hold after md's backwards reshape: each keeps four
# chunks after its data for the data offset to move later (lib/grow.c).
two=$((full / 2 - 256 * 1024))
head -c "$full" /dev/urandom > "$d/data"
nbdcopy "$d/data" "$(uri r5)" || fail "nbdcopy to r5"

out=$(R grow r5 --array-size 16M) || fail "grow --array-size 16M: $out"
grep -q "array size shrunk from 46.00 MiB to 16.00 MiB, of the 46.00 MiB its members hold" \
  <<< "$out" || fail "grow --array-size 16M said: $out"
[ "$(size_of r5)" = $((16 * MIB)) ] || fail "a new connection sees $(size_of r5) bytes, not 16 MiB"
[ "$(st r5 "a['size']")" = $((16 * MIB)) ] || fail "status: size $(st r5 "a['size']")"
out=$(R detail r5)
grep -q "Array Size : 16384 (16.00 MiB) of 46.00 MiB the members hold (--array-size)" <<< "$out" ||
  fail "detail: $(grep "Array Size" <<< "$out")"
[ "$(st r5 "a['full_size']")" = "$full" ] ||
  fail "status --json has no full_size of $full"
out=$(qio "read 16M 4k") && [[ $out != *error* ]] && fail "a read past the array size worked: $out"
out=$(qio "write 16M 4k") && [[ $out != *error* ]] && fail "a write past the array size worked: $out"
out=$(qio "read -v 0x$(printf %x $((16 * MIB - 4096))) 4k") || fail "a read before the end: $out"
[[ $out != *error* ]] || fail "a read before the end failed: $out"
echo "ok   --array-size 16M: 16 MiB shown and served, the rest refused"

# ---- refusals: each says why, nothing on the members changes ----
settle r5
before=$(snap "${m[@]}")
refused () {
  local says=$1 out
  shift
  if out=$(R grow r5 "$@" 2>&1); then fail "grow r5 $* worked: $out"; fi
  grep -qF -- "$says" <<< "$out" || fail "grow r5 $* said: $out"
}
refused "array size $((48 * MIB)) bytes is more than the $full its members hold" --array-size 48M
refused "bad --array-size 'lots'" --array-size lots
refused "--array-size goes alone" --array-size 8M --size max
R grow r5 --array-size max > /dev/null
refused "a RAID 5 over 2 members holds $two bytes, less than the $full it shows" \
  --raid-devices 2
refused "raidctl grow r5 --array-size $((two >> 10))K" --raid-devices 2
settle r5
[ "$(snap "${m[@]}")" = "$before" ] || fail "a refusal changed a member"
echo "ok   refusals name what is wrong; no member changed"

R grow r5 --array-size 20480 > /dev/null || fail "grow --array-size 20480"
[ "$(size_of r5)" = $((20 * MIB)) ] || fail "--array-size 20480 (KiB) shows $(size_of r5) bytes"
echo "ok   a bare number is KiB"

# ---- the members grow: they hold more, the array shows as much as set ----
for x in "${m[@]}"; do truncate -s 40M "$x"; done
out=$(R grow r5 --size max --assume-clean) || fail "grow --size max: $out"
grown=$(st r5 "a['full_size']")
[ "$grown" -gt "$full" ] || fail "the members hold $grown bytes after --size max, not more than $full"
[ "$(size_of r5)" = $((20 * MIB)) ] || fail "--size max made the array show $(size_of r5) bytes"
echo "ok   --size max grows what the members hold, not what the array shows"

out=$(R grow r5 --array-size max) || fail "grow --array-size max: $out"
[ "$(size_of r5)" = "$grown" ] || fail "max shows $(size_of r5) bytes, not $grown"
rm -f "$d/back"
nbdcopy "$(uri r5)" "$d/back" || fail "nbdcopy from r5"
cmp -n "$full" "$d/data" "$d/back" || fail "the data differs after --array-size max"
echo "ok   max: all $grown bytes shown again, the first $full as written"

R grow r5 --array-size 8M > /dev/null || fail "grow --array-size 8M"
R stop r5 > /dev/null || fail "stop r5"
R assemble r5 "${m[@]}" > /dev/null || fail "assemble r5"
[ "$(size_of r5)" = "$grown" ] || fail "assembled, r5 shows $(size_of r5) bytes, not $grown"
echo "ok   memory only, as md's: assembled, all shown"
R stop r5 > /dev/null

# ---- to two members: md's backwards reshape, under fio ----
R assemble r5 "${m[@]}" > /dev/null || fail "assemble r5"
if out=$(R grow r5 --raid-devices 2 2>&1); then fail "grow --raid-devices 2 worked: $out"; fi
want=$(grep -o -- "--array-size [0-9]*K" <<< "$out") || fail "no --array-size in: $out"
R grow r5 $want > /dev/null || fail "grow r5 $want"
shown=$(size_of r5)
fio_start r5 8 16M
sleep 1
R set r5 rebuild-min=1M rebuild-max=1M > /dev/null
R grow r5 --raid-devices 2 > "$d/out" || fail "grow --raid-devices 2: $(cat "$d/out")"
grep -q "restriping from 3 to 2 members; backwards" "$d/out" ||
  fail "grow --raid-devices 2 said: $(cat "$d/out")"
# mdadm -D's during it: the count it ends with, the three roles still active.
R detail r5 > "$d/out"
grep -q "Raid Devices : 2$" "$d/out" && grep -q "Active Devices : 3$" "$d/out" &&
  grep -q "Delta Devices : -1, (3->2)" "$d/out" || fail "detail during the reshape: $(cat "$d/out")"
R set r5 rebuild-min=0 rebuild-max=0 > /dev/null
R wait r5 > /dev/null || fail "wait r5"
fio_end r5
R detail r5 > "$d/out"
grep -q "Raid Devices : 2" "$d/out" && grep -q -- "-  *spare .*/m2$" "$d/out" ||
  fail "detail after the reshape: $(cat "$d/out")"
[ "$(size_of r5)" = "$shown" ] || fail "r5 shows $(size_of r5) bytes after it, not $shown"
rm -f "$d/back"
nbdcopy "$(uri r5)" "$d/back" || fail "nbdcopy from r5"
cmp -i $((16 * MIB)) -n $((shown - 16 * MIB)) "$d/data" "$d/back" ||
  fail "the data past fio's differs after the reshape to two members"
R scrub r5 --wait | grep -q "mismatch_cnt 0" || fail "scrub after the reshape"
[ "$(ex "${m[0]}" "e['raid_disks']")" = 2 ] || fail "the superblocks do not say 2 members"
R stop r5 > /dev/null || fail "stop r5"
R assemble r5 "${m[@]}" > /dev/null || fail "assemble r5 after the reshape"
R detail r5 | grep -q -- "-  *spare .*/m2$" || fail "assembled: $(R detail r5)"
rm -f "$d/back"
nbdcopy "$(uri r5)" "$d/back" || fail "nbdcopy from r5"
cmp -i $((16 * MIB)) -n $((shown - 16 * MIB)) "$d/data" "$d/back" ||
  fail "the data past fio's differs, assembled again"
echo "ok   to two members, backwards: $shown bytes as written, the third member a spare"
R stop r5 > /dev/null
