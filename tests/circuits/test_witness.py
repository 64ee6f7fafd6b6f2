"""Witness-only synthesis (circuits.witness): porep_partition's matrix-free witness equals build's bit for
bit and satisfies the circuit; other circuits fall back to build; synthesize builds the circuit once."""
from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk import circuits
from cuzk.circuits import porep_partition as pp
from cuzk.field import limbs_to_ints
from cuzk.opts import resolve
from cuzk.r1cs import UnsatisfiedError


@pytest.mark.parametrize("log_size", [5, 6, 8, 9, 10, 12, 14])
@pytest.mark.parametrize("seed", [1, 7, 2**40 + 3])
def test_witness_only_equals_build_bit_for_bit(log_size, seed):
    _, inputs, aux = pp.build(log_size, seed=seed)
    wi, wa = circuits.witness("porep_partition", log_size, seed=seed, limbs=True)
    assert wi.dtype == object and list(wi) == list(inputs)
    assert wa.dtype == aux.dtype == np.uint32 and wa.shape == aux.shape
    assert np.array_equal(wa, aux)


@pytest.mark.parametrize("log_size", [5, 6, 8, 9, 10, 12, 14])
@pytest.mark.parametrize("seed", [1, 7, 2**40 + 3])
def test_packed_witness_equals_the_packed_limbs(log_size, seed):
    """B4's generator: byte for byte pack() of the witness-only limbs, its arrays of the same types."""
    from cuzk.witness_pack import pack
    wi, wa = circuits.witness("porep_partition", log_size, seed=seed, limbs=True)
    want = pack(wa)
    pi, got = circuits.witness_packed("porep_partition", log_size, seed=seed)
    assert list(pi) == list(wi) and circuits.has_packed_witness("porep_partition")
    assert want is not None and got.n == want.n
    for k in ("bits", "idx", "vals"):
        a, b = getattr(got, k), getattr(want, k)
        assert a.dtype == b.dtype and np.array_equal(a, b), k


def test_packed_witness_refuses_as_pack_does(monkeypatch):
    """Where more entries than pack takes are not bits, both give None (the caller sends limbs)."""
    from cuzk.witness_pack import pack
    from cuzk.witness_pack import worth_packing
    monkeypatch.setattr(pp, "worth_packing", lambda n, k: worth_packing(n, k, 0.0))
    _, wa = circuits.witness("porep_partition", 10, seed=3, limbs=True)
    assert pack(wa, 0.0) is None and circuits.witness_packed("porep_partition", 10, seed=3)[1] is None
    assert not circuits.has_packed_witness("porep_like")


@pytest.mark.parametrize("log_size", [6, 11])
def test_witness_only_satisfies_the_circuit(log_size):
    r1cs, _, _ = pp.build(log_size, seed=1)
    inputs, aux = circuits.witness("porep_partition", log_size, seed=5)      # ints
    assert aux.dtype == object
    r1cs.check(*r1cs.evaluate(np.concatenate([inputs, aux])))
    bad = aux.copy()
    bad[3] = 1 - bad[3]                                                      # one bit of m0 flipped
    with pytest.raises(UnsatisfiedError, match="partition"):
        r1cs.check(*r1cs.evaluate(np.concatenate([inputs, bad])))


def test_witness_only_builds_no_matrix(monkeypatch):
    def no(*a, **k):
        raise AssertionError("a matrix was built")
    monkeypatch.setattr(pp.FastSink, "enforce", no)
    monkeypatch.setattr(pp.CsSink, "enforce", no)
    monkeypatch.setattr(circuits, "build", no)
    _, aux = circuits.witness("porep_partition", 10, seed=2, limbs=True)
    assert aux.shape == (pp.counts(10)["aux"], 8)


def test_alloc_is_used_and_checked():
    made = []

    def alloc(shape, dtype):
        made.append(np.zeros(shape, dtype))
        return made[-1]

    _, aux = circuits.witness("porep_partition", 8, seed=3, limbs=True, alloc=alloc)
    assert len(made) == 1 and aux is made[0]
    with pytest.raises(ValueError, match="alloc gave"):
        circuits.witness("porep_partition", 8, limbs=True, alloc=lambda s, d: np.zeros((s[0] - 1, 8), d))
    with pytest.raises(ValueError, match="alloc gave"):
        circuits.witness("porep_partition", 8, limbs=True, alloc=lambda s, d: np.zeros(s, np.uint64))


@pytest.mark.parametrize("name", ["porep_like", "mulchain"])
def test_fallback_to_build_for_circuits_without_a_witness_function(name):
    assert not circuits.has_witness_only(name) and circuits.has_witness_only("porep_partition")
    _, inputs, aux = circuits.build(name, 8, seed=4)
    wi, wa = circuits.witness(name, 8, seed=4)
    assert list(wi) == list(inputs) and list(wa) == list(aux)
    _, wa5 = circuits.witness(name, 8, seed=5)
    assert list(wa5) != list(aux)


@pytest.mark.parametrize("name, log_size, msg", [("nope", 8, "unknown circuit"),
                                                 ("porep_partition", 4, "--log-size must be in 5..27"),
                                                 ("porep_like", 28, "--log-size must be in 3..27")])
def test_bad_witness_request(name, log_size, msg):
    with pytest.raises(ValueError, match=msg):
        circuits.witness(name, log_size)


@pytest.mark.parametrize("pool", [None, "thread"])
def test_synthesize_builds_once_and_proofs_verify(pool, monkeypatch):
    from cuzk.backend.cpu import CpuBackend
    from cuzk.groth16 import verify
    from cuzk.keygen import setup
    from cuzk.synthesis import make_pool, synthesize
    from cuzk.prover import Prover
    calls = []
    build = circuits.build

    def counting(*a, **k):
        calls.append(a)
        return build(*a, **k)
    monkeypatch.setattr(circuits, "build", counting)
    ex = make_pool(pool, 2) if pool else None
    try:
        r1cs, asgs = synthesize("porep_partition", 8, resolve(), seeds=(1, 2, 3), executor=ex)
    finally:
        if ex:
            ex.shutdown()
    assert len(calls) == 1
    ref = [pp.build(8, seed=s)[1:] for s in (1, 2, 3)]
    for a, (inputs, aux) in zip(asgs, ref):
        assert list(a.inputs) == list(inputs) and list(a.aux) == list(limbs_to_ints(aux))
    pk = setup(r1cs, backend="cpu")
    proofs = Prover(CpuBackend(resolve()), pk).prove(asgs, rng=random.Random(1))
    vk = pk.verifying_key()
    assert all(verify(vk, a.public, p) for a, p in zip(asgs, proofs))
    assert not verify(vk, asgs[2].public, proofs[1])


def test_synthesize_process_pool_porep_like_fallback():
    from cuzk.synthesis import make_pool, synthesize
    ex = make_pool("process", 2)
    try:
        r1cs, asgs = synthesize("porep_like", 6, resolve(), seeds=(1, 2), executor=ex)
    finally:
        ex.shutdown()
    for a, s in zip(asgs, (1, 2)):
        _, inputs, aux = circuits.build("porep_like", 6, seed=s)
        assert list(a.inputs) == list(inputs) and list(a.aux) == list(aux)
        r1cs.check(a.a[:r1cs.num_constraints], a.b[:r1cs.num_constraints], a.c[:r1cs.num_constraints])
