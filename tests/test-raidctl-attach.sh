#!/bin/bash
# Description: raidctl attach / detach on the host, whose kernel may have
# no NBD driver: every refusal names what is wrong and changes nothing
# (a name that is not /dev/nbdN, an array not running, --connections out
# of range, detach of an array not attached or of a device raidd did not
# attach, the raw control verbs' fields), and without the driver attach
# says so and leaves no connection behind.  Where the kernel has nbd.ko,
# the attach succeeds and the test detaches it.  The device itself (file
# systems, drills, stop while mounted, raidd's exit): tests/test-vm-attach.sh.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"

mktmpdir test-raidctl-attach
raidd_env "$tmpdir"
new_members "$d" 2 32M
start_raidd
R create m --level 1 --assume-clean "${members[@]}" > /dev/null || fail "create m"

expect_fail ()     # MESSAGE-REGEX raidctl-args...
{
    local want=$1; shift
    if R "$@" > "$d/out" 2>&1; then fail "raidctl $* succeeded: $(cat "$d/out")"; fi
    grep -q -- "$want" "$d/out" || fail "raidctl $*: $(cat "$d/out") (wanted: $want)"
}
expect_fail 'device "/dev/sda" is not a kernel NBD device (/dev/nbdN)' attach m /dev/sda
expect_fail 'device "nbdx" is not a kernel NBD device' attach m nbdx
expect_fail 'array nope is not running' attach nope
expect_fail -- '--connections 0: give a number from 1 to 16' attach m --connections 0
expect_fail -- '--connections 17: give a number from 1 to 16' attach m --connections 17
expect_fail 'give the array' attach
expect_fail 'array m is not attached to a kernel NBD device' detach m
expect_fail 'array nope is not running' detach nope
expect_fail 'give exactly one array NAME or /dev/nbdN' detach
expect_fail 'detach: device "/dev/sdb" is not a kernel NBD device' detach /dev/sdb

# The control verbs' own checks.
for bad in '{"verb": "attach", "name": "m", "connections": 99}' \
           '{"verb": "attach", "name": "m", "connections": "two"}' \
           '{"verb": "attach"}' \
           '{"verb": "detach"}' \
           '{"verb": "detach", "name": "m", "device": "/dev/nbd0"}' \
           '{"verb": "attach", "name": "m", "devise": "/dev/nbd0"}'; do
    python3 "$top_srcdir/tests/control-misuse.py" request "$ctl" "$bad" > "$d/out" 2>&1 || :
    grep -q '"ok": *false' "$d/out" || fail "$bad: $(cat "$d/out")"
done

if R attach m > "$d/dev" 2> "$d/err"; then
    dev=$(cat "$d/dev")
    echo "$0: this kernel has NBD: attached $dev"
    R detail m | grep -q "Block Device : $dev" || fail "detail does not name $dev"
    R detach m > /dev/null || fail "detach m"
else
    grep -q "the kernel has no NBD driver" "$d/err" || fail "attach without nbd: $(cat "$d/err")"
    # The workers dropped the socket pairs' ends: no connection is left.
    for _ in $(seq 50); do
        [ "$(grep -c 'kernel nbd.*disconnected' "$d/raidd.log")" -ge 2 ] && break
        sleep 0.1
    done
    [ "$(grep -c 'kernel nbd.*disconnected' "$d/raidd.log")" -ge 2 ] ||
        fail "the kernel connections were not dropped"
fi
R detail m --json | grep -q '"nbd_device": *null' || fail "detail --json: nbd_device not null"
R stop m > /dev/null || fail "stop m after the refusals"
echo "$0: ok"
