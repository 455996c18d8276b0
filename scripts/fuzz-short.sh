#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a short time each (FUZZTIME, default 5s).
# Long runs: FUZZTIME=10m scripts/fuzz-short.sh
set -euo pipefail
fuzztime=${FUZZTIME:-5s}
grep -rl --include='*_test.go' '^func Fuzz' . | grep -v '^./bench/' | while read -r file; do
  pkg=./$(dirname "${file#./}")
  for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | cut -d' ' -f2); do
    echo "fuzz $pkg $target ($fuzztime)"
    go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$pkg" >/tmp/lockscope-fuzz.log 2>&1 || { cat /tmp/lockscope-fuzz.log; exit 1; }
  done
done
