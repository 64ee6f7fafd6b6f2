"""`cuzk bisect`'s commands as the gate prints them: a cuda workload's asv environments get CuPy from
the runner's CUZK_CUDA_EXTRA (asv.conf.json's install command), not from the system site-packages."""
from __future__ import annotations

from types import SimpleNamespace

from cuzk.perf import report, suite
from cuzk.perf.workload import Spec


def _outcome(target):
    return SimpleNamespace(config=SimpleNamespace(spec=Spec.parse_target(target, circuit=suite.CIRCUIT, opts="all")))


def test_gate_prints_the_runners_cuda_extra_and_no_system_site_packages(monkeypatch):
    monkeypatch.setenv("CUZK_CUDA_EXTRA", "cuda13")
    oc = _outcome("cuda:18")
    cmd = report.bisect_command(oc, "tail_msm", "b" * 40, "h" * 40)
    find = report.asv_find_command(oc, "tail_msm", "b" * 40, "h" * 40)
    assert cmd.startswith("CUZK_CUDA_EXTRA=cuda13 cuzk bisect tail_msm --target cuda:18 --opts all ")
    hint, line = find.splitlines()
    assert hint.startswith("# asv's environments get CuPy") and "CUZK_CUDA_EXTRA" in hint
    assert line.startswith("CUZK_CUDA_EXTRA=cuda13 asv find ") and "VIRTUALENV" not in find
    monkeypatch.delenv("CUZK_CUDA_EXTRA")
    assert report.asv_find_command(oc, "tail_msm", "b", "h").splitlines()[1].startswith("asv find ")
    cpu = _outcome("cpu:8")
    assert report.asv_find_command(cpu, "tail_msm", "b", "h").startswith("asv find ")
    monkeypatch.setenv("CUZK_CUDA_EXTRA", "cuda13")
    assert report.bisect_command(cpu, "tail_msm", "b", "h").startswith("cuzk bisect ")
