"""The GPU NTT's pass schedule and twiddle math, emulated on the CPU against the reference NTT."""
import random

import numpy as np
import pytest

from cuzk.field import R
from cuzk.gpu import ntt_plan as G
from cuzk.poly import Domain, bitrev_perm, ntt

import ntt_emulator as E


@pytest.mark.parametrize("kmax", [10, 3, 2])
@pytest.mark.parametrize("gen", [7, 5])
@pytest.mark.parametrize("log_n", [1, 2, 5, 9, 11])
def test_pass_schedule_matches_ntt(monkeypatch, kmax, gen, log_n):
    monkeypatch.setattr(G, "KMAX", kmax)          # small passes: many sub-problems and twiddles
    d = Domain(log_n, gen)
    rng = random.Random(log_n * 100 + kmax)
    a = np.array([rng.randrange(R) for _ in range(d.n)], dtype=object)
    ref = ntt(a, d.omega)
    assert list(E.emulate(a, log_n, d.omega, False)[bitrev_perm(d.n)]) == list(ref)    # DIF
    assert list(E.emulate(a[bitrev_perm(d.n)], log_n, d.omega, True)) == list(ref)     # DIT


def test_plan_covers_every_stage():
    for log_n in range(1, 32):
        passes = G.plan(log_n)
        assert sum(k for _, k, _ in passes) == log_n
        assert all(k <= G.KMAX and k + c <= G.KMAX for _, k, c in passes)


# --- kernels/ntt/reg.cu: register-radix passes ---

@pytest.mark.parametrize("lr", [2, 3])
@pytest.mark.parametrize("kmax", [10, 4, 5])
@pytest.mark.parametrize("tw1_max,tw1_small", [(0, 18), (31, 18), (31, 4)])
@pytest.mark.parametrize("log_n", [3, 4, 7, 11])
def test_reg_pass_matches_ntt(monkeypatch, lr, kmax, tw1_max, tw1_small, log_n):
    """tw1_small 4: N8's tables of their own size for the larger sub-problems, beside the shared one."""
    monkeypatch.setattr(G, "KMAX", kmax)
    monkeypatch.setattr(G, "TW1_SMALL", tw1_small)
    if any(k < lr for _, k, _ in G.plan(log_n)):
        pytest.skip("the host falls back to the radix-2 kernel")
    gen = 5 if log_n % 2 else 7
    d = Domain(log_n, gen)
    rng = random.Random(log_n * 1000 + kmax * 10 + lr)
    a = np.array([rng.randrange(R) for _ in range(d.n)], dtype=object)
    ref = ntt(a, d.omega)
    got = E.emulate_reg(a, log_n, d.omega, False, lr, tw1_max)
    assert list(got[bitrev_perm(d.n)]) == list(ref)                                        # DIF
    assert list(E.emulate_reg(a[bitrev_perm(d.n)], log_n, d.omega, True, lr, tw1_max)) == list(ref)  # DIT


@pytest.mark.parametrize("feats", ["o", "oz"])
@pytest.mark.parametrize("lr,log_n", [(2, 9), (2, 11), (2, 13), (3, 11), (3, 13)])
def test_reg_pass_features_match_ntt(lr, log_n, feats):
    """N13 (o: odd DIF passes' short group at the top) gives the reference NTT in both directions."""
    d = Domain(log_n, 7)
    rng = random.Random(log_n * 7 + lr)
    a = np.array([rng.randrange(R) for _ in range(d.n)], dtype=object)
    ref = ntt(a, d.omega)
    got = E.emulate_reg(a, log_n, d.omega, False, lr, 31, feats)
    assert list(got[bitrev_perm(d.n)]) == list(ref)
    assert list(E.emulate_reg(a[bitrev_perm(d.n)], log_n, d.omega, True, lr, 31, feats)) == list(ref)


def test_variant_features():
    assert G.split_variant("r4b6dts+oz") == ("r4b6dts", "oz")
    assert G.split_variant("r4b6dts") == ("r4b6dts", "")
    for bad in ("r4b6dts+x", "r4b6dts+p", "nope+o"):
        with pytest.raises(ValueError, match="unknown NTT variant"):
            G.split_variant(bad)
    assert [k for _, k, _ in G.variant_plan("r4b6dts+oz", 27)] == [9, 9, 9]


def test_reg_groups_cover_every_stage_once():
    for lr in (2, 3):
        for k in range(lr, 12):
            for dit, odd_top in ((False, False), (True, False), (False, True)):
                groups = E.reg_groups(k, lr, dit, odd_top)
                stages = [b0 + t for b0, lo, hi in groups
                          for t in (range(lo, hi) if dit else reversed(range(lo, hi)))]
                assert stages == (sorted(stages) if dit else sorted(stages, reverse=True))
                assert sorted(stages) == list(range(k))
                assert all(0 <= b0 <= k - lr for b0, _, _ in groups)
                if odd_top:     # N13: stage 0's group holds lr stages (b0 = 0), the short one is at the top
                    assert groups[-1] == (0, 0, lr) and groups == E.reg_groups(k, lr, True)[::-1]


@pytest.mark.parametrize("lr", [2, 3])
def test_reg_shared_memory_has_no_bank_conflicts(lr):
    for k in range(lr, 12):
        for log_c in range(0, 12 - k):
            assert E.bank_conflicts(k, log_c, lr) == 1, (k, log_c)


@pytest.mark.parametrize("lr", [2, 3])
def test_reg_shared_memory_128_has_no_bank_conflicts(lr):
    """CUZK_NTT_SM128's 16-byte exchanges: every quarter-warp in 8 bank groups (blocks of 8 threads and up)."""
    for k in range(lr, 12):
        for log_c in range(0, 12 - k):
            if (1 << (k + log_c)) >> lr >= 8:
                assert E.bank_conflicts(k, log_c, lr, vec4=True) == 1, (k, log_c)


def test_bank_check_128_can_fail(monkeypatch):
    monkeypatch.setattr(E, "SWZ4", (0, 0, 0))
    assert E.bank_conflicts(9, 1, 2, vec4=True) > 1


def test_bank_check_can_fail(monkeypatch):
    monkeypatch.setattr(E, "SWZ", (0, 0, 0))
    assert E.bank_conflicts(9, 0, 3) > 1


def test_pass_twiddles():
    assert G.pass_twiddles(G.plan(27), 18) == [(1, 0), (2, 18), (0, 0)]    # tw_hi * tw_lo, then the 2^18 table
    assert G.pass_twiddles(G.plan(27), 31) == [(2, 27), (2, 18), (0, 0)]   # N8: a 2^27 table for the first pass
    assert G.pass_twiddles(G.plan(27), 0) == [(1, 0), (1, 0), (0, 0)]
    assert G.pass_twiddles(G.plan(20), 18) == [(1, 0), (0, 0)]
    assert G.pass_twiddles(G.plan(20), 31) == [(2, 20), (0, 0)]
    assert G.pass_twiddles(G.plan(24), 31) == [(2, 24), (2, 16), (0, 0)]
    assert G.pass_twiddles(G.plan(9), 31) == [(0, 0)]


def test_tw1_bits():
    assert G.tw1_bits(G.plan(27), 18) == 18          # 9+9+9: the second pass only
    assert G.tw1_bits(G.plan(27), 0) == 0
    assert G.tw1_bits(G.plan(20), 18) == 0           # 10+10: the first pass is 2^20
    assert G.tw1_bits(G.plan(20), 20) == 20
    assert G.tw1_bits(G.plan(9), 18) == 0            # one pass: no twiddle


def test_swz4_table_is_the_bitwise_swizzle():
    """ntt/reg.cuh's swz4 reads its XOR term from SWZ4_LUT, one 4-bit entry per value of slot bits 3..5: the same
    function as SWZ4's bits, and the kernel carries that constant."""
    from pathlib import Path
    s = np.arange(1 << 12)
    assert (s ^ ((E.SWZ4_LUT >> ((s >> 1) & 28)) & 7) == E.swz4(s)).all()
    src = (Path(G.__file__).parents[2] / "kernels" / "ntt/reg.cuh").read_text()
    assert f"#define SWZ4_LUT {E.SWZ4_LUT:#010x}u" in src
