"""The converter registry on real files, generated here with the format's own libraries:
every format's text comes through, failures get stable codes, sniffed content beats a
wrong extension, the order is visible and first match wins, and a folder of every
format indexes through the real pipeline with the bad files in ingest_errors."""

from __future__ import annotations

import fcntl
import gzip
import io
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from functools import partial

import pytest

from conftest import wait_until
from gnod.config import DEFAULT_EXTENSIONS, CollectionConfig
from gnod.ingest import workers
from gnod.ingest.convert import (
    DEFAULT_REGISTRY,
    MAX_DOCUMENT_BYTES,
    MAX_TEXT_BYTES,
    Converter,
    IngestFailure,
    MiB,
    Registry,
    builtin_converters,
    convert,
    convert_text,
    sniff,
)
from gnod.ingest.pipeline import index_collection
from gnod.ingest.walk import WalkEntry
from gnod.ingest.workers import PARALLEL_MIN, RESULT_PIPE_BYTES, PreparePool, Task
from gnod.store import documents as store
from gnod.text.analyzer import AnalyzerSet

# --- generators ----------------------------------------------------------------------------


def make_pdf(*lines: str) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    for line in lines:
        pdf.multi_cell(0, 10, text=line)
    return bytes(pdf.output())


def make_encrypted_pdf() -> bytes:
    from pypdf import PdfReader, PdfWriter

    w = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf("Top secret launch codes."))))
    w.encrypt("hunter2")
    out = io.BytesIO()
    w.write(out)
    return out.getvalue()


def make_docx() -> bytes:
    import docx

    d = docx.Document()
    d.add_heading("Quarterly Report", 1)
    d.add_paragraph("Revenue grew by twelve percent in the northern region.")
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def make_encrypted_docx() -> bytes:
    from msoffcrypto.format.ooxml import OOXMLFile

    out = io.BytesIO()
    OOXMLFile(io.BytesIO(make_docx())).encrypt("hunter2", out)
    return out.getvalue()


def make_xlsx() -> bytes:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Budget"
    for row in (["item", "cost"], ["kettle", 42], ["toaster", 17]):
        ws.append(row)
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def make_pptx() -> bytes:
    from pptx import Presentation

    p = Presentation()
    slide = p.slides.add_slide(p.slide_layouts[1])
    slide.shapes.title.text = "Roadmap"
    slide.placeholders[1].text = "Ship the indexing daemon before winter."
    out = io.BytesIO()
    p.save(out)
    return out.getvalue()


HTML = (
    b"<!DOCTYPE html><html><head><title>Kettle Manual</title><script>var hidden = 1;</script>"
    b"</head><body><p>Descale the <b>kettle</b> every month.</p></body></html>"
)


def make_epub() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        z.writestr(
            "META-INF/container.xml",
            (
                '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
                '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
                "</rootfiles></container>"
            ),
        )
        z.writestr(
            "OEBPS/content.opf",
            (
                '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
                '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Stormy Tales</dc:title>'
                '<dc:language>en</dc:language><dc:identifier id="id">tales</dc:identifier></metadata>'
                '<manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest>'
                '<spine><itemref idref="c1"/></spine></package>'
            ),
        )
        z.writestr(
            "OEBPS/c1.xhtml",
            (
                '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>One</title></head>'
                "<body><h2>Chapter One</h2><p>It was a dark and stormy night.</p></body></html>"
            ),
        )
    return out.getvalue()


def make_odt(title: str | None = None, heading: bool = True) -> bytes:
    from odfdo import Document, Header, List, Paragraph, Table

    d = Document("text")
    if title:
        d.meta.set_title(title)
    if heading:
        d.body.append(Header(1, "Chapter 3 Pangolin results"))
    d.body.append(Paragraph("The pangolin estimator converges, as Gödel feared."))
    table = Table("Results", width=2, height=2)
    for (x, y), value in {(0, 0): "Model", (1, 0): "Score", (0, 1): "GCN", (1, 1): "0.61"}.items():
        table.set_value((x, y), value)
    d.body.append(table)
    d.body.append(List(["first finding", "second finding"]))
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


# A Rich Text Format file as word processors write it: a font table, a letter escaped in
# its code page and one in Unicode.
RTF = rb"{\rtf1\ansi\ansicpg1252{\fonttbl\f0\fswiss Helvetica;}\f0\pard Kurt G\'f6del and Schr\u246?dinger.\par Lemmings\par}"
CSV = b"name,city\nAda,London\nLinus,Helsinki\n"
JSON = b'{"service": "billing", "replicas": 3, "tags": ["prod", "eu"]}'
IPYNB = json.dumps(
    {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Churn Analysis\n", "We model customer churn."]},
            {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [], "source": ["print('churn')"]},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
).encode()

# name → (bytes, text that must appear in the Markdown)
SAMPLES = {
    "report.pdf": (lambda: make_pdf("The quick brown fox jumps over the lazy dog."), "quick brown fox jumps"),
    "report.docx": (make_docx, "Revenue grew by twelve percent"),
    "budget.xlsx": (make_xlsx, "| kettle | 42 |"),
    "roadmap.pptx": (make_pptx, "Ship the indexing daemon"),
    "manual.html": (lambda: HTML, "Descale the **kettle** every month."),
    "tales.epub": (make_epub, "It was a dark and stormy night."),
    "people.csv": (lambda: CSV, "| Linus | Helsinki |"),
    "service.json": (lambda: JSON, '"service": "billing"'),
    "churn.ipynb": (lambda: IPYNB, "We model customer churn."),
    "chapter.odt": (make_odt, "| GCN   | 0.61  |"),
    "abstract.rtf": (lambda: RTF, "Kurt Gödel and Schrödinger.\nLemmings"),
}


def code_of(data: bytes, path: str, registry: Registry = DEFAULT_REGISTRY) -> str:
    with pytest.raises(IngestFailure) as exc:
        registry.convert(data, path)
    return exc.value.code


# --- formats -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SAMPLES)
def test_every_format_converts(name):
    make, expected = SAMPLES[name]
    assert expected in convert(make(), name)


def test_opendocument_text_and_rtf_are_read_not_left_out_or_indexed_as_markup():
    """A LibreOffice .odt failed as UNSUPPORTED (a zip archive), and an .rtf was indexed
    as its markup, `{\\rtf1\\ansi{\\fonttbl…`, though the files gno left out named --also
    for them."""
    odt = convert(make_odt(), "chapter.odt")
    assert odt.startswith("# Chapter 3 Pangolin results\n\nThe pangolin estimator converges, as Gödel feared.")
    assert "first finding" in odt and sniff(make_odt()) == "odt"
    titled = convert(make_odt("Pangolin Thesis", heading=False), "chapter.odt")
    assert titled.startswith("# Pangolin Thesis\n\nThe pangolin estimator")
    assert convert(make_odt("Pangolin Thesis"), "chapter.odt").startswith("# Chapter 3")  # a heading of its own
    assert "| GCN" in convert(make_odt(), "misnamed.docx")  # its signature decides
    assert convert(RTF, "abstract.rtf") == "Kurt Gödel and Schrödinger.\nLemmings\n"
    cyrillic = rb"{\rtf1\ansi\ansicpg1251\pard \'c0\'ed\'ed\'e0\par}"
    assert convert(cyrillic, "anna.rtf").strip() == "Анна"
    broken = io.BytesIO()
    with zipfile.ZipFile(broken, "w") as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.text")
    assert code_of(broken.getvalue(), "broken.odt") == "CORRUPT"
    assert code_of(rb"{\rtf1\ansi{\fonttbl\f0 Helvetica;}}", "blank.rtf") == "EMPTY"
    assert {".odt", ".rtf"} <= set(DEFAULT_EXTENSIONS)


def test_a_gzip_file_is_read_as_the_file_it_holds():
    """A rotated log (`syslog.2.gz`) or a gzipped note failed as BINARY, its bytes being
    gzip's: it is read as the file it holds, converted as that file's name says."""
    assert convert(gzip.compress(b"# Cert rotation\n\nRun certbot renew.\n"), "notes.md.gz").startswith("# Cert")
    table = convert(gzip.compress(b"host,port\nalpha,443\n"), "hosts.csv.gz")
    assert "| alpha | 443 |" in table  # a CSV's table, not its text
    members = gzip.compress(b"first line\n") + gzip.compress(b"second line\n")  # gzip -c more >> log.gz
    assert convert(members, "syslog.2.gz") == "first line\nsecond line\n"
    assert convert(members + b"\0\0junk", "syslog.2.gz") == "first line\nsecond line\n"  # as gzip -d reads it
    assert code_of(members[:15], "cut.log.gz") == "CORRUPT"  # cut short: a log being rotated
    assert code_of(b"\x1f\x8b" + bytes(40), "damaged.gz") == "CORRUPT"
    assert code_of(gzip.compress(bytes(range(256)) * 8), "blob.gz") == "BINARY"
    with pytest.raises(IngestFailure) as big:
        convert(gzip.compress(b"log line\n" * (MAX_TEXT_BYTES // 9 + 1), 1), "huge.log.gz")
    assert big.value.code == "TOO_LARGE" and big.value.reason.startswith("uncompressed, it is 32 MiB;")
    with pytest.raises(IngestFailure) as bomb:
        convert(gzip.compress(bytes(MAX_DOCUMENT_BYTES + 1), 1), "zeros.txt.gz")
    assert bomb.value.code == "TOO_LARGE" and "over 100 MiB" in bomb.value.reason


MAN_PAGE = rb""".\" Generated by hand
.TH APP.EXEC 5 "" "app 1.0"
.de XX
.B never shown
..
.SH "NAME"
app.exec \- execution options
.SH OPTIONS
.PP
\fIProtectSystem=\fR
.RS 4
Takes a boolean\&. Mounts \fB/usr\fR read\-only\(em see
.BR mount (8)
and \*(lqnotes\*(rq\&.
.RE
.IP \(bu 4
A bullet item
.SS
Sub heading on its own line
"""
MDOC_PAGE = b""".Dd $Mdocdate: June 1 2024 $
.Dt SSH 1
.Sh NAME
.Nm ssh
.Nd remote login client
.Sh DESCRIPTION
.Bl -tag -width Ds
.It Fl 4
Forces
.Nm
to use IPv4 addresses only.
.It Fl o Ar option
See
.Xr ssh_config 5 .
.El
"""


def test_a_manual_page_is_read_as_markdown_not_as_its_roff():
    """A sysadmin's `search ProtectSystem` found nothing in systemd.exec(5): its roff
    was indexed as is, `\\fIProtectSystem=\\fR` as the word fiprotectsystem. A page's
    sections are headings, its escapes the characters they print, its own macros and
    layout requests left out; mdoc's flags keep their dash. A rotated log named as a
    page (`syslog.1`) is text."""
    page = convert(MAN_PAGE, "app.exec.5")
    assert page == (
        "# APP.EXEC(5)\n\n## NAME\n\napp.exec - execution options\n\n## OPTIONS\n\nProtectSystem=\n"
        "Takes a boolean. Mounts /usr read-only\u2014 see\nmount(8)\nand \u201cnotes\u201d.\n\n\u2022\n"
        "A bullet item\n\n### Sub heading on its own line\n"
    )
    assert convert(gzip.compress(MAN_PAGE), "app.exec.5.gz") == page
    mdoc = convert(MDOC_PAGE, "ssh.1")
    assert mdoc.startswith("# SSH(1)\n\n## NAME\n\nssh\nremote login client\n\n## DESCRIPTION\n\n-4\nForces\nSSH\n")
    assert "-o option\nSee\nssh_config(5)\n" in mdoc
    log = b"Nov 29 10:00:01 host sshd[1]: Accepted publickey\n.TH is no title here\n"
    assert convert(log, "syslog.1") == log.decode()
    assert convert(b".so man1/ls.1\n", "dir.1") == "See man1/ls.1.\n"


def test_a_word_table_without_a_header_row_has_its_first_row_for_header():
    """markitdown gave such a table an empty header (`|  |  |` over `| --- |`), its header
    words a row below it."""
    import docx

    d = docx.Document()
    table = d.add_table(rows=2, cols=2)
    for (r, c), text in {(0, 0): "Method", (0, 1): "Accuracy", (1, 0): "Baseline", (1, 1): "71.3%"}.items():
        table.cell(r, c).text = text
    out = io.BytesIO()
    d.save(out)
    assert convert(out.getvalue(), "t.docx").strip() == "| Method | Accuracy |\n| --- | --- |\n| Baseline | 71.3% |"


def test_titles_come_from_the_heading_then_metadata():
    assert convert(make_docx(), "r.docx").startswith("# Quarterly Report\n")
    assert "# Roadmap" in convert(make_pptx(), "r.pptx")
    html = convert(HTML, "m.html")  # <title> becomes the heading; scripts are dropped
    assert html.startswith("# Kettle Manual\n") and "hidden" not in html
    # A page's <title> leads its own heading, which stays (both searchable).
    with_h1 = HTML.replace(b"<body>", b"<body><h1>Real Heading</h1>")
    assert convert(with_h1, "m.html").startswith("# Kettle Manual\n\n# Real Heading")
    same = HTML.replace(b"<body>", b"<body><h1>kettle  manual</h1>")
    assert convert(same, "m.html").startswith("# kettle manual\n\nDescale")  # once
    assert convert(make_epub(), "t.epub").startswith("# Stormy Tales\n")


def test_office_documents_and_pdfs_are_titled_by_what_their_authors_titled_them():
    """A PDF's Info title, Word's Title style, a DOCX's title property: all were passed
    over, and a PDF was titled by its file name, a report by a section's heading. A
    template's or an application's title is none; a slide's marker is no text of it; a
    PDF's pages are sections."""
    from fpdf import FPDF
    from pptx import Presentation

    def pdf(title: str) -> bytes:
        out = FPDF()
        out.set_title(title)
        out.add_page()
        out.set_font("helvetica", size=12)
        out.multi_cell(0, 10, text="Spending is on track for the third quarter.")
        return bytes(out.output())

    assert convert(pdf("Quarterly Grant Report Q3 2024"), "grant_q3.pdf").startswith("# Quarterly Grant Report")
    for junk in ("Microsoft Word - grant_q3.docx", "Untitled", "grant_q3"):
        assert convert(pdf(junk), "grant_q3.pdf").startswith("Spending"), junk

    def docx(title_style: str | None, core: str | None) -> bytes:
        d = docx_module.Document()
        if core:
            d.core_properties.title = core
        if title_style:
            d.add_paragraph(title_style, style="Title")
        d.add_paragraph("Stop the centrifuge when the rotor is out of balance.")
        d.add_heading("Emergency procedure", 1)
        out = io.BytesIO()
        d.save(out)
        return out.getvalue()

    import docx as docx_module

    assert convert(docx("Lab Safety Protocol", "Core Title"), "s.docx").startswith("# Lab Safety Protocol\n")
    assert convert(docx(None, "Lab Safety Protocol"), "s.docx").startswith("# Lab Safety Protocol\n")
    assert convert(docx(None, None), "s.docx").startswith("Stop the centrifuge")

    # A PDF's pages are sections, as a scan's are: a hit says which page to cite (its
    # text came as one run, page breaks gone).
    report = FPDF()
    report.set_title("Quarterly Grant Report Q3 2024")
    for text in ("Spending is on track.", "", "The remaining budget covers the service contract."):
        report.add_page()
        report.set_font("helvetica", size=12)
        report.multi_cell(0, 10, text=text)
    assert convert(bytes(report.output()), "grant_q3.pdf") == (
        "# Quarterly Grant Report Q3 2024\n\n## Page 1\n\nSpending is on track.\n\n"
        "## Page 3\n\nThe remaining budget covers the service contract.\n"
    )
    assert "## Page" not in convert(pdf("Quarterly Grant Report Q3 2024"), "grant_q3.pdf")  # one page: none

    # A page with a table is read by markitdown as a table: the pages were joined as one
    # run then, an empty one left out, and the paper had no page to cite.
    paper = FPDF()
    for page in ("Abstract. Graphs aggregate features.", "", "table", "Conclusion. The xylophone heads generalize."):
        paper.add_page()
        paper.set_font("helvetica", size=11)
        if page == "table":
            with paper.table() as table:
                for row in (("Model", "Precision", "Recall"), ("GCN", "0.612", "0.544"), ("Ours", "0.718", "0.629")):
                    table.row(row)
        else:
            paper.multi_cell(0, 6, text=page)
    text = convert(bytes(paper.output()), "paper.pdf")
    assert text.startswith("## Page 1\n\nAbstract. Graphs aggregate features.\n\n## Page 3\n\n| Model")
    assert "| GCN | 0.612 | 0.544 |" in re.sub(" +", " ", text)
    assert text.endswith("\n\n## Page 4\n\nConclusion. The xylophone heads generalize.\n")

    # A deck's slides are sections by their numbers and titles, under its first title: a
    # hit could not be cited by its slide, and an untitled slide ran into the one before.
    deck = Presentation()
    for name in ("Roadmap", "Budget", "Budget", None):
        slide = deck.slides.add_slide(deck.slide_layouts[1] if name else deck.slide_layouts[6])
        if name:
            slide.shapes.title.text = name
        else:
            slide.shapes.add_textbox(0, 0, 100, 100).text_frame.text = "The pelican figure."
    deck.slides[2].notes_slide.notes_text_frame.text = "Mention the walrus."
    out = io.BytesIO()
    deck.save(out)
    text = convert(out.getvalue(), "deck.pptx")
    assert text.startswith("# Roadmap\n\n## Slide 1: Roadmap\n") and "Slide number" not in text
    assert "\n## Slide 3: Budget\n" in text and "\n### Slide 3 notes\nMention the walrus." in text
    assert text.endswith("\n## Slide 4\nThe pelican figure.\n")


LEGACY_NOTES = {
    "shift_jis": "大阪に行きました。たこ焼きがおいしかった。来年も行きたい。",
    "euc_jp": "東京タワーに登った。とても高かった。夜景がきれいだった。",
    "gb18030": "我们下周去广州吃早茶。虾饺和烧卖都很好吃。",
    "big5": "我們下週去台北。夜市的小吃很好吃。",
    "euc_kr": "해수욕장에 갔어요. 날씨가 정말 좋았어요.",
    "cp1251": "Заметка в кодировке cp1251: купить молоко и хлеб.",
    "koi8_r": "Привет, как дела? Всё хорошо, спасибо.",
}


@pytest.mark.parametrize("charset", LEGACY_NOTES)
def test_a_note_in_a_legacy_charset_is_read_in_it(charset):
    """Shift_JIS, GB18030, windows-1251… were read as Latin-1: `Çàìåòêà` for `Заметка`,
    and none of the note's words could be found."""
    text = LEGACY_NOTES[charset]
    assert convert(text.encode(charset), "note.txt").strip() == text


def test_western_text_outside_utf8_stays_as_browsers_read_it():
    """A Latin-1 author's name in a C file, a French note, Windows quotes: one letter at a
    time outside ASCII is windows-1252 (a detection guessed cp775 for `Jürgen`)."""
    code = "/* Copyright (C) 1998 Jürgen Müller */\nint main(void) { return 0; }\n"
    assert convert(code.encode("latin-1"), "main.c") == code
    assert (
        convert("Réunion à l'hôtel, café crème.".encode("latin-1"), "n.txt").strip() == "Réunion à l'hôtel, café crème."
    )
    assert convert("“Quoted” – dash".encode("cp1252"), "q.txt").strip() == "“Quoted” – dash"
    assert convert(b"undefined \x81 byte", "u.txt").strip() == "undefined \x81 byte"  # Latin-1 for what cp1252 lacks


def test_a_text_an_older_gno_read_as_latin_1_is_told_by_what_reads_otherwise_now():
    """Read again at an upgrade: windows-1252's quotes (C1 controls, as Latin-1 read
    them), another script's bytes; not the UTF-8 texts with an accented letter here and
    there (2,201 of a kernel tree's files were read again, 2 of them not UTF-8)."""
    from gnod.ingest.reread import _read_otherwise

    as_latin_1 = lambda text, charset: text.encode(charset).decode("latin-1").encode()  # noqa: E731
    assert _read_otherwise(as_latin_1("“Quoted” – dash", "cp1252"))
    assert _read_otherwise(as_latin_1("大阪に行きました。", "shift_jis"))
    assert not _read_otherwise("/* (C) 1998 Jürgen Müller */ int café;".encode())
    assert not _read_otherwise(b"plain ASCII")


def test_a_web_page_is_read_in_the_charset_it_declares():
    """`<meta charset="shift_jis">` and `charset=windows-1251` were ignored: titles became
    `Ã¢y[W` and `Ñòàðàÿ ñòðàíèöà`."""
    sjis = (
        '<html><head><meta charset="shift_jis"><title>古いページ</title></head><body><p>日本語の本文</p></body></html>'
    )
    assert convert(sjis.encode("shift_jis"), "old.html").startswith("# 古いページ")
    ru = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1251">'
        "<title>Старая страница</title></head><body><p>Текст</p></body></html>"
    )
    assert convert(ru.encode("cp1251"), "old.html").startswith("# Старая страница")


def test_csv_and_json_shapes():
    assert convert(CSV, "p.csv") == "| name | city |\n| --- | --- |\n| Ada | London |\n| Linus | Helsinki |\n"
    assert convert(b"a\tb|c\n1\t2\n", "t.tsv") == "| a | b\\|c |\n| --- | --- |\n| 1 | 2 |\n"
    out = convert(JSON, "s.json")
    assert out.startswith('```json\n{\n  "service"') and out.endswith("\n```\n")
    loose = convert(b'{"a": 1, // comment\n}', "tsconfig.json")  # fenced as written, not lost
    assert "// comment" in loose
    assert convert(b'{"md": "````"}', "x.json").startswith("`````json\n")


# --- failures ------------------------------------------------------------------------------


def test_corrupt_and_encrypted_documents():
    assert code_of(make_pdf("Truncated text here.")[:300], "cut.pdf") == "CORRUPT"
    assert code_of(make_encrypted_pdf(), "secret.pdf") == "ENCRYPTED"
    assert code_of(make_encrypted_docx(), "secret.docx") == "ENCRYPTED"
    # Not a readable zip any more: said so (it said "it is a zip archive", as every DOCX is).
    with pytest.raises(IngestFailure, match=r"not a valid DOCX file \(it is a zip archive cut short or damaged"):
        convert(make_docx()[:2000], "cut.docx")


def test_empty_text_is_indexed_but_a_document_without_text_is_empty():
    assert convert(b"", "empty.md") == "" and convert(b" \n\t\n", "blank.txt") == " \n\t\n"
    assert convert(b"", "empty.csv") == "" and convert(b"", "empty.json") == ""
    assert code_of(make_pdf(), "scan.pdf") == "EMPTY"  # a page with no text layer
    assert code_of(b"", "empty.pdf") == "EMPTY"
    with pytest.raises(IngestFailure, match="no extractable text"):
        convert(make_pdf(), "scan.pdf")


def test_sniffed_content_beats_the_extension():
    pdf = make_pdf("Sniffed sentence inside a misnamed file.")
    assert sniff(pdf) == "pdf"
    assert "Sniffed sentence" in convert(pdf, "notes.txt")
    assert "Revenue grew" in convert(make_docx(), "report.bin")
    assert "| kettle | 42 |" in convert(make_xlsx(), "budget.docx")
    # A text file named .pdf is not a PDF: reported, never guessed to be text.
    assert code_of(b"just some words", "fake.pdf") == "CORRUPT"
    # HTML content decides only for names no converter claims: .php stays source code.
    assert convert(HTML, "saved-page").startswith("# Kettle Manual")
    assert convert(HTML, "index.php") == HTML.decode()
    assert sniff(make_epub()) == "epub" and sniff(make_pptx()) == "pptx" and sniff(CSV) is None
    assert sniff(b"\x00" * 128 + pdf) == "pdf"  # a binary prefix (MacBinary) before the header
    assert convert(b"A note: PDFs start with %PDF-1.7.\n", "pdf-notes.md").startswith("A note")
    # A picture is one whatever its name: a phone's scan saved as .pdf was CORRUPT, not read.
    from PIL import Image

    for fmt in ("PNG", "JPEG", "GIF", "TIFF", "WEBP", "BMP"):
        picture = io.BytesIO()
        Image.new("RGB", (8, 8), "white").save(picture, fmt)
        assert sniff(picture.getvalue()) == "image", fmt
        assert DEFAULT_REGISTRY.resolve(picture.getvalue(), "scan.pdf").name == "image", fmt
    assert sniff(b"BMW service notes: oil at 15,000 km.\n") is None


def test_unsupported_binary_and_too_large():
    plain_zip = io.BytesIO()
    with zipfile.ZipFile(plain_zip, "w") as z:
        z.writestr("a.txt", "hello")
    assert code_of(plain_zip.getvalue(), "archive.zip") == "UNSUPPORTED"
    assert code_of(plain_zip.getvalue(), "fake.docx") == "CORRUPT"
    assert code_of(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600, "old.doc") == "UNSUPPORTED"
    assert code_of(b"\x00\x01binary", "blob.txt") == "BINARY"
    # UTF-16 without a byte order mark, as Windows tools write it, is text; random bytes
    # with NULs beside them are not.
    note = "Überschwemmungsgebiet\r\nNitrat und Phosphor im Überblick.\r\n"
    for order in ("utf-16-le", "utf-16-be"):
        assert convert(note.encode(order), "notes.txt") == note, order
    assert code_of(bytes(range(256)) * 8, "blob.txt") == "BINARY"
    assert code_of(b"\x00\x01\x00\x02" * 100, "blob.txt") == "BINARY"  # no text: control characters
    assert code_of(b"a" * (MAX_TEXT_BYTES + 1), "huge.txt") == "TOO_LARGE"
    # A file no converter names is read as text, and said so ("the other limit" read as nothing).
    with pytest.raises(IngestFailure) as exc:
        DEFAULT_REGISTRY.convert(b"a" * (MAX_TEXT_BYTES + MiB), "app.log")
    assert (
        exc.value.reason
        == f"file is {MAX_TEXT_BYTES // MiB + 1} MiB; a text file is read up to {MAX_TEXT_BYTES // MiB} MiB"
    )
    strict = Registry([c for c in builtin_converters() if c.name != "other"])
    assert code_of(b"plain words", "notes.weird", strict) == "UNSUPPORTED"
    assert convert(b"all: build\n", "Makefile") == "all: build\n"  # the fallback reads it as text


# --- the registry --------------------------------------------------------------------------


def shout(data: bytes, path: str) -> str:
    return data.decode().upper()


def sleepy(data: bytes, path: str) -> str:
    time.sleep(30)
    return "never"


def crashing(data: bytes, path: str) -> str:
    os._exit(3)


def test_a_notebooks_outputs_are_text_of_it():
    """An analysis notebook printed `decreasing`; `search decreasing` found nothing, as
    its outputs were left out. Text outputs follow their cell; pictures and HTML do not,
    and a long output is cut; a notebook in R is fenced as R."""
    cells = [
        {"cell_type": "markdown", "source": ["## Trend\n", "Nitrate by year."]},
        {
            "cell_type": "code",
            "source": "print(trend(df))\ndf.slope",
            "outputs": [
                {"output_type": "stream", "name": "stdout", "text": ["decreasing\n"]},
                {"output_type": "execute_result", "data": {"text/plain": ["-0.45"], "image/png": "iVBOR"}},
                {"output_type": "display_data", "data": {"text/html": ["<table>secret markup</table>"]}},
                {
                    "output_type": "error",
                    "ename": "KeyError",
                    "evalue": "'site'",
                    "traceback": [
                        "\x1b[0;31mKeyError\x1b[0m Traceback (most recent call last)",
                        "File \x1b[0;32m~/venv/pandas/core/indexes/base.py:3805\x1b[0m, in \x1b[0;36mIndex.get_loc\x1b[0m(self, key)",
                        "\x1b[0;31mKeyError\x1b[0m: 'site'",
                    ],
                },
                {"output_type": "stream", "name": "stdout", "text": "\x1b[32mgreen\x1b[0m\n" + "row\n" * 5000},
            ],
        },
    ]
    meta = {"language_info": {"name": "R"}, "title": "Nitrate trends"}
    text = convert(json.dumps({"cells": cells, "metadata": meta}).encode(), "trends.ipynb")
    assert text.startswith(
        "# Nitrate trends\n\n## Trend\nNitrate by year.\n\n```r\nprint(trend(df))\ndf.slope\n```\n\n"
    )
    output = text.split("```output\n", 1)[1]
    # An error's name and message, then its frames (a pasted frame found nothing), once each.
    assert output.startswith(
        "decreasing\n-0.45\nKeyError: 'site'\nKeyError Traceback (most recent call last)\n"
        "File ~/venv/pandas/core/indexes/base.py:3805, in Index.get_loc(self, key)\ngreen\nrow\n"
    )
    assert "secret markup" not in text and "iVBOR" not in text and "\x1b" not in text
    assert len(output.split("green\n", 1)[1]) < 4100 and output.rstrip("`\n").endswith("…")
    assert code_of(b"{not json", "broken.ipynb") == "CORRUPT"
    assert code_of(b"[1, 2]", "list.ipynb") == "CORRUPT"


def test_order_is_visible_and_first_match_wins():
    assert DEFAULT_REGISTRY.names == [
        "text",
        "html",
        "pdf",
        "docx",
        "odt",
        "rtf",
        "xlsx",
        "pptx",
        "epub",
        "csv",
        "json",
        "ipynb",
        "srt",
        "vtt",
        "ics",
        "eml",
        "msg",
        "image",
        "man",
        "other",
    ]
    reg = Registry(builtin_converters())
    reg.register(Converter("shout", shout, frozenset({".md"})), before="text")
    assert reg.names[0] == "shout" and reg.convert(b"hi", "a.md") == "HI"
    assert reg.convert(b"hi", "a.txt") == "hi"  # .txt is still text's
    reg.register(Converter("late", shout, frozenset({".txt"})))
    assert reg.names[-1] == "late" and reg.convert(b"hi", "a.txt") == "hi"  # text comes first
    reg.converters.insert(0, reg.converters.pop())
    assert reg.convert(b"hi", "a.txt") == "HI"
    # A converter claiming the PDF signature ahead of "pdf" takes PDFs whatever their name.
    reg.register(Converter("pdf-first", convert_text, signatures=frozenset({"pdf"})), before="text")
    assert reg.convert(b"%PDF-1.4 raw", "x.md") == "%PDF-1.4 raw"


def test_default_extensions_all_have_a_converter():
    for ext in DEFAULT_EXTENSIONS:
        claimed = [c.name for c in DEFAULT_REGISTRY.converters if ext in c.extensions]
        assert claimed and claimed[0] != "other", ext


def test_timeout_kills_the_helper_and_the_next_file_converts():
    reg = Registry(
        [Converter("sleepy", sleepy, frozenset({".slow"}), isolated=True), *builtin_converters()], timeout=1.0
    )
    reg.convert(b"warm up", "x.html")  # start the helper outside the measured call
    t0 = time.monotonic()
    assert code_of(b"x", "a.slow", reg) == "TIMEOUT"
    assert time.monotonic() - t0 < 10
    assert "quick brown fox" in reg.convert(make_pdf("The quick brown fox."), "a.pdf")


def test_a_crashing_converter_is_corrupt_not_fatal():
    reg = Registry([Converter("crash", crashing, frozenset({".boom"}), isolated=True), *builtin_converters()])
    with pytest.raises(IngestFailure, match="converter process died") as exc:
        reg.convert(b"x", "a.boom")
    assert exc.value.code == "CORRUPT"
    assert "Revenue grew" in reg.convert(make_docx(), "r.docx")


def test_markitdown_stays_out_of_the_converting_process():
    probe = (
        "import sys\n"
        "from gnod.ingest.prepare import prepare\n"
        "from gnod.ingest.convert import convert\n"
        "assert 'markitdown' not in sys.modules\n"
        f"assert 'Hello' in convert({HTML!r}.replace(b'kettle', b'Hello'), 'a.html')\n"
        "assert not any(m.split('.')[0] in ('markitdown', 'pandas', 'pdfminer') for m in sys.modules)\n"
    )
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


# --- through the pipeline ------------------------------------------------------------------


def write_formats(root) -> None:
    root.mkdir(exist_ok=True)
    for name, (make, _) in SAMPLES.items():
        (root / name).write_bytes(make())
    (root / "notes.md").write_text("# Notes\n\nPlain markdown stays as written.\n")
    (root / "cut.pdf").write_bytes(make_pdf("Truncated text here.")[:300])
    (root / "secret.pdf").write_bytes(make_encrypted_pdf())
    (root / "secret.docx").write_bytes(make_encrypted_docx())
    (root / "scan.pdf").write_bytes(make_pdf())
    (root / "misnamed.txt").write_bytes(make_pdf("A PDF hiding behind a txt name."))


def test_index_a_folder_of_every_format(db, tmp_path):
    root = tmp_path / "docs"
    write_formats(root)
    stats = index_collection(db, AnalyzerSet(), CollectionConfig(name="c", path=str(root)))
    assert (stats.scanned, stats.added, stats.errors) == (17, 13, 4)
    errors = dict(db.execute("SELECT rel_path, code FROM ingest_errors").fetchall())
    assert errors == {"cut.pdf": "CORRUPT", "secret.pdf": "ENCRYPTED", "secret.docx": "ENCRYPTED", "scan.pdf": "EMPTY"}
    for name, (_, expected) in SAMPLES.items():
        doc = store.doc_by_path(db, "c", name)
        assert doc is not None, name
        mirror = db.execute("SELECT mirror_hash FROM documents WHERE rel_path = ?", (name,)).fetchone()[0]
        assert expected in store.content_of(db, mirror)[0], name
    titles = dict(db.execute("SELECT rel_path, title FROM documents").fetchall())
    assert titles["report.docx"] == "Quarterly Report" and titles["manual.html"] == "Kettle Manual"
    assert titles["tales.epub"] == "Stormy Tales" and titles["report.pdf"] == "report"
    mirror = db.execute("SELECT mirror_hash FROM documents WHERE rel_path = 'misnamed.txt'").fetchone()[0]
    assert store.content_of(db, mirror)[0].startswith("A PDF hiding behind")  # indexed as the PDF it is
    assert index_collection(db, AnalyzerSet(), CollectionConfig(name="c", path=str(root))).unchanged == 13


def test_worker_processes_convert_too(db, tmp_path):
    root = tmp_path / "many"
    write_formats(root)
    for i in range(PARALLEL_MIN):
        (root / f"n{i:03d}.md").write_text(f"# Note {i}\n\nfiller {i}\n")
    pool = PreparePool(1)
    try:
        stats = index_collection(db, AnalyzerSet(), CollectionConfig(name="c", path=str(root)), pool=pool)
    finally:
        pool.close()
    assert (stats.added, stats.errors) == (PARALLEL_MIN + 13, 4)


def test_the_workers_prepare_the_first_tasks_while_the_rest_are_still_being_found(tmp_path):
    """A big run's plan is lazy (the walk under way): the workers start on the first tasks
    while this thread takes the rest, so outcomes come back before the last task is found
    (the walk no longer runs before any preparing), and every task gets its outcome once."""
    files = []
    for i in range(PARALLEL_MIN + 200):
        path = tmp_path / f"n{i:03d}.md"
        path.write_text(f"# Note {i}\n\nfiller {i}\n")
        files.append(path)
    received: list[str] = []
    when_all_found: list[int] = []

    def found():
        for k, path in enumerate(files):
            if k >= PARALLEL_MIN:
                time.sleep(0.01)  # a walk taking its time: 2 s for the last 200 files
            st = path.stat()
            yield Task(WalkEntry(path.name, str(path), st.st_size, st.st_mtime_ns, st.st_ino), None, None)
        when_all_found.append(len(received))

    pool = PreparePool(1)
    try:
        for task, outcome in pool.run(found(), AnalyzerSet()):
            assert isinstance(outcome, store.PreparedDoc), outcome
            received.append(task.entry.rel_path)
    finally:
        pool.close()
    assert sorted(received) == [path.name for path in files]
    assert when_all_found[0] > 0  # outcomes had come back while tasks were still being found


def test_an_idle_pool_lets_its_processes_go_and_starts_them_again():
    """Once nothing has used the pool for idle_s (a run, a spread, a submitted call), its
    processes exit (after a big ingest a worker held ~200 MB at rest); a call under way
    keeps them, and the next use starts them again."""
    pool = PreparePool(1, idle_s=0.3)
    try:
        assert pool.spread(sum, [[1, 2], [3], [4]]) == [3, 3, 4]
        assert pool.alive()
        assert wait_until(lambda: not pool.alive(), 10)
        slow = pool.submit(partial(time.sleep, 1.0))
        time.sleep(0.6)
        assert pool.alive() and not slow.done()  # in use past idle_s: kept
        slow.result(timeout=30)
        assert wait_until(lambda: not pool.alive(), 10)
        assert pool.submit(partial(pow, 2, 10)).result(timeout=30) == 1024  # started again
    finally:
        pool.close()
    assert not pool.alive()


def _meet(folder: str, others: int) -> bool:
    """In a worker: sign in under `folder`, then whether `others` more signed in within 20 s."""
    open(os.path.join(folder, str(os.getpid())), "w").close()
    return wait_until(lambda: len(os.listdir(folder)) > others, 20)


def test_background_calls_run_on_a_lane_per_core_of_the_ingest(tmp_path):
    """Background work (a backlog of definitions or OCR) cannot run on the writer thread,
    so its calls get a process for that core too: with one ingest worker, two run at once
    (a backlog parsed on one core of two took twice as long). An idle ingest process is
    let go when they start, not left holding its memory beside them."""
    pool = PreparePool(1)
    try:
        assert pool.lanes == 2
        assert pool.spread(sum, [[1, 2], [3], [4]]) == [3, 3, 4]
        assert pool._ingest.alive()
        both = [pool.submit(partial(_meet, str(tmp_path), 1)) for _ in range(2)]
        assert [f.result(timeout=60) for f in both] == [True, True]
        assert len(os.listdir(tmp_path)) == 2  # two processes
        assert not pool._ingest.alive()
    finally:
        pool.close()
    assert not pool.alive()
    assert PreparePool(0).lanes == 1  # everything in-process: one call at a time, on a thread


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="pipe sizes are Linux's")
def test_worker_batches_come_back_through_a_wide_pipe():
    """A batch of prepared documents is about a megabyte: through the default 64 KB pipe
    the worker waited at every few kilobytes for the daemon's result thread (and its
    turn at the GIL), its core idle. Each start of the processes gets the wide pipe."""
    with open("/proc/sys/fs/pipe-max-size") as f:
        if int(f.read()) < RESULT_PIPE_BYTES:
            pytest.skip("this system caps pipes below RESULT_PIPE_BYTES")
    pool = PreparePool(1, idle_s=1.0)
    try:
        for _ in range(2):  # started, let go, started again
            assert pool.spread(sum, [[1, 2], [3], [4]]) == [3, 3, 4]
            assert pool._ingest.pool is not None
            reader = pool._ingest.pool._result_queue._reader  # type: ignore[attr-defined]
            assert fcntl.fcntl(reader.fileno(), fcntl.F_GETPIPE_SZ) == RESULT_PIPE_BYTES
            assert wait_until(lambda: not pool.alive(), 10)
    finally:
        pool.close()


def test_while_clients_read_the_writer_leaves_preparing_to_the_workers(db, tmp_path, monkeypatch):
    root = tmp_path / "many"
    root.mkdir()
    for i in range(2 * PARALLEL_MIN):
        (root / f"n{i:03d}.md").write_text(f"# Note {i}\n\nfiller {i}\n")
    here: list[str] = []  # what this process prepared (the workers import a module of their own)
    real = workers.run_task

    def run_here(task, analyzers=None):
        here.append(task.entry.rel_path)
        return real(task, analyzers)

    monkeypatch.setattr(workers, "run_task", run_here)
    pool = PreparePool(1)
    pool.busy = lambda: True
    try:
        stats = index_collection(db, AnalyzerSet(), CollectionConfig(name="c", path=str(root)), pool=pool)
    finally:
        pool.close()
    assert stats.added == 2 * PARALLEL_MIN and here == []


def test_read_ahead_never_blocks_on_what_is_not_a_regular_file(tmp_path):
    """The pool's read-ahead thread opens each file about to be prepared: a FIFO (swapped
    in after the walk), a link or a missing name must not stop it (it opens without
    blocking or following), so the files after them are still read ahead."""
    fifo, link, plain = tmp_path / "pipe.md", tmp_path / "link.md", tmp_path / "plain.md"
    os.mkfifo(fifo)
    plain.write_text("# Plain\n")
    link.symlink_to(fifo)

    def tasks(*paths) -> list[Task]:
        return [Task(WalkEntry(p.name, str(p), 0, 0, 0), None, None) for p in paths]

    ahead = workers._Readahead()
    ahead.add(tasks(fifo, link, tmp_path / "gone.md"))
    ahead.add(tasks(plain))
    assert wait_until(ahead._queue.empty, 5)
    assert ahead._thread is not None and ahead._thread.is_alive()


def test_a_sheets_numbers_are_as_it_shows_them_beside_an_empty_cell():
    """pandas reads a column with an empty cell as floats: `| 4100.0 |`, `| 0.270 |`
    (an office tryout's `search 0.27` found nothing)."""
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    for row in (["Konto", "Betrag", "Preis"], [4100, 44640, 0.27], ["Summe", None, 12.5], [4200, 7, None]):
        ws.append(row)
    out = io.BytesIO()
    wb.save(out)
    md = convert(out.getvalue(), "budget.xlsx")
    assert "| 4100 | 44640 | 0.27 |" in md and "| Summe |  | 12.5 |" in md and "4100.0" not in md


def test_a_sheets_words_keep_their_underscores():
    """A data scientist's sheet showed `store\\_id | weekly\\_avg\\_units` in its passages."""
    import openpyxl

    wb = openpyxl.Workbook()
    wb.active.append(["store_id", "weekly_avg_units"])
    wb.active.append(["S_001", 12])
    out = io.BytesIO()
    wb.save(out)
    md = convert(out.getvalue(), "stores.xlsx")
    assert "| store_id | weekly_avg_units |" in md and "| S_001 | 12 |" in md and "\\" not in md
