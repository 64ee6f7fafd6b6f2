import numpy as np
import pytest

from cuzk import circuits
from cuzk.backend.cpu import CpuBackend
from cuzk.field import R
from cuzk.groth16 import verify
from cuzk.keygen import setup
from cuzk.opts import OptError, REGISTRY, resolve, variants
from cuzk.backend.cpu.synthesis import assign
from cuzk.poly import Domain
from cuzk.prover import Prover
from cuzk.r1cs import ONE, ConstraintSystem, UnsatisfiedError


def cube_circuit(opts, x_val=3):
    """x^3 + x + 5 = out, written by hand with the scalar API."""
    cs = ConstraintSystem(opts)
    out = cs.alloc_input((x_val ** 3 + x_val + 5) % R)
    x = cs.alloc(x_val)
    x2 = cs.alloc(x_val * x_val)
    x3 = cs.alloc(x_val ** 3)
    cs.enforce(cs.lc((x, 1)), cs.lc((x, 1)), cs.lc((x2, 1)), label="x2")
    cs.enforce([(x2, 1)], [(x, 1)], [(x3, 1)], label="x3")
    cs.enforce(cs.lc((x3, 1), (x, 1), (ONE, 5)), cs.lc((ONE, 1)), cs.lc((out, 1)), label="out")
    return cs.finalize()


@pytest.mark.parametrize("spec", ["all", "none"])
def test_hand_written_circuit_proves(spec):
    r1cs, inputs, aux = cube_circuit(resolve(spec))
    assert (r1cs.num_inputs, r1cs.num_aux, r1cs.num_constraints) == (2, 3, 3)
    pk = setup(r1cs)
    asg = assign(r1cs, inputs, aux, Domain(pk.log_n))
    proof = Prover(CpuBackend(resolve()), pk).prove([asg])[0]
    assert verify(pk.verifying_key(), [35], proof)
    assert not verify(pk.verifying_key(), [36], proof)


def test_unsatisfied_names_constraint():
    r1cs, inputs, aux = cube_circuit(resolve(), x_val=3)
    aux = aux.copy()
    aux[2] = 28                            # x3 wrong: constraint 1 ("x3") fails first
    with pytest.raises(UnsatisfiedError, match=r"constraint 1 \(x3\)"):
        assign(r1cs, inputs, aux, Domain.for_size(r1cs.qap_rows))


@pytest.mark.parametrize("name", sorted(circuits.CIRCUITS))
@pytest.mark.parametrize("log_size", [5, 10])
def test_a1_a2_bit_identical(name, log_size):
    """Each variant of the registry gives the same R1CS and the same assignment."""
    ref = None
    for label, opts in variants().items():
        r1cs, inputs, aux = circuits.build(name, log_size, opts=opts, seed=7)
        got = (r1cs.digest(), [int(v) for v in inputs], [int(v) for v in aux])
        if ref is None:
            ref = got
        assert got == ref, label


def test_generators_fill_domain_and_satisfy():
    for name in circuits.CIRCUITS:
        for k in (4, 7, 11):
            k = max(k, circuits.MIN_LOG_SIZE.get(name, 3))
            r1cs, inputs, aux = circuits.build(name, k)
            d = Domain.for_size(r1cs.qap_rows)
            assert d.log_n == k and r1cs.qap_rows > d.n // 2
            assign(r1cs, inputs, aux, d)


@pytest.mark.parametrize("log_size", [8, 12, 14])
def test_porep_like_is_bit_heavy(log_size):
    r1cs, inputs, aux = circuits.build("porep_like", log_size)
    bits = np.isin(aux, [0, 1]).mean()
    assert bits >= 0.80, bits


def test_witness_depends_on_seed_not_circuit():
    r1, i1, a1 = circuits.build("porep_like", 8, seed=1)
    r2, i2, a2 = circuits.build("porep_like", 8, seed=2)
    assert r1.digest() == r2.digest()
    assert list(a1) != list(a2)


def test_opt_parsing(monkeypatch):
    assert set(REGISTRY) >= {"A1", "A2"}
    assert resolve("none,+A1").as_dict() == {k: k == "A1" for k in REGISTRY}
    monkeypatch.setenv("CUZK_OPT", "-A1")
    assert resolve().enabled("A1")               # the registry never reads the environment (cuzk/environment.py does)
    with pytest.raises(OptError):
        resolve("+NOPE")
    assert set(variants()) == {"baseline", "default",
                               *(f"default{'-' if o.default else '+'}{n}" for n, o in REGISTRY.items())}
