"""Progress of long steps on stderr, a line per step: keygen on the GPU and proving at large sizes, where a
step takes seconds and a silent terminal looks hung. (The CPU keygen has its tqdm bar.)

FIRST_USE times what a process loads or compiles on its first GPU work (kernel modules, CuPy's own kernels:
cuzk/gpu/loader.py). On a terminal it shows the step in progress, and keeps a line for each that took
noticeable time; elsewhere it is quiet (a long NVRTC compile still gets loader's notice). Its total lets
`cuzk bench` say when first-use loading dominated the figures.
"""
from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager

LARGE_LOG = 20          # from a 2^20 domain a proof's phases and a key's steps take long enough to report
SHOW_S = 0.5            # a first-use step at least this long keeps its line on the terminal
HINT_SHARE = 0.25       # bench's --warmup hint when first-use loading took this share of the timed proof
HINT_MIN_S = 0.2        # ...and at least this long


def step_printer(what: str, stream=None):
    """A progress callback, step(name, seconds), that prints `cuzk: <what>: <name> (<seconds> s)`."""
    def step(name: str, seconds: float) -> None:
        print(f"cuzk: {what}: {name} ({seconds:.2f} s)", file=stream or sys.stderr, flush=True)
    return step


def shown(stream=None) -> bool:
    """Whether progress goes to `stream` (default stderr): on a terminal; CUZK_PROGRESS=1 always, =0 never."""
    force = os.environ.get("CUZK_PROGRESS", "").strip()
    if force in ("0", "1"):
        return force == "1"
    isatty = getattr(stream or sys.stderr, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):           # a closed stream
        return False


class Step:
    """One first-use step: `doing` while it runs, `compiling` once a compile inside it starts (None: keep
    `doing`), `done` once it ended (either may be changed meanwhile)."""

    def __init__(self, kind: str, doing: str, done: str, compiling: str | None = None):
        self.kind, self.doing, self.done, self.compiling = kind, doing, done, compiling
        self.compiled = False               # set when a compile ran inside it (loader's CuPy hook)


class FirstUse:
    """Timed first-use steps of this process: `with FIRST_USE.step(kind, doing, done):`. A step inside another
    (CuPy compiling one of our modules) counts toward the outer one and marks it `compiled`."""

    NOUNS = {"module": ("kernel module loaded", "kernel modules loaded"),
             "cupy": ("CuPy kernel compiled", "CuPy kernels compiled"),
             "cupy_cached": ("CuPy kernel read from its cache", "CuPy kernels read from its cache")}

    def __init__(self, stream=None):
        self.stream = stream                # None: sys.stderr when writing (pytest swaps it)
        self.seconds = 0.0
        self.counts: Counter = Counter()
        self._lock = threading.Lock()
        self._local = threading.local()

    def _out(self):
        return self.stream or sys.stderr

    def live(self) -> bool:
        """The step in progress is on the terminal (a status line): shown, and stderr is a terminal."""
        out = self._out()
        return shown(out) and bool(getattr(out, "isatty", lambda: False)())

    def current(self) -> Step | None:
        return getattr(self._local, "step", None)

    @contextmanager
    def step(self, kind: str, doing: str, done: str, compiling: str | None = None):
        outer = self.current()
        if outer is not None:               # counted in the outer step; a compile marks it and is shown
            if kind == "cupy" and not outer.compiled:
                outer.compiled = True
                if outer.compiling and self.live():                 # a cache missed: say so
                    self._status(outer.compiling)
            yield outer
            return
        st = Step(kind, doing, done, compiling)
        out = self._out()
        tty = self.live()
        if tty:                             # the step in progress on one line, overwritten by the next
            self._status(doing)
        self._local.step = st
        t0 = time.perf_counter()
        try:
            yield st
        finally:
            dt = time.perf_counter() - t0
            self._local.step = None
            with self._lock:
                self.seconds += dt
                self.counts[st.kind] += 1
            if dt >= SHOW_S and shown(out):
                self._write(out, ("\r" if tty else "") + f"cuzk: first use: {st.done} ({dt:.1f} s)"
                            + ("\x1b[K" if tty else "") + "\n")
            elif tty:
                self._write(out, "\r\x1b[K")

    def _status(self, doing: str) -> None:
        """The status line: the step in progress (the steps before it counted, with their time)."""
        n = sum(self.counts.values())
        so_far = f" (step {n + 1}, {self.seconds:.1f} s so far)" if n else ""
        self._write(self._out(), "\r" + self._fit(f"cuzk: first use{so_far}: {doing}...") + "\x1b[K")

    def summary(self, since: Counter | None = None) -> str:
        counts = self.counts - (since or Counter())
        kinds = [*self.NOUNS, *sorted(set(counts) - set(self.NOUNS))]
        return ", ".join(f"{counts[k]} {self.NOUNS.get(k, (k, k))[counts[k] != 1]}" for k in kinds if counts[k])

    def _write(self, out, text: str) -> None:
        with self._lock:
            try:
                out.write(text)
                out.flush()
            except (OSError, ValueError):
                pass

    @staticmethod
    def _fit(text: str) -> str:
        """Shorter than the terminal: a wrapped status line would not be overwritten by the next."""
        width = shutil.get_terminal_size((100, 24)).columns - 1
        return text if len(text) <= width else text[:max(width - 3, 10)] + "..."


FIRST_USE = FirstUse()


class Spent:
    """First-use loading inside a block (`with first_use_during() as spent:`): its seconds, the block's wall
    time, and what was loaded."""

    def __init__(self):
        self.seconds = self.wall = 0.0
        self.what = ""

    def hint(self, warmup: int, stream=None) -> None:
        """After a timed proof without --warmup: when first-use loading took HINT_SHARE of it, one line on
        stderr saying so and pointing to `--warmup 1`."""
        if warmup == 0 and self.seconds >= HINT_MIN_S and self.seconds >= HINT_SHARE * self.wall:
            print(f"cuzk bench: {self.seconds:.1f} s of the {self.wall:.1f} s proof was first-use loading "
                  f"({self.what}); `--warmup 1` proves once untimed first, for steady-state figures",
                  file=stream or sys.stderr, flush=True)


@contextmanager
def first_use_during():
    s0, c0, t0 = FIRST_USE.seconds, Counter(FIRST_USE.counts), time.perf_counter()
    spent = Spent()
    try:
        yield spent
    finally:
        spent.wall, spent.seconds = time.perf_counter() - t0, FIRST_USE.seconds - s0
        spent.what = FIRST_USE.summary(c0)
