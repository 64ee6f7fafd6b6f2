"""The QAP conventions (cuzk/qap.py): their H bases and H scalars agree with the polynomials they stand for."""
import random

import numpy as np
import pytest

from cuzk import circuits
from cuzk.backend.cpu.synthesis import assign
from cuzk.field import R, fr_powers
from cuzk.keys import ProvingKey
from cuzk.opts import resolve
from cuzk.poly import Domain, intt
from cuzk.qap import COEFF, CONVENTIONS, ODD_LAGRANGE, QAP, qap
from cuzk.synthesis import synthesize


def test_lookup_by_name_and_object():
    assert qap("coeff") is COEFF and qap("odd_lagrange") is ODD_LAGRANGE and qap(COEFF) is COEFF
    assert CONVENTIONS == ("coeff", "odd_lagrange")
    with pytest.raises(ValueError, match="unknown H convention 'lagrange'; known: coeff, odd_lagrange"):
        qap("lagrange")
    assert ProvingKey("odd_lagrange", 5, 4, 1, 1, 1, bytes(32)).qap is ODD_LAGRANGE


@pytest.mark.parametrize("name", CONVENTIONS)
@pytest.mark.parametrize("circuit,log_size,generator", [("porep_like", 6, 7), ("mulchain", 5, 5)])
def test_h_scalars_on_h_bases_give_ab_minus_c_at_tau(name, circuit, log_size, generator):
    """Σ h_i · H_i(τ) = A(τ) B(τ) − C(τ) for a satisfying assignment, at a random τ: the identity the
    proof's C term rests on, for either way of writing H."""
    q: QAP = qap(name)
    r1cs, inputs, aux = circuits.build(circuit, log_size, opts=resolve(), seed=3)
    domain = Domain.for_size(r1cs.qap_rows, generator)
    asg = assign(r1cs, inputs, aux, domain)
    tau = random.Random(f"{name}{circuit}").randrange(2, R)
    lag = intt(fr_powers(tau, domain.n), domain.omega)          # L_i(τ) over the domain
    a, b, c = (int(np.dot(v, lag) % R) for v in (asg.a, asg.b, asg.c))
    query = q.h_query(domain, tau)
    h = q.h_scalars(asg.a, asg.b, asg.c, domain)
    assert len(query) == len(h) == q.h_len(domain.n)
    assert int(np.dot(h, query) % R) == (a * b - c) % R


def test_coeff_rejects_an_unsatisfied_assignment():
    r1cs, (asg,) = synthesize("porep_like", 6, resolve(), seeds=(1,))
    domain = Domain.for_size(r1cs.qap_rows)
    c = asg.c.copy()
    c[0] = (c[0] + 1) % R
    with pytest.raises(ArithmeticError, match="does not satisfy the QAP"):
        COEFF.h_scalars(asg.a, asg.b, c, domain)
