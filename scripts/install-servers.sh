#!/usr/bin/env bash
# Installs the servers storebench starts itself, as each one's manifest
# says (internal/server/*/manifest.txt, one line per server; the format is
# in internal/server/manifest.go): its Debian packages (install=apt), its
# Go install step (install=go: go run ./internal/server/DIR/cmd/install,
# Maven's jars for Cassandra and Kafka), or nothing (built in). Idempotent:
# only missing packages are installed, and `apt-get update` runs only when
# an install fails (a stale or empty package list), because it is slow and
# usually unnecessary.
#   scripts/install-servers.sh                 the servers installed with apt, and sshd (or: all)
#   scripts/install-servers.sh redis postgres  only those (any server, or sshd)
#   scripts/install-servers.sh tests           every server and sshd: what make test needs
#   scripts/install-servers.sh --list [NAME..] what each would install, one line each:
#                                              NAME apt PKG... | NAME go DIR | NAME builtin
#   scripts/install-servers.sh --shared        the servers scripts/test.sh starts for the whole suite
# Exits non-zero if any requested package is still missing afterwards, and
# with 2 on an unknown server or a manifest it cannot read.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)

# sshd is no server storebench manages: the remote-worker tests start an
# sshd of their own on 127.0.0.2 (never the system service);
# openssh-client is the coordinator's ssh.
sshd_pkgs="openssh-server openssh-client"

declare -A install=() pkgs=() test=() dir=()
order=()

# read_manifest FILE: one server per line, NAME key=value ...
read_manifest() {
  local f=$1 d line n kv k v
  d=$(basename "$(dirname "$f")")
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line%%#*}
    read -r -a fields <<<"$line"
    [ ${#fields[@]} -eq 0 ] && continue
    n=${fields[0]}
    if [ -n "${dir[$n]+x}" ]; then
      echo "install-servers: $f: $n has a line in internal/server/${dir[$n]} too" >&2; exit 2
    fi
    order+=("$n"); dir[$n]=$d; pkgs[$n]=""
    for kv in "${fields[@]:1}"; do
      k=${kv%%=*} v=${kv#*=}
      case $k in
        install) install[$n]=$v ;;
        apt | extra) pkgs[$n]="${pkgs[$n]} ${v//,/ }" ;;
        test) test[$n]=$v ;;
        testdb) ;; # Go's (captest.URI)
        *) echo "install-servers: $f: $n: unknown key '$k'" >&2; exit 2 ;;
      esac
    done
  done <"$f"
}

for f in "$root"/internal/server/*/manifest.txt; do read_manifest "$f"; done
[ ${#order[@]} -gt 0 ] || { echo "install-servers: no manifest under $root/internal/server" >&2; exit 2; }

# step NAME: the install step of a server, following like:OTHER.
step() {
  local n=$1
  case ${install[$n]:-} in
    like:*) n=${install[$n]#like:} ;;
  esac
  case ${install[$n]:-} in
    apt)
      if [ -z "${pkgs[$n]// /}" ]; then
        echo "install-servers: $n: install=apt with no apt= packages (internal/server/${dir[$n]}/manifest.txt)" >&2; return 2
      fi
      echo "apt${pkgs[$n]}" ;;
    go) echo "go ./internal/server/${dir[$n]}/cmd/install" ;;
    builtin) echo "builtin" ;;
    *) echo "install-servers: $1: install=${install[$1]:-} (internal/server/${dir[$1]}/manifest.txt): want apt, go, builtin or like:OTHER" >&2; return 2 ;;
  esac
}

case "${1:-}" in
--shared)
  for n in "${order[@]}"; do [ "${test[$n]:-}" = shared ] && echo "$n"; done
  exit 0 ;;
--list)
  shift
  names=("$@")
  [ ${#names[@]} -eq 0 ] && names=("${order[@]}" sshd)
  for n in "${names[@]}"; do
    if [ "$n" = sshd ]; then echo "sshd apt $sshd_pkgs"; continue; fi
    [ -n "${dir[$n]+x}" ] || { echo "install-servers: unknown server '$n' (known: ${order[*]} sshd)" >&2; exit 2; }
    s=$(step "$n") || exit 2
    echo "$n $s"
  done
  exit 0 ;;
esac

names=("$@")
if [ ${#names[@]} -eq 0 ] || [ "${names[0]}" = all ]; then
  names=()
  for n in "${order[@]}"; do [ "${install[$n]:-}" = apt ] && names+=("$n"); done
  names+=(sshd)
elif [ "${names[0]}" = tests ]; then
  names=("${order[@]}" sshd)
fi

want=() gosteps=()
for n in "${names[@]}"; do
  if [ "$n" = sshd ]; then
    # shellcheck disable=SC2206 # word splitting of the package list is wanted
    want+=($sshd_pkgs)
    continue
  fi
  if [ -z "${dir[$n]+x}" ]; then
    echo "install-servers: unknown server '$n' (known: ${order[*]} sshd)" >&2
    exit 2
  fi
  s=$(step "$n") || exit 2
  # shellcheck disable=SC2206 # word splitting of the package list is wanted
  case $s in
    apt\ *) want+=(${s#apt }) ;;
    go\ *) [[ " ${gosteps[*]} " == *" ${s#go } "* ]] || gosteps+=("${s#go }") ;;
    builtin) echo "install-servers: $n is built into storebench, nothing to install" ;;
  esac
done

installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

install_apt() {
  local p missing=() still=() seen=" "
  for p in "$@"; do
    [[ $seen == *" $p "* ]] && continue
    seen+="$p "
    if installed "$p"; then
      echo "install-servers: $p already installed"
    else
      missing+=("$p")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && { echo "install-servers: nothing to do"; return 0; }
  . "$root/scripts/lib/apt.sh"
  apt_install install-servers -- "${missing[@]}" || return 1
  for p in "${missing[@]}"; do
    installed "$p" || still+=("$p")
  done
  if [ ${#still[@]} -gt 0 ]; then
    echo "install-servers: could not install: ${still[*]}" >&2
    return 1
  fi
  echo "install-servers: installed ${missing[*]}"
}

rc=0
if [ ${#want[@]} -gt 0 ]; then install_apt "${want[@]}" || rc=1; fi
for g in "${gosteps[@]}"; do
  echo "install-servers: go run $g" >&2
  (cd "$root" && "${GO:-go}" run "$g") || rc=1
done
exit $rc
