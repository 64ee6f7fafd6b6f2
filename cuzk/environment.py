"""What a process takes from its environment, read once where it starts (the CLI, the perf worker, the asv
benchmarks' set-up) and passed down as values: no module under gpu/ or backend/ reads it.

    CUZK_OPT        the optimization set on top of the registry's defaults (cuzk/opts.py), before --opt
    CUZK_TABLE_GIB  P2's memory budget for the tables, in GiB (unset: half the free device memory)
    CUZK_REQUIRE_GPU  set on GPU runners: a cuda workload that cannot run is an error, never a skip
    CUZK_PEER_SOURCES  "sppark=DIR,blst=DIR": local clones of the peer's pinned sources (`cuzk peer`, its asv
                    points) on a machine without network, before --source
The kernel cache's folder (CUZK_CUBIN_DIR, gpu/kernel_sources.py) is a location, like XDG_CACHE_HOME, not an option.
"""
from __future__ import annotations

import math
import os
from typing import Mapping

from .opts import OptError, OptSet, resolve

OPT_VAR = "CUZK_OPT"
TABLE_VAR = "CUZK_TABLE_GIB"
REQUIRE_GPU_VAR = "CUZK_REQUIRE_GPU"
PEER_SOURCES_VAR = "CUZK_PEER_SOURCES"


def options(spec: str | None = None, environ: Mapping[str, str] | None = None) -> OptSet:
    """The registry's defaults, then $CUZK_OPT, then `spec` (a command's --opt)."""
    env = os.environ if environ is None else environ
    raw = env.get(OPT_VAR, "")
    try:
        resolve(raw)
    except OptError as e:
        raise OptError(f"{OPT_VAR}={raw!r}: {e}") from None
    return resolve(",".join(s for s in (raw, spec or "") if s.strip()) or None)


def table_gib(environ: Mapping[str, str] | None = None) -> float | None:
    """$CUZK_TABLE_GIB as a positive number of GiB; None when unset or empty. A value that is not one raises
    ValueError naming the variable (whether it fits the device is checked where the tables are made)."""
    env = os.environ if environ is None else environ
    raw = env.get(TABLE_VAR, "")
    if not raw.strip():
        return None
    try:
        gib = float(raw)
    except ValueError:
        raise ValueError(f"{TABLE_VAR}={raw!r} is not a number of GiB") from None
    if not (gib > 0 and math.isfinite(gib)):
        raise ValueError(f"{TABLE_VAR}={raw!r} must be a finite number above 0")
    return gib


def gpu_required(environ: Mapping[str, str] | None = None) -> bool:
    """$CUZK_REQUIRE_GPU is 1, true, yes or on."""
    env = os.environ if environ is None else environ
    return env.get(REQUIRE_GPU_VAR, "").strip().lower() in ("1", "true", "yes", "on")


def peer_sources(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """$CUZK_PEER_SOURCES as {name: folder} (the names and folders are checked where they are used)."""
    text = (os.environ if environ is None else environ).get(PEER_SOURCES_VAR, "").strip()
    out = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        name, sep, folder = item.partition("=")
        if not sep or not name or not folder:
            raise ValueError(f"${PEER_SOURCES_VAR}: {item!r} is not NAME=DIR")
        out[name] = folder
    return out
