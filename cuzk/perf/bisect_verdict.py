"""After `asv find`: a culprit only from measured values.

asv find saves one result file per commit it steps on and then names a commit whatever those hold:
a skip (n/a, stored as NaN) and a failure (None) count for it. Here every commit it stepped on, GOOD
and BAD among them, must hold a number for every selected parameter set; only then is its commit
named, with the values either side of it.

asv keeps a benchmark's stderr out of its result files, so why a commit was not measured comes from
asv's own output (run with --show-stderr), read per commit.
"""
from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from tabulate import tabulate

from .bisect import NAMED, BisectError
from .report import fmt_s
from .suite import is_timing

SKIPPED = "skipped (asv's n/a: NotImplementedError in setup, as a cuda target without a usable GPU)"
# asv find's own verdict line; held back from the user, read for the commit it names
STEP = re.compile(r"For .+? commit ([0-9a-f]{8})")          # asv find's header of each commit it runs
# asv's report of a command of its own that failed: creating an environment, building or installing a commit
ERROR_RUNNING = re.compile(r"Error running (.+?) \(exit status (-?\d+)\)")
# pip's words where no index (or wheelhouse) had what an environment needs
NO_INDEX = ("No matching distribution", "Could not find a version", "Failed to establish a new connection",
            "Network is unreachable", "Temporary failure in name resolution")


@dataclass
class Point:
    """One commit asv find stepped on: a value per selected parameter set, or why there is none."""
    sha: str
    values: list[float | None] = field(default_factory=list)
    why: list[str | None] = field(default_factory=list)

    @property
    def measured(self) -> bool:
        return bool(self.values) and all(v is not None for v in self.values)


def said(lines: list[str]) -> dict[str, str]:
    """{sha[:8]: why asv says it did not measure there}, from asv's output with --show-stderr: its
    `asv: skipped: ...` line, or the line above its `asv: benchmark failed ...` (the exception)."""
    out, cur, prev = {}, None, ""
    for raw in lines:
        line = raw.strip().lstrip("·").strip()
        m = STEP.search(line)
        if m:
            cur, prev = m.group(1), ""
            continue
        if cur and line.startswith("asv: ") and cur not in out:
            what = line[len("asv: "):]
            out[cur] = what if what.startswith("skipped") or not prev else f"{prev[:200]}; {what}"
        if line:
            prev = line
    return out


def read(results_dir: Path, regex: str, why: dict[str, str] | None = None
         ) -> tuple[str | None, list[str], dict[str, Point]]:
    """(benchmark, labels of the selected parameter sets, {sha: Point}) from asv's saved results;
    `why`: what asv said per commit (`said`)."""
    why = why or {}
    from asv.results import iter_results
    got: dict[str, dict[tuple[str, str], tuple[float | None, str | None]]] = {}
    keys: list[tuple[str, str]] = []          # (benchmark, parameter set), in the order first seen
    if not Path(results_dir).is_dir():
        return None, [], {}
    for res in iter_results(str(results_dir)):
        at = got.setdefault(res.commit_hash, {})
        for key in sorted(res.get_all_result_keys()):
            params = res.get_result_params(key)
            sets = list(itertools.product(*params))          # [()] for a benchmark without params
            idx = [i for i, p in enumerate(sets)
                   if re.search(regex, f"{key}({', '.join(p)})" if p else key)]
            if not idx:
                continue
            values = res.get_result_value(key, params)       # a list, in the order of `sets`
            for i in idx:
                k, v = (key, ", ".join(sets[i]) or "value"), values[i]
                if k not in keys:
                    keys.append(k)
                if v is None:
                    at[k] = (None, "failed: " + why.get(res.commit_hash[:8], "asv recorded no value"))
                elif isinstance(v, float) and math.isnan(v):
                    asv_said = why.get(res.commit_hash[:8], "").removeprefix("skipped: ")
                    at[k] = (None, f"skipped (asv's n/a): {asv_said}" if asv_said else SKIPPED)
                else:
                    at[k] = (float(v), None)
            break                                      # asv find runs one benchmark
    # values stay aligned by parameter set, never by position: a set that a commit's benchmark lacks (added or
    # removed in the range, or the benchmark renamed) is not measured there
    names = list(dict.fromkeys(b for b, _ in keys))
    labels = [lab if len(names) == 1 else f"{b}({lab})" for b, lab in keys]
    points = {}
    for sha, at in got.items():
        pt = points[sha] = Point(sha)
        if not at:
            pt.why.append("no result for the benchmark in asv's file")
            continue
        for k in keys:
            v, w = at.get(k, (None, f"no {k[0]}({k[1]}) at this commit: select the "
                                             "parameter sets every commit has"))
            pt.values.append(v)
            pt.why.append(w)
    return (names[-1] if names else None), labels, points


def setup_failure(lines: list[str]) -> str | None:
    """Why asv could not set up: its last `Error running CMD (exit status N)` with the last line of that
    command's stderr (pip's ERROR line, where there is one), and where it reads as a missing package
    index, what to do on a machine without one."""
    last = None
    for i, raw in enumerate(lines):
        m = ERROR_RUNNING.search(raw)
        if m:
            last = (i, m)
    if last is None:
        return None
    i, m = last
    err, in_err = [], False
    for raw in lines[i + 1:]:
        s = raw.strip()
        if s.startswith("·"):
            break
        if s.startswith(("STDOUT -", "STDERR -")):
            in_err = s.startswith("STDERR")
        elif in_err and s:
            err.append(s)
    said = next((s for s in reversed(err) if s.startswith("ERROR:")), err[-1] if err else "")
    cmd = m.group(1)
    cmd = cmd if len(cmd) <= 160 else cmd[:157] + "..."
    out = f"{cmd} exited {m.group(2)}" + (f": {said[:300]}" if said else "")
    if any(k in said for k in NO_INDEX):
        out += ("; no package index here? build a wheelhouse where there is one and set PIP_NO_INDEX=1 "
                "PIP_FIND_LINKS=DIR, or measure in an interpreter that has the packages: "
                "--asv-arg=-E --asv-arg=existing:PYTHON")
    return out


def named_commit(lines: list[str], commits: list[str]) -> str | None:
    """The commit asv find's held-back line names, as a full SHA of the range."""
    for line in reversed(lines):
        m = NAMED.search(line)
        if m:
            hits = [c for c in commits if c.startswith(m.group(2))]
            return hits[0] if len(hits) == 1 else None
    return None


def _fmt(name: str | None, v: float | None) -> str:
    """4 significant digits (a step of a few per cent must show); seconds for the suite's timings."""
    if v is None:
        return "-"
    return fmt_s(v, 4) if is_timing(name or "") else f"{v:.4g}"


def table(name: str | None, labels: list[str], rows: list[tuple[str, str, Point | None]]) -> str:
    """Commits asv find stepped on (and the ends it did not), oldest first."""
    out = []
    for sha, role, pt in rows:
        vals = [_fmt(name, v) for v in pt.values] if pt and pt.values else ["-"] * max(len(labels), 1)
        whys = sorted({w for w in (pt.why if pt else ["asv find did not run it"]) if w})
        out.append([sha[:10], role, *vals, "; ".join(whys) or "measured"])
    heads = ["commit", "", *(labels or ["value"]), "result"]
    return tabulate(out, headers=heads, tablefmt="github", disable_numparse=True)


def judge(name: str | None, labels: list[str], points: dict[str, Point], commits: list[str],
          named: str | None, asv_rc: int, invert: bool = False, out=print, failure: str | None = None) -> int:
    """0 and the culprit when every commit asv find stepped on was measured; else BisectError.
    `failure`: why asv itself failed (setup_failure), said with its exit code."""
    good, bad = commits[0], commits[-1]
    stepped = [c for c in commits if c in points]
    role = {good: "good", bad: "bad"}

    def rows():
        return [(c, role.get(c, ""), points.get(c)) for c in commits if c in points or c in (good, bad)]

    unmeasured = [c for c, _, pt in rows() if pt is None or not pt.measured]
    if asv_rc != 0 or unmeasured:
        out(f"cuzk bisect: {name or 'the benchmark'}: what asv find measured, oldest first:")
        out(table(name, labels, rows()))
        if asv_rc != 0:
            raise BisectError(f"asv find failed (exit {asv_rc})" + (f": {failure}" if failure else "")
                              + "; no culprit"
                              + (f" ({len(unmeasured)} commit(s) not measured)" if unmeasured else ""))
        ends = [role[c] for c in unmeasured if c in (good, bad)]
        why = next((w for c in unmeasured for w in (points[c].why if c in points else []) if w),
                   "asv find did not run it")
        raise BisectError(f"{len(unmeasured)} of the {len(rows())} commits to judge by were not measured"
                          + (f" ({' and '.join(ends)} among them)" if ends else "") + f": {why}; no culprit")
    if named is None or commits.index(named) == 0:
        raise BisectError("asv find named no commit of GOOD..BAD; no culprit")
    parent = commits[commits.index(named) - 1]
    if parent not in points:
        raise BisectError(f"asv find named {named[:10]} without measuring its parent {parent[:10]}; no culprit")
    before, after = points[parent].values, points[named].values
    worse = [(b, a) for b, a in zip(before, after) if (a < b if invert else a > b)]
    if worse:
        role[named] = f"first {'fast' if invert else 'slow'} (asv find)"      # measured again after the table
    out(f"cuzk bisect: {name}: what asv find measured, oldest first:")
    out(table(name, labels, rows()))
    if not worse:
        raise BisectError(f"{named[:10]}, the commit asv find named, is no {'faster' if invert else 'slower'} "
                          f"than its parent {parent[:10]}; no culprit")
    steps = [f"{_fmt(name, b)} -> {_fmt(name, a)}" for b, a in zip(before, after)]
    if len(labels) > 1:
        steps = [f"({lab}) {s}" for lab, s in zip(labels, steps)]
    kind = "first fast commit" if invert else "first slow commit"
    out(f"cuzk bisect: {named[:10]} is the {kind}: {'; '.join(steps)} (measured at {len(stepped)} commits)")
    sel = [i for i, (b, a) in enumerate(zip(before, after)) if (a < b if invert else a > b)]
    pick = lambda vals: [vals[i] for i in sel]
    rough = not_one_step(pick(points[good].values), pick(before), pick(after), pick(points[bad].values),
                         lambda v: _fmt(name, v))
    if rough:
        out(f"cuzk bisect: note: not one clean step from GOOD to BAD ({rough}): load on the machine while asv "
            "measured, or more than one change in the range; measure again on a quiet machine before trusting it")
    return 0


def not_one_step(good: list, before: list, after: list, bad: list, fmt=lambda v: f"{v:.4g}") -> str | None:
    """Where the named step does not account for GOOD..BAD (GOOD's value nearer the step's after than
    its before, or BAD's nearer its before): the values side by side; else None. asv find measures each
    commit once, in turn, so a machine whose load changes during the run can move one value by the
    planted factor, and asv then follows it."""
    for g, b, a, z in zip(good, before, after, bad):
        half = abs(a - b) / 2
        if abs(b - g) > half or abs(z - a) > half:
            return f"GOOD {fmt(g)}, parent {fmt(b)}, named {fmt(a)}, BAD {fmt(z)}"
    return None
