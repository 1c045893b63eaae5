#!/bin/bash
# The main job: build libraid and run its demonstration on file-backed
# members (RAID 5 over 4 files: write, verify, fail a member, verify
# degraded).  Until raidd serves arrays over NBD, this is the library's own
# demo.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
autoreconf -fi
mkdir -p build && cd build
[ -f Makefile ] || "$top/configure" -q
make -j"$(nproc)"
dir=$(mktemp -d /var/tmp/raid-demo.XXXXXX)
trap 'rm -rf "$dir"' EXIT
./raidctl/raid-demo --level 5 --members 4 --size 64 "$dir"
