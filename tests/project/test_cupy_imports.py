"""CuPy at the device boundary only. The device modules under cuzk/gpu/ import it at their top, never inside their
functions; everything else loads with `import cupy` refused: `cuzk --help`, the CPU backend, the host modules of
gpu/ (plans, sources, the host fold) and every test module, so the CPU tests run where CuPy is not installed.

LAZY lists the gpu/ modules that still import CuPy inside functions, each with its reason; DEVICE lists the modules
that need CuPy to load. A gpu/ module that takes CuPy late again, or a host module that comes to import a device
module, fails here; so does an entry that is no longer needed (take it off)."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CUPY = ("cupy", "cupyx", "cupy_backends")

_KEYGEN = ("gpu/keygen.py imports it at its top, and cuzk/keygen.py imports gpu/keygen.py at its top (the CPU "
           "keygen's path): CuPy goes to its top once gpu/keygen.py's device side loads only where a GPU run starts")
LAZY = {
    "cuzk/gpu/keygen.py": "its host model (tests/gpu/test_keygen_model.py) and its device side are still one module, "
                          "which cuzk/keygen.py imports at its top",
    "cuzk/gpu/loader.py": _KEYGEN,
    "cuzk/gpu/per_device.py": _KEYGEN,
    "cuzk/gpu/fr.py": _KEYGEN,
    "cuzk/gpu/ntt.py": _KEYGEN,
    "cuzk/gpu/spmv.py": _KEYGEN,
    "cuzk/gpu/srs.py": _KEYGEN,
}

DEVICE = {
    "cuzk.backend.cuda", "cuzk.backend.cuda.b_g2", "cuzk.backend.cuda.batch_addition", "cuzk.backend.cuda.device",
    "cuzk.backend.cuda.ntt_msm_h", "cuzk.backend.cuda.prep_msm", "cuzk.backend.cuda.synthesis",
    "cuzk.backend.cuda.tail_msm",
    "cuzk.gpu.cub_sort", "cuzk.gpu.h", "cuzk.gpu.prep", "cuzk.gpu.zkey",
    "cuzk.gpu.msm.fixed", "cuzk.gpu.msm.many", "cuzk.gpu.msm.phase_msm", "cuzk.gpu.msm.pippenger",
    "cuzk.gpu.msm.sums",
    "cuzk.micro_ops",
}

# A fresh interpreter where `import cupy` raises: it imports each module named on stdin (a module name, or a .py file:
# its folder goes first on sys.path, as pytest's rootdir-relative imports do) and prints, as JSON, those that failed or
# tried to import CuPy, with why.
_REFUSE = textwrap.dedent("""
    import importlib, importlib.util, json, os, sys
    tried = []
    class Refuse:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in %r:
                tried.append(name)
                raise ImportError("CuPy refused: " + name)
    sys.meta_path.insert(0, Refuse())
    out = {}
    def load(name):
        if not name.endswith(".py"):
            return importlib.import_module(name)
        folder, mod = os.path.dirname(name), os.path.basename(name)[:-3]
        if folder not in sys.path:
            sys.path.insert(0, folder)
        if mod in sys.modules:
            if getattr(sys.modules[mod], "__file__", None) == name:
                return sys.modules[mod]               # imported already (by a sibling test module)
            mod = name.replace(os.sep, "_")[:-3]      # a second conftest.py: a name of its own
        spec = importlib.util.spec_from_file_location(mod, name)
        m = sys.modules[mod] = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(m)
        except BaseException:
            del sys.modules[mod]
            raise
        return m

    for line in sys.stdin.read().splitlines():
        del tried[:]
        try:
            load(line)
            why = None
        except BaseException as e:
            why = type(e).__name__ + ": " + str(e)
            if type(e).__name__ == "Skipped":          # pytest.importorskip: skipped where it runs, not an error
                why = None
        if why or tried:
            out[line] = why or "tried to import " + ", ".join(tried)
    print(json.dumps(out))
""" % (CUPY,))


def cupy_needers(root: Path, lines: list[str]) -> dict[str, str]:
    """The modules (of `lines`, as _REFUSE reads them) that cannot load with CuPy refused, or try to import it."""
    p = subprocess.run([sys.executable, "-c", _REFUSE], input="\n".join(lines), capture_output=True, text=True,
                       cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, timeout=600)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def _module(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def lazy_cupy_lines(source: str) -> list[int]:
    """Lines of `source` that import CuPy inside a function."""
    out = []
    for fn in ast.walk(ast.parse(source)):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for n in ast.walk(fn):
                names = [a.name for a in n.names] if isinstance(n, ast.Import) else \
                    [n.module or ""] if isinstance(n, ast.ImportFrom) and not n.level else []
                if any(m.split(".")[0] in CUPY for m in names):
                    out.append(n.lineno)
    return sorted(set(out))


def test_gpu_modules_import_cupy_at_their_top():
    found = {}
    for p in sorted((ROOT / "cuzk" / "gpu").rglob("*.py")):
        lines = lazy_cupy_lines(p.read_text())
        if lines:
            found[p.relative_to(ROOT).as_posix()] = lines
    late = {f: lines for f, lines in found.items() if f not in LAZY}
    assert not late, f"CuPy imported inside functions (import it at the module's top): {late}"
    gone = sorted(set(LAZY) - set(found))
    assert not gone, f"no longer import CuPy inside functions, take them off LAZY: {gone}"


def test_only_the_device_modules_need_cupy():
    """Every module of the package loads with CuPy refused but DEVICE, which do not load without it."""
    mods = sorted(_module(p, ROOT) for p in (ROOT / "cuzk").rglob("*.py") if p.name != "__main__.py")
    need = cupy_needers(ROOT, mods)
    host = {m: why for m, why in need.items() if m not in DEVICE}
    assert not host, f"need CuPy to load (a host module imports a device one, or CuPy, at its top): {host}"
    not_cupy = {m: why for m, why in need.items() if "CuPy refused" not in why}
    assert not not_cupy, f"failed to load for another reason: {not_cupy}"
    assert sorted(DEVICE - set(need)) == [], "load without CuPy, take them off DEVICE"


def test_cuzk_help_and_a_cpu_proof_without_cupy(tmp_path):
    """`cuzk --help`, and `cuzk bench` on the CPU backend, where `import cupy` raises."""
    code = _REFUSE.split("out = {}")[0] + textwrap.dedent("""
        from cuzk.cli.main import main
        try:
            main(["--help"])
        except SystemExit as e:
            assert e.code == 0, e.code
        assert main(["bench", "--backend", "cpu", "--log-size", "4"]) == 0
        assert not tried, tried
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)     # the key cache: this run's
    assert p.returncode == 0, p.stderr[-2000:]
    assert "usage: cuzk" in p.stdout


def test_the_test_modules_load_without_cupy():
    """What pytest collects on a machine without CuPy: every module under tests/ loads (a GPU test module imports
    the device modules in its tests, or skips itself with pytest.importorskip). Asking whether a GPU is usable
    (backend.gpu_status, for a skip mark) tries CuPy and is told no: that is not a failure."""
    files = sorted(p for p in (ROOT / "tests").rglob("*.py") if "data" not in p.relative_to(ROOT / "tests").parts)
    files.sort(key=lambda p: p.name != "conftest.py")                 # conftests first, as pytest loads them
    assert len(files) > 50 and not any(p.name == "__init__.py" for p in files)
    need = cupy_needers(ROOT, [str(p) for p in files])
    failed = {m: why for m, why in need.items() if not why.startswith("tried")}
    assert not failed, f"test modules that need CuPy to load: {failed}"


def test_the_checks_see_a_late_import_and_a_host_module_that_needs_cupy(tmp_path):
    src = "import numpy\n\n\ndef f():\n    import cupy\n    from cupy.cuda import runtime\n    return numpy, runtime\n"
    assert lazy_cupy_lines(src) == [5, 6]
    assert lazy_cupy_lines("import cupy as cp\n\n\ndef f():\n    return cp\n") == []
    (tmp_path / "dev.py").write_text("import cupy as cp\n")
    (tmp_path / "host.py").write_text("import dev\n")
    (tmp_path / "guarded.py").write_text("try:\n    import cupy\nexcept ImportError:\n    cupy = None\n")
    (tmp_path / "plain.py").write_text("import json\n")
    need = cupy_needers(tmp_path, [str(tmp_path / f"{m}.py") for m in ("dev", "host", "guarded", "plain")])
    assert sorted(need) == [str(tmp_path / f"{m}.py") for m in ("dev", "guarded", "host")]
    assert "CuPy refused" in need[str(tmp_path / "host.py")]
