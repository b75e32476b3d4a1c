"""The watcher against a real gnod and real filesystem events: saves, atomic renames,
deletes, directory renames, moves between collections, .gitignore and config edits.

Assertions wait (generously) for the index to converge; speed is measured in
benchmarks/freshness.py, not here."""

from __future__ import annotations

import os
import time

import pytest

from conftest import cli_json, start_gnod, wait_until

pytestmark = pytest.mark.timeout(120)
CONVERGE_S = 15.0


def paths(daemon, query: str, collection: str | None = None) -> list[str]:
    params = {"query": query, "limit": 50, "snippets": False}
    if collection:
        params["collections"] = [collection]
    return sorted(f"{h['collection']}/{h['path']}" for h in daemon.result("search", params)["hits"])


def eventually(daemon, query: str, expected: list[str], collection: str | None = None) -> None:
    assert wait_until(lambda: paths(daemon, query, collection) == expected, CONVERGE_S), (
        f"{query!r}: {paths(daemon, query, collection)} != {expected}"
    )


def write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def watched(daemon, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    daemon.result("collection.add", {"name": "notes", "path": str(notes)})
    return daemon, notes


def test_new_modified_deleted_file(watched):
    daemon, notes = watched
    write(notes / "a.md", "# A\n\nzebra crossing\n")
    eventually(daemon, "zebra", ["notes/a.md"])
    write(notes / "a.md", "# A\n\nnow about giraffes\n")
    eventually(daemon, "giraffes", ["notes/a.md"])
    eventually(daemon, "zebra", [])
    (notes / "a.md").unlink()
    eventually(daemon, "giraffes", [])


def test_editor_atomic_save(watched):
    daemon, notes = watched
    write(notes / "doc.md", "# Doc\n\nfirst draft about otters\n")
    eventually(daemon, "otters", ["notes/doc.md"])
    for i in range(3):  # write a temp file, then rename it over the original (vim, VS Code…)
        tmp = notes / f".doc.md.tmp{i}"
        tmp.write_text(f"# Doc\n\nrevision {i} about beavers{i}\n")
        os.replace(tmp, notes / "doc.md")
    eventually(daemon, "beavers2", ["notes/doc.md"])
    eventually(daemon, "otters", [])
    docs = daemon.result("ls", {"collection": "notes"})["entries"]
    assert [e["path"] for e in docs] == ["doc.md"]  # no temp file left indexed


def test_directory_rename_and_delete(watched):
    daemon, notes = watched
    for i in range(5):
        write(notes / "old" / f"f{i}.md", f"# F{i}\n\nwombat number {i}\n")
    eventually(daemon, "wombat", [f"notes/old/f{i}.md" for i in range(5)])
    (notes / "old").rename(notes / "new")
    eventually(daemon, "wombat", [f"notes/new/f{i}.md" for i in range(5)])
    for i in range(5):
        (notes / "new" / f"f{i}.md").unlink()
    (notes / "new").rmdir()
    eventually(daemon, "wombat", [])


def test_a_storm_of_changes_removes_what_is_gone_before_its_rescan(watched, tmp_path):
    """Past STORM_PATHS changed paths the watcher rescans the whole collection, which
    removes what is gone only when its walk is over: a folder renamed in a `git checkout`
    was found under both names meanwhile. What the events say is gone goes first."""
    daemon, notes = watched
    for i in range(5):
        write(notes / "old" / f"f{i}.md", f"# F{i}\n\nwombat number {i}\n")
    eventually(daemon, "wombat", [f"notes/old/f{i}.md" for i in range(5)])
    outside = tmp_path / "outside"
    for i in range(2500):
        write(outside / f"b{i:04d}.md", f"# B{i}\n\nburst item {i} tapir\n")
    (notes / "burst").mkdir()
    for i in range(2500):  # renames: one batch of events, a storm
        (outside / f"b{i:04d}.md").rename(notes / "burst" / f"b{i:04d}.md")
    (notes / "old").rename(notes / "zz")  # walked last
    assert wait_until(lambda: not any(p.startswith("notes/old/") for p in paths(daemon, "wombat")), CONVERGE_S)
    assert daemon.result("ls", {"prefix": "notes/burst/"})["total"] < 2500  # the rescan has not ended
    eventually(daemon, "wombat", [f"notes/zz/f{i}.md" for i in range(5)])
    assert wait_until(lambda: daemon.result("ls", {"prefix": "notes/burst/"})["total"] == 2500, CONVERGE_S)


def test_move_between_collections(watched, tmp_path):
    daemon, notes = watched
    other = tmp_path / "other"
    other.mkdir()
    daemon.result("collection.add", {"name": "other", "path": str(other)})
    write(notes / "m.md", "# M\n\nmigrating narwhal\n")
    eventually(daemon, "narwhal", ["notes/m.md"])
    (notes / "m.md").rename(other / "m.md")
    eventually(daemon, "narwhal", ["other/m.md"])


def test_gitignore_change_reevaluates(watched):
    daemon, notes = watched
    write(notes / "drafts" / "out.md", "# Out\n\nlemur output\n")
    write(notes / "keep.md", "# Keep\n\nlemur notes\n")
    eventually(daemon, "lemur", ["notes/drafts/out.md", "notes/keep.md"])
    write(notes / ".gitignore", "drafts/\n")
    eventually(daemon, "lemur", ["notes/keep.md"])
    (notes / ".gitignore").unlink()
    eventually(daemon, "lemur", ["notes/drafts/out.md", "notes/keep.md"])


def test_a_change_to_git_info_exclude_reevaluates(watched):
    daemon, notes = watched
    write(notes / "scratch" / "s.md", "# S\n\nokapi scratch\n")
    write(notes / "keep.md", "# Keep\n\nokapi notes\n")
    eventually(daemon, "okapi", ["notes/keep.md", "notes/scratch/s.md"])
    # Made with its folders at once (`git init`): the folder is new to the watch, which
    # may miss what is written into it at once.
    write(notes / ".git" / "info" / "exclude", "scratch/\n")
    eventually(daemon, "okapi", ["notes/keep.md"])
    write(notes / ".git" / "info" / "exclude", "# nothing\n")
    eventually(daemon, "okapi", ["notes/keep.md", "notes/scratch/s.md"])


def test_config_edit_takes_effect_without_restart(daemon, tmp_path):
    docs = tmp_path / "hand"
    write(docs / "h.md", "# H\n\nhandwritten capybara\n")
    cfg = daemon.paths.config_file
    os.makedirs(os.path.dirname(cfg), exist_ok=True)
    with open(cfg, "w") as f:
        f.write(f'[[collections]]\nname = "hand"\npath = "{docs}"\n')
    eventually(daemon, "capybara", ["hand/h.md"])
    write(docs / "later.md", "# Later\n\ncapybara again\n")  # and it is watched
    eventually(daemon, "capybara", ["hand/h.md", "hand/later.md"])
    with open(cfg, "w") as f:
        f.write('[[collections]]\nname = "hand"\npaht = "/nowhere"\n')  # a typo: kept out, reported
    assert wait_until(lambda: "paht" in (daemon.result("status")["config_error"] or ""), CONVERGE_S)
    assert paths(daemon, "capybara") == ["hand/h.md", "hand/later.md"]
    # A search says so too (only status did): the settings in use are the old ones.
    (said,) = daemon.result("search", {"query": "capybara"})["notes"]
    assert said.startswith("the config file has an error, and gnod keeps the settings it had") and "paht" in said
    # The typo undone: the file holds the config in use again, and the error is gone.
    with open(cfg, "w") as f:
        f.write(f'[[collections]]\nname = "hand"\npath = "{docs}"\n')
    assert wait_until(lambda: daemon.result("status")["config_error"] is None, CONVERGE_S)
    assert daemon.result("search", {"query": "capybara"})["notes"] == []
    with open(cfg, "w") as f:
        f.write("")
    eventually(daemon, "capybara", [])


def _kept_by_hand(daemon, tmp_path) -> tuple[str, str, int]:
    """A collection that a hand-written config.toml names, indexed: the file's path, its
    text, and how many configs gnod's log says it adopted so far."""
    docs = tmp_path / "kept"
    write(docs / "k.md", "# K\n\nokapi stays\n")
    cfg = daemon.paths.config_file
    os.makedirs(os.path.dirname(cfg), exist_ok=True)
    text = f'[[collections]]\nname = "kept"\npath = "{docs}"\n'
    with open(cfg, "w") as f:
        f.write(text)
    eventually(daemon, "okapi", ["kept/k.md"])
    with open(daemon.paths.log_file) as f:
        return cfg, text, f.read().count("config changed")


def _still_kept(daemon, adopted: int) -> None:
    """The same config throughout (none adopted since), and the collection's index whole."""
    with open(daemon.paths.log_file) as f:
        assert f.read().count("config changed") == adopted
    assert paths(daemon, "okapi") == ["kept/k.md"]


def test_a_config_file_caught_half_written_is_not_taken_for_the_new_config(daemon, tmp_path):
    """An editor saving config.toml in place truncates it, then writes it: read in between,
    it is a config without collections, and adopting it would drop every collection's
    index. The watch reads the file once it has been left alone for a moment."""
    cfg, text, adopted = _kept_by_hand(daemon, tmp_path)
    end = time.monotonic() + 4.5  # past two of the watch's 2 s wakes, and many events
    while time.monotonic() < end:
        with open(cfg, "w") as f:
            f.flush()
            time.sleep(0.004)  # empty for a few ms, then whole again
            f.write(text)
        time.sleep(0.012)
    time.sleep(1.0)
    _still_kept(daemon, adopted)


def test_a_config_left_empty_for_a_moment_keeps_its_collections(daemon, tmp_path):
    """A save held up between its truncate and its write (a busy machine, a slow disk)
    leaves the file empty for longer than the watch's quiet time: a config that would
    drop collections is adopted only once the file has stayed so for CONFIG_DROP_QUIET_S."""
    cfg, text, adopted = _kept_by_hand(daemon, tmp_path)
    for _ in range(3):
        with open(cfg, "w") as f:
            f.flush()
            time.sleep(0.4)  # past the quiet time, short of the time a drop waits
            f.write(text)
        time.sleep(0.3)
    time.sleep(1.5)
    _still_kept(daemon, adopted)


def test_changes_while_down_are_reconciled_at_start(env, tmp_path):
    docs = tmp_path / "d"
    write(docs / "a.md", "# A\n\nkoala one\n")
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "d", "path": str(docs)})
        eventually(d, "koala", ["d/a.md"])
    finally:
        d.stop()
    (docs / "a.md").unlink()
    write(docs / "b.md", "# B\n\nkoala two\n")
    d = start_gnod(env)
    try:
        eventually(d, "koala", ["d/b.md"])
    finally:
        d.stop()


def test_freshness_is_reported_and_search_can_wait(watched):
    daemon, notes = watched
    before = daemon.result("status")["freshness"][0]["files"]
    for i in range(300):
        write(notes / "burst" / f"b{i:03d}.md", f"# B{i}\n\nburst item {i} tapir\n")
    res = daemon.result("search", {"query": "tapir", "limit": 1000, "wait_s": CONVERGE_S, "snippets": False})
    assert len(res["hits"]) == 300
    (fresh,) = res["freshness"]
    assert fresh["collection"] == "notes" and fresh["watching"] and fresh["pending"] == 0
    assert fresh["last_change_at"] and fresh["last_change_at"] <= time.time()
    st = daemon.result("status")
    assert st["freshness"][0]["collection"] == "notes"
    # Its files follow what the watcher indexes (they stayed at the last full pass's).
    assert fresh["files"] == before + 300, (before, fresh)
    for i in range(100):
        (notes / "burst" / f"b{i:03d}.md").unlink()
    res = daemon.result("search", {"query": "tapir", "limit": 1000, "wait_s": CONVERGE_S, "snippets": False})
    assert len(res["hits"]) == 200 and res["freshness"][0]["files"] == before + 200, res["freshness"]


@pytest.mark.parametrize("extra", [[], ["--md"]], ids=["json", "md"])
def test_cli_search_wait_sees_a_file_saved_just_before(watched, run_cli, extra):
    daemon, notes = watched
    for i in range(200):
        write(notes / "many" / f"m{i:03d}.md", f"# M{i}\n\nquokka number {i}\n")
    args = ["search", "quokka", "-n", "500", "--wait", str(CONVERGE_S), *extra]
    if extra:  # --md is not JSON: count the table's rows instead
        r = run_cli(*args, env=daemon.env)
        assert r.returncode == 0, r.stderr
        assert sum(line.startswith("| ") for line in r.stdout.splitlines()) == 200 + 1  # + header
    else:
        res = cli_json(*args, "--json", env=daemon.env)
        assert len(res["hits"]) == 200 and res["freshness"][0]["pending"] == 0


def test_cli_search_wait_rejects_out_of_range(watched, run_cli):
    daemon, _ = watched
    r = run_cli("search", "x", "--wait", "-1", env=daemon.env)
    assert r.returncode == 2 and "--wait" in r.stderr


def test_status_human_shows_freshness_and_config_error(watched, monkeypatch, capsys):
    from gnoctl import commands

    daemon, notes = watched
    monkeypatch.setenv("GNO_HOME", daemon.env["GNO_HOME"])

    def human_status() -> str:
        assert commands.status("human") == 0
        return capsys.readouterr().out

    write(notes / "a.md", "# A\n\nwombat\n")
    eventually(daemon, "wombat", ["notes/a.md"])
    out = human_status()
    assert "watching" in out and "up to date" in out and "last change" in out
    with open(daemon.paths.config_file, "a") as f:
        f.write("\nbogus_key = 1\n")
    assert wait_until(lambda: "bogus_key" in human_status(), CONVERGE_S)


def test_own_files_do_not_feed_back(env, tmp_path):
    """GNO_HOME inside a watched folder: the daemon's writes are not events to index."""
    home = tmp_path / "root"
    home.mkdir()
    (home / ".gno").mkdir()
    env = {**env, "GNO_HOME": str(home / ".gno")}
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "root", "path": str(home), "include": ["**/*"]})
        write(home / "n.md", "# N\n\nibex\n")
        eventually(d, "ibex", ["root/n.md"])
        time.sleep(1.0)
        listed = [e["path"] for e in d.result("ls", {"collection": "root"})["entries"]]
        assert not [p for p in listed if p.startswith(".gno/")], listed
    finally:
        d.stop()


def test_a_save_after_a_quiet_spell_is_not_held_back_by_reads():
    """While reads run, flushes of a collection come BUSY_GATHER_S apart (a stream of saves
    is gathered into a few commits a second), but the first save after a quiet spell is
    flushed at once: a client polling for it no longer waits out the gathering."""
    from gnod.server.watcher import BUSY_GATHER_S, gather_seconds

    now = 1000.0
    assert gather_seconds(False, now - 0.01, now) == 0.0  # no reads: at once
    assert gather_seconds(True, float("-inf"), now) == 0.0  # never flushed yet
    assert gather_seconds(True, now - BUSY_GATHER_S - 0.01, now) == 0.0  # quiet since
    waited = gather_seconds(True, now - 0.05, now)  # flushed 50 ms ago: the rest of the spacing
    assert abs(waited - (BUSY_GATHER_S - 0.05)) < 1e-9


def test_a_gathering_flush_goes_ahead_once_the_reads_are_over():
    """A save made just after a flush, while a read is in flight, waits for that read,
    not for the whole spacing: a client that saves and searches for each save is
    answered in tens of milliseconds. Reads that never stop keep it back the whole way."""
    import asyncio

    from gnod.server.watcher import BUSY_GATHER_S, gather

    async def waited(busy_for: float) -> float:
        t0 = time.monotonic()
        await gather(lambda: time.monotonic() < t0 + busy_for, t0)
        return time.monotonic() - t0

    assert asyncio.run(waited(0.0)) < 0.01
    assert 0.03 <= asyncio.run(waited(0.03)) < BUSY_GATHER_S / 2
    assert asyncio.run(waited(10.0)) >= BUSY_GATHER_S - 0.005


def test_collections_share_one_watch_and_each_gets_its_changes(watched, tmp_path):
    daemon, notes = watched
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "inner"
    inner.mkdir(parents=True)
    daemon.result("collection.add", {"name": "outer", "path": str(outer)})
    daemon.result("collection.add", {"name": "inner", "path": str(inner), "allow_overlap": True})
    write(notes / "n.md", "# N\n\nokapi in notes\n")
    write(outer / "o.md", "# O\n\nokapi outside\n")
    write(inner / "i.md", "# I\n\nokapi inside\n")
    eventually(daemon, "okapi", ["inner/i.md", "notes/n.md", "outer/inner/i.md", "outer/o.md"])
    fresh = {f["collection"]: f for f in daemon.result("status")["freshness"]}
    assert all(fresh[n]["watching"] and fresh[n]["last_error"] is None for n in ("notes", "outer", "inner")), fresh


def test_a_collection_folder_that_goes_away_is_watched_again_when_it_is_back(watched, tmp_path):
    daemon, notes = watched
    away = tmp_path / "notes-away"
    write(notes / "a.md", "# A\n\nwombat first\n")
    eventually(daemon, "wombat", ["notes/a.md"])
    notes.rename(away)

    def fresh() -> dict:
        return daemon.result("status")["freshness"][0]

    assert wait_until(lambda: not fresh()["watching"], CONVERGE_S), fresh()
    assert "no such folder" in fresh()["last_error"]
    # A search says so: its hits are as last indexed, not what the folder holds.
    res = daemon.result("search", {"query": "wombat"})
    assert [h["path"] for h in res["hits"]] == ["a.md"]
    assert any("'notes' is not watched" in n and "no such folder" in n for n in res["notes"]), res["notes"]
    away.rename(notes)
    write(notes / "b.md", "# B\n\nwombat second\n")
    eventually(daemon, "wombat", ["notes/a.md", "notes/b.md"])
    assert wait_until(lambda: fresh()["watching"], CONVERGE_S), fresh()
    write(notes / "c.md", "# C\n\nwombat third\n")
    eventually(daemon, "wombat", ["notes/a.md", "notes/b.md", "notes/c.md"])


def test_a_folder_linked_inside_the_collection_keeps_its_own_paths(watched):
    """A link to a folder of the collection (and one to the collection itself) is not
    followed; but inotify, watching each folder once, named the changes to the folder by
    the link's path: edits went to `misc/notes-link/a.md`, `notes/a.md` kept its old text
    and a deleted file stayed found."""
    daemon, notes = watched
    write(notes / "real" / "a.md", "# A\n\nan aardvark\n")
    write(notes / "real" / "b.md", "# B\n\na bison\n")
    eventually(daemon, "aardvark", ["notes/real/a.md"])
    (notes / "misc").mkdir()
    (notes / "misc" / "real-link").symlink_to("../real")
    (notes / "self").symlink_to(".")
    write(notes.parent / "elsewhere" / "y.md", "# Y\n\na yak\n")
    (notes / "out").symlink_to("../elsewhere")
    daemon.result("index", {"collection": "notes"})  # the watch holds the folders through the links by now
    write(notes / "real" / "a.md", "# A\n\nan antelope\n")
    write(notes / "real" / "c.md", "# C\n\na camel\n")
    write(notes / "top.md", "# Top\n\na tapir\n")
    (notes / "real" / "b.md").unlink()
    eventually(daemon, "antelope", ["notes/real/a.md"])
    eventually(daemon, "camel", ["notes/real/c.md"])
    eventually(daemon, "tapir", ["notes/top.md"])
    eventually(daemon, "bison", [])
    assert sorted(e["path"] for e in daemon.result("ls", {"collection": "notes"})["entries"]) == [
        "real/a.md",
        "real/c.md",
        "top.md",
    ]
    errors = daemon.result("status", {})["recent_errors"]
    assert [(e["path"], e["code"]) for e in errors] == [("out", "OUTSIDE_ROOT")]


def test_a_note_saved_beside_a_big_generated_file_is_searchable_before_it(watched, tmp_path):
    """A big file among a flush's changes is indexed in a commit of its own after the
    rest: a note saved with a build's 8 MB bundle is searchable while the bundle is
    still being prepared (both in one commit, the note waited for it)."""
    daemon, notes = watched
    outside = tmp_path / "outside"
    outside.mkdir()
    lines = (f"var handler_{i} = function(event) {{ return dispatch_{i % 97}(event); }};" for i in range(130_000))
    (outside / "bundle.js").write_text("\n".join(lines) + "\nzqbundleword\n")
    (outside / "note.md").write_text("# Note\n\nnarwhal sightings\n")
    assert (outside / "bundle.js").stat().st_size > 8_000_000
    os.rename(outside / "bundle.js", notes / "bundle.js")  # both in one batch of events
    os.rename(outside / "note.md", notes / "note.md")
    assert wait_until(lambda: paths(daemon, "narwhal") == ["notes/note.md"], CONVERGE_S)
    assert paths(daemon, "zqbundleword") == []  # still being prepared
    eventually(daemon, "zqbundleword", ["notes/bundle.js"])


def test_a_big_file_that_keeps_changing_rests_between_its_indexings(watched):
    """A big file read again whole for each change (a log written to a line a second)
    kept a core busy: after an indexing that took long it rests REST_FACTOR times as long
    before the next one, while a note saved meanwhile is searchable at once."""
    from gnod.server.watcher import rested

    resting = {"app.log": 105.0, "old.log": 99.0}
    assert rested({"app.log", "note.md"}, resting, 100.0) == ({"note.md"}, 105.0)
    assert resting == {"app.log": 105.0}  # a rest over is forgotten
    assert rested({"app.log"}, resting, 101.0) == (set(), 105.0)
    assert rested({"app.log"}, resting, 105.0) == ({"app.log"}, 105.0)

    daemon, notes = watched
    lines = "\n".join(
        f"var handler_{i} = function(event) {{ return dispatch_{i % 97}(event); }};" for i in range(130_000)
    )
    # Written beside the folder and moved in: a watcher that read it half written would
    # index that part, then rest 8 times as long as it took before reading it whole.
    (notes.parent / "bundle.js").write_text(lines + "\nzqbundleword\n")
    (notes.parent / "bundle.js").replace(notes / "bundle.js")
    eventually(daemon, "zqbundleword", ["notes/bundle.js"])
    with open(notes / "bundle.js", "a") as f:
        f.write("zqsecondword\n")
    write(notes / "note.md", "# Note\n\nwalrus sightings\n")
    eventually(daemon, "walrus", ["notes/note.md"])

    def resting() -> bool:  # seen, not being indexed
        (fresh,) = daemon.result("status")["freshness"]
        return fresh["pending"] == 1 and not fresh["indexing"]

    assert wait_until(resting, 2.0)
    assert paths(daemon, "zqsecondword") == []
    assert wait_until(lambda: paths(daemon, "zqsecondword") == ["notes/bundle.js"], 4 * CONVERGE_S)
