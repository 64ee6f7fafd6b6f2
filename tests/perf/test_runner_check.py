"""`cuzk runner-check` and the cubin prebuild behind it (cuzk/perf/runner_check.py, cuzk/gpu/cubins.py).

Without a GPU: no pass ever (exit 2, one line), arguments refused before any work, the prebuilt names equal to
the loader's (for this package's kernels and for another commit's), builds through a stand-in nvcc (cached,
failed, interrupted, pruned), and the verdict's arithmetic. On the GPU (-m gpu): the whole check passes."""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cuzk.cli import main
from cuzk.gpu import cub_library, cubins, kernel_sources
from cuzk.perf import runner_check

REPO = Path(__file__).resolve().parents[2]


def _no_gpu(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")        # hides any device: the machine has none


def _cli(capsys, *argv) -> tuple[int, str, list[str]]:
    rc = main(["runner-check", *argv])
    out, err = capsys.readouterr()
    return rc, out, err.strip().splitlines()


# --- never a pass without a GPU; bad input before any work ---------------------------------------------

def test_no_gpu_is_exit_2_and_says_so(monkeypatch, capsys, tmp_path):
    _no_gpu(monkeypatch)
    monkeypatch.setenv("CUZK_CUBIN_DIR", str(tmp_path / "cubin"))
    rc, out, err = _cli(capsys)
    assert rc == 2 and "ready" not in out
    assert len(err) == 1 and "no GPU here" in err[0] and "CUDA_VISIBLE_DEVICES hides every device" in err[0]
    assert not (tmp_path / "cubin").exists()                # nothing was built for a machine that cannot check


@pytest.mark.parametrize("argv, words", [
    (["--samples", "3"], "at least 7"),
    (["--target", "cpu:10"], "cuda target"),
    (["--target", "cuda"], "bad target"),
    (["--phase", "warp_drive"], "not a GPU phase"),
    (["--phase", "synthesis"], "not a GPU phase"),
    (["--commit", "no-such-ref-anywhere"], "not a commit"),
    (["--jobs", "0"], "at least 1"),
    (["--keep-days", "nan"], "--keep-days"),         # NaN: no file older than it, so nothing pruned, silently
])
def test_bad_arguments_are_one_line_before_any_work(monkeypatch, capsys, argv, words):
    _no_gpu(monkeypatch)                 # a check of the GPU would say "no GPU here": the arguments come first
    rc, out, err = _cli(capsys, *argv, "--repo", str(REPO))
    assert rc == 2 and out == "" and len(err) == 1 and words in err[0], err


@pytest.mark.parametrize("kind", ["a file in it", "a link in it", "a file", "a link to a folder"])
def test_a_deep_workdir_that_is_not_new_or_empty_is_one_line_before_any_work(monkeypatch, capsys, tmp_path, kind):
    """What --deep writes (a repo, gate.toml) never lands on what was there: a folder with anything in it (a planted
    gate.toml link), a file, a link: refused before the GPU is looked at, nothing written."""
    _no_gpu(monkeypatch)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    work = tmp_path / "work"
    if kind == "a file in it":
        work.mkdir()
        (work / "notes.txt").write_text("mine\n")
    elif kind == "a link in it":
        work.mkdir()
        (work / "gate.toml").symlink_to(victim)
    elif kind == "a file":
        work.write_text("mine\n")
    else:
        (tmp_path / "elsewhere").mkdir()
        work.symlink_to(tmp_path / "elsewhere")
    rc, out, err = _cli(capsys, "--deep", str(work), "--repo", str(REPO))
    assert rc == 2 and out == "" and len(err) == 1, err
    assert f"--deep {work}: not a new path or an empty folder" in err[0], err
    assert victim.read_text() == "precious\n"
    runner_check.new_or_empty(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    runner_check.new_or_empty(tmp_path / "empty")


def test_a_gpu_that_cupy_cannot_use_fails_and_names_the_check(monkeypatch, capsys):
    import cuzk.backend as backend
    monkeypatch.setattr(backend, "gpu_present", lambda *a, **k: (True, "NVML reports 1 NVIDIA device(s)"))
    monkeypatch.setattr(backend, "gpu_status", lambda: (False, "CuPy is not importable (ImportError)"))
    rc, out, err = _cli(capsys)
    assert rc == 2
    rows = {ln.split("|")[1].strip(): ln.split("|")[2].strip() for ln in out.splitlines()[2:] if ln.startswith("| ")}
    assert rows["gpu"] == "**FAILED**" and all(rows[c] == "not run" for c in ("toolkit", "prebuild", "proof", "point"))
    assert out.splitlines()[-1].startswith("runner-check: NOT ready: failed: gpu")
    assert "gpu" in err[-1] and "not run: toolkit, prebuild, proof, point" in err[-1]


def test_the_verdict_needs_every_check_to_pass():
    rep = runner_check.Report()
    assert not rep.ready                                    # no checks is no pass
    rep.add("gpu", True, "H200")
    assert rep.ready
    rep.add("point", None, "needs the proof")
    assert not rep.ready and rep.failing() == [] and rep.not_run() == ["point"]
    rep.add("proof", False, "x | y")
    assert rep.failing() == ["proof"] and "x / y" in rep.markdown()
    assert rep.verdict() == "runner-check: NOT ready: failed: proof; not run: point"


def test_toolkit_rules():
    assert runner_check.toolkit_problem((13, 0), (13, 0), (13, 0)) is None
    assert runner_check.toolkit_problem((12, 8), (13, 0), (12, 8)) is None          # a newer driver runs older builds
    assert "older than the toolkit" in runner_check.toolkit_problem((13, 0), (12, 8), (12, 8))
    assert "cuda13" in runner_check.toolkit_problem((13, 0), (13, 0), (12, 9))
    assert "cannot be read" in runner_check.toolkit_problem((13, 0), None, None)


# --- the names of prebuilt files are the loader's -------------------------------------------------------

def test_every_module_and_build_is_a_job():
    jobs = cubins.jobs()
    assert jobs[0].name == cub_library.SOURCE
    assert {j.name for j in jobs[1:] if not j.extra} == set(kernel_sources.module_names())
    assert {(j.name, j.extra) for j in jobs if j.extra} == {(n, b) for n, bs in kernel_sources.BUILDS.items()
                                                            for b in bs}


def test_another_trees_names_equal_the_loaders(tmp_path, monkeypatch):
    """A copy of kernels/ (as another commit brings it) gets exactly the names the loader looks up; an edit
    renames only what it touches."""
    monkeypatch.setenv("CUZK_CUBIN_DIR", str(tmp_path / "cubin"))
    other = tmp_path / "kernels"
    shutil.copytree(kernel_sources.kernel_dir(), other, ignore=shutil.ignore_patterns("__pycache__"))
    for arch in ("sm_90", "sm_80"):
        for job in cubins.jobs():
            mine = cubins.target_path(job, arch, other)
            want = (cub_library.library_path(arch) if job.name == cub_library.SOURCE
                    else kernel_sources.cubin_path(job.name, arch, job.extra))
            assert mine == want == cubins.target_path(job, arch), job
    before = {j: cubins.target_path(j, "sm_90", other) for j in cubins.jobs()}
    header = kernel_sources.includes(other / "r1cs/spmv.cu", other)[1]          # one header spmv includes
    header.write_text(header.read_text() + "\n// edited\n")
    after = {j: cubins.target_path(j, "sm_90", other) for j in cubins.jobs()}
    changed = {j.name for j in before if before[j] != after[j]}
    users = {n for n in kernel_sources.module_names() if header in kernel_sources.includes(other / f"{n}.cu", other)}
    assert "r1cs/spmv" in changed and changed == users and cub_library.SOURCE not in changed


def test_a_commits_kernels_are_laid_out_as_the_gate_does(tmp_path, monkeypatch):
    monkeypatch.setenv("CUZK_CUBIN_DIR", str(tmp_path / "cubin"))
    repo = tmp_path / "repo"
    shutil.copytree(REPO / "kernels", repo / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "cuzk").mkdir()
    (repo / "cuzk" / "__init__.py").write_text("")
    shutil.copy(REPO / "pyproject.toml", repo)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "kernels"], check=True)
    # the commit's own export rules would rewrite a kernel (git archive applies them): written from git's objects
    (repo / ".gitattributes").write_text("kernels/** export-subst\nkernels/ntt/** export-ignore\n")
    (repo / "kernels" / "stamp.cuh").write_text("// $Format:%H$\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "export rules"], check=True)
    kdir = runner_check.commit_kernels(repo, "HEAD", tmp_path / "trees")
    assert kdir.is_dir() and kdir.name == "kernels" and (kdir / "stamp.cuh").read_text() == "// $Format:%H$\n"
    assert (kdir / "ntt" / "ntt.cu").is_file()
    (kdir / "stamp.cuh").unlink()
    for job in cubins.jobs():
        assert cubins.target_path(job, "sm_90", kdir) == cubins.target_path(job, "sm_90"), job
    (repo / "outside").symlink_to("/tmp")                 # a tree the gate would refuse: refused here, saying why
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "a link"], check=True)
    with pytest.raises(ValueError, match="'outside' is a symbolic link: the gate measures a tree of regular files"):
        runner_check.commit_kernels(repo, "HEAD", tmp_path / "trees2")


# --- builds through a stand-in nvcc ----------------------------------------------------------------------

FAKE_NVCC = """#!{python}
import os, sys, time
args = sys.argv[1:]
if args == ["--version"]:
    print("nvcc: NVIDIA (R) Cuda compiler driver")
    print(os.environ.get("FAKE_NVCC_RELEASE", "Cuda compilation tools, release 13.0, V13.0.88"))
    sys.exit(0)
out = args[args.index("-o") + 1]
src = args[-1]
log = os.environ["FAKE_NVCC_LOG"]
with open(os.path.join(log, str(os.getpid())), "w") as f:
    f.write(src)
if "FAKE_NVCC_FAIL" in os.environ and src.endswith(os.environ["FAKE_NVCC_FAIL"]):
    print(src + "(1): error: a planted failure", file=sys.stderr)
    sys.exit(1)
if "FAKE_NVCC_SLOW" in os.environ and not src.endswith(os.environ["FAKE_NVCC_SLOW"]):
    time.sleep(60)
elf = b"\\x7fELF\\x02\\x01\\x01" + bytes(57)     # an ELF64 header, no sections: what build() checks of a file
open(out, "wb").write(elf + " ".join(args).encode())
"""


@pytest.fixture
def fake_nvcc(tmp_path, monkeypatch):
    bindir, log = tmp_path / "bin", tmp_path / "nvcc-log"
    bindir.mkdir()
    log.mkdir()
    nvcc = bindir / "nvcc"
    nvcc.write_text(FAKE_NVCC.format(python=sys.executable))
    nvcc.chmod(nvcc.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NVCC_LOG", str(log))
    monkeypatch.setenv("CUZK_CUBIN_DIR", str(tmp_path / "cubin"))
    return log


ONLY = {"r1cs/spmv", "msm/prep"}


def test_build_then_cached_and_renewed(fake_nvcc, tmp_path):
    said = []
    first = cubins.build("sm_90", workers=2, only=ONLY, say=said.append)
    assert [r.status for r in first] == ["built"] * 3 and len(said) == 3
    assert {r.job.name for r in first} == ONLY | {cub_library.SOURCE}
    for r in first:
        assert r.path.is_file() and "-arch=sm_90" in r.path.read_text()
    spmv = next(r for r in first if r.job.name == "r1cs/spmv")
    assert f"-I {kernel_sources.kernel_dir()}" in spmv.path.read_text() and "-cubin" in spmv.path.read_text()
    old = time.time() - 40 * 86400
    for r in first:
        os.utime(r.path, (old, old))
    again = cubins.build("sm_90", workers=2, only=ONLY)
    assert [r.status for r in again] == ["cached"] * 3
    assert all(r.path.stat().st_mtime > old + 86400 for r in again)          # in use: renewed
    assert len(list(fake_nvcc.iterdir())) == 3                               # nvcc ran for the first build only


def test_another_nvcc_rebuilds_everything(fake_nvcc, monkeypatch):
    """Names hash the sources, not the compiler: a new toolkit's nvcc must not be served the old one's code."""
    first = cubins.build("sm_90", workers=2, only=ONLY)
    stamp = kernel_sources.cubin_dir() / cubins.STAMP
    assert stamp.read_text().strip() == "Cuda compilation tools, release 13.0, V13.0.88"
    assert [r.status for r in cubins.build("sm_90", workers=2, only=ONLY)] == ["cached"] * 3
    monkeypatch.setenv("FAKE_NVCC_RELEASE", "Cuda compilation tools, release 13.1, V13.1.80")
    notes = []
    again = cubins.build("sm_90", workers=2, only=ONLY, note=notes.append)
    assert [r.status for r in again] == ["built"] * 3 and [r.path for r in again] == [r.path for r in first]
    assert len(notes) == 1 and "3 cached builds of Cuda compilation tools, release 13.0" in notes[0]
    assert "13.1" in stamp.read_text()
    stamp.unlink()                                     # a cache from before the record: adopted, not rebuilt
    monkeypatch.setenv("FAKE_NVCC_RELEASE", "Cuda compilation tools, release 13.2, V13.2.10")
    assert [r.status for r in cubins.build("sm_90", workers=2, only=ONLY)] == ["cached"] * 3
    assert "13.2" in stamp.read_text()


def _fifo(p):
    os.mkfifo(p)


@pytest.mark.parametrize("damage", {"cut short": lambda p: p.write_bytes(p.read_bytes()[:20]),
                                    "empty": lambda p: p.write_bytes(b""),
                                    "not ELF": lambda p: p.write_bytes(b"#!/bin/sh\n" * 20),
                                    "FIFO": lambda p: (p.unlink(), _fifo(p))}.items(), ids=lambda d: d[0])
def test_a_damaged_build_in_the_cache_is_built_again_not_kept(fake_nvcc, damage):
    first = {r.job.name: r for r in cubins.build("sm_90", workers=2, only=ONLY)}
    bad = first["r1cs/spmv"].path
    damage[1](bad)
    again = {r.job.name: r for r in cubins.build("sm_90", workers=2, only=ONLY)}
    assert again["r1cs/spmv"].status == "built" and again["msm/prep"].status == "cached"
    assert kernel_sources.cubin_problem(bad, None) is None and "-arch=sm_90" in bad.read_text()


def test_a_folder_in_a_builds_place_fails_naming_it(fake_nvcc):
    first = {r.job.name: r for r in cubins.build("sm_90", workers=2, only=ONLY)}
    bad = first["r1cs/spmv"].path
    bad.unlink()
    bad.mkdir()
    again = {r.job.name: r for r in cubins.build("sm_90", workers=2, only=ONLY)}
    assert again["r1cs/spmv"].status == "failed" and str(bad) in again["r1cs/spmv"].error
    assert not list(bad.parent.glob("*.tmp"))


def test_a_failed_build_is_named_and_leaves_nothing(fake_nvcc, monkeypatch):
    monkeypatch.setenv("FAKE_NVCC_FAIL", "r1cs/spmv.cu")
    res = {r.job.name: r for r in cubins.build("sm_90", workers=2, only=ONLY)}
    assert res["r1cs/spmv"].status == "failed" and "a planted failure" in res["r1cs/spmv"].error
    assert res["msm/prep"].status == "built"
    assert sorted(p.name for p in kernel_sources.cubin_dir().iterdir()) == sorted(
        [r.path.name for r in res.values() if r.status == "built"] + [cubins.STAMP])   # no temporary left


@pytest.mark.serial          # how soon it stops, timed
def test_an_interrupt_stops_the_running_compiles(fake_nvcc, monkeypatch):
    monkeypatch.setenv("FAKE_NVCC_SLOW", "r1cs/spmv.cu")                    # every compile but one sleeps 60 s

    def say(r):
        raise KeyboardInterrupt
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        cubins.build("sm_90", workers=4, only=ONLY, say=say)
    assert time.perf_counter() - t0 < 30
    time.sleep(0.5)
    pids = [int(p.name) for p in fake_nvcc.iterdir()]
    assert pids
    for pid in pids:                                                         # no compile outlives the interrupt
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_prune_keeps_what_builds_use(fake_nvcc):
    res = cubins.build("sm_90", workers=2, only=ONLY)
    d = kernel_sources.cubin_dir()
    stale = d / "msm_g2-sm_90-00000000000000000000.cubin"
    stale.write_text("old")
    old = time.time() - 31 * 86400
    os.utime(stale, (old, old))
    (d / "notes.txt").write_text("not a cache file")
    assert cubins.prune(keep_days=30) == [stale]
    assert all(r.path.exists() for r in res) and (d / "notes.txt").exists()
    gone = cubins.prune(keep={res[0].path})
    assert {p.name for p in d.iterdir()} == {res[0].path.name}
    assert {p.name for p in gone} == {r.path.name for r in res[1:]} | {"notes.txt", cubins.STAMP}
    with pytest.raises(ValueError):
        cubins.prune()


def test_build_cubins_tool_refuses_an_unknown_module():
    p = subprocess.run([sys.executable, str(REPO / "tools/build_cubins.py"), "--only", "warp/drive"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "no such modules" in p.stderr and "Traceback" not in p.stderr


# --- on the GPU -------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.quiet_gpu
def test_runner_check_passes_on_a_working_gpu(tmp_path):
    """Prebuild (into the machine's cubin cache: minutes when cold), proof, point, NVML: exit 0."""
    out = tmp_path / "rc.json"
    p = subprocess.run([sys.executable, "-m", "cuzk", "runner-check", "--target", "cuda:12", "--samples", "7",
                        "--json", str(out)], capture_output=True, text=True, timeout=3000)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["ready"] and [c["name"] for c in doc["checks"]] == ["gpu", "nvml", "toolkit", "prebuild", "proof",
                                                                   "point"]
    assert all(c["ok"] for c in doc["checks"]) and "all from the cubin cache" in doc["checks"][4]["detail"]
    assert p.stdout.splitlines()[-1] == "runner-check: ready"


def _no_process_list():
    """NVML that answers everything but the processes on the GPU."""
    from fake_nvml import FakeNvml

    class Fake(FakeNvml):
        def nvmlDeviceGetComputeRunningProcesses(self, h):
            raise RuntimeError("not supported")
    return Fake()


def test_a_process_list_nvml_cannot_read_fails_nvml_and_the_point(monkeypatch):
    """Read as no process, it passed nvml ("0 process(es) on the GPU") and the point's samples, which the guard
    then trusted unjudged, while the gate refuses such a GPU."""
    from types import SimpleNamespace

    from cuzk import nvml
    monkeypatch.setattr(runner_check.nvml, "open_device", lambda: nvml.Nvml(_no_process_list()))
    rep = runner_check.Report()
    assert runner_check.check_nvml(rep) == {}
    assert rep.checks[-1].ok is False and "processes" in rep.checks[-1].detail, rep.checks[-1]

    class Wl:
        spec = SimpleNamespace(target=lambda: "cuda:18")
        last_record = SimpleNamespace(device_s=0.01)

        def measure(self, phase):
            return 0.01
    assert runner_check.check_point(rep, Wl(), "tail_msm", 9) is False
    assert rep.checks[-1].ok is False and "cannot read the GPU's processes" in rep.checks[-1].detail


# --- a commit's own builds --------------------------------------------------------------------------------

def test_this_trees_builds_read_as_data_equal_the_imported_ones():
    text = (REPO / runner_check.BUILDS_FILE).read_text()
    assert kernel_sources.read_builds(text) == kernel_sources.BUILDS


@pytest.mark.parametrize("text, words", [
    ("X = 1\n", "no BUILDS assigned"),
    ("BUILDS = make()\n", "BUILDS is not a literal"),
    ("BUILDS = [1]\n", "BUILDS is not a dict"),
    ("BUILDS = {'../x': ()}\n", "module name '../x'"),
    ("BUILDS = {'msm/g1': ('A=1',)}\n", "not a list of define lists"),
    ("BUILDS = {'msm/g1': (('A=1 -o /tmp/x',),)}\n", "define 'A=1 -o /tmp/x'"),
    ("BUILDS = {'msm/g1': ((1,),)}\n", "define 1"),
    ("def f(:\n", "not Python"),
    ("BUILDS = {[]: ()}\n", "BUILDS is not a literal"),
    ("BUILDS = {'msm/g1': ({[1]},)}\n", "BUILDS is not a literal"),
    ("BUILDS = 1" + "+1" * 100_000 + "\n", "not Python"),
    ("BUILDS = " + "-" * 100_000 + "1\n", "not Python"),
])
def test_a_builds_list_that_is_not_one_is_named(text, words):
    with pytest.raises(ValueError, match=re.escape(words)) as e:
        kernel_sources.read_builds(text, "HEAD: kernel_sources.py")
    assert str(e.value).startswith("HEAD: kernel_sources.py: ")


def test_a_heads_added_build_is_prebuilt_under_the_name_its_loader_looks_up(fake_nvcc, tmp_path):
    """A head whose BUILDS adds a build gets that build prebuilt by nvcc (it used to get this cuzk's list, and its
    worker compiled the new build with NVRTC in the gate, against the base's nvcc cubins)."""
    repo = tmp_path / "repo"
    shutil.copytree(REPO / "kernels", repo / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "cuzk" / "gpu").mkdir(parents=True)
    (repo / "cuzk" / "__init__.py").write_text("")
    shutil.copy(REPO / "pyproject.toml", repo)
    text = (REPO / runner_check.BUILDS_FILE).read_text()
    added = text.replace('"msm/g2": (', '"msm/prep": (("CUZK_PREP_NEW=1",),),\n    "msm/g2": (', 1)
    assert added != text
    (repo / runner_check.BUILDS_FILE).write_text(added)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "a new build"], check=True)
    builds = runner_check.commit_builds(repo, "HEAD")
    assert builds["msm/prep"] == (("CUZK_PREP_NEW=1",),)
    kdir = runner_check.commit_kernels(repo, "HEAD", tmp_path / "trees")
    done = cubins.build("sm_90", kdir, workers=2, only={"msm/prep"}, builds=builds)
    new = [r for r in done if r.job.extra == ("CUZK_PREP_NEW=1",)]
    assert len(new) == 1 and new[0].status == "built" and "-DCUZK_PREP_NEW=1" in new[0].path.read_text()
    assert new[0].path == kernel_sources.cubin_path("msm/prep", "sm_90", ("CUZK_PREP_NEW=1",))
    (repo / runner_check.BUILDS_FILE).unlink()                 # another layout: none, and the caller says so
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "moved"], check=True)
    assert runner_check.commit_builds(repo, "HEAD") is None


def test_the_prebuild_line_says_where_a_commits_builds_were_not_found(fake_nvcc, monkeypatch):
    rep = runner_check.Report()
    seen = []
    monkeypatch.setattr(cubins, "build", lambda arch, kdir, **k: seen.append((kdir, k["builds"])) or [])
    monkeypatch.setattr(cubins, "prune", lambda **k: [])
    ok = runner_check.check_prebuild(rep, "sm_90", {"this cuzk": (None, None), "HEAD": (Path("/k"), None),
                                                    "HEAD^1": (Path("/b"), {"msm/g1": ()})}, 1, None, say=lambda m: 0)
    assert ok and seen == [(None, None), (Path("/k"), None), (Path("/b"), {"msm/g1": ()})]
    (line,) = [c for c in rep.checks if c.name == "prebuild"]
    assert "no cuzk/gpu/kernel_sources.py in HEAD: its builds taken as this cuzk's" in line.detail
