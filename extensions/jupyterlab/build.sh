#!/bin/sh
# Rebuild the JupyterLab panel into xsched/labextension and the dashboard page a scheduler
# serves into xsched/dashboard/static (Node 20+ needed; users need none).
#   sh extensions/jupyterlab/build.sh [path/to/venv/bin/python]
# npm ci (the lockfile), tsc, then the JupyterLab builder against the installed JupyterLab's
# core package (so shared @jupyterlab/* versions match what the venv serves), then esbuild
# for the dashboard page (src/standalone.ts: the same panes without JupyterLab), then the
# source stamp that tests/cluster/test_labserver.py checks.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=${1:-$ROOT/.venv/bin/python}
PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")
BIN=$(dirname "$PY")
cd "$HERE"
[ -d node_modules ] && [ node_modules -nt package-lock.json ] || npm ci --no-audit --no-fund
PATH="$BIN:$PATH" npx tsc
CORE=$("$PY" -c 'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging", "package.json"))')
rm -rf "$ROOT/xsched/labextension"
PATH="$BIN:$PATH" "$BIN/jupyter-builder" build --core-package-file="$CORE" .
cp install.json "$ROOT/xsched/labextension/install.json"
node build_dashboard.mjs
"$PY" stamp.py
