#!/bin/bash
# Description: drive-failure drills through raidd, while fio's nbd engine
# writes and verifies (crc32c, verify_backlog) the whole time.  For RAID 1,
# 5 and 10:
#  - raidctl fail mid-run, then raidctl add of a fresh member: the rebuild
#    runs under load, raidctl wait, a scrub finds 0 mismatches (which, with
#    the survivors unchanged, proves the rebuilt member holds exactly what
#    the layout puts there; for RAID 1 its data area is also compared with
#    the survivor's byte for byte);
#  - a member that starts returning EIO mid-run (nbdkit's error filter
#    behind nbdfuse) is failed on its own;
#  - raidctl replace of a working member: the status never shows the array
#    degraded during the copy, and the old member is retired after it;
#  - fio ends with zero verify errors every time.
# Then: SIGKILL of raidd half-way through a rebuild, with a client writing,
# leaves a dirty degraded RAID 5 (idle, safe mode would have left it
# clean), which assembly refuses without --force (as md does); forced, the
# rebuild resumes from the checkpoint (past zero), and the data verifies; a hot
# spare takes over without any command; a member failed and removed comes
# back with a plain add (a re-add: no --force); a corruption planted in a member
# file is found by scrub (mismatch_cnt 8: one 4 KiB block) and fixed by
# --repair; RAID 0 losing a member fails writes with EIO and says so;
# a udev "remove" event for a loop-device member fails it; the verbs'
# errors name what is wrong.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires fio --enghelp=nbd
requires nbdkit --version
requires nbdkit --filter=error null --version
requires nbdfuse --version
requires qemu-io --version
requires nbdcopy --version
requires python3 --version
requires_file /dev/fuse

mktmpdir test-raidd-drill
raidd_env "$tmpdir"

# role NAME N: path of the member in sync in role N.
role () { st "$1" "[x['path'] for x in a['members'] if x['role'] == $2 and x['state'] == 'in_sync'][0]"; }


# wait_progress NAME PERCENT: until the running sync passed PERCENT.
wait_progress () {
  for _ in $(seq 300); do
    if [ "$(st "$1" "a['sync']['action'] != 'idle' and a['sync']['done'] * 100 >= $2 * a['sync']['total']")" = True ]; then
      return 0
    fi
    sleep 0.05
  done
  fail "$1: no sync got past $2%"
}

# A member file that fails with EIO once $d/trigger-N exists: nbdkit's
# memory plugin behind the error filter, as a file through nbdfuse.
fuse_pids=()
fuse_member () {
  mkdir -p "$d/fuse$1"
  nbdfuse "$d/fuse$1/disk" --command nbdkit -s --filter=error memory 48M \
    error-pread-rate=1 error-pwrite-rate=1 error-file="$d/trigger-$1" \
    2>>"$d/nbdfuse.log" &
  fuse_pids+=($!)
  for _ in $(seq 50); do [ -f "$d/fuse$1/disk" ] && return 0; sleep 0.1; done
  fail "nbdfuse did not mount $d/fuse$1"
}
unmount_fuse () {
  for p in "${fuse_pids[@]}"; do kill_pid "$p"; done
  for m in "$d"/fuse*; do [ -d "$m" ] && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || :; }; done
  :
}
cleanup_fn unmount_fuse

start_raidd
R set nosuch rebuild-min=1M 2>"$d/err" && fail "set on a missing array succeeded"
grep -q "array nosuch is not running" "$d/err" || fail "set error: $(cat "$d/err")"

for cfg in "r1 1 - 2" "r5 5 64K 4" "r10 10 64K 4"; do
  set -- $cfg
  name=$1 level=$2 chunk=$3 n=$4
  m=()
  for i in $(seq 0 $((n - 1))); do truncate -s 48M "$d/$name-$i"; m+=("$d/$name-$i"); done
  args=(--level "$level")
  [ "$chunk" != - ] && args+=(--chunk "$chunk")
  # No --assume-clean: the initial resync runs in raidd, in the background.
  R create "$name" "${args[@]}" "${m[@]}" > /dev/null || fail "create $name"
  R wait "$name" > "$d/out" || fail "wait $name"
  grep -q "resync done" "$d/out" || fail "$name: initial resync: $(cat "$d/out")"
  R set "$name" rebuild-min=40M

  # 1. fail mid-run, add a fresh member, rebuild under load.
  ev () { R examine --json "$1" | python3 -c "import json,sys; e=json.load(sys.stdin)[0]; print(e['events'], e['array_state'])"; }
  before=$(ev "${m[0]}")
  fio_start "$name" 6 24M 16
  sleep 1
  R fail "$name" "${m[1]}" > /dev/null || fail "fail $name"
  # Every survivor's superblock records it: events bumped, role faulty.
  for i in 0 $(seq 2 $((n - 1))); do
    after=$(ev "${m[$i]}")
    [ "${after%% *}" -gt "${before%% *}" ] || fail "$name: events not bumped on ${m[$i]}: $before -> $after"
    case "${after#* }" in A.*) ;; *) fail "$name: ${m[$i]} does not record role 1 as gone: $after";; esac
  done
  [ "$(st "$name" "a['degraded']")" = 1 ] || fail "$name not degraded after fail"
  R status "$name" | grep -q "${m[1]}\[1\](F)" || fail "$name: status does not mark ${m[1]} (F)"
  grep -q "member ${m[1]} (role 1) failed: marked faulty on request; continuing degraded" "$d/raidd.log" ||
    fail "$name: the log does not say which member failed and why"
  truncate -s 48M "$d/$name-new"
  R add "$name" "$d/$name-new" > "$d/out" || fail "add $name"
  grep -q "in role 1: rebuilding" "$d/out" || fail "$name add: $(cat "$d/out")"
  fio_end "$name"
  R wait "$name" > /dev/null || fail "wait for the rebuild of $name"
  [ "$(st "$name" "a['degraded']")" = 0 ] || fail "$name still degraded after the rebuild"
  R scrub "$name" --wait > "$d/out" || fail "scrub $name"
  grep -q "check done: mismatch_cnt 0" "$d/out" || fail "$name after rebuild: $(cat "$d/out")"
  if [ "$level" = 1 ]; then
    off=$(R examine --json "${m[0]}" | python3 -c 'import json,sys; e=json.load(sys.stdin)[0]; print(e["data_offset"], e["data_size"])')
    set -- $off
    cmp -n "$2" -i "$1:$1" "${m[0]}" "$d/$name-new" || fail "$name: rebuilt mirror differs from the survivor"
  fi
  R remove "$name" "${m[1]}" > /dev/null || fail "remove the failed member of $name"

  # 2. a member that starts failing on its own (EIO): auto-fail.
  fuse_member "$name"
  R add "$name" "$d/fuse$name/disk" > /dev/null || fail "add spare to $name"
  R fail "$name" "${m[0]}" > /dev/null        # the spare takes role 0
  R wait "$name" > /dev/null || fail "$name: spare rebuild"
  [ "$(st "$name" "a['degraded']")" = 0 ] || fail "$name: spare did not take over"
  R remove "$name" "${m[0]}" > /dev/null
  fio_start "$name" 4 24M 16
  sleep 1
  touch "$d/trigger-$name"
  fio_end "$name"
  [ "$(st "$name" "[x['state'] for x in a['members'] if x['path'] == '$d/fuse$name/disk'][0]")" = faulty ] ||
    fail "$name: the member returning EIO was not failed"
  grep -q "member $d/fuse$name/disk (role 0) failed: .* error at sector" "$d/raidd.log" ||
    fail "$name: the log does not give the I/O error"
  R remove "$name" "$d/fuse$name/disk" > /dev/null || fail "remove the EIO member of $name"
  truncate -s 48M "$d/$name-new2"
  R add "$name" "$d/$name-new2" > /dev/null
  R wait "$name" > /dev/null

  # 3. replace a working member: redundancy never drops.
  truncate -s 48M "$d/$name-repl"
  R set "$name" rebuild-min=24M rebuild-max=24M
  fio_start "$name" 4 24M 16
  sleep 0.5
  last=$((n - 1))
  old=$(role "$name" $last)
  R replace "$name" "$old" "$d/$name-repl" > /dev/null || fail "replace in $name"
  seen=no
  while :; do
    s=$(st "$name" "'%d %s' % (a['degraded'], any(x['state'] == 'replacement' for x in a['members']))")
    [ "${s%% *}" = 0 ] || fail "$name degraded ($s) during replace"
    [ "${s#* }" = True ] || break
    seen=yes
    sleep 0.1
  done
  [ $seen = yes ] || fail "$name: never saw the replacement being rebuilt"
  fio_end "$name"
  R wait "$name" > /dev/null
  [ "$(st "$name" "[x['state'] for x in a['members'] if x['path'] == '$old'][0]")" = faulty ] ||
    fail "$name: replaced member not retired"
  [ "$(st "$name" "[x['role'] for x in a['members'] if x['path'] == '$d/$name-repl'][0]")" = $last ] ||
    fail "$name: replacement not in role $last"
  R scrub "$name" --wait | grep -q "mismatch_cnt 0" || fail "$name: scrub after replace"
  R set "$name" rebuild-min=40M rebuild-max=0
done

# 4. SIGKILL half-way through a rebuild: it resumes from the checkpoint.
name=r5
# check_data: the array still starts with $d/data.
check_data () {
  rm -f "$d/back"
  nbdcopy "$(uri $name)" "$d/back" && cmp -n $((64 << 20)) "$d/back" "$d/data"
}
head -c 64M /dev/urandom > "$d/data"
nbdcopy "$d/data" "$(uri $name)" || fail "nbdcopy in"
old3=$(role $name 3)
R fail $name "$old3" > /dev/null
R remove $name "$old3" > /dev/null
truncate -s 48M "$d/r5-k"
R set $name rebuild-min=4M rebuild-max=4M
R add $name "$d/r5-k" > /dev/null
members=$(st $name "' '.join(x['path'] for x in a['members'] if x['role'] >= 0)")
r1members=$(st r1 "' '.join(x['path'] for x in a['members'] if x['role'] >= 0)")
wait_progress $name 50                      # checkpoints are a second apart
# Killed while a client writes (idle, safe mode would have marked it clean
# and it would start without --force): the writer rewrites $d/data, so
# the array holds it whatever the kill interrupts.
( while nbdcopy "$d/data" "$(uri $name)" 2>/dev/null; do :; done ) &
writer_pid=$!
cleanup_fn kill_pid "$writer_pid"
sleep 1
kill -0 "$writer_pid" || fail "the writer stopped"
kill -9 "$raidd_pid"; wait "$raidd_pid" 2>/dev/null || :; raidd_pid=
wait "$writer_pid" 2>/dev/null || :
start_raidd
# Killed while degraded (role 3 still being rebuilt) and written: md's
# "cannot start dirty degraded array", the write hole; --force takes the
# parity as it is.
R assemble $name $members 2> "$d/err" && fail "dirty degraded r5 started without --force"
grep -q "cannot start dirty degraded array.*role 3 ($d/r5-k) is being rebuilt" "$d/err" ||
  fail "assemble after SIGKILL: $(cat "$d/err")"
R assemble $name $members --force > /dev/null || fail "assemble --force after SIGKILL"
R assemble r1 $r1members > /dev/null || fail "assemble r1 after SIGKILL"
# The superblock's recovery_offset said how far it had got.
off=$(sed -n "s|.*member $d/r5-k (role 3) is being rebuilt: \([0-9]*\) of.*|\1|p" "$d/raidd.log" | tail -1)
total=$(st $name "a['member_size']")
[ -n "$off" ] && [ "$off" -gt $((total * 30 / 100)) ] ||
  fail "rebuild did not resume from a checkpoint: ${off:-none} of $total"
grep -q "recover started at $off of" "$d/raidd.log" || fail "the resumed recovery did not start at $off"
R set $name rebuild-min=0 rebuild-max=0
R wait $name > /dev/null || fail "resumed rebuild"
[ "$(st $name "a['degraded']")" = 0 ] || fail "resumed rebuild did not finish"
check_data || fail "data after SIGKILL and resumed rebuild"
R scrub $name --wait | grep -q "mismatch_cnt 0" || fail "scrub after the resumed rebuild"

# 5. hot spare: fail a member, the spare rebuilds without any command.
truncate -s 48M "$d/r5-spare"
R add $name "$d/r5-spare" > "$d/out"
grep -q "as a hot spare" "$d/out" || fail "add to a healthy array: $(cat "$d/out")"
R status $name | grep -q "r5-spare(S)" || fail "spare not shown (S)"
R fail $name "$(role $name 0)" > /dev/null
R wait $name > /dev/null
[ "$(st $name "[x['role'] for x in a['members'] if x['path'] == '$d/r5-spare'][0]")" = 0 ] ||
  fail "hot spare did not take role 0"
[ "$(st $name "a['degraded']")" = 0 ] || fail "degraded after the spare's rebuild"
grep -q "hot spare $d/r5-spare takes role 0" "$d/raidd.log" || fail "spare take-over not logged"
check_data || fail "data after the spare's rebuild"

# 5b. re-add: a member that failed and was removed comes back by its own
# superblock, without --force (mdadm --add re-adds it), and is rebuilt.
old1=$(role $name 1)
R fail $name "$old1" > /dev/null
R remove $name "$old1" > /dev/null
R add $name "$old1" > "$d/out" || fail "re-add of $old1"
grep -q "re-added $old1 to $name in role 1: rebuilding" "$d/out" || fail "re-add: $(cat "$d/out")"
R wait $name > /dev/null
[ "$(st $name "a['degraded']")" = 0 ] || fail "degraded after the re-add"
check_data || fail "data after the re-add"

# 6. scrub finds a planted corruption; --repair fixes it.  Row 8 of a
# left-symmetric RAID 5 over 4 has its parity on role 3; one 4 KiB block.
p3=$(role $name 3)
dd if=/dev/urandom of="$p3" bs=4096 count=1 seek=$(( (1048576 + 8 * 65536) / 4096 + 3 )) \
  conv=notrunc oflag=direct status=none
R scrub $name --wait > "$d/out"
grep -q "check done: mismatch_cnt 8$" "$d/out" || fail "scrub did not find the corruption: $(cat "$d/out")"
R status $name | grep -q "last check: mismatch_cnt 8" || fail "status does not show mismatch_cnt"
R scrub $name --repair --wait | grep -q "repair done: mismatch_cnt 8" || fail "repair"
R scrub $name --wait | grep -q "check done: mismatch_cnt 0" || fail "mismatches left after repair"
check_data || fail "data after repair"
# RAID 1: the second mirror, repaired from the first.
p1=$(role r1 1)
qemu-io -f raw "$(uri r1)" -c 'write -P 0x6c 4M 64k' > /dev/null
dd if=/dev/zero of="$p1" bs=4096 count=1 seek=$(( (1048576 + 4194304) / 4096 )) conv=notrunc oflag=direct status=none
R scrub r1 --wait | grep -q "mismatch_cnt 8$" || fail "r1 scrub"
R scrub r1 --repair --wait > /dev/null
R scrub r1 --wait | grep -q "mismatch_cnt 0" || fail "r1 repair"
qemu-io -f raw "$(uri r1)" -c 'read -P 0x6c 4M 64k' > /dev/null || fail "r1 data after repair"

# 7. errors name what is wrong.
p1=$(role $name 1)
R remove $name "$p1" 2>"$d/err" && fail "removing an in-sync member succeeded"
grep -q "member $p1 (role 1) is in sync and holds data" "$d/err" || fail "remove message: $(cat "$d/err")"
R fail $name "$d/nosuch" 2>"$d/err" && fail "failing a non-member succeeded"
grep -q "array $name has no member $d/nosuch" "$d/err" || fail "fail message: $(cat "$d/err")"
truncate -s 4M "$d/small"
R add $name "$d/small" 2>"$d/err" && fail "adding a small member succeeded"
grep -q "member $d/small is too small" "$d/err" || fail "add message: $(cat "$d/err")"
R fail $name "$(role $name 2)" > /dev/null
R remove $name "$p1" --force 2>"$d/err" && fail "forced removal of the last redundancy succeeded"
grep -q "would lose data" "$d/err" || fail "forced remove message: $(cat "$d/err")"
R scrub $name 2>"$d/err" && fail "check of a degraded RAID 5 succeeded"
grep -q "cannot check a degraded RAID 5" "$d/err" || fail "scrub message: $(cat "$d/err")"
mkfs.ext4 -q -F "$d/small" 2>/dev/null
R add $name "$d/small" 2>"$d/err" && fail "adding a member holding ext4 succeeded"
grep -q "contains .*ext4" "$d/err" || fail "add ext4 message: $(cat "$d/err")"

# 8. RAID 0: losing a member fails the array; writes get EIO.
truncate -s 48M "$d/r0-0" "$d/r0-1"
R create r0 --level 0 "$d/r0-0" "$d/r0-1" > /dev/null
qemu-io -f raw "$(uri r0)" -c 'write -P 0x11 0 1M' > /dev/null
R fail r0 "$d/r0-1" --force > /dev/null   # the last copy: md refuses it without --force
sum=$(sha256sum < "$d/r0-0")
qemu-io -f raw "$(uri r0)" -c 'write -P 0x22 0 1M' > "$d/out" 2>&1 || :
grep -q "Input/output error" "$d/out" || fail "a write to a failed RAID 0 did not fail: $(cat "$d/out")"
[ "$(sha256sum < "$d/r0-0")" = "$sum" ] || fail "the failed RAID 0's survivor changed"
R status r0 | grep -q "FAILED" || fail "status does not say r0 failed"
grep -q "too many members lost, the array has failed and refuses I/O" "$d/raidd.log" || fail "r0 failure not logged"
R scrub r0 2>"$d/err" && fail "scrub of RAID 0 succeeded"
R stop r0 > /dev/null

# 9. a block device that disappears (udev "remove" event) is failed.
if [ "$(id -u)" = 0 ] && losetup --version >/dev/null 2>&1 && [ -w /sys/block ]; then
  truncate -s 48M "$d/lo-0" "$d/lo-1"
  cleanup_fn "${top_srcdir:-.}/tests/detach-loops.sh" "$d"
  l0=$(losetup --show -f "$d/lo-0") l1=$(losetup --show -f "$d/lo-1")
  R create lo --level 1 --assume-clean "$l0" "$l1" > /dev/null
  # A synthetic uevent, as the kernel sends when a disk goes away; "add"
  # puts the device node back if udevd acted on it.
  echo remove > "/sys/block/${l1#/dev/}/uevent"
  cleanup_fn bash -c "echo add > /sys/block/${l1#/dev/}/uevent"
  for _ in $(seq 50); do
    [ "$(st lo "[x['state'] for x in a['members'] if x['path'] == '$l1'][0]")" = faulty ] && break
    sleep 0.1
  done
  [ "$(st lo "[x['state'] for x in a['members'] if x['path'] == '$l1'][0]")" = faulty ] ||
    fail "the removed loop device was not failed"
  grep -q "member $l1 .* was removed from the system; failing it" "$d/raidd.log" || fail "udev removal not logged"
  R stop lo > /dev/null
else
  echo "$0: note: udev removal not tested (needs root and loop devices)"
fi

stop_raidd
echo "$0: OK"
