#!/usr/bin/env bash
# Builds the Debian package target/debian/strom_<version>_<arch>.deb from
# `cargo build --release -p strom` and the files in packaging/ (see packaging/debian/),
# with dpkg-deb and no debhelper or cargo-deb. The version is the workspace version
# (Cargo.toml, [workspace.package]); Depends comes from dpkg-shlibdeps on the binary.
#
#   bash scripts/build-deb.sh
#
# STROM_DEB_SKIP_BUILD=1 packages the existing binary without running cargo.
# STROM_DEB_PROFILE=dev packages target/debug/strom (built by `cargo build`) instead of a
# release build: the test run (scripts/test.sh) uses it to check the packaging without a
# second, optimised compile of the whole tree (about 13 minutes on the 2-core CI machine).
# The package to ship is always built with the default, release.
set -euo pipefail
cd "$(dirname "$0")/.."
umask 022

need() {
  command -v "$1" >/dev/null 2>&1 || {
    echo "build-deb.sh: \`$1\` is missing: install the Debian package \`$2\` (apt-get install -y $2)" >&2
    exit 1
  }
}
need dpkg-deb dpkg
need dpkg-shlibdeps dpkg-dev
need strip binutils
need gzip gzip

version=$(awk '
  /^\[/ { in_package = ($0 == "[workspace.package]") }
  in_package && $1 == "version" { gsub(/"/, "", $3); print $3; exit }
' Cargo.toml)
[ -n "$version" ] || { echo "build-deb.sh: no version in [workspace.package] of Cargo.toml" >&2; exit 1; }
arch=$(dpkg --print-architecture)
# Reproducible dates: the last commit's, unless the caller sets SOURCE_DATE_EPOCH.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH

profile="${STROM_DEB_PROFILE:-release}"
case "$profile" in
  release) profile_flag=--release; binary=target/release/strom ;;
  dev) profile_flag=""; binary=target/debug/strom ;;
  *) echo "build-deb.sh: STROM_DEB_PROFILE must be release or dev, not $profile" >&2; exit 1 ;;
esac
if [ "${STROM_DEB_SKIP_BUILD:-}" != 1 ]; then
  # shellcheck disable=SC2086 # empty for the dev profile
  cargo build $profile_flag --locked -p strom
fi
[ -x "$binary" ] || { echo "build-deb.sh: $binary not built" >&2; exit 1; }

out=target/debian
# dpkg-shlibdeps wants a debian/control beside the package tree it analyses.
work=$out/work
root=$work/debian/strom
rm -rf "$work"
mkdir -p "$root" "$out"

# Files.
install -d -m 0755 "$root/usr/bin" "$root/etc/strom" "$root/lib/systemd/system" \
  "$root/usr/share/doc/strom" "$root/usr/share/man/man1" "$root/var/lib/strom" "$root/DEBIAN"
# Stripped like dh_strip does (the release profile keeps line tables for backtraces).
strip --remove-section=.comment --remove-section=.note -o "$root/usr/bin/strom" "$binary"
chmod 0755 "$root/usr/bin/strom"
if [ "$profile" = dev ]; then
  # An unoptimised binary keeps retina's (the RTSP client crate's) "LIVE555 Streaming Media v"
  # server-version string, which lintian takes for an embedded copy of liblivemedia; the
  # release build folds it away. No live555 code is in strom.
  install -d -m 0755 "$root/usr/share/lintian/overrides"
  printf 'strom: embedded-library liblivemedia [usr/bin/strom]\n' >"$root/usr/share/lintian/overrides/strom"
  chmod 0644 "$root/usr/share/lintian/overrides/strom"
fi
install -m 0644 packaging/debian/strom.conf "$root/etc/strom/strom.conf"
install -m 0644 packaging/debian/rules.conf "$root/etc/strom/rules.conf"
install -m 0644 packaging/strom.service "$root/lib/systemd/system/strom.service"
install -m 0644 packaging/debian/copyright "$root/usr/share/doc/strom/copyright"
date_rfc2822=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
sed -e "s/@VERSION@/$version/" -e "s/@DATE@/$date_rfc2822/" packaging/debian/changelog \
  | gzip -9n >"$root/usr/share/doc/strom/changelog.gz"
gzip -9n <README.md >"$root/usr/share/doc/strom/README.md.gz"
# The reference by topic (configuration, protocols, API, operations).
for doc in docs/*.md; do
  gzip -9n <"$doc" >"$root/usr/share/doc/strom/$(basename "$doc").gz"
done
sed -e "s/@VERSION@/$version/" packaging/debian/strom.1 \
  | gzip -9n >"$root/usr/share/man/man1/strom.1.gz"
chmod 0644 "$root/usr/share/doc/strom/"*.gz "$root/usr/share/man/man1/strom.1.gz"
find "$root" -exec touch --no-dereference -d "@$SOURCE_DATE_EPOCH" {} +

# Control area.
printf 'Source: strom\n\nPackage: strom\nArchitecture: any\n' >"$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O -edebian/strom/usr/bin/strom 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "build-deb.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
installed_size=$(du -s -k --apparent-size --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@INSTALLED_SIZE@/$installed_size/" \
  -e "s/@SHLIBS_DEPENDS@/$shlibs/" packaging/debian/control >"$root/DEBIAN/control"
install -m 0644 packaging/debian/conffiles "$root/DEBIAN/conffiles"
for script in postinst prerm postrm; do
  install -m 0755 "packaging/debian/$script" "$root/DEBIAN/$script"
done
# Conffiles are left out, as dh_md5sums does.
(cd "$root" && find . \( -path ./DEBIAN -o -path ./etc \) -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z \
  | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

deb="$out/strom_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
