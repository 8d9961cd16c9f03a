#!/usr/bin/env bash
# Make sure bubblewrap (bwrap) is on PATH: each tool call runs in a PID namespace it makes
# (spec/tools.md §10), and the containment tests need it. Idempotent: does nothing when it
# is already installed. Installs only Debian's own package, through apt. Without it the
# runtime still works, on the process-group fallback, and the namespace tests are skipped.
set -euo pipefail

if command -v bwrap >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-bwrap: no bwrap on PATH; install bubblewrap (apt-get install -y bubblewrap)" \
       "for kernel containment of tool calls" >&2
  exit 1
fi

echo "ensure-bwrap: installing Debian's bubblewrap package" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q bubblewrap
command -v bwrap >/dev/null
