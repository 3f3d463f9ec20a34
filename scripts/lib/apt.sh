# Sourced by the install scripts: apt_install TAG [apt-get options --] PKG...
# installs Debian packages as root or with passwordless sudo, running the
# slow `apt-get update` only when an install fails (a stale or empty
# package list). Returns non-zero, with one line naming what to do, when it
# cannot install. TAG prefixes its messages.
apt_install() {
  local tag=$1; shift
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != "--" ] && [ "${1#-}" != "$1" ]; do opts+=("$1"); shift; done
  [ "${1:-}" = "--" ] && shift
  if ! command -v apt-get >/dev/null; then
    echo "$tag: apt-get not found (not a Debian system?); install by hand: $*" >&2
    return 1
  fi
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo=(sudo)
    else
      echo "$tag: need root (or passwordless sudo) to install: $*" >&2
      return 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  echo "$tag: apt-get install -y $*"
  if ! "${sudo[@]}" apt-get install -y -q "${opts[@]}" "$@"; then
    echo "$tag: install failed; running apt-get update and retrying"
    "${sudo[@]}" apt-get update -q || echo "$tag: apt-get update failed" >&2
    "${sudo[@]}" apt-get install -y -q "${opts[@]}" "$@"
  fi
}
