"""A day as people write it in a note's frontmatter (`date: 03.11.2025`), read strictly.

ISO first (`2025-11-03`, with a time after it or not); then the year first with `/` or
`.` between (`2025/11/03`); the day first with dots, as German and other European
languages write it (`03.11.2025`, `3. 11. 2025`); with slashes or dashes, where one of
the first two numbers can only be the day (`25/12/2025`, `12/25/2025`: a `03/11/2025`
is the 3rd of November or the 11th of March, and is read as neither); and a month's
name in English, German, French, Spanish, Italian, Dutch or Portuguese, in full or its
first three letters, before or after the day, maybe after the weekday (`April 9, 2025`,
`9 April 2025`, `Mittwoch, 9. April 2025`, `1er août 2025`). A year has four digits. Anything else is no day: the caller
falls back to the file's time.

A note without such a date may be named by its day, as a notes app names a daily note
(`2025-03-14.md`) and a blog its posts (`2025-03-14-launch.md`): named_day.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timezone

from gnod.text.analyzer import fold

_MONTH_NAMES = {
    1: "january jan januar janvier enero gennaio januari janeiro",
    2: "february feb februar fevrier febrero febbraio februari fevereiro",
    3: "march mar marz maerz mars marzo maart marco",
    4: "april apr avril abril aprile",
    5: "may mai mayo maggio mei maio",
    6: "june jun juni juin junio giugno junho",
    7: "july jul juli juillet julio luglio julho",
    8: "august aug aout agosto augustus",
    9: "september sep sept septembre septiembre settembre setembro",
    10: "october oct oktober okt octobre octubre ottobre outubro",
    11: "november nov novembre noviembre novembro",
    12: "december dec dezember decembre diciembre dicembre dezembro dez",
}
MONTHS = {name: month for month, names in _MONTH_NAMES.items() for name in names.split()}
_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:\.|st|nd|rd|th|er|º)?"
_YEAR = r"(\d{4})(?!\d)"

_YEAR_FIRST = re.compile(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")
_DOTTED = re.compile(rf"(\d{{1,2}})\.\s?(\d{{1,2}})\.\s?{_YEAR}")
_SLASHED = re.compile(rf"(\d{{1,2}})([/-])(\d{{1,2}})\2{_YEAR}")
_WEEKDAY = r"(?:[a-z]+\.?,\s*)?"  # `Wednesday, April 9, 2025`, `Mi., 9. April 2025`
_DAY_MONTH = re.compile(rf"{_WEEKDAY}{_DAY}\s*(?:de\s+)?{_MONTH}\s*,?\s*(?:de\s+)?{_YEAR}")
_MONTH_DAY = re.compile(rf"{_WEEKDAY}{_MONTH}\s+{_DAY}\s*,?\s*{_YEAR}")
# A file's name that starts with an ISO day, or with a note's timestamp (a Zettelkasten
# ID, Obsidian's unique notes: `202611051800 Habit stacking.md`, its minute or second;
# eight digits alone are any number), and no digit after it.
_NAMED = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?!\d)|((?:19|20)\d{2})(\d{2})(\d{2})(?:[01]\d|2[0-3])[0-5]\d(?:[0-5]\d)?(?!\d)"
)
# SQL's cheap tests of a path that may end in such a name (named_day decides).
NAMED_DAY_GLOBS = ("*[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*", "*" + "[0-9]" * 12 + "*")


def mtime_day(mtime_ns: int) -> int:
    """A file's day by its mtime (UTC), as a day number (date.toordinal)."""
    return datetime.fromtimestamp(mtime_ns / 1e9, tz=timezone.utc).date().toordinal()


def written_day(text: str) -> date | None:
    """The day `text` starts with, as the module reads them; None where it is none."""
    text = fold(text.strip().lower())
    try:
        if m := _YEAR_FIRST.match(text):
            return date(int(m[1]), int(m[2]), int(m[3]))
        if m := _DOTTED.match(text):
            return date(int(m[3]), int(m[2]), int(m[1]))
        if m := _SLASHED.match(text):
            first, second = int(m[1]), int(m[3])
            if first > 12 >= second:
                return date(int(m[4]), second, first)
            if second > 12 >= first:
                return date(int(m[4]), first, second)
            return None
        if m := _DAY_MONTH.match(text):
            return date(int(m[3]), MONTHS[m[2]], int(m[1]))
        if m := _MONTH_DAY.match(text):
            return date(int(m[3]), MONTHS[m[1]], int(m[2]))
    except ValueError:  # the 31st of April
        return None
    return None


def named_day(path: str) -> date | None:
    """The day a file's name starts with, ISO-written (`Daily/2025-03-14.md`,
    `_posts/2025-03-14-launch.md`; an archive's member by its own name) or in a note's
    timestamp (`202503141530 Idea.md`); None where it starts with none."""
    m = _NAMED.match(path[path.rfind("/") + 1 :])
    try:
        return date(*(int(m[i]) for i in ((1, 2, 3) if m[1] else (4, 5, 6)))) if m else None
    except ValueError:  # 2025-13-45
        return None


def iso_named_day(path: object) -> str | None:
    """`named_day` as YYYY-MM-DD (SQL's `gno_named_day`, as iso_day)."""
    found = named_day(path) if isinstance(path, str) else None
    return found.isoformat() if found is not None else None


def iso_day(text: object) -> str | None:
    """`written_day` as YYYY-MM-DD (SQL's `gno_day`, registered on each connection: the
    filters' DOC_DATE); None for no day, or a value that is no text."""
    found = written_day(text) if isinstance(text, str) else None
    return found.isoformat() if found is not None else None
