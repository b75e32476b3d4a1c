"""The canonical text form that every content hash is computed from.

This is a byte-exact contract: changing any rule changes every stored hash and forces
a full re-index, so the rules are pinned by tests. `canonicalize` applies, in order:

1. normalize "\\r\\n" to "\\n";
2. remove control characters except "\\n" and "\\t": U+0000-U+0008, U+000B, U+000C,
   U+000E-U+001F, U+007F and U+0080-U+009F (a lone "\\r" is therefore removed);
3. strip leading U+FEFF (byte order marks; a repeated BOM is stripped too);
4. Unicode NFC normalization;
5. trim trailing whitespace of every line (`str.rstrip()` per "\\n"-separated line);
6. collapse every run of 2+ blank lines (whitespace-only lines are blank after rule 5)
   into exactly one blank line, at the start of the text as well as inside it;
7. end with exactly one "\\n" (an empty or blank document becomes "\\n").

Control removal and BOM stripping come before NFC so that the result is a fixed
point: removing a control character between a base letter and a combining mark (or
in front of a BOM) after NFC would leave text that a second pass changes again.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

# Rules 1 and 2 in one pass over UTF-8 bytes, where `bytes.translate` is fast for any
# script (`str.translate` is not). Deleting every "\r" is the same as turning "\r\n"
# into "\n" and then removing lone "\r". ASCII bytes never occur inside a multi-byte
# sequence, and 0xC2 is always a lead byte, so both deletions stay on code points.
_ASCII_CONTROLS = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0D, 0x20), 0x7F])
_C1_CONTROLS_RE = re.compile(rb"\xc2[\x80-\x9f]")
_BLANK_RUN_RE = re.compile(r"\n\n\n+")


def canonicalize(text: str) -> str:
    """Return the canonical form of `text` (see the module docstring for the rules)."""
    return canonicalize_lines(text)[0]


def _clean(text: str) -> str:
    """Rules 1 to 5, which keep every line where it is."""
    data = text.encode("utf-8", "surrogatepass").translate(None, _ASCII_CONTROLS)
    if b"\xc2" in data:
        data = _C1_CONTROLS_RE.sub(b"", data)
    text = data.decode("utf-8", "surrogatepass").lstrip("\ufeff")
    return _trimmed(unicodedata.normalize("NFC", text))


def _trimmed(text: str) -> str:
    """Rule 5. Most files have no trailing whitespace: in ASCII text (controls removed,
    only space and tab are whitespace besides the line break) two substring searches
    tell, where splitting it into lines was almost half of canonicalizing it."""
    if text.isascii() and " \n" not in text and "\t\n" not in text and not text.endswith((" ", "\t")):
        return text
    return "\n".join(map(str.rstrip, text.split("\n")))


def canonicalize_lines(text: str) -> tuple[str, str]:
    """`canonicalize(text)` and where its lines were in `text`: the blank lines rule 6
    dropped, as `line_shifts` (gnod.lines; empty when none were). Results and
    `get` name the file's lines: a person opens the file, not the canonical text."""
    text = _clean(text)
    # Inside the text, k blank lines are k+1 newlines (two kept); at its start they are k (one kept).
    lead = len(text) - len(text.lstrip("\n"))
    pieces, shifts = ["\n"] if lead >= 2 else [], []
    removed = lead - 1 if lead >= 2 else 0
    at, line = (lead, lead + 1) if lead >= 2 else (0, 1)  # `line`: the line of `text` at `at`
    if removed:
        shifts.append((line - removed, removed))
    for m in _BLANK_RUN_RE.finditer(text, at) if "\n\n\n" in text else ():
        pieces += [text[at : m.start()], "\n\n"]
        line += text.count("\n", at, m.end())
        removed += len(m.group()) - 2
        shifts.append((line - removed, removed))
        at = m.end()
    if not pieces and text.endswith("\n") and not text.endswith("\n\n"):
        return text, ""  # already canonical here (most source files): not copied again
    pieces.append(text[at:])
    canonical = "".join(pieces).rstrip("\n") + "\n"
    return canonical, " ".join(f"{stored}:{extra}" for stored, extra in shifts)


def mirror_hash(canonical: str | bytes) -> str:
    """Lowercase hex SHA-256 of the UTF-8 bytes of an already canonical text (or of those
    bytes, given)."""
    return hashlib.sha256(canonical if isinstance(canonical, bytes) else canonical.encode("utf-8")).hexdigest()
