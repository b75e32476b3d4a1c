"""Definitions in source code (functions, methods, classes, types, macros, enumerators),
found by tree-sitter (and, where a line declares them, by gnod.ingest.line_symbols:
Kconfig, assembler).

Each grammar comes from its PyPI wheel (tree-sitter-c, -cpp, -java, -python, -go, -rust,
-typescript, -javascript, -c-sharp, -ruby, -php: the tree-sitter project's own; -swift:
the grammar its list points to), which bundles its parser: nothing is
downloaded when a file is first parsed. A query per language picks the definition
nodes; their names, nesting (a method's class) and lines are read here.

Parsing costs about as much CPU as the rest of a file's ingest (tree-sitter-c reads ~9
MB/s) and holds the GIL, so it is not done while files are indexed: gnod.server.symbols
parses what is new in the background, in the prepare pool's worker processes, once the
text is searchable. tree_sitter is imported by the functions here that parse, never at
import time.

C's object-like macros (`#define NAME value`) are left out: a kernel tree holds 4.9
million, mostly generated register maps, which would double its index; a macro that
takes arguments is kept.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

from gnod.config import NAMED_FILES, SYSTEMD_UNITS, extension
from gnod.ingest import line_symbols
from gnod.store.documents import unpack

# File extension → grammar. The extensions are among config.TEXT_EXTENSIONS.
GRAMMARS: dict[str, str] = {
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".cxx": "cpp",
    ".hxx": "cpp",
    ".hh": "cpp",
    ".inl": "cpp",
    ".cu": "cpp",
    ".cuh": "cpp",
    ".java": "java",
    ".py": "python",
    ".pyi": "python",
    ".go": "go",
    ".rs": "rust",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".swift": "swift",
    # Read line by line (line_symbols).
    ".kconfig": "kconfig",
    ".s": "asm",
    ".dts": "dts",
    ".dtsi": "dts",
    ".tex": "latex",
    ".bib": "bibtex",
    # INI's sections: systemd units, TOML's tables, setup.cfg's, a .conf's that has them.
    **dict.fromkeys((".ini", ".cfg", ".cnf", ".conf", ".toml", *SYSTEMD_UNITS), "ini"),
}

# What is extracted: bump it when the queries or the reading of names change, and the
# stored contents of the grammars it changed (REVISED) are parsed again in the background
# (content_symbols.grammar is `c/2`); those of the others keep the extraction that last
# changed them (a change to JavaScript's queries had the kernel's 63k C files parsed
# again, 3 minutes of both cores).
# 2: a C typedef's name after an annotation macro (`typedef unsigned int __bitwise gfp_t;`).
# 3: no C function without a parameter list (a loop macro's body: `for_each_node(node) {`);
#    a `#define __getname() …` named __getname, its name not taken for an attribute macro.
# 4: a C function's name after an attribute macro ending a line (`static int __init\ndecay(`).
# 5: no C function of type `else` (`else list_for_each_entry(pos, head, member) {`).
# 6: a C function a macro in capitals defines, named by its first argument
#    (`SYSCALL_DEFINE4(openat, …) {`: openat), also after a line tree-sitter runs into it;
#    one of no parameters after an attribute macro (`void __softirq_entry __do_softirq(void)`).
# 7: C, C++, Java and C# enumerators (`enum { TASK_COMM_LEN = 16 };`), kind `constant`.
# 8: no C enumerator on a preprocessor line (`#define FIX_IMMR_SIZE (512 * 1024 / PAGE_SIZE)`
#    inside an enum's `#ifdef` gave FIX_IMMR_SIZE and PAGE_SIZE).
# 9: C and C++ variables a file's top defines with a value (kind `variable`).
# 10: the device tree `compatible` strings of C match tables (kind `compatible`).
# 11: a C function a macro defines in a preprocessor conditional at the file's top (152
#     of the kernel's 682 SYSCALL_DEFINE system calls, `getrandom` among them).
# 12: C variables in a conditional at the file's top (a header's include guard), named
#     beside an attribute macro (`x __read_mostly = 1`); C read again where tree-sitter
#     could not read it whole (_first_branches, _apart: `clone`, `wait4`).
# 13: a C loop macro opening a statement read as `for(;;)` (_as_loops: a body without
#     braces ended no function: `nr_context_switches` held the rest of its file).
# 14: Python's names a module or a class assigns (`HTTP_404_NOT_FOUND = 404`,
#     `__version__`, an enum's members), as variables.
# 15: JavaScript's and TypeScript's `const`/`let`/`var` at a module's top (exported or
#     not), and Go's package-level `const` (constants) and `var` (variables).
# 16: LaTeX's chapters and sections, BibTeX's entries by their citation keys (line_symbols).
# 17: the sections of INI files (`[Service]` of a systemd unit, TOML's tables).
# 18: Python's instance attributes, as its class's variables (`self.timeout = …` in `__init__`).
EXTRACTION = 18
# The grammars each extraction from 15 on changed (before it, an extraction changed them all).
REVISED = {15: ("javascript", "typescript", "tsx", "go"), 16: ("latex", "bibtex"), 17: ("ini",), 18: ("python",)}
_BEFORE_REVISED = 14


def stamp(grammar: str) -> str:
    """How a content parsed today is marked: its grammar and the last extraction that
    changed it (REVISED)."""
    changed = max((n for n, grammars in REVISED.items() if grammar in grammars), default=_BEFORE_REVISED)
    return f"{grammar}/{changed}"


# Grammar → (module, function returning the language pointer).
_MODULES: dict[str, tuple[str, str]] = {
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "java": ("tree_sitter_java", "language"),
    "python": ("tree_sitter_python", "language"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "javascript": ("tree_sitter_javascript", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "php": ("tree_sitter_php", "language_php"),  # PHP in its HTML, as a .php file is
    "swift": ("tree_sitter_swift", "language"),
}

# Each capture's name is the kind of definition it finds.
_JS_QUERY = """
(function_declaration) @function
(generator_function_declaration) @function
(class_declaration) @class
(method_definition) @method
(variable_declarator name: (identifier) value: [(arrow_function) (function_expression)]) @function
(program (lexical_declaration (variable_declarator name: (identifier)) @variable))
(program (variable_declaration (variable_declarator name: (identifier)) @variable))
(program (export_statement (lexical_declaration (variable_declarator name: (identifier)) @variable)))
(program (export_statement (variable_declaration (variable_declarator name: (identifier)) @variable)))
"""
_TS_QUERY = (
    _JS_QUERY
    + """
(abstract_class_declaration) @class
(interface_declaration) @interface
(type_alias_declaration) @type
(enum_declaration) @enum
(internal_module) @module
"""
)
# The blocks a C preprocessor conditional holds; at a file's top (_at_top), what they hold
# is at its top too.
_C_CONDITIONALS = ("preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif")


def _at_c_top(pattern: str) -> str:
    """A query's `pattern` under each parent a node at a C file's top may have: the file,
    a conditional there (a header's include guard holds all of it), or an error there
    (_at_top, applied afterwards, says which are)."""
    return "".join(f"({parent} {pattern})\n" for parent in ("translation_unit", "ERROR", *_C_CONDITIONALS))


# A function a macro in capitals defines (`SYSCALL_DEFINE4(openat, …) {`), read as a call
# and a block: at a file's top, or in a conditional there (`#ifdef CONFIG_X86_IOPL_IOPERM`).
_C_MACRO_FUNCTION = _at_c_top(
    "(expression_statement (call_expression function: (identifier) arguments: (argument_list . (identifier))))"
    " @macro_function . (compound_statement)"
)
# A variable a file's top defines with its value.
_C_VARIABLE = _at_c_top("(declaration declarator: (init_declarator) @variable)")
_QUERIES: dict[str, str] = {
    "c": """
(function_definition) @function
"""
    + _C_MACRO_FUNCTION
    + """(struct_specifier name: (_) body: (_)) @struct
(union_specifier name: (_) body: (_)) @union
(enum_specifier name: (_) body: (_)) @enum
(enumerator) @constant
(type_definition) @type
(preproc_function_def) @macro
"""
    + _C_VARIABLE
    + """(initializer_pair
  designator: (field_designator (field_identifier) @_field)
  value: (string_literal (string_content) @compatible)
  (#eq? @_field "compatible"))
""",
    "cpp": """
(function_definition) @function
(class_specifier name: (_) body: (_)) @class
(struct_specifier name: (_) body: (_)) @struct
(union_specifier name: (_) body: (_)) @union
(enum_specifier name: (_) body: (_)) @enum
(enumerator) @constant
(namespace_definition name: (_)) @module
(type_definition) @type
(alias_declaration) @type
(preproc_function_def) @macro
"""
    + _C_VARIABLE,
    "java": """
(class_declaration) @class
(record_declaration) @class
(interface_declaration) @interface
(enum_declaration) @enum
(enum_constant) @constant
(method_declaration) @method
(constructor_declaration) @method
""",
    "python": """
(function_definition) @function
(class_definition) @class
(module (expression_statement (assignment left: (identifier))) @variable)
(class_definition body: (block (expression_statement (assignment left: (identifier))) @variable))
(function_definition
  name: (identifier) @_init
  parameters: (parameters . (identifier) @_self)
  body: (block (expression_statement
    (assignment left: (attribute object: (identifier) @_object attribute: (identifier)))) @attribute)
  (#eq? @_init "__init__")
  (#eq? @_object @_self))
""",
    "go": """
(function_declaration) @function
(method_declaration) @method
(type_spec) @type
(source_file (const_declaration (const_spec) @constant))
(source_file (var_declaration (var_spec) @variable))
(source_file (var_declaration (var_spec_list (var_spec) @variable)))
""",
    "rust": """
(function_item) @function
(function_signature_item) @function
(struct_item) @struct
(enum_item) @enum
(union_item) @union
(trait_item) @trait
(impl_item) @impl
(mod_item) @module
(type_item) @type
(const_item) @constant
(static_item) @constant
(macro_definition) @macro
""",
    "typescript": _TS_QUERY,
    "tsx": _TS_QUERY,
    "javascript": _JS_QUERY,
    "csharp": """
(namespace_declaration name: (_)) @module
(file_scoped_namespace_declaration name: (_)) @module
(class_declaration) @class
(record_declaration) @class
(struct_declaration) @struct
(interface_declaration) @interface
(enum_declaration) @enum
(enum_member_declaration) @constant
(delegate_declaration) @type
(method_declaration) @method
(constructor_declaration) @method
""",
    "ruby": """
(module) @module
(class) @class
(method) @function
(singleton_method) @function
""",
    "php": """
(namespace_definition name: (_)) @module
(class_declaration) @class
(interface_declaration) @interface
(trait_declaration) @trait
(enum_declaration) @enum
(function_definition) @function
(method_declaration) @method
""",
    "swift": """
(class_declaration declaration_kind: "class") @class
(class_declaration declaration_kind: "struct") @struct
(class_declaration declaration_kind: "enum") @enum
(class_declaration declaration_kind: "extension") @impl
(class_declaration declaration_kind: "actor") @class
(protocol_declaration) @interface
(protocol_function_declaration) @method
(function_declaration) @function
(init_declaration) @method
(typealias_declaration) @type
""",
}

# The kind of a C object-like macro (`#define NAME value`): not stored, but found by
# gnod.search.macros when asked for.
DEFINE = "define"
# The kind of an enumerator (C, C++, Java, C#) and of a Rust constant.
CONSTANT = "constant"
# The kind of a C or C++ variable defined at a file's top with its value
# (`const struct file_operations ext4_file_operations = {`, `int vm_swappiness = 60;`).
VARIABLE = "variable"
# What Python's query captures as an instance attribute; stored as its class's VARIABLE.
_ATTRIBUTE = "attribute"
# The kind of a device tree `compatible` string a C driver's match table holds
# (`{ .compatible = "snps,dw-apb-uart" }`): the driver is where that device is handled.
COMPATIBLE = "compatible"
# Kinds whose members are methods (a function inside one is a method).
_CONTAINERS = frozenset({"class", "interface", "trait", "impl", "struct", "enum"})
# Declarators C wraps a defined name in: `*name`, `name(args)`, `name[3]`, `(name)`.
_C_WRAPPERS = frozenset(
    {
        "function_declarator",
        "pointer_declarator",
        "array_declarator",
        "parenthesized_declarator",
        "attributed_declarator",
        "reference_declarator",
    }
)
# Words of C's statements that tree-sitter, without a preprocessor, may read as a function's
# type: `else list_for_each_entry(pos, head, member) {` (a loop macro after `else`).
_C_STATEMENT_WORDS = frozenset({b"else", b"do", b"return", b"goto", b"case", b"default"})
_GO_TYPES = {"struct_type": "struct", "interface_type": "interface"}
# `__name(` at a word start, and what follows an attribute macro's `)` when more of the
# declaration comes (a type, a name, a pointer's star), not a body, `;` or `,`.
# (The `__` first, then what stands before it: the regex engine then looks for the literal,
# 26 times faster over the kernel's C than trying the look-behind at every character.)
_C_ATTRIBUTE = re.compile(r"__(?<![\w$]__)\w+\s*\(")
_C_DECLARATION_GOES_ON = re.compile(r"[ \t]*(?:\n[ \t]*)?[A-Za-z_*]")
# A line where no C definition can start: blank, a preprocessor line, a `//` comment, a
# `/* … */` alone on it, or a block comment's first, middle (` * …`) or last line. A file
# with no other line and no macro that takes arguments defines nothing kept here (object-
# like macros are left out) and is not parsed: the kernel's generated register maps, 409
# of its 1,177 MB of C, took tree-sitter 27 CPU-s to find nothing in them; the check takes
# 3 s for the whole tree (a file of code stops at its first line of it).
_C_CODE_LINE = re.compile(r"\n(?![ \t]*(?:$|#|//|\*/[ \t]*$|(?:/\*|\*(?!/))(?:(?!\*/).)*(?:\*/[ \t]*)?$))", re.M)
_C_FUNCTION_MACRO = re.compile(r"#[ \t]*define[ \t]+\w+\(")
# A preprocessor conditional's directive, with the lines it continues onto (`\` ending one).
_C_CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(?:[^\n]*\\\n)*[^\n]*", re.M)
_NOT_LINE_BREAK = re.compile(r"[^\n]")
# A loop macro opening a statement (`for_each_possible_cpu(i)`, `list_for_each_entry(…)`,
# BSD's `TAILQ_FOREACH(…)`), which the line's end leaves to its body: indented, as a
# statement is in its function (at a line's start it is a definition's name, GNU style).
_C_LOOP_MACRO = re.compile(r"^[ \t]+(\w*for_?each\w*)[ \t]*\(", re.M | re.I)
_C_LOOP_BODY_FOLLOWS = re.compile(r"[ \t]*(?:\{[ \t]*)?(?:/[/*].*)?\n")
# The line closing a C block at a file's top: `}` at its start, then neither parenthesis (a
# macro's statement expression, `})`, ends inside a function) nor a `\` (a macro's line).
_C_BLOCK_END = re.compile(rb"^\}[^()\\\n]*\n", re.M)
MAX_ATTRIBUTE = 400  # characters inside an attribute macro's parentheses, at most
MAX_NAME = 200  # longer "names" are not identifiers (a parse gone wrong)


class Symbol(NamedTuple):
    """A definition: lines are 1-based and inclusive; container is the class, impl or
    type it belongs to (a method's), or None at the top level."""

    name: str
    kind: str
    start_line: int
    end_line: int
    container: str | None


# A linker script the C preprocessor reads first has assembler's extension: its
# `ENTRY(startup_64)` names the program's entry point, where in assembler it opens a function.
_LINKER_SCRIPT = ".lds.s"


def grammar_for(rel_path: str) -> str | None:
    """The grammar that parses a file (by its extension), or None when none is installed
    for it or it is a linker script (vmlinux.lds.S)."""
    if rel_path.lower().endswith(_LINKER_SCRIPT):
        return None
    return GRAMMARS.get(extension(rel_path))


def path_globs() -> list[str]:
    """SQLite GLOBs over lowercased paths that every file some grammar parses matches (a
    few others too: grammar_for decides): its extension, or the name it is known by."""
    named = [n.lower() for n, ext in NAMED_FILES.items() if ext in GRAMMARS]
    return sorted({f"*{ext}" for ext in GRAMMARS} | {f"*{n}{end}" for n in named for end in ("", ".*", "-*", "_*")})


def display(name: str, kind: str, container: str | None) -> str:
    """How a hit names the definition it is in: `foo_probe()`, `Parser.parse()`, `struct foo`."""
    if kind in ("function", "method", "macro"):
        return f"{container}.{name}()" if container else f"{name}()"
    if kind == DEFINE:
        return f"#define {name}"
    return f"{kind} {name}"


@functools.cache
def _parser(grammar: str) -> tuple[Any, Any]:
    import tree_sitter

    module, attr = _MODULES[grammar]
    language = tree_sitter.Language(getattr(importlib.import_module(module), attr)())
    return tree_sitter.Parser(language), tree_sitter.Query(language, _QUERIES[grammar])


def parse(text: str, grammar: str) -> list[Symbol]:
    """The definitions in `text`, in the order they start (an outer one before its members).
    C that tree-sitter cannot read whole is read again, to add what more it then finds:
    down to its conditionals' first branches (_first_branches), and a stretch it still
    cannot read a top-level block at a time (_apart)."""
    if grammar in line_symbols.GRAMMARS:
        return [Symbol(name, kind, start, end, None) for name, kind, start, end in line_symbols.parse(text, grammar)]
    if grammar not in ("c", "cpp"):
        return _read(text.encode("utf-8", "surrogatepass"), grammar)[0]
    if _C_CODE_LINE.search("\n" + text) is None and _C_FUNCTION_MACRO.search(text) is None:
        return []
    text = _as_loops(_blank_attributes(text))
    source = text.encode("utf-8", "surrogatepass")
    symbols, errors = _read(source, grammar)
    if errors is None:
        return symbols
    first = _first_branches(text)
    if first is not None:
        source = first.encode("utf-8", "surrogatepass")
        more, errors = _read(source, grammar)
        symbols = _merged(symbols, more)
    pieces = _apart(source, errors or [])
    return _merged(symbols, _read(source, grammar, pieces)[0]) if pieces else symbols


def _merged(symbols: list[Symbol], more: list[Symbol]) -> list[Symbol]:
    """`symbols` and those of `more` starting where none of the same name does, in order."""
    known = {(s.name, s.start_line) for s in symbols}
    more = [s for s in more if (s.name, s.start_line) not in known]
    return sorted(symbols + more, key=lambda s: (s.start_line, -s.end_line)) if more else symbols


def _read(
    source: bytes, grammar: str, pieces: list[tuple[int, int]] | None = None
) -> tuple[list[Symbol], list[tuple[int, int]] | None]:
    """The definitions tree-sitter finds in `source` (or in each of its `pieces`, byte
    ranges read apart), in the order they start; and where the whole source is read and
    has an error, the byte ranges of the errors at its top (None: no error)."""
    import tree_sitter

    parser, query = _parser(grammar)
    if pieces is None:
        trees = [parser.parse(source)]
    else:
        trees = []
        try:
            line, counted = 0, 0  # the line byte `counted` is on (the pieces come in order)
            for start, end in pieces:
                line += source.count(b"\n", counted, start)
                last = line + source.count(b"\n", start, end)
                counted = end
                first, after = (line, start - _line_start(source, start)), (last, end - _line_start(source, end))
                parser.included_ranges = [tree_sitter.Range(first, after, start, end)]
                trees.append(parser.parse(source))
                line = last
        finally:
            parser.included_ranges = []  # the whole text, for the parser's next user
    symbols: list[Symbol] = []
    for tree in trees:
        captures = tree_sitter.QueryCursor(query).captures(tree.root_node)
        found = [(node, kind) for kind, nodes in captures.items() if not kind.startswith("_") for node in nodes]
        # A JavaScript `const f = () => …` is captured as a function and as a variable: a function.
        functions = {(node.start_byte, node.end_byte) for node, kind in found if kind == "function"}
        found = [(n, k) for n, k in found if k != VARIABLE or (n.start_byte, n.end_byte) not in functions]
        found.sort(key=lambda f: (f[0].start_byte, -f[0].end_byte))
        symbols += _symbols(found, grammar, source)
    root = trees[0].root_node
    if pieces is not None or not root.has_error:
        return symbols, None
    errors = [root] if root.type == "ERROR" else [n for n in root.children if n.type == "ERROR"]
    return symbols, [(n.start_byte, n.end_byte) for n in errors]


def _symbols(found: list[tuple[Any, str]], grammar: str, source: bytes) -> list[Symbol]:
    """The definitions of a tree's captures (`found`, in the order they start)."""
    symbols: list[Symbol] = []
    open_: list[tuple[int, str, str]] = []  # enclosing definitions: (end byte, name, kind)
    for node, kind in found:
        while open_ and open_[-1][0] <= node.start_byte:
            open_.pop()
        if grammar in ("c", "cpp") and _misread_in_c(node, kind, source):
            continue
        first, node, kind, name, container = _definition(node, kind, grammar, source)
        if name is None:
            continue
        outer = open_[-1] if open_ else None
        if kind == _ATTRIBUTE:  # `self.timeout = …` in `__init__`: a variable of its class
            kind, container = VARIABLE, next((o[1] for o in reversed(open_) if o[2] in _CONTAINERS), None)
            if container is None:  # a module's own function named __init__
                continue
        elif kind == "method" and grammar == "go":
            container = _go_receiver(node, source)
        elif container is not None:  # C++'s `Circle::area`, defined outside its class
            kind = "method"
        elif outer is not None and outer[2] in _CONTAINERS:
            container = outer[1]
            if kind == "function":
                kind = "method"
        if grammar == "go" and kind == "type":
            kind = _GO_TYPES.get(getattr(node.child_by_field_name("type"), "type", ""), kind)
        start, (end, column) = first.start_point[0] + 1, node.end_point
        end += column > 0  # a node ending with its line's newline ends on that line
        symbols.append(Symbol(name, kind, start, max(start, end), container))
        if kind != CONSTANT:  # a Java enum constant's body holds methods of its enum's
            open_.append((node.end_byte, name, kind))
    return symbols


def _line_start(source: bytes, at: int) -> int:
    """Where the line holding byte `at` starts (byte `at` less its column, as tree-sitter
    counts columns: in bytes)."""
    return source.rfind(b"\n", 0, at) + 1


def _apart(source: bytes, errors: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The pieces to read apart of C's top-level `errors` (byte ranges, each from its
    first line on): each ends after a line closing a top-level block (`}` at a line's
    start), so what tree-sitter misreads in one block does not swallow the next ones. A
    loop macro ending a `do` (`} while_each_thread(g, t);`) made kernel/exit.c's last
    340 lines one error, its `wait4` and `waitid` with them. An error without such a
    line inside is not read again."""
    pieces: list[tuple[int, int]] = []
    for start, end in errors:
        start = _line_start(source, start)
        cuts = [m.end() for m in _C_BLOCK_END.finditer(source, start, end) if m.end() < end]
        if cuts:
            bounds = [start, *cuts, end]
            pieces += [(a, b) for a, b in zip(bounds, bounds[1:])]
    return pieces


def _first_branches(text: str) -> str | None:
    """C with each preprocessor conditional down to its first branch: the code one
    configuration compiles, its directives and later branches (`#elif`, `#else`) turned
    into spaces (every line kept); None where no conditional has a later branch. Where
    the branches each hold part of a definition, tree-sitter reads none of them: four
    signatures of `SYSCALL_DEFINE5(clone, …)` before one body, an `if` whose condition
    differs per branch (fanotify_init's)."""
    spans: list[tuple[int, int]] = []
    later: list[bool] = []  # per open conditional: whether its first branch is past
    branched = False
    hidden_from = -1  # where the text hidden by a later branch starts, while it is
    for m in _C_CONDITIONAL.finditer(text):
        word = m.group(1)
        if word.startswith("if"):
            later.append(False)
        elif later and word == "endif":
            later.pop()
        elif later:
            later[-1] = branched = True
        hidden = any(later)
        if hidden and hidden_from < 0:
            hidden_from = m.start()
        elif not hidden and hidden_from >= 0:
            spans.append((hidden_from, m.end()))
            hidden_from = -1
        elif not hidden:
            spans.append((m.start(), m.end()))
    if hidden_from >= 0:
        spans.append((hidden_from, len(text)))
    return _blanked(text, spans) if branched else None


def _misread_in_c(node: Any, kind: str, source: bytes) -> bool:
    """Whether a C or C++ capture is no definition: a loop macro and its block read as a
    function (`for_each_node(node) {`: a definition of `(node)`); a macro's function or
    a variable not at the file's top (_at_top); a variable on an indented line, where
    one at the top is not, or on assembler's (under `#ifdef __ASSEMBLY__`, `.macro
    GR_NUM opd gr` then `\\opd = 255`), or in a macro's body whose `\\` lines
    tree-sitter lost; or the names of a `#define` in an enum's `#ifdef` read as
    enumerators."""
    if kind == "function":
        return not _declares_function(node)
    if kind == "macro_function":
        return not _at_top(node)
    if kind == VARIABLE:
        declaration = node.parent
        line = _line_start(source, declaration.start_byte)
        return source[line] in b" \t." or b"\\" in source[line : node.start_byte] or not _at_top(declaration)
    return kind == CONSTANT and _in_directive(source, node.start_byte)


def _at_top(node: Any) -> bool:
    """Whether a C node is at its file's top, maybe in conditionals there, not in a
    conditional inside a function (`#ifdef DEBUG` then `CHECK(x) { … }`). Where
    tree-sitter read a stretch of the top as an error (a macro it could not expand), a
    node in it is at the top where it starts its line, as a definition does and a
    function's statement does not."""
    parent = node.parent
    while parent is not None and parent.type != "translation_unit":  # an error may be the root
        if parent.type not in _C_CONDITIONALS and (parent.type != "ERROR" or node.start_point[1] != 0):
            return False
        parent = parent.parent
    return True


def _in_directive(source: bytes, at: int) -> bool:
    """Whether byte `at` of C source is on a preprocessor line (its continuations, after
    a `\\`, too): no enumerator is, though tree-sitter, recovering from a directive it
    does not expect inside an enum, may read one there."""
    start = _line_start(source, at)
    while start > 1 and source[start - 2 : start] == b"\\\n":
        start = _line_start(source, start - 1)
    return source[start:at].lstrip(b" \t").startswith(b"#")


def _declares_function(node: Any) -> bool:
    """Whether a C or C++ function definition is one: a loop macro and its block, as
    `for_each_node(node) { … }`, reads as a definition of type `for_each_node` whose
    declarator is `(node)`, not a name and its parameters, and after `else` as one of
    type `else` named as the macro. A macro in capitals so read at the file's top
    defines what it names (`BPF_CALL_0(bpf_get_retval) { … }`): that one is kept."""
    kind = node.child_by_field_name("type")
    if kind is not None and kind.text in _C_STATEMENT_WORDS:
        return False
    target = node.child_by_field_name("declarator")
    while target is not None and target.type in _C_WRAPPERS and target.type != "function_declarator":
        inner = target.child_by_field_name("declarator")
        target = inner if inner is not None else (target.named_children or [None])[0]
    if target is not None and target.type == "function_declarator" or _named_before_void(node) is not None:
        return True
    return kind is not None and kind.type == "type_identifier" and kind.text.isupper() and _at_top(node)


def _definition(node: Any, kind: str, grammar: str, source: bytes) -> tuple[Any, Any, str, str | None, str | None]:
    """A captured definition's first and last nodes, its kind, its name (None: no
    definition) and the scope its name gives (_name)."""
    if kind == "macro_function":  # `SYSCALL_DEFINE4(openat, …)`, then its body
        call = node.named_children[0]
        macro, first = call.child_by_field_name("function"), call.child_by_field_name("arguments").named_children[0]
        name = _text(first, source) if macro.text.isupper() else None
        return node, node.next_named_sibling, "function", name, None
    if kind == COMPATIBLE:
        name = _text(node, source)
        return node, node, kind, name if 0 < len(name) <= MAX_NAME else None, None
    if kind in (VARIABLE, _ATTRIBUTE) and grammar == "python":  # the assignment's statement, named by its target
        target = node.named_children[0].child_by_field_name("left")
        name = _text(target.child_by_field_name("attribute") if kind == _ATTRIBUTE else target, source)
        return node, node, kind, name if len(name) <= MAX_NAME else None, None
    if kind == VARIABLE and grammar in ("c", "cpp"):
        declaration = node.parent
        first = declaration if declaration.child_by_field_name("declarator") == node else node
        return first, node, kind, _variable(node, source), None
    if kind == VARIABLE and node.type == "variable_declarator":  # JavaScript's: from `export const` on
        declaration = node.parent.parent if node.parent.parent.type == "export_statement" else node.parent
        name, _ = _name(node, kind, grammar, source)
        return declaration, declaration, kind, name, None
    name, scope = _name(node, kind, grammar, source)
    if kind == "function" and grammar == "c" and (named := _named_by_macro(node) or _named_before_void(node)):
        return named[0], node, kind, _text(named[1], source), scope
    return node, node, kind, name, scope


def _named_by_macro(node: Any) -> tuple[Any, Any] | None:
    """Where a C function a macro in capitals defines starts, and its name's node, when
    tree-sitter read the macro as the function's name and the name as an unnamed
    parameter's type: it runs a line before into the definition when that line has no
    declaration it knows (`static DEFINE_PER_CPU(unsigned long, nmi_dr7);` then
    `DEFINE_IDTENTRY_RAW(exc_nmi) {`). A C function's parameters are named: one that is
    a type alone, in a definition, is a macro's argument."""
    target = node.child_by_field_name("declarator")
    if target is None or target.type != "function_declarator":
        return None
    macro, parameters = target.child_by_field_name("declarator"), target.child_by_field_name("parameters")
    if macro is None or macro.type != "identifier" or not macro.text.isupper() or parameters is None:
        return None
    first = parameters.named_children[0] if parameters.named_children else None
    kind = first.child_by_field_name("type") if first is not None and first.type == "parameter_declaration" else None
    if (
        first is None
        or kind is None
        or kind.type != "type_identifier"
        or first.child_by_field_name("declarator") is not None
    ):
        return None
    return target, kind


def _named_before_void(node: Any) -> tuple[Any, Any] | None:
    """A C function definition and its name's node where an attribute macro stands
    between the return type and the name of a function of no parameters: without a
    preprocessor tree-sitter ends a declaration at the macro and reads
    `void __softirq_entry __do_softirq(void) {` from the name on as a definition of type
    `__do_softirq` whose declarator is `(void)` (`--symbol __do_softirq` found nothing)."""
    target, kind = node.child_by_field_name("declarator"), node.child_by_field_name("type")
    if target is None or kind is None or target.type != "parenthesized_declarator" or kind.type != "type_identifier":
        return None
    inner = target.named_children
    return (node, kind) if len(inner) == 1 and inner[0].text == b"void" else None


def _blank_attributes(text: str) -> str:
    """C with each `__name(args)` that stands before more of a declaration (an attribute
    macro: `__alloc_size(1) void *kmalloc(…)`, `__printf(2, 3)`, `__attribute__((…))`)
    turned into spaces. Without a preprocessor tree-sitter reads such a macro as the
    function's declarator and loses the definition; spaces keep every offset and line."""
    spans = []
    for m in _C_ATTRIBUTE.finditer(text):
        if text[text.rfind("\n", 0, m.start()) + 1 : m.start()].lstrip().startswith("#"):
            continue  # `#define __getname() kmem_cache_alloc(…)`: the macro's own name
        depth, i = 1, m.end()
        while depth and i < len(text) and i - m.end() < MAX_ATTRIBUTE:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        if depth == 0 and _C_DECLARATION_GOES_ON.match(text, i):
            spans.append((m.start(), i))
    return _blanked(text, spans)


def _as_loops(text: str) -> str:
    """C with each loop macro that opens a statement (_C_LOOP_MACRO: the line ends after
    its arguments, or with its body's `{`) written as `for(;;)` and spaces: without a
    preprocessor tree-sitter read `for_each_possible_cpu(i)` and a body without braces
    on the next line as a declaration gone wrong, and the function held the rest of the
    file (`nr_context_switches` in kernel/sched/core.c, 6,000 lines; the next function
    lost). Every offset and line stays where it was."""
    spans: list[tuple[int, int]] = []
    for m in _C_LOOP_MACRO.finditer(text):
        depth, i = 1, m.end()
        while depth and i < len(text) and i - m.end() < MAX_ATTRIBUTE:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        if depth == 0 and _C_LOOP_BODY_FOLLOWS.match(text, i) and (not spans or m.start(1) >= spans[-1][1]):
            spans.append((m.start(1), i))
    if not spans:
        return text
    blanked, parts, at = _blanked(text, spans), [], 0
    for start, _ in spans:  # a name is longer than `for(;;)`: it takes the blanked name's place
        parts += [blanked[at:start], "for(;;)"]
        at = start + len("for(;;)")
    return "".join(parts) + blanked[at:]


def _blanked(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """`text` with each of `spans` (in order; one overlapping the last is passed over)
    turned into spaces but its line breaks: every offset and line stays where it was."""
    parts, at = [], 0
    for start, end in spans:
        if start >= at:
            parts += [text[at:start], _NOT_LINE_BREAK.sub(" ", text[start:end])]
            at = end
    return "".join(parts) + text[at:] if parts else text


def _after_attribute(target: Any) -> Any:
    """The name a C declarator holds after an attribute macro at a line's end: in
    `static int __init\ndecay(char *str)` tree-sitter takes `__init` for the function's
    name and leaves `decay` an error beside it; that one is the name."""
    if target is None or target.type != "identifier" or target.next_named_sibling is None:
        return target
    error = target.next_named_sibling
    if error.type == "ERROR" and len(error.named_children) == 1 and error.named_children[0].type == "identifier":
        return error.named_children[0]
    return target


def _variable(node: Any, source: bytes) -> str | None:
    """A variable's name: what its declarator wraps (`*names[]`, `(*handler)(void)`).
    Beside an attribute macro (`x __read_mostly = 1`, `*names[] __initdata`, `__initdata
    *bar`), tree-sitter reads one of the two names as an error: the name is the one not
    starting with `__`, as the kernel's attribute macros do. None for a name it supposed."""
    beside = [node.prev_named_sibling, *node.children]  # where an error holds one of the two
    target = node.child_by_field_name("declarator")
    while target is not None and target.type in _C_WRAPPERS:
        beside += target.children
        inner = target.child_by_field_name("declarator")
        target = inner if inner is not None else (target.named_children or [None])[0]
    if target is None or target.type != "identifier" or target.is_missing:
        return None  # is_missing: a name tree-sitter supposed, to go on (`DEFINE_PER_CPU(…) = {`)
    name = _text(target, source)
    if name.startswith("__"):
        misread = (_first_identifier(n) for n in beside if n is not None and n.type == "ERROR")
        name = next((text for n in misread if n is not None and not (text := _text(n, source)).startswith("__")), name)
    return name if len(name) <= MAX_NAME else None


def _first_identifier(node: Any) -> Any:
    """The first identifier in `node` (itself, or its first named child's, and so on)."""
    while node is not None and node.type != "identifier":
        node = (node.named_children or [None])[0]
    return node


def _text(node: Any, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _name(node: Any, kind: str, grammar: str, source: bytes) -> tuple[str | None, str | None]:
    """The definition's name, and the scope its name gives (C++ `Circle::area` → Circle)."""
    scope = None
    if grammar in ("c", "cpp") and kind in ("function", "type"):
        target = node.child_by_field_name("declarator")
        if kind == "type" and target is not None:
            target = _after_annotation(node, target)
        while target is not None and target.type in _C_WRAPPERS:
            inner = target.child_by_field_name("declarator")
            target = inner if inner is not None else (target.named_children or [None])[0]
        while target is not None and target.type == "qualified_identifier":
            where = target.child_by_field_name("scope")
            scope = _text(where, source) if where is not None else scope
            target = target.child_by_field_name("name")
        target = _after_attribute(target)
    elif kind == "impl":  # Rust's `impl Type`, Swift's `extension Type`
        target = node.child_by_field_name("type") or node.child_by_field_name("name")
    else:
        target = node.child_by_field_name("name")
    if target is None:
        return None, None
    name = _text(target, source)
    return (name, scope) if 0 < len(name) <= MAX_NAME and "\n" not in name else (None, None)


def _after_annotation(node: Any, declarator: Any) -> Any:
    """A C typedef's name where an annotation macro stands before it: without a
    preprocessor, tree-sitter reads `typedef unsigned int __bitwise gfp_t;` as the type
    `__bitwise` and an error holding `gfp_t`, the name the kernel's sparse annotations
    (`__bitwise`, `__nocast`) come before. Else its declarator."""
    after = [c for c in node.children if c.type == "ERROR" and c.start_byte >= declarator.end_byte]
    names = after[-1].named_children if after else []
    if declarator.type == "type_identifier" and len(names) == 1 and names[0].type == "identifier":
        return names[0]
    return declarator


def _go_receiver(node: Any, source: bytes) -> str | None:
    """The type a Go method is declared on: `func (s *Server) Serve()` → Server."""
    receiver = node.child_by_field_name("receiver")
    for param in receiver.named_children if receiver is not None else ():
        t = param.child_by_field_name("type")
        while t is not None and t.type in ("pointer_type", "generic_type"):
            t = t.named_children[0] if t.named_children else None
        if t is not None:
            return _text(t, source)
    return None


def parse_batch(items: Iterable[tuple[int, str, bytes | str]]) -> list[tuple[int, list[Symbol]]]:
    """(content id, grammar, stored content) → (content id, its definitions): what the
    pool workers run. A content that does not parse yields no definitions."""
    out = []
    for content_id, grammar, stored in items:
        try:
            symbols = parse(unpack(stored), grammar)
        except (ValueError, RuntimeError):
            symbols = []
        out.append((content_id, symbols))
    return out
