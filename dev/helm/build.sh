#!/usr/bin/env bash
# Builds Helm 3 from the pinned module (go.mod beside this file) and prints the path of the
# binary. Cached outside the clone, keyed by the pins; the chart tests and the README's install
# steps use it. Nothing prebuilt is downloaded: Helm is compiled from the Go module proxy.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${KUOTA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kuota}

if ! command -v go >/dev/null 2>&1; then
  echo "error: Go is not installed; install Go >= 1.26 (https://go.dev/doc/install) to build Helm" >&2
  exit 1
fi

# Bump when the build steps below change what ends up in the cache.
recipe=1
key=$( (echo "$recipe"; cat "$here/go.mod" "$here/go.sum") | sha256sum | cut -c1-16)
bin="$cache_root/helm/$key/helm"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$(dirname "$bin")"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
start=$(date +%s)
echo "building Helm (cold: a few minutes on 2 cores)" >&2
(cd "$here" && go build -trimpath -ldflags "-s -w" -o "$bin.partial" helm.sh/helm/v3/cmd/helm)
mv "$bin.partial" "$bin"
echo "Helm built in $(($(date +%s) - start))s: $bin" >&2
echo "$bin"
