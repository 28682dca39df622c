#!/usr/bin/env bash
# Builds Kueue's own scheduler performance tools from the pinned release (go.mod beside this
# file): its runner, minimalkueue (Kueue's core controllers and scheduler, what the runner's
# thresholds were calibrated on) and its checker (a Go test binary), and prints the directory
# holding them. Cached outside the clone, keyed by the pins; only Kueue's code from the module
# proxy is compiled, and nothing of it is committed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${KUOTA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kuota}

if ! command -v go >/dev/null 2>&1; then
  echo "error: Go is not installed; install Go >= 1.26 (https://go.dev/doc/install) to build Kueue's performance runner" >&2
  exit 1
fi

# Bump when the build steps below change what ends up in the cache.
recipe=1
key=$( (echo "$recipe"; cat "$here/go.mod" "$here/go.sum") | sha256sum | cut -c1-16)
root="$cache_root/kueue/$key"
bin="$root/bin"
if [ -f "$root/complete" ]; then
  echo "$bin"
  exit 0
fi

rm -rf "$root" && mkdir -p "$bin"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
start=$(date +%s)
perf=sigs.k8s.io/kueue/test/performance/scheduler
echo "building Kueue's runner, minimalkueue and checker (cold: ~6 min on 2 cores)" >&2
(cd "$here" && go build -trimpath -ldflags "-s -w" -o "$bin/" "$perf/runner" "$perf/minimalkueue")
(cd "$here" && go test -c -trimpath -ldflags "-s -w" -o "$bin/checker.test" "$perf/checker")
touch "$root/complete"
echo "Kueue's performance tools built in $(($(date +%s) - start))s into $bin" >&2
echo "$bin"
