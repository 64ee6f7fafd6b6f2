"""`cuzk runner-check`: prebuild the kernels into this runner's cubin cache, then the acceptance check
(cuzk/perf/runner_check.py). Exit 0 only when every check passed; 2 otherwise, naming the failing checks,
and 2 on a machine without a GPU (never a pass)."""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from ..perf import runner_check
from ..perf.gpu_lock import GpuBusy
from .common import EXIT_BAD_INPUT, EXIT_OK, CliError, _err, check_paths, write_all


def cmd_runner_check(args: argparse.Namespace) -> int:
    if args.jobs is not None and args.jobs < 1:
        raise CliError(f"runner-check: --jobs {args.jobs}: at least 1")
    if math.isnan(args.keep_days):      # no file is older than NaN days: nothing would be pruned, silently
        raise CliError("runner-check: --keep-days nan: a number of days (negative: keep all)")
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
