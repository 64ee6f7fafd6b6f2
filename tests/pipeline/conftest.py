"""The pipeline tests' circuit and key, made once a module."""
from __future__ import annotations

import pytest

from cuzk import circuits
from cuzk.keygen import cached_setup
from cuzk.opts import resolve
from pipeline_fakes import LOG


@pytest.fixture(scope="module")
def setup():
    opts = resolve("none")
    r1cs, _, _ = circuits.build("porep_like", LOG, opts=opts, seed=1)
    pk, _, _ = cached_setup(r1cs, progress=False, backend="cpu")
    return opts, r1cs, pk
