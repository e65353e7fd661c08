#!/usr/bin/env bash
# Installs Chromium for the web console's browser tests, only when it is missing (non-interactive, for CI).
# The tests drive /usr/bin/chromium (Debian's package) through playwright-core; set CHROMIUM_PATH to use another.
set -euo pipefail
target="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ -x "$target" ]; then
  echo "chromium: found $target"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium: $target is missing and apt-get is not available; install Chromium and set CHROMIUM_PATH." >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
echo "chromium: installed $("$target" --version 2>/dev/null || echo "$target")"
