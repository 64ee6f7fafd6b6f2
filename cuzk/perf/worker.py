"""One gate worker process: `python -m cuzk.perf.worker` reads a request (JSON) on stdin, takes
the samples of one workload through cuzk.perf.sampler, and writes one JSON reply on stdout.

It runs with a commit's import root first on sys.path, so it measures that commit's code; it
checks that `cuzk` really comes from there. Statuses: ok, unavailable (the backend cannot run
here), untrusted (too many samples rejected by the NVML guard). Anything else is an error: a
traceback on stderr and a non-zero exit.
"""
from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

PROTOCOL = 1


def run(req: dict) -> dict:
    import cuzk
    from ..nvml import open_device
    from . import sampler
    from .trust import TrustPolicy
    from .workload import Spec, Unavailable, Workload

    if req.get("protocol") != PROTOCOL:
        raise RuntimeError(f"worker protocol {PROTOCOL}, request {req.get('protocol')}")
    root = req.get("root")
    here = Path(cuzk.__file__).resolve()
    if root and Path(root).resolve() not in here.parents:
        raise RuntimeError(f"cuzk was imported from {here}, not from the commit under test ({root})")
    reply = {"protocol": PROTOCOL, "status": "ok", "cuzk_file": str(here), "pid": os.getpid(),
             "python": platform.python_version(), "gpu": None, "areas": {}, "discards": []}
    spec = Spec(**req["spec"])
    tp = req.get("trust", {})
    policy = TrustPolicy(**{k: tuple(v) if isinstance(v, list) else v for k, v in tp.items()})
    w = Workload(spec)
    try:
        w.prepare()
    except Unavailable as e:
        return {**reply, "status": "unavailable", "message": str(e)}
    if w.device:
        dev = open_device()
        reply["gpu"] = dev.info().as_dict() if dev is not None else None
    try:
        res = sampler.sample_areas(w, req["areas"], req["samples"], policy=policy,
                                   min_sample_s=req.get("min_sample_s", 0.0),
                                   max_discards=req.get("max_discards", 10), pause_s=req.get("pause_s", 1.0))
    except sampler.UntrustedRun as e:
        return {**reply, "status": "untrusted", "message": str(e), "discards": e.discards}
    reply["areas"] = {a: s.as_dict() for a, s in res.sets.items()}
    reply["discards"] = res.discards
    reply["peak_device_bytes"] = w.peak_device_bytes
    return reply


def main() -> int:
    req = json.loads(sys.stdin.read())
    out, sys.stdout = sys.stdout, sys.stderr      # stdout carries the reply only
    reply = run(req)
    out.write(json.dumps(reply) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
