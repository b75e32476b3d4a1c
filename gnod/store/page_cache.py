"""Asking the OS to read the files searches read into its page cache, once gnod starts.

Every search reads pages of the lexical index and of the database (the hits' documents,
their stored text, their definitions). After a restart, or once the system has taken
back pages left unread a while, those come from the disk one search at a time: on the
kernel tree with nothing cached, a first round of the scale benchmark's 44 queries
(answered in-process) took 26 ms on average here and one 294 ms, against 8 ms and 30 ms
once both were cached (the lexical index alone: 20 ms and 158 ms).

POSIX_FADV_WILLNEED has the kernel read a range in the background, and reads at most a
few MB a call, so files are asked in steps; what is read stays the kernel's to drop
under pressure, and no more is asked than a share of the memory the system says is
available. (The ingest's read-ahead, gnod.ingest.workers, asks once a file: the
kernel then reads each file's first few MB, the whole of most source files and notes.)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

from gnod.search.constants import WARM_MEMORY_SHARE

log = logging.getLogger("gnod.store")

STEP = 2 << 20  # bytes asked per call: Linux reads at most its device's readahead limit per call


def available_bytes() -> int | None:
    """The memory the system says it can give without swapping (Linux's MemAvailable)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def ask(files: Iterable[str], budget: int) -> int:
    """Have the kernel read these files (in this order) into its page cache, until
    `budget` bytes were asked; the bytes asked. Nothing where the OS cannot be asked
    (macOS) and for a file that cannot be opened (one a commit just replaced)."""
    if not hasattr(os, "posix_fadvise"):
        return 0
    asked = 0
    for path in files:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            size = min(os.fstat(fd).st_size, budget - asked)
            for at in range(0, size, STEP):
                os.posix_fadvise(fd, at, min(STEP, size - at), os.POSIX_FADV_WILLNEED)
            asked += size
        except OSError:
            pass
        finally:
            os.close(fd)
        if asked >= budget:
            break
    return asked


def warm(lexical_dir: str, db_file: str) -> None:
    """Ask for the lexical index's files, then the database's, within WARM_MEMORY_SHARE
    of the available memory (a thread's work: each call waits for the disk's queue)."""
    available = available_bytes()
    if available is None:
        return
    try:
        names = sorted(os.listdir(lexical_dir))
    except OSError:  # not made yet, or being made again
        names = []
    files = [os.path.join(lexical_dir, name) for name in names] + [db_file, db_file + "-wal"]
    asked = ask(files, int(available * WARM_MEMORY_SHARE))
    log.info("asked the OS to read %d MB of the index into memory", asked >> 20)
