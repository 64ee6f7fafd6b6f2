"""After asv find names a commit: the step measured again, the named commit against its parent, in alternation.

asv find measures each commit once, one after another, so a machine whose speed moves during the run (load, a
virtual machine's host taking its CPU) moves single values by as much as a planted step, and asv follows them: it
has named a commit whose parent already held the slowdown. Here the parent and the named commit are run as a gate
run (gate.run: fresh workers each round, their samples alternating, the signed-rank test over the rounds, every
trust rule), the threshold half the step asv find read (in log terms). A named commit is confirmed only where that
run reads the same step. One that reads no step is bisected again with the gate alone (walk: every step a gate
run against GOOD at half the GOOD..BAD step it measures); one that could not be judged names no culprit.

The gate measures phases of workloads, so a phase name with --target and --opts is confirmed; an asv regex cannot
be, and bisect says so beside its culprit.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

from . import gate, gate_config
from .bisect import BisectError
from .compare import IMPROVEMENT, NOT_RESOLVED, REGRESSION
from .values import is_number
from .workload import AREAS, Spec

ROUNDS = 8           # the fewest at which the exact signed-rank test can reach alpha 0.01 (2 / 2^8)
MOST_ROUNDS = 30     # past it, an alpha the commit asks for is left to the config's check (not judged)
SAMPLES = 3
FLOOR = 0.01         # the least threshold: a step asv find read as smaller than 2% is below what one run resolves


@dataclass
class Confirmation:
    confirmed: bool
    line: str
    judged: bool = True             # False: the run could not be judged (its line says why)
    refuted: bool = True            # of one not confirmed: False where its spread hid the step (not resolved)


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
    """Half the step asv find read, in log terms (a 2x step: 41%), never under FLOOR. BisectError where the two
    are not positive times (a benchmark's own number may be 0): no step to halve."""
    if not (0 < before < math.inf and 0 < after < math.inf):
        raise BisectError(f"asv read {before!r} and {after!r}: not two positive times, so no step to measure "
                          f"again; no culprit")
    step = after / before if not invert else before / after
    return max(FLOOR, math.sqrt(step) - 1)


def config(repo, parent: str, area: str, spec: Spec, th: float) -> gate_config.GateConfig:
    """The gate's config for the run: the parent commit's perf-gate.toml for its trust rules (the defaults where it
    has none), one workload, one phase, ROUNDS (or as many as its alpha needs) x SAMPLES, the threshold th."""
    try:
        raw = gate_config.load_commit(repo, parent).raw
    except gate_config.ConfigError:
        raw = {}
    # its sampling and its alpha; not its thresholds (threshold_floor bounds derived ones, which bisect never uses)
    g = {k: v for k, v in raw.get("gate", {}).items()
         if k not in ("rounds", "samples", "threshold", "threshold_floor", "phases")}
    rounds, alpha = ROUNDS, g.get("alpha")    # as many more as the commit's alpha needs for the test to fire
    while is_number(alpha) and 0 < alpha < 1 and gate_config.min_p_value(rounds) >= alpha and rounds < MOST_ROUNDS:
        rounds += 1
    w = {"backend": spec.backend, "circuit": spec.circuit, "log_size": spec.log_size, "opts": spec.opts}
    doc = {"gate": {**g, "rounds": rounds, "samples": SAMPLES, "threshold": th, "phases": [area]},
           "trust": raw.get("trust", {}), "workload": [w]}
    return gate_config.parse(doc, f"{parent[:10]}:{gate_config.DEFAULT_PATH} (bisect's confirmation)")


@dataclass
class Run:
    """One gate run of head against base: compare's verdict (None where not judged) and the figures as a line."""
    verdict: str | None
    ratio: float
    line: str
    rounds: int = 0         # of the run (0: not run)


def measure(repo, base: str, head: str, area: str, spec: Spec, th: float, invert: bool = False) -> Run:
    """head against base in alternation, as the gate measures (config's), at threshold th."""
    try:
        cfg = config(repo, base, area, spec, th)
        from .gpu_lock import hold
        with hold("cuzk bisect") if spec.backend == "cuda" else contextlib.nullcontext():
            res = gate.run(repo, base, head, cfg)
    except Exception as e:          # a commit the gate cannot run (no harness, a refused tree): not measured
        first = str(e).splitlines()[0] if str(e) else ""
        return Run(None, math.nan, f"not judged ({type(e).__name__}: {first})")
    (oc,) = res.outcomes
    if oc.status != "ok":
        return Run(None, math.nan, f"not judged ({oc.status}: {oc.message})")
    (c,) = [c for c in oc.comparisons if c.area == area]
    return Run(c.verdict, c.ratio, f"x{c.ratio:.3f} [{c.ci_low:.3f} - {c.ci_high:.3f}], p = {c.p_value:.2g}, "
                                   f"threshold {'-' if invert else '+'}{th:.1%}", cfg.rounds)


def confirm(repo, parent: str, named: str, area: str, spec: Spec, before: float, after: float,
            invert: bool = False) -> Confirmation:
    """The named commit against its parent in alternation: confirmed where the run reads the step asv find read."""
    th = threshold(before, after, invert)
    r = measure(repo, parent, named, area, spec, th, invert)
    what = f"{named[:10]} against its parent {parent[:10]}, {spec.target()} {area}" + \
        (f", {r.rounds} rounds in alternation" if r.rounds else "")
    if r.verdict is None:
        return Confirmation(False, f"{what}: {r.line}", judged=False)
    if r.verdict == (IMPROVEMENT if invert else REGRESSION):
        return Confirmation(True, f"{what}: {r.line}: the step is there")
    if r.verdict == NOT_RESOLVED:       # the run could not have seen the step: it refutes nothing
        return Confirmation(False, f"{what}: {r.line}: not resolved, the spread hides a step of half the size asv "
                                   "find read", refuted=False)
    return Confirmation(False, f"{what}: {r.line}: no step of half the size asv find read there")


def walk(repo, commits: list[str], area: str, spec: Spec, good_value: float, bad_value: float,
         invert: bool = False, out=print) -> tuple[str, str]:
    """The first slow (invert: fast) commit of commits, GOOD first and BAD last, every step a gate run against
    GOOD: first BAD itself, at half the step asv find read between them (a threshold, and so a trust rule's share
    of it, that the step's size sets: a 1% threshold would untrust a run for 0.25% of other work), again at half
    the step that run read where that is smaller, then a bisection at half the step measured. (commit, its line);
    BisectError where a run is not judged or cannot tell (its spread hides half the step)."""
    good, bad = commits[0], commits[-1]
    want = IMPROVEMENT if invert else REGRESSION
    measured: set[str] = set()

    def against_good(sha: str, th: float) -> Run:
        r = measure(repo, good, sha, area, spec, th, invert)
        measured.add(sha)
        out(f"# gate: {sha[:10]} against GOOD {good[:10]}: {r.line}: {r.verdict or 'not judged'}")
        if r.verdict is None or r.verdict == NOT_RESOLVED:
            raise BisectError(f"{sha[:10]} against GOOD {good[:10]} in alternation: {r.line}"
                              f"{': the spread hides the step' if r.verdict else ''}; no culprit")
        return r

    asv_th = threshold(good_value, bad_value, invert)
    ends = against_good(bad, asv_th)
    th = threshold(1.0, ends.ratio, invert)                   # half the step this run measured
    if ends.verdict != want and FLOOR < th < asv_th:
        # asv find's ends may each sit on another level of a moving machine (read 4x where the run measures 2x):
        # the step measured again at half of what this run read, a trust share that this step sets
        ends = against_good(bad, th)
        th = min(th, threshold(1.0, ends.ratio, invert))      # a second read larger by chance raises no bar
    if ends.verdict != want:
        raise BisectError(f"BAD {bad[:10]} against GOOD {good[:10]} in alternation: {ends.line}: no step to bisect; "
                          f"no culprit")
    if th <= FLOOR:         # the bisection's threshold would be more than half the step: lopsided
        raise BisectError(f"BAD {bad[:10]} against GOOD {good[:10]} in alternation: {ends.line}: a step under 2%, "
                          f"whose half is below the least threshold a run is judged at ({FLOOR:.0%}): no step to "
                          f"bisect; no culprit")
    lo, hi, found = 0, len(commits) - 1, ends
    while hi - lo > 1:
        mid = (lo + hi) // 2
        r = against_good(commits[mid], th)
        if r.verdict == want:
            hi, found = mid, r
        else:
            lo = mid
    return commits[hi], (f"{found.line} against GOOD {good[:10]}, its parent {commits[lo][:10]} not "
                         f"(measured in alternation by the gate at {len(measured)} commits)")
