"""Model files on disk: find them in the cache, download `hf:` ones, list and clear them.

Cache layout (under Paths.model_cache_dir):

    hf/<org>/<repo>/<revision>/<path/in/repo>      a complete, verified file
    hf/<org>/<repo>/<revision>/.<name>.<etag>.part  a download in progress, resumed by the next pull
    .locks/<hash>.lock                               held while one process downloads that file

A plain tree, not huggingface_hub's blobs/snapshots cache, because a model is one big file
and huggingface_hub (2.x) deletes a partial download when it fails: a 2 GB pull cut at
1.9 GB would start again from zero. huggingface_hub still does the talking to the hub:
endpoint, token, redirects, error codes, and the ranged GET (`http_get`). It is imported
lazily, so `resolve` (what the daemon calls at load) needs no network and no hub import.
A file appears under its final name only once complete and matching its ETag (the sha256
of an LFS file), so a present file is a usable file.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import logging
import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO, cast
from urllib.parse import quote, unquote, urlsplit

import msgspec

from gnod.models.uri import DEFAULT_REVISION, ModelRef, ModelURIError, as_ref

log = logging.getLogger("gnod.models")

DEFAULT_ENDPOINT = "https://huggingface.co"
HF_DIR = "hf"
# progress(done_bytes, total_bytes): bytes on disk so far (a resumed pull starts above 0);
# total is 0 when the server did not say.
Progress = Callable[[int, int], None]
_ETAG_SAFE = re.compile(r"[^A-Za-z0-9]")


class PullError(Exception):
    """A model could not be downloaded: `message` says what happened, `fix` what to do."""

    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(f"{message}; {fix}" if fix else message)
        self.message = message
        self.fix = fix


class CachedModel(msgspec.Struct, frozen=True):
    uri: str
    path: str
    size_bytes: int


def cached_path(ref: ModelRef | str, cache_dir: str | os.PathLike[str]) -> Path:
    """Where an hf: model lives in the cache (whether it is there or not)."""
    ref = as_ref(ref)
    if ref.scheme != "hf" or ref.repo is None:
        where = "runs on an inference server" if ref.remote else "is a file on this machine"
        raise ModelURIError(f"{ref.uri} {where}, not a cached model")
    org, name = ref.repo.split("/")
    rev = quote(ref.revision or DEFAULT_REVISION, safe="")
    return Path(cache_dir, HF_DIR, org, name, rev, *ref.filename.split("/"))


def resolve(ref: ModelRef | str, cache_dir: str | os.PathLike[str]) -> Path | None:
    """The model's file if it is on disk, else None (not downloaded yet). Never touches the
    network. A file: URI resolves to the file itself; FileNotFoundError if it is missing."""
    ref = as_ref(ref)
    if ref.scheme == "file":
        assert ref.path is not None
        if not os.path.isfile(ref.path):
            raise FileNotFoundError(f"model file {ref.path} does not exist (from {ref.uri})")
        return Path(ref.path)
    path = cached_path(ref, cache_dir)
    return path if path.is_file() else None


def pull(
    ref: ModelRef | str,
    cache_dir: str | os.PathLike[str],
    progress: Progress | None = None,
    endpoint: str | None = None,
    *,
    token: str | None = None,
    force: bool = False,
) -> Path:
    """Download an hf: model into the cache (resuming a partial download) and return its path.

    A model already in the cache is returned at once, without asking the hub (force=True
    downloads it again). endpoint defaults to $HF_ENDPOINT, then huggingface.co; token to
    $HF_TOKEN, then the token `hf auth login` stored. A bad URI is a ModelURIError, every
    other failure a PullError. To cancel, raise a BaseException (asyncio.CancelledError,
    KeyboardInterrupt…) from progress: it propagates as is, and the next pull resumes.
    """
    ref = as_ref(ref)
    if ref.remote:
        raise PullError(
            f"{ref.uri} runs on an inference server: there is nothing to download",
            "start the server; gnod sends it requests",
        )
    if ref.scheme == "file":
        assert ref.path is not None
        if not os.path.isfile(ref.path):
            raise PullError(
                f"model file {ref.path} does not exist",
                "check the path in the URI, or use an hf:org/repo/file.gguf model",
            )
        return Path(ref.path)
    dest = cached_path(ref, cache_dir)
    if dest.is_file() and not force:
        return dest
    try:
        import huggingface_hub  # noqa: F401
    except ImportError as e:
        raise PullError(f"cannot download models: {e}", "pip install huggingface-hub") from None
    endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    token = token or os.environ.get("HF_TOKEN") or None
    try:
        with _locked(Path(cache_dir), dest):
            if dest.is_file() and not force:  # another process finished it while we waited
                return dest
            return _download(ref, dest, endpoint, token, progress)
    except PullError:
        raise
    except Exception as e:
        raise _explain(e, ref, endpoint, dest) from e


def list_cached(cache_dir: str | os.PathLike[str]) -> list[CachedModel]:
    """Every complete model file in the cache, by URI (partial downloads are not listed)."""
    root = Path(cache_dir, HF_DIR)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(dirpath, name)
            parts = path.relative_to(root).parts
            if len(parts) < 4:
                continue
            org, repo, rev, *file = parts
            rev = unquote(rev)
            at = "" if rev == DEFAULT_REVISION else f"@{quote(rev, safe='')}"
            try:
                size = path.stat().st_size
            except OSError:
                continue
            out.append(CachedModel(uri=f"hf:{org}/{repo}{at}/{'/'.join(file)}", path=str(path), size_bytes=size))
    return out


def clear(cache_dir: str | os.PathLike[str], uri: ModelRef | str | None = None) -> list[str]:
    """Delete one hf: model's files (complete and partial), or every cached model when uri is
    None. Returns the URIs (or, for partial downloads only, the paths) that were removed."""
    root = Path(cache_dir, HF_DIR)
    if uri is None:
        removed = [m.uri for m in list_cached(cache_dir)]
        removed += [str(p) for p in root.rglob(".*.part")]
        shutil.rmtree(root, ignore_errors=True)
        return removed
    ref = as_ref(uri)
    if ref.scheme == "file":
        raise ModelURIError(f"{ref.uri} is your own file, not a cached model: gno does not delete it")
    dest = cached_path(ref, cache_dir)
    removed = []
    if dest.is_file():
        dest.unlink()
        removed.append(ref.uri)
    for p in _partials(dest):
        p.unlink(missing_ok=True)
        if not removed:
            removed.append(str(p))
    _prune_empty(dest.parent, root)
    return removed


# --- download ------------------------------------------------------------------------------


def _download(ref: ModelRef, dest: Path, endpoint: str, token: str | None, progress: Progress | None) -> Path:
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.file_download import http_get
    from huggingface_hub.utils import build_hf_headers, disable_progress_bars

    disable_progress_bars("huggingface_hub.http_get")  # progress goes to our callback, not to stderr
    assert ref.repo is not None
    url = hf_hub_url(ref.repo, ref.filename, revision=ref.revision or DEFAULT_REVISION, endpoint=endpoint)
    meta = get_hf_file_metadata(url, token=token, endpoint=endpoint)
    if meta.commit_hash is None or not meta.etag:
        raise PullError(
            f"{endpoint} did not answer like a Hugging Face hub (no X-Repo-Commit or ETag header)",
            "check HF_ENDPOINT, the proxy settings, or download the file and use file:/path.gguf",
        )
    size = meta.size
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(f".{dest.name}.{_ETAG_SAFE.sub('', meta.etag)[:64]}.part")
    for old in _partials(dest):
        if old != part:  # the file changed upstream: an old partial is useless
            old.unlink(missing_ok=True)
    have = part.stat().st_size if part.exists() else 0
    if size is not None and have > size:
        part.unlink()
        have = 0
    if size is not None:
        free = shutil.disk_usage(dest.parent).free
        if free < size - have:
            raise PullError(
                f"not enough disk space for {ref.uri}: needs {_mb(size - have)}, {_mb(free)} free in {dest.parent}",
                "free some space, or remove unused models (gnoctl models clear)",
            )
    headers = build_hf_headers(token=token)
    if _origin(meta.location) != _origin(url):  # a CDN's signed URL: the token stays with the hub
        headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
    if have:
        log.info("resuming %s at %s of %s", ref.uri, _mb(have), _mb(size or 0))
    total = size or 0
    with open(part, "r+b" if have else "wb") as f:
        f.seek(have)
        sink = _ProgressFile(f, total, progress)
        if progress:
            progress(have, total)
        if size is None or have < size:  # else: complete, stopped before the rename
            http_get(
                meta.location,
                cast(BinaryIO, sink),
                resume_size=have,
                headers=headers,
                expected_size=size,
                displayed_filename=ref.filename,
            )
    got = part.stat().st_size
    if size is not None and got != size:
        raise PullError(
            f"download of {ref.uri} stopped at {_mb(got)} of {_mb(size)}",
            "run the pull again: it resumes where it stopped",
        )
    if not _matches_etag(part, meta.etag):
        part.unlink(missing_ok=True)
        raise PullError(
            f"the downloaded {ref.filename} does not match its checksum ({meta.etag}); it was deleted",
            "run the pull again; if it fails again, the server (HF_ENDPOINT) serves a different file",
        )
    os.replace(part, dest)
    if progress:
        progress(got, got)
    log.info("pulled %s (%s) into %s", ref.uri, _mb(got), dest)
    return dest


class _ProgressFile:
    """The file http_get writes to, reporting the bytes on disk after every chunk."""

    def __init__(self, f: IO[bytes], total: int, progress: Progress | None) -> None:
        self._f = f
        self._total = total
        self._progress = progress

    def write(self, data: bytes) -> int:
        n = self._f.write(data)
        if self._progress:
            self._progress(self._f.tell(), self._total)
        return n

    def __getattr__(self, name: str) -> Any:  # seek, tell, truncate, flush…
        return getattr(self._f, name)


def _matches_etag(path: Path, etag: str) -> bool:
    """True unless the ETag is a content hash the file fails: sha256 (LFS) or git blob sha1."""
    tag = etag.lower()
    if re.fullmatch(r"[0-9a-f]{64}", tag):
        h = hashlib.sha256()
    elif re.fullmatch(r"[0-9a-f]{40}", tag):
        h = hashlib.sha1(f"blob {path.stat().st_size}\0".encode(), usedforsecurity=False)
    else:
        return True
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest() == tag


@contextmanager
def _locked(cache_dir: Path, dest: Path) -> Iterator[None]:
    """One downloader per file across processes; a second pull waits, then finds the file.
    Lock files live apart (.locks/) and stay: deleting one another process waits on is a race."""
    locks = cache_dir / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(str(dest.relative_to(cache_dir)).encode()).hexdigest()[:16]
    with open(locks / f"{key}.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _partials(dest: Path) -> list[Path]:
    return [Path(p) for p in glob.glob(str(dest.with_name(f".{glob.escape(dest.name)}.*.part")))]


def _prune_empty(d: Path, root: Path) -> None:
    while d != root and root in d.parents:
        try:
            d.rmdir()
        except OSError:
            return
        d = d.parent


def _origin(url: str) -> tuple[str, str, int | None]:
    u = urlsplit(url)
    return u.scheme, (u.hostname or "").lower(), u.port


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


# --- errors --------------------------------------------------------------------------------

_NETWORK_ERRORS = {
    "ConnectError",
    "ConnectTimeout",
    "TimeoutException",
    "ReadTimeout",
    "WriteTimeout",
    "PoolTimeout",
    "NetworkError",
    "ReadError",
    "WriteError",
    "RemoteProtocolError",
    "ProxyError",
    "ConnectionError",
    "Timeout",
}


def _explain(e: Exception, ref: ModelRef, endpoint: str, dest: Path) -> PullError:
    """A person's account of a download failure, with what to do about it."""
    from huggingface_hub import errors as hf

    host = urlsplit(endpoint).netloc or endpoint
    repo_url = f"{endpoint}/{ref.repo}"
    rev = ref.revision or DEFAULT_REVISION
    offline = "set HF_ENDPOINT to a mirror, or download the file yourself and use file:/path/to/model.gguf"
    if isinstance(e, hf.OfflineModeIsEnabled):
        return PullError(f"cannot download {ref.uri}: HF_HUB_OFFLINE is set", f"unset HF_HUB_OFFLINE; or {offline}")
    if isinstance(e, hf.GatedRepoError):
        return PullError(
            f"{ref.repo} is gated: its licence must be accepted before downloading",
            f"accept it at {repo_url} while logged in, then set HF_TOKEN to a token of that account",
        )
    if isinstance(e, hf.RepositoryNotFoundError):
        return PullError(
            f"repository {ref.repo} not found on {host} (or it is private)",
            "check the URI; for a private repo set HF_TOKEN",
        )
    if isinstance(e, hf.FileMetadataError):
        return PullError(
            f"{host} did not answer like a Hugging Face hub: {e}",
            f"check HF_ENDPOINT and the proxy settings; or {offline}",
        )
    if isinstance(e, hf.RevisionNotFoundError):
        return PullError(f"revision {rev!r} not found in {ref.repo}", f"check the @revision; see {repo_url}")
    status = getattr(getattr(e, "response", None), "status_code", None)
    if isinstance(e, hf.EntryNotFoundError) or status == 404:
        return PullError(
            f"file {ref.filename!r} not found in {ref.repo} at {rev}",
            f"check the file name: {repo_url}/tree/{quote(rev, safe='')} lists the files",
        )
    if status in (401, 403):
        return PullError(
            f"{host} refused access to {ref.repo} (HTTP {status})", "set HF_TOKEN to a token that can read it"
        )
    if isinstance(e, hf.HfHubHTTPError) and status is not None:
        return PullError(
            f"{host} answered HTTP {status} for {ref.uri}",
            f"try again later (the pull resumes where it stopped); or {offline}",
        )
    names = {c.__name__ for c in type(e).__mro__}
    if names & _NETWORK_ERRORS:
        partial = sum(p.stat().st_size for p in _partials(dest) if p.exists())
        if partial:
            return PullError(
                f"download of {ref.uri} interrupted after {_mb(partial)}: {e}",
                "run the pull again: it resumes where it stopped",
            )
        return PullError(f"cannot reach {host}: {e}", f"check the network; or {offline}")
    if isinstance(e, OSError):
        return PullError(
            f"cannot write {ref.uri} into {dest.parent}: {e}", "check free space and permissions of the cache directory"
        )
    return PullError(f"cannot download {ref.uri}: {type(e).__name__}: {e}")
