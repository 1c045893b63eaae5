# Shared by tests/test-readme-tls.sh and tests/test-readme-tls-psk.sh, the
# README's walk-throughs of raidd over TCP with TLS.  Source it after
# tests/functions.sh and tests/readme.sh, then:
#   readme_tls_env NAME     a private directory (test-NAME) for raidd, and
#                           raidd and raidctl the build tree's
#   readme_script NAME FILE (tests/readme.sh)
#   readme_tls_rewrite FILE /etc/raidd into $d/etc, port 10809 a free one,
#                           0.0.0.0 127.0.0.1
#   readme_run FILE         (tests/readme.sh)
readme_tls_env ()
{
    mktmpdir "test-$1"
    raidd_env "$tmpdir"
    raidd () { start_raidd "$@"; }   # like the installed raidd: returns once it answers
    raidctl () { R "$@"; }
    mkdir -p "$d/etc"
}

readme_tls_rewrite ()
{
    local port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    sed -i "s|/etc/raidd/|$d/etc/|g; s|/etc/raidd\$|$d/etc|g; s|/etc/raidd |$d/etc |g; s|dir=/etc/raidd,|dir=$d/etc,|g; s|10809|$port|g; s|0\\.0\\.0\\.0|127.0.0.1|g" "$1"
    if grep -n '/etc/raidd' "$1" >&2; then fail "$1 still reaches /etc/raidd"; fi
}
