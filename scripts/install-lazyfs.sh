#!/usr/bin/env bash
# Installs LazyFS for storebench's crash faults (power-loss: a FUSE file
# system whose own page cache drops what was not fsynced). Builds it once
# from the vendored source tarball
#   ${STOREBENCH_VENDOR:-../shared/vendor}/lazyfs-0.3.0-a47a5ba-src.tar.xz
# (toml11 and spdlog bundled: no network) into
#   ${STOREBENCH_HOME:-~/.cache/storebench}/lazyfs/<tarball sha256>-<patch sha256, 12>/{lazyfs,libpcache.so.0}
# with scripts/patches/lazyfs-odirect.patch applied (the backing files
# opened without O_DIRECT, whose reads LazyFS 0.3.0 fails with EINVAL).
# installing libfuse3-dev, fuse3, cmake and g++ with apt-get first if they
# are missing, and adds `user_allow_other` to /etc/fuse.conf when it can.
# Idempotent: a complete build is left alone (a second run costs a sha256).
#   scripts/install-lazyfs.sh          fails if it cannot install
#   scripts/install-lazyfs.sh --soft   says what is missing and exits 0
set -euo pipefail
cd "$(dirname "$0")/.."
soft=0
[ "${1:-}" = "--soft" ] && soft=1
fail() {
  echo "install-lazyfs: $*" >&2
  [ $soft -eq 1 ] && exit 0
  exit 1
}

tarname=lazyfs-0.3.0-a47a5ba-src.tar.xz
# The tarball this script was verified with: its build is cached under
# this name, and found there even where the tarball is not.
pinned=1c001e0c8866322788ad1212581e9a39765e49428503714226fe5c07c5d2f082
# $STOREBENCH_VENDOR, else shared/vendor beside the checkout or any folder
# above it (a clone in a subfolder), else beside the main checkout of a
# git worktree (the common git directory's parent).
vendor=${STOREBENCH_VENDOR:-}
if [ -z "$vendor" ]; then
  d=$(pwd)
  while [ "$d" != / ]; do
    d=$(dirname "$d")
    if [ -f "$d/shared/vendor/$tarname" ]; then vendor=$d/shared/vendor; break; fi
  done
fi
if [ -z "$vendor" ]; then
  common=$(git rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
  [ -n "$common" ] && [ -f "$common/../../shared/vendor/$tarname" ] && vendor=$common/../../shared/vendor
fi
tarball=${vendor:-../shared/vendor}/$tarname
home=${STOREBENCH_HOME:-$HOME/.cache/storebench}
if [ -f "$tarball" ]; then
  sum=$(sha256sum "$tarball" | cut -d' ' -f1)
elif compgen -G "$home/lazyfs/$pinned-*/lazyfs" >/dev/null; then
  sum=$pinned # built here before from the verified tarball
else
  fail "$tarball not found (set STOREBENCH_VENDOR to the folder holding $tarname)"
fi
patchfile=scripts/patches/lazyfs-odirect.patch
[ -f "$patchfile" ] || fail "$patchfile not found"
dest=$home/lazyfs/$sum-$(sha256sum "$patchfile" | cut -c1-12)

# /etc/fuse.conf: -o allow_other needs user_allow_other for a non-root
# mounter; root does not, but the line is harmless and makes both work.
fuseconf() {
  grep -qs '^[[:space:]]*user_allow_other' /etc/fuse.conf && return 0
  if [ -w /etc/fuse.conf ] || { [ ! -e /etc/fuse.conf ] && [ -w /etc ]; }; then
    echo user_allow_other >>/etc/fuse.conf
    echo "install-lazyfs: added user_allow_other to /etc/fuse.conf"
  else
    echo "install-lazyfs: cannot write /etc/fuse.conf; add 'user_allow_other' by hand" >&2
  fi
}

if [ -x "$dest/lazyfs" ] && [ -f "$dest/libpcache.so.0" ] && command -v fusermount3 >/dev/null; then
  fuseconf
  echo "install-lazyfs: $dest/lazyfs already built"
  exit 0
fi

installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}
missing=()
for p in libfuse3-dev fuse3 cmake g++ make pkg-config patch; do
  installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  . scripts/lib/apt.sh
  apt_install install-lazyfs -- "${missing[@]}" || fail "could not install ${missing[*]}"
fi
fuseconf

work=$(mktemp -d "${TMPDIR:-/tmp}/storebench-lazyfs.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "install-lazyfs: building LazyFS from $tarball in $work"
tar -C "$work" -xJf "$tarball"
src=$(echo "$work"/lazyfs-*)
patch -s -d "$src" -p1 <"$patchfile" || fail "$patchfile does not apply to $tarball"
deps=$src/deps
jobs=$(nproc 2>/dev/null || echo 2)
t0=$(date +%s)
(
  mkdir -p "$src/libs/libpcache/build" && cd "$src/libs/libpcache/build"
  cmake -DCMAKE_BUILD_TYPE=Release \
    -DFETCHCONTENT_SOURCE_DIR_TOML="$deps/toml11" \
    -DFETCHCONTENT_SOURCE_DIR_SPDLOG="$deps/spdlog" .. >build.log 2>&1 &&
    cmake --build . -j "$jobs" >>build.log 2>&1 || { tail -30 build.log >&2; exit 1; }
) || fail "libpcache build failed"
(
  mkdir -p "$src/lazyfs/build" && cd "$src/lazyfs/build"
  # $ORIGIN: the binary finds libpcache.so.0 beside it in the cache.
  CXXFLAGS="-I$deps/spdlog/include -I$deps/toml11" cmake -DCMAKE_BUILD_TYPE=Release \
    -DLAZYFS_BUILD_TESTS=OFF '-DCMAKE_BUILD_RPATH=$ORIGIN' .. >build.log 2>&1 &&
    cmake --build . -j "$jobs" >>build.log 2>&1 || { tail -30 build.log >&2; exit 1; }
) || fail "lazyfs build failed"

# Install atomically: a half-copied cache is never taken for a build.
tmpdest=$dest.tmp.$$
rm -rf "$tmpdest" && mkdir -p "$tmpdest"
cp -L "$src/libs/libpcache/build/libpcache.so.0" "$tmpdest/libpcache.so.0"
cp "$src/lazyfs/build/lazyfs" "$tmpdest/lazyfs"
cp "$src/LICENSE" "$tmpdest/LICENSE"
rm -rf "$dest" && mv "$tmpdest" "$dest"
# The unpatched build of the same tarball (older installs) is not used.
rm -rf "${home:?}/lazyfs/$sum"
LD_LIBRARY_PATH=$dest ldd "$dest/lazyfs" | grep -q 'not found' && fail "$dest/lazyfs: unresolved libraries"
echo "install-lazyfs: built $dest/lazyfs in $(( $(date +%s) - t0 ))s"
