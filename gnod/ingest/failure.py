"""Why a file (or a member of one) cannot be indexed: a stable code and a reason."""

from __future__ import annotations


class IngestFailure(Exception):
    """A file that cannot be indexed; recorded in ingest_errors, never fatal to a run."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


# A file listed by the walk and gone when it was opened (deleted or renamed away since: a
# branch switched under a run): no failure to record, but a file to remove.
GONE = "GONE"
