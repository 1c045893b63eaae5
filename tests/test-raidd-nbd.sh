#!/bin/bash
# Description: raidd serves arrays over NBD to real clients.  For RAID 0,
# 1, 5 and 10 on file-backed members: raidctl create starts the array in a
# running raidd; nbdinfo shows its size, block sizes and flags, qemu-img
# info its size; qemu-io
# writes and reads patterns with aio; nbdcopy copies a random file in and
# out with matching checksums; fio's nbd engine runs random writes with
# crc32c verification at iodepth 32 over 4 connections.  qemu-io shows a
# small read overtaking a large write (replies out of order).  Then raidctl
# status/detail, TCP with --nbd-listen, the control socket refusing
# non-root users, the control-plane errors, a filesystem (nbdfuse + loop +
# mkfs.ext4 + e2fsck) whose files survive a raidd restart while stop is
# refused as long as it is in use, a clean shutdown that leaves every
# member clean, and raidd as a daemon (pidfile, SIGTERM).
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires nbdinfo --version
requires nbdcopy --version
requires qemu-io --version
requires python3 --version

mktmpdir test-raidd-nbd
raidd_env "$tmpdir"
port=$((20000 + $$ % 20000))
start () { start_raidd --nbd-listen "127.0.0.1:$port"; }

# Without raidd: a clear error.
if R status 2>"$d/err"; then fail "status succeeded without raidd"; fi
grep -q "cannot reach raidd at $ctl" "$d/err" || fail "no-raidd message: $(cat "$d/err")"

start
head -c 24M /dev/urandom > "$d/random"
want=$(sha256sum < "$d/random" | cut -d' ' -f1)
have_fio_nbd=no
fio --enghelp=nbd >/dev/null 2>&1 && have_fio_nbd=yes

for cfg in "r0 0 64K 3" "r1 1 - 2" "r5 5 64K 4" "r10 10 64K 4"; do
  set -- $cfg
  name=$1 level=$2 chunk=$3 n=$4
  members=()
  for i in $(seq 0 $((n - 1))); do truncate -s 40M "$d/$name-$i"; members+=("$d/$name-$i"); done
  args=(--level "$level" --assume-clean)
  [ "$chunk" != - ] && args+=(--chunk "$chunk")
  R create "$name" "${args[@]}" "${members[@]}" > "$d/out" || fail "create $name"
  grep -q "started in raidd: nbd+unix:///$name?socket=$sock" "$d/out" || fail "create did not start $name: $(cat "$d/out")"
  uri="nbd+unix:///$name?socket=$sock"

  nbdinfo --json "$uri" > "$d/info.json"
  python3 - "$d/info.json" "$name" "$level" <<'PY' || fail "nbdinfo $name"
import json, sys
j = json.load(open(sys.argv[1]))
e = j["exports"][0]
assert e["export-name"] == sys.argv[2], e
assert e["export-size"] > 0 and e["is_read_only"] is False, e
assert e["can_flush"] and e["can_fua"] and e["can_multi_conn"] and e["can_zero"], e
assert e["can_trim"] == (sys.argv[3] != "5"), e   # no TRIM on RAID 5, as md
assert e["block_size_minimum"] == 512 and e["block_size_maximum"] == 32 << 20, e
assert e["block_size_preferred"] >= 4096, e
PY

  qemu-img info -f raw "$uri" > "$d/qimg" || fail "qemu-img info $name"
  grep -q "virtual size: .*($(nbdinfo --size "$uri") bytes)" "$d/qimg" || { cat "$d/qimg"; fail "qemu-img size $name"; }

  qemu-io -f raw "$uri" -c 'aio_write -P 0xa1 0 1M' -c 'aio_write -P 0xb2 1M 64k' \
    -c 'aio_write -P 0xc3 3M 2M' -c aio_flush -c 'aio_read -P 0xa1 0 1M' \
    -c 'aio_read -P 0xb2 1M 64k' -c 'aio_read -P 0xc3 3M 2M' -c aio_flush \
    -c 'write -z 3M 1M' -c 'read -P 0 3M 1M' -c 'read -P 0xc3 4M 1M' > "$d/qio" 2>&1
  grep -qi "fail\|error" "$d/qio" && { cat "$d/qio"; fail "qemu-io on $name"; }

  nbdcopy "$d/random" "$uri"
  nbdcopy "$uri" "$d/out.img"
  got=$(head -c 24M "$d/out.img" | sha256sum | cut -d' ' -f1)
  rm -f "$d/out.img"
  [ "$got" = "$want" ] || fail "nbdcopy round trip on $name: $got != $want"

  if [ $have_fio_nbd = yes ]; then
    (cd "$d" && fio --name=v --ioengine=nbd --uri="$uri" --rw=randwrite --bsrange=4k-256k \
        --iodepth=32 --numjobs=4 --offset_increment=4M --size=4M --verify=crc32c \
        --do_verify=1 --verify_state_save=0 --group_reporting > "$d/fio.out" 2>&1) ||
      { cat "$d/fio.out"; fail "fio on $name"; }
    grep -q "err= 0" "$d/fio.out" || { cat "$d/fio.out"; fail "fio reported errors on $name"; }
  else
    echo "$0: fio has no nbd engine here: skipping fio on $name"
  fi
done

# Replies come back out of order: a 4 KiB read sent after a 32 MiB write
# completes first.
qemu-io -f raw --cache=none "nbd+unix:///r5?socket=$sock" -c 'aio_write -P 0x55 0 32M' \
  -c 'aio_read -P 0 64M 4k' -c aio_flush > "$d/qio"
head -1 "$d/qio" | grep -q "^read 4096/4096 bytes at offset 67108864" ||
  { cat "$d/qio"; fail "replies were not out of order"; }
qemu-io -f raw "nbd+unix:///r5?socket=$sock" -c 'read -P 0x55 0 32M' > "$d/qio" ||
  { cat "$d/qio"; fail "reading back the 32 MiB write"; }

# TCP, only because --nbd-listen was given.
nbdinfo --size "nbd://127.0.0.1:$port/r5" > "$d/tcp" || fail "nbdinfo over TCP"
[ "$(cat "$d/tcp")" = "$(nbdinfo --size "nbd+unix:///r5?socket=$sock")" ] || fail "TCP size differs"

# status and detail.
R status > "$d/status"
grep -q "^r5 : active raid5 $d/r5-0\[0\] $d/r5-1\[1\] $d/r5-2\[2\] $d/r5-3\[3\]" "$d/status" || { cat "$d/status"; fail "status r5"; }
grep -q "level 5, 64k chunk, algorithm 2 \[4/4\] \[UUUU\]" "$d/status" || { cat "$d/status"; fail "status r5 line 2"; }
R detail r10 > "$d/detail"
grep -q "Raid Level : raid10" "$d/detail" && grep -q "Layout : near=2" "$d/detail" || { cat "$d/detail"; fail "detail r10"; }
R --json status r1 | python3 -c "import json,sys; a=json.load(sys.stdin)[0]; assert a['name']=='r1' and a['level']==1 and len(a['members'])==2, a"

# The control socket is root's only.
if command -v setpriv >/dev/null; then
  if setpriv --reuid 65534 --regid 65534 --clear-groups "$raidctl" --control "$ctl" status 2>"$d/err"; then
    fail "a non-root user reached the control socket"
  fi
  grep -q "cannot reach raidd at $ctl: Permission denied" "$d/err" || fail "non-root message: $(cat "$d/err")"
fi

# Control-plane errors name what is wrong.
if R assemble r5 "$d"/r5-* 2>"$d/err"; then fail "assembled a running array"; fi
grep -q "already" "$d/err" || fail "running-array message: $(cat "$d/err")"
if R stop nosuch 2>"$d/err"; then fail "stopped a missing array"; fi
grep -q "array nosuch is not running" "$d/err" || fail "stop message: $(cat "$d/err")"

# A file system that survives a restart (nbdfuse + loop + ext4), as root.
if [ "$(id -u)" = 0 ] && command -v nbdfuse >/dev/null && command -v mkfs.ext4 >/dev/null &&
   [ -e /dev/fuse ] && losetup --version >/dev/null 2>&1; then
  mkdir -p "$d/mnt"
  # On any exit (hooks run last first): detach loop devices over our
  # files, never by a bare device name (once released, another test may
  # own that number).
  cleanup_fn "$top_srcdir/tests/detach-loops.sh" "$d"
  fs_cycle () {  # fs_cycle write|check
    nbd_loop_attach "nbd+unix:///r5?socket=$sock" "$d/fuse"
    if [ "$1" = write ]; then
      mkfs.ext4 -q "$loop"
      mount "$loop" "$d/mnt"
      cp -r "$top_srcdir/lib" "$d/mnt/"
      (cd "$d/mnt" && find lib -type f -exec sha256sum {} + | sort) > "$d/fs.sha"
      umount "$d/mnt"
      # In use: stop is refused, naming the connections.
      if R stop r5 2>"$d/err"; then fail "stopped an array in use"; fi
      grep -Eq "array r5 is in use by [0-9]+ NBD connections?; stop them or use --force" "$d/err" || fail "in-use message: $(cat "$d/err")"
    else
      mount -o ro "$loop" "$d/mnt"
      (cd "$d/mnt" && find lib -type f -exec sha256sum {} + | sort) > "$d/fs.sha2"
      umount "$d/mnt"
      cmp "$d/fs.sha" "$d/fs.sha2" || fail "files changed across the restart"
    fi
    e2fsck -fn "$loop" > "$d/fsck" 2>&1 || { cat "$d/fsck"; fail "e2fsck after $1"; }
    nbd_loop_detach
  }
  fs_cycle write
  stop_raidd
  grep -q "r5: stopping" "$d/raidd.log" || fail "raidd did not stop r5"
  "$raidctl" examine "$d/r5-0" | grep -q "State : clean" || fail "r5 not clean after shutdown"
  start
  R assemble r5 "$d"/r5-* >/dev/null || fail "assemble r5 after restart"
  fs_cycle check
else
  echo "$0: not root or no nbdfuse/fuse/losetup/mkfs.ext4: skipping the file system part"
fi

stop_raidd
for f in "$d"/r5-*; do "$raidctl" examine "$f" | grep -q "State : clean" || fail "$f not clean"; done

# As a daemon: detaches once ready, writes its pidfile, logs to syslog,
# and SIGTERM (to the PID in the pidfile) stops it and removes the file.
"$raidd" --control "$ctl" --nbd-socket "$sock" --pidfile "$d/raidd.pid" || fail "raidd as a daemon"
dpid=$(cat "$d/raidd.pid")
cleanup_fn kill_pid "$dpid"
R assemble r1 "$d"/r1-* >/dev/null || fail "assemble in the daemon"
nbdinfo --size "nbd+unix:///r1?socket=$sock" >/dev/null || fail "NBD from the daemon"
kill "$dpid"
pid_gone "$dpid" 10 || fail "the daemon did not stop on SIGTERM"
[ ! -e "$d/raidd.pid" ] || fail "pidfile left behind"
"$raidctl" examine "$d/r1-0" | grep -q "State : clean" || fail "r1 not clean after the daemon stopped"
echo "$0: ok"
