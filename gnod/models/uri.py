"""Model URIs: where a model file comes from, parsed once into a ModelRef.

    hf:ORG/REPO/PATH/TO/FILE.gguf             a file of a Hugging Face repo, on its main branch
    hf:ORG/REPO@REVISION/PATH/TO/FILE.gguf    the same at a branch, tag or commit
    file:/abs/path.gguf   file:~/x.gguf   file:///abs/path.gguf   /abs/path.gguf   ~/x.gguf
    openai+http://HOST:PORT/v1#MODEL          a model an OpenAI-compatible server runs
    openai+https://HOST/v1#MODEL              (llama.cpp's server, vLLM, Ollama, TEI)

The revision is written on the repo because that is what it versions, and a repo id
cannot contain '@', so the split is unambiguous. A revision with a '/' in it (refs/pr/1)
is percent-encoded: hf:org/repo@refs%2Fpr%2F1/model.gguf. A file path must be absolute:
gnod does not run in the directory the URI was typed in.

The URI string itself (as written in config.toml) names a model everywhere else: its
vector table is named from a hash of it (gnod.store.vectors.table_for), so two
spellings of one file are two models.
"""

from __future__ import annotations

import os
import re
from typing import Literal
from urllib.parse import quote, unquote, urlsplit

import msgspec

from gnod.paths import file_url_path

Scheme = Literal["hf", "file", "openai"]
DEFAULT_REVISION = "main"
EXAMPLES = (
    "hf:org/repo/model-Q4_K_M.gguf, hf:org/repo@main/model-Q4_K_M.gguf, file:/path/to/model.gguf "
    "or openai+http://127.0.0.1:8080/v1#model-name"
)
REMOTE_PREFIX = "openai+"

# Hugging Face's own rule for a repo name part: letters, digits, '-', '_', '.', no '--' or '..',
# not starting or ending with '-' or '.', at most 96 characters.
_NAME_RE = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?$")
_HF_URL_RE = re.compile(
    r"^https?://(?:www\.)?(?:huggingface\.co|hf\.co)/([^/]+)/([^/]+)/(?:resolve|blob)/([^/]+)/(.+)$"
)


class ModelURIError(ValueError):
    """A model URI that cannot be used; the message says what is wrong and shows good ones."""


class ModelRef(msgspec.Struct, frozen=True, kw_only=True):
    scheme: Scheme
    repo: str | None = None  # "org/name" (hf)
    filename: str  # path inside the repo (hf), or the file's base name (file)
    revision: str | None = None  # branch, tag or commit (hf); None = the main branch
    path: str | None = None  # absolute, ~ expanded (file)
    url: str | None = None  # the server's API base, e.g. http://127.0.0.1:8080/v1 (openai)

    @property
    def remote(self) -> bool:
        """Served by an inference server: nothing to download or load here."""
        return self.scheme == "openai"

    @property
    def uri(self) -> str:
        """The canonical spelling: what `parse` reads back into an equal ModelRef."""
        if self.scheme == "file":
            return f"file:{self.path}"
        if self.scheme == "openai":
            return f"{REMOTE_PREFIX}{self.url}#{self.filename}"
        rev = f"@{quote(self.revision, safe='')}" if self.revision is not None else ""
        return f"hf:{self.repo}{rev}/{self.filename}"


def named(uri: str) -> str:
    """A model as a sentence names it: its file's name (`multilingual-e5-small-q8_0.gguf`,
    where the URI ran to 120 characters, said three times in each degraded `query`), or
    a served model's name; the URI as written where it does not parse."""
    try:
        ref = parse(uri)
    except ModelURIError:
        return uri
    return ref.filename.rpartition("/")[2]


def _bad(uri: str, why: str) -> ModelURIError:
    return ModelURIError(f"bad model URI {uri!r}: {why}; examples: {EXAMPLES}")


def parse(uri: str) -> ModelRef:
    """Read a model URI; ModelURIError says what is wrong with a bad one."""
    if not isinstance(uri, str) or not uri.strip():
        raise ModelURIError(f"empty model URI; examples: {EXAMPLES}")
    uri = uri.strip()
    if uri.startswith("hf:"):
        if uri.startswith("hf://"):
            raise _bad(uri, f"write hf: without '//' (hf:{uri[5:]})")
        return _parse_hf(uri, uri[3:])
    if uri.startswith(REMOTE_PREFIX):
        return _parse_remote(uri, uri[len(REMOTE_PREFIX) :])
    if uri.startswith("file:"):
        rest = uri[5:]
        if rest.startswith("//"):  # file:///abs/path (a standard file URL; the host must be empty)
            local = file_url_path(uri)
            if local is None:
                host = rest[2:].partition("/")[0]
                raise _bad(uri, f"a file URL names this machine's files, not host {host!r}")
            rest = local
        return _parse_file(uri, rest)
    if uri.startswith(("/", "~")):
        return _parse_file(uri, uri)
    m = _HF_URL_RE.match(uri)
    if m:
        org, name, rev, path = m.groups()
        at = "" if rev == DEFAULT_REVISION else f"@{rev}"
        raise _bad(uri, f"use the hf: form of this URL: hf:{org}/{name}{at}/{unquote(path.split('?')[0])}")
    scheme = urlsplit(uri).scheme
    if scheme and len(scheme) > 1:  # "C:" is a Windows drive, not a scheme
        if scheme in ("http", "https") and not uri.split("#")[0].endswith(".gguf"):
            raise _bad(uri, f"a model on a server is written {REMOTE_PREFIX}{uri.split('#')[0]}#MODEL-NAME")
        raise _bad(uri, f"unknown scheme {scheme + ':'!r} (gno reads hf:, file: and {REMOTE_PREFIX}http:)")
    raise _bad(uri, "a path must be absolute (gnod runs in another directory)")


def _parse_hf(uri: str, rest: str) -> ModelRef:
    parts = rest.split("/")
    if len(parts) < 3 or not parts[2]:
        if len(parts) == 1 or (len(parts) == 2 and parts[1].endswith(".gguf")):
            raise _bad(uri, "give the repo's owner, the repo and the file (hf:ORG/REPO/FILE)")
        raise _bad(uri, "it names a repository but no file in it (hf:ORG/REPO/FILE)")
    org, name = parts[0], parts[1]
    revision = None
    if "@" in name:
        name, _, rev = name.partition("@")
        revision = unquote(rev)
        if not revision.strip() or any(c in revision for c in "\\\n\r\t") or ".." in revision.split("/"):
            raise _bad(uri, f"revision {rev!r} is not a branch, tag or commit")
        if revision == "refs":
            raise _bad(uri, "write the '/' of a revision as %2F (hf:ORG/REPO@refs%2Fpr%2F1/FILE)")
    for label, part in (("owner", org), ("repo name", name)):
        if not part:
            raise _bad(uri, f"the {label} is empty")
        if not _NAME_RE.match(part) or "--" in part or ".." in part:
            raise _bad(uri, f"{label} {part!r} is not a Hugging Face name (letters, digits, '-', '_', '.')")
    filename = "/".join(parts[2:])
    segments = parts[2:]
    if any(s in ("", ".", "..") for s in segments) or "\\" in filename or any(ord(c) < 32 for c in filename):
        raise _bad(uri, f"file path {filename!r} is not a clean path inside the repo")
    return ModelRef(scheme="hf", repo=f"{org}/{name}", filename=filename, revision=revision)


def _parse_remote(uri: str, rest: str) -> ModelRef:
    base, sep, model = rest.partition("#")
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _bad(uri, f"after {REMOTE_PREFIX!r} comes the server's http:// or https:// API address")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise _bad(
            uri, "the server address takes no query or credentials (the API key comes from [models] api_key_env)"
        )
    try:
        parts.port  # noqa: B018 (validates it)
    except ValueError:
        raise _bad(uri, f"bad port in {base!r}") from None
    model = unquote(model).strip()
    if not sep or not model:
        raise _bad(uri, "name the model the server should use after '#' (…/v1#model-name)")
    return ModelRef(scheme="openai", filename=model, url=base.rstrip("/"))


def _parse_file(uri: str, path: str) -> ModelRef:
    if not path:
        raise _bad(uri, "the path is empty")
    expanded = os.path.expanduser(path)
    if path.startswith("~") and expanded.startswith("~"):
        raise _bad(uri, f"cannot expand {path.split('/')[0]!r} (no such user)")
    if not os.path.isabs(expanded):
        raise _bad(uri, f"{path!r} is a relative path; give an absolute one (gnod runs in another directory)")
    if expanded.endswith(os.sep) or os.path.basename(os.path.normpath(expanded)) in ("", ".", ".."):
        raise _bad(uri, "the path names a directory, not a model file")
    expanded = os.path.normpath(expanded)
    return ModelRef(scheme="file", filename=os.path.basename(expanded), path=expanded)


def as_ref(ref: ModelRef | str) -> ModelRef:
    return ref if isinstance(ref, ModelRef) else parse(ref)
