"""What a test of a real gate run does where the runner itself made the run untrusted."""
from __future__ import annotations

from pathlib import Path

import pytest

from cuzk.perf.foreign_work import FOREIGN_WORDS, HELD_WORDS


def skip_where_stolen(data: dict | None) -> None:
    """Skip, saying why, where the gate called a workload untrusted because the runner's host took the sampling
    CPU (the hypervisor's steal): the gate was right and judged nothing, so what the test asks was not measured.
    Any other verdict is left to the test."""
    for oc in (data or {}).get("outcomes") or []:
        msg = oc.get("message") or ""
        if oc.get("status") == "untrusted" and "(steal)" in msg:
            pytest.skip(f"this runner's host took the sampling CPU, so the gate judged nothing: {msg}")


# the CPU rules' words where the sampling thread lost time to work the gate does not own
CPU_RULES = (HELD_WORDS, FOREIGN_WORDS)


def judged(run, want=None, runs: int = 3):
    """A gate run whose verdict (want: whose untrusted message, want(message) true) the test asks for: run(1), and
    while the runner's own work on the sampling CPU made it untrusted otherwise (a 2-vCPU VM serves its disk's
    interrupts there, at times for a third of a 1 ms sample; a CPU rule then speaks before the rule the test
    asks for), run(k) once more, up to `runs` in all (such a spell can outlast one rerun). The last run is the
    test's to judge: a head whose code makes every run untrusted, or an attack the gate does not name, still
    fails the test. (p, data, ...) as run returns them."""
    got = run(1)
    for k in range(2, runs + 1):
        if not _runner_spoke(got[1], want):
            break
        got = run(k)
    return got


def _runner_spoke(data: dict | None, want) -> bool:
    """An outcome untrusted by a CPU rule, with a message other than the one the test asks for."""
    for oc in (data or {}).get("outcomes") or []:
        msg = oc.get("message") or ""
        if oc.get("status") == "untrusted" and any(w in msg for w in CPU_RULES) and not (want and want(msg)):
            return True
    return False


def try_dir(tmp: Path, k: int) -> Path:
    """Where the k-th run of one test writes (a test that runs its gate once more writes apart)."""
    (tmp / f"try{k}").mkdir(exist_ok=True)
    return tmp / f"try{k}"
