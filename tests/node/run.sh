#!/usr/bin/env bash
# Installs @vscode/debugadapter-testsupport into tests/node/node_modules, and the VS Code
# extension's dependencies (vscode-languageclient, @vscode/vsce) into
# adapters/vscode/node_modules (each skipped when its package.json and package-lock.json have
# not changed since the last install), and runs the DAP client tests, the extension's unit
# tests and its .vsix build with node's built-in test runner against `tandem dap`/`tandem lsp`.
# The binary is $TANDEM_BIN, else target/debug/tandem; build it first.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

command -v node >/dev/null || { echo "tests/node: node is not installed" >&2; exit 1; }
command -v npm >/dev/null || { echo "tests/node: npm is not installed" >&2; exit 1; }

# npm install in folder $1 unless its package files are those of the last install.
install() {
    local stamp="$1/node_modules/.tandem-install-stamp" want
    want="$(cat "$1/package.json" "$1/package-lock.json" | sha256sum | cut -d' ' -f1)"
    if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
        (cd "$1" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
        cat "$1/package.json" "$1/package-lock.json" | sha256sum | cut -d' ' -f1 >"$stamp"
    fi
}
install "$here"
install "$here/../../adapters/vscode"

if [[ -n "${TANDEM_BIN:-}" ]]; then
    # Relative to where the caller stood, not to this folder.
    case "$TANDEM_BIN" in
        /*) ;;
        *) TANDEM_BIN="$OLDPWD/$TANDEM_BIN" ;;
    esac
    export TANDEM_BIN
fi

exec node --test dap.test.js session.test.js adapters.test.js vscode_flow.test.js children.test.js \
    extension.test.js vscode_package.test.js
