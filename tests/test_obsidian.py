"""An Obsidian vault's Excluded files (`userIgnoreFilters` in `.obsidian/app.json`) are
left out, as Obsidian's search leaves them out: a vault's templates were the first hits
of `meeting notes`, and in `ls --tag daily`, where Obsidian's own search showed none."""

from __future__ import annotations

import json
import os

from conftest import cli_json, running_gnod, write_tree
from gnod.ingest.obsidian import excluded_globs, vault_root

SETTINGS = {"userIgnoreFilters": ["Templates/", "Archive/old", "/.*\\.excalidraw\\.md/", "", 3, "Odd [x]"]}
VAULT = {
    "Templates/Meeting Template.md": "# {{title}}\n\n## Attendees\n\nmeeting notes\n",
    "Archive/old-plan.md": "# Old plan\n\nmeeting notes\n",
    "Archive/oldies/song.md": "# Song\n\nmeeting notes\n",
    "Archive/new-plan.md": "# New plan\n\nmeeting notes\n",
    "Meetings/2026-11-03 Kickoff.md": "# Meeting notes\n\nKickoff.\n",
    "Odd [x].md": "# Odd\n\nmeeting notes\n",
    "Board.excalidraw.md": "# Text Elements\n\nmeeting notes\n",  # a regular expression: not read
}


def _vault(root: str, settings: object = SETTINGS) -> str:
    write_tree(root, {**VAULT, ".obsidian/app.json": json.dumps(settings)})
    return root


def test_excluded_files_are_globs_anchored_where_the_collection_is(tmp_path):
    vault = _vault(str(tmp_path / "vault"))
    assert vault_root(os.path.join(vault, "Archive")) == vault
    assert excluded_globs(vault) == ["/Templates/*", "/Archive/old*", "/Odd \\[x\\]*"]
    assert excluded_globs(os.path.join(vault, "Archive")) == ["/old*"]  # a collection inside the vault
    assert excluded_globs(os.path.join(vault, "Templates")) == []  # added as a collection: the user's choice
    assert excluded_globs(str(tmp_path)) == []  # above the vault: no vault
    write_tree(vault, {".obsidian/app.json": "{not json"})
    assert excluded_globs(vault) == []  # unreadable settings: nothing left out


def test_a_vault_s_excluded_files_are_not_indexed_and_get_says_why(tmp_path):
    vault = _vault(str(tmp_path / "vault"))
    with running_gnod() as (env, _d):
        cli_json("collection", "add", vault, "--name", "v", "--json", env=env)
        found = cli_json("search", "meeting notes", "-n", "50", "--json", env=env)
        paths = sorted(h["path"] for h in found["hits"])
        assert paths == [
            "Archive/new-plan.md",
            "Board.excalidraw.md",
            "Meetings/2026-11-03 Kickoff.md",
        ]
        error = cli_json("get", "v/Templates/Meeting Template.md", "--json", env=env, expect=2)["error"]
        assert "the Obsidian vault's Excluded files leave it out" in error["message"]
