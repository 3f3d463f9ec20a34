#!/usr/bin/env bash
# Installs the Debian packages of the cgo engines (RocksDB, LevelDB, the
# system SQLite, and g++ for MoeingADS's C++ B-tree). Idempotent: installs only what is missing.
#   scripts/install-deps.sh          soft: if it cannot install, says what is
#                                    missing and how to install it, exits 0
#                                    (the build then leaves those engines out)
#   scripts/install-deps.sh --strict fails if anything is missing afterwards
set -u
strict=0
[ "${1:-}" = "--strict" ] && strict=1

# package -> header that proves it is installed
declare -A header=(
  [librocksdb-dev]=/usr/include/rocksdb/c.h
  [libleveldb-dev]=/usr/include/leveldb/c.h
  [libsqlite3-dev]=/usr/include/sqlite3.h
  [g++]=/usr/bin/g++
)
missing=()
for p in "${!header[@]}"; do
  [ -f "${header[$p]}" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo"; else sudo=none; fi
if [ "$sudo" != none ] && command -v apt-get >/dev/null; then
  echo "installing ${missing[*]} (apt-get) ..." >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! $sudo apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1; then
    $sudo apt-get update -qq >/dev/null 2>&1
    $sudo apt-get install -y -qq "${missing[@]}" >&2
  fi
fi

still=()
for p in "${missing[@]}"; do
  [ -f "${header[$p]}" ] || still+=("$p")
done
if [ ${#still[@]} -gt 0 ]; then
  echo "storebench: these engine libraries are missing: ${still[*]}" >&2
  echo "storebench: install them with: sudo apt-get install -y ${still[*]}" >&2
  if [ $strict -eq 1 ]; then exit 1; fi
  echo "storebench: building without the engines that need them (see 'storebench list')" >&2
fi
exit 0
