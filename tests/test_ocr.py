"""Images and scanned PDFs read by the real Tesseract: pictures of text drawn here with
Pillow, a scanned PDF made of such pictures (Pillow writes no text layer), through the
converter and through a real gnod. Without Tesseract these tests skip, except under
CI=true, where they fail (`.ci/run` installs tesseract-ocr); the NEEDS_OCR tests hide it
from PATH and run anywhere."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from conftest import _run_cli, cli_json, paths_for, running_gnod, start_gnod, wait_until
from gnod.ingest import ocr
from gnod.ingest.convert import IngestFailure, convert
from gnod.ingest.prepare import prepare
from gnod.ingest.walk import WalkEntry
from gnod.server.handlers import PICTURE_WITHOUT_TEXT
from gnod.text.analyzer import ingest_analyzers

pytestmark = pytest.mark.timeout(180)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
SCAN_PAGES = (["Quarterly invoice from Zeppelin Freight", "Payment due in thirty days"], ["Lighthouse keeper logbook"])


def need_tesseract() -> tuple[str, ...]:
    """The installed language codes; under CI=true a missing Tesseract fails the test."""
    try:
        return ocr.installed()[2]
    except ocr.OcrFailure as f:
        message = f"{f.reason} (.ci/run installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


def picture(lines: list[str], size: tuple[int, int] = (1400, 400), mode: str = "RGB"):
    """Black text in a large clear font on white (or on transparency, for mode RGBA)."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(DEJAVU, 44) if os.path.exists(DEJAVU) else ImageFont.load_default(size=44)
    im = Image.new(mode, size, (255, 255, 255, 0) if mode == "RGBA" else "white")
    draw = ImageDraw.Draw(im)
    for i, line in enumerate(lines):
        draw.text((50, 50 + 90 * i), line, fill="black", font=font)
    return im


def encode(im, fmt: str, **kw) -> bytes:
    out = io.BytesIO()
    im.save(out, fmt, **kw)
    return out.getvalue()


def scanned_pdf() -> bytes:
    """Two pages that are only pictures, as a scanner writes them: no text layer."""
    first, *rest = [picture(lines, size=(1275, 800)).convert("L") for lines in SCAN_PAGES]
    return encode(first, "PDF", resolution=150, save_all=True, append_images=rest)


def ocr_done(env: dict[str, str], timeout: float = 120.0) -> dict:
    """gnod's status once its OCR backlog is empty (each picture or scan read and stored)."""
    got: dict = {}

    def done() -> bool:
        got.update(cli_json("status", "--json", env=env))
        return got["ocr"]["pending"] == 0 and not got["ocr"]["reading"]

    assert wait_until(done, timeout, interval=0.2), got["ocr"]
    return got


def _search(env: dict[str, str], query: str) -> dict:
    """`search --json`, with or without hits (exit status 1 when none)."""
    r = _run_cli("search", query, "--json", env=env)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def failure(data: bytes, path: str) -> IngestFailure:
    with pytest.raises(IngestFailure) as e:
        convert(data, path)
    return e.value


FORMATS = {
    ".png": ("PNG", "RGB"),
    ".jpg": ("JPEG", "RGB"),
    ".tiff": ("TIFF", "L"),
    ".webp": ("WEBP", "RGB"),
    ".gif": ("GIF", "P"),
    ".bmp": ("BMP", "RGB"),
}


@pytest.mark.parametrize("ext", sorted(FORMATS))
def test_the_text_of_an_image_comes_back(ext):
    need_tesseract()
    fmt, mode = FORMATS[ext]
    data = encode(picture(["Invoice for the zeppelin hangar"]).convert(mode), fmt)
    text = convert(data, f"scans/receipt{ext}")
    assert "zeppelin hangar" in text.lower()


def test_a_transparent_picture_is_read_on_white():
    """Black text on transparency: decoded naively the background is black too."""
    need_tesseract()
    text = convert(encode(picture(["Transparent lighthouse badge"], mode="RGBA"), "PNG"), "badge.png")
    assert "lighthouse" in text.lower()


def test_pictures_without_text_are_empty_documents():
    """A photo or icon is no failure: indexed empty, so still found by its name."""
    from PIL import Image

    need_tesseract()
    assert convert(encode(Image.new("RGB", (32, 32), "red"), "PNG"), "icon.png") == ""  # not even OCRed
    assert convert(encode(Image.new("RGB", (800, 600), "white"), "JPEG"), "blank.jpg").strip() == ""


def test_a_multi_page_tiff_has_a_section_per_page():
    need_tesseract()
    pages = [picture(lines).convert("L") for lines in SCAN_PAGES]
    text = convert(encode(pages[0], "TIFF", save_all=True, append_images=pages[1:]), "fax.tiff")
    assert "## Page 1" in text and "## Page 2" in text
    assert text.index("Zeppelin") < text.index("## Page 2") < text.index("Lighthouse")


def test_a_scanned_pdf_is_read_page_by_page():
    need_tesseract()
    text = convert(scanned_pdf(), "letters/scan.pdf")
    first, second = text.split("## Page 2")
    assert first.startswith("## Page 1")
    assert "Zeppelin Freight" in first and "thirty days" in first
    assert "Lighthouse keeper" in second


def test_the_collection_language_or_the_text_s_own_picks_the_traineddata():
    langs = need_tesseract()
    assert ocr.tesseract_language("german", ("deu", "eng")) == "deu"
    assert ocr.tesseract_language("italian", ("deu", "eng")) == "eng"  # not installed: English
    assert ocr.tesseract_language(None, ("deu", "eng")) == "eng"
    if "deu" not in langs:
        pytest.skip("tesseract-ocr-deu is not installed")
    data = encode(picture(["Die Größe der Straße", "Müller schließt früh"]), "PNG")
    assert "Straße" in convert(data, "brief.png", "german")
    assert "Straße" not in convert(data, "brief.png", "english")  # English data reads ß as something else
    # No language given: read again in the one its English reading is in (a folder of
    # letters in several languages has no one language to give).
    assert "Straße" in convert(data, "brief.png")
    assert "zeppelin hangar" in convert(encode(picture(["Invoice for the zeppelin hangar"]), "PNG"), "r.png")
    if "fra" in langs:
        receipt = ["REÇU", "Merci pour votre achat, le montant total est de douze euros"]
        assert "REÇU" in convert(encode(picture(receipt), "PNG"), "recu.png")


def convert_in_subprocess(files: dict[str, bytes], tmp_path, env: dict | None = None) -> dict[str, str]:
    """{name: Markdown, or "CODE: reason"} from convert() in a fresh Python process, which
    then checks that Pillow and pypdfium2 stayed out of it (they belong to the helper)."""
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    code = (
        "import json, os, sys\n"
        "from gnod.ingest.convert import IngestFailure, convert\n"
        "out = {}\n"
        f"for name in {sorted(files)!r}:\n"
        f"    data = open(os.path.join({str(tmp_path)!r}, name), 'rb').read()\n"
        "    try:\n"
        "        out[name] = convert(data, name)\n"
        "    except IngestFailure as f:\n"
        "        out[name] = f'{f.code}: {f.reason}'\n"
        "assert not any(m.split('.')[0] in ('PIL', 'pypdfium2') for m in sys.modules), sorted(sys.modules)\n"
        "print(json.dumps(out))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_ocr_libraries_stay_in_the_helper(tmp_path):
    need_tesseract()
    got = convert_in_subprocess({"scan.pdf": scanned_pdf()}, tmp_path)
    assert "Zeppelin" in got["scan.pdf"]


def test_without_tesseract_images_and_scans_need_ocr(tmp_path):
    """Tesseract hidden from PATH (the helper inherits it): NEEDS_OCR with the command that
    fixes it; icons and blank PDFs need no OCR and are what they were."""
    from PIL import Image
    from test_convert import make_pdf

    empty = tmp_path / "bin"
    empty.mkdir()
    files = {
        "a.png": encode(picture(["Hidden zeppelin"]), "PNG"),
        "scan.pdf": scanned_pdf(),
        "icon.png": encode(Image.new("RGB", (16, 16)), "PNG"),
        "blank.pdf": make_pdf(),
    }
    got = convert_in_subprocess(files, tmp_path, dict(os.environ, PATH=str(empty)))
    for name in ("a.png", "scan.pdf"):
        assert got[name].startswith("NEEDS_OCR: Tesseract (OCR) is not installed"), got[name]
        assert "apt-get install tesseract-ocr" in got[name]
    assert got["icon.png"] == ""
    assert got["blank.pdf"].startswith("EMPTY: ")


def test_gnod_without_tesseract_lists_need_ocr_and_doctor_says_how_to_fix_it(env, tmp_path):
    folder = tmp_path / "scans"
    folder.mkdir()
    (folder / "letter.png").write_bytes(encode(picture(["Hidden zeppelin"]), "PNG"))
    (folder / "note.md").write_text("# Note\n\nA plain note.\n")
    empty = tmp_path / "bin"
    empty.mkdir()
    env = dict(env, PATH=str(empty))  # gnod's converter helpers inherit it
    d = start_gnod(env)
    try:
        cli_json("collection", "add", str(folder), "--name", "scans", "--json", env=env)
        st = cli_json("status", "--json", env=env)
        errors = {e["path"]: e for e in st["recent_errors"]}
        assert errors["letter.png"]["code"] == "NEEDS_OCR"
        assert "apt-get install tesseract-ocr" in errors["letter.png"]["reason"]
        assert st["ocr"]["available"] is False
        checks = {c["component"]: c for c in cli_json("doctor", "--json", env=env)["checks"]}
        assert checks["ocr"]["status"] == "warn" and "NEEDS_OCR" in checks["ocr"]["detail"]
        assert "apt-get install tesseract-ocr" in checks["ocr"]["fix"] and "brew" in checks["ocr"]["fix"]
    finally:
        d.stop()


def test_a_picture_that_needed_ocr_is_read_once_tesseract_is_there(env, tmp_path):
    """Unchanged files that failed are not tried again, but for NEEDS_OCR: its cause goes
    when Tesseract is installed (here: gnod started again with it on PATH)."""
    need_tesseract()
    folder = tmp_path / "scans"
    folder.mkdir()
    (folder / "letter.png").write_bytes(encode(picture(["Hidden zeppelin"]), "PNG"))
    empty = tmp_path / "bin"
    empty.mkdir()
    d = start_gnod(dict(env, PATH=str(empty)))
    try:
        cli_json("collection", "add", str(folder), "--name", "scans", "--json", env=env)
        assert [e["code"] for e in cli_json("status", "--json", env=env)["recent_errors"]] == ["NEEDS_OCR"]
    finally:
        d.stop()
    d = start_gnod(env)
    try:
        cli_json("update", "scans", "--json", env=env)
        assert ocr_done(env)["recent_errors"] == []
        assert [h["path"] for h in cli_json("search", "zeppelin", "--json", env=env)["hits"]] == ["letter.png"]
    finally:
        d.stop()


def test_gnod_finds_a_word_of_a_scan_and_of_an_image(tmp_path):
    from PIL import Image

    need_tesseract()
    folder = tmp_path / "archive"
    folder.mkdir()
    (folder / "scan.pdf").write_bytes(scanned_pdf())
    (folder / "whiteboard.jpg").write_bytes(encode(picture(["Retrospective about marmalade"]), "JPEG"))
    (folder / "icon.png").write_bytes(encode(Image.new("RGB", (16, 16), "red"), "PNG"))
    with running_gnod() as (env, _d):
        add = cli_json("collection", "add", str(folder), "--name", "archive", "--json", env=env)
        assert add["collections"][0]["added"] == 3, cli_json("status", "--json", env=env)["recent_errors"]
        assert ocr_done(env)["ocr"]["read"] == 2
        # A picture without text said nothing of why its content was a blank line.
        got = cli_json("get", "archive/icon.png", "--json", env=env)
        assert got["content"].strip() == "" and got["notes"] == [PICTURE_WITHOUT_TEXT]
        for word, path in (("zeppelin", "scan.pdf"), ("lighthouse", "scan.pdf"), ("marmalade", "whiteboard.jpg")):
            hits = cli_json("search", word, "--json", env=env)["hits"]
            assert [h["path"] for h in hits] == [path], word
        got = cli_json("get", "archive/scan.pdf", "--json", env=env)
        assert "## Page 2" in got["content"] and got["title"] == "scan"
        checks = {c["component"]: c for c in cli_json("doctor", "--json", env=env)["checks"]}
        assert checks["ocr"]["status"] == "ok" and "eng" in checks["ocr"]["detail"]


def test_a_scan_past_the_page_limit_keeps_its_first_pages_and_says_so(monkeypatch):
    """In this process (the helper's code, called directly) with a limit of one page."""
    need_tesseract()
    monkeypatch.setattr(ocr, "MAX_PAGES", 1)
    text = ocr.ocr_pdf(scanned_pdf())
    assert "Zeppelin" in text and "Lighthouse" not in text
    assert text.rstrip().endswith("_Page 2 was not read: OCR stopped at the 1-page limit._")


def test_later_a_picture_or_scan_is_prepared_by_its_name_and_marked_for_ocr():
    """What an index run stores at once: no text, the name as title, `ocr_pending`; a
    picture too small to hold text is read (as empty) at once, with nothing to wait for."""
    from PIL import Image

    need_tesseract()

    def prepared(name: str, data: bytes):
        entry = WalkEntry(name, "/nowhere/" + name, len(data), 1, 1)
        return prepare(entry, data, "h", None, ingest_analyzers(), ocr_later=True)

    for name, data in (("scan.pdf", scanned_pdf()), ("board.png", encode(picture(["Hidden zeppelin"]), "PNG"))):
        doc = prepared(name, data)
        assert doc.ocr_pending and doc.chunks == [] and doc.title == name.split(".")[0]
    assert not prepared("icon.png", encode(Image.new("RGB", (16, 16)), "PNG")).ocr_pending


def test_ocr_runs_in_the_background_and_an_index_run_does_not_wait_for_it(tmp_path):
    """`collection add` stores the pictures and scans by their names; gnod reads them
    afterwards, says so in status and in searches meanwhile, and stores each as an index
    run reading it would have: its text, or (a scan of a blank page) EMPTY in its place."""
    from PIL import Image

    need_tesseract()
    folder = tmp_path / "desk"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nThe marmalade budget.\n")
    (folder / "scan.pdf").write_bytes(scanned_pdf())
    (folder / "whiteboard.jpg").write_bytes(encode(picture(["Retrospective about marmalade"]), "JPEG"))
    (folder / "blank-scan.pdf").write_bytes(encode(Image.new("L", (1275, 800), "white"), "PDF", resolution=150))
    with running_gnod() as (env, _d):
        add = cli_json("collection", "add", str(folder), "--name", "desk", "--json", env=env)
        assert add["collections"][0]["added"] == 4
        # Stored by name at once: found by it whether or not OCR has read it yet.
        assert [h["path"] for h in cli_json("search", "whiteboard", "--json", env=env)["hits"]] == ["whiteboard.jpg"]
        st = ocr_done(env)
        assert st["ocr"]["read"] == 3 and st["ocr"]["reading"] == []
        assert [(e["path"], e["code"]) for e in st["recent_errors"]] == [("blank-scan.pdf", "EMPTY")]
        assert "OCR found no text on its 1 page(s)" in st["recent_errors"][0]["reason"]
        assert "3 read since gnod started" in _run_cli("status", "--human", env=env).stdout
        hits = cli_json("search", "marmalade", "--json", env=env)
        assert sorted(h["path"] for h in hits["hits"]) == ["notes.md", "whiteboard.jpg"]
        assert not any("OCR" in n for n in hits["notes"])
        assert [h["path"] for h in cli_json("search", "lighthouse", "--json", env=env)["hits"]] == ["scan.pdf"]
        assert cli_json("get", "desk/blank-scan.pdf", "--json", env=env, expect=2)["error"]["code"] == "NOT_FOUND"
        assert cli_json("status", "--json", env=env)["documents"] == 3
        # An unchanged file is not read again; a changed picture goes through the backlog again.
        again = cli_json("update", "desk", "--json", env=env)["collections"][0]
        assert (again["unchanged"], again["errors"], again["updated"]) == (3, 1, 0)
        (folder / "whiteboard.jpg").write_bytes(encode(picture(["Quokka sightings"]), "JPEG"))
        found = lambda: [h["path"] for h in _search(env, "quokka")["hits"]]  # noqa: E731
        assert wait_until(lambda: found() == ["whiteboard.jpg"], 120, interval=0.2)
        assert ocr_done(env)["ocr"]["read"] == 4


def test_a_search_waiting_for_what_was_saved_waits_for_a_new_pictures_ocr(tmp_path):
    """`search --wait` (read-your-writes) returned as soon as a picture saved just now was
    indexed by its name, before OCR had read it: nothing found, and the text a few
    seconds later."""
    need_tesseract()
    folder = tmp_path / "desk"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nNothing here yet.\n")
    with running_gnod() as (env, _d):
        cli_json("collection", "add", str(folder), "--name", "desk", "--json", env=env)
        (folder / "board.png").write_bytes(encode(picture(["Narwhal migration routes"]), "PNG"))
        hits = cli_json("search", "narwhal", "--wait", "60", "--json", env=env)
        assert [h["path"] for h in hits["hits"]] == ["board.png"]  # its name has no narwhal: its text
        assert not any("OCR" in n for n in hits["notes"])


def test_a_backlog_left_by_a_stopped_gnod_is_read_at_the_next_start(env, tmp_path):
    """The backlog is in the database: a picture still waiting when gnod stopped (put
    back in the backlog here, as a stop during the OCR would leave it) is read after a start."""
    import apsw

    need_tesseract()
    folder = tmp_path / "scans"
    folder.mkdir()
    (folder / "letter.png").write_bytes(encode(picture(["Hidden zeppelin"]), "PNG"))
    d = start_gnod(env)
    try:
        cli_json("collection", "add", str(folder), "--name", "scans", "--json", env=env)
        assert ocr_done(env)["ocr"]["read"] == 1
    finally:
        d.stop()
    conn = apsw.Connection(paths_for(env).db_file)
    conn.execute("INSERT INTO ocr_pending(doc_id) SELECT id FROM documents")
    conn.close()
    d = start_gnod(env)
    try:
        assert ocr_done(env)["ocr"]["read"] == 1
        assert [h["path"] for h in cli_json("search", "zeppelin", "--json", env=env)["hits"]] == ["letter.png"]
    finally:
        d.stop()
