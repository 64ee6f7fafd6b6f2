"""Device check for GPU key generation: the GPU keygen tests, then GPU keygen of porep_like (coeff,
generator 7, toxic seed 0: what `cuzk bench` uses) at 2^16, 2^20 and 2^24, timed, spot-checked
against arkworks, and saved to the key cache ($CUZK_CACHE_DIR) so that
`cuzk bench --backend cuda --log-size 20|24` reuses them in the same device run.

    python tools/gpu_keygen_check.py [--sizes 16,20,24] [--skip-tests] [--bench] [--spot N]
"""
import argparse
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def spot_check(r1cs, pk, k: int, seed: int = 0) -> str:
    """k random points of every section against arkworks, from the CPU's scalars (CPU scalar
    work is vectorized Python ints: fine to 2^20)."""
    import numpy as np
    from py_arkworks_bls12381 import G1Point, G2Point, Scalar
    from cuzk import keygen
    from cuzk.curve import ark_to_limbs
    from cuzk.field import R
    from cuzk.poly import Domain
    tw = keygen.ToxicWaste.from_seed(0)
    domain = Domain.for_size(r1cs.qap_rows, pk.generator)
    u, v, w = keygen.qap_at_tau(r1cs, domain, tw.tau)
    ni = r1cs.num_inputs
    gi, di = pow(tw.gamma, -1, R), pow(tw.delta, -1, R)
    kk = (tw.beta * u + tw.alpha * v + w) % R
    want = {"ic": (kk[:ni] * gi) % R, "a": u, "b_g1": v, "b_g2": v, "l": (kk[ni:] * di) % R,
            "h": (pk.qap.h_query(domain, tw.tau) * di) % R}
    rng = random.Random(seed)
    for name, sc in want.items():
        group = pk.points[name].group
        G = G1Point() if group == 1 else G2Point()
        idx = np.array(sorted(rng.sample(range(len(sc)), min(k, len(sc)))))
        pts = [G * Scalar(int(sc[i])) if sc[i] else type(G).identity() for i in idx]
        limbs, inf = ark_to_limbs(group, pts)
        got = pk.points[name]
        if not ((got.inf[idx] == inf).all() and (got.limbs[idx] == limbs).all()):
            return f"MISMATCH in {name}"
    return f"ok ({k} per section)"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="16,20,24")
    ap.add_argument("--skip-tests", action="store_true")
    ap.add_argument("--bench", action="store_true", help="then run `cuzk bench --backend cuda` at each size")
    ap.add_argument("--spot", type=int, default=16, help="points per section spot-checked (sizes <= 2^20)")
    args = ap.parse_args()
    rc = 0
    if not args.skip_tests:
        t0 = time.time()
        rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-x", "tests/gpu/test_gpu_keygen.py",
                              "tests/gpu/test_keygen_model.py", "-p", "no:cacheprovider"])
        print(f"pytest gpu keygen: rc={rc} in {time.time() - t0:.0f}s", flush=True)

    import cupy
    from cuzk import circuits, keygen
    from cuzk.gpu import keygen as gk
    from cuzk.gpu.loader import load_times
    print(f"key cache: {keygen.cache_dir()}", flush=True)
    rows = []
    for log in [int(s) for s in args.sizes.split(",") if s]:
        row = {"size": f"2^{log}"}
        try:
            t = time.perf_counter()
            r1cs, _, _ = circuits.build("porep_like", log)
            row["build s"] = time.perf_counter() - t
            row["constraints"] = r1cs.num_constraints
            t = time.perf_counter()
            r1cs.digest()
            row["digest s"] = time.perf_counter() - t
            pool = cupy.get_default_memory_pool()
            pool.free_all_blocks()
            t = time.perf_counter()
            pk = keygen.setup(r1cs, "coeff", 7, keygen.ToxicWaste.from_seed(0), backend="cuda")
            row["keygen s"] = time.perf_counter() - t
            row.update({k: v for k, v in gk.last_timings.items() if k != "digest"})
            row["device peak GiB"] = pool.total_bytes() / 2**30
            t = time.perf_counter()
            path = keygen.cache_path(r1cs, "coeff", 7, 0)
            pk.save(path)
            row["save s"] = time.perf_counter() - t
            row["key GiB"] = path.stat().st_size / 2**30
            row["host peak GiB"] = rss_gib()
            if log <= 20 and args.spot:
                t = time.perf_counter()
                row["spot check"] = spot_check(r1cs, pk, args.spot)
                row["spot s"] = time.perf_counter() - t
                if row["spot check"].startswith("MISMATCH"):
                    rc = rc or 1
            del pk, r1cs
        except Exception as e:  # report and go on: the table is the point
            row["error"] = f"{type(e).__name__}: {e}"[:200]
            rc = rc or 1
        rows.append(row)
        print({k: (round(v, 2) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    print("kernel load times:", {k: round(v, 2) for k, v in load_times.items()})
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(f"{r[k]:.2f}" if isinstance(r.get(k), float) else str(r.get(k, "")) for k in keys)
              + " |")
    if args.bench:
        for log in [int(s) for s in args.sizes.split(",") if s]:
            t0 = time.time()
            b = subprocess.call([sys.executable, "-m", "cuzk", "bench", "--backend", "cuda", "--log-size", str(log)])
            print(f"cuzk bench 2^{log}: rc={b} in {time.time() - t0:.0f}s", flush=True)
            rc = rc or b
    return rc


if __name__ == "__main__":
    sys.exit(main())
