"""The synthesis pools (`cuzk bench --parallel-synthesis N --synthesis-pool thread|process`): a failure or an
interrupt stops the work queued behind it, and the workers of a process pool never outlive their parent."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cuzk import circuits
from cuzk.cli import main
from pipeline_fakes import pool_started

REPO = Path(__file__).resolve().parents[2]


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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"     # a zombie is gone but unreaped


def _gone(pids, within_s: float = 30.0) -> bool:
    deadline = time.time() + within_s            # a bound on the wait, not a timing asserted
    while any(_alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.1)
    return not any(_alive(p) for p in pids)


def test_process_workers_end_with_a_parent_killed_outright():
    """SIGKILL (or the OOM killer) gives the parent no clean-up: its pool's workers must not live on, orphaned."""
    code = ("from cuzk.synthesis import make_pool\nimport time\npool = make_pool('process', 2)\n"
            "print(*pool._processes, flush=True)\ntime.sleep(600)\n")
    p = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(x) for x in p.stdout.readline().split()]
        assert len(workers) == 2 and all(_alive(w) for w in workers)
    finally:
        p.kill()
        p.wait()
    try:
        assert _gone(workers), "a worker outlived its parent"
    finally:
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)


def test_ctrl_c_on_a_pipeline_is_one_line(tmp_path):
    """Ctrl-C signals the whole process group: the parent stops its workers and says so in one line; no worker
    prints a KeyboardInterrupt traceback, none is left, no JSON is written."""
    js = tmp_path / "run.json"
    p = subprocess.Popen([sys.executable, "-m", "cuzk", "bench", "--backend", "cpu", "--log-size", "8",
                          "--circuits", "1000", "--pipeline", "--json", str(js)],
                         cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        err = []
        for line in p.stderr:                              # the run starts after this line
            err.append(line)
            if line.startswith("pipeline:"):
                break
        workers = pool_started(p, int(line.split()[1]))   # "pipeline: N worker(s) ...": each ignores Ctrl-C now
        os.killpg(p.pid, signal.SIGINT)
        _, rest = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert workers and p.returncode == 130, rest
    assert rest.splitlines() == ["cuzk: interrupted"], rest
    assert not js.exists() and _gone(workers)



def test_a_process_worker_killed_mid_batch_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    """A worker of `--parallel-synthesis N --synthesis-pool process` killed (the OOM killer, a signal): the run
    ends with exit 2 and one line saying a worker died (not an 'internal error ... a bug'), nothing written."""
    import cuzk.run as run_mod
    from cuzk.cli import main
    made = run_mod.make_pool

    def killed(kind, workers):
        pool = made(kind, workers)
        proc = next(iter(pool._processes.values()))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        return pool
    monkeypatch.setattr(run_mod, "make_pool", killed)
    js = tmp_path / "run.json"
    rc = main(["bench", "--backend", "cpu", "--log-size", "6", "--circuits", "8", "--parallel-synthesis", "2",
               "--synthesis-pool", "process", "--json", str(js)])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("cuzk: error: synthesis failed: a worker process died") and "bug" not in err
    assert len(err.splitlines()) == 1 and not js.exists()
