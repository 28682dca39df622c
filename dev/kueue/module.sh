#!/usr/bin/env bash
# Prints the directory of the pinned Kueue release (go.mod beside this file) in the Go module
# cache, downloading it from the module proxy once. The compatibility tests read Kueue's own
# files there (CRDs, webhook manifests, chart values) as the oracle; nothing of it is committed.
# With a module path argument, prints that module at the version the pinned release requires
# instead (e.g. k8s.io/autoscaler/cluster-autoscaler/apis for the ProvisioningRequest CRD).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if ! command -v go >/dev/null 2>&1; then
  echo "error: Go is not installed; install Go >= 1.26 (https://go.dev/doc/install) to read Kueue's pinned release" >&2
  exit 1
fi
module=${1:-sigs.k8s.io/kueue}
cd "$here"
go mod download "$module"
go list -m -f '{{.Dir}}' "$module"
