"""Handlers for models: models.list/pull/use/clear."""

from __future__ import annotations

import asyncio
import time

import msgspec

from gnod import wire
from gnod.config import ConfigError, save, validate
from gnod.models import presets
from gnod.models.base import ROLES
from gnod.models.uri import REMOTE_PREFIX
from gnod.protocol import (
    ModelClearParams,
    ModelEntry,
    ModelPullParams,
    ModelPullResult,
    ModelsResult,
    ModelUseParams,
    OkResult,
    Progress,
)
from gnod.server.rpc import Call, Daemon, RpcError


def _entries(d: Daemon) -> list[ModelEntry]:
    from gnod.models import pull

    out = []
    for role in ROLES:
        uri = d.models.uri(role)
        remote = uri.startswith(REMOTE_PREFIX)  # served elsewhere: nothing to download
        try:
            path = None if remote else pull.resolve(uri, d.models.cache_dir)
        except Exception:
            path = None
        spec = presets.spec_for(uri)
        own = getattr(d.config.models, role) is not None
        out.append(
            ModelEntry(
                role=role,
                uri=uri,
                preset=None if own else d.config.models.preset,
                cached=remote or path is not None,
                path=str(path) if path else None,
                size_bytes=path.stat().st_size if path else spec.size_bytes if spec else None,
                licence=spec.licence if spec else None,
            )
        )
    return out


async def models_list(d: Daemon, params, call: Call) -> ModelsResult:
    entries = await asyncio.to_thread(_entries, d)
    return ModelsResult(
        preset=d.config.models.preset,
        presets=list(presets.PRESETS),
        models=entries,
        cache_dir=d.models.cache_dir,
        loaded=d.models.infos(),
    )


async def models_pull(d: Daemon, p: ModelPullParams, call: Call) -> ModelPullResult:
    from gnod.models import pull

    if p.target == "all":
        uris = [d.models.uri(r) for r in ROLES if not d.models.uri(r).startswith(REMOTE_PREFIX)]
    elif p.target in ROLES:
        uris = [d.models.uri(p.target)]
    else:
        uris = [p.target]
    loop = asyncio.get_running_loop()
    for uri in uris:
        last = [0.0]

        def progress(done: int, total: int | None, uri: str = uri) -> None:
            now = time.monotonic()
            if call.id is not None and (now - last[0] >= 0.2 or done == total):
                last[0] = now
                loop.call_soon_threadsafe(
                    call.notify,
                    "progress",
                    Progress(id=call.id, collection="", phase="pull", done=done, total=total or 0, path=uri),
                )

        try:
            await asyncio.to_thread(pull.pull, uri, d.models.cache_dir, progress)
        except ValueError as e:
            raise RpcError(wire.INVALID_PARAMS, str(e), {"uri": uri}) from None
        except pull.PullError as e:
            raise RpcError(wire.MODEL_UNAVAILABLE, str(e), {"uri": uri}) from None
    d.vectors.wake.set()
    entries = await asyncio.to_thread(_entries, d)
    return ModelPullResult(
        pulled=[e for e in entries if e.uri in uris]
        or [ModelEntry(role="", uri=u, preset=None, cached=True) for u in uris]
    )


async def models_use(d: Daemon, p: ModelUseParams, call: Call) -> OkResult:
    await d.reload_config()
    models = d.config.models
    if p.preset is not None:
        models = msgspec.structs.replace(models, preset=p.preset, embed=None, rerank=None, generate=None)
    chosen = {**p.roles, **({p.role: p.uri} if p.role is not None else {})}
    for role in chosen:
        if role not in ROLES:
            raise RpcError(wire.INVALID_PARAMS, f"unknown role {role!r}: one of {', '.join(ROLES)}")
    models = msgspec.structs.replace(models, **chosen)
    try:
        config = validate(msgspec.structs.replace(d.config, models=models))
    except ConfigError as e:
        raise RpcError(wire.INVALID_PARAMS, str(e)) from None
    for role in chosen:  # every one checked before any is saved
        _refuse_unusable_file(role, getattr(config.models, role))
    save(d.paths.config_file, config)
    await d.apply_config(config, rescan=False)
    return OkResult(message=", ".join(f"{r}: {d.models.uri(r)}" for r in ROLES))


# The first bytes of a GGUF file (llama.cpp's model format).
GGUF_MAGIC = b"GGUF"


def _refuse_unusable_file(role: str, model_uri: str) -> None:
    """A file: model must exist now and be a GGUF file: a typo, or a file of another
    kind, would otherwise surface only at the first search (or as advice to download it)."""
    from gnod.models import uri

    ref = uri.parse(model_uri)
    if ref.scheme != "file":
        return
    path = ref.path or ""
    try:
        with open(path, "rb") as f:
            head = f.read(len(GGUF_MAGIC))
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        head = None
    except OSError as e:
        raise RpcError(
            wire.INVALID_PARAMS, f"{role}: cannot read {path}: {e.strerror or e}", {"role": role, "uri": model_uri}
        ) from None
    if head is None:
        why = f"no model file at {path} (give the path of a .gguf file)"
    elif head != GGUF_MAGIC:
        why = f"{path} is not a GGUF model file (it does not begin with {GGUF_MAGIC.decode()})"
    else:
        return
    raise RpcError(wire.INVALID_PARAMS, f"{role}: {why}", {"role": role, "uri": model_uri})


async def models_clear(d: Daemon, p: ModelClearParams, call: Call) -> OkResult:
    from gnod.models import pull

    try:
        removed = await asyncio.to_thread(pull.clear, d.models.cache_dir, p.uri)
    except ValueError as e:  # a file: URI or a malformed one: nothing of ours to delete
        raise RpcError(wire.INVALID_PARAMS, str(e), {"uri": p.uri}) from None
    await d.models.unload_idle()
    return OkResult(message=f"removed {len(removed)} file(s)")
