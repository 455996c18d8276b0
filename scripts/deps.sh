#!/usr/bin/env bash
# Finds what the tests need on PATH: redis-server and redis-cli (tests start their own
# servers on free loopback ports), tmux (end-to-end TUI tests), and a JDK with Debian's Java
# libraries (the real Redisson client, internal/redistest/redissonpeer/run.sh). Installs
# Debian's packages when running as root; otherwise says how to install them.
set -euo pipefail
missing() {
  for bin in redis-server redis-cli tmux; do command -v "$bin" >/dev/null || echo "$bin"; done
}
# Redisson's run-time dependencies, as run.sh puts them on its class path.
JAVA_PKGS="default-jdk-headless libnetty-java libreactive-streams-java libjackson2-annotations-java
libyaml-snake-java libbyte-buddy-java libslf4j-java libgeronimo-jcache-1.0-spec-java libcaffeine-java
libobjenesis-java libminlog-java libreflectasm-java libhdrhistogram-java"
missingJava() {
  command -v javac >/dev/null || echo javac
  [ -f /usr/share/java/netty-common.jar ] || echo "Debian's Java libraries"
}
if [ -z "$(missing)" ] && [ -z "$(missingJava)" ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing Debian's packages for: $( (missing; missingJava) | paste -sd " " -)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  # shellcheck disable=SC2086 # the package list is split on purpose
  apt-get install -y -qq redis-server redis-tools tmux $JAVA_PKGS >/dev/null
  # The tests start their own servers; stop the one the package may have started.
  (service redis-server stop || true) >/dev/null 2>&1
fi
if [ -n "$(missingJava)" ]; then
  # Not fatal: the Redisson tests skip, saying so, for a user who may not install them.
  echo "note: the tests against the real Redisson client will skip: missing $(missingJava | paste -sd " " -);" \
    "install: sudo apt-get install $(echo $JAVA_PKGS)" >&2
fi
if [ -n "$(missing)" ]; then
  cat >&2 <<MSG
error: the tests need these on PATH: $(missing | paste -sd " " -)
Install them, for example:
  Debian/Ubuntu:  sudo apt-get install redis-server redis-tools tmux
  macOS:          brew install redis tmux
then run \`make test\` again.
MSG
  exit 1
fi
