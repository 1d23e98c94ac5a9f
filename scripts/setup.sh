#!/usr/bin/env bash
# Installs what critpath's build and tests need on a fresh Debian machine:
# a Rust toolchain (if missing) and the system packages the tests use.
# Idempotent; safe to run again.
set -euo pipefail

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v perf >/dev/null 2>&1 || need_apt+=(linux-perf)
# critpath record's network example: namespaces, veth and nftables.
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v nft >/dev/null 2>&1 || need_apt+=(nftables)
# The C SDK fires USDT probes where <sys/sdt.h> exists.
[ -e /usr/include/x86_64-linux-gnu/sys/sdt.h ] || [ -e /usr/include/sys/sdt.h ] || need_apt+=(systemtap-sdt-dev)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
# The Python package's tests run in a venv (python3 -m venv).
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3-venv)
# The send-size sweep counts instructions and cache misses with cachegrind.
command -v valgrind >/dev/null 2>&1 || need_apt+=(valgrind)
# The hostile-input tests measure a child's peak RSS with GNU time.
[ -x /usr/bin/time ] || need_apt+=(time)
# The HTML report is tested in a real headless Chromium.
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs npm)

if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${need_apt[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends "${need_apt[@]}" >/dev/null 2>&1 || {
      apt-get update >/dev/null 2>&1
      apt-get install -y --no-install-recommends "${need_apt[@]}" >/dev/null
    }
  else
    echo "setup: please install: ${need_apt[*]}" >&2
  fi
fi

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "setup: installing Rust with rustup" >&2
    curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal >/dev/null
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
fi

# critpath record needs the kernel's tracefs mounted.
if [ "$(id -u)" = 0 ] && [ ! -d /sys/kernel/tracing/events ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi

# The browser tests' driver (playwright-core, pinned in its lock file; it
# drives the distribution's Chromium and downloads no browser).
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ ! -d "$here/tests/browser/node_modules/playwright-core" ]; then
  (cd "$here/tests/browser" && npm ci --no-audit --no-fund >/dev/null)
fi

# The manual is an mdBook (docs/book.toml), built by scripts/test.sh.
# Built from crates.io at a pinned version, without the `serve` and
# `watch` features (a few minutes on two cores; once per machine).
MDBOOK_VERSION=0.5.4
if ! mdbook --version 2>/dev/null | grep -q "v$MDBOOK_VERSION"; then
  export PATH="$HOME/.cargo/bin:$PATH"
  if ! mdbook --version 2>/dev/null | grep -q "v$MDBOOK_VERSION"; then
    echo "setup: installing mdbook $MDBOOK_VERSION" >&2
    cargo install mdbook --locked --version "$MDBOOK_VERSION" \
      --no-default-features --features search >/dev/null 2>&1 || {
      echo "setup: cargo install mdbook failed" >&2
      exit 1
    }
  fi
fi
