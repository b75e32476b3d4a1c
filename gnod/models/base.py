"""The three model roles gnod keeps warm, and the error that says a role is unusable.

Search code depends on these, never on llama.cpp: a backend that cannot load
(missing file, no llama_cpp, a server down) leaves its role unavailable, with the fix,
and search degrades.
"""

from __future__ import annotations

from typing import Literal

Role = Literal["embed", "rerank", "generate"]
ROLES: tuple[Role, ...] = ("embed", "rerank", "generate")


class ModelUnavailable(Exception):
    """A role's model cannot be used (not downloaded, failed to load); says how to fix it."""

    def __init__(self, role: str, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.role = role
        self.message = message
        self.fix = fix

    def text(self) -> str:
        """The message with its fix, as every client and log line says it."""
        return with_fix(self.message, self.fix)


def with_fix(message: str, fix: str | None) -> str:
    """`message (fix: command)`: one spelling for a problem and the command that fixes it."""
    return f"{message} (fix: {fix})" if fix else message
