#!/usr/bin/env bash
# Builds, from the pinned Kueue release (go.mod beside this file), and prints where it put them:
#   build.sh          Kueue's own scheduler performance tools: its runner, minimalkueue (Kueue's
#                     core controllers and scheduler, what the runner's thresholds were calibrated
#                     on) and its checker (a Go test binary); prints the directory holding them.
#   build.sh oracle   our oracle program (oracle/main.go), which prints Kueue's resolved
#                     configuration defaults and registered metrics for tests/kueue_oracle.rs;
#                     prints the binary's path.
#   build.sh manager  Kueue's manager (cmd/kueue, what Kueue's image runs), for
#                     benches/webhook_latency.rs to measure its webhooks beside Kuota's; prints
#                     the binary's path.
#   build.sh kueuectl Kueue's kubectl plugin (cmd/kueuectl, installed as `kubectl-kueue`), which
#                     tests/system_e2e.rs runs against Kuota; prints the binary's path.
# Cached outside the clone, keyed by the pins (and the oracle's source); only Kueue's code from
# the module proxy and our oracle are compiled, and nothing of Kueue is committed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${KUOTA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kuota}
target=${1:-perf}

if ! command -v go >/dev/null 2>&1; then
  echo "error: Go is not installed; install Go >= 1.26 (https://go.dev/doc/install) to build Kueue's tools" >&2
  exit 1
fi
export CGO_ENABLED=0 GOFLAGS=-mod=mod

# Builds the Go package $2 into the cache as the binary $1 unless it is there already, keyed by
# the pins and the files after $3 (what it is, for the log), and prints the binary's path.
cached_binary() {
  local name=$1 package=$2 what=$3
  shift 3
  # Bump when the build steps below change what ends up in the cache.
  local recipe=1 key root start
  key=$( (echo "$recipe"; cat "$here/go.mod" "$here/go.sum" "$@") | sha256sum | cut -c1-16)
  root="$cache_root/kueue/$name-$key"
  if [ ! -f "$root/complete" ]; then
    rm -rf "$root" && mkdir -p "$root"
    start=$(date +%s)
    echo "building $what (cold: a few minutes on 2 cores)" >&2
    (cd "$here" && go build -trimpath -ldflags "-s -w" -o "$root/$name" "$package")
    touch "$root/complete"
    echo "$what built in $(($(date +%s) - start))s into $root" >&2
  fi
  echo "$root/$name"
}

case "$target" in
  perf)
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
    start=$(date +%s)
    perf=sigs.k8s.io/kueue/test/performance/scheduler
    echo "building Kueue's runner, minimalkueue and checker (cold: ~6 min on 2 cores)" >&2
    (cd "$here" && go build -trimpath -ldflags "-s -w" -o "$bin/" "$perf/runner" "$perf/minimalkueue")
    (cd "$here" && go test -c -trimpath -ldflags "-s -w" -o "$bin/checker.test" "$perf/checker")
    touch "$root/complete"
    echo "Kueue's performance tools built in $(($(date +%s) - start))s into $bin" >&2
    echo "$bin"
    ;;
  oracle)
    cached_binary oracle ./oracle "the Kueue oracle" "$here"/oracle/*.go
    ;;
  manager)
    cached_binary kueue sigs.k8s.io/kueue/cmd/kueue "Kueue's manager"
    ;;
  kueuectl)
    cached_binary kubectl-kueue sigs.k8s.io/kueue/cmd/kueuectl "Kueue's kubectl plugin"
    ;;
  *)
    echo "usage: $0 [oracle|manager|kueuectl]" >&2
    exit 2
    ;;
esac
