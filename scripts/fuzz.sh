#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for SECS seconds each (default 60),
# with the committed seeds (fuzz/seeds/<target>) next to the growing corpus
# (fuzz/corpus/<target>, not committed). A crash stops the run and leaves
# its input in fuzz/artifacts/<target>/; replay it with
#   cargo +nightly fuzz run <target> fuzz/artifacts/<target>/<file>
# and turn it into a test (crates/rrd-engine/tests/fuzz_regressions.rs, or
# the crate's own tests) before fixing it.
#
# The targets' bodies are in crates/rrd-fuzz; `cargo test -p rrd-fuzz` runs
# them on stable over the seeds and fixed-seed mutations of them (CI does).
#
# Needs a nightly toolchain and cargo-fuzz:
#   rustup toolchain install nightly && cargo install cargo-fuzz
# Usage: scripts/fuzz.sh [SECS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
cargo +nightly fuzz build
for t in "${targets[@]}"; do
    # The artifacts folder exists before it is counted: with pipefail, a
    # `find` of a missing folder would end the script here.
    mkdir -p "corpus/$t" "artifacts/$t"
    seeds=()
    [ -d "seeds/$t" ] && seeds=("seeds/$t")
    echo "== fuzz $t for ${secs}s"
    before=$(find "artifacts/$t" -type f 2>/dev/null | wc -l)
    cargo +nightly fuzz run "$t" "corpus/$t" "${seeds[@]}" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 2>&1 |
        grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)|panicked|ERROR|SUMMARY' || true
    if [ "$(find "artifacts/$t" -type f 2>/dev/null | wc -l)" -gt "$before" ]; then
        echo "fuzz $t: a failing input is in fuzz/artifacts/$t/" >&2
        exit 1
    fi
done
