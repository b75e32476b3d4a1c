"""Org mode notes (`.org`): their headlines and settings (gnod.text.org) give a note's
title, date, tags and sections, as a Markdown note's frontmatter and headings do."""

from __future__ import annotations

import json

from conftest import _run_cli, cli_json, running_gnod, write_tree
from gnod.text import org

NOTE = """\
# -*- mode: org -*- a comment, not a title
#+TITLE: Notes sur l'épistémologie
#+DATE: <2022-05-03 Tue>
#+FILETAGS: :fdm:dfg:

* TODO [#A] Datenmanagementplan abgeben                 :deadline:
Bis Ende Mai.
** Aufgaben
- Gliederung
#+BEGIN_SRC python
* not a headline: the block's text
#+END_SRC
* Citations :biblio:reading:
Bachelard, Canguilhem.
"""


def test_an_outline_reads_headlines_apart_from_keyword_priority_and_tags():
    found = org.outline(NOTE)
    assert found.headlines == [
        org.Headline(5, 1, "Datenmanagementplan abgeben", ("deadline",)),
        org.Headline(7, 2, "Aufgaben", ()),
        org.Headline(12, 1, "Citations", ("biblio", "reading")),
    ]
    assert found.settings["title"] == "Notes sur l'épistémologie"
    # Keywords a file names for itself; a word in capitals that is none stays in the title.
    custom = org.outline("#+TODO: NEXT(n) WAIT | DONE\n* NEXT Call\n* TODO list\n")
    assert [h.title for h in custom.headlines] == ["Call", "TODO list"]


def test_metadata_is_title_day_and_every_tag():
    assert org.metadata(NOTE) == {
        "title": "Notes sur l'épistémologie",
        "date": "2022-05-03",
        "tags": ["fdm", "dfg", "deadline", "biblio", "reading"],
    }
    assert org.metadata("#+filetags: alpha beta\n#+date: May 2022\n") == {"date": "May 2022", "tags": ["alpha", "beta"]}
    assert org.metadata("Just text.\n") == {}


def test_org_notes_have_titles_tags_dates_and_sections(tmp_path):
    """A tryout's Org notes were plain text: titled by their file names, no tag or date
    passed a filter, and `get note.org:Citations` said it had no headings."""
    root = write_tree(
        str(tmp_path / "notes"),
        {
            "epistemologie.org": NOTE,
            "kapitel.md": "# Kapitel\n\n## Chapter 3: Methods\n\nInterviews.\n\n## Chapter 4\n\nResults.\n",
        },
    )
    with running_gnod() as (env, _d):
        cli_json("collection", "add", root, "--name", "notes", "--json", env=env)
        listed = cli_json("ls", "--json", env=env)
        titles = {e["path"]: e["title"] for e in listed["entries"]}
        assert titles["epistemologie.org"] == "Notes sur l'épistémologie"
        for tag in ("fdm", "deadline", "reading"):
            paths = _run_cli("ls", "--tag", tag, "--files", env=env).stdout.split()
            assert [p.rsplit("/", 1)[-1] for p in paths] == ["epistemologie.org"], tag
        dated = _run_cli("ls", "--until", "2022-12-31", "--files", env=env).stdout.split()
        assert [p.rsplit("/", 1)[-1] for p in dated] == ["epistemologie.org"]
        doc = cli_json("get", "epistemologie.org:Citations", "--json", env=env)
        assert doc["content"] == "* Citations :biblio:reading:\nBachelard, Canguilhem.\n"
        doc = cli_json("get", "epistemologie.org#Datenmanagementplan abgeben", "--json", env=env)
        assert (doc["from_line"], doc["to_line"]) == (6, 12)  # the subtree, its block and all
        # A heading's name holding a colon (it read `kapitel.md:Chapter 3` as the file's name).
        doc = cli_json("get", "kapitel.md:Chapter 3: Methods", "--json", env=env)
        assert doc["content"] == "## Chapter 3: Methods\n\nInterviews.\n"
        r = _run_cli("get", "epistemologie.org:Nowhere", "--json", env=env)
        err = json.loads(r.stdout)["error"]
        assert r.returncode == 2 and err["details"]["headings"] == [
            "Datenmanagementplan abgeben",
            "Aufgaben",
            "Citations",
        ]
