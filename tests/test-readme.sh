#!/bin/bash
# Description: every command block in README.md is accounted for (the
# convention is in tests/readme.sh): each ```sh block comes right after a
# "<!-- test: NAME -->" comment naming a registered test, tests/test-NAME.sh,
# that runs it, or a "<!-- not run by a test: REASON -->" comment giving
# the reason; every such comment is followed by a ```sh block; no code
# block is indented (4 spaces) or fenced without a language, and shell is
# spelled ```sh, so a command block added later cannot escape the check.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
. "${top_srcdir:-.}/tests/readme.sh"

problems=$(awk '
    function bad(msg) { printf "README.md:%d: %s\n", NR, msg }
    fence && /^```$/ { fence = 0; prev = $0; next }
    fence { next }
    /^```/ {
        lang = substr($0, 4)
        if (lang == "")
            bad("a code block needs a language (```sh for commands, ```text for output)")
        else if (lang ~ /^(bash|shell|console|shell-session)$/)
            bad("command blocks are ```sh, not ```" lang)
        else if (lang == "sh" && prev !~ /^<!-- (test: [a-z0-9-]+|not run by a test: .+) -->$/)
            bad("this ```sh block has no <!-- test: NAME --> or <!-- not run by a test: REASON --> comment above it")
        if (marker && lang != "sh")
            bad("the comment on the line above must be followed by a ```sh block")
        marker = 0; fence = 1; prev = $0; next
    }
    marker { bad("the comment on the line above must be followed by a ```sh block"); marker = 0 }
    /^<!-- (test|not run by a test)/ {
        if ($0 !~ /^<!-- (test: [a-z0-9-]+|not run by a test: .+) -->$/)
            bad("malformed marker: <!-- test: NAME --> or <!-- not run by a test: REASON -->")
        marker = 1
    }
    /^    / && prev == "" { bad("indented code block: fence it (```sh with a test marker, or ```text)") }
    { prev = $0 }
    END { if (fence) bad("unterminated code block") }' "$readme")

for name in $(sed -n 's/^<!-- test: \([a-z0-9-]*\) -->$/\1/p' "$readme" | sort -u); do
    t=tests/test-$name.sh
    if [ ! -f "${top_srcdir:-.}/$t" ]; then
        problems+=$'\n'"README.md: blocks are marked for $name, but there is no $t"
    elif ! grep -Eq "^[[:space:]]*$t( |\\\\|\$)" "${top_srcdir:-.}/tests/Makefile.inc"; then
        problems+=$'\n'"README.md: $t (blocks are marked for it) is not in TESTS_SH (tests/Makefile.inc)"
    elif ! grep -q "readme_script $name " "${top_srcdir:-.}/$t"; then
        problems+=$'\n'"README.md: $t does not run the blocks marked $name (readme_script $name ...)"
    fi
done

if [ -n "${problems//$'\n'/}" ]; then
    echo "$0: FAIL: README.md's command blocks:" >&2
    echo "$problems" | sed '/^$/d' >&2
    exit 1
fi
echo "$0: OK: $(grep -c '^```sh$' "$readme") command blocks, each run by a test or marked with the reason it is not"
