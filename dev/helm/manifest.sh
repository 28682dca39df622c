#!/usr/bin/env bash
# Prints the install manifest for `kubectl apply --server-side -f -`, rendered from the chart
# (charts/kuota) as Kueue's manifests.yaml is: release "kueue" in namespace kueue-system (or
# $1), with the Namespace first. Extra arguments go to `helm template` (e.g. --values FILE).
# Without Helm's hooks: the uninstall hook would run at once under kubectl apply.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
namespace=${1:-kueue-system}
shift || true
helm=$(bash "$here/build.sh")
cat <<YAML
apiVersion: v1
kind: Namespace
metadata:
  name: $namespace
  labels:
    control-plane: controller-manager
---
YAML
"$helm" template kueue "$here/../../charts/kuota" --namespace "$namespace" --no-hooks "$@"
