#!/usr/bin/env bash
# Makes (once; fast when it is there) the Python venv the runner's reference benchmarks
# run in, target/bench-venv with the OpenAI Agents SDK from PyPI, and prints its
# interpreter. `cargo xtask bench` runs it; nothing but PyPI is reached.
set -euo pipefail
cd "$(dirname "$0")/../../.."

VERSION="0.24.0"
VENV="${CARGO_TARGET_DIR:-target}/bench-venv"
PY="$VENV/bin/python"

if [ -x "$PY" ] && "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('openai-agents') != '$VERSION')" 2>/dev/null; then
    echo "$PY"
    exit 0
fi
exec 9>"$VENV.lock"
flock 9
if [ ! -x "$PY" ]; then
    python3 -m venv "$VENV" >&2
fi
"$PY" -m pip install --quiet --disable-pip-version-check "openai-agents==$VERSION" >&2
echo "$PY"
