"""CPU check of the element math of the r4d NTT pass (kernels/ntt/dfma.cu) against Python big ints.

Builds tools/experiments/ntt_dfma_host.cpp with g++ (-O2, no -ffast-math: kernels/ff/mul_dfma.cuh with
CUZK_DFMA_HOST, std::fma for DFMA and an exact emulation of DFMA.RM), composed as the kernel composes it,
and checks, with r the BLS12-381 scalar modulus and raw values (the data's 2^256 form, X = x 2^256 mod r;
twiddles in the 2^260 form, W = w 2^260 mod r):
  * conversion 8 x 32 <-> 5 x 52 (integer limbs, and through doubles): the value comes back, any X < 2^256;
  * add / sub mod r, canonical in and out;
  * the twiddle product (r4d: integer limbs -> doubles; r4m: 8 x 32 words -> doubles -> words) mul(X, W) = X W 2^-260 mod r, canonical: so mul(x 2^256, w 2^260) = x w 2^256;
  * tw_mode 1: mul(X, H L 2^-260) with H = h 2^256 (tw_hi as is) and L = l 2^264 (tw_lo scaled by 2^8);
  * the DIF and DIT butterflies (a + b, (a - b) w) and (a + b w, a - b w), in the data's 2^256 form.
Inputs: edge cases (0, 1, 2, r-1, r-2, (r+-1)/2, 2^52 +- 1, all lower 52-bit limbs at maximum, 2^256 mod r,
2^260 mod r, their inverses, ...) pairwise, random values below r, and values below r with every 52-bit
limb large. The header throws on a column sum >= 2^58 or a carry out of the top limb.

    /tmp/venv/bin/python tools/experiments/ntt_dfma_check.py [COUNT]     # default 100000 twiddle products
Prints ALL OK and exits 0 only if everything matched.
"""
from __future__ import annotations

import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
M52 = (1 << 52) - 1
RP_INV = pow(1 << 260, -1, R)          # 2^-260 mod r


def build(out: Path) -> Path:
    exe = out / "ntt_dfma_host"
    subprocess.run(["g++", "-O2", "-std=c++17", "-I", str(ROOT / "kernels"), "-o", str(exe),
                    str(ROOT / "tools" / "experiments" / "ntt_dfma_host.cpp")], check=True)
    return exe


def edge_cases() -> list[int]:
    s = {0, 1, 2, 3, R - 1, R - 2, R - 3, (R - 1) // 2, (R + 1) // 2, 2 ** 52 - 1, 2 ** 52, 2 ** 52 + 1,
         2 ** 256 % R, 2 ** 260 % R, 16, R - 16, pow(2 ** 256, -1, R), RP_INV, 2 ** 255 % R, 2 ** 32 - 1}
    top = (R >> 208) << 208
    s |= {top - 1, top - 2, top - 1 - (1 << 51)}          # lower 52-bit limbs all ones
    for i in range(4):                                     # r-1 with one limb forced to all ones, kept < r
        v = (R - 1) | (M52 << (52 * i))
        if v >= R:
            v -= 1 << 208
        s.add(v)
    s |= {R - 1 - (1 << k) for k in (0, 51, 52, 103, 104, 155, 156, 207, 208)}
    return sorted(v for v in s if 0 <= v < R)


def big_limbs(rng: random.Random) -> int:
    """A value < r whose 52-bit limbs are all >= 2^51 (the top limb large within r's top limb)."""
    while True:
        v = sum(rng.randrange(1 << 51, 1 << 52) << (52 * i) for i in range(4))
        v |= rng.randrange((R >> 208) // 2, R >> 208) << 208
        if v < R:
            return v


def cases(count: int, seed: int = 1) -> list[tuple]:
    rng = random.Random(seed)
    e = edge_cases()
    rnd = lambda: rng.randrange(R)                        # noqa: E731
    val = lambda: rng.choice((rnd, rnd, rnd, lambda: big_limbs(rng), lambda: rng.choice(e)))()  # noqa: E731
    out: list[tuple] = []
    # conversions: any value < 2^256
    conv = e + [2 ** 256 - 1, 2 ** 256 - 2, 2 ** 255, (2 ** 256 - 1) ^ (1 << 208)]
    conv += [rng.randrange(2 ** 256) for _ in range(max(1, count // 10))]
    conv += [sum(rng.choice((0, M52, rng.randrange(1 << 52))) << (52 * i) for i in range(5)) % 2 ** 256
             for _ in range(max(1, count // 20))]
    out += [("c", v) for v in conv]
    for op in ("a", "s", "m"):
        out += [(op, a, b) for a in e for b in e]
    n = max(1, count // 4)
    out += [(op, val(), val()) for op in ("a", "s") for _ in range(n)]
    out += [("m", val(), val()) for _ in range(count)]
    out += [("x", val(), val()) for _ in range(max(1, count // 10))]
    out += [("o", val(), val(), val()) for _ in range(max(1, count // 10))]
    out += [(op, val(), val(), val()) for op in ("f", "t") for _ in range(max(1, count // 10))]
    return out


def expect(c: tuple) -> list[int]:
    op = c[0]
    if op == "c":
        return [c[1], c[1]]
    if op == "a":
        return [(c[1] + c[2]) % R]
    if op == "s":
        return [(c[1] - c[2]) % R]
    if op in ("m", "x"):
        return [c[1] * c[2] * RP_INV % R]
    if op == "o":
        return [c[1] * (c[2] * c[3] * RP_INV) * RP_INV % R]
    a, b, w = c[1:]
    if op == "f":
        return [(a + b) % R, (a - b) * w * RP_INV % R]
    y = b * w * RP_INV % R
    return [(a + y) % R, (a - y) % R]


def run(count: int, exe: Path | None = None) -> tuple[int, int, dict]:
    """(checked, failures, per-op counts)."""
    with tempfile.TemporaryDirectory() as td:
        exe = exe or build(Path(td))
        cs = cases(count)
        inp = "\n".join(" ".join([c[0]] + [f"{v:x}" for v in c[1:]]) for c in cs) + "\n"
        res = subprocess.run([str(exe)], input=inp, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"host check failed: {res.stderr.strip()[-500:]}")
    lines = res.stdout.split("\n")
    bad, ops = 0, {}
    for c, line in zip(cs, lines):
        got = [int(t, 16) for t in line.split()]
        ops[c[0]] = ops.get(c[0], 0) + 1
        if got != expect(c):
            bad += 1
            if bad <= 5:
                print("MISMATCH", c[0], [hex(v) for v in c[1:]], [hex(v) for v in got])
    if len([ln for ln in lines if ln]) != len(cs):
        raise RuntimeError(f"{len(cs)} cases, {len(lines)} answers")
    return len(cs), bad, ops


def main() -> int:
    if shutil.which("g++") is None:
        print("g++ not found")
        return 2
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    n, bad, ops = run(count)
    print(f"{n} cases ({', '.join(f'{k} {v}' for k, v in sorted(ops.items()))}), {bad} mismatches")
    print("ALL OK" if bad == 0 else "FAILED")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
