#!/bin/bash
# Install every Debian 12 package that libraid, raidd, raidctl and their
# tests need.  Run as root on Debian 12 (bookworm).  Idempotent.
set -euo pipefail

packages=(
  # build
  build-essential autoconf automake libtool pkg-config git
  # libraries
  libblkid-dev libudev-dev liburing-dev libisal-dev libnbd-dev libjson-c-dev
  # raidd --tls (GnuTLS); certtool and psktool for its tests
  libgnutls28-dev gnutls-bin
  libsystemd-dev
  # raidctl attach: the kernel's NBD client over generic netlink, nbd.ko
  # loaded through libkmod
  libnl-genl-3-dev libkmod-dev
  # tests
  check valgrind clang util-linux e2fsprogs
  nbdkit libnbd-bin qemu-utils fio fuse3 nbdfuse mdadm kmod
  # remote members across a link: network namespaces and veth pairs
  iproute2
  # test scripts' helpers: python3 (NBD misuse, JSON), gdb (backtraces
  # of a raidd the stress test finds hung)
  python3 gdb
  # the service test: systemd-analyze, systemd-socket-activate; the
  # completion test: bash-completion
  systemd bash-completion
  # Debian packages (debian/, tests/test-deb.sh): dpkg-buildpackage, dh
  # (debhelper, with dh-autoreconf), lintian
  debhelper dpkg-dev lintian
  # benchmarks (bench/run): fio's JSON (jq), charts (gnuplot)
  jq gnuplot-nox
  # VM tests (tests/vm/run: qemu + qboot firmware, the initramfs's tools;
  # the kernel itself is fetched with apt-get download, never installed)
  qemu-system-x86 qemu-system-data busybox-static cpio zstd xz-utils
  nbd-client procps
)

if [ "$(id -u)" != 0 ]; then
  echo "setup.sh: run as root (it installs Debian packages)" >&2
  exit 1
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
echo "setup.sh: all ${#packages[@]} packages installed"
