# Helpers for the tests that run README.md's command blocks; source it
# after tests/functions.sh.
#
# The convention, in README.md's source: every ```sh block comes right
# after an HTML comment that says what runs it,
#   <!-- test: NAME -->                 tests/test-NAME.sh runs it, with the
#                                       other blocks marked NAME, in the
#                                       README's order, as one script
#   <!-- not run by a test: REASON -->  nothing can (it installs packages,
#                                       it is the test suite itself...)
# and command examples are ```sh blocks, never indented code.
# tests/test-readme.sh holds README.md to that.

readme=${top_srcdir:-.}/README.md

# readme_blocks NAME: the lines of the ```sh blocks marked "test: NAME",
# in order.
readme_blocks ()
{
    awk -v want="<!-- test: $1 -->" '
        inside && /^```/ { inside = 0; next }
        inside { print; next }
        /^```sh$/ { inside = (prev == want) }
        { prev = $0 }' "$readme"
}

# readme_script NAME FILE: the walk-through NAME as a script in FILE, with
# only what a test must change rewritten: raidd's sockets and pidfile
# (/run/raidd/), /var/tmp/ and /mnt/ go into $d.  raidd and raidctl are
# the test's own functions (the build tree's programs on $d's sockets).
# Fails if the walk-through is missing or would still reach outside $d.
readme_script ()
{
    # Through placeholders: $d itself is under /var/tmp.
    readme_blocks "$1" |
        sed 's|/run/raidd/|@D@|g; s|/var/tmp/|@D@|g; s|/mnt/|@M@|g' > "$2"
    [ -s "$2" ] || fail "README.md has no block marked <!-- test: $1 -->"
    if grep -nE '/var/tmp|/run/raidd|/mnt/' "$2" >&2; then
        fail "walk-through $1 reaches outside the test's directory (above)"
    fi
    sed -i "s|@D@|$d/|g; s|@M@|$d/mnt/|g" "$2"
}

# readme_unmount: for cleanup_fn, as a walk-through may stop half-way:
# what it mounted under $d is unmounted (the latest mount first, lazily if
# busy), the loop devices over files under $d are detached, and its
# nbdfuse (the walk-through's $nbdfuse, exiting once unmounted) is waited
# for by PID, then stopped if it is still there.
readme_unmount ()
{
    local m
    for m in $(awk -v d="$d/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | tac); do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || :
    done
    "${top_srcdir:-.}/tests/detach-loops.sh" "$d"
    if [ -n "${nbdfuse:-}" ]; then
        pid_gone "$nbdfuse" 10 || kill_pid "$nbdfuse"
        wait "$nbdfuse" 2>/dev/null || :
    fi
}

# readme_run FILE: source the walk-through in FILE in this shell (set -e
# and pipefail stay on, so any failing command fails the test; what it
# starts, such as $nbdfuse, stays visible to the checks and clean-ups).
# Its stdout goes to $d/out, its stderr and the trace to $d/err; both are
# shown afterwards, or as the test exits if the walk-through failed.
readme_run ()
{
    cleanup_fn _readme_show_failed
    set -x
    . "$1" > "$d/out" 2> "$d/err"
    set +x
    _readme_ran=1
    cat "$d/out" "$d/err"
}

_readme_show_failed ()
{
    set +x
    [ -z "${_readme_ran:-}" ] || return 0
    echo "$0: the walk-through failed; its output up to there:" >&2
    cat "$d/out" "$d/err" >&2 2>/dev/null
}
