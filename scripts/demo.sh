#!/bin/bash
# The main job: build, then a real array served over NBD on file-backed
# members with a file system on it.
#   1. raidd starts (sockets in a temporary directory);
#   2. raidctl create makes a RAID 5 over four 256 MiB files (md v1.2
#      metadata, initial resync) and starts it in raidd;
#   3. nbdfuse exposes the NBD export as a file, a loop device goes over it,
#      mkfs.ext4 makes a file system, which is mounted, filled, checked;
#   4. raidctl status and detail show the array; a member is examined;
#   5. everything is taken down in order and the array is left clean.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
autoreconf -fi
mkdir -p build && cd build
[ -f Makefile ] || "$top/configure" -q
make -j"$(nproc)"

dir=$(mktemp -d /var/tmp/raid-demo.XXXXXX)
raidctl () { ./raidctl/raidctl --control "$dir/control.sock" "$@"; }
pid= fuse_pid= loop=
cleanup () {
  set +e
  mountpoint -q "$dir/mnt" && umount "$dir/mnt"
  [ -n "$loop" ] && losetup -d "$loop"
  mountpoint -q "$dir/fuse" && umount "$dir/fuse"
  [ -n "$fuse_pid" ] && wait "$fuse_pid"
  [ -n "$pid" ] && kill "$pid" && wait "$pid"
  rm -rf "$dir"
}
trap cleanup EXIT

echo "== raidd"
./raidd/raidd --foreground --control "$dir/control.sock" --nbd-socket "$dir/nbd.sock" &
pid=$!
for _ in $(seq 50); do raidctl status >/dev/null 2>&1 && break; sleep 0.1; done

echo "== raidctl create md0: RAID 5 over 4 files"
for i in 0 1 2 3; do truncate -s 256M "$dir/member$i.img"; done
raidctl create md0 --level 5 --chunk 64K "$dir"/member{0,1,2,3}.img

echo "== ext4 on nbd+unix:///md0 (nbdfuse + loop)"
mkdir -p "$dir/fuse" "$dir/mnt"
nbdfuse "$dir/fuse" "nbd+unix:///md0?socket=$dir/nbd.sock" &
fuse_pid=$!
for _ in $(seq 50); do [ -e "$dir/fuse/nbd" ] && break; sleep 0.1; done
loop=$(losetup --find --show "$dir/fuse/nbd")
mkfs.ext4 -q "$loop"
mount "$loop" "$dir/mnt"
cp -r "$top/lib" "$top/raidd" "$top/raidctl" "$dir/mnt/"
df -h "$dir/mnt" | tail -1
echo "files on the array: $(find "$dir/mnt" -type f | wc -l)"
umount "$dir/mnt"
e2fsck -fn "$loop"

echo "== raidctl status"
raidctl status
raidctl detail md0
./raidctl/raidctl examine "$dir/member2.img" | grep -E "Raid Level|Array UUID|Device Role|Array State|Events"

echo "== shutdown"
losetup -d "$loop"; loop=
umount "$dir/fuse"; wait "$fuse_pid" || true; fuse_pid=
kill "$pid"; wait "$pid" || true; pid=
./raidctl/raidctl examine "$dir/member0.img" | grep "State :"
echo "demo: ok"
