#!/usr/bin/env bash
# Creates tests/mcp/.venv, installs requirements.txt into it (skipped when unchanged
# since the last install) and runs the MCP SDK suite against `tandem mcp`.
# The binary is $TANDEM_BIN, else target/debug/tandem; build it first.
# Extra arguments go to pytest.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"

if [[ -n "${TANDEM_BIN:-}" && "$TANDEM_BIN" != /* ]]; then
    # Relative to where the caller stands.
    TANDEM_BIN="$PWD/$TANDEM_BIN"
    export TANDEM_BIN
fi

if [[ ! -x "$venv/bin/python" ]]; then
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        # Debian's python3 needs its venv module installed separately.
        if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
            apt-get update -qq >/dev/null
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
            rm -rf "$venv"
            python3 -m venv "$venv"
        else
            echo "tests/python: 'python3 -m venv' failed; install python3-venv" >&2
            exit 1
        fi
    fi
fi

stamp="$venv/.tandem-install-stamp"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$here/requirements.txt"
    echo "$want" >"$stamp"
fi

cd "$here"
# A runtime directory of this run's own: a `tandem mcp` on stdio relays to a workspace's
# running `tandem lsp` found there, and must not find one another suite started
# (test_shared.py starts its own in a directory of its own).
runtime="$(mktemp -d)"
trap 'rm -rf "$runtime"' EXIT
export XDG_RUNTIME_DIR="$runtime"
status=0
"$venv/bin/python" -m pytest "$@" || status=$?
if [[ $status == 5 ]]; then
    echo "tests/python: pytest collected no tests" >&2
    exit 1
fi
exit "$status"
