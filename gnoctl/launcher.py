"""Write gnoctl's start-up script: an interpreter started without `site` (`python -IS`).

pip's entry script starts Python normally, and `site` then reads every .pth file in
site-packages and imports what they name (setuptools' distutils shim among them): about
3 ms of a 16 ms `gnoctl search`, for nothing gnoctl uses. All gnoctl needs from `site` is
the directories it adds to `sys.path`, so the script written here lists them itself. `-I`
also keeps the current directory and PYTHON* variables out of the path, as a tool should.
scripts/setup.sh rewrites `.venv/bin/gnoctl` with it after every install:

    python -m gnoctl.launcher .venv/bin/gnoctl
"""

from __future__ import annotations

import os
import subprocess
import sys

# A longer `#!` line, or one with a space, is not run as written by every kernel; the
# script then starts as a shell script that execs the interpreter (as pip's scripts do).
MAX_SHEBANG = 127


def site_paths() -> list[str]:
    """The entries of this interpreter's sys.path that a start without `site` lacks, the
    one holding gnoctl first: Python lists every directory it looks in, and site-packages
    (hundreds of entries) need not be listed for gnoctl's own modules when gno is
    installed from a checkout (`pip install -e`)."""
    bare = subprocess.run(
        [sys.executable, "-IS", "-c", "import sys; print('\\n'.join(sys.path))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    own = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [p for p in dict.fromkeys(sys.path) if p and p not in bare and os.path.isdir(p)]
    return sorted(paths, key=lambda p: os.path.abspath(p) != own)


def script(executable: str, paths: list[str]) -> str:
    """The launcher's text: `executable -IS`, then `paths` appended to sys.path, then gnoctl."""
    shebang = f"#!{executable} -IS"
    if len(shebang) > MAX_SHEBANG or " " in executable:
        quoted = executable.replace("'", "'\"'\"'")
        head = f"#!/bin/sh\n'''exec' '{quoted}' -IS \"$0\" \"$@\"\n' '''\n"
    else:
        head = shebang + "\n"
    return (
        head + "# Written by `python -m gnoctl.launcher`: gnoctl without `site`'s start-up work.\n"
        "import sys\n"
        f"sys.path += {paths!r}\n"
        "from gnoctl.main import run\n"
        "run()\n"
    )


def write(target: str) -> None:
    """Replace `target` with the launcher for this interpreter, atomically, mode 0755."""
    text = script(sys.executable, site_paths())
    tmp = f"{target}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, target)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m gnoctl.launcher PATH  (writes gnoctl's start-up script to PATH)")
    write(sys.argv[1])
