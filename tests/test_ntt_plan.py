"""The GPU NTT's pass schedule and twiddle math, emulated on the CPU against the reference NTT."""
import random

import numpy as np
import pytest

from cuzk.field import R
from cuzk.gpu import ntt as G
from cuzk.poly import Domain, bitrev_perm, ntt


@pytest.mark.parametrize("kmax", [10, 3, 2])
@pytest.mark.parametrize("gen", [7, 5])
@pytest.mark.parametrize("log_n", [1, 2, 5, 9, 11])
def test_pass_schedule_matches_ntt(monkeypatch, kmax, gen, log_n):
    monkeypatch.setattr(G, "KMAX", kmax)          # small passes: many sub-problems and twiddles
    d = Domain(log_n, gen)
    rng = random.Random(log_n * 100 + kmax)
    a = np.array([rng.randrange(R) for _ in range(d.n)], dtype=object)
    ref = ntt(a, d.omega)
    assert list(G.emulate(a, log_n, d.omega, False)[bitrev_perm(d.n)]) == list(ref)    # DIF
    assert list(G.emulate(a[bitrev_perm(d.n)], log_n, d.omega, True)) == list(ref)     # DIT


def test_plan_covers_every_stage():
    for log_n in range(1, 32):
        passes = G.plan(log_n)
        assert sum(k for _, k, _ in passes) == log_n
        assert all(k <= G.KMAX and k + c <= G.KMAX for _, k, c in passes)
