"""Walking a collection: default extensions, include/exclude globs, nested .gitignore."""

from __future__ import annotations

import os
import time
from collections import Counter

import pytest

from gnod.config import extension
from gnod.ingest.walk import Filter, admit, walk


def make(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def paths(root, flt: Filter) -> list[str]:
    return [e.rel_path for e in walk(str(root), flt)]


def test_defaults_skip_junk_and_unknown_extensions(tmp_path):
    make(
        tmp_path,
        {
            "a.md": "a",
            "b.txt": "b",
            "c.py": "c",
            "d.bin": "d",
            "node_modules/x.md": "x",
            ".git/HEAD.md": "h",
            "sub/e.MD": "e",
            ".obsidian/workspace.json": "{}",  # a vault's app settings and its deleted notes
            ".trash/old.md": "o",
            ".github/workflows/ci.yml": "on: push",  # other hidden folders are text like any
        },
    )
    assert sorted(paths(tmp_path, Filter([], []))) == [".github/workflows/ci.yml", "a.md", "b.txt", "c.py", "sub/e.MD"]


def test_build_output_is_left_out_where_no_gitignore_says_what_the_output_is(tmp_path):
    """build/ and dist/ are a project's output, left out of a plain folder; in a project's
    tree (a git work tree, or a .gitignore at its top: a release tarball) whose .gitignore
    files are followed, those decide: the kernel's tools/build/ is source, and a project's
    own build/ is in its .gitignore."""
    from gnod.config import CollectionConfig

    files = {
        "a.md": "a",
        "tools/build/Makefile": "all:",
        "dist/b.md": "b",
        "build/out.md": "o",
        "node_modules/x.md": "x",
    }
    make(tmp_path / "notes", files)
    make(tmp_path / "repo", {**files, ".git/HEAD": "ref: refs/heads/main", ".gitignore": "/build/\n"})
    make(tmp_path / "tarball", {**files, ".gitignore": "/build/\n"})
    plain = CollectionConfig(name="n", path=str(tmp_path / "notes"))
    outputs: Counter[str] = Counter()
    assert [e.rel_path for e in walk(str(tmp_path / "notes"), Filter.of(plain), outputs=outputs)] == ["a.md"]
    # What is taken for output by its name alone is counted, so that the user hears of it;
    # what is never content (node_modules/) or an exclude glob leaves out is not.
    assert outputs == {"build": 2, "dist": 1}
    outputs.clear()
    list(walk(str(tmp_path / "notes"), Filter([], ["dist/"]), outputs=outputs))
    assert outputs == {"build": 2}
    repo = CollectionConfig(name="r", path=str(tmp_path / "repo"))
    assert paths(tmp_path / "repo", Filter.of(repo)) == ["a.md", "dist/b.md", "tools/build/Makefile"]
    list(walk(str(tmp_path / "repo"), Filter.of(repo), outputs=outputs))
    assert outputs == {"build": 2}  # unchanged: its .gitignore left its build/ out
    tarball = CollectionConfig(name="t", path=str(tmp_path / "tarball"))
    assert paths(tmp_path / "tarball", Filter.of(tarball)) == ["a.md", "dist/b.md", "tools/build/Makefile"]
    # Without its .gitignore files the work tree is a folder like another.
    unignored = CollectionConfig(name="r", path=str(tmp_path / "repo"), gitignore=False)
    assert paths(tmp_path / "repo", Filter.of(unignored)) == ["a.md"]


def test_a_projects_files_without_an_extension_are_taken_in_its_tree_only(tmp_path):
    """In a project's tree a file without an extension is a script or a document (the
    kernel's Documentation/ABI pages, scripts/decodecode), and its .gitignore says what a
    build makes; not a hidden one (a tool's settings) nor an editor's backup. In a plain
    folder such a name may be anything: left out unless `#!` opens it, and counted as
    another kind."""
    from gnod.config import CollectionConfig

    files = {
        "a.md": "a",
        "Documentation/ABI/testing/sysfs-class-net": "What: /sys/class/net/<iface>/operstate",
        "scripts/decodecode": "#!/bin/sh",
        "vmlinux": "ELF",
        ".mailmap": "A <a@example.org>",
        "notes~": "old",
        "#notes#": "autosaved",
        "data.bin": "x",
    }
    make(tmp_path / "repo", {**files, ".git/HEAD": "ref: refs/heads/main", ".gitignore": "/vmlinux\n"})
    make(tmp_path / "plain", files)
    repo = CollectionConfig(name="r", path=str(tmp_path / "repo"))
    assert paths(tmp_path / "repo", Filter.of(repo)) == [
        "a.md",
        "Documentation/ABI/testing/sysfs-class-net",
        "scripts/decodecode",
    ]
    others: Counter[str] = Counter()
    plain = CollectionConfig(name="p", path=str(tmp_path / "plain"))
    walked = [e.rel_path for e in walk(str(tmp_path / "plain"), Filter.of(plain), others=others)]
    assert walked == ["a.md", "scripts/decodecode"]
    assert others == {"": 4, ".bin": 1}


def test_defaults_take_build_files_and_a_projects_plain_text_files(tmp_path):
    """A source tree's files that no extension of ours names, as a developer searches
    them: assembler, device trees, Makefile and Kconfig (and their variants), a
    Dockerfile, the README and MAINTAINERS at the top, configuration fragments, semantic
    patches…; not a `todo` program, not a picture."""
    make(
        tmp_path,
        {
            "MAINTAINERS": "SLAB ALLOCATOR",
            "README": "Linux kernel",
            "arch/x86/entry/entry_64.S": "SYM_CODE_START(entry_SYSCALL_64)",
            "arch/arm/boot/dts/board.dts": "/dts-v1/;",
            "arch/arm/boot/dts/soc.dtsi": "/ { };",
            "mm/Kconfig": "config SLUB_DEBUG",
            "mm/Kconfig.debug": "config PAGE_OWNER",
            "mm/Makefile": "obj-y := slab_common.o",
            "scripts/Makefile.lib": "# rules",
            "tools/Dockerfile": "FROM debian",
            "tools/todo": "#!/bin/sh",
            "tools/logo.svg": "<svg/>",
            # Configuration fragments, semantic patches, litmus tests, graphs, ASN.1
            # modules, linker scripts, translations.
            "kernel/configs/kvm_guest.config": "CONFIG_KVM_GUEST=y",
            "scripts/coccinelle/api/kfree.cocci": "@@ expression E; @@",
            "tools/memory-model/litmus-tests/MP+poonceonces.litmus": "C MP+poonceonces",
            "Documentation/sched.dot": "digraph G {}",
            "crypto/rsapubkey.asn1": "RsaPubKey ::= SEQUENCE {",
            "arch/x86/boot/setup.ld": "ENTRY(_start)",
            "po/de.po": 'msgid "file"',
        },
    )
    assert paths(tmp_path, Filter([], [])) == [
        "MAINTAINERS",
        "README",
        "Documentation/sched.dot",
        "arch/arm/boot/dts/board.dts",
        "arch/arm/boot/dts/soc.dtsi",
        "arch/x86/boot/setup.ld",
        "arch/x86/entry/entry_64.S",
        "crypto/rsapubkey.asn1",
        "kernel/configs/kvm_guest.config",
        "mm/Kconfig",
        "mm/Kconfig.debug",
        "mm/Makefile",
        "po/de.po",
        "scripts/Makefile.lib",
        "scripts/coccinelle/api/kfree.cocci",
        "tools/Dockerfile",
        "tools/memory-model/litmus-tests/MP+poonceonces.litmus",
    ]


def test_a_gzip_file_is_taken_by_default_where_the_file_it_holds_would_be(tmp_path):
    """`notes.md.gz` is a note; a rotated log or a man page is taken by an `also` glob,
    as the log itself would be, and a tarball stays an archive."""
    make(tmp_path, {"notes.md.gz": "", "syslog.2.gz": "", "ls.1.gz": "", "site.tar.gz": "", "Makefile.gz": ""})
    others: Counter[str] = Counter()
    taken = ["Makefile.gz", "notes.md.gz", "site.tar.gz"]
    assert [e.rel_path for e in walk(str(tmp_path), Filter([], []), others=others)] == taken
    assert others == {".gz": 2}
    assert paths(tmp_path, Filter([], [], also=["*.gz"])) == sorted([*taken, "ls.1.gz", "syslog.2.gz"])


def test_also_globs_add_files_to_the_default_kinds_or_to_the_include_globs(tmp_path):
    """An `also` glob takes files besides what the collection takes anyway (where an
    include glob replaces the default kinds); what it takes is no other kind, and an
    exclude glob still wins."""
    make(
        tmp_path,
        {
            "a.md": "",
            "b.c": "",
            "ftrace/t1.tc": "",
            "old/t2.tc": "",
            "ABI/sysfs-bus-usb": "",
            "logo.svg": "",
        },
    )
    others: Counter[str] = Counter()
    flt = Filter([], ["old/"], also=["*.tc", "ABI/*"])
    found = [e.rel_path for e in walk(str(tmp_path), flt, others=others)]
    assert found == ["a.md", "b.c", "ABI/sysfs-bus-usb", "ftrace/t1.tc"]
    assert others == {".svg": 1}
    assert not flt.kind_left_out("t1.tc", "ftrace/t1.tc") and flt.kind_left_out("logo.svg", "logo.svg")
    assert paths(tmp_path, Filter(["*.md"], [], also=["*.tc"])) == ["a.md", "ftrace/t1.tc", "old/t2.tc"]
    assert Filter([], [], also=["*.tc"]).key != Filter([], []).key  # kept listings are per filter


def test_files_of_other_kinds_are_counted_by_extension(tmp_path):
    """What the default kinds leave out is counted, also by a walk that lists no directory
    again; not a hidden file, an ignored or excluded one, a link, or a directory."""
    make(
        tmp_path,
        {
            "a.md": "",
            "b.svg": "",
            "c.SVG": "",
            "sub/d.log": "",
            "sub/tool": "",
            ".editorconfig": "",
            ".gitignore": "*.o\n",
            "e.o": "",
            "old/f.svg": "",
            "pics.d/g.md": "",
        },
    )
    os.symlink("b.svg", tmp_path / "link.svg")
    an_hour_ago = time.time() - 3600
    for d in (tmp_path / "sub", tmp_path / "old", tmp_path / "pics.d", tmp_path):
        os.utime(d, (an_hour_ago, an_hour_ago))
    for _ in range(2):  # the second from the listings the first kept
        others: Counter[str] = Counter()
        assert [e.rel_path for e in walk(str(tmp_path), Filter([], ["old/"]), others=others)] == ["a.md", "pics.d/g.md"]
        assert others == {".svg": 2, ".log": 1, "": 1}
    others = Counter()
    list(walk(str(tmp_path), Filter(["*.md"], []), others=others))
    assert not others  # the user chose what to take


@pytest.mark.parametrize(
    "path, ext",
    [
        ("Makefile", ".mk"),
        ("tools/makefile", ".mk"),
        ("scripts/Makefile.lib", ".mk"),  # a variant: ".lib" is no extension of ours
        ("Makefile.md", ".md"),  # one of ours wins
        ("mm/Kconfig.debug", ".kconfig"),
        ("Dockerfile.dev", ".dockerfile"),
        ("CMakeLists.txt", ".cmake"),  # build code, though named .txt
        ("README", ".txt"),
        ("README.rst", ".rst"),
        ("COPYING.LIB", ".txt"),
        ("entry_64.S", ".s"),
        ("arch/arm/Kconfig-nommu", ".kconfig"),
        ("arch/x86/Makefile_32.cpu", ".mk"),
        ("LICENSE-MIT", ".txt"),
        ("arch/arm64/configs/defconfig", ".defconfig"),
        ("x86_64_defconfig", ".defconfig"),
        ("todo", ""),  # as likely a program as a note
        ("install", ""),
    ],
)
def test_a_named_file_reads_as_the_extension_it_stands_for(path, ext):
    assert extension(path) == ext


def test_include_and_exclude_globs(tmp_path):
    make(tmp_path, {"a.md": "", "notes/b.md": "", "notes/old/c.md": "", "x.log": ""})
    assert paths(tmp_path, Filter(["**/*.md"], ["notes/old/"])) == ["a.md", "notes/b.md"]
    assert paths(tmp_path, Filter(["*.log"], [])) == ["x.log"]


def test_nested_gitignore_with_negation(tmp_path):
    make(
        tmp_path,
        {
            ".gitignore": "secret/\n*.tmp.md\n",
            "a.md": "",
            "secret/s.md": "",
            "b.tmp.md": "",
            "sub/.gitignore": "*.md\n!keep.md\n",
            "sub/drop.md": "",
            "sub/keep.md": "",
        },
    )
    assert paths(tmp_path, Filter([], [])) == ["a.md", "sub/keep.md"]
    assert "secret/s.md" in paths(tmp_path, Filter([], [], gitignore=False))


def test_a_repositorys_own_excludes_and_the_users_are_honoured_as_git_does(tmp_path, monkeypatch):
    """.git/info/exclude at a repository's top and the user's excludes file (git's
    core.excludesFile, by default ~/.config/git/ignore) leave files out as git and
    ripgrep do; a .gitignore's line decides over them (`!keep.log.md`)."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    make(
        repo,
        {
            "a.md": "",
            "scratch/s.md": "",
            "x.log.md": "",
            "keep.log.md": "",
            ".gitignore": "!keep.log.md\n",
            ".git/info/exclude": "# local only\nscratch/\n",
            "vendor/lib/.git/info/exclude": "*.md\n!readme.md\n",  # a nested repository's own
            "vendor/lib/readme.md": "",
            "vendor/lib/notes.md": "",
            "vendor/top.md": "",
        },
    )
    found = ["a.md", "keep.log.md", "vendor/lib/readme.md", "vendor/top.md", "x.log.md"]
    assert sorted(paths(repo, Filter([], []))) == found
    make(home, {".config/git/ignore": "*.log.md\n"})
    assert sorted(paths(repo, Filter([], []))) == ["a.md", "keep.log.md", "vendor/lib/readme.md", "vendor/top.md"]
    # core.excludesFile names another; ~/.gitconfig is read after the XDG one and wins.
    make(home, {".config/git/config": "[core]\n\texcludesFile = ~/none\n", "mine": "top.md\n"})
    make(home, {".gitconfig": '[user]\n\tname = me\n[Core]\n\texcludesfile = "~/mine"  ; mine\n'})
    assert sorted(paths(repo, Filter([], []))) == ["a.md", "keep.log.md", "vendor/lib/readme.md", "x.log.md"]
    assert "scratch/s.md" in paths(repo, Filter([], [], gitignore=False))


def test_names_that_are_not_utf8_are_matched_by_globs_and_gitignore_files(tmp_path):
    """The walk went down on such a name (the glob matcher cannot encode its surrogate
    escapes) as soon as the collection had an exclude glob or a .gitignore: `collection
    add`, `update` and the scan at start failed. It is read as a .gitignore's own lines
    are, with U+FFFD for each byte that is not UTF-8."""
    make(tmp_path, {"a.md": "", "notes/b.md": ""})
    root = os.fsencode(str(tmp_path))
    for name in (b"caf\xe9.md", b"notes/\xff.md", b"old-\xfe.md"):
        with open(os.path.join(root, name), "wb") as f:
            f.write(b"text\n")
    with open(os.path.join(root, b".gitignore"), "wb") as f:
        f.write(b"*.o\nold-\xfe.md\n")  # a line naming one, in the same bytes

    def walked(flt: Filter) -> tuple[list[str], list[tuple[str, str]]]:
        issues: list = []
        return [e.rel_path for e in walk(str(tmp_path), flt, issues)], sorted((i.rel_path, i.code) for i in issues)

    # Left out and reported, as without a .gitignore; the one the .gitignore names is ignored.
    bad = [("caf\\xe9.md", "BAD_NAME"), ("notes/\\xff.md", "BAD_NAME")]
    assert walked(Filter([], [])) == (["a.md", "notes/b.md"], bad)
    assert walked(Filter(["**/*.md"], ["notes/*.md"], gitignore=False)) == (
        ["a.md"],
        [("caf\\xe9.md", "BAD_NAME"), ("old-\\xfe.md", "BAD_NAME")],
    )


def test_stat_fields_and_symlinked_dirs_not_followed(tmp_path):
    make(tmp_path, {"a.md": "hello"})
    os.symlink(tmp_path, tmp_path / "loop", target_is_directory=True)
    (entry,) = list(walk(str(tmp_path), Filter([], [])))
    st = os.stat(tmp_path / "a.md")
    assert (entry.size, entry.mtime_ns, entry.inode) == (5, st.st_mtime_ns, st.st_ino)


def test_links_inside_the_root_are_left_out_unreported_and_links_out_reported(tmp_path):
    outside = tmp_path / "outside"
    make(outside, {"secret.md": "key"})
    root = tmp_path / "root"
    make(root, {"a.md": "hello", "sub/b.md": "hi"})
    os.symlink(root / "a.md", root / "alias.md")
    os.symlink(root / "sub", root / "sub-alias", target_is_directory=True)
    os.symlink(root / "gone.md", root / "dangling.md")
    os.symlink(outside / "secret.md", root / "out.md")
    os.symlink(outside, root / "out-dir", target_is_directory=True)
    for follow in (False, True):
        issues: list = []
        found = [e.rel_path for e in walk(str(root), Filter([], []), issues, follow_symlinks=follow)]
        # Followed, a link to a directory already walked is a loop (each directory once).
        loop = [("sub-alias", "LOOP")] if follow else []
        assert sorted((i.rel_path, i.code) for i in issues) == [
            ("out-dir", "OUTSIDE_ROOT"),
            ("out.md", "OUTSIDE_ROOT"),
            *loop,
        ]
        assert sorted(found) == ["a.md", *(["alias.md"] if follow else []), "sub/b.md"]
        for rel in ("alias.md", "dangling.md", "out.md"):  # one file, as the watcher admits it
            issues = []
            entry = admit(str(root), Filter([], []), rel, issues, follow_symlinks=follow)
            assert (entry is not None) == (follow and rel == "alias.md")
            assert [i.code for i in issues] == (["OUTSIDE_ROOT"] if rel == "out.md" else [])


def test_files_are_stat_ed_by_path_when_no_descriptor_is_left(tmp_path):
    """The walk stats a directory's files through a descriptor of it; a process out of
    descriptors still gets every file with its stat (by its path), none taken as gone.
    (The directories are listed by the first walk and not changed since: the second
    lists none, which would need a descriptor too.)"""
    import resource

    make(tmp_path, {"a.md": "hello", "sub/b.md": "hi", "sub/deeper/c.md": "!"})
    an_hour_ago = time.time() - 3600
    for d in (tmp_path / "sub" / "deeper", tmp_path / "sub", tmp_path):
        os.utime(d, (an_hour_ago, an_hour_ago))
    expected = [
        (e.rel_path, e.abs_path, e.size, e.mtime_ns, e.inode) for e in walk(str(tmp_path), Filter(["**/*.md"], []))
    ]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    held: list[int] = []
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 512), hard))
    try:
        with pytest.raises(OSError):
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
        walked = [
            (e.rel_path, e.abs_path, e.size, e.mtime_ns, e.inode) for e in walk(str(tmp_path), Filter(["**/*.md"], []))
        ]
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert walked == expected
    st = os.stat(tmp_path / "sub" / "b.md")
    assert ("sub/b.md", str(tmp_path / "sub" / "b.md"), 2, st.st_mtime_ns, st.st_ino) in walked


def test_unreadable_dir_is_reported(tmp_path):
    if os.getuid() == 0:
        import pytest

        pytest.skip("root can read any directory")
    make(tmp_path, {"locked/a.md": "", "b.md": ""})
    os.chmod(tmp_path / "locked", 0)
    errors: list = []
    try:
        assert [e.rel_path for e in walk(str(tmp_path), Filter([], []), errors)] == ["b.md"]
    finally:
        os.chmod(tmp_path / "locked", 0o755)
    assert errors and errors[0][0] == "locked"


@pytest.mark.parametrize(
    "name",
    [
        "a.MD",
        ".bashrc",
        "..x",
        "...a.b",
        "a",
        "a.",
        "a.b.c",
        ".a.b",
        "x..md",
        ".",
        "..",
        "readme",
        "archive.TAR.GZ",
        "ü.Rst",
    ],
)
def test_extension_is_what_splitext_gives(name):
    assert extension(name) == os.path.splitext(name)[1].lower()


def test_a_gitignore_that_is_not_a_file_is_no_gitignore(tmp_path):
    make(tmp_path, {"a.md": "x", "sub/b.md": "y"})
    os.mkfifo(tmp_path / ".gitignore")  # opening it would block until a writer came
    os.mkdir(tmp_path / "sub" / ".gitignore")
    assert sorted(e.rel_path for e in walk(str(tmp_path), Filter([], []))) == ["a.md", "sub/b.md"]


def _age(root) -> None:
    """Date every directory back a minute: their listings may then be kept."""
    for d, _dirs, _files in os.walk(root):
        os.utime(d, ns=(os.stat(d).st_atime_ns, os.stat(d).st_mtime_ns - 60 * 10**9))


def test_a_kept_listing_is_used_until_what_it_depends_on_changes(tmp_path, monkeypatch):
    make(
        tmp_path,
        {".gitignore": "*.tmp.md\n", "a.md": "", "b.tmp.md": "", "sub/c.md": "", "sub/d.md": "", "deep/er/e.md": ""},
    )
    os.mkfifo(tmp_path / "sub" / "pipe.md")
    _age(tmp_path)
    want = ["a.md", "deep/er/e.md", "sub/c.md", "sub/d.md"]
    assert paths(tmp_path, Filter([], [])) == want
    listed = []
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda p: listed.append(str(p)) or real_scandir(p))
    issues: list = []
    entries = list(walk(str(tmp_path), Filter([], []), issues))
    assert [e.rel_path for e in entries] == want and listed == []  # no directory listed again
    assert [i.code for i in issues] == ["SPECIAL"]
    # A file's content and stat change: the listing stays, the new stat is seen.
    (tmp_path / "sub" / "c.md").write_text("longer now")
    entry = next(e for e in walk(str(tmp_path), Filter([], [])) if e.rel_path == "sub/c.md")
    assert entry.size == 10 and listed == []
    # A new file changes its directory's mtime: that directory alone is listed again.
    (tmp_path / "sub" / "new.md").write_text("")
    assert paths(tmp_path, Filter([], [])) == [*want, "sub/new.md"] and listed == [str(tmp_path / "sub")]
    # A .gitignore edited in place (same directory mtime) changes what is kept below it.
    _age(tmp_path)
    listed.clear()
    (tmp_path / ".gitignore").write_text("*.tmp.md\nsub/d.md\n")
    os.utime(tmp_path, ns=(0, os.stat(tmp_path).st_mtime_ns - 60 * 10**9))
    assert paths(tmp_path, Filter([], [])) == ["a.md", "deep/er/e.md", "sub/c.md", "sub/new.md"]
    assert len(listed) == 4  # every directory below it
    # Other filters are another listing.
    listed.clear()
    assert paths(tmp_path, Filter(["**/c.md"], [])) == ["sub/c.md"] and len(listed) == 4


def test_a_directory_kept_without_a_gitignore_is_not_asked_for_one(tmp_path, monkeypatch):
    """A no-op walk stats no .gitignore where the kept listing saw none (one added would
    change the directory's mtime); one that exists is still stat'ed for edits in place."""
    make(tmp_path, {".gitignore": "*.tmp.md\n", "a.md": "", "sub/c.md": "", "sub/x.tmp.md": "", "deep/er/e.md": ""})
    _age(tmp_path)
    assert paths(tmp_path, Filter([], [])) == ["a.md", "deep/er/e.md", "sub/c.md"]
    asked: list[str] = []
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        if str(path).endswith("/.gitignore"):
            asked.append(str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    assert paths(tmp_path, Filter([], [])) == ["a.md", "deep/er/e.md", "sub/c.md"]
    assert asked == [str(tmp_path / ".gitignore")]
    (tmp_path / "sub" / ".gitignore").write_text("c.md\n")
    assert paths(tmp_path, Filter([], [])) == ["a.md", "deep/er/e.md"]
    (tmp_path / "deep" / "er" / ".gitignore").mkdir()  # not a file: nothing to read, nothing ignored
    assert paths(tmp_path, Filter([], [])) == ["a.md", "deep/er/e.md"]


@pytest.mark.parametrize(
    "path, ext",
    [
        ("Mail/Inbox/cur/1700000000.M1P2Q3.host:2,S", ".eml"),
        ("new/1700000000.M1P2.mail.example.org", ".eml"),
        ("Inbox/tmp/1700000000.M1P2.host", ".host"),  # still being delivered
        ("Inbox/cur/1700000000.M1:2,RS", ".eml"),
        ("journal/new/1700000000.md", ".md"),  # a note named by its time
        ("cur/12345.txt", ".txt"),
        ("archive/1700000000.M1P2.host", ".host"),  # not in cur/ or new/
    ],
)
def test_a_maildir_message_reads_as_an_eml(path, ext):
    assert extension(path) == ext


def test_globs_anchored_at_a_folder_the_top_lacks_are_named(tmp_path):
    """`--also 'sites-available/*'` is anchored at the collection's top, as .gitignore
    reads a glob with a `/` inside: where no such folder is there (it is deeper), the
    glob took nothing, silently."""
    from gnod.ingest.walk import anchored_nowhere

    make(tmp_path, {"etc/nginx/sites-available/api": "server {}", "docs/a.md": "a"})
    globs = [
        "sites-available/*",
        "**/sites-available/*",
        "docs/*.md",
        "/notes/*.md",
        "!old/*",
        "old/",
        "*.log",
        "*/sites-available/*",
        "etc/nginx/*",
    ]
    assert anchored_nowhere(str(tmp_path), globs) == ["sites-available/*", "/notes/*.md", "!old/*"]


def test_a_script_without_an_extension_is_taken_outside_a_project_too(tmp_path):
    """A sysadmin's `healthcheck` and ~/bin's `backup` (`#!` opens them) were left out
    as files of no kind: only a project's tree took a file without an extension."""
    from gnod.config import CollectionConfig

    make(
        tmp_path,
        {
            "bin/backup": "#!/bin/sh\ntar czf /backup/etc.tgz /etc\n",
            "bin/notes": "no shebang\n",
            "bin/.hidden": "#!/bin/sh\n",
            "bin/backup~": "#!/bin/sh\n",
            "run.md": "# Run\n",
        },
    )
    (tmp_path / "bin" / "tool").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(64))
    others: Counter[str] = Counter()
    flt = Filter.of(CollectionConfig(name="ops", path=str(tmp_path)))
    assert [e.rel_path for e in walk(str(tmp_path), flt, others=others)] == ["run.md", "bin/backup"]
    assert others == {"": 3}  # notes, the program, the editor's backup
    assert admit(str(tmp_path), flt, "bin/backup") is not None and admit(str(tmp_path), flt, "bin/notes") is None
