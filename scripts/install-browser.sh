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

# fonts-liberation: the charts are laid out with Liberation Sans metrics;
# with the font present the browser draws text exactly where it was measured.
. "$(dirname "$0")/lib/apt.sh"
apt_install install-browser --no-install-recommends -- chromium fonts-liberation || exit 1

if ! have; then
  echo "install-browser: could not install chromium" >&2
  exit 1
fi
echo "install-browser: installed $(chromium --version 2>/dev/null)"
