#!/bin/bash
# Description: a member file cut short behind raidd's back (issue 33).  For
# RAID 1 (2 members), RAID 5 (3) and RAID 10 (4), over NBD:
#  - under load: fio writes and verifies (crc32c) random 4K blocks while
#    one member file is cut to half its size: fio ends with no error and no
#    verify failure, the member is faulty and lost, and the file is not
#    extended back to its full size (fio stays off the array's last
#    quarter: a write in flight at the cut to a member's last bytes would
#    hide the cut, the case raidd(8) says cannot be seen);
#  - then the whole array is written, read back and compared byte for byte
#    (zero wrong blocks), and read again after the cut file is extended
#    back to its full size behind raidd's back (a hole where its data was):
#    the member stays failed, nothing reads the hole;
#  - a second array of each level, written in full, then cut, then only
#    read: every byte reads back right;
#  - raidd's log names the member and both sizes ("cut short").
# Assembly of an array whose member file is shorter than its data area is
# refused, naming the member ("cut short, or a damaged superblock"); the
# array assembles without it, degraded, and raidctl add refuses the short
# member, naming it and both sizes.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires fio --enghelp=nbd
requires nbdcopy --version
requires python3 --version

mktmpdir test-raidd-shrink
raidd_env "$tmpdir"
# member NAME PATH: "STATE LOST" of that member.
member () {
  st "$1" "' '.join(str(x['state']) + ' ' + str(x.get('lost')) for x in a['members'] if x['path'] == '$2')"
}
# wrong_blocks A B: how many 4 KiB blocks differ between files A and B.
wrong_blocks () {
  python3 - "$1" "$2" <<'EOF'
import sys
a = open(sys.argv[1], 'rb').read()
b = open(sys.argv[2], 'rb').read()
n = min(len(a), len(b))
bad = sum(1 for i in range(0, n, 4096) if a[i:i + 4096] != b[i:i + 4096])
print(bad + (len(a) != len(b)))
EOF
}

start_raidd
size=32M
bytes=$((32 << 20))

for cfg in "r1 1 - 2" "r5 5 64K 3" "r10 10 64K 4"; do
  set -- $cfg
  name=$1 level=$2 chunk=$3 n=$4
  args=(--level "$level" --assume-clean)
  [ "$chunk" != - ] && args+=(--chunk "$chunk")

  # ---- cut under load, then written and read in full, then extended back ----
  m=()
  for i in $(seq 0 $((n - 1))); do truncate -s "$size" "$d/$name-$i"; m+=("$d/$name-$i"); done
  cutm=${m[1]}
  R create "$name" "${args[@]}" "${m[@]}" > /dev/null || fail "create $name"
  asize=$(st "$name" "a['size']")
  fio_start "$name" 4 $((asize * 3 / 4 / 1048576))M 16 randrw
  sleep 1.5
  truncate -s $((bytes / 2)) "$cutm"
  fio_end "$name"
  [ "$(member "$name" "$cutm")" = "faulty True" ] ||
    fail "$name: the cut member is '$(member "$name" "$cutm")', not faulty and lost"
  [ "$(st "$name" "a['degraded'], a['failed']")" = "1 False" ] ||
    fail "$name: degraded/failed: $(st "$name" "a['degraded'], a['failed']")"
  # A write in flight at the cut may extend the file (and fails: the size
  # is looked at when it completes); none reaches the last quarter, where
  # extending it to its full size would hide the cut (man raidd).
  cut_now=$(stat -c %s "$cutm")
  [ "$cut_now" -lt "$bytes" ] || fail "$name: the cut file was extended to its full size"
  # The size named is the one raidd saw: the cut's, or more when such a
  # write landed first (CI once saw 22241280 of a 16777216 cut), never more
  # than the file holds now.
  seen=$(sed -n "s|.*member $cutm: the file is \([0-9]*\) bytes, shorter than the $bytes it had when opened: it was cut short.*|\1|p" \
    "$d/raidd.log" | head -n 1)
  [ -n "$seen" ] || fail "$name: no log line names the cut member and both sizes"
  [ "$seen" -ge $((bytes / 2)) ] && [ "$seen" -le "$cut_now" ] ||
    fail "$name: the log names $seen bytes, not between the cut ($((bytes / 2))) and the file now ($cut_now)"
  grep -F "$name: member $cutm (role 1) failed" "$d/raidd.log" > /dev/null ||
    fail "$name: no log line says the member failed"

  head -c "$asize" /dev/urandom > "$d/data"
  nbdcopy "$d/data" "$(uri "$name")" || fail "$name: nbdcopy into it"
  rm -f "$d/back"
  nbdcopy "$(uri "$name")" "$d/back" || fail "$name: nbdcopy out of it"
  bad=$(wrong_blocks "$d/data" "$d/back")
  [ "$bad" = 0 ] || fail "$name: $bad wrong 4K blocks after the cut"
  [ "$(stat -c %s "$cutm")" = "$cut_now" ] || fail "$name: the failed member's file was written"
  truncate -s "$size" "$cutm"                 # a hole where its data was
  rm -f "$d/back"
  nbdcopy "$(uri "$name")" "$d/back" || fail "$name: nbdcopy out of it"
  bad=$(wrong_blocks "$d/data" "$d/back")
  [ "$bad" = 0 ] || fail "$name: $bad wrong 4K blocks after the cut file grew back"
  [ "$(member "$name" "$cutm")" = "faulty True" ] || fail "$name: the member came back"
  R stop "$name" > /dev/null || fail "stop $name"

  # ---- cut, then only reads ----
  m=()
  for i in $(seq 0 $((n - 1))); do truncate -s "$size" "$d/$name-r$i"; m+=("$d/$name-r$i"); done
  R create "${name}r" "${args[@]}" "${m[@]}" > /dev/null || fail "create ${name}r"
  head -c "$asize" /dev/urandom > "$d/data"
  nbdcopy "$d/data" "$(uri "${name}r")" || fail "${name}r: nbdcopy into it"
  truncate -s $((bytes / 2)) "${m[1]}"
  for pass in 1 2; do
    rm -f "$d/back"
    nbdcopy "$(uri "${name}r")" "$d/back" || fail "${name}r: nbdcopy out of it"
    bad=$(wrong_blocks "$d/data" "$d/back")
    [ "$bad" = 0 ] || fail "${name}r: $bad wrong 4K blocks on read pass $pass after the cut"
  done
  # RAID 5 must read that member; a mirror may serve everything from the other copy.
  if [ "$level" = 5 ]; then
    [ "$(member "${name}r" "${m[1]}")" = "faulty True" ] ||
      fail "${name}r: the cut member is '$(member "${name}r" "${m[1]}")' after reads"
  fi
  [ "$(stat -c %s "${m[1]}")" = $((bytes / 2)) ] || fail "${name}r: the cut file was extended"
  R stop "${name}r" > /dev/null || fail "stop ${name}r"
done

# ---- assembly and add ----
m=()
for i in 0 1 2; do truncate -s "$size" "$d/a-$i"; m+=("$d/a-$i"); done
R create asm --level 5 --chunk 64K --assume-clean "${m[@]}" > /dev/null || fail "create asm"
R stop asm > /dev/null || fail "stop asm"
truncate -s $((bytes / 2)) "${m[1]}"
R assemble asm "${m[@]}" > "$d/out" 2> "$d/err" && fail "assembly over a cut member succeeded"
grep -F "member ${m[1]}: superblock data_offset" "$d/err" > /dev/null &&
  grep -F "sectors ends beyond the member ($((bytes / 2 / 512)) sectors): cut short, or a damaged superblock" "$d/err" > /dev/null ||
  fail "assemble message: $(cat "$d/err")"
R assemble asm --run "${m[0]}" "${m[2]}" > /dev/null || fail "assemble asm without the cut member"
[ "$(st asm "a['degraded']")" = 1 ] || fail "asm: not degraded"
R add asm --force "${m[1]}" > "$d/out" 2> "$d/err" && fail "add of a cut member succeeded"
grep -F "member ${m[1]} is too small: $((bytes / 2)) bytes, array asm needs" "$d/err" > /dev/null ||
  fail "add message: $(cat "$d/err")"
R stop asm > /dev/null || fail "stop asm"
stop_raidd
echo "test-raidd-shrink: ok"
