#!/bin/bash
# Description: a member named by its NBD URI wherever a member is named
# (issue 30), against nbdkit servers the test starts on Unix sockets.
#  - create RAID 1 over a local file and nbd+unix:///?socket=... through
#    raidd: status and detail name the remote member by its URI exactly as
#    given; examine and examine-bitmap read its superblock and bitmap
#    through the server; the data written reads back;
#  - assemble with explicit members, and assemble --scan from a
#    configuration whose DEVICE line names the URI;
#  - replace onto another remote member, zero the one replaced (through
#    its server: examine finds no superblock after), add it back;
#  - refused, each with an error naming the URI, nothing written to any
#    member (cmp against copies): a URI of an unknown scheme (nbdx://,
#    http://), a socket nobody listens on, an export the server does not
#    have (nbdkit's exportname filter), a server smaller than the array
#    needs (add), a URI as an array name, one remote member named twice, a
#    member of a running array (zero); an ARRAY line's devices= URI that
#    does not answer fails assemble --scan naming it.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires nbdkit --version
requires nbdkit file --version
requires nbdkit --filter=exportname null --version
requires nbdcopy --version

mktmpdir test-raidctl-uri
d=$tmpdir

# serve NAME ARGS...: nbdkit ARGS on $d/NAME.sock, stopped by its PID when
# the test ends (after raidd: raidd_env's hook is registered later, so it
# runs first).  nbdkit writes its PID file once it listens.
serve ()
{
    local name=$1 i
    shift
    nbdkit -U "$d/$name.sock" -P "$d/$name.pid" "$@" ||
        { echo "$0: FAIL: nbdkit $*" >&2; exit 1; }
    for (( i = 0; i < 50; i++ )); do
        [ -s "$d/$name.pid" ] && break
        sleep 0.1
    done
    cleanup_fn kill_pid "$(cat "$d/$name.pid")"
}

cd "$d"
truncate -s 64M local.img r1.img r2.img spare.img
truncate -s 16M small.img
serve r1 file r1.img
serve r2 file r2.img
serve small file small.img
serve named --filter=exportname file spare.img exportname=good exportname-strict=true
u1="nbd+unix:///?socket=$d/r1.sock"
u2="nbd+unix:///?socket=$d/r2.sock"
usmall="nbd+unix:///?socket=$d/small.sock"
ubadname="nbd+unix:///bad?socket=$d/named.sock"
unone="nbd+unix:///?socket=$d/nobody.sock"

raidd_env "$d"
start_raidd
array="nbd+unix:///u?socket=$sock"

# snapshot / unchanged WHAT: every member's bytes copied, then compared.
files="local.img r1.img r2.img spare.img small.img"
snapshot () { for f in $files; do cp --sparse=always "$f" "$f.before"; done; }
unchanged ()
{
    for f in $files; do cmp -s "$f" "$f.before" || fail "$1 wrote to $f"; done
}
# refused WHAT WORDS ARGS...: raidctl ARGS fails, its error holds WORDS,
# and no member changed.
refused ()
{
    local what=$1 words=$2
    shift 2
    snapshot
    R "$@" > out 2> err && fail "$what: raidctl $* succeeded"
    grep -qF -- "$words" err || fail "$what: expected '$words': $(cat err)"
    unchanged "$what"
}
# refused_running WHAT WORDS ARGS...: the same while array u runs: raidd
# itself writes u's members (the bitmap's and safe mode's superblock
# updates), so those are checked to still be u's members, the others byte
# for byte.
refused_running ()
{
    local what=$1 words=$2 f
    shift 2
    snapshot
    R "$@" > out 2> err && fail "$what: raidctl $* succeeded"
    grep -qF -- "$words" err || fail "$what: expected '$words': $(cat err)"
    for f in r2.img spare.img small.img; do
        cmp -s "$f" "$f.before" || fail "$what wrote to $f"
    done
    for f in local.img "$u1"; do
        R examine "$f" 2>&1 | grep -q "Name : .*:u" || fail "$what: $f is no longer u's member"
    done
}
same_data () {  # same_data WHEN: the array starts with what was written
    rm -f back
    nbdcopy "$array" back || fail "nbdcopy from u $1"
    cmp -n 4194304 back data || fail "data $1"
}
in_sync () {  # in_sync URI: raidd's status has URI in sync in u
    R status --json u | python3 -c '
import json, sys
a = json.load(sys.stdin)[0]
sys.exit(0 if any(m["path"] == sys.argv[1] and m["state"] == "in_sync"
                  for m in a["members"]) else 1)' "$1"
}

# ---- bad input before anything exists ------------------------------------------
refused "unknown scheme" "member nbdx://h/e: unknown URI scheme 'nbdx'" \
    create bad --level 1 local.img nbdx://h/e
refused "http" "member http://h/e: unknown URI scheme 'http'" \
    create bad --level 1 local.img http://h/e
refused "unreachable" "member $unone:" create bad --level 1 local.img "$unone"
refused "wrong export" "member $ubadname:" create bad --level 1 local.img "$ubadname"
grep -q "no export named 'bad'" err || fail "wrong export: $(cat err)"
refused "URI as name" "array name 'nbd://h/e' is a remote member's URI" \
    create nbd://h/e --level 1 local.img "$u1"
refused "named twice" "$u1 and $u1 are the same remote member" \
    create bad --level 1 "$u1" "$u1"
refused "zero unknown scheme" "member nbds+tcp://h/e: unknown URI scheme" \
    zero nbds+tcp://h/e
refused "examine unknown scheme" "member http://h/e: unknown URI scheme" \
    examine http://h/e

# ---- create, status, examine -------------------------------------------------------
R create u --level 1 --bitmap internal local.img "$u1" > out || fail "create: $(cat out)"
R status u | grep -qF "$u1[1]" || fail "status does not name $u1: $(R status u)"
R detail u | grep -qF "$u1" || fail "detail does not name $u1"
R wait u > /dev/null || fail "wait u"
head -c 4M /dev/urandom > data
nbdcopy data "$array" || fail "nbdcopy to u"
R examine "$u1" > out || fail "examine $u1: $(cat out)"
grep -qF "$u1:" out && grep -q "Name : .*:u" out && grep -q "Raid Level : raid1" out ||
    fail "examine $u1: $(cat out)"
R examine-bitmap "$u1" > out || fail "examine-bitmap $u1: $(cat out)"
grep -qF "Filename : $u1" out || fail "examine-bitmap $u1: $(cat out)"
refused_running "zero in use" "zero: member $u1 is in running array u" zero "$u1"
refused_running "add too small" "member $usmall is too small" add u "$usmall"

# ---- assemble: named members, then --scan by a DEVICE line ---------------------------
R stop u > /dev/null || fail "stop u"
R assemble u local.img "$u1" > out || fail "assemble u: $(cat out)"
in_sync "$u1" || fail "assemble: $u1 not in sync"
R stop u > /dev/null || fail "stop u"
printf 'DEVICE %s %s\nARRAY u\n' "$d/local.img" "$u1" > scan.conf
R --config scan.conf assemble --scan --timeout 5 > out 2>&1 ||
    fail "assemble --scan: $(cat out)"
in_sync "$u1" || fail "assemble --scan: $u1 not in sync: $(cat out)"
R status u | grep -q "\[2/2\] \[UU\]" || fail "assemble --scan: $(R status u)"
same_data "after assemble --scan"

# An ARRAY line's devices= URI that does not answer: said, naming it, and
# assemble --scan fails (the array starts degraded, as the last resort).
R stop u > /dev/null || fail "stop u"
printf 'ARRAY u devices=%s,%s\n' "$d/local.img" "$unone" > down.conf
R --config down.conf assemble --scan --timeout 1 > out 2>&1 &&
    fail "assemble --scan with $unone down succeeded: $(cat out)"
grep -qF "$unone" out || fail "assemble --scan does not name $unone: $(cat out)"
# It ran without $u1, which its superblocks now call faulty: assembled
# without it, then taken back by add (md's re-add, over the bitmap).
R stop u > /dev/null || fail "stop u (degraded)"
R assemble u local.img "$u1" > out 2>&1 || fail "assemble u again: $(cat out)"
R add u "$u1" > out || fail "add $u1 back: $(cat out)"
grep -q "re-added" out || fail "add $u1 back: $(cat out)"
R wait u > /dev/null || fail "wait u (re-add)"
in_sync "$u1" || fail "re-add: $u1 not in sync"

# ---- replace, zero, add -------------------------------------------------------------
R replace u "$u1" "$u2" > out || fail "replace: $(cat out)"
R wait u > /dev/null || fail "wait u (replace)"
in_sync "$u2" || fail "replace: $u2 not in sync"
R remove u "$u1" > /dev/null || fail "remove $u1"
R zero "$u1" > out || fail "zero $u1: $(cat out)"
grep -qF "$u1: erased the metadata 1.2 superblock at byte 4096" out || fail "zero: $(cat out)"
R examine "$u1" > out 2>&1 && fail "examine $u1 after zero: $(cat out)"
grep -q "no md superblock" out || fail "examine after zero: $(cat out)"
R fail u "$u2" > /dev/null && R remove u "$u2" > /dev/null || fail "fail/remove $u2"
R add u "$u1" > out || fail "add $u1: $(cat out)"
R wait u > /dev/null || fail "wait u (add)"
in_sync "$u1" || fail "add: $u1 not in sync"
same_data "after replace and add"
R stop u > /dev/null || fail "stop u"
stop_raidd
echo "$0: OK"
