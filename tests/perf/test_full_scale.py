"""The nightly's whole-partition and pipelined-sector figures (cuzk.perf.full_scale) on a machine without
a GPU: a skip, or a failure when the runner says a GPU must be there; figures only from verified runs."""
from __future__ import annotations

import pytest

from cuzk.perf import full_scale, workload


@pytest.fixture
def no_gpu(monkeypatch):
    import cuzk.backend as b
    monkeypatch.setattr(b, "gpu_status", lambda: (False, "CuPy is not importable (ImportError)"))
    monkeypatch.setattr(b, "gpu_present", lambda *a, **k: (False, "no NVIDIA device"))
    monkeypatch.delenv("CUZK_REQUIRE_GPU", raising=False)


def test_without_a_gpu_both_are_unavailable(no_gpu):
    for fn in (full_scale.partition_samples, full_scale.pipeline_figures):
        got = fn()
        assert set(got) == {"unavailable"} and "CuPy is not importable" in got["unavailable"]


def test_a_runner_that_must_have_a_gpu_fails_instead(no_gpu, monkeypatch):
    monkeypatch.setenv("CUZK_REQUIRE_GPU", "1")
    for fn in (full_scale.partition_samples, full_scale.pipeline_figures):
        with pytest.raises(workload.GpuUnusable, match="CUZK_REQUIRE_GPU"):
            fn()


def _report(verified=True, busy=18.0):
    return {"verified": verified, "pipeline": {"wall_s": 24.0, "s_per_proof": 2.4, "circuits": 10, "gpu_busy_s": busy}}


def test_figures_of_a_verified_run():
    f = full_scale.figures(_report())
    assert f == {"s_per_proof": 2.4, "wall_s": 24.0, "proofs": 10, "gpu_busy_fraction": 0.75}


@pytest.mark.parametrize("report, what", [
    (_report(verified=False), "did not all verify"),
    (_report(busy=None), "no device spans"),
    ({"verified": True}, "not a pipelined bench report"),
])
def test_no_figure_from_a_run_that_is_not_sound(report, what):
    with pytest.raises(RuntimeError, match=what):
        full_scale.figures(report, "p27.json")
