"""Where the spread of a GPU workload's phase samples comes from.

    python tools/gpu_sample_noise.py --target cuda:18 --samples 30 [--modes plain,warm,pause] [--json out.json]

Takes samples of each GPU phase of one Workload round-robin, as a gate worker does, in each mode:
  plain  Workload.measure exactly as the gate's workers call it
  warm   a 20 ms device spin queued just before each sample: the GPU is busy, its clocks up, as it starts
  pause  0.3 s of sleep before each sample: the GPU idle first
For each phase and mode it prints the median device time, the spread (sd of ln t over the samples),
the host share (host time inside the phase's span over its device time: host work between launches
is timed as device time), the time the MSMs' window folds took on the host, and the SM clock NVML
read just before the samples. The gate needs a spread well under its threshold to resolve it.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time


def _fold_timer():
    """Host seconds spent in the MSMs' window folds, accumulated until read."""
    from cuzk.gpu import msm
    inner = msm.fold_windows
    acc = [0.0]

    def timed(*a, **k):
        t0 = time.perf_counter()
        try:
            return inner(*a, **k)
        finally:
            acc[0] += time.perf_counter() - t0
    msm.fold_windows = timed
    return acc


def _sd_ln(xs):
    logs = [math.log(x) for x in xs if x > 0]
    return statistics.stdev(logs) if len(logs) > 1 else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="cuda:18")
    ap.add_argument("--opts", default="default")
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--modes", default="plain,warm,pause")
    ap.add_argument("--phases", default="prep_msm,ntt_msm_h,batch_addition,tail_msm,b_g2")
    ap.add_argument("--json", help="write every sample here")
    a = ap.parse_args(argv)

    from cuzk.nvml import open_device
    from cuzk.perf.inject import device_spin
    from cuzk.perf.workload import Spec, Workload

    w = Workload(Spec.parse_target(a.target, opts=a.opts)).prepare()
    if not w.device:
        print(f"{a.target}: not a GPU target", file=sys.stderr)
        return 2
    nv = open_device()
    folds = _fold_timer()
    phases = a.phases.split(",")
    rows, raw = [], {}
    for mode in a.modes.split(","):
        got = {p: {"device_s": [], "host_s": [], "fold_s": [], "sm_mhz": []} for p in phases}
        for _ in range(a.samples):
            for p in phases:
                if mode == "warm":
                    device_spin(0.02)
                elif mode == "pause":
                    time.sleep(0.3)
                elif mode != "plain":
                    raise SystemExit(f"unknown mode {mode!r}")
                clock = nv.snapshot().sm_clock_mhz if nv is not None else None
                folds[0] = 0.0
                dev = w.measure(p)
                rec = w.last_record
                g = got[p]
                g["device_s"].append(dev)
                g["host_s"].append(rec.host_s)
                g["fold_s"].append(folds[0])
                g["sm_mhz"].append(clock)
        raw[mode] = got
        for p in phases:
            g = got[p]
            med = statistics.median(g["device_s"])
            clocks = [c for c in g["sm_mhz"] if c is not None]
            rows.append((p, mode, med * 1e3, _sd_ln(g["device_s"]),
                         statistics.median(h / d for h, d in zip(g["host_s"], g["device_s"])),
                         statistics.median(g["fold_s"]) * 1e3,
                         f"{min(clocks)}-{max(clocks)}" if clocks else "n/a"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"target": a.target, "opts": a.opts, "samples": raw}, f)
    print(f"{a.target} opts={a.opts}, {a.samples} samples a phase and mode, round-robin over the phases")
    print("set-up s: " + ", ".join(f"{k} {v:.1f}" for k, v in w.setup_s.items()))
    print(f"{'phase':<15} {'mode':<6} {'median ms':>10} {'sd ln t':>8} {'host/dev':>9} {'fold ms':>8} {'SM MHz':>10}")
    for p, mode, med, sd, share, fold, clk in rows:
        print(f"{p:<15} {mode:<6} {med:>10.3f} {sd:>8.3f} {share:>9.2f} {fold:>8.3f} {clk:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
