#!/usr/bin/env bash
# Finds what the tests need on PATH: redis-server and redis-cli (tests start their own
# servers on free loopback ports), tmux (end-to-end TUI tests), a JDK with Debian's Java
# libraries (the real Redisson client, internal/redistest/redissonpeer/run.sh), and
# prometheus with promtool (the exporter's end-to-end test and the checks of the alert rules
# and the dashboard, internal/promtest). Installs Debian's packages when running as root;
# otherwise says how to install them.
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
missingPrometheus() {
  for bin in prometheus promtool; do command -v "$bin" >/dev/null || echo "$bin"; done
}
if [ -z "$(missing)" ] && [ -z "$(missingJava)" ] && [ -z "$(missingPrometheus)" ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing Debian's packages for: $( (missing; missingJava; missingPrometheus) | paste -sd " " -)" >&2
  export DEBIAN_FRONTEND=noninteractive
  # The tests start their own servers on free ports: no package may start its service (a
  # system prometheus would hold port 9090 and scrape itself for the rest of the CI run).
  # policy-rc.d answering 101 tells invoke-rc.d and deb-systemd-invoke not to start one;
  # one we put there goes when the install is done.
  ownPolicy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    ownPolicy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' >"$ownPolicy" && chmod 755 "$ownPolicy"
    trap 'rm -f "$ownPolicy"' EXIT
  fi
  apt-get update -qq >/dev/null
  # shellcheck disable=SC2086 # the package list is split on purpose
  apt-get install -y -qq redis-server redis-tools tmux $JAVA_PKGS >/dev/null
  # Without its recommends: prometheus alone, no node exporter service.
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  # Stop and disable any service that started all the same (a machine whose init ignores
  # policy-rc.d): redis-server's, and prometheus's with its node exporter.
  for svc in redis-server prometheus prometheus-node-exporter; do
    (service "$svc" stop || true) >/dev/null 2>&1
    (systemctl disable --now "$svc" || true) >/dev/null 2>&1
  done
fi
if [ -n "$(missingJava)" ]; then
  # Not fatal: the Redisson tests skip, saying so, for a user who may not install them.
  echo "note: the tests against the real Redisson client will skip: missing $(missingJava | paste -sd " " -);" \
    "install: sudo apt-get install $(echo $JAVA_PKGS)" >&2
fi
if [ -n "$(missingPrometheus)" ]; then
  # Not fatal here: the Prometheus tests skip, saying so, unless CI=true (then they fail).
  echo "note: the tests against a real Prometheus will skip: missing $(missingPrometheus | paste -sd " " -);" \
    "install: sudo apt-get install prometheus" >&2
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
