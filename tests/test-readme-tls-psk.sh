#!/bin/bash
# Description: the README's "Serving arrays over the network safely"
# walk-through with pre-shared keys, run as it stands: the blocks marked
# readme-tls-psk (tests/readme-tls.sh moves /etc/raidd, /var/tmp, raidd's
# sockets and port 10809 into the test's own).  A key made with psktool,
# raidd with --tls=require --tls-psk --allow, nbdinfo and qemu-img with
# the key; both were served as PSK user alice (raidd's log).
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
. "${top_srcdir:-.}/tests/readme.sh"
. "${top_srcdir:-.}/tests/readme-tls.sh"
requires nbdinfo --version
requires qemu-img --version
requires psktool --version
requires python3 --version

readme_tls_env readme-tls-psk
readme_script readme-tls-psk "$d/walk.sh"
readme_tls_rewrite "$d/walk.sh"
readme_run "$d/walk.sh"
grep -Eq "^[1-9][0-9]*$" "$d/out" || fail "nbdinfo --size over PSK printed no size"
grep -q "^virtual size: " "$d/out" || fail "qemu-img info over PSK did not describe net1"
[ "$(grep -c 'PSK user "alice"' "$d/raidd.log")" -ge 2 ] || fail "nbdinfo and qemu-img were not both served with alice's key"
echo "$0: OK"
