#!/usr/bin/env bash
# Installs what the test cluster's real node runs besides kubelet and kube-proxy (which build.sh
# compiles): containerd, runc, the CNI plugins, iptables, conntrack and socat, and musl-tools for
# the static kuota binary of the image it runs (dev/image/build.sh), and nghttp2-client for h2load,
# the webhook bench's load generator, from Debian's packages.
# Quick when they are already there: it only asks dpkg.
set -euo pipefail

packages=(containerd runc containernetworking-plugins iptables conntrack socat musl-tools nghttp2-client)
missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$package")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "error: the real node, its image and the webhook bench need ${missing[*]}; install them as root with apt-get (Debian or Ubuntu)" >&2
  exit 1
fi
echo "installing ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
