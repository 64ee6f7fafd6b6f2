"""`cuzk opts` and `cuzk gpu-state`: the registry's toggles, and the GPU's NVML state."""
from __future__ import annotations

import json
import os
import sys

from .. import nvml
from ..opts import describe
from ..perf.gpu_lock import one_gpu_problem
from ..perf.opts_page import rows
from ..perf.suite import variant_names
from .common import EXIT_BAD_INPUT, EXIT_OK


def cmd_opts(args) -> int:
    """The registry as a table, then the suite's variants with their meaning."""
    from tabulate import tabulate

    print(tabulate(rows(), headers=["code", "default", "phases", "what it does"], tablefmt="github"))
    print()
    print(tabulate([(v, describe(v)) for v in variant_names()], headers=["variant", "meaning"], tablefmt="github"))
    return EXIT_OK


def cmd_gpu_state(args) -> int:
    """The run's GPU record (device, driver, clocks) and one state snapshot, as JSON. --one-gpu: first, exit 2
    with one line unless the job sees exactly one GPU (gpu_lock.one_gpu_problem)."""
    dev = nvml.open_device()
    if getattr(args, "one_gpu", False):
        count = 0 if dev is None else dev.device_count()
        why = one_gpu_problem(os.environ.get("CUDA_VISIBLE_DEVICES"), count)
        if why:
            if dev is not None:
                dev.close()
            print(f"cuzk: error: gpu-state --one-gpu: {why}", file=sys.stderr)
            return EXIT_BAD_INPUT
    if dev is None:
        print(json.dumps({"gpu": None}))
        return EXIT_OK
    with dev:
        print(json.dumps({"gpu": dev.info().as_dict(), "state": dev.snapshot().as_dict()}, indent=1))
    return EXIT_OK
