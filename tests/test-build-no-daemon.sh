#!/bin/bash
# Description: ./configure --disable-daemon builds libraid and raidctl
# without GnuTLS, libsystemd, libnl-genl or libkmod (pkg-config here does
# not know them), builds no raidd, and raidctl's offline verbs work: create
# with --no-start, examine, zero.
set -euo pipefail
. "$top_srcdir/tests/functions.sh"
requires pkg-config --version
requires make --version

tmp=$(mktemp -d /var/tmp/test-build-no-daemon.XXXXXX)
cleanup_fn rm -rf "$tmp"

# A pkg-config that has never heard of the daemon's libraries.
mkdir "$tmp/bin"
cat > "$tmp/bin/pkg-config" <<'EOF'
#!/bin/bash
for a in "$@"; do
  case "$a" in
    gnutls*|libsystemd*|libnl-genl-3.0*|libkmod*)
      echo "Package ${a%% *} was not found (test-build-no-daemon.sh)" >&2; exit 1 ;;
  esac
done
exec /usr/bin/pkg-config "$@"
EOF
chmod +x "$tmp/bin/pkg-config"

mkdir "$tmp/build"
cd "$tmp/build"
# The full configure must fail with this pkg-config (else the test proves
# nothing), and --disable-daemon must not.
if PKG_CONFIG="$tmp/bin/pkg-config" "$top_srcdir/configure" -q > "$tmp/full.log" 2>&1; then
  fail "configure found the daemon's libraries through a pkg-config that hides them"
fi
grep -q 'gnutls' "$tmp/full.log" || { cat "$tmp/full.log"; fail "configure did not fail on GnuTLS"; }
PKG_CONFIG="$tmp/bin/pkg-config" "$top_srcdir/configure" -q --disable-daemon \
  > "$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; fail "configure --disable-daemon failed"; }
make -j"$(nproc)" > "$tmp/make.log" 2>&1 || { tail -30 "$tmp/make.log"; fail "make failed"; }
[ -x raidctl/raidctl ] || fail "raidctl was not built"
[ -e lib/.libs/libraid.so ] || fail "libraid was not built"
[ ! -e raidd/raidd ] || fail "raidd was built with --disable-daemon"
if grep -q 'gnutls\|libsystemd\|libnl\|libkmod' <(ldd raidctl/.libs/raidctl 2>/dev/null || ldd raidctl/raidctl); then
  fail "raidctl links a daemon library"
fi

# Offline verbs, on files, never talking to a raidd.
truncate -s 64M "$tmp/m0" "$tmp/m1"
rc() { ./raidctl/raidctl --config none --control "$tmp/no-raidd.sock" "$@"; }
rc create nd --level 1 --no-start "$tmp/m0" "$tmp/m1" > "$tmp/create.out" 2>&1 ||
  { cat "$tmp/create.out"; fail "raidctl create --no-start failed"; }
rc examine "$tmp/m1" > "$tmp/examine.out" 2>&1 ||
  { cat "$tmp/examine.out"; fail "raidctl examine failed"; }
grep -q 'raid1' "$tmp/examine.out" || { cat "$tmp/examine.out"; fail "examine shows no raid1"; }
rc zero "$tmp/m0" "$tmp/m1" > "$tmp/zero.out" 2>&1 ||
  { cat "$tmp/zero.out"; fail "raidctl zero failed"; }
if rc examine "$tmp/m0" > /dev/null 2>&1; then
  fail "a zeroed member still has a superblock"
fi
echo "$0: ok"
