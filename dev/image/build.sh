#!/usr/bin/env bash
# Builds the kuota container image without a container engine and prints the path of the OCI
# image-layout tarball it wrote; `ctr -n k8s.io images import PATH` makes it the image
# docker.io/library/kuota:dev, which a pod names as kuota:dev. The binary is the static musl
# release build, made with the same cargo command as the Dockerfile's build stage, and the image is
# that binary alone with the Dockerfile's user, entrypoint, command and ports (tests/image.rs holds
# the two to each other). Our writer (writer/) writes the image with go-containerregistry, pinned
# in go.mod beside this file. The writer and the tarball are cached outside the clone, keyed by
# their inputs, so a warm run costs only cargo's no-op check.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache_root=${KUOTA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kuota}
target=x86_64-unknown-linux-musl

if ! command -v go >/dev/null 2>&1; then
  echo "error: Go is not installed; install Go >= 1.26 (https://go.dev/doc/install) to write the kuota image" >&2
  exit 1
fi
if ! command -v musl-gcc >/dev/null 2>&1; then
  echo "error: musl-gcc is not installed; install Debian's musl-tools (apt-get install musl-tools): ring's C code is compiled for the static musl binary" >&2
  exit 1
fi
if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx "$target"; then
  echo "adding the Rust target $target (rustup target add)" >&2
  rustup target add "$target" >&2
fi

cache="$cache_root/image"
mkdir -p "$cache"
work=$(mktemp -d "$cache/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

writer_key=$(cat "$here/go.mod" "$here/go.sum" "$here"/writer/*.go | sha256sum | cut -c1-16)
writer="$cache/writer-$writer_key/image-writer"
if [ ! -x "$writer" ]; then
  echo "building the image writer (go-containerregistry, cold: ~30 s)" >&2
  (cd "$here" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$work/image-writer" ./writer)
  mkdir -p "$(dirname "$writer")"
  mv -f "$work/image-writer" "$writer"
fi

cd "$repo"
# Run from a cargo test, this script inherits the package variables cargo set for the test; ring's
# build script reruns when they change, so they would rebuild everything after it on each switch
# between a test and a shell.
for variable in $(compgen -e); do
  case $variable in
    CARGO_PKG_* | CARGO_MANIFEST_* | CARGO_CRATE_* | CARGO_BIN_* | CARGO_CFG_* | CARGO_PRIMARY_PACKAGE | CARGO_TARGET_TMPDIR | OUT_DIR) unset "$variable" ;;
  esac
done
echo "building the static kuota release binary (cold: ~20 min on 2 cores; after a change to Kuota's sources: ~5 min)" >&2
cargo build --release --locked --bin kuota --target x86_64-unknown-linux-musl
target_dir=$(cargo metadata --format-version 1 --no-deps --locked | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
binary="$target_dir/$target/release/kuota"
# The image has no libc or loader, so a dynamically linked binary could not start in it.
headers=$(readelf --program-headers "$binary")
if grep -q INTERP <<<"$headers"; then
  echo "error: $binary is dynamically linked; the image needs a static binary" >&2
  exit 1
fi

# This script holds the image's config, so a change to it makes a new image.
key=$( (cat "$here/build.sh"; echo "$writer_key"; sha256sum <"$binary") | sha256sum | cut -c1-16)
tarball="$cache/kuota-$key/kuota.tar"
if [ -f "$tarball" ]; then
  echo "$tarball"
  exit 0
fi

mkdir "$work/rootfs" "$work/kuota-$key"
install -m 0755 "$binary" "$work/rootfs/kuota"
# Fixed owners and times: the same binary always gives the same digests.
pack() { tar --create --owner=0 --group=0 --numeric-owner --mtime=@0 --sort=name "$@"; }
pack --file "$work/layer.tar" --directory "$work/rootfs" kuota
"$writer" --layer "$work/layer.tar" --layout "$work/layout" --name docker.io/library/kuota:dev \
  --platform linux/amd64 --user 65532:65532 --entrypoint /kuota --cmd serve \
  --port 9443/tcp --port 8443/tcp --port 8082/tcp --port 8081/tcp \
  --label org.opencontainers.image.title=kuota \
  --label "org.opencontainers.image.description=Kubernetes-native job queueing and quota admission, a drop-in for Kueue's API" \
  --label org.opencontainers.image.licenses=Apache-2.0
pack --file "$work/kuota-$key/kuota.tar" --directory "$work/layout" oci-layout index.json blobs
# One image per cache: older ones are of binaries since rebuilt. A concurrent run that wrote the
# same image first wins the rename; ours is then dropped with the work directory.
find "$cache" -mindepth 1 -maxdepth 1 -name 'kuota-*' ! -name "kuota-$key" -exec rm -rf {} +
mv -T "$work/kuota-$key" "$cache/kuota-$key" 2>/dev/null || [ -f "$tarball" ]
echo "wrote the image kuota:dev" >&2
echo "$tarball"
