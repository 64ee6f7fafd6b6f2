"""The gate's watch over what its workers load from disk (cuzk/perf/disk_watch.py)."""
from __future__ import annotations

import os

from cuzk.perf.disk_watch import Watched, absolute_caches, changed_message, shared_caches


def test_a_rewrite_is_seen_even_with_its_times_restored(tmp_path):
    """Same size, same modification time set back: the change time, which no unprivileged call restores, tells."""
    f = tmp_path / "tail_msm.py"
    f.write_text("fast = 1\n")
    st = os.stat(f)
    w = Watched("the base tree", tmp_path, closed=True)
    w.take()
    assert w.changes() == []
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))      # a touch that changes nothing still moves ctime...
    f.write_text("slow = 1\n")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))      # ...and so does this rewrite with its times put back
    assert w.changes() == ["tail_msm.py"]


def test_a_closed_place_refuses_new_files_and_a_cache_takes_them(tmp_path):
    (tmp_path / "a.cubin").write_bytes(b"x")
    closed, cache = Watched("the base tree", tmp_path, closed=True), Watched("the cubin cache", tmp_path, closed=False)
    closed.take()
    cache.take()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "new.pyc").write_bytes(b"y")
    assert closed.changes() == [os.path.join("sub", "new.pyc")] and cache.changes() == []
    (tmp_path / "a.cubin").unlink()      # one that went: a closed place's change; a cache's rebuild, at worst
    assert "a.cubin" in closed.changes() and cache.changes() == []


def test_a_cache_entry_that_stays_may_not_change_and_writers_files_are_not_entries(tmp_path):
    for name in ("k.cubin", "key.cuzkkey.123.tmp", "key.lock", "key.corrupt-1"):
        (tmp_path / name).write_bytes(b"x")
    cache = Watched("the key cache", tmp_path, closed=False)
    cache.take()
    for name in ("k.cubin", "key.cuzkkey.123.tmp", "key.lock", "key.corrupt-1"):
        (tmp_path / name).write_bytes(b"yy")
    assert cache.changes() == ["k.cubin"]


def test_a_link_is_watched_as_a_link(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "pkg").symlink_to("real", target_is_directory=True)
    w = Watched("the head tree", tmp_path, closed=True)
    w.take()
    (tmp_path / "pkg").unlink()
    (tmp_path / "pkg").symlink_to("/", target_is_directory=True)
    assert w.changes() == ["pkg"]


def test_a_missing_place_is_empty_and_its_files_count_when_they_come(tmp_path):
    w = Watched("the base key folder", tmp_path / "keys", closed=True)
    w.take()
    assert w.changes() == []
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "devkey").write_bytes(b"k")
    assert w.changes() == ["devkey"]


def test_the_shared_caches_follow_the_environment_and_the_message_is_short(tmp_path):
    places = shared_caches({"CUZK_CUBIN_DIR": str(tmp_path / "c"), "CUZK_CACHE_DIR": str(tmp_path / "k"),
                            "CUPY_CACHE_DIR": str(tmp_path / "p")})
    assert [w.root for w in places] == [tmp_path / "c", tmp_path / "k" / "keys", tmp_path / "p"]
    assert not any(w.closed for w in places)
    msg = changed_message(places[0], [f"f{i}" for i in range(9)])
    assert msg.endswith("f0, f1, f2, f3, f4 and 4 more") and str(tmp_path / "c") in msg


def test_cache_folders_named_relative_are_made_absolute_for_the_workers(tmp_path, monkeypatch):
    """The workers run in their checkouts: a relative cache folder would land inside the (closed) tree."""
    monkeypatch.chdir(tmp_path)
    env = absolute_caches({"CUZK_CACHE_DIR": "cache", "CUPY_CACHE_DIR": "/abs/cupy", "XDG_CACHE_HOME": "", "X": "y"})
    assert env == {"CUZK_CACHE_DIR": str(tmp_path / "cache"), "CUPY_CACHE_DIR": "/abs/cupy", "XDG_CACHE_HOME": "",
                   "X": "y"}
    places = shared_caches({"CUZK_CACHE_DIR": "cache"})
    assert places[1].root == tmp_path / "cache" / "keys"


def test_an_import_folder_is_watched_for_files_that_come_not_for_its_packages(tmp_path):
    """A `.pth` file or a `sitecustomize` module that comes into an import folder runs in every later worker,
    the base's too: its own files are watched (closed); its packages' are not (a walk of every installed package
    takes seconds a round)."""
    from cuzk.perf.disk_watch import import_roots
    site = tmp_path / "site-packages"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "mod.py").write_text("x = 1\n")
    (site / "a.pth").write_text("# a\n")
    (ws,) = import_roots([str(site), str(tmp_path / "absent")])
    assert ws.closed and ws.shallow and "import folder" in ws.name
    ws.take()
    assert set(ws.state) == {"a.pth"}
    (site / "pkg" / "mod.py").write_text("x = 2\n")
    assert ws.changes() == []
    (site / "zz.pth").write_text("import os\n")
    assert ws.changes() == ["zz.pth"]
    # the gate's own project folder (its tests write there) and its workspace (the checkouts, watched apart)
    assert import_roots([str(site)], spare=(str(site),)) == []
    assert import_roots([str(site / "pkg")], within=(str(site),)) == []
