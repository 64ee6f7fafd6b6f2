"""Before `asv find` runs: would it measure anything? A cuda parameter set on a machine that cannot
run the cuda backend only skips (asv's n/a), and asv find names a culprit from skips all the same;
a range of two commits it does not measure at all (it names BAD straight away). And is the tree
clean? Uncommitted changes belong to no commit, yet the run would measure with them in place.

`check` raises BisectError with the reason and what to do about it; otherwise it returns one line
saying what was checked (the dry run prints it).
"""
from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

from .. import backend as backends
from .. import cuda_extra
from .bisect import CUDA_EXTRA_VAR, BisectError, merged_branch

CUDA_EXTRAS = ("cuda12", "cuda13", "none")

# asv_runner's own discovery, in a child: importing the benchmarks must not touch this process
_DISCOVER = """
import json, sys
from asv_runner.discovery import disc_benchmarks
print(json.dumps({b.name: [list(p) for p in b.params] for b in disc_benchmarks(sys.argv[1])}))
"""


class PreflightError(BisectError):
    pass


def dirty_files(repo) -> list[str]:
    """checkout.dirty_files, with PreflightError where git cannot say."""
    from .checkout import CheckoutError, dirty_files
    try:
        return dirty_files(repo)
    except CheckoutError as e:
        raise PreflightError(f"cannot read the state of the tree in {repo}: {e}") from e


def clean_tree(repo) -> None:
    """PreflightError, naming them, where tracked files have uncommitted changes."""
    files = dirty_files(repo)
    if files:
        shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
        raise PreflightError(f"uncommitted changes to tracked files ({shown}): commit or stash them; "
                             "bisect measures commits only")


def discover(repo: Path, benchmark_dir: str = "benchmarks") -> dict[str, list[list[str]]] | None:
    """{benchmark name: params (lists of reprs)} as asv sees the working tree; None where that fails
    (asv will then say why itself)."""
    p = subprocess.run([sys.executable, "-c", _DISCOVER, str(Path(repo) / benchmark_dir)], cwd=repo,
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def selection(regex: str, benchmarks: dict[str, list[list[str]]]) -> dict[str, list[tuple[str, ...]]]:
    """The parameter sets the regex selects, matched as asv matches them: a parametrised benchmark as
    `name(p0, p1, ...)`, any other by its name; asv find takes an exact name out of several."""
    found: dict[str, list[tuple[str, ...]]] = {}
    for name, params in benchmarks.items():
        if params:
            sets = [p for p in itertools.product(*params) if re.search(regex, f"{name}({', '.join(p)})")]
            if sets:
                found[name] = sets
        elif re.search(regex, name):
            found[name] = [()]
    if len(found) > 1 and regex in found:
        found = {regex: found[regex]}
    return found


def is_cuda(params: tuple[str, ...]) -> bool:
    return any(p.strip("'\"").startswith("cuda") for p in params)


def suggested_extra() -> str:
    """The extra asv's environments would get here (the runner's setting, else the driver); else both."""
    try:
        extra, _ = cuda_extra.choose()
    except cuda_extra.ExtraError:
        extra = None
    return extra or "cuda12|cuda13"


def cuda_verdict(what: str) -> str:
    """One line if the cuda backend can run here, else PreflightError with the reason and the fix."""
    usable, why = backends.gpu_status()
    if usable:
        return f"{what} runs on {why}"
    present, gpu = backends.gpu_present()
    if not present:
        raise PreflightError(
            f"{what} needs the cuda backend, which cannot run here ({why}; {gpu}): it would skip (n/a) at "
            "every step, and a skip is no measurement. A cuda target can only be bisected on a machine with a "
            "GPU; here, bisect a cpu target instead (--target cpu:8)")
    extra = suggested_extra()
    raise PreflightError(
        f"{what} needs the cuda backend, which cannot run here: {why}, though {gpu}. Install CuPy here "
        f"(pip install -e '.[{extra}]'); asv's environments take their CUDA extra from the runner's "
        f"setting: on a GPU runner: {CUDA_EXTRA_VAR}={extra} (docs/runners.md)")


def extra_verdict() -> str:
    """asv's environments get CuPy from the install command's choice (cuzk/cuda_extra.py): none, or a
    setting it cannot honour, leaves a cuda benchmark without CuPy in every environment asv builds."""
    try:
        extra, why = cuda_extra.choose()
    except cuda_extra.ExtraError as e:
        raise PreflightError(f"{e}: use one of {', '.join(CUDA_EXTRAS)} (docs/runners.md)") from e
    if extra is None:
        raise PreflightError(f"asv's environments would be built without CuPy ({why}), so a cuda target "
                             f"cannot run in them: set {CUDA_EXTRA_VAR}=cuda12 or cuda13 (docs/runners.md)")
    return f"{extra} for asv's environments ({why})"


def range_verdict(commits: list[str], good: str, bad: str, repo: Path) -> str:
    """asv find steps on commits[0] (the good end) to commits[-1]; with two it steps on none."""
    short = lambda c: c[:10]
    if not commits or commits[0] != good or commits[-1] != bad:
        if good != bad and subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", bad, good],
                                          capture_output=True).returncode == 0:
            raise PreflightError(f"--good {short(good)} is newer than --bad {short(bad)} (a descendant of it): "
                                 "swap them; for a commit that made it faster, --asv-arg=--invert")
        raise PreflightError(f"--good {short(good)} is not on the first-parent line of --bad {short(bad)} "
                             "(asv find bisects `git rev-list --first-parent`)")
    if len(commits) == 1:
        raise PreflightError(f"--good and --bad are one commit ({short(good)}): there is nothing between them to "
                             "bisect")
    if len(commits) == 2:
        hint = "give an earlier --good"
        merged = merged_branch(good, bad, repo)
        if merged:
            hint = (f"BAD is a merge of GOOD: to bisect the merged branch, --good {short(merged[0])} "
                    f"--bad {short(merged[1])}")
        raise PreflightError(f"GOOD..BAD is two commits, and asv find measures neither (it names BAD "
                             f"without running anything): {hint}")
    return f"{len(commits)} commits from {short(good)} to {short(bad)}"


def check(regex: str, target: str | None, commits: list[str], good: str, bad: str, repo: Path,
          benchmark_dir: str = "benchmarks", existing_env: bool = False) -> str:
    """Raise PreflightError where asv find would measure nothing; else say what was checked."""
    found = discover(repo, benchmark_dir)
    if found is not None:
        sel = selection(regex, found)
        if not sel:
            raise PreflightError(f"{regex!r} selects no benchmark in {benchmark_dir}/")
        if len(sel) > 1:
            raise PreflightError(f"{regex!r} selects {len(sel)} benchmarks ({', '.join(sorted(sel)[:3])}, ...); "
                                 "asv find bisects one")
        (name, sets), = sel.items()
        cuda = [p for p in sets if is_cuda(p)]
    else:                              # the target says it, where one is given
        name, sets = regex, [()]
        cuda = [()] if (target or "").startswith("cuda") else []
    notes = []
    if cuda:
        what = f"{name}({', '.join(cuda[0])})" if cuda[0] else name
        if len(sets) > 1:
            what = f"{name} ({len(cuda)} of the {len(sets)} selected parameter sets are cuda ones, e.g. " \
                   f"({', '.join(cuda[0])}))"
        notes.append(cuda_verdict(what))
        if not existing_env:
            notes.append(extra_verdict())
    else:
        notes.append(f"{name}: {len(sets)} cpu parameter set(s)" if sets != [()] else name)
    # checked after the GPU: on a machine without one, that is the reason to give first
    return "ok: " + "; ".join([range_verdict(commits, good, bad, repo), *notes])
