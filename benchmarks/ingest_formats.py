"""Ingest throughput per document format through a real gnod.

    python benchmarks/ingest_formats.py [--n 50] [--runs 3] [--formats pdf,docx,xlsx,pptx,html,png]

Generates N documents per format (cached under .bench/formats/<format>-<N>/), then indexes
each format's folder into a fresh collection, --runs times. Prints docs_per_s_<format>=
(the daemon's own timing, median run; the first run of the first format also starts the
converter helper) and errors_<format>= (must be 0); png is pages of text read by OCR
(Tesseract) in gnod's background task after the index run, so docs_per_s_png is pages/s
from `collection add` until the OCR backlog is empty, and png_by_name_seconds= is how
long `collection add` took (the pages are found by their names from then on). Then containers: mbox_messages_per_s= and
mbox_mb_per_s= for one mailbox of --mbox-messages messages (mbox_mb= big; past 16 MiB it is
read in shards), mbox_append_to_searchable_seconds= (a message appended
until search finds it: the watcher reads the mailbox again and converts that message
only), archive_mb_per_s= and
archive_members_per_s= for a zip and a tar.gz of --archive-pages Markdown pages each.
With --kernel-symbols, in this process on one core over the kernel tree's source files
(benchmarks/scale.py fetches it): symbols_mb_per_s= (tree-sitter's parse and the reading
of definitions, as gnod's background task runs it) beside chunk_mb_per_s= (today's
chunker over the same text), symbols_cpu_seconds= for the whole tree and symbols_per_mb=.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import shutil
import tarfile
import tempfile
import time
import zipfile

from common import CACHE, Daemon, emit

WORDS = (
    "deploy release pipeline kettle budget quarter revenue invoice schema index query cluster "
    "replica shard backup restore latency throughput migration rollout canary incident review "
    "customer contract support ticket roadmap milestone design spec prototype launch metric"
).split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))).capitalize() + "."


def paragraph(rng: random.Random) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(3, 6)))


def make_pdf(rng: random.Random, i: int) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    for _page in range(2):
        pdf.add_page()
        pdf.set_font("helvetica", size=11)
        for _ in range(6):
            pdf.multi_cell(0, 6, text=paragraph(rng))
            pdf.ln()
    return bytes(pdf.output())


def make_docx(rng: random.Random, i: int) -> bytes:
    import docx

    d = docx.Document()
    d.add_heading(f"Report {i}", 1)
    for s in range(4):
        d.add_heading(f"Section {s}", 2)
        for _ in range(3):
            d.add_paragraph(paragraph(rng))
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def make_xlsx(rng: random.Random, i: int) -> bytes:
    import openpyxl

    wb = openpyxl.Workbook()
    for sheet in range(2):
        ws = wb.active if sheet == 0 else wb.create_sheet()
        ws.title = f"Sheet{sheet}"
        ws.append(["id", "item", "owner", "status", "amount"])
        for r in range(100):
            ws.append([r, rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS), rng.randint(1, 10_000)])
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def make_pptx(rng: random.Random, i: int) -> bytes:
    from pptx import Presentation

    p = Presentation()
    for s in range(6):
        slide = p.slides.add_slide(p.slide_layouts[1])
        slide.shapes.title.text = f"Deck {i} slide {s}"
        slide.placeholders[1].text = "\n".join(sentence(rng) for _ in range(4))
    out = io.BytesIO()
    p.save(out)
    return out.getvalue()


def make_html(rng: random.Random, i: int) -> bytes:
    body = "".join(f"<h2>Part {s}</h2>" + "".join(f"<p>{paragraph(rng)}</p>" for _ in range(3)) for s in range(5))
    return (
        f"<!DOCTYPE html><html><head><title>Page {i}</title><style>p {{}}</style></head>"
        f"<body><nav><a href='/'>home</a></nav><h1>Page {i}</h1>{body}</body></html>"
    ).encode()


def make_png(rng: random.Random, i: int) -> bytes:
    """A page of typed text as a picture (a scan): read by OCR."""
    from PIL import Image, ImageDraw, ImageFont

    page = Image.new("L", (1700, 2200), 255)
    draw = ImageDraw.Draw(page)
    font = ImageFont.load_default(size=34)
    for line in range(30):
        draw.text((120, 120 + 64 * line), sentence(rng)[:70], fill=0, font=font)
    buf = io.BytesIO()
    page.save(buf, "PNG")
    return buf.getvalue()


PICTURES = {"png"}  # read by OCR in the background, after the index run
MAKERS = {
    "pdf": make_pdf,
    "docx": make_docx,
    "xlsx": make_xlsx,
    "pptx": make_pptx,
    "html": make_html,
    "png": make_png,
}


def message(rng: random.Random, i: int) -> bytes:
    day = 1 + i % 28
    return (
        f"From ann@example.org Mon Jan {day:2d} 09:00:00 2024\nFrom: Ann <ann@example.org>\n"
        f"To: bob@example.org\nSubject: {sentence(rng)[:60]}\nDate: Mon, {day:02d} Jan 2024 09:00:00 +0000\n"
        f"Message-ID: <m{i}@example.org>\n\n{paragraph(rng)}\n\n{paragraph(rng)}\n\n"
    ).encode()


def mailbox(n: int) -> str:
    """A folder holding one mbox of n messages, generated once."""
    folder = os.path.join(CACHE, "formats", f"mbox-{n}")
    path = os.path.join(folder, "inbox.mbox")
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        rng = random.Random("mbox")
        with open(path + ".tmp", "wb") as f:
            for i in range(n):
                f.write(message(rng, i))
        os.replace(path + ".tmp", path)
    return folder


def archives(n: int) -> tuple[str, int]:
    """A folder holding a zip and a tar.gz of n Markdown pages each, generated once, and
    the bytes their members hold."""
    folder = os.path.join(CACHE, "formats", f"archives-{n}")
    rng = random.Random("archives")
    pages = {f"notes/{i // 100:02d}/page{i:05d}.md": f"# Page {i}\n\n{paragraph(rng)}\n".encode() for i in range(n)}
    if not os.path.isdir(folder):
        os.makedirs(folder + ".tmp", exist_ok=True)
        with zipfile.ZipFile(os.path.join(folder + ".tmp", "notes.zip"), "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in pages.items():
                z.writestr(name, data)
        with tarfile.open(os.path.join(folder + ".tmp", "notes.tar.gz"), "w:gz") as t:
            for name, data in pages.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        os.replace(folder + ".tmp", folder)
    return folder, 2 * sum(len(d) for d in pages.values())


def containers(d: Daemon, messages: int, pages: int) -> None:
    """Messages/s for one mbox, the cost of indexing a message appended to it, and MB/s
    of archive members (a zip and a tar.gz)."""
    with tempfile.TemporaryDirectory(dir=CACHE) as folder:  # a copy: the run appends to it
        path = shutil.copy(os.path.join(mailbox(messages), "inbox.mbox"), folder)
        res = d.call("collection.add", {"name": "mbox", "path": folder, "index": True})["collections"][0]
        emit(
            mbox_mb=os.path.getsize(path) / 1e6,
            mbox_messages=res["added"],
            mbox_messages_per_s=res["added"] / res["seconds"],
            mbox_mb_per_s=os.path.getsize(path) / 1e6 / res["seconds"],
            errors_mbox=res["errors"],
        )
        late = message(random.Random("late"), messages).replace(b"\n\n", b"\n\nA zanzibar postscript.\n\n", 1)
        t0 = time.perf_counter()
        with open(path, "ab") as f:
            f.write(late)
        while not d.call("search", {"query": "zanzibar", "snippets": False})["hits"]:
            time.sleep(0.02)
        emit(mbox_append_to_searchable_seconds=time.perf_counter() - t0)
        d.call("collection.remove", {"name": "mbox"})
    folder, expanded = archives(pages)
    res = d.call("collection.add", {"name": "archives", "path": folder, "index": True})["collections"][0]
    emit(
        archive_members=res["added"],
        archive_mb_per_s=expanded / 1e6 / res["seconds"],
        archive_members_per_s=res["added"] / res["seconds"],
        errors_archives=res["errors"],
    )
    d.call("collection.remove", {"name": "archives"})


def corpus(fmt: str, n: int) -> str:
    """A folder of n documents of a format, generated once (missing files only)."""
    folder = os.path.join(CACHE, "formats", f"{fmt}-{n}")
    os.makedirs(folder, exist_ok=True)
    for i in range(n):
        path = os.path.join(folder, f"doc{i:04d}.{fmt}")
        if not os.path.exists(path):
            data = MAKERS[fmt](random.Random(f"{fmt}{i}"), i)
            with open(path + ".tmp", "wb") as f:
                f.write(data)
            os.replace(path + ".tmp", path)
    return folder


def kernel_symbols() -> None:
    """tree-sitter over the kernel's parsed files beside the chunker, on one core."""
    from scale import kernel_tree

    from gnod.ingest.canonical import canonicalize
    from gnod.ingest.chunk import chunk_text
    from gnod.ingest.symbols import grammar_for, parse

    texts = []
    for root, _dirs, files in os.walk(kernel_tree()):
        for name in files:
            grammar = grammar_for(name)
            if grammar is not None:
                with open(os.path.join(root, name), "rb") as f:
                    texts.append((canonicalize(f.read().decode("utf-8", "replace")), grammar))
    mb = sum(len(t.encode()) for t, _ in texts) / 1e6
    t0 = time.process_time()
    found = sum(len(parse(t, g)) for t, g in texts)
    parse_s = time.process_time() - t0
    t0 = time.process_time()
    for t, _ in texts:
        chunk_text(t)
    chunk_s = time.process_time() - t0
    emit(
        symbols_files=len(texts),
        symbols_mb=mb,
        symbols_mb_per_s=mb / parse_s,
        symbols_cpu_seconds=parse_s,
        symbols_per_mb=found / mb,
        chunk_mb_per_s=mb / chunk_s,
        chunk_cpu_seconds=chunk_s,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=50, help="documents per format")
    ap.add_argument("--runs", type=int, default=3, help="fresh index runs per format; the median is printed")
    ap.add_argument("--formats", default=",".join(MAKERS), help="comma-separated subset of " + ",".join(MAKERS))
    ap.add_argument("--mbox-messages", type=int, default=10_000, help="messages in the mailbox (0: skip containers)")
    ap.add_argument("--archive-pages", type=int, default=5_000, help="Markdown pages in each archive")
    ap.add_argument("--kernel-symbols", action="store_true", help="tree-sitter's cost over the kernel tree")
    args = ap.parse_args()
    if args.kernel_symbols:
        kernel_symbols()
    formats = [f for f in args.formats.split(",") if f]
    folders = {fmt: corpus(fmt, args.n) for fmt in formats}
    with Daemon() as d:
        if args.mbox_messages:
            containers(d, args.mbox_messages, args.archive_pages)
        for fmt in formats:
            seconds: list[float] = []
            by_name: list[float] = []  # pictures: the index run, before their OCR
            for run in range(args.runs):
                name = f"{fmt}{run}"
                t0 = time.perf_counter()
                res = d.call("collection.add", {"name": name, "path": folders[fmt], "index": True})
                s = res["collections"][0]
                docs, errors = s["added"], s["errors"]
                if fmt in PICTURES:
                    by_name.append(s["seconds"])
                    while (st := d.call("status", {}))["ocr"]["pending"]:
                        time.sleep(0.05)
                    seconds.append(time.perf_counter() - t0)
                    errors += sum(e["collection"] == name for e in st["recent_errors"])
                else:
                    seconds.append(s["seconds"])
                d.call("collection.remove", {"name": name})
            med = sorted(seconds)[len(seconds) // 2]
            emit(**{f"docs_per_s_{fmt}": docs / med, f"errors_{fmt}": errors})
            if by_name:
                emit(**{f"{fmt}_by_name_seconds": sorted(by_name)[len(by_name) // 2]})


if __name__ == "__main__":
    main()
