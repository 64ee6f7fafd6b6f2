"""The pipeline tests' circuit and key, made once a module, and the /dev/shm blocks each test makes."""
from __future__ import annotations

import pytest

from cuzk import circuits
from cuzk.keygen import cached_setup
from cuzk.opts import resolve
from pipeline_fakes import LOG
from shm_record import Blocks, record


@pytest.fixture(scope="module")
def setup():
    opts = resolve("none")
    r1cs, _, _ = circuits.build("porep_like", LOG, opts=opts, seed=1)
    pk, _, _ = cached_setup(r1cs, progress=False, backend="cpu")
    return opts, r1cs, pk


@pytest.fixture
def shm_blocks(tmp_path, monkeypatch) -> Blocks:
    """The /dev/shm blocks made by this test's pipeline code (its process pools' included), by name: checked
    for leaks instead of the whole directory, which other processes on the host share."""
    path = tmp_path / "shm-blocks"
    record(path, monkeypatch.setattr)
    return Blocks(path)
