#!/bin/bash
# Description: the README's "Serving arrays over the network safely"
# walk-through with certificates, run as it stands: the blocks marked
# readme-tls (tests/readme-tls.sh moves /etc/raidd, /var/tmp, raidd's
# sockets and port 10809 into the test's own).  A CA, server and client
# certificates made with certtool, raidd with --tls=require
# --tls-verify-peer --allow, nbdinfo, nbdcopy and qemu-img over TLS, and
# a plain nbdinfo.  Then what the README says is checked in raidd's log
# and the output: each client was served over TLS with its certificate
# verified, the plain client was refused.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
. "${top_srcdir:-.}/tests/readme.sh"
. "${top_srcdir:-.}/tests/readme-tls.sh"
requires nbdinfo --version
requires nbdcopy --version
requires qemu-img --version
requires certtool --version
requires python3 --version

readme_tls_env readme-tls
readme_script readme-tls "$d/walk.sh"
readme_tls_rewrite "$d/walk.sh"
readme_run "$d/walk.sh"
grep -Eq "^[[:space:]]*export-size: [1-9][0-9]* " "$d/out" || fail "nbdinfo over TLS did not describe net0"
grep -q "^virtual size: " "$d/out" || fail "qemu-img info over TLS did not describe net0"
grep -q "^refused without TLS" "$d/out" || fail "the plain nbdinfo was not refused"
[ "$(grep -c "client certificate verified" "$d/raidd.log")" -ge 3 ] ||
  fail "nbdinfo, nbdcopy and qemu-img were not all served over verified TLS"
grep -q "option .* refused: TLS is required" "$d/raidd.log" || fail "the plain client's refusal is not in the log"
echo "$0: OK"
