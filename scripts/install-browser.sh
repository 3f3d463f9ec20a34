#!/usr/bin/env bash
# Installs Debian's chromium, the headless browser the report test opens
# report.html in (internal/report/browsertest). Idempotent: nothing happens
# when chromium is already there, and `apt-get update` runs only when an
# install fails (a stale or empty package list), because it is slow.
# Exits non-zero if chromium is still missing afterwards.
set -u

have() {
  command -v chromium >/dev/null || command -v chromium-browser >/dev/null
}
if have; then
  echo "install-browser: chromium already installed"
  exit 0
fi

if ! command -v apt-get >/dev/null; then
  echo "install-browser: apt-get not found (not a Debian system?); install chromium by hand" >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo)
else
  echo "install-browser: need root (or passwordless sudo) to install chromium" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# fonts-liberation: the charts are laid out with Liberation Sans metrics;
# with the font present the browser draws text exactly where it was measured.
echo "install-browser: apt-get install -y chromium fonts-liberation"
if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends chromium fonts-liberation; then
  echo "install-browser: install failed; running apt-get update and retrying"
  "${sudo[@]}" apt-get update -q || echo "install-browser: apt-get update failed" >&2
  "${sudo[@]}" apt-get install -y -q --no-install-recommends chromium fonts-liberation
fi

if ! have; then
  echo "install-browser: could not install chromium" >&2
  exit 1
fi
echo "install-browser: installed $(chromium --version 2>/dev/null)"
