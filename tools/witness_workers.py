"""How long the pipeline's witness workers take, alone and side by side (no GPU needed).

    python tools/witness_workers.py --log-size 27 --workers 1,8 [--opt -B4] [--circuit porep_partition]

For each worker count N, starts N spawned process workers (as `bench --pipeline --pool process` does, warmed
before the clock), submits one circuit's witness to each at once through the pipeline's own `synth_one` (the
/dev/shm hand-off, B2's packing, B3, B4 as the options say), and prints each job's start and end from the
common start, the first and the last to finish. The first is what a pipelined run's first proof waits for.
The shared blocks are removed after each count.
"""
from __future__ import annotations

import argparse
import time
from concurrent.futures import wait

from cuzk import pipeline
from cuzk.opts import resolve
from cuzk.synthesis import make_pool


def measure(circuit: str, log_size: int, opts, n: int) -> list[tuple[float, float]]:
    pool = make_pool("process", n)
    try:
        t0 = time.perf_counter()
        futs = [pool.submit(pipeline.synth_one, circuit, log_size, opts, 1 + i, False, True, True) for i in range(n)]
        wait(futs)
        spans = []
        for f in futs:
            payload, a, b = f.result()
            spans.append((a - t0, b - t0))
            pipeline._discard((0, 0, (payload, a, b)))
        return sorted(spans)
    finally:
        pool.shutdown()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--circuit", default="porep_partition")
    ap.add_argument("--log-size", type=int, required=True)
    ap.add_argument("--workers", default="1", help="comma-separated worker counts")
    ap.add_argument("--opt", default="", help="options as --opt takes them, e.g. -B4")
    args = ap.parse_args(argv)
    opts = resolve(args.opt)
    for n in [int(s) for s in args.workers.split(",")]:
        spans = measure(args.circuit, args.log_size, opts, n)
        print(f"{args.circuit} 2^{args.log_size} opt '{args.opt}' workers {n}: first done {min(b for _, b in spans):.2f} s, "
              f"last {max(b for _, b in spans):.2f} s; " + " ".join(f"[{a:.2f} {b:.2f}]" for a, b in spans),
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
