import random

import numpy as np
import pytest

from cuzk.field import R
from cuzk.poly import Domain, coset_intt, coset_ntt, intt, naive_dft, ntt


def rand_vec(n, seed):
    rng = random.Random(seed)
    return np.array([rng.randrange(R) for _ in range(n)], dtype=object)


@pytest.mark.parametrize("gen", [7, 5])
@pytest.mark.parametrize("log_n", [1, 2, 3, 5, 7])
def test_ntt_matches_naive_dft(log_n, gen):
    d = Domain(log_n, gen)
    a = rand_vec(d.n, log_n * 31 + gen)
    assert list(ntt(a, d.omega)) == list(naive_dft(a, d.omega))


@pytest.mark.parametrize("gen", [7, 5])
@pytest.mark.parametrize("log_n", [1, 4, 10])
def test_roundtrips(log_n, gen):
    d = Domain(log_n, gen)
    a = rand_vec(d.n, log_n)
    assert list(intt(ntt(a, d.omega), d.omega)) == list(a)
    assert list(ntt(intt(a, d.omega), d.omega)) == list(a)
    assert list(coset_intt(coset_ntt(a, d.omega, d.coset_shift), d.omega, d.coset_shift)) == list(a)


def test_coset_ntt_evaluates_on_coset():
    d = Domain(3, 7)
    a = rand_vec(d.n, 9)
    ev = coset_ntt(a, d.omega, d.coset_shift)
    for i in range(d.n):
        x = d.coset_shift * pow(d.omega, i, R) % R
        assert ev[i] == sum(int(c) * pow(x, j, R) for j, c in enumerate(a)) % R


def test_bad_length():
    with pytest.raises(ValueError):
        ntt(np.zeros(6, dtype=object), Domain(3).omega)


def test_domain_for_size():
    assert Domain.for_size(16).n == 16
    assert Domain.for_size(17).n == 32
    assert Domain.for_size(1).n == 2
