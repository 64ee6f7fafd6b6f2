"""apache-otava's change-point detection, wherever otava is installed.

otava pins an older numpy than the one cuzk is measured and tested with (constraints.txt), so it lives in an
environment of its own: `python cuzk/cuda_extra.py install -e . test` (or `history`) makes it inside the
environment it installs into, `<sys.prefix>/otava`. `compute_change_points` is otava's, with the same
arguments and results: run in this process where otava imports here (an environment with the `history`
extra installed by plain pip), else in one long-lived process of that environment's interpreter
($CUZK_OTAVA_PYTHON names another), the series and results passed as JSON lines.
"""
from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

MIN_POINTS = 4          # e-divisive needs a few points on each side of a change

VAR = "CUZK_OTAVA_PYTHON"

# Runs in otava's environment: the standard library and otava only, never cuzk.
_WORKER = r"""
import json, math, sys
from otava.analysis import compute_change_points
def num(x):
    x = float(x)
    return x if math.isfinite(x) else None
for line in sys.stdin:
    req = json.loads(line)
    try:
        cps, _ = compute_change_points(req["values"], window_len=req["window_len"], max_pvalue=req["max_pvalue"],
                                       min_magnitude=req["min_magnitude"])
        out = {"cps": [{"index": int(c.index), "mean_1": num(c.stats.mean_1), "mean_2": num(c.stats.mean_2),
                        "pvalue": num(c.stats.pvalue)} for c in cps]}
    except Exception as e:
        out = {"error": f"{type(e).__name__}: {e}"}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"""


class ChangePointUnavailable(RuntimeError):
    """otava is neither importable here nor installed in its own environment."""


def tool_python() -> Path | None:
    """otava's interpreter: $CUZK_OTAVA_PYTHON, else <sys.prefix>/otava/bin/python; None where neither is."""
    named = os.environ.get(VAR)
    if named:
        return Path(named)
    p = Path(sys.prefix) / "otava" / "bin" / "python"
    return p if p.exists() else None


def in_process() -> bool:
    try:
        import otava.analysis  # noqa: F401
    except ImportError:
        return False
    return True


def where() -> str:
    """Where change points are computed: 'in process', or the interpreter's path. ChangePointUnavailable if nowhere."""
    if in_process():
        return "in process"
    py = tool_python()
    if py is None:
        raise ChangePointUnavailable(
            "apache-otava (change points) is not installed: it pins an older numpy than cuzk's, so it lives in an "
            "environment of its own; `python cuzk/cuda_extra.py install -e . history` makes it (in this "
            f"environment's otava/), or set {VAR} to the python of an environment that has it")
    if not py.exists():
        raise ChangePointUnavailable(f"{VAR}={py}: no such interpreter")
    return str(py)


def available() -> bool:
    try:
        where()
    except ChangePointUnavailable:
        return False
    return True


class _Worker:
    """One otava process for this process's lifetime; requests answered in order."""

    def __init__(self, python: str):
        self.lock = threading.Lock()
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}   # its own packages only
        self.p = subprocess.Popen([python, "-c", _WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, cwd="/", env=env)
        self.python = python

    def ask(self, req: dict) -> dict:
        with self.lock:
            try:
                self.p.stdin.write(json.dumps(req) + "\n")
                self.p.stdin.flush()
                line = self.p.stdout.readline()
            except (BrokenPipeError, OSError):
                line = ""
            if not line:
                err = self.p.stderr.read() if self.p.poll() is not None else ""
                last = err.strip().splitlines()[-1] if err.strip() else "no reply"
                raise ChangePointUnavailable(f"otava's process ({self.python}) ended: {last}")
            return json.loads(line)

    def close(self) -> None:
        if self.p.poll() is None:
            self.p.stdin.close()
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()


_worker: _Worker | None = None


def _get_worker(python: str) -> _Worker:
    global _worker
    if _worker is None or _worker.python != python or _worker.p.poll() is not None:
        _worker = _Worker(python)
        atexit.register(_worker.close)
    return _worker


def compute_change_points(values, window_len: int = 50, max_pvalue: float = 0.001, min_magnitude: float = 0.0):
    """otava.analysis.compute_change_points: (change points, None); each has .index and .stats (.mean_1,
    .mean_2, .pvalue)."""
    loc = where()
    if loc == "in process":
        from otava.analysis import compute_change_points as otava_cps
        cps, _ = otava_cps(values, window_len=window_len, max_pvalue=max_pvalue, min_magnitude=min_magnitude)
        return cps, None
    out = _get_worker(loc).ask({"values": [float(v) for v in values], "window_len": window_len,
                                "max_pvalue": max_pvalue, "min_magnitude": min_magnitude})
    if "error" in out:
        raise RuntimeError(f"otava: {out['error']}")
    nan = float("nan")
    return [SimpleNamespace(index=c["index"], stats=SimpleNamespace(
        mean_1=nan if c["mean_1"] is None else c["mean_1"], mean_2=nan if c["mean_2"] is None else c["mean_2"],
        pvalue=nan if c["pvalue"] is None else c["pvalue"])) for c in out["cps"]], None
