"""Text that is not UTF-8: which legacy charset its bytes are in.

A note saved by an older Windows or Japanese editor is Shift_JIS, GB18030, EUC-KR or
windows-1251; read as Latin-1 it was indexed as mojibake (`Çàìåòêà` for `Заметка`), and
none of its words could be found. Western European text (an author's `Jürgen` in a C
file, a French note) has its letters outside ASCII one at a time, between ASCII ones;
those other scripts have them in runs (two bytes a CJK character, whole Cyrillic words).
Only text with such runs is given to charset-normalizer (markitdown's own dependency),
among the legacy charsets people write in: on short Western text its guesses were
wrong (cp775 for `Jürgen`), and such text stays windows-1252 as browsers read it.
"""

from __future__ import annotations

import re

# The legacy charsets a detection chooses among: Japanese, Chinese (simplified and
# traditional), Korean, Cyrillic (Windows and KOI8), Greek, Hebrew, Arabic, Central European.
LEGACY = ["cp932", "euc_jp", "gb18030", "big5", "cp949", "cp1251", "koi8_r", "cp1253", "cp1255", "cp1256", "cp1250"]
_HIGH_RUN = re.compile(rb"[\x80-\xff]+")
SAMPLE_BYTES = 65_536  # the start of a text that decides whether its letters come in runs


def decode_legacy(data: bytes, declared: str | None = None) -> str:
    """`data` (not UTF-8) as text: in its `declared` charset (an HTML page's or a mail
    part's) when it decodes so, else in the legacy charset detected where its letters
    outside ASCII come in runs, else windows-1252 (Latin-1 for the bytes it leaves
    undefined), which never fails: nothing is lost, at worst mis-read."""
    for charset in (declared, _detected(data)):
        if charset:
            try:
                return data.decode(charset)
            except (LookupError, ValueError):  # unknown, not a text codec, or not this text's
                pass
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1")


# A web page's own charset, where a browser looks for it: a <meta> in its first 1024 bytes
# (`<meta charset="shift_jis">`, `<meta http-equiv="Content-Type" content="text/html;
# charset=windows-1251">`), or an XHTML page's XML declaration.
_DECLARED_RE = re.compile(
    rb"""<meta[^>]*?charset\s*=\s*["']?\s*([\w.:-]+)|<\?xml[^>]*?encoding\s*=\s*["']([\w.:-]+)""", re.I
)
HTML_PRESCAN_BYTES = 1024


def declared_charset(page: bytes) -> str | None:
    """The charset a web page says it is in, if it says so where a browser looks."""
    m = _DECLARED_RE.search(page, 0, HTML_PRESCAN_BYTES)
    return (m.group(1) or m.group(2)).decode("ascii") if m else None


def in_runs(data: bytes) -> bool:
    """Whether most of the bytes beyond ASCII at the start of `data` come in runs (not
    Western text, whose letters outside ASCII come one at a time)."""
    runs = [len(run) for run in _HIGH_RUN.findall(data, 0, SAMPLE_BYTES)]
    return sum(n for n in runs if n > 1) * 2 > sum(runs)


def _detected(data: bytes) -> str | None:
    if not in_runs(data):
        return None
    import charset_normalizer

    best = charset_normalizer.from_bytes(data, cp_isolation=LEGACY).best()
    return best.encoding if best is not None else None
