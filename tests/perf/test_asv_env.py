"""What asv measures on a GPU runner: the environments it builds get the runner's CUDA extra (and
nothing that bends the measurement), and a GPU that is present but unusable fails a cuda benchmark
instead of skipping it.

The environment test builds a real asv virtualenv from the package registry (numpy, CuPy's wheel);
it skips, saying so, where the registry cannot be reached."""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from asv_synth import machine_repo
from cuzk import cuda_extra
from cuzk.perf.calibrate import _git

REPO = Path(__file__).resolve().parents[2]
ASV = [sys.executable, "-m", "asv"]
CPU_BENCH = r"bench_prep_msm\.PrepMsm\.track_time\('cpu:8', 'default'\)"
CUDA_BENCH = r"bench_prep_msm\.PrepMsm\.track_time\('cuda:16', 'baseline'\)"


# --- the choice of extra -------------------------------------------------------------------------

def _driver(root: Path, version: str | None, gpus: int = 1) -> Path:
    for i in range(gpus):
        (root / f"proc/driver/nvidia/gpus/0000:0{i}:00.0").mkdir(parents=True)
    if version:
        (root / "proc/driver/nvidia/version").write_text(
            f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {version}  Release Build  (dvs-builder)\n")
    return root


@pytest.mark.parametrize("version, extra", [("580.159.03", "cuda13"), ("570.86.15", "cuda12"),
                                            ("525.60.13", "cuda12")])
def test_the_driver_chooses_the_extra(tmp_path, monkeypatch, version, extra):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    root = _driver(tmp_path, version)
    assert cuda_extra.choose({}, str(root))[0] == extra
    assert cuda_extra.choose({"CUZK_CUDA_EXTRA": "auto"}, str(root))[0] == extra


def test_the_setting_wins_and_a_cpu_machine_gets_none(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    root = _driver(tmp_path / "gpu", "580.159.03")
    assert cuda_extra.choose({"CUZK_CUDA_EXTRA": "cuda12"}, str(root))[0] == "cuda12"
    assert cuda_extra.choose({"CUZK_CUDA_EXTRA": "none"}, str(root))[0] is None
    (tmp_path / "cpu").mkdir()
    assert cuda_extra.choose({}, str(tmp_path / "cpu")) == (None, "no NVIDIA device")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert cuda_extra.choose({}, str(root))[0] is None


def test_a_setting_it_cannot_honour_is_an_error(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with pytest.raises(cuda_extra.ExtraError, match="cuda12, cuda13 or none"):
        cuda_extra.choose({"CUZK_CUDA_EXTRA": "cuda11"}, str(tmp_path))
    with pytest.raises(cuda_extra.ExtraError, match="older"):
        cuda_extra.choose({}, str(_driver(tmp_path / "old", "470.42.01")))
    monkeypatch.setenv("PATH", str(tmp_path))                  # no nvidia-smi either
    with pytest.raises(cuda_extra.ExtraError, match="set CUZK_CUDA_EXTRA"):
        cuda_extra.choose({}, str(_driver(tmp_path / "unknown", None)))
    p = subprocess.run([sys.executable, str(REPO / "cuzk/cuda_extra.py")], capture_output=True, text=True,
                       env=dict(os.environ, CUZK_CUDA_EXTRA="cuda11"))
    assert p.returncode == 2 and "cuda12, cuda13 or none" in p.stderr and p.stdout == ""


def test_the_install_requirement():
    assert cuda_extra.requirement("/w/cuzk.whl", ["bench"], "cuda13") == "/w/cuzk.whl[bench,cuda13]"
    assert cuda_extra.requirement(".", ["test"], None) == ".[test]"
    assert cuda_extra.requirement(".", [], None) == "."


def test_asv_installs_through_the_extra_chooser():
    conf = json.loads((REPO / "asv.conf.json").read_text())
    assert conf["install_command"] == ["in-dir={env_dir} python {conf_dir}/cuzk/cuda_extra.py install "
                                       "--constraints-if-present {conf_dir}/constraints.txt {wheel_file} bench"]
    # each commit's wheel is built with the environment's setuptools (asv installs pyproject's
    # build-system requirements there): no index needed per commit
    assert conf["build_command"] == ["python -m pip wheel --no-deps --no-build-isolation -w {build_cache_dir} "
                                     "{build_dir}"]


def test_asv_conf_names_no_host():
    """Links come from the git remote (cuzk.perf.asv_private.remote_links) or are left out."""
    text = (REPO / "asv.conf.json").read_text()
    assert "OWNER" not in text and "github.com" not in text
    assert not {"project_url", "show_commit_url"} & set(json.loads(text))


def _pip_argv(monkeypatch, argv):
    seen = []
    monkeypatch.setattr(cuda_extra.subprocess, "run", lambda cmd, **kw: seen.append(cmd) or
                        subprocess.CompletedProcess(cmd, 0))
    monkeypatch.setenv("CUZK_CUDA_EXTRA", "none")
    assert cuda_extra.main(argv) == 0
    (cmd,) = seen
    assert cmd[:4] == [sys.executable, "-m", "pip", "install"]
    return cmd[4:]


def test_constraints_are_passed_where_the_file_exists(tmp_path, monkeypatch):
    c = tmp_path / "constraints.txt"
    args = ["install", "--constraints-if-present", str(c), "/w/cuzk.whl", "bench"]
    assert _pip_argv(monkeypatch, args) == ["/w/cuzk.whl[bench]"]                 # no file: no -c
    c.write_text("numpy==2.2.0\n")
    assert _pip_argv(monkeypatch, args) == ["/w/cuzk.whl[bench]", "-c", str(c)]
    assert _pip_argv(monkeypatch, ["install", "--constraints-if-present", str(c), "-e", ".", "perf"]) == \
        ["-e", ".[perf]", "-c", str(c)]
    assert cuda_extra.main(["install", "--constraints-if-present"]) == 2


def test_the_install_command_runs_the_project_checkouts_chooser(tmp_path):
    """asv's {conf_dir} is the folder of the config it is given: in the temporary copy bisect and history
    hand it, the install command still names the project checkout's files (a path with a space and braces
    survives asv's shlex split and str.format)."""
    from asv import util
    from cuzk.perf import asv_private
    proj = tmp_path / "my {proj} dir"
    proj.mkdir()
    (proj / "asv.conf.json").write_text((REPO / "asv.conf.json").read_text())
    (proj / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    (tmp_path / "tmp").mkdir()
    conf, _ = asv_private.write_config(proj, tmp_path / "tmp")
    (cmd,) = json.loads(conf.read_text())["install_command"]
    argv, env, codes, cwd = util.interpolate_command(cmd, {"env_dir": "/e", "wheel_file": "/w/cuzk.whl"})
    assert cwd == "/e"
    assert argv == ["python", f"{proj}/cuzk/cuda_extra.py", "install", "--constraints-if-present",
                    f"{proj}/constraints.txt", "/w/cuzk.whl", "bench"]
    # asv adds the build-system requirements of the pyproject.toml beside the config (--no-build-isolation)
    assert (tmp_path / "tmp" / "pyproject.toml").read_text() == (proj / "pyproject.toml").read_text()


def test_the_measured_extra_holds_nothing_that_bends_it():
    import tomllib
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {r.split("=")[0].split(">")[0].split("[")[0].strip().lower() for r in extras["bench"]}
    assert names == {"asv_runner", "nvidia-ml-py"}
    assert not any("otava" in r for e in ("bench", "perf") for r in extras[e])
    assert any("otava" in r for r in extras["history"])


# --- real asv environments -----------------------------------------------------------------------

def _registry_reachable(tmp: Path) -> bool:
    p = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(tmp),
                        "asv_runner"], capture_output=True, text=True, timeout=120)
    return p.returncode == 0


def _env_packages(repo: Path) -> dict[str, str]:
    """name -> version of every distribution in the (one) environment asv built."""
    envs = [p for p in (repo / ".asv/env").iterdir() if (p / "bin/python").exists()]
    assert len(envs) == 1, envs
    code = "import json, importlib.metadata as m; print(json.dumps({d.metadata['Name'].lower(): d.version " \
           "for d in m.distributions()}))"
    out = subprocess.run([str(envs[0] / "bin/python"), "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def _result(repo: Path, machine: str, sha: str, name: str, target: str, variant: str = "baseline"):
    f = next((repo / ".asv/results" / machine).glob(f"{sha[:8]}-*.json"))
    res = json.loads(f.read_text())
    row = dict(zip(res["result_columns"], res["results"][name]))
    targets, opts = row["params"]
    return row["result"][targets.index(repr(target)) * len(opts) + opts.index(repr(variant))]


@pytest.mark.slow
def test_asv_builds_a_cpu_environment_and_a_gpu_one_with_cupy(tmp_path):
    if not _registry_reachable(tmp_path / "probe"):
        pytest.skip("no package registry reachable: asv cannot build an environment here")
    repo, _, env = machine_repo(REPO, tmp_path, "env-test")
    env["CUDA_VISIBLE_DEVICES"] = ""                    # whatever this machine has: no GPU
    env.pop("CUZK_REQUIRE_GPU", None)
    for k in [k for k in env if k.startswith("VIRTUALENV_")]:
        env.pop(k)

    def run(bench, extra):
        p = subprocess.run(ASV + ["run", "--machine", "env-test", "--launch-method", "spawn", "--show-stderr",
                                  "--bench", bench, "HEAD^!"], cwd=repo, capture_output=True, text=True,
                           env=dict(env, CUZK_CUDA_EXTRA=extra), timeout=1200)
        assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
        return p

    # a CPU machine: the measured environment has the package, bench and nothing of CuPy or otava
    cpu_sha = _git(repo, "rev-parse", "HEAD").strip()
    run(CPU_BENCH, "none")
    pkgs = _env_packages(repo)
    assert {"cuzk", "numpy", "asv_runner", "nvidia-ml-py"} <= set(pkgs)
    assert not {"cupy-cuda12x", "cupy-cuda13x", "apache-otava", "scipy", "google-cloud-bigquery"} & set(pkgs)
    # resolved for the package (within the checkout's constraints.txt, if any), not pinned by otava
    cons = REPO / "constraints.txt"
    pin = re.findall(r"(?im)^\s*numpy\s*==\s*([\w.]+)", cons.read_text()) if cons.is_file() else []
    assert pkgs["numpy"] == pin[0] if pin else pkgs["numpy"] != "2.2.0"
    assert _result(repo, "env-test", cpu_sha, "bench_prep_msm.PrepMsm.track_time", "cpu:8", "default") > 0

    # the runner's setting cuda13: the next commit's install brings CuPy into the environment
    _git(repo, "commit", "-q", "--allow-empty", "-m", "next")
    gpu_sha = _git(repo, "rev-parse", "HEAD").strip()
    run(CUDA_BENCH, "cuda13")
    pkgs = _env_packages(repo)
    assert "cupy-cuda13x" in pkgs and "apache-otava" not in pkgs
    # no GPU here (CUDA_VISIBLE_DEVICES hides any): the cuda parameter is skipped (NaN; a failure is None)
    v = _result(repo, "env-test", gpu_sha, "bench_prep_msm.PrepMsm.track_time", "cuda:16")
    assert v is not None and math.isnan(v)

    # a runner whose GPU is there (NVML says so) but unusable: `asv continuous` fails, never "not changed"
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "pynvml.py").write_text(FAKE_PYNVML)
    # asv hides PYTHONPATH from a built environment's benchmarks: the stand-in goes in through a .pth
    (site,) = (repo / ".asv/env").glob("*/lib/python3*/site-packages")
    (site / "00-fake-nvml.pth").write_text(f"import sys; sys.path.insert(0, {str(fake)!r})\n")
    genv = {k: v for k, v in env.items() if k != "CUDA_VISIBLE_DEVICES"}
    p = subprocess.run(ASV + ["continuous", "--machine", "env-test", "--launch-method", "spawn", "--show-stderr",
                              "--bench", CUDA_BENCH, "HEAD^", "HEAD"], cwd=repo, capture_output=True, text=True,
                       env=dict(genv, CUZK_CUDA_EXTRA="cuda13"), timeout=1200)
    out = p.stdout + p.stderr
    assert p.returncode != 0 and "GpuUnusable" in out, out[-4000:]
    assert "NOT SIGNIFICANTLY CHANGED" not in out


# --- a GPU present but unusable ------------------------------------------------------------------

FAKE_PYNVML = '''
"""A machine with one NVIDIA device as NVML reports it, and no usable CUDA for CuPy."""
def nvmlInit(): pass
def nvmlShutdown(): pass
def nvmlDeviceGetCount(): return 1
def nvmlDeviceGetHandleByIndex(i): return ("dev", i)
def nvmlDeviceGetName(h): return b"Fake H200"
'''


@pytest.fixture(scope="module")
def existing(tmp_path_factory):
    d, sha, env = machine_repo(REPO, tmp_path_factory.mktemp("asv-gpu"), "gpu-test")
    fake = d.parent / "fake"
    fake.mkdir()
    (fake / "pynvml.py").write_text(FAKE_PYNVML)
    (fake / "cupy").mkdir()
    (fake / "cupy/__init__.py").write_text("raise ImportError('libcuda.so.1: cannot open shared object file')\n")
    for k in ("CUZK_REQUIRE_GPU", "CUDA_VISIBLE_DEVICES", "ASV_PYTHONPATH"):
        env.pop(k, None)
    return d, sha, env, fake


def _asv_run(existing, **extra_env):
    d, sha, env, _ = existing
    return subprocess.run(ASV + ["run", "-E", f"existing:{sys.executable}", "--set-commit-hash", sha,
                                 "--machine", "gpu-test", "--launch-method", "spawn", "--show-stderr",
                                 "--bench", CUDA_BENCH], cwd=d, env=dict(env, **extra_env), capture_output=True,
                          text=True, timeout=600)


def _no_gpu_here():
    from cuzk.backend import gpu_present, gpu_status
    if gpu_status()[0] or gpu_present()[0]:
        pytest.skip("this machine has a GPU: the no-GPU cases cannot be staged here")


def test_a_present_gpu_that_cannot_run_fails_the_benchmark(existing):
    _no_gpu_here()
    p = _asv_run(existing, ASV_PYTHONPATH=str(existing[3]))
    out = p.stdout + p.stderr
    assert p.returncode == 2, out[-4000:]
    assert "GpuUnusable" in out and "NVML reports 1 NVIDIA device(s), the first Fake H200" in out
    assert "the cuda backend cannot run" in out


def test_no_gpu_skips_and_require_gpu_fails(existing):
    _no_gpu_here()
    p = _asv_run(existing)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    assert "n/a" in p.stdout or "skipped" in p.stdout.lower()
    p = _asv_run(existing, CUZK_REQUIRE_GPU="1")
    out = p.stdout + p.stderr
    assert p.returncode == 2 and "CUZK_REQUIRE_GPU is set" in out, out[-4000:]
