"""What a process takes from its environment is read where it starts (cuzk/environment.py) and passed down:
the registry, the backends and the GPU modules read none of it, and nothing writes it."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cuzk import environment
from cuzk.opts import OptError, resolve

ROOT = Path(__file__).resolve().parents[2]


def test_options_are_the_defaults_then_the_environment_then_the_flag():
    assert environment.options(environ={}) == resolve()
    assert not environment.options(environ={"CUZK_OPT": "-A1"}).enabled("A1")
    assert environment.options("+A1", environ={"CUZK_OPT": "-A1"}).enabled("A1")       # the flag wins
    assert environment.options("none", environ={"CUZK_OPT": "+B1"}).label() == "baseline"
    assert environment.options(environ={"CUZK_OPT": " "}) == resolve()


def test_a_bad_environment_set_names_the_variable():
    with pytest.raises(OptError, match=r"CUZK_OPT='\+NOPE': unknown optimization 'NOPE'"):
        environment.options("+A1", environ={"CUZK_OPT": "+NOPE"})
    with pytest.raises(OptError, match="unknown optimization 'NOPE'") as e:
        environment.options("+NOPE", environ={})
    assert "CUZK_OPT" not in str(e.value)


def test_gpu_required():
    assert not environment.gpu_required({})
    assert environment.gpu_required({"CUZK_REQUIRE_GPU": " Yes "})
    assert not environment.gpu_required({"CUZK_REQUIRE_GPU": "0"})


def _python_files(*folders):
    for folder in folders:
        yield from sorted((ROOT / "cuzk" / folder).rglob("*.py"))


def _environ_uses(tree) -> list[int]:
    """Lines that read or write the process environment (os.environ, os.getenv, os.putenv)."""
    return [n.lineno for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "os"
            and n.attr in ("environ", "getenv", "putenv", "unsetenv")]


def test_no_backend_or_gpu_module_reads_the_environment_or_the_registry():
    """Options reach gpu/ and backend/ as values. The one environment reader left there is the kernel cache's
    folder (gpu/kernel_sources.py: CUZK_CUBIN_DIR, XDG_CACHE_HOME), a location rather than an option."""
    found = []
    for p in _python_files("gpu", "backend"):
        tree = ast.parse(p.read_text())
        rel = p.relative_to(ROOT).as_posix()
        if rel != "cuzk/gpu/kernel_sources.py":
            found += [f"{rel}:{line} reads the environment" for line in _environ_uses(tree)]
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[-1] == "opts" and n.level > 0:
                found.append(f"{rel}:{n.lineno} imports the registry")
            if isinstance(n, ast.Import) and any(a.name == "cuzk.opts" for a in n.names):
                found.append(f"{rel}:{n.lineno} imports the registry")
    assert found == []


def _environ_writes(tree) -> list[int]:
    """Lines that set or remove a variable of the process environment."""
    lines = []
    for n in ast.walk(tree):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target]
            if any(isinstance(t, ast.Subscript) and ast.unparse(t.value) == "os.environ" for t in targets):
                lines.append(n.lineno)
        elif isinstance(n, ast.Call) and ast.unparse(n.func) in (
                "os.environ.update", "os.environ.setdefault", "os.environ.pop", "os.environ.clear", "os.putenv",
                "os.unsetenv"):
            lines.append(n.lineno)
    return lines


def test_nothing_in_the_package_writes_the_environment():
    """Only the asv plumbing sets variables, for the benchmark processes asv starts (perf/asv_private.py)."""
    found = []
    for p in sorted((ROOT / "cuzk").rglob("*.py")):
        rel = p.relative_to(ROOT).as_posix()
        if rel != "cuzk/perf/asv_private.py":
            found += [f"{rel}:{line}" for line in _environ_writes(ast.parse(p.read_text()))]
    assert found == []


def test_the_scans_can_fail():
    """The scanners above see a read and each kind of write when one is there."""
    tree = ast.parse("import os\nos.environ['X'] = '1'\nv = os.getenv('Y')\nos.environ.pop('Z', None)\n"
                     "del os.environ['W']\nos.putenv('V', '2')\n")
    assert sorted(_environ_uses(tree)) == [2, 3, 4, 5, 6]
    assert sorted(_environ_writes(tree)) == [2, 4, 5, 6]
