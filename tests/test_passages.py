"""Best passages for the reranker and previews (real stemming, no model)."""

from __future__ import annotations

from gnod.search import passages
from gnod.search.passages import Chunk
from gnod.text.analyzer import Analyzer
from gnod.text.stopwords import is_stopword

EN = Analyzer("english")


def chunks(*texts: str) -> list[Chunk]:
    return [Chunk(seq=i, text=t, start_line=i * 10 + 1, end_line=i * 10 + 9) for i, t in enumerate(texts)]


def test_the_chunk_with_most_query_stems_wins_not_the_first():
    cs = chunks(
        "Intro about the garden and its history.",
        "Watering tomatoes daily keeps tomato plants healthy.",
        "Unrelated closing notes.",
    )
    stems = passages.query_stems("watered tomato plant".split(), EN)
    p = passages.best_passage(cs, stems, EN, budget_chars=60)
    assert p.seqs == [1] and p.start_line == 11 and p.end_line == 19


def test_query_words_leave_out_function_words_unless_nothing_else_is_left():
    def stop(t: str) -> bool:
        return is_stopword(t, ["english"])

    assert passages.query_words(["how to extract a tar archive", "unpack tar"], stop) == [
        "extract",
        "tar",
        "archive",
        "unpack",
        "tar",
    ]
    assert passages.query_words(["to be or not to be"], stop) == ["to", "be", "or", "not", "to", "be"]


def test_budget_adds_next_best_chunks_in_document_order():
    cs = chunks("tomato " * 5, "nothing here", "tomato plant water " * 2)
    stems = passages.query_stems("tomato plant water".split(), EN)
    p = passages.best_passage(cs, stems, EN, budget_chars=80)
    assert p.seqs == [0, 2]  # best (2) and second (0), shown in document order
    assert p.text.index("tomato plant") > 0


def test_vector_best_breaks_ties_and_one_chunk_always_fits():
    cs = chunks("alpha " * 50, "beta " * 50)
    p = passages.best_passage(cs, frozenset(), EN, budget_chars=10, vector_best=1)
    assert p.seqs == [1]
    assert passages.best_passage([], frozenset(), EN, 100).seqs == []


def test_rerank_budget_leaves_room_for_the_query():
    assert passages.rerank_budget_chars(512, "q" * 30) == (512 - 10 - 8) * 3
    assert passages.rerank_budget_chars(16, "long query " * 20) == 200  # never below a usable minimum


def test_preview_text_cuts_at_a_word():
    text, cut = passages.preview_text("one two three four five six", 12)
    assert cut and text == "one two …"
    assert passages.preview_text("short", 12) == ("short", False)


def test_focus_opens_just_before_the_best_line():
    body = "\n".join(f"filler line number {i} about nothing" for i in range(40))
    body += "\nintro to the key part\nthe socket frames are length prefixed\n" + "tail line\n" * 30
    p = passages.Passage(chunks=[Chunk(seq=0, text=body, start_line=5, end_line=5 + body.count("\n"))])
    f = passages.focus(p, passages.query_stems(["socket", "frame"], EN), EN, limit=120)
    assert f.text.startswith("intro to the key part\nthe socket frames")
    assert f.start_line == 5 + 40 and f.end_line >= f.start_line + 1 and f.truncated
    short = passages.Passage(chunks=[Chunk(seq=0, text="tiny", start_line=3, end_line=3)])
    assert passages.focus(short, frozenset(), EN, 120) == passages.Focus(
        text="tiny", start_line=3, end_line=3, truncated=False
    )


def test_a_preview_starts_at_its_first_line_of_text():
    """A chunk opening with the blank line after a note's frontmatter had its preview,
    and an editor's jump to it, start on that blank line."""
    blank = passages.Passage(chunks=[Chunk(seq=0, text="\n# Retry design\nWe retry.", start_line=5, end_line=7)])
    assert passages.focus(blank, frozenset(), EN, 120) == passages.Focus(
        text="# Retry design\nWe retry.", start_line=6, end_line=7, truncated=False
    )
    body = "\n\n" + "\n".join(f"line {i} of the design" for i in range(30))
    long = passages.Passage(chunks=[Chunk(seq=0, text=body, start_line=5, end_line=5 + body.count("\n"))])
    f = passages.focus(long, frozenset(), EN, limit=60)
    assert f.text.startswith("line 0 of the design") and f.start_line == 7


def test_where_the_document_defines_the_name_asked_its_passage_opens_there():
    """`query mutex_lock` showed mutex.h's opening comment ("Mutexes: blocking mutual
    exclusion locks": both words), where `search` showed `mutex_lock()`'s definition."""
    head = "/*\n * Mutexes: blocking mutual exclusion locks\n */\n"
    body = "struct mutex;\nextern void mutex_init(struct mutex *m);\n" * 3
    cs = [
        Chunk(seq=0, text=head, start_line=1, end_line=3),
        Chunk(seq=1, text=body, start_line=4, end_line=9),
        Chunk(seq=2, text="void mutex_lock(struct mutex *lock)\n{\n\tmight_sleep();\n}\n", start_line=10, end_line=13),
    ]
    stems = passages.query_stems(["mutex", "lock"], EN)
    assert passages.best_passage(cs, stems, EN, budget_chars=40).seqs == [0]
    p = passages.best_passage(cs, stems, EN, budget_chars=40, defined_at=10)
    assert p.seqs == [2]
    # The preview opens at the definition's line, even in a passage that holds more.
    wide = passages.best_passage(cs, stems, EN, budget_chars=500, defined_at=10)
    f = passages.focus(wide, stems, EN, limit=60, defined_at=10)
    assert f.start_line == 10 and f.text.startswith("void mutex_lock(struct mutex *lock)")
