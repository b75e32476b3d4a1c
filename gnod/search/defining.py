"""Where a name is defined: the stored definitions (any case), Kconfig's `config NAME`
for `CONFIG_NAME`, and, where no C file defines the name otherwise, C's object-like
macros (`#define GFP_KERNEL (...)`, found by a callable: search.macros reads the
lexical index, which searches here for an identifier's definitions). `search --symbol`
lists them in this order; a search for one identifier prefers the documents they are in."""

from __future__ import annotations

from collections.abc import Callable

import apsw

from gnod.ingest.line_symbols import CONFIG, CONFIG_PREFIX
from gnod.ingest.symbols import DEFINE, grammar_for
from gnod.search import filters
from gnod.search.constants import SYMBOL_CONTENTS
from gnod.store import symbols as symstore

# Where C or C++ files define `name` as an object-like macro (search.macros.object_like).
ObjectLike = Callable[[str, filters.Filter], list[symstore.Defined]]

C_GRAMMARS = ("c", "cpp")  # the grammars of C and C++ (ingest.symbols)


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
) -> tuple[list[symstore.Defined], set[str]]:
    """The definitions of `name` (`prefix`: of every name starting so; `container`: of
    a method of that class) in documents passing `where`, best first, and the names that
    are the one asked for (`CONFIG_SLUB_DEBUG` is also Kconfig's `SLUB_DEBUG`). C's
    `#define NAME value` is looked for where no C file defines the name otherwise, nor,
    with `kconfig_enough`, a Kconfig option (a search's preference needs no more; for
    `CONFIG_PM` it read 45 files for none). Exact
    case first, then the name's length (a prefix's closest), then what other files can
    use before a macro a C source file defines for itself (often a stand-in, as
    lib/decompress_unxz.c's `#define kmalloc(size, flags) malloc(size)`), then the file
    nearest the top of its collection (a vendored or test copy lies deeper), then the path."""
    sql, args = filters.where(filters.resolve(where))
    found = [
        f
        for f in symstore.lookup(conn, name, prefix, sql, args, SYMBOL_CONTENTS)
        if not container or (f.symbol.container or "").casefold() == container.casefold()
    ]
    names = {name}
    if not container and name[: len(CONFIG_PREFIX)].upper() == CONFIG_PREFIX and len(name) > len(CONFIG_PREFIX):
        option = name[len(CONFIG_PREFIX) :]  # CONFIG_SLUB_DEBUG: Kconfig's `config SLUB_DEBUG`
        names.add(option)
        found += [
            f for f in symstore.lookup(conn, option, prefix, sql, args, SYMBOL_CONTENTS) if f.symbol.kind == CONFIG
        ]
    # A plain name no C or C++ file defines in its case otherwise may be a `#define NAME value`.
    settled = any(
        f.symbol.name in names and (in_c(f.rel_path) or (kconfig_enough and f.symbol.kind == CONFIG)) for f in found
    )
    if object_like and not (prefix or container or settled):
        found += object_like(name, where)
    found.sort(key=lambda f: (*standing(f, names), f.rel_path, f.symbol.start_line))
    return found, names


# A definition's place among others, before its path (standing).
Standing = tuple[bool, int, bool, int]


def standing(f: symstore.Defined, names: set[str]) -> Standing:
    """How a definition stands among those of `names` (lower first), before its path:
    definitions' order, which a search for the name keeps among the files defining it."""
    macro_in_c = f.symbol.kind in ("macro", DEFINE) and f.rel_path.lower().endswith(".c")
    return f.symbol.name not in names, len(f.symbol.name), macro_in_c, f.rel_path.count("/")
