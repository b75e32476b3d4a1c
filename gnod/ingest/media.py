"""Transcripts (.srt, .vtt) and calendars (.ics) → Markdown, from their decoded text.

Each function returns the Markdown ("" when the file holds nothing to index) or raises
ValueError with a reason a user can act on; `gnod.ingest.convert` decodes the bytes and
turns those into IngestFailure codes (CORRUPT, EMPTY). The parsers (srt, webvtt-py,
icalendar) are imported here and nowhere else, when a file of theirs first comes.

A transcript becomes passages: consecutive cues joined into one line of a few sentences,
opening with the time it starts at (and its speaker), so that a search hit's snippet
(one line, up to 320 characters) says where in the recording it is. A calendar becomes
one section per event or to-do, a recurring event once, with its rule in words.
"""

from __future__ import annotations

import html
import re
import textwrap
from collections.abc import Iterable, Iterator
from datetime import date, datetime, timedelta
from typing import Any, NamedTuple

from gnod.ingest.markdown import yaml_scalar

# A passage is one line that a search snippet (gnod.search.constants.SNIPPET_MAX_CHARS) shows whole.
PASSAGE_CHARS = 300
SENTENCE_CHARS = 160  # a passage this long ends at the end of a sentence
GAP_S = 5.0  # a pause this long between cues starts a new passage

# Cue tags (<i>, <c.x>, <00:01.000>, </v>) and SRT's {\an8} overrides; neither
# can nest, so `[^<>]` keeps the scan linear on a line of unclosed '<'.
_MARKUP_RE = re.compile(r"<[^<>]*>|\{\\[^{}]*\}")
_VOICE_RE = re.compile(r"<v(?:\.[^\s<>.]*)*[ \t]([^<>]*)>")
_SENTENCE_END_RE = re.compile(r"[.!?…][\"'”’)\]]*$")
_HEADING_RE = re.compile(r"^( {0,3})(#)", re.M)


class Cue(NamedTuple):
    start: float  # seconds from the start of the recording
    end: float
    speaker: str | None
    text: str  # one line, markup stripped


def srt_markdown(text: str) -> str:
    """A SubRip file; it has no title, so the document is titled by its name."""
    import srt

    if not text.strip():
        return ""
    try:
        subs = list(srt.parse(text))
    except Exception as e:  # SRTParseError, or a timestamp it cannot read
        raise ValueError(f"not a valid SubRip (.srt) file: {_first_line(e)}") from None
    cues = (cue for s in subs for cue in _cues(s.start.total_seconds(), s.end.total_seconds(), s.content.split("\n")))
    return _transcript(cues, None)


def vtt_markdown(text: str) -> str:
    """A WebVTT file; the text after `WEBVTT` on its first line, if any, is its title."""
    import webvtt

    if not text.strip():
        return ""
    try:
        vtt = webvtt.WebVTT.from_string(text)
    except Exception as e:  # MalformedFileError (no WEBVTT header), MalformedCaptionError
        raise ValueError(f"not a valid WebVTT (.vtt) file: {_first_line(e)}") from None
    cues = (cue for c in vtt.captions for cue in _cues(_seconds(c.start), _seconds(c.end), c.lines))
    title = " ".join(getattr(vtt, "header_text", "").split()).lstrip("-–— ")
    return _transcript(cues, title or None)


def _seconds(stamp: str) -> float:
    """`01:02:03.500` (or `02:03.500`) in seconds."""
    return sum(float(part) * 60**i for i, part in enumerate(reversed(stamp.split(":"))))


def _first_line(e: Exception) -> str:
    return (str(e).strip().split("\n", 1)[0] or type(e).__name__)[:200]


def _cues(start: float, end: float, lines: Iterable[str]) -> Iterator[Cue]:
    """One cue's lines as Cues, one per speaker: a `<v Name>` span names the speaker of
    its line and the lines after it."""
    speaker: str | None = None
    for line in lines:
        voice = _VOICE_RE.search(line)
        if voice:
            speaker = " ".join(voice[1].split()) or speaker
        text = " ".join(html.unescape(_MARKUP_RE.sub("", line)).split())
        if text:
            yield Cue(start, end, speaker, text)


def _transcript(cues: Iterable[Cue], title: str | None) -> str:
    passages = list(_passages(cues))
    if not passages:
        return ""
    head = [f"# {title}"] if title else []
    return "\n\n".join(head + passages) + "\n"


def _passages(cues: Iterable[Cue]) -> Iterator[str]:
    """Consecutive cues joined into passages: a new one at a change of speaker, after a
    pause of GAP_S, at a sentence's end past SENTENCE_CHARS, or before PASSAGE_CHARS.
    Rolling captions repeat a line in the next cue; the repeat is dropped."""
    parts: list[str] = []
    head, size, speaker, end, previous = "", 0, None, -GAP_S, None
    for cue in cues:
        if (cue.speaker, cue.text) == previous:
            end = max(end, cue.end)
            continue
        previous = cue.speaker, cue.text
        if parts and (
            cue.speaker != speaker
            or cue.start - end >= GAP_S
            or (size >= SENTENCE_CHARS and _SENTENCE_END_RE.search(parts[-1]))
            or size + 1 + len(cue.text) > PASSAGE_CHARS
        ):
            yield head + " ".join(parts)
            parts = []
        text = cue.text
        if not parts:
            speaker = cue.speaker
            head = f"[{_clock(cue.start)}] " + (f"{speaker}: " if speaker else "")
            size = len(head)
            if size + len(text) > PASSAGE_CHARS:  # one long cue: its pieces share its start time
                *whole, text = textwrap.wrap(text, max(PASSAGE_CHARS - size, 80), break_on_hyphens=False)
                yield from (head + piece for piece in whole)
        parts.append(text)
        size += len(text) + 1
        end = max(end, cue.end)
    if parts:
        yield head + " ".join(parts)


def _clock(seconds: float) -> str:
    s = max(int(seconds), 0)
    return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


# --- calendars ------------------------------------------------------------------------------

_DAYS = {
    "MO": "Monday",
    "TU": "Tuesday",
    "WE": "Wednesday",
    "TH": "Thursday",
    "FR": "Friday",
    "SA": "Saturday",
    "SU": "Sunday",
}
_SHORT_DAYS = [day[:3] for day in _DAYS.values()]  # by date.weekday()
_MONTHS = "January February March April May June July August September October November December".split()
_ORDINALS = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", -1: "last", -2: "second to last"}
_UNITS = {
    "SECONDLY": "second",
    "MINUTELY": "minute",
    "HOURLY": "hour",
    "DAILY": "day",
    "WEEKLY": "week",
    "MONTHLY": "month",
    "YEARLY": "year",
}
_WEEKDAY_RE = re.compile(r"([+-]?\d{1,2})?([A-Z]{2})")


def calendar_markdown(text: str) -> str:
    """An iCalendar file: one `## summary` section per event or to-do, in the file's
    order. A file of one event (its occurrences changed too: one UID) is titled and
    dated by it, in frontmatter, as a mail by its subject and Date (a meeting is found by
    `--since` on its day, not on the file's); another by its name (X-WR-CALNAME) when it
    has one, else by the file's name."""
    from icalendar import Calendar

    if not text.strip():
        return ""
    try:
        components = Calendar.from_ical(text, multiple=True)
    except Exception as e:  # ValueError for a line that is not `NAME;PARAMS:VALUE`
        raise ValueError(f"not a valid iCalendar (.ics) file: {_first_line(e)}") from None
    calendars = [c for c in components if c.name == "VCALENDAR"]
    if not calendars:
        found = ", ".join(sorted({c.name for c in components})) or "no complete BEGIN:VCALENDAR … END:VCALENDAR"
        raise ValueError(f"not an iCalendar (.ics) file ({found})")
    items = [c for cal in calendars for c in cal.walk() if c.name in ("VEVENT", "VTODO")]
    if not items:
        return ""
    name = next((_one_line(c.get("X-WR-CALNAME")) for c in calendars if _one_line(c.get("X-WR-CALNAME"))), "")
    about = next((_prose(c.get("X-WR-CALDESC")) for c in calendars if c.get("X-WR-CALDESC")), "")
    one = len({_one_line(c.get("UID")) or str(i) for i, c in enumerate(items)}) == 1
    head = [b for b in (_frontmatter(items[0]) if one else "", f"# {name}" if name else "", about) if b]
    return "\n\n".join(head + [_section(c) for c in items]) + "\n"


def _frontmatter(c: Any) -> str:
    """The frontmatter of a file of one event or to-do: its summary, and its start (a
    to-do's due date when it has none)."""
    lines = ["---"]
    summary = _one_line(c.get("SUMMARY"))
    if summary:
        lines.append(f"title: {yaml_scalar(summary)}")
    start = next((d for d in (_decoded(c, "DTSTART"), _decoded(c, "DUE")) if isinstance(d, date)), None)
    if start is not None:
        lines.append(f"date: {start.isoformat()}")
    return "\n".join([*lines, "---"]) if len(lines) > 1 else ""


# The facts _section writes, by label: where and what kinds are the calendar's own words;
# the others are times, people and states, in English (calendar_prose leaves them out).
_FACT_RE = re.compile(
    r"^- (Starts|Due|When|Repeats|Changes the occurrence of|Where|Organizer|Attendees|Categories|Status): (.*)$",
    re.M,
)
_OWN_WORDS_FACTS = frozenset({"Where", "Categories"})


def calendar_prose(markdown: str) -> str:
    """A calendar's Markdown (calendar_markdown) as its language is detected in: without
    the facts gno writes in English, but for a place's and categories' own words."""
    return _FACT_RE.sub(lambda m: m[2] if m[1] in _OWN_WORDS_FACTS else "", markdown)


def _section(c: Any) -> str:
    """`## summary`, then when, how it repeats, where, who and its status, then the description."""
    facts = []
    if c.name == "VTODO":
        facts += [("Starts", _when(c, "DTSTART", None)), ("Due", _when(c, "DUE", None))]
    else:
        facts.append(("When", _when(c, "DTSTART", "DTEND")))
    facts += [
        ("Repeats", _repeats(c)),
        ("Changes the occurrence of", _when(c, "RECURRENCE-ID", None)),
        ("Where", _one_line(c.get("LOCATION"))),
        ("Organizer", ", ".join(_person(a) for a in _all(c.get("ORGANIZER")))),
        ("Attendees", ", ".join(_person(a) for a in _all(c.get("ATTENDEE")))),
        ("Categories", ", ".join(_one_line(cat) for p in _all(c.get("CATEGORIES")) for cat in _attr(p, "cats", [p]))),
    ]
    status = _one_line(c.get("STATUS")).lower().replace("-", " ")
    if status and (c.name == "VTODO" or status != "confirmed"):
        facts.append(("Status", status))
    lines = [f"## {_one_line(c.get('SUMMARY')) or '(no title)'}", ""]
    lines += [f"- {label}: {value}" for label, value in facts if value]
    description = _prose(c.get("DESCRIPTION"))
    return "\n".join(lines + ["", description] if description else lines)


def _all(value: Any) -> list[Any]:
    """A property's values: icalendar gives a list when it occurs more than once."""
    return [] if value is None else value if isinstance(value, list) else [value]


def _attr(value: Any, name: str, default: Any) -> Any:
    """An attribute of a property's value; one icalendar could not read (vBroken, its
    text kept) raises a ValueError for any attribute."""
    try:
        return getattr(value, name, default)
    except ValueError:
        return default


def _one_line(value: Any) -> str:
    return " ".join(str(value).split()) if value is not None else ""


def _prose(value: Any) -> str:
    """Text as written, its lines trimmed; a `# line` is escaped so that it is no heading."""
    text = "\n".join(line.rstrip() for line in str(value or "").strip().splitlines())
    return _HEADING_RE.sub(r"\1\\\2", text)


def _person(address: Any) -> str:
    """`Name <email>` from a CAL-ADDRESS and its CN parameter."""
    email = re.sub(r"(?i)^mailto:", "", str(address)).strip()
    name = _one_line(_attr(address, "params", {}).get("CN", "")).strip('"')
    return f"{name} <{email}>" if name and email and name != email else name or email


def _decoded(c: Any, key: str) -> Any:
    """A property's value: a date, datetime or timedelta, or its text when icalendar
    could not read it (kept as written rather than dropped)."""
    if key not in c:
        return None
    try:
        return c.decoded(key)
    except Exception:
        return str(c[key])


def _zone(c: Any, key: str, moment: Any) -> str:
    """The time zone as the file gives it: its TZID, UTC, or none (floating time)."""
    tzid = _attr(c[key], "params", {}).get("TZID") if key in c else None
    return str(tzid) if tzid else _zone_of(moment)


def _zone_of(moment: Any) -> str:
    if not isinstance(moment, datetime) or moment.tzinfo is None:
        return ""
    return getattr(moment.tzinfo, "key", None) or ("UTC" if moment.utcoffset() == timedelta(0) else str(moment.tzinfo))


def _when(c: Any, start_key: str, end_key: str | None) -> str:
    """`Mon 2024-03-04 09:00–09:30 (Europe/Berlin)`, each time in the zone the file gives;
    an all-day event as its dates (the file's end is the day after)."""
    start = _decoded(c, start_key)
    if not isinstance(start, date):
        return "" if start is None else _one_line(start)
    end = _decoded(c, end_key) if end_key else None
    if end is None and end_key:
        duration = _decoded(c, "DURATION")
        end = start + duration if isinstance(duration, timedelta) else None
    if not isinstance(start, datetime):
        if end_key is None:  # a to-do's due date
            return _day(start)
        last = end - timedelta(days=1) if type(end) is date else start
        return f"{_day(start)}{f' – {_day(last)}' if last > start else ''} (all day)"
    zone = _zone(c, start_key, start)
    end_zone = _zone(c, end_key, end) if end_key and end_key in c else zone
    text = f"{_day(start)} {_time(start)}"
    if not isinstance(end, datetime) or end == start:
        return text + _in(zone)
    if end_zone != zone:
        return f"{text}{_in(zone)} – {_day(end)} {_time(end)}{_in(end_zone)}"
    text += f"–{_time(end)}" if end.date() == start.date() else f" – {_day(end)} {_time(end)}"
    return text + _in(zone)


def _in(zone: str) -> str:
    return f" ({zone})" if zone else ""


def _day(d: date) -> str:
    return f"{_SHORT_DAYS[d.weekday()]} {d.isoformat()[:10]}"


def _time(t: datetime) -> str:
    return t.strftime("%H:%M:%S" if t.second else "%H:%M")


def _moment(value: Any) -> str:
    value = _attr(value, "dt", value)
    if isinstance(value, datetime):
        return f"{_day(value)} {_time(value)}{_in(_zone_of(value))}"
    return _day(value) if isinstance(value, date) else _one_line(value)


def _repeats(c: Any) -> str:
    """The recurrence in words (`every 2 weeks on Monday, until Sun 2024-06-30`), with
    the dates it skips (EXDATE) and adds (RDATE)."""
    rules = []
    for rule in _all(c.get("RRULE")):
        rules.append(_rule(rule) if isinstance(rule, dict) else _one_line(rule))
    text = "; ".join(r for r in rules if r)
    own = _in(_zone(c, "DTSTART", _decoded(c, "DTSTART")))  # said once, in When
    for key, word in (("EXDATE", "except"), ("RDATE", "also")):
        dates = [_moment(d).removesuffix(own) for p in _all(c.get(key)) for d in _attr(p, "dts", [p])]
        if dates:
            text += f"{', ' if text else ''}{word} {', '.join(dates)}"
    return text


def _rule(rule: Any) -> str:
    """One RRULE in words; parts this does not put in words are kept as written."""
    parts = {k.upper(): _all(v) for k, v in rule.items()}
    freq = str((parts.pop("FREQ", None) or ["?"])[0]).upper()
    interval = int(str((parts.pop("INTERVAL", None) or [1])[0]) or 1)
    unit = _UNITS.get(freq)
    if unit is None:
        words = [f"FREQ={freq}"]
    else:
        words = ["daily" if unit == "day" else f"{unit}ly"] if interval == 1 else [f"every {interval} {unit}s"]
    if days := [_weekday(str(d)) for d in parts.pop("BYDAY", [])]:
        words.append("on " + _and(days))
    if monthdays := [int(str(d)) for d in parts.pop("BYMONTHDAY", [])]:
        words.append("on " + _and([f"day {d}" if d > 0 else f"the {_ORDINALS.get(d, str(d))} day" for d in monthdays]))
    if months := [int(str(m)) for m in parts.pop("BYMONTH", [])]:
        words.append("in " + _and([_MONTHS[m - 1] if 1 <= m <= 12 else str(m) for m in months]))
    parts.pop("WKST", None)  # which day starts a week: nothing a reader needs
    count, until = parts.pop("COUNT", None), parts.pop("UNTIL", None)
    extra = [f"{k}={','.join(str(v) for v in vs)}" for k, vs in parts.items()]
    extra += [f"{count[0]} times"] if count else []
    extra += [f"until {_moment(until[0])}"] if until else []
    return ", ".join([" ".join(words), *extra])


def _weekday(code: str) -> str:
    m = _WEEKDAY_RE.fullmatch(code.upper())
    if not m or m[2] not in _DAYS:
        return code
    n = int(m[1]) if m[1] else 0
    return f"the {_ORDINALS.get(n, f'{n}th')} {_DAYS[m[2]]}" if n else _DAYS[m[2]]


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
