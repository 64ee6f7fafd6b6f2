"""Where the spread of a GPU workload's phase samples comes from.

    python tools/gpu_sample_noise.py --target cuda:18 --samples 30 [--modes plain,warm,pause] [--json out.json]
        [--steps] [--overhead]

Takes samples of each GPU phase of one Workload round-robin, as a gate worker does, in each mode:
  plain  Workload.measure exactly as the gate's workers call it
  warm   a 20 ms device spin queued just before each sample: the GPU is busy, its clocks up, as it starts
  pause  0.3 s of sleep before each sample: the GPU idle first
For each phase and mode it prints the median device time, the spread (sd of ln t over the samples),
the host share (host time inside the phase's span over its device time: host work between launches
is timed as device time), the time the MSMs' window folds took on the host, and the SM clock NVML
read just before the samples. The gate needs a spread well under its threshold to resolve it.
--steps: CUDA events at each MSM's marks (digits, sort, bucket sums ...) and the host time of the window
choice and the fold, averaged over the faster and the slower half of each phase's samples: a step that
only the slow half pays is the source; every step slower at once means the host paces the phase.
--overhead: what a gate sample costs besides the phase (gc.collect, an NVML snapshot, a guarded sample).
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
    from cuzk.gpu.msm import fold                 # where msm_g1, msm_g2 and the multi-MSM's parts find it
    inner = fold.fold_windows
    acc = [0.0]

    def timed(*a, **k):
        t0 = time.perf_counter()
        try:
            return inner(*a, **k)
        finally:
            acc[0] += time.perf_counter() - t0
    fold.fold_windows = timed
    return acc


class _Steps:
    """Device time between the MSMs' marks (CUDA events, no synchronization inside the phase) and host
    time of the window choice and the folds, for the sample under way."""

    def __init__(self):
        import cupy
        from cuzk.gpu.msm import fold, phase_msm
        from cuzk.gpu.msm import many as gmany
        from cuzk.gpu.msm import pippenger as gmsm
        self.cupy, self.events, self.host = cupy, [], {}
        for mod, name in ((gmsm, "_pippenger"), (gmany, "window_sums")):
            self._marked(mod, name)
        for mod, name in ((fold, "fold_windows"), (gmany, "fold_parts"), (phase_msm, "window")):
            self._host(mod, name)

    def mark(self, name):
        e = self.cupy.cuda.Event()
        e.record()
        self.events.append((name, e))

    def _marked(self, mod, name):
        inner = getattr(mod, name)

        def marked(*a, **k):
            if "mark" in k or name == "window_sums":
                k["mark"] = self.mark
            else:                                   # _pippenger(..., mark, host_fold, ...): the 9th argument
                a = a[:8] + (self.mark,) + a[9:]
            return inner(*a, **k)
        setattr(mod, name, marked)

    def _host(self, mod, name):
        inner = getattr(mod, name)

        def timed(*a, **k):
            self.mark(name + " (start)")
            t0 = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                self.host[name] = self.host.get(name, 0.0) + time.perf_counter() - t0
                self.mark(name)
        setattr(mod, name, timed)

    def start(self):
        self.events, self.host = [], {}

    def finish(self) -> dict:
        """ms of device time ending at each mark, and ms of host time in each wrapped host step."""
        self.cupy.cuda.Device().synchronize()
        out = {}
        for (_, e0), (n1, e1) in zip(self.events, self.events[1:]):
            out[n1] = out.get(n1, 0.0) + self.cupy.cuda.get_elapsed_time(e0, e1)
        out.update({f"host {k}": v * 1e3 for k, v in self.host.items()})
        return out


def _halves(got: list[dict], device_s: list[float]) -> list[tuple[str, float, float]]:
    """Each step's mean ms over the faster and the slower half of the samples."""
    med = statistics.median(device_s)
    fast = [g for g, d in zip(got, device_s) if d <= med]
    slow = [g for g, d in zip(got, device_s) if d > med] or fast
    keys = sorted({k for g in got for k in g})
    return [(k, statistics.mean(g.get(k, 0.0) for g in fast), statistics.mean(g.get(k, 0.0) for g in slow))
            for k in keys]


def _overhead(w, samples: int) -> list[tuple[str, float]]:
    """Median ms of what a gate sample does besides the phase."""
    import gc
    from cuzk.perf import sampler
    guard = sampler.guard_for(w)

    def med(fn):
        xs = []
        for _ in range(samples):
            t0 = time.perf_counter()
            fn()
            xs.append(time.perf_counter() - t0)
        return statistics.median(xs) * 1e3
    rows = [(f"gc.collect ({len(gc.get_objects())} objects)", med(gc.collect))]
    if guard is not None:
        rows.append(("one NVML snapshot", med(guard.nvml.snapshot)))
    for p in ("ntt_msm_h", "tail_msm"):
        rows.append((f"{p}: measure, wall", med(lambda: w.measure(p))))
        if guard is not None:
            rows.append((f"{p}: guarded sample, wall",
                         med(lambda: sampler.collect(lambda: w.measure(p), 1, guard))))
    return rows


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
    ap.add_argument("--steps", action="store_true", help="each MSM step's time in the fast and slow halves")
    ap.add_argument("--overhead", action="store_true", help="what a gate sample costs besides the phase")
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
    steps = _Steps() if a.steps else None
    halves = []
    phases = a.phases.split(",")
    rows, raw = [], {}
    for mode in a.modes.split(","):
        got = {p: {"device_s": [], "host_s": [], "fold_s": [], "sm_mhz": [], "steps": []} for p in phases}
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
                if steps is not None:
                    steps.start()
                dev = w.measure(p)
                if steps is not None:
                    got[p]["steps"].append(steps.finish())
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
            if steps is not None and g["steps"]:
                halves.append((p, mode, _halves(g["steps"], g["device_s"])))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"target": a.target, "opts": a.opts, "samples": raw}, f)
    print(f"{a.target} opts={a.opts}, {a.samples} samples a phase and mode, round-robin over the phases")
    print("set-up s: " + ", ".join(f"{k} {v:.1f}" for k, v in w.setup_s.items()))
    print(f"{'phase':<15} {'mode':<6} {'median ms':>10} {'sd ln t':>8} {'host/dev':>9} {'fold ms':>8} {'SM MHz':>10}")
    for p, mode, med, sd, share, fold, clk in rows:
        print(f"{p:<15} {mode:<6} {med:>10.3f} {sd:>8.3f} {share:>9.2f} {fold:>8.3f} {clk:>10}")
    for p, mode, rows_ in halves:
        print(f"\n{p} ({mode}): ms per sample, faster half / slower half")
        for k, fast, slow in rows_:
            print(f"  {k:<34} {fast:>8.3f} {slow:>8.3f}")
    if a.overhead:
        print("\na gate sample besides the phase (median ms):")
        for k, v in _overhead(w, a.samples):
            print(f"  {k:<40} {v:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
