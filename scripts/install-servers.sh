#!/usr/bin/env bash
# Installs the Debian packages of the servers storebench starts itself.
# Idempotent: only missing packages are installed, and `apt-get update` runs
# only when an install fails (a stale or empty package list), because it is
# slow and usually unnecessary.
#   scripts/install-servers.sh                 all servers (or: all)
#   scripts/install-servers.sh redis postgres  only those
# Exits non-zero if any requested package is still missing afterwards.
set -u

declare -A pkgs=(
  [redis]="redis-server redis-tools"
  [postgres]="postgresql-15 postgresql-contrib postgresql-15-postgis-3" # PostGIS: the postgis target (workload geo)
  [mariadb]="mariadb-server mariadb-client sysbench" # sysbench: make bench-native and the oltp tests
  [memcached]="memcached libmemcached-tools" # libmemcached-tools: memcslap, for make bench-native
  [apache]="apache2 apache2-utils" [nginx]="nginx wrk" [node]="nodejs"
  # sshd: the remote-worker tests start an sshd of their own on 127.0.0.2
  # (never the system service); openssh-client is the coordinator's ssh.
  [sshd]="openssh-server openssh-client"
)
order=(redis postgres mariadb memcached apache nginx node sshd)

names=("$@")
if [ ${#names[@]} -eq 0 ] || [ "${names[0]}" = all ]; then names=("${order[@]}"); fi

want=()
for n in "${names[@]}"; do
  if [ -z "${pkgs[$n]+x}" ]; then
    echo "install-servers: unknown server '$n' (known: ${order[*]})" >&2
    exit 2
  fi
  # shellcheck disable=SC2206 # word splitting of the package list is wanted
  want+=(${pkgs[$n]})
done

installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

missing=()
for p in "${want[@]}"; do
  if installed "$p"; then
    echo "install-servers: $p already installed"
  else
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && { echo "install-servers: nothing to do"; exit 0; }

. "$(dirname "$0")/lib/apt.sh"
apt_install install-servers -- "${missing[@]}" || exit 1

still=()
for p in "${missing[@]}"; do
  installed "$p" || still+=("$p")
done
if [ ${#still[@]} -gt 0 ]; then
  echo "install-servers: could not install: ${still[*]}" >&2
  exit 1
fi
echo "install-servers: installed ${missing[*]}"
