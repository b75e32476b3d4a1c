"""Config file: strict keys, normalization, atomic save, GNO_HOME paths."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gnod import editor_url
from gnod.config import CollectionConfig, Config, ConfigError, load, same_files, save, validate_collection
from gnod.paths import Paths


def write(tmp_path, text: str) -> str:
    p = tmp_path / "config.toml"
    p.write_text(text)
    return str(p)


def test_missing_file_is_empty_config(tmp_path):
    assert load(str(tmp_path / "nope.toml")) == Config()


def test_roundtrip_and_normalization(tmp_path):
    path = write(tmp_path, '[[collections]]\nname = "notes"\npath = "~/n"\nlanguage = "de"\ninclude = ["**/*.md"]\n')
    cfg = load(path)
    c = cfg.collections[0]
    assert c.path == os.path.expanduser("~/n") and c.language == "german" and c.include == ["**/*.md"]
    save(path, cfg)
    assert load(path) == cfg
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_save_changes_only_what_changed(tmp_path):
    import msgspec

    text = (
        "# mine\n"
        "[[collections]]\n"
        'name = "a"  # first\n'
        'path = "~/a"\n'
        "\n"
        "[[collections]]\n"
        'name = "b"\n'
        'path = "~/b"  # second, kept as written\n'
        'exclude = ["x/"]\n'
        "\n"
        "[models]\n"
        'preset = "slim"  # which preset\n'
        "eager = false    # an explicit default\n"
    )
    path = write(tmp_path, text)
    cfg = load(path)
    b = msgspec.structs.replace(cfg.collections[1], exclude=["x/", "y/"])
    models = msgspec.structs.replace(cfg.models, preset="quality")
    save(path, msgspec.structs.replace(cfg, collections=[b], models=models))
    assert open(path).read() == (
        "# mine\n"
        "[[collections]]\n"
        'name = "b"\n'
        'path = "~/b"  # second, kept as written\n'
        'exclude = ["x/", "y/"]\n'
        "\n"
        "[models]\n"
        'preset = "quality"  # which preset\n'
        "eager = false    # an explicit default\n"
    )
    assert load(path).collections == [b]


@pytest.mark.parametrize(
    "text, needle",
    [
        ('[[collections]]\nname = "x"\npath = 3\n', "path"),
        ('[daemon]\nloglevel = "info"\n', "loglevel"),
        ("[bogus]\n", "bogus"),
        ('[[collections]]\nname = "x"\npath = "/tmp"\nlanguage = "klingon"\n', "language"),
        ('[[collections]]\nname = "bad name!"\npath = "/tmp"\n', "name"),
        ('[[collections]]\nname = "a"\npath = "/tmp"\n[[collections]]\nname = "a"\npath = "/var"\n', "duplicate"),
        ("not = toml = at all", "TOML"),
        # A misspelt key was only called unknown: the user had to look up the key's name.
        ('[[collections]]\nname = "x"\npaht = "/tmp"\n', "paht` - at `$.collections[0]` (did you mean `path`?)"),
        ("[models]\nidle_unload = 60\n", "(did you mean `idle_unload_s`?)"),
        ("[modles]\n", "(did you mean `models`?)"),
        ("[client]\nzzz = 1\n", "(the keys there: editor_url, hyperlinks)"),
    ],
)
def test_errors_name_the_key(tmp_path, text, needle):
    with pytest.raises(ConfigError) as e:
        load(write(tmp_path, text))
    assert needle in str(e.value)


def test_validate_collection_rejects_empty_glob():
    with pytest.raises(ConfigError, match="exclude"):
        validate_collection(CollectionConfig(name="a", path="/tmp", exclude=[" "]))


def test_a_description_is_one_line_bounded_and_not_a_change_of_files(tmp_path):
    path = write(tmp_path, '[[collections]]\nname = "notes"\npath = "/n"\ndescription = """My notes,\n  on work"""\n')
    c = load(path).collections[0]
    assert c.description == "My notes, on work"
    assert validate_collection(CollectionConfig(name="n", path="/n", description="  ")).description is None
    with pytest.raises(ConfigError, match="description"):
        validate_collection(CollectionConfig(name="n", path="/n", description="x" * 501))
    # The watcher restarts a collection only when its files could differ.
    assert same_files(c, CollectionConfig(name="notes", path="/n", description="other words"))
    assert not same_files(c, CollectionConfig(name="notes", path="/n", include=["*.md"], description=c.description))


def test_gno_home_roots_everything(tmp_path):
    p = Paths(str(tmp_path))
    for d in (p.config_dir, p.data_dir, p.cache_dir, p.state_dir, p.runtime_dir):
        assert d.startswith(str(tmp_path))
    assert p.socket_path.endswith("run/gnod.sock")


@pytest.mark.parametrize(
    "home", ["/a/b", "/a/b/", "/a//b", "/a/./b", "/a/../b", "/", "//a", "rel/x", "~", "~/g", "/a/~b", "/a/b.", "/é/ñ"]
)
def test_gno_home_is_resolved_as_os_path_would(home, monkeypatch, tmp_path):
    """GNO_HOME is made absolute without `os` where it already is (gnoctl's hot path
    does not load it): the same result as os.path's, in this process and in one
    where `os` was never imported."""
    monkeypatch.setenv("GNO_HOME", home)
    monkeypatch.chdir(tmp_path)
    want = os.path.abspath(os.path.expanduser(home))
    assert Paths.from_env().home == want
    assert Paths.from_env().socket_path == os.path.join(want, "run", "gnod.sock")
    probe = "import sys; sys.path.insert(0, sys.argv[1]); from gnod.paths import Paths; p = Paths.from_env(); "
    probe += "print(p.socket_path, 'os' in sys.modules)"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-I", "-S", "-c", probe, root], capture_output=True, text=True, check=True)
    fast = home.startswith("/") and all(part not in ("", ".", "..") for part in home.split("/")[1:])
    assert r.stdout.split() == [os.path.join(want, "run", "gnod.sock"), str(not fast)]


def test_runtime_dir_without_gno_home_is_private_to_the_user(monkeypatch, tmp_path):
    monkeypatch.delenv("GNO_HOME", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path) + "/")
    assert Paths.from_env().socket_path == os.path.join(str(tmp_path), "gno", "gnod.sock")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "absent"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert Paths.from_env().runtime_dir == os.path.join(str(tmp_path), f"gno-{os.getuid()}")
    monkeypatch.setenv("TMPDIR", "")  # not a relative path under the working directory
    assert Paths.from_env().runtime_dir == f"/tmp/gno-{os.getuid()}"


def test_platform_dirs_without_gno_home(monkeypatch):
    monkeypatch.delenv("GNO_HOME", raising=False)
    p = Paths.from_env()
    assert p.home is None and "gno" in p.config_dir and "gno" in p.data_dir


def test_editor_url_names_templates_and_encodes_paths(tmp_path):
    assert editor_url.url(editor_url.template(None), "/n/a b/ü.md", 7, "box") == "file://box/n/a%20b/%C3%BC.md#7"
    assert editor_url.url(editor_url.template("vscode"), "/n/x.md", 0, "") == "vscode://file/n/x.md:1"
    assert editor_url.url("myed://open?f={path}&l={line}", "/x", 3) == "myed://open?f=/x&l=3"
    for bad in ("myed://{file}", "myed://{path}/{column}", "emacs"):
        with pytest.raises(ValueError):
            editor_url.check(bad)
    path = write(tmp_path, '[client]\neditor_url = "nope"\n')
    with pytest.raises(ConfigError, match="client.editor_url"):
        load(path)


def test_collection_add_takes_every_setting_of_a_collection():
    """collection.add builds the CollectionConfig from its params field by field name: a
    setting added to one must be added to the other, with the same default."""
    import msgspec

    from gnod.protocol import CollectionAddParams

    config = {f.name: f.default for f in msgspec.structs.fields(CollectionConfig)}
    params = {f.name: f.default for f in msgspec.structs.fields(CollectionAddParams)}
    assert config.items() <= params.items()
    assert set(params) - set(config) == {"index", "allow_overlap"}  # how to add it, not what it is
