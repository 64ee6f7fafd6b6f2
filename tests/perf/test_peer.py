"""`cuzk peer` on the CPU: the pinned sources fetched (or refused, said), the peer's points read back, bad input
refused, and no GPU said out loud (exit 2, nothing written). The build itself runs where the sources are at hand
(CUZK_TEST_PEER_SOURCES="sppark=DIR,blst=DIR" and nvcc); the timing needs the GPU (docs/perf-log.md)."""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from py_arkworks_bls12381 import G1Point, Scalar

from cuzk import field as F
from cuzk.cli import main
from cuzk.curve import g1_affine_ints
from cuzk.perf import peer


def _repo(path: Path) -> str:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "a.txt").write_text("one\n")
    for args in (["add", "a.txt"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]):
        subprocess.run(["git", "-C", str(path), *args], check=True)
    return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_source_is_fetched_at_its_pinned_commit_once(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    sha = _repo(mirror)
    monkeypatch.setitem(peer.SOURCES, "sppark", ("file:///nowhere/sppark", sha))
    tree = peer.fetch("sppark", tmp_path / "src", mirror)
    assert (tree / "a.txt").read_text() == "one\n"
    shutil.rmtree(mirror)                                     # kept: no second clone
    assert peer.fetch("sppark", tmp_path / "src") == tree


def test_no_network_and_a_wrong_commit_are_said(tmp_path, monkeypatch):
    monkeypatch.setitem(peer.SOURCES, "sppark", ("file:///nowhere/sppark", "0" * 40))
    with pytest.raises(peer.PeerUnavailable, match=r"git clone file:///nowhere/sppark failed.*--source sppark=DIR"):
        peer.fetch("sppark", tmp_path / "src")
    mirror = tmp_path / "mirror"
    _repo(mirror)
    with pytest.raises(peer.PeerUnavailable, match="does not hold the pinned commit 000000000000"):
        peer.fetch("sppark", tmp_path / "src", mirror)
    assert not any((tmp_path / "src").iterdir())              # nothing half-made left


def test_the_peers_jacobian_point_reads_back():
    rng = random.Random(7)
    k = rng.randrange(1, F.R)
    x, y = g1_affine_ints(G1Point() * Scalar(k))
    z = rng.randrange(1, F.P)
    X, Y = x * z * z % F.P, y * pow(z, 3, F.P) % F.P
    mont = lambda v: (v << 384) % F.P                         # noqa: E731
    raw = b"".join(mont(v).to_bytes(48, "little") for v in (X, Y, z))
    assert peer.jacobian_to_affine(raw) == (x, y)
    assert peer.jacobian_to_affine(raw[:96] + bytes(48)) is None
    assert peer.jacobian_to_affine(b"".join(mont(v).to_bytes(48, "little") for v in (X + 1, Y, z))) != (x, y)


def test_no_gpu_is_exit_2_and_writes_nothing(tmp_path, monkeypatch, capsys):
    from cuzk import backend
    monkeypatch.setattr(backend, "gpu_status", lambda: (False, "no GPU here"))
    out = tmp_path / "peer.json"
    assert main(["peer", "--msm", "20", "--ntt", "", "--json", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["cuzk: error: peer: no GPU to measure on: no GPU here"] and not out.exists()


@pytest.mark.parametrize("argv, msg", [(["--msm", "2x"], "comma-separated integers"), (["--ntt", "40"], "10..28"),
                                       (["--source", "other=/tmp"], "NAME=DIR"), (["--runs", "0"], "--runs")])
def test_bad_arguments_are_exit_2(argv, msg, capsys):
    assert main(["peer", *argv]) == 2
    assert msg in capsys.readouterr().err


def test_the_shim_builds_against_the_pinned_sources(tmp_path):
    given = os.environ.get("CUZK_TEST_PEER_SOURCES")
    if not given or shutil.which("nvcc") is None:
        pytest.skip("CUZK_TEST_PEER_SOURCES (sppark=DIR,blst=DIR, clones holding the pinned commits) and nvcc")
    mirrors = dict(item.split("=", 1) for item in given.split(","))
    trees = {n: peer.fetch(n, tmp_path / "src", Path(mirrors[n])) for n in peer.SOURCES}
    lib = peer.build(trees["sppark"], trees["blst"], "sm_90", tmp_path / "lib")
    names = subprocess.run(["nm", "-D", str(lib)], capture_output=True, text=True, check=True).stdout
    assert all(f" T {s}" in names for s in ("peer_msm_g1", "peer_ntt", "peer_point_bytes"))
    # blst's host arithmetic (its assembly) is linked in, not left for the loader to miss at dlopen
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(lib)], capture_output=True, text=True,
                               check=True).stdout
    assert not [line for line in undefined.splitlines() if "_384" in line or "mont" in line], undefined


def test_the_tracked_points_are_ops_the_peer_measures():
    from cuzk.perf.suite import PEER_POINTS
    assert all(p.split(":")[0] in peer.OPS and 10 <= int(p.split(":")[1]) <= 28 for p in PEER_POINTS)


def test_local_sources_come_from_the_environment_before_the_flag(tmp_path, monkeypatch, capsys):
    from cuzk import backend
    monkeypatch.setattr(backend, "gpu_status", lambda: (False, "no GPU here"))
    monkeypatch.setenv("CUZK_PEER_SOURCES", f"sppark={tmp_path / 'missing'}")
    assert main(["peer"]) == 2
    err = capsys.readouterr().err              # named as the variable's entry: no --source was given
    assert "is not a folder" in err and "$CUZK_PEER_SOURCES 'sppark=" in err and "--source" not in err, err
    monkeypatch.setenv("CUZK_PEER_SOURCES", "sppark")
    assert main(["peer"]) == 2
    assert "CUZK_PEER_SOURCES: 'sppark' is not NAME=DIR" in capsys.readouterr().err


def test_no_git_is_said(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))                  # no git on it
    with pytest.raises(peer.PeerUnavailable, match="git is not on PATH"):
        peer.fetch("sppark", tmp_path / "src")


def test_a_point_whose_results_differ_is_said_and_has_no_ratio(tmp_path, monkeypatch, capsys):
    rows = [peer.Row("msm_g1", 20, 0.01, 0.02, 0.5, 5, True), peer.Row("ntt", 27, None, None, None, 0, False)]
    monkeypatch.setattr(peer, "measure_all", lambda sizes, runs, mirrors: rows)
    out = tmp_path / "peer.json"
    assert main(["peer", "--json", str(out)]) == 2
    captured = capsys.readouterr()
    assert "results differ: not timed, no ratio" in captured.out and "0.500" in captured.out
    assert captured.err.strip().splitlines()[-1] == ("cuzk: error: peer: the peer's result differs from cuzk's "
                                                     "on the same inputs at ntt 2^27")
    doc = json.loads(out.read_text())                        # the measured row stands beside the unmeasured one
    assert [(r["op"], r["equal"], r["ratio"]) for r in doc["rows"]] == [("msm_g1", True, 0.5), ("ntt", False, None)]


@pytest.mark.parametrize("argv", [["--msm", "", "--ntt", ""], ["--msm", ",", "--ntt", " "]])
def test_no_size_to_measure_is_exit_2_before_any_fetch(tmp_path, monkeypatch, capsys, argv):
    """'' is each option's "none": both none measured nothing, and on a GPU printed an empty table and exit 0
    after fetching and building the peer."""
    def fetched(*a, **kw):
        raise AssertionError("the peer was fetched and built")
    monkeypatch.setattr(peer, "prepare", fetched)
    out = tmp_path / "peer.json"
    assert main(["peer", *argv, "--json", str(out)]) == 2
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert len(err) == 1 and "no size to measure" in err[0] and not out.exists() and cap.out == "", err


def test_the_tracked_ratio_of_a_differing_point_fails_it():
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_peer", Path(__file__).parents[2] / "benchmarks" /
                                                  "bench_peer.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cache = {"msm_g1:20": 0.6, "ntt:27": None}
    assert mod.PeerGap().track_ratio(cache, "msm_g1:20") == 0.6
    with pytest.raises(RuntimeError, match="ntt:27: the peer's result differs"):
        mod.PeerGap().track_ratio(cache, "ntt:27")


def _commit(path: Path, *files: str) -> str:
    subprocess.run(["git", "-C", str(path), "add", *files], check=True)
    subprocess.run(["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "more"],
                   check=True)
    return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.parametrize("tamper", ["edit_in_place", "untracked_header", "assume_unchanged"])
def test_a_cached_tree_that_is_not_the_pins_files_is_fetched_again(tmp_path, monkeypatch, tamper):
    """The cached tree was reused on its HEAD alone: an edited file (its size and mtime kept), or a header added
    beside the sources, was built as the pinned commit."""
    mirror = tmp_path / "mirror"
    sha = _repo(mirror)
    monkeypatch.setitem(peer.SOURCES, "sppark", ("file:///nowhere/sppark", sha))
    tree = peer.fetch("sppark", tmp_path / "src", mirror)
    a = tree / "a.txt"
    if tamper == "untracked_header":
        (tree / "extra.h").write_text("#define X 1\n")
    else:
        st = a.stat()
        with open(a, "r+") as f:                                 # same size, same inode
            f.write("ONE\n")
        os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
        if tamper == "assume_unchanged":
            subprocess.run(["git", "-C", str(tree), "update-index", "--assume-unchanged", "a.txt"], check=True)
    assert peer.fetch("sppark", tmp_path / "src", mirror) == tree
    assert a.read_text() == "one\n" and not (tree / "extra.h").exists()


def test_a_mirror_whose_object_is_not_what_its_name_hashes_to_is_refused(tmp_path, monkeypatch):
    """A local mirror was cloned by copying its objects unread: an altered object under the pin's name was
    checked out as the pinned commit's file."""
    import zlib
    mirror = tmp_path / "mirror"
    sha = _repo(mirror)
    blob = subprocess.run(["git", "-C", str(mirror), "rev-parse", "HEAD:a.txt"], capture_output=True, text=True,
                          check=True).stdout.strip()
    obj = mirror / ".git" / "objects" / blob[:2] / blob[2:]
    obj.chmod(0o644)
    obj.write_bytes(zlib.compress(b"blob 4\0two\n"))
    monkeypatch.setitem(peer.SOURCES, "sppark", ("file:///nowhere/sppark", sha))
    with pytest.raises(peer.PeerUnavailable, match="sppark: git clone .*mirror failed"):
        peer.fetch("sppark", tmp_path / "src", mirror)
    assert not any((tmp_path / "src").iterdir())


def test_a_pinned_link_leading_out_of_the_tree_is_refused(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    _repo(mirror)
    (tmp_path / "outside.h").write_text("#define UNPINNED 1\n")
    (mirror / "inside.h").symlink_to("a.txt")                  # a link within the tree is the commit's own
    (mirror / "out.h").symlink_to("../../outside.h")
    sha = _commit(mirror, "inside.h", "out.h")
    monkeypatch.setitem(peer.SOURCES, "sppark", ("file:///nowhere/sppark", sha))
    with pytest.raises(peer.PeerUnavailable, match="its link out.h leads out of the tree"):
        peer.fetch("sppark", tmp_path / "src", mirror)
    assert not any((tmp_path / "src").iterdir())


def test_a_build_by_another_compiler_is_not_loaded(tmp_path, monkeypatch):
    """The build's name held the sources, the shim and the arch but not the compilers: after a toolkit upgrade
    the old nvcc's library was loaded and timed as the peer."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in ("nvcc", "cc"):           # prints $VERSION; writes the file after -o
        (bin_ / tool).write_text('#!/bin/sh\n[ "$1" = --version ] && { echo "$VERSION"; exit 0; }\n'
                                 'while [ $# -gt 1 ]; do [ "$1" = -o ] && : > "$2"; shift; done\n')
        (bin_ / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    trees = [tmp_path / "sppark-x", tmp_path / "blst-y"]
    monkeypatch.setenv("VERSION", "release 12.8")
    old = peer.build(*trees, "sm_90", tmp_path / "lib")
    assert old.exists() and peer.build(*trees, "sm_90", tmp_path / "lib") == old
    monkeypatch.setenv("VERSION", "release 13.0")
    new = peer.build(*trees, "sm_90", tmp_path / "lib")
    assert new != old and new.exists()


def test_a_gpu_that_cannot_run_fails_the_tracked_points_not_skips(monkeypatch):
    """With CUZK_REQUIRE_GPU set (the nightly) or a GPU present that CuPy cannot use, every cuda benchmark fails;
    the peer's points were skipped as a machine without a GPU."""
    import importlib.util

    from cuzk import backend
    from cuzk.perf import workload
    spec = importlib.util.spec_from_file_location("bench_peer", Path(__file__).parents[2] / "benchmarks" /
                                                  "bench_peer.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(backend, "gpu_status", lambda: (False, "CuPy is not importable"))
    monkeypatch.setattr(backend, "gpu_present", lambda *a, **k: (False, "no NVIDIA device"))
    monkeypatch.delenv("CUZK_REQUIRE_GPU", raising=False)
    assert "unavailable" in mod.PeerGap().setup_cache()           # no GPU at all: skipped, with the reason
    monkeypatch.setenv("CUZK_REQUIRE_GPU", "1")
    with pytest.raises(workload.GpuUnusable, match="CUZK_REQUIRE_GPU is set"):
        mod.PeerGap().setup_cache()
