#!/bin/bash
# Description: the Linux kernel's NBD client uses an array served by raidd:
# inside a VM running Debian's kernel (tests/vm/run), nbd-client attaches
# a RAID 5 as /dev/nbd0, mkfs.ext4, mount, write, drop caches, read back
# with checksums, e2fsck clean.  Run by "make check-vm" (CI runs it).
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"

requires_vm
fail () { echo "$0: FAIL: $*" >&2; exit 1; }

# raidd and raidctl run from the build tree, which the VM shares at the
# same path, through their libtool wrappers; the libraries they load
# (liburing, ISA-L, json-c...) go into the VM with --libs-of.
"$vm" --env BUILD="$top_builddir" \
  --libs-of "$top_builddir/raidd/raidd" --libs-of "$top_builddir/raidctl/raidctl" \
  --timeout 600 -- "$top_srcdir/tests/vm/nbd-kernel.sh" ||
  fail "the VM half (tests/vm/nbd-kernel.sh) failed: exit $?"
