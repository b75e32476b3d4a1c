"""One e-mail message → Markdown (gnod.ingest.mail) on real messages built here with the
stdlib, through the real converter registry: frontmatter that both YAML and gno's reader
read, the body preferring text/plain, attachments converted or listed with their reason,
charsets that lie, and hostile messages that stay bounded and never fail the message."""

from __future__ import annotations

import base64
import time
from datetime import date
from email.message import EmailMessage

import pytest
import yaml
from test_convert import make_docx, make_pdf

from conftest import converted
from gnod.ingest.convert import IngestFailure, convert
from gnod.ingest.mail import MAX_PARTS, to_markdown
from gnod.ingest.markdown import extract_title, split_frontmatter
from gnod.store.lexical_index import document_day


def message(subject: str | None = "Kettle order", body: str = "The kettles ship on Monday.", **headers: str):
    msg = EmailMessage()
    if subject is not None:
        msg["Subject"] = subject
    msg["From"] = headers.pop("sender", "Ann Lee <ann@example.org>")
    for name, value in headers.items():
        msg["-".join(word.capitalize() for word in name.split("_"))] = value
    msg.set_content(body)
    return msg


def render(msg: EmailMessage | bytes) -> tuple[dict, str, str]:
    """(gno's frontmatter, the body after it, the whole Markdown), checking the
    frontmatter is YAML that says the same as gno's reader."""
    markdown = to_markdown(msg if isinstance(msg, bytes) else msg.as_bytes(), convert)
    meta, body, _ = split_frontmatter(markdown)
    assert meta, markdown
    strict = yaml.safe_load(markdown.split("---\n")[1])
    if "date" in strict:
        strict["date"] = strict["date"].isoformat()
    assert set(strict) == set(meta)
    for key, value in strict.items():  # gno's reader strips quotes but reads no escapes
        if not any("'" in v and '"' in v for v in (value if isinstance(value, list) else [value])):
            assert meta[key] == value
    return meta, body, markdown


def test_plain_text_message_has_its_headers_as_frontmatter():
    msg = message(
        to="Bob <bob@example.org>, carol@example.org",
        cc="Dan <dan@example.org>",
        date="Tue, 02 Jan 2024 10:15:00 +0100",
        message_id="<m2@example.org>",
        in_reply_to="<m1@example.org>",
        references="<m0@example.org> <m1@example.org>",
    )
    meta, body, _ = render(msg)
    assert meta["title"] == "Kettle order" and extract_title(meta, body, "1.eml") == "Kettle order"
    assert meta["date"] == "2024-01-02T10:15:00+01:00"
    assert document_day(meta, "inbox.mbox!/1.eml", 0) == date(2024, 1, 2).toordinal()
    assert meta["from"] == ["Ann Lee <ann@example.org>"]
    assert meta["to"] == ["Bob <bob@example.org>", "carol@example.org"]
    assert meta["cc"] == ["Dan <dan@example.org>"]
    assert meta["message_id"] == "<m2@example.org>" and meta["thread"] == "<m0@example.org>"
    assert body.startswith("\n# Kettle order\n\n**From:** Ann Lee <ann@example.org> · **To:** Bob")
    assert "**Date:** 2024-01-02 10:15 +0100" in body and body.endswith("\n\nThe kettles ship on Monday.\n")


def test_without_a_subject_or_date_there_is_no_date_key():
    meta, body, _ = render(message(None))
    assert meta["title"] == "(no subject)" and "date" not in meta and "thread" not in meta
    raw = message(in_reply_to="<p@example.org>").as_bytes()  # the stdlib will not write a bad Date
    meta, body, _ = render(raw.replace(b"\nIn-Reply-To:", b"\nDate: the day after tomorrow\nIn-Reply-To:"))
    assert "date" not in meta and "**Date:** the day after tomorrow" in body
    assert meta["thread"] == "<p@example.org>"


def test_an_html_only_message_is_converted_to_text():
    msg = message(body="")
    msg.set_content("<html><body><h1>Order</h1><p>Six <b>copper</b> kettles &amp; lids.</p></body></html>", "html")
    _, body, _ = render(msg)
    assert "## Order" in body and "Six **copper** kettles & lids." in body
    assert "<" not in body.split("**From:**")[1].split("\n", 1)[1]  # no tags in the body


def test_multipart_alternative_prefers_the_plain_text():
    msg = message(body="Plain rendering of the order.")
    msg.add_alternative("<p>HTML rendering of the order.</p>", subtype="html")
    _, body, _ = render(msg)
    assert "Plain rendering" in body and "HTML rendering" not in body


def test_pdf_and_docx_attachments_are_converted_under_their_sections():
    msg = message()
    msg.add_attachment(make_pdf("Invoice 4711: twelve copper kettles."), "application", "pdf", filename="invoice.pdf")
    msg.add_attachment(make_docx(), "application", "octet-stream", filename="report.docx")
    _, body, _ = render(msg)
    pdf, docx = body.split("## Attachment: invoice.pdf\n")[1].split("## Attachment: report.docx\n")
    assert "Invoice 4711: twelve copper kettles." in pdf
    assert "### Quarterly Report" in docx and "Revenue grew by twelve percent" in docx  # its heading nests


def test_an_attachment_that_cannot_be_converted_is_listed_with_its_reason():
    msg = message()
    msg.add_attachment(b"\x00\x01\x02 firmware", "application", "octet-stream", filename="fw.bin")
    msg.add_attachment(b"not a pdf at all", "application", "pdf", filename="broken.pdf")
    msg.add_attachment(b"GIF89a\x00\x00", "image", "gif", disposition="inline")  # an inline picture: skipped
    _, body, markdown = render(msg)
    assert "## Attachment: fw.bin\n\nNot converted (application/octet-stream, 12 bytes): BINARY: " in body
    assert "## Attachment: broken.pdf\n\nNot converted (application/pdf, 16 bytes): CORRUPT: not a valid PDF" in body
    assert "gif" not in markdown and markdown.count("## Attachment:") == 2


def test_charsets_that_are_wrong_or_unknown_still_decode():
    latin = message(body="")
    latin.set_content("Café crème, naïve façade.", charset="iso-8859-1", cte="quoted-printable")
    assert b"=E9" in latin.as_bytes()
    assert "Café crème, naïve façade." in render(latin)[1]
    russian = "Встреча переносится на пятницу, купите молоко."
    for payload, expected in (
        (b"Caf\xc3\xa9 au lait", "Café au lait"),
        (b"Caf\xe9 noir", "Café noir"),
        (russian.encode("cp1251"), russian),  # read as Latin-1, it was mojibake
    ):
        bogus = message(body="")
        bogus.set_content(payload, "text", "plain", cte="base64")
        bogus.set_param("charset", "x-no-such-charset")
        assert expected in render(bogus)[1]
    lying = message(body="")  # says UTF-8, is Latin-1
    lying.set_content(b"Gr\xfc\xdfe", "text", "plain", cte="base64")
    lying.set_param("charset", "utf-8")
    assert "Grüße" in render(lying)[1]


def test_headers_in_raw_utf8_keep_their_letters():
    """RFC 6532 lets mailers write UTF-8 in headers unencoded; the parser keeps those
    bytes as escapes, and the frontmatter had `Jrg Schfer` (so `--from schafer` missed
    him). A raw byte that is no UTF-8 is read as Latin-1."""
    raw = message(subject="Prüfbericht", body="Die Werte.").as_bytes()
    raw = raw.replace(b"Ann Lee <ann@example.org>", "Jörg Schäfer <js@uni.de>".encode())
    raw = raw.replace(b"Subject: =?utf-8?q?Pr=C3=BCfbericht?=", "Subject: Prüfbericht".encode())
    meta, _, _ = render(raw)
    assert meta["from"] == ["Jörg Schäfer <js@uni.de>"] and meta["title"] == "Prüfbericht"
    latin = raw.replace("Jörg".encode(), "J\xf6rg".encode("latin-1"))
    assert render(latin)[0]["from"] == ["Jörg Schäfer <js@uni.de>"]


@pytest.mark.parametrize(
    "subject",
    [
        'Re: "Budget": final',
        "it's: a colon, a comma",
        "both ' and \" and a \\ backslash",
        "- not: [a, list] | > # nor a comment",
        "---",
        "Two\nlines\r\nand\ta tab\x0b\x7f",
    ],
)
def test_odd_headers_still_give_valid_frontmatter(subject):
    raw = (
        b"Subject: =?utf-8?b?" + base64.b64encode(subject.encode()) + b"?=\r\n"
        b'From: "Doe, \\"JJ\\": John" <jj@example.org>, =?utf-8?q?Zo=C3=AB?= <zoe@example.org>\r\n'
        b"Date: Wed, 03 Jan 2024 08:00:00 -0500\r\n\r\nBody.\r\n"
    )
    meta, body, markdown = render(raw)
    clean = " ".join(subject.replace("\x0b", " ").replace("\x7f", "").split())
    assert yaml.safe_load(markdown.split("---\n")[1])["title"] == clean
    if not ("'" in clean and '"' in clean):
        assert meta["title"] == clean
    assert meta["date"] == "2024-01-03T08:00:00-05:00"
    assert meta["from"] == ['"Doe, \\"JJ\\": John" <jj@example.org>', "Zoë <zoe@example.org>"]
    assert markdown.count("\n---\n") == 1 and body.endswith("Body.\n")


def test_an_attached_message_shows_its_headers_and_body_one_level_deep():
    innermost = message("Third level", "Deep body text.")
    inner = message("Forwarded kettle", "The original question about kettles.", sender="Bob <bob@example.org>")
    inner.add_attachment(make_docx(), "application", "octet-stream", filename="report.docx")
    inner.add_attachment(innermost)
    outer = message("Fwd: kettle", "See below.")
    outer.add_attachment(inner)
    _, body, _ = render(outer)
    section = body.split("## Attached message: Forwarded kettle\n\n**From:** Bob <bob@example.org>", 1)[1]
    assert "The original question about kettles." in section
    assert "### Attachment: report.docx" in section and "#### Quarterly Report" in section
    assert "### Attached message: Third level\n\n**From:** Ann Lee" in section and "Deep body text" not in section


def test_many_parts_and_huge_headers_stay_bounded():
    msg = message("Many", to="x@example.org")
    for i in range(MAX_PARTS + 150):
        msg.add_attachment(f"note number {i}".encode(), "text", "plain", filename=f"n{i}.txt")
    raw = (  # ~1 MB each, written raw: the stdlib's own header parser would take minutes to build them
        msg.as_bytes()
        .replace(b"Subject: Many", b"Subject: " + b"=?utf-8?q?caf=C3=A9?= " * 50_000)
        .replace(b"To: x@example.org", b"To: " + b", ".join(b"P%d <p%d@example.org>" % (i, i) for i in range(50_000)))
    )
    start = time.monotonic()
    meta, body, _ = render(raw)
    assert time.monotonic() - start < 10
    assert meta["title"].startswith("cafécafé") and len(meta["title"]) < 10_000  # encoded words join
    assert 100 < len(meta["to"]) < 1000
    assert f"note number {MAX_PARTS - 1}" in body and f"note number {MAX_PARTS}\n" not in body
    assert body.endswith("\n\n150 more parts were not converted (at most 50 per message).\n")


def test_malformed_and_empty_messages():
    with pytest.raises(IngestFailure) as e:
        to_markdown(b"\r\n  \n", convert)
    assert e.value.code == "EMPTY"
    deep = b"".join(b'Content-Type: multipart/mixed; boundary="b%d"\n\n--b%d\n' % (i, i) for i in range(3000))
    assert render(deep + b"\nhello from the bottom\n")[1].endswith("\nhello from the bottom\n")  # read as text at depth
    parens = b"(" * 5000  # the stdlib's header parser recurses into nested comments
    meta, body, _ = render(
        b"Subject: s\nTo: " + parens + b"\nContent-Type: text/plain; charset=" + parens + b"\n\nok\n"
    )
    assert meta["title"] == "s" and body.endswith("\n\nok\n")
    meta, body, _ = render(b"just some text, no headers at all\n")
    assert meta["title"] == "(no subject)" and body.endswith("just some text, no headers at all\n")
    broken = (
        b'Subject: broken\nContent-Type: multipart/mixed; boundary="B"\n\n--B\nContent-Type: text/plain\n\nok\n'
        b'--B\nContent-Type: application/pdf; name="x.pdf"\nContent-Transfer-Encoding: base64\n\n%%%not base64\n'
        b"--B\nContent-Type: multipart/alternative\n\nno boundary here\n"
        b'--B\nContent-Type: text/plain; charset="rot13"\nContent-Disposition: inline\n\nfbzr grkg\n--B'
    )
    _, body, _ = render(broken)
    assert body.startswith("\n# broken\n\nok\n\nfbzr grkg\n")  # rot13 is no text codec: read as UTF-8
    assert "## Attachment: x.pdf\n\nNot converted" in body and "no boundary here" in body


def test_the_web_view_shows_a_message_as_converted_markdown():
    from gnoctl.web import render

    for path in ("note.eml", "inbox.mbox!/42.eml"):
        assert render.kind_of(path) == "markdown" and converted(path)


def test_a_messages_language_is_detected_without_the_header_line_gno_writes():
    """`**From:** … · **To:** … · **Date:**`, English labels around names and addresses,
    made a short German message English (`Rechnung`: then `Rechnungen` found nothing)."""
    from gnod.ingest.convert import prose
    from gnod.text.language import detect_language_sure

    eml = (
        b"From: Stadtwerke Hamburg <rechnung@stadtwerke.example>\r\nTo: Buchhaltung <bh@firma.example>\r\n"
        b"Subject: Rechnung\r\nDate: Tue, 05 Nov 2024 09:12:00 +0100\r\n\r\nAnbei.\r\n"
    )
    body = split_frontmatter(convert(eml, "inbox.mbox!/3.eml"))[1]
    assert "**From:** Stadtwerke Hamburg" in body
    text = prose(body, "inbox.mbox!/3.eml")
    assert "**From:**" not in text and "Rechnung" in text and "Anbei." in text
    assert detect_language_sure(text)[0] != "english"
