"""CPU check of kernels/ff/mul_dfma.cuh (the FP64-limb Montgomery multiplication experiment).

Compiles tools/experiments/dfma_host_check.cpp with g++ (-O2, no -ffast-math): the header's own template
code with CUZK_DFMA_HOST (std::fma for DFMA, exact emulation of DFMA.RM), then compares against Python
big ints, for Fp (R' = 2^416) and Fr (R' = 2^260):
  * mont_mul: lazy output < 2p and == a*b*R'^-1 mod p (mod p), canonical output == it exactly;
    inputs: every pair of edge cases, COUNT random pairs below p, COUNT/8 pairs in [0, 2p) (the lazy
    input range), near-p pairs, values whose 52-bit limbs are all 0 / all ones;
  * to_mont (lazy, == x R' mod p) and from_mont (canonical) round trip; canon; add; sub.
The header throws on a carry out of the top limb or a column sum >= 2^58 (the bounds it relies on).

    /tmp/venv/bin/python tools/experiments/dfma_emulate.py [COUNT]     # default 200000
Exit status 0 only if everything matched.
"""
from __future__ import annotations

import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
P = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
FIELDS = {"p": (P, 8), "r": (R, 5)}      # tag -> (modulus, 52-bit limbs L)
M52 = (1 << 52) - 1


def edge_cases(p: int, L: int) -> list[int]:
    Rp = 1 << (52 * L)
    s = {0, 1, 2, 3, p - 1, p - 2, p - 3, (p - 1) // 2, (p + 1) // 2, Rp % p, Rp * Rp % p, p - Rp % p,
         pow(Rp, -1, p), 2 ** 52 - 1, 2 ** 52, 2 ** 52 + 1}
    top = (p >> (52 * (L - 1))) << (52 * (L - 1))
    s |= {top - 1, top - 2, (top - 1) >> 1, top - 1 - (1 << 51)}     # all lower 52-bit limbs at maximum
    for i in range(L - 1):                      # p-1 with one 52-bit limb forced to all ones (kept < p)
        v = (p - 1) | (M52 << (52 * i))
        if v >= p:
            v -= 1 << (52 * (L - 1))
        s.add(v)
        s.add(M52 << (52 * i))
    for i in range(12 if L == 8 else 8):        # 32-bit limb patterns too (conversion paths)
        s.add(0xFFFFFFFF << (32 * i))
    for k in range(1, p.bit_length(), 5):
        s |= {(1 << k) - 1, 1 << k, (1 << k) + 1, p - (1 << k)}
    return sorted(v for v in s if 0 <= v < p)


def limb_mix(rng: random.Random, p: int, L: int) -> int:
    """A value < 2p whose 52-bit limbs are mostly 0 or all ones."""
    while True:
        v = sum(rng.choice((0, M52, M52, rng.getrandbits(52))) << (52 * k) for k in range(L))
        v %= 1 << p.bit_length() + 1
        if v < 2 * p:
            return v


def main() -> int:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    rng = random.Random(20261201)
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "dfmahost"
        subprocess.run(["g++", "-O2", "-std=c++17", f"-I{ROOT / 'kernels'}", "-o", str(exe),
                        str(ROOT / "tools/experiments/dfma_host_check.cpp")], check=True)
        ok = True
        for tag, (p, L) in FIELDS.items():
            Rp = 1 << (52 * L)
            rinv = pow(Rp, -1, p)
            edges = edge_cases(p, L)
            pairs = [(a, b) for a in edges for b in edges]
            pairs += [(rng.randrange(p), rng.randrange(p)) for _ in range(count)]
            pairs += [(rng.randrange(2 * p), rng.randrange(2 * p)) for _ in range(count // 8)]
            pairs += [(p - 1 - rng.randrange(1 << 64), p - 1 - rng.randrange(1 << 64)) for _ in range(2000)]
            pairs += [(2 * p - 1 - rng.randrange(1 << 64), 2 * p - 1 - rng.randrange(1 << 64)) for _ in range(2000)]
            pairs += [(limb_mix(rng, p, L), limb_mix(rng, p, L)) for _ in range(20000)]
            singles = edges + [rng.randrange(p) for _ in range(count // 10)]
            lazies = [v + p for v in edges] + [rng.randrange(2 * p) for _ in range(count // 10)]
            addsub = [(a, b) for a in edges[::3] for b in edges[::3]] + \
                     [(rng.randrange(p), rng.randrange(p)) for _ in range(count // 10)]
            lines = [f"m {tag} {a:x} {b:x}" for a, b in pairs]
            lines += [f"t {tag} {a:x}" for a in singles]
            lines += [f"c {tag} {a:x}" for a in lazies]
            lines += [f"a {tag} {a:x} {b:x}" for a, b in addsub]
            lines += [f"s {tag} {a:x} {b:x}" for a, b in addsub]
            r = subprocess.run([str(exe)], input="\n".join(lines) + "\n", capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {tag}: host program exited {r.returncode}: {r.stderr.strip()}")
                ok = False
                continue
            out = r.stdout.split("\n")
            pos = 0
            bad = {"mul": 0, "mul_canon": 0, "lazy_bound": 0, "to_mont": 0, "from_mont": 0, "canon": 0,
                   "add": 0, "sub": 0}
            first = {}

            def fail(kind: str, what: str) -> None:
                bad[kind] += 1
                first.setdefault(kind, what)

            for a, b in pairs:
                lz, cn = (int(x, 16) for x in out[pos].split()); pos += 1
                want = a * b * rinv % p
                if lz >= 2 * p:
                    fail("lazy_bound", f"a={a:#x} b={b:#x} out={lz:#x}")
                if lz % p != want:
                    fail("mul", f"a={a:#x} b={b:#x} got={lz:#x} want={want:#x}")
                if cn != want:
                    fail("mul_canon", f"a={a:#x} b={b:#x} got={cn:#x} want={want:#x}")
            for a in singles:
                m, back = (int(x, 16) for x in out[pos].split()); pos += 1
                if m >= 2 * p or m % p != a * Rp % p:
                    fail("to_mont", f"a={a:#x} got={m:#x}")
                if back != a:
                    fail("from_mont", f"a={a:#x} got={back:#x}")
            for a in lazies:
                got = int(out[pos], 16); pos += 1
                if got != a % p:
                    fail("canon", f"a={a:#x} got={got:#x}")
            for kind, fn in (("add", lambda x, y: (x + y) % p), ("sub", lambda x, y: (x - y) % p)):
                for a, b in addsub:
                    got = int(out[pos], 16); pos += 1
                    if got != fn(a, b):
                        fail(kind, f"a={a:#x} b={b:#x} got={got:#x}")
            name = {"p": "Fp", "r": "Fr"}[tag]
            n_ok = sum(bad.values()) == 0
            ok &= n_ok
            print(f"{'ok  ' if n_ok else 'FAIL'} {name}: {len(pairs)} mont_mul ({len(edges)}^2 edge pairs, {count} random < p, "
                  f"{count // 8} random < 2p, 4000 near p/2p, 20000 limb mixes), {len(singles)} to/from_mont, "
                  f"{len(lazies)} canon, {len(addsub)} add + sub")
            for k, v in bad.items():
                if v:
                    print(f"     {k}: {v} wrong; first: {first[k]}")
    print("ALL OK" if ok else "MISMATCH FOUND")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
