#!/usr/bin/env bash
# Creates tests/python/.venv, installs requirements.txt into it (skipped when unchanged
# since the last install) and runs the pytest-lsp suite against `tandem lsp`.
# The binary is $TANDEM_BIN, else target/debug/tandem; build it first.
# Extra arguments go to pytest.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../pyvenv.sh
source "$here/../pyvenv.sh"

cd "$here"
status=0
"$venv/bin/python" -m pytest "$@" || status=$?
if [[ $status == 5 ]]; then
    echo "$suite: pytest collected no tests" >&2
    exit 1
fi
exit "$status"
