#!/usr/bin/env bash
# Make sure a Chromium is on PATH for the browser test (tests/demo/test_demo_browser.py) and
# for scripts/demo-screenshot.py. Idempotent: does nothing when one is already installed.
# Installs only Debian's own package, through apt; it never downloads a browser build.
set -euo pipefail

for name in chromium chromium-browser google-chrome google-chrome-stable; do
  if command -v "$name" >/dev/null 2>&1; then
    exit 0
  fi
done

if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-chromium: no Chromium on PATH; install it as root:" >&2
  echo "  apt-get update && apt-get install -y chromium" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: no Chromium on PATH and no apt-get; install Chromium with your" \
       "system's package manager" >&2
  exit 1
fi

echo "ensure-chromium: installing Debian's chromium package" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q chromium
command -v chromium >/dev/null
