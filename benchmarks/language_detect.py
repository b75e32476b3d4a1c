"""Benchmark `gnod.text.language.detect_language` on tldr pages.

Reads the tldr-pages tarball in memory (nothing is extracted to disk), runs detection
on every English page (`tldr/pages/`) and on the pages of a few translations
(`tldr/pages.<lang>/`), and prints key=value lines:

    docs=                  pages detected in total
    us_per_doc=            mean detection time over all pages (µs, best of --repeat runs)
    us_per_doc_en=         mean detection time over the English pages (µs, best run)
    total_ms_en=           all English pages, best run
    lingua_fallback_rate=  fraction of pages for which lingua was consulted
    lingua_fallback_rate_en=
    cold_total_ms_en=      all English pages, first run in a fresh process: includes
                           importing lingua and loading the models its fallbacks need
    rss_mb=                peak resident memory of this process (pages and lingua included)
    accuracy_<iso>=        fraction of pages.<iso> detected as that language
                           (for folders without a stemmer: fraction detected as None)

Usage: python benchmarks/language_detect.py [--tarball PATH] [--langs de,fr,...]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tarfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gnod.text import language  # noqa: E402
from gnod.text.language import ISO_TO_SNOWBALL, detect_language  # noqa: E402

DEFAULT_TARBALL = ROOT.parent / "shared" / "data" / "tldr-pages.tar.gz"
# Folders with a stemmer, plus a few without one (expected: None).
DEFAULT_LANGS = "de,fr,es,pt_BR,pt_PT,it,nl,sv,no,nb,da,fi,pl,id,tr,ro,cs,ca,ru,el,ar,fa,hi,ne,ta,sr,zh,ja,ko,uk,bg"


def load_pages(tarball: Path, folders: set[str]) -> dict[str, list[str]]:
    """folder (e.g. "pages", "pages.de") → page texts, read in memory."""
    pages: dict[str, list[str]] = defaultdict(list)
    with tarfile.open(tarball, "r:gz") as tar:
        for member in tar:
            if not member.isfile() or not member.name.endswith(".md"):
                continue
            parts = member.name.split("/")
            if len(parts) < 3 or parts[0] != "tldr" or parts[1] not in folders:
                continue
            f = tar.extractfile(member)
            if f is not None:
                pages[parts[1]].append(f.read().decode("utf-8", "replace"))
    return pages


def run(texts: list[str]) -> tuple[list[str | None], float, int]:
    """(detected languages, seconds, lingua fallbacks) for `texts`."""
    before = language._lingua_calls
    t0 = time.perf_counter()
    out = [detect_language(t) for t in texts]
    elapsed = time.perf_counter() - t0
    return out, elapsed, language._lingua_calls - before


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tarball", type=Path, default=DEFAULT_TARBALL)
    ap.add_argument("--langs", default=DEFAULT_LANGS, help="comma-separated tldr folder suffixes")
    ap.add_argument("--repeat", type=int, default=5, help="timing runs (best is reported)")
    ap.add_argument("--errors", type=int, default=0, help="show N misdetected pages per folder")
    args = ap.parse_args()

    isos = [x.strip() for x in args.langs.split(",") if x.strip()]
    folders = {"pages"} | {f"pages.{iso}" for iso in isos}
    pages = load_pages(args.tarball, folders)
    english = pages.get("pages", [])
    if not english:
        sys.exit(f"no English pages found under tldr/pages/ in {args.tarball}")

    # The English pages first, in a fresh process: the first ("cold") pass includes
    # importing lingua, building its detectors and loading the models the fallbacks
    # need, as a freshly started daemon would; later passes are warm.
    results: dict[str, list[str | None]] = {}
    times: dict[str, float] = {}
    fallbacks: dict[str, int] = {}
    cold_en = 0.0
    for folder in ["pages"] + [f"pages.{iso}" for iso in isos]:
        texts = pages.get(folder)
        if not texts:
            continue
        best = float("inf")
        for i in range(max(1, args.repeat)):
            out, elapsed, lingua_calls = run(texts)
            best = min(best, elapsed)
            if folder == "pages" and i == 0:
                cold_en = elapsed
        results[folder], times[folder], fallbacks[folder] = out, best, lingua_calls

    docs = sum(len(pages[f]) for f in results)
    n_en = len(pages["pages"])
    print(f"docs={docs}")
    print(f"docs_en={n_en}")
    print(f"us_per_doc={sum(times.values()) / docs * 1e6:.1f}")
    print(f"us_per_doc_en={times['pages'] / n_en * 1e6:.1f}")
    print(f"total_ms_en={times['pages'] * 1e3:.1f}")
    print(f"lingua_fallback_rate={sum(fallbacks.values()) / docs:.4f}")
    print(f"lingua_fallback_rate_en={fallbacks['pages'] / n_en:.4f}")
    print(f"cold_total_ms_en={cold_en * 1e3:.1f}")
    print(f"rss_mb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")

    for folder, out in results.items():
        iso = "en" if folder == "pages" else folder.split(".", 1)[1]
        expected = ISO_TO_SNOWBALL.get(iso.split("_")[0])
        accuracy = sum(1 for got in out if got == expected) / len(out)
        print(f"accuracy_{iso}={accuracy:.4f}")
        if args.errors:
            wrong = Counter(got for got in out if got != expected)
            rate = fallbacks[folder] / len(out)
            print(
                f"#   {iso}: expected {expected}, got {dict(wrong.most_common(6))}, "
                f"lingua fallback rate {rate:.3f}, {times[folder] / len(out) * 1e6:.1f} us/doc"
            )
            shown = 0
            for text, got in zip(pages[folder], out):
                if got != expected and shown < args.errors:
                    shown += 1
                    head = " | ".join(text.strip().splitlines()[:6])[:200]
                    print(f"#     -> {got}: {head}")


if __name__ == "__main__":
    main()
