"""Relevance through a live gnod and the real CLI: which languages stem a query, exact
forms first, long queries, scores that mean the same down the list, and unsure short
documents taking their collection's language."""

from __future__ import annotations

import csv
import datetime
import io
import json
import math
import os
from types import SimpleNamespace

import pytest
from test_cli import run_cli_tty

from conftest import _run_cli, cli_json, running_gnod, write_tree
from gnod.search.constants import PIPELINE

pytestmark = pytest.mark.timeout(120)

TOPICS = [
    "kettle",
    "garden",
    "bicycle",
    "printer",
    "library",
    "bakery",
    "harbour",
    "museum",
    "tennis",
    "violin",
    "orchard",
    "glacier",
    "pottery",
    "lantern",
    "meadow",
    "compass",
    "festival",
    "telescope",
    "vineyard",
    "chimney",
    "carpet",
    "tunnel",
    "pharmacy",
    "canoe",
]
NOTES = {
    f"notes/{t}.md": f"# About the {t}\n\nThis is a short note about the {t} and what we learned "
    f"from it during the week, with a few thoughts for the next one.\n"
    for t in TOPICS
}
DOCS = {
    **NOTES,
    "tools/flash.md": "# flash\n\nRun the fla.sh script to write the firmware onto the board.\n",
    "birds.md": "# Birds of the lagoon\n\nThe flamingos stand in the shallow water of the lagoon all "
    "day long, and the herons wait beside them.\n",
    # Basque, one page in thirty: its stemmer cuts "flamingo" to "fla".
    "eu/katua.md": "# Katua\n\nEtxeko katuak goizean lo egiten du eta gero lorategira joaten da, "
    "eguraldia ona denean txakurrarekin jolasten baitu.\n",
    # The same stem, "deploy": the shorter page wins on stems alone.
    "deploying.md": "# Rollout\n\nThe team is deploying the new billing service to the big cluster "
    "this week, after the review.\n",
    "deployed.md": "# Rollout done\n\nThe team deployed the service.\n",
    # No function words: the detector's verdict (French) is only a guess.
    "unsure.md": "Ribosomal protein kinase phosphorylation assays in vitro.\n",
    "lagoon.md": "# The salt lagoon\n\nIn spring the flamingos feed in the salt lagoon; the herons and "
    "the flamingos share the shallow water.\n",
    # The same manual page in the collection's language and two others: the translations
    # are shorter, so bm25 alone ranks them first.
    "man/tar.md": "# tar\n\n> Archiving utility, often combined with a compression method such as gzip.\n\n"
    "- Create an archive and write it to a file:\n\n`tar cf target.tar file1 file2`\n\n"
    "- Extract an archive in the current directory, keeping the permissions:\n\n`tar xf source.tar`\n",
    "man/tr/tar.md": "# tar\n\n> Arşivleme aracı ve bir sıkıştırma yöntemi ile birlikte kullanılır.\n\n"
    "- Bir arşiv oluştur ve bir dosyaya yaz:\n\n`tar cf target.tar file1 file2`\n\n"
    "- Bir arşivi çıkar:\n\n`tar xf source.tar`\n",
    "man/de/tar.md": "# tar\n\n> Ein Werkzeug zum Archivieren, oft mit einer Komprimierung wie gzip.\n\n"
    "- Erstelle ein Archiv und schreibe es in eine Datei:\n\n`tar cf target.tar file1 file2`\n\n"
    "- Entpacke ein Archiv:\n\n`tar xf source.tar`\n",
    # Short and about tar archives: bm25 ranks it above tar.md, which is asked for by name.
    "man/tar-split.md": "# tar-split\n\n> Split tar archives into tar files.\n\n`tar-split archive.tar`\n",
    # The query "move and rename files in bulk" is a line of the first; the second, a bit
    # shorter, holds its words in another order.
    "tools/batch.md": "# batch\n\n> Move and rename files in bulk.\n\n- Use a pattern:\n\n`batch '*.old' '#1.new'`\n",
    "tools/mover.md": "# mover\n\n> Move or rename files in bulk.\n\n- Use a glob:\n\n`mover '*.a'`\n",
    # A pasted description, "This tool is a shortcut for `,`": its words beside the stopwords
    # ("tool", "shortcut") are all over the page about shortcuts; the line itself, word for
    # word, is in the comma page (and, with another command, in the bundle page).
    "tools/shortcut.md": "# shortcut\n\n> Make shortcuts: short words that stand for longer tool commands.\n\n"
    "- List every shortcut:\n\n`shortcut`\n\n- Make a shortcut for a tool:\n\n"
    "`shortcut name=tool`\n\n- Remove a shortcut:\n\n`unshortcut name`\n",
    "tools/comma.md": "# comma\n\n> This tool is a shortcut for `,`.\n\n- See the original tool's page:\n\n`help ,`\n",
    "tools/bundle.md": "# bundle\n\n> This tool is a shortcut for `bundler`.\n\n"
    "- See the original tool's page:\n\n`help bundler`\n",
    # Three passages about herons, far apart.
    "herons.md": "# Field diary\n\n"
    + "\n\n".join(
        [
            f"Day {d}: the herons came back to the reeds at dawn." + "\n\nNothing else to note today." * 6
            for d in (1, 2, 3)
        ]
    )
    + "\n",
}


@pytest.fixture(scope="module")
def idx(tmp_path_factory):
    with running_gnod() as (env, d):
        root = write_tree(str(tmp_path_factory.mktemp("notes")), DOCS)
        copy = write_tree(str(tmp_path_factory.mktemp("copy")), {"deploying.md": DOCS["deploying.md"]})
        cli_json("collection", "add", root, "--name", "notes", "--json", env=env)
        cli_json("collection", "add", copy, "--name", "copy", "--json", env=env)
        yield SimpleNamespace(env=env, daemon=d)


def search(env, *args: str) -> dict:
    return cli_json("search", *args, "--json", env=env)


def paths(res: dict) -> list[str]:
    return [f"{h['collection']}/{h['path']}" for h in res["hits"]]


# --- query languages -----------------------------------------------------------------------


def test_a_language_of_one_page_in_thirty_does_not_stem_queries(idx):
    res = search(idx.env, "flamingo")
    assert res["languages"] == ["english"]
    # Basque stemming ("fla") would have matched the `fla.sh` of flash.md.
    assert sorted(paths(res)) == ["notes/birds.md", "notes/lagoon.md"]
    # The Basque page is still found by its own words.
    assert paths(search(idx.env, "katuak"))[:1] == ["notes/eu/katua.md"]


def test_a_clearly_written_query_is_stemmed_in_its_own_language(idx):
    res = search(idx.env, "katuak goizean lo egiten du eta gero lorategira joaten da")
    assert res["languages"][0] == "basque"
    assert paths(res)[:1] == ["notes/eu/katua.md"]


def test_an_unsure_short_page_takes_the_collections_language(idx):
    ls = cli_json("ls", "notes", "--json", env=idx.env)
    langs = {e["path"]: e["language"] for e in ls["entries"]}
    assert langs["unsure.md"] == "english"  # detected (unsure): French
    assert langs["eu/katua.md"] == "basque"  # a clear verdict stays
    # English stems meet it now: "kinases" → "kinas", "assay" → "assay".
    assert paths(search(idx.env, "kinases assay"))[:1] == ["notes/unsure.md"]


def _binding(maintainer: str) -> str:
    """A device tree binding's YAML: property after property, one line of English."""
    props = ["reg", "interrupts", "clocks", "clock-names", "dmas", "dma-names", "resets", "reset-names", "sram"]
    lines = ["%YAML 1.2", "---", "title: ACME DMA Controller", "", "maintainers:", f"  - {maintainer}", ""]
    lines += ["properties:", "  compatible:", "    const: acme,dmac", ""]
    for i in range(110):
        lines += [f"  {props[i % len(props)]}-{i}:", f"    maxItems: {i % 4 + 1}", ""]
    return "\n".join(lines) + "\n"


def test_a_config_file_takes_its_collections_language_whatever_the_detector_says(tmp_path):
    """A long YAML file of keys, with one maintainer's Polish name, was stemmed in Polish
    (the detector was sure, and 3,000 characters made any verdict stick): `controllers`
    missed its "Controller", which English stems meet."""
    docs = {
        "bindings/acme,dmac.yaml": _binding("Rafał Miłecki <rafal@example.org>"),
        **{f"notes/{t}.md": NOTES[f"notes/{t}.md"] for t in TOPICS[:6]},
    }
    with running_gnod() as (env, _):
        cli_json("collection", "add", write_tree(str(tmp_path), docs), "--name", "dt", "--json", env=env)
        ls = cli_json("ls", "dt", "--json", env=env)
        assert {e["path"]: e["language"] for e in ls["entries"]}["bindings/acme,dmac.yaml"] == "english"
        assert paths(search(env, "dma controllers")) == ["dt/bindings/acme,dmac.yaml"]


def test_the_page_asked_for_by_name_in_the_collections_language_comes_first(idx):
    res = search(idx.env, "tar", "-c", "notes")
    langs = {h["path"]: h["language"] for h in res["hits"]}
    assert langs == {
        "man/tar.md": "english",
        "man/tr/tar.md": "turkish",
        "man/de/tar.md": "german",
        "man/tar-split.md": "english",
    }
    assert paths(res)[:2] == ["notes/man/tar.md", "notes/man/tar-split.md"]
    # bm25 alone ranks the shorter pages first: the preferences only break near-ties.
    bm25 = {h["path"]: h["bm25"] for h in res["hits"]}
    assert bm25["man/tar.md"] > bm25["man/tar-split.md"]
    assert bm25["man/tar.md"] > min(bm25["man/tr/tar.md"], bm25["man/de/tar.md"])


def test_the_page_holding_the_query_as_a_phrase_comes_first(idx):
    # The terms alone (move, rename, files, bulk) rank the shorter page first; its stopwords
    # are searched in the phrase the query says, which one page holds.
    res = search(idx.env, "move and rename files in bulk", "-c", "notes")
    assert paths(res)[:2] == ["notes/tools/batch.md", "notes/tools/mover.md"]
    assert res["terms"][-1] == '"move and rename files in bulk"'
    assert res["dropped_stopwords"] == ["and", "in"]
    bm25 = {h["path"]: h["bm25"] for h in res["hits"]}
    assert bm25["tools/batch.md"] < bm25["tools/mover.md"]  # bm25 is negative: lower is better


def test_the_query_s_words_in_order_in_another_form_count_as_its_phrase(tmp_path):
    """A technical writer asked for `write devicetree binding`: the guide titled
    "Writing Devicetree bindings" came 38th, after short binding files holding the words
    apart, as only the words as typed counted as the phrase. The words in order, in any
    of their forms, are the phrase."""
    files = {
        f"notes/n{i}.md": f"# Note {i}\n\nThe kettle and the garden number {i} are fine today.\n" for i in range(30)
    }
    for i in range(6):
        files[f"bindings/dev{i}.yaml"] = (
            f"# dev{i}\n\nBinding of device {i}: a devicetree binding. Its driver may write, and write again, "
            f"to the register. Devicetree node: dev{i}.\n"
        )
    files["bindings/writing-guide.rst"] = (
        "Writing Devicetree bindings\n===========================\n\nA binding describes the hardware of a board.\n"
        + "Keep it stable, review it before it is merged, and document every property it has.\n"
    )
    with running_gnod() as (env, _):
        cli_json("collection", "add", write_tree(str(tmp_path), files), "--name", "dt", "--json", env=env)
        res = search(env, "write devicetree binding")
        bm25 = {h["path"]: h["bm25"] for h in res["hits"]}
        assert paths(res)[0] == "dt/bindings/writing-guide.rst"
        assert bm25["bindings/writing-guide.rst"] > bm25["bindings/dev0.yaml"]  # bm25 alone: behind (negative)


def test_a_longer_phrase_counts_for_more(idx):
    # Six words in order, four of them stopwords the terms leave out: the two pages holding
    # the line come first although bm25 over the terms prefers the page about shortcuts.
    res = search(idx.env, "This tool is a shortcut for `,`", "-c", "notes")
    assert paths(res)[:3] == ["notes/tools/comma.md", "notes/tools/bundle.md", "notes/tools/shortcut.md"]
    bm25 = {h["path"]: h["bm25"] for h in res["hits"]}
    assert bm25["tools/shortcut.md"] > bm25["tools/comma.md"]
    # Without its stopwords the phrase is a question's words: the page about shortcuts first.
    assert paths(search(idx.env, "tool shortcut", "-c", "notes"))[0] == "notes/tools/shortcut.md"


def test_the_results_do_not_depend_on_how_many_are_asked_for(tmp_path):
    # 150 pages hold "lantern" in their file name, title and body; the one named "lantern"
    # only in its name and title, and has a longer body, so bm25 alone ranks it last of 151,
    # within reach of the name preference.
    docs = {f"lantern-{i:03}.md": f"# lantern {i:03}\n\nA lantern note for the hall.\n" for i in range(150)}
    docs |= {f"other-{i:03}.md": f"# other {i:03}\n\nA note about the garden.\n" for i in range(300)}
    docs["lantern.md"] = "# lantern\n\nThe lamp we keep by the door, with the boots.\n"
    with running_gnod() as (env, _):
        cli_json("collection", "add", write_tree(str(tmp_path), docs), "--name", "many", "--json", env=env)
        every = search(env, "lantern", "-n", "300")
        assert len(every["hits"]) == 151
        assert max(every["hits"], key=lambda h: h["bm25"])["path"] == "lantern.md"  # negative: max is worst
        assert paths(every)[0] == "many/lantern.md"
        for n in (1, 5, 20):
            assert paths(search(env, "lantern", "-n", str(n))) == paths(every)[:n]


# A long file named after what it holds: its bm25 for a question about that is a little
# below a short note's that only mentions it.
FORK_C = (
    "/* fork.c: how a process is copied when it forks. */\n\n"
    + "".join(f"static int copy_part_{i}(struct task *t) {{ return duplicate(t->part[{i}]); }}\n" for i in range(40))
    + "int do_fork(void) { return copy_process(current); }\n"
)
FORK_NOTES = {
    "kernel/fork.c": FORK_C,
    "notes/faq.md": "# Questions\n\nWhen a process forks, the child gets a copy of the "
    "address space and of the open files, and both run on from the same place.\n\n"
    + "".join(f"Another question, number {i}, and its answer.\n" for i in range(12)),
}
STYLE_NOTES = {
    "doc/coding-style.rst": "Coding style\n============\n\n"
    + "".join(f"Rule {i}: indent with tabs, keep lines short and name things plainly.\n" for i in range(20)),
    "notes/review.md": "# Review\n\nCheck the coding style of a kernel patch before sending it out.\n\n"
    + "".join(f"Step {i} of the review comes next.\n" for i in range(12)),
}

WRITEBACK_NOTES = {
    "mm/page-writeback.c": "/* page-writeback.c: writing back the dirty pages of the page cache. */\n\n"
    + "".join(f"static void writeback_part_{i}(struct page *p) {{ start(p->part[{i}]); }}\n" for i in range(40)),
    "notes/io.md": "# Disks\n\nThe page cache writeback thread wakes when a page is dirty for long.\n\n"
    + "".join(f"Another question, number {i}, and its answer.\n" for i in range(12)),
}


# A long file named after what it implements, which says "implementation" once: its bm25
# for the question is far below that of short notes holding both words (kernel/workqueue.c
# came 26th for "workqueue implementation" while a name only lifted bm25 by a tenth).
WORKQUEUE_NOTES = {
    "kernel/workqueue.c": "/* workqueue.c: the implementation of queued work. */\n\n"
    + "".join(
        f"static void worker_step_{i}(struct worker *w) {{ process_one(w, w->pool->items[{i}]); }}\n"
        for i in range(150)
    )
    + "".join(f"void queue_item_{i}(struct workqueue_struct *wq) {{ insert(wq, {i}); }}\n" for i in range(150)),
    **{
        f"notes/n{i}.md": f"# Note {i}\n\nThe implementation of driver {i} defers its interrupt work to a workqueue.\n"
        for i in range(3)
    },
    # Named after the other word: the query asks for two names.
    "docs/implementation.md": "# Implementation\n\nThe plan, step by step.\n",
    # Where few documents hold the word, as in a source tree.
    **NOTES,
    **{f"misc/m{i}.md": f"# Entry {i}\n\nNothing about queues in entry number {i}.\n" for i in range(60)},
    **{f"misc/i{i}.md": f"# Plan {i}\n\nA note on the implementation of plan {i}.\n" for i in range(12)},
}


def test_a_long_file_named_after_a_word_of_the_question_passes_short_notes(tmp_path):
    with running_gnod() as (env, _):
        cli_json("collection", "add", write_tree(str(tmp_path), WORKQUEUE_NOTES), "--name", "wq", "--json", env=env)
        res = search(env, "workqueue implementation")
        bm25 = {h["path"]: h["bm25"] for h in res["hits"]}
        assert paths(res)[0] == "wq/kernel/workqueue.c"
        # bm25 alone puts it behind the notes, by more than a tenth (negative: more
        # negative is better).
        assert bm25["kernel/workqueue.c"] * 1.1 > bm25["notes/n0.md"]
        # Each document gets its own name's idf: workqueue.c is among the 4 documents
        # holding "workqueue".
        docs = len(WORKQUEUE_NOTES)
        credit = PIPELINE.lexical.name_match * math.log(1 + (docs - 4 + 0.5) / (4 + 0.5))
        note = next(h for h in res["hits"] if h["path"] == "notes/n0.md")
        assert note["score"] == pytest.approx(note["bm25"] / (bm25["kernel/workqueue.c"] - credit), abs=1e-6)


def test_a_file_named_after_part_of_the_question_comes_first(tmp_path):
    def added(name: str, docs: dict[str, str]) -> None:
        cli_json("collection", "add", write_tree(str(tmp_path / name), docs), "--name", name, "--json", env=env)

    with running_gnod() as (env, _):
        added("one", FORK_NOTES)
        res = search(env, "what happens when a process forks", "-c", "one")
        assert paths(res)[:2] == ["one/kernel/fork.c", "one/notes/faq.md"]
        bm25 = {h["path"]: h["bm25"] for h in res["hits"]}
        assert bm25["notes/faq.md"] < bm25["kernel/fork.c"]  # negative: bm25 alone puts the note first
        # Named after two of its words: a run of them.
        added("style", STYLE_NOTES)
        res = search(env, "kernel coding style", "-c", "style")
        assert paths(res)[:2] == ["style/doc/coding-style.rst", "style/notes/review.md"]
        bm25 = {h["path"]: h["bm25"] for h in res["hits"]}
        assert bm25["notes/review.md"] < bm25["doc/coding-style.rst"]
        # Named after two of its words with another between them (before a note holding
        # the three as typed: mm/page-writeback.c came 32nd on the kernel tree).
        added("wb", WRITEBACK_NOTES)
        res = search(env, "page cache writeback", "-c", "wb")
        assert paths(res)[:2] == ["wb/mm/page-writeback.c", "wb/notes/io.md"]
        # A name more files have than name_part_files_max names none of them in particular.
        added(
            "two",
            {**FORK_NOTES, **{f"arch/a{i:02}/fork.c": FORK_C for i in range(PIPELINE.lexical.name_part_files_max)}},
        )
        res = search(env, "what happens when a process forks", "-c", "two")
        assert paths(res)[0] == "two/notes/faq.md"


# --- exact forms first ------------------------------------------------------------------------


def test_the_exact_form_ranks_first_and_stemming_still_finds_inflections(idx):
    res = search(idx.env, "deploying", "-c", "notes")
    assert paths(res) == ["notes/deploying.md", "notes/deployed.md"]
    res = search(idx.env, "deployed", "-c", "notes")
    assert paths(res) == ["notes/deployed.md", "notes/deploying.md"]


# --- honest scores ------------------------------------------------------------------------------


def test_scores_are_relative_to_the_best_hit_and_the_last_is_not_zero(idx):
    res = search(idx.env, "deploying")
    hits = res["hits"]
    assert len(hits) == 3
    # The same file in two collections: the same score.
    by_path = {p: h["score"] for p, h in zip(paths(res), hits)}
    assert by_path["notes/deploying.md"] == by_path["copy/deploying.md"] == 1.0
    last = hits[-1]
    assert 0 < last["score"] < 1
    # As docs/protocol.md says: English pages in an English query's results are preferred,
    # and deploying.md is named as the query, which gets the idf of its word (both copies
    # hold "deploying" as typed).
    lex = PIPELINE.lexical
    docs = cli_json("status", "--json", env=idx.env)["documents"]
    credit = lex.name_match * math.log(1 + (docs - 2 + 0.5) / (2 + 0.5))
    best = hits[0]["bm25"] * (1 + lex.language_prior) - credit
    assert last["score"] == pytest.approx(last["bm25"] * (1 + lex.language_prior) / best, abs=1e-6)


def test_min_score_keeps_the_meaning_of_the_scores(idx):
    every = search(idx.env, "deploying lagoon")["hits"]
    cut = every[len(every) // 2]["score"]
    some = search(idx.env, "deploying lagoon", "--min-score", str(cut))["hits"]
    assert some == [h for h in every if h["score"] >= cut]
    assert len(some) < len(every)


# --- long queries ----------------------------------------------------------------------------


def test_a_query_past_the_term_cap_keeps_its_rarest_terms_and_says_so(idx):
    words = [f"zzq{i}," for i in range(90)] + ["the", "flamingos", "lagoon", "note", "herons"]
    res = search(idx.env, " ".join(words))
    assert paths(res)[:2] == ["notes/lagoon.md", "notes/birds.md"]
    assert len(res["notes"]) == 1
    assert "64 rarest" in res["notes"][0] and "left out 31" in res["notes"][0]
    # As words (no pasted commas), the ones that would have counted before the function words.
    assert "left out 31 (zzq60, zzq61, zzq62, " in res["notes"][0] and "the" not in res["notes"][0].split("(")[1]
    # The stopword goes first, then words found in no page (they match nothing).
    assert {"flamingos", "lagoon", "note", "herons"} <= set(res["terms"])
    assert len(res["terms"]) == 64 and "the" not in res["terms"]


def test_a_pasted_page_is_a_query(idx):
    paragraph = (
        "Why do the flamingos stand in the lagoon, and what do the herons wait for? "
        "I read about it in a note last week. "
    ) * 180
    assert 16_000 < len(paragraph) < 32_000
    res = search(idx.env, paragraph)
    assert paths(res)[:1] == ["notes/birds.md"]
    assert res["notes"] == []  # few distinct words: nothing left out

    r = _run_cli("search", "x" * 32_001, "--json", env=idx.env)
    assert r.returncode == 2
    err = json.loads(r.stdout)["error"]
    assert "32000" in err["message"].replace(",", "")


# --- filters ----------------------------------------------------------------------------------


def _dated(tags: str, date: str, body: str) -> str:
    return f"---\ntags: [{tags}]\ndate: {date}\n---\n# Runbook\n\n{body}\n"


@pytest.fixture(scope="module")
def filtered(tmp_path_factory):
    with running_gnod() as (env, _d):
        files = {
            "ops/new.md": _dated(
                "ops, infra",
                "2024-03-01",
                "How we deploy the gateway, step by step, "
                "with many more words around the one mention of the task at hand.",
            ),
            "ops/old.md": _dated("ops", "2023-05-01", "The old way to deploy."),
            "notes/undated.md": "# Notes\n\nWe deploy on Tuesdays.\n",
            "de/anleitung.md": "# Anleitung\n\nSo wird der Dienst auf unseren Servern bereitgestellt, "
            "und danach wird die Datenbank geprüft: deploy.\n",
        }
        # Words that are also the frontmatter's keys, in the text of two pages.
        files.update({f"misc/{i}.md": f"# Photos {i}\n\nThe date and the tags of each photo.\n" for i in range(2)})
        # Many short pages that match "deploy" better than ops/new.md does.
        files.update({f"crowd/{i}.md": f"# Deploy {i}\n\ndeploy deploy\n" for i in range(30)})
        root = write_tree(str(tmp_path_factory.mktemp("filtered")), files)
        stamp = 1641038400  # 2022-01-01 12:00 UTC
        os.utime(os.path.join(root, "notes", "undated.md"), (stamp, stamp))
        cli_json("collection", "add", root, "--name", "f", "--json", env=env)
        yield SimpleNamespace(env=env)


def test_tags_filter_inside_the_index_query(filtered):
    # Unfiltered, ops/new.md is far below the first 20; -n 1 --tag still returns it.
    assert "ops/new.md" not in [h["path"] for h in search(filtered.env, "deploy", "-n", "20")["hits"]]
    assert [h["path"] for h in search(filtered.env, "deploy", "-n", "1", "--tag", "infra")["hits"]] == ["ops/new.md"]
    both = search(filtered.env, "deploy", "--tag", "ops")
    assert sorted(h["path"] for h in both["hits"]) == ["ops/new.md", "ops/old.md"]
    assert [h["path"] for h in search(filtered.env, "deploy", "--tag", "OPS", "--tag", "infra")["hits"]] == [
        "ops/new.md"
    ]


def test_tags_are_searchable_as_words(filtered):
    assert [h["path"] for h in search(filtered.env, "infra")["hits"]] == ["ops/new.md"]


def test_date_filters_use_frontmatter_then_mtime(filtered):
    def found(*args: str) -> set[str]:
        return {h["path"] for h in search(filtered.env, "deploy", "-n", "100", *args)["hits"]}

    assert found("--until", "2023-12-31") == {"ops/old.md", "notes/undated.md"}
    assert found("--since", "2023-01-01", "--until", "2024-12-31") == {"ops/new.md", "ops/old.md"}
    assert "notes/undated.md" not in found("--since", "2022-01-02")
    assert found("--since", "2022-01-01", "--until", "2022-01-01") == {"notes/undated.md"}
    # Days as git reads them, counted back from today (the dated pages are older, the rest new).
    two_weeks_ago = (datetime.date.today() - datetime.timedelta(days=14)).isoformat()
    new = {f"crowd/{i}.md" for i in range(30)} | {"de/anleitung.md"}
    assert found("--since", "2 weeks ago") == found("--since", two_weeks_ago) == new
    assert found("--until", "1.year.ago") == {"ops/new.md", "ops/old.md", "notes/undated.md"}


def test_path_and_language_filters(filtered):
    assert {h["path"] for h in search(filtered.env, "deploy", "--path", "ops/*")["hits"]} == {
        "ops/new.md",
        "ops/old.md",
    }
    assert [h["path"] for h in search(filtered.env, "deploy", "--lang", "de")["hits"]] == ["de/anleitung.md"]
    assert [h["path"] for h in search(filtered.env, "deploy", "--lang", "german")["hits"]] == ["de/anleitung.md"]


def test_filters_that_leave_no_document_say_so(filtered):
    """An empty result under filters that no indexed document passes says so: else it reads
    as "the words are not there" (a file type that is not indexed, a typo in the path)."""

    def nothing(*args: str) -> dict:
        res = cli_json("search", *args, "--json", env=filtered.env, expect=1)
        assert res["hits"] == []
        return res

    assert nothing("deploy", "--path", "*.dts", "--tag", "ops")["notes"] == [
        "no indexed document passes the filters (tag ops, path *.dts), whatever the query"
    ]
    assert nothing("zebra", "--path", "ops/*")["notes"] == []  # documents pass; the word is not there
    assert nothing("zebra")["notes"] == []


def test_bad_filters_are_clear_errors(filtered):
    for args, words in (
        (["--lang", "klingon"], "unknown language"),
        (["--since", "2024-02-01", "--until", "2024-01-01"], "after"),
        # Each of these would silently match nothing.
        (["--since", "2024-13-01"], "not a day of the calendar"),
        (["--until", "2024-02-30"], "not a day of the calendar"),
        (["--path", "[abc"], "does not close"),
        (["--tag", ""], "tag: empty"),
    ):
        r = _run_cli("search", "deploy", *args, "--json", env=filtered.env)
        assert r.returncode == 2, r.stderr
        err = json.loads(r.stdout)["error"]
        assert err["code"] == "INVALID_PARAMS" and words in err["message"], err
    # A day gnoctl cannot read is refused before it is sent, with the forms it reads.
    r = _run_cli("search", "deploy", "--since", "someday", "--json", env=filtered.env)
    assert r.returncode == 2 and "'someday' is not a day" in r.stderr and "3.days.ago" in r.stderr, r.stderr


# --- highlighting and passages per document ------------------------------------------------------


def test_json_snippets_give_the_offsets_of_matched_words(idx):
    hits = search(idx.env, "deploying", "-c", "notes")["hits"]
    for h in hits:
        snip = h["snippet"]
        words = [snip["text"][a:b] for a, b in snip["matches"]]
        # The typed form, and its inflection through the stem.
        assert words == (["deploying"] if h["path"] == "deploying.md" else ["deployed"]), snip
    assert hits[0]["snippets"] == []  # one passage unless asked for more


def test_markdown_and_terminal_mark_the_matched_words(idx):
    r = _run_cli("search", "deploying", "-c", "notes", "--md", env=idx.env)
    assert r.returncode == 0
    assert "| The team is **deploying** the new billing service" in r.stdout
    assert "The team **deployed** the service." in r.stdout
    code, out = run_cli_tty("search", "deploying", "-c", "notes", env=idx.env)
    assert code == 0
    assert "The team is \x1b[1mdeploying\x1b[22m the new billing service" in out


def test_per_doc_gives_several_passages_best_first(idx):
    hit = search(idx.env, "herons reeds dawn", "--per-doc", "3")["hits"][0]
    assert hit["path"] == "herons.md"
    lines = [s["line"] for s in hit["snippets"]]
    assert len(lines) == 3 and lines == sorted(lines)  # equally good: in document order
    assert hit["snippet"] == hit["snippets"][0]
    for snip in hit["snippets"]:
        assert snip["text"].startswith("Day ") and len(snip["matches"]) == 3
    assert len(search(idx.env, "herons", "--per-doc", "2")["hits"][0]["snippets"]) == 2
    # Every format shows them: vimgrep and csv a line each (a place to jump to), md and xml all.
    args = ("search", "herons reeds dawn", "-c", "notes", "-n", "1", "--per-doc", "3")
    jumps = _run_cli(*args, "--vimgrep", env=idx.env).stdout.splitlines()
    assert [int(j.split(":")[1]) for j in jumps] == lines and all(j.endswith("at dawn.") for j in jumps)
    rows = list(csv.reader(io.StringIO(_run_cli(*args, "--csv", env=idx.env).stdout)))[1:]
    assert [r[4] for r in rows] == [str(n) for n in lines]
    assert _run_cli(*args, "--md", env=idx.env).stdout.count("**herons**") == 3
    assert _run_cli(*args, "--xml", env=idx.env).stdout.count("<snippet ") == 3


def test_query_previews_mark_the_matched_words(idx):
    res = cli_json("query", "deploying", "-c", "notes", "--no-expand", "--no-rerank", "--json", env=idx.env)
    top = res["hits"][0]
    assert top["path"] == "deploying.md"
    text = top["preview"]["text"]
    assert [text[a:b] for a, b in top["preview"]["matches"]] == ["deploying"]
    # Function words are left out of the marks, as search leaves them out of the terms.
    res = cli_json("query", "the team is deploying", "-c", "notes", "--no-expand", "--no-rerank", "--json", env=idx.env)
    top = next(h for h in res["hits"] if h["path"] == "deploying.md")
    text = top["preview"]["text"]
    assert sorted({text[a:b].lower() for a, b in top["preview"]["matches"]}) == ["deploying", "team"]


# --- similar ------------------------------------------------------------------------------------


def test_similar_without_vectors_searches_the_documents_rarest_words(idx):
    res = cli_json("similar", "notes/birds.md", "--json", env=idx.env)
    assert res["method"] == "terms" and res["uri"] == "gno://notes/birds.md"
    assert {"flamingos", "lagoon"} <= set(res["terms"])
    assert "the" not in res["terms"]
    paths = [h["path"] for h in res["hits"]]
    assert paths[0] == "lagoon.md" and "birds.md" not in paths
    assert any("no vectors" in n for n in res["notes"])
    # Filters hold (nothing passing: exit 1, as no match); an unknown document is NOT_FOUND (exit 2).
    assert cli_json("similar", "notes/birds.md", "--path", "nothing/*", "--json", env=idx.env, expect=1)["hits"] == []
    r = _run_cli("similar", "notes/nope.md", "--json", env=idx.env)
    assert r.returncode == 2 and json.loads(r.stdout)["error"]["code"] == "NOT_FOUND"
    r = _run_cli("similar", "notes/birds.md", "--files", env=idx.env)
    assert r.returncode == 0 and r.stdout.splitlines()[0].endswith("/lagoon.md")
    # Human text on a pipe when asked, as search gives it.
    r = _run_cli("similar", "notes/birds.md", "--human", env={**idx.env, "NO_COLOR": "1"})
    assert r.returncode == 0 and "lagoon.md" in r.stdout and not r.stdout.lstrip().startswith("{"), r.stdout
    # The terminal options search takes: colour forced on a pipe, no pager.
    r = _run_cli("similar", "notes/birds.md", "--human", "--color", "always", "--no-pager", env=idx.env)
    assert r.returncode == 0 and "\x1b[" in r.stdout and "lagoon.md" in r.stdout, r.stderr


def test_similar_reads_the_indexed_text_not_the_frontmatter_keys(filtered):
    res = cli_json("similar", "f/ops/old.md", "--json", env=filtered.env)
    assert res["method"] == "terms"
    assert "ops" in res["terms"]  # a tag: indexed as a word
    assert not {"tags", "date"} & set(res["terms"]), res["terms"]
    assert res["hits"][0]["path"] == "ops/new.md"


def test_similar_leaves_out_identical_copies_and_names_them(idx):
    """A drafts folder's copies were left out without a word, where which files are
    copies is what a person asking `similar` there wants to know."""
    res = cli_json("similar", "copy/deploying.md", "--json", env=idx.env)
    assert all(h["path"] != "deploying.md" for h in res["hits"])
    assert res["hits"][0]["path"] == "deployed.md"
    assert res["copies"] == ["gno://notes/deploying.md"]
    assert "1 identical copy (the same text) left out: notes/deploying.md" in res["notes"]
    r = _run_cli("similar", "copy/deploying.md", "--human", env={**idx.env, "NO_COLOR": "1"})
    assert "1 identical copy (the same text) left out: notes/deploying.md" in r.stdout + r.stderr
    assert cli_json("similar", "notes/birds.md", "--json", env=idx.env)["copies"] == []


# --- gnoctl bench --------------------------------------------------------------------------------


def test_bench_scores_the_users_fixture_per_mode(idx, tmp_path):
    fixture = {
        "collections": ["notes"],
        "queries": [
            {"query": "deployed", "relevant": ["notes/deploying.md"]},  # second: MRR 0.5
            {"query": "katuak", "relevant": {"gno://notes/eu/katua.md": 2}},  # first
        ],
    }
    path = tmp_path / "fixture.json"
    path.write_text(json.dumps(fixture))
    res = cli_json("bench", str(path), "--json", env=idx.env)
    assert res["fixture"] == str(path) and res["k"] == 10
    by_mode = {m["mode"]: m for m in res["modes"]}
    search_ = by_mode["search"]
    assert (search_["queries"], search_["failed"]) == (2, 0)
    assert search_["mrr@10"] == 0.75 and search_["recall@10"] == 1.0
    assert search_["ndcg@10"] == pytest.approx((1 / math.log2(3) + 1) / 2, abs=1e-4)
    assert search_["p50_ms"] > 0 and search_["p95_ms"] >= search_["p50_ms"]
    assert "vector" in by_mode["vsearch"]["skipped"]  # no embedding model here
    assert by_mode["query"]["mrr@10"] == 0.75  # lexical only, without models

    yaml_path = tmp_path / "fixture.yaml"
    yaml_path.write_text("collections: [notes]\nqueries:\n  - query: katuak\n    relevant: eu/katua.md\n")
    res = cli_json("bench", str(yaml_path), "--mode", "search", "-k", "1", "--json", env=idx.env)
    assert [(m["mode"], m["mrr@10"], m["recall@1"]) for m in res["modes"]] == [("search", 1.0, 1.0)]
    assert res["missing"] == []


def test_bench_names_expected_documents_the_index_does_not_hold(idx, tmp_path):
    path = tmp_path / "typos.json"
    path.write_text(
        json.dumps(
            {
                "queries": [
                    {
                        "query": "katuak",
                        "relevant": ["notes/eu/katua.md", "notes/eu/KATUA.md", "nope/x.md", "eu/katua.md"],
                    }
                ]
            }
        )
    )
    res = cli_json("bench", str(path), "--mode", "search", "--json", env=idx.env)
    assert res["missing"] == ["notes/eu/KATUA.md", "nope/x.md"]
    code, out = run_cli_tty("bench", str(path), "--mode", "search", env=idx.env)
    assert code == 0
    assert (
        "warning: 2 expected documents are not in the index and count as not found: notes/eu/KATUA.md, nope/x.md" in out
    )
    piped = _run_cli("bench", str(path), "--mode", "search", "--human", env=idx.env)  # as every command takes it
    assert piped.returncode == 0 and "count as not found" in piped.stdout and not piped.stdout.startswith("{")


def test_bench_rejects_a_broken_fixture(idx, tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"queries": [{"query": "x"}]}')
    r = _run_cli("bench", str(path), "--json", env=idx.env)
    assert r.returncode == 2
    err = json.loads(r.stdout)["error"]
    assert err["code"] == "INVALID_PARAMS" and "relevant" in err["message"]


def test_passages_of_a_name_of_code_hold_the_name(tmp_path):
    """`search spin_lock_irqsave --per-doc 10` filled the passages holding the name with
    others holding only its words (`spin_unlock_irqrestore(&key->lock…`): where some
    passages hold the name, the others are left out."""
    body = "\n\n".join(
        [
            "static void take(struct key *key)\n{\n\tspin_lock_irqsave(&key->lock, flags);\n}",
            *(
                f"static void drop_{i}(struct key *key)\n{{\n\tspin_unlock_irqrestore(&key->lock, flags);\n}}"
                for i in range(4)
            ),
            "static void again(struct key *key)\n{\n\tspin_lock_irqsave(&key->lock, fl2);\n}",
        ]
    )
    with running_gnod() as (env, _):
        cli_json(
            "collection", "add", write_tree(str(tmp_path), {"net/key.c": body + "\n"}), "--name", "k", "--json", env=env
        )
        hit = search(env, "spin_lock_irqsave", "--per-doc", "10")["hits"][0]
        assert [s["text"].count("spin_lock_irqsave") for s in hit["snippets"]] == [1, 1]
        # Words, not a name: every passage holding them.
        hit = search(env, "spin lock", "--per-doc", "10")["hits"][0]
        assert len(hit["snippets"]) == 6


def test_a_word_typed_in_an_inflected_form_counts_once_where_a_line_holds_it(tmp_path):
    """`who reported the login timeout` showed a known-issues table's header row ("Reported |
    Reported by customer"), not the row holding `login timeout`: `reported` is a term as
    typed and its stem `report`, and the header counted as two words of the query."""
    table = "\n".join(
        [
            "| ID | Summary | Reported | Reported by |",
            "| --- | --- | --- | --- |",
            "| KI-101 | Sync conflict on reordered entries | 2025-01-20 | Northgate |",
            "| KI-118 | Login timeout behind proxies | 2025-10-08 | Pinecrest |",
        ]
    )
    with running_gnod() as (env, _):
        cli_json(
            "collection", "add", write_tree(str(tmp_path), {"known.md": table + "\n"}), "--name", "k", "--json", env=env
        )
        for query in ("who reported the login timeout", "reported login timeout"):
            snippet = search(env, query)["hits"][0]["snippet"]
            assert snippet["text"].partition("\n")[0].startswith("| KI-118 | Login timeout"), query
