"""A gate worker process: `python -m cuzk.perf.worker REQ_FD REPLY_FD` serves samples of one workload,
one request at a time, as JSON lines on a pipe of its own.

The gate keeps a base and a head worker alive side by side and asks them in turn, so base and
head samples alternate a few milliseconds apart and drift hits both; the idle one waits on its
request pipe and uses no CPU. Requests and replies never touch fd 0, 1 or 2: what the measured
code prints (a device printf, a library's banner, os.write(1, ...)) goes to the gate's log, and
every reply carries its request's "id". Requests:
  1. set-up: {"id", "protocol", "root", "spec", "areas", "min_sample_s", "min_device_sample_s", "numbers" (calls
     per sample to use; absent: calibrated here), "key_dir" (where a key made on the GPU is kept for this side's
     later workers; absent: made afresh)}
     -> {"status": "ready" | "unavailable" (no GPU) | "unusable" (a GPU that cannot run), "numbers",
         "min_device_sample_s" (as applied: a harness from before it leaves it out and samples one call),
         "setup_s" (seconds of each set-up step), "key" (made or loaded: workload.key_report), "gpu",
         "compiled_here" (kernel modules compiled from source by NVRTC, not prebuilt cubins), ...}
  2. {"id", "sample": AREA} -> {"status": "ok", "value": seconds per call, "gc_s" (the untimed collection
     before it), "host_s" (measure()'s wall), "preempted" (times the sampling thread was switched out),
     "window" (sched_window: {"held_ms", "away_ms"} across the timed calls, or None), "timed_by" ("host" | "device"),
     "device_wait_us" (a GPU workload's: another context's work ahead of the probes around the sample,
     device_probe.py; None on the CPU)}
  3. {"id", "quit": true} -> {"status": "done", "discards", "peak_device_bytes"}
  Any failure: {"status": "error", "message"}, a traceback on stderr, and a non-zero exit.
The worker runs with a commit's import root first on sys.path, so it measures that commit's
code, and checks that `cuzk` really comes from there. This module itself is the base's on both
sides (checkout.overlay_harness). Samples go through cuzk.perf.sampler, unguarded: a GPU sample's NVML guard is
the gate's, read between the requests (gate.py), so that the round trip the gate times holds the sample alone and
none of the guard's reads, whose time this process (the head's code runs in it) would report.
"""
from __future__ import annotations

import gc
import json
import os
import platform
import sys
import traceback
from pathlib import Path

from .. import nvml
from . import sampler, workload
from .workload import GpuUnusable, Spec, Unavailable

PROTOCOL = 5


def compiled_here() -> list[str] | None:
    """The kernel modules this process's cuzk compiled from source (NVRTC) rather than loaded as prebuilt cubins,
    after set-up ran every phase, as its loader recorded them. None where that loader keeps no such record (a
    commit from before it)."""
    try:
        from cuzk.gpu import loader
    except Exception:           # noqa: BLE001 - the side's code, whatever it raises: unknown
        return None
    made = getattr(loader, "compiled_from_source", None)
    if not isinstance(made, (set, frozenset)):
        return None
    out = []
    for key in made:
        name, extra = key if isinstance(key, tuple) and len(key) == 2 else (key, ())
        out.append(f"{name} [{' '.join(map(str, extra))}]" if extra else str(name))
    return sorted(out)


class Worker:
    def __init__(self, req: dict):
        import cuzk

        if req.get("protocol") != PROTOCOL:
            raise RuntimeError(f"worker protocol {PROTOCOL}, request {req.get('protocol')}")
        root = req.get("root")
        here = Path(cuzk.__file__).resolve()
        if root and Path(root).resolve() not in here.parents:
            raise RuntimeError(f"cuzk was imported from {here}, not from the commit under test ({root})")
        self.req = req
        self.info = {"protocol": PROTOCOL, "cuzk_file": str(here), "pid": os.getpid(),
                     "python": platform.python_version(), "gpu": None}
        self.w = workload.Workload(Spec(**req["spec"]), key_dir=req.get("key_dir"))
        self.sampler = sampler

    def setup(self) -> dict:
        try:
            self.w.prepare()
        except Unavailable as e:
            return {**self.info, "status": "unavailable", "message": str(e)}
        except GpuUnusable as e:
            return {**self.info, "status": "unusable", "message": str(e)}
        if self.w.device:
            dev = nvml.open_device()
            self.info["gpu"] = dev.info().as_dict() if dev is not None else None
            self.probe = self.make_probe()
        min_s, min_dev = self.req.get("min_sample_s", 0.0), self.req.get("min_device_sample_s", 0.0)
        given = self.req.get("numbers") or {}      # the gate's: both sides time the same calls per sample
        self.numbers = {a: int(given[a]) if isinstance(given.get(a), int) and given[a] >= 1
                        else self.w.calibrate(a, min_s, min_device_sample_s=min_dev) for a in self.req["areas"]}
        return {**self.info, "status": "ready", "numbers": self.numbers, "min_device_sample_s": min_dev,
                "setup_s": getattr(self.w, "setup_s", {}),
                "key": getattr(self.w, "key_report", None),
                "compiled_here": compiled_here() if self.w.device else []}

    @staticmethod
    def make_probe():
        from .device_probe import DeviceProbe
        return DeviceProbe()

    def sample(self, area: str) -> dict:
        probe = getattr(self, "probe", None)
        before = probe.before_us() if probe is not None else None
        s = self.sampler.collect(lambda: self.w.measure(area, self.numbers[area]), 1,
                                 number=self.numbers[area], what=self.w.spec.label())
        wait = max(before, probe.wait_us()) if probe is not None else None
        return {"status": "ok", "value": s.values[0], "gc_s": getattr(self.w, "last_gc_s", None),
                "host_s": s.host_s[0] if s.host_s else None,
                "preempted": getattr(self.w, "last_preempted", None),
                "window": getattr(self.w, "last_window", None), "timed_by": getattr(self.w, "last_timed_by", None),
                "device_wait_us": wait}

    def finish(self) -> dict:
        return {"status": "done", "discards": [], "peak_device_bytes": self.w.peak_device_bytes}


def serve(lines, reply, freeze: bool = False) -> int:
    """freeze (the worker process's own): once set up, the set-up's objects (inputs, key, witness) are moved out of
    the collector's reach (gc.freeze), so the full collection before each sample walks only what the phases made
    since (the CPU reference at 2^18: 32 ms a sample -> none; the phases' time unchanged)."""
    worker = None
    for line in lines:
        msg = json.loads(line)
        rid = msg.get("id")

        def answer(r: dict) -> dict:
            reply({**r, "id": rid})
            return r
        try:
            if worker is None:
                worker = Worker(msg)
                ready = worker.setup()
                if freeze and ready["status"] == "ready":      # before the reply: the rival may sample next
                    gc.collect()
                    gc.freeze()
                if answer(ready)["status"] != "ready":
                    return 0
            elif "sample" in msg:
                if answer(worker.sample(msg["sample"]))["status"] != "ok":
                    return 0
            elif msg.get("quit"):
                answer(worker.finish())
                return 0
            else:
                raise RuntimeError(f"unknown request {msg!r}")
        except Exception as e:
            traceback.print_exc()
            answer({"status": "error", "message": f"{type(e).__name__}: {e}"})
            return 1
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    req_fd, reply_fd = int(argv[0]), int(argv[1])
    for fd in (req_fd, reply_fd):
        os.set_inheritable(fd, False)          # the measured code's own subprocesses never see the channel
    requests = os.fdopen(req_fd, "r")
    out = os.fdopen(reply_fd, "w")

    def reply(obj: dict) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()
    return serve(requests, reply, freeze=True)


if __name__ == "__main__":
    sys.exit(main())
