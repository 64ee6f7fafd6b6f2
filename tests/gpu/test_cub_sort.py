"""K1's sort without a GPU: the key bits it sorts by, and the shim that nvcc builds (kernels/host/cub_sort.cu)."""
import ctypes
import shutil

import numpy as np
import pytest

from cuzk.gpu import cub_library
from cuzk.gpu.msm import options
from cuzk.gpu.msm import plan


@pytest.mark.parametrize("nb", [1, 2, 3, 255, 256, 1 << 19, 13 << 19, 1 << 21, 3 << 22])
def test_sort_bits_keep_zero_key_last(nb):
    lo, hi = plan.sort_bits(nb)
    assert lo == 32 and hi <= 64
    field = lambda k: (k >> lo) & ((1 << (hi - lo)) - 1)     # noqa: E731
    ids = [0, nb - 1] + ([nb // 2] if nb > 2 else [])
    assert all(field((b << 32) | 0xFFFFFFFF) == b for b in ids)          # every bucket id survives the mask
    assert field(plan.ZERO_KEY) > nb - 1                                  # and ZERO_KEY stays above them


@pytest.mark.parametrize("opt", ["K1", "K3", "K4", "K5", "K6", "K8", "K9", "K10", "K11", "K15"])
def test_k_opts_are_msm_toggles_that_change_no_kernel_build(opt):
    from cuzk.plans import MSM_KERNELS, msm_kernels_of as K
    assert opt in MSM_KERNELS
    for g in (1, 2):
        for ko in [(), ("S1",), ("I1", "I2"), ("S1", "L1", "I1", "I2")]:
            assert options.kernel_build(g, K(ko)) == options.kernel_build(g, K((*ko, opt)))


def test_library_path_follows_the_source(tmp_path, monkeypatch):
    monkeypatch.setenv("CUZK_CUBIN_DIR", str(tmp_path))
    a, b = cub_library.library_path("sm_90"), cub_library.library_path("sm_80")
    assert a.parent == tmp_path and a.suffix == ".so" and a != b and a.name.startswith("cub_sort-sm_90-")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_shim_builds_and_exports_its_calls(tmp_path):
    out = cub_library.build("sm_90", tmp_path / "cub_sort.so")
    lib = ctypes.CDLL(str(out))
    for name in ("cuzk_sort_u64_temp_bytes", "cuzk_sort_u64", "cuzk_cuda_error_string"):
        assert hasattr(lib, name)
    lib.cuzk_cuda_error_string.restype = ctypes.c_char_p
    assert lib.cuzk_cuda_error_string(0) == b"no error"


def test_build_without_nvcc_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(cub_library.shutil, "which", lambda _: None)
    with pytest.raises(cub_library.SortUnavailable, match="nvcc is not on PATH"):
        cub_library.build("sm_90", tmp_path / "x.so")
    assert not list(tmp_path.iterdir())


def test_model_sort_matches_the_full_sort():
    """The CPU model's sort (tests/gpu/test_msm_model.py) is K1's: stable over sort_bits; it equals np.sort on keys
    shaped as the digits kernel writes them."""
    from test_msm_model import ModelKernels
    rng = np.random.default_rng(5)
    n, nb = 5000, 1 << 9
    keys = (rng.integers(0, nb, n, dtype=np.uint64) << np.uint64(32)) | (np.arange(n, dtype=np.uint64) << np.uint64(1))
    keys[rng.random(n) < 0.2] = np.uint64(plan.ZERO_KEY)
    assert np.array_equal(ModelKernels.sort(keys, nb), np.sort(keys))


@pytest.mark.parametrize("nb", [1, 7, 256, 1 << 12])
def test_direct_offsets_equal_the_shifted_form(nb):
    """K3: searching the sorted keys for b << 32 gives the offsets of the search over their high words, with empty
    buckets, ZERO_KEYs (offsets[nb] = the valid count) and all-zero inputs."""
    rng = np.random.default_rng(nb)
    for n, zeros in [(0, 0.0), (1, 0.0), (3000, 0.3), (3000, 1.0)]:
        keys = (rng.integers(0, nb, n, dtype=np.uint64) << np.uint64(32)) | (np.arange(n, dtype=np.uint64) << np.uint64(1))
        keys[rng.random(n) < zeros] = np.uint64(plan.ZERO_KEY)
        keys = np.sort(keys)
        a = plan.bucket_offsets(keys, nb, np, direct=True)
        assert np.array_equal(a, plan.bucket_offsets(keys, nb, np))
        assert a[-1] == np.count_nonzero(keys != np.uint64(plan.ZERO_KEY)) and a.dtype == np.int64
