"""Ingest throughput per document format through a real gnod.

    python benchmarks/ingest_formats.py [--n 50] [--runs 3] [--formats pdf,docx,xlsx,pptx,html]

Generates N documents per format (cached under .bench/formats/<format>-<N>/), then indexes
each format's folder into a fresh collection, --runs times. Prints docs_per_s_<format>=
(the daemon's own timing, median run; the first run of the first format also starts the
converter helper) and errors_<format>= (must be 0).
"""

from __future__ import annotations

import argparse
import io
import os
import random

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


MAKERS = {"pdf": make_pdf, "docx": make_docx, "xlsx": make_xlsx, "pptx": make_pptx, "html": make_html}


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=50, help="documents per format")
    ap.add_argument("--runs", type=int, default=3, help="fresh index runs per format; the median is printed")
    ap.add_argument("--formats", default=",".join(MAKERS), help="comma-separated subset of " + ",".join(MAKERS))
    args = ap.parse_args()
    formats = args.formats.split(",")
    folders = {fmt: corpus(fmt, args.n) for fmt in formats}
    with Daemon() as d:
        for fmt in formats:
            seconds = []
            for run in range(args.runs):
                name = f"{fmt}{run}"
                res = d.call("collection.add", {"name": name, "path": folders[fmt], "index": True})
                s = res["collections"][0]
                seconds.append(s["seconds"])
                docs, errors = s["added"], s["errors"]
                d.call("collection.remove", {"name": name})
            med = sorted(seconds)[len(seconds) // 2]
            emit(**{f"docs_per_s_{fmt}": docs / med, f"errors_{fmt}": errors})


if __name__ == "__main__":
    main()
