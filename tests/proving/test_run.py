"""The run path (cuzk/run.py): one run as a library call, and the steps every caller shares."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from cuzk.groth16 import verify
from cuzk.opts import resolve
from cuzk.run import RunError, RunSpec, all_verify, open_backend, prove_files, run, synthesize_batch

ROOT = Path(__file__).resolve().parents[2]
SPEC = RunSpec(opts=resolve(), circuit="mulchain", log_size=6, backend="cpu", circuits=2)


def test_a_run_proves_times_and_verifies_a_batch():
    rep = run(SPEC)
    assert rep.verified and len(rep.proofs) == 2
    vk = rep.pk.verifying_key()
    assert all(verify(vk, pub, pf) for pub, pf in zip(rep.publics, rep.proofs))      # not only its own word
    doc = json.loads(json.dumps(rep.to_json()))          # the documented schema, as JSON (docs/architecture.md)
    assert {"cuzk_version", "commit", "backend", "circuit", "optimizations", "phases", "total_s",
            "verified", "gpu"} <= set(doc)
    assert doc["circuit"]["circuits"] == 2 and doc["circuit"]["name"] == "mulchain"
    assert list(doc["phases"]) == ["synthesis", "prep_msm", "ntt_msm_h", "batch_addition", "tail_msm", "b_g2",
                                   "proof_assembly"]
    assert doc["optimizations"] == resolve().as_dict() and doc["backend"] == "cpu" and doc["gpu"] is None


def test_a_run_reports_a_proof_that_does_not_verify(monkeypatch):
    """verified comes from the verifier, not from the prover: a proof altered after proving reads False."""
    import cuzk.run as run_mod
    real = run_mod.all_verify
    monkeypatch.setattr(run_mod, "all_verify", lambda vk, pubs, pfs: real(vk, [[p[0] + 1, *p[1:]] for p in pubs], pfs))
    assert run(replace(SPEC, circuits=1)).verified is False


def test_no_proof_or_a_missing_one_is_not_verified():
    rep = run(SPEC)
    vk = rep.pk.verifying_key()
    assert all_verify(vk, rep.publics, rep.proofs)
    assert not all_verify(vk, [], []) and not all_verify(vk, rep.publics, rep.proofs[:1])


@pytest.mark.parametrize("field, value, msg", [("circuits", 0, "--circuits must be >= 1"),
                                               ("warmup", -1, "--warmup must be >= 0"),
                                               ("parallel_synthesis", -1, "--parallel-synthesis must be >= 0")])
def test_a_bad_count_is_refused_before_any_work(field, value, msg):
    with pytest.raises(RunError, match=msg):
        run(replace(SPEC, **{field: value}))


def test_a_key_on_the_gpu_needs_the_cuda_backend():
    with pytest.raises(RunError, match="--device-keygen on needs the cuda backend"):
        open_backend(replace(SPEC, device_keygen="on"))


def test_the_batch_is_assigned_by_the_backend_or_on_the_host():
    be = open_backend(SPEC)
    r1, a1 = synthesize_batch(SPEC, be)
    r2, a2 = synthesize_batch(SPEC, None)
    assert r1.digest() == r2.digest() and [a.public for a in a1] == [a.public for a in a2]


def test_prove_files_refuses_a_backend_by_name_without_resolved_options(tmp_path):
    """Nothing is read first: the caller's edge resolves the options, the library never guesses them."""
    with pytest.raises(TypeError, match="needs the resolved opts"):
        prove_files(tmp_path / "missing.zkey", tmp_path / "missing.wtns", "cpu")


# --- one path: the sequence is written once ---

CALLERS = ["cuzk/cli/bench.py", "cuzk/cli/bench_pipeline.py", "cuzk/pipelined_run.py", "cuzk/perf/workload.py",
           "cuzk/perf/ablate.py", "cuzk/cli/snarkjs.py"]
STEPS = {"synthesize", "proving_context", "get_backend", "verify"}


def _calls(path: str, root: Path = ROOT) -> set[str]:
    tree = ast.parse((root / path).read_text())
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            f = n.func
            out.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "")
    return out


@pytest.mark.parametrize("path", CALLERS)
def test_callers_take_the_run_paths_steps_rather_than_writing_them_again(path):
    """bench, the pipelined run and its command, the perf workload, ablate and prove make the backend,
    synthesize, set up the key and verify through cuzk/run.py."""
    own = _calls(path) & STEPS
    assert not own, f"{path} calls {sorted(own)} itself: use run.py's steps"


def test_the_scan_sees_a_caller_that_writes_the_sequence_again(tmp_path):
    (tmp_path / "cuzk").mkdir()
    (tmp_path / "cuzk" / "x.py").write_text("from .synthesis import synthesize\nr = synthesize('a', 1, None)\n")
    assert _calls("cuzk/x.py", tmp_path) & STEPS == {"synthesize"}


def test_no_module_below_the_cli_imports_it():
    bad = []
    for p in (ROOT / "cuzk").rglob("*.py"):
        rel = p.relative_to(ROOT / "cuzk")
        if rel.parts[0] == "cli" or rel.name == "__main__.py":
            continue
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.ImportFrom):
                mod = "." * n.level + (n.module or "")
                depth = len(rel.parts) - 1                       # folders below cuzk/
                if (n.level == depth + 1 and (n.module or "").split(".")[0] == "cli") or \
                        (n.level == 0 and (n.module or "").startswith("cuzk.cli")):
                    bad.append(f"{rel}: from {mod} import ...")
    assert not bad, bad


def test_the_cli_starts_without_the_provers_imports():
    """`cuzk --help` and `cuzk verify` do not import the run path (bench and prove import it when they run)."""
    code = ("import importlib, sys; importlib.import_module('cuzk.cli.main').build_parser(); "
            "print('cuzk.run' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
