#!/usr/bin/env bash
# The Python package's test environment: a venv in target/venv with the
# exact versions of python/requirements-test.txt, and the package itself
# built from this checkout (maturin compiles crates/python into the wheel,
# reusing target/). Idempotent: an existing venv is kept, pip skips what is
# already installed; the wheel is rebuilt so that it holds the current code.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check -r python/requirements-test.txt
PATH="$PWD/$venv/bin:$PATH" "$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation --force-reinstall --no-deps ./python
