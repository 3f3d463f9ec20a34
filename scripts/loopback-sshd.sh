#!/usr/bin/env bash
# A throwaway sshd on a loopback alias, to try remote workers on one
# machine (docs/distributed.md): generated host and user keys, its own
# config, nothing of the system's sshd touched.
#
#   scripts/loopback-sshd.sh start [dir] [address]   # prints the flags for storebench run
#   scripts/loopback-sshd.sh stop  [dir]
#
# dir defaults to /tmp/storebench-sshd, address to 127.0.0.2. Needs
# openssh-server and openssh-client (scripts/install-servers.sh installs them).
set -euo pipefail

cmd=${1:-}
dir=${2:-/tmp/storebench-sshd}
addr=${3:-127.0.0.2}

case "$cmd" in
start)
	for b in /usr/sbin/sshd ssh ssh-keygen; do
		command -v "$b" >/dev/null || { echo "loopback-sshd: $b is missing (scripts/install-servers.sh installs it)" >&2; exit 1; }
	done
	if [ -f "$dir/sshd.pid" ] && kill -0 "$(cat "$dir/sshd.pid")" 2>/dev/null; then
		echo "loopback-sshd: already running (pid $(cat "$dir/sshd.pid")); stop it first" >&2
		exit 1
	fi
	mkdir -p "$dir"
	chmod 700 "$dir"
	for k in host_key user_key; do
		[ -f "$dir/$k" ] || ssh-keygen -q -t ed25519 -N "" -f "$dir/$k"
	done
	cp "$dir/user_key.pub" "$dir/authorized_keys"
	chmod 600 "$dir/authorized_keys"
	mkdir -p /run/sshd
	# A free port on the alias.
	port=$(python3 -c 'import socket,sys; s=socket.socket(); s.bind((sys.argv[1],0)); print(s.getsockname()[1])' "$addr")
	cat >"$dir/sshd_config" <<EOF
ListenAddress $addr:$port
HostKey $dir/host_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
LogLevel ERROR
EOF
	/usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log"
	# sshd writes its pid file once it listens.
	for _ in $(seq 1 100); do
		[ -s "$dir/sshd.pid" ] && break
		sleep 0.1
	done
	[ -s "$dir/sshd.pid" ] || { echo "loopback-sshd: sshd did not start: $(cat "$dir/sshd.log")" >&2; exit 1; }
	echo "--hosts local,ssh://$(id -un)@$addr:$port --ssh-identity $dir/user_key --ssh-option UserKnownHostsFile=$dir/known_hosts --ssh-option StrictHostKeyChecking=accept-new"
	;;
stop)
	if [ -f "$dir/sshd.pid" ]; then
		kill "$(cat "$dir/sshd.pid")" 2>/dev/null || true
		rm -f "$dir/sshd.pid"
	fi
	;;
*)
	echo "usage: $0 start|stop [dir] [address]" >&2
	exit 2
	;;
esac
