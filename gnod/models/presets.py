"""Model presets, and each model family's prompt conventions (query and passage
prefixes, chat and rerank templates). What gno asks the generator is written in
gnod.search.expand and gnod.search.answer; this module wraps it for the family.

A preset names one GGUF per role (embed, rerank, generate); `[models]` in config.toml
picks a preset and may override any role with its own URI. Presets list disk size only:
RAM depends on context length and batch size.

Models are trained with their own prompt conventions (e5 wants "query: "/"passage: ",
Qwen3-Embedding an instruction before the query, bge none), and a vector made without
them is measurably worse, so the family is derived from the URI and every family
convention lives here, in one place. Documents are embedded as `title: {title} | text: {chunk}`
(seed 000: the title gives a chunk its context), after the family's passage prefix.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

import msgspec

from gnod.models.base import ROLES, Role

if TYPE_CHECKING:
    from gnod.models.uri import ModelRef

Pooling = Literal["cls", "mean", "last"]


class ModelSpec(msgspec.Struct, frozen=True, kw_only=True):
    uri: str
    family: str  # see family(); a test checks family(uri) == family
    licence: str  # SPDX id of the weights' licence
    size_bytes: int  # on disk, approximate
    dim: int | None = None  # embedding dimension (embed role)


class Preset(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    summary: str
    embed: ModelSpec
    rerank: ModelSpec
    generate: ModelSpec

    def spec(self, role: Role) -> ModelSpec:
        return {"embed": self.embed, "rerank": self.rerank, "generate": self.generate}[role]

    @property
    def size_bytes(self) -> int:
        return self.embed.size_bytes + self.rerank.size_bytes + self.generate.size_bytes


# File names and sizes checked against public references to these repos; sizes are rounded.
# MIT, 118M parameters (12 layers, hidden 384, XLM-R's 250k vocabulary), ~100 languages;
# retrieval scores published in its paper (arXiv 2402.05672) and on MTEB/MIRACL. This
# conversion is loaded by applications built on llama.cpp itself (other e5-small GGUFs are
# written for other runtimes' tensor names and tokenizers); pinned to one commit, whose
# file `models pull` checks against its sha256.
E5_SMALL = ModelSpec(
    uri="hf:TwinSunsLLC/multilingual-e5-small-gguf@b6cac9615d4ecce28d7f22539b7322d695fc2886/"
    "multilingual-e5-small-q8_0.gguf",
    family="e5",
    licence="MIT",
    size_bytes=130_000_000,
    dim=384,
)
BGE_M3 = ModelSpec(
    uri="hf:gpustack/bge-m3-GGUF/bge-m3-Q4_K_M.gguf", family="bge", licence="MIT", size_bytes=438_000_000, dim=1024
)
BGE_RERANKER_V2_M3 = ModelSpec(
    uri="hf:gpustack/bge-reranker-v2-m3-GGUF/bge-reranker-v2-m3-Q4_K_M.gguf",
    family="bge",
    licence="Apache-2.0",
    size_bytes=438_376_864,
)
QWEN3_EMBEDDING_06B = ModelSpec(
    uri="hf:Qwen/Qwen3-Embedding-0.6B-GGUF/Qwen3-Embedding-0.6B-Q8_0.gguf",
    family="qwen3-embedding",
    licence="Apache-2.0",
    size_bytes=639_150_592,
    dim=1024,
)
QWEN3_RERANKER_06B = ModelSpec(
    uri="hf:ggml-org/Qwen3-Reranker-0.6B-Q8_0-GGUF/qwen3-reranker-0.6b-q8_0.gguf",
    family="qwen3-reranker",
    licence="Apache-2.0",
    size_bytes=639_153_184,
)
QWEN3_17B = ModelSpec(
    uri="hf:unsloth/Qwen3-1.7B-GGUF/Qwen3-1.7B-Q4_K_M.gguf",
    family="qwen3",
    licence="Apache-2.0",
    size_bytes=1_107_409_472,
)
SMOLLM3_3B = ModelSpec(
    uri="hf:ggml-org/SmolLM3-3B-GGUF/SmolLM3-Q4_K_M.gguf",
    family="smollm3",
    licence="Apache-2.0",
    size_bytes=1_915_305_312,
)
QWEN3_4B_2507 = ModelSpec(
    uri="hf:unsloth/Qwen3-4B-Instruct-2507-GGUF/Qwen3-4B-Instruct-2507-Q4_K_M.gguf",
    family="qwen3-instruct",
    licence="Apache-2.0",
    size_bytes=2_497_281_120,
)

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        # The default: the only embedder here whose first embedding of 10,000 chunks takes
        # under an hour on 2 cores (README, "Models and what they cost"; benchmarks/presets.py).
        Preset(
            name="light",
            summary="multilingual-e5-small + bge-reranker-v2-m3 + Qwen3-1.7B: first embedding fastest, multilingual",
            embed=E5_SMALL,
            rerank=BGE_RERANKER_V2_M3,
            generate=QWEN3_17B,
        ),
        # Seed 001 §5's models: bge-m3 is multilingual and runs anywhere llama.cpp does.
        Preset(
            name="slim",
            summary="bge-m3 + bge-reranker-v2-m3 + Qwen3-1.7B: multilingual",
            embed=BGE_M3,
            rerank=BGE_RERANKER_V2_M3,
            generate=QWEN3_17B,
        ),
        # Qwen3-Embedding/Reranker-0.6B score clearly above bge-m3/bge-reranker-v2-m3 on MMTEB
        # at about the same size and speed; switching embedder means re-embedding everything.
        Preset(
            name="balanced",
            summary="Qwen3-Embedding-0.6B + Qwen3-Reranker-0.6B + SmolLM3-3B",
            embed=QWEN3_EMBEDDING_06B,
            rerank=QWEN3_RERANKER_06B,
            generate=SMOLLM3_3B,
        ),
        Preset(
            name="quality",
            summary="Qwen3-Embedding-0.6B + Qwen3-Reranker-0.6B + Qwen3-4B-Instruct-2507",
            embed=QWEN3_EMBEDDING_06B,
            rerank=QWEN3_RERANKER_06B,
            generate=QWEN3_4B_2507,
        ),
    )
}
DEFAULT_PRESET = "light"


class UnknownPreset(ValueError):
    pass


def preset(name: str) -> Preset:
    p = PRESETS.get(name.strip().lower())
    if p is None:
        raise UnknownPreset(f"unknown model preset {name!r}; choose one of {', '.join(PRESETS)}")
    return p


def spec_for(uri: str) -> ModelSpec | None:
    """What the presets know about a model (licence, size, dim), or None for a user's own."""
    for p in PRESETS.values():
        for role in ROLES:
            s = p.spec(role)
            if s.uri == uri:
                return s
    return None


# --- prompt families --------------------------------------------------------------------

# The task description Qwen3-Embedding/Reranker and e5-instruct were evaluated with for retrieval.
RETRIEVAL_TASK = "Given a web search query, retrieve relevant passages that answer the query"


class Prompts(msgspec.Struct, frozen=True, kw_only=True):
    query: str = ""  # put before a search query
    passage: str = ""  # put before a document chunk
    # Pooling the model was trained with; the backend should ask llama.cpp for it when the
    # GGUF does not say (older conversions of Qwen3-Embedding lack it). None: the GGUF's own.
    pooling: Pooling | None = None
    untitled: str | None = None  # title written for a document without one; None: leave it out


FAMILIES: dict[str, Prompts] = {
    "e5": Prompts(query="query: ", passage="passage: ", pooling="mean"),
    "e5-instruct": Prompts(query=f"Instruct: {RETRIEVAL_TASK}\nQuery: ", pooling="mean"),
    # Official format has no space after "Query:". The GGUF's tokenizer appends the EOS token
    # the last-token pooling reads (add_eos_token); do not add "<|endoftext|>" as text.
    "qwen3-embedding": Prompts(query=f"Instruct: {RETRIEVAL_TASK}\nQuery:", pooling="last"),
    "embeddinggemma": Prompts(query="task: search result | query: ", pooling="mean", untitled="none"),
    "nomic": Prompts(query="search_query: ", passage="search_document: ", pooling="mean"),
    "bge": Prompts(pooling="cls"),
    "minilm": Prompts(pooling="mean"),
    "qwen3-reranker": Prompts(),
    # Generation models: no embedding prompts; see chat() for their switches.
    "qwen3": Prompts(),
    "qwen3-instruct": Prompts(),
    "smollm3": Prompts(),
    "plain": Prompts(),
}

_E5_RE = re.compile(r"(?:^|[^a-z0-9])(?:nano)?e5(?:$|[^a-z0-9])")
_QWEN3_RE = re.compile(r"qwen3(?![.\d])")


def family(uri: str | ModelRef) -> str:
    """The prompt family of a model, from its repo and file name; "plain" when unknown."""
    if isinstance(uri, str):
        name = uri.lower()
    else:
        name = f"{uri.repo or ''}/{uri.path or uri.filename}".lower()
    if "qwen3-embedding" in name:
        return "qwen3-embedding"
    if "qwen3-reranker" in name:
        return "qwen3-reranker"
    if "embeddinggemma" in name:
        return "embeddinggemma"
    if "nomic-embed" in name:
        return "nomic"
    if _E5_RE.search(name):
        return "e5-instruct" if "instruct" in name or "e5-mistral" in name else "e5"
    if "bge" in name:
        return "bge"
    if "minilm" in name:
        return "minilm"
    if "smollm3" in name:
        return "smollm3"
    if _QWEN3_RE.search(name):
        return "qwen3-instruct" if "instruct-2507" in name else "qwen3"
    return "plain"


def prompts(family_name: str) -> Prompts:
    return FAMILIES.get(family_name, FAMILIES["plain"])


def query_prompt(family_name: str, text: str) -> str:
    """A search query as the family's model expects to embed it."""
    return prompts(family_name).query + text


def document_prompt(family_name: str, title: str, text: str) -> str:
    """A chunk as embedded: passage prefix + `title: {title} | text: {text}` (just the text if untitled)."""
    p = prompts(family_name)
    title = " ".join(title.split()) or (p.untitled or "")
    body = f"title: {title} | text: {text}" if title else text
    return p.passage + body


# --- rerank -------------------------------------------------------------------------------

_QWEN3_RERANK_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and "
    'the Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
)
_QWEN3_RERANK_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"


def rerank_prompt(family_name: str, query: str, document: str) -> str | None:
    """The one text a generative reranker scores, or None for a cross-encoder (bge, minilm…),
    which takes (query, document) as a tokenizer pair. The Qwen3 text holds special tokens:
    tokenize it with special=True."""
    if family_name == "qwen3-reranker":
        body = f"<Instruct>: {RETRIEVAL_TASK}\n<Query>: {query}\n<Document>: {document}"
        return _QWEN3_RERANK_PREFIX + body + _QWEN3_RERANK_SUFFIX
    return None


# --- generate -----------------------------------------------------------------------------

NO_THINK = "/no_think"
_THINK_RE = re.compile(r"<think>.*?</think>\s*", re.DOTALL)


def chat(family_name: str, system: str, user: str) -> list[dict[str, str]]:
    """Chat messages with the family's switch that turns reasoning off: hybrid models
    (Qwen3, SmolLM3) otherwise think at length first, which a small CPU cannot afford."""
    if family_name == "smollm3":
        system = f"{system}\n{NO_THINK}" if system else NO_THINK
    elif family_name == "qwen3":
        user = f"{user} {NO_THINK}"
    messages = [{"role": "system", "content": system}] if system else []
    return messages + [{"role": "user", "content": user}]


def strip_thinking(text: str) -> str:
    """The answer without a (possibly empty) <think>…</think> block a hybrid model still emits."""
    return _THINK_RE.sub("", text).strip()
