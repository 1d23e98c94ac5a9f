#!/usr/bin/env bash
# Runs every test of critpath: formatting and lints, the Rust unit,
# property and end-to-end tests of the whole workspace, then the HTML
# report's tests in a real headless Chromium. (The C SDK's tests are Rust
# integration tests that compile real C programs; the Python package's run
# with pytest in a venv, against its wheel and the binary cargo test built.)
# Last, the manual (docs/, an mdBook) is built; its link check and the
# check of its crate table are the tests of crates/cli/tests/docs.rs.
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
echo "== Python package tests (pytest in target/venv)" >&2
./scripts/python-env.sh
CRITPATH_BIN="$PWD/target/release/critpath" target/venv/bin/python -m pytest -q python/tests
echo "== browser tests (headless Chromium)" >&2
node tests/browser/report.test.mjs
echo "== the manual (mdbook build docs)" >&2
mdbook build docs
echo "== all tests passed" >&2
