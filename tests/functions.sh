# Shared helpers for libraid's shell tests (in the style of nbdkit's
# tests/functions.sh).  Source it from a test:
#
#   source ${top_srcdir:-.}/tests/functions.sh
#   set -e
#   requires losetup --version
#   cleanup_fn rm -rf "$dir"
#
# Exit status 77 tells the automake harness the test was skipped; every
# skip says why.  With RAID_TEST_NO_SKIP=1 in the environment (CI sets it:
# there a test that cannot run means a broken machine, not a pass) a skip
# is a failure instead, with the same reason.

# skip REASON...: skip the test "because REASON" (or fail, see above).
skip ()
{
    if [ "${RAID_TEST_NO_SKIP:-}" = 1 ]; then
        echo "$0: FAIL (RAID_TEST_NO_SKIP=1): test skipped because $*" >&2
        exit 1
    fi
    echo "$0: test skipped because $*"
    exit 77
}

# requires CMD [ARGS...]: skip the test unless CMD ARGS runs successfully.
requires ()
{
    ( "$@" ) </dev/null >/dev/null 2>&1 ||
        skip "this command failed: $*"
}

# requires_not CMD [ARGS...]: skip the test if CMD ARGS succeeds.
requires_not ()
{
    if ( "$@" ) </dev/null >/dev/null 2>&1; then
        skip "this command succeeded: $*"
    fi
}

# requires_root: skip unless running as root.
requires_root ()
{
    if [ "$(id -u)" != 0 ]; then
        skip "it must run as root"
    fi
}

# requires_file PATH...: skip unless every PATH exists.
requires_file ()
{
    for f in "$@"; do
        if [ ! -e "$f" ]; then
            skip "$f does not exist"
        fi
    done
}

# cleanup_fn CMD [ARGS...]: run CMD ARGS when the test exits, however it
# exits.  Hooks run in reverse order of registration.
_cleanup_hooks=()

cleanup_fn ()
{
    local IFS=$'\x1f'
    _cleanup_hooks+=("$*")
}

_run_cleanup_hooks ()
{
    local status=$? i IFS=$'\x1f' hook
    set +e
    trap '' INT QUIT TERM EXIT ERR
    for (( i = ${#_cleanup_hooks[@]} - 1; i >= 0; i-- )); do
        read -r -a hook <<<"${_cleanup_hooks[i]}"
        "${hook[@]}"
    done
    exit $status
}
trap _run_cleanup_hooks INT QUIT TERM EXIT ERR

# pid_gone PID SECONDS: wait up to SECONDS for PID to exit; false if it
# is still running then.
pid_gone ()
{
    local pid=$1 i
    for (( i = 0; i < $2 * 10; i++ )); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    ! kill -0 "$pid" 2>/dev/null
}

# Every process a test starts carries the test's tag in its environment
# (and what those start, by inheritance: a daemonized nbdkit, raidd's
# children), and kill_pid signals only a process that carries it.  A PID
# whose process ended and was reaped may name another test's process by
# the time a cleanup hook stops it again: pid_max is 32768 on many
# machines, which a parallel make check wraps in minutes, and a stale
# SIGTERM (then SIGKILL) from one test's cleanup would stop whatever
# process of another test had the number then.
export RAID_TEST_TAG=${RAID_TEST_TAG:-$$.$(date +%s%N)}

# ours PID: PID is alive and this test (or what it started) started it.
ours ()
{
    # One grep over the NUL-separated file, no pipe: with pipefail a
    # "tr | grep -q" fails when grep has matched in the first 4 KiB (a
    # read of /proc/PID/environ) and tr's next write gets SIGPIPE, which
    # make check's long environment (TEST_LOGS) makes likely.
    grep -qzxF "RAID_TEST_TAG=$RAID_TEST_TAG" "/proc/$1/environ" 2>/dev/null
}

# kill_pid PID: stop a process we started, by its PID only; TERM first,
# KILL if it is still there after a few seconds.  Nothing when PID is no
# longer ours (see above).
kill_pid ()
{
    local pid=$1
    [ -n "$pid" ] || return 0
    ours "$pid" || return 0
    kill "$pid" 2>/dev/null || return 0
    pid_gone "$pid" 5 && return 0
    echo "$0: warning: PID $pid still alive after SIGTERM, sending SIGKILL" >&2
    kill -9 "$pid" 2>/dev/null || :
}

# mktmpdir PREFIX: a fresh directory under /var/tmp (O_DIRECT works there;
# /dev/shm is tmpfs), removed when the test exits.  Sets $tmpdir.
mktmpdir ()
{
    tmpdir=$(mktemp -d "/var/tmp/${1:-libraid}.XXXXXX")
    cleanup_fn rm -rf "$tmpdir"
}

# loop_devices_under DIR: the loop devices whose backing file is in DIR.
loop_devices_under ()
{
    losetup --list --noheadings --output NAME,BACK-FILE 2>/dev/null |
        awk -v d="$1/" 'index($2, d) == 1 { print $1 }'
}

# new_members DIR N SIZE: N new sparse files DIR/m0.img ... DIR/m{N-1}.img
# of SIZE bytes (truncate's suffixes), their paths in the array $members.
new_members ()
{
    local i
    members=()
    for (( i = 0; i < $2; i++ )); do
        truncate -s "$3" "$1/m$i.img"
        members+=("$1/m$i.img")
    done
}

# ---- raidd and raidctl ---------------------------------------------------------
# raidd_env DIR: for a test that drives raidd and raidctl in DIR.  Sets $d
# (DIR), $raidd, $raidctl, $ctl and $sock (control and NBD sockets) and
# stops raidd when the test exits.  Then:
#   R ARGS...            raidctl talking to this raidd
#   fail MESSAGE         fail the test, showing the end of raidd's log
#   start_raidd [ARGS]   start raidd (2 threads, logging to $d/raidd.log)
#                        and wait until it answers; its PID is $raidd_pid
#   stop_raidd           stop it (TERM, by PID) and reap it
#   uri NAME             the NBD URI of array NAME's export
#   st NAME EXPR         a field of array NAME's status: the python
#                        expression EXPR on its "raidctl status --json" ("a")
#   fio_start NAME SECONDS SIZE [IODEPTH [RW]]
#                        fio's nbd engine in the background on NAME's export
#                        for SECONDS: random 4K writes (RW: randwrite unless
#                        given) over its first SIZE, IODEPTH (8 unless given)
#                        at once, verified (crc32c) as it goes and at the end
#                        (serialize_overlap: a time-based run rewrites blocks,
#                        and a verify read must not overlap a write in
#                        flight; see test-raidd-stress.sh); its report in
#                        $d/fio.out, its PID $fio_pid; stopped when the test
#                        exits
#   fio_end NAME         wait for it: fail unless it ended with no error and
#                        no verify failure
raidd_env ()
{
    d=$1
    raidd=$top_builddir/raidd/raidd
    raidctl=$top_builddir/raidctl/raidctl
    [ -x "$raidd" ] || skip "raidd is not built (./configure --disable-daemon)"
    ctl=$d/control.sock
    sock=$d/nbd.sock
    raidd_pid=
    cleanup_fn stop_raidd
}

R () { "$raidctl" --control "$ctl" "$@"; }

fail ()
{
    echo "$0: FAIL: $*" >&2
    if [ -f "$d/raidd.log" ]; then tail -30 "$d/raidd.log" >&2; fi
    exit 1
}

start_raidd ()
{
    local i
    "$raidd" --foreground --control "$ctl" --nbd-socket "$sock" --threads 2 "$@" \
        >>"$d/raidd.log" 2>&1 &
    raidd_pid=$!
    for (( i = 0; i < 100; i++ )); do
        R status >/dev/null 2>&1 && return 0
        kill -0 "$raidd_pid" 2>/dev/null || break
        sleep 0.1
    done
    fail "raidd did not come up"
}

stop_raidd ()
{
    [ -n "$raidd_pid" ] || return 0
    kill_pid "$raidd_pid"
    wait "$raidd_pid" 2>/dev/null || :
    raidd_pid=
}

uri () { echo "nbd+unix:///$1?socket=$sock"; }

st ()
{
    R status --json "$1" > "$d/st.json"
    python3 -c "import json,sys; a=json.load(open(sys.argv[1]))[0]; print($2)" "$d/st.json"
}

# ex MEMBER EXPR: a field of examine's JSON for MEMBER (python on "e").
ex () {
  R examine --json "$1" | python3 -c "import json,sys; e=json.load(sys.stdin)[0]; print($2)"
}
# settle NAME: until safe mode has the array clean (no superblock write
# pending: see snap).
settle () {
  local i
  for (( i = 0; i < 100; i++ )); do
    [ "$(R status --json "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['state'])")" = clean ] && return 0
    sleep 0.1
  done
  fail "$1 never became clean"
}
# snap MEMBER...: each member's superblock events and a digest of its data
# area.  raidd rewrites superblocks and bitmaps by itself (safe mode's
# clean and active, the bitmap's bits): what a refusal must not change is
# the events (no change was recorded) and the data.
snap () {
  local x
  for x; do
    echo "$(ex "$x" "e['events']") $(tail -c +$(($(ex "$x" "e['data_offset']") + 1)) "$x" |
      sha256sum | awk '{ print $1 }')"
  done
}
fio_pid=
_fio_hooked=
fio_start ()
{
    fio --name="$1" --ioengine=nbd --uri="$(uri "$1")" --rw="${5:-randwrite}" --bs=4k \
        --size="$3" --iodepth="${4:-8}" --verify=crc32c --verify_backlog=256 \
        --verify_fatal=1 --verify_state_save=0 --serialize_overlap=1 --time_based=1 \
        --runtime="$2" --output="$d/fio.out" >/dev/null 2>&1 &
    fio_pid=$!
    if [ -z "$_fio_hooked" ]; then
        cleanup_fn _fio_kill
        _fio_hooked=1
    fi
}

_fio_kill () { [ -z "$fio_pid" ] || kill_pid "$fio_pid"; }

fio_end ()
{
    local rc=0
    wait "$fio_pid" || rc=$?
    fio_pid=
    [ $rc = 0 ] || { cat "$d/fio.out" >&2; fail "fio on $1 exited $rc"; }
    grep -q "err= 0" "$d/fio.out" || { cat "$d/fio.out" >&2; fail "fio on $1 reported errors"; }
    if grep -qi "verify.*fail\|bad magic\|crc32c.*wanted" "$d/fio.out"; then
        cat "$d/fio.out" >&2; fail "fio on $1: verify errors"
    fi
}

# ---- a block device over an NBD export -------------------------------------------
# The host kernel may have no NBD client: nbdfuse serves the export as a
# file, and a loop device goes over that file.
# requires_nbd_loop: skip unless all that is there (root, nbdfuse, loop
# devices, FUSE, mkfs.ext4).
# nbd_loop_attach URI DIR: nbdfuse mounted on DIR, $loop the loop device
# over DIR/nbd ($nbd_fuse_pid is nbdfuse).  nbd_loop_detach undoes it (also
# when the test exits).
# requires_vm: skip unless a VM can run the guest half of a test (root,
# qemu, tests/vm/run, and nbd-client, which the VM's initramfs takes from
# the host); sets $vm, the runner (RAID_VM_RUN overrides it).
requires_vm ()
{
    vm=${RAID_VM_RUN:-$top_srcdir/tests/vm/run}
    requires_file "$vm"
    requires qemu-system-x86_64 --version
    requires nbd-client --version
    requires_root
}

# vm_run ARGS...: "$vm" ARGS (after requires_vm and mktmpdir), its status.
# A run that failed because the guest's kernel crashed (the runner shows
# the console from the oops, "  | [ ... ] BUG: ..."; CI saw a NULL
# dereference in a kworker of bookworm-backports' 6.12 once in many ublk
# runs) or hung (the runner stops a guest whose RCU grace period stays
# stuck, and says "the guest's kernel hung"; CI saw one in the ublk
# recovery test) is a bug of Debian's kernel, not of what the test
# proves: that is said, with the console, and the run is made once more.
# A second crash or hang fails.
vm_run ()
{
    local st=0
    "$vm" "$@" 2> "$tmpdir/vm.err" || st=$?
    cat "$tmpdir/vm.err" >&2
    if [ $st != 0 ] &&
       grep -qE "^  \| \[ *[0-9.]+\] (BUG:|Oops|general protection|kernel BUG)|: the guest's kernel hung:" \
            "$tmpdir/vm.err"; then
        echo "$0: the guest's kernel crashed or hung (its console above): not this" \
             "test's failure; the run is made once more" >&2
        st=0
        "$vm" "$@" || st=$?
    fi
    return $st
}

requires_nbd_loop ()
{
    requires_root
    requires nbdfuse --version
    requires mkfs.ext4 -V
    requires losetup --version
    requires_file /dev/loop-control /dev/fuse
}

nbd_loop_attach ()
{
    local i
    _nbd_fuse_dir=$2
    mkdir -p "$2"
    if [ -z "${_nbd_cleanup:-}" ]; then
        cleanup_fn nbd_loop_detach
        _nbd_cleanup=1
    fi
    nbdfuse "$2" "$1" &
    nbd_fuse_pid=$!
    for (( i = 0; i < 100; i++ )); do
        [ -e "$2/nbd" ] && break
        sleep 0.1
    done
    [ -e "$2/nbd" ] || fail "nbdfuse did not serve $1"
    loop=$(losetup --find --show "$2/nbd")
}

nbd_loop_detach ()
{
    local i
    if [ -n "${loop:-}" ]; then
        losetup -d "$loop" 2>/dev/null || :
        loop=
    fi
    [ -n "${nbd_fuse_pid:-}" ] || return 0
    # Detaching a loop device is asynchronous: the FUSE file can stay busy
    # for a moment, and umount then says "target is busy".
    for (( i = 0; i < 50; i++ )); do
        mountpoint -q "$_nbd_fuse_dir" || break
        umount "$_nbd_fuse_dir" 2>/dev/null && break
        sleep 0.1
    done
    kill_pid "$nbd_fuse_pid"
    wait "$nbd_fuse_pid" 2>/dev/null || :
    nbd_fuse_pid=
    if mountpoint -q "$_nbd_fuse_dir"; then umount -l "$_nbd_fuse_dir" || :; fi
}
