#!/bin/bash
# Description: the Debian packages build from the tarball's tree (make
# distdir: what make dist ships, debian/ included) with dpkg-buildpackage
# -us -uc -b (DEB_BUILD_OPTIONS=nocheck: make check is this suite), lintian
# finds no error in them, and they hold what they should: libraid0 the
# library under its SONAME, libraid-dev the header, the .so link,
# libraid.pc and libraid(3), raidd the two programs, the units, the udev
# rule, the completion, the man pages and the conffile /etc/raidd.conf;
# raidd's postinst enables raidd.service without starting it.  Nothing is
# installed on this machine.
set -euo pipefail
. "$top_srcdir/tests/functions.sh"
requires_file "$top_srcdir/debian/control"
requires dpkg-buildpackage --version
requires dpkg-checkbuilddeps "$top_srcdir/debian/control"   # the Build-Depends (scripts/setup.sh)
requires test -x /usr/bin/dh
requires lintian --version
requires make --version

mktmpdir test-deb
d=$tmpdir                             # for fail (functions.sh)
version=$(dpkg-parsechangelog -l "$top_srcdir/debian/changelog" -S Version)

# The make check that runs this test must not reach the package's build:
# its command-line variables (TESTS=...) and jobserver are in MAKEFLAGS,
# the test environment in top_srcdir and top_builddir.
unset MAKEFLAGS MFLAGS MAKELEVEL
src=$tmpdir/libraid-$version
make -s -C "$top_builddir" distdir distdir="$src" > "$tmpdir/distdir.log" 2>&1 ||
  { tail -n 30 "$tmpdir/distdir.log"; fail "make distdir"; }
# Every file of debian/ that git knows is in the tarball (EXTRA_DIST).
if [ -d "$top_srcdir/.git" ] || [ -f "$top_srcdir/.git" ]; then
  while read -r f; do
    [ -e "$src/$f" ] || fail "$f is not in the tarball (EXTRA_DIST in Makefile.am)"
  done < <(git -C "$top_srcdir" ls-files debian)
fi

start=$SECONDS
( cd "$src" &&
  env -u top_srcdir -u top_builddir \
    DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
    dpkg-buildpackage -us -uc -b ) > "$tmpdir/build.log" 2>&1 ||
  { tail -n 60 "$tmpdir/build.log"; fail "dpkg-buildpackage"; }
echo "$0: dpkg-buildpackage took $((SECONDS - start)) s"

changes=$tmpdir/libraid_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).changes
[ -f "$changes" ] || fail "no $changes"
ls -l "$tmpdir"/*.deb

# lintian: no error (its exit status); the rest is shown for the log.
lint=0
lintian --fail-on error --info "$changes" > "$tmpdir/lintian.out" 2>&1 || lint=$?
sed 's/^/lintian: /' "$tmpdir/lintian.out"
[ "$lint" = 0 ] || fail "lintian found errors (exit $lint)"

arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
deb() { echo "$tmpdir/${1}_${version}_$arch.deb"; }
# has PACKAGE PATH...: each PATH (as dpkg-deb -c lists it, ./ stripped) is in PACKAGE.
has ()
{
  local pkg=$1 p
  shift
  dpkg-deb -c "$(deb "$pkg")" | awk '{ sub(/^\.\//, "", $6); print $6 }' > "$tmpdir/$pkg.list"
  for p in "$@"; do
    grep -qxF "$p" "$tmpdir/$pkg.list" ||
      { sed 's/^/  /' "$tmpdir/$pkg.list" >&2; fail "$pkg has no /$p"; }
  done
}

soname=$(objdump -p "$src/debian/build/lib/.libs/libraid.so" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = libraid.so.0 ] ||
  fail "the library's SONAME is $soname: rename the package libraid0 to match"
has libraid0 "usr/lib/$multiarch/libraid.so.0"
has libraid-dev usr/include/raid/raid.h "usr/lib/$multiarch/libraid.so" \
  "usr/lib/$multiarch/pkgconfig/libraid.pc" usr/share/man/man3/libraid.3.gz
has raidd usr/sbin/raidd usr/sbin/raidctl \
  lib/systemd/system/raidd.service lib/systemd/system/raidd-scrub.service \
  lib/systemd/system/raidd-scrub.timer lib/udev/rules.d/65-raidd.rules \
  usr/share/bash-completion/completions/raidctl \
  usr/share/man/man8/raidd.8.gz usr/share/man/man8/raidctl.8.gz \
  usr/share/man/man5/raidd.conf.5.gz usr/share/man/man5/raid-format.5.gz \
  etc/raidd.conf
# The library only in libraid0, the programs only in raidd.
if grep -q 'libraid\.so\.' "$tmpdir/raidd.list" "$tmpdir/libraid-dev.list"; then
  fail "the shared library is in raidd or libraid-dev"
fi

# The conffile, the shared library's dependency, the unit's ExecStart.
[ "$(dpkg-deb -I "$(deb raidd)" conffiles)" = /etc/raidd.conf ] ||
  { dpkg-deb -I "$(deb raidd)" conffiles >&2; fail "raidd's conffiles are not /etc/raidd.conf alone"; }
dpkg-deb -f "$(deb raidd)" Depends | grep -q 'libraid0 (>= ' ||
  fail "raidd does not depend on libraid0"
dpkg-deb --fsys-tarfile "$(deb raidd)" | tar -xOf - ./lib/systemd/system/raidd.service |
  grep -qx 'ExecStart=/usr/sbin/raidd --foreground' ||
  fail "raidd.service does not start /usr/sbin/raidd"

# raidd.service: enabled at install, never started or restarted by the
# postinst (debian/rules); the scrub timer is.
dpkg-deb --ctrl-tarfile "$(deb raidd)" | tar -xOf - ./postinst > "$tmpdir/postinst"
grep -q "deb-systemd-helper enable 'raidd.service'" "$tmpdir/postinst" ||
  fail "the postinst does not enable raidd.service"
if grep -q "deb-systemd-invoke .*'raidd.service'" "$tmpdir/postinst"; then
  fail "the postinst starts or restarts raidd.service"
fi
grep -q "deb-systemd-invoke .*'raidd-scrub.timer'" "$tmpdir/postinst" ||
  fail "the postinst does not start raidd-scrub.timer"
echo "$0: ok"
