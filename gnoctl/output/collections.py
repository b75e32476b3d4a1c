"""`collection add|list|remove|describe` and `update`: collections and what an index run did."""

from __future__ import annotations

import sys
from collections.abc import Callable

# Kinds of files named in the line on what was left out; the rest are counted.
OTHER_KINDS_SHOWN = 8
# Binary data no converter reads: an `also` glob taking them only records a BINARY
# failure for each, so the line suggests none for them (a data science project's
# `.parquet` and `.pkl` were its first suggestions).
BINARY_DATA = frozenset(
    ".parquet .feather .arrow .pkl .pickle .joblib .npy .npz .h5 .hdf5 .mat .pt .pth .ckpt .safetensors "
    ".onnx .gguf .bin .db .sqlite .sqlite3 .so .o .a .dll .dylib .exe .class .jar .pyc .whl .egg .iso .img "
    ".dmg .mp3 .mp4 .m4a .mov .avi .mkv .wav .flac .ogg .webm .ttf .otf .woff .woff2 .ico".split()
)


def index_lines(res: dict) -> list[str]:
    """A line per collection an index run went through: the files it found, then the
    documents it changed (a mailbox is one file of many documents), then what failed;
    and one more where the default kinds of files left some out."""
    return run_lines(
        res,
        lambda s: (
            f"{s['collection']}: {s['scanned']:,} {'file' if s['scanned'] == 1 else 'files'}; documents "
            f"{s['added']:,} added, {s['updated']:,} updated, {s['unchanged']:,} unchanged, "
            f"{s['removed']:,} removed; {s['errors']:,} failed ({s['seconds']:.2f}s)"
        ),
    )


def run_lines(res: dict, line: Callable[[dict], str]) -> list[str]:
    """`line` of each collection's stats in an index run's result, each followed by what
    the default kinds of files and names of build output left out of it, if anything."""
    out = []
    for stats in res["collections"]:
        out.append(line(stats))
        out += [f"  {left_out}" for left_out in (_other_kinds_line(stats), _output_folders_line(stats)) if left_out]
        out += [f"  {_unanchored_line(glob)}" for glob in stats.get("unanchored") or []]
    return out


def _unanchored_line(glob: str) -> str:
    """What a glob anchored at a folder the collection's top lacks means, and the glob
    that matches at any depth."""
    bang, rest = ("!", glob[1:]) if glob.startswith("!") else ("", glob)
    anywhere = bang + "**/" + rest.removeprefix("/")
    return (
        f"'{glob}' matches no file: a glob with a / inside is anchored at the collection's top, as in "
        f".gitignore, and no {rest.removeprefix('/').split('/', 1)[0]}/ is there; '{anywhere}' matches at any depth"
    )


def _other_kinds_line(stats: dict) -> str | None:
    """What the default kinds of files left out of a collection's index run, if anything."""
    kinds = stats.get("other_kinds") or {}
    if not kinds:
        return None
    named = [f"{ext or 'no extension'} {n:,}" for ext, n in list(kinds.items())[:OTHER_KINDS_SHOWN]]
    rest = len(kinds) - OTHER_KINDS_SHOWN
    more = f", {rest:,} more kind{'s' * (rest != 1)}" if rest > 0 else ""
    total = sum(kinds.values())
    files = "file" if total == 1 else "files"
    readable = [ext for ext in kinds if ext.lower() not in BINARY_DATA]
    glob = f"'*{readable[0]}'" if readable and readable[0] else "GLOB"
    return (
        f"not indexed: {total:,} {files} of other kinds ({', '.join(named)}{more}); --also globs take them "
        f"besides the default kinds (gnoctl collection set {stats['collection']} --also {glob}, with those it has)"
    )


def _output_folders_line(stats: dict) -> str | None:
    """The folders a collection's index run left out as build output for their name alone."""
    folders = stats.get("output_folders") or {}
    if not folders:
        return None
    total = sum(folders.values())
    named = ", ".join(f"{name}/ {n:,}" for name, n in folders.items())
    return (
        f"not indexed: {total:,} folder{'s' if total != 1 else ''} taken for build output by name ({named}); "
        "a .gitignore at the collection's top (an empty one will do) lets them in where the collection follows "
        ".gitignore files (the default): its rules then say what output is"
    )


def say_stopped_waiting(what: str) -> None:
    """Ctrl-C during an index run: gnod goes on with it, and the user is told so."""
    print(
        f"gnoctl: stopped waiting; gnod goes on indexing {what} in the background (gnoctl status shows how far it is)",
        file=sys.stderr,
    )


def list_lines(res: dict) -> list[str]:
    if not res["collections"]:
        return ["no collections yet: gnoctl collection add PATH"]
    lines = []
    for c in res["collections"]:
        extra = f" language={c['language']}" if c.get("language") else ""
        head = f"{c['name']:<16} {c['documents']:>7} docs  "
        lines.append(f"{head}{c['path']}{extra}")
        if c.get("description"):  # under the folder, as the collection's second line
            lines.append(" " * len(head) + c["description"])
    return lines


def described_lines(c: dict) -> list[str]:
    """`collection describe`: the description now in force (or that there is none)."""
    if c.get("description"):
        return [f"{c['name']}: {c['description']}"]
    return [f'{c["name"]}: no description (gnoctl collection describe {c["name"]} "WHAT IT HOLDS")']


def settings_line(c: dict) -> str:
    """A collection's settings of which files it indexes, as `collection set` takes them."""
    globs = [f"{key} {' '.join(c.get(key) or ())}" for key in ("include", "also", "exclude") if c.get(key)]
    return "  now: " + "; ".join(
        [
            *(globs or ["the default kinds"]),
            f"language {c.get('language') or 'auto'}",
            f"gitignore {'on' if c.get('gitignore') else 'off'}",
            *(["following symlinks"] if c.get("follow_symlinks") else []),
        ]
    )


def removed_lines(res: dict) -> list[str]:
    n = res["documents_removed"]
    return [f"removed collection {res['name']} ({n:,} document{'s' if n != 1 else ''})"]
