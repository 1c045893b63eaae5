#!/bin/bash
# Description: md's --write-mostly through raidctl and raidd, with fio and
# nbdcopy as clients.
#  - create --write-mostly marks the member: status shows (W), examine and
#    mdadm --examine say "write-mostly" (superblock devflags bit 0), and it
#    survives a stop and assemble;
#  - random reads at depth 16 all go to the other mirror (raidctl stats);
#    writes go to both;
#  - with the other mirror failed, the write-mostly one serves every read,
#    and the data reads back the same;
#  - add --write-mostly marks an added member; a rebuilt ordinary member
#    then takes every read;
#  - --write-mostly on RAID 5, or naming a file that is not a member, is
#    refused with a message naming the problem;
#  - --write-behind (md's write-behind mode, with a bitmap): writes are
#    acknowledged before a slow write-mostly member (a simulated 2 MiB/s
#    drive) has them, status --json counts the writes behind, examine-bitmap
#    (as mdadm -X: the VM test has md read it) and detail show the limit, a stop waits for what is behind, and
#    the write-mostly member then holds every byte; --write-behind on
#    RAID 5, with --bitmap none, or as "--write-behind 64" is refused.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires fio --enghelp=nbd
requires python3 --version
requires nbdcopy --version

mktmpdir test-raidctl-write-mostly
raidd_env "$tmpdir"
uri="nbd+unix:///wm?socket=$sock"
start_raidd

js () {  # js EXPR: EXPR in python over the JSON stats of wm ("s")
  R stats --json wm > "$d/stats.json" || fail "stats --json wm"
  python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print($1)" "$d/stats.json"
}
check () { [ "$(js "$1")" = True ] || { cat "$d/stats.json" >&2; fail "$2"; }; }
randread () {
  fio --name=wm --ioengine=nbd --uri="$uri" --rw=randread --bs=4k --size=16M \
    --io_size=8M --iodepth=16 --output="$d/fio.out" >/dev/null 2>&1 ||
    { cat "$d/fio.out" >&2; fail "fio randread"; }
}

for i in 0 1 2 3; do truncate -s 40M "$d/m$i"; done

# ---- refusals ---------------------------------------------------------------
R create bad --level 5 --write-mostly "$d/m2" "$d/m0" "$d/m1" "$d/m2" 2>"$d/err" &&
  fail "write-mostly on RAID 5 accepted"
grep -q "applies to mirrors" "$d/err" || fail "RAID 5 error: $(cat "$d/err")"
R create bad --level 1 --write-mostly "$d/nope" "$d/m0" "$d/m1" 2>"$d/err" &&
  fail "write-mostly of a non-member accepted"
grep -q "$d/nope: not one of the members" "$d/err" || fail "non-member error: $(cat "$d/err")"

# ---- create: the flag, in status, examine, mdadm, after reassembly -----------
R create wm --level 1 --assume-clean --write-mostly "$d/m1" "$d/m0" "$d/m1" >/dev/null ||
  fail "create --write-mostly"
R status wm | grep -q "m1\[1\](W)" || fail "no (W) in status: $(R status wm)"
R status wm | grep -q "m0\[0\](W)" && fail "m0 marked (W)"
R examine "$d/m1" | grep -q "Flags : write-mostly" || fail "examine m1: no write-mostly flag"
R examine "$d/m0" | grep -q "Flags : write-mostly" && fail "examine m0 says write-mostly"
if command -v mdadm >/dev/null; then
  mdadm --examine "$d/m1" 2>/dev/null | grep -q "Flags : write-mostly" || fail "mdadm --examine m1: no write-mostly"
fi
nbdcopy -- [ nbdkit pattern size=16M ] "$uri" || fail "nbdcopy pattern in"
R stop wm >/dev/null || fail "stop"
R assemble wm "$d/m0" "$d/m1" >/dev/null || fail "assemble"
R status wm | grep -q "m1\[1\](W)" || fail "(W) lost over stop and assemble: $(R status wm)"

# ---- reads avoid it, writes do not ---------------------------------------------
R stats wm --reset >/dev/null
randread
check "s['array']['read_ops'] >= 2048" "fewer than 2048 reads"
check "[m['read_ops'] for m in s['members']] == [s['array']['read_ops'], 0]" \
  "reads reached the write-mostly member"
fio --name=wm --ioengine=nbd --uri="$uri" --rw=write --bs=64k --offset=16M --size=4M \
  --output="$d/fio.out" >/dev/null 2>&1 || fail "fio write"
check "all(m['write_bytes'] >= 4 << 20 for m in s['members'])" "writes skipped a member"
R stats wm | grep -q "m1\[1\]" || fail "human stats"

# ---- the other mirror fails: the write-mostly one serves ----------------------
nbdcopy "$uri" "$d/before" || fail "nbdcopy out"
R fail wm "$d/m0" >/dev/null || fail "fail m0"
R stats wm --reset >/dev/null
randread
check "s['members'][1]['read_ops'] == s['array']['read_ops'] >= 2048" \
  "the write-mostly member did not serve the reads"
nbdcopy "$uri" "$d/after" || fail "nbdcopy out, degraded"
cmp "$d/before" "$d/after" || fail "data differs when read from the write-mostly member"

# ---- add: an ordinary member takes the reads back; add --write-mostly -------------
R remove wm "$d/m0" >/dev/null || fail "remove m0"
R add wm "$d/m2" >/dev/null || fail "add m2"
R wait wm >/dev/null || fail "wait"
R stats wm --reset >/dev/null
randread
check "[m['read_ops'] for m in s['members'] if m['role'] == 0] == [s['array']['read_ops']]" \
  "the rebuilt ordinary member did not take the reads"
R add wm "$d/m3" --write-mostly >/dev/null || fail "add --write-mostly"
R status --json wm | python3 -c "
import json, sys
a = json.load(sys.stdin)[0]
m = [m for m in a['members'] if (m['path'] or '').endswith('/m3')][0]
assert m['write_mostly'] and m['state'] == 'spare', m" || fail "added member not write-mostly: $(R status wm)"
R add wm "$d/m0" --write-mostly --force >/dev/null 2>&1 || :
R stop wm >/dev/null || fail "stop"

# ---- write-behind ----------------------------------------------------------------
truncate -s 40M "$d/w0" "$d/w1"
slow="sim:$d/w1?bw=2M"
R create bad --level 5 --bitmap internal --write-behind "$d/m0" "$d/m1" "$d/m2" 2>"$d/err" &&
  fail "write-behind on RAID 5 accepted"
grep -q "only RAID 1" "$d/err" || fail "RAID 5 error: $(cat "$d/err")"
R create bad --level 1 --bitmap none --write-behind "$d/m0" "$d/m1" 2>"$d/err" &&
  fail "write-behind without a bitmap accepted"
grep -q "needs the" "$d/err" || fail "no-bitmap error: $(cat "$d/err")"
R create bad --level 1 --bitmap internal --write-behind 64 "$d/m0" "$d/m1" 2>"$d/err" &&
  fail "--write-behind 64 accepted"
grep -q "write-behind=64" "$d/err" || fail "'--write-behind 64' error: $(cat "$d/err")"
# One bitmap chunk (64M, the default) for the whole array: the slow
# member's single data pipe then holds up no bitmap write after the first.
R create wb --level 1 --assume-clean --bitmap internal --write-behind \
  --write-mostly "$slow" "$d/w0" "$slow" >/dev/null || fail "create --write-behind"
R examine-bitmap "$d/w0" | grep -q "Allow write behind, max 256" ||
  fail "examine-bitmap: $(R examine-bitmap "$d/w0")"
R detail wb | grep -q "Write Behind : up to 256 writes" || fail "detail: $(R detail wb)"
head -c 8M /dev/urandom > "$d/wdata"
# 8 MiB: about 4 s for the slow member, a moment for the other.
nbdcopy "$d/wdata" "nbd+unix:///wb?socket=$sock" || fail "nbdcopy to wb"
behind=$(R status --json wb | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['bitmap']['behind_writes'])")
[ "$behind" -gt 0 ] || fail "no write behind right after the copy (slow member keeps none)"
echo "writes behind right after the copy: $behind"
R stop wb >/dev/null || fail "stop wb"
cmp -n 8M -i 0:1M "$d/wdata" "$d/w1" || fail "the write-mostly member lacks what was behind"
cmp -n 8M -i 0:1M "$d/wdata" "$d/w0" || fail "the other member lacks the data"
exit 0
