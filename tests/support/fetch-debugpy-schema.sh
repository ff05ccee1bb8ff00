#!/usr/bin/env bash
# Extracts the DAP JSON schema that PyPI's debugpy wheel ships
# (debugpy/_vendored/pydevd/_pydevd_bundle/_debug_adapter/debugProtocol.json) to
# .tools/debugpy/debugProtocol.json, for machines without ../shared/protocol.
# Idempotent and safe to run concurrently (test binaries may call it in parallel).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dest="$root/.tools/debugpy"
out="$dest/debugProtocol.json"
member="debugpy/_vendored/pydevd/_pydevd_bundle/_debug_adapter/debugProtocol.json"

[[ -s "$out" ]] && exit 0
mkdir -p "$dest"
exec 9>"$dest/.lock"
flock 9
[[ -s "$out" ]] && exit 0

shopt -s nullglob
wheels=("$dest"/debugpy-*.whl)
if (( ${#wheels[@]} == 0 )); then
    python3 -m pip download --quiet --disable-pip-version-check --no-deps \
        --only-binary=:all: debugpy -d "$dest" >&2
    wheels=("$dest"/debugpy-*.whl)
fi
(( ${#wheels[@]} > 0 )) || { echo "fetch-debugpy-schema: no debugpy wheel in $dest" >&2; exit 1; }

# Python's zipfile rather than unzip(1), which a fresh machine may lack.
python3 - "${wheels[0]}" "$member" "$out.tmp" <<'PY'
import sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, open(out, "wb") as f:
    f.write(z.read(member))
PY
mv "$out.tmp" "$out"
