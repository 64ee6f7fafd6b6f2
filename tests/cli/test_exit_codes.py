"""Exit codes as a contract: 1 means only "valid input, invalid proof" (verify, prove, bench, bench-snarkjs)
or "a regression" (gate, history changes --fail-on-gated); anything unforeseen is one line and exit 2."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from cuzk.cli import main

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "cuzk" / "cli"
# function -> why it may return 1
MAY_EXIT_1 = {("verify.py", "cmd_verify"): "invalid proof", ("snarkjs.py", "cmd_prove"): "invalid proof",
              ("bench.py", "cmd_bench"): "a proof that does not verify",
              ("snarkjs.py", "cmd_bench_snarkjs"): "a proof that does not verify",
              ("gate.py", "cmd_gate"): "a regression", ("history.py", "cmd_history"): "a gated regression"}


def _functions_returning_1():
    """(file, function) of every function in cuzk/cli that names EXIT_INVALID or returns/exits with 1."""
    found = set()
    for f in sorted(CLI.glob("*.py")):
        tree = ast.parse(f.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                one = (isinstance(node, ast.Name) and node.id == "EXIT_INVALID") or (
                    isinstance(node, (ast.Return,)) and isinstance(node.value, ast.Constant) and node.value.value == 1)
                exits = (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "exit"
                         and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == 1)
                if one or exits:
                    found.add((f.name, fn.name))
    return found


def test_only_the_verdict_commands_can_exit_1():
    found = _functions_returning_1()
    assert found, "the scan found nothing: it cannot fail"
    assert found <= set(MAY_EXIT_1), sorted(found - set(MAY_EXIT_1))
    # the gate's exit code is its verdict's (0, 1 or 2), computed in cuzk/perf/gate.py
    assert "return res.exit_code" in (CLI / "gate.py").read_text()


def test_an_unforeseen_exception_is_one_line_exit_2(monkeypatch, capsys):
    def boom(args):
        raise LookupError("something nobody planned for\nsecond line")
    from cuzk.cli import opts as opts_cmd           # main imports a command's module when it runs
    monkeypatch.setattr(opts_cmd, "cmd_opts", boom)
    assert main(["opts"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["cuzk: internal error: LookupError: something nobody planned for "
                   "(a bug; please report it with this line)"]


@pytest.mark.parametrize("exc, line", [
    (MemoryError("Unable to allocate 32.0 GiB for an array with shape (2, 134217728, 16) and data type uint64"),
     "cuzk: error: out of host memory: Unable to allocate 32.0 GiB for an array with shape (2, 134217728, 16) and "
     "data type uint64"),
    (MemoryError(), "cuzk: error: out of host memory (the allocation that failed gave no size)"),
    (type("OutOfMemoryError", (MemoryError,), {"__module__": "cupy.cuda.memory"})(
        "Out of memory allocating 8,589,934,592 bytes (allocated so far: 75,161,927,680 bytes)."),
     "cuzk: error: out of device memory: Out of memory allocating 8,589,934,592 bytes (allocated so far: "
     "75,161,927,680 bytes).")])
def test_out_of_memory_says_which_memory_and_what_could_not_be_allocated(monkeypatch, capsys, exc, line):
    """A 2^27 pipelined bench on an H100 ended "out of host memory" alone: numpy's message names the size, and
    CuPy's OutOfMemoryError (a MemoryError) is the device's memory, not the host's."""
    def boom(args):
        raise exc
    from cuzk.cli import opts as opts_cmd
    monkeypatch.setattr(opts_cmd, "cmd_opts", boom)
    assert main(["opts"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [line]


def test_deep_nesting_and_wrong_shapes_are_exit_2(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    cases = [["ablate", "--from-json", str(deep)], ["ablate", "--resume", str(deep), "--backend", "cpu"]]
    conf = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(conf)], check=True)
    (conf / "asv.conf.json").write_text("[]")
    subprocess.run(["git", "-C", str(conf), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(conf), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c"],
                   check=True)
    cases.append(["bisect", "tail_msm", "--target", "cpu:10", "--opts", "default", "--good", "HEAD", "--bad", "HEAD",
                  "--repo", str(conf), "--dry-run"])
    for argv in cases:
        p = subprocess.run([sys.executable, "-m", "cuzk", *argv], capture_output=True, text=True, timeout=120)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1 and "Traceback" not in p.stderr, (argv, p.stderr[-2000:])
        assert "internal error" not in lines[0], (argv, lines)


def test_history_changes_checks_its_json_output_before_reading_anything(tmp_path, capsys):
    cfg = tmp_path / "gate.toml"
    cfg.write_text("not toml at all [")
    assert main(["history", "changes", "--results", str(tmp_path / "none"), "--json", str(cfg),
                 "--gate-config", str(cfg), "--fail-on-gated", "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--json" in err[0] and "--gate-config" in err[0], err


@pytest.mark.parametrize("doc, says", [
    ("9" * 5000, "malformed JSON"),                                        # past int's 4300-digit limit
    ('{"protocol": "' + "x" * 3_000_000 + '"}', "protocol is 'xxx"),      # a value echoed in the message
    ('{"protocol": "groth16", "curve": ' + '["y", ' * 50 + "1" + "]" * 50 + "}", "curve is [")])
def test_a_bad_json_value_is_one_short_line_naming_the_file(tmp_path, doc, says):
    """An integer literal past Python's digit limit is malformed JSON of that file, and the message quotes a bad
    value shortened: a 3 MB string is not echoed into the log."""
    vk = tmp_path / "vk.json"
    vk.write_text(doc)
    empty = tmp_path / "e.json"
    empty.write_text("[]")
    p = subprocess.run([sys.executable, "-m", "cuzk", "verify", str(vk), str(empty), str(empty)],
                       capture_output=True, text=True, timeout=60)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, (p.returncode, p.stderr[:500])
    assert str(vk) in lines[0] and says in lines[0] and len(lines[0]) < 400, lines[0][:500]


def test_a_reader_that_closes_the_pipe_is_no_bad_input():
    """`cuzk opts | head -1`: the reader went away; no input was bad (not exit 2), no error line, and the exit is a
    SIGPIPE'd process's (141), as `yes | head` gives."""
    p = subprocess.Popen([sys.executable, "-m", "cuzk", "opts"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()                        # before the child's first write: it meets a pipe with no reader
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 141 and err == "", (p.returncode, err)
