#!/bin/bash
# Description: raidctl's command line behaves the same for every verb.
#  - every verb listed by "raidctl --help" answers --help, -h and
#    "raidctl help VERB" with its usage on stdout and exit 0; an unknown
#    option exits 2 with "raidctl VERB: unknown option '--x'" and the
#    verb's usage on stderr;
#  - the help and raidctl(8) agree: every long option in a verb's help is
#    in the verb's entry of the man page, and every option a verb accepts
#    (any option name of raidctl's getopt tables, any short letter) is in
#    its help;
#  - with --json every failure is one JSON object on stdout,
#    {"ok": false, "verb", "error", "errors", "exit"}, exit 1 (2 for usage
#    errors): raidd down, an unknown array, a bad member, raidd's refusal,
#    usage errors;
#  - each verb run here prints exactly one JSON document with --json,
#    scrub --wait, create (which also starts the array) and, as root on
#    loop devices, assemble --scan included;
#  - stop --scan stops every running array; with one held by an NBD client
#    (qemu-io) it stops the others, names that one and exits 1.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires python3 --version
requires qemu-io --version

mktmpdir test-raidctl-cli
raidd_env "$tmpdir"
man=${top_srcdir:-.}/man/raidctl.8
src=${top_srcdir:-.}/raidctl
requires_file "$man" "$src/raidctl.c"

# st CMD...: run CMD, stdout in $d/out, stderr in $d/err; $st its status.
st () { st=0; "$@" >"$d/out" 2>"$d/err" || st=$?; }
show () { echo "--- stdout"; cat "$d/out"; echo "--- stderr"; cat "$d/err"; } >&2
# one_json [PYTHON-EXPR]: $d/out is exactly one JSON document (j), and
# EXPR on it is true.
one_json ()
{
    python3 - "$d/out" "${1:-True}" <<'PY' || { show; return 1; }
import json, sys
j = json.load(open(sys.argv[1]))     # fails on two documents ("Extra data")
assert eval('(' + sys.argv[2] + ')'), (sys.argv[2], j)
PY
}
# json_error VERB EXIT CMD...: CMD fails with EXIT and prints the error object.
json_error ()
{
    local verb=$1 want=$2; shift 2
    st "$@"
    [ "$st" = "$want" ] || { show; fail "'$*' exited $st, expected $want"; }
    one_json "j['ok'] is False and j['verb'] == '$verb' and j['exit'] == $want and
              isinstance(j['error'], str) and j['error'] and j['error'] in j['errors']" ||
        fail "'$*': no JSON error object"
}

# ---- help, unknown options ------------------------------------------------------
"$raidctl" --help > "$d/usage"
verbs=$(awk '/^verbs:/ { on = 1; next } on && /^  [a-z]/ { print $1 }' "$d/usage" | uniq)
[ "$(echo $verbs | wc -w)" -ge 15 ] || fail "raidctl --help lists too few verbs: $verbs"
for v in stop status help; do
    echo " $verbs " | tr '\n' ' ' | grep -q " $v " || fail "raidctl --help does not list $v"
done

# Every option name in raidctl's getopt tables, and every short letter.
cands=$(grep -ho '{ "[a-z][a-z-]*", *\(no\|required\|optional\)_argument' "$src"/*.c |
        sed 's/{ "\([^"]*\)".*/\1/' | grep -vx help | sort -u)
[ -n "$cands" ] || fail "no getopt tables found in $src"

# $d/man-VERB: the verb's entry in the VERBS section of raidctl(8): from
# ".TP" ".B VERB..." to the next verb's.
awk -v verbs="$(echo $verbs)" -v dir="$d" '
    BEGIN { n = split(verbs, a, " "); for (i = 1; i <= n; i++) isverb[a[i]] = 1 }
    /^\.SH / { invb = ($2 == "VERBS"); cur = ""; next }
    !invb { next }
    prev == ".TP" && $1 == ".B" && isverb[$2] { cur = $2 }
    { prev = $0; if (cur != "") { gsub(/\\-/, "-"); print >> (dir "/man-" cur) } }
' "$man"

for v in $verbs; do
    st "$raidctl" "$v" --help
    [ "$st" = 0 ] || { show; fail "$v --help exited $st"; }
    head -1 "$d/out" | grep -q "^usage: raidctl $v" || { show; fail "$v --help: no usage line"; }
    cp "$d/out" "$d/help-$v"
    st "$raidctl" "$v" -h
    [ "$st" = 0 ] && cmp -s "$d/out" "$d/help-$v" || { show; fail "$v -h differs from --help"; }
    st "$raidctl" help "$v"
    [ "$st" = 0 ] && cmp -s "$d/out" "$d/help-$v" || { show; fail "help $v differs from $v --help"; }

    st "$raidctl" "$v" --no-such-option
    [ "$st" = 2 ] || { show; fail "$v --no-such-option exited $st, expected 2"; }
    grep -qx "raidctl $v: unknown option '--no-such-option'" "$d/err" &&
        grep -q "^usage: raidctl $v" "$d/err" ||
        { show; fail "$v --no-such-option: message or usage missing"; }
    [ ! -s "$d/out" ] || { show; fail "$v --no-such-option printed on stdout"; }

    # Help -> man page.
    [ -s "$d/man-$v" ] || fail "raidctl(8) has no entry for $v in VERBS"
    for o in $(grep -o -- '--[a-z][a-z-]*' "$d/help-$v" | sort -u); do
        grep -q -- "$o" "$d/man-$v" || fail "raidctl(8)'s entry for $v does not describe $o"
    done
    # Accepted -> help.  "--OPT --help": an option the verb does not take
    # is refused by name before --help is seen; one it takes (any other
    # outcome) must be in the help.
    for o in $cands; do
        grep -q -- "--$o\b" "$d/help-$v" && continue
        st "$raidctl" --control "$d/none.sock" "$v" "--$o" --help
        [ "$st" = 2 ] && grep -q "unknown option '--$o'" "$d/err" ||
            { show; fail "$v accepts --$o, which its --help does not list"; }
    done
    for o in {a..z} {A..Z}; do
        [ "$o" = h ] && continue
        grep -q -- "-$o\b" "$d/help-$v" && continue
        st "$raidctl" --control "$d/none.sock" "$v" "-$o" --help
        [ "$st" = 2 ] && grep -q "unknown option '-$o'" "$d/err" ||
            { show; fail "$v accepts -$o, which its --help does not list"; }
    done
done

# Help is text, also with --json: nothing follows the usage.
st "$raidctl" --json help stop
[ "$st" = 0 ] && cmp -s "$d/out" "$d/help-stop" || { show; fail "--json help stop"; }

# Values where none is taken, none where one is needed: usage errors naming
# the option.
st "$raidctl" stop --force=yes r1
[ "$st" = 2 ] && grep -q "raidctl stop: option '--force' takes no value" "$d/err" ||
    { show; fail "stop --force=yes"; }
st "$raidctl" assemble --scan --timeout
[ "$st" = 2 ] && grep -q "raidctl assemble: option '--timeout' needs a value" "$d/err" ||
    { show; fail "assemble --timeout without a value"; }

# ---- --json errors without raidd -----------------------------------------------
json_error status 1 R --json status
grep -q "cannot reach raidd" "$d/out" || fail "raidd-down error: $(cat "$d/out")"
json_error stop 1 R stop --scan --json
json_error stop 2 R --json stop                          # no NAME
json_error stop 2 R stop --no-such-option --json         # --json after the bad option
json_error detail 2 R --json detail a b
json_error examine 1 R --json examine "$d/nonexistent"
grep -q "$d/nonexistent" "$d/out" || fail "examine error does not name the member"
json_error frobnicate 2 R --json frobnicate
json_error set 2 R set --json r1 speed=fast

# ---- with raidd -------------------------------------------------------------------
start_raidd
for i in 0 1 2 3 4 5; do truncate -s 16M "$d/m$i"; done

# create --json both creates and starts: one document with both reports.
st R --json create r1 --level 1 --assume-clean "$d/m0" "$d/m1"
[ "$st" = 0 ] || { show; fail "create r1"; }
one_json "j['name'] == 'r1' and j['level'] == 'raid1' and j['uri'].startswith('nbd+unix:///r1')" ||
    fail "create --json is not one document"
R create r5 --level 5 --chunk 64K "$d/m2" "$d/m3" "$d/m4" > /dev/null || fail "create r5"
R wait r5 > /dev/null || fail "wait r5 (initial resync)"

json_error detail 1 R --json detail nosuch
grep -q "nosuch" "$d/out" || fail "unknown array not named: $(cat "$d/out")"
json_error add 1 R --json add r1 "$d/nonexistent"
grep -q "$d/nonexistent" "$d/out" || fail "bad member not named: $(cat "$d/out")"
json_error fail 1 R fail r1 "$d/m5" --json                 # raidd refuses: not a member
json_error scrub 1 R --json scrub nosuch --wait
json_error stats 2 R --json stats r1 --interval 0

# One document per verb.
for cmd in "status" "status r1" "detail r1" "stats r1" "wait r1" "set r1 rebuild-min=2M" \
           "examine $d/m0 $d/m1" "scrub r1 --wait" "scrub r5 --repair --wait"; do
    st R --json $cmd
    [ "$st" = 0 ] || { show; fail "--json $cmd exited $st"; }
    one_json || fail "--json $cmd: not one JSON document"
done
st R scrub r5 --wait --json
one_json "j['last_action'] == 'check' and j['mismatches'] == 0 and j['action'] == 'idle'" ||
    fail "scrub --wait --json: not the sync object"
st R --json stats r1 --interval 0.2 --count 2
[ "$st" = 0 ] && [ "$(wc -l < "$d/out")" = 2 ] || { show; fail "stats --interval --json: not 2 lines"; }
while read -r line; do
    python3 -c 'import json,sys; json.loads(sys.argv[1])' "$line" || fail "stats line: $line"
done < "$d/out"

# assemble --scan --json (block devices only: loop devices, as root): one
# document listing what it started.
if [ "$(id -u)" = 0 ] && [ -e /dev/loop-control ] && command -v losetup >/dev/null &&
   command -v udevadm >/dev/null; then
    truncate -s 16M "$d/l0" "$d/l1"
    l0=$(losetup -f --show "$d/l0") && cleanup_fn losetup -d "$l0"
    l1=$(losetup -f --show "$d/l1") && cleanup_fn losetup -d "$l1"
    R create cliscan --level 1 --assume-clean --no-start "$l0" "$l1" > /dev/null ||
        fail "create cliscan"
    udevadm settle --timeout=30 || :
    st R --json assemble --scan cliscan --timeout 10
    [ "$st" = 0 ] || { show; fail "assemble --scan --json exited $st"; }
    one_json "j['ok'] is True and [a['name'] for a in j['arrays']] == ['cliscan']" ||
        fail "assemble --scan --json: not one document naming cliscan"
    # A member that was missing when the array started is put back by
    # assemble --scan: in the same document.
    R stop cliscan > /dev/null && R assemble cliscan "$l0" --run > /dev/null ||
        fail "assemble cliscan without $l1"
    st R --json assemble --scan cliscan --timeout 10
    [ "$st" = 0 ] || { show; fail "assemble --scan --json (re-add) exited $st"; }
    one_json "j['arrays'] == [] and [r['member'] for r in j['readded']] == ['$l1']" ||
        fail "assemble --scan --json: the re-add is not in one document"
    R stop cliscan > /dev/null || fail "stop cliscan"
else
    echo "$0: not root or no loop devices/udevadm: skipping assemble --scan --json"
fi

# ---- stop --scan -----------------------------------------------------------------
st R stop --scan
[ "$st" = 0 ] || { show; fail "stop --scan exited $st"; }
grep -qx "raidctl: stopped r1" "$d/out" && grep -qx "raidctl: stopped r5" "$d/out" ||
    { show; fail "stop --scan did not report both arrays"; }
R --json status > "$d/out"
one_json "j == []" || fail "arrays still running after stop --scan"
st R stop --scan
[ "$st" = 0 ] && grep -q "no arrays running" "$d/out" || { show; fail "stop --scan with none"; }

# One array held by an NBD client.
R assemble r1 "$d/m0" "$d/m1" > /dev/null || fail "assemble r1"
R assemble r5 "$d/m2" "$d/m3" "$d/m4" > /dev/null || fail "assemble r5"
mkfifo "$d/qio.in"
qemu-io -f raw "nbd+unix:///r5?socket=$sock" < "$d/qio.in" > "$d/qio.log" 2>&1 &
qio_pid=$!
cleanup_fn kill_pid "$qio_pid"
exec 3>"$d/qio.in"
conns () { R --json detail r5 | python3 -c 'import json,sys; print(json.load(sys.stdin)["connections"])'; }
for (( i = 0; i < 300; i++ )); do
    [ "$(conns)" -ge 1 ] && break
    kill -0 "$qio_pid" 2>/dev/null || { cat "$d/qio.log"; fail "qemu-io exited"; }
    sleep 0.1
done
[ "$(conns)" -ge 1 ] || fail "qemu-io did not connect to r5"

st R --json stop --scan
[ "$st" = 1 ] || { show; fail "stop --scan with r5 in use exited $st, expected 1"; }
one_json "j['ok'] is False and j['result'] == {'ok': False, 'stopped': ['r1'], 'failed': ['r5']}
          and 'r5' in j['error'] and any('in use' in e for e in j['errors'])" ||
    fail "stop --scan --json with r5 in use"
R assemble r1 "$d/m0" "$d/m1" > /dev/null || fail "assemble r1 again"
st R stop --scan
[ "$st" = 1 ] || { show; fail "stop --scan with r5 in use exited $st, expected 1"; }
grep -qx "raidctl: stopped r1" "$d/out" || { show; fail "stop --scan did not stop r1"; }
grep -q "array r5 is in use by 1 NBD connection" "$d/err" &&
    grep -q "could not stop r5" "$d/err" || { show; fail "stop --scan did not name r5"; }
R --json status > "$d/out"
one_json "[a['name'] for a in j] == ['r5']" || fail "after stop --scan only r5 should run"

# The client goes: now it stops.
exec 3>&-
pid_gone "$qio_pid" 30 || fail "qemu-io did not exit at the end of its input"
st R stop --scan --force
[ "$st" = 0 ] && grep -qx "raidctl: stopped r5" "$d/out" || { show; fail "stop --scan of r5"; }
echo "$0: OK"
