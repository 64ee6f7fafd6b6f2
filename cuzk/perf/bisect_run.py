"""`cuzk bisect`: the pre-flight, asv find on a private results directory, and the verdict from what it
measured (bisect.py has the pieces; bisect_preflight.py and bisect_verdict.py the two checks).

Where asv measures: by default in the environment asv.conf.json describes, a virtualenv under
.asv/env that asv builds once and reuses, installing each commit's own wheel into it (the install
command runs the project checkout's cuzk/cuda_extra.py, whatever the commit). Building it needs a
package index, or a wheelhouse (PIP_NO_INDEX=1 PIP_FIND_LINKS=DIR). With `--asv-arg=-E
--asv-arg=existing:PYTHON` asv installs nothing and uses PYTHON's packages; there each commit's own
code is checked out and put first on the benchmarks' sys.path (asv_private.add_commit_code_plugin), so
it is still that commit that is measured."""
from __future__ import annotations

import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

from . import asv_private, bisect_preflight, bisect_verdict
from .bisect import BisectError, _sha, bench_regex, find_argv, gpu_env, range_commits, shell_command, stream


def run(benchmark: str, good: str, bad: str, target: str | None = None, opts: str | None = None,
        repo: str = ".", dry_run: bool = False, extra: list[str] | None = None) -> int:
    """0 with the culprit; BisectError (exit 2) for bad input, uncommitted changes to tracked files, a failed
    pre-flight, or a run that did not measure every commit it judged by."""
    extra = list(extra or [])
    regex = bench_regex(benchmark, target, opts)
    good_sha, bad_sha = _sha(repo, good), _sha(repo, bad)
    if "--skip-save" in extra:
        raise BisectError("--skip-save leaves no results to check the bisection against")
    bisect_preflight.clean_tree(repo)
    print(shell_command(regex, good, bad, target, repo) + "".join(" " + shlex.quote(a) for a in extra),
          flush=True)
    commits = range_commits(good, bad, repo)
    project = asv_private.project_conf(Path(repo))
    existing = (any(re.match(r"(-E|--environment=)?existing", a) for a in extra)     # no CUDA extra needed
                or project.get("environment_type") == "existing")
    bench_dir = project.get("benchmark_dir", "benchmarks")
    verdict = bisect_preflight.check(regex, target, commits, good_sha, bad_sha, Path(repo), bench_dir, existing)
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
    return bisect_verdict.judge(name, labels, points, commits, bisect_verdict.named_commit(lines, commits), rc,
                                invert, failure=bisect_verdict.setup_failure(lines) if rc != 0 else None)
