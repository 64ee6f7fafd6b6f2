"""`cuzk bisect BENCHMARK --good REF --bad REF`: a thin wrapper around `asv find`, which bisects the
commits from GOOD (included) to BAD for the commit that made a benchmark slower.

BENCHMARK is a phase name (with --target and --opts it selects one parameter set of the suite, as
the gate's report does) or an asv benchmark regex. The gate's report prints this command and the
`asv find` command it runs; both come from `find_argv` here, so they always agree.

asv find names a commit whatever it measured, skips included. So a pre-flight (bisect_preflight)
refuses what would measure nothing, asv writes into a private results dir (asv_private), and the
culprit is named only from the values it saved (bisect_verdict), never from asv's own line; bisect_run.run
puts them together.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

from .. import cuda_extra
from .asv_private import stop as stop_asv
from .suite import ALL_TARGETS, ASV_TIME_BENCHMARKS, SCALE_TARGETS, measured_variants, time_benchmark


class BisectError(ValueError):
    pass


# the line of asv find's output that names a commit
NAMED = re.compile(r"Greatest (regression|improvement) found: ([0-9a-f]{4,40})")


def bench_regex(benchmark: str, target: str | None = None, opts: str | None = None) -> str:
    """The asv regex for a phase (one parameter set when target/opts are given) or a regex as is."""
    if benchmark not in ASV_TIME_BENCHMARKS:
        if target or opts:
            raise BisectError(f"--target/--opts need a phase name ({', '.join(ASV_TIME_BENCHMARKS)}), "
                              f"not {benchmark!r}")
        try:
            re.compile(benchmark)
        except re.error as e:
            raise BisectError(f"bad benchmark regex {benchmark!r}: {e}") from e
        return benchmark
    if benchmark == "synthesis" and target not in SCALE_TARGETS:
        if target or opts:
            raise BisectError("synthesis is parametrised by circuit and size below PoRep scale (targets: "
                              f"{', '.join(SCALE_TARGETS)}): give an asv regex instead")
        return "^" + re.escape(time_benchmark(benchmark))
    if target is not None and target not in ALL_TARGETS:
        raise BisectError(f"unknown target {target!r}; the suite has {', '.join(ALL_TARGETS)}")
    try:
        regex = "^" + re.escape(time_benchmark(benchmark, target))
    except KeyError as e:
        raise BisectError(e.args[0]) from None
    measured = measured_variants(benchmark, target)
    if opts is not None and opts not in measured:
        raise BisectError(f"{benchmark} is not measured in variant {opts!r}"
                          + (f" at {target}" if target else "") + f"; it is in {', '.join(measured)}")
    if target and opts:
        return regex + re.escape(f"({target!r}, {opts!r})") + "$"
    if target:
        return regex + re.escape(f"({target!r}, ")
    if opts:
        return regex + r"\(.*" + re.escape(f", {opts!r})") + "$"
    return regex


def commit_range(good: str, bad: str, repo: str | None = None) -> str:
    """good^..bad: asv find takes the range's first commit as the good end, so GOOD is included.
    A root commit has no parent: then every ancestor of BAD is the range."""
    if repo is not None:
        p = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q", f"{good}^"], capture_output=True)
        if p.returncode != 0:
            return bad
    return f"{good}^..{bad}"


def find_argv(regex: str, good: str, bad: str, repo: str | None = None) -> list[str]:
    return ["asv", "find", "--launch-method", "spawn", commit_range(good, bad, repo), regex]


CUDA_EXTRA_VAR = cuda_extra.VAR


def is_cuda(regex: str, target: str | None) -> bool:
    return (target or "").startswith("cuda") or "cuda" in regex


def gpu_env(regex: str, target: str | None) -> dict:
    """For a GPU parameter set, the CUDA extra this runner gives asv's environments, where its own
    environment names it: asv.conf.json's install command installs CuPy from CUZK_CUDA_EXTRA."""
    extra = os.environ.get(CUDA_EXTRA_VAR, "").strip()
    return {CUDA_EXTRA_VAR: extra} if extra and is_cuda(regex, target) else {}


def gpu_hint(regex: str, target: str | None) -> str | None:
    """A shell comment for a GPU parameter set: where asv's environments get CuPy from."""
    if not is_cuda(regex, target):
        return None
    return (f"# asv's environments get CuPy from asv.conf.json's install command, which reads {CUDA_EXTRA_VAR} "
            "(cuda12|cuda13|none; unset: from the NVIDIA driver; docs/runners.md)")


def env_prefix(regex: str, target: str | None) -> str:
    return "".join(f"{k}={shlex.quote(v)} " for k, v in gpu_env(regex, target).items())


def shell_command(regex: str, good: str, bad: str, target: str | None = None, repo: str | None = None) -> str:
    return env_prefix(regex, target) + " ".join(shlex.quote(a) for a in find_argv(regex, good, bad, repo))


def cuzk_command(benchmark: str, good: str, bad: str, target: str | None = None, opts: str | None = None) -> str:
    parts = ["cuzk", "bisect", benchmark]
    if target:
        parts += ["--target", target]
    if opts:
        parts += ["--opts", opts]
    parts += ["--good", good, "--bad", bad]
    return " ".join(shlex.quote(p) for p in parts)


def _sha(repo, ref: str) -> str:
    p = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q", f"{ref}^{{commit}}"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise BisectError(f"{ref!r} is not a commit in {repo}")
    return p.stdout.strip()


def range_commits(good: str, bad: str, repo) -> list[str]:
    """The commits asv find steps among, oldest (its good end) first: its own `git rev-list`."""
    p = subprocess.run(["git", "-C", str(repo), "rev-list", "--first-parent",
                        *shlex.split(commit_range(good, bad, repo)), "--"], capture_output=True, text=True)
    return p.stdout.split()[::-1]


def merged_branch(good: str, bad: str, repo) -> tuple[str, str, int] | None:
    """Where BAD is a merge whose first parent is GOOD (a pull request's gate compares HEAD^1 with
    HEAD): the merged branch as (merge-base(GOOD, BAD^2), BAD^2, its commits); else None."""
    def git(*args):
        p = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
        return p.stdout.split() if p.returncode == 0 else []
    parents = git("rev-list", "--parents", "-n", "1", bad)
    if len(parents) != 3 or parents[1] != _sha(repo, good):
        return None
    tip = parents[2]
    base = git("merge-base", parents[1], tip)
    if not base:
        return None
    return base[0], tip, len(git("rev-list", "--first-parent", f"{base[0]}..{tip}"))


def stream(argv: list[str], cwd, env: dict) -> tuple[int, list[str]]:
    """Run asv, passing its output (stderr merged) on line by line, except its own culprit line;
    (exit code, all lines)."""
    lines = []
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         bufsize=1)
    try:
        for line in p.stdout:
            lines.append(line)
            if not NAMED.search(line):
                sys.stdout.write(line)
                sys.stdout.flush()
        return p.wait(), lines
    finally:
        stop_asv(p)                     # interrupted: asv must not go on measuring, nor its benchmark
