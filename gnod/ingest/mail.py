"""One e-mail message (RFC 5322 bytes: an .eml file, or one message of an mbox) → Markdown.

The frontmatter holds what the filters read: the subject as title, the date in ISO 8601
(for --since/--until), from/to/cc, message_id and thread. The body prefers text/plain;
an HTML body and every attachment go through the converter registry passed as
`convert`, so an attachment's text is found as part of its message. Only a message with
nothing in it fails: an unknown charset falls back to UTF-8, then Latin-1, and a part
that cannot be read or converted becomes a one-line note.

Hostile input stays bounded: each header is cut to MAX_HEADER_CHARS as it is parsed
(the stdlib's structured-header parser is superlinear: a 700 KB Subject takes 30 s) and
read without raising, parts are walked without recursion, and at most MAX_PARTS parts
besides the body are converted; the rest are counted in one line.
"""

from __future__ import annotations

import email
import email.policy
import mimetypes
import os
import re
from collections.abc import Callable, Iterator
from datetime import datetime
from email.message import MIMEPart
from email.utils import parsedate_to_datetime
from typing import Any, cast

from gnod.ingest.charsets import decode_legacy
from gnod.ingest.failure import IngestFailure
from gnod.ingest.markdown import yaml_scalar
from gnod.text.fences import fenced_spans, in_spans

MAX_PARTS = 50  # attachments, attached messages and extra text parts converted per message
MAX_HEADER_CHARS = 8192  # long enough for a big Cc list or a long thread's References

_MESSAGE_ID_RE = re.compile(r"<[^<>\s]+>")
_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?=[ \t]|$)", re.M)


class _BoundedPolicy(email.policy.EmailPolicy):
    """policy.default, with every header of every part cut where the parser stores it, and
    read without raising: the stdlib's parser recurses into nested comments, so a header of
    a thousand "(" raises RecursionError, even from inside message_from_bytes (Content-Type)."""

    def header_source_parse(self, sourcelines: list[str]) -> tuple[str, str]:
        name, value = super().header_source_parse(sourcelines)
        return name, value[:MAX_HEADER_CHARS]

    def header_fetch_parse(self, name: str, value: str) -> Any:
        for attempt in (value, value.replace("(", " ").replace(")", " ")):
            try:
                return super().header_fetch_parse(name, attempt)
            except Exception:
                pass
        return super().header_fetch_parse(name, "")


_POLICY = _BoundedPolicy()


def to_markdown(data: bytes, convert: Callable[[bytes, str], str]) -> str:
    """Markdown with frontmatter for one message; `convert(data, filename)` is the registry."""
    if not data.strip():
        raise IngestFailure("EMPTY", "empty message")
    try:
        msg = cast(MIMEPart, email.message_from_bytes(data, policy=_POLICY))
    except RecursionError:
        raise IngestFailure("CORRUPT", "MIME parts nested too deeply") from None
    payload = msg.get_payload()
    if not msg.keys() and isinstance(payload, str) and not payload.strip():
        raise IngestFailure("EMPTY", "no headers and no body")
    mail = _Mail(convert)
    subject = _text(msg, "subject") or "(no subject)"
    blocks = [_frontmatter(msg, subject), f"# {subject}", _summary(msg), *mail.message(msg, 2)]
    if mail.skipped:
        blocks.append(f"{mail.skipped} more parts were not converted (at most {MAX_PARTS} per message).")
    return "\n\n".join(b for b in blocks if b) + "\n"


def outlook_to_mime(data: bytes, path: str) -> bytes:
    """An Outlook message (.msg: MAPI properties in an OLE file) as the RFC 5322 message it
    stands for (subject, from, to, cc, date, message id, bodies, attachments), read by
    aspose-email-foss (MIT; extract-msg is GPL). Pure Python over untrusted bytes: gnod
    runs it in the converter helper, under its deadline."""
    from aspose.email_foss.cfb import CFBError, CFBReader
    from aspose.email_foss.msg import MapiMessage, MsgDocument, MsgError, MsgReader

    try:
        with MsgReader(CFBReader(data)) as reader:
            return MapiMessage.from_msg_document(MsgDocument.from_reader(reader)).to_email_bytes()
    except (CFBError, MsgError) as e:
        raise IngestFailure("CORRUPT", f"not a readable Outlook message ({e})"[:300]) from None


class _Mail:
    """Renders a message and those attached to it, which share one budget of parts."""

    def __init__(self, convert: Callable[[bytes, str], str]) -> None:
        self.convert = convert
        self.left = MAX_PARTS
        self.skipped = 0

    def message(self, msg: MIMEPart, level: int) -> list[str]:
        """The body and any other inline text, then a section per attachment at `level`."""
        try:
            body = msg.get_body(preferencelist=("plain", "html"))
        except Exception:  # RecursionError: parts nested deep enough to parse, not to search
            body = None
        leaves = list(_leaves(msg))
        body_alt = next((alt for part, alt in leaves if part is body), None)
        texts = [self.text(body, level - 1)] if body is not None else []
        sections: list[str] = []
        for part, alt in leaves:
            try:
                name = _clean(os.path.basename((part.get_filename() or "").replace("\\", "/")))
                inline = not name and not part.is_attachment()
                text = inline and part.get_content_type() in ("text/plain", "text/html")
                if part is body or (text and alt is not None and alt == body_alt):
                    continue  # the body, or another rendering of it
                if inline and part.get_content_maintype() == "image":
                    continue  # a picture in an HTML body: a logo, a signature
                if not self.take():
                    continue
                if text:
                    texts.append(self.text(part, level - 1))  # a footer, or text between pictures
                else:
                    sections += self.attachment(part, name, level)
            except Exception as e:  # a malformed part is noted, never fatal to its message
                sections.append(f"(A MIME part could not be read: {type(e).__name__}.)")
        return texts + sections

    def take(self) -> bool:
        """Whether the budget has room for one more part; counts those it has not."""
        if self.left > 0:
            self.left -= 1
            return True
        self.skipped += 1
        return False

    def text(self, part: MIMEPart, by: int) -> str:
        """A text part; HTML converted to Markdown, its headings `by` levels down."""
        text = _decode(part)
        if part.get_content_subtype() != "html":
            return text.strip()
        try:
            return _demote(self.convert(text.encode("utf-8"), "body.html").strip(), by)
        except IngestFailure as f:
            return f"(The HTML body could not be converted: {f.code}: {_clean(f.reason)}.)"

    def attachment(self, part: MIMEPart, name: str, level: int) -> list[str]:
        ctype = part.get_content_type()
        if ctype in ("message/rfc822", "message/global") and part.is_multipart():
            return self.attached_message(cast(MIMEPart, part.get_payload(0)), level)
        name = name or f"attachment{mimetypes.guess_extension(ctype) or ''}"  # the registry goes by its ending
        heading = f"{'#' * level} Attachment: {name}"
        data = part.get_payload(decode=True)
        if not isinstance(data, bytes):
            return [heading, "(No content.)"]
        what = f"{ctype}, {len(data):,} bytes"
        try:
            text = self.convert(data, name).strip()
        except IngestFailure as f:
            return [heading, f"Not converted ({what}): {f.code}: {_clean(f.reason)}"]
        return [heading, _demote(text, level) if text else f"({what}, no text.)"]

    def attached_message(self, msg: MIMEPart, level: int) -> list[str]:
        """A forwarded message: its headers, and its body and attachments one level deep."""
        heading = f"{'#' * level} Attached message: {_text(msg, 'subject') or '(no subject)'}"
        if level > 2:
            return [heading, _summary(msg)]
        return [heading, _summary(msg), *self.message(msg, level + 1)]


def _leaves(msg: MIMEPart) -> Iterator[tuple[MIMEPart, int | None]]:
    """Parts that are not multiparts, in order, each with the id() of its nearest enclosing
    multipart/alternative (None outside one). An attached message is one part. Iterative,
    so a deeply nested message cannot exhaust the stack."""
    stack: list[tuple[MIMEPart, int | None]] = [(msg, None)]
    while stack:
        part, alt = stack.pop()
        payload = part.get_payload()
        if part.get_content_maintype() == "multipart" and isinstance(payload, list):
            if part.get_content_subtype() == "alternative":
                alt = id(part)
            stack.extend((cast(MIMEPart, p), alt) for p in reversed(payload))
        else:
            yield part, alt


def _decode(part: MIMEPart) -> str:
    """A text part in its declared charset; a wrong or unknown one falls back to UTF-8,
    then a legacy charset (which never fails), as `convert.decode_text` does for files."""
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes):
        return ""
    for charset in (part.get_content_charset(), "utf-8"):
        if charset:
            try:
                return data.decode(charset)
            except (LookupError, ValueError):  # unknown or not a text codec; UnicodeDecodeError
                pass
    return decode_legacy(data)


def _text(msg: MIMEPart, name: str) -> str:
    value = msg.get(name)
    return _clean(str(value)) if value is not None else ""


def _addresses(msg: MIMEPart, name: str) -> list[str]:
    """Each address in a header as "Name <addr>", or the bare address."""
    value = msg.get(name)
    if value is None:
        return []
    addresses = getattr(value, "addresses", None)
    if addresses is None:
        return [_clean(str(value))] if str(value).strip() else []
    return [a for a in (_clean(str(address)) for address in addresses) if a]


def _date(msg: MIMEPart) -> datetime | None:
    try:
        return parsedate_to_datetime(_text(msg, "date"))
    except (ValueError, TypeError, IndexError, OverflowError):
        return None


def _frontmatter(msg: MIMEPart, subject: str) -> str:
    lines = ["---", f"title: {yaml_scalar(subject)}"]
    date = _date(msg)
    if date is not None:
        lines.append(f"date: {date.isoformat()}")
    for key in ("from", "to", "cc"):
        values = _addresses(msg, key)
        if values:
            lines += [f"{key}:", *(f"  - {yaml_scalar(v)}" for v in values)]
    references = _text(msg, "references")
    root = _MESSAGE_ID_RE.search(references) if references else None
    thread = root[0] if root else _text(msg, "in-reply-to")
    message_id = _text(msg, "message-id")
    own = _MESSAGE_ID_RE.search(message_id)
    for key, value in (("message_id", own[0] if own else message_id), ("thread", thread)):
        if value:
            lines.append(f"{key}: {yaml_scalar(value)}")
    return "\n".join([*lines, "---"])


# The line of a message's headers _summary writes (a forwarded message's too).
_SUMMARY_RE = re.compile(r"^\*\*(?:From|To|Date):\*\* .*$", re.M)


def prose(markdown: str) -> str:
    """A message's Markdown as its language is detected in: without the lines of its
    headers gno writes (English labels, then names, addresses and a date): a short
    German mail's `Ihre Stromrechnung` was read as English."""
    return _SUMMARY_RE.sub("", markdown)


def _summary(msg: MIMEPart) -> str:
    """From, To and Date on one line, for a reader of the Markdown."""
    date = _date(msg)
    when = f"{date:%Y-%m-%d %H:%M %z}".strip() if date is not None else _text(msg, "date")
    fields = (("From", ", ".join(_addresses(msg, "from"))), ("To", ", ".join(_addresses(msg, "to"))), ("Date", when))
    return " · ".join(f"**{label}:** {value}" for label, value in fields if value)


_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")  # a byte the parser could not decode (surrogateescape)


def _clean(value: str) -> str:
    """One line of printable text: whitespace runs (newlines too) become one space, and
    control and format characters, which YAML and the canonical text reject, are dropped.
    A header's raw 8-bit bytes (RFC 6532's UTF-8, which mailers write unencoded), which
    the parser keeps as escapes, are read as UTF-8, else as Latin-1: `Jörg Schäfer` had
    lost its ö and ä."""
    if _ESCAPED_BYTE.search(value):
        value = value.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
        value = _ESCAPED_BYTE.sub(lambda m: chr(ord(m[0]) - 0xDC00), value)  # Latin-1's
    return " ".join("".join(c for c in value if c.isprintable() or c.isspace()).split())


def _demote(markdown: str, by: int) -> str:
    """Headings outside fenced code `by` levels down (at most to 6), so that a converted
    document's outline nests under the section holding it."""
    if by <= 0:
        return markdown
    spans = fenced_spans(markdown)
    return _HEADING_RE.sub(lambda m: m[0] if in_spans(spans, m.start()) else "#" * min(6, len(m[1]) + by), markdown)
