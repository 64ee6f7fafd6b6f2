import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from cuzk import field as F

fr = st.integers(min_value=0, max_value=F.R - 1)
fp = st.integers(min_value=0, max_value=F.P - 1)


@given(st.lists(fr, min_size=1, max_size=40))
def test_fr_limbs_roundtrip(xs):
    limbs = F.fr_to_limbs(xs, mont=False)
    assert limbs.dtype == np.uint32 and limbs.shape == (len(xs), 8)
    assert list(F.fr_from_limbs(limbs, mont=False)) == xs
    assert list(F.fr_from_limbs(F.fr_to_limbs(xs))) == xs


@given(st.lists(fp, min_size=1, max_size=40))
def test_fp_mont_roundtrip_and_layout(xs):
    m = F.fp_to_limbs(xs)
    assert m.shape == (len(xs), 12)
    # little-endian limbs of x * 2^384 mod p
    for x, row in zip(xs, m):
        v = sum(int(w) << (32 * i) for i, w in enumerate(row))
        assert v == x * 2**384 % F.P
    assert list(F.fp_from_limbs(m)) == xs


def test_limbs_reject_unreduced():
    bad = F.ints_to_limbs([F.R], 8)
    with pytest.raises(ValueError):
        F.fr_from_limbs(bad, mont=False)
    with pytest.raises(ValueError):
        F.ints_to_limbs([1 << 256], 8)


def test_cios_constants():
    assert (F.P * F.FP_INV32) % 2**32 == 2**32 - 1
    assert (F.R * F.FR_INV32) % 2**32 == 2**32 - 1


@pytest.mark.parametrize("gen", [5, 7])
def test_roots_of_unity(gen):
    for k in (1, 5, 12, 32):
        w = F.root_of_unity(k, gen)
        assert pow(w, 1 << k, F.R) == 1
        assert pow(w, 1 << (k - 1), F.R) == F.R - 1
    with pytest.raises(ValueError):
        F.root_of_unity(33, gen)


def test_snarkjs_root_matches_design():
    # snarkjs's W32 for bls12381, generator 5
    assert hex(F.root_of_unity(32, 5)).startswith("0x212d79e")
    assert hex(F.root_of_unity(32, 5)).endswith("2f1f")


@settings(max_examples=20)
@given(fr.filter(bool), st.integers(min_value=0, max_value=70))
def test_powers(x, n):
    p = F.fr_powers(x, n)
    assert [int(v) for v in p] == [pow(x, i, F.R) for i in range(n)]


@given(st.lists(fr.filter(bool), min_size=1, max_size=33))
def test_batch_inverse(xs):
    inv = F.fr_batch_inverse(np.array(xs, dtype=object))
    assert all(int(a) * int(b) % F.R == 1 for a, b in zip(xs, inv))


def test_batch_inverse_zero():
    with pytest.raises(ZeroDivisionError):
        F.fr_batch_inverse(np.array([1, 0, 2], dtype=object))
