"""Any document's bytes → Markdown, through an ordered registry of converters.

The first converter that claims a file wins. A converter claims a file by its content
signature (sniffed from the bytes) or by its extension. Binary signatures (PDF, the
Office zips, EPUB, OLE) beat every extension, so a PDF named `notes.txt` is converted
as a PDF. Without a binary signature the extension decides, so a text file named
`x.pdf` goes to the PDF converter and is reported CORRUPT: bytes that are not what
their name says are never guessed to be text. The HTML signature is weak: it only
decides for names no earlier converter claims, so `index.php` stays source code.

Rich formats are converted by markitdown in a helper process under a deadline (see
`_Isolator`); markitdown is imported there and nowhere else. Every problem becomes an
`IngestFailure` with a stable code: UNSUPPORTED, ENCRYPTED, CORRUPT, EMPTY, TOO_LARGE,
TIMEOUT, NEEDS_OCR (an image or scanned PDF, and no Tesseract), plus BINARY and DECODE
for text. An empty or blank text file is indexed as an empty document (its path and
name stay findable); a rich document that yields no text is EMPTY, since that means its
text could not be extracted. Pictures are the exception: most hold no text (photos,
diagrams), so one without is an empty document, findable by its name like a blank text
file; a scanned PDF whose OCR finds nothing is still EMPTY. With `ocr_later`, a picture
or scan that needs OCR fails with the code ocr.LATER where Tesseract would start: the
index run stores it by its name and gnod's OCR backlog reads it.
"""

from __future__ import annotations

import csv
import html
import io
import json
import logging
import os
import pickle
import re
import signal
import subprocess
import sys
import threading
import time
import warnings
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from multiprocessing.connection import Connection
from typing import Any, TypeVar, cast

from gnod import lines
from gnod.config import CONVERTED, MAN_EXTENSIONS, TEXT_EXTENSIONS, extension, uncompressed
from gnod.ingest import mail, manpage, media, ocr
from gnod.ingest.charsets import declared_charset, decode_legacy
from gnod.ingest.failure import IngestFailure
from gnod.ingest.markdown import extract_title
from gnod.text import tables

T = TypeVar("T")
MiB = 1024 * 1024
# Bigger text files are almost always logs or data dumps, not documents.
MAX_TEXT_BYTES = 32 * MiB
MAX_DOCUMENT_BYTES = 100 * MiB
CONVERT_TIMEOUT_S = 60.0
# A helper unused this long exits, giving back the memory markitdown and pandas hold.
HELPER_IDLE_S = 120.0
HELPER_START_S = 120.0  # starting the helper and importing markitdown, billed to no file

# Kinds with an unmistakable binary signature: they override the extension.
BINARY_KINDS = frozenset(
    {"pdf", "docx", "odt", "xlsx", "pptx", "epub", "zip", "damaged-zip", "ole", "encrypted-office", "image"}
)
# Kinds several formats share: a converter claims one only for its own extensions (an OLE
# file is a .doc, .xls, .ppt or Outlook .msg).
SHARED_KINDS = frozenset({"ole"})
_KIND_NAMES = {
    "zip": "a zip archive",
    "damaged-zip": "a zip archive cut short or damaged, which cannot be opened (as a file still being copied)",
    "ole": "a legacy OLE file (.doc, .xls, .ppt…)",
}
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_GZIP_MAGIC = b"\x1f\x8b"
# Pictures by their signatures (PNG, JPEG, GIF, TIFF; WebP in its RIFF; BMP by _bmp): a
# phone's scan saved as .pdf was CORRUPT, not read.
_PICTURE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"II*\x00", b"MM\x00*")
# A zip's first member, `mimetype`, names the formats that start so (EPUB, OpenDocument).
_ZIP_MIMETYPES = {b"application/epub+zip": "epub", b"application/vnd.oasis.opendocument.text": "odt"}
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")
_HTML_RE = re.compile(rb"\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html)[\s>]", re.I | re.S)
_PASSWORD_ERRORS = frozenset({"PDFPasswordIncorrect", "PDFEncryptionError"})
_NAN_CELL_RE = re.compile(r"(?<=\| )NaN(?= \|)")
# A number in a column pandas read as floats (one with an empty cell): its trailing zeros,
# which the sheet does not show (`4100.0`, `0.270`: `0.27` found nothing).
_FLOAT_CELL_RE = re.compile(r"(?<=\| )(-?\d+)(?:\.0+|(\.\d*?[1-9])0+)(?= \|)")
# A Word table without a header row comes with an empty one (`|  |  |` over `| --- |`):
# its first row is its header (a passage showed the empty row, its words a row below).
_EMPTY_HEADER_RE = re.compile(rf"^\|(?:[ \t]*\|)+[ \t]*\n({tables.SEPARATOR}[ \t]*)\n(\|.*\|)[ \t]*$", re.M)
# UTF-16 without a byte order mark: at least this share of the high bytes of its first
# characters are NUL (Latin script), and its text holds no control character but line
# ends, tabs and form feeds (_utf16_without_bom).
UTF16_ZERO_SHARE = 0.5
# What a notebook cell's output gives its text at most (a printed table or a log can be
# megabytes; the notebook's own code and notes are what it is found by).
NOTEBOOK_OUTPUT_CHARS = 4000
# A terminal's colours in a notebook's output (a traceback's, a progress bar's).
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f]")
_SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass(frozen=True)
class Converter:
    """One format. `convert` must be a module-level function (or a partial of one)
    when `isolated`, because it is pickled to the helper process."""

    name: str
    convert: Callable[[bytes, str], str] | Callable[[bytes, str], tuple[str, str]]  # the second with `lines`
    extensions: frozenset[str] = frozenset()  # lower-case, with the dot; "*" = any name
    signatures: frozenset[str] = frozenset()  # kinds from `sniff` that this converter claims
    max_bytes: int = MAX_TEXT_BYTES
    isolated: bool = False  # run in the helper process, under the registry's deadline
    allow_empty: bool = True  # False: producing no text is an EMPTY failure
    takes_language: bool = False  # `convert` also takes language= (the collection's hint, or None)
    reads_pictures: bool = False  # `convert` also takes ocr_later= (gnod.ingest.ocr.LATER)
    # `convert` gives (Markdown, the file's line of each of its lines as gnod.lines
    # shifts): a table's rows are its file's lines, the Markdown's delimiter row aside.
    lines: bool = False

    def claims(self, ext: str, kind: str | None) -> bool:
        if kind in BINARY_KINDS:
            return kind in self.signatures and (kind not in SHARED_KINDS or ext in self.extensions)
        return (kind is not None and kind in self.signatures) or ext in self.extensions or "*" in self.extensions


def sniff(data: bytes) -> str | None:
    """The kind of document the bytes say they are, or None for no known signature."""
    at = data[:1024].find(b"%PDF-")
    if at == 0 or (at > 0 and b"\x00" in data[:at]):  # junk before the header, but not a note about PDFs
        return "pdf"
    if data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return _sniff_zip(data)
    if data.startswith(_PICTURE_MAGIC) or (data[:4] == b"RIFF" and data[8:12] == b"WEBP") or _bmp(data):
        return "image"
    if data.startswith(_OLE_MAGIC):
        return "encrypted-office" if _ENCRYPTED_PACKAGE in data else "ole"
    if _HTML_RE.match(data[:1024].removeprefix(b"\xef\xbb\xbf")):
        return "html"
    return None


def gunzip(data: bytes) -> bytes:
    """What a gzip file holds (each of its members, one after another, as `gzip -d`
    gives them); IngestFailure when it is damaged or cut short (a log being rotated), or
    expands past MAX_DOCUMENT_BYTES (a bomb is never expanded further)."""
    out: list[bytes] = []
    size = 0
    rest = data
    while rest:
        d = zlib.decompressobj(wbits=31)  # a gzip header and trailer
        try:
            out.append(d.decompress(rest, MAX_DOCUMENT_BYTES + 1 - size))
        except zlib.error as e:
            raise IngestFailure("CORRUPT", f"damaged gzip file ({e})") from None
        size += len(out[-1])
        if size > MAX_DOCUMENT_BYTES:
            raise IngestFailure("TOO_LARGE", f"uncompressed, it is over {MAX_DOCUMENT_BYTES // MiB} MiB")
        if not d.eof:
            raise IngestFailure("CORRUPT", "gzip file cut short (still being written?)")
        rest = d.unused_data.lstrip(b"\0")  # a member may be padded with NULs after it
        if not rest.startswith(_GZIP_MAGIC):
            break  # trailing bytes that are no member: ignored, as gzip -d does
    return b"".join(out)


def _bmp(data: bytes) -> bool:
    """A BMP: `BM`, its own size, four zero bytes (its `BM` alone would take a text)."""
    return data[:2] == b"BM" and int.from_bytes(data[2:6], "little") == len(data) and data[6:10] == bytes(4)


def _sniff_zip(data: bytes) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            names = z.namelist()
            if "mimetype" in names and z.getinfo("mimetype").file_size < 64:
                kind = _ZIP_MIMETYPES.get(z.read("mimetype").strip())
                if kind is not None:
                    return kind
    except (zipfile.BadZipFile, OSError, ValueError, RuntimeError):
        return "damaged-zip"
    if "[Content_Types].xml" in names:
        for prefix, kind in (("word/", "docx"), ("xl/", "xlsx"), ("ppt/", "pptx")):
            if any(n.startswith(prefix) for n in names):
                return kind
    return "zip"


@dataclass
class Registry:
    """Converters in priority order; `converters` is a plain list to read and reorder."""

    converters: list[Converter]
    timeout: float = CONVERT_TIMEOUT_S

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.converters]

    def register(self, converter: Converter, before: str | None = None) -> None:
        """Add `converter` before the one named `before` (so it wins over it), else last."""
        at = self.names.index(before) if before is not None else len(self.converters)
        self.converters.insert(at, converter)

    def resolve(self, data: bytes, path: str) -> Converter:
        kind = sniff(data)
        if kind == "encrypted-office":
            raise IngestFailure("ENCRYPTED", "password-protected Office document")
        ext = extension(path)
        for c in self.converters:
            if c.claims(ext, kind):
                if c.signatures & BINARY_KINDS and kind not in c.signatures:
                    if not data.strip():
                        raise IngestFailure("EMPTY", "empty file; no extractable text")
                    raise IngestFailure("CORRUPT", f"not a valid {c.name.upper()} file (its signature is missing)")
                return c
        if kind is None:
            raise IngestFailure("UNSUPPORTED", f"no converter for {ext or 'names without an extension'}")
        what = _KIND_NAMES.get(kind, f"a {kind.upper()} document")
        named = next((c for c in self.converters if ext in c.extensions and c.signatures & BINARY_KINDS), None)
        if named is not None:  # e.g. a plain zip or a legacy .doc named .docx
            raise IngestFailure("CORRUPT", f"not a valid {named.name.upper()} file (it is {what})")
        raise IngestFailure("UNSUPPORTED", f"{what}: no converter handles this format")

    def convert(self, data: bytes, path: str, language: str | None = None, ocr_later: bool = False) -> str:
        """Markdown for one file, or IngestFailure (convert_lines's, without its lines)."""
        return self.convert_lines(data, path, language, ocr_later)[0]

    def convert_lines(
        self, data: bytes, path: str, language: str | None = None, ocr_later: bool = False
    ) -> tuple[str, str]:
        """Markdown for one file and where its lines are in the file (gnod.lines shifts:
        "" where they are the file's, or the converter does not say), or IngestFailure.
        `language`: the collection's hint; `ocr_later`: a picture or scan that needs OCR
        fails with code ocr.LATER instead. A gzip file is converted as the file it holds
        (config.uncompressed names it)."""
        compressed = data.startswith(_GZIP_MAGIC)
        if compressed:
            data, path = gunzip(data), uncompressed(path)
        c = self.resolve(data, path)
        options = {
            **({"language": language} if c.takes_language else {}),
            **({"ocr_later": ocr_later} if c.reads_pictures else {}),
        }
        fn = partial(cast(Callable[..., Any], c.convert), **options) if options else c.convert
        if len(data) > c.max_bytes:
            kind = "text" if c.name == "other" else c.name  # the converter of any file not named
            size = f"uncompressed, it is {len(data) // MiB} MiB" if compressed else f"file is {len(data) // MiB} MiB"
            raise IngestFailure("TOO_LARGE", f"{size}; a {kind} file is read up to {c.max_bytes // MiB} MiB")
        if c.isolated:
            out = _ISOLATOR.run(fn, data, path, self.timeout)
        else:
            try:
                out = fn(data, path)
            except IngestFailure:
                raise
            except Exception as e:
                raise IngestFailure("CORRUPT", _describe(e)) from None
        text, shifts = out if c.lines else (out, "")
        if not c.allow_empty and not text.strip():
            raise IngestFailure(
                "EMPTY", f"no extractable text in this {c.name.upper()} file (images or scanned pages only?)"
            )
        return text, shifts


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:300]


# --- text formats: in-process, linear time -------------------------------------------------


def decode_text(data: bytes, declared: str | None = None) -> str:
    """Bytes → str for text files: UTF-8 (with or without BOM), UTF-16 with BOM, else
    the `declared` charset or a legacy one (charsets.decode_legacy, which never fails:
    a legacy-encoded note is still indexed rather than lost)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise IngestFailure("DECODE", "invalid UTF-16 text") from None
    if b"\x00" in data[:8192]:
        text = _utf16_without_bom(data)
        if text is None:
            raise IngestFailure("BINARY", "binary file (contains NUL bytes); not a text document")
        return text
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return decode_legacy(data, declared)


def _utf16_without_bom(data: bytes) -> str | None:
    """`data` as UTF-16 without a byte order mark (Windows tools write it so), where its
    start reads as such: a NUL beside every character of Latin script, all on the same
    side (little- or big-endian), and the text it decodes to has no control character
    but line ends and tabs. None for other data with NULs, which is binary."""
    head = data[:8192]
    if len(data) % 2 or len(head) < 2:
        return None
    for order, zeros, other in (("utf-16-le", head[1::2], head[0::2]), ("utf-16-be", head[0::2], head[1::2])):
        if b"\x00" in other or zeros.count(0) < len(zeros) * UTF16_ZERO_SHARE:
            continue
        try:
            text = data.decode(order)
        except UnicodeDecodeError:
            return None
        return None if _CONTROL.search(text) else text
    return None


def convert_text(data: bytes, path: str) -> str:
    return decode_text(data)


def convert_man(data: bytes, path: str) -> str:
    """A manual page's roff source as Markdown; a file only named as one (a rotated
    `syslog.1`) as its text."""
    text = decode_text(data)
    return manpage.page_markdown(text) if manpage.is_page(text) else text


def convert_csv(data: bytes, path: str) -> tuple[str, str]:
    """A Markdown table, the first row its header, short rows padded; and each of its
    lines' place in the file (gnod.lines shifts): a row is where it starts in the file
    (blank lines are no rows, a quoted cell may span lines), and the delimiter row below
    the header is the header's line (search CUST-ZX99 said line 1237 of its row at 1236)."""
    text = decode_text(data)
    if extension(path) == ".tsv":
        delimiter = "\t"
    else:
        try:
            delimiter = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    rows: list[list[str]] = []
    starts: list[int] = []  # the file's line each row starts on
    read = 0
    for r in reader:
        if any(c.strip() for c in r):
            rows.append(r)
            starts.append(read + 1)
        read = reader.line_num
    if not rows:
        return "", ""
    width = max(map(len, rows))

    def line(cells: list[str]) -> str:
        cells = [" ".join(c.split()).replace("|", "\\|") for c in cells] + [""] * (width - len(cells))
        return "| " + " | ".join(cells) + " |"

    table = "\n".join([line(rows[0]), "|" + " --- |" * width, *map(line, rows[1:])]) + "\n"
    return table, lines.shifts([starts[0], starts[0], *starts[1:]])


def convert_json(data: bytes, path: str) -> str:
    """Pretty-printed in a fenced block; JSON that does not parse (comments, JSON Lines)
    is fenced as written rather than lost."""
    text = decode_text(data)
    if not text.strip():
        return ""
    try:
        text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        pass
    return _fenced(text, "json") + "\n"


def convert_ipynb(data: bytes, path: str) -> str:
    """A Jupyter notebook's cells in order: Markdown as written, code fenced in the
    kernel's language, and after a code cell what it printed or gave as text (streams,
    `text/plain` and `text/markdown` results, an error's name and message, then its
    traceback) in an `output` block: an analysis's result is often what its author
    remembers (markitdown left every output out). Pictures and HTML are left out, and each output is cut at
    NOTEBOOK_OUTPUT_CHARS. The notebook's `title` metadata leads as a heading where its
    first cell opens with none."""
    try:
        notebook = json.loads(decode_text(data).lstrip("\ufeff"))
    except (ValueError, RecursionError) as e:
        raise IngestFailure("CORRUPT", f"not a valid notebook: {_describe(e)}") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells", []), list):
        raise IngestFailure("CORRUPT", "not a valid notebook: no list of cells")
    meta: dict = notebook["metadata"] if isinstance(notebook.get("metadata"), dict) else {}
    language = _notebook_language(meta)
    parts: list[str] = []
    for cell in notebook.get("cells", []):
        if not isinstance(cell, dict):
            continue
        source = _joined(cell.get("source"))
        kind = cell.get("cell_type")
        if kind == "markdown":
            parts.append(source)
        elif kind in ("code", "raw"):
            parts.append(_fenced(source, language if kind == "code" else ""))
            outputs = cell.get("outputs") if kind == "code" else None
            shown = [text for out in outputs or () if (text := _output_text(out))]
            if shown:
                parts.append(_fenced("\n".join(shown), "output"))
    markdown = "\n\n".join(p for p in parts if p.strip()) + "\n"
    title = meta.get("title")
    if isinstance(title, str) and title.strip() and not markdown.lstrip().startswith("# "):
        markdown = f"# {title.strip()}\n\n{markdown}"
    return markdown


def _notebook_language(meta: dict) -> str:
    for key in ("language_info", "kernelspec"):
        value = meta.get(key)
        name = value.get("name" if key == "language_info" else "language") if isinstance(value, dict) else None
        if isinstance(name, str) and re.fullmatch(r"[\w+#-]+", name):
            return name.lower()
    return "python"


def _joined(source: object) -> str:
    """A notebook's text: a string, or a list of its lines."""
    if isinstance(source, str):
        return source
    return "".join(s for s in source if isinstance(s, str)) if isinstance(source, list) else ""


def _output_text(out: object) -> str:
    """What a code cell's output shows as text, cut at NOTEBOOK_OUTPUT_CHARS."""
    if not isinstance(out, dict):
        return ""
    kind = out.get("output_type")
    if kind == "stream":
        text = _joined(out.get("text"))
    elif kind in ("execute_result", "display_data"):
        shown: dict = out["data"] if isinstance(out.get("data"), dict) else {}
        text = _joined(shown.get("text/markdown") or shown.get("text/plain"))
    elif kind == "error":  # its name and message, then its frames (a pasted frame finds the cell)
        said = f"{out.get('ename', '')}: {out.get('evalue', '')}".strip(": ")
        tb = out.get("traceback")
        told = "\n".join(t for t in tb if isinstance(t, str)) if isinstance(tb, list) else ""
        frames = _ANSI_ESCAPE.sub("", told).split("\n")
        while frames and frames[-1].strip() in ("", said):  # IPython's last line says it again
            frames.pop()
        text = "\n".join([said, *frames])
    else:
        text = ""
    text = _ANSI_ESCAPE.sub("", text).strip("\n")
    if len(text) > NOTEBOOK_OUTPUT_CHARS:
        text = text[:NOTEBOOK_OUTPUT_CHARS].rsplit("\n", 1)[0] + "\n…"
    return text


def _fenced(body: str, info: str) -> str:
    """`body` in a fence longer than any run of backticks in it."""
    body = body.strip("\n")
    fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", body)), default=0))
    return f"{fence}{info}\n{body}\n{fence}"


# --- rich formats: markitdown, in the helper process ----------------------------------------


def convert_markitdown(converter_class: str, ext: str, data: bytes, path: str) -> str:
    """One markitdown converter, called directly (no MarkItDown(): no magika model load).

    A title found in metadata (dc:title, <title>, a PDF's Info Title, a DOCX's title
    property) becomes a leading `# ` heading when the Markdown does not open with one
    (one further down is a section's), so that heading, else that title, else the name
    is the title; a template's or an application's ("Microsoft Word - doc1.docx",
    "Presentation1") is none. A web page's <title> leads whatever its headings (a saved
    page or bookmark is known by it: "Best hiking trails in the Dolomites" over its
    `<h1>Hiking the Dolomites`).
    """
    try:
        import markitdown.converters as mc
        from markitdown import MissingDependencyException, StreamInfo
    except ImportError:
        raise IngestFailure("UNSUPPORTED", "markitdown is not installed") from None
    if converter_class == "HtmlConverter":  # our decoding: BOMs, the page's or a legacy charset, NUL → BINARY
        data, charset = decode_text(data, declared_charset(data)).encode("utf-8"), "utf-8"
    else:
        charset = None
    info = StreamInfo(extension=ext, filename=os.path.basename(path), charset=charset)
    options = {"style_map": _DOCX_STYLES} if converter_class == "DocxConverter" else {}
    try:
        result = getattr(mc, converter_class)().convert(io.BytesIO(data), info, **options)
    except MissingDependencyException:
        raise IngestFailure("UNSUPPORTED", f"markitdown lacks the dependencies for {ext} files") from None
    except Exception as e:
        if type(e).__name__ in _PASSWORD_ERRORS:
            raise IngestFailure("ENCRYPTED", "password-protected PDF") from None
        raise
    markdown = result.markdown or ""
    if converter_class == "XlsxConverter":
        markdown = _FLOAT_CELL_RE.sub(r"\1\2", _NAN_CELL_RE.sub("", markdown))  # pandas' empty cells, floats
        # A cell's `_` as written (`store_id`: passages showed `store\_id`); a table cell's
        # word is no emphasis, which is all markdownify's escape was for.
        markdown = markdown.replace("\\_", "_")
    if converter_class == "DocxConverter":
        markdown = _EMPTY_HEADER_RE.sub(lambda m: f"{m[2]}\n{m[1]}", markdown)
    if converter_class == "PptxConverter":
        markdown = _slides(markdown)
    if converter_class == "PdfConverter":
        markdown = _paged(markdown if "\f" in markdown else _form_pages(data) or markdown)
    title = " ".join((result.title or _METADATA_TITLE.get(converter_class, lambda _d: "")(data)).split())
    if not _plausible_title(title, path):
        title = ""
    if title and markdown.strip():
        if converter_class == "HtmlConverter":
            lead = (extract_title({}, markdown, "") or "").casefold() != title.casefold()
        else:  # a heading further down is a section's
            lead = not markdown.lstrip().startswith("# ")
        if lead:
            markdown = f"# {title}\n\n{markdown}"
    return markdown


# Word's own title and subtitle styles as headings (mammoth left them paragraphs, and the
# first `Heading 1` below them titled the document).
_DOCX_STYLES = "p[style-name='Title'] => h1:fresh\np[style-name='Subtitle'] => h2:fresh"
# markitdown marks each slide so, then gives its title as a heading (_slides).
_SLIDE_NUMBER_RE = re.compile(r"^<!-- Slide number: (\d+) -->\n?", re.M)
# Metadata titles that name no document: a template's, an application's default, a file name.
_TEMPLATE_TITLE_RE = re.compile(
    r"^(?:microsoft (?:word|powerpoint|excel) - |untitled\b|(?:document|presentation|slide)\s*\d*$)"
    r"|\.(?:docx?|pdf|pptx?|xlsx?|odt|rtf|tex|dvi|ps|indd)$",
    re.I,
)
CORE_XML_MAX_BYTES = 1 << 20  # a DOCX's docProps/core.xml read for its title, at most


def _plausible_title(title: str, path: str) -> bool:
    """Whether a metadata title names the document (not "Microsoft Word - doc1.docx",
    "Untitled", "Presentation1" or the file's own name)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return (
        len(title) >= 3
        and any(c.isalpha() for c in title)
        and not _TEMPLATE_TITLE_RE.search(title)
        and title.casefold() != stem.casefold()
    )


def _slides(markdown: str) -> str:
    """A deck's slides as sections named by their numbers and titles (`## Slide 4:
    Results`, `## Slide 5` for one without a title), its speaker notes as `### Slide 4
    notes`, under its first slide's title: the numbers were dropped (the marker's words
    were indexed: "slide number" found every deck first), so a hit could not be cited by
    its slide, a slide without a title ran into the one before, and three slides titled
    Results were one section."""
    parts = _SLIDE_NUMBER_RE.split(markdown)
    if len(parts) < 3:
        return markdown
    out = [parts[0].strip()] if parts[0].strip() else []
    deck = None
    for number, body in zip(parts[1::2], parts[2::2]):
        lines = body.strip("\n").split("\n")
        first = next((i for i, line in enumerate(lines) if line.strip()), None)
        title = lines[first][2:].strip() if first is not None and lines[first].startswith("# ") else ""
        if title and first is not None:
            lines[first] = f"## Slide {number}: {title}"
        else:
            lines.insert(0, f"## Slide {number}")
        deck = title if deck is None else deck
        out.append("\n".join(f"### Slide {number} notes" if line.strip() == "### Notes:" else line for line in lines))
    return (f"# {deck}\n\n" if deck else "") + "\n\n".join(part.strip() for part in out) + "\n"


def _pdf_title(data: bytes) -> str:
    """The PDF's Info `Title` (markitdown reads only its text), or ""."""
    from pdfminer.pdfdocument import PDFDocument
    from pdfminer.pdfparser import PDFParser
    from pdfminer.pdftypes import resolve1
    from pdfminer.utils import decode_text

    try:
        for info in PDFDocument(PDFParser(io.BytesIO(data))).info:
            title = resolve1(info.get("Title"))
            if isinstance(title, bytes):
                return decode_text(title)
            if isinstance(title, str):
                return title
    except Exception:  # a damaged Info dictionary: the text was read, the title is not needed
        return ""
    return ""


def _docx_title(data: bytes) -> str:
    """The DOCX's document property `title` (docProps/core.xml's dc:title), or ""."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            if z.getinfo("docProps/core.xml").file_size > CORE_XML_MAX_BYTES:
                return ""
            core = z.read("docProps/core.xml").decode("utf-8", "replace")
    except (KeyError, zipfile.BadZipFile, OSError):
        return ""
    m = re.search(r"<dc:title>(.*?)</dc:title>", core, re.S)
    return html.unescape(m[1]) if m else ""


_METADATA_TITLE: dict[str, Callable[[bytes], str]] = {"PdfConverter": _pdf_title, "DocxConverter": _docx_title}


def _markitdown(
    name: str, converter_class: str, signature: str | None, max_bytes: int = MAX_DOCUMENT_BYTES
) -> Converter:
    exts = CONVERTED[name]
    return Converter(
        name=name,
        convert=partial(convert_markitdown, converter_class, exts[0]),
        extensions=frozenset(exts),
        signatures=frozenset({signature} if signature else ()),
        max_bytes=max_bytes,
        isolated=True,
        allow_empty=False,
    )


# --- OpenDocument text and RTF ------------------------------------------------------------


def convert_odt(data: bytes, path: str) -> str:
    """An OpenDocument text (LibreOffice's .odt) as odfdo writes it in Markdown: its
    headings, lists and tables; titled by its metadata title where it has one."""
    import odfdo

    try:
        doc = odfdo.Document(io.BytesIO(data))
        markdown = doc.to_markdown()
        title = _odf_title(data)
    except Exception as e:  # lxml's and zipfile's errors, a member missing: no valid document
        raise IngestFailure("CORRUPT", f"not a readable OpenDocument text: {type(e).__name__}: {e}"[:300]) from None
    if not isinstance(markdown, str):  # a spreadsheet's tables: not an .odt's
        raise IngestFailure("UNSUPPORTED", "an OpenDocument spreadsheet named .odt")
    if title and markdown.strip() and _plausible_title(title, path) and not markdown.lstrip().startswith("# "):
        markdown = f"# {title}\n\n{markdown}"
    return markdown


def _odf_title(data: bytes) -> str:
    """The title in an OpenDocument's metadata (odfdo reads it from a file on disk only)."""
    from xml.etree import ElementTree

    with zipfile.ZipFile(io.BytesIO(data)) as z:
        if "meta.xml" not in z.namelist():
            return ""
        found = ElementTree.fromstring(z.read("meta.xml")).find(".//{http://purl.org/dc/elements/1.1/}title")
    return " ".join((found.text or "").split()) if found is not None else ""


def convert_rtf(data: bytes, path: str) -> str:
    """A Rich Text Format file's text, its control words dropped and its escaped letters
    (`\\'f6`, `\\u246?`) read: it was indexed as its markup (`{\\rtf1\\ansi{\\fonttbl…`)."""
    from striprtf.striprtf import rtf_to_text

    text = data.decode("latin-1")  # RTF is 7-bit: its other letters are escapes, in its code page
    m = _RTF_CODE_PAGE.search(text[:2048])
    try:
        return rtf_to_text(text, encoding=f"cp{m[1]}" if m else "cp1252", errors="replace")
    except LookupError:  # a code page Python has no codec for
        return rtf_to_text(text, errors="replace")


_RTF_CODE_PAGE = re.compile(r"\\ansicpg(\d+)")


# --- transcripts and calendars (gnod.ingest.media) ----------------------------------------


def convert_media(render: Callable[[str], str], what: str, data: bytes, path: str) -> str:
    """A transcript or calendar: a file its parser refuses is CORRUPT, one without `what` EMPTY."""
    try:
        markdown = render(decode_text(data))
    except ValueError as e:
        raise IngestFailure("CORRUPT", str(e)[:300]) from None
    if not markdown.strip():
        raise IngestFailure("EMPTY", f"no {what} in this file")
    return markdown


def _media(name: str, render: Callable[[str], str], what: str, isolated: bool) -> Converter:
    return Converter(name, partial(convert_media, render, what), frozenset(CONVERTED[name]), isolated=isolated)


# --- e-mail (gnod.ingest.mail) ------------------------------------------------------------------


def convert_mail(data: bytes, path: str, language: str | None = None) -> str:
    """One message: its HTML body and attachments through this registry, in process (the
    ones that need the helper get it from here)."""
    return mail.to_markdown(data, partial(convert, language=language))


def convert_outlook(data: bytes, path: str, language: str | None = None) -> str:
    """An Outlook .msg: read into its MIME message in the helper, then converted as an .eml."""
    return convert_mail(_ISOLATOR.run(mail.outlook_to_mime, data, path, CONVERT_TIMEOUT_S), path, language)


# --- scans and images: OCR (gnod.ingest.ocr), in the helper process ---------------------------


def convert_pdf(data: bytes, path: str, language: str | None = None, ocr_later: bool = False) -> str:
    """markitdown's text layer (its pages as sections: _paged); a PDF without one (a scan)
    is OCRed instead."""
    text = convert_markitdown("PdfConverter", ".pdf", data, path)
    return text if text.strip() else _ocr(ocr.ocr_pdf, data, language, ocr_later)


def _paged(text: str) -> str:
    """A PDF's text layer of two pages or more with each page under `## Page N`, as a
    scan's are (a hit says which page to cite; pdfminer ends each with a form feed)."""
    pages = text.removesuffix("\f").split("\f")
    return ocr.paged([page.strip() for page in pages], len(pages)) if len(pages) > 1 else text


def _form_pages(data: bytes) -> str | None:
    """The text of a PDF that markitdown read with pdfplumber (a page of it looks like a
    table or a form), each page ended with a form feed as pdfminer ends them: markitdown
    joins the pages it read so with blank lines and leaves out empty ones, so the pages
    were lost (a paper with a table of results had no `Page N` to cite). Read page by
    page as markitdown reads them (its table and form layout); None where this
    markitdown has no such reading of a page (a later version's), or where pdfplumber
    fails on the file (markitdown's own reading of it stands then)."""
    import pdfplumber
    from markitdown.converters import _pdf_converter as reader

    form = getattr(reader, "_extract_form_content_from_words", None)
    merged = getattr(reader, "_merge_partial_numbering_lines", lambda text: text)
    if form is None:
        return None
    pages = []
    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            for page in pdf.pages:
                content = form(page)
                pages.append(merged((content if content is not None else page.extract_text() or "").strip()))
                page.close()
    except Exception:  # as markitdown falls back from pdfplumber, whatever it raised
        return None
    return "".join(f"{text}\f" for text in pages)


def convert_image(data: bytes, path: str, language: str | None = None, ocr_later: bool = False) -> str:
    return _ocr(ocr.ocr_image, data, language, ocr_later)


def _ocr(read: Callable[[bytes, str | None, bool], str], data: bytes, language: str | None, later: bool) -> str:
    try:
        return read(data, language, later)
    except ocr.OcrFailure as f:
        raise IngestFailure(f.code, f.reason) from None


def builtin_converters() -> list[Converter]:
    """A fresh list of the built-in converters, in priority order."""
    return [
        Converter("text", convert_text, frozenset(TEXT_EXTENSIONS)),
        _markitdown("html", "HtmlConverter", "html", MAX_TEXT_BYTES),
        replace(
            _markitdown("pdf", "PdfConverter", "pdf"), convert=convert_pdf, takes_language=True, reads_pictures=True
        ),
        _markitdown("docx", "DocxConverter", "docx"),
        Converter("odt", convert_odt, frozenset(CONVERTED["odt"]), frozenset({"odt"}), MAX_DOCUMENT_BYTES, True, False),
        Converter("rtf", convert_rtf, frozenset(CONVERTED["rtf"]), max_bytes=MAX_DOCUMENT_BYTES, allow_empty=False),
        _markitdown("xlsx", "XlsxConverter", "xlsx"),
        _markitdown("pptx", "PptxConverter", "pptx"),
        _markitdown("epub", "EpubConverter", "epub"),
        Converter("csv", convert_csv, frozenset(CONVERTED["csv"]), lines=True),
        Converter("json", convert_json, frozenset(CONVERTED["json"])),
        Converter("ipynb", convert_ipynb, frozenset(CONVERTED["ipynb"])),
        # Isolated: srt's regex backtracks for minutes on a long run of digits or blanks.
        _media("srt", media.srt_markdown, "subtitles", isolated=True),
        # In-process: webvtt-py reads line by line in linear time (about 3 MB/s).
        _media("vtt", media.vtt_markdown, "cues", isolated=False),
        # Isolated: icalendar is linear but slow (under 1 MB/s): the deadline bounds it, off the daemon's GIL.
        _media("ics", media.calendar_markdown, "events or to-dos", isolated=True),
        # In-process: the stdlib parser with each header cut short stays linear.
        Converter("eml", convert_mail, frozenset(CONVERTED["eml"]), takes_language=True),
        Converter(
            "msg",
            convert_outlook,
            frozenset(CONVERTED["msg"]),
            frozenset({"ole"}),
            MAX_DOCUMENT_BYTES,
            takes_language=True,
        ),
        Converter(
            "image",
            convert_image,
            frozenset(CONVERTED["image"]),
            frozenset({"image"}),
            max_bytes=MAX_DOCUMENT_BYTES,
            isolated=True,
            takes_language=True,
            reads_pictures=True,
        ),
        Converter("man", convert_man, MAN_EXTENSIONS),
        # Last: names nobody claims (Makefile, .log under an include glob) are read as text.
        Converter("other", convert_text, frozenset({"*"})),
    ]


# --- the helper process ---------------------------------------------------------------------


class _Isolator:
    """Runs conversions in one helper process per converting process, with a deadline.

    A thread cannot be interrupted and `signal.alarm` only works on the main thread, but
    conversions run on the daemon's writer thread or in pool workers. A process can be
    killed: past the deadline (or when it crashes) the helper is killed and the file
    fails, and the next file starts a fresh helper. Keeping one warm helper avoids paying
    markitdown's ~2 s import per file; it exits by itself after HELPER_IDLE_S unused, or
    when its parent dies (its pipe closes). The helper is a plain `python -c`, not a
    multiprocessing child, so it never re-imports the parent's `__main__`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._conn: tuple[Connection, Connection] | None = None  # (to helper, from helper)
        self._last_used = 0.0

    def run(self, fn: Callable[[bytes, str], T], data: bytes, path: str, timeout: float) -> T:
        with self._lock:
            send, recv = self._ready()
            try:
                send.send((fn, data, path))
                reply = recv.recv() if recv.poll(timeout) else None
            except (EOFError, OSError):
                status = self._stop()
                raise IngestFailure("CORRUPT", f"the converter process died (exit status {status})") from None
            if reply is None:
                self._stop()
                raise IngestFailure("TIMEOUT", f"conversion took longer than {timeout:g} s")
            self._last_used = time.monotonic()
        if reply[0] == "ok":
            return reply[1]
        raise IngestFailure(reply[1], reply[2])

    def _ready(self) -> tuple[Connection, Connection]:
        """The live helper's pipes, starting a helper if there is none or it may be idling out."""
        fresh = time.monotonic() - self._last_used < HELPER_IDLE_S / 2
        if self._conn is not None and self._proc is not None and self._proc.poll() is None and fresh:
            return self._conn
        self._stop()
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        try:
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-P",  # not the working directory's modules (gnoctl.client.start_daemon)
                    "-c",
                    f"import sys; sys.path.insert(0, {_SOURCE_ROOT!r}); "
                    f"from gnod.ingest.convert import serve; serve({down_r}, {up_w})",
                ],
                pass_fds=(down_r, up_w),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
            )
        except BaseException:
            for fd in (down_w, up_r):
                os.close(fd)
            raise
        finally:
            os.close(down_r)
            os.close(up_w)
        self._conn = Connection(down_w, readable=False), Connection(up_r, writable=False)
        try:
            self._conn[0].send(sys.path)  # so pickled functions resolve as they do here
            started = self._conn[1].poll(HELPER_START_S) and self._conn[1].recv() == "ready"
        except (EOFError, OSError):
            started = False
        if not started:
            status = self._stop()
            raise IngestFailure("TIMEOUT", f"the converter process did not start (exit status {status})")
        self._last_used = time.monotonic()
        return self._conn

    def _stop(self) -> int | None:
        proc, conn, self._proc, self._conn = self._proc, self._conn, None, None
        for c in conn or ():
            c.close()
        if proc is None:
            return None
        if proc.poll() is None:
            proc.kill()
        return proc.wait()


def serve(down_fd: int, up_fd: int) -> None:
    """The helper's loop: (fn, data, path) in, ("ok", markdown) or ("fail", code, reason) out."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is for the daemon
    logging.disable(logging.WARNING)  # pdfminer and friends warn about every odd PDF
    warnings.simplefilter("ignore")
    down, up = Connection(down_fd, writable=False), Connection(up_fd, readable=False)
    try:
        sys.path[:] = down.recv()
        try:
            import markitdown.converters  # noqa: F401  (warm up here, not on the first file's clock)
        except ImportError:
            pass
        up.send("ready")
        while down.poll(HELPER_IDLE_S):
            up.send(_handle(down.recv_bytes()))
    except (EOFError, OSError):
        pass  # the parent is gone


def _handle(request: bytes) -> tuple:
    try:
        fn, data, path = pickle.loads(request)
        return ("ok", fn(data, path))
    except IngestFailure as f:
        return ("fail", f.code, f.reason)
    except Exception as e:
        return ("fail", "CORRUPT", _describe(e))


_ISOLATOR = _Isolator()
DEFAULT_REGISTRY = Registry(builtin_converters())


def convert(data: bytes, path: str, language: str | None = None, ocr_later: bool = False) -> str:
    """Markdown for one file through the default registry, or IngestFailure."""
    return DEFAULT_REGISTRY.convert(data, path, language, ocr_later)


def convert_lines(data: bytes, path: str, language: str | None = None, ocr_later: bool = False) -> tuple[str, str]:
    """Markdown for one file and its lines' places in it (Registry.convert_lines)."""
    return DEFAULT_REGISTRY.convert_lines(data, path, language, ocr_later)


_MAIL_EXTENSIONS = frozenset(CONVERTED["eml"] + CONVERTED["msg"])


def prose(markdown: str, path: str) -> str:
    """What the language of the Markdown `path` was converted to is detected in: a mail's
    or a calendar's without what gno writes of it in English (mail.prose, media.calendar_prose)."""
    ext = extension(uncompressed(path))
    if ext in _MAIL_EXTENSIONS:
        return mail.prose(markdown)
    if ext in CONVERTED["ics"]:
        return media.calendar_prose(markdown)
    return markdown
