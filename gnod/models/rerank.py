"""Reranking with llama.cpp's RANK pooling: the GGUF's own classification head scores each pair.

llama-cpp-python has no rerank call, so the input is built here the way llama-server's
`format_prompt_rerank` builds it. A generative reranker (Qwen3-Reranker) scores one prompt
text, from presets or else the GGUF's "rerank" chat template. A cross-encoder gets
`[BOS] query [EOS] [SEP] document [EOS]`, each special token only where the GGUF's tokenizer
asks for it: `[CLS] q [SEP] d [SEP]` for BERT, `<s> q </s></s> d </s>` for XLM-R (bge).
llama.cpp gives every token segment id 0, so BERT's second segment is not marked.

Only the document is cut to fit the context, never the query. A cross-encoder's head gives
one logit (score = sigmoid); llama.cpp soft-maxes Qwen3's two-way yes/no head itself, so its
"yes" output already is the probability, and a sigmoid on top would squash it into [0.5, 0.73].
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gnod.models import presets
from gnod.models.base import ModelUnavailable
from gnod.models.context import embedding_model
from gnod.models.threads import Threads

# Longest pair we allocate for (tokens): query + a ~800-token chunk + the prompt around them.
MAX_CONTEXT = 1024
RANK_POOLING = 4  # LLAMA_POOLING_TYPE_RANK
# Architectures whose RANK head llama.cpp follows with a softmax (llama-graph.cpp, build_pooling).
SOFTMAXED = ("qwen3", "qwen3vl")


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


class LlamaReranker:
    remote = False  # llama.cpp in gnod's process, on the model thread
    latency_ms = None

    def __init__(
        self,
        uri: str,
        path: str,
        threads: Threads,
        max_context: int = MAX_CONTEXT,
        gpu_layers: int = 0,
        main_gpu: int = 0,
    ) -> None:
        import llama_cpp  # daemon only

        self._llm, ctx = embedding_model(path, max_context, threads, RANK_POOLING, gpu_layers, main_gpu)
        self.uri = uri
        self._threads = threads
        self.max_tokens = ctx  # longest (query, document) input, special tokens included
        self._llama_cpp = llama_cpp
        model = self._llm.model
        arch = self._llm.metadata.get("general.architecture", "")
        self._n_out = max(1, llama_cpp.llama_model_n_cls_out(model))
        labels = [(llama_cpp.llama_model_cls_label(model, i) or b"").lower() for i in range(self._n_out)]
        self._yes = labels.index(b"yes") if b"yes" in labels else 0
        self._softmaxed = arch in SOFTMAXED
        if self._softmaxed and self._n_out < 2:
            self._llm.close()
            raise ModelUnavailable(
                "rerank",
                f"{uri} has no yes/no classifier head (cls.output), so it cannot rerank with llama.cpp",
                fix=f"use a reranker GGUF converted by llama.cpp, e.g. {presets.QWEN3_RERANKER_06B.uri}",
            )

        template = presets.rerank_prompt(presets.family(uri), "{query}", "{document}")
        if template is None:
            raw = llama_cpp.llama_model_chat_template(model, b"rerank")
            template = raw.decode("utf-8") if raw else None
        self._template = template
        vocab = llama_cpp.llama_model_get_vocab(model)
        eos = llama_cpp.llama_vocab_eos(vocab)
        sep = llama_cpp.llama_vocab_sep(vocab)
        eos = sep if eos < 0 else eos
        self._bos = [llama_cpp.llama_vocab_bos(vocab)] if llama_cpp.llama_vocab_get_add_bos(vocab) else []
        self._eos = [eos] if llama_cpp.llama_vocab_get_add_eos(vocab) else []
        self._sep = [sep] if llama_cpp.llama_vocab_get_add_sep(vocab) else []

    def _tokenize(self, text: str, special: bool = False) -> list[int]:
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=special)

    def _frame(self, query: str) -> tuple[list[int], list[int], str]:
        """Tokens before and after the document, and text the document's own tokens start with."""
        if self._template is None:
            return self._bos + self._tokenize(query) + self._eos + self._sep, list(self._eos), ""
        head, _, tail = self._template.partition("{document}")
        lead = ""
        if head.endswith(" "):
            # "<Document>: text": BPE pre-splits before that space, so the space goes with the
            # document and the pieces tokenize as the whole prompt would. Tokenized apart, the
            # document's text cannot turn into special tokens, and it can be cut token-exact.
            head, lead = head[:-1], " "
        return (
            self._tokenize(head.replace("{query}", query), special=True),
            self._tokenize(tail.replace("{query}", query), special=True),
            lead,
        )

    def pair_tokens(self, query: str, documents: Sequence[str]) -> list[list[int]]:
        """The exact token sequences score() evaluates, one per document."""
        head, tail, lead = self._frame(query)
        room = self.max_tokens - len(head) - len(tail)
        if room <= 0:
            raise ValueError(
                f"query is too long to rerank: it leaves no room in the reranker's {self.max_tokens}-token context"
            )
        return [head + self._tokenize(lead + doc)[:room] + tail for doc in documents]

    def _relevance(self, out: list[float]) -> float:
        if self._softmaxed:
            return float(out[self._yes])
        if self._n_out == 1:
            return _sigmoid(out[0])
        top = max(out)
        exps = [math.exp(v - top) for v in out]
        return exps[self._yes] / sum(exps)

    def _run(self, tokens: list[int]) -> float:
        # llama-cpp-python's own batch buffer and context, as Llama.embed uses them.
        batch = self._llm._batch
        batch.reset()
        batch.add_sequence(tokens, 0, True)
        self._llm._ctx.kv_cache_clear()
        self._llm._ctx.decode(batch)
        ptr = self._llama_cpp.llama_get_embeddings_seq(self._llm.ctx, 0)
        score = self._relevance(ptr[: self._n_out])
        batch.reset()
        return score

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        self._threads.apply(self._llm)
        # One pair per decode, as embeddings: packed pairs attend over the whole batch.
        return [self._run(tokens) for tokens in self.pair_tokens(query, documents)]

    def close(self) -> None:
        self._llm.close()
