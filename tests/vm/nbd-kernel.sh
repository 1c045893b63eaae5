#!/bin/bash
# Guest half of tests/test-vm-nbd.sh: the kernel's NBD client against
# raidd.  raidd and raidctl run from the shared build tree ($BUILD); a
# RAID 5 over four files on the guest's tmpfs is attached as /dev/nbd0,
# gets an ext4 file system, files written and read back, and e2fsck must
# find it clean.
set -euo pipefail
cd /tmp
d=/tmp/raidvm
mkdir -p "$d/mnt"
R () { "$BUILD/raidctl/raidctl" --control "$d/control.sock" "$@"; }

"$BUILD/raidd/raidd" --foreground --control "$d/control.sock" --nbd-socket "$d/nbd.sock" \
  > "$d/raidd.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; cat "$d/raidd.log"' EXIT
for _ in $(seq 100); do R status >/dev/null 2>&1 && break; sleep 0.1; done
for i in 0 1 2 3; do truncate -s 48M "$d/m$i"; done
R create md0 --level 5 --chunk 64K --assume-clean "$d"/m{0,1,2,3}

modprobe nbd
nbd-client -unix "$d/nbd.sock" -N md0 /dev/nbd0 -b 4096
echo "nbd0: $(blockdev --getsize64 /dev/nbd0) bytes"
mkfs.ext4 -q /dev/nbd0
mount /dev/nbd0 "$d/mnt"
head -c 16M /dev/urandom > "$d/file"
for i in 1 2 3; do cp "$d/file" "$d/mnt/file$i"; done
sync
want=$(sha256sum < "$d/file" | cut -d' ' -f1)
umount "$d/mnt"
echo 3 > /proc/sys/vm/drop_caches
mount -o ro /dev/nbd0 "$d/mnt"
for i in 1 2 3; do
  got=$(sha256sum < "$d/mnt/file$i" | cut -d' ' -f1)
  [ "$got" = "$want" ] || { echo "FAIL: file$i read back wrong"; exit 1; }
done
umount "$d/mnt"
e2fsck -fn /dev/nbd0
nbd-client -d /dev/nbd0
R status
echo "nbd-kernel: OK"
