"""Definitions in source code: tree-sitter's real grammars, the stored definitions, and
`search --symbol` and the definition named beside each hit, through a real gnod."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

import pytest
from mcp import Client, StdioServerParameters

from conftest import _run_cli, cli_json, wait_until, write_tree
from gnod.ingest.canonical import canonicalize
from gnod.ingest.symbols import GRAMMARS, display, grammar_for, parse, parse_batch
from gnod.server.symbols import Symbols
from gnod.store import documents as docstore
from gnod.store import symbols as symstore
from gnod.text.analyzer import identifier_parts

C_SOURCE = """\
#include <linux/slab.h>
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define GFP_KERNEL 0x10

struct foo_dev {
\tint irq;
};
typedef struct foo_dev foo_dev_t;
int foo_declared_only(int x);

static __always_inline __alloc_size(1) void *foo_alloc(size_t size)
{
\treturn kmalloc(size, GFP_KERNEL);
}

static int foo_probe(struct device *dev)
{
\tstruct foo_dev *fd = foo_alloc(sizeof(*fd));
\tfd->irq = platform_get_irq(dev, 0);
\treturn 0;
}
"""

PY_SOURCE = '''\
import os


def load_settings(path):
    """Read the settings file."""
    return open(path).read()


class Parser:
    @staticmethod
    def parse(text):
        return text.split()

    class Token:
        def render(self):
            return "token"
'''

TS_SOURCE = """\
export interface Shape { area(): number }
export type ShapeId = string;
export class Circle implements Shape {
  constructor(private r: number) {}
  area(): number { return 3.14159 * this.r * this.r; }
}
export const makeCircle = (r: number): Circle => new Circle(r);
"""

GO_SOURCE = """\
package server

type Server struct { addr string }

func NewServer(addr string) *Server { return &Server{addr: addr} }

func (s *Server) ListenAndServe() error {
\treturn nil
}
"""

RUST_SOURCE = """\
pub struct Point { x: i32, y: i32 }

pub trait Area { fn area(&self) -> f64; }

impl Point {
    pub fn manhattan(&self) -> i32 { self.x.abs() + self.y.abs() }
}

macro_rules! square { ($x:expr) => { $x * $x }; }
"""


def _defs(text: str, grammar: str) -> list[tuple[str, str, int, int, str | None]]:
    return [tuple(s) for s in parse(text, grammar)]  # type: ignore[misc]


# --- the parser, in process --------------------------------------------------------------


def test_c_definitions_with_their_lines_and_no_prototypes_or_constants():
    defs = _defs(C_SOURCE, "c")
    assert defs == [
        ("MAX", "macro", 2, 2, None),
        ("foo_dev", "struct", 5, 7, None),
        ("foo_dev_t", "type", 8, 8, None),
        # The attribute macro before the return type does not hide the name (nor become one).
        ("foo_alloc", "function", 11, 14, None),
        ("foo_probe", "function", 16, 21, None),
    ]


def test_c_and_cpp_enumerators_are_constants_of_their_enum():
    """A kernel developer looks enum constants up as often as macros (`TASK_COMM_LEN`,
    `IRQ_HANDLED`, `NR_FREE_PAGES`): each enumerator is a definition of its own line,
    in a named enum its member, in an anonymous one, a typedef's or an `#ifdef`'s too."""
    source = (
        "enum irqreturn {\n\tIRQ_NONE\t\t= (0 << 0),\n\tIRQ_HANDLED\t\t= (1 << 0),\n};\n"
        "enum {\n\tTASK_COMM_LEN = 16,\n};\n"
        "enum pageflags {\n\tPG_locked,\n#ifdef CONFIG_MMU\n\tPG_mlocked,\n#endif\n"
        "\tPG_readahead = PG_locked,\n};\n"
        "typedef enum { RED, GREEN } color_t;\n"
    )
    assert _defs(source, "c") == [
        ("irqreturn", "enum", 1, 4, None),
        ("IRQ_NONE", "constant", 2, 2, "irqreturn"),
        ("IRQ_HANDLED", "constant", 3, 3, "irqreturn"),
        ("TASK_COMM_LEN", "constant", 6, 6, None),
        ("pageflags", "enum", 8, 14, None),
        ("PG_locked", "constant", 9, 9, "pageflags"),
        ("PG_mlocked", "constant", 11, 11, "pageflags"),
        ("PG_readahead", "constant", 13, 13, "pageflags"),
        ("color_t", "type", 15, 15, None),
        ("RED", "constant", 15, 15, None),
        ("GREEN", "constant", 15, 15, None),
    ]
    defs = parse(source, "c")
    assert symstore.label(defs, 3, 3) == "constant IRQ_HANDLED"  # its own line
    assert symstore.label(defs, 10, 10) == "enum pageflags"  # the `#ifdef` between them
    assert _defs("namespace gfx {\nenum class Color { Red, Green = 2 };\n}\n", "cpp") == [
        ("gfx", "module", 1, 3, None),
        ("Color", "enum", 2, 2, None),
        ("Red", "constant", 2, 2, "Color"),
        ("Green", "constant", 2, 2, "Color"),
    ]


def test_c_variables_a_file_defines_with_a_value_are_definitions():
    """`ext4_file_operations`, `sys_call_table`, `vm_swappiness`: a file's top defines them
    with their value, and a developer looks them up as functions; each declarator of a
    declaration is one. A declaration without a value (`extern`, a tentative one), a
    macro's call and a variable inside a function are not. Beside an attribute macro
    (`*names[] __initdata`), the name is the variable's, not the macro's."""
    source = (
        "int vm_swappiness = 60;\n"
        "const struct file_operations ext4_file_operations = {\n\t.llseek = ext4_llseek,\n};\n"
        "asmlinkage const sys_call_ptr_t sys_call_table[] = {\n#include <asm/syscalls_64.h>\n};\n"
        "static DEFINE_MUTEX(foo_lock);\nEXPORT_SYMBOL(vm_swappiness);\nextern int bar;\nstatic int counter;\n"
        "static int (*handler)(void) = NULL;\n"
        'static const char *names[] __initdata = { "a", "b" };\n'
        "int x = 1, y = 2;\n"
        "static const struct\nfile_operations split_fops = { };\n"
        "int f(void) { static int inner = 3; return inner; }\n"
    )
    assert _defs(source, "c") == [
        ("vm_swappiness", "variable", 1, 1, None),
        ("ext4_file_operations", "variable", 2, 4, None),
        ("sys_call_table", "variable", 5, 7, None),
        ("handler", "variable", 12, 12, None),
        ("names", "variable", 13, 13, None),
        ("x", "variable", 14, 14, None),
        ("y", "variable", 14, 14, None),
        ("split_fops", "variable", 15, 16, None),  # from the declaration's first line
        ("f", "function", 17, 17, None),
    ]
    assert display("vm_swappiness", "variable", None) == "variable vm_swappiness"
    # The kernel's attribute macros, before or after the name (each read as the name).
    source = (
        "static int x __read_mostly = 1;\n"
        "static int __read_mostly y = 2;\n"
        "static struct foo __initdata *bar = NULL;\n"
        "static u8 size_index[24] __ro_after_init = {\n\t3,\n};\n"
        "static struct regulator_init_data __maybe_unused ldo1 = {\n\t.a = 1,\n};\n"
        "int __per_cpu_offset = 3;\n"
    )
    assert [name for name, *_ in _defs(source, "c")] == ["x", "y", "bar", "size_index", "ldo1", "__per_cpu_offset"]
    assert _defs("int g_count = 0;\nnamespace n {\n}\n", "cpp")[0] == ("g_count", "variable", 1, 1, None)


def test_c_variables_in_conditionals_at_a_files_top_are_definitions_assembler_there_is_not():
    """A header's include guard holds all of it, and a `#ifdef CONFIG_…` at a file's top
    holds tables the kernel looks up (a fifth of them were not found). Not a variable in a
    function's `#ifdef`, assembler under `#ifdef __ASSEMBLY__` (`\\opd = 255`), nor a
    macro's body tree-sitter lost track of (its lines are indented)."""
    source = (
        "#ifndef _CXL_H_\n#define _CXL_H_\n"
        "static const cxl_p1_reg_t CXL_PSL_CtxTime = {0x0000};\n"
        "#ifdef CONFIG_X86_LOCAL_APIC\nstatic u64 acpi_lapic_addr __initdata = APIC_DEFAULT_PHYS_BASE;\n"
        "#else\nstatic u64 acpi_lapic_addr = 0;\n#endif\n"
        "#ifdef __ASSEMBLY__\n.macro\tGR_NUM\topd gr\n\t\\opd = 255\n\t.ifc \\gr,%r0\n\t\t\\opd = 0\n"
        "\t.endif\n.endm\n#endif\n"
        "int f(void)\n{\n#ifdef DEBUG\n\tint inner = 3;\n#endif\n\treturn 0;\n}\n"
        "#if 1\n\tuint64_t ___res, ___n = (n);\n#endif\n"
        "#endif\n"
    )
    assert [(name, kind, start) for name, kind, start, _, _ in _defs(source, "c")] == [
        ("CXL_PSL_CtxTime", "variable", 3),
        ("acpi_lapic_addr", "variable", 5),
        ("acpi_lapic_addr", "variable", 7),
        ("f", "function", 17),
    ]


@pytest.mark.parametrize(
    "source, expected",
    [
        # Branches that each hold part of a definition: four signatures of one system call
        # before its body (`--symbol clone` did not find kernel/fork.c), an `if` whose
        # condition differs per branch (fanotify_init's body was an error to the file's
        # end). They are read again down to each conditional's first branch.
        (
            "#ifdef CONFIG_CLONE_BACKWARDS\nSYSCALL_DEFINE5(clone, unsigned long, clone_flags, int, tls)\n"
            "#elif defined(CONFIG_CLONE_BACKWARDS2)\nSYSCALL_DEFINE5(clone, unsigned long, newsp, int, tls)\n"
            "#else\nSYSCALL_DEFINE5(clone, unsigned long, clone_flags, \\\n\t\tint, tls)\n#endif\n"
            "{\n\treturn kernel_clone(&args);\n}\n\n"
            "SYSCALL_DEFINE2(fanotify_init, unsigned int, flags, unsigned int, event_f_flags)\n{\n"
            "#ifdef CONFIG_AUDITSYSCALL\n\tif (flags & ~(FANOTIFY_INIT_FLAGS | FAN_ENABLE_AUDIT))\n"
            "#else\n\tif (flags & ~FANOTIFY_INIT_FLAGS)\n#endif\n\t\treturn -EINVAL;\n\treturn 0;\n}\n"
            "static int fanotify_add_mark(int fd)\n{\n\treturn fd;\n}\n",
            [
                ("clone", "function", 2, 11),
                ("fanotify_init", "function", 13, 22),
                ("fanotify_add_mark", "function", 23, 26),
            ],
        ),
        # A stretch tree-sitter cannot read at all (a loop macro ending a `do`: `}
        # while_each_thread(g, t);`) swallowed every definition after it: kernel/exit.c's
        # last 340 lines, `wait4` among them. It is read again a top-level block at a time.
        (
            "static long do_wait(struct wait_opts *wo)\n{\n\tstruct task_struct *tsk = current;\n\n\tdo {\n"
            "\t\tretval = do_wait_thread(wo, tsk);\n\t} while_each_thread(current, tsk);\n\treturn retval;\n}\n\n"
            "SYSCALL_DEFINE4(wait4, pid_t, upid, int __user *, stat_addr,\n\t\tint, options, struct rusage __user *, ru)\n"
            "{\n\treturn kernel_wait4(upid, stat_addr, options, ru);\n}\n\n"
            "long kernel_wait(pid_t pid, int *stat)\n{\n\treturn do_wait(&wo);\n}\n\n"
            'static const struct ctl_table kern_exit_table[] = {\n\t{ .procname = "oops_limit" },\n\t{ }\n};\n',
            [
                ("do_wait", "function", 1, 9),
                ("wait4", "function", 11, 15),
                ("kernel_wait", "function", 17, 20),
                ("kern_exit_table", "variable", 22, 25),
            ],
        ),
    ],
)
def test_c_that_tree_sitter_cannot_read_whole_is_read_again(source, expected):
    assert [(name, kind, start, end) for name, kind, start, end, _ in _defs(source, "c")] == expected


def test_a_variable_named_by_a_name_of_code_puts_its_file_first_a_plain_word_does_not(db, tmp_path):
    """`vm_swappiness` is where mm/vmscan.c defines it before the files reading it; a
    plain word (`debug`, a module's `static int debug = 0;`) names no definition."""
    from conftest import lexical_paths
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.text.analyzer import AnalyzerSet

    reads = "".join(f"\tif (vm_swappiness > {i}) reclaim(memcg, vm_swappiness);\n" for i in range(8))
    root = write_tree(
        str(tmp_path / "src"),
        {
            "mm/vmscan.c": "/* page reclaim */\nint vm_swappiness = 60;\n" + "/* scanning the lru lists */\n" * 30,
            "mm/memcontrol.c": f"static void scan(struct mem_cgroup *memcg)\n{{\n{reads}}}\n",
            "drivers/net/foo.c": "static int debug = 0;\n" + "/* the foo network card */\n" * 30,
            "Documentation/debug.rst": "Debugging\n=========\n\nHow to debug the kernel: debug options.\n",
        },
    )
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="src", path=root))
    assert lexical_paths(db, an, "vm_swappiness") == ["mm/memcontrol.c", "mm/vmscan.c"]  # bm25 alone
    _parse_all(db)
    assert lexical_paths(db, an, "vm_swappiness") == ["mm/vmscan.c", "mm/memcontrol.c"]
    assert lexical_paths(db, an, "debug")[0] == "Documentation/debug.rst"
    found = symstore.lookup(db, ["ext4_file_operations", "vm_swappiness"], False, "1", [], 10)
    assert [(f.rel_path, f.symbol.kind, f.symbol.start_line) for f in found] == [("mm/vmscan.c", "variable", 2)]


def test_a_define_inside_an_enum_defines_no_enumerators():
    """tree-sitter, meeting a `#define` in an enum's `#ifdef` (powerpc's fixmap.h), read
    the names on its line as enumerators: `PAGE_SIZE` was an enum constant there, and a
    search for it put that file before the headers defining it."""
    source = (
        "enum fixed_addresses {\n\tFIX_HOLE,\n#ifdef CONFIG_PPC_8xx\n"
        "#define FIX_IMMR_SIZE\t(512 * 1024 / PAGE_SIZE)\n\tFIX_IMMR_START,\n"
        "#define FIX_ALIGN(x) \\\n\t((x) + PAGE_SIZE)\n\tFIX_IMMR_BASE,\n#endif\n};\n"
    )
    assert _defs(source, "c") == [
        ("fixed_addresses", "enum", 1, 10, None),
        ("FIX_HOLE", "constant", 2, 2, "fixed_addresses"),
        ("FIX_IMMR_START", "constant", 5, 5, "fixed_addresses"),
        ("FIX_IMMR_BASE", "constant", 8, 8, "fixed_addresses"),
    ]


def test_a_c_typedef_is_named_by_its_name_after_an_annotation_macro():
    """The kernel's sparse annotations stand between a typedef's type and its name; read
    without a preprocessor, the annotation looked like the name (`__bitwise` defined
    gfp_t's line)."""
    source = (
        "typedef unsigned int __bitwise gfp_t;\n"
        "typedef unsigned int slab_flags_t;\n"
        "typedef __u32 __bitwise __le32;\n"
        "typedef unsigned long __nocast cputime_t;\n"
        "typedef struct { int x; } __attribute__((packed)) packed_t;\n"
        "typedef int (*handler_t)(int);\n"
        "typedef struct foo __rcu *foo_ptr;\n"
    )
    expected = ["gfp_t", "slab_flags_t", "__le32", "cputime_t", "packed_t", "handler_t", "foo_ptr"]
    for grammar in ("c", "cpp"):
        defs = _defs(source, grammar)
        assert [(name, kind, line) for name, kind, line, _, _ in defs] == [
            (name, "type", i) for i, name in enumerate(expected, 1)
        ], grammar


@pytest.mark.parametrize(
    "source, expected",
    [
        # Without a preprocessor `for_each_node(node) {` reads as a function definition
        # without parameters, which C has not; and `#define __getname() kmem_cache_alloc(…)`
        # defines __getname (taking its name for an attribute macro made it define
        # kmem_cache_alloc); a macro in capitals so read defines what it names.
        (
            "#define __getname() kmem_cache_alloc(names_cachep, GFP_KERNEL)\n"
            "static int count(void)\n{\n\tint n = 0;\n\tfor_each_node(node) {\n\t\tn++;\n\t}\n\treturn n;\n}\n"
            "page_chain_for_each(page) {\n\tput_page(page);\n}\n"
            "__printf(1, 2) void note(const char *fmt, ...) {}\n"
            "BPF_CALL_0(bpf_get_retval)\n{\n\treturn 0;\n}\n",
            [
                ("__getname", "macro", 1),
                ("count", "function", 2),
                ("note", "function", 13),
                ("bpf_get_retval", "function", 14),
            ],
        ),
        # `static int __init` on one line and `decay(char *str)` on the next: tree-sitter
        # names the function `__init` and leaves `decay` an error beside it (`--symbol
        # __init` then found it instead of the macro); on one line it was read right already.
        (
            "static int __init\ndecay (char *str)\n{\n\treturn 1;\n}\n"
            "static int __init setup(void)\n{\n\treturn 0;\n}\n"
            "static void __maybe_unused\nohci_dump_ed(int ed)\n{\n}\n",
            [("decay", "function", 1), ("setup", "function", 6), ("ohci_dump_ed", "function", 10)],
        ),
        # A loop macro after `else` reads as a function of type `else` named as the macro
        # (`search --symbol list_for_each_entry` listed a driver's `else` line): here an
        # `else` a preprocessor's branches leave after a function, as tree-sitter reads some
        # `if (…) list_for_each_entry(…) { … } else list_for_each_entry(…) { … }` in one.
        (
            "void f(void)\n{\n}\nelse\n\tlist_for_each_entry(it, &p->items, head) {\n\t\tput(it);\n\t}\n",
            [("f", "function", 1)],
        ),
        # A macro in capitals that defines a function names it by its first argument: the
        # kernel's system calls (`--symbol openat` found nothing), and an IDT entry after a
        # per-CPU variable's line, which tree-sitter ran into it (its name was
        # `DEFINE_IDTENTRY_RAW`, from the variable's line); a lower-case one defines nothing.
        (
            "SYSCALL_DEFINE4(openat, int, dfd, const char __user *, filename, int, flags,\n"
            "\t\tumode_t, mode)\n{\n\treturn do_open(dfd, filename, flags, mode);\n}\n"
            "static DEFINE_PER_CPU(unsigned long, nmi_dr7);\n\n"
            "DEFINE_IDTENTRY_RAW(exc_nmi)\n{\n\tnmi();\n}\n"
            "DEFINE_IDTENTRY_RAW(exc_nmi_noist)\n{\n\texc_nmi(regs);\n}\n"
            "setup_param(quiet, int)\n{\n\treturn 0;\n}\n",
            [("openat", "function", 1), ("exc_nmi", "function", 8), ("exc_nmi_noist", "function", 12)],
        ),
        # ...in a conditional at the file's top too (152 of the kernel's 682 system calls
        # were not found), and after a stretch tree-sitter could not read (a per-CPU
        # variable's initializer with directives in it: `--symbol getrandom` found
        # nothing); a macro block in a conditional inside a function is no definition.
        (
            "#ifdef CONFIG_X86_IOPL_IOPERM\nSYSCALL_DEFINE1(iopl, unsigned int, level)\n{\n\treturn 0;\n}\n"
            "#else\nSYSCALL_DEFINE1(iopl, unsigned int, level)\n{\n\treturn -ENOSYS;\n}\n#endif\n"
            "void f(void)\n{\n#ifdef DEBUG\n\tCHECK_ALL(items)\n\t{\n\t\tcheck();\n\t}\n#endif\n}\n",
            [("iopl", "function", 2), ("iopl", "function", 7), ("f", "function", 12)],
        ),
        (
            "static DEFINE_PER_CPU(struct fast_pool, irq_randomness) = {\n#ifdef CONFIG_64BIT\n"
            "#define FASTMIX_PERM SIPHASH_PERMUTATION\n\t.pool = { SIPHASH_CONST_0, SIPHASH_CONST_1 },\n"
            "#else\n#define FASTMIX_PERM HSIPHASH_PERMUTATION\n\t.pool = { HSIPHASH_CONST_0 },\n#endif\n"
            "\t.mix = __TIMER_INITIALIZER(mix_interrupt_randomness, 0)\n};\n\n"
            "SYSCALL_DEFINE3(getrandom, char __user *, ubuf, size_t, len, unsigned int, flags)\n"
            "{\n\tint ret = len;\n\treturn ret;\n}\n",
            [("getrandom", "function", 12)],
        ),
        # An attribute macro between the type and the name of a function of no
        # parameters: tree-sitter ends a declaration at the macro and reads the rest as a
        # definition of type `__do_softirq` (`--symbol __do_softirq` found nothing).
        (
            "asmlinkage __visible void __softirq_entry __do_softirq(void)\n{\n\thandle(false);\n}\n"
            "void __irq_entry timer_interrupt(struct pt_regs *regs)\n{\n}\n",
            [("__do_softirq", "function", 1), ("timer_interrupt", "function", 5)],
        ),
    ],
)
def test_c_definitions_are_named_as_written(source, expected):
    assert [(name, kind, start) for name, kind, start, _, _ in _defs(source, "c")] == expected


def test_a_loop_macro_over_a_body_without_braces_ends_no_function():
    """`for_each_possible_cpu(i)` and its body on the next line: tree-sitter read them as
    a declaration gone wrong, `nr_context_switches` held the rest of kernel/sched/core.c
    (6,000 lines), `cpu_rq` became a function and `nr_iowait_cpu` was lost. A GNU-style
    definition named so, at its line's start, stays one."""
    source = (
        "unsigned long long nr_context_switches(void)\n{\n\tint i;\n\tunsigned long long sum = 0;\n\n"
        "\tfor_each_possible_cpu(i)\n\t\tsum += cpu_rq(i)->nr_switches;\n\n\treturn sum;\n}\n\n"
        "unsigned int nr_iowait_cpu(int cpu)\n{\n\tlist_for_each_entry(p, &head,\n\t\t\t    list) {\n"
        "\t\tcount++;\n\t}\n\treturn atomic_read(&cpu_rq(cpu)->nr_iowait);\n}\n\n"
        "static void\nforeach_node(struct tree *t)\n{\n\tvisit(t);\n}\n"
    )
    assert [(name, kind, start, end) for name, kind, start, end, _ in _defs(source, "c")] == [
        ("nr_context_switches", "function", 1, 10),
        ("nr_iowait_cpu", "function", 12, 19),
        ("foreach_node", "function", 21, 25),
    ]


REGISTER_MAP = """/*
 * Copyright 2022 Example
 */
#ifndef _REGS_H
#define _REGS_H
// offsets
#define mmREG_A 0x0010 /* a */
#define mmREG_A__FIELD_MASK 0x0000ffffL

  /* one-line */
#endif
"""


def test_c_of_object_macros_and_comments_alone_is_not_parsed(monkeypatch):
    """A generated register map defines nothing kept (object-like macros are left out):
    tree-sitter is not even started for it; code next to such lines is still parsed."""
    from gnod.ingest import symbols

    def no_parser(grammar: str):
        raise AssertionError("parsed")

    with monkeypatch.context() as m:
        m.setattr(symbols, "_parser", no_parser)
        assert parse(REGISTER_MAP, "c") == [] and parse(REGISTER_MAP, "cpp") == []
    cases = {
        "#define REG_OF(n) (0x10 + (n))\n": [("REG_OF", "macro")],
        "/* id */ typedef unsigned int reg_t;\n": [("reg_t", "type")],
        "/* a comment\n * that ends */ struct regs { int a; };\n": [("regs", "struct")],
        "#define REG 1\nstatic int read_reg(void)\n{\n\treturn REG;\n}\n": [("read_reg", "function")],
    }
    for extra, expected in cases.items():
        assert [(d.name, d.kind) for d in parse(REGISTER_MAP + extra, "c")] == expected, extra


def test_python_methods_belong_to_their_class_and_nested_functions_stay_local():
    defs = _defs(PY_SOURCE, "python")
    assert defs == [
        ("load_settings", "function", 4, 6, None),
        ("Parser", "class", 9, 16, None),
        ("parse", "method", 11, 12, "Parser"),
        ("Token", "class", 14, 16, "Parser"),
        ("render", "method", 15, 16, "Token"),
    ]


def test_python_names_a_module_or_a_class_assigns_are_definitions():
    """`--symbol HTTP_404_NOT_FOUND` and `--symbol __version__` found nothing: a module's
    and a class's own assignments to a name define it (an enum's members), the statement
    whole; not a function's locals, nor several names or an attribute assigned at once."""
    source = (
        '__version__ = "1.2"\n'
        "HTTP_404_NOT_FOUND: int = 404\n"
        "ROUTES = {\n"
        '    "a": 1,\n'
        "}\n"
        "class Color(Enum):\n"
        "    RED = 1\n"
        "    def hue(self):\n"
        "        x = 2\n"
        "        return x\n"
        "a, b = 1, 2\n"
        "obj.attr = 5\n"
    )
    assert _defs(source, "python") == [
        ("__version__", "variable", 1, 1, None),
        ("HTTP_404_NOT_FOUND", "variable", 2, 2, None),
        ("ROUTES", "variable", 3, 5, None),
        ("Color", "class", 6, 10, None),
        ("RED", "variable", 7, 7, "Color"),
        ("hue", "method", 8, 10, "Color"),
    ]


def test_python_instance_attributes_are_their_class_s_variables():
    """`self.retry_budget = 5` in `__init__` defined nothing (`--symbol retry_budget` found
    only its uses): what a class's `__init__` assigns to its own instance, at the top of
    its body, is a variable of that class; not another object's attribute, not one a
    branch or another method assigns, not a module function's."""
    source = (
        "class Fetcher:\n"
        "    def __init__(self, url, timeout=10):\n"
        "        self.url = url\n"
        "        self.retry_budget: int = 5\n"
        "        other.x = 1\n"
        "        if url:\n"
        "            self.nested = 1\n"
        "    def run(self):\n"
        "        self.later = 2\n"
        "def __init__(me):\n"
        "    me.y = 1\n"
    )
    assert _defs(source, "python") == [
        ("Fetcher", "class", 1, 9, None),
        ("__init__", "method", 2, 7, "Fetcher"),
        ("url", "variable", 3, 3, "Fetcher"),
        ("retry_budget", "variable", 4, 4, "Fetcher"),
        ("run", "method", 8, 9, "Fetcher"),
        ("__init__", "function", 10, 11, None),
    ]


def test_typescript_go_and_rust_definitions():
    assert _defs(TS_SOURCE, "typescript") == [
        ("Shape", "interface", 1, 1, None),
        ("ShapeId", "type", 2, 2, None),
        ("Circle", "class", 3, 6, None),
        ("constructor", "method", 4, 4, "Circle"),
        ("area", "method", 5, 5, "Circle"),
        ("makeCircle", "function", 7, 7, None),
    ]
    assert _defs(GO_SOURCE, "go") == [
        ("Server", "struct", 3, 3, None),
        ("NewServer", "function", 5, 5, None),
        ("ListenAndServe", "method", 7, 9, "Server"),  # the receiver's type, pointer or not
    ]
    assert _defs(RUST_SOURCE, "rust") == [
        ("Point", "struct", 1, 1, None),
        ("Area", "trait", 3, 3, None),
        ("area", "method", 3, 3, "Area"),
        ("Point", "impl", 5, 7, None),
        ("manhattan", "method", 6, 6, "Point"),
        ("square", "macro", 9, 9, None),
    ]


def test_javascript_and_go_constants_and_variables_at_a_modules_top():
    """`--symbol DEFAULT_RETRY` and `--symbol ErrLimited` found nothing (a tryout's agent
    took the names for absent): a module's `const`, `let`, `var` are definitions, not a
    function's own; an arrow function stays a function."""
    ts = (
        "export const DEFAULT_RETRY = 5;\nconst MAX_SKEW = 300;\nexport let server = createServer(h);\n"
        "export const handle = (r: Request) => r;\nfunction f() {\n  const inner = 1;\n}\nvar legacy = 1;\n"
    )
    assert _defs(ts, "typescript") == [
        ("DEFAULT_RETRY", "variable", 1, 1, None),
        ("MAX_SKEW", "variable", 2, 2, None),
        ("server", "variable", 3, 3, None),
        ("handle", "function", 4, 4, None),
        ("f", "function", 5, 7, None),
        ("legacy", "variable", 8, 8, None),
    ]
    assert [d[:2] for d in _defs("export const A = 1;\n", "javascript")] == [("A", "variable")]
    go = (
        "package x\n\nconst DefaultBurst = 100\n\nconst (\n\tLow = iota\n\tHigh\n)\n\n"
        'var ErrLimited = errors.New("limited")\n\nfunc f() {\n\tconst local = 1\n\tvar v = 2\n}\n'
    )
    assert _defs(go, "go") == [
        ("DefaultBurst", "constant", 3, 3, None),
        ("Low", "constant", 6, 6, None),
        ("High", "constant", 7, 7, None),
        ("ErrLimited", "variable", 10, 10, None),
        ("f", "function", 12, 15, None),
    ]


def test_cpp_and_java_definitions_with_their_classes():
    cpp = (
        "namespace geo {\nclass Shape {\n public:\n  virtual double area() const = 0;\n  Shape() {}\n};\n"
        "double Circle::area() const { return 3.14; }\n"
        "template <typename T> T max_of(T a, T b) { return a > b ? a : b; }\n}\n"
    )
    assert _defs(cpp, "cpp") == [
        ("geo", "module", 1, 9, None),
        ("Shape", "class", 2, 6, None),
        ("Shape", "method", 5, 5, "Shape"),  # the declaration on line 4 is not a definition
        ("area", "method", 7, 7, "Circle"),  # defined outside its class: named by its scope
        ("max_of", "function", 8, 8, None),
    ]
    java = (
        "class Store {\n  Store() {}\n  String get(String k) { return k; }\n"
        "  enum Kind { A, B { int code() { return 2; } }; int code() { return 1; } }\n  record Pair(int a) {}\n}\n"
    )
    assert _defs(java, "java") == [
        ("Store", "class", 1, 6, None),
        ("Store", "method", 2, 2, "Store"),
        ("get", "method", 3, 3, "Store"),
        ("Kind", "enum", 4, 4, "Store"),
        ("A", "constant", 4, 4, "Kind"),
        ("B", "constant", 4, 4, "Kind"),
        ("code", "method", 4, 4, "Kind"),  # B's own, a method of its enum's
        ("code", "method", 4, 4, "Kind"),
        ("Pair", "class", 5, 5, "Store"),
    ]


def test_tsx_javascript_and_the_extensions_each_grammar_reads():
    tsx = "export function Badge(props: {n: number}) { return <b>{props.n}</b>; }\n"
    assert _defs(tsx, "tsx") == [("Badge", "function", 1, 1, None)]
    js = "class Store {\n  get(k) { return this.m[k]; }\n}\nfunction* ids() { yield 1; }\n"
    assert _defs(js, "javascript") == [
        ("Store", "class", 1, 3, None),
        ("get", "method", 2, 2, "Store"),
        ("ids", "function", 4, 4, None),
    ]
    assert {grammar_for(p) for p in ("a.c", "a.H", "x/y.py", "m.go", "lib.rs", "a.ts", "b.tsx", "c.mjs", "d.cpp")} == {
        "c",
        "cpp",
        "python",
        "go",
        "rust",
        "typescript",
        "tsx",
        "javascript",
    }
    assert grammar_for("notes.md") is None and grammar_for("Makefile") is None
    assert (grammar_for("mm/Kconfig.debug"), grammar_for("arch/x86/entry/entry_64.S")) == ("kconfig", "asm")
    assert grammar_for("arch/arm/Kconfig-nommu") == "kconfig"
    assert set(GRAMMARS.values()) == {
        *("c", "cpp", "java", "python", "go", "rust", "typescript", "tsx", "javascript"),
        *("csharp", "ruby", "php", "swift", "kconfig", "asm", "dts", "latex", "bibtex", "ini"),
    }


KCONFIG = """# SPDX-License-Identifier: GPL-2.0-only
menu "Memory Management options"

config SLUB_DEBUG
\tdefault y
\tbool "Enable SLUB debugging support" if EXPERT
\thelp
\t  SLUB has extensive debug support features.

\t  Disabling them saves code size.

menuconfig TRANSPARENT_HUGEPAGE
\tbool "Transparent Hugepage Support"
if TRANSPARENT_HUGEPAGE
choice
\tprompt "Transparent Hugepage Support sysfs defaults"
config TRANSPARENT_HUGEPAGE_ALWAYS
\tbool "always"
endchoice
endif
# config NOT_AN_OPTION
endmenu
"""

ASSEMBLER = """#include <linux/linkage.h>
\t.globl\tstartup_32, boot_params
SYM_CODE_START(entry_SYSCALL_64)
\tswapgs
SYM_INNER_LABEL(entry_SYSCALL_64_after_hwframe, SYM_L_GLOBAL)
\tpushq\t%rax
SYM_CODE_END(entry_SYSCALL_64)

SYM_FUNC_START(__switch_to_asm)
\tret
SYM_FUNC_END(__switch_to_asm)
ENTRY(legacy_entry)
\tret
ENDPROC(legacy_entry)
startup_32:
\tcli
local_label:
\tnop
SYM_DATA_START(gdt_page)
\t.quad 0
SYM_DATA_END(gdt_page)
"""


DEVICE_TREE = """// SPDX-License-Identifier: (GPL-2.0+ OR MIT)
#include <dt-bindings/interrupt-controller/arm-gic.h>
/ {
\tcpus {
\t\tcpu_l0: cpu@0 {
\t\t\tcompatible = "arm,cortex-a53";
\t\t};
\t};
\tgic: gic_alias: interrupt-controller@fee00000 {
\t\tcompatible = "arm,gic-v3";
\t\tits: msi-controller@fee20000 { msi-controller; };
\t};
};
&gic { status = "okay"; };
"""


def test_device_tree_labels_are_read_with_their_nodes():
    """A label names the node it stands before (what `&gic` refers to), to its closing
    brace; a node with two labels is found by both; `&gic { … }` refers, not defines."""
    assert _defs(DEVICE_TREE, "dts") == [
        ("cpu_l0", "label", 5, 7, None),
        ("gic", "label", 9, 12, None),
        ("gic_alias", "label", 9, 12, None),
        ("its", "label", 11, 11, None),
    ]
    assert grammar_for("arch/arm64/boot/dts/rockchip/rk3399.dtsi") == grammar_for("board.dts") == "dts"


LATEX = r"""\documentclass{book}
\begin{document}
\chapter{Introduction}
Open systems lose coherence~\cite{smith2020}.
\section*[Short]{The \emph{Big} Incompleteness}
As G\"odel showed~\cite{goedel1931}.
\subsection{Proof sketch}
Diagonal argument.
\section{Outlook}
More.
\end{document}
"""
BIBTEX = """@string{pr = "Physical Review"}
@article{smith2020,
  author = {Smith, Jane},
  title = {Decoherence},
}
@Book{goedel1931,
  author = {G{\\"o}del, Kurt},
}
"""


def test_latex_sections_and_bibtex_entries_are_read_by_their_lines():
    """A thesis's .tex had no sections (a hit named none, `get ch1.tex#Incompleteness`
    found none) and a .bib entry was no definition of its citation key: a section runs
    to the next of its level or above (or `\\end{document}`), its title's commands left
    out; an entry to the next, named by its key; `@string` defines no entry."""
    assert _defs(LATEX, "latex") == [
        ("Introduction", "chapter", 3, 10, None),
        ("The Big Incompleteness", "section", 5, 8, None),
        ("Proof sketch", "subsection", 7, 8, None),
        ("Outlook", "section", 9, 10, None),
    ]
    assert _defs(BIBTEX, "bibtex") == [("smith2020", "article", 2, 5, None), ("goedel1931", "book", 6, 8, None)]
    assert grammar_for("thesis/ch1.tex") == "latex" and grammar_for("refs.bib") == "bibtex"


def test_the_sections_of_ini_files_are_read_by_their_lines():
    """A sysadmin's `get myapp.service#Service` said the unit had no headings, and a hit
    named no section: an INI file's `[section]` (a systemd unit's, git's `[remote
    "origin"]`, TOML's tables and arrays of tables) runs to the next; a line an array
    starts is none."""
    unit = (
        "# app\n[Unit]\nDescription=My app\n\n[Service]\nMemoryMax=1G\ndeps = [\n  [1, 2],\n]\n"
        '[remote "origin"]  ; a comment\nurl = x\n[[servers]]\nname = a\n'
    )
    assert _defs(unit, "ini") == [
        ("Unit", "section", 2, 3, None),
        ("Service", "section", 5, 9, None),
        ('remote "origin"', "section", 10, 11, None),
        ("servers", "section", 12, 13, None),
    ]
    assert {grammar_for(p) for p in ("myapp.service", "setup.cfg", "pyproject.toml", "smb.conf", "php.ini")} == {"ini"}


def test_kconfig_options_and_assembler_entry_points_are_read_by_their_lines():
    """No tree-sitter grammar reads Kconfig or assembler; each declares a definition by a
    line of a fixed form: `config NAME` (its attributes and help text follow, indented),
    the kernel's SYM_*_START(name) to its SYM_*_END(name) (ENTRY to ENDPROC), or a label
    the file exports with .globl."""
    assert _defs(KCONFIG, "kconfig") == [
        ("SLUB_DEBUG", "config", 4, 10, None),
        ("TRANSPARENT_HUGEPAGE", "config", 12, 13, None),
        ("TRANSPARENT_HUGEPAGE_ALWAYS", "config", 17, 18, None),
    ]
    assert _defs(ASSEMBLER, "asm") == [
        ("entry_SYSCALL_64", "label", 3, 7, None),
        ("entry_SYSCALL_64_after_hwframe", "label", 5, 5, None),
        ("__switch_to_asm", "function", 9, 11, None),
        ("legacy_entry", "function", 12, 14, None),
        ("startup_32", "label", 15, 15, None),
        ("gdt_page", "data", 19, 21, None),
    ]
    assert display("SLUB_DEBUG", "config", None) == "config SLUB_DEBUG"


def test_csharp_ruby_php_and_swift_definitions_with_their_classes():
    cs = (
        "namespace Acme.Tools {\n  public interface IShape { double Area(); }\n"
        "  public class Circle : IShape {\n    public Circle(double r) { R = r; }\n"
        "    public double Area() { return 3.14; }\n  }\n  public record Person(string Name);\n"
        "  enum Shade { Light, Dark = 2 }\n}\n"
    )
    assert _defs(cs, "csharp") == [
        ("Acme.Tools", "module", 1, 9, None),
        ("IShape", "interface", 2, 2, None),
        ("Area", "method", 2, 2, "IShape"),
        ("Circle", "class", 3, 6, None),
        ("Circle", "method", 4, 4, "Circle"),
        ("Area", "method", 5, 5, "Circle"),
        ("Person", "class", 7, 7, None),
        ("Shade", "enum", 8, 8, None),
        ("Light", "constant", 8, 8, "Shade"),
        ("Dark", "constant", 8, 8, "Shade"),
    ]
    rb = "module Acme\n  class Circle\n    def area\n      1\n    end\n    def self.unit = new\n  end\nend\ndef helper; end\n"
    assert _defs(rb, "ruby") == [
        ("Acme", "module", 1, 8, None),
        ("Circle", "class", 2, 7, None),
        ("area", "method", 3, 5, "Circle"),
        ("unit", "method", 6, 6, "Circle"),
        ("helper", "function", 9, 9, None),
    ]
    php = "<?php\ntrait Named { function name() {} }\nclass Circle {\n  public function area(): float { return 1.0; }\n}\nfunction helper($x) {}\n"
    assert _defs(php, "php") == [
        ("Named", "trait", 2, 2, None),
        ("name", "method", 2, 2, "Named"),
        ("Circle", "class", 3, 5, None),
        ("area", "method", 4, 4, "Circle"),
        ("helper", "function", 6, 6, None),
    ]
    swift = (
        "protocol Shape { func area() -> Double }\nstruct Point { var x: Int }\n"
        "class Circle: Shape {\n  init(r: Double) {}\n  func area() -> Double { return 1 }\n}\n"
        "extension Circle { func grow() {} }\nfunc helper(x: Int) -> Int { return x }\n"
    )
    assert _defs(swift, "swift") == [
        ("Shape", "interface", 1, 1, None),
        ("area", "method", 1, 1, "Shape"),
        ("Point", "struct", 2, 2, None),
        ("Circle", "class", 3, 6, None),
        ("init", "method", 4, 4, "Circle"),
        ("area", "method", 5, 5, "Circle"),
        ("Circle", "impl", 7, 7, None),
        ("grow", "method", 7, 7, "Circle"),  # an extension's members are the type's methods
        ("helper", "function", 8, 8, None),
    ]


def test_broken_and_odd_sources_give_what_they_can_and_never_raise():
    assert parse("", "c") == []
    assert parse("def broken(:\n    pass\n\ndef fine():\n    return 1\n", "python")[-1].name == "fine"
    text = "int café_count(void) { return 1; }\n// ünïcode\nint after(void) { return 2; }\n"
    assert [(s.name, s.start_line) for s in parse(text, "c")] == [("café_count", 1), ("after", 3)]
    # What the workers run: stored (compressed) content in, definitions out.
    packed = docstore.pack(PY_SOURCE)
    assert parse_batch([(7, "python", packed)]) == [(7, parse(PY_SOURCE, "python"))]


def test_how_a_hit_names_its_definition():
    assert display("foo_probe", "function", None) == "foo_probe()"
    assert display("parse", "method", "Parser") == "Parser.parse()"
    assert display("foo_dev", "struct", None) == "struct foo_dev"
    defs = parse(C_SOURCE, "c")
    assert symstore.label(defs, 18, 19) == "foo_probe()"  # inside a function
    assert symstore.label(defs, 1, 3) == "MAX()"  # a file's top: the first definition it reaches
    assert symstore.label(defs, 9, 9) is None  # between definitions, none begins there
    assert symstore.label(parse(PY_SOURCE, "python"), 16, 16) == "Token.render()"  # the innermost


# --- through a real gnod -------------------------------------------------------------------

FILES = {
    "drivers/foo/foo.c": C_SOURCE,
    "tools/copy/foo.c": C_SOURCE,  # a vendored copy, deeper in the tree
    "lib/shim.c": "#define foo_probe(dev) 0\n",  # a file's own stand-in, nearer the top
    "app/settings.py": PY_SOURCE,
    "web/shapes.ts": TS_SOURCE,
    "cmd/server.go": GO_SOURCE,
    "geo/src/point.rs": RUST_SOURCE,
    "README.md": "# Foo\n\nThe foo_probe function sets up a device. Parser reads settings.\n",
}


def _status(env) -> dict:
    return cli_json("status", "--json", env=env)["symbols"]


def _parsed(env, timeout: float = 30.0) -> dict:
    assert wait_until(lambda: (s := _status(env))["pending"] == 0 and not s["parsing"] and s["parsed"] > 0, timeout)
    return _status(env)


def _symbol(env, name: str, *args: str, expect: int | None = 0) -> dict:
    """`search --symbol NAME`'s result; expect None: found or not (exit 0 or 1)."""
    r = _run_cli("search", "--symbol", name, "--json", *args, env=env)
    assert r.returncode in ((0, 1) if expect is None else (expect,)), r.stdout + r.stderr
    return json.loads(r.stdout)


def test_the_definitions_of_a_search_s_documents_are_read_at_once(db, tmp_path):
    """of_documents: each parsed content's definitions by its hash, a content two files
    share once, nothing for a file in no parsed language or one not parsed yet."""
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.text.analyzer import AnalyzerSet

    root = write_tree(str(tmp_path / "src"), {**FILES, "late.c": "int late_fn(void) { return 1; }\n"})
    index_collection(db, AnalyzerSet(), CollectionConfig(name="src", path=root))
    docs = {r[0]: r[1] for r in db.execute("SELECT rel_path, mirror_hash FROM documents")}
    items = [(c, g) for c, g in symstore.backlog(db) if c != _content_id(db, docs["late.c"])]
    grammar = dict(items)
    symstore.put(db, [(i, grammar[i], symbols) for i, symbols in parse_batch(symstore.sources(db, items))])
    asked = [(p, docs[p]) for p in ("drivers/foo/foo.c", "tools/copy/foo.c", "README.md", "late.c", "app/settings.py")]
    found = symstore.of_documents(db, asked)
    assert docs["drivers/foo/foo.c"] == docs["tools/copy/foo.c"]
    assert set(found) == {docs["drivers/foo/foo.c"], docs["app/settings.py"]}
    assert "foo_probe()" in {display(s.name, s.kind, s.container) for s in found[docs["drivers/foo/foo.c"]]}
    starts = [s.start_line for s in found[docs["app/settings.py"]]]
    assert starts == sorted(starts)
    assert symstore.of_documents(db, [("README.md", docs["README.md"])]) == {}
    assert symstore.of_documents(db, []) == {}


def test_a_search_for_one_identifier_puts_the_files_defining_it_first(db, tmp_path):
    """A caller that names the function more often than its definition does still comes
    after it, once definitions are parsed; a word of prose, a phrase or a name in another
    case is searched as before."""
    from conftest import lexical_index, lexical_paths
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.protocol import SearchParams
    from gnod.search import filters
    from gnod.server.searching import answer
    from gnod.text.analyzer import AnalyzerSet

    calls = "".join(f"\tdwc3_gadget_giveback(dep, req, {i});\n" for i in range(12))
    root = write_tree(
        str(tmp_path / "src"),
        {
            "gadget.c": "/* dwc3_gadget_giveback - give a request back */\n#include <core.h>\n\n"
            "void dwc3_gadget_giveback(struct dwc3_ep *dep, int req, int status)\n{\n\tlist_del(req);\n}\n",
            "ep0.c": f"static void ep0_done(struct dwc3_ep *dep)\n{{\n{calls}}}\n",
            "notes.md": "# Giveback\n\nThe dwc3 gadget gives requests back.\n",
        },
    )
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="src", path=root))
    assert lexical_paths(db, an, "dwc3_gadget_giveback") == ["ep0.c", "gadget.c"]  # not parsed yet: bm25 alone
    _parse_all(db)
    assert lexical_paths(db, an, "dwc3_gadget_giveback") == ["gadget.c", "ep0.c"]
    # As a picker sends the name typed whole: the name so far, defined.
    assert lexical_paths(db, an, "dwc3_gadget_giveback*") == ["gadget.c", "ep0.c"]
    assert lexical_paths(db, an, "DWC3_GADGET_GIVEBACK") == ["ep0.c", "gadget.c"]  # another name in C
    assert lexical_paths(db, an, '"dwc3 gadget giveback"')[0] == "ep0.c"
    # The defining file's passage is its definition; a caller's is where it calls.
    with lexical_index(db, an) as index:
        params = SearchParams(query="dwc3_gadget_giveback", per_doc=2)
        hits = answer(index, db, an, params, docstore.language_counts(db), filters.resolve(filters.Filter())).hits
    assert [(h.path, h.snippet.line, h.snippet.symbol) for h in hits] == [
        ("gadget.c", 4, "dwc3_gadget_giveback()"),  # the comment's line 1 matches as well
        ("ep0.c", 3, "ep0_done()"),
    ]
    start, end = hits[0].snippet.matches[0]
    assert hits[0].snippet.text[start:end] == "dwc3_gadget_giveback"
    assert [s.line for s in hits[0].snippets] == [4, 1]
    with lexical_index(db, an) as index:  # one passage a hit: the definition, the others not looked for
        params = SearchParams(query="dwc3_gadget_giveback")
        hits = answer(index, db, an, params, docstore.language_counts(db), filters.resolve(filters.Filter())).hits
    assert [(h.path, h.snippet.line, h.snippet.symbol, h.snippets) for h in hits] == [
        ("gadget.c", 4, "dwc3_gadget_giveback()", []),
        ("ep0.c", 3, "ep0_done()", []),
    ]


def test_an_enum_constant_is_found_where_its_enum_is(db, tmp_path):
    """`--symbol TASK_COMM_LEN` gave the copies that tools/ and samples/ `#define` for
    themselves, and a search for `IRQ_HANDLED` the drivers returning it before the header
    defining it. An enumerator a C source file defines for itself comes after a header's.
    An enumerator does not hide a `#define` of its name: tools/'s enum GFP_KERNEL hid
    include/linux/gfp_types.h's."""
    from conftest import lexical_index
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.protocol import SearchParams
    from gnod.search import filters
    from gnod.server.searching import answer
    from gnod.text.analyzer import AnalyzerSet

    returns = "".join(
        f"static irqreturn_t foo{i}_irq(int irq, void *dev)\n{{\n\treturn IRQ_HANDLED;\n}}\n" for i in range(3)
    )
    root = write_tree(
        str(tmp_path / "src"),
        {
            "include/linux/sched.h": "#ifndef _SCHED_H\n#define _SCHED_H\n/* Task command name length: */\n"
            "enum {\n\tTASK_COMM_LEN = 16,\n};\nstruct task_struct;\n#endif\n",
            "tools/bpf/runqslower/runqslower.h": "#define TASK_COMM_LEN 16\n",
            "include/linux/irqreturn.h": "/**\n * enum irqreturn - irqreturn type values\n"
            " * @IRQ_NONE:\t\tinterrupt was not from this device\n"
            " * @IRQ_HANDLED:\t\tinterrupt was handled by this device\n */\n"
            "enum irqreturn {\n\tIRQ_NONE\t\t= (0 << 0),\n\tIRQ_HANDLED\t\t= (1 << 0),\n};\n"
            "typedef enum irqreturn irqreturn_t;\n",
            "drivers/foo/foo.c": returns,
            "drivers/bar/bar.c": "enum { IRQ_HANDLED = 1 };  /* a stand-in */\nint bar(void)\n{\n"
            "\treturn IRQ_HANDLED;\n}\n",
            "include/linux/gfp_types.h": "#define GFP_KERNEL\t(__GFP_RECLAIM | __GFP_IO | __GFP_FS)\n",
            "tools/include/linux/types.h": "enum { GFP_KERNEL = 0 };\n",
        },
    )
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="src", path=root))
    _parse_all(db)

    def found(query: str, symbol: bool) -> list[tuple[str, int, str | None]]:
        with lexical_index(db, an) as index:
            params = SearchParams(query=query, symbol=symbol)
            r = answer(index, db, an, params, docstore.language_counts(db), filters.resolve(filters.Filter()))
        return [(h.path, h.snippet.line, h.snippet.symbol) for h in r.hits]

    assert found("TASK_COMM_LEN", symbol=True) == [
        ("include/linux/sched.h", 5, "constant TASK_COMM_LEN"),
        ("tools/bpf/runqslower/runqslower.h", 1, "#define TASK_COMM_LEN"),  # the copy deeper
    ]
    assert found("IRQ_HANDLED", symbol=True) == [
        ("include/linux/irqreturn.h", 8, "constant IRQ_HANDLED"),
        ("drivers/bar/bar.c", 1, "constant IRQ_HANDLED"),
    ]
    assert [h[:2] for h in found("IRQ_HANDLED", symbol=False)][:2] == [
        ("include/linux/irqreturn.h", 8),
        ("drivers/bar/bar.c", 1),
    ]
    assert found("GFP_KERNEL", symbol=True) == [
        ("include/linux/gfp_types.h", 1, "#define GFP_KERNEL"),
        ("tools/include/linux/types.h", 1, "constant GFP_KERNEL"),
    ]
    assert found("GFP_KERNEL", symbol=False)[0][:2] == ("include/linux/gfp_types.h", 1)


def test_a_name_after_its_declaring_keyword_is_found_as_that_kind(db, tmp_path):
    """`struct task_struct` put files naming the struct in every line before the header
    defining it, and `struct page` (a word of prose alone) was no name at all: after a
    declaring keyword the word is a name, and its definitions of that kind come first,
    in a search and in `search --symbol` (`fn page`: the function, not the struct). After
    a keyword that is a word of prose too (`function`), a word of prose is searched as
    before. A pasted compiler or linker message names its subject in quotes: the one
    name (or declaration) it quotes is the name whose definitions come first."""
    from conftest import lexical_index
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.protocol import SearchParams
    from gnod.search import filters
    from gnod.server.searching import answer
    from gnod.text.analyzer import AnalyzerSet

    uses = "".join(f"\tstruct page *p{i} = alloc_pages(gfp, {i});\n" for i in range(12))
    options = "".join(f"#ifdef CONFIG_PAGE_POISONING\nint poison{i};\n#endif\n" for i in range(8))
    root = write_tree(
        str(tmp_path / "src"),
        {
            "include/mm_types.h": "/* Each physical page has a struct page. */\n"
            + "/* filler line describing memory */\n" * 30
            + "struct page {\n\tunsigned long flags;\n};\n",
            "mm/alloc.c": f"int fill(gfp_t gfp)\n{{\n{uses}\treturn 0;\n}}\n"
            "static int page(int pages)\n{\n\treturn pages;\n}\n",
            "mm/poison.c": options,
            "include/gfp.h": "static inline struct page *alloc_pages(gfp_t gfp, unsigned int order)\n{\n"
            "\treturn 0;\n}\n",
            "mm/Kconfig": 'config PAGE_POISONING\n\tbool "Poison pages after freeing"\n',
            "Documentation/mm.rst": "Pages\n=====\n\nA page, two pages: the function of a page table is paging.\n",
            "Documentation/free.rst": "Freed pages are poisoned.\n",
        },
    )
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="src", path=root))
    _parse_all(db)

    def found(query: str, symbol: bool = False) -> list[tuple[str, str | None]]:
        with lexical_index(db, an) as index:
            params = SearchParams(query=query, symbol=symbol)
            r = answer(index, db, an, params, docstore.language_counts(db), filters.resolve(filters.Filter()))
        return [(h.path, h.snippet.symbol if h.snippet else None) for h in r.hits]

    assert found("struct page")[0] == ("include/mm_types.h", "struct page")
    assert found("fn page")[0] == ("mm/alloc.c", "page()")
    assert found("config PAGE_POISONING")[0] == ("mm/Kconfig", "config PAGE_POISONING")
    assert found("struct page", symbol=True)[0] == ("include/mm_types.h", "struct page")
    assert found("Struct page", symbol=True)[0] == ("include/mm_types.h", "struct page")  # it said: one name
    assert found("fn page", symbol=True)[0] == ("mm/alloc.c", "page()")
    assert found("def page", symbol=True)[0] == ("mm/alloc.c", "page()")
    # `function` is a word of prose too: `page` after it stays one (it comes as `pages`).
    assert found("function page")[0][0] == "Documentation/mm.rst"
    implicit = "mm/alloc.c:3:30: error: implicit declaration of function 'alloc_pages' [-Werror]"
    assert found(implicit)[0] == ("include/gfp.h", "alloc_pages()")
    assert found("undefined reference to `alloc_pages'")[0] == ("include/gfp.h", "alloc_pages()")
    assert found("error: ‘struct page’ has no member named ‘mappin’")[0] == ("include/mm_types.h", "struct page")
    # The member is a name too, which alloc_pages' file holds: the declaration is the subject.
    assert found("error: 'struct page' has no member named 'alloc_pages'")[0] == ("include/mm_types.h", "struct page")
    # A question naming one, unquoted (`how does mutex_lock work?` listed test files using it).
    assert found("how does alloc_pages work?")[0] == ("include/gfp.h", "alloc_pages()")
    from gnod.search.grammar import parse
    from gnod.search.lexical import _asked_about

    def stop(word: str) -> bool:
        return word in {"how", "does", "what", "the"}

    assert _asked_about(parse("what calls alloc_pages?"), stop) == "alloc_pages"
    assert _asked_about(parse("kmalloc GFP_KERNEL"), stop) is None  # words of code: their uses are asked for
    assert _asked_about(parse("how does alloc_pages call free_pages"), stop) is None  # two names


def test_a_pasted_stack_frame_or_file_location_finds_its_function_or_file(db, tmp_path):
    """No text holds a frame's offset (`+0x2e3/0x8b0`) or a file's line (`:6442`): searched
    whole, a pasted frame or location matched nothing of what it names. The function a
    frame gives is the query's name of code, a word of prose or not (`schedule`), its
    definition first; the file a query names (its longest end that is an indexed path)
    comes first, the one nearest the top for a bare file name, after the definitions
    of a name the query also gives; where the query names a line, that line of the file
    is its first passage (a vimgrep or an editor jumps there)."""
    from conftest import lexical_index
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.protocol import SearchParams
    from gnod.search import filters
    from gnod.server.searching import answer
    from gnod.text.analyzer import AnalyzerSet

    cited = "See kernel/sched/core.c and kernel/sched/core.c: __schedule() calls schedule_debug().\n"
    root = write_tree(
        str(tmp_path / "src"),
        {
            "kernel/sched/core.c": "/* the core of the scheduler */\n"
            + "/* filler describing tasks */\n" * 40
            + "static void __schedule(unsigned int mode)\n{\n\tschedule_debug(prev);\n}\n"
            + "void schedule(void)\n{\n\t__schedule(0);\n}\n",
            "kernel/sched/wait.c": "int wait(void)\n{\n" + "\tschedule();\n" * 8 + "\treturn 0;\n}\n",
            "lib/core.c": "int lib_core(void)\n{\n\treturn 0;\n}\n",
            "lib/gaps.c": "int gaps;\n\n\n\nint gap_here(void)\n{\n\treturn gaps;\n}\n",
            "fs/ext4/super.c": "int ext4_fill_super(struct super_block *sb)\n{\n\treturn 0;\n}\n",
            "fs/ext4/inode.c": "/* ext4 [ext4] ext4 */\n" + "\text4_fill_super(sb);\n" * 6,
            "Documentation/sched.rst": "Scheduling\n==========\n\n"
            + cited * 6
            + "Tasks are scheduled; the scheduler schedules them on a schedule.\n",
            "Documentation/cron.rst": "Cron\n====\n\nA job runs on a schedule, as scheduled.\n",
        },
    )
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="src", path=root))
    _parse_all(db)

    def found(query: str) -> list[tuple[str, str | None]]:
        with lexical_index(db, an) as index:
            params = SearchParams(query=query)
            r = answer(index, db, an, params, docstore.language_counts(db), filters.resolve(filters.Filter()))
        return [(h.path, h.snippet.symbol if h.snippet else None) for h in r.hits]

    assert found("__schedule+0x2e3/0x8b0")[0] == ("kernel/sched/core.c", "__schedule()")
    assert found("schedule+0x1a/0x30")[0] == ("kernel/sched/core.c", "schedule()")
    assert found("RIP: 0010:__schedule.isra.0+0x10/0x120")[0] == ("kernel/sched/core.c", "__schedule()")
    assert found("ext4_fill_super+0x1a2b/0x1d80 [ext4]")[0] == ("fs/ext4/super.c", "ext4_fill_super()")
    assert found("kernel/sched/core.c")[0][0] == "kernel/sched/core.c"
    assert found("kernel/sched/core.c:42")[0][0] == "kernel/sched/core.c"
    assert found("/usr/src/linux/kernel/sched/core.c:42:5: warning: unused variable")[0][0] == "kernel/sched/core.c"
    assert [p for p, _ in found("core.c:3")[:2]] == ["lib/core.c", "kernel/sched/core.c"]
    # A pasted oops: the frame its instruction pointer names, not the call trace below it.
    oops = (
        "[  12.345678] general protection fault: 0000 [#1] PREEMPT SMP\n"
        "[  12.345680] RIP: 0010:__schedule+0x2e3/0x8b0\n[  12.345681] Call Trace:\n"
        "[  12.345682]  wait+0x1a/0x30\n[  12.345683]  ext4_fill_super+0x1a2b/0x1d80 [ext4]\n"
    )
    assert found(oops)[0] == ("kernel/sched/core.c", "__schedule()")
    assert found(oops.replace("RIP: 0010:", "pc : "))[0] == ("kernel/sched/core.c", "__schedule()")
    # Inside the brackets or quotes code writes a file's name in.
    assert found("#include <sched/core.c>")[0][0] == "kernel/sched/core.c"
    assert found('"sched/core.c"')[0][0] == "kernel/sched/core.c"
    # A name the query gives is defined elsewhere: its definition, then the file named.
    warning = "WARNING: CPU: 1 PID: 7 at kernel/sched/wait.c:3 __schedule+0x2e3/0x8b0"
    assert [p for p, _ in found(warning)[:2]] == ["kernel/sched/core.c", "kernel/sched/wait.c"]

    def first_passage(query: str) -> tuple[str, int, str, str | None]:
        with lexical_index(db, an) as index:
            params = SearchParams(query=query)
            hit = answer(index, db, an, params, docstore.language_counts(db), filters.resolve(filters.Filter())).hits[0]
        assert hit.snippet is not None
        return hit.path, hit.snippet.line, hit.snippet.text, hit.snippet.symbol

    assert first_passage("kernel/sched/core.c:44") == (
        "kernel/sched/core.c",
        44,
        "\tschedule_debug(prev);",
        "__schedule()",
    )
    assert first_passage("mm/kernel/sched/core.c:47:9: error: too few arguments")[:2] == ("kernel/sched/core.c", 47)
    # The file's lines, not the stored text's (which keeps one blank line of a run).
    assert first_passage("lib/gaps.c:7") == ("lib/gaps.c", 7, "\treturn gaps;", "gap_here()")
    assert first_passage("lib/gaps.c:3")[1:3] == (3, "")
    # A line past the file's end names no passage: the best one shows.
    assert first_passage("kernel/sched/core.c:999")[:2] != ("kernel/sched/core.c", 999)


def test_a_quoted_path_is_searched_as_typed_where_its_first_folders_are_not_indexed(db, tmp_path):
    """A technical writer audits who links to a page by its full path: with the
    collection's top at Documentation/, `"Documentation/process/submitting-patches.rst"`
    was searched as `process/submitting-patches.rst` (the longest end of it that is an
    indexed path), which the page itself and every relative link hold, without a note.
    Unquoted, the path is still cut to that end and its file comes first."""
    from conftest import lexical_index
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.protocol import SearchParams
    from gnod.search import filters
    from gnod.server.searching import answer
    from gnod.text.analyzer import AnalyzerSet

    root = write_tree(
        str(tmp_path / "Documentation"),
        {
            "process/submitting-patches.rst": "Submitting patches\n==================\n\nSign your work.\n",
            "full.rst": "Full\n====\n\nRead Documentation/process/submitting-patches.rst first.\n",
            "relative.rst": "Relative\n========\n\nRead process/submitting-patches.rst first.\n",
        },
    )
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="docs", path=root))

    def found(query: str) -> tuple[list[str], list[str]]:
        with lexical_index(db, an) as index:
            params = SearchParams(query=query)
            r = answer(index, db, an, params, docstore.language_counts(db), filters.resolve(filters.Filter()))
        return [h.path for h in r.hits], r.terms

    quoted = '"Documentation/process/submitting-patches.rst"'
    assert found(quoted) == (["full.rst"], [quoted])
    paths, terms = found("Documentation/process/submitting-patches.rst")
    assert paths[0] == "process/submitting-patches.rst" and terms == ["process/submitting-patches.rst"]


def test_a_pasted_traceback_frame_finds_its_file_at_its_line(db, tmp_path):
    """Python's frame gives its line as `, line N` after the quoted path, and Perl's
    `die` as `at FILE line N.`: the file first, its passage that line (the module's
    docstring came first, at line 1). A traceback's several frames name several files:
    the last frame's, where the error was raised, is the one placed."""
    from conftest import lexical_index
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.protocol import SearchParams
    from gnod.search import filters
    from gnod.server.searching import answer
    from gnod.text.analyzer import AnalyzerSet

    body = "".join(f"        step_{i} = {i}\n" for i in range(30))
    root = write_tree(
        str(tmp_path / "lib"),
        {
            "http/client.py": '"""HTTP client: request, response."""\n\n\nclass HTTPConnection:\n'
            f"    def request(self, method, url):\n{body}        raise ValueError('closed')\n",
            "urllib/request.py": '"""Open URLs: request, response."""\n\n\ndef urlopen(url):\n'
            "    return HTTPConnection().request('GET', url)\n",
            "tools/fetch.pl": "#!/usr/bin/perl\nuse strict;\nmy $url = shift;\ndie 'no url' unless $url;\n",
        },
    )
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="lib", path=root))
    _parse_all(db)

    def first(query: str) -> tuple[str, int, str | None]:
        with lexical_index(db, an) as index:
            r = answer(
                index,
                db,
                an,
                SearchParams(query=query),
                docstore.language_counts(db),
                filters.resolve(filters.Filter()),
            )
        hit = r.hits[0]
        assert hit.snippet is not None
        return hit.path, hit.snippet.line, hit.snippet.symbol

    frame = 'File "/usr/lib/python3.11/http/client.py", line 35, in request'
    assert first(frame) == ("http/client.py", 35, "HTTPConnection.request()")
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/urllib/request.py", line 5, in urlopen\n'
        "    return HTTPConnection().request('GET', url)\n"
        f"  {frame}\n"
        "    raise ValueError('closed')\n"
        "ValueError: closed\n"
    )
    assert first(traceback) == ("http/client.py", 35, "HTTPConnection.request()")
    assert first("no url at tools/fetch.pl line 4.")[:2] == ("tools/fetch.pl", 4)


def test_a_test_s_stand_in_comes_after_the_definition_it_stands_for(db, tmp_path):
    """Tests define stand-ins by the names they test (`def urlopen(...)` in
    Lib/test/test_urllib.py, as deep as urllib/request.py, whose path sorts after):
    `--symbol urlopen` gave them first, and so did a search for the name. A file of
    tests is one in a folder of tests or named as one, in any language."""
    from conftest import lexical_index
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.protocol import SearchParams
    from gnod.search import filters
    from gnod.search.defining import in_tests
    from gnod.server.searching import answer
    from gnod.text.analyzer import AnalyzerSet

    stub = "def urlopen(url, data=None):\n    return FakeResponse(url)\n"
    root = write_tree(
        str(tmp_path / "lib"),
        {
            "test/test_urllib.py": stub,
            "test/test_urllib2.py": "import urllib\n\n" + stub,
            "urllib/request.py": '"""Open URLs."""\n\n\ndef urlopen(url, data=None, timeout=None):\n    return opener.open(url)\n',
        },
    )
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="lib", path=root))
    _parse_all(db)

    def paths(**params) -> list[str]:
        with lexical_index(db, an) as index:
            r = answer(
                index, db, an, SearchParams(**params), docstore.language_counts(db), filters.resolve(filters.Filter())
            )
        return [h.path for h in r.hits]

    expected = ["urllib/request.py", "test/test_urllib.py", "test/test_urllib2.py"]
    assert paths(query="urlopen", symbol=True) == expected
    assert paths(query="urlopen") == expected
    tests = ["Lib/test/x.py", "tools/testing/selftests/x.c", "fetch_test.go", "url.spec.ts", "UrlTest.java", "tests.py"]
    assert all(map(in_tests, tests))
    assert not any(map(in_tests, ["urllib/request.py", "Latest.py", "contest.c", "attest.py", "src/manifest.rs"]))


def test_a_file_defining_a_name_more_times_than_are_shown_says_so(db, tmp_path):
    """A test file's thirty classes each defining `__init_subclass__` showed ten, and
    nothing said the others were there."""
    from conftest import lexical_index
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.protocol import SearchParams
    from gnod.search import filters
    from gnod.search.constants import SYMBOL_PASSAGES
    from gnod.server.searching import answer
    from gnod.text.analyzer import AnalyzerSet

    classes = "".join(f"class C{i}:\n    def __init_subclass__(cls):\n        pass\n\n\n" for i in range(12))
    root = write_tree(str(tmp_path / "lib"), {"test_typing.py": classes, "abc.py": classes[:60]})
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="lib", path=root))
    _parse_all(db)
    with lexical_index(db, an) as index:
        params = SearchParams(query="__init_subclass__", symbol=True)
        r = answer(index, db, an, params, docstore.language_counts(db), filters.resolve(filters.Filter()))
    assert [(h.path, len(h.snippets)) for h in r.hits] == [("abc.py", 0), ("test_typing.py", SYMBOL_PASSAGES)]
    assert r.notes == [f"lib/test_typing.py has 12 definitions of it: the first {SYMBOL_PASSAGES} are shown"]


def test_a_name_a_macro_makes_from_its_argument_finds_the_macro_s_definition(db, tmp_path):
    """A stack trace or a profiler names a system call as the kernel links it
    (`__x64_sys_openat`, `__se_sys_openat+0x54/0xa0`), which no source file holds: the
    macro's definition of what its first words leave (`SYSCALL_DEFINE4(openat, …)`) is
    found, said so; a function of that name no macro makes is not, nor is a name whose
    words leave nothing a macro made."""
    from conftest import lexical_index
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.protocol import SearchParams
    from gnod.search import filters
    from gnod.server.searching import answer
    from gnod.text.analyzer import AnalyzerSet

    root = write_tree(
        str(tmp_path / "src"),
        {
            "fs/open.c": "static long do_sys_openat2(int dfd)\n{\n\treturn dfd;\n}\n\n"
            "SYSCALL_DEFINE4(openat, int, dfd, const char __user *, filename, int, flags,\n"
            "\t\tumode_t, mode)\n{\n\treturn do_sys_open(dfd, filename, flags, mode);\n}\n",
            "tools/openat.c": "int openat(int dfd, const char *path)\n{\n\treturn dfd;\n}\n",
            "kernel/fork.c": "SYSCALL_DEFINE0(fork)\n{\n\treturn kernel_clone(NULL);\n}\n",
            "kernel/bpf/cgroup.c": "BPF_CALL_0(bpf_get_retval)\n{\n\treturn ctx->retval;\n}\n",
            "arch/nios2/kernel/entry.S": "ENTRY(sys_fork)\n\tcall nios2_fork\n\tret\n",
        },
    )
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="src", path=root))
    _parse_all(db)

    def symbol(query: str):
        with lexical_index(db, an) as index:
            params = SearchParams(query=query, symbol=True)
            return answer(index, db, an, params, docstore.language_counts(db), filters.resolve(filters.Filter()))

    for pasted, name in (
        ("__x64_sys_openat", "__x64_sys_openat"),
        ("__se_sys_openat+0x54/0xa0", "__se_sys_openat"),
        ("__se_sys_openat.isra.0+0x54/0xa0 [vfs]", "__se_sys_openat"),
        ("sys_openat", "sys_openat"),
    ):
        r = symbol(pasted)
        assert [(h.path, h.snippet.line) for h in r.hits] == [("fs/open.c", 6)], pasted
        assert r.notes == [
            f"nothing defines {name!r}: showing 'openat', which SYSCALL_DEFINE4 defines under names it makes"
        ]
    # An assembler's ENTRY(sys_fork) is that name's own definition, which no macro prefixes.
    assert [h.path for h in symbol("__do_sys_fork").hits] == ["kernel/fork.c"]
    assert [h.path for h in symbol("____bpf_get_retval").hits] == ["kernel/bpf/cgroup.c"]
    assert [h.path for h in symbol("openat").hits] == ["fs/open.c", "tools/openat.c"]  # the name itself: both
    assert symbol("do_sys_openat2_x").hits == []  # no macro made what its words leave
    assert symbol("sys_openat2").hits == []  # do_sys_openat2 is no macro's


def test_a_name_with_words_left_out_is_still_a_name_of_code(db, tmp_path):
    """`kmalloc -staging` asks where kmalloc is defined as `kmalloc` does, the staging
    files left out: its definition first, its passage that definition; so does the name
    marked as Markdown marks code (`` `kmalloc` ``)."""
    from conftest import lexical_index
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.protocol import SearchParams
    from gnod.search import filters
    from gnod.server.searching import answer
    from gnod.text.analyzer import AnalyzerSet

    filler = "".join(
        f"/* flag {i}: what a caller may ask of the allocator */\n#define GFP_F{i} {i}\n" for i in range(80)
    )
    root = write_tree(
        str(tmp_path / "src"),
        {
            "include/slab.h": filler + "static inline void *kmalloc(size_t size, gfp_t flags)\n{\n\treturn 0;\n}\n",
            **{f"drivers/d{i}.c": "int probe(void)\n{\n" + "\tp = kmalloc(8, 0);\n" * 4 + "}\n" for i in range(3)},
            "drivers/staging/s.c": "int s(void)\n{\n" + "\tp = kmalloc(8, 0);\n" * 6 + "}\n",
        },
    )
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="src", path=root))
    _parse_all(db)
    for query in ("kmalloc", "kmalloc -staging", "`kmalloc`"):
        with lexical_index(db, an) as index:
            params = SearchParams(query=query)
            hits = answer(index, db, an, params, docstore.language_counts(db), filters.resolve(filters.Filter())).hits
        first = (hits[0].path, hits[0].snippet.symbol, hits[0].snippet.line)
        assert first == ("include/slab.h", "kmalloc()", 161), query
        assert ("drivers/staging/s.c" in [h.path for h in hits]) == ("-staging" not in query), query


def test_an_enumerator_named_as_a_plain_word_is_no_definition_of_it(db, tmp_path):
    """`usb` as one clock of a clock driver's enum (the kernel's clk-imx23.c) is not what
    a search for usb asks for: the files about USB keep their order; a name of code
    (`usb_phy`) is still found defined there."""
    from conftest import lexical_paths
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.text.analyzer import AnalyzerSet

    root = write_tree(
        str(tmp_path / "src"),
        {
            "drivers/clk/clk-imx23.c": "enum imx23_clk {\n\tref_xtal, pll, usb, usb_phy, clk_max\n};\n"
            + "/* the clocks of the SoC, gated one by one */\n" * 12,
            "drivers/usb/core/usb.c": "/* usb core: the USB bus, its hubs and usb devices */\nint usb_init(void);\n",
            "Documentation/usb/intro.rst": "USB\n===\n\nHow usb devices are probed on the usb bus.\n",
        },
    )
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="src", path=root))
    _parse_all(db)
    assert lexical_paths(db, an, "usb")[-1] == "drivers/clk/clk-imx23.c"
    assert lexical_paths(db, an, "usb_phy")[0] == "drivers/clk/clk-imx23.c"


def test_a_long_header_defining_the_name_comes_before_short_files_calling_it(db, tmp_path):
    """bm25 gives a big header holding the name once a fraction of what a short caller
    gets, more than definition_match makes up: the files defining it come first, ranked
    as the best match, the one nearest the top of the tree before a short copy deeper in
    it, whatever the limit; the callers keep their order."""
    from conftest import lexical_index, lexical_paths
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.search import lexical
    from gnod.text.analyzer import AnalyzerSet

    filler = "".join(
        f"/* field {i}: the device's state number {i}, kept for its driver */\nint dev_field_{i};\n" for i in range(300)
    )
    files = {
        "include/device.h": f"{filler}static inline void *devm_zalloc_buf(struct device *dev, int size)\n{{\n\treturn 0;\n}}\n{filler}",
        **{
            f"drivers/d{i}.c": f"static int probe_{i}(struct device *dev)\n{{\n"
            + "\tbuf = devm_zalloc_buf(dev, 8);\n" * (i + 1)
            + "\treturn 0;\n}\n"
            for i in range(4)
        },
        # A short copy deeper in the tree: its bm25 among the best, its place after the header's.
        "tools/lib/device.h": "/* devm_zalloc_buf(): devm_zalloc_buf for tests, as devm_zalloc_buf */\n"
        "static inline void *devm_zalloc_buf(struct device *dev, int size) { return 0; }\n",
    }
    root = write_tree(str(tmp_path / "src"), files)
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="src", path=root))
    callers = ["drivers/d3.c", "drivers/d2.c", "drivers/d1.c", "drivers/d0.c"]
    before = lexical_paths(db, an, "devm_zalloc_buf")  # not parsed yet: bm25 alone
    assert before[-1] == "include/device.h" and before.index("tools/lib/device.h") < 4
    _parse_all(db)
    defined = ["include/device.h", "tools/lib/device.h"]
    assert lexical_paths(db, an, "devm_zalloc_buf") == [*defined, *callers]
    assert lexical_paths(db, an, "devm_zalloc_buf", limit=1) == ["include/device.h"]
    assert lexical_paths(db, an, "devm_zalloc_buf*") == [*defined, *callers]
    assert lexical_paths(db, an, '"devm zalloc buf"')[-1] == "include/device.h"  # a phrase names no definition
    with lexical_index(db, an) as index:
        rows = lexical.search(index, db, an, "devm_zalloc_buf", docstore.language_counts(db), 10).rows
    assert [r.score for r in rows[:2]] == [1.0, 1.0] and rows[2].score < 1.0  # ranked as the best match
    assert rows[0].bm25 == max(r.bm25 for r in rows)  # with its own bm25, the lowest (bm25 is negative)


def test_one_word_is_a_name_of_code_where_the_index_holds_it_uninflected(db, tmp_path):
    """`kmallok` (no other form of it anywhere) is a name: its definition in a long header
    comes first; `lock`, which comes as locks and locked too, is a word of prose, its
    `struct lock` ranked by bm25 alone, but `__lock`, an underscore at its end, is a name
    whatever its word; a device tree's label `dmax:` names a node, not the word; `WIBBLE`
    in capitals may be an object-like macro, whose `#define` comes first."""
    from conftest import lexical_index, lexical_paths
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.protocol import SearchParams
    from gnod.search import filters
    from gnod.server.searching import answer
    from gnod.text.analyzer import AnalyzerSet

    filler = "".join(
        f"/* field {i}: the state number {i}, kept for its driver */\nint field_{i};\n" for i in range(200)
    )
    uses = "kmallok(8, 0); lock(); __lock(); dmax(); x = WIBBLE;\n"
    files = {
        "include/slab.h": f"{filler}static inline void *kmallok(int size, int flags)\n{{\n\treturn 0;\n}}\n{filler}",
        "include/types.h": f"{filler}struct lock {{\n\tint held;\n}};\n{filler}",
        "kernel/locking.c": f"{filler}void __lock(struct lock *l)\n{{\n\tl->held = 1;\n}}\n{filler}",
        "include/regs.h": f"{filler}#define WIBBLE 3\n{filler}",
        "boot/board.dts": f"/dts-v1/;\n/ {{\n{filler.replace('/*', '//').replace('*/', '')}\tdmax: dmax@1000 {{ }};\n}};\n",
        **{f"drivers/d{i}.c": f"static int probe_{i}(void)\n{{\n\t{uses * (i + 1)}\treturn 0;\n}}\n" for i in range(3)},
        "notes.md": "# Locking\n\nThe locks are taken in order; a locked lock is released by its holder.\n",
        "more.md": "# More\n\nEach driver locks its queue and unlocks it; two locks at most.\n",
    }
    root = write_tree(str(tmp_path / "src"), files)
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="src", path=root))
    before = {q: lexical_paths(db, an, q) for q in ("kmallok", "lock", "__lock", "dmax", "WIBBLE")}
    assert before["kmallok"][-1] == "include/slab.h" and before["WIBBLE"][-1] == "include/regs.h"
    _parse_all(db)
    assert lexical_paths(db, an, "kmallok")[0] == "include/slab.h"
    assert lexical_paths(db, an, "kmallok*")[0] == "include/slab.h"  # as a picker sends it
    with lexical_index(db, an) as index:  # as gnod answers, with C's object-like macros
        params = SearchParams(query="WIBBLE")
        hits = answer(index, db, an, params, docstore.language_counts(db), filters.resolve(filters.Filter())).hits
    assert (hits[0].path, hits[0].snippet.line) == ("include/regs.h", 401)
    assert lexical_paths(db, an, "lock") == before["lock"] and before["lock"][0] != "include/types.h"
    assert lexical_paths(db, an, "__lock")[0] == "kernel/locking.c" != before["__lock"][0]
    assert lexical_paths(db, an, "dmax") == before["dmax"] and before["dmax"][0] != "boot/board.dts"
    assert lexical_paths(db, an, '"kmallok"')[0] != "include/slab.h"  # quoted: the word, not a name


def test_an_identifier_being_typed_completes_from_the_names_defined(db, tmp_path):
    """`of_pr*`, as a picker sends it while `of_property_read_u32` is typed, stood for the
    words found most after "of" in any text: `of process`, `of private` in prose came
    first. Once definitions are parsed, it stands for the words that follow in the names
    defined (`of property`), so only the files using those names match; a prefix no name
    defined starts with still stands for the index's words, and so does one where the
    documents searched hold none of the names (a filter leaves out those using them)."""
    from conftest import lexical_index, lexical_paths
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.search import filters, lexical
    from gnod.text.analyzer import AnalyzerSet

    prose = "The state of process tables, of private data and of printers is kept. " * 4
    files = {
        "include/of.h": "static inline int of_property_read_u32(const char *name)\n{\n\treturn 0;\n}\n",
        "drivers/probe.c": 'static int probe(void)\n{\n\treturn of_property_read_u32("reg");\n}\n',
        "app/table.c": "static int run(void)\n{\n\treturn of_process_table[0];\n}\n",
        **{f"notes{i}.md": f"# Notes {i}\n\n{prose}\n" for i in range(3)},
    }
    root = write_tree(str(tmp_path / "src"), files)
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="src", path=root))
    before = lexical_paths(db, an, "of_pr*")  # not parsed yet: the index's words after "of"
    assert before[0].startswith("notes") and {"include/of.h", "drivers/probe.c"} <= set(before)
    _parse_all(db)
    assert sorted(lexical_paths(db, an, "of_pr*")) == ["drivers/probe.c", "include/of.h"]
    assert sorted(lexical_paths(db, an, "OF_PROPERTY_RE*")) == ["drivers/probe.c", "include/of.h"]
    assert sorted(lexical_paths(db, an, "of_proc*")) == ["app/table.c", "notes0.md", "notes1.md", "notes2.md"]
    with lexical_index(db, an) as index:
        where = filters.Filter(path=("app/*",))
        rows = lexical.search(index, db, an, "of_pr*", docstore.language_counts(db), 10, where).rows
    assert [docstore.docs_by_ids(db, [r.doc_id])[r.doc_id].rel_path for r in rows] == ["app/table.c"]
    assert lexical_paths(db, an, "state -of_pr*") == []  # negated, it excludes what it always did


def test_an_identifier_being_typed_prefers_the_names_it_completes_defined(db, tmp_path):
    """`spin_lock_ir*`, as a picker sends it while `spin_lock_irq` is typed: no name is
    defined so yet, and bm25 put first a short file defining `_raw_spin_lock_irq` (the
    words in a run, inside a longer name). The definitions of the names completing its
    last word come first now, shortest first (spin_lock_irq, then spin_lock_irqsave; not
    spin_lock_irq_nested, a word more), each hit's passage its definition; a name in
    capitals may be C's object-like macro (`GFP_KER*` finds `#define GFP_KERNEL`), and
    `CONFIG_PM_SL*` completes Kconfig's options (`config PM_SLEEP`); with no name completing the word (`spin_lo*`: spin_lock_irq is a word more), bm25 alone.
    So do `spin_lock_i*` and `spin_lock_*`, whose words search `spin_lock` alone."""
    from conftest import lexical_index, lexical_paths
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.protocol import SearchParams
    from gnod.search import filters
    from gnod.server.searching import answer
    from gnod.text.analyzer import AnalyzerSet

    filler = "".join(f"/* field {i}: the lock's state number {i} */\nint lock_field_{i};\n" for i in range(200))
    raw = "".join(f"\t_raw_spin_lock_irq(l{i});\n" for i in range(6))
    files = {
        "include/spinlock.h": f"{filler}static inline void spin_lock_irq(spinlock_t *l)\n{{\n\tgrab(l);\n}}\n"
        f"#define spin_lock_irqsave(l, f) grab(l)\n{filler}",
        "include/irqsave.h": f"{filler}static inline void spin_lock_irqsave_fn(spinlock_t *l)\n{{\n\tgrab(l);\n}}\n"
        f"static inline void spin_lock_irq_nested(spinlock_t *l)\n{{\n\tgrab(l);\n}}\n{filler}",
        "kernel/raw.c": f"void _raw_spin_lock_irq(raw_spinlock_t *l)\n{{\n{raw}}}\n",
        "drivers/a.c": "static void a(void)\n{\n\tspin_lock_irq(&lock);\n\tx = GFP_KERNEL;\n}\n",
        "include/gfp.h": f"{filler}#define GFP_KERNEL (__GFP_IO | __GFP_FS)\n{filler}",
        "rust/lib.rs": "pub const GFP_KERNEL: u32 = 1;\n",
        "drivers/b.c": "static void b(void)\n{\n\tp = kmalloc(8, GFP_KERNEL);\n\tq = kmalloc(8, GFP_KERNEL);\n}\n",
        "kernel/Kconfig": f'{filler.replace("/*", "#").replace(" */", "")}config PM_SLEEP\n\tbool "Sleep"\n',
        "kernel/power.c": "#ifdef CONFIG_PM_SLEEP\nint s;\n#endif\n" * 3,
    }
    root = write_tree(str(tmp_path / "src"), files)
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="src", path=root))
    assert lexical_paths(db, an, "spin_lock_ir*")[0] == "kernel/raw.c"  # not parsed yet: bm25 alone
    _parse_all(db)
    ranked = lexical_paths(db, an, "spin_lock_ir*")
    assert ranked[0] == "include/spinlock.h" and ranked.index("include/irqsave.h") > 0
    # Its next word begun, too short a prefix to search (`spin_lock` alone is): the same names.
    assert lexical_paths(db, an, "spin_lock_i*")[0] == "include/spinlock.h"
    assert lexical_paths(db, an, "spin_lock_*")[0] == "include/spinlock.h"
    with lexical_index(db, an) as index:
        where = filters.resolve(filters.Filter())
        counts = docstore.language_counts(db)
        hits = answer(index, db, an, SearchParams(query="spin_lock_ir*"), counts, where).hits
        assert (hits[0].path, hits[0].snippet.symbol) == ("include/spinlock.h", "spin_lock_irq()")
        assert hits[0].snippet.line == 401
        hits = answer(index, db, an, SearchParams(query="GFP_KER*"), counts, where).hits
        assert {h.path for h in hits[:2]} == {"include/gfp.h", "rust/lib.rs"}
        header = next(h for h in hits if h.path == "include/gfp.h")
        assert header.snippet.line == 401 and header.snippet.text.startswith("#define GFP_KERNEL")
        hits = answer(index, db, an, SearchParams(query="CONFIG_PM_SL*"), counts, where).hits  # Kconfig's option
        assert (hits[0].path, hits[0].snippet.text) == ("kernel/Kconfig", 'config PM_SLEEP\n\tbool "Sleep"')
        # Filtered, the definitions are those the filter admits.
        where = filters.resolve(filters.Filter(path=("kernel/*",)))
        hits = answer(index, db, an, SearchParams(query="spin_lock_ir*"), counts, where).hits
        assert [h.path for h in hits] == ["kernel/raw.c"]
    assert lexical_paths(db, an, "spin_lo*")[0] == "kernel/raw.c"


def test_a_prefix_s_closest_names_come_first_however_many_start_so(db, tmp_path, monkeypatch):
    """`--symbol k*` read the first SYMBOL_CONTENTS contents defining a name starting so,
    in the order they were stored, and sorted those: a short name defined in a file
    stored later was not among them. Its shortest names are read first now, a length
    at a time, until the documents asked for are found; with a filter, and for a
    class's methods, the names are read as before."""
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.search import defining, filters
    from gnod.text.analyzer import AnalyzerSet

    monkeypatch.setattr(defining, "SYMBOL_CONTENTS", 6)
    monkeypatch.setattr(defining, "SYMBOL_SHORTEST_FROM", 3)
    an = AnalyzerSet()
    root = str(tmp_path / "src")
    long_names = {f"lib/long{i}.c": f"int kelvin_reading_{i}(void)\n{{\n\treturn {i};\n}}\n" for i in range(10)}
    write_tree(root, long_names)
    index_collection(db, an, CollectionConfig(name="src", path=root))
    write_tree(root, {"zz/short.c": "int kv(void)\n{\n\treturn 0;\n}\n"})  # stored last
    index_collection(db, an, CollectionConfig(name="src", path=root))
    _parse_all(db)

    def first(where: filters.Filter = filters.NO_FILTER, wanted: int = 2) -> list[str]:
        found, _ = defining.definitions(db, "k", where, None, prefix=True, wanted=wanted)
        return [f.symbol.name for f in found][:2]

    assert first() == ["kv", "kelvin_reading_0"]
    assert first(wanted=1) == ["kv"]
    # Filtered, the contents read are those the filter admits, in the order stored.
    assert "kv" not in first(filters.Filter(path=("lib/*",)))
    assert first(filters.Filter(path=("zz/*",))) == ["kv"]


def test_kconfig_options_are_found_however_many_other_names_start_so(db, tmp_path, monkeypatch):
    """`--symbol CONFIG_P*` read the first SYMBOL_CONTENTS contents defining any name
    starting with P and kept Kconfig's options among them: C files stored before the
    Kconfig file crowded its options out (on the kernel tree 17 of 1,632). Kconfig's
    options are read from the contents parsed as Kconfig."""
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.search import defining, filters
    from gnod.text.analyzer import AnalyzerSet

    monkeypatch.setattr(defining, "SYMBOL_CONTENTS", 3)
    an = AnalyzerSet()
    root = str(tmp_path / "src")
    write_tree(root, {f"lib/p{i}.c": f"int p_reading_{i}(void)\n{{\n\treturn {i};\n}}\n" for i in range(6)})
    index_collection(db, an, CollectionConfig(name="src", path=root))
    write_tree(root, {"kernel/Kconfig": 'config PM\n\tbool "Power management"\n'})  # stored last
    index_collection(db, an, CollectionConfig(name="src", path=root))
    _parse_all(db)
    found, _ = defining.definitions(db, "CONFIG_P", filters.NO_FILTER, None, prefix=True)
    assert [(f.rel_path, f.symbol.name) for f in found if f.symbol.kind == "config"] == [("kernel/Kconfig", "PM")]


def test_definitions_parsed_again_give_the_pages_they_freed_back(db, tmp_path):
    """An upgrade parses every content again and rewrites its definitions: the old rows'
    pages were left free in the file and the WAL at its largest (on the kernel tree 2 %
    of the index on disk). Past RECLAIM_FREE_SHARE free, they go back and the WAL is
    emptied; a file with fewer free pages is left as it is."""
    import os

    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.store.db import RECLAIM_FREE_SHARE, reclaim_freed
    from gnod.text.analyzer import AnalyzerSet

    body = "".join(f"int reading_number_{i}(void)\n{{\n\treturn {i};\n}}\n" for i in range(300))
    root = write_tree(str(tmp_path / "src"), {f"lib/f{i}.c": body.replace("reading", f"r{i}") for i in range(20)})
    index_collection(db, AnalyzerSet(), CollectionConfig(name="src", path=root))
    items = symstore.backlog(db)
    grammar = dict(items)
    parsed = [(i, grammar[i], symbols) for i, symbols in parse_batch(symstore.sources(db, items))]
    symstore.put(db, parsed)
    reclaim_freed(db)
    assert not reclaim_freed(db)  # nothing freed since
    symstore.put(db, [(i, g, symbols[:1]) for i, g, symbols in parsed])  # parsed again, rewritten
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    assert db.execute("PRAGMA freelist_count").fetchone()[0] > RECLAIM_FREE_SHARE * pages
    assert reclaim_freed(db)
    assert db.execute("PRAGMA freelist_count").fetchone()[0] == 0
    assert db.execute("PRAGMA page_count").fetchone()[0] < pages
    assert os.path.getsize(str(tmp_path / "index.sqlite") + "-wal") == 0
    assert len(symstore.lookup(db, ["r0_number_0"], False, "1", [], 10)) == 1  # what was stored is kept


LINKER_SCRIPT = "OUTPUT_FORMAT(CONFIG_OUTPUT_FORMAT)\nENTRY(startup_64)\nSECTIONS\n{\n}\n"
ASM_ENTRY = "ENTRY(startup_64)\n\tmovq %rsi, %rdi\nEND(startup_64)\n"


def test_a_linker_script_defines_nothing(db, tmp_path):
    """`ENTRY(startup_64)` in a linker script (vmlinux.lds.S, preprocessed like assembler)
    names the program's entry point, not a function; in assembler it opens one. What an
    older gnod parsed in such a script (or in a file renamed out of a parsed language)
    is no definition either."""
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.text.analyzer import AnalyzerSet

    assert grammar_for("arch/x86/boot/compressed/vmlinux.lds.S") is None
    assert grammar_for("arch/x86/kernel/vmlinux.lds") is None
    assert grammar_for("arch/x86/kernel/head_64.S") == "asm"
    files = {"arch/x86/boot/compressed/vmlinux.lds.S": LINKER_SCRIPT, "arch/x86/kernel/head_64.S": ASM_ENTRY}
    index_collection(db, AnalyzerSet(), CollectionConfig(name="src", path=write_tree(str(tmp_path / "src"), files)))
    _parse_all(db)
    found = symstore.lookup(db, ["startup_64"], False, "1", [], 10)
    assert [(f.rel_path, f.symbol.start_line) for f in found] == [("arch/x86/kernel/head_64.S", 1)]
    script = db.execute("SELECT mirror_hash FROM documents WHERE rel_path LIKE '%.lds.S'").fetchone()[0]
    symstore.put(db, [(_content_id(db, script), "asm", parse(LINKER_SCRIPT, "asm"))])  # as stored before
    assert [f.rel_path for f in symstore.lookup(db, ["startup_64"], False, "1", [], 10)] == [
        "arch/x86/kernel/head_64.S"
    ]


def test_definitions_stored_by_the_previous_layout_are_found_after_it_converts(db, tmp_path):
    """0013 keeps which contents define a name without the positions (a name is looked
    up as its terms, each held): what was parsed before is found the same, a name typed
    so far too, and one of several terms (`a.b`, as an assembler label may be) too."""
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.store.migrations import migrate
    from gnod.text.analyzer import AnalyzerSet

    files = {**FILES, "arch/x86/lib/copy.S": ".globl copy.user\ncopy.user:\n\tret\n"}
    index_collection(db, AnalyzerSet(), CollectionConfig(name="src", path=write_tree(str(tmp_path / "src"), files)))
    _parse_all(db)
    before = {f.rel_path for f in symstore.lookup(db, ["foo_probe"], False, "1", [], 10)}
    db.execute(  # symbol_names as 0009 made it, filled as gnod filled it
        "DROP TABLE symbol_vocab; DROP TRIGGER content_symbols_delete; DROP TABLE symbol_names; "
        "CREATE VIRTUAL TABLE symbol_names USING fts5(names, content='', contentless_delete=1, "
        "tokenize=\"unicode61 remove_diacritics 0 tokenchars '_$'\"); "
        "CREATE TRIGGER content_symbols_delete AFTER DELETE ON content_symbols BEGIN "
        "DELETE FROM symbol_names WHERE rowid = old.content_id; END; "
        "CREATE VIRTUAL TABLE symbol_vocab USING fts5vocab(symbol_names, row); "
        "DELETE FROM migrations WHERE name = '0013_symbol_names_membership'"
    )
    for content_id, blob in db.execute("SELECT content_id, symbols FROM content_symbols").fetchall():
        names = " ".join(dict.fromkeys(s.name for s in symstore._unpack(blob)))
        if names:
            db.execute("INSERT INTO symbol_names(rowid, names) VALUES (?, ?)", (content_id, names))
    assert migrate(db) == ["0013_symbol_names_membership"]
    assert "detail=none" in db.execute("SELECT sql FROM sqlite_master WHERE name = 'symbol_names'").fetchone()[0]
    assert {f.rel_path for f in symstore.lookup(db, ["foo_probe"], False, "1", [], 10)} == before
    assert before == {"drivers/foo/foo.c", "tools/copy/foo.c", "lib/shim.c"}
    assert {f.symbol.name for f in symstore.lookup(db, ["foo_pro"], True, "1", [], 10)} == {"foo_probe"}
    assert [f.rel_path for f in symstore.lookup(db, ["copy.user"], False, "1", [], 10)] == ["arch/x86/lib/copy.S"]
    assert symstore.lookup(db, ["user.copy", "()"], False, "1", [], 10) == []
    assert "foo_probe" in (symstore.names_starting(db, "foo_p", 10) or [])


DW_DRIVER = (
    "// SPDX-License-Identifier: GPL-2.0+\n/* Synopsys DesignWare 8250 driver. */\n"
    + "".join(
        f"static int dw8250_step{i}(struct uart_port *p)\n{{\n\treturn serial_in(p, {i});\n}}\n" for i in range(60)
    )
    + "static const struct of_device_id dw8250_of_match[] = {\n"
    '\t{ .compatible = "snps,dw-apb-uart" },\n\t{ .compatible = "cavium,octeon-3860-uart" },\n\t{ /* Sentinel */ }\n};\n'
)


def test_a_device_tree_compatible_string_puts_the_driver_matching_it_first(db, tmp_path):
    """`"snps,dw-apb-uart"` is what a board's device tree asks a driver for: the C file
    whose match table holds it (`{ .compatible = "…" }`) comes before the short device
    trees and bindings saying it again (it came last, a long file), its passage that
    line; `--symbol` finds it too. A `.name = "…"` or a string elsewhere defines nothing."""
    from conftest import lexical_index, lexical_paths
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.protocol import SearchParams
    from gnod.search import filters
    from gnod.server.searching import answer
    from gnod.text.analyzer import AnalyzerSet

    assert _defs(DW_DRIVER, "c")[-3:] == [
        ("dw8250_of_match", "variable", 243, 247, None),
        ("snps,dw-apb-uart", "compatible", 244, 244, None),
        ("cavium,octeon-3860-uart", "compatible", 245, 245, None),
    ]
    assert _defs('static struct platform_driver d = { .driver = { .name = "dw-apb-uart" } };\n', "c") == [
        ("d", "variable", 1, 1, None)
    ]
    files = {"drivers/tty/serial/8250/8250_dw.c": DW_DRIVER}
    for board in ("socfpga", "rk3288", "sun8i", "keystone"):
        files[f"arch/arm/boot/dts/{board}.dtsi"] = 'uart0: serial@ffc02000 {\n\tcompatible = "snps,dw-apb-uart";\n};\n'
    files["Documentation/devicetree/bindings/serial/snps-dw-apb-uart.yaml"] = (
        "title: Synopsys DesignWare ABP UART\nproperties:\n  compatible:\n    const: snps,dw-apb-uart\n"
    )
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="src", path=write_tree(str(tmp_path / "src"), files)))
    driver = "drivers/tty/serial/8250/8250_dw.c"
    assert lexical_paths(db, an, '"snps,dw-apb-uart"')[-1] == driver  # not parsed yet: bm25 alone
    _parse_all(db)
    for query in ('"snps,dw-apb-uart"', "snps,dw-apb-uart", 'compatible = "snps,dw-apb-uart";'):
        assert lexical_paths(db, an, query)[0] == driver, query
    with lexical_index(db, an) as index:
        params = SearchParams(query='"snps,dw-apb-uart"', limit=3)
        hits = answer(index, db, an, params, docstore.language_counts(db), filters.resolve(filters.Filter())).hits
    assert (hits[0].path, hits[0].snippet.line) == (driver, 244)
    found = symstore.lookup(db, ["snps,dw-apb-uart"], False, "1", [], 10)
    assert [(f.rel_path, f.symbol.kind) for f in found] == [(driver, "compatible")]


def _parse_all(db) -> None:
    """Parse and store the definitions of every content in the backlog, as gnod does."""
    items = symstore.backlog(db)
    grammar = dict(items)
    symstore.put(db, [(i, grammar[i], symbols) for i, symbols in parse_batch(symstore.sources(db, items))])


def _content_id(db, mirror_hash: str) -> int:
    content_id: int = db.execute("SELECT id FROM content WHERE mirror_hash = ?", (mirror_hash,)).fetchone()[0]
    return content_id


def test_definitions_are_found_by_name_and_named_beside_hits(daemon, tmp_path):
    env = daemon.env
    root = write_tree(str(tmp_path / "src"), FILES)
    cli_json("collection", "add", root, "--name", "src", "--json", env=env)
    status = _parsed(env)
    assert status["parsed"] == 6  # the two copies of foo.c share their content; README is not code

    # A function by its name: the file nearer the top first, a .c file's own macro of that
    # name last; the definition's lines shown.
    res = _symbol(env, "foo_probe")
    assert [h["path"] for h in res["hits"]] == ["drivers/foo/foo.c", "tools/copy/foo.c", "lib/shim.c"]
    snip = res["hits"][0]["snippet"]
    assert (snip["line"], snip["symbol"]) == (16, "foo_probe()")
    assert snip["text"].splitlines()[0] == "static int foo_probe(struct device *dev)"
    start, end = snip["matches"][0]
    assert snip["text"][start:end] == "foo_probe"
    got = cli_json("get", f"src/drivers/foo/foo.c:{snip['line']}", "-l", "1", "--json", env=env)
    assert got["content"] == "static int foo_probe(struct device *dev)\n"

    # Any case; as called; a method by its class; a prefix; each language's kinds.
    assert _symbol(env, "FOO_PROBE")["hits"][0]["snippet"]["symbol"] == "foo_probe()"
    for called in ("foo_probe(", "foo_probe()", '"foo_probe"', "`foo_probe`"):  # as called, or quoted
        assert _symbol(env, called)["hits"][0]["snippet"]["symbol"] == "foo_probe()", called
    (hit,) = _symbol(env, "Parser.parse")["hits"]
    assert (hit["path"], hit["snippet"]["symbol"]) == ("app/settings.py", "Parser.parse()")
    # The file's line, though its stored text has one blank line where the file has two.
    assert PY_SOURCE.splitlines()[hit["snippet"]["line"] - 1] == "    def parse(text):"
    assert len(canonicalize(PY_SOURCE).splitlines()) < len(PY_SOURCE.splitlines())
    got = cli_json("get", f"src/app/settings.py:{hit['snippet']['line']}", "-l", "1", "--json", env=env)
    assert got["content"] == "    def parse(text):\n" and got["from_line"] == hit["snippet"]["line"]
    # A method by another class, or a name by a module it is not in: where the name is.
    res = _symbol(env, "Token.parse")
    assert [h["snippet"]["symbol"] for h in res["hits"]] == ["Parser.parse()"]
    assert res["notes"] == ["nothing defines 'Token.parse' as named: showing where 'parse' is defined"]
    # A qualified name as code and tracebacks write it: its module (a file or a folder of
    # the path, the last qualifier), its class, or both; Rust's and C++'s `::` as `.`.
    for qualified, symbol in [
        ("settings.Parser.parse", "Parser.parse()"),
        ("app.settings.load_settings", "load_settings()"),
        ("Settings.load_settings", "load_settings()"),
        ("Parser.Token.render", "Token.render()"),
        ("point::square", "square()"),
        ("src::Point::manhattan", "Point.manhattan()"),
        ("server.NewServer", "NewServer()"),
        ("cmd.NewServer", "NewServer()"),
    ]:
        (hit,) = _symbol(env, qualified)["hits"]
        assert hit["snippet"]["symbol"] == symbol, qualified
    for qualified, symbol in [
        ("settings.parse", "Parser.parse()"),  # a method is its class's
        ("cmd.ListenAndServe", "Server.ListenAndServe()"),
        ("web.manhattan", "Point.manhattan()"),
        ("geo.load_settings", "load_settings()"),
    ]:
        res = _symbol(env, qualified)
        assert [h["snippet"]["symbol"] for h in res["hits"]] == [symbol], qualified
        assert res["notes"][0].startswith(f"nothing defines '{qualified}' as named"), qualified
    assert _symbol(env, "app.load_settings.x", expect=1)["hits"] == []
    # A name as declared, its kind's keyword before it: the name.
    assert _symbol(env, "struct foo_dev")["hits"][0]["snippet"]["symbol"] == "struct foo_dev"
    # Every definition of a hit's, not only its first (as --per-doc 1 is for a search).
    for per_doc in ([], ["--per-doc", "5"]):
        found = {s["symbol"] for s in _symbol(env, "foo_*", "-n", "1", *per_doc)["hits"][0]["snippets"]}
        assert found == {"struct foo_dev", "type foo_dev_t", "foo_alloc()", "foo_probe()"}, per_doc
    for name, path, symbol in [
        ("Circle", "web/shapes.ts", "class Circle"),
        ("makeCircle", "web/shapes.ts", "makeCircle()"),
        ("ListenAndServe", "cmd/server.go", "Server.ListenAndServe()"),
        ("manhattan", "geo/src/point.rs", "Point.manhattan()"),
        ("square", "geo/src/point.rs", "square()"),
    ]:
        (hit,) = _symbol(env, name)["hits"]
        assert (hit["path"], hit["snippet"]["symbol"]) == (path, symbol), name

    # Declarations and mentions are not definitions; an object-like macro is (search.macros).
    assert _symbol(env, "foo_declared_only", expect=1)["hits"] == []
    assert [(h["path"], h["snippet"]["symbol"]) for h in _symbol(env, "GFP_KERNEL")["hits"]] == [
        ("drivers/foo/foo.c", "#define GFP_KERNEL"),
        ("tools/copy/foo.c", "#define GFP_KERNEL"),
    ]
    assert [h["path"] for h in _symbol(env, "foo_probe", "--path", "tools/**")["hits"]] == ["tools/copy/foo.c"]
    assert [h["path"] for h in _symbol(env, "foo_probe", "--path", "!tools/**")["hits"]] == [
        "drivers/foo/foo.c",
        "lib/shim.c",
    ]
    # Nothing found where no document passes the filters: said, as a search says it.
    assert _symbol(env, "foo_probe", "--path", "tolls/", expect=1)["notes"] == [
        "no indexed document passes the filters (path tolls/), whatever the query"
    ]
    # Nothing defines it: said so, which is not to say no document holds it.
    assert _symbol(env, "foo_gone", "--path", "tools/", expect=1)["notes"] == [
        "nothing defines 'foo_gone' in the source files read: a search without `symbol` finds it as text"
    ]
    assert [h["path"] for h in _symbol(env, "foo_probe", "-n", "1")["hits"]] == ["drivers/foo/foo.c"]
    bad = cli_json("search", "--symbol", "two names", "--json", env=env, expect=2)
    assert bad["error"]["code"] == "INVALID_QUERY" and "one name" in bad["error"]["message"]

    # An ordinary search names the definition its passage is in; prose has none.
    hits = cli_json("search", "platform_get_irq", "--json", env=env)["hits"]
    assert {h["path"]: h["snippet"]["symbol"] for h in hits} == {
        "drivers/foo/foo.c": "foo_probe()",
        "tools/copy/foo.c": "foo_probe()",
    }
    hits = cli_json("search", "foo_probe", "--json", env=env)["hits"]
    readme = next(h for h in hits if h["path"] == "README.md")
    assert "symbol" not in readme["snippet"] or readme["snippet"]["symbol"] is None
    human = daemon_human(env, "platform_get_irq")
    assert "src/drivers/foo/foo.c:19: foo_probe()" in human
    # A passage whose line is outside any definition names none, not the one its window
    # reaches below it (the declaration's line 9, then foo_alloc from line 11).
    hits = cli_json("search", "foo_declared_only", "--json", env=env)["hits"]
    snip = next(h["snippet"] for h in hits if h["path"] == "drivers/foo/foo.c")
    assert snip["line"] == 9 and "foo_alloc" in snip["text"] and snip.get("symbol") is None

    # The watcher: a renamed function is found by its new name once parsed, not by the old.
    path = os.path.join(root, "app", "settings.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(PY_SOURCE.replace("def load_settings(", "def read_config("))
    assert wait_until(lambda: _symbol(env, "read_config", expect=None)["hits"], 30)
    assert _symbol(env, "load_settings", expect=1)["hits"] == []


MACROS = {
    "include/linux/gfp.h": "#ifndef _GFP_H\n#define _GFP_H\n#define __GFP_IO\t0x40u\n"
    "#define GFP_KERNEL\t(__GFP_RECLAIM | \\\n\t\t\t __GFP_IO)\n"
    "  #  define PAGE_SIZE 4096\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n#endif\n",
    "mm/use.c": "/* gfp.h: we define GFP_KERNEL there */\n#ifdef GFP_KERNEL\nstatic int flags = GFP_KERNEL;\n#endif\n",
    "lib/page.c": "int page_size(void)\n{\n\treturn 4096;\n}\n#define kmalloc_size 10\n",
    "lib/kmalloc.c": "int kmalloc_size(int n)\n{\n\treturn n;\n}\n",
    "include/asm-generic/current.h": "#define current get_current()\n",
    "tools/testing/selftests/signal/test_signals.c": "struct tdescr *current = &tde;\n",
    "notes.md": "# Notes on the headers\n\nThe kernel's headers hold lines such as this one, which the "
    "page quotes for its readers, and which is no C in a page of Markdown:\n\n#define GFP_KERNEL 0\n",
}


def test_a_backlog_of_many_batches_is_parsed_whole_by_the_lanes_sharing_it(daemon, tmp_path):
    """A backlog longer than a batch is shared by the lanes (one a background worker),
    each taking the next batch when it is free: every file is parsed once, and each
    file's definition is found."""
    from gnod.server.symbols import BATCH_CONTENTS

    env = daemon.env
    count = 3 * BATCH_CONTENTS + 5
    files = {f"lib/part{i:03d}.c": f"int part_{i:03d}_init(void)\n{{\n\treturn {i};\n}}\n" for i in range(count)}
    root = write_tree(str(tmp_path / "many"), files)
    cli_json("collection", "add", root, "--name", "many", "--json", env=env)
    status = _parsed(env, 60)
    assert (status["parsed"], status["pending"], status["error"]) == (count, 0, None)
    for i in (0, BATCH_CONTENTS, 2 * BATCH_CONTENTS + 1, count - 1):
        (hit,) = _symbol(env, f"part_{i:03d}_init")["hits"]
        assert (hit["path"], hit["snippet"]["symbol"]) == (f"lib/part{i:03d}.c", f"part_{i:03d}_init()")


def test_object_like_macros_are_found_where_their_define_line_is(daemon, tmp_path):
    """`#define NAME value` is not stored (a register map holds thousands): the files whose
    words hold `define NAME` are read for it, when no C header defines NAME otherwise."""
    env = daemon.env
    root = write_tree(str(tmp_path / "macros"), MACROS)
    cli_json("collection", "add", root, "--name", "macros", "--json", env=env)
    _parsed(env)

    def defined(name: str) -> list[tuple]:
        hits = _symbol(env, name, "-c", "macros", "--per-doc", "3", expect=None)["hits"]
        return [(h["path"], h["score"], [(s["line"], s["symbol"], s["text"]) for s in h["snippets"]]) for h in hits]

    # Its lines while they end with a backslash; the name marked; any case, the typed one first.
    [(path, score, [(line, symbol, text)])] = defined("GFP_KERNEL")
    assert (path, score, line, symbol) == ("include/linux/gfp.h", 1.0, 4, "#define GFP_KERNEL")
    assert text == "#define GFP_KERNEL\t(__GFP_RECLAIM | \\\n\t\t\t __GFP_IO)"
    assert [(p, score) for p, score, _ in defined("gfp_kernel")] == [("include/linux/gfp.h", 0.5)]
    assert defined("__GFP_IO") == [("include/linux/gfp.h", 1.0, [(3, "#define __GFP_IO", "#define __GFP_IO\t0x40u")])]
    # Blanks around `#`; beside a function of that name in another case.
    assert [(p, s[0][1]) for p, _, s in defined("PAGE_SIZE")] == [
        ("include/linux/gfp.h", "#define PAGE_SIZE"),
        ("lib/page.c", "page_size()"),
    ]
    # A macro taking arguments is a stored definition already.
    assert [(p, s[0][1]) for p, _, s in defined("MAX")] == [("include/linux/gfp.h", "MAX()")]
    assert [(p, [x[1] for x in s]) for p, _, s in defined("max")] == [("include/linux/gfp.h", ["MAX()"])]
    # Beside what C source files define for themselves, but not beside a header's (the
    # kernel's `current` was a selftest's variable alone).
    assert [(p, s[0][1]) for p, _, s in defined("kmalloc_size")] == [
        ("lib/kmalloc.c", "kmalloc_size()"),
        ("lib/page.c", "#define kmalloc_size"),
    ]
    assert [(p, s[0][1]) for p, _, s in defined("current")] == [
        ("include/asm-generic/current.h", "#define current"),
        ("tools/testing/selftests/signal/test_signals.c", "variable current"),
    ]
    # Mentions, `#ifdef`, and a Markdown line are not definitions; filters apply.
    assert defined("_GFP") == []
    assert _symbol(env, "GFP_KERNEL", "-c", "macros", "--path", "mm/*", expect=1)["hits"] == []
    # A search for the name puts the file defining it first (the one using it three
    # times, shorter, came first by bm25), its passage the definition.
    hits = cli_json("search", "GFP_KERNEL", "-c", "macros", "--json", env=env)["hits"]
    assert [(h["path"], h["snippet"]["line"]) for h in hits[:2]] == [("include/linux/gfp.h", 4), ("mm/use.c", 1)]


def test_query_shows_a_name_where_it_is_defined_as_search_does(daemon, tmp_path):
    """`query mutex_lock` (and `ask`, and the web page's hybrid search) showed mutex.h's
    opening comment, which holds both words, not `mutex_lock()` as `search` does."""
    env = daemon.env
    comment = "/*\n * Mutexes: blocking mutual exclusion locks.\n" + " * A mutex is a lock.\n" * 60 + " */\n"
    header = comment + "struct mutex { int owner; };\n" * 40 + "static inline void mutex_lock(struct mutex *m) {}\n"
    source = "#include <mutex.h>\n" * 30 + "void mutex_lock(struct mutex *lock)\n{\n\tmight_sleep();\n}\n"
    root = write_tree(str(tmp_path / "k"), {"include/mutex.h": header, "kernel/mutex.c": source})
    cli_json("collection", "add", root, "--name", "k", "--json", env=env)
    _parsed(env)
    shown = {h["path"]: h["snippet"]["line"] for h in cli_json("search", "mutex_lock", "--json", env=env)["hits"]}
    assert shown == {"kernel/mutex.c": 31, "include/mutex.h": 104}
    r = _run_cli("query", "mutex_lock", "--json", env=env)  # no models here: BM25 alone, and said
    previews = {h["path"]: (h["preview"]["start_line"], h["preview"]["symbol"]) for h in json.loads(r.stdout)["hits"]}
    assert previews == {"kernel/mutex.c": (31, "mutex_lock()"), "include/mutex.h": (104, "mutex_lock()")}, previews


def test_kconfig_options_and_assembler_labels_through_gnod(daemon, tmp_path):
    """`--symbol` finds a Kconfig option by its name and as C spells it (CONFIG_NAME), and
    an assembler entry point; a C macro of that name in a header comes after the option."""
    env = daemon.env
    files = {
        "mm/Kconfig": KCONFIG,
        "arch/arm/Kconfig-nommu": "config REMAP_VECTORS_TO_RAM\n\tbool 'Install vectors to the beginning of RAM'\n",
        "arch/arm64/boot/dts/soc.dtsi": DEVICE_TREE,
        "arch/x86/entry/entry_64.S": ASSEMBLER,
        "include/generated/autoconf.h": "#define CONFIG_SLUB_DEBUG 1\n",
        "mm/slub.c": "#ifdef CONFIG_SLUB_DEBUG\nstatic int check(void) { return 0; }\n#endif\n",
    }
    root = write_tree(str(tmp_path / "kernel"), files)
    cli_json("collection", "add", root, "--name", "kernel", "--json", env=env)
    _parsed(env)

    def defined(name: str) -> list[tuple]:
        hits = _symbol(env, name, "-c", "kernel", expect=None)["hits"]
        return [(h["path"], h["snippet"]["line"], h["snippet"]["symbol"]) for h in hits]

    assert defined("SLUB_DEBUG") == [("mm/Kconfig", 4, "config SLUB_DEBUG")]
    assert defined("CONFIG_SLUB_DEBUG") == [
        ("mm/Kconfig", 4, "config SLUB_DEBUG"),
        ("include/generated/autoconf.h", 1, "#define CONFIG_SLUB_DEBUG"),
    ]
    assert defined("config_transparent_hugepage*")[0] == ("mm/Kconfig", 12, "config TRANSPARENT_HUGEPAGE")
    assert defined("REMAP_VECTORS_TO_RAM") == [("arch/arm/Kconfig-nommu", 1, "config REMAP_VECTORS_TO_RAM")]
    assert defined("entry_SYSCALL_64") == [("arch/x86/entry/entry_64.S", 3, "label entry_SYSCALL_64")]
    assert defined("gic") == [("arch/arm64/boot/dts/soc.dtsi", 9, "label gic")]
    assert defined("__switch_to_asm") == [("arch/x86/entry/entry_64.S", 9, "__switch_to_asm()")]
    assert defined("local_label") == []  # not exported
    # A search for the option as C spells it: its Kconfig entry first, at its line.
    hits = cli_json("search", "CONFIG_SLUB_DEBUG", "-c", "kernel", "--json", env=env)["hits"]
    assert (hits[0]["path"], hits[0]["snippet"]["line"]) == ("mm/Kconfig", 4)


def test_a_thesis_s_sections_and_citation_keys_through_gnod(daemon, tmp_path):
    """A hit in a .tex names its section, `get` reads a section or a BibTeX entry by
    name, `--symbol` finds an entry by its citation key."""
    env = daemon.env
    root = write_tree(str(tmp_path / "thesis"), {"ch1.tex": LATEX, "refs.bib": BIBTEX})
    cli_json("collection", "add", root, "--name", "thesis", "--json", env=env)
    _parsed(env)
    (hit,) = cli_json("search", "diagonal", "-c", "thesis", "--json", env=env)["hits"]
    assert (hit["path"], hit["snippet"]["line"], hit["snippet"]["symbol"]) == ("ch1.tex", 8, "subsection Proof sketch")
    got = cli_json("get", "thesis/ch1.tex#the-big-incompleteness", "--json", env=env)
    assert got["content"].startswith("\\section*[Short]{The") and got["content"].rstrip().endswith("Diagonal argument.")
    assert cli_json("get", "thesis/refs.bib:goedel1931", "--json", env=env)["content"].startswith("@Book{goedel1931,")
    hits = _symbol(env, "smith2020", "-c", "thesis")["hits"]
    assert [(h["path"], h["snippet"]["symbol"]) for h in hits] == [("refs.bib", "article smith2020")]


def daemon_human(env, query: str) -> str:
    r = _run_cli("search", query, "--human", "--color", "never", env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_a_big_batch_is_found_once_parsed_and_until_then_the_note_says_so(daemon, tmp_path):
    """Until the background parse has read a file, `--symbol` says that some are left."""
    env = daemon.env
    many = {
        f"gen/mod{i}.py": f"def handler_{i}(event):\n" + f"    event += {i}\n" * 50 + "    return event\n"
        for i in range(400)
    }
    root = write_tree(str(tmp_path / "gen"), many)
    cli_json("collection", "add", root, "--name", "gen", "--json", env=env)
    notes_seen = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        res = _symbol(env, "handler_399", expect=None)
        notes_seen += res["notes"]
        if res["hits"] and not res["notes"]:
            break
    assert res["hits"] and res["hits"][0]["path"] == "gen/mod399.py"
    assert all("still being parsed" in n for n in notes_seen)


def test_agents_find_definitions_through_the_mcp_search_tool(daemon, tmp_path):
    """The MCP SDK's own client: `search` with `symbol`, and a hit's text naming its function."""
    env = daemon.env
    root = write_tree(str(tmp_path / "src"), {"drivers/foo/foo.c": C_SOURCE})
    cli_json("collection", "add", root, "--name", "src", "--json", env=env)
    _parsed(env)
    server = StdioServerParameters(command=sys.executable, args=["-m", "gnoctl.main", "mcp"], env=env)

    async def go():
        async with Client(server, mode="legacy") as c:
            return (
                await c.call_tool("search", {"query": "foo_probe", "symbol": True}),
                await c.call_tool("search", {"query": "platform_get_irq"}),
            )

    defined, mentioned = asyncio.run(go())
    assert not defined.is_error and not mentioned.is_error
    assert defined.content[0].text.startswith(f"{root}/drivers/foo/foo.c:16  in foo_probe()")
    assert mentioned.content[0].text.startswith(f"{root}/drivers/foo/foo.c:19  in foo_probe()")
    assert defined.structured_content["hits"][0]["snippet"]["symbol"] == "foo_probe()"


def test_the_parts_of_camel_case_names():
    text = "x = kmallocNode(HTTPServer, utf8Decode, 0xFF, IOError, IDs, snake_case, Title); kmallocNode"
    assert identifier_parts(text) == [
        ["kmalloc", "node"],
        ["http", "server"],
        ["utf8", "decode"],
        ["io", "error"],
    ]
    assert identifier_parts("plain prose, ALLCAPS and Title Case") == []
    assert identifier_parts("a" * 60 + "B" + "c" * 60) == []  # longer than a name: data


def test_camel_case_names_are_found_by_their_parts_and_first_by_their_whole_name(daemon, tmp_path):
    env = daemon.env
    files = {
        "web/alloc.ts": "export function kmallocNode(size: number) { return new ArrayBuffer(size); }\n",
        "web/plain.ts": "export function kmalloc(size: number) { return new ArrayBuffer(size); }\n",
        "drivers/alloc.c": "void *kmallocNode(int size) { return 0; }\n",  # C: snake_case, not split
        "web/redirect.ts": "export class HTTPRedirectHandler { follow(url: string) { return url; } }\n",
    }
    root = write_tree(str(tmp_path / "code"), files)
    cli_json("collection", "add", root, "--name", "code", "--json", env=env)

    def paths(query: str) -> list[str]:
        r = _run_cli("search", query, "--json", env=env)
        return [h["path"] for h in json.loads(r.stdout)["hits"]]

    assert paths("kmalloc") == ["web/plain.ts", "web/alloc.ts"]  # the exact name first
    assert paths("kmallocNode")[0] in ("web/alloc.ts", "drivers/alloc.c")
    assert set(paths("kmallocNode")) == {"web/alloc.ts", "drivers/alloc.c"}
    assert paths("node") == ["web/alloc.ts"]
    assert paths("kmalloc_node") == ["web/alloc.ts"]  # the phrase of its parts
    assert paths('"kmalloc node"') == []  # quoted: as typed, which no file holds
    # A longer name's end, typed as a name: its parts, as a phrase (no file holds it whole).
    assert paths("RedirectHandler") == ["web/redirect.ts"]
    assert paths("HandlerRedirect") == []
    assert paths('"RedirectHandler"') == []


def test_the_lag_note_counts_the_files_left():
    symbols = Symbols(writer=None, read=None)  # type: ignore[arg-type]
    assert symbols.lag_note() is None
    symbols.pending = 1
    assert symbols.lag_note() == "1 source file is still being parsed: its definitions are not found yet"
    symbols.pending = 1234
    assert symbols.lag_note() == "1,234 source files are still being parsed: their definitions are not found yet"
    symbols.rate = 300.0  # while a backlog is parsed, the time left at its rate
    assert symbols.lag_note().endswith("are not found yet (about 4 s left)")
    info = symbols.info()
    assert (info.rate, round(info.eta_s, 2)) == (300.0, 4.11)
    symbols.pending, symbols.rate = 0, None
    symbols.changed()  # files indexed, the backlog not read yet: how many is not known
    assert (
        symbols.lag_note() == "source files just indexed are still being parsed: their definitions may not be found yet"
    )
    assert symbols.info().parsing


def test_status_says_how_long_parsing_has_left():
    from gnoctl.output.status import _symbols_line

    sym = {"parsed": 12_608, "pending": 50_302, "parsing": True, "error": None, "rate": 320.4, "eta_s": 157.0}
    assert _symbols_line(sym) == (
        "definitions of 12,608 source files, 50,302 to parse (320 files/s, ETA 2m37s; "
        "search --symbol does not see them yet)"
    )
    assert _symbols_line({**sym, "rate": None, "eta_s": None}).endswith(
        ", 50,302 to parse (search --symbol does not see them yet)"
    )


@pytest.mark.parametrize("grammar", sorted(set(GRAMMARS.values())))
def test_every_grammar_loads_from_its_wheel(grammar):
    """Each grammar ships in its PyPI wheel: nothing is fetched at first use."""
    assert parse("", grammar) == []


def test_results_name_the_files_lines_where_the_stored_text_has_dropped_blank_lines(daemon, tmp_path):
    """The canonical text keeps one blank line of each run: every line a result names is
    still the file's, so an editor, `--vimgrep` and `get` land on the line that matched."""
    env = daemon.env
    notes = "# Notes\n\n\n\nintro\n\n\n\n\n## Section\n\nthe zebra line\n"
    root = write_tree(str(tmp_path / "lines"), {"app/settings.py": PY_SOURCE, "notes.md": notes})
    cli_json("collection", "add", root, "--name", "lines", "--json", env=env)
    zebra = notes.splitlines().index("the zebra line") + 1  # 12 in the file, 6 stored

    (hit,) = cli_json("search", "zebra", "--json", env=env)["hits"]
    assert hit["snippet"]["line"] == zebra
    r = _run_cli("search", "zebra", "--vimgrep", env=env)
    assert r.stdout.startswith(f"{os.path.join(root, 'notes.md')}:{zebra}:5:the zebra line")
    (qhit,) = cli_json("query", "zebra", "--json", "--no-expand", "--no-rerank", env=env)["hits"]
    assert qhit["preview"]["start_line"] <= zebra <= qhit["preview"]["end_line"]
    assert notes.splitlines()[qhit["preview"]["start_line"] - 1] == qhit["preview"]["text"].split("\n")[0]

    got = cli_json("get", f"lines/notes.md:{zebra}", "--json", env=env)
    assert (got["content"], got["from_line"], got["to_line"]) == ("the zebra line\n", zebra, zebra)
    whole = cli_json("get", "lines/notes.md", "--json", env=env)
    assert (whole["from_line"], whole["to_line"], whole["total_lines"]) == (1, zebra, zebra)
    inside_a_run = cli_json("get", "lines/notes.md:7", "-l", "4", "--json", env=env)  # from a dropped blank line
    assert (inside_a_run["content"], inside_a_run["from_line"], inside_a_run["to_line"]) == (
        "\n\n\n## Section\n",
        7,
        10,
    )
    past = cli_json("get", f"lines/notes.md:{zebra + 1}", "--json", env=env, expect=2)
    assert f"({zebra} lines)" in past["error"]["message"]

    _parsed(env)
    (defined,) = _symbol(env, "render")["hits"]
    assert PY_SOURCE.splitlines()[defined["snippet"]["line"] - 1] == "        def render(self):"


def test_get_takes_a_definitions_name_for_its_lines(daemon, tmp_path):
    """`get kernel/fork.c:copy_process` found no document: a path and a definition's name
    give that definition's lines, as `search --symbol` finds it (`Class.method` for a
    member); a name the file does not define is NOT_FOUND naming some it does."""
    env = daemon.env
    root = write_tree(str(tmp_path / "src"), {"app/settings.py": "\n\n" + PY_SOURCE, "notes:draft.md": "# Draft\n"})
    cli_json("collection", "add", root, "--name", "src", "--json", env=env)
    _parsed(env)
    doc = cli_json("get", "src/app/settings.py:load_settings", "--json", env=env)
    assert (doc["from_line"], doc["to_line"]) == (6, 8)  # the file's lines: two blank ones before the source
    assert doc["content"].splitlines()[0] == "def load_settings(path):"
    # --lines: the definition's first lines (it was refused: "names 3 lines… give them once").
    doc = cli_json("get", "src/app/settings.py:load_settings", "--lines", "1", "--json", env=env)
    assert (doc["from_line"], doc["to_line"], doc["content"]) == (6, 6, "def load_settings(path):\n")
    for ref in ("app/settings.py:Parser.parse", "src/app/settings.py:Parser::parse"):
        doc = cli_json("get", ref, "--json", env=env)  # from its decorator on (it was left out)
        assert doc["content"].splitlines() == [
            "    @staticmethod",
            "    def parse(text):",
            "        return text.split()",
        ]
    res = cli_json("multi-get", "app/settings.py:Parser", "app/settings.py:render", "--json", env=env)
    assert [(d["from_line"], d["to_line"]) for d in res["documents"]] == [(11, 18), (17, 18)]
    r = _run_cli("get", "app/settings.py:save_settings", "--json", env=env)
    err = json.loads(r.stdout)["error"]
    assert r.returncode == 2 and err["code"] == "NOT_FOUND" and err["details"]["name"] == "save_settings"
    assert "its definitions: load_settings, Parser, parse, Token, render" in err["message"]
    # A file whose name ends so is that file.
    assert cli_json("get", "src/notes:draft.md", "--json", env=env)["content"] == "# Draft\n"
    # An object-like macro, as `--symbol` finds it (`get current.h:current` named none).
    write_tree(root, {"include/current.h": "struct task;\n#define current \\\n\tget_current()\nint x = 1;\n"})
    cli_json("update", "src", "--json", env=env)
    doc = cli_json("get", "src/include/current.h:current", "--json", env=env)
    assert (doc["from_line"], doc["to_line"], doc["content"]) == (2, 3, "#define current \\\n\tget_current()\n")


def test_get_takes_a_qualified_name_for_its_definitions_lines(daemon, tmp_path):
    """`get http.client.HTTPConnection.request` (as an import or a traceback names it)
    named no document; a file's name that names none is still NOT_FOUND."""
    env = daemon.env
    root = write_tree(
        str(tmp_path / "src"),
        {
            "app/settings.py": PY_SOURCE,
            "tests/stub.py": "class Parser:\n    def parse(text):\n        pass\n",
            "notes.py": "md = 'draft'\n",
        },
    )
    cli_json("collection", "add", root, "--name", "src", "--json", env=env)
    _parsed(env)
    doc = cli_json("get", "app.settings.load_settings", "--json", env=env)
    assert (doc["path"], doc["from_line"], doc["to_line"]) == ("app/settings.py", 4, 6)
    assert doc["notes"] == []
    doc = cli_json("get", "settings.Parser.parse", "--json", env=env)
    assert (doc["path"], doc["content"].splitlines()[1]) == ("app/settings.py", "    def parse(text):")
    doc = cli_json("get", "Parser::parse", "--json", env=env)  # the stub in tests/ after the real one
    assert doc["path"] == "app/settings.py"
    assert doc["notes"] == [
        "other documents define 'Parser::parse' too: `gnoctl search --symbol Parser::parse` lists them"
    ]
    # notes.md is a file's name, not notes.py's variable.
    for ref in ("settings.save_settings", "notes.md", "app.config.py"):
        r = _run_cli("get", ref, "--json", env=env)
        assert r.returncode == 2 and json.loads(r.stdout)["error"]["code"] == "NOT_FOUND", ref


def test_of_definitions_as_deep_one_in_an_include_folder_comes_first():
    """`--symbol ARRAY_SIZE` listed fs/orangefs/orangefs-debug.h's own copy before the
    kernel's include/linux/array_size.h (the same depth: the path decided)."""
    from gnod.ingest.symbols import Symbol
    from gnod.search.defining import standing

    def defined(path: str) -> symstore.Defined:
        return symstore.Defined(0, path, Symbol("ARRAY_SIZE", "macro", 1, 1, None))

    paths = ["fs/orangefs/orangefs-debug.h", "include/linux/array_size.h", "lib/util.h", "tools/include/linux/kernel.h"]
    ranked = sorted(map(defined, paths), key=lambda f: (*standing(f, {"ARRAY_SIZE"}), f.rel_path))
    assert [f.rel_path for f in ranked] == [
        "lib/util.h",  # nearer the top still comes first
        "include/linux/array_size.h",
        "fs/orangefs/orangefs-debug.h",
        "tools/include/linux/kernel.h",
    ]


def test_a_name_being_typed_or_a_types_name_puts_its_definitions_first(daemon, tmp_path):
    """A tryout's picker: `parse_ecb*` (the name's words typed whole) opened the test
    importing parse_ecb_xml, `allocat*` a test, and `Reconciler` listed its class 8th,
    below the notes and tests naming it."""
    env = daemon.env
    files = {
        "rates.py": "def parse_ecb_xml(xml):\n    return xml\n\n\nclass EcbRateProvider:\n"
        "    def refresh(self):\n        return parse_ecb_xml(self.xml)\n",
        "tests/test_rates.py": "from rates import parse_ecb_xml\n\n\ndef test_parse_ecb_xml():\n"
        "    assert parse_ecb_xml('x') == 'x'\n    assert parse_ecb_xml('y') == 'y'\n",
        "money.py": "class Money:\n    def allocate(self, parts):\n        return parts\n",
        "tests/test_money.py": "def test_split():\n    # allocate, allocate, allocate\n    assert allocate(3)\n",
        "reconcile.py": "class Reconciler:\n    pass\n",
        "notes/plan.md": "# Plan\n\nThe reconciler reconciles; the reconciler is slow. Reconciler notes.\n",
    }
    root = write_tree(str(tmp_path / "src"), files)
    cli_json("collection", "add", root, "--name", "src", "--json", env=env)
    _parsed(env)

    def first(query: str) -> tuple[str, str | None]:
        hit = cli_json("search", query, "--json", env=env)["hits"][0]
        return hit["path"], hit["snippet"]["symbol"]

    assert first("parse_ecb*") == ("rates.py", "parse_ecb_xml()")
    assert first("allocat*") == ("money.py", "Money.allocate()")
    assert first("Reconciler") == ("reconcile.py", "class Reconciler")
    assert first("reconciler")[0] == "notes/plan.md"  # a word of prose, as typed so


def test_an_extraction_parses_again_only_the_grammars_it_changed(db, tmp_path):
    """Extraction 15 changed JavaScript's and Go's queries, and the kernel tree's 63k C
    files were parsed again (3 minutes of both cores): a content is marked with the last
    extraction that changed its grammar, and the others' stay parsed."""
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.ingest.symbols import EXTRACTION, REVISED, stamp
    from gnod.text.analyzer import AnalyzerSet

    root = write_tree(
        str(tmp_path / "src"),
        {"a.c": "int f(void)\n{\n\treturn 0;\n}\n", "b.go": "package b\n\nconst Limit = 3\n", "c.py": "X = 1\n"},
    )
    index_collection(db, AnalyzerSet(), CollectionConfig(name="src", path=root))
    _parse_all(db)
    assert symstore.backlog(db) == []
    assert stamp("go") == "go/15" and "go" in REVISED[15] and stamp("latex") == "latex/16"
    assert stamp("ini") == "ini/17" and stamp("python") == f"python/{EXTRACTION}"
    assert stamp("c") != f"c/{EXTRACTION}" and stamp("go") != f"go/{EXTRACTION}"
    # As an index parsed by the extraction before left them: only the Go file is due.
    db.execute("UPDATE content_symbols SET grammar = 'go/14' WHERE grammar = ?", (stamp("go"),))
    due = symstore.backlog(db)
    assert [g for _, g in due] == ["go"]


def test_a_definition_is_found_by_its_name_in_any_case_whatever_the_contents_passed_over(db, tmp_path):
    """A lookup passes over a content whose packed definitions hold no string that is the
    name (a word used often, `usb`, is a term of many names: usb_probe, usb_phy), without
    reading them; the name's definitions are found in any case, a name whose case folds
    to letters its bytes do not show (the long s, ſ) too."""
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.text.analyzer import AnalyzerSet

    long_s = "\u017f"
    root = write_tree(
        str(tmp_path / "src"),
        {
            "usb_core.c": "int usb_probe(void) { return 0; }\nint usb_phy(void) { return 1; }\n",
            "usb.c": "int USB(void) { return 2; }\n",
            "word.c": "int usb_word(void) { return 3; }\nint Usb(void) { return 4; }\n",
            "sign.c": f"int {long_s}cale_up(void) {{ return 5; }}\n",
            "plain.py": "def scale_up():\n    return 6\n",
            "long.py": "".join(f"def usb_{'x' * n}():\n    return {n}\n" for n in (28, 29, 61, 62))
            + (f"def USB_{'X' * 61}():\n    return 7\n"),
        },
    )
    index_collection(db, AnalyzerSet(), CollectionConfig(name="src", path=root))
    _parse_all(db)

    def found(name: str, prefix: bool = False) -> set[tuple[str, str]]:
        return {(f.rel_path, f.symbol.name) for f in symstore.lookup(db, [name], prefix, "1", [], 10)}

    assert found("usb") == {("usb.c", "USB"), ("word.c", "Usb")}
    assert found("scale_up") == {("sign.c", f"{long_s}cale_up"), ("plain.py", "scale_up")}
    # Names of the lengths whose packed length is written otherwise, or is a capital letter's byte.
    for n in (28, 29, 61, 62):
        assert ("long.py", f"usb_{'x' * n}") in found(f"USB_{'X' * n}")
    assert found(f"usb_{'x' * 61}") == {("long.py", f"usb_{'x' * 61}"), ("long.py", f"USB_{'X' * 61}")}
    assert found("usb_p", prefix=True) == {("usb_core.c", "usb_probe"), ("usb_core.c", "usb_phy")}


def test_the_characters_whose_case_folds_to_ascii_are_every_one_there_is():
    import sys

    from gnod.store.symbols import FOLDS_TO_ASCII

    every = {chr(c) for c in range(128, sys.maxunicode + 1) if chr(c).casefold().isascii()}
    assert set(FOLDS_TO_ASCII) == every
