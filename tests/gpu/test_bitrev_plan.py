"""kernels/ntt/bitrev.cuh's index math on the CPU (N5): every tile's reads and writes, for the sizes the GPU runs,
make the bit-reversal permutation, and each warp's shared-memory accesses hit 32 distinct banks."""
import numpy as np
import pytest

from cuzk.gpu.ntt_plan import BR_T

T = 1 << BR_T


def rev(x: np.ndarray, bits: int) -> np.ndarray:
    out = np.zeros_like(x)
    for b in range(bits):
        out |= ((x >> b) & 1) << (bits - 1 - b)
    return out


def slot(a, c):                      # br_slot
    return (a << BR_T) | (c ^ (a & 14))


@pytest.mark.parametrize("log_n", [8, 9, 12, 15])
def test_tiles_make_the_bit_reversal(log_n):
    mid = log_n - 2 * BR_T
    m = np.arange(1 << mid, dtype=np.int64)[:, None]          # blocks
    tid = np.arange(T * T, dtype=np.int64)[None, :]
    hi, lo = tid >> BR_T, tid & (T - 1)
    rm = rev(m, mid) if mid else np.zeros_like(m)
    # read phase: thread (hi, lo) loads input j into slot(hi, lo)
    j = (hi << (log_n - BR_T)) | (m << BR_T) | lo
    sm = np.full((1 << mid, T * T), -1, dtype=np.int64)
    np.put_along_axis(sm, np.broadcast_to(slot(hi, lo), j.shape), j, axis=1)
    assert (sm >= 0).all()                                      # every slot written once
    # write phase: thread (hi, lo) stores slot(rev(lo), hi) at output e
    src = np.take_along_axis(sm, np.broadcast_to(slot(rev(lo, BR_T), hi), j.shape), axis=1)
    e = (rev(hi, BR_T) << (log_n - BR_T)) | (rm << BR_T) | lo
    out = np.full(1 << log_n, -1, dtype=np.int64)
    out[e.ravel()] = src.ravel()
    assert (out == rev(np.arange(1 << log_n, dtype=np.int64), log_n)).all()
    # global runs: 16 consecutive threads read and write 16 consecutive elements
    assert (np.diff(j.reshape(-1, T), axis=1) == 1).all() and (np.diff(e.reshape(-1, T), axis=1) == 1).all()


def test_warps_hit_32_banks():
    tid = np.arange(T * T)
    hi, lo = tid >> BR_T, tid & (T - 1)
    for s in (slot(hi, lo), slot(rev(lo, BR_T), hi)):          # the stores, then the loads
        for w in range(T * T // 32):
            assert len(set((s[32 * w: 32 * w + 32] % 32).tolist())) == 32
