"""`cuzk runner-check`: prebuild the kernels into this runner's cubin cache, then the acceptance check
(cuzk/perf/runner_check.py). Exit 0 only when every check passed; 2 otherwise, naming the failing checks,
and 2 on a machine without a GPU (never a pass)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from .common import EXIT_BAD_INPUT, EXIT_OK, CliError, _err, check_paths, write_all


def add_parser(sub) -> None:
    rc = sub.add_parser("runner-check", help="a GPU runner's readiness: prebuild every kernel module into the cubin "
                                             "cache ($CUZK_CUBIN_DIR), then one proof verified on the GPU, one cuda "
                                             "point measured, NVML read; exit 0 ready, 2 not (or no GPU)")
    rc.add_argument("--target", default="cuda:18", help="the cuda workload proved and measured (default cuda:18, "
                                                        "the gate's; its key lands in the key cache)")
    rc.add_argument("--phase", default="tail_msm", help="the phase measured (default tail_msm)")
    rc.add_argument("--samples", type=int, default=9, help="guarded device timings of the phase (default 9, >= 7)")
    rc.add_argument("--commit", dest="commits", action="append", default=[], metavar="REF",
                    help="also prebuild the kernels of this commit of --repo (repeatable): the gate's base and head, "
                         "so neither side compiles in its workers")
    rc.add_argument("--repo", default=".", help="the git repository of --commit (default: .)")
    rc.add_argument("--jobs", type=int, default=None, metavar="N", help="nvcc processes at a time (default: the CPUs)")
    rc.add_argument("--keep-days", type=float, default=30.0, metavar="D",
                    help="remove cache files that no prebuild has made or used for D days (default 30; "
                         "negative: keep all)")
    rc.add_argument("--deep", metavar="WORKDIR",
                    help="also the suite end to end in WORKDIR (new or empty), as a new runner is commissioned: asv "
                         "measures the phase, asv fails with CuPy broken, the gate passes A/A and flags the phase "
                         "slowed by +100%% (tens of minutes)")
    rc.add_argument("--json", metavar="FILE", help="write the checks as JSON")
    rc.set_defaults(func=cmd_runner_check)


def cmd_runner_check(args: argparse.Namespace) -> int:
    from ..perf import runner_check
    from ..perf.gpu_lock import GpuBusy
    if args.jobs is not None and args.jobs < 1:
        raise CliError(f"runner-check: --jobs {args.jobs}: at least 1")
    if args.json:
        check_paths({"--json": args.json})
    try:
        rep = runner_check.run(target=args.target, phase=args.phase, samples=args.samples,
                               commits=tuple(args.commits), repo=Path(args.repo), workers=args.jobs,
                               keep_days=args.keep_days if args.keep_days >= 0 else None,
                               deep=Path(args.deep) if args.deep else None)
    except runner_check.NoGpu as e:
        _err(f"runner-check: no GPU here ({e}): a runner's check needs its GPU; nothing was checked")
        return EXIT_BAD_INPUT
    except GpuBusy as e:
        _err(f"runner-check: {e}")
        return EXIT_BAD_INPUT
    print(rep.markdown())
    if args.json:
        write_all({Path(args.json): json.dumps(rep.as_dict(), indent=1) + "\n"})
    print(rep.verdict())
    if rep.ready:
        return EXIT_OK
    _err(rep.verdict().removeprefix("runner-check: "))
    return EXIT_BAD_INPUT
