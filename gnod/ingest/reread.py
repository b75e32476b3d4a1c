"""Files read again after an upgrade: where gno now reads a kind of file otherwise (its
frontmatter, its title), the documents read by older rules (documents.read_rules, each
as the gno that read it last) are marked changed when the index is opened, and the
rescan that follows every start reads them from disk again. Their stored text cannot
give back what the old reading dropped (a web page's <title>); what comes out the same
as before is kept as it was (content is stored by its hash). Titles alone are taken
again from what is stored (gnod.ingest.titles)."""

from __future__ import annotations

import re
from typing import NamedTuple

import apsw

from gnod.config import (
    CODE_EXTENSIONS,
    COMPRESSED_SUFFIX,
    CONVERTED,
    MAN_EXTENSIONS,
    MEMBER_SEP,
    PROSE_EXTENSIONS,
    TABLE_EXTENSIONS,
    TEXT_EXTENSIONS,
    extension,
)
from gnod.ingest.charsets import in_runs
from gnod.store import documents as store
from gnod.text.headings import MARKDOWN_EXTENSIONS
from gnod.text.org import ORG_EXTENSIONS


class Reading(NamedTuple):
    """A change in how some files are read, from READ_RULES `since` on."""

    since: int
    extensions: frozenset[str]  # the files it reads otherwise
    framed: bool = False  # only those an older gno read with frontmatter (content.body_line > 1)
    # Only those an older gno read as Latin-1 that read otherwise now (_read_otherwise).
    latin: bool = False
    # Not those whose text OCR read (_scanned): their reading is the same, and costs seconds a page.
    unscanned: bool = False
    # Only the files of those kinds that failed (another try): those read are read the same.
    failed_only: bool = False


LEGACY_TEXT_KINDS = ("html", "csv", "json", "srt", "vtt", "ics")  # converted from text (convert.decode_text)
READINGS = (
    # TOML's +++ frontmatter is read (Hugo; Zola, its [taxonomies] too); a YAML value's unclosed
    # quote is not kept in it.
    Reading(2, frozenset(PROSE_EXTENSIONS)),
    # A web page is titled by its <title>, before its own <h1>.
    Reading(2, frozenset(CONVERTED["html"])),
    # Code has no frontmatter: the first of a YAML file's documents was read as a note's.
    Reading(2, CODE_EXTENSIONS, framed=True),
    # A text not in UTF-8 is read in its legacy charset (gnod.ingest.charsets), not as Latin-1.
    Reading(3, frozenset(TEXT_EXTENSIONS).union(*(CONVERTED[k] for k in LEGACY_TEXT_KINDS)), latin=True),
    # A PDF's Info title and a DOCX's title property or Title style title them; a PDF's
    # text layer is in `## Page N` sections, as a scan's pages are; a slide's
    # `<!-- Slide number: N -->` is no text of a deck.
    Reading(4, frozenset().union(*(CONVERTED[k] for k in ("pdf", "docx", "pptx"))), unscanned=True),
    # A message's headers in raw UTF-8 (RFC 6532) keep their letters: `Jörg Schäfer`, not `Jrg Schfer`.
    Reading(5, frozenset().union(*(CONVERTED[k] for k in ("eml", "msg")))),
    # A Markdown note's `#tags` in its text are tags of it.
    Reading(5, MARKDOWN_EXTENSIONS),
    # A notebook's outputs are text of it.
    Reading(5, frozenset(CONVERTED["ipynb"])),
    # A text in UTF-16 without a byte order mark is read (it failed as binary).
    Reading(5, frozenset(TEXT_EXTENSIONS).union(*(CONVERTED[k] for k in LEGACY_TEXT_KINDS)), failed_only=True),
    # A PDF a page of which markitdown reads as a table keeps its `## Page N` sections;
    # a deck's slides are sections by their numbers (`## Slide 4: Results`).
    Reading(6, frozenset(CONVERTED["pdf"] + CONVERTED["pptx"]), unscanned=True),
    # An OpenDocument text is read (it failed as an unsupported zip), an RTF file's text
    # (it was its markup, where an `also` glob took it).
    Reading(6, frozenset(CONVERTED["odt"] + CONVERTED["rtf"])),
    # A table's language is a guess, which its collection's dominant language settles; a
    # Word table without a header row has its first row for header, not an empty one.
    Reading(6, TABLE_EXTENSIONS | frozenset(CONVERTED["docx"])),
    # A gzip file is read as the file it holds (it failed as binary); a manual page as
    # Markdown, not as its roff source (`\fBProtectSystem\fR` was the word fbprotectsystem).
    Reading(7, frozenset({COMPRESSED_SUFFIX}) | MAN_EXTENSIONS),
    # An Org file's #+TITLE, #+DATE and tags (#+FILETAGS, its headlines') are read; its `# ` lines are comments.
    Reading(8, ORG_EXTENSIONS),
    # A calendar of one event is titled and dated by it; a calendar's and a mail's language is
    # detected without the labels gno writes in English (`When:`, `**From:**`).
    Reading(9, frozenset().union(*(CONVERTED[k] for k in ("ics", "eml", "msg")))),
    # A spreadsheet's numbers in a column with an empty cell are as the sheet shows them (4100, not 4100.0).
    Reading(9, frozenset(CONVERTED["xlsx"])),
    # A note's `tags: meeting urgent` is two tags (Obsidian's), and its older `tag:` key is read.
    Reading(10, MARKDOWN_EXTENSIONS, framed=True),
    # A CSV or TSV table's rows are numbered as its file's lines (the delimiter row counted one).
    Reading(11, frozenset(CONVERTED["csv"])),
    # A notebook's error output holds its traceback's frames, not its name and message alone.
    Reading(11, frozenset(CONVERTED["ipynb"])),
    # A spreadsheet's words keep their `_` (`store_id`, where markdownify wrote `store\_id`).
    Reading(11, frozenset(CONVERTED["xlsx"])),
)
_C1 = re.compile("[\\x80-\\x9f]")
# The rules files are read by now: the last Reading's `since`.
READ_RULES = max(r.since for r in READINGS)
_FAILED_KEY = "failures_read_rules"  # schema_meta: the READ_RULES the failed files were last tried by


def mark(conn: apsw.Connection) -> int:
    """Mark what older rules read, for the next walk to read again: the documents a
    later Reading reads otherwise, a container holding one (read whole), and the failed
    files of such kinds (another try); the other documents are recorded as read by
    today's rules. Returns how many documents were marked. Call inside a transaction."""
    due: list[int] = []
    same: list[int] = []
    files: set[tuple[int, str]] = set()
    for doc_id, cid, rel, body_line, rules, content_id in store.read_before(conn, READ_RULES):
        ext = extension(rel)
        due_by = [
            r
            for r in READINGS
            if r.since > rules and ext in r.extensions and (body_line > 1 or not r.framed) and not r.failed_only
        ]
        if any(r.unscanned for r in due_by) and _scanned(store.stored_utf8(conn, content_id)):
            due_by = [r for r in due_by if not r.unscanned]
        if any(not r.latin for r in due_by) or (due_by and _read_otherwise(store.stored_utf8(conn, content_id))):
            due.append(doc_id)
            if MEMBER_SEP in rel:
                files.add((cid, rel.split(MEMBER_SEP, 1)[0]))
        else:
            same.append(doc_id)
    tried = int(store.meta_value(conn, _FAILED_KEY) or 1)
    if tried < READ_RULES:  # once per rules: the failures are not read at every start
        for cid, rel in store.failed_paths(conn):
            if any(r.since > tried and extension(rel) in r.extensions for r in READINGS if not r.framed):
                files.update({(cid, rel), (cid, rel.split(MEMBER_SEP, 1)[0])})
        store.set_meta_value(conn, _FAILED_KEY, str(READ_RULES))
    store.read_again(conn, due, sorted(files))
    store.read_by(conn, same, READ_RULES)
    return len(due)


def _scanned(stored: bytes) -> bool:
    """Whether a text (its stored UTF-8) is what OCR read of pages (gnod.ingest.ocr), as
    read by rules before 4: from then on a PDF's text layer is in `## Page N` sections
    too, and a later reading must tell the two apart otherwise."""
    return stored.startswith(b"## Page 1\n")


def _read_otherwise(stored: bytes) -> bool:
    """Whether a text (`stored`: its stored text's UTF-8) that an older gno may have read
    as Latin-1 reads otherwise now (charsets.decode_legacy): it holds a C1 control
    (windows-1252's quotes and dashes, as Latin-1 read them), or its Latin-1 letters
    come in runs (another script's bytes). Most texts hold no such letter at all: their
    UTF-8 has none of the two lead bytes they take."""
    if b"\xc2" not in stored and b"\xc3" not in stored:
        return False
    text = stored.decode("utf-8", "surrogatepass")
    return _C1.search(text) is not None or in_runs(text.encode("latin-1", "ignore"))
