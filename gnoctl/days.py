"""A day as `--since` and `--until` take it: the daemon's YYYY-MM-DD, or as git reads
one (`today`, `yesterday`, `last week`, `3.days.ago`, `2 weeks ago`), or a month or a
year (`2024-10`, `october 2024`, `2024`: its first day for `--since`, its last for
`--until`), made a YYYY-MM-DD of the local calendar before it is sent."""

from __future__ import annotations

TYPE_CHECKING = False  # datetime and re are imported when a day is read, not with gnoctl
if TYPE_CHECKING:
    import datetime

FORMS = (
    "YYYY-MM-DD (or 14.03.2025, 2025/03/14), a month (2024-10, october 2024) or a year (2024), "
    "today, yesterday, last week, 3.days.ago or 2 weeks ago (days, weeks, months, years)"
)
MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip


def filter_day(field: str, text: str) -> str:
    """`text` as the filter `field` (`since`, `until`, or a dotted name ending so) takes
    it: a month or a year to its last day for `until`, from its first for `since`."""
    return iso_day(text, end=field.rpartition(".")[2] == "until")


def iso_day(text: str, today: datetime.date | None = None, end: bool = False) -> str:
    """`text` as YYYY-MM-DD, counted back from `today` (a datetime.date; the local day by
    default); a month or a year as its first day, or its last with `end` (`--until`);
    ValueError saying which forms are read."""
    import datetime
    import re

    words = " ".join(text.strip().lower().split())
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", words):
        return words
    # A month (2024-10, october 2024, oct. 2024) or a year: its first day, or its last.
    numbered = re.fullmatch(r"(\d{4})-(\d{1,2})", words)
    named = re.fullmatch(r"([a-z]{3,9})\.? (\d{4})", words)
    if numbered or named or re.fullmatch(r"\d{4}", words):
        if numbered:
            year, month = int(numbered[1]), int(numbered[2])
        elif named:
            year, month = int(named[2]), next((i for i, m in enumerate(MONTHS, 1) if m.startswith(named[1])), 0)
        else:
            year, month = int(words), None  # the whole year
        if month == 0 or (month or 1) > 12 or year < 1:
            raise ValueError(f"{text!r} is not a day: {FORMS}")
        if not end:
            return datetime.date(year, month or 1, 1).isoformat()
        after = datetime.date(year + 1, 1, 1) if month in (None, 12) else datetime.date(year, month + 1, 1)
        return (after - datetime.timedelta(days=1)).isoformat()
    # As a note's frontmatter may write it (gnod.text.dates): the day first with dots, or
    # the year first with slashes; a day that is none (31.02.2025) is said so.
    written = re.fullmatch(r"(\d{1,2})\. ?(\d{1,2})\. ?(\d{4})", words) or re.fullmatch(
        r"(\d{4})/(\d{1,2})/(\d{1,2})", words
    )
    if written:
        y, m, d = map(int, written.groups() if len(written[1]) == 4 else written.groups()[::-1])
        try:
            return datetime.date(y, m, d).isoformat()
        except ValueError:
            raise ValueError(f"{text!r} is not a day: {FORMS}") from None
    day = today or datetime.date.today()
    if words in ("today", "now"):
        return day.isoformat()
    if words == "yesterday":
        return (day - datetime.timedelta(days=1)).isoformat()
    ago = re.fullmatch(r"(\d{1,4})[. ]+(day|week|month|year)s?[. ]+ago", words)
    last = re.fullmatch(r"last[. ]+(day|week|month|year)", words)
    if not (ago or last):
        raise ValueError(f"{text!r} is not a day: {FORMS}")
    count, unit = (int(ago[1]), ago[2]) if ago else (1, last[1] if last else "")
    if unit in ("day", "week"):
        return (day - datetime.timedelta(days=count * (7 if unit == "week" else 1))).isoformat()
    months = day.year * 12 + day.month - 1 - count * (12 if unit == "year" else 1)
    year, month = divmod(months, 12)
    if year < 1:
        raise ValueError(f"{text!r} is before the first year of the calendar")
    # The same day of that month, or its last day when the month is shorter (Mar 31 → Feb 28).
    following = datetime.date(year + (month == 11), (month + 1) % 12 + 1, 1)
    return datetime.date(year, month + 1, min(day.day, (following - datetime.timedelta(days=1)).day)).isoformat()
