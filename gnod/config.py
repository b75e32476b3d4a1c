"""The user's config file (TOML): collections and daemon settings, strictly validated.

Unknown keys and wrong types are errors that name the key (msgspec's path, e.g.
`$.collections[0].paht`), so a typo never silently drops a setting.
"""

from __future__ import annotations

import difflib
import os
import re
import tempfile
from typing import Annotated, Literal

import msgspec

from gnod import editor_url
from gnod.models.base import ROLES, Role
from gnod.models.presets import DEFAULT_PRESET, preset
from gnod.protocol import DESCRIPTION_MAX
from gnod.text.language import normalize_language

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def name_for(path: str) -> str:
    """A collection's name when none is given: its folder's, what NAME_RE refuses in it
    made `-` (`My Notes` → `My-Notes`)."""
    base = path.rstrip("/").rpartition("/")[2] or "root"
    cleaned = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "_.-") else "-" for ch in base).lstrip("._-")
    return (cleaned or "docs")[:64]


# Prose: a `# line` is a heading (a title).
# R Markdown and Quarto (`.Rmd`, `.qmd`) are Markdown with code chunks: a data project's analyses.
PROSE_EXTENSIONS: tuple[str, ...] = (
    ".md",
    ".markdown",
    ".mdx",
    ".rmd",
    ".qmd",
    ".txt",
    ".text",
    ".rst",
    ".org",
    ".adoc",
)
# Markdown, plain text and source code: indexed as written.
# systemd's unit files: an ops folder's services, sockets, timers and mounts (INI-like config).
SYSTEMD_UNITS = (".service", ".socket", ".timer", ".mount", ".automount", ".target")
TEXT_EXTENSIONS: tuple[str, ...] = PROSE_EXTENSIONS + (
    ".py",
    ".pyi",
    ".js",
    ".jsx",
    ".ts",
    ".tsx",
    ".mjs",
    ".go",
    ".rs",
    ".java",
    ".kt",
    ".c",
    ".h",
    ".cc",
    ".cpp",
    ".hpp",
    ".cs",
    ".rb",
    ".php",
    ".swift",
    ".scala",
    ".lua",
    ".sh",
    ".bash",
    ".zsh",
    ".fish",
    ".sql",
    ".r",
    ".jl",
    ".pl",
    ".ex",
    ".exs",
    ".erl",
    ".hs",
    ".ml",
    ".clj",
    ".dart",
    ".vue",
    ".svelte",
    ".css",
    ".scss",
    ".toml",
    ".yaml",
    ".yml",
    ".ini",
    ".cfg",
    ".cnf",  # INI as MySQL and OpenSSL write it (my.cnf, openssl.cnf)
    ".tex",
    ".bib",
    # Assembler (.S and .s), C++ and Objective-C headers and sources, CUDA.
    ".s",
    ".asm",
    ".hh",
    ".hxx",
    ".cxx",
    ".inl",
    ".cu",
    ".cuh",
    ".m",
    ".mm",
    # Device trees, linker scripts, syscall tables, parser sources, build and config files,
    # interface definitions, editors' and shells' scripts.
    ".dts",
    ".dtsi",
    ".lds",
    ".tbl",
    ".y",
    ".l",
    ".defconfig",
    ".mk",
    ".mak",
    ".cmake",
    ".kconfig",
    ".dockerfile",
    ".gradle",
    ".bzl",
    ".proto",
    ".zig",
    ".el",
    ".vim",
    ".ps1",
    ".groovy",
    ".kts",
    ".cjs",
    ".mts",
    ".cts",
    ".less",
    ".sass",
    ".tf",
    ".nix",
    ".awk",
    ".conf",
    ".properties",
    # Configuration fragments (kernel/configs/*.config), Coccinelle's semantic patches,
    # litmus tests, Graphviz graphs, ASN.1 modules, linker scripts, gettext translations.
    ".config",
    ".cocci",
    ".litmus",
    ".dot",
    ".gv",
    ".asn1",
    ".ld",
    ".po",
    ".pot",
    *SYSTEMD_UNITS,
)
# Source code and config, where `# …` is a comment, never a title.
CODE_EXTENSIONS: frozenset[str] = frozenset(TEXT_EXTENSIONS) - frozenset(PROSE_EXTENSIONS)
# Configuration: keys and values, with a few descriptions among them. A detector's verdict
# on such a file is a guess, however long it is (one maintainer's name made a device
# tree binding Polish, another's Dutch): ingest.prepare marks it unsure, and
# ingest.pipeline.settle_languages gives it the collection's language where one dominates.
CONFIG_EXTENSIONS: frozenset[str] = frozenset(
    {".toml", ".yaml", ".yml", ".ini", ".cfg", ".cnf", ".conf", ".config", ".properties", *SYSTEMD_UNITS}
)
# TeX's files (LaTeX, BibTeX): their accented letters are spelled as commands (G\"odel),
# read as letters for the index and passages (gnod.text.tex).
TEX_EXTENSIONS: frozenset[str] = frozenset({".tex", ".bib"})
# Program source (code without config and markup): its keywords and identifiers, and
# nearly always its comments, are English, so it is not run through language detection
# (which only guesses at identifiers).
SOURCE_EXTENSIONS: frozenset[str] = (
    CODE_EXTENSIONS
    - CONFIG_EXTENSIONS
    - TEX_EXTENSIONS
    - {".po", ".pot"}  # translations: in the languages they translate into
)
# Program source is stemmed in English, marked unsure: in a collection that is mostly in
# another language (German comments), ingest.pipeline.settle_languages gives it that language.
SOURCE_LANGUAGE = "english"
# Languages whose names are camelCase (kmallocNode, HTTPServer): their parts are indexed
# too (text.analyzer.identifier_parts), so `node` finds them. C is left out: its names are
# snake_case, which the tokenizer splits already, and looking for humps in the kernel's
# C would cost ~11 CPU-s of its ingest.
CAMEL_CASE_EXTENSIONS: frozenset[str] = frozenset(
    {".py", ".pyi", ".js", ".jsx", ".ts", ".tsx", ".mjs", ".go", ".rs", ".java", ".kt", ".cc", ".cpp", ".hpp"}
    | {".cs", ".rb", ".php", ".swift", ".scala", ".dart", ".vue", ".svelte", ".hs", ".ml", ".clj", ".jl"}
    | {".cxx", ".hxx", ".hh", ".inl", ".cu", ".cuh", ".m", ".mm", ".cjs", ".mts", ".cts", ".kts", ".groovy"}
    | {".gradle", ".zig", ".proto", ".ps1"}
)
# Formats converted to Markdown, by the converter gnod.ingest.convert registers for each.
CONVERTED: dict[str, tuple[str, ...]] = {
    "html": (".html", ".htm", ".xhtml"),
    "pdf": (".pdf",),
    "docx": (".docx",),
    "odt": (".odt",),
    "rtf": (".rtf",),
    "xlsx": (".xlsx",),
    "pptx": (".pptx",),
    "epub": (".epub",),
    "csv": (".csv", ".tsv"),
    "json": (".json",),
    "ipynb": (".ipynb",),
    # Transcripts (subtitles, captions) and calendars: gnod.ingest.media.
    "srt": (".srt",),
    "vtt": (".vtt",),
    "ics": (".ics",),
    # One e-mail message; a mailbox of them is a container (MAILBOX_SUFFIXES, below).
    "eml": (".eml",),
    "msg": (".msg",),  # an Outlook message: read into its MIME form, then converted as an .eml
    # Pictures: their text read by OCR (gnod.ingest.ocr, Tesseract).
    "image": (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".gif", ".bmp"),
}
DOCUMENT_EXTENSIONS: tuple[str, ...] = tuple(ext for exts in CONVERTED.values() for ext in exts)
# Tables: their cells are names, numbers and codes more than prose, so the language read
# from them is only a guess (a CSV of English headers and Polish operators' names read
# as Polish), which a collection's dominant language settles (ingest.pipeline).
TABLE_EXTENSIONS: frozenset[str] = frozenset(CONVERTED["csv"] + CONVERTED["xlsx"])
# Manual pages, by their section (`ls.1`, `systemd.exec.5`, `GET.1p`, `CA.pl.1ssl`) or
# `.man`: roff source, read as Markdown (gnod.ingest.manpage) where the text starts as a
# page does (a rotated log, `syslog.1`, is text). Not a default kind: `--also '*.[1-9]*'`
# takes them, gzipped as /usr/share/man keeps them too.
MAN_EXTENSIONS: frozenset[str] = frozenset(
    {f".{n}{kind}" for n in range(1, 10) for kind in ("", "p", "pm", "ssl", "x", "perl", "tcl")} | {".man"}
)
# Files that hold documents, each member one (gnod.ingest.containers), by how their
# names end: archives and mailboxes (mbox: each message an .eml).
ARCHIVE_SUFFIXES = (".zip", ".7z", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
MAILBOX_SUFFIXES = (".mbox",)
CONTAINER_SUFFIXES = ARCHIVE_SUFFIXES + MAILBOX_SUFFIXES
# Between a container's path and a member's: `mail/archive.mbox!/3.eml`, `docs.zip!/a/b.md`.
MEMBER_SEP = "!/"
# What a note's name leaves off where a wiki link names it (`[[Project Alpha]]`), and `get`.
NOTE_SUFFIX = ".md"
# A gzip file (a rotated log, a man page, `notes.md.gz`) is read as the file it holds,
# which is named without the suffix (`uncompressed`); an archive's (`.tar.gz`) is a container.
COMPRESSED_SUFFIX = ".gz"


def uncompressed(path: str) -> str:
    """The name of the file a gzip file holds: `syslog.2.gz` → `syslog.2`; any other path as it is."""
    return path[: -len(COMPRESSED_SUFFIX)] if path[-3:].lower() == COMPRESSED_SUFFIX else path


# A Maildir message (maildir(5)): a file in the cur/ or new/ folder of a Maildir, named
# <seconds>.<unique part>.<host name>[:2,<flags>]. It has no extension of its own (what
# looks like one ends the host name: .org, .net); it is an .eml. A note named by its
# time (new/1700000000.md) has one dot, no flags: it stays what its extension says.
_MAILDIR_MESSAGE_RE = re.compile(r"(?:^|/)(?:cur|new)/\d{9,}\.(?:[^/.]+\.[^/]+|[^/]*:2,[^/]*)$")


# Files known by their name, not an extension: build files (each with what it holds, by
# the extension such a file would have), and the plain text files at the top of a
# project. A family also names its variants (Kconfig.debug, Makefile_32.cpu,
# LICENSE-MIT) when what follows its name is no extension of ours. Spelled as written: a
# `todo` or an `install` is as likely a program as a note.
NAMED_FILES: dict[str, str] = {
    **dict.fromkeys(("Makefile", "makefile", "GNUmakefile", "Kbuild"), ".mk"),
    "Kconfig": ".kconfig",
    **dict.fromkeys(("Dockerfile", "Containerfile"), ".dockerfile"),
    "Jenkinsfile": ".groovy",
    **dict.fromkeys(("Gemfile", "Rakefile", "Vagrantfile"), ".rb"),
    "CMakeLists.txt": ".cmake",
    **dict.fromkeys(
        ("README", "LICENSE", "LICENCE", "COPYING", "NOTICE", "AUTHORS", "CREDITS", "CONTRIBUTORS"), ".txt"
    ),
    **dict.fromkeys(("MAINTAINERS", "CHANGELOG", "CHANGES", "NEWS", "HISTORY", "INSTALL", "TODO"), ".txt"),
}


# Kinds of files a search may be narrowed to (`--type`, as ripgrep's `-t` names them):
# each the path globs of its files (search.filters reads them as `--path` globs, a
# converted format's extension in lower or upper case: a scanner's SCAN0001.PDF is a pdf).
FILE_TYPES: dict[str, tuple[str, ...]] = {
    "c": ("*.c", "*.h"),
    "cpp": ("*.cc", "*.cpp", "*.cxx", "*.hh", "*.hpp", "*.hxx", "*.inl", "*.h", "*.cu", "*.cuh"),
    "h": ("*.h", "*.hh", "*.hpp", "*.hxx"),  # headers alone, as ripgrep's `-t h`
    "cs": ("*.cs",),
    "go": ("*.go",),
    "java": ("*.java",),
    "js": ("*.js", "*.jsx", "*.mjs", "*.cjs"),
    "ts": ("*.ts", "*.tsx", "*.mts", "*.cts"),
    "py": ("*.py", "*.pyi"),
    "rust": ("*.rs",),
    "ruby": ("*.rb", "**/Gemfile", "**/Rakefile"),
    "php": ("*.php",),
    "swift": ("*.swift",),
    "kotlin": ("*.kt", "*.kts"),
    "sh": ("*.sh", "*.bash", "*.zsh"),
    "asm": ("*.s", "*.S", "*.asm"),
    "dts": ("*.dts", "*.dtsi"),
    "kconfig": ("**/Kconfig", "**/Kconfig.*"),
    "make": ("**/Makefile", "**/makefile", "**/GNUmakefile", "**/Kbuild", "*.mk"),
    "cmake": ("**/CMakeLists.txt", "*.cmake"),
    "docker": ("**/Dockerfile", "**/Containerfile"),
    "md": ("*.md", "*.markdown", "*.mdx", "*.Rmd", "*.rmd", "*.qmd"),
    "rst": ("*.rst",),
    "txt": ("*.txt", "*.text"),
    "org": ("*.org",),
    "adoc": ("*.adoc",),
    "tex": ("*.tex", "*.bib"),
    "yaml": ("*.yaml", "*.yml"),
    "toml": ("*.toml",),
    "ini": ("*.ini", "*.cnf"),
    "config": ("*.cfg", "*.conf", "*.config", "*.ini", "*.cnf", "*.properties"),
    # A unit, and a drop-in that changes one (`myapp.service.d/override.conf`).
    "systemd": tuple(f"*{ext}" for ext in SYSTEMD_UNITS) + tuple(f"**/*{ext}.d/*.conf" for ext in SYSTEMD_UNITS),
    # Indexed where a collection's globs take them (`--also '*.log'`); rotated ones too
    # (`app.log.1`, `app.log.2.gz`, syslog's).
    "log": ("*.log", "*.log.*", "**/syslog", "**/syslog.*"),
    "man": tuple(f"{glob}{gz}" for glob in ("*.[1-9]", "*.[1-9][a-z]*", "*.man") for gz in ("", COMPRESSED_SUFFIX)),
    "json": ("*.json",),
    "html": tuple(f"*{ext}" for ext in CONVERTED["html"]),
    "css": ("*.css", "*.scss"),
    "sql": ("*.sql",),
    "pdf": tuple(f"*{ext}" for ext in CONVERTED["pdf"]),
    "office": tuple(f"*{ext}" for kind in ("docx", "odt", "rtf", "xlsx", "pptx") for ext in CONVERTED[kind]),
    **{
        kind: tuple(f"*{ext}" for ext in CONVERTED[kind])
        for kind in ("docx", "odt", "rtf", "xlsx", "pptx", "epub", "csv")
    },
    "tsv": ("*.tsv",),  # tab-separated alone (`csv` has them too)
    "ipynb": tuple(f"*{ext}" for ext in CONVERTED["ipynb"]),
    "mail": tuple(f"*{ext}" for kind in ("eml", "msg") for ext in CONVERTED[kind]),
    "subtitles": tuple(f"*{ext}" for kind in ("srt", "vtt") for ext in CONVERTED[kind]),
    "calendar": tuple(f"*{ext}" for ext in CONVERTED["ics"]),
    "image": tuple(f"*{ext}" for ext in CONVERTED["image"]),
}


_FAMILY_END = re.compile(r"[.\-_]")  # where a family's name ends in a variant's (Makefile_32.cpu)
_CONVERTED = frozenset(DOCUMENT_EXTENSIONS)


def converted(rel_path: str) -> bool:
    """Whether a document's text is converted to Markdown from its file (a PDF, a slide
    deck, a manual page, a mailbox's or an archive's member, a gzip file's), not the file's own text."""
    ext = extension(rel_path)
    return MEMBER_SEP in rel_path or ext in _CONVERTED or ext in MAN_EXTENSIONS or uncompressed(rel_path) != rel_path


def extension(path: str) -> str:
    """A file's extension, lowercase, as the sets above hold it: what os.path.splitext
    gives (".bashrc" has none), without its general path handling (a walk asks for
    every file); ".eml" for a Maildir message (given with its folder, as in `cur/1700…`);
    for a file NAMED_FILES knows, the extension it stands for (Makefile: ".mk")."""
    name = path.rpartition("/")[2].lstrip(".")
    dot = name.rfind(".")
    ext = name[dot:].lower() if dot > 0 else ""
    if name[:1].isdigit() and _MAILDIR_MESSAGE_RE.search(path):
        return ".eml"
    if ext in INDEXED_BY_DEFAULT:
        return NAMED_FILES.get(name, ext)  # CMakeLists.txt
    if name.endswith("defconfig"):  # arch/arm64/configs/defconfig, x86_64_defconfig
        return ".defconfig"
    return NAMED_FILES.get(_FAMILY_END.split(name, 1)[0], ext)


# What a collection indexes when it has no include globs (by `extension`, so with NAMED_FILES).
DEFAULT_EXTENSIONS: tuple[str, ...] = TEXT_EXTENSIONS + DOCUMENT_EXTENSIONS
INDEXED_BY_DEFAULT: frozenset[str] = frozenset(DEFAULT_EXTENSIONS)
# Directories nobody wants indexed; a user's exclude globs come on top. A project's
# build output (OUTPUT_DIRS) is left out too, but in a project's tree (a git work tree,
# or a .gitignore at its top) whose .gitignore files are followed: there they say what
# is output, and a folder so named that they leave in is source (the kernel's
# tools/build/, a Makefile's helpers).
DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".git/",
    ".hg/",
    ".svn/",
    "node_modules/",
    ".venv/",
    "venv/",
    "__pycache__/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".tox/",
    ".cache/",
    "dist/",
    "build/",
    # A notes app's own settings (Obsidian rewrites its workspace.json as you work), and
    # the deleted notes that it and the desktop's trash keep.
    ".obsidian/",
    ".trash/",
    ".Trash/",
    ".Trashes/",
    ".DS_Store",
)
OUTPUT_DIRS: frozenset[str] = frozenset(("dist", "build"))


class ConfigError(Exception):
    """The config file (or a collection definition) is invalid; the message names the key."""


class CollectionConfig(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True):
    name: str
    path: str
    # gitignore-style globs relative to the collection root; empty = DEFAULT_EXTENSIONS.
    include: list[str] = []
    exclude: list[str] = []
    # Files indexed besides those `include` (or the default kinds) takes: `*.tc` adds test
    # cases to a source tree's defaults, where an include glob would replace them.
    also: list[str] = []
    # Snowball language name or ISO code; unset = detect per document.
    language: str | None = None
    gitignore: bool = True
    # Follow symbolic links whose targets stay inside the collection (never outside it).
    follow_symlinks: bool = False
    # What the collection holds, in a sentence: shown to people and agents choosing where to search.
    description: str | None = None


def same_files(a: CollectionConfig, b: CollectionConfig) -> bool:
    """Whether two configs of a collection index the same files (a new description does not
    change what is watched or indexed)."""
    return msgspec.structs.replace(a, description=None) == msgspec.structs.replace(b, description=None)


class DaemonConfig(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True):
    log_level: str = "info"
    # Processes that prepare documents on big index runs; unset = cores - 1 (1 to 4), 0 = none.
    ingest_workers: Annotated[int, msgspec.Meta(ge=0, le=64)] | None = None


class ModelsConfig(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True):
    # light | slim | balanced | quality (gnod.models.presets); a role's URI below overrides it.
    preset: str = DEFAULT_PRESET
    embed: str | None = None  # hf:org/repo/file.gguf or file:/path.gguf
    rerank: str | None = None
    generate: str | None = None
    # llama.cpp threads per model; unset = measured: 1, half and all the cores are tried on
    # background embedding batches and the fastest is used (gnod.models.threads).
    threads: Annotated[int, msgspec.Meta(ge=1, le=256)] | None = None
    # Unload a model after this many idle seconds; 0 = keep it loaded.
    idle_unload_s: Annotated[float, msgspec.Meta(ge=0)] = 900.0
    # Load every configured model at start instead of on first use.
    eager: bool = False
    # Embed new and changed chunks in the background (off: only `gnoctl embed`).
    embed_in_background: bool = True
    # The environment variable holding the API key for openai+http(s): model servers.
    api_key_env: str | None = None
    # Layers of each local model to put on the GPU (-1: all); needs a GPU build of llama.cpp.
    gpu_layers: Annotated[int, msgspec.Meta(ge=-1)] = 0
    main_gpu: Annotated[int, msgspec.Meta(ge=0)] = 0  # which GPU, when there are several
    # Memory for loaded local models (MiB); idle ones are unloaded first to stay within it.
    max_memory_mb: Annotated[int, msgspec.Meta(ge=1)] | None = None

    def uri_for(self, role: Role) -> str:
        """The model URI a role uses: this config's own URI for it, else its preset's."""
        return getattr(self, role) or preset(self.preset).spec(role).uri


class ClientConfig(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True):
    """What clients read (gnod only checks it): how a hit's path links to an editor."""

    # A name from gnod.editor_url.ALIASES (vscode, cursor, idea…) or a template with {path},
    # {line}, {host}; unset = file://{host}{path}#{line}.
    editor_url: str | None = None
    # Terminal hyperlinks (OSC 8) on a hit's path: auto = on terminals known to show them.
    hyperlinks: Literal["auto", "always", "never"] = "auto"


class Config(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True):
    collections: list[CollectionConfig] = []
    daemon: DaemonConfig = msgspec.field(default_factory=DaemonConfig)
    models: ModelsConfig = msgspec.field(default_factory=ModelsConfig)
    client: ClientConfig = msgspec.field(default_factory=ClientConfig)


def validate_collection(c: CollectionConfig, where: str = "collection") -> CollectionConfig:
    """Normalize one collection (absolute path, canonical language) or raise ConfigError."""
    if not NAME_RE.match(c.name):
        raise ConfigError(
            f"{where}.name: {c.name!r} is not a valid name (letters, digits, '_', '.', '-'; "
            "must start with a letter or digit; at most 64 characters)"
        )
    if not c.path.strip():
        raise ConfigError(f"{where}.path: must not be empty")
    language = None
    if c.language:
        try:
            language = normalize_language(c.language)
        except ValueError as e:
            raise ConfigError(f"{where}.language: {e}") from None
    for key, globs in (("include", c.include), ("exclude", c.exclude), ("also", c.also)):
        for g in globs:
            if not g.strip():
                raise ConfigError(f"{where}.{key}: empty glob")
    description = " ".join((c.description or "").split()) or None  # one line, as every client shows it
    if description and len(description) > DESCRIPTION_MAX:
        raise ConfigError(f"{where}.description: longer than {DESCRIPTION_MAX} characters (say it in a sentence)")
    path = os.path.abspath(os.path.expanduser(c.path))
    return msgspec.structs.replace(c, path=path, language=language, description=description)


def validate(config: Config) -> Config:
    seen: set[str] = set()
    cols = []
    for i, c in enumerate(config.collections):
        c = validate_collection(c, f"collections[{i}]")
        if c.name in seen:
            raise ConfigError(f"collections[{i}].name: duplicate collection name {c.name!r}")
        seen.add(c.name)
        cols.append(c)
    if config.daemon.log_level.lower() not in ("debug", "info", "warning", "error"):
        raise ConfigError("daemon.log_level: must be one of debug, info, warning, error")
    if config.client.editor_url is not None:
        try:
            editor_url.check(config.client.editor_url)
        except ValueError as e:
            raise ConfigError(f"client.editor_url: {e}") from None
    from gnod.models import presets, uri

    try:
        presets.preset(config.models.preset)
    except ValueError as e:
        raise ConfigError(f"models.preset: {e}") from None
    for role in ROLES:
        value = getattr(config.models, role)
        if value is not None:
            try:
                uri.parse(value)
            except ValueError as e:
                raise ConfigError(f"models.{role}: {e}") from None
    return msgspec.structs.replace(config, collections=cols)


def load(path: str) -> Config:
    """Read and validate the config; a missing file is an empty config."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return Config()
    return parse(raw, path)


def parse(raw: bytes, path: str) -> Config:
    """Validate the config file's bytes (`path` names it in errors)."""
    try:
        config = msgspec.toml.decode(raw, type=Config)
    except msgspec.ValidationError as e:
        raise ConfigError(f"{path}: {e}{_meant(str(e))}") from None
    except msgspec.DecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    try:
        return validate(config)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


# msgspec's words for a key no table has: the key, and the table's place (`$.daemon`,
# `$.collections[0]`; none for the top level).
_UNKNOWN = re.compile(r"unknown field `([^`]*)`(?: - at `\$((?:\.\w+|\[\d+\])*)`)?")


def _meant(message: str) -> str:
    """For an unknown key, the keys of its table that it may be a misspelling of, else
    all of them: ` (did you mean `idle_unload_s`?)`; "" for any other error."""
    m = _UNKNOWN.search(message)
    if m is None:
        return ""
    table: type = Config
    for name in re.findall(r"\.(\w+)", m[2] or ""):
        field = next((f for f in msgspec.structs.fields(table) if f.name == name), None)
        inner = getattr(field.type, "__args__", (field.type,))[0] if field is not None else None
        if not (isinstance(inner, type) and issubclass(inner, msgspec.Struct)):
            return ""
        table = inner
    keys = [f.name for f in msgspec.structs.fields(table)]
    close = difflib.get_close_matches(m[1], keys, n=2, cutoff=0.6)
    if close:
        return f" (did you mean {' or '.join(f'`{k}`' for k in close)}?)"
    return f" (the keys there: {', '.join(keys)})"


def save(path: str, config: Config) -> None:
    """Write `config`, changing only what differs from the file: the user's comments,
    order and spelling (`~/notes`) of everything else stay. Atomic (temp file + rename),
    so a crash never leaves half a config."""
    import tomlkit

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        doc, old = tomlkit.parse(text), msgspec.to_builtins(load(path))
    except (FileNotFoundError, ConfigError, tomlkit.exceptions.ParseError):
        doc, old = tomlkit.document(), {}  # nothing (valid) to keep: write it fresh
    _merge(doc, old, msgspec.to_builtins(config))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = tomlkit.dumps(doc).encode()
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".config.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _merge(table, old: dict, new: dict) -> None:
    """Turn `table` (tomlkit, describing `old`) into one describing `new`, touching only the
    keys whose values differ. `old` and `new` are validated configs as builtins."""
    for key in old.keys() - new.keys():
        if key in table:
            del table[key]
    for key, value in new.items():
        before = old.get(key)
        if before == value or (value == {} and key not in table):  # an empty [table] says nothing
            continue
        if key in table and isinstance(value, dict) and isinstance(before, dict):
            _merge(table[key], before, value)
        elif key == "collections" and key in table and isinstance(before, list):
            _merge_collections(table[key], before, value)
        else:
            table[key] = value


def _merge_collections(items, old: list[dict], new: list[dict]) -> None:
    """Collections matched by name: removed ones go, changed ones are edited, new ones appended."""
    from tomlkit.items import AoT

    wanted = {c["name"]: c for c in new}
    for i in reversed(range(len(old))):
        if old[i]["name"] not in wanted:
            del items[i]
    kept = [c for c in old if c["name"] in wanted]
    for i, c in enumerate(kept):
        if c != wanted[c["name"]]:
            _merge(items[i], c, wanted[c["name"]])
    known = {c["name"] for c in kept}
    for c in new:
        if c["name"] not in known:
            items.append(_table(c) if isinstance(items, AoT) else c)


def _table(values: dict):
    """A [[collections]] entry followed by a blank line, like the ones around it."""
    import tomlkit

    t = tomlkit.table()
    t.update(values)
    t.add(tomlkit.nl())
    return t
