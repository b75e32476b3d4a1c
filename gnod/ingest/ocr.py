"""Text from images and scanned PDF pages, through Tesseract's `tesseract` command.

The CLI directly, not pytesseract: that wrapper runs the same command through temporary
files and adds nothing we need; one call with the picture on stdin and the text on
stdout does. Runs in the converter helper (gnod.ingest.convert wraps these functions
as converters), so under its deadline; Pillow and pypdfium2, which markitdown's PDF
support already installs, are imported there only. The daemon itself only asks
`installed()` for `status` and `doctor`.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import time

from gnod.text.language import detect_language

FIX = "apt-get install tesseract-ocr (macOS: brew install tesseract)"
# Smaller pictures (icons, bullets, spacers) hold no text worth reading: empty documents,
# without running Tesseract (a code repository has many).
MIN_PIXELS = 64 * 64
MAX_PAGES = 50  # of a scanned PDF or a multi-page TIFF; the rest is left unread, and said so
PDF_DPI = 300  # what Tesseract is trained for
MAX_PAGE_PIXELS = 40_000_000  # a poster-sized page is rendered at a lower resolution (A2 at 300 dpi fits)
# Tesseract is stopped this long after OCR starts, before the helper's own deadline
# (convert.CONVERT_TIMEOUT_S, 60 s) kills the helper and would orphan it; a PDF keeps the
# pages read by then.
OCR_TIMEOUT_S = 50.0
INSTALLED_TTL_S = 60.0  # `installed()` is asked per file and per status: re-checked after this
# The code of the OcrFailure that `later=True` raises where Tesseract would start: the
# document is indexed by its name now and read by gnod's OCR backlog (gnod.server.ocr).
LATER = "OCR_LATER"
# Snowball names (a collection's `language`) → Tesseract's language codes.
TESSERACT_CODES = {
    "arabic": "ara",
    "armenian": "hye",
    "basque": "eus",
    "catalan": "cat",
    "czech": "ces",
    "danish": "dan",
    "dutch": "nld",
    "english": "eng",
    "esperanto": "epo",
    "estonian": "est",
    "finnish": "fin",
    "french": "fra",
    "german": "deu",
    "greek": "ell",
    "hindi": "hin",
    "hungarian": "hun",
    "indonesian": "ind",
    "irish": "gle",
    "italian": "ita",
    "lithuanian": "lit",
    "nepali": "nep",
    "norwegian": "nor",
    "persian": "fas",
    "polish": "pol",
    "portuguese": "por",
    "romanian": "ron",
    "russian": "rus",
    "serbian": "srp",
    "spanish": "spa",
    "swedish": "swe",
    "tamil": "tam",
    "turkish": "tur",
    "yiddish": "yid",
}
_HEADING_RE = re.compile(r"^(\s*)#", re.M)
_installed: dict[str, tuple[float, tuple[str, str, tuple[str, ...]]]] = {}


class OcrFailure(Exception):
    """NEEDS_OCR, TIMEOUT, EMPTY or LATER; gnod.ingest.convert makes it an IngestFailure."""

    def __init__(self, code: str, what: str, fix: str = "") -> None:
        self.code, self.what, self.fix = code, what, fix
        self.reason = f"{what}: {fix}" if fix else what
        super().__init__(self.reason)


def tesseract() -> str | None:
    """The `tesseract` command on PATH, if any."""
    return shutil.which("tesseract")


def installed() -> tuple[str, str, tuple[str, ...]]:
    """(path, version, language codes) of the `tesseract` on PATH, or OcrFailure NEEDS_OCR."""
    exe = tesseract()
    if exe is None:
        raise OcrFailure("NEEDS_OCR", "Tesseract (OCR) is not installed", FIX)
    seen = _installed.get(exe)
    if seen is not None and time.monotonic() - seen[0] < INSTALLED_TTL_S:
        return seen[1]
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10)
        version = (out.stdout or out.stderr).partition("\n")[0].strip()
        listed = subprocess.run([exe, "--list-langs"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        raise OcrFailure("NEEDS_OCR", f"Tesseract ({exe}) does not run ({e})", FIX) from None
    # "List of available languages in "/usr/share/tesseract-ocr/5/tessdata/" (4):", then a code per line.
    languages = tuple(sorted({c.strip() for c in listed.splitlines()[1:] if c.strip()} - {"osd"}))
    if not languages:
        raise OcrFailure("NEEDS_OCR", "Tesseract has no language data", "apt-get install tesseract-ocr-eng")
    result = (exe, version, languages)
    _installed[exe] = (time.monotonic(), result)
    return result


def tesseract_language(language: str | None, available: tuple[str, ...]) -> str:
    """The document's language as Tesseract's code when its data is installed, else English."""
    code = TESSERACT_CODES.get(language or "", "eng")
    if code in available:
        return code
    return "eng" if "eng" in available else available[0]


def ocr_image(data: bytes, language: str | None = None, later: bool = False) -> str:
    """The text of a picture (each page of a multi-page TIFF under `## Page N`); "" for an
    icon-sized one. Decoded by Pillow (transparency onto white, any mode to grey)."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        if im.width * im.height < MIN_PIXELS:
            return ""
        ocr = _Ocr(language, later)
        frames = getattr(im, "n_frames", 1) if im.format == "TIFF" else 1
        dpi = im.info.get("dpi")
        texts: list[str] = []
        for i in range(min(frames, MAX_PAGES)):
            im.seek(i)
            try:
                page = (_pgm(im), int(dpi[0]) if dpi and dpi[0] >= 70 else None)
                texts.append(ocr.read(*page, partial=True) if i else ocr.read_first(*page))
            except _Stopped:
                return paged(texts, frames, f"its {OCR_TIMEOUT_S:g} s limit")
    return texts[0] if frames == 1 else paged(texts, frames)


def ocr_pdf(data: bytes, language: str | None = None, later: bool = False) -> str:
    """The text of a PDF without a text layer, page by page at PDF_DPI. Blank pages (no
    drawing at all) are skipped without Tesseract; a document of only those stays EMPTY."""
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(data)
    try:
        total = len(doc)
        drawn = [i for i in range(min(total, MAX_PAGES)) if pdfium.raw.FPDFPage_CountObjects(doc[i])]
        if not drawn:
            return ""
        ocr = _Ocr(language, later)
        texts = [""] * min(total, MAX_PAGES)
        for i in drawn:
            width, height = doc[i].get_size()  # in points, 72 an inch
            scale = min(PDF_DPI / 72, (MAX_PAGE_PIXELS / max(1.0, width * height)) ** 0.5)
            bitmap = doc[i].render(scale=scale, grayscale=True)
            try:
                page = (_pgm(bitmap.to_pil()), round(72 * scale))
                texts[i] = ocr.read(*page, partial=True) if i > drawn[0] else ocr.read_first(*page)
            except _Stopped:
                return paged(texts[:i], total, f"its {OCR_TIMEOUT_S:g} s limit")
    finally:
        doc.close()
    if not any(texts):
        raise OcrFailure("EMPTY", f"a scanned PDF, but OCR found no text on its {len(drawn)} page(s)")
    return paged(texts, total)


class _Stopped(Exception):
    """Tesseract ran out of time on a page after others were read: keep those."""


class _Ocr:
    """Tesseract for one document: its language chosen once, one deadline for all pages.
    `later`: only check that Tesseract is there (NEEDS_OCR otherwise), then raise LATER."""

    def __init__(self, language: str | None, later: bool = False) -> None:
        self.exe, _, self.available = installed()
        if later:
            raise OcrFailure(LATER, "its text is read by OCR in the background")
        self.lang = tesseract_language(language, self.available)
        self.given = language is not None  # the collection's language: read in it, not guessed
        self.deadline = time.monotonic() + OCR_TIMEOUT_S

    def read_first(self, pgm: bytes, dpi: int | None) -> str:
        """The first page. Where no language was given, it is read again, and the pages
        after it read, in the language its first reading is in when Tesseract has that
        language's data: English data reads a French receipt's REÇU as RECU, and ß as
        something else."""
        text = self.read(pgm, dpi)
        if self.given:
            return text
        code = TESSERACT_CODES.get(detect_language(text) or "", self.lang)
        if code == self.lang or code not in self.available:
            return text
        self.lang = code
        return self.read(pgm, dpi)

    def read(self, pgm: bytes, dpi: int | None, partial: bool = False) -> str:
        cmd = [self.exe, "stdin", "stdout", "-l", self.lang, *(["--dpi", str(dpi)] if dpi else [])]
        # One thread: OpenMP's spinning threads made a page 5x slower on a busy 2-core machine.
        env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
        try:
            r = subprocess.run(
                cmd, input=pgm, capture_output=True, env=env, timeout=max(0.1, self.deadline - time.monotonic())
            )
        except subprocess.TimeoutExpired:
            if partial:
                raise _Stopped from None
            raise OcrFailure("TIMEOUT", f"OCR took longer than {OCR_TIMEOUT_S:g} s") from None
        if r.returncode != 0:
            raise RuntimeError(f"tesseract failed: {r.stderr.decode(errors='replace').strip()[-300:]}")
        text = r.stdout.decode("utf-8", "replace").replace("\x0c", "").strip()
        return _HEADING_RE.sub(r"\1\\#", text)  # a line read as `# …` is text, not a heading (a title)


def _pgm(im) -> bytes:
    """A Pillow image as binary PGM: what Tesseract reads from stdin fastest, in any build."""
    from PIL import Image

    if im.mode in ("RGBA", "LA", "PA") or "transparency" in im.info:
        im = Image.alpha_composite(Image.new("RGBA", im.size, "white"), im.convert("RGBA"))
    out = io.BytesIO()
    im.convert("L").save(out, "PPM")
    return out.getvalue()


def paged(texts: list[str], total: int, why: str = "") -> str:
    """Each page's text under `## Page N` (a scan's, a PDF's text layer), and a last line
    naming the pages OCR left unread."""
    parts = [f"## Page {n}\n\n{text}" for n, text in enumerate(texts, 1) if text]
    if len(texts) < total:
        left = f"Page {total} was" if len(texts) + 1 == total else f"Pages {len(texts) + 1}–{total} were"
        parts.append(f"_{left} not read: OCR stopped at {why or f'the {MAX_PAGES}-page limit'}._")
    return "\n\n".join(parts) + "\n"
