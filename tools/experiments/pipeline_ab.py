"""Toggles A/B at full size, pipelined, in one process: the key made once on the GPU and shared by one prover per
opt set (each with its own backend), one untimed warm-up proof per set along the pipelined path, then
`run_pipelined` alternated between the sets, ROUNDS runs each.

    python3 tools/experiments/pipeline_ab.py [--log-size 27] [--circuits 10] [--rounds 2] SPEC [SPEC ...]

A SPEC is applied on top of the defaults and CUZK_OPT (e.g. "+B2" "+B2,+W1"). Put `--` before specs that start
with "-" (`--rounds 2 -- "" "-H2"`), or argparse reads them as options. One row per run: the wall, the
prove phases per partition (prep_msm + ntt_msm_h + batch_addition + tail_msm + b_g2, device time, mean), each
prove phase's mean, the h msm step's median / mean / max, and whether every proof verified.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cuzk import circuits  # noqa: E402
from cuzk.backend import get_backend  # noqa: E402
from cuzk.groth16 import verify  # noqa: E402
from cuzk.keygen import cached_setup, setup_on_device  # noqa: E402
from cuzk.opts import resolve  # noqa: E402
from cuzk.pipeline import Job, plan_workers, run_pipelined, shm_free_bytes, warm_up  # noqa: E402
from cuzk.prover import Prover  # noqa: E402

PROVE = ("prep_msm", "ntt_msm_h", "batch_addition", "tail_msm", "b_g2")


def steps(phases: dict, label: str) -> list[float]:
    """Device seconds of each proof's sub-step `label` (h scalars, h msm)."""
    return [c["device_stop_s"] - c["device_start_s"] for c in phases["ntt_msm_h"]["circuits"]
            if c.get("label") == label and c.get("device_stop_s") is not None]


def overlaps(phases: dict, label: str) -> list[float]:
    """For each `label` span (device interval), the device seconds of every other span in any phase that overlap
    it: another proof's kernels sharing the GPU with it (depth 2 keeps two proofs in flight)."""
    spans = [c for rec in phases.values() for c in rec.get("circuits", [])
             if c.get("device_start_s") is not None and c.get("device_stop_s") is not None]
    out = []
    for c in spans:
        if c.get("label") != label:
            continue
        a, b = c["device_start_s"], c["device_stop_s"]
        out.append(sum(max(0.0, min(b, d["device_stop_s"]) - max(a, d["device_start_s"]))
                       for d in spans if d is not c))
    return out


class MsmStats:
    """Wraps cuzk.gpu.msm.msm_g1 to keep msm.last_stats of each MSM of at least 2^20 points (the H MSMs), with the
    call's host wall and its thread's CPU seconds. A call slowed by a busy device spins in its syncs (CPU time
    grows with the wall); one whose thread waits for the GIL does not."""

    def __init__(self):
        from cuzk.gpu import msm
        self.calls, self.orig = [], msm.msm_g1

        def wrapped(bases, inf, scalars, *a, **kw):
            w0, c0 = time.perf_counter(), time.thread_time()
            r = self.orig(bases, inf, scalars, *a, **kw)
            if len(inf) >= 1 << 20:
                st, wall, cpu = msm.last_stats, time.perf_counter() - w0, time.thread_time() - c0
                self.calls.append(f"{st.get('max_entries')}/{st.get('affine_rounds')}/{st.get('fallbacks')}"
                                  f"/{wall:.3f}/{cpu:.3f}")
            return r
        msm.msm_g1 = wrapped

    def take(self) -> list[str]:
        out, self.calls = self.calls, []
        return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("specs", nargs="+")
    ap.add_argument("--log-size", type=int, default=27)
    ap.add_argument("--circuits", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--circuit", default="porep_partition")
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--backend", default="cuda", choices=("cuda", "cpu"), help="cpu: a smoke run of this script")
    ap.add_argument("--msm-stats", action="store_true", help="per proof: the H MSM's max_entries / affine rounds / "
                    "fallbacks / host wall s / thread CPU s, and the device seconds other spans overlap its h msm")
    args = ap.parse_args()
    stats = MsmStats() if args.msm_stats and args.backend == "cuda" else None
    sets = [resolve(s) for s in args.specs]
    backend = get_backend(args.backend, opts=sets[0])
    gpu = backend.name == "cuda"
    t0 = time.perf_counter()
    r1cs = circuits.build(args.circuit, args.log_size, opts=sets[0], seed=1, limbs=gpu)[0]
    if gpu:
        pk, kh, _ = setup_on_device(r1cs)
    else:
        pk = cached_setup(r1cs, progress=False, backend="cpu")[0]
        kh = backend.load_key(pk)
    provers = [Prover(backend if i == 0 else get_backend(args.backend, opts=s), pk, kh=kh) for i, s in enumerate(sets)]
    vk = pk.verifying_key()
    print(f"circuit and key: {time.perf_counter() - t0:.1f} s", flush=True)
    jobs = [Job(args.circuit, args.log_size, s, tuple(range(1, args.circuits + 1)), not gpu,
                witness_limbs=gpu) for s in sets]
    for spec, prover, job in zip(args.specs, provers, jobs):
        t0 = time.perf_counter()
        proof, public = warm_up(prover, r1cs, job)
        assert verify(vk, public, proof), "the warm-up proof does not verify"
        print(f"warm-up ({spec or 'defaults'}): {time.perf_counter() - t0:.1f} s", flush=True)
        if stats:
            print(f"  warm-up H MSM max_entries/rounds/fallbacks/wall/cpu: {' '.join(stats.take())}", flush=True)
    workers = plan_workers(args.circuits, args.circuit, pk.log_n, args.depth, limbs=gpu, host_assign=not gpu,
                           shm_free=shm_free_bytes())["workers"]
    print(f"{workers} process workers, depth {args.depth}", flush=True)
    print("| set | round | wall s | prove phases s/partition | " + " | ".join(PROVE)
          + " | h scalars | h msm median / mean / max | verified |")
    print("|---|---|---|---|" + "---|" * len(PROVE) + "---|---|---|")
    for r in range(args.rounds):
        for spec, job, prover in zip(args.specs, jobs, provers):
            res = run_pipelined(prover, r1cs, job, workers, args.depth, "process")
            ph = res.phases
            means = [(ph[p]["device_s"] if gpu else ph[p]["host_s"]) / ph[p]["calls"] for p in PROVE]
            hm, hs = steps(ph, "h msm") or [0.0], steps(ph, "h scalars") or [0.0]
            ok = all(verify(vk, pub, pf) for pub, pf in zip(res.publics, res.proofs))
            print(f"| {spec or 'defaults'} | {r} | {res.wall_s:.2f} | {sum(means):.4f} | "
                  + " | ".join(f"{m:.4f}" for m in means)
                  + f" | {statistics.mean(hs):.4f} | {statistics.median(hm):.4f} / {statistics.mean(hm):.4f} / "
                  f"{max(hm):.4f} | {ok} |", flush=True)
            print("  h msm per proof, in proving order: " + " ".join(f"{x:.3f}" for x in hm), flush=True)
            if stats:
                print("  device s of other spans overlapping each h msm: "
                      + " ".join(f"{x:.3f}" for x in overlaps(ph, "h msm")), flush=True)
                print("  H MSM max_entries/rounds/fallbacks/wall/cpu, in call order: " + " ".join(stats.take()),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
