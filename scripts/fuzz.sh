#!/usr/bin/env bash
# Runs every fuzz target in fuzz/ for a short time (default 20 s each) with cargo-fuzz.
# Installs what it needs on a fresh machine: the nightly toolchain and cargo-fuzz.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
secs="${1:-20}"; shift || true
if ! rustup toolchain list | grep -q '^nightly'; then
    echo "[fuzz] installing the nightly toolchain"
    rustup toolchain install nightly --profile minimal
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
    echo "[fuzz] installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi
cd "$ROOT/fuzz"
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$HOME/.cache/peregrine-fuzz-target}"
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
for t in "${targets[@]}"; do
    echo "[fuzz] $t for ${secs}s"
    mkdir -p "corpus/$t"
    cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 2>&1 | tail -n 3
    # cargo fuzz exits non-zero on a crash; pipefail carries it out.
done
echo "[fuzz] all targets ran clean"
