"""porep_partition: its statistics, the fast writer against the generic ConstraintSystem, the
a∘b = c check, the compact CSR form, and a CPU proof from the fast synthesis path."""
import hashlib
import random

import numpy as np
import pytest

from cuzk import circuits
from cuzk.circuits import porep_partition as pp
from cuzk.field import R, limbs_to_ints
from cuzk.r1cs import CSR, UnsatisfiedError


@pytest.fixture(scope="module", params=[12, 14, 16])
def built(request):
    return request.param, pp.build(request.param)


def test_statistics_match_a_partition(built):
    L, (r1cs, inputs, aux) = built
    d = pp.densities(r1cs)
    assert d["a_aux"] == pytest.approx(0.997, abs=0.002)         # PoRep: 99.7%
    assert d["b_aux"] == pytest.approx(0.254, abs=0.01)          # PoRep: 25.4%
    assert pp.bit_fraction(aux) > 0.98
    unit = 12 * pp.shape(L)[1] + 6
    assert pp.FILL * 2**L - unit <= r1cs.num_constraints <= pp.FILL * 2**L      # filled as a partition
    assert r1cs.num_aux / r1cs.num_constraints == pytest.approx(1, abs=0.005)
    assert 2**(L - 1) < r1cs.qap_rows <= 2**L
    c = pp.counts(L)
    assert (c["constraints"], c["aux"], c["inputs"]) == (r1cs.num_constraints, r1cs.num_aux, r1cs.num_inputs)


def test_full_size_counts():
    c = pp.counts(27)
    assert c["constraints"] == pytest.approx(130_278_869, abs=400)    # docs/architecture.md, Targets
    assert c["aux"] == pytest.approx(130_169_893, rel=0.002)


def test_compact_form_and_int32_columns(built):
    _, (r1cs, _, aux) = built
    for m in (r1cs.A, r1cs.B, r1cs.C):
        assert m.compact and m.cols.dtype == np.int32 and m.index.dtype == np.uint16
        assert len(m.table) < 256
    assert aux.dtype == np.uint32 and aux.shape == (r1cs.num_aux, 8)


def test_satisfied_and_a_flipped_bit_is_caught():
    r1cs, inputs, aux = pp.build(12)
    z = np.concatenate([inputs, limbs_to_ints(aux)])
    r1cs.check(*r1cs.evaluate(z))
    bad = aux.copy()
    bad[5 * 32 + 7, 0] ^= 1                                        # one message bit of m0
    z = np.concatenate([inputs, limbs_to_ints(bad)])
    with pytest.raises(UnsatisfiedError, match="partition"):
        r1cs.check(*r1cs.evaluate(z))


@pytest.mark.parametrize("log_size", [5, 6, 9, 11])
def test_fast_writer_equals_the_constraint_system(log_size):
    fast, fi, fa = pp.build(log_size, seed=3)
    ref, ri, ra = pp.build(log_size, seed=3, reference=True)
    assert (fast.num_inputs, fast.num_aux) == (ref.num_inputs, ref.num_aux)
    for x, y in zip((fast.A, fast.B, fast.C), (ref.A, ref.B, ref.C)):
        assert np.array_equal(x.indptr, y.indptr)
        assert np.array_equal(x.cols, y.cols)
        assert list(x.coeffs) == list(y.coeffs)
    assert list(fi) == list(ri)
    assert list(limbs_to_ints(fa)) == list(ra)
    assert fast.names == ref.names
    assert fast.digest() == ref.digest()                            # compact form hashes as the plain one


def test_seeds_give_different_witnesses_same_circuit():
    a, ia, xa = pp.build(10, seed=1)
    b, ib, xb = pp.build(10, seed=2)
    assert a.digest() == b.digest()
    assert not np.array_equal(xa, xb) and ia[1] != ib[1]


def test_too_small():
    with pytest.raises(ValueError, match="5..27 for porep_partition"):
        circuits.build("porep_partition", 4)
    with pytest.raises(ValueError, match="log-size >= 5"):
        pp.shape(4)


def test_build_converts_limbs_unless_asked():
    _, _, ints = circuits.build("porep_partition", 9)
    _, _, limbs = circuits.build("porep_partition", 9, limbs=True)
    assert ints.dtype == object and list(ints) == list(limbs_to_ints(limbs))


def test_csr_compact_round_trip_and_streamed_digest():
    rng = np.random.default_rng(0)
    m = 50
    counts = rng.integers(0, 4, size=m)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    cols = rng.integers(0, 40, size=indptr[-1]).astype(np.int64)
    vals = np.array([random.Random(i % 7).randrange(R) for i in range(indptr[-1])], dtype=object)
    plain = CSR(indptr, cols, vals)
    comp = CSR.to_compact(plain)
    assert comp.compact and len(comp.table) <= 7
    assert list(comp.coeffs) == list(vals)
    assert np.array_equal(comp.limbs(), plain.limbs())
    z = np.array([random.Random(100 + i).randrange(R) for i in range(40)], dtype=object)
    assert list(comp.matvec(z)) == list(plain.matvec(z))
    h1, h2 = hashlib.sha256(), hashlib.sha256()
    plain.hash_into(h1)
    comp.hash_into(h2, chunk=7)
    assert h1.digest() == h2.digest()


def test_csr_rejects_mixed_forms():
    ip, cols = np.array([0, 1]), np.array([0])
    with pytest.raises(ValueError):
        CSR(ip, cols)
    with pytest.raises(ValueError):
        CSR(ip, cols, np.array([1], dtype=object), table=np.array([1], dtype=object), index=np.array([0], np.uint16))
    with pytest.raises(ValueError, match="uint16"):
        CSR(ip, cols, table=np.array([1], dtype=object), index=np.array([0], np.int64))


def test_cpu_proof_from_the_fast_synthesis():
    from cuzk.backend.cpu import CpuBackend
    from cuzk.groth16 import verify
    from cuzk.keygen import setup
    from cuzk.opts import resolve
    from cuzk.synthesis import synthesize
    from cuzk.prover import Prover
    r1cs, asgs = synthesize("porep_partition", 8, resolve(), seeds=(1, 2))
    pk = setup(r1cs, backend="cpu")
    proofs = Prover(CpuBackend(resolve()), pk).prove(asgs, rng=random.Random(0))
    vk = pk.verifying_key()
    assert all(verify(vk, a.public, p) for a, p in zip(asgs, proofs))
    assert not verify(vk, [asgs[1].public[0], asgs[0].public[1]], proofs[0])


def test_partial_key_cannot_be_saved(tmp_path):
    from cuzk.keygen import setup
    from cuzk.keys import KeyFormatError, ProvingKey
    r1cs, _, _ = pp.build(6)
    pk = setup(r1cs, backend="cpu")
    part = ProvingKey(pk.convention, pk.generator, pk.log_n, pk.num_inputs, pk.num_aux, pk.num_constraints,
                      bytes(32), {k: v for k, v in pk.points.items() if k not in ("a", "h")})
    with pytest.raises(KeyFormatError, match="lacks sections a, h"):
        part.save(tmp_path / "k.cuzkkey")
    assert not list(tmp_path.iterdir())
