#!/usr/bin/env bash
# Creates tests/mcp/.venv, installs requirements.txt into it (skipped when unchanged
# since the last install) and runs the MCP SDK suite against `tandem mcp`.
# The binary is $TANDEM_BIN, else target/debug/tandem; build it first.
# Extra arguments go to pytest.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../pyvenv.sh
source "$here/../pyvenv.sh"

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
    echo "$suite: pytest collected no tests" >&2
    exit 1
fi
exit "$status"
