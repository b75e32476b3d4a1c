"""Frontmatter parsing, fenced code detection and title extraction on canonical text."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import write_tree
from gnod.ingest.markdown import extract_title, split_frontmatter
from gnod.text.fences import fenced_spans
from gnod.text.language import detect_language_sure

# split_frontmatter


def test_no_frontmatter() -> None:
    text = "# Title\n\nbody\n"
    assert split_frontmatter(text) == ({}, text, 0)


def test_frontmatter_must_start_on_the_first_line() -> None:
    text = "\n---\ntitle: x\n---\nbody\n"
    assert split_frontmatter(text) == ({}, text, 0)


def test_unclosed_frontmatter_is_body() -> None:
    text = "---\ntitle: x\nbody\n"
    assert split_frontmatter(text) == ({}, text, 0)


def test_fence_lines_must_be_exact() -> None:
    text = "---\ntitle: x\n----\nbody\n"
    assert split_frontmatter(text) == ({}, text, 0)


def test_body_and_consumed_lines() -> None:
    text = "---\ntitle: Hello\ndate: 2024-05-01\n---\n# Heading\nbody\n"
    meta, body, lines = split_frontmatter(text)
    assert meta == {"title": "Hello", "date": "2024-05-01"}
    assert body == "# Heading\nbody\n"
    assert lines == 4
    assert text.endswith(body)
    assert text.split("\n")[lines] == "# Heading"


def test_dots_close_the_block() -> None:
    assert split_frontmatter("---\na: 1\n...\nbody\n") == ({"a": "1"}, "body\n", 3)


def test_empty_block() -> None:
    assert split_frontmatter("---\n---\nbody\n") == ({}, "body\n", 2)


def test_body_may_be_empty() -> None:
    assert split_frontmatter("---\na: b\n---\n") == ({"a": "b"}, "", 3)


def test_scalars_stay_strings_and_keys_are_lowercased() -> None:
    meta, _, _ = split_frontmatter("---\nTitle: My Note\nDraft: true\ncount: 42\ndate: 2024-05-01\n---\n")
    assert meta == {"title": "My Note", "draft": "true", "count": "42", "date": "2024-05-01"}


def test_matching_quotes_are_stripped() -> None:
    meta, _, _ = split_frontmatter('---\na: "double: quoted"\nb: \'single\'\nc: "unbalanced\'\nd: ""\n---\n')
    assert meta == {"a": "double: quoted", "b": "single", "c": "unbalanced'", "d": ""}
    # A quote left open is dropped: the title of `title: "unterminated` had it.
    assert split_frontmatter('---\ntitle: "unterminated\n---\n')[0] == {"title": "unterminated"}


def test_colons_inside_values() -> None:
    meta, _, _ = split_frontmatter("---\nurl: https://example.com:8080/a\ntime: 12:30\n---\n")
    assert meta == {"url": "https://example.com:8080/a", "time": "12:30"}


def test_inline_list() -> None:
    meta, _, _ = split_frontmatter("---\nauthors: [ann, \"bob, jr\", 'c d', ]\nnone: []\n---\n")
    assert meta == {"authors": ["ann", "bob, jr", "c d"], "none": []}


def test_block_list_indented_or_not() -> None:
    text = '---\nauthors:\n  - ann\n  - "bob smith"\nsources:\n- one\n- two\nafter: x\n---\n'
    meta, _, _ = split_frontmatter(text)
    assert meta == {"authors": ["ann", "bob smith"], "sources": ["one", "two"], "after": "x"}


def test_comma_separated_value_stays_a_string() -> None:
    meta, _, _ = split_frontmatter("---\ncategories: a, b\n---\n")
    assert meta == {"categories": "a, b"}


@pytest.mark.parametrize(
    "line",
    [
        "tags: a, b ,c",
        "tags: [a, b, c]",
        "tags:\n  - a\n  - b\n  - c",
        "TAGS: 'a, b, c'",
    ],
)
def test_tags_are_always_a_list(line: str) -> None:
    meta, _, _ = split_frontmatter(f"---\n{line}\n---\n")
    assert meta == {"tags": ["a", "b", "c"]}


def test_tags_without_a_comma_are_apart_by_spaces_as_obsidian_writes_them() -> None:
    """`tags: meeting urgent` was one tag, `meeting urgent`, which no --tag finds; a
    keyword or an alias may be words."""
    meta, _, _ = split_frontmatter("---\ntags: meeting urgent\ntag: review\nkeywords: machine learning\n---\n")
    assert meta == {"tags": ["meeting", "urgent"], "tag": ["review"], "keywords": ["machine learning"]}
    meta, _, _ = split_frontmatter("---\ntags: web development, rust\naliases: Project Alpha\n---\n")
    assert meta == {"tags": ["web development", "rust"], "aliases": ["Project Alpha"]}


def test_keywords_and_aliases_are_lists_too() -> None:
    meta, _, _ = split_frontmatter("---\nkeywords: search\naliases:\ntags: ''\n---\n")
    assert meta == {"keywords": ["search"], "aliases": [], "tags": []}


def test_key_without_value_is_an_empty_string() -> None:
    meta, _, _ = split_frontmatter("---\nsummary:\nnext: x\n---\n")
    assert meta == {"summary": "", "next": "x"}


def test_block_scalars() -> None:
    text = "---\nliteral: |\n  line one\n  line two\nfolded: >-\n  a\n  b\nend: x\n---\n"
    meta, _, _ = split_frontmatter(text)
    assert meta == {"literal": "line one\nline two", "folded": "a b", "end": "x"}


def test_malformed_lines_are_ignored() -> None:
    text = (
        "---\n"
        "title: Kept\n"
        "just some words\n"
        "- stray item\n"
        ": no key\n"
        "# a comment: with colon\n"
        "nested:\n"
        "  inner: 1\n"
        "  - item after nested mapping\n"
        "[broken: list\n"
        "list: [unclosed, x\n"
        "---\n"
        "body\n"
    )
    meta, body, lines = split_frontmatter(text)
    assert meta == {"title": "Kept", "nested": "", "list": ["unclosed", "x"]}  # a list, its `]` forgotten
    assert (body, lines) == ("body\n", 12)


@given(st.lists(st.text(alphabet=st.sampled_from("ab: -[]\"',|>#\t."), max_size=20), max_size=12))
def test_arbitrary_block_never_raises(lines: list[str]) -> None:
    block = "\n".join(line for line in lines if line.rstrip() not in ("---", "..."))
    meta, body, consumed = split_frontmatter(f"---\n{block}\n---\nbody\n")
    assert body == "body\n"
    assert consumed == block.count("\n") + 3
    for key, value in meta.items():
        assert isinstance(key, str) and key == key.lower()
        assert isinstance(value, str) or all(isinstance(v, str) for v in value)


# fenced_spans


def test_fenced_spans() -> None:
    text = "a\n```py\nx\n```\nb\n~~~\n```\n~~~~\nc\n````\n```\nd\n````\n"
    spans = fenced_spans(text)
    assert [text[s:e] for s, e in spans] == [
        "```py\nx\n```",
        "~~~\n```\n~~~~",
        "````\n```\nd\n````",
    ]


def test_a_heading_underline_opens_no_fence() -> None:
    """reStructuredText underlines a title with a line of tildes at least as long: taken for a fence left open, it hid the rest of the document (the kernel's
    mc-core.rst was detected as Italian from its first 104 characters)."""
    rst = "Media Controller\n~~~~~~~~~~~~~~~~\n\nThe media controller API.\n\nAPI\n~~~~\n\ntext\n"
    assert fenced_spans(rst) == []
    # A fence still: after a blank line, with an info string, shorter than the line above,
    # three of them, or closing one.
    for text in (
        "a\n\n~~~~\nx\n~~~~\n",
        "title\n~~~~~ py\nx\n~~~~~\n",
        "a long line\n~~~~\nx\n~~~~\n",
        "b\n~~~\nx\n~~~\n",
    ):
        assert len(fenced_spans(text)) == 1, text
    assert detect_language_sure(
        "Media Controller devices\n------------------------\n\nMedia Controller\n~~~~~~~~~~~~~~~~\n\n"
        "The media controller userspace API is documented in the Media Controller book. This document\n"
        "focuses on the kernel-side implementation of the media framework, and on how drivers use it.\n"
    ) == ("english", True)


def test_unclosed_fence_runs_to_the_end() -> None:
    text = "a\n   ```\nb\n"
    assert fenced_spans(text) == [(2, len(text))]


def test_not_fences() -> None:
    # Inline code, 4-space indent, backtick in a backtick fence's info string.
    assert fenced_spans("use ```x``` inline\n    ```\n``` a`b\n") == []


# extract_title


def test_title_from_frontmatter() -> None:
    assert extract_title({"title": "  From Meta "}, "# Heading\n", "f.md") == "From Meta"


def test_empty_frontmatter_title_falls_back() -> None:
    assert extract_title({"title": "  "}, "# Heading\n", "f.md") == "Heading"
    assert extract_title({"title": ["a"]}, "# Heading\n", "f.md") == "Heading"


def test_title_from_first_h1() -> None:
    body = "intro\n## Sub\n# First  \n# Second\n"
    assert extract_title({}, body, "f.md") == "First"


@pytest.mark.parametrize(
    ("line", "title"),
    [
        ("# Title ##", "Title"),
        ("# Title #   ", "Title"),
        ("# C#", "C#"),
        ("   # Indented", "Indented"),
        ("#\tTabbed", "Tabbed"),
    ],
)
def test_h1_text_cleanup(line: str, title: str) -> None:
    assert extract_title({}, f"{line}\n", "f.md") == title


def test_empty_h1_is_skipped() -> None:
    assert extract_title({}, "#\n# ##\n# Real\n", "f.md") == "Real"


@pytest.mark.parametrize("line", ["#NoSpace", "    # code block", "## Level two", "text # not"])
def test_not_h1(line: str) -> None:
    assert extract_title({}, f"{line}\n", "notes.md") == "notes"


@pytest.mark.parametrize("fence", ["```", "~~~", "````"])
def test_h1_inside_fence_is_ignored(fence: str) -> None:
    body = f"{fence}bash\n# install deps\npip install x\n{fence}\n\n# Real Title\n"
    assert extract_title({}, body, "f.md") == "Real Title"


def test_h1_only_inside_unclosed_fence_falls_back_to_filename() -> None:
    assert extract_title({}, "```\n# comment\n", "deploy-guide.md") == "deploy-guide"


def test_a_setext_heading_is_a_title_where_it_comes_first() -> None:
    """`Title` over a line of `=` is Markdown's other level-1 heading (many READMEs'),
    the first of either kind titling the page; one in fenced code is not, nor `---`
    under a line (a level-2 heading)."""
    assert extract_title({}, "Gno\n===\n\nLocal search.\n\n# Install\n", "README.md") == "Gno"
    assert extract_title({}, "# Install\n\nGno\n===\n", "README.md") == "Install"
    assert extract_title({}, "```\nout\n===\n```\n\nReal\n====\n", "f.md") == "Real"
    assert extract_title({}, "Usage\n-----\n", "notes.md") == "notes"
    assert extract_title({}, "Not a heading\n===\n", "notes.txt") == "notes"  # plain text: `#` on line 1 only


def test_restructuredtext_is_titled_by_its_first_section_not_a_comment_in_a_literal_block() -> None:
    """The kernel's sched-deadline.rst was titled `rt-app -t 100000:10000:d …`, a shell
    comment (`  # rt-app …`) in one of its literal blocks read as a Markdown heading,
    and its `Deadline Task Scheduling` over and under a line of `=` was never its title:
    reStructuredText has no `#` headings, and its title is its first section's, the
    line flush left with a line of one punctuation character under it, at least as long."""
    body = (
        "========================\nDeadline Task Scheduling\n========================\n\n"
        "Run it so::\n\n  # rt-app -t 100000:10000:d -D5\n\nOverview\n--------\n"
    )
    assert extract_title({}, body, "sched-deadline.rst") == "Deadline Task Scheduling"
    assert extract_title({}, "Intro text.\n\nUsage\n~~~~~\n", "a.rst") == "Usage"  # underlined only
    for untitled in ("Too long a title\n====\n", "  indented\n  ========\n", "::\n\n  # comment\n", "----\n"):
        assert extract_title({}, untitled, "doc.rst") == "doc", untitled


@pytest.mark.parametrize(
    ("filename", "title"),
    [("deploy-guide.md", "deploy-guide"), ("notes/a.b.txt", "a.b"), ("README", "README")],
)
def test_title_from_filename(filename: str, title: str) -> None:
    assert extract_title({}, "no heading here\n", filename) == title


def test_toml_frontmatter_is_read() -> None:
    """Hugo's and Zola's `+++` blocks were body text: no title, no tags, no date."""
    text = (
        '+++\ntitle = "TOML frontmatter"\ntags = ["hugo", "notes"]\ndate = 2023-04-05T10:00:00Z\n'
        "draft = false\nweight = 3\n[params]\nx = 1\n+++\n# Heading\n\nbody\n"
    )
    meta, body, lines = split_frontmatter(text)
    assert meta == {
        "title": "TOML frontmatter",
        "tags": ["hugo", "notes"],
        "date": "2023-04-05T10:00:00+00:00",
        "draft": "false",
        "weight": "3",
    }
    assert (body, lines) == ("# Heading\n\nbody\n", 9)
    # A block that is not TOML stays text, as one left open does.
    for broken in ('+++\ntitle = "open\n+++\nbody\n', "+++\ntitle = 1\nbody\n"):
        assert split_frontmatter(broken) == ({}, broken, 0)
    # Zola keeps tags in [taxonomies]: read as the top level's, which win where both say.
    zola = '+++\ntitle = "Zola"\n[taxonomies]\ntags = ["rust", "zola"]\ncategories = ["blog"]\n[extra]\nx = 1\n+++\nb\n'
    assert split_frontmatter(zola)[0] == {"title": "Zola", "tags": ["rust", "zola"], "categories": ["blog"]}
    both = '+++\ntags = ["top"]\n[taxonomies]\ntags = ["below"]\n+++\nb\n'
    assert split_frontmatter(both)[0] == {"tags": ["top"]}


def test_a_documents_date_is_its_date_else_created() -> None:
    from gnod.store.documents import date_of

    assert date_of({"created": "2022-01-02", "date": "2021-05-06"}) == "2021-05-06"
    assert date_of({"created": "2022-01-02", "date": ""}) == "2022-01-02"
    assert date_of({"created": "2022-01-02"}) == "2022-01-02"
    assert date_of({"date": ["2021"], "created": "2022-01-02"}) is None  # as SQL reads it: no day
    assert date_of({}) is None


def test_a_notes_hash_tags_are_read_from_its_text_but_not_from_code_links_or_headings() -> None:
    """Obsidian, Logseq and Bear take `#meeting` in a note's text for a tag."""
    from gnod.ingest.markdown import inline_tags

    text = (
        "# Heading\n"
        "Met with Anna #meeting #Project/Alpha and #project/alpha again.\n"
        "See [x](#anchor), http://a.b/#frag, issue #123 and `#notatag`.\n"
        "```c\n#include <stdio.h>\n```\n"
        "Done #todo- #über #2024-review\n"
    )
    assert inline_tags(text) == ["meeting", "Project/Alpha", "todo", "über", "2024-review"]
    assert inline_tags("No tags here, not even C#.\n") == []


def test_restructuredtext_sections_are_its_titles_ranked_by_their_adornment():
    """A page's title over and under `=` is its top; a style's rank is where it first
    appears (`-` then `~` here, as the kernel's pages use them); a `---` in a literal
    block is the block's text, and a title's section ends where one of its rank or above
    starts (at that one's overline)."""
    from gnod.text.headings import RST, headings, section_lines

    page = (
        "=====\nGuide\n=====\n\nIntro.\n\nSetup\n-----\n\nSo::\n\n  text\n  ---\n\n"
        "Details\n~~~~~~~\n\nMore.\n\nUse\n---\n\nRun.\n\n=====\nIndex\n=====\n"
    )
    assert headings(page, RST) == [
        (0, 1, "Guide"),
        (6, 2, "Setup"),
        (14, 3, "Details"),
        (19, 2, "Use"),
        (24, 1, "Index"),
    ]
    assert section_lines(page, "setup", RST) == (7, 18)
    assert section_lines(page, "Details", RST) == (15, 18)
    assert section_lines(page, "Guide", RST) == (1, 23)
    assert headings(page) == []  # read as Markdown, it has no `#` headings


def test_a_section_is_named_in_any_case_and_with_or_without_its_accents():
    """`get notes.md:Marz` said there was no section `Marz` (its headings: …, März), where
    `:terminologie` named `Terminologie`: a heading is compared as a search's words are."""
    from gnod.text.headings import section_lines

    text = "# Rechnungen 2025\n\n## Februar\n\nZwei.\n\n## März\n\nDrei.\n"
    assert section_lines(text, "Marz") == section_lines(text, "märz") == (7, 9)
    assert section_lines(text, "februar") == (3, 5)
    assert section_lines(text, "Mai") is None
    # A numbered heading, as a paper's are, without its number too (`#Methodik` found none).
    paper = "# Seminararbeit\n\n## 3 Methodik\n\nDaten.\n\n### 3.1. Erhebung\n\nBogen.\n\n## IV. Diskussion\n\nx\n"
    assert section_lines(paper, "Methodik") == section_lines(paper, "3 Methodik") == (3, 9)
    assert section_lines(paper, "Erhebung") == (7, 9) and section_lines(paper, "Diskussion") == (11, 13)
    assert section_lines(paper, "3") is None  # a number alone names no section


def _titles(root: str, collection_root: str) -> dict[str, str]:
    """The titles of `collection_root`'s documents once indexed (it is in `root`)."""
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.store.db import connect
    from gnod.store.migrations import migrate
    from gnod.text.analyzer import AnalyzerSet

    conn = connect(os.path.join(root, "index.sqlite"))
    migrate(conn)
    index_collection(conn, AnalyzerSet(), CollectionConfig(name="v", path=collection_root))
    return dict(conn.execute("SELECT rel_path, title FROM documents").fetchall())


VAULT = {
    "Meetings/2026-10-30 Alpha Review.md": "# Meeting notes\n\nDecided on Kafka.\n",
    "Meetings/2026-11-03 Kickoff.md": "# Meeting notes\n\nKickoff.\n",
    "Templates/Meeting Template.md": "# {{title}}\n\n## Attendees\n",
    "People/Anna.md": "---\ntitle: Anna Schmidt\n---\n# Anna\n\nEngineer.\n",
    "todo.txt": "# Errands\n\nBuy milk.\n",
}


def test_an_obsidian_vault_s_notes_are_titled_by_their_files_names(tmp_path) -> None:
    """Obsidian names a note by its file: every meeting note was titled `Meeting notes`
    (its first heading), and each template `{{title}}`, in `ls`, hits and `ask`'s sources."""
    vault = tmp_path / "vault"
    write_tree(str(vault), {**VAULT, ".obsidian/app.json": "{}"})
    assert _titles(str(tmp_path), str(vault)) == {
        "Meetings/2026-10-30 Alpha Review.md": "2026-10-30 Alpha Review",
        "Meetings/2026-11-03 Kickoff.md": "2026-11-03 Kickoff",
        "Templates/Meeting Template.md": "Meeting Template",
        "People/Anna.md": "Anna Schmidt",  # a frontmatter title still titles it
        "todo.txt": "Errands",  # not a Markdown note
    }


def test_a_folder_of_an_obsidian_vault_is_too_and_other_notes_keep_their_headings(tmp_path) -> None:
    vault = tmp_path / "vault"
    write_tree(str(vault), {**VAULT, ".obsidian/app.json": "{}"})
    assert _titles(str(tmp_path / "one"), str(vault / "Meetings")) == {
        "2026-10-30 Alpha Review.md": "2026-10-30 Alpha Review",
        "2026-11-03 Kickoff.md": "2026-11-03 Kickoff",
    }
    notes = tmp_path / "notes"
    write_tree(str(notes), VAULT)
    titles = _titles(str(tmp_path / "two"), str(notes))
    assert titles["Meetings/2026-10-30 Alpha Review.md"] == "Meeting notes"
    assert titles["Templates/Meeting Template.md"] == "{{title}}"


def test_a_vault_indexed_before_is_titled_again_from_what_is_stored(tmp_path) -> None:
    from gnod.ingest import titles
    from gnod.ingest.markdown import TITLE_RULES
    from gnod.store import documents as store
    from gnod.store.db import connect

    vault = tmp_path / "vault"
    write_tree(str(vault), {**VAULT, ".obsidian/app.json": "{}"})
    _titles(str(tmp_path), str(vault))
    conn = connect(os.path.join(str(tmp_path), "index.sqlite"))
    with conn:  # as the rules before left it
        conn.execute("UPDATE documents SET title = 'Meeting notes' WHERE rel_path LIKE 'Meetings/%'")
        store.set_meta_value(conn, "title_rules", str(TITLE_RULES - 1))
    assert titles.due(conn)
    after: tuple[int, int] | None = (0, 0)
    while after is not None:
        with conn:
            after = titles.retitle(conn, after[0])
    assert dict(conn.execute("SELECT rel_path, title FROM documents WHERE rel_path LIKE 'Meetings/%'")) == {
        "Meetings/2026-10-30 Alpha Review.md": "2026-10-30 Alpha Review",
        "Meetings/2026-11-03 Kickoff.md": "2026-11-03 Kickoff",
    }
