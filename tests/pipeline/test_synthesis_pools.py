"""The synthesis pools (`cuzk bench --parallel-synthesis N --synthesis-pool thread|process`): a failure or an
interrupt stops the work queued behind it, and the workers of a process pool never outlive their parent."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from cuzk import circuits
from cuzk.cli import main


def test_a_failed_circuit_drops_the_circuits_not_started(tmp_path, capsys, monkeypatch):
    """Circuit 1's witness fails while the pool's one worker holds circuit 2: the run ends with the failure and
    the circuits queued behind are never made (the pool's shutdown drops them before circuit 2 is let go)."""
    import cuzk.run as run_mod
    made, hold = [], threading.Event()
    witness = circuits.witness

    def fake(name, log_size, seed=1, opts=None, limbs=False, **kw):
        made.append(seed)
        if seed == 2:
            raise ValueError("injected")
        if seed == 3:
            hold.wait(60)               # the worker is busy while the run meets the failure
        return witness(name, log_size, seed=seed, opts=opts, limbs=limbs, **kw)

    class Pool(ThreadPoolExecutor):
        def shutdown(self, wait=True, *, cancel_futures=False):
            super().shutdown(wait=False, cancel_futures=cancel_futures)
            hold.set()
            super().shutdown(wait=wait)
    monkeypatch.setattr(circuits, "witness", fake)
    monkeypatch.setattr(run_mod, "make_pool", lambda kind, workers: Pool(1))
    js = tmp_path / "run.json"
    rc = main(["bench", "--backend", "cpu", "--log-size", "6", "--circuits", "10", "--parallel-synthesis", "1",
               "--synthesis-pool", "thread", "--json", str(js)])
    assert rc == 2 and "injected" in capsys.readouterr().err and not js.exists()
    assert made[0] == 2 and set(made) <= {2, 3}, made
