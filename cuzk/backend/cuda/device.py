"""What the CUDA backend's phases share on the device: the resident key, the timer's events, P1's streams."""
from __future__ import annotations

import contextvars
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import cupy

from ...gpu.msm import fixed as gfixed
from ...gpu.msm import pippenger as gmsm
from ...gpu.msm import tables as gtables
from ...gpu.srs import DeviceKey
from ...poly import Domain


class CudaTimerDevice:
    """PhaseTimer hook: CUDA events on the current stream, read once at the end."""

    def record_event(self):
        ev = cupy.cuda.Event()
        ev.record()
        return ev

    def elapsed_s(self, a, b) -> float:
        b.synchronize()
        return cupy.cuda.get_elapsed_time(a, b) / 1e3

    def peak_bytes(self) -> int:
        return int(cupy.get_default_memory_pool().total_bytes())


class CudaKey:
    """The key's bases on the GPU, uploaded once (or `dev`: already there, from GPU keygen);
    the few fixed points as arkworks points."""

    def __init__(self, pk, dev: DeviceKey | None = None):
        self.pk = pk
        self.domain = Domain(pk.log_n, pk.generator)
        self.dev = dev if dev is not None else DeviceKey(pk)
        self.vk = {k: pk.points[k].to_ark()[0] for k in ("alpha_g1", "beta_g1", "beta_g2", "delta_g1", "delta_g2")}
        self._b_g2_ark = None
        self.tables = None                      # P2: the H section's FixedTables, once made
        self.tables_s = 0.0                     # the seconds they took
        self.tables_dropped = False             # freed under memory pressure: not made again for this key

    def h_tables(self, table_gib: float | None = None):
        """P2: the H bases' tables (gpu/msm/fixed.py), made on the GPU on first use within the budget
        (gpu/msm/tables.budget_bytes of table_gib); None when the budget leaves room for no block beyond the bases, or
        once they were freed under memory pressure (drop_tables)."""
        if self.tables is None and not self.tables_dropped:
            sec = self.dev["h"]
            tp = gtables.choose_tables(len(sec), gtables.budget_bytes(gmsm.free_bytes(), table_gib))
            if tp.t == 1:
                return None
            t0 = time.perf_counter()
            try:
                self.tables = gfixed.FixedTables(sec, tp)
            except cupy.cuda.memory.OutOfMemoryError:      # the section's limbs are untouched until it is made
                self.tables_dropped = True
                cupy.get_default_memory_pool().free_all_blocks()
                print(f"cuzk: P2: no room for the H tables ({tp.table_bytes(len(sec)) / 2**30:.2f} GiB): proving "
                      "goes on without them", file=sys.stderr)
                return None
            cupy.cuda.Device().synchronize()
            self.tables_s = time.perf_counter() - t0
        return self.tables

    def drop_tables(self) -> None:
        """Free the tables (memory pressure): the H section keeps its own limbs."""
        if self.tables is not None:
            self.tables.release()
            self.tables = None
        self.tables_dropped = True

    def memory(self) -> dict:
        """Device bytes by use: the key's sections, P2's tables, and the pool beyond both (work buffers, at their
        peak: the pool keeps what it grew to)."""
        pool = int(cupy.get_default_memory_pool().total_bytes())
        key = int(self.dev.nbytes)
        tables = 0 if self.tables is None else int(self.tables.nbytes)
        free, total = cupy.cuda.runtime.memGetInfo()
        return {"key_bytes": key, "table_bytes": tables, "work_bytes": max(pool - key - tables, 0),
                "device_total_bytes": int(total), "device_free_bytes": int(free)}

    def b_g2_ark(self) -> list:
        if self._b_g2_ark is None:
            # a key made on the GPU has no host copy: download the section once
            pts = self.pk.points.get("b_g2") or self.dev.sections["b_g2"]
            self._b_g2_ark = pts.to_ark()
        return self._b_g2_ark


class Concurrent:
    """P1: independent jobs (each queues GPU work and returns host results) on their own non-blocking
    CUDA streams, one thread each, ordered after the work already queued on the caller's stream."""

    def __init__(self, width: int = 4):
        self.width = width
        self.streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(width)]
        self.pool = ThreadPoolExecutor(width, thread_name_prefix="cuzk-p1")

    def run(self, jobs: list) -> list:
        """jobs: callables; returns their results in order."""
        ready = cupy.cuda.Event()
        ready.record()                          # the inputs, queued on the caller's stream
        dev = cupy.cuda.Device()                # the caller's device (bench --devices: its lane's), current in each job

        def one(i, fn):
            s = self.streams[i % self.width]
            s.wait_event(ready)
            with dev, s:
                out = fn()
                s.synchronize()
            return out

        futs = [self.pool.submit(contextvars.copy_context().run, one, i, fn) for i, fn in enumerate(jobs)]
        return [f.result() for f in futs]
