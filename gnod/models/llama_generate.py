"""Chat generation with llama.cpp, using the chat template stored in the GGUF."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gnod.models.base import read_chat_stream
from gnod.models.threads import Threads

# Room for prompt + answer; generation models here are small, so this is cheap.
CONTEXT = 4096


class LlamaGenerator:
    remote = False  # llama.cpp in gnod's process, on the model thread
    latency_ms = None

    def __init__(
        self, uri: str, path: str, threads: Threads, context: int = CONTEXT, gpu_layers: int = 0, main_gpu: int = 0
    ) -> None:
        from llama_cpp import Llama  # daemon only

        self._llm = Llama(
            model_path=path,
            n_ctx=context,
            n_threads=threads.count,
            n_threads_batch=threads.count,
            n_gpu_layers=gpu_layers,
            main_gpu=main_gpu,
            verbose=False,
        )
        self.uri = uri
        self.context = context
        self._threads = threads

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=True, special=True))

    def generate(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        on_token: Callable[[str], None] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> str:
        # llama_cpp types messages and events as TypedDicts per role; ours are plain chat dicts.
        llm: Any = self._llm
        self._threads.apply(llm)
        stream = llm.create_chat_completion(
            messages=messages, max_tokens=max_tokens, temperature=temperature, stream=True
        )
        return read_chat_stream(stream, on_token, stop)

    def close(self) -> None:
        self._llm.close()
