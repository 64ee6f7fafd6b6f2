"""What the gate's device probe (cuzk/perf/device_probe.py) reads on this GPU: the level `[trust] max_device_wait_us`
is set from. Two processes, each its own CUDA context, as the gate's two workers: this one probes, a helper does
GPU work between the probes in the ways a gate's round and an attack do.

    python tools/probe_levels.py [--repeat 40]

Rows: alone; after the other context's work (whole-GPU kernels, finished), at once and after 15 ms idle (the
gate's guard reads sit between the sides' samples); after this context's own work; behind the other context's
kernel still running (2 ms and 60 ms), as a head's left-over work would be, and so with that process stopped
(SIGSTOP) as the gate stops its idle worker, and as the e2e test's head leaves it (a non-blocking stream of its
own, the gate's NVML snapshots between). Each probe of a row is shown apart:
"first" is the one a sample's "before" probe is, "second" one launched right after it.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import signal
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def helper(conn):
    import cupy
    import numpy as np
    from cuzk.perf import device_probe
    src = Path(device_probe.__file__).with_name("device_probe.cu").read_text()
    spin = cupy.RawModule(code=src, backend="nvrtc").get_function("device_probe")
    a = cupy.ones(1 << 26, dtype=cupy.float32)
    side = None
    conn.send("ready")
    while True:
        cmd, arg = conn.recv()
        if cmd == "stop":
            return
        if cmd == "work":                       # whole-GPU kernels, waited for
            for _ in range(arg):
                a = a * np.float32(1.0000001) + np.float32(1.0)
            cupy.cuda.Device().synchronize()
        elif cmd == "leave":                    # a kernel left running past the reply
            spin((1,), (1,), (np.uint64(arg),))
        elif cmd == "leave-aside":              # the same on a non-blocking stream of its own (the e2e attack's)
            if side is None:
                side = cupy.cuda.Stream(non_blocking=True)
            with side:
                spin((1,), (1,), (np.uint64(arg),))
        elif cmd == "sync":
            cupy.cuda.Device().synchronize()
        conn.send("done")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=40)
    args = ap.parse_args()
    import cupy
    import numpy as np
    from cuzk.perf.device_probe import DeviceProbe
    probe = DeviceProbe()
    own = cupy.ones(1 << 26, dtype=cupy.float32)
    ctx = mp.get_context("spawn")
    here, there = ctx.Pipe()
    p = ctx.Process(target=helper, args=(there,), daemon=True)
    p.start()
    assert here.recv() == "ready"

    def ask(cmd, arg=0):
        here.send((cmd, arg))
        assert here.recv() == "done"

    rows = {}

    def take(name, n_probes, before):
        for _ in range(args.repeat):
            before()
            for i in range(n_probes):
                rows.setdefault((name, i), []).append(probe.wait_us())
            time.sleep(0.002)

    ask("work", 40)
    take("alone", 2, lambda: None)
    take("after other's work", 2, lambda: ask("work", 40))
    take("after other's work, 15 ms idle", 2, lambda: (ask("work", 40), time.sleep(0.015)))

    def own_work():
        x = own
        for _ in range(40):
            x = x * np.float32(1.0000001) + np.float32(1.0)
        cupy.cuda.Device().synchronize()
    take("after own work", 2, own_work)
    for ms in (2, 60):
        def leave(ms=ms):
            ask("leave", ms * 1_000_000)
        take(f"behind other's {ms} ms kernel", 3, leave)
        ask("sync")
    # as in a gate: the process that left it stopped (SIGSTOP) while the probes run, continued after; then as the
    # e2e test's head leaves it: its own non-blocking stream, the gate's two NVML snapshots between, not a sleep
    from cuzk import nvml
    dev = nvml.open_device()

    def stopped_row(name, cmd, between):
        stopped = []

        def leave():
            if stopped:
                os.kill(p.pid, signal.SIGCONT)
            ask(cmd, 60_000_000)
            os.kill(p.pid, signal.SIGSTOP)
            stopped.append(1)
            between()
        take(name, 3, leave)
        os.kill(p.pid, signal.SIGCONT)
        ask("sync")
    stopped_row("behind a stopped process's 60 ms kernel", "leave", lambda: time.sleep(0.015))
    if dev is not None:
        stopped_row("as the e2e head: own stream, NVML reads", "leave-aside", lambda: (dev.snapshot(), dev.snapshot()))
    else:
        stopped_row("as the e2e head: own stream (no NVML)", "leave-aside", lambda: time.sleep(0.015))
    here.send(("stop", 0))
    p.join(10)
    print(f"{'case':44s} {'probe':>6s} {'median':>8s} {'p90':>8s} {'max':>8s}  (us past the spin, n={args.repeat})")
    names = ("first", "second", "third")
    for (name, i), v in rows.items():
        v = sorted(v)
        print(f"{name:44s} {names[i]:>6s} {statistics.median(v):8.1f} {v[int(0.9 * len(v))]:8.1f} {v[-1]:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
