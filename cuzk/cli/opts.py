"""`cuzk opts` and `cuzk gpu-state`: the registry's toggles, and the GPU's NVML state."""
from __future__ import annotations

import json

from .common import (EXIT_OK)


def cmd_opts(args) -> int:
    """The registry as a table, then the suite's variants with their meaning."""
    from tabulate import tabulate

    from ..perf.opts_page import rows
    from ..perf.suite import variant_names
    from ..opts import describe
    print(tabulate(rows(), headers=["code", "default", "phases", "what it does"], tablefmt="github"))
    print()
    print(tabulate([(v, describe(v)) for v in variant_names()], headers=["variant", "meaning"], tablefmt="github"))
    return EXIT_OK


def cmd_gpu_state(args) -> int:
    """The run's GPU record (device, driver, clocks) and one state snapshot, as JSON."""
    from ..nvml import open_device
    dev = open_device()
    if dev is None:
        print(json.dumps({"gpu": None}))
        return EXIT_OK
    with dev:
        print(json.dumps({"gpu": dev.info().as_dict(), "state": dev.snapshot().as_dict()}, indent=1))
    return EXIT_OK
