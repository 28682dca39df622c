#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for SECONDS each (default 60), from the seeds in
# fuzz/seeds (and, for the configuration, the test configurations), and prints each target's
# executions. A crash stops the run with libFuzzer's report; the input is kept under
# fuzz/artifacts/<target>/ to turn into a regression test. Needs the nightly toolchain and
# cargo-fuzz (installed here from crates.io when missing).
# Usage: bash dev/fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
seconds=${1:-60}
shift || true
cd "$root/fuzz"

command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
# Out of the main target directory: sanitizer builds share nothing with it.
export CARGO_TARGET_DIR=${KUOTA_FUZZ_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kuota/fuzz-target}

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi
for target in "${targets[@]}"; do
  corpus="corpus/$target"
  mkdir -p "$corpus"
  if [ -d "seeds/$target" ]; then cp -n "seeds/$target"/* "$corpus"/; fi
  if [ "$target" = configuration ]; then cp -n "$root"/tests/data/config/*.yaml "$corpus"/; fi
  log=$(mktemp)
  if ! cargo +nightly fuzz run "$target" "$corpus" -- \
      -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=262144 >"$log" 2>&1; then
    tail -60 "$log"
    echo "fuzz target $target failed; the input is under fuzz/artifacts/$target/" >&2
    exit 1
  fi
  runs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | tail -1)
  echo "$target: ${runs:-no summary}; corpus $(find "$corpus" -type f | wc -l) inputs"
  rm -f "$log"
done
