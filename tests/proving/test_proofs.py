"""End-to-end proofs on the CPU reference, verified by arkworks (and some by blst)."""
import random

import pytest
from py_arkworks_bls12381 import G1Point, Scalar

from cuzk.backend.cpu import CpuBackend
from cuzk.field import R
from cuzk.groth16 import Proof, verify, verify_blst
from cuzk.keygen import cached_setup
from cuzk.opts import resolve
from cuzk.synthesis import synthesize
from cuzk.prover import Prover
from cuzk.timing import PHASES, PhaseTimer

CASES = [(c, k) for k in (4, 6, 8, 10, 12) for c in ("porep_like", "mulchain") if not (c == "mulchain" and k == 12)]


def prove(circuit, log_size, convention, generator=7, n=1, seed=0):
    r1cs, asgs = synthesize(circuit, log_size, resolve(), seeds=range(1 + seed, n + 1 + seed))
    pk, _, _ = cached_setup(r1cs, convention, generator)
    timer = PhaseTimer()
    proofs = Prover(CpuBackend(resolve()), pk).prove(asgs, timer, rng=random.Random(log_size))
    return pk, asgs, proofs, timer


@pytest.mark.parametrize("convention", ["coeff", "odd_lagrange"])
@pytest.mark.parametrize("circuit,log_size", CASES)
def test_proof_verifies(circuit, log_size, convention):
    pk, asgs, proofs, timer = prove(circuit, log_size, convention)
    assert pk.log_n == log_size
    vk = pk.verifying_key()
    assert verify(vk, asgs[0].public, proofs[0])
    assert set(timer.as_dict()) == set(PHASES) - {"synthesis"}
    assert all(r["device_s"] is None for r in timer.as_dict().values())


@pytest.mark.parametrize("convention,generator", [("coeff", 5), ("odd_lagrange", 7), ("odd_lagrange", 5)])
def test_batch_of_three_and_blst(convention, generator):
    pk, asgs, proofs, _ = prove("porep_like", 8, convention, generator, n=3)
    vk = pk.verifying_key()
    assert len({tuple(a.public) for a in asgs}) == 3          # distinct witnesses
    for a, p in zip(asgs, proofs):
        assert verify(vk, a.public, p)
        assert verify_blst(vk, a.public, p)


def test_rejects_tampered_proof_and_wrong_public():
    pk, asgs, proofs, _ = prove("porep_like", 6, "coeff")
    vk, pub, p = pk.verifying_key(), asgs[0].public, proofs[0]
    assert verify(vk, pub, p) and verify_blst(vk, pub, p)
    bad_pub = [pub[0] + 1] + pub[1:]
    assert not verify(vk, bad_pub, p) and not verify_blst(vk, bad_pub, p)
    bumped = Proof(p.a + G1Point(), p.b, p.c)
    assert not verify(vk, pub, bumped) and not verify_blst(vk, pub, bumped)
    swapped = Proof(p.a, p.b, p.c * Scalar(2))
    assert not verify(vk, pub, swapped)
    # x + r and x - r are other statements, not x: both verifiers refuse them rather than reduce
    for alias in ([pub[0] + R] + pub[1:], [pub[0] - R] + pub[1:]):
        for check in (verify, verify_blst):
            with pytest.raises(ValueError, match="not a reduced Fr element"):
                check(vk, alias, p)


def test_randomized_proofs_differ():
    r1cs, asgs = synthesize("mulchain", 6, resolve())
    pk, _, _ = cached_setup(r1cs)
    pr = Prover(CpuBackend(resolve()), pk)
    p1, p2 = pr.prove(asgs)[0], pr.prove(asgs)[0]
    assert p1.a != p2.a
    vk = pk.verifying_key()
    assert verify(vk, asgs[0].public, p1) and verify(vk, asgs[0].public, p2)


def test_seeded_randomness_is_reproducible():
    r1cs, asgs = synthesize("mulchain", 5, resolve())
    pk, _, _ = cached_setup(r1cs)
    pr = Prover(CpuBackend(resolve()), pk)
    assert pr.prove(asgs, rng=random.Random(3))[0] == pr.prove(asgs, rng=random.Random(3))[0]


def test_verifying_keys_compare_by_their_points():
    """The pipelined run checks every device's key against the first by ==: equal points are equal keys, and a
    key of another set-up (another generator: other toxic waste) or with one point moved is not."""
    from dataclasses import replace
    pk, _, _, _ = prove("porep_like", 6, "coeff")
    again, _, _, _ = prove("porep_like", 6, "coeff")
    other, _, _, _ = prove("porep_like", 6, "coeff", generator=5)
    vk = pk.verifying_key()
    assert vk == again.verifying_key() and vk is not again.verifying_key()
    assert vk != other.verifying_key()
    assert vk != replace(vk, delta_g2=vk.delta_g2 + vk.delta_g2)
    assert vk != replace(vk, ic=vk.ic[:-1] + [vk.ic[-1] + G1Point()])
