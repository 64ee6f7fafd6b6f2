"""CPU checks of the r4d NTT pass (kernels/ntt/dfma.cu, the multiplications on the FP64 pipe): its element
math built for the host with g++ against Python big ints, the 2^260-form twiddle tables, and its
registration. The kernel itself runs in tests/test_gpu_ntt_reg.py (pytest -m gpu)."""
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cuzk.field import FR_MONT_R, R, limbs_to_ints, root_of_unity
from cuzk.gpu import ntt as G

ROOT = Path(__file__).resolve().parents[1]
RP = 1 << 260                     # the DFMA Montgomery radix for Fr (5 x 52-bit limbs)
RP_INV = pow(RP, -1, R)


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH")
def test_element_math_matches_big_ints():
    sys.path.insert(0, str(ROOT / "tools" / "experiments"))
    try:
        import ntt_dfma_check as C
    finally:
        sys.path.pop(0)
    n, bad, ops = C.run(3000)
    assert bad == 0 and n > 9000
    assert set(ops) == {"c", "a", "s", "m", "x", "o", "f", "t"}


def _raw(limbs):
    return [int(v) for v in limbs_to_ints(limbs)]


@pytest.mark.parametrize("gen,inverse", [(7, False), (5, True)])
def test_small_table_is_in_the_2_260_form(gen, inverse):
    w = root_of_unity(G.KMAX, gen)
    if inverse:
        w = pow(w, -1, R)
    raw = _raw(G.small_table_host(gen, inverse, G.DFMA_TW_SCALE))
    assert raw == [pow(w, i, R) * RP % R for i in range(1 << (G.KMAX - 1))]
    # the unscaled table (r2, r4, r8) is unchanged: the Montgomery form
    assert _raw(G.small_table_host(gen, inverse))[:8] == [pow(w, i, R) * FR_MONT_R % R for i in range(8)]


@pytest.mark.parametrize("log_n", [19, 24, 27])
def test_two_level_twiddle_product_is_in_the_2_260_form(log_n):
    """tw_mode 1: dfma mont_mul(tw_hi[e >> bits], tw_lo[e & mask]) = hi lo 2^-260 must be w^e 2^260."""
    w = root_of_unity(log_n, 7)
    lo, hi, bits = G.power_tables_host(w, log_n, G.DFMA_LO_SCALE)
    lo, hi = _raw(lo), _raw(hi)
    rng = random.Random(log_n)
    for e in [0, 1, (1 << bits) - 1, 1 << bits, (1 << log_n) - 1] + [rng.randrange(1 << log_n) for _ in range(200)]:
        assert hi[e >> bits] * lo[e & ((1 << bits) - 1)] * RP_INV % R == pow(w, e, R) * RP % R


def test_data_times_twiddle_keeps_the_2_256_form():
    """The identity the pass relies on: (x 2^256) (w 2^260) 2^-260 = x w 2^256 (mod r)."""
    rng = random.Random(5)
    for _ in range(100):
        x, w = rng.randrange(R), rng.randrange(R)
        assert (x * FR_MONT_R % R) * (w * RP % R) * RP_INV % R == x * w * FR_MONT_R % R
    assert FR_MONT_R * G.DFMA_TW_SCALE % R == RP % R


def test_dfma_variants_are_registered_with_r4_plan():
    src = (ROOT / "kernels" / "ntt/dfma.cu").read_text()
    assert G.DFMA_VARIANTS == {"r4d": 40, "r4m": 32}          # shared-memory bytes per element
    for v in G.DFMA_VARIANTS:
        assert G.VARIANTS[v] == G.VARIANTS["r4"]
        assert f"ntt_{v}_dif" in src and f"ntt_{v}_dit" in src


def test_env_selects_r4d_and_default_stays_r4():
    code = "import cuzk.gpu.ntt as G; print(G.VARIANT)"
    env = {k: v for k, v in os.environ.items() if k != "CUZK_NTT_VARIANT"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "r4"
    env["CUZK_NTT_VARIANT"] = "r4d"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "r4d"
