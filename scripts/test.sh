#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Lint and import order first (pyproject.toml [tool.ruff]): a finding fails the run.
.venv/bin/ruff check .
exec .venv/bin/python -m pytest -q "$@"
