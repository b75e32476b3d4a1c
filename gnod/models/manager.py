"""Warm models: loaded on first use (or at start), shared, unloaded after an idle TTL.

Every llama.cpp call runs on one ModelThread, so the event loop never blocks and
`status` answers while a backlog is being embedded. Models are keyed by URI, so
during a model switch the old embedder keeps answering queries for the old vectors.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar, overload

from gnod.config import ModelsConfig
from gnod.models import presets
from gnod.models.base import ROLES, Embedder, Model, ModelUnavailable, Reranker, Role, TextGenerator
from gnod.models.threads import Threads
from gnod.models.uri import REMOTE_PREFIX, named
from gnod.models.worker import INTERACTIVE, ModelThread
from gnod.protocol import GpuInfo, ModelInfo, ThreadRate, ThreadsInfo

log = logging.getLogger("gnod.models")
T = TypeVar("T")
# Requests to inference servers in flight at once (gnod-wide): a query's embedding
# need not wait behind the backlog's batch, and a server is not flooded.
REMOTE_CALLS = 4
REMOTE_RETRY_S = 10.0  # a remote model that failed to load is tried again after this long


def rss_bytes() -> int | None:
    """This process's resident memory (psutil: Linux, macOS, BSD alike), or None."""
    try:
        import psutil
    except ImportError:
        return None
    return psutil.Process().memory_info().rss


class _Slot:
    def __init__(self, role: Role, uri: str) -> None:
        self.role = role
        self.uri = uri
        self.model: Model | None = None
        self.state = "unloaded"
        self.path: str | None = None
        self.error: str | None = None
        self.fix: str | None = None
        self.size_bytes: int | None = None
        self.rss_bytes: int | None = None
        self.load_seconds: float | None = None
        self.last_used = 0.0
        self.latency_ms: float | None = None  # a remote model's last round trip
        self.failed_at = 0.0  # when loading last failed
        self.busy = 0
        self.lock = asyncio.Lock()

    def info(self) -> ModelInfo:
        return ModelInfo(
            role=self.role,
            uri=self.uri,
            state=self.state,
            path=self.path,
            size_bytes=self.size_bytes,
            rss_bytes=self.rss_bytes,
            load_seconds=self.load_seconds,
            last_used_at=self.last_used or None,
            error=self.error,
            fix=self.fix,
            latency_ms=self.latency_ms,
        )


class Models:
    def __init__(self, config: ModelsConfig, cache_dir: str) -> None:
        self.config = config
        self.cache_dir = cache_dir
        self.threads = Threads(fixed=config.threads)
        self.thread = ModelThread()
        self._remote_calls = ThreadPoolExecutor(max_workers=REMOTE_CALLS, thread_name_prefix="gnod-remote")
        self._slots: dict[tuple[Role, str], _Slot] = {}
        self._gpu_support: bool | None = None

    def uri(self, role: Role) -> str:
        return self.config.uri_for(role)

    def configure(self, config: ModelsConfig) -> None:
        """Adopt a new [models] config; models no longer configured unload when idle."""
        self.config = config
        if config.threads != self.threads.fixed:
            self.threads.configure(config.threads)

    def _slot(self, role: Role, uri: str) -> _Slot:
        slot = self._slots.get((role, uri))
        if slot is None:
            slot = self._slots[(role, uri)] = _Slot(role, uri)
        return slot

    def _load(self, slot: _Slot) -> Model:
        """On the model thread: find the file, construct the backend."""
        from gnod.models import pull, uri

        try:
            ref = uri.parse(slot.uri)
        except uri.ModelURIError as e:
            raise ModelUnavailable(slot.role, str(e), "check the URI in config.toml [models]") from None
        if ref.remote:
            from gnod.models import remote

            slot.path = ref.url
            family = presets.family(slot.uri)
            t0 = time.monotonic()
            model: Model = remote.construct(
                slot.role, slot.uri, ref, self.config.api_key_env, lambda text: presets.query_prompt(family, text)
            )
            slot.load_seconds = round(time.monotonic() - t0, 3)
            return model

        try:
            path = pull.resolve(slot.uri, self.cache_dir)
        except Exception as e:
            raise ModelUnavailable(slot.role, str(e), "check the URI in config.toml [models]") from None
        if path is None:
            raise ModelUnavailable(
                slot.role, f"{slot.role} model {named(slot.uri)} is not downloaded", f"gnoctl models pull {slot.role}"
            )
        slot.path = str(path)
        slot.size_bytes = os.path.getsize(path)
        try:
            import llama_cpp  # noqa: F401
        except ImportError as e:
            raise ModelUnavailable(
                slot.role, f"llama-cpp-python is not installed ({e})", "pip install llama-cpp-python"
            ) from None
        before = rss_bytes()
        t0 = time.monotonic()
        try:
            model = self._construct(slot, str(path))
        except Exception as e:
            raise ModelUnavailable(
                slot.role,
                f"cannot load {slot.uri}: {type(e).__name__}: {e}",
                "check that the file is a GGUF model for this role",
            ) from None
        slot.load_seconds = round(time.monotonic() - t0, 3)
        after = rss_bytes()
        slot.rss_bytes = after - before if after is not None and before is not None else None
        return model

    def _construct(self, slot: _Slot, path: str) -> Model:
        family = presets.family(slot.uri)
        gpu = {"gpu_layers": self.config.gpu_layers, "main_gpu": self.config.main_gpu}
        if slot.role == "embed":
            from gnod.models.llama_embed import LlamaEmbedder

            return LlamaEmbedder(
                slot.uri,
                path,
                self.threads,
                query_prompt=lambda text: presets.query_prompt(family, text),
                pooling=presets.prompts(family).pooling,
                **gpu,
            )
        if slot.role == "rerank":
            from gnod.models.rerank import LlamaReranker

            return LlamaReranker(slot.uri, path, threads=self.threads, **gpu)
        from gnod.models.llama_generate import LlamaGenerator

        return LlamaGenerator(slot.uri, path, self.threads, **gpu)

    def gpu_info(self) -> GpuInfo:
        """Whether this llama.cpp build can offload to a GPU (imports llama_cpp once)."""
        if self._gpu_support is None:
            try:
                import llama_cpp
            except ImportError:
                self._gpu_support = False
            else:
                self._gpu_support = bool(llama_cpp.llama_supports_gpu_offload())
        return GpuInfo(
            offload_supported=self._gpu_support, gpu_layers=self.config.gpu_layers, main_gpu=self.config.main_gpu
        )

    def threads_info(self) -> ThreadsInfo:
        t = self.threads
        rates = sorted(dict(t.rates).items())  # a copy: the model thread may be measuring
        return ThreadsInfo(
            count=t.count,
            fixed=t.fixed is not None,
            rates=[ThreadRate(threads=n, tokens_per_s=round(r, 1)) for n, r in rates],
        )

    def _check_file(self, slot: _Slot) -> None:
        """An unloaded model whose file is not downloaded is `missing`, with the fix (a stat, no load)."""
        from gnod.models import pull

        if slot.uri.startswith(REMOTE_PREFIX):
            return  # nothing to download: its health shows once it is used
        try:
            path = pull.resolve(slot.uri, self.cache_dir)
        except Exception:  # a bad URI: reported when a load is tried
            return
        if path is None:
            slot.state = "missing"
            slot.error = f"{slot.role} model {named(slot.uri)} is not downloaded"
            slot.fix = f"gnoctl models pull {slot.role}"
        elif slot.state == "missing":
            slot.state, slot.error, slot.fix = "unloaded", None, None

    @overload
    async def get(self, role: Literal["embed"], uri: str | None = None) -> Embedder: ...
    @overload
    async def get(self, role: Literal["rerank"], uri: str | None = None) -> Reranker: ...
    @overload
    async def get(self, role: Literal["generate"], uri: str | None = None) -> TextGenerator: ...
    @overload
    async def get(self, role: Role, uri: str | None = None) -> Model: ...
    async def get(self, role: Role, uri: str | None = None) -> Model:
        """The loaded model (loading it if needed); ModelUnavailable says why not and how to fix."""
        slot = self._slot(role, uri or self.uri(role))
        async with slot.lock:
            if (
                slot.model is None
                and slot.uri.startswith(REMOTE_PREFIX)
                and slot.error
                and time.time() - slot.failed_at < REMOTE_RETRY_S
            ):
                # The server was down a moment ago: fail at once rather than wait out retries.
                raise ModelUnavailable(role, slot.error, slot.fix or "")
            if slot.model is None:
                self._check_file(slot)  # a stat: a file not downloaded is `missing`, never `loading`
                if slot.state == "missing":
                    raise ModelUnavailable(role, slot.error or "", slot.fix or "")
                await self._make_room(slot)
                slot.state = "loading"
                try:
                    slot.model = await self.thread.run(lambda: self._load(slot), INTERACTIVE)
                except ModelUnavailable as e:
                    slot.state = "missing" if "not downloaded" in e.message else "error"
                    slot.error, slot.fix, slot.failed_at = e.message, e.fix, time.time()
                    raise
                slot.state, slot.error, slot.fix = "ready", None, None
                slot.last_used = time.time()
                log.info("loaded %s model %s in %.2fs", role, slot.uri, slot.load_seconds or 0)
            return slot.model

    def _footprint(self, slot: _Slot) -> int:
        """What a loaded model holds: the memory its load added, and at least its file's
        size (its mapped weights become resident as it runs; the process's RSS, measured
        around the load, also moves with whatever else gnod frees meanwhile)."""
        return max(slot.rss_bytes or 0, slot.size_bytes or 0)

    async def _make_room(self, slot: _Slot) -> None:
        """Before a local load: unload idle models, least recently used first, until the
        loaded ones plus this one fit in [models] max_memory_mb. A model in use is never
        unloaded; if that is not enough, the load goes ahead (and says so in the log)."""
        budget = self.config.max_memory_mb
        if not budget or slot.uri.startswith(REMOTE_PREFIX):
            return
        from gnod.models import pull

        try:
            path = pull.resolve(slot.uri, self.cache_dir)
        except Exception:
            return  # the load reports it
        need = os.path.getsize(path) if path is not None else 0
        limit = budget * 1024 * 1024
        loaded = [s for s in self._slots.values() if s.model is not None and s is not slot]
        used = sum(self._footprint(s) for s in loaded)
        for other in sorted(loaded, key=lambda s: s.last_used):
            if used + need <= limit:
                break
            if other.busy or other.lock.locked() or (other.model is not None and other.model.remote):
                continue
            used -= self._footprint(other)
            log.info("unloading %s model %s to keep within max_memory_mb = %d", other.role, other.uri, budget)
            await self._unload(other)
        if used + need > limit:
            log.warning(
                "loading %s model %s exceeds max_memory_mb = %d (the other models are in use)",
                slot.role,
                slot.uri,
                budget,
            )

    @overload
    async def run(
        self, role: Literal["embed"], fn: Callable[[Embedder], T], priority: int = ..., uri: str | None = None
    ) -> T: ...
    @overload
    async def run(
        self, role: Literal["rerank"], fn: Callable[[Reranker], T], priority: int = ..., uri: str | None = None
    ) -> T: ...
    @overload
    async def run(
        self, role: Literal["generate"], fn: Callable[[TextGenerator], T], priority: int = ..., uri: str | None = None
    ) -> T: ...
    async def run(self, role: Role, fn: Callable[[Any], T], priority: int = INTERACTIVE, uri: str | None = None) -> T:
        """Run fn(model) on the model thread; the model stays loaded while in use."""
        slot = self._slot(role, uri or self.uri(role))
        model = await self.get(role, slot.uri)
        slot.busy += 1
        try:
            if model.remote:
                # HTTP waits, not CPU: off the model thread, at most REMOTE_CALLS at once.
                result = await asyncio.get_running_loop().run_in_executor(self._remote_calls, lambda: fn(model))
            else:
                result = await self.thread.run(lambda: fn(model), priority)
        except ModelUnavailable as e:
            slot.state, slot.error, slot.fix = "error", e.message, e.fix
            raise
        finally:
            slot.busy -= 1
            slot.last_used = time.time()
            slot.latency_ms = model.latency_ms
        if slot.state == "error":
            slot.state, slot.error, slot.fix = "ready", None, None
        return result

    async def generate(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        on_token: Callable[[str], None] | None = None,
        gone: Callable[[], bool] | None = None,
    ) -> str:
        """Greedy chat generation that stops early when its caller is cancelled or `gone()`
        says the client hung up: an abandoned answer must not hold the model thread."""
        cancelled = threading.Event()

        def stop() -> bool:
            return cancelled.is_set() or (gone is not None and gone())

        try:
            return await self.run(
                "generate",
                lambda m: m.generate(messages, max_tokens=max_tokens, temperature=0.0, on_token=on_token, stop=stop),
                INTERACTIVE,
            )
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def infos(self) -> list[ModelInfo]:
        """Each configured role's model, plus any other model still loaded, in the order
        of ROLES (not of their first use: `status` listed them differently run to run)."""
        for role in ROLES:
            slot = self._slot(role, self.uri(role))
            if slot.model is None and slot.state in ("unloaded", "missing"):
                self._check_file(slot)
        wanted = {(r, self.uri(r)) for r in ROLES}
        kept = [(k, s) for k, s in self._slots.items() if k in wanted or s.model is not None]
        return [s.info() for _, s in sorted(kept, key=lambda ks: ROLES.index(ks[0][0]))]

    async def unload_idle(self, now: float | None = None) -> list[str]:
        """Unload models idle past the TTL, and models no longer configured."""
        now = time.time() if now is None else now
        ttl = self.config.idle_unload_s
        wanted = {(r, self.uri(r)) for r in ROLES}
        gone = []
        for key, slot in list(self._slots.items()):
            if slot.model is None or slot.busy or slot.lock.locked():
                continue
            stale = key not in wanted
            if stale or (ttl > 0 and now - slot.last_used > ttl):
                await self._unload(slot)
                gone.append(slot.uri)
        return gone

    async def _unload(self, slot: _Slot) -> None:
        model, slot.model = slot.model, None
        slot.state, slot.rss_bytes = "unloaded", None
        close = getattr(model, "close", None)
        if close is not None:
            await self.thread.run(close, INTERACTIVE)
        log.info("unloaded %s model %s", slot.role, slot.uri)

    async def load_eager(self) -> None:
        for role in ROLES:
            try:
                await self.get(role)
            except ModelUnavailable as e:
                log.warning("%s", e.message)

    async def idle_loop(self, stopping: asyncio.Event, period: float = 30.0) -> None:
        while not stopping.is_set():
            try:
                await asyncio.wait_for(stopping.wait(), period)
            except asyncio.TimeoutError:
                await self.unload_idle()

    def close(self) -> None:
        """Free every loaded model on the model thread, after the call in progress."""
        closes = []
        for slot in self._slots.values():
            if slot.model is not None and hasattr(slot.model, "close"):
                closes.append(slot.model.close)
                slot.model = None
        self.thread.close(closes)
        self._remote_calls.shutdown(wait=False, cancel_futures=True)
