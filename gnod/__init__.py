"""gno's daemon; its version is the package's (pyproject.toml reads it from here)."""

__version__ = "0.1.0"
