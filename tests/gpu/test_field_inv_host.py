"""CPU checks of K15's inverse (kernels/ff/inverse.cuh, the binary extended Euclid): the same template code the GPU
runs, built for the host with g++ (tests/host/inv_host_check.cpp), against Python big ints. The kernels
themselves run in tests/gpu/test_gpu.py (pytest -m gpu)."""
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from cuzk.field import P, R

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {"p": (P, 12), "r": (R, 8)}


@pytest.fixture(scope="module")
def host_build(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ not on PATH")
    exe = tmp_path_factory.mktemp("invhost") / "invhost"
    subprocess.run(["g++", "-O2", "-std=c++17", "-Wno-unknown-pragmas", f"-I{ROOT / 'kernels'}", "-o", str(exe),
                    str(ROOT / "tests/host/inv_host_check.cpp")], check=True)
    return exe


def inverses(exe, field: str, words: list[int]) -> list[int]:
    lines = "".join(f"{field} {w:x}\n" for w in words)
    out = subprocess.run([str(exe)], input=lines, capture_output=True, text=True, check=True, timeout=60)
    return [int(t, 16) for t in out.stdout.split()]


def want(p: int, n: int, w: int) -> int:
    """w is a Montgomery word of a = w R^-1 (mod p); its inverse's word is a^-1 R = w^-1 R^2; 0 for w = 0 mod p."""
    return pow(w, -1, p) * pow(2, 64 * n, p) % p if w % p else 0


@pytest.mark.parametrize("field", ["p", "r"])
def test_inverse_matches_big_ints(host_build, field):
    p, n = FIELDS[field]
    rng = random.Random(n)
    words = [0, 1, 2, 3, p - 1, p - 2, (p + 1) // 2, (1 << (32 * n)) % p, 1 << 31, 1 << 32, 1 << 64,
             1 << (32 * n - 8), (1 << 200) - 1]
    words += [1 << k for k in range(0, 32 * n - 8, 7)]                      # long runs of halvings
    words += [rng.randrange(p) for _ in range(3000)]
    got = inverses(host_build, field, words)
    assert len(got) == len(words)
    for w, g in zip(words, got):
        assert g == want(p, n, w), hex(w)


@pytest.mark.parametrize("field", ["p", "r"])
def test_inputs_below_2p(host_build, field):
    """A lazy product (L1) is < 2p: w and w + p give the same inverse; p itself is 0."""
    p, n = FIELDS[field]
    rng = random.Random(3 * n)
    words = [p, p + 1, 2 * p - 1] + [p + rng.randrange(p) for _ in range(1000)]
    assert inverses(host_build, field, words) == [want(p, n, w) for w in words]


def test_a_wrong_inverse_is_caught(host_build):
    """The comparison can fail: the Fermat-free inverse of 3 is not that of 5."""
    p, n = FIELDS["p"]
    assert inverses(host_build, "p", [3])[0] != want(p, n, 5)


def test_an_input_past_2p_ends(host_build):
    """2p breaks the input contract (< 2p); the step bound ends it with 0 instead of a hung block."""
    p, n = FIELDS["p"]
    assert inverses(host_build, "p", [2 * p]) == [0]
