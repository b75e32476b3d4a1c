"""Where a name is defined: the stored definitions (any case), Kconfig's `config NAME`
for `CONFIG_NAME`, and, where no C file defines the name otherwise (but as an
enumerator), C's object-like macros (`#define GFP_KERNEL (...)`, found by a callable:
search.macros reads the lexical index, which searches here for an identifier's
definitions). `search --symbol` lists them in this order; a search for one identifier
prefers the documents they are in."""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import groupby
from typing import Any

import apsw

from gnod.ingest.line_symbols import CONFIG, CONFIG_PREFIX, KCONFIG
from gnod.ingest.symbols import CONSTANT, DEFINE, grammar_for
from gnod.search import filters
from gnod.search.constants import SYMBOL_CONTENTS, SYMBOL_SHORTEST_FROM
from gnod.store import symbols as symstore

# Where C or C++ files define `name` as an object-like macro (search.macros.object_like).
ObjectLike = Callable[[str, filters.Filter], list[symstore.Defined]]
# The names defined that start with a prefix in lower case, None where too many do
# (symbols.names_starting with its cap): a search reads each prefix's once.
Starting = Callable[[str], list[str] | None]

C_GRAMMARS = ("c", "cpp")  # the grammars of C and C++ (ingest.symbols)
# The kinds of definition a type's name has: a word typed with a capital is such a name
# where one is defined in its case (search.lexical._code_name: `Reconciler`, `Console`).
TYPES = frozenset({"class", "struct", "interface", "trait", "enum", "type", "union"})

_FUNCTIONS = frozenset({"function", "method"})
# The keyword a name is declared with, typed or pasted before it (`struct page`, `fn
# main`, `config PREEMPT_RT`), and the kinds of definition it asks for.
DECLARING: dict[str, frozenset[str]] = {
    "struct": frozenset({"struct"}),
    "union": frozenset({"union"}),
    "enum": frozenset({"enum"}),
    "class": frozenset({"class"}),
    "interface": frozenset({"interface"}),
    "trait": frozenset({"trait"}),
    "impl": frozenset({"impl"}),
    "typedef": frozenset({"type"}),
    "namespace": frozenset({"module"}),
    "config": frozenset({CONFIG}),
    **dict.fromkeys(("def", "fn", "func", "fun", "function"), _FUNCTIONS),
}
# Those also words of prose (`function pointer`, `class action`): a plain word after one
# is a name only where it would be alone (search.lexical._code_name).
PROSE_KEYWORDS = frozenset({"class", "interface", "trait", "union", "config", "fun", "function"})
_DECLARED = re.compile(r"(\w+)\s+(\S+)")


def declared(text: str) -> tuple[str, frozenset[str]]:
    """`text` without a keyword declaring it (`struct page` → page; `Struct page`, typed
    at a sentence's start, too) and the kinds that keyword asks for; `text` itself and no
    kinds where it has none."""
    m = _DECLARED.fullmatch(text)
    if m is None or m[1].lower() not in DECLARING:
        return text, frozenset()
    return m[2], DECLARING[m[1].lower()]


def in_c(rel_path: str) -> bool:
    """Whether the file is C or C++ (as the definitions' parser reads it)."""
    return grammar_for(rel_path) in C_GRAMMARS


def definitions(
    conn: apsw.Connection,
    name: str,
    where: filters.Filter,
    object_like: ObjectLike | None,
    prefix: bool = False,
    container: str = "",
    kconfig_enough: bool = False,
    wanted: int = SYMBOL_CONTENTS,
    completing: Starting | None = None,
    whole: bool = True,
    kinds: frozenset[str] = frozenset(),
    macro_beside_sources: bool = False,
) -> tuple[list[symstore.Defined], set[str]]:
    """The definitions of `name` (`prefix`: of every name starting so; `container`: of
    a method of that class, or of a name at the top of that module: `within`) in
    documents passing `where`, best first, and the names that are the one asked for
    (`CONFIG_SLUB_DEBUG` is also Kconfig's `SLUB_DEBUG`). C's `#define NAME value` is
    looked for where no C file defines the name otherwise (an enumerator does not
    count), nor, with `kconfig_enough`, a Kconfig option (a search's preference needs no
    more; for `CONFIG_PM` it read 45 files for none). Exact case first, then the name's
    length (a prefix's closest), then what other files can use before a macro or an
    enumerator a C source file defines for itself (_OWN_IN_C), then the file nearest
    the top of its collection (a vendored or test copy lies deeper), then one in an
    `include` folder, then the path.
    `wanted`: how many documents are asked for (a prefix's shortest names suffice).
    `completing` (the name being typed, in a search): where nothing defines the name as
    typed, the names that complete its last word are the ones asked for and returned
    (_completions; for `CONFIG_PM_SL`, Kconfig's options completing `PM_SL`; the
    object-like macros looked for are those of such names in capitals: `GFP_KER` finds
    `#define GFP_KERNEL`). Not `whole`: the name's next word is begun (`sched_`,
    `spin_lock_i`), and only the names completing it may be a `#define NAME` (`define
    of`, looked for `of_`, is in 20 ms of files). `kinds` (a declaring keyword's,
    `struct page`): the definitions of those kinds come first, and no `#define` is
    looked for (no keyword declares one). `macro_beside_sources` (search --symbol, which
    lists every definition): a C source file's definition (`.c`: its own) does not keep
    the `#define NAME value` from being looked for, a header's still does (the kernel's
    `current`: a selftest's variable, and the macro every architecture's current.h
    defines; looking always cost `--symbol mutex_lock` 2 → 9 ms)."""
    sql, args = filters.where(filters.resolve(where))
    # A prefix's shortest names are its closest, but not a class's methods' nor the
    # documents a filter admits, nor Kconfig's options among names of every kind.
    shortest = prefix and not container and not filters.active(where)
    found = _named(conn, name, prefix, shortest, sql, args, wanted)
    found = [f for f in found if within(f, container)] if container else found
    names = {name}
    option = ""  # CONFIG_SLUB_DEBUG: Kconfig's `config SLUB_DEBUG`
    if not container and name[: len(CONFIG_PREFIX)].upper() == CONFIG_PREFIX and len(name) > len(CONFIG_PREFIX):
        option = name[len(CONFIG_PREFIX) :]
        names.add(option)
        found += [f for f in _named(conn, option, prefix, False, sql, args, wanted, KCONFIG) if f.symbol.kind == CONFIG]
    # The names whose `#define NAME value` may be looked for, each with the names it is.
    macros = [(name, names)] if whole else []
    if completing is not None and not any(f.symbol.name in names for f in found):
        completed = _completions(conn, name, sql, args, completing)
        if not completed and option:  # CONFIG_PM_SL: Kconfig's PM_SLEEP
            completed = [f for f in _completions(conn, option, sql, args, completing) if f.symbol.kind == CONFIG]
        if completed:
            found, names = completed, {f.symbol.name for f in completed}
            macros = [(n, {n}) for n in sorted(names) if n.isupper()]  # object-like macros are in capitals
    # A plain name no C or C++ file defines in its case otherwise may be a `#define NAME
    # value`; one an enum defines may be too (`enum { X = 1 }; #define X X`, or tools/'s
    # enumerator GFP_KERNEL hid include/linux/gfp_types.h's macro).
    if object_like and not (prefix or container or kinds):
        for macro, same in macros:
            if not any(
                f.symbol.name in same
                and (
                    (in_c(f.rel_path) and f.symbol.kind != CONSTANT and not (macro_beside_sources and _source(f)))
                    or (kconfig_enough and f.symbol.kind == CONFIG)
                )
                for f in found
            ):
                found += object_like(macro, where)
    found.sort(key=lambda f: (*standing(f, names, kinds), f.rel_path, f.symbol.start_line))
    return found, names


def within(f: symstore.Defined, qualifier: str) -> bool:
    """Whether a definition is the one a qualified name names by what comes before its
    last `.` (`qualifier`): a method of the class that names last (`Parser.parse`,
    `settings.Parser.parse`), or a definition at the top of a file whose path names it
    last, as a module or package (`settings.load_settings` in app/settings.py,
    `server.Serve` in server/http.go, `fork.copy_process` in kernel/fork.c), any case.
    What comes before that is not asked: a module's names are often defined elsewhere
    (`os.path.join` in posixpath.py)."""
    last = qualifier.rpartition(".")[2].casefold()
    if f.symbol.container is not None:
        return f.symbol.container.replace("::", ".").rpartition(".")[2].casefold() == last
    *folders, file = f.rel_path.casefold().split("/")
    return last in folders or file.partition(".")[0] == last


def _named(
    conn: apsw.Connection,
    name: str,
    prefix: bool,
    shortest: bool,
    sql: str,
    args: list[Any],
    wanted: int,
    grammar: str | None = None,
) -> list[symstore.Defined]:
    """The definitions of `name` (`prefix`: of the names starting so; `grammar`: in
    contents parsed as that grammar, as Kconfig's options, which the contents of other
    grammars defining names starting so would crowd out). Where `shortest`
    (no filter, no class), a prefix's names are read a length at a time, shortest first,
    until they are defined in `wanted` documents: its closest names whatever how many
    start so, where reading the contents of every one (`k*`: 14,000 of them) stopped at
    SYMBOL_CONTENTS, in no order of theirs. The names of several lengths are looked up
    at once while those read so far cannot be defined in enough contents; a prefix whose
    names few contents define (SYMBOL_SHORTEST_FROM) is read at once."""
    folded = name.lower()
    if (
        not (prefix and shortest and name)
        or symstore.contents_starting(conn, folded, SYMBOL_SHORTEST_FROM) <= SYMBOL_SHORTEST_FROM
    ):
        return symstore.lookup(conn, [name], prefix, sql, args, SYMBOL_CONTENTS, grammar)
    found: list[symstore.Defined] = []
    batch: list[str] = []
    contents = 0  # contents defining the names read
    # Each name is defined in a content at least: SYMBOL_CONTENTS of them are as many as are read.
    for _, group in groupby(symstore.names_by_length(conn, folded, SYMBOL_CONTENTS), key=lambda row: len(row[0])):
        for n, docs in group:
            batch.append(n)
            contents += docs
        if contents < wanted and contents < SYMBOL_CONTENTS:
            continue
        found += symstore.lookup(conn, batch, False, sql, args, SYMBOL_CONTENTS, grammar)
        batch = []
        documents = len({f.doc_id for f in found})
        if documents >= wanted or contents >= SYMBOL_CONTENTS:
            return found
        wanted += wanted - documents  # a content defining several of the names counted once each
    return found + (symstore.lookup(conn, batch, False, sql, args, SYMBOL_CONTENTS, grammar) if batch else [])


# A camelCase name's next word: a capital after a small letter or digit.
_HUMP = re.compile(r"[a-z0-9][A-Z]")


def _completions(
    conn: apsw.Connection, typed: str, sql: str, args: list[Any], starting: Starting
) -> list[symstore.Defined]:
    """The definitions, in documents passing the SQL condition `sql`, of the names that
    are `typed` with its last word completed and no word more, in its case
    (`spin_lock_ir`: spin_lock_irq and spin_lock_irqsave; not _raw_spin_lock_irq nor
    spin_lock_irq_rcu_node): the names an identifier being typed is heading for; where
    none is, those going on from it by more words (`parse_ecb`: parse_ecb_xml, whose
    last word was typed whole). None where `starting` gives none (too many names start
    as typed)."""
    folded = typed.lower()
    started = starting(folded) or []
    names = [n for n in started if _completes(n, folded)]
    heading = _completes
    if not names:  # `parse_ecb`, its last word typed whole: the names going on from it (parse_ecb_xml)
        names, heading = [n for n in started if n != folded], _goes_on
    if not names:
        return []
    return [f for f in symstore.lookup(conn, names, False, sql, args, SYMBOL_CONTENTS) if heading(f.symbol.name, typed)]


def _completes(name: str, typed: str) -> bool:
    """Whether `name` is `typed` with its last word completed and no word more."""
    return name.startswith(typed) and "_" not in name[len(typed) :] and not _HUMP.search(name, max(len(typed) - 1, 0))


def _goes_on(name: str, typed: str) -> bool:
    """Whether `name` is `typed` and more words after it (`parse_ecb_xml`, `parseEcbXml`
    for `parse_ecb`, `parseEcb`), in its case."""
    rest = name[len(typed) :]
    return name.startswith(typed) and bool(rest) and (rest[0] == "_" or _HUMP.match(name, len(typed) - 1) is not None)


# What a C source file (`.c`) defines for itself, which no other file includes: a macro
# (often a stand-in, as lib/decompress_unxz.c's `#define kmalloc(size, flags)
# malloc(size)`) and an enumerator.
_OWN_IN_C = frozenset({"macro", DEFINE, CONSTANT})

# A definition's place among others, before its path (standing).
Standing = tuple[bool, bool, int, bool, bool, int, bool]

# Folders that hold tests, and the ends of a test's file name before its extension (a
# Python `test_*` file begins so): their definitions are stand-ins for the real ones.
_TEST_FOLDERS = frozenset({"test", "tests", "testing", "selftests", "__tests__", "spec", "specs", "testdata"})
_TEST_NAME = re.compile(r"^tests?(?:[_-]|$)|(?:[_.-](?:test|tests|spec)|Tests?)$")


def in_tests(rel_path: str) -> bool:
    """Whether a file is a test's: in a folder of tests (`Lib/test/`, the kernel's
    `tools/testing/selftests/`) or named as one (`test_urllib.py`, `fetch_test.go`,
    `url.spec.ts`, `UrlTest.java`)."""
    *folders, name = rel_path.split("/")
    return any(f.lower() in _TEST_FOLDERS for f in folders) or bool(_TEST_NAME.search(name.rsplit(".", 1)[0]))


def _source(f: symstore.Defined) -> bool:
    """Whether the definition is in a C source file (`.c`), which no other file includes."""
    return f.rel_path.lower().endswith(".c")


def standing(f: symstore.Defined, names: set[str], kinds: frozenset[str] = frozenset()) -> Standing:
    """How a definition stands among those of `names` (lower first), before its path:
    definitions' order, which a search for the name keeps among the files defining it.
    `kinds`: those a declaring keyword asked for, first. A test's stand-in after the
    others (`--symbol urlopen` gave three of Lib/test/'s before urllib/request.py's, as
    deep). Of two as deep, one in a folder named `include` (C's public headers, by
    convention) first: the kernel's include/linux/array_size.h before
    fs/orangefs/orangefs-debug.h's own ARRAY_SIZE."""
    own = f.symbol.kind in _OWN_IN_C and _source(f)
    unasked = bool(kinds) and f.symbol.kind not in kinds
    public = f.rel_path.startswith("include/") or "/include/" in f.rel_path
    depth = f.rel_path.count("/")
    return f.symbol.name not in names, unasked, len(f.symbol.name), own, in_tests(f.rel_path), depth, not public
