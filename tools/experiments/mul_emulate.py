"""CPU emulation of kernels/ff/mul.cuh (fastmul::mont_mul), limb by limb.

Every step of the device code is mirrored on 32-bit words: each IMAD.WIDE.U32 (a*b + c,
checked to fit 64 bits), each carry chain of `fold` (checked: no carry out of word N),
the m = R_0 * INV step, the final conditional subtraction. The result is compared with
big-int Montgomery multiplication a*b*2^(-32N) mod p. Inputs: random values, worst
cases (p-1, all-ones limbs below p, 0, 1, values near 2^k), and adversarial ones that
push the intermediate T toward its bound 2p.

    python3 tools/experiments/mul_emulate.py              # ~100k random products per field
    python3 tools/experiments/mul_emulate.py 1000000      # more
    python3 tools/experiments/mul_emulate.py --host       # also: the header itself, compiled
                                                          # for the CPU with g++ (all variants)
    python3 tools/experiments/mul_emulate.py 200000 --host-only --variants=5,5fr   # only those builds
    python3 tools/experiments/mul_emulate.py 200000 --host-only --variants=6       # variant 6 (FP64 pipe)
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

FIELDS = {
    "fp": (0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB, 12),
    "fr": (0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001, 8),
}
M32 = (1 << 32) - 1


def limbs(x: int, n: int) -> list[int]:
    return [(x >> (32 * i)) & M32 for i in range(n)]


def value(ws: list[int]) -> int:
    return sum(w << (32 * i) for i, w in enumerate(ws))


class Stats:
    max_T = 0          # largest T between rows, as a fraction of 2p
    max_wide = 0       # largest a*b + c seen (must stay < 2^64)


def mad_wide(a: int, b: int, c: int, st: Stats) -> int:
    assert 0 <= a <= M32 and 0 <= b <= M32 and 0 <= c <= M32
    r = a * b + c
    assert r < 1 << 64, "IMAD.WIDE overflow"
    st.max_wide = max(st.max_wide, r)
    return r


def fold(n: int, e: list[int], o: list[int], top: int) -> list[int]:
    """words 1..n of sum e[k] 2^(64k) + sum o[k] 2^(64k+32) + top 2^(32n), as one carry
    chain exactly as the asm does it (add.cc, addc.cc..., addc without carry out)."""
    h = n // 2
    lo = lambda x: x & M32  # noqa: E731
    hi = lambda x: x >> 32  # noqa: E731
    w = [0] * (n + 1)
    s = hi(e[0]) + lo(o[0])
    w[1], c = s & M32, s >> 32
    for k in range(1, h):
        s = lo(e[k]) + hi(o[k - 1]) + c
        w[2 * k], c = s & M32, s >> 32
        s = hi(e[k]) + lo(o[k]) + c
        w[2 * k + 1], c = s & M32, s >> 32
    s = hi(o[h - 1]) + top + c
    assert s >> 32 == 0, "carry out of word N (addc.u32 drops it)"
    w[n] = s
    return w


def mont_mul(a: int, b: int, p: int, n: int, st: Stats) -> int:
    inv = (-pow(p, -1, 1 << 32)) % (1 << 32)
    pl = limbs(p, n)
    al, bl = limbs(a, n), limbs(b, n)
    h = n // 2
    t = [0] * n
    for i in range(n):
        bi = bl[i]
        if i == 0:
            e = [mad_wide(al[2 * k], bi, 0, st) for k in range(h)]
            o = [mad_wide(al[2 * k + 1], bi, 0, st) for k in range(h)]
        else:
            e = [mad_wide(al[2 * k], bi, t[2 * k], st) for k in range(h)]
            o = [mad_wide(al[2 * k + 1], bi, t[2 * k + 1], st) for k in range(h)]
        w = fold(n, e, o, 0)
        w[0] = e[0] & M32
        assert value(w) == value(t) + a * bi
        m = (w[0] * inv) & M32
        e = [mad_wide(m, pl[2 * k], w[2 * k], st) for k in range(h)]
        o = [mad_wide(m, pl[2 * k + 1], w[2 * k + 1], st) for k in range(h)]
        assert e[0] & M32 == 0
        x = fold(n, e, o, w[n])
        assert value(x) == value(w) + m * p  # word 0 of the sum is 0, x[0] is unused
        t = x[1:]
        T = value(t)
        assert T < 2 * p, "T >= 2p between rows"
        st.max_T = max(st.max_T, T)
    # final: subtract p once (sub.cc chain + borrow select)
    d = value(t) - p
    r = value(t) if d < 0 else d
    return r


def inputs(name: str, count: int, seed: int = 1) -> list[tuple[int, int]]:
    """Edge cases (each core value paired with every special value, both orders), random
    pairs of specials, `count` uniform random pairs, pairs near p, and random mixes of
    0 / 0xffffffff / random limbs below p."""
    p, n = FIELDS[name]
    R = 1 << (32 * n)
    rng = random.Random(seed)
    special = [0, 1, 2, p - 1, p - 2, (p - 1) // 2, (p + 1) // 2, R % p, (R * R) % p, p - (R % p)]
    # all-ones limbs below p: every limb below the top one 0xffffffff
    top = (p >> (32 * (n - 1))) << (32 * (n - 1))
    special += [top - 1, top - 1 - (1 << 31), (top - 1) >> 1]
    for k in range(1, 32 * n):
        v = (1 << k) - 1
        if v < p:
            special.append(v)
            special.append(p - 1 - v)
    for k in range(32 * n):
        if (1 << k) < p:
            special.append(1 << k)
    core = special[:13]  # 0, 1, 2, p-1, ... and the all-ones-limb values
    pairs = [(x, y) for x in core for y in special] + [(y, x) for x in core for y in special]
    pairs += [(rng.choice(special), rng.choice(special)) for _ in range(count // 10)]
    pairs += [(rng.randrange(p), rng.randrange(p)) for _ in range(count)]
    # near p: both operands in [p - 2^64, p)
    pairs += [(p - 1 - rng.randrange(1 << 64), p - 1 - rng.randrange(1 << 64)) for _ in range(count // 10)]
    # random limbs of 0 / 0xffffffff below p
    for _ in range(count // 10):
        xs = []
        for _ in range(2):
            while True:
                v = value([rng.choice((0, M32, rng.getrandbits(32))) for _ in range(n)])
                if v < p:
                    break
            xs.append(v)
        pairs.append(tuple(xs))
    # Karatsuba (variant 5): halves whose sum carries (low half near all ones, high half near
    # its maximum), and one half zero
    h32 = 32 * (n // 2)
    hmax = (p - 1) >> h32

    def half_heavy() -> int:
        lo = (1 << h32) - 1 - rng.randrange(1 << rng.choice((1, 32, 96)))
        v = ((hmax - rng.randrange(1 << rng.choice((1, 32, 96)))) << h32) | lo
        return v if v < p else p - 1 - rng.randrange(1 << 32)
    for _ in range(count // 10):
        pairs.append((half_heavy(), half_heavy()))
        pairs.append((half_heavy(), rng.choice((rng.randrange(1 << h32), (rng.randrange(hmax) << h32)))))
    return pairs


def check(name: str, count: int, seed: int = 1) -> None:
    p, n = FIELDS[name]
    rinv = pow(1 << (32 * n), -1, p)
    st = Stats()
    pairs = inputs(name, count, seed)
    for x, y in pairs:
        got = mont_mul(x, y, p, n, st)
        want = x * y * rinv % p
        assert got == want, (name, hex(x), hex(y), hex(got), hex(want))
    print(f"{name}: {len(pairs)} products OK (Python model); max T = {st.max_T / (2 * p):.6f} * 2p; "
          f"max wide = 2^64 - {(1 << 64) - st.max_wide}")


HOST_BUILDS = {  # name -> g++ defines; 5 is Fp-only by default, so "5fr" also puts Fr on it
    "1": ("-DCUZK_FASTMUL_VARIANT=1",), "2": ("-DCUZK_FASTMUL_VARIANT=2",), "3": ("-DCUZK_FASTMUL_VARIANT=3",),
    "4": ("-DCUZK_FASTMUL_VARIANT=4",), "5": ("-DCUZK_FASTMUL_VARIANT=5",),
    "5fr": ("-DCUZK_FASTMUL_VARIANT=5", "-DCUZK_FASTMUL_VARIANT_FR=5"),
    "5fr-m1": ("-DCUZK_FASTMUL_VARIANT=5", "-DCUZK_FASTMUL_VARIANT_FR=5", "-DCUZK_KARA_ROWS_M=1"),
    "5fr-a2": ("-DCUZK_FASTMUL_VARIANT=5", "-DCUZK_FASTMUL_VARIANT_FR=5", "-DCUZK_KARA_ROWS_A=2",
               "-DCUZK_KARA_SPECIAL=0"),
    # variant 6 (FP64 pipe): both fields, and each field alone (the other on the default)
    "6": ("-DCUZK_FASTMUL_VARIANT=6",),
    "6fp": ("-DCUZK_FASTMUL_VARIANT_FP=6",),
    "6fr": ("-DCUZK_FASTMUL_VARIANT_FR=6",),
}


def check_host(count: int, variants=tuple(HOST_BUILDS)) -> None:
    """Compile the header itself for the CPU (tests/host/mul_host_check.cpp, every
    build in HOST_BUILDS) and compare its outputs with big ints on the same inputs."""
    import subprocess
    import tempfile
    root = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory() as tmp:
        for variant in variants:
            exe = Path(tmp) / f"mulhost{variant}"
            subprocess.run(["g++", "-O2", "-std=c++17", *HOST_BUILDS[variant], "-Wno-unknown-pragmas",
                            f"-I{root / 'kernels'}", "-o", str(exe),
                            str(root / "tests/host/mul_host_check.cpp")], check=True)
            for name, (p, n) in FIELDS.items():
                pairs = inputs(name, count, seed=2)
                text = "".join(f"{name[1]} {x:x} {y:x}\n" for x, y in pairs)
                out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True).stdout.splitlines()
                rinv = pow(1 << (32 * n), -1, p)
                assert len(out) == len(pairs), "host program failed"
                for (x, y), g in zip(pairs, out):
                    want = x * y * rinv % p
                    assert not g.startswith("ERROR") and int(g, 16) == want, (variant, name, hex(x), hex(y), g, hex(want))
                print(f"{name}: {len(pairs)} products OK (header compiled for the host, variant {variant})")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    count = int(args[0]) if args else 100_000
    if "--host-only" not in sys.argv:
        for f in FIELDS:
            check(f, count)
    sel = [a.split("=", 1)[1].split(",") for a in sys.argv[1:] if a.startswith("--variants=")]
    if "--host" in sys.argv or "--host-only" in sys.argv:
        check_host(count, *sel)
