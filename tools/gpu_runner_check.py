"""A GPU runner's acceptance check with the suite end to end: `cuzk runner-check --deep WORKDIR`
(cuzk/perf/runner_check.py), with the gate's rounds and the deep steps selectable.

    python tools/gpu_runner_check.py --workdir DIR [--phase tail_msm] [--target cuda:18] [--rounds 8]
                                     [--samples 5] [--steps asv,broken,aa,slow]

First the checks every job's runner-check runs (kernels prebuilt into $CUZK_CUBIN_DIR, a proof verified on the
GPU, a guarded point, NVML), then: asv measures the phase at the target; asv fails with CuPy made unimportable;
`cuzk gate` exits 0 on an A/A pair and 1 naming only the phase when it is slowed by +100% of its device time.
Prints the table; exits 0 when every check passed, 2 otherwise (and on a machine without a GPU).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuzk.perf import runner_check  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--phase", default="tail_msm")
    ap.add_argument("--target", default="cuda:18")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--samples", type=int, default=5, help="the gate's samples per round")
    ap.add_argument("--steps", default=",".join(runner_check.DEEP_STEPS),
                    help="which of asv, broken, aa, slow to run (default: all)")
    args = ap.parse_args()
    try:
        rep = runner_check.run(target=args.target, phase=args.phase, deep=Path(args.workdir),
                               deep_steps=tuple(args.steps.split(",")), deep_rounds=args.rounds,
                               deep_samples=args.samples)
    except (ValueError, runner_check.NoGpu, OSError) as e:
        print(f"gpu_runner_check: {e}", file=sys.stderr)
        return 2
    print(rep.markdown())
    print("ready" if rep.ready else f"NOT ready: {', '.join(rep.failing())}")
    return 0 if rep.ready else 2


if __name__ == "__main__":
    sys.exit(main())
