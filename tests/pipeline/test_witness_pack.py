"""B2: the packed witness (bits plus the other entries) for the pipeline's hand-off and upload."""
from __future__ import annotations

import numpy as np
import pytest

from cuzk import circuits
from cuzk.field import FR_LIMBS, FR_MONT_R, R, fr_array, ints_to_limbs, limbs_to_ints
from cuzk.opts import resolve
from cuzk.witness_pack import PackedWitness, mont_one, pack, unpack_host, unpack_into

LOG = 10


def _witness(n: int, other: float, seed: int) -> np.ndarray:
    """Canonical limbs: 0/1 everywhere but a share `other` of random field elements (some of them
    2..2^32, some full size), never on a byte boundary."""
    rng = np.random.default_rng(seed)
    v = rng.integers(0, 2, size=n).astype(object)
    pick = np.flatnonzero(rng.random(n) < other)
    v[pick] = [int(x) for x in rng.integers(2, 2**32, size=len(pick))]
    big = pick[::2]
    v[big] = [int.from_bytes(rng.bytes(32), "little") % R for _ in big]
    return ints_to_limbs(fr_array(v), FR_LIMBS)


def _to_mont_host(x: np.ndarray) -> np.ndarray:
    x[...] = ints_to_limbs((limbs_to_ints(x) * FR_MONT_R) % R, FR_LIMBS)
    return x


@pytest.mark.parametrize("n", [1, 7, 8, 1003, 4096 + 5])
def test_roundtrip_host_and_montgomery(n):
    limbs = _witness(n, 0.05, n)
    pw = pack(limbs)
    assert isinstance(pw, PackedWitness) and pw.n == n and len(pw.bits) == (n + 7) // 8
    others = [i for i in range(n) if int(limbs_to_ints(limbs[i:i + 1])[0]) > 1]
    assert list(pw.idx) == others
    assert np.array_equal(unpack_host(pw), limbs)
    z = np.full((n, FR_LIMBS), 0xDEADBEEF, dtype=np.uint32)          # poisoned: every entry must be written
    unpack_into(z, pw, np, _to_mont_host)
    assert np.array_equal(z, _to_mont_host(limbs.copy()))


def test_pack_declines_dense_witnesses_and_checks_its_input():
    assert pack(_witness(1000, 0.6, 1)) is None                       # mostly non-bits: plain limbs are smaller
    assert pack(_witness(1000, 0.6, 1), max_other_share=1.0) is not None
    empty = pack(np.zeros((0, FR_LIMBS), np.uint32))
    assert empty.n == 0 and unpack_host(empty).shape == (0, FR_LIMBS)
    with pytest.raises(ValueError, match="canonical uint32"):
        pack(np.zeros((4, 4), np.uint32))
    with pytest.raises(ValueError, match="canonical uint32"):
        pack(np.zeros((4, FR_LIMBS), np.int64))
    pw = pack(_witness(16, 0.0, 2))
    with pytest.raises(ValueError, match="packed witness 16"):
        unpack_into(np.zeros((15, FR_LIMBS), np.uint32), pw, np, _to_mont_host)


def test_mont_one_is_r_mod_r():
    assert int(limbs_to_ints(mont_one()[None])[0]) == FR_MONT_R % R


def test_packed_porep_partition_witness_is_small_and_exact():
    _, inputs, aux = circuits.build("porep_partition", 12, seed=3, limbs=True)
    pw = pack(aux)
    assert pw is not None and np.array_equal(unpack_host(pw), aux)
    assert pw.nbytes < aux.nbytes / 10                                 # ~99% bits


def test_synth_one_packs_with_b2_and_leaves_no_shared_block(shm_blocks):
    from cuzk.pipeline import synth_one
    on, off = resolve("none,+B2"), resolve("none")
    p_on, _, _ = synth_one("porep_partition", 12, on, 5, False, True, share=True)
    assert isinstance(p_on[1], PackedWitness) and p_on[2] is None
    assert shm_blocks.made() and not shm_blocks.left(), "the witness block was unlinked once packed"
    p_off, _, _ = synth_one("porep_partition", 12, off, 5, False, True, share=False)
    assert np.array_equal(unpack_host(p_on[1]), p_off[1]) and list(p_on[0]) == list(p_off[0])
    p_host, _, _ = synth_one("porep_partition", 12, on, 5, False, False)    # no limbs (CPU backend): no packing
    assert not isinstance(p_host[1], PackedWitness)


def test_assignment_z_from_a_packed_witness():
    from cuzk.groth16.assignment import Assignment
    _, inputs, aux = circuits.build("porep_partition", LOG, seed=2, limbs=True)
    a = Assignment(inputs, aux, None, None, None)
    b = Assignment(inputs, None, None, None, None, aux_packed=pack(aux))
    assert b.num_aux == a.num_aux == len(aux)
    assert list(b.z) == list(a.z)


@pytest.mark.gpu
def test_upload_packed_matches_upload_split():
    import cupy
    from cuzk.gpu import fr as gfr
    _, inputs, aux = circuits.build("porep_partition", 14, seed=4, limbs=True)
    for limbs in (aux, _witness(50_001, 0.03, 9)):
        pw = pack(limbs)
        got = gfr.upload_packed(inputs, pw)
        want = gfr.upload_split(inputs, limbs)
        assert bool(cupy.array_equal(got, want))
