"""`cuzk bisect`: the pre-flight, asv find on a private results directory, and the verdict from what it
measured (bisect.py has the pieces; bisect_preflight.py and bisect_verdict.py the two checks).

Where asv measures: by default in the environment asv.conf.json describes, a virtualenv under
.asv/env that asv builds once and reuses, installing each commit's own wheel into it (the install
command runs the project checkout's cuzk/cuda_extra.py, whatever the commit). Building it needs a
package index, or a wheelhouse (PIP_NO_INDEX=1 PIP_FIND_LINKS=DIR). With `--asv-arg=-E
--asv-arg=existing:PYTHON` asv installs nothing and uses PYTHON's packages; there each commit's own
code is checked out and put first on the benchmarks' sys.path (asv_private.add_commit_code_plugin), so
it is still that commit that is measured.

asv find's culprit is then measured again against its parent in alternation (bisect_confirm) before it is
named: asv find reads each commit once, in turn, and follows a value the machine's speed moved. Where that run
shows no step, the range is bisected again with the gate alone (bisect_confirm.walk)."""
from __future__ import annotations

import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

from . import asv_private, bisect_confirm, bisect_preflight, bisect_verdict
from .bisect import BisectError, _sha, bench_regex, find_argv, gpu_env, range_commits, shell_command, stream


def run(benchmark: str, good: str, bad: str, target: str | None = None, opts: str | None = None,
        repo: str = ".", dry_run: bool = False, extra: list[str] | None = None, confirm: bool = True) -> int:
    """0 with the culprit; BisectError (exit 2) for bad input, uncommitted changes to tracked files, a failed
    pre-flight, a run that did not measure every commit it judged by, or a culprit that could not be measured again
    against its parent (bisect_confirm; confirm False: not measured again, said so), or a walk with the gate that
    could not tell."""
    extra = list(extra or [])
    regex = bench_regex(benchmark, target, opts)
    good_sha, bad_sha = _sha(repo, good), _sha(repo, bad)
    if "--skip-save" in extra:
        raise BisectError("--skip-save leaves no results to check the bisection against")
    bisect_preflight.clean_tree(repo)
    commits = range_commits(good, bad, repo)
    project = asv_private.project_conf(Path(repo))
    existing = (any(re.match(r"(-E|--environment=)?existing", a) for a in extra)     # no CUDA extra needed
                or project.get("environment_type") == "existing")
    bench_dir = project.get("benchmark_dir", "benchmarks")
    verdict = bisect_preflight.check(regex, target, commits, good_sha, bad_sha, Path(repo), bench_dir, existing)
    # the command only once the pre-flight passed: printed first, it read as runnable for input refused below it
    print(shell_command(regex, good, bad, target, repo) + "".join(" " + shlex.quote(a) for a in extra),
          flush=True)
    print(f"# pre-flight {verdict}", flush=True)
    kind = project.get("environment_type", "virtualenv")
    print("# environment: " + (
        "the existing interpreter's packages; each commit's own cuzk checked out and first on PYTHONPATH"
        if existing else f"asv's {kind} under {project.get('env_dir', 'env')}, built once (package index or "
        "PIP_FIND_LINKS wheelhouse) and reused; each commit's own wheel installed into it"), flush=True)
    if dry_run:
        return 0
    invert = "--invert" in extra or "-i" in extra
    with tempfile.TemporaryDirectory(prefix="cuzk-bisect-") as tmp:
        conf, results = asv_private.write_config(Path(repo), Path(tmp))
        asv_private.add_commit_code_plugin(conf, Path(tmp) / "commit-code")
        try:
            registered = asv_private.ensure_machine(conf)
        except asv_private.AsvConfigError as e:
            raise BisectError(str(e)) from e
        if registered:
            print(f"# asv machine --yes: this host registered as {registered!r} in ~/.asv-machine.json "
                  "(asv find needs a machine description)", flush=True)
        argv = find_argv(regex, good, bad, repo)
        # --show-stderr: asv says why a commit was not measured only there, not in its result files
        argv = [*argv[:2], "--config", str(conf), "--show-stderr", *argv[2:], *extra]
        print(f"# runs: {' '.join(shlex.quote(a) for a in argv)}  (results in a temporary directory, "
              "not .asv/results)", flush=True)
        rc, lines = stream([sys.executable, "-m", *argv], repo, dict(os.environ, **gpu_env(regex, target)))
        name, labels, points = bisect_verdict.read(results, regex, bisect_verdict.said(lines))
    named = bisect_verdict.named_commit(lines, commits)
    held: list[str] = []             # the culprit's line waits for the confirmation
    is_culprit = lambda line: named is not None and line.startswith(f"cuzk bisect: {named[:10]} is the first ")
    try:
        bisect_verdict.judge(name, labels, points, commits, named, rc, invert, out=held.append,
                             failure=bisect_verdict.setup_failure(lines) if rc != 0 else None)
    finally:
        for line in held:
            if not is_culprit(line):
                print(line, flush=True)
    culprit = next(filter(is_culprit, held))
    spec, why = bisect_confirm.workload(benchmark, target, opts)
    if not confirm or spec is None:
        print(culprit)
        print(f"cuzk bisect: not confirmed ({why or '--no-confirm'}): the culprit stands on one value a commit, "
              "measured in turn by asv find; a machine whose speed moved during the run moves one by as much as a "
              "step", flush=True)
        return 0
    parent = commits[commits.index(named) - 1]
    print(f"# confirming: {named[:10]} against its parent {parent[:10]} in alternation, as the gate measures "
          f"(`cuzk gate --base {parent[:10]} --head {named[:10]}`)", flush=True)
    c = bisect_confirm.confirm(repo, parent, named, benchmark, spec, points[parent].values[0],
                               points[named].values[0], invert)
    if not c.judged:
        raise BisectError(f"asv find named {named[:10]}, measured again: {c.line}; no culprit")
    if c.confirmed:
        print(culprit)
        print(f"cuzk bisect: confirmed: {c.line}", flush=True)
        return 0
    # asv find followed a value the machine moved (or the step is elsewhere): bisected again, the gate alone
    print(f"cuzk bisect: asv find's culprit {'refuted' if c.refuted else 'neither confirmed nor refuted'}: {c.line}",
          flush=True)
    print("# bisecting GOOD..BAD again with the gate alone: BAD against GOOD for the step, then each midpoint "
          "against GOOD at half of it", flush=True)
    first, line = bisect_confirm.walk(repo, commits, benchmark, spec, points[commits[0]].values[0],
                                      points[commits[-1]].values[0], invert)
    print(f"cuzk bisect: {first[:10]} is the first {'fast' if invert else 'slow'} commit: {line}", flush=True)
    return 0
