"""GPU key generation (kernels/keygen/*.cu, cuzk/gpu/keygen.py) against arkworks and the CPU setup.
Run on the device machine: `pytest -m gpu tests/gpu/test_gpu_keygen.py`."""
import random

import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk import circuits, keygen
from cuzk import field as F
from cuzk.curve import ark_to_limbs
from cuzk.poly import Domain
from cuzk.qap import qap

pytestmark = pytest.mark.gpu

CLS = {1: G1Point, 2: G2Point}
EDGE = [0, 1, 2, F.R - 1, F.R - 2, (F.R - 1) // 2, 1 << 254, (1 << 255) % F.R, (1 << 128) - 1]


@pytest.fixture(scope="module")
def cp():
    import cupy
    return cupy


def expected(group, scalars, base=None):
    B = CLS[group]() if base is None else base
    pts = [B * Scalar(s) if s else CLS[group].identity() for s in scalars]
    return ark_to_limbs(group, pts)


def run(cp, group, c, scalars, base=None):
    from cuzk.gpu.keygen import FixedBase
    fb = FixedBase(group, c, None if base is None else base.to_compressed_bytes())
    limbs, inf = fb(cp.asarray(F.fr_to_limbs(np.array(scalars, dtype=object))))
    return cp.asnumpy(limbs), cp.asnumpy(inf)


@pytest.mark.parametrize("group,c", [(1, 8), (1, 10), (1, 12), (1, 16), (2, 8), (2, 12), (2, 16)])
@pytest.mark.parametrize("n", [1, 33, 200])
def test_fixed_base_matches_arkworks(cp, group, c, n):
    rng = random.Random(n * 100 + c)
    sc = [rng.randrange(F.R)] if n == 1 else EDGE + [rng.randrange(F.R) for _ in range(n - len(EDGE))]
    rng.shuffle(sc)
    limbs, inf = run(cp, group, c, sc)
    want_limbs, want_inf = expected(group, sc)
    assert (inf == want_inf).all()
    assert (limbs == want_limbs).all()


@pytest.mark.parametrize("group", [1, 2])
def test_fixed_base_grid_stride_and_tail(cp, group):
    """More points than one grid of threads (the grid-stride loop, the G2 scratch slots reused),
    a count that is no multiple of 32, and zeros scattered in (lanes without a finite point)."""
    from cuzk.gpu import keygen as gk
    rng = random.Random(group)
    distinct = EDGE + [rng.randrange(F.R) for _ in range(55)]
    n = gk._sm_count() * gk.BLOCKS_PER_SM * gk.THREADS * 2 + 77
    pick = np.array([rng.randrange(len(distinct)) for _ in range(n)])
    limbs, inf = run(cp, group, 8, [distinct[i] for i in pick])
    want_limbs, want_inf = expected(group, distinct)
    assert (inf == want_inf[pick]).all()
    assert (limbs == want_limbs[pick]).all()


def test_fixed_base_other_base(cp):
    base = G1Point() * Scalar(987654321)
    sc = EDGE + [random.Random(5).randrange(F.R) for _ in range(40)]
    limbs, inf = run(cp, 1, 8, sc, base)
    wl, wi = expected(1, sc, base)
    assert (inf == wi).all() and (limbs == wl).all()
    base2 = G2Point() * Scalar(31337)
    limbs, inf = run(cp, 2, 8, sc, base2)
    wl, wi = expected(2, sc, base2)
    assert (inf == wi).all() and (limbs == wl).all()


@pytest.mark.parametrize("circuit,log", [("porep_like", 6), ("porep_like", 9), ("mulchain", 8)])
@pytest.mark.parametrize("gen", [7, 5])
def test_qap_and_h_scalars_match_cpu(cp, circuit, log, gen):
    from cuzk.gpu import fr as gfr
    from cuzk.gpu import keygen as gk
    r1cs, _, _ = circuits.build(circuit, log)
    domain = Domain.for_size(r1cs.qap_rows, gen)
    tw = keygen.ToxicWaste.from_seed(4)
    for got, want in zip(gk.qap_at_tau(r1cs, domain, tw.tau), keygen.qap_at_tau(r1cs, domain, tw.tau)):
        assert list(gfr.download(got)) == list(want)
    for conv in ("coeff", "odd_lagrange"):
        want = (qap(conv).h_query(domain, tw.tau) * tw.delta) % F.R
        assert list(gfr.download(gk.h_scalars(domain, qap(conv), tw.tau, tw.delta))) == list(want)


def _same_key(a, b):
    for f in ("convention", "generator", "log_n", "num_inputs", "num_aux", "num_constraints", "digest"):
        assert getattr(a, f) == getattr(b, f), f
    assert set(a.points) == set(b.points)
    for name in a.points:
        pa, pb = a.points[name], b.points[name]
        assert pa.group == pb.group, name
        assert (pa.inf == pb.inf).all(), name
        assert pa.limbs.shape == pb.limbs.shape and (pa.limbs == pb.limbs).all(), name


@pytest.mark.parametrize("convention", ["coeff", "odd_lagrange"])
@pytest.mark.parametrize("gen", [7, 5])
@pytest.mark.parametrize("circuit,log", [("porep_like", 6), ("porep_like", 8), ("mulchain", 9), ("porep_like", 10)])
def test_gpu_setup_equals_cpu_setup(cp, circuit, log, convention, gen):
    r1cs, _, _ = circuits.build(circuit, log)
    tw = keygen.ToxicWaste.from_seed(log + gen)
    cpu = keygen.setup(r1cs, convention, gen, tw, progress=False, backend="cpu")
    gpu = keygen.setup(r1cs, convention, gen, tw, backend="cuda")
    _same_key(gpu, cpu)


def test_gpu_key_2_12_proves_and_verifies_on_cpu(cp, tmp_path):
    from cuzk.backend.cpu import CpuBackend
    from cuzk.groth16 import verify
    from cuzk.keys import ProvingKey
    from cuzk.opts import resolve
    from cuzk.synthesis import synthesize
    from cuzk.prover import Prover
    from cuzk.timing import PhaseTimer
    r1cs, asgs = synthesize("porep_like", 12, resolve(), seeds=[1, 2])
    pk = keygen.setup(r1cs, "coeff", 7, keygen.ToxicWaste.from_seed(9), backend="cuda")
    pk.save(tmp_path / "k.cuzkkey")
    pk = ProvingKey.load(tmp_path / "k.cuzkkey")
    proofs = Prover(CpuBackend(resolve()), pk).prove(asgs, PhaseTimer(), rng=random.Random(1))
    vk = pk.verifying_key()
    assert all(verify(vk, a.public, p) for a, p in zip(asgs, proofs))
    assert not verify(vk, asgs[1].public, proofs[0])


def test_cached_setup_backend_passthrough(cp):
    r1cs, _, _ = circuits.build("porep_like", 7)
    pk, path, hit = keygen.cached_setup(r1cs, "odd_lagrange", 5, toxic_seed=3, backend="cuda")
    assert not hit and path.exists()
    cpu = keygen.setup(r1cs, "odd_lagrange", 5, keygen.ToxicWaste.from_seed(3), progress=False, backend="cpu")
    _same_key(pk, cpu)
    pk2, _, hit2 = keygen.cached_setup(r1cs, "odd_lagrange", 5, toxic_seed=3, backend="cpu")
    assert hit2
    _same_key(pk2, cpu)
