"""Archives and mailboxes: each member a document named `<file>!/<inside>`, read with the
stdlib, bounded against bombs, indexed incrementally, found and read through a real gnod."""

from __future__ import annotations

import io
import mailbox
import re
import tarfile
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import _run_cli, cli_json, running_gnod, wait_until
from gnod.config import CONTAINER_SUFFIXES, CollectionConfig
from gnod.ingest import containers
from gnod.ingest.convert import IngestFailure
from gnod.ingest.pipeline import index_collection
from gnod.search import filters
from gnod.store.migrations import migrate
from gnod.text.analyzer import AnalyzerSet


def zipped(files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def tarred(files: dict[str, bytes], mode: str = "w:gz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as t:  # type: ignore[call-overload]
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def message(subject: str, body: str, date: str = "Mon, 01 Jan 2024 09:00:00 +0000") -> bytes:
    return f"From: ann@example.org\nTo: bob@example.org\nSubject: {subject}\nDate: {date}\n\n{body}\n".encode()


def mbox(*messages: bytes) -> bytes:
    return b"".join(b"From ann@example.org Mon Jan  1 00:00:00 2024\n" + m + b"\n" for m in messages)


def listed(rel_path: str, data: bytes) -> dict[str, bytes | str]:
    return {name: (b.code if isinstance(b, IngestFailure) else b) for name, b in containers.members(rel_path, data)}


def test_a_zip_lists_its_files_and_opens_a_zip_inside_it():
    inner = zipped({"deep.md": b"# Deep\n"})
    data = zipped({"a.md": b"# A\n", "sub/b.txt": b"bee", "dir/": b"", "inner.zip": inner})
    assert listed("x/papers.zip", data) == {
        "a.md": b"# A\n",
        "sub/b.txt": b"bee",
        "inner.zip!/deep.md": b"# Deep\n",
    }


def test_an_archive_three_deep_is_not_opened_past_the_second():
    third = zipped({"c.md": b"c"})
    second = zipped({"third.zip": third})
    assert listed("first.zip", zipped({"second.zip": second})) == {"second.zip!/third.zip": third}


def test_a_tar_in_every_compression():
    files = {"notes/one.md": b"# One\n", "two.txt": b"two"}
    for name, mode in (
        ("a.tar", "w"),
        ("a.tar.gz", "w:gz"),
        ("a.tgz", "w:gz"),
        ("a.tar.bz2", "w:bz2"),
        ("a.tar.xz", "w:xz"),
    ):
        assert listed(name, tarred(files, mode)) == files, name


def sevenzipped(files: dict[str, bytes]) -> bytes:
    import py7zr

    buf = io.BytesIO()
    with py7zr.SevenZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(data, name)
    return buf.getvalue()


def test_a_7z_archive_is_read_and_bounded():
    files = {"notes/one.md": b"# One\n", "two.txt": b"two"}
    assert listed("a.7z", sevenzipped(files)) == files
    inner = zipped({"deep.md": b"# Deep\n"})
    assert listed("b.7z", sevenzipped({"inner.zip": inner})) == {"inner.zip!/deep.md": b"# Deep\n"}
    with pytest.raises(IngestFailure) as e:
        listed("boom.7z", sevenzipped({"zeros.txt": b"\0" * (8 * 1024 * 1024)}))
    assert e.value.code == "TOO_LARGE" and "bomb" in e.value.reason
    with pytest.raises(IngestFailure) as e:
        listed("bad.7z", b"7z\xbc\xaf\x27\x1c damaged")
    assert e.value.code == "CORRUPT"


def test_member_names_never_climb_out():
    data = zipped({"../evil.md": b"e", "/abs.md": b"a", "ok/../fine.md": b"f", "a\\b.md": b"w"})
    assert listed("t.zip", data) == {"abs.md": b"a", "fine.md": b"f", "a/b.md": b"w"}


def test_bombs_fail_the_archive_with_a_clear_reason():
    boom = zipped({"zeros.txt": b"\0" * (8 * 1024 * 1024)})  # deflate: ~1000× smaller
    with pytest.raises(IngestFailure) as e:
        listed("boom.zip", boom)
    assert e.value.code == "TOO_LARGE" and "bomb" in e.value.reason
    many = zipped({f"{i}.txt": b"x" for i in range(containers.MAX_MEMBERS + 1)}, zipfile.ZIP_STORED)
    with pytest.raises(IngestFailure) as e:
        listed("many.zip", many)
    assert e.value.code == "TOO_LARGE" and "members" in e.value.reason


def test_a_damaged_archive_is_corrupt():
    for name, data in (("bad.zip", b"PK\x03\x04 not really"), ("bad.tar.gz", b"\x1f\x8b junk")):
        with pytest.raises(IngestFailure) as e:
            listed(name, data)
        assert e.value.code == "CORRUPT", name


def test_an_mbox_splits_into_messages_numbered_from_one():
    body = b"From: a@x\nSubject: s\n\n>From the start, quoted.\nFrom inside a line is text\n"
    data = mbox(message("first", "one"), body, message("third", "three"))
    got = listed("inbox.mbox", data)
    assert list(got) == ["1.eml", "2.eml", "3.eml"]
    assert b"Subject: first" in got["1.eml"]  # type: ignore[operator]
    assert b"\nFrom the start, quoted." in got["2.eml"]  # type: ignore[operator]
    assert listed("empty.mbox", b"") == {}
    with pytest.raises(IngestFailure):
        listed("not.mbox", b"just some text\n")


def test_a_mailbox_read_a_block_at_a_time_splits_as_one_in_memory(monkeypatch):
    """message_spans reads SCAN_BLOCK bytes at a time: the messages it finds do not depend
    on the block size, whatever a block boundary cuts (a From line, a blank line)."""
    messages = [message(f"m{i}", "line\n" * (i % 7) + ">From quoted\n") for i in range(60)]
    data = mbox(*messages) + b"From trailing line without its newline"
    whole = containers.message_spans(memoryview(data).__getitem__, len(data))
    assert len(whole) == 60
    for block in (60, 97, 128, 1000):
        monkeypatch.setattr(containers, "SCAN_BLOCK", block)
        monkeypatch.setattr(containers, "MAX_FROM_LINE", 50)
        assert containers.message_spans(memoryview(data).__getitem__, len(data)) == whole, block


# The rule, as one regex: a From line at the start of the file or after a blank line.
FROM_RULE = re.compile(rb"(?:\A|(?<=\n\n)|(?<=\r\n\r\n))From [^\n]*\n")


@settings(max_examples=300)
@given(
    st.lists(st.sampled_from([b"From a\n", b"From ", b"\n", b"\r\n", b"x", b">From b\n", b" From c\n"]), max_size=40)
)
def test_the_messages_found_are_those_the_rule_finds(parts):
    data = b"".join(parts)
    lines = list(FROM_RULE.finditer(data))
    want = [(m.end(), nxt.start() if nxt else len(data)) for m, nxt in zip(lines, [*lines[1:], None])]
    try:
        got = containers.message_spans(memoryview(data).__getitem__, len(data))
    except IngestFailure:
        assert not lines and data.strip()
        return
    assert got == want


def test_a_mailbox_bigger_than_a_file_may_be_is_indexed_in_shards(db, tmp_path, monkeypatch):
    """Past MAILBOX_SHARD_BYTES a mailbox is never read whole: read in shards, each a task,
    so the size limit of a file (here made small) does not apply to it; the messages are
    numbered as if it were read whole, and an appended message is the only one prepared."""
    from gnod.ingest import workers

    monkeypatch.setattr(workers, "MAX_DOCUMENT_BYTES", 4096)
    monkeypatch.setattr(containers, "MAILBOX_SHARD_BYTES", 1024)
    monkeypatch.setattr(containers, "SCAN_BLOCK", 700)
    monkeypatch.setattr(containers, "MAX_FROM_LINE", 100)
    root = tmp_path / "mail"
    root.mkdir()
    box = root / "archive.mbox"
    box.write_bytes(mbox(*(message(f"Report {i}", f"Quarter {i}: the kiln{i} ran hot.") for i in range(1, 121))))
    assert box.stat().st_size > 4 * 4096
    prepared = []
    real = workers._prepare
    monkeypatch.setattr(workers, "_prepare", lambda e, *a: prepared.append(e.rel_path) or real(e, *a))
    s = run(db, root)
    assert (s.added, s.errors) == (120, 0) and len(prepared) == 120
    got = paths(db)
    assert list(got) == sorted(f"archive.mbox!/{i}.eml" for i in range(1, 121))
    title = db.execute("SELECT title FROM documents WHERE rel_path = 'archive.mbox!/77.eml'").fetchone()[0]
    assert title == "Report 77"
    # Appended: only the new message is prepared anew, the others are found unchanged.
    prepared.clear()
    with box.open("ab") as f:
        f.write(mbox(message("Report 121", "The kiln121 is mended.")))
    s = run(db, root)
    assert (s.added, s.updated, s.removed) == (1, 0, 0)
    assert [p for p in prepared if "121" in p] == ["archive.mbox!/121.eml"]
    # Cut back to its first shard's worth: the rest are removed; emptied of messages, an error.
    box.write_bytes(mbox(*(message(f"Report {i}", "x") for i in range(1, 11))))
    s = run(db, root)
    assert s.removed == 111 and len(paths(db)) == 10
    box.write_bytes(b"not a mailbox at all\n" * 300)
    s = run(db, root)
    assert s.errors == 1 and len(paths(db)) == 10  # what it held stays, beside the error
    assert dict(db.execute("SELECT rel_path, code FROM ingest_errors").fetchall()) == {"archive.mbox": "CORRUPT"}


def test_the_shards_of_a_mailbox_run_in_the_pool_one_per_batch(monkeypatch):
    from gnod.ingest.walk import WalkEntry
    from gnod.ingest.workers import Task, _batches

    e = WalkEntry("a.md", "/x/a.md", 1, 1, 1)
    plain = [Task(e, None, None) for _ in range(70)]
    shard = Task(e, None, None, shard=(1, ((0, 10),)))
    sizes = [len(b) for b in _batches([*plain[:40], shard, shard, *plain[40:]])]
    assert sizes == [32, 1, 1, 32, 6]


def test_kind_tells_a_container_by_its_last_character_first():
    """kind() rejects a name by its last character before lowercasing it whole: that
    holds only if no other character lowercases to a container suffix's last one."""
    last = containers._LAST
    assert all(chr(c) in last for c in range(0x110000) if chr(c).lower()[-1:] in last)
    for suffix in CONTAINER_SUFFIXES:
        assert containers.kind("x" + suffix) is not None and containers.kind("X" + suffix.upper()) is not None


def test_kind_and_file_of():
    assert containers.kind("a/b.ZIP") == "archive" and containers.kind("x.tar.gz") == "archive"
    assert containers.kind("x.7z") == "archive"
    assert containers.kind("log.gz") is None and containers.kind("a.docx") is None
    assert containers.kind("mail/inbox.mbox") == "mailbox"
    assert containers.file_of("a/b.zip!/c/d.md") == "a/b.zip" and containers.file_of("a/b.md") == "a/b.md"


def run(db, root):
    return index_collection(db, AnalyzerSet(), CollectionConfig(name="c", path=str(root)))


def paths(db) -> dict[str, str]:
    return dict(db.execute("SELECT rel_path, source_hash FROM documents ORDER BY rel_path").fetchall())


def test_members_pass_the_collections_also_globs(db, tmp_path):
    """An archive's members are taken as files of their names would be: a kind the
    defaults leave out, by the collection's `also` globs too."""
    (tmp_path / "suite.zip").write_bytes(zipped({"a.md": b"# Alpha\n", "t/x.tc": b"echo ok\n", "y.svg": b"<svg/>"}))
    col = CollectionConfig(name="c", path=str(tmp_path), also=["*.tc"])
    assert index_collection(db, AnalyzerSet(), col).added == 2
    assert list(paths(db)) == ["suite.zip!/a.md", "suite.zip!/t/x.tc"]


def test_members_are_indexed_incrementally(db, tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    archive = root / "papers.zip"
    archive.write_bytes(zipped({"a.md": b"# Alpha\n\nabout lanterns\n", "b.md": b"# Beta\n", "x.bin": b"\0\1"}))
    (root / "boom.zip").write_bytes(zipped({"zeros.txt": b"\0" * (8 * 1024 * 1024)}))
    s = run(db, root)
    assert (s.added, s.errors) == (2, 1)  # x.bin is not a document kind the collection takes
    first = paths(db)
    assert list(first) == ["papers.zip!/a.md", "papers.zip!/b.md"]
    errors = dict(db.execute("SELECT rel_path, code FROM ingest_errors").fetchall())
    assert errors == {"boom.zip": "TOO_LARGE"}
    # Unchanged: one stat, nothing read; its members are the documents counted (`update`
    # said "documents 0 added, 0 updated, 23 unchanged" of 23 files holding 42).
    s = run(db, root)
    assert (s.scanned, s.added, s.updated, s.unchanged, s.removed) == (2, 0, 0, 2, 0)
    # One member changed, one added, one gone: only those are written.
    archive.write_bytes(zipped({"a.md": b"# Alpha\n\nabout lamps\n", "c.md": b"# Gamma\n"}))
    s = run(db, root)
    assert (s.added, s.updated, s.removed) == (1, 1, 1)
    assert list(paths(db)) == ["papers.zip!/a.md", "papers.zip!/c.md"]
    # The bomb mended: its error goes, its member comes.
    (root / "boom.zip").write_bytes(zipped({"fine.md": b"# Fine\n"}))
    run(db, root)
    assert not db.execute("SELECT count(*) FROM ingest_errors").fetchone()[0]
    assert "boom.zip!/fine.md" in paths(db)
    # Damaged: what it held stays indexed, beside the archive's error; mended, the error goes.
    good = archive.read_bytes()
    archive.write_bytes(b"PK\x03\x04 damaged")
    s = run(db, root)
    assert (s.removed, s.errors) == (0, 1)
    assert list(paths(db)) == ["boom.zip!/fine.md", "papers.zip!/a.md", "papers.zip!/c.md"]
    assert dict(db.execute("SELECT rel_path, code FROM ingest_errors").fetchall()) == {"papers.zip": "CORRUPT"}
    s = run(db, root)  # unchanged since it failed: its members stay
    assert (s.removed, s.errors) == (0, 1) and len(paths(db)) == 3
    archive.write_bytes(good)
    run(db, root)
    assert not db.execute("SELECT count(*) FROM ingest_errors").fetchone()[0]
    archive.unlink()
    s = run(db, root)
    assert s.removed == 2 and list(paths(db)) == ["boom.zip!/fine.md"]


def test_gnod_finds_reads_and_follows_a_member(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    archive = root / "papers.tar.gz"
    archive.write_bytes(tarred({"field/notes.md": b"# Field notes\n\nThe heron nests by the weir.\n"}))
    with running_gnod() as (env, gnod):
        cli_json("collection", "add", str(root), "--name", "c", "--json", env=env)
        hits = cli_json("search", "heron", "--json", env=env)["hits"]
        assert [h["path"] for h in hits] == ["papers.tar.gz!/field/notes.md"]
        assert hits[0]["abs_path"] == str(archive)  # what an editor can open
        got = cli_json("get", "c/papers.tar.gz!/field/notes.md", "--json", env=env)
        assert "The heron nests by the weir." in got["content"]
        archive.write_bytes(tarred({"field/notes.md": b"# Field notes\n\nThe otter swims by the weir.\n"}))

        def found(word: str) -> list[str]:
            return [h["path"] for h in gnod.result("search", {"query": word, "snippets": False})["hits"]]

        assert wait_until(lambda: found("otter") == ["papers.tar.gz!/field/notes.md"], 20)
        assert found("heron") == []


def test_a_mailbox_is_indexed_a_message_at_a_time(db, tmp_path):
    root = tmp_path / "mail"
    root.mkdir()
    box = root / "inbox.mbox"
    box.write_bytes(mbox(message("Boiler", "The boiler needs a service."), message("Roof", "Tiles slipped.")))
    s = run(db, root)
    assert s.added == 2
    titles = dict(db.execute("SELECT rel_path, title FROM documents").fetchall())
    assert titles == {"inbox.mbox!/1.eml": "Boiler", "inbox.mbox!/2.eml": "Roof"}
    # A message appended: that message is indexed, the others are not read again.
    with open(box, "ab") as f:
        f.write(mbox(message("Gutter", "The gutter overflows.")))
    s = run(db, root)
    assert (s.added, s.updated, s.unchanged) == (1, 0, 2)


def test_gnod_searches_a_mailbox_by_words_and_dates(tmp_path):
    root = tmp_path / "mail"
    root.mkdir()
    box = root / "inbox.mbox"
    box.write_bytes(
        mbox(
            message("Boiler service", "The boiler needs a service before winter.", "Tue, 02 Jan 2024 10:00:00 +0000"),
            message("Boiler quote", "A quote for the boiler arrived.", "Sat, 01 Jun 2024 10:00:00 +0000"),
        )
    )
    with running_gnod() as (env, gnod):
        cli_json("collection", "add", str(root), "--name", "m", "--json", env=env)
        hits = cli_json("search", "boiler", "--since", "2024-03-01", "--json", env=env)["hits"]
        assert [(h["path"], h["title"]) for h in hits] == [("inbox.mbox!/2.eml", "Boiler quote")]
        assert hits[0]["abs_path"] == str(box)
        got = cli_json("get", "m/inbox.mbox!/1.eml", "--json", env=env)["content"]
        assert "The boiler needs a service before winter." in got and "ann@example.org" in got
        # The mailbox's own path, as --files prints it: ls and --path take its messages,
        # get says what it holds (it said "not indexed yet: `gnoctl update` indexes it").
        members = ["m/inbox.mbox!/1.eml", "m/inbox.mbox!/2.eml"]
        for args in (("m/inbox.mbox",), (str(box),), ("m/inbox.mbox", "-d")):
            listed = cli_json("ls", *args, "--json", env=env)["entries"]
            assert [f"{e['collection']}/{e['path']}" for e in listed] == members, args
        hits = cli_json("search", "boiler", "--path", "inbox.mbox", "--json", env=env)["hits"]
        assert sorted(h["path"] for h in hits) == ["inbox.mbox!/1.eml", "inbox.mbox!/2.eml"]
        err = cli_json("get", str(box), "--json", env=env, expect=2)["error"]
        assert err["details"]["why"] == "CONTAINER" and err["details"]["documents"] == 2
        assert "holds 2 documents" in err["message"] and "`gnoctl ls m/inbox.mbox` lists them" in err["message"]
        with open(box, "ab") as f:
            f.write(mbox(message("Gutter", "The gutter overflows in the storm.")))

        def found() -> list[str]:
            return [h["path"] for h in gnod.result("search", {"query": "gutter storm", "snippets": False})["hits"]]

        assert wait_until(lambda: found() == ["inbox.mbox!/3.eml"], 20)
        # Its messages in their order: 2.eml before 10.eml (ls listed 1, 10, 11, 2…).
        with open(box, "ab") as f:
            f.write(mbox(*(message(f"Note {i}", f"Note {i} of the house.") for i in range(4, 13))))
        assert wait_until(lambda: cli_json("ls", "m/inbox.mbox", "--json", env=env)["total"] == 12, 20)
        listed = cli_json("ls", "m/inbox.mbox", "--json", env=env)["entries"]
        assert [e["path"] for e in listed] == [f"inbox.mbox!/{i}.eml" for i in range(1, 13)]
        # Each message's own date and sender, in ls and in a search's hits (JSON), and ls's lines.
        assert (listed[1]["date"][:10], listed[1]["sender"]) == ("2024-06-01", "ann@example.org")
        assert {(h["date"][:10], h["sender"]) for h in hits} >= {("2024-06-01", "ann@example.org")}
        line = _run_cli("ls", "m/inbox.mbox", "--human", env=env).stdout.splitlines()[1]
        assert line.endswith("  Boiler quote  2024-06-01  ann@example.org"), line


def test_gnod_reads_a_maildir_message_by_message(tmp_path):
    """A Maildir (maildir(5), written by the stdlib's mailbox): each message in new/ and
    cur/ is one document, tmp/ (delivery in progress) is never read, a new message is
    found once delivered and a message marked read is moved, not duplicated."""
    root = tmp_path / "mail"
    root.mkdir()
    box = mailbox.Maildir(str(root / "Inbox"))
    box.add(mailbox.MaildirMessage(message("Boiler service", "The boiler needs a service before winter.")))
    read = mailbox.MaildirMessage(message("Roof tiles", "Two tiles slipped in the storm."))
    read.set_subdir("cur")
    read.add_flag("S")
    box.add(read)
    (root / "Inbox" / "tmp" / "1700000000.M9P9.host").write_bytes(message("Half", "zzpartial delivery"))
    (root / "notes" / "new").mkdir(parents=True)
    (root / "notes" / "new" / "1700000000.md").write_text("# Plan\n\nA plain note about the boiler.\n")
    with running_gnod() as (env, gnod):
        cli_json("collection", "add", str(root), "--name", "m", "--json", env=env)

        def found(query: str) -> list[tuple[str, str]]:
            hits = gnod.result("search", {"query": query, "snippets": False})["hits"]
            return [(h["path"].split("/")[1], h["title"]) for h in hits]

        assert sorted(found("boiler")) == [("new", "Boiler service"), ("new", "Plan")]
        assert found("tiles storm") == [("cur", "Roof tiles")]
        assert found("zzpartial") == []
        key = box.add(mailbox.MaildirMessage(message("Gutter", "The gutter overflows.")))
        assert wait_until(lambda: found("gutter") == [("new", "Gutter")], 20)
        seen = box[key]
        seen.set_subdir("cur")
        seen.add_flag("S")
        box[key] = seen  # what a mail client does when the message is read: new/ → cur/
        assert wait_until(lambda: found("gutter") == [("cur", "Gutter")], 20)
        path = gnod.result("search", {"query": "gutter"})["hits"][0]["path"]
        got = cli_json("get", f"m/{path}", "--json", env=env)["content"]
        assert "The gutter overflows." in got and "ann@example.org" in got


def sent(sender: str, subject: str, body: str) -> bytes:
    return message(subject, body).replace(b"From: ann@example.org", f"From: {sender}".encode())


def test_messages_are_found_by_their_sender(db, tmp_path):
    """--from: part of a message's sender, in any case, in the engine's query (search)
    and in SQL (the vectors' filter) alike."""
    root = tmp_path / "mail"
    root.mkdir()
    (root / "inbox.mbox").write_bytes(
        mbox(
            sent("Ann Lee <Ann.Lee@Example.org>", "Boiler service", "The boiler needs a service."),
            sent("bob@builders.example.com", "Boiler quote", "A quote for the boiler."),
            sent("Jörg Schäfer <js@uni.de>", "Boiler report", "The boiler report."),
        )
    )
    (root / "note.md").write_text("# Boiler\n\nThe boiler is in the cellar.\n")
    run(db, root)
    for sender, want in (
        ("ann.lee@example.org", ["inbox.mbox!/1.eml"]),
        ("ANN LEE", ["inbox.mbox!/1.eml"]),
        ("schafer", ["inbox.mbox!/3.eml"]),  # accents off, as search reads Müller in `muller`
        ("SCHÄFER", ["inbox.mbox!/3.eml"]),
        ("builders.example", ["inbox.mbox!/2.eml"]),
        ("example", ["inbox.mbox!/1.eml", "inbox.mbox!/2.eml"]),
        ("carol", []),
    ):
        cond, args = filters.where(filters.resolve(filters.Filter(sender=sender)))
        rows = db.execute(f"SELECT d.rel_path FROM documents d WHERE {cond} ORDER BY 1", args).fetchall()
        assert [r[0] for r in rows] == want, sender
    # An index written before takes the messages whose sender is past ASCII again (their
    # sender folded in the engine) at the next start.
    db.execute("DELETE FROM lexical_pending")
    db.execute("DELETE FROM migrations WHERE name = '0017_senders_folded'")
    assert migrate(db) == ["0017_senders_folded"]
    pending = db.execute("SELECT d.rel_path FROM lexical_pending p JOIN documents d ON d.id = p.doc_id").fetchall()
    assert pending == [("inbox.mbox!/3.eml",)]
    with running_gnod() as (env, _gnod):
        cli_json("collection", "add", str(root), "--name", "m", "--json", env=env)
        for args, want in (
            (["--from", "ann.lee@example.org"], ["inbox.mbox!/1.eml"]),
            (["--from", "Builders.Example.com", "-n", "5"], ["inbox.mbox!/2.eml"]),
            (["--from", "jorg schafer"], ["inbox.mbox!/3.eml"]),
            (["--from", "Schäfer"], ["inbox.mbox!/3.eml"]),
            (["--from", "example", "--since", "2023-12-31"], ["inbox.mbox!/1.eml", "inbox.mbox!/2.eml"]),
        ):
            hits = cli_json("search", "boiler", *args, "--json", env=env)["hits"]
            assert sorted(h["path"] for h in hits) == want, args
        assert cli_json("search", "boiler", "--from", "carol", "--json", env=env, expect=1)["hits"] == []
        err = cli_json("search", "boiler", "--from", " ", "--json", env=env, expect=2)["error"]
        assert err["code"] == "INVALID_PARAMS" and "from: empty" in err["message"]
