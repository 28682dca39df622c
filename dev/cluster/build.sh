#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl,
# etcd, kwok), the real node's kubelet and kube-proxy, our pause program, its OCI image
# (images/pause.tar) and the ociimage tool that writes such images, from the pinned Go modules and
# our sources under dev/cluster/go/, and prints the directory holding the binaries. The result is
# cached outside the clone, keyed by the pins and those sources, so only a change of them rebuilds.
# Everything is compiled here from the Go module proxy; nothing prebuilt is downloaded.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${KUOTA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kuota}

if ! command -v go >/dev/null 2>&1; then
  echo "error: Go is not installed; install Go >= 1.26 (https://go.dev/doc/install) to build the test control plane" >&2
  exit 1
fi

# Bump when the build steps below change what ends up in the cache.
recipe=3
key=$( (echo "$recipe"; cat "$here"/go/*/go.mod "$here"/go/*/go.sum "$here"/go/*/*.go) | sha256sum | cut -c1-16)
root="$cache_root/control-plane/$key"
bin="$root/bin"
if [ -f "$root/complete" ]; then
  echo "$bin"
  exit 0
fi

rm -rf "$root" && mkdir -p "$bin" "$root/stages" "$root/images"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
start=$(date +%s)

k8s_version=$(sed -n 's/^\tk8s.io\/kubernetes \(v[0-9.]*\).*/\1/p' "$here/go/k8s/go.mod")
minor=$(echo "$k8s_version" | cut -d. -f2)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

echo "building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubelet, kube-proxy $k8s_version (cold: ~30 min on 2 cores)" >&2
(cd "$here/go/k8s" && go build -trimpath -ldflags "$ldflags" -o "$bin/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl \
  k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy)

echo "building etcd" >&2
(cd "$here/go/etcd" && go build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3)

echo "building kwok" >&2
(cd "$here/go/kwok" && go build -trimpath -ldflags "-s -w" -o "$bin/kwok" sigs.k8s.io/kwok/cmd/kwok)

echo "building pause, ociimage and the pause image" >&2
(cd "$here/go/pause" && go build -trimpath -ldflags "-s -w" -o "$bin/pause" .)
(cd "$here/go/ociimage" && go build -trimpath -ldflags "-s -w" -o "$bin/ociimage" .)
# 65535 is the user the pause image runs as by convention; it needs no privileges.
"$bin/ociimage" -o "$root/images/pause.tar" -name kuota.dev/pause:1 -entrypoint /pause -user 65535 \
  "$bin/pause=/pause"

# kwok's bare binary has no default stages; they ship inside its module.
kwok_dir=$(cd "$here/go/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
cp "$kwok_dir"/kustomize/stage/node/fast/node-initialize.yaml \
  "$kwok_dir"/kustomize/stage/pod/fast/pod-ready.yaml \
  "$kwok_dir"/kustomize/stage/pod/fast/pod-complete.yaml \
  "$kwok_dir"/kustomize/stage/pod/fast/pod-delete.yaml "$root/stages/"
chmod -R u+w "$root/stages"

touch "$root/complete"
echo "control plane built in $(($(date +%s) - start))s into $bin" >&2
echo "$bin"
