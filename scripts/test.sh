#!/usr/bin/env bash
# Runs every test of critpath: formatting and lints, then the Rust unit,
# property and end-to-end tests of the whole workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"

echo "== cargo fmt --check" >&2
cargo fmt --all -- --check
echo "== cargo clippy" >&2
cargo clippy --workspace --all-targets --release --locked -- -D warnings
echo "== cargo test" >&2
cargo test --workspace --release --locked
echo "== all tests passed" >&2
