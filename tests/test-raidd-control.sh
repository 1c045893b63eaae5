#!/bin/bash
# Description: raidd's control socket holds against misbehaving clients
# and bad requests, and raidd refuses to start next to another raidd.
# - Clients that connect and send nothing, or half a request, hold up no
#   one: raidctl status answers meanwhile, they are cut off after 10 s with
#   an error, and SIGTERM stops raidd (exit 0) while one is connected.
# - A request over 1 MiB is refused, naming the limit.
# - Fields of the wrong type or range ("rebuild_min": "fast", -1, 1e300,
#   "run": "yes", a name with a NUL, unknown fields) are refused naming the
#   field, and change nothing (rebuild limits, running arrays).
# - A request with a key twice in one object, at any depth ("verb" twice,
#   "ver\u0062" and "verb", in a nested object), or a key holding a NUL, is
#   refused naming the key and does nothing (r1 is not stopped); so is one
#   that is not strict JSON (a trailing comma, a second object).
# - Array names outside md's [A-Za-z0-9._-] (1 to 32) are refused by
#   raidctl create before a byte is written (checksums of the members) and
#   by raidd's assemble; an array named by its superblocks still assembles.
# - The URI in raidd's replies is percent-encoded: nbdinfo opens it with
#   an NBD socket path holding a space, '&' and '%'.
# - A second raidd on the same control socket, or with the same pidfile,
#   exits non-zero saying why, and the first keeps answering; a raidd
#   started in the background that cannot set up says why on stderr.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires python3 --version
requires nbdinfo --version
requires_root

mktmpdir test-raidd-control
raidd_env "$tmpdir"
sock="$d/nbd b&c%.sock"           # URIs must encode it
misuse=$top_srcdir/tests/control-misuse.py
M () { python3 "$misuse" "$@"; }
# request JSON: send it as is, the reply in $d/reply.
request () { M request "$ctl" "$1" > "$d/reply"; }
refused () {   # refused WHAT PATTERN: the reply is an error matching PATTERN
  grep -q '"ok":false' "$d/reply" || fail "$1 was accepted: $(cat "$d/reply")"
  grep -q -- "$2" "$d/reply" || fail "$1: the error does not say '$2': $(cat "$d/reply")"
}
# stall NAME [PARTIAL]: a client holding a connection, in $d/NAME.out.
stall () {
  local i
  python3 "$misuse" stall "$ctl" "${2:-}" > "$d/$1.out" &   # $! is python's
  eval "${1}_pid=$!"
  cleanup_fn kill_pid "$!"
  for (( i = 0; i < 300; i++ )); do
    grep -qs connected "$d/$1.out" && return 0
    sleep 0.1
  done
  fail "stalled client $1 could not connect"
}
sums () { sha256sum "$@" | cut -d' ' -f1; }

start_raidd --pidfile "$d/raidd.pid"

# ---- stalled clients ---------------------------------------------------------
stall quiet
stall half '{"verb": "sta'
# Under the 10 s a request may take: not freed by their time-out.
timeout 8 "$raidctl" --control "$ctl" status > /dev/null ||
  fail "raidctl status did not answer within 8 s while two clients stalled"
grep -q closed "$d/quiet.out" && fail "a stalled client was closed at once"
for c in quiet half; do
  for (( i = 0; i < 400; i++ )); do
    grep -q closed "$d/$c.out" && break
    sleep 0.1
  done
  grep -q closed "$d/$c.out" || fail "stalled client $c was never cut off"
  grep -q "no complete request within 10 seconds" "$d/$c.out" ||
    fail "stalled client $c: no error: $(cat "$d/$c.out")"
done

# ---- size limit ------------------------------------------------------------------
M oversize "$ctl" $(( (1 << 20) + 4096 )) > "$d/reply"
refused "a request over 1 MiB" "request too large: more than 1048576 bytes (1 MiB)"

# ---- field types and ranges ------------------------------------------------------
for i in 0 1; do
  head -c 2M /dev/urandom > "$d/a$i"; truncate -s 40M "$d/a$i"
  head -c 2M /dev/urandom > "$d/b$i"; truncate -s 40M "$d/b$i"
done
R create r1 --level 1 --assume-clean --force "$d/a0" "$d/a1" > "$d/out" || fail "create r1"
R set r1 rebuild-min=2M rebuild-max=20M > /dev/null
limits () { R --json status r1 | python3 -c 'import json,sys; s=json.load(sys.stdin)[0]["sync"]; print(s["rebuild_min"], s["rebuild_max"])'; }
before=$(limits)
[ "$before" = "2097152 20971520" ] || fail "rebuild limits are $before"
for bad in '"fast"' -1 1e300 1.5 100000000000000000000 9223372036854775808 true null '[1]'; do
  request "{\"verb\": \"set\", \"name\": \"r1\", \"rebuild_min\": $bad}"
  refused "rebuild_min: $bad" 'set: field \\"rebuild_min\\" must be an integer from 0'
  [ "$(limits)" = "$before" ] || fail "rebuild_min: $bad changed the limits to $(limits)"
done
request '{"verb": "set", "name": "r1", "rebuild_max": 30000000, "rebuild-min": 1}'
refused "an unknown field" 'set: unknown field \\"rebuild-min\\"'
[ "$(limits)" = "$before" ] || fail "a refused set changed the limits to $(limits)"
request '{"verb": "stop", "name": "r1", "forse": true}'
refused "stop with a misspelt field" 'unknown field \\"forse\\"'
request '{"verb": "status", "name": 5}'
refused "a number for a name" 'status: field \\"name\\" must be a string, not 5'
request '{"verb": "stop"}'
refused "stop without a name" 'stop: field \\"name\\" is missing'
request '{"verb": true}'
refused "a boolean verb" 'field \\"verb\\" must be a string'
R status r1 > /dev/null || fail "r1 stopped by a refused request"

# ---- duplicate keys ----------------------------------------------------------------
# json-c keeps the last of two members with one key: raidd refuses such a
# request whole, at any depth, comparing the keys decoded, and does nothing.
request '{"verb": "status", "verb": "stop", "name": "r1"}'
refused "a duplicate verb" 'duplicate key \\"verb\\" in the request: each key may be given once'
R status r1 > /dev/null || fail "a request with a duplicate verb stopped r1"
request '{"ver\u0062": "stop", "verb": "status", "name": "r1"}'
refused "an escaped duplicate verb" 'duplicate key \\"verb\\" in the request:'
request '{"verb": "stop", "name": "nosuch", "n\u0061me": "r1"}'
refused "an escaped duplicate name" 'duplicate key \\"name\\" in the request:'
R status r1 > /dev/null || fail "a request with a duplicate name stopped r1"
request '{"verb": "set", "name": "r1", "rebuild_min": 1, "rebuild_min": 4096}'
refused "a duplicate field" 'duplicate key \\"rebuild_min\\"'
[ "$(limits)" = "$before" ] || fail "a duplicate field changed the limits to $(limits)"
request '{"verb": "status", "x": {"a": 1, "b": {}, "a": 2}}'
refused "a duplicate in a nested object" 'duplicate key \\"a\\" in the request.s \\"x\\":'
request '{"verb": "status", "x": [{"a": 1}, {"b": [{"c": 1, "\u0063": 2}]}]}'
refused "a duplicate in an object in lists" 'duplicate key \\"c\\" in the request.s \\"x\[1\]\.b\[0\]\\":'
request '{"verb\u0000x": "stop", "name": "r1"}'
refused "a key with a NUL" 'key \\"verb\\\\u0000x\\" in the request holds a NUL character (byte 4)'
request '{"verb": "stop", "name": "r1",}'
refused "a trailing comma" 'malformed request: unexpected character at byte 30'
request '{"verb": "status"} {"verb": "stop", "name": "r1"}'
refused "a second object" 'malformed request: unexpected character at byte 19'
R status r1 > /dev/null || fail "a refused request stopped r1"
# Distinct keys, escaped or not, in the request and in nested objects: served.
request '{"ver\u0062": "detail", "n\u0061me": "r1"}'
grep -q '"ok":true,"arrays":\[{"name":"r1"' "$d/reply" || fail "escaped keys: $(cat "$d/reply")"

# A degraded start needs "run": true, not "yes".
R create deg --level 1 --assume-clean --force "$d/b0" "$d/b1" > /dev/null || fail "create deg"
R stop deg > /dev/null
request "{\"verb\": \"assemble\", \"name\": \"deg\", \"members\": [\"$d/b0\"], \"run\": \"yes\"}"
refused '"run": "yes"' 'assemble: field \\"run\\" must be true or false, not \\"yes\\" (a string)'
request "{\"verb\": \"assemble\", \"name\": \"deg\", \"members\": [\"$d/b0\", 7]}"
refused "a number for a member" 'field \\"members\\" (element 1) must be a string'
request "{\"verb\": \"assemble\", \"name\": \"can\\u0000ary\", \"members\": [\"$d/b0\", \"$d/b1\"]}"
refused "a name with a NUL" 'assemble: field \\"name\\" holds a NUL character (byte 3)'
request "{\"verb\": \"assemble\", \"name\": \"deg\", \"members\": [\"$d/b0\\u0000x\", \"$d/b1\"]}"
refused "a member with a NUL" 'field \\"members\\" (element 0) holds a NUL'
# A running array's member under another name (a symlink, a second path)
# is the same member: refused by name, not by the lock's EBUSY.
ln -s a0 "$d/link-a0"
request "{\"verb\": \"assemble\", \"name\": \"deg\", \"members\": [\"$d/link-a0\", \"$d/b1\"], \"run\": true}"
refused "r1's member through a symlink" "link-a0 is already in running array r1"
request "{\"verb\": \"add\", \"name\": \"r1\", \"member\": \"$d/./a1\"}"
refused "r1's member through a second path" "a1 is already in running array r1"
R --json status > "$d/status.json"
python3 -c 'import json,sys; n=[a["name"] for a in json.load(open(sys.argv[1]))]; assert n == ["r1"], n' \
  "$d/status.json" || fail "a refused assemble started an array: $(cat "$d/status.json")"

# ---- array names -----------------------------------------------------------------
# raidctl create refuses them before a byte is written.
want=$(sums "$d/b0" "$d/b1")
for name in 'a?b&c' $'two\nlines' 'x:y' 'a b' 'a/b' '' 'n23456789012345678901234567890123'; do
  if R create "$name" --level 1 --force "$d/b0" "$d/b1" > "$d/out" 2> "$d/err"; then
    fail "create accepted the name '$name'"
  fi
  if [ -n "$name" ] && [ ${#name} -le 32 ]; then
    grep -q "array name '.*' holds .*: an array name is 1 to 32 characters of A-Z a-z 0-9 . _ -" "$d/err" ||
      fail "create '$name': $(cat "$d/err")"
  else
    grep -q "1 to 32 characters of A-Z a-z 0-9 . _ -" "$d/err" || fail "create '$name': $(cat "$d/err")"
  fi
  [ "$(sums "$d/b0" "$d/b1")" = "$want" ] || fail "create '$name' wrote to its members"
done
grep -q "array name 'n23456789012345678901234567890123' is 33 bytes long" "$d/err" ||
  fail "the long name: $(cat "$d/err")"
R create ok.name_1-x --level 1 --assume-clean --no-start --force "$d/b0" "$d/b1" > /dev/null 2>&1 ||
  fail "create refused ok.name_1-x"
# raidd's assemble refuses them too, naming the name and the rule.
if R assemble 'a?b&c' "$d/b0" "$d/b1" 2> "$d/err"; then fail "assemble accepted 'a?b&c'"; fi
grep -q "assemble: field \"name\": array name 'a?b&c' holds '?' (byte 1): an array name is 1 to 32 characters of A-Z a-z 0-9 . _ -" "$d/err" ||
  fail "assemble 'a?b&c': $(cat "$d/err")"
request "{\"verb\": \"assemble\", \"name\": \"two\\nlines\", \"members\": [\"$d/b0\", \"$d/b1\"]}"
refused "a name with a newline" "array name 'two\\\\\\\\x0alines' holds 0x0a"
# Named by its superblocks (as an array made by mdadm is): it assembles.
request "{\"verb\": \"assemble\", \"members\": [\"$d/b0\", \"$d/b1\"]}"
grep -q '"ok":true,"name":"ok.name_1-x"' "$d/reply" || fail "assemble by superblock name: $(cat "$d/reply")"

# ---- URIs --------------------------------------------------------------------------
uri=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["uri"])' "$d/reply")
[ "$uri" = "nbd+unix:///ok.name_1-x?socket=$d/nbd%20b%26c%25.sock" ] || fail "URI $uri"
[ "$(nbdinfo --size "$uri")" -gt 0 ] || fail "nbdinfo $uri"
R stop ok.name_1-x > /dev/null
R create r2 --level 1 --assume-clean --force "$d/b0" "$d/b1" > "$d/out" 2>/dev/null || fail "create r2"
uri=$(sed -n 's/.*started in raidd: //p' "$d/out")
[ "$uri" = "nbd+unix:///r2?socket=$d/nbd%20b%26c%25.sock" ] || fail "raidctl printed $(cat "$d/out")"
nbdinfo --size "$uri" > /dev/null || fail "nbdinfo on raidctl's URI $uri"

# ---- a second raidd ------------------------------------------------------------------
# On the same control socket: it refuses, naming the socket and the PID.
if timeout 30 "$raidd" --foreground --control "$ctl" --nbd-socket "$d/n2.sock" 2> "$d/err"; then
  fail "a second raidd started on $ctl"
fi
grep -q "another raidd (PID $raidd_pid) is running: it answers on the control socket $ctl" "$d/err" ||
  fail "second raidd on $ctl: $(cat "$d/err")"
R status r1 > /dev/null || fail "the first raidd stopped answering"
# With the same pidfile: it refuses, naming the pidfile and the PID.
[ "$(cat "$d/raidd.pid")" = "$raidd_pid" ] || fail "pidfile holds $(cat "$d/raidd.pid")"
if timeout 30 "$raidd" --foreground --control "$d/c2.sock" --nbd-socket "$d/n2.sock" \
     --pidfile "$d/raidd.pid" 2> "$d/err"; then
  fail "a second raidd started with pidfile $d/raidd.pid"
fi
grep -q "pidfile $d/raidd.pid is locked by another raidd (PID $raidd_pid)" "$d/err" ||
  fail "second raidd with the same pidfile: $(cat "$d/err")"
[ "$(cat "$d/raidd.pid")" = "$raidd_pid" ] || fail "the second raidd rewrote the pidfile"
R status r1 > /dev/null || fail "the first raidd stopped answering"
# A stale socket file (nothing listens) is taken over.
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$d/stale.sock"
"$raidd" --foreground --control "$d/stale.sock" --nbd-socket "$d/n3.sock" >> "$d/raidd3.log" 2>&1 &
stale_pid=$!
cleanup_fn kill_pid "$stale_pid"
for (( i = 0; i < 300; i++ )); do
  "$raidctl" --control "$d/stale.sock" status > /dev/null 2>&1 && break
  kill -0 "$stale_pid" 2>/dev/null || break
  sleep 0.1
done
"$raidctl" --control "$d/stale.sock" status > /dev/null ||
  fail "raidd did not take over a stale socket: $(cat "$d/raidd3.log")"
kill_pid "$stale_pid"

# ---- a daemon that cannot start says why ----------------------------------------------
bg_fails () {  # bg_fails CONTROL PATTERN
  local rc=0
  timeout 30 "$raidd" --control "$1" --nbd-socket "$d/n4.sock" --pidfile "$d/p4" \
    2> "$d/err" || rc=$?
  if [ $rc = 0 ]; then
    kill_pid "$(cat "$d/p4")"
    fail "raidd started in the background with --control $1"
  fi
  grep -q -- "$2" "$d/err" || fail "background raidd, --control $1: stderr says: $(cat "$d/err")"
  [ ! -e "$d/p4" ] || fail "a failed start left its pidfile"
}
touch "$d/file"
bg_fails "$d/file/sub/control.sock" \
  "cannot create the directory $d/file/sub for the control socket $d/file/sub/control.sock: Not a directory"
long=$d/$(printf 'x%.0s' {1..120})/control.sock
bg_fails "$long" "control socket path $long is too long: [0-9]* bytes, at most 107"

# ---- SIGTERM with a stalled client -------------------------------------------------------
stall quiet2
stall half2 '{"verb": "status", "na'
grep -q closed "$d/quiet2.out" && fail "the stalled client was closed before SIGTERM"
kill -TERM "$raidd_pid"
pid_gone "$raidd_pid" 30 || fail "raidd did not exit within 30 s of SIGTERM with a stalled client"
rc=0
wait "$raidd_pid" || rc=$?
raidd_pid=
[ $rc = 0 ] || fail "raidd exited $rc on SIGTERM"
[ ! -e "$d/raidd.pid" ] || fail "pidfile left behind"
echo "$0: ok"
