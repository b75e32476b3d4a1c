#!/usr/bin/env bash
# Create .venv at the repo root and install gno (editable) with its test tools.
# Idempotent: a second run only re-installs when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
fi
stamp=.venv/.gno-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q -e '.[test]'
  touch "$stamp"
fi
# Byte-code up front: gnoctl's start-up is most of a search, and an environment with
# PYTHONDONTWRITEBYTECODE would otherwise recompile every module on every call.
.venv/bin/python -m compileall -q gnod gnoctl
