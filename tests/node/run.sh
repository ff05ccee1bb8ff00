#!/usr/bin/env bash
# Installs @vscode/debugadapter-testsupport into tests/node/node_modules (skipped when
# package.json and package-lock.json have not changed since the last install) and runs
# the DAP client tests with node's built-in test runner against `tandem dap`.
# The binary is $TANDEM_BIN, else target/debug/tandem; build it first.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

command -v node >/dev/null || { echo "tests/node: node is not installed" >&2; exit 1; }
command -v npm >/dev/null || { echo "tests/node: npm is not installed" >&2; exit 1; }

stamp="node_modules/.tandem-install-stamp"
want="$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    npm install --no-audit --no-fund --loglevel=error >/dev/null
    # npm may rewrite the lock file; stamp what is there now.
    cat package.json package-lock.json | sha256sum | cut -d' ' -f1 >"$stamp"
fi

if [[ -n "${TANDEM_BIN:-}" ]]; then
    # Relative to where the caller stood, not to this folder.
    case "$TANDEM_BIN" in
        /*) ;;
        *) TANDEM_BIN="$OLDPWD/$TANDEM_BIN" ;;
    esac
    export TANDEM_BIN
fi

exec node --test dap.test.js session.test.js adapters.test.js vscode_flow.test.js
