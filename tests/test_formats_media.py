"""Transcripts (.srt, .vtt) and calendars (.ics), from files written here as their tools
write them: cues merged into passages that open with their start time and speaker,
markup stripped; a calendar's events once each, a recurring one with its rule in words;
bad files get stable codes; and a folder of them through a real gnod: found by what was
said and where an event is, `get` at the hit's line, an edited calendar re-indexed."""

from __future__ import annotations

import time

import pytest

from conftest import cli_json, converted, running_gnod
from gnod.config import DEFAULT_EXTENSIONS
from gnod.ingest import media
from gnod.ingest.convert import DEFAULT_REGISTRY, IngestFailure, Registry, builtin_converters, convert
from gnod.ingest.markdown import extract_title
from gnod.search.constants import SNIPPET_MAX_CHARS

MEETING_SRT = """1
00:00:01,000 --> 00:00:03,000
<i>Welcome</i> to the planning meeting.

2
00:00:03,200 --> 00:00:06,000
{\\an8}Today we review the quarterly budget &amp; the roadmap.

3
00:00:06,100 --> 00:00:09,000
<font color="#ffff00">First, the marketing numbers.</font>

4
00:00:41,000 --> 00:00:44,000
The lighthouse project ships
in <b>November</b>.

5
00:00:44,200 --> 00:00:46,000
Its budget doubled.
"""

STANDUP_VTT = """WEBVTT - Planning meeting
Kind: captions
Language: en

STYLE
::cue(.loud) { color: red }

NOTE written by the captioner

intro
00:00:01.000 --> 00:00:04.000 align:start position:10%
<v.loud Alice Smith>We ship the <c.yellow>lighthouse</c> release on Friday.</v>

00:00:04.000 --> 00:00:06.000 line:0
<v Alice Smith>It has the new index.

00:00:06.000 --> 00:00:08.000
<v Bob>Sounds good.
<v Alice Smith>Great, thanks.

00:00:08.000 --> 00:00:09.500
<v Alice Smith>Great, thanks.

01:00:05.000 --> 01:00:07.000
<i>Music</i> &amp; applause
"""

# As Google Calendar exports it: CRLF, a folded line, a VTIMEZONE, escaped text.
TEAM_ICS = "\r\n".join(
    [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//Google Inc//Google Calendar 70.9054//EN",
        "X-WR-CALNAME:Platform team",
        "BEGIN:VTIMEZONE",
        "TZID:Europe/Berlin",
        "BEGIN:STANDARD",
        "DTSTART:19701025T030000",
        "TZOFFSETFROM:+0200",
        "TZOFFSETTO:+0100",
        "RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU",
        "END:STANDARD",
        "END:VTIMEZONE",
        "BEGIN:VEVENT",
        "UID:standup-1@example.com",
        "SUMMARY:Weekly planning",
        "DTSTART;TZID=Europe/Berlin:20240304T091500",
        "DTEND;TZID=Europe/Berlin:20240304T100000",
        "RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE;UNTIL=20240630T220000Z;WKST=MO",
        "EXDATE;TZID=Europe/Berlin:20240401T091500",
        "LOCATION:Aurora room\\, building 7",
        'ORGANIZER;CN="Alice Smith":mailto:alice@example.com',
        "ATTENDEE;CN=Bob Jones;ROLE=REQ-PARTICIPANT;PARTSTAT=ACCEPTED:mailto:bob@example.com",
        "ATTENDEE;PARTSTAT=NEEDS-ACTION:MAILTO:carol@example.com",
        "DESCRIPTION:Agenda:\\n# budget\\n- the lighthouse release\\, and what slips.\\nBring the numbers for th",
        " e quarter.",
        "BEGIN:VALARM",
        "ACTION:DISPLAY",
        "TRIGGER:-PT10M",
        "END:VALARM",
        "END:VEVENT",
        "BEGIN:VEVENT",
        "UID:offsite@example.com",
        "SUMMARY:Team offsite",
        "DTSTART;VALUE=DATE:20240610",
        "DTEND;VALUE=DATE:20240613",
        "LOCATION:Lisbon",
        "STATUS:TENTATIVE",
        "END:VEVENT",
        "BEGIN:VEVENT",
        "UID:holiday@example.com",
        "SUMMARY:Whit Monday",
        "DTSTART;VALUE=DATE:20240520",
        "DTEND;VALUE=DATE:20240521",
        "END:VEVENT",
        "BEGIN:VEVENT",
        "UID:call@example.com",
        "SUMMARY:Call with the Tokyo office",
        "DTSTART:20240305T230000Z",
        "DURATION:PT90M",
        "RRULE:FREQ=MONTHLY;BYDAY=-1FR;COUNT=6",
        "END:VEVENT",
        "BEGIN:VTODO",
        "UID:taxes@example.com",
        "SUMMARY:File the expense report",
        "DUE;VALUE=DATE:20240415",
        "STATUS:NEEDS-ACTION",
        "END:VTODO",
        "END:VCALENDAR",
        "",
    ]
)


def code_of(data: bytes, path: str, registry: Registry = DEFAULT_REGISTRY) -> str:
    with pytest.raises(IngestFailure) as exc:
        registry.convert(data, path)
    return exc.value.code


def write(path, text: str) -> bytes:
    """`text` written to a real file as UTF-8 (no newline translation), its bytes read back."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    with open(path, "rb") as f:
        return f.read()


# --- transcripts ----------------------------------------------------------------------------


def test_srt_cues_merge_into_passages_that_open_with_their_start_time(tmp_path):
    md = convert(write(tmp_path / "meeting.srt", MEETING_SRT), "meeting.srt")
    # Markup (<i>, <font>, {\an8}) and entities are gone; the pause before 00:00:41 starts
    # a new passage; a cue's two lines are one sentence.
    assert md == (
        "[00:00:01] Welcome to the planning meeting. Today we review the quarterly budget & the roadmap."
        " First, the marketing numbers.\n"
        "\n"
        "[00:00:41] The lighthouse project ships in November. Its budget doubled.\n"
    )
    assert extract_title({}, md, "meeting.srt") == "meeting"  # SubRip has no title: the file's name


def test_vtt_keeps_speakers_and_its_title_and_drops_settings_styles_and_notes(tmp_path):
    md = convert(write(tmp_path / "standup.vtt", STANDUP_VTT), "standup.vtt")
    assert md == (
        "# Planning meeting\n"
        "\n"
        "[00:00:01] Alice Smith: We ship the lighthouse release on Friday. It has the new index.\n"
        "\n"
        "[00:00:06] Bob: Sounds good.\n"
        "\n"
        "[00:00:06] Alice Smith: Great, thanks.\n"  # the next cue repeats it (rolling captions): once
        "\n"
        "[01:00:05] Music & applause\n"
    )
    assert extract_title({}, md, "standup.vtt") == "Planning meeting"
    untitled = convert(STANDUP_VTT.replace("WEBVTT - Planning meeting", "WEBVTT").encode(), "s.vtt")
    assert extract_title({}, untitled, "standup.vtt") == "standup"


def test_passages_are_a_few_sentences_and_fit_a_search_snippet():
    assert media.PASSAGE_CHARS <= SNIPPET_MAX_CHARS  # so a hit's snippet shows the start time
    sentences = [f"Sentence number {i} says something about the plan." for i in range(40)]
    long_cue = " ".join(f"word{i}" for i in range(300))
    srt = "".join(f"{i + 1}\n00:00:{i:02d},000 --> 00:00:{i:02d},900\n{s}\n\n" for i, s in enumerate(sentences))
    srt += f"41\n00:01:30,000 --> 00:01:40,000\n{long_cue}\n"
    passages = convert(srt.encode(), "talk.srt").strip().split("\n\n")
    for p in passages:
        assert p.startswith("[00:0") and len(p) <= media.PASSAGE_CHARS and "\n" not in p
    spoken = [p for p in passages if not p.startswith("[00:01:30]")]
    assert 8 <= len(spoken) <= 16 and all(p.endswith(".") for p in spoken)  # a few sentences each
    assert " ".join(p.split("] ", 1)[1] for p in spoken) == " ".join(sentences)  # nothing lost or repeated
    # One cue too long for a passage: its pieces share its start time.
    pieces = [p for p in passages if p.startswith("[00:01:30]")]
    assert len(pieces) >= 2 and " ".join(p.split("] ", 1)[1] for p in pieces) == long_cue


# --- calendars ------------------------------------------------------------------------------


def test_calendar_lists_each_event_once_with_when_where_who_and_its_rule(tmp_path):
    md = convert(write(tmp_path / "team.ics", TEAM_ICS), "team.ics")
    assert extract_title({}, md, "team.ics") == "Platform team"
    sections = md.split("\n## ")
    assert sections[0] == "# Platform team\n"
    assert md.count("## Weekly planning") == 1  # recurring: listed once, not expanded
    assert sections[1] == (
        "Weekly planning\n"
        "\n"
        "- When: Mon 2024-03-04 09:15–10:00 (Europe/Berlin)\n"
        "- Repeats: every 2 weeks on Monday and Wednesday, until Sun 2024-06-30 22:00 (UTC), except Mon 2024-04-01 09:15\n"
        "- Where: Aurora room, building 7\n"
        "- Organizer: Alice Smith <alice@example.com>\n"
        "- Attendees: Bob Jones <bob@example.com>, carol@example.com\n"
        "\n"
        "Agenda:\n"
        "\\# budget\n"  # a description's `# line` is no heading (no title, no section)
        "- the lighthouse release, and what slips.\n"
        "Bring the numbers for the quarter.\n"
    )
    assert sections[2] == (
        "Team offsite\n\n- When: Mon 2024-06-10 – Wed 2024-06-12 (all day)\n- Where: Lisbon\n- Status: tentative\n"
    )
    assert sections[3] == "Whit Monday\n\n- When: Mon 2024-05-20 (all day)\n"
    assert sections[4] == (
        "Call with the Tokyo office\n\n"
        "- When: Tue 2024-03-05 23:00 – Wed 2024-03-06 00:30 (UTC)\n"
        "- Repeats: monthly on the last Friday, 6 times\n"
    )
    assert sections[5] == "File the expense report\n\n- Due: Mon 2024-04-15\n- Status: needs action\n"
    assert len(sections) == 6  # the time zone and the alarm are no sections


def test_calendar_without_a_name_is_titled_by_its_file_and_keeps_what_it_cannot_read():
    ics = (
        "BEGIN:VCALENDAR\nBEGIN:VEVENT\nSUMMARY:Dentist\nDTSTART;TZID=W. Europe Standard Time:20240304T081000\n"
        "DTEND;TZID=W. Europe Standard Time:20240304T084000\nEND:VEVENT\n"
        "BEGIN:VEVENT\nSUMMARY:Odd export\nDTSTART:sometime soon\nRRULE:FREQ=SOMETIMES\nEND:VEVENT\nEND:VCALENDAR\n"
    )
    md = convert(ics.encode(), "personal.ics")
    assert extract_title({}, md, "personal.ics") == "personal"
    assert "- When: Mon 2024-03-04 08:10–08:40 (W. Europe Standard Time)\n" in md  # the zone as given
    # Values icalendar cannot read are kept as written, and the calendar is still indexed.
    assert "## Odd export\n\n- When: sometime soon\n- Repeats: FREQ=SOMETIMES\n" in md


def one_event(uid: str, start: str, end: str, summary: str, location: str, description: str, *people: str) -> str:
    """A calendar file of one event in Berlin's time zone; `people`: `CN=Name:mailto:…` lines' values."""
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//Test//EN",
        "BEGIN:VEVENT",
        f"UID:{uid}",
        f"DTSTART;TZID=Europe/Berlin:{start}",
        f"DTEND;TZID=Europe/Berlin:{end}",
        f"SUMMARY:{summary}",
        f"LOCATION:{location}",
        *(f"ATTENDEE;{p}" for p in people),
        f"DESCRIPTION:{description}",
        "END:VEVENT",
        "END:VCALENDAR",
    ]
    return "\n".join(lines) + "\n"


AUDIT_ICS = one_event(
    "audit-2024",
    "20241114T100000",
    "20241114T120000",
    "Jahresabschlussprüfung – Auftaktgespräch mit dem Wirtschaftsprüfer",
    "Besprechungsraum 2",
    "Bitte die Abstimmungen der Konten und die Unterlagen zur Inventur mitbringen.",
    "CN=Anna Weiß:mailto:anna@example.de",
    "CN=Jonas Becker:mailto:jonas@example.de",
)
INVENTUR_ICS = one_event(
    "inventur-2024",
    "20241227T080000",
    "20241227T160000",
    "Inventur 2024",
    "Lager Nord",
    "Zählung aller Bestände",
    "CN=Jonas Becker:mailto:jonas@example.de",
)


def test_a_calendar_of_one_event_is_titled_dated_and_read_in_its_own_language(tmp_path):
    """A tryout's meetings were titled by their files' names, dated by their mtimes (so
    `--since` on the meeting's day missed them), and detected as English by gno's own
    `When:`, `Attendees:` labels (German forms then found nothing)."""
    from gnod.ingest.convert import prose
    from gnod.ingest.markdown import split_frontmatter
    from gnod.text.language import detect_language_sure

    md = convert(AUDIT_ICS.encode(), "Jahresabschlusspruefung_2024.ics")
    meta, body, _ = split_frontmatter(md)
    assert meta == {
        "title": "Jahresabschlussprüfung – Auftaktgespräch mit dem Wirtschaftsprüfer",
        "date": "2024-11-14T10:00:00+01:00",
    }
    assert extract_title(meta, body, "Jahresabschlusspruefung_2024.ics") == meta["title"]
    assert "- When:" in body and "- When:" not in prose(body, "x.ics") and "Besprechungsraum 2" in prose(body, "x.ics")
    assert detect_language_sure(prose(body, "x.ics"))[0] == "german"
    # A short one was English by the labels alone (Inventur, Lager, Zählung: German).
    with running_gnod() as (env, _d):
        (tmp_path / "cal").mkdir()
        write(tmp_path / "cal" / "inventur.ics", INVENTUR_ICS)
        cli_json("collection", "add", str(tmp_path / "cal"), "--name", "cal", "--json", env=env)
        [entry] = cli_json("ls", "--since", "2024-12-27", "--until", "2024-12-27", "--json", env=env)["entries"]
        assert (entry["title"], entry["language"]) == ("Inventur 2024", "german")
    # A calendar of several events keeps its name's title and the file's date.
    team = convert(write(tmp_path / "team.ics", TEAM_ICS), "team.ics")
    assert split_frontmatter(team)[0] == {}


# --- failures, registration and cost -------------------------------------------------------


BAD_FILES = {  # name: (text, code, part of the reason)
    "garbage.srt": ("this is not a subtitle file\nat all\n", "CORRUPT", "not a valid SubRip"),
    "blank.srt": (" \n\n", "EMPTY", "no subtitles"),
    "noheader.vtt": ("00:00:01.000 --> 00:00:02.000\nhello\n", "CORRUPT", "not a valid WebVTT"),
    "headeronly.vtt": ("WEBVTT\n\nNOTE nothing said yet\n", "EMPTY", "no cues"),
    "empty.vtt": ("", "EMPTY", "no cues"),
    "garbage.ics": ("hello world\nnot a calendar\n", "CORRUPT", "not a valid iCalendar"),
    "cut.ics": ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nSUMMARY:Cut off", "CORRUPT", "no complete BEGIN:VCALENDAR"),
    "card.ics": ("BEGIN:VCARD\nFN:Alice\nEND:VCARD\n", "CORRUPT", "(VCARD)"),
    "nothing.ics": ("BEGIN:VCALENDAR\nX-WR-CALNAME:Empty\nEND:VCALENDAR\n", "EMPTY", "no events or to-dos"),
    "zero.ics": ("", "EMPTY", "no events"),
}


@pytest.mark.parametrize("name", BAD_FILES)
def test_malformed_and_empty_files_get_their_code(tmp_path, name):
    text, code, reason = BAD_FILES[name]
    with pytest.raises(IngestFailure) as exc:
        convert(write(tmp_path / name, text), name)
    assert (exc.value.code, reason in exc.value.reason) == (code, True), exc.value.reason


def test_registered_where_the_walk_the_registry_and_the_web_view_find_them():
    from gnoctl.web import render

    for ext, name, isolated in ((".srt", "srt", True), (".vtt", "vtt", False), (".ics", "ics", True)):
        assert ext in DEFAULT_EXTENSIONS
        c = DEFAULT_REGISTRY.resolve(b"text", f"x{ext.upper()}")
        assert (c.name, c.isolated) == (name, isolated)
        assert render.kind_of(f"x{ext}") == "markdown" and converted(f"x{ext}")


def test_in_process_vtt_is_linear_and_srt_runs_under_the_deadline():
    """Why the converters run where they do: webvtt-py's reading (and our markup
    stripping) stays linear on hostile lines; srt's regex does not, so it is isolated."""
    hostile = "WEBVTT\n\n00:00.000 --> 00:01.000\n" + "<" * 200_000 + "\n" + "<v " * 100_000 + "x\n"
    t0 = time.monotonic()
    media.vtt_markdown(hostile)
    assert time.monotonic() - t0 < 2.0
    reg = Registry(builtin_converters(), timeout=2.0)
    assert "planning" in reg.convert(MEETING_SRT.encode(), "warm.srt")  # the helper starts outside the clock
    t0 = time.monotonic()
    assert code_of(b"x" + b"1" * 5000, "digits.srt", reg) == "TIMEOUT"  # minutes of backtracking, in-process
    assert time.monotonic() - t0 < 10
    assert "lighthouse" in reg.convert(MEETING_SRT.encode(), "again.srt")


# --- through a real gnod --------------------------------------------------------------------


def search(env, *args: str) -> list[dict]:
    return cli_json("search", *args, "--json", env=env)["hits"]


def test_a_folder_of_transcripts_and_a_calendar_through_gnod(daemon, tmp_path):
    env = daemon.env
    root = tmp_path / "media"
    root.mkdir()
    write(root / "meeting.srt", MEETING_SRT)
    write(root / "standup.vtt", STANDUP_VTT)
    write(root / "team.ics", TEAM_ICS)
    stats = cli_json("collection", "add", str(root), "--name", "media", "--json", env=env)["collections"][0]
    assert (stats["added"], stats["errors"]) == (3, 0), stats

    # A phrase said in the recording: the hit's snippet is the passage, with its start time.
    (hit,) = search(env, '"lighthouse project ships"')
    assert (hit["path"], hit["title"]) == ("meeting.srt", "meeting")
    assert hit["snippet"]["text"].startswith("[00:00:41] The lighthouse project ships in November.")
    doc = cli_json("get", f"media/meeting.srt:{hit['snippet']['line']}", "--json", env=env)
    assert doc["content"].splitlines()[0] == "[00:00:41] The lighthouse project ships in November. Its budget doubled."

    hit = search(env, "Bob sounds")[0]  # the speaker is searchable with what they said
    assert (hit["path"], hit["title"]) == ("standup.vtt", "Planning meeting")
    assert hit["snippet"]["text"].startswith("[00:00:06] Bob: Sounds good.")

    # An event by where it is: the snippet is its line, `get` at that line is its section.
    (hit,) = search(env, "Aurora")
    assert (hit["path"], hit["title"]) == ("team.ics", "Platform team")
    assert hit["snippet"]["text"].startswith("- Where: Aurora room, building 7")
    whole = cli_json("get", "media/team.ics", "--json", env=env)["content"].splitlines()
    line = hit["snippet"]["line"]
    assert whole[line - 1] == "- Where: Aurora room, building 7"
    assert "## Weekly planning" in whole[line - 5 : line - 1]
    assert [h["path"] for h in search(env, "Lisbon offsite")] == ["team.ics"]

    # The watcher: a renamed event is searchable by its new summary, the old one gone.
    with open(root / "team.ics", "w", encoding="utf-8", newline="") as f:
        f.write(TEAM_ICS.replace("SUMMARY:Team offsite", "SUMMARY:Pelican watching retreat"))
    (hit,) = search(env, "pelican", "--wait", "10")
    assert hit["path"] == "team.ics" and hit["snippet"]["text"].startswith("## Pelican watching retreat")
    assert cli_json("search", "offsite", "--json", env=env, expect=1)["hits"] == []
