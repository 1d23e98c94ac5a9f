#!/usr/bin/env bash
# Runs every test of critpath: formatting and lints, the Rust unit,
# property and end-to-end tests of the whole workspace, then the HTML
# report's tests in a real headless Chromium.
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
echo "== browser tests (headless Chromium)" >&2
node tests/browser/report.test.mjs
echo "== all tests passed" >&2
