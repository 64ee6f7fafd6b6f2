"""porep_partition on the GPU: the compact-coefficient SpMV, the key made and kept on the device
(setup_device, sparse B sections) against the downloaded GPU key, and proofs with it.
Run on the device machine: `pytest -m gpu tests/gpu/test_gpu_partition.py`."""
import random

import numpy as np
import pytest

from cuzk.circuits import porep_partition as pp
from cuzk.keygen import ToxicWaste
from cuzk.poly import Domain
from cuzk.qap import COEFF
from cuzk.r1cs import CSR, R1CS

pytestmark = pytest.mark.gpu


def coeff_7(r1cs):
    """The QAP convention and the domain of a coeff key with generator 7 (keygen's defaults), resolved."""
    return COEFF, Domain.for_size(r1cs.qap_rows, 7)


def plain(r1cs):
    """The same circuit with 32-byte coefficients per nonzero (the other device path)."""
    mats = [CSR(m.indptr, m.cols.astype(np.int64), np.array(m.coeffs, dtype=object)) for m in (r1cs.A, r1cs.B, r1cs.C)]
    return R1CS(r1cs.num_inputs, r1cs.num_aux, *mats, names=r1cs.names)


@pytest.fixture(scope="module", params=[12, 16])
def circuit(request):
    return request.param, pp.build(request.param)


def test_compact_spmv_equals_plain(circuit):
    import cupy
    from cuzk.gpu import fr as gfr
    from cuzk.gpu import spmv
    from cuzk.poly import Domain
    L, (r1cs, inputs, aux) = circuit
    z = gfr.upload_split(inputs, aux)
    n = Domain.for_size(r1cs.qap_rows).n
    got = spmv.evaluate(spmv.DeviceR1CS(r1cs), z, n)
    want = spmv.evaluate(spmv.DeviceR1CS(plain(r1cs)), z, n)
    assert bool(cupy.array_equal(got, want))
    bad = aux.copy()
    bad[3, 0] ^= 1
    from cuzk.r1cs import UnsatisfiedError
    with pytest.raises(UnsatisfiedError):
        spmv.evaluate(spmv.DeviceR1CS(r1cs), gfr.upload_split(inputs, bad), n)


def test_upload_limbs_equals_upload(circuit):
    import cupy
    from cuzk.field import limbs_to_ints
    from cuzk.gpu import fr as gfr
    _, (_, inputs, aux) = circuit
    want = gfr.upload(np.concatenate([inputs, limbs_to_ints(aux)]))
    assert bool(cupy.array_equal(gfr.upload_split(inputs, aux), want))


def test_device_key_equals_downloaded_key(circuit):
    import cupy
    from cuzk.gpu import keygen as gk
    _, (r1cs, _, _) = circuit
    tw = ToxicWaste.from_seed(0)
    full = gk.setup(r1cs, *coeff_7(r1cs), tw)
    part, dev = gk.setup_device(r1cs, *coeff_7(r1cs), tw)
    dense = cupy.asnumpy(gk.b_density(r1cs))
    assert 0.2 < dense.mean() < 0.35
    for name in ("alpha_g1", "beta_g1", "beta_g2", "gamma_g2", "delta_g1", "delta_g2", "ic"):
        assert np.array_equal(part.points[name].limbs, full.points[name].limbs), name
    for name in ("a", "l", "h"):
        assert np.array_equal(cupy.asnumpy(dev[name].limbs), full.points[name].limbs), name
        assert np.array_equal(cupy.asnumpy(dev[name].inf), full.points[name].inf), name
    for name in ("b_g1", "b_g2"):
        f = full.points[name]
        assert f.inf[~dense].all(), name                          # B's other points are infinity
        assert np.array_equal(cupy.asnumpy(dev[name].limbs), f.limbs[dense]), name
        rows = cupy.asnumpy(dev[name].rows)
        assert (rows[~dense] == -1).all() and np.array_equal(rows[dense], np.arange(dense.sum()))
    assert part.digest == bytes(32)


@pytest.mark.parametrize("batch", [1, 2])
def test_prove_with_the_device_key(circuit, batch):
    from cuzk.backend.cuda import CudaBackend
    from cuzk.groth16 import verify
    from cuzk.keygen import setup_on_device
    from cuzk.opts import resolve
    from cuzk.synthesis import synthesize
    from cuzk.prover import Prover
    L, _ = circuit
    be = CudaBackend(resolve())
    r1cs, asgs = synthesize("porep_partition", L, be.opts, seeds=range(1, batch + 1), assign_fn=be.assign)
    pk, kh, info = setup_on_device(r1cs, *coeff_7(r1cs))
    assert info["b_points"] < r1cs.num_vars and "scalars" in info["steps"]
    proofs = Prover(be, pk, kh=kh).prove(asgs, rng=random.Random(1))
    vk = pk.verifying_key()
    assert all(verify(vk, a.public, p) for a, p in zip(asgs, proofs))
    assert not verify(vk, [asgs[0].public[0] + 1, asgs[0].public[1]], proofs[0])


def test_a4_with_a_device_key():
    """A4 (B_G2 on the CPU) with a key made on the GPU: the sparse B_G2 section is downloaded once,
    per variable, and its proofs verify and match the GPU B_G2's."""
    from cuzk.backend.cuda import CudaBackend
    from cuzk.groth16 import verify
    from cuzk.keygen import setup_on_device
    from cuzk.opts import resolve
    from cuzk.synthesis import synthesize
    from cuzk.prover import Prover
    be = CudaBackend(resolve("+A4"))
    r1cs, asgs = synthesize("porep_partition", 10, be.opts, assign_fn=be.assign)
    pk, kh, _ = setup_on_device(r1cs, *coeff_7(r1cs))
    ark = kh.b_g2_ark()
    assert len(ark) == r1cs.num_vars
    vk = pk.verifying_key()
    p4 = Prover(be, pk, kh=kh).prove(asgs, rng=random.Random(3))
    p0 = Prover(CudaBackend(resolve("-A4")), pk, kh=kh).prove(asgs, rng=random.Random(3))
    assert all(verify(vk, a.public, p) for a, p in zip(asgs, p4))
    assert [p.b for p in p4] == [p.b for p in p0]


def test_m2_with_a_device_key():
    """M2 with a key made on the GPU (sparse B sections: their rows, the tail's keep masks): the batch sums
    and tail MSMs equal those one at a time, and the proofs verify."""
    from cuzk.backend.cuda import CudaBackend
    from cuzk.groth16 import verify
    from cuzk.keygen import setup_on_device
    from cuzk.opts import resolve
    from cuzk.synthesis import synthesize
    from cuzk.prover import Prover
    on, off = CudaBackend(resolve("+M2")), CudaBackend(resolve("-M2"))
    r1cs, asgs = synthesize("porep_partition", 10, on.opts, seeds=(1, 2), assign_fn=on.assign)
    pk, kh, _ = setup_on_device(r1cs, *coeff_7(r1cs))
    prep = on.prep_msm(kh, asgs)
    assert on.batch_addition(kh, prep) == off.batch_addition(kh, prep)
    assert on.tail_msm(kh, prep, asgs) == off.tail_msm(kh, prep, asgs)
    proofs = Prover(on, pk, kh=kh).prove(asgs, rng=random.Random(2))
    vk = pk.verifying_key()
    assert all(verify(vk, a.public, p) for a, p in zip(asgs, proofs))


def test_bench_device_keygen(tmp_path, capsys):
    import json
    from cuzk.cli import main
    out = tmp_path / "b.json"
    rc = main(["bench", "--backend", "cuda", "--circuit", "porep_partition", "--log-size", "12",
               "--device-keygen", "on", "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0 and "verified: True" in text and "keygen total" in text and "peak dev MiB" in text
    rep = json.loads(out.read_text())
    assert rep["keygen"]["where"] == "device" and rep["verified"]
    assert rep["phases"]["ntt_msm_h"]["peak_device_bytes"] > 0
