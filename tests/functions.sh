# Shared helpers for libraid's shell tests (in the style of nbdkit's
# tests/functions.sh).  Source it from a test:
#
#   source ${top_srcdir:-.}/tests/functions.sh
#   set -e
#   requires losetup --version
#   cleanup_fn rm -rf "$dir"
#
# Exit status 77 tells the automake harness the test was skipped; every
# skip says why.

# requires CMD [ARGS...]: skip the test unless CMD ARGS runs successfully.
requires ()
{
    ( "$@" ) </dev/null >/dev/null 2>&1 || {
        echo "$0: test skipped because this command failed: $*"
        exit 77
    }
}

# requires_not CMD [ARGS...]: skip the test if CMD ARGS succeeds.
requires_not ()
{
    if ( "$@" ) </dev/null >/dev/null 2>&1; then
        echo "$0: test skipped because this command succeeded: $*"
        exit 77
    fi
}

# requires_root: skip unless running as root.
requires_root ()
{
    if [ "$(id -u)" != 0 ]; then
        echo "$0: test skipped because it must run as root"
        exit 77
    fi
}

# requires_file PATH...: skip unless every PATH exists.
requires_file ()
{
    for f in "$@"; do
        if [ ! -e "$f" ]; then
            echo "$0: test skipped because $f does not exist"
            exit 77
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

# kill_pid PID: stop a process we started, by its PID only; TERM first,
# KILL if it is still there after a few seconds.
kill_pid ()
{
    local pid=$1 i
    [ -n "$pid" ] || return 0
    kill "$pid" 2>/dev/null || return 0
    for (( i = 0; i < 50; i++ )); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
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
