"""`get`, `multi-get` and `ls`: documents, and lists of them."""

from __future__ import annotations

import sys

from gnoctl.output.common import View, columns, dump, file_list, json_lines, pad


def write_document(doc: dict, fmt: str, view: View) -> None:
    """`get`: the document as JSON, else its text exactly as indexed (paged on a terminal
    when taller than it), its notes on stderr."""
    if fmt == "json":
        dump(doc)
    elif not view.page(doc["content"].removesuffix("\n")):
        sys.stdout.write(doc["content"])
    for note in doc.get("notes", []):
        print(f"gnoctl: note: {note}", file=sys.stderr)


def _named(doc: dict) -> str:
    """A document as `get` takes it: with the lines shown where they are not all of it
    (a definition's: `kernel/fork.c:2096-2664`)."""
    part = doc["from_line"] > 1 or doc["to_line"] < doc["total_lines"]
    return f"{doc['collection']}/{doc['path']}" + (f":{doc['from_line']}-{doc['to_line']}" if part else "")


def write_documents(res: dict, fmt: str, view: View, max_bytes: int, patterns: list[str] | None = None) -> None:
    """`multi-get`: JSON, the paths, or each document after a header line; what was not
    found (a reference, or one of the `patterns` matching nothing) and a cut at
    `max_bytes` are said on stderr."""
    if fmt == "json":
        dump(res)
        return
    if fmt == "files":
        view.emit(file_list([d["abs_path"] for d in res["documents"]], view.null), fmt)
    else:
        text = "".join(f"===== {_named(d)} — {d['title']}\n{d['content']}" for d in res["documents"])
        if not view.page(text.removesuffix("\n")):
            sys.stdout.write(text)
    for m in res["missing"]:
        if m in (patterns or ()):
            print(f"gnoctl: no document matches -p '{m}'", file=sys.stderr)
            continue
        glob = any(ch in m for ch in "*?[")  # a reference names one document: a glob goes after -p
        print(f"gnoctl: not found: {m}" + (f" (a glob: multi-get -p '{m}')" if glob else ""), file=sys.stderr)
    if res["truncated"]:
        left = res.get("left_out", 0)
        more = f": {left} more document{'s' if left != 1 else ''} not read" if left else ""
        print(f"gnoctl: output truncated at {max_bytes} bytes{more} (raise --max-bytes)", file=sys.stderr)


# `ls` aligns its titles after the paths, but not after a path over this many times the
# median's length (a 200-character file name pushed every title off the screen): such
# a path has its title two spaces after it.
ALIGN_OUTLIER = 2
ALIGN_MIN = 40  # a path this long is never an outlier


def column_width(lengths: list[int]) -> int:
    """Where the second column starts: after the longest path that is not an outlier."""
    if not lengths:
        return 0
    cap = max(ALIGN_MIN, ALIGN_OUTLIER * sorted(lengths)[len(lengths) // 2])
    return max(n for n in lengths if n <= cap) if min(lengths) <= cap else 0


def _about(entry: dict) -> str:
    """What `ls` says of a document after its path: its title; a mail's day and sender too."""
    if not entry.get("sender"):
        return entry["title"]
    return "  ".join(part for part in (entry["title"], (entry.get("date") or "")[:10], entry["sender"]) if part)


def write_listing(res: dict, fmt: str, view: View, asked: str = "", filtered: bool = False) -> None:
    """`ls`: collection/path and title (a mail's day and sender after it), aligned, after
    the folders of `ls -d` with their document counts; stderr says when -n cut the list
    short, and when nothing is under the collection or folder `asked` for, or nothing
    passes the filters (`filtered`)."""
    entries, folders = res["entries"], res.get("folders", [])
    if fmt == "json":
        dump(res)
    elif fmt == "jsonl":
        view.emit(json_lines([*folders, *entries]), fmt)
    elif fmt == "files":
        view.emit(file_list([e["abs_path"] for e in entries], view.null), fmt)
    else:
        rows = [
            (f"{f['collection']}/{f['path']}", f"{f['documents']:,} document{'s' if f['documents'] != 1 else ''}")
            for f in folders
        ]
        rows += [(f"{e['collection']}/{e['path']}", _about(e)) for e in entries]
        width = column_width([columns(path) for path, _ in rows])  # a CJK name's characters take two
        view.emit("\n".join(f"{pad(path, width)}  {about}".rstrip() for path, about in rows), fmt)
    if res["total"] > len(entries) and fmt != "json":  # JSON has `total`
        print(f"gnoctl: listed {len(entries)} of {res['total']} documents (-n N lists more)", file=sys.stderr)
    elif filtered and not entries and fmt != "json":
        under = f" under {asked!r}" if asked else ""
        print(f"gnoctl: no document{under} passes the filters", file=sys.stderr)
    elif asked and not entries and not folders and fmt != "json":
        print(f"gnoctl: nothing indexed under {asked!r}", file=sys.stderr)
