"""K1's CUB radix sort over a bit range (cuzk/gpu/cub_sort.py) against numpy on the host, on fresh random keys.
Run on the device machine: `pytest -m gpu tests/gpu/test_gpu_sort.py`."""
import random
import warnings

import numpy as np
import pytest

from cuzk.gpu.msm import plan as plan
from gpu_msm_cases import seed

pytestmark = pytest.mark.gpu
POISON = 0xDEADBEEFDEADBEEF


@pytest.fixture(scope="module")
def cp():
    import cupy
    return cupy


def _poisoned_pool(cp, n):
    """Leave a freed, poisoned block of n keys in CuPy's pool, so the sort's scratch buffer (which may come
    back as its result) starts as poison, not as an earlier sort's output."""
    junk = cp.full(max(n, 1), POISON, dtype=cp.uint64)
    del junk


def _msm_keys(rng, n, nb, zero_frac=0.1):
    """Keys shaped as msm_digits writes them: bucket id < nb high, index << 1 | sign low, by ascending index
    within each window, ZERO_KEY for zero digits."""
    nr = np.random.default_rng(rng.randrange(1 << 30))
    hi = nr.integers(0, nb, n, dtype=np.uint64)
    lo = (np.arange(n, dtype=np.uint64) << np.uint64(1)) | nr.integers(0, 2, n, dtype=np.uint64)
    keys = (hi << np.uint64(32)) | lo
    keys[nr.random(n) < zero_frac] = np.uint64(plan.ZERO_KEY)
    return keys


@pytest.mark.parametrize("n,nb", [(0, 8), (1, 8), (2, 1), (1000, 256), (4097, 3 << 19), (1 << 20, 1 << 21),
                                  ((1 << 22) + 7, 13 << 19)])
def test_sort_bits_gives_the_full_order(cp, n, nb):
    """MSM-shaped keys sorted over plan.sort_bits(nb) alone equal numpy's full sort (nb a power of two too:
    ZERO_KEY's all-ones bits must stay above every bucket)."""
    from cuzk.gpu.cub_sort import sort_keys
    host = _msm_keys(random.Random(seed()), n, nb)
    d = cp.asarray(host)
    _poisoned_pool(cp, n)
    got = sort_keys(d, *plan.sort_bits(nb), fallback=False)
    assert got.dtype == cp.uint64 and got.shape == (n,)
    assert np.array_equal(cp.asnumpy(got), np.sort(host))


@pytest.mark.parametrize("lo,hi", [(0, 64), (0, 8), (5, 29), (32, 55), (40, 64), (63, 64)])
def test_bit_range_is_a_stable_sort_by_that_field(cp, lo, hi):
    """Any bit range: the keys in the order of a stable sort by bits [lo, hi) (numpy's stable argsort)."""
    from cuzk.gpu.cub_sort import sort_keys
    nr = np.random.default_rng(seed())
    n = 300_001
    host = nr.integers(0, 1 << 64, n, dtype=np.uint64, endpoint=False)
    host[::7] = host[3]                              # repeats
    d = cp.asarray(host)
    _poisoned_pool(cp, n)
    got = cp.asnumpy(sort_keys(d, lo, hi, fallback=False))
    mask = np.uint64((1 << (hi - lo)) - 1) if hi - lo < 64 else np.uint64(2**64 - 1)
    want = host[np.argsort((host >> np.uint64(lo)) & mask, kind="stable")]
    assert np.array_equal(got, want)


def test_sort_keys_bad_input(cp):
    from cuzk.gpu.cub_sort import sort_keys
    with pytest.raises(ValueError, match="uint64"):
        sort_keys(cp.zeros(4, dtype=cp.uint32))
    with pytest.raises(ValueError, match="uint64"):
        sort_keys(cp.zeros((2, 2), dtype=cp.uint64))
    with pytest.raises(ValueError, match="bit range"):
        sort_keys(cp.zeros(4, dtype=cp.uint64), 10, 10)
    with pytest.raises(ValueError, match="bit range"):
        sort_keys(cp.zeros(4, dtype=cp.uint64), 0, 65)


def test_unavailable_library_falls_back_or_raises(cp, monkeypatch):
    """Without the library (no nvcc, a failed build): CuPy's full sort with a warning, or SortUnavailable."""
    from cuzk.gpu import cub_library, cub_sort
    monkeypatch.setattr(cub_sort, "_lib", None)
    monkeypatch.setattr(cub_sort, "_failed", "nvcc is not on PATH")
    host = _msm_keys(random.Random(seed()), 5000, 1 << 10)
    with pytest.warns(UserWarning, match="unavailable"):
        got = cub_sort.sort_keys(cp.asarray(host), *plan.sort_bits(1 << 10))
    assert np.array_equal(cp.asnumpy(got), np.sort(host))
    with pytest.raises(cub_library.SortUnavailable, match="nvcc"):
        cub_sort.sort_keys(cp.asarray(host), 32, 43, fallback=False)


def test_the_library_loads_and_sorts_without_warning(cp):
    """On the device the library is prebuilt (or built by nvcc): K1 does not silently fall back."""
    from cuzk.gpu import cub_sort
    assert cub_sort.available(), cub_sort._failed
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cub_sort.sort_keys(cp.arange(10, dtype=cp.uint64)[::-1].copy())
