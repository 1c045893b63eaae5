#!/bin/bash
# Description: arrays with members on NBD servers (nbdkit, started and
# stopped by PID here), through raidd, under fio's nbd engine writing and
# verifying (crc32c) the whole time:
#  - RAID 1 of a local file and a remote member (write-mostly, with
#    write-behind): the server is killed mid-run, the array goes on
#    degraded (the member faulty, fio without an error); the server comes
#    back on the same file and raidd takes the member back by itself
#    within the reconnect window, recovering only the bitmap's dirty
#    chunks (its bytes written, from raidctl stats, well under its size);
#    scrub finds 0 mismatches, and the remote copy's data area equals the
#    local one byte for byte;
#  - the same server back on an empty file: a full recovery;
#  - a split mirror: the remote member, while away, assembled and written
#    alone by a second raidd; when it answers again raidd refuses it and
#    says so, and it stays faulty, its file untouched;
#  - RAID 5 and RAID 10 with one remote member each, and a RAID 1 whose
#    two members are both remote (nbdkit's memory plugin: a restarted
#    server is empty, so it comes back in full); scrub finds 0 mismatches;
#  - a remote member failed by hand (raidctl fail) is not lost and stays
#    failed; remove and add re-add it over the bitmap;
#  - two raidd hosts: a second raidd's array exported to the first as a
#    member; the second raidd stopped and started again with its array,
#    and the first re-adds its export by itself.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires fio --enghelp=nbd
requires nbdkit --version
requires python3 --version
requires qemu-io --version

mktmpdir test-raidd-remote
raidd_env "$tmpdir"

# Servers: srv_start NAME ARGS... serves on $d/NAME.sock; srv_stop NAME.
declare -A srv_pid=()
srv_start () {
  local name=$1; shift
  rm -f "$d/$name.sock" "$d/$name.pid"
  nbdkit -U "$d/$name.sock" -P "$d/$name.pid" "$@" || fail "nbdkit $* did not start"
  for _ in $(seq 100); do [ -s "$d/$name.pid" ] && break; sleep 0.05; done
  srv_pid[$name]=$(cat "$d/$name.pid")
}
srv_stop () {
  [ -n "${srv_pid[$1]:-}" ] || return 0
  kill -9 "${srv_pid[$1]}" 2>/dev/null || :
  for _ in $(seq 100); do
    [ "$(awk '{print $3}' "/proc/${srv_pid[$1]}/stat" 2>/dev/null || echo Z)" = Z ] && break
    sleep 0.05
  done
  srv_pid[$1]=
}
stop_servers () { local n; for n in "${!srv_pid[@]}"; do srv_stop "$n"; done; }
cleanup_fn stop_servers
# The member URI of server NAME.  Servers stopped here close their
# sockets, so nothing waits for the request timeout; it is only long
# enough that a server slowed down by a busy machine is not taken for a
# lost one (3 s was not, in CI).
m_uri () { echo "nbd+unix:///?socket=$d/$1.sock&timeout=15"; }

# state NAME MEMBER: the member's state ("" when it is not a member).
state () { st "$1" "([x['state'] for x in a['members'] if x['path'] == '''$2'''] + [''])[0]"; }
wait_state () {
  for _ in $(seq 600); do
    [ "$(state "$1" "$2")" = "$3" ] && return 0
    sleep 0.05
  done
  fail "$1: member $2 is '$(state "$1" "$2")', not '$3', after 30 s"
}
written () {
  R stats --json "$1" | python3 -c "import json,sys; a=json.load(sys.stdin)
print([m['write_bytes'] for m in a['members'] if m['name'] == '''$2'''][0])"
}


scrub_clean () {
  R scrub "$1" --wait >"$d/scrub.out" 2>&1 || fail "$1: scrub: $(cat "$d/scrub.out")"
  [ "$(st "$1" "a['sync']['mismatches']")" = 0 ] || fail "$1: scrub found mismatches"
}

start_raidd

# ---- RAID 1, local + remote (write-mostly, write-behind) ----------------------
truncate -s 64M "$d/l0.img" "$d/r1.img"
srv_start r1 file "$d/r1.img"
r1=$(m_uri r1)
R create mirror --level 1 --bitmap internal --bitmap-chunk 1M --write-behind \
  --write-mostly "$r1" "$d/l0.img" "$r1" > /dev/null
R wait mirror
[ "$(st mirror "[x['kind'] for x in a['members'] if x['path'] == '''$r1'''][0]")" = nbd ] ||
  fail "the remote member's kind is not nbd"
# The bits the initial resync leaves are cleared after the bitmap's
# daemon sleep (5 s, md's): a member lost before would miss "everything".
wait_clean () {
  for _ in $(seq 300); do [ "$(st "$1" "a['bitmap']['dirty']")" = 0 ] && return 0; sleep 0.1; done
  fail "$1: the bitmap is still dirty after 30 s"
}
wait_clean mirror

# fio writes over the first 8 MiB for 5 s; the server dies after 1.5 s,
# and comes back once fio is done: what the member missed is at most the
# 8 chunks fio wrote (and chunk 0's, the superblock's neighbour).
fio_start mirror 5 8M
sleep 1.5
srv_stop r1                               # the network drops
wait_state mirror "$r1" faulty
grep -q "member $r1.*lost" "$d/raidd.log" || fail "the log does not say the member was lost"
[ "$(st mirror "[x['lost'] for x in a['members'] if x['path'] == '''$r1'''][0]")" = True ] ||
  fail "the status does not say the remote member is lost"
fio_end mirror
srv_start r1 file "$d/r1.img"             # ... and comes back
wait_state mirror "$r1" in_sync
R wait mirror
grep -q "remote member $r1 is back: re-added" "$d/raidd.log" ||
  fail "the log does not say the member was re-added"
back=$(written mirror "$r1")
echo "re-add recovered $back bytes of a 63 MiB data area"
[ "$back" -le $((10 << 20)) ] || fail "the re-add wrote $back bytes: more than the dirty chunks"
scrub_clean mirror
off=$(R examine --json "$d/l0.img" | python3 -c 'import json,sys; e=json.load(sys.stdin)[0]; print(e["data_offset"], e["data_size"])')
set -- $off
R stop mirror >/dev/null
cmp -n "$(( $2 * 512 ))" -i "$(( $1 * 512 )):$(( $1 * 512 ))" "$d/l0.img" "$d/r1.img" ||
  fail "the remote copy differs from the local one"

# ---- the same URI, an empty disk behind it: full recovery ---------------------
R assemble mirror "$d/l0.img" "$r1" > /dev/null
srv_stop r1
fio_start mirror 3 8M
wait_state mirror "$r1" faulty
fio_end mirror
rm -f "$d/r1.img"; truncate -s 64M "$d/r1.img"
srv_start r1 file "$d/r1.img"
wait_state mirror "$r1" in_sync
R wait mirror
grep -q "remote member $r1 is back without a superblock" "$d/raidd.log" ||
  fail "the log does not say the member came back empty"
full=$(written mirror "$r1")
echo "empty member: recovery wrote $full bytes"
[ "$full" -ge $((60 << 20)) ] || fail "an empty member was not recovered in full ($full bytes)"
scrub_clean mirror

# ---- a split mirror is refused ----------------------------------------------------
srv_stop r1
fio_start mirror 2 8M
wait_state mirror "$r1" faulty
fio_end mirror
# A second raidd runs the remote disk alone, and writes to it.
ctl2=$d/control2.sock sock2=$d/nbd2.sock
"$raidd" --foreground --control "$ctl2" --nbd-socket "$sock2" --no-re-add >>"$d/raidd2.log" 2>&1 &
raidd2=$!
stop_raidd2 () { [ -z "${raidd2:-}" ] || { kill_pid "$raidd2"; wait "$raidd2" 2>/dev/null || :; raidd2=; }; }
cleanup_fn stop_raidd2
for _ in $(seq 100); do "$raidctl" --control "$ctl2" status >/dev/null 2>&1 && break; sleep 0.1; done
"$raidctl" --control "$ctl2" assemble mirror "$d/r1.img" --run >/dev/null
qemu-io -f raw -c 'write -P 0x5a 0 1M' "nbd+unix:///mirror?socket=$sock2" >/dev/null
"$raidctl" --control "$ctl2" stop mirror >/dev/null
stop_raidd2
sum=$(md5sum < "$d/r1.img")
srv_start r1 file "$d/r1.img"
for _ in $(seq 600); do                   # raidd tries again at most every 10 s
  grep -q "remote member $r1 answers again, but raidd does not take it back" "$d/raidd.log" && break
  sleep 0.05
done
grep -q "remote member $r1 answers again, but raidd does not take it back.*split mirror" "$d/raidd.log" ||
  fail "a split mirror was not refused with a reason"
sleep 1
[ "$(state mirror "$r1")" = faulty ] || fail "the split mirror did not stay faulty"
[ "$(md5sum < "$d/r1.img")" = "$sum" ] || fail "the split mirror was written to"
R stop mirror >/dev/null
srv_stop r1

# ---- RAID 5, RAID 10 with one remote member; RAID 1 of two remote members ----------
# run_level NAME LEVEL SERVER MEMBER...: SERVER's member is lost and back.
run_level () {
  local name=$1 level=$2 rm=$3; shift 3
  R create "$name" --level "$level" --bitmap internal --bitmap-chunk 1M "$@" > /dev/null
  R wait "$name"
  fio_start "$name" 6 16M
  sleep 1.5
  srv_stop "$rm"
  wait_state "$name" "$(m_uri "$rm")" faulty
  sleep 1
  srv_start "$rm" memory 64M               # empty: a full recovery
  wait_state "$name" "$(m_uri "$rm")" in_sync
  fio_end "$name"
  R wait "$name"
  scrub_clean "$name"
  R stop "$name" > /dev/null
}
truncate -s 64M "$d/p0.img" "$d/p1.img" "$d/t0.img" "$d/t1.img" "$d/t2.img"
srv_start p2 memory 64M
run_level parity 5 p2 "$(m_uri p2)" "$d/p0.img" "$d/p1.img"
srv_stop p2
srv_start t3 memory 64M
run_level stripes 10 t3 "$(m_uri t3)" "$d/t0.img" "$d/t1.img" "$d/t2.img"
srv_stop t3
srv_start b0 memory 64M
srv_start b1 memory 64M
run_level both 1 b1 "$(m_uri b1)" "$(m_uri b0)"
# The drill's verbs on a remote member: one failed by hand (not lost)
# stays failed, raidd does not take it back; remove and add re-add it over
# the bitmap.
b1=$(m_uri b1)
R assemble both "$b1" "$(m_uri b0)" > /dev/null
wait_clean both
R fail both "$b1" > /dev/null
sleep 2
[ "$(state both "$b1")" = faulty ] || fail "a remote member failed by hand did not stay failed"
[ "$(st both "[x['lost'] for x in a['members'] if x['path'] == '''$b1'''][0]")" = False ] ||
  fail "a remote member failed by hand says it is lost"
qemu-io -f raw -c 'write -P 0x33 4M 1M' "nbd+unix:///both?socket=$sock" > /dev/null
R remove both "$b1" > /dev/null
R add both "$b1" > "$d/out"
grep -q "re-added" "$d/out" || fail "add of the removed remote member: $(cat "$d/out")"
R wait both
readd=$(written both "$b1")
[ "$readd" -le $((4 << 20)) ] || fail "the re-add by hand wrote $readd bytes"
scrub_clean both
R stop both > /dev/null
srv_stop b0
srv_stop b1

# ---- two raidd hosts: one raidd's export is a member of the other's array ---------
truncate -s 64M "$d/f0.img" "$d/f1.img" "$d/c0.img"
ctl3=$d/control3.sock sock3=$d/nbd3.sock raidd3=
start_raidd3 () {
  "$raidd" --foreground --control "$ctl3" --nbd-socket "$sock3" >>"$d/raidd3.log" 2>&1 &
  raidd3=$!
  for _ in $(seq 100); do "$raidctl" --control "$ctl3" status >/dev/null 2>&1 && return 0; sleep 0.1; done
  fail "the second raidd did not come up"
}
stop_raidd3 () { [ -z "${raidd3:-}" ] || { kill_pid "$raidd3"; wait "$raidd3" 2>/dev/null || :; raidd3=; }; }
cleanup_fn stop_raidd3
start_raidd3
"$raidctl" --control "$ctl3" create far --level 1 "$d/f0.img" "$d/f1.img" >/dev/null
"$raidctl" --control "$ctl3" wait far
farm="nbd+unix:///far?socket=$sock3&timeout=15"
R create chain --level 1 --bitmap internal "$d/c0.img" "$farm" >/dev/null
R wait chain
fio_start chain 8 8M
sleep 1.5
stop_raidd3                                # the other host goes down
wait_state chain "$farm" faulty
start_raidd3                               # ... and comes back with its array
"$raidctl" --control "$ctl3" assemble far "$d/f0.img" "$d/f1.img" >/dev/null
wait_state chain "$farm" in_sync
fio_end chain
R wait chain
grep -q "remote member $farm is back: re-added" "$d/raidd.log" ||
  fail "the other raidd's export was not re-added"
scrub_clean chain
R stop chain >/dev/null
"$raidctl" --control "$ctl3" scrub far --wait >/dev/null
"$raidctl" --control "$ctl3" stop far >/dev/null
stop_raidd3

echo "test-raidd-remote: OK"
