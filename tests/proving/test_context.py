"""The proving-context builder (cuzk/context.py) on the CPU reference."""
import random

import pytest

from cuzk.backend.cpu import CpuBackend
from cuzk.context import ContextError, context_for_key, device_keygen_wanted, proving_context
from cuzk.groth16 import verify
from cuzk.opts import resolve
from cuzk.synthesis import synthesize


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_key_made_then_cached_and_proofs_verify(cache):
    be = CpuBackend(resolve())
    r1cs, asgs = synthesize("porep_like", 6, resolve(), seeds=(1, 2))
    first = proving_context(be, r1cs)
    assert first.key.where == "cache" and not first.key.cached and first.key.path.startswith(str(cache))
    assert "generated in" in first.key.describe()
    again = proving_context(be, r1cs)
    assert again.key.cached and again.key.path == first.key.path and "(cached)" in again.key.describe()
    proofs = again.prover.prove(asgs, rng=random.Random(1))
    vk = again.pk.verifying_key()
    assert all(verify(vk, a.public, p) for a, p in zip(asgs, proofs))
    shared = context_for_key(CpuBackend(resolve()), again.pk, again.kh)     # one resident key, another backend object
    assert shared.kh is again.kh and shared.key.where == "given"


def test_a_key_resident_on_the_gpu_needs_the_cuda_backend():
    with pytest.raises(ContextError, match="needs the cuda backend"):
        device_keygen_wanted("on", CpuBackend(resolve()), 1 << 10)
    assert not device_keygen_wanted("auto", CpuBackend(resolve()), 1 << 30)    # auto never asks it of the CPU
    assert not device_keygen_wanted(False, CpuBackend(resolve()), 1 << 30)


def test_proving_reports_each_phase_as_it_ends(cache, capsys):
    from cuzk.progress import step_printer
    from cuzk.timing import PHASES
    r1cs, asgs = synthesize("porep_like", 6, resolve(), seeds=(1,))
    ctx = proving_context(CpuBackend(resolve()), r1cs)
    seen = []
    ctx.prover.prove(asgs, rng=random.Random(2), progress=lambda name, s: seen.append((name, s)))
    assert [n for n, _ in seen] == list(PHASES[1:]) and all(s >= 0 for _, s in seen)
    step_printer("proving 2^6 x1")("tail_msm", 0.25)
    assert capsys.readouterr().err == "cuzk: proving 2^6 x1: tail_msm (0.25 s)\n"


@pytest.mark.parametrize("extra", [[], ["--pipeline", "--circuits", "2"]])
def test_bench_refuses_a_gpu_resident_key_on_the_cpu_before_any_work(extra, capsys):
    from cuzk.cli import main
    assert main(["bench", "--backend", "cpu", "--device-keygen", "on", "--log-size", "6", *extra]) == 2
    err = capsys.readouterr().err
    assert "--device-keygen on needs the cuda backend" in err and "key:" not in err
