"""Chunk boundaries, overlap and the slice/line invariants that search results rely on."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gnod.ingest.chunk import MAX_CHARS, OVERLAP, Chunk, chunk_text


def end(chunk: Chunk) -> int:
    return chunk.pos + len(chunk.text)


def prose(n_chars: int, sentence: str = "The quick brown fox jumps over the lazy dog. ") -> str:
    return (sentence * (n_chars // len(sentence) + 1))[:n_chars]


def check_invariants(text: str, chunks: list[Chunk], max_chars: int) -> None:
    assert [c.seq for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.text and text[c.pos : end(c)] == c.text
        assert len(c.text) <= max_chars
        assert c.start_line == text.count("\n", 0, c.pos) + 1
        assert c.end_line == text.count("\n", 0, end(c) - 1) + 1
    assert chunks[0].pos == 0
    for prev, nxt in zip(chunks, chunks[1:]):
        assert prev.pos < nxt.pos <= end(prev)
    assert not text[end(chunks[-1]) :].strip()


def test_constants() -> None:
    assert (MAX_CHARS, OVERLAP) == (3200, 480)


@pytest.mark.parametrize("text", ["", " ", "\n\n", " \t\n "])
def test_blank_text_has_no_chunks(text: str) -> None:
    assert chunk_text(text) == []


def test_small_text_is_one_chunk() -> None:
    text = "# Title\n\nline two\nline three\n"
    assert chunk_text(text) == [Chunk(0, 0, text, 1, 4)]


def test_text_of_exactly_max_chars_is_one_chunk() -> None:
    text = prose(100)
    assert chunk_text(text, max_chars=100, overlap=10) == [Chunk(0, 0, text, 1, 1)]


def test_chunk_is_frozen() -> None:
    with pytest.raises(AttributeError):
        chunk_text("x")[0].pos = 3  # type: ignore[misc]


@pytest.mark.parametrize(("max_chars", "overlap"), [(0, 0), (100, 100), (100, -1)])
def test_bad_parameters(max_chars: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        chunk_text("text", max_chars=max_chars, overlap=overlap)


def test_heading_in_second_half_starts_the_next_chunk() -> None:
    text = prose(140) + "\n\n" + prose(20) + "\n## Section\n" + prose(300)
    heading = text.index("## Section")
    chunks = chunk_text(text, max_chars=200, overlap=30)
    assert end(chunks[0]) == heading
    assert chunks[1].pos == heading
    assert chunks[1].text.startswith("## Section\n")
    assert chunks[1].start_line == text.count("\n", 0, heading) + 1 == 4


def test_heading_in_first_half_is_not_a_break() -> None:
    text = prose(50) + "\n# Early\n" + prose(400)
    heading = text.index("# Early")
    chunks = chunk_text(text, max_chars=200, overlap=30)
    assert "# Early" in chunks[0].text
    assert all(c.pos != heading and end(c) != heading for c in chunks)


def test_heading_inside_fence_is_not_a_break() -> None:
    fenced = "\n```sh\n" + prose(10) + "\n# not a heading\n" + prose(100) + "\n```\n"
    text = prose(120) + fenced + prose(300)
    fake = text.index("# not a heading")
    chunks = chunk_text(text, max_chars=200, overlap=30)
    assert all(c.pos != fake and end(c) != fake for c in chunks)


def test_heading_right_after_fence_is_a_break() -> None:
    text = prose(120) + "\n~~~\n# comment\n~~~\n# Real\n" + prose(300)
    real = text.index("# Real")
    chunks = chunk_text(text, max_chars=200, overlap=30)
    assert (end(chunks[0]), chunks[1].pos) == (real, real)


def test_paragraph_break_beats_a_later_sentence_end() -> None:
    text = prose(120) + "\n\n" + prose(300)
    chunks = chunk_text(text, max_chars=200, overlap=30)
    assert end(chunks[0]) == 122
    assert chunks[0].text.endswith("\n\n")


def test_last_paragraph_break_in_range_wins() -> None:
    text = prose(110) + "\n\n" + prose(30) + "\n\n" + prose(300)
    chunks = chunk_text(text, max_chars=200, overlap=30)
    assert end(chunks[0]) == 144


def test_sentence_end_beats_line_break() -> None:
    text = "word " * 24 + "end. more words\n" + "word " * 100
    chunks = chunk_text(text, max_chars=200, overlap=30)
    assert chunks[0].text.endswith("end. ")


@pytest.mark.parametrize("mark", ["!", "?", "."])
def test_sentence_end_before_newline(mark: str) -> None:
    text = "word " * 24 + f"end{mark}\n" + "word " * 100
    chunks = chunk_text(text, max_chars=200, overlap=30)
    assert chunks[0].text.endswith(f"end{mark}\n")


def test_line_break_beats_space() -> None:
    text = "word " * 24 + "line\n" + "word " * 100
    chunks = chunk_text(text, max_chars=200, overlap=30)
    assert chunks[0].text.endswith("line\n")


def test_space_break() -> None:
    text = "word " * 100
    chunks = chunk_text(text, max_chars=203, overlap=30)
    assert [len(c.text) for c in chunks[:2]] == [200, 200]
    check_invariants(text, chunks, 203)


def test_hard_cut_without_spaces() -> None:
    text = "x" * 1000
    chunks = chunk_text(text, max_chars=100, overlap=15)
    assert [c.pos for c in chunks] == list(range(0, 1000, 100))
    assert all(len(c.text) == 100 for c in chunks)


def test_next_chunk_starts_at_a_word() -> None:
    text = prose(5000, "Sphinx of black quartz, judge my vow. ")
    chunks = chunk_text(text, max_chars=300, overlap=45)
    for c in chunks[1:]:
        assert text[c.pos - 1].isspace() and not text[c.pos].isspace()


def test_default_overlap_is_about_15_percent() -> None:
    text = "\n\n".join(prose(700 + 37 * i) for i in range(40))
    chunks = chunk_text(text)
    assert len(chunks) > 5
    for prev, nxt in zip(chunks, chunks[1:]):
        assert len(prev.text) <= MAX_CHARS
        assert OVERLAP - 10 <= end(prev) - nxt.pos <= OVERLAP


def test_no_overlap_at_heading_breaks() -> None:
    sections = [f"## Part {i}\n\n" + prose(2000) for i in range(6)]
    text = "# Doc\n\n" + "\n\n".join(sections) + "\n"
    chunks = chunk_text(text)
    heading_starts = [c for c in chunks if c.text.startswith("## Part")]
    assert len(heading_starts) == 5  # every section but the first, which follows "# Doc"
    for prev, nxt in zip(chunks, chunks[1:]):
        if nxt.text.startswith("## Part"):
            assert end(prev) == nxt.pos


def test_whitespace_only_tail_is_dropped() -> None:
    text = "a" * 150 + " " * 100
    assert chunk_text(text, max_chars=200, overlap=30) == [Chunk(0, 0, text[:200], 1, 1)]


PIECES = st.sampled_from(
    [
        "word",
        "other",
        "x" * 37,
        " ",
        " ",
        " ",
        "\n",
        "\n\n",
        ". ",
        "! ",
        "?\n",
        "# ",
        "## ",
        "\n# Head\n",
        "\n```\n",
        "\n~~~\n",
        "\t",
        "é",
        "日本",
    ]
)


@given(st.lists(PIECES, max_size=300).map("".join), st.integers(10, 400), st.floats(0, 0.9))
@settings(max_examples=300, deadline=None)
def test_invariants(text: str, max_chars: int, overlap_fraction: float) -> None:
    overlap = int(max_chars * overlap_fraction)
    chunks = chunk_text(text, max_chars=max_chars, overlap=overlap)
    if not text.strip():
        assert chunks == []
        return
    check_invariants(text, chunks, max_chars)
    if len(text) <= max_chars:
        assert chunks == [Chunk(0, 0, text, 1, text.count("\n", 0, len(text) - 1) + 1)]


def test_one_megabyte_with_fences_keeps_invariants() -> None:
    code = "\n\n```py\n# comment\nx = 1\n```\n\n"
    section = "## Section\n\n" + prose(1500) + code + prose(900) + "\n"
    text = "# Big\n\n" + section * (1_000_000 // len(section))
    chunks = chunk_text(text)
    check_invariants(text, chunks, MAX_CHARS)
    assert not any(c.text.startswith("# comment") for c in chunks)


# --- source code ---------------------------------------------------------------------


def c_function(i: int) -> str:
    body = "".join(f"\tvalue_{i} += compute(value_{i}, {k});\n" for k in range(6))
    return (
        f"/* Function {i}: adds things. */\nstatic int function_{i}(int value_{i})\n{{\n{body}\treturn value_{i};\n}}\n"
    )


def test_code_breaks_before_top_level_blocks_and_keeps_definitions_whole() -> None:
    text = "\n".join(c_function(i) for i in range(12))
    chunks = chunk_text(text, max_chars=600, overlap=60, code=True)
    check_invariants(text, chunks, 600)
    assert len(chunks) > 3
    for c in chunks:
        assert c.text.startswith("/* Function ")  # each starts at a definition's comment
        assert c.text.count("{") == c.text.count("}")  # and holds its definitions whole
    # The prose rules cut inside the functions instead, and restart with an overlap.
    prose_chunks = chunk_text(text, max_chars=600, overlap=60)
    assert any(not c.text.startswith("/* Function ") for c in prose_chunks[1:])


def test_code_comments_are_not_headings_and_closing_lines_are_not_blocks() -> None:
    method = "    def method_{0}(self):\n        x = {0}\n\n        return x\n\n"
    text = "# A comment\n\nclass Big:\n" + "".join(method.format(i) for i in range(40)) + "}\n"
    chunks = chunk_text(text, max_chars=400, overlap=40, code=True)
    check_invariants(text, chunks, 400)
    # No `#` line or indented line is taken for a block: the class body breaks at paragraphs.
    assert all(not c.text.startswith("# A comment") for c in chunks[1:])
    assert chunks[-1].text.rstrip().endswith("}")
    assert not any(c.text.startswith("}") for c in chunks)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=" \t\n{}()#abc;", max_size=3000), st.integers(50, 400))
def test_code_chunks_keep_the_invariants(text: str, max_chars: int) -> None:
    if not text.strip():
        assert chunk_text(text, max_chars=max_chars, overlap=max_chars // 10, code=True) == []
        return
    check_invariants(text, chunk_text(text, max_chars=max_chars, overlap=max_chars // 10, code=True), max_chars)


def test_ingest_chunks_source_files_at_their_blocks_and_prose_as_prose() -> None:
    from gnod.ingest.prepare import prepare
    from gnod.ingest.walk import WalkEntry
    from gnod.text.analyzer import AnalyzerSet

    text = "\n".join(c_function(i) for i in range(40))

    def starts(name: str) -> list[str]:
        data = text.encode()
        doc = prepare(WalkEntry(name, "/nowhere/" + name, len(data), 0, 0), data, "h", None, AnalyzerSet())
        return [text[c.pos : c.pos + 13] for c in doc.chunks]

    assert all(s.startswith("/* Function ") for s in starts("f.c"))
    assert not all(s.startswith("/* Function ") for s in starts("f.txt"))
