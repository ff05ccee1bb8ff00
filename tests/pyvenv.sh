# Sourced by the Python suites' run.sh (tests/python, tests/mcp): makes $TANDEM_BIN absolute
# and prepares the suite's own .venv with its requirements.txt (skipped when unchanged since
# the last install). Expects $here (the suite's folder); sets $venv.

venv="$here/.venv"
suite="tests/$(basename "$here")"

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
            echo "$suite: 'python3 -m venv' failed; install python3-venv" >&2
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
