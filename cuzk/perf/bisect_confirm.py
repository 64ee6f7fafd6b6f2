"""After asv find names a commit: the step measured again, the named commit against its parent, in alternation.

asv find measures each commit once, one after another, so a machine whose speed moves during the run (load, a
virtual machine's host taking its CPU) moves single values by as much as a planted step, and asv follows them: it
has named a commit whose parent already held the slowdown. Here the parent and the named commit are run as a gate
run (gate.run: fresh workers each round, their samples alternating, the signed-rank test over the rounds, every
trust rule), the threshold half the step asv find read (in log terms). A named commit is confirmed only where that
run reads the same step; one that reads no step, or could not be judged, names no culprit.

The gate measures phases of workloads, so a phase name with --target and --opts is confirmed; an asv regex cannot
be, and bisect says so beside its culprit.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

from . import gate, gate_config
from .compare import IMPROVEMENT, REGRESSION
from .workload import AREAS, Spec

ROUNDS = 8           # the fewest at which the exact signed-rank test can reach alpha 0.01 (2 / 2^8)
SAMPLES = 3
FLOOR = 0.01         # the least threshold: a step asv find read as smaller than 2% is below what one run resolves


@dataclass
class Confirmation:
    confirmed: bool
    line: str


def workload(benchmark: str, target: str | None, opts: str | None) -> tuple[Spec | None, str | None]:
    """The gate workload that measures what the bisected benchmark does, or (None, why there is none)."""
    if benchmark not in AREAS:
        return None, f"{benchmark!r} is an asv regex, not a phase the gate measures"
    if not (target and opts):
        return None, "the gate measures one workload: give --target and --opts"
    try:
        return Spec.parse_target(target, opts=opts), None
    except ValueError as e:
        return None, str(e)


def threshold(before: float, after: float, invert: bool) -> float:
    """Half the step asv find read, in log terms (a 2x step: 41%), never under FLOOR."""
    step = after / before if not invert else before / after
    return max(FLOOR, math.sqrt(step) - 1) if step > 0 else FLOOR


def config(repo, parent: str, area: str, spec: Spec, th: float) -> gate_config.GateConfig:
    """The gate's config for the run: the parent commit's perf-gate.toml for its trust rules (the defaults where it
    has none), one workload, one phase, ROUNDS x SAMPLES, the threshold th."""
    try:
        raw = gate_config.load_commit(repo, parent).raw
    except gate_config.ConfigError:
        raw = {}
    g = {k: v for k, v in raw.get("gate", {}).items() if k not in ("rounds", "samples", "threshold", "phases")}
    w = {"backend": spec.backend, "circuit": spec.circuit, "log_size": spec.log_size, "opts": spec.opts}
    doc = {"gate": {**g, "rounds": ROUNDS, "samples": SAMPLES, "threshold": th, "phases": [area]},
           "trust": raw.get("trust", {}), "workload": [w]}
    return gate_config.parse(doc, f"{parent[:10]}:{gate_config.DEFAULT_PATH} (bisect's confirmation)")


def confirm(repo, parent: str, named: str, area: str, spec: Spec, before: float, after: float,
            invert: bool = False) -> Confirmation:
    """The named commit against its parent in alternation: confirmed where the run reads the step asv find read."""
    th = threshold(before, after, invert)
    what = f"{named[:10]} against its parent {parent[:10]}, {spec.target()} {area}, {ROUNDS} rounds in alternation"
    try:
        cfg = config(repo, parent, area, spec, th)
        from .gpu_lock import hold
        with hold("cuzk bisect") if spec.backend == "cuda" else contextlib.nullcontext():
            res = gate.run(repo, parent, named, cfg)
    except Exception as e:          # a commit the gate cannot run (no harness, a refused tree): not measured
        first = str(e).splitlines()[0] if str(e) else ""
        return Confirmation(False, f"{what}: not judged ({type(e).__name__}: {first})")
    (oc,) = res.outcomes
    if oc.status != "ok":
        return Confirmation(False, f"{what}: not judged ({oc.status}: {oc.message})")
    (c,) = [c for c in oc.comparisons if c.area == area]
    read = (f"x{c.ratio:.3f} [{c.ci_low:.3f} - {c.ci_high:.3f}], p = {c.p_value:.2g}, threshold "
            f"{'-' if invert else '+'}{th:.1%}")
    want = IMPROVEMENT if invert else REGRESSION
    if c.verdict == want:
        return Confirmation(True, f"{what}: {read}: the step is there")
    return Confirmation(False, f"{what}: {read}: no step of half the size asv find read there")
