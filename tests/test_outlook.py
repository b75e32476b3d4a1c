"""Outlook messages (.msg) written here with aspose-email-foss's writer (checked with
olefile, a reader of its own, to be real OLE files with MAPI property streams), through
the real converter registry and a real gnod: headers as frontmatter, the body,
attachments converted by the existing converters, found and followed by the watcher."""

from __future__ import annotations

import io
from datetime import datetime, timezone

import olefile
from test_convert import make_docx, make_pdf

from conftest import cli_json, running_gnod, wait_until
from gnod.ingest.convert import IngestFailure, convert
from gnod.ingest.markdown import split_frontmatter

SUBJECT_STREAM = "__substg1.0_0037001F"  # PR_SUBJECT, UTF-16 (MS-OXMSG)


def outlook(subject: str, body: str, attachments: dict[str, tuple[bytes, str]] | None = None) -> bytes:
    """A .msg from Ann to Bob (Carol in cc) delivered on 2024-03-15, with `attachments`
    ({file name: (bytes, MIME type)})."""
    from aspose.email_foss import msg

    m = msg.MapiMessage.create(subject, body)
    m.set_property(msg.PropertyId.SENDER_NAME, "Ann Lee")
    m.set_property(msg.PropertyId.SENDER_EMAIL_ADDRESS, "ann@example.org")
    m.set_property(msg.PropertyId.MESSAGE_DELIVERY_TIME, datetime(2024, 3, 15, 10, 30, tzinfo=timezone.utc))
    m.add_recipient("bob@example.org", display_name="Bob Stone")
    m.add_recipient("carol@example.org", display_name="Carol", recipient_type=msg.RECIPIENT_TYPE_CC)
    for name, (data, mime) in (attachments or {}).items():
        m.add_attachment(name, data, mime_type=mime)
    data = m.to_bytes()
    ole = olefile.OleFileIO(io.BytesIO(data))
    assert ole.openstream(SUBJECT_STREAM).read().decode("utf-16-le") == subject
    return data


def test_an_outlook_message_reads_as_its_mail_does():
    data = outlook(
        "Hangar invoice",
        "Bob, the invoice and the report are attached.",
        {
            "invoice.pdf": (make_pdf("Invoice 4711: twelve zeppelin moorings."), "application/pdf"),
            "report.docx": (make_docx(), "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
        },
    )
    markdown = convert(data, "mail/hangar.msg")
    meta, body, _ = split_frontmatter(markdown)
    assert meta["title"] == "Hangar invoice" and meta["date"].startswith("2024-03-15T10:30:00")
    assert meta["from"] == ["Ann Lee <ann@example.org>"]
    assert meta["to"] == ["Bob Stone <bob@example.org>"] and meta["cc"] == ["Carol <carol@example.org>"]
    assert "Bob, the invoice and the report are attached." in body
    pdf, docx = body.split("## Attachment: invoice.pdf\n")[1].split("## Attachment: report.docx\n")
    assert "twelve zeppelin moorings" in pdf and "Revenue grew by twelve percent" in docx


def test_damaged_and_misnamed_outlook_files_fail_clearly():
    data = outlook("Hangar invoice", "Bob, see the invoice.")
    for damaged, code, words in (
        (data[: len(data) // 2], "CORRUPT", "not a readable Outlook message"),
        (b"Subject: not OLE at all\n", "CORRUPT", "not a valid MSG file"),
    ):
        try:
            convert(damaged, "mail/broken.msg")
            raise AssertionError("converted")
        except IngestFailure as f:
            assert f.code == code and words in f.reason, f.reason
    # An OLE file is a .msg only by its name: the same bytes named .doc are not read as mail.
    try:
        convert(data, "old/report.doc")
        raise AssertionError("converted")
    except IngestFailure as f:
        assert f.code == "UNSUPPORTED" and "legacy OLE file" in f.reason


def test_gnod_finds_an_outlook_message_by_its_words_sender_and_attachment(tmp_path):
    root = tmp_path / "mail"
    root.mkdir()
    pdf = make_pdf("Invoice 4711: twelve zeppelin moorings.")
    (root / "hangar.msg").write_bytes(
        outlook("Hangar invoice", "The invoice is attached.", {"i.pdf": (pdf, "application/pdf")})
    )
    (root / "note.md").write_text("# Moorings\n\nA note about moorings.\n")
    with running_gnod() as (env, gnod):
        cli_json("collection", "add", str(root), "--name", "m", "--json", env=env)
        hits = cli_json("search", "zeppelin", "--json", env=env)["hits"]  # in the attachment
        assert [(h["path"], h["title"]) for h in hits] == [("hangar.msg", "Hangar invoice")]
        sender = cli_json("search", "moorings", "--from", "ann@example.org", "--since", "2024-03-01", "--json", env=env)
        assert [h["path"] for h in sender["hits"]] == ["hangar.msg"]
        got = cli_json("get", "m/hangar.msg", "--json", env=env)["content"]
        assert "## Attachment: i.pdf" in got and "Bob Stone <bob@example.org>" in got
        (root / "hangar.msg").write_bytes(outlook("Hangar invoice, corrected", "Now thirteen quokka moorings."))

        def found() -> list[str]:
            return [h["title"] for h in gnod.result("search", {"query": "quokka", "snippets": False})["hits"]]

        assert wait_until(lambda: found() == ["Hangar invoice, corrected"], 20)
