"""CPU checks of fastmul::mont_sqr (optimization S1), mont_mul, and the Fp product left < 2p (mont_mul<P, false>,
optimization L1): kernels/ff/mul.cuh built for the host with g++ (tests/host/mul_host_check.cpp, the
same template code the GPU runs), against Python big ints, for the integer builds 1 and 3. The kernels themselves run
in tests/test_gpu*.py (pytest -m gpu)."""
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from cuzk.field import P, R

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {"p": (P, 12), "r": (R, 8)}


def edge_values(p: int, n: int) -> list[int]:
    vals = [0, 1, 2, p - 1, p - 2, p >> 1, (p + 1) // 2, (1 << (32 * n)) % p]
    vals += [((1 << (32 * k)) - 1) % p for k in range(1, n + 1)]     # runs of all-ones limbs
    vals += [(1 << (32 * k)) % p for k in range(n)]
    return vals


@pytest.fixture(scope="module")
def host_builds(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ not on PATH")
    out = {}
    for variant in (1, 3):
        exe = tmp_path_factory.mktemp("mulhost") / f"mulhost{variant}"
        subprocess.run(["g++", "-O2", "-std=c++17", f"-DCUZK_FASTMUL_VARIANT_FP={variant}",
                        f"-DCUZK_FASTMUL_VARIANT_FR={variant}", "-Wno-unknown-pragmas",
                        f"-I{ROOT / 'kernels'}", "-o", str(exe), str(ROOT / "tests/host/mul_host_check.cpp")],
                       check=True)
        out[variant] = exe
    return out


def run(exe, lines: list[str]) -> list[str]:
    out = subprocess.run([str(exe)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.mark.parametrize("variant", [1, 3])
@pytest.mark.parametrize("field", ["p", "r"])
def test_square_matches_big_ints(host_builds, variant, field):
    p, n = FIELDS[field]
    rng = random.Random(variant * 7 + n)
    vals = edge_values(p, n) + [rng.randrange(p) for _ in range(3000)]
    rinv = pow(1 << (32 * n), -1, p)
    got = run(host_builds[variant], [f"{field.upper()} {a:x} 0" for a in vals])
    assert len(got) == len(vals)
    for a, g in zip(vals, got):
        assert not g.startswith("ERROR") and int(g, 16) == a * a * rinv % p, (hex(a), g)


@pytest.mark.parametrize("field", ["p", "r"])
def test_square_equals_the_product(host_builds, field):
    """mont_sqr(a) and mont_mul(a, a) give the same words (build 1), so S1 changes no result."""
    p, n = FIELDS[field]
    rng = random.Random(n)
    vals = edge_values(p, n) + [rng.randrange(p) for _ in range(2000)]
    sq = run(host_builds[1], [f"{field.upper()} {a:x} 0" for a in vals])
    mul = run(host_builds[1], [f"{field} {a:x} {a:x}" for a in vals])
    assert sq == mul


def test_a_broken_square_is_caught(host_builds):
    """The comparison can fail: a product of different operands is not the square."""
    p, n = FIELDS["p"]
    rinv = pow(1 << (32 * n), -1, p)
    got = run(host_builds[1], [f"p {3:x} {5:x}"])
    assert int(got[0], 16) != 3 * 3 * rinv % p


@pytest.mark.parametrize("variant", [1, 3])
def test_products_of_unreduced_operands(host_builds, variant):
    """L1: operands in [0, 2p) (what a lazy product leaves): the lazy product stays below 2p and is congruent;
    the reduced product and the square of such operands are canonical (what lambda^2 and y3 rely on)."""
    p, n = P, 12
    rng = random.Random(variant + 100)
    hi = [p, p + 1, 2 * p - 1, 2 * p - 2, (1 << 382) - 1 if (1 << 382) - 1 < 2 * p else 2 * p - 3]
    vals = [(a, b) for a in hi for b in hi + [0, 1, p - 1]]
    vals += [(rng.randrange(2 * p), rng.randrange(2 * p)) for _ in range(3000)]
    rinv = pow(1 << (32 * n), -1, p)
    exe = host_builds[variant]
    lazy = run(exe, [f"l {a:x} {b:x}" for a, b in vals])
    full = run(exe, [f"p {a:x} {b:x}" for a, b in vals])
    sq = run(exe, [f"P {a:x} 0" for a, _ in vals])
    for (a, b), g, f, s in zip(vals, lazy, full, sq):
        want = a * b * rinv % p
        assert not g.startswith("ERROR") and int(g, 16) < 2 * p and int(g, 16) % p == want, (hex(a), hex(b), g)
        assert int(f, 16) == want, (hex(a), hex(b), f)
        assert int(s, 16) == a * a * rinv % p, (hex(a), s)


def test_lazy_products_chain(host_builds):
    """A chain of lazy products (the prefix products of a walk) stays below 2p and congruent throughout."""
    rng = random.Random(9)
    rinv = pow(1 << 384, -1, P)
    exe = host_builds[1]
    acc, want = 1, 1
    for _ in range(300):
        d = rng.randrange(P)
        acc = int(run(exe, [f"l {acc:x} {d:x}"])[0], 16)
        want = want * d * rinv % P
        assert acc < 2 * P and acc % P == want
