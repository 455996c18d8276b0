#!/usr/bin/env bash
# Finds what the tests need on PATH: redis-server and redis-cli (tests start their own
# servers on free loopback ports) and tmux (end-to-end TUI tests). Installs Debian's
# packages when running as root; otherwise says how to install them.
set -euo pipefail
missing() {
  for bin in redis-server redis-cli tmux; do command -v "$bin" >/dev/null || echo "$bin"; done
}
if [ -z "$(missing)" ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing Debian's redis-server redis-tools tmux (missing: $(missing | xargs))" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq redis-server redis-tools tmux >/dev/null
  # The tests start their own servers; stop the one the package may have started.
  (service redis-server stop || true) >/dev/null 2>&1
fi
if [ -n "$(missing)" ]; then
  cat >&2 <<MSG
error: the tests need these on PATH: $(missing | xargs)
Install them, for example:
  Debian/Ubuntu:  sudo apt-get install redis-server redis-tools tmux
  macOS:          brew install redis tmux
then run \`make test\` again.
MSG
  exit 1
fi
