#!/bin/bash
# Description: raidd as a systemd service (README "Running raidd as a
# service").
# - make install DESTDIR=... puts raidd.service, raidd-scrub.service,
#   raidd-scrub.timer, 65-raidd.rules and the raidctl completion in the
#   directories configure chose; the services' ExecStart name the installed
#   programs; systemd-analyze verify accepts every unit, with the installed
#   programs and man pages found (only their DESTDIR prefix substituted),
#   and says nothing else.  The udev rule is checked line by line against
#   udev's rule syntax (udevadm is not here, and 252 has no verify).
# - Under systemd-socket-activate with a NOTIFY_SOCKET (a stand-in
#   listening, tests/service-listen.py): the first NBD client on the TCP
#   socket systemd holds starts raidd, which answers it; raidd sends
#   READY=1 with MAINPID (its own PID: it did not fork) and STATUS=serving
#   N arrays, serves an array over that socket (data written there reads
#   back over the Unix socket), and on SIGTERM sends STOPPING=1 after
#   READY=1.  A datagram socket passed as "nbd" is refused, naming it.
# - bash completion (bash-completion's own loader): raidctl sc<TAB> is
#   scrub, detail <TAB> and scrub --repair <TAB> list the running arrays,
#   --level <TAB> its values, scrub --<TAB> offers --all.
# - raidctl scrub --all --wait checks the raid1 and the raid5 array
#   (mismatch_cnt 0 each, raidd logs both checks), skips the degraded and
#   the RAID 0 array with a note, and says the same in --json.
# - --log=journal (a stand-in journald on /run/systemd/journal/socket in a
#   private mount namespace): entries carry PRIORITY, SYSLOG_IDENTIFIER and
#   RAID_ARRAY/RAID_EVENT/RAID_MEMBER; with no journal at all, an error at
#   start still reaches stderr.  --log=bogus is a usage error.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires_root
requires python3 --version
requires nbdinfo --version
requires nbdcopy --version
requires systemd-analyze --version
requires systemd-socket-activate --help
requires unshare --mount true
requires_file /usr/share/bash-completion/bash_completion

mktmpdir test-raidd-service
raidd_env "$tmpdir"
listen=$top_srcdir/tests/service-listen.py

# ---- make install: units, rule, completion ------------------------------------
inst=$d/inst
${MAKE:-make} -C "$top_builddir" install DESTDIR="$inst" > "$d/install.log" 2>&1 ||
    { tail -20 "$d/install.log"; fail "make install DESTDIR=$inst failed"; }
# The directories, as make expands them (they may be ${prefix}-relative).
# Not as a sub-make of make check: its MAKEFLAGS (-w in CI) would add
# "Entering directory" lines to the answer.
expand () {
    printf 'include Makefile\nprint:\n\t@echo $(%s)\n' "$1" |
        env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ${MAKE:-make} -s -C "$top_builddir" \
            --no-print-directory -f - print
}
unitdir=$(expand systemdsystemunitdir)
rulesdir=$(expand udevrulesdir)
compdir=$(expand bashcompletiondir)
sbindir=$(expand sbindir)
mandir=$(expand mandir)
for f in "$unitdir/raidd.service" "$unitdir/raidd-scrub.service" "$unitdir/raidd-scrub.timer" \
         "$rulesdir/65-raidd.rules" "$compdir/raidctl" "$sbindir/raidd" "$sbindir/raidctl"; do
    [ -f "$inst$f" ] || fail "make install did not install $f (under $inst)"
done
grep -qx "ExecStart=$sbindir/raidd --foreground" "$inst$unitdir/raidd.service" ||
    fail "raidd.service does not start $sbindir/raidd: $(grep ExecStart "$inst$unitdir/raidd.service")"
grep -qx "ExecStart=$sbindir/raidctl scrub --all --wait" "$inst$unitdir/raidd-scrub.service" ||
    fail "raidd-scrub.service does not run $sbindir/raidctl scrub --all --wait"
grep -q '^Type=notify$' "$inst$unitdir/raidd.service" || fail "raidd.service is not Type=notify"

# systemd-analyze verify: the units as installed, their programs' paths
# under DESTDIR (it checks they are executable), man pages from DESTDIR.
mkdir "$d/units"
for u in raidd.service raidd-scrub.service raidd-scrub.timer; do
    sed -e "s|^ExecStart=$sbindir/|ExecStart=$inst$sbindir/|" "$inst$unitdir/$u" > "$d/units/$u"
done
( cd "$d/units" && MANPATH=$inst$mandir systemd-analyze verify \
      raidd.service raidd-scrub.service raidd-scrub.timer ) > "$d/verify.out" 2>&1 ||
    { cat "$d/verify.out"; fail "systemd-analyze verify refused the units"; }
[ ! -s "$d/verify.out" ] || { cat "$d/verify.out"; fail "systemd-analyze verify complained"; }

# The udev rule: every line a comment, a label or KEY[{attr}]OP"value" pairs.
pair='[A-Z_]+(\{[^}]*\})?(==|!=|\+=|-=|:=|=)"[^"]*"'
lineno=0
while IFS= read -r line; do
    lineno=$((lineno + 1))
    [[ -z $line || $line == \#* ]] && continue
    [[ $line =~ ^$pair(,\ *$pair)*$ ]] || fail "65-raidd.rules:$lineno does not parse: $line"
done < "$inst$rulesdir/65-raidd.rules"
grep -q 'ENV{ID_FS_TYPE}!="linux_raid_member", GOTO="raidd_end"' "$inst$rulesdir/65-raidd.rules" &&
    grep -q 'ENV{SYSTEMD_WANTS}+="raidd.service"' "$inst$rulesdir/65-raidd.rules" &&
    grep -q '^LABEL="raidd_end"$' "$inst$rulesdir/65-raidd.rules" ||
    fail "65-raidd.rules does not hand linux_raid_member devices to raidd.service"

# ---- under systemd: notify and socket activation ------------------------------------
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
notify=$d/notify.sock
python3 "$listen" notify "$notify" > "$d/notify.out" &
cleanup_fn kill_pid $!
for (( i = 0; i < 100; i++ )); do grep -qs listening "$d/notify.out" && break; sleep 0.1; done
grep -qs listening "$d/notify.out" || fail "the notify listener did not start"

# A raidd that forked would escape kill_pid: its pidfile names it.
kill_pidfile () { [ ! -s "$1" ] || kill_pid "$(cat "$1")"; }
cleanup_fn kill_pidfile "$d/raidd.pid"
systemd-socket-activate -l "127.0.0.1:$port" --fdname=nbd-tcp -E NOTIFY_SOCKET="$notify" \
    "$raidd" --control "$ctl" --nbd-socket "$sock" --pidfile "$d/raidd.pid" --threads 2 \
    >> "$d/raidd.log" 2>&1 &
raidd_pid=$!                    # systemd-socket-activate execs raidd in place
for (( i = 0; i < 100; i++ )); do grep -qs "Listening on" "$d/raidd.log" && break; sleep 0.1; done
R status > /dev/null 2>&1 && fail "raidd answered before any client came (not activated)"
# The first client starts raidd and is served.
timeout 20 nbdinfo --list "nbd://127.0.0.1:$port" > "$d/list.out" 2>&1 ||
    fail "nbdinfo --list over the activated socket: $(cat "$d/list.out")"
for (( i = 0; i < 100; i++ )); do grep -q '^READY=1$' "$d/notify.out" && break; sleep 0.1; done
grep -q '^READY=1$' "$d/notify.out" || fail "no READY=1: $(cat "$d/notify.out")"
grep -q "^MAINPID=$raidd_pid$" "$d/notify.out" ||
    fail "MAINPID is not raidd's PID $raidd_pid (did it fork?): $(cat "$d/notify.out")"
grep -q '^STATUS=serving 0 arrays$' "$d/notify.out" || fail "no STATUS=serving 0 arrays"
grep -q "serving TCP 127.0.0.1:$port from systemd" "$d/raidd.log" ||
    fail "raidd did not take the TCP socket from systemd"
grep -q "ready: .*tcp 127.0.0.1:$port" "$d/raidd.log" || fail "the ready line does not name the TCP socket"

new_members "$d" 8 32M
R create md0 --level 1 --assume-clean "${members[0]}" "${members[1]}" > /dev/null || fail "create md0"
R create md1 --level 5 --assume-clean "${members[2]}" "${members[3]}" "${members[4]}" > /dev/null ||
    fail "create md1"
for (( i = 0; i < 50; i++ )); do grep -q '^STATUS=serving 2 arrays$' "$d/notify.out" && break; sleep 0.1; done
grep -q '^STATUS=serving 2 arrays$' "$d/notify.out" || fail "no STATUS=serving 2 arrays"
head -c 1M /dev/urandom > "$d/data"
nbdcopy "$d/data" "nbd://127.0.0.1:$port/md0" || fail "nbdcopy to md0 over the activated socket"
nbdcopy "nbd+unix:///md0?socket=$sock" "$d/back" || fail "nbdcopy from md0 over the Unix socket"
cmp -n 1048576 "$d/back" "$d/data" ||
    fail "md0 does not read back over the Unix socket what was written over TCP"

# ---- completion ----------------------------------------------------------------------------
R create md2 --level 0 "${members[5]}" "${members[6]}" > /dev/null || fail "create md2"
R create md3 --level 1 --assume-clean "${members[7]}" missing > /dev/null || fail "create md3"
# complete WORDS...: COMPREPLY for the command line WORDS (the last one
# being completed), sorted, one a line.
complete_line () {
    bash -c '
        . /usr/share/bash-completion/bash_completion
        . "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))
        COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        _raidctl raidctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf "%s\n" "${COMPREPLY[@]}" | sort
    ' complete "$inst$compdir/raidctl" "$@"
}
[ "$(complete_line "$raidctl" sc)" = scrub ] || fail "raidctl sc<TAB>: $(complete_line "$raidctl" sc)"
[ "$(complete_line "$raidctl" --control "$ctl" detail '' | tr '\n' ' ')" = "md0 md1 md2 md3 " ] ||
    fail "raidctl detail <TAB>: $(complete_line "$raidctl" --control "$ctl" detail '')"
[ "$(complete_line "$raidctl" --control "$ctl" scrub m | tr '\n' ' ')" = "md0 md1 md2 md3 " ] ||
    fail "raidctl scrub m<TAB>: $(complete_line "$raidctl" --control "$ctl" scrub m)"
[ "$(complete_line "$raidctl" --control "$ctl" scrub --repair '' | tr '\n' ' ')" = "md0 md1 md2 md3 " ] ||
    fail "raidctl scrub --repair <TAB>: $(complete_line "$raidctl" --control "$ctl" scrub --repair '')"
[ "$(complete_line "$raidctl" create x --level '' | tr '\n' ' ')" = "0 1 10 5 " ] ||
    fail "raidctl create x --level <TAB>: $(complete_line "$raidctl" create x --level '')"
complete_line "$raidctl" scrub -- | grep -qx -- --all || fail "raidctl scrub --<TAB> lacks --all"
complete_line "$raidctl" st | grep -qx status || fail "raidctl st<TAB> lacks status"

# ---- scrub --all ------------------------------------------------------------------------------
R scrub --all md0 > "$d/out" 2>&1 && fail "scrub --all md0 was accepted"
grep -q "give no NAME" "$d/out" || fail "scrub --all md0: $(cat "$d/out")"
timeout 120 "$raidctl" --control "$ctl" scrub --all --wait > "$d/scrub.out" 2>&1 ||
    fail "scrub --all --wait: $(cat "$d/scrub.out")"
for a in md0 md1; do
    grep -q "^raidctl: $a: check done: mismatch_cnt 0$" "$d/scrub.out" ||
        fail "scrub --all did not check $a: $(cat "$d/scrub.out")"
    grep -q "$a: check started on request" "$d/raidd.log" || fail "raidd never checked $a"
done
grep -q "^raidctl: md2: skipped: RAID 0 has no redundancy" "$d/scrub.out" ||
    fail "scrub --all did not skip the RAID 0 md2: $(cat "$d/scrub.out")"
grep -q "^raidctl: md3: skipped: it is degraded" "$d/scrub.out" ||
    fail "scrub --all did not skip the degraded md3: $(cat "$d/scrub.out")"
grep -q "md[23]: check started" "$d/raidd.log" && fail "raidd checked a skipped array"
R --json scrub --all > "$d/scrub.json" || fail "scrub --all --json"
python3 - "$d/scrub.json" <<'EOF' || fail "scrub --all --json: $(cat "$d/scrub.json")"
import json, sys
r = {a["name"]: a for a in json.load(open(sys.argv[1]))["arrays"]}
assert r["md0"]["action"] == "check" and r["md1"]["action"] == "check", r
assert "degraded" in r["md3"]["skipped"] and "RAID 0" in r["md2"]["skipped"], r
EOF
R wait md0 > /dev/null && R wait md1 > /dev/null || fail "the second scrubs did not end"

# ---- stopping ---------------------------------------------------------------------------------
kill "$raidd_pid"
wait "$raidd_pid" || fail "raidd exited $? on SIGTERM"
raidd_pid=
grep -q '^STOPPING=1$' "$d/notify.out" || fail "no STOPPING=1: $(cat "$d/notify.out")"
[ "$(grep -n -e '^READY=1$' -e '^STOPPING=1$' "$d/notify.out" | cut -d: -f2 | tr '\n' ' ')" = \
  "READY=1 STOPPING=1 " ] || fail "READY=1 and STOPPING=1 out of order: $(cat "$d/notify.out")"

# A datagram socket as "nbd": refused, naming it.
: > "$d/bad.log"
timeout 20 systemd-socket-activate -d -l "$d/dgram.sock" --fdname=nbd \
    "$raidd" --foreground --control "$ctl" --nbd-socket "$sock" > "$d/bad.log" 2>&1 &
bad=$!
for (( i = 0; i < 100; i++ )); do grep -qs "Listening on" "$d/bad.log" && break; sleep 0.1; done
python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b"x", sys.argv[1])' \
    "$d/dgram.sock"
wait "$bad" && fail "raidd ran with a datagram socket as its NBD socket"
grep -q 'socket 3 ("nbd") from systemd: expected a listening Unix stream socket' "$d/bad.log" ||
    fail "the bad socket was not named: $(cat "$d/bad.log")"

# ---- the journal ------------------------------------------------------------------------------
"$raidd" --log=bogus > "$d/out" 2>&1 && fail "--log=bogus was accepted"
grep -q -- "--log bogus: expected auto, journal, syslog or stderr" "$d/out" ||
    fail "--log=bogus: $(cat "$d/out")"
# In a mount namespace of its own, /run/systemd is an empty tmpfs: first
# no journal at all, then a stand-in journald.
cat > "$d/journal.sh" <<'EOF'
set -e
d=$1 raidd=$2 raidctl=$3 listen=$4
mount -t tmpfs tmpfs /run/systemd
# No journal: the error at start reaches stderr, and so does what the
# journal would have had (information too).
: > "$d/notsock"
if "$raidd" --foreground --log=journal --control "$d/notsock" --nbd-socket "$d/j-nbd.sock" \
     > "$d/nojournal.out" 2>&1; then
    echo "raidd started with a file as its control socket"; exit 1
fi
"$raidd" --foreground --log=journal --control "$d/j.sock" --nbd-socket "$d/j-nbd.sock" \
    > "$d/nojournal-ready.out" 2>&1 &
rp=$!
for (( i = 0; i < 100; i++ )); do "$raidctl" --control "$d/j.sock" status > /dev/null 2>&1 && break; sleep 0.1; done
kill $rp
wait $rp
mkdir /run/systemd/journal
python3 "$listen" journal /run/systemd/journal/socket > "$d/journal.out" &
jp=$!
trap 'kill $jp' EXIT
for (( i = 0; i < 100; i++ )); do grep -qs listening "$d/journal.out" && break; sleep 0.1; done
"$raidd" --foreground --log=journal --control "$d/j.sock" --nbd-socket "$d/j-nbd.sock" \
    > "$d/journal-stderr.out" 2>&1 &
rp=$!
for (( i = 0; i < 100; i++ )); do "$raidctl" --control "$d/j.sock" status > /dev/null 2>&1 && break; sleep 0.1; done
"$raidctl" --control "$d/j.sock" assemble md0 "$d/m0.img" "$d/m1.img" > /dev/null
"$raidctl" --control "$d/j.sock" fail md0 "$d/m1.img" > /dev/null
kill $rp
wait $rp
sleep 0.5
EOF
unshare --mount bash "$d/journal.sh" "$d" "$raidd" "$raidctl" "$listen" > "$d/journal-run.out" 2>&1 ||
    fail "the journal run: $(cat "$d/journal-run.out")"
grep -q "control socket $d/notsock: the path exists and is not a socket" "$d/nojournal.out" ||
    fail "with --log=journal and no journal, the error at start was lost: $(cat "$d/nojournal.out")"
grep -q "^raidd: warning: no journal (/run/systemd/journal/socket is not a socket): logging to stderr" \
    "$d/nojournal-ready.out" && grep -q "^raidd: ready: " "$d/nojournal-ready.out" ||
    fail "with --log=journal and no journal, the ready line was lost: $(cat "$d/nojournal-ready.out")"
# journal.out: entries of KEY=VALUE lines, "--" after each.
entry () {   # entry PATTERN: the entry holding a line matching PATTERN, one line
    awk -v p="$1" '$0 == "--" { if (hit) { print e; exit } e = ""; hit = 0; next }
                   { e = e $0 "|"; if ($0 ~ p) hit = 1 }' "$d/journal.out"
}
e=$(entry '^MESSAGE=md0: assembled')
[[ $e == *"|RAID_ARRAY=md0|"* && $e == *"|RAID_EVENT=assembled|"* && $e == *"PRIORITY=6|"* &&
   $e == *"|SYSLOG_IDENTIFIER=raidd|"* ]] || fail "the assembled entry lacks its fields: $e"
e=$(entry '^MESSAGE=md0: failing member')
[[ $e == *"|RAID_ARRAY=md0|"* && $e == *"|RAID_MEMBER=$d/m1.img|"* && $e == *"|RAID_EVENT=fail|"* &&
   $e == *"PRIORITY=4|"* ]] || fail "the fail entry lacks its fields: $e"
e=$(entry '^MESSAGE=ready: ')
[[ -n $e && $e != *RAID_ARRAY* ]] || fail "the ready entry: $e"
grep -q "ready:" "$d/journal-stderr.out" && fail "with a journal, the log went to stderr too"
exit 0
