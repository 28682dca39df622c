#!/usr/bin/env bash
# Builds a third-party job controller from its pinned module (dev/controllers/NAME/go.mod) and
# prints the directory holding it: `jobset` (the JobSet controller, binary `jobset-controller`)
# or `kuberay` (the KubeRay operator, binary `ray-operator`, with the module's CRDs under
# `crds/`). The e2e tests run them against the test control plane so that JobSets and
# RayClusters get real pods. Cached outside the clone, keyed by the pins; nothing prebuilt is
# downloaded: each is compiled from the Go module proxy.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${KUOTA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kuota}
name=${1:?usage: build.sh jobset|kuberay}

case "$name" in
  jobset) package=sigs.k8s.io/jobset binary=jobset-controller module=sigs.k8s.io/jobset crds=config/components/crd/bases ;;
  kuberay) package=github.com/ray-project/kuberay/ray-operator binary=ray-operator module=$package crds=config/crd/bases ;;
  *) echo "error: unknown controller '$name' (jobset or kuberay)" >&2; exit 2 ;;
esac

if ! command -v go >/dev/null 2>&1; then
  echo "error: Go is not installed; install Go >= 1.26 (https://go.dev/doc/install) to build $name" >&2
  exit 1
fi

# Bump when the build steps below change what ends up in the cache.
recipe=1
key=$( (echo "$recipe"; cat "$here/$name/go.mod" "$here/$name/go.sum") | sha256sum | cut -c1-16)
dir="$cache_root/controllers/$name/$key"
if [ -f "$dir/complete" ]; then
  echo "$dir"
  exit 0
fi

rm -rf "$dir" && mkdir -p "$dir/crds"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
start=$(date +%s)
echo "building $name (cold: a few minutes on 2 cores)" >&2
(cd "$here/$name" && go build -trimpath -ldflags "-s -w" -o "$dir/$binary" "$package")
module_dir=$(cd "$here/$name" && go list -m -f '{{.Dir}}' "$module")
cp "$module_dir/$crds"/*.yaml "$dir/crds/"
chmod -R u+w "$dir/crds"
touch "$dir/complete"
echo "$name built in $(($(date +%s) - start))s into $dir" >&2
echo "$dir"
