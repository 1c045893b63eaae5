#!/usr/bin/env bash
# Description: run the data-integrity and degraded suites with loop
# devices as members (losetup --direct-io=on over files), so the library's
# block-device and O_DIRECT paths carry the same workloads and placement
# checks as the file back-end.  Skipped (77) unless root with losetup and
# loop support.  Afterwards no loop device over our files may be left
# attached: any that is, is detached by its exact name and fails the test.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
set -e
set -x

top_builddir=${top_builddir:-.}

requires_root
requires losetup --version
requires_file /dev/loop-control
requires_file "$top_builddir/tests/test-io" "$top_builddir/tests/test-degraded"

mktmpdir libraid-loop
# Prove loop devices can actually be set up here (containers often can't).
truncate -s 1M "$tmpdir/probe"
probe=$(losetup --find --show --direct-io=on "$tmpdir/probe" 2>/dev/null) ||
    skip "losetup cannot attach a loop device"
losetup -d "$probe"

# Whatever happens, detach what was left over our files, by exact name.
leftovers ()
{
    local dev
    for dev in $(loop_devices_under "$tmpdir"); do
        echo "$0: detaching leftover loop device $dev" >&2
        losetup -d "$dev" || :
    done
}
cleanup_fn leftovers

export RAID_TEST_LOOP=1
export RAID_TEST_MEMBER_DIR="$tmpdir"
# Loop devices add latency to every I/O: a third of the workload (the
# placement and integrity checks are complete whatever the scale).
export RAID_TEST_SCALE="${RAID_TEST_SCALE:-30}"

status=0
"$top_builddir/tests/test-io" || status=$?
"$top_builddir/tests/test-degraded" || status=$?

# A detached device that udev was still probing goes away when udev closes
# it (the kernel's deferred autoclear); give that a few seconds.
for i in $(seq 1 50); do
    left=$(loop_devices_under "$tmpdir")
    [ -z "$left" ] && break
    udevadm settle 2>/dev/null || sleep 0.1
done
if [ -n "$left" ]; then
    echo "$0: FAIL: loop devices left attached: $left" >&2
    status=1
fi
exit $status
