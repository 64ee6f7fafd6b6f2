"""First use of the GPU path, on the CPU: a fake CuPy under the real loader (cuzk/gpu/loader.py) makes the
CPU backend's batch addition load a kernel module (its NVRTC compile a cache miss) and compile one of
CuPy's own kernels. The first bench shows each step on the terminal and ends with the `--warmup 1` hint; a
second bench in the same process (steady state), or one with --warmup 1, prints neither; off a terminal the
steps are quiet."""
from __future__ import annotations

import io
import os
import json
import re
import struct
import sys
import time
import types
from collections import Counter

import pytest

from cuzk import progress
from cuzk.cli import main
from cuzk.gpu import loader

COMPILE_S = 0.12                    # each fake NVRTC compile: above SHOW_S (lowered below), well below a second
ELEMENTWISE = 'extern "C" __global__ void cupy_flatnonzero_int8(const signed char* x, long long* y) {}'
CACHED = 'extern "C" __global__ void cupy_copy__int64_int64(const long long* x, long long* y) {}'


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class FakeRawModule:
    def __init__(self, code=None, path=None, options=(), backend="nvrtc"):
        self.code, self.path = code, path

    def compile(self):
        sys.modules["cupy.cuda.compiler"]._compile_module_with_cache(self.code)

    def get_function(self, name):
        return lambda *args, **kwargs: None


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    """A fake cupy (RawModule, and cupy.cuda.compiler laid out as CuPy 14's: the cache entry reads CACHED
    sources quickly and compiles the others through the no-warning compile, COMPILE_S each; every call by
    name) and a fresh loader; the CPU backend's batch addition loads kernels/msm/prep.cu, then CuPy builds one
    elementwise kernel (compiled) and one from its cache, on first call. Yields the terminal that FIRST_USE
    writes to."""
    compiler = types.ModuleType("cupy.cuda.compiler")
    compiler._compile_using_nvrtc_no_warning = lambda source, *a, **k: time.sleep(COMPILE_S)
    compiler.compile_using_nvrtc = lambda source, *a, **k: compiler._compile_using_nvrtc_no_warning(source, *a, **k)
    compiler._compile_module_with_cache = lambda source, *a, **k: (
        time.sleep(0.001) if source == CACHED else compiler._compile_using_nvrtc_no_warning(source, *a, **k))
    cuda = types.ModuleType("cupy.cuda")
    cuda.compiler = compiler
    cupy = types.ModuleType("cupy")
    cupy.cuda, cupy.RawModule = cuda, FakeRawModule
    for name, mod in (("cupy", cupy), ("cupy.cuda", cuda), ("cupy.cuda.compiler", compiler)):
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr(loader, "_modules", {})
    monkeypatch.setattr(loader, "_watched", [])
    monkeypatch.setattr(loader, "load_times", {})
    monkeypatch.setattr(loader, "compiled_from_source", set())
    monkeypatch.setattr(loader, "arch", lambda: "sm_90")
    monkeypatch.setenv("CUZK_CUBIN_DIR", str(tmp_path / "no-cubins"))
    monkeypatch.delenv("CUZK_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "SHOW_S", COMPILE_S / 2)
    term = Terminal()
    monkeypatch.setattr(progress.FIRST_USE, "stream", term)
    monkeypatch.setattr(progress.FIRST_USE, "counts", Counter())
    monkeypatch.setattr(progress.FIRST_USE, "seconds", 0.0)

    from cuzk.backend.cpu import batch_addition
    real, seen = batch_addition.run, set()

    def run(*args, **kwargs):
        loader.kernel("msm/prep", "classify_scalars")
        if not seen:                             # CuPy builds an operator's kernel on its first call
            seen.add("ops")
            for src in (ELEMENTWISE, CACHED):
                sys.modules["cupy.cuda.compiler"]._compile_module_with_cache(src)
        return real(*args, **kwargs)
    monkeypatch.setattr(batch_addition, "run", run)
    return term


def _bench(*extra) -> int:
    return main(["bench", "--backend", "cpu", "--circuit", "mulchain", "--log-size", "6", *map(str, extra)])


def test_first_proof_shows_its_loads_and_hints_warmup_then_steady_state_is_silent(fake_gpu, capsys, tmp_path):
    assert _bench("--json", tmp_path / "first.json") == 0
    shown, err = fake_gpu.getvalue(), capsys.readouterr().err
    assert "\rcuzk: first use: loading kernels/msm/prep.cu for sm_90" in shown        # while it runs
    assert "\rcuzk: first use: compiling kernels/msm/prep.cu for sm_90 with NVRTC" in shown  # the cache missed
    assert "cuzk: first use: compiled kernels/msm/prep.cu for sm_90 with NVRTC" in shown    # and when done
    assert re.search(r"cuzk: first use \(step 2, 0\.\d s so far\): CuPy loading cupy_flatnonzero_int8", shown)
    assert re.search(r"cuzk: first use \(step 2, 0\.\d s so far\): CuPy compiling cupy_flatnonzero_int8", shown)
    assert "cuzk: first use: CuPy compiled cupy_flatnonzero_int8 (CuPy caches it) (" in shown
    assert "CuPy loading cupy_copy__int64_int64" in shown and "CuPy loaded cupy_copy" not in shown   # quick
    assert shown.endswith("\n") or shown.endswith("\r\x1b[K")      # no half line left before the table
    hint = [ln for ln in err.splitlines() if "--warmup 1" in ln]
    loaded = "1 kernel module loaded, 1 CuPy kernel compiled, 1 CuPy kernel read from its cache"
    assert len(hint) == 1 and loaded in hint[0], err
    assert "first use" not in err.replace(hint[0], "")              # the steps went to the terminal only
    json.loads((tmp_path / "first.json").read_text())             # the report stays JSON

    fake_gpu.seek(0)
    fake_gpu.truncate()
    assert _bench() == 0                                           # same process: loaded, compiled
    assert fake_gpu.getvalue() == "" and "--warmup" not in capsys.readouterr().err


def test_warmup_takes_the_first_use_and_no_hint_follows(fake_gpu, capsys):
    assert _bench("--warmup", "1") == 0
    assert "compiled kernels/msm/prep.cu" in fake_gpu.getvalue()   # shown during the warm-up proof
    assert "--warmup" not in capsys.readouterr().err


def test_off_a_terminal_the_steps_are_quiet_but_the_hint_is_said(fake_gpu, monkeypatch, capsys):
    off = io.StringIO()                                            # a log file or a pipe
    monkeypatch.setattr(progress.FIRST_USE, "stream", off)
    assert _bench() == 0
    assert off.getvalue() == ""
    err = capsys.readouterr().err
    assert "first use" not in err.split("cuzk bench:")[0] and "`--warmup 1`" in err


def test_progress_setting(monkeypatch):
    monkeypatch.delenv("CUZK_PROGRESS", raising=False)
    assert progress.shown(Terminal()) and not progress.shown(io.StringIO())
    monkeypatch.setenv("CUZK_PROGRESS", "0")
    assert not progress.shown(Terminal())
    monkeypatch.setenv("CUZK_PROGRESS", "1")
    assert progress.shown(io.StringIO())


def test_a_quick_step_leaves_nothing_and_a_nested_compile_marks_its_module(monkeypatch):
    term = Terminal()
    fu = progress.FirstUse(term)
    with fu.step("module", "loading m", "loaded m") as st:
        with fu.step("cupy", "compiling k", "compiled k"):
            pass
    assert st.compiled and fu.counts == {"module": 1}
    assert term.getvalue() == "\rcuzk: first use: loading m...\x1b[K\r\x1b[K"


@pytest.mark.parametrize("damage", ["cut short", "FIFO", "a folder"])
def test_a_prebuilt_cubin_that_is_no_whole_image_is_refused_naming_it(fake_gpu, capsys, tmp_path, damage):
    """Never handed to the driver (a FIFO blocks its open; a short image fails in a launch, naming no file), nor
    compiled instead (a measurement must not switch compiler): one line, exit 2."""
    from cuzk.gpu.kernel_sources import cubin_path
    pre = cubin_path("msm/prep", "sm_90")
    pre.parent.mkdir(parents=True)
    if damage == "cut short":
        head = struct.pack("<4s3B9xHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 2, 190, 1, 0, 0, 4096, 0, 64, 0, 0, 64, 20, 1)
        pre.write_bytes(head + bytes(1000))             # its section table (at 4096) was cut off
    elif damage == "FIFO":
        os.mkfifo(pre)
    else:
        pre.mkdir()
    assert _bench() == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("cuzk:") and "no GPU" not in ln]
    assert len(err) == 1 and err[0].startswith("cuzk: error: ") and str(pre) in err[0], err
    assert "prebuilt cubin" in err[0] and "compiled" not in fake_gpu.getvalue()


def test_the_loader_records_what_it_compiled_from_source_and_not_what_it_loaded_prebuilt(fake_gpu, monkeypatch):
    """The gate's workers report this record (perf/worker.compiled_here): a module compiled with NVRTC on one side
    only is not like with like."""
    from cuzk.gpu import kernel_sources
    loader.module("msm/prep")
    assert loader.compiled_from_source == {("msm/prep", ())}
    pre = kernel_sources.cubin_path("ntt/ntt", "sm_90")
    pre.parent.mkdir(parents=True, exist_ok=True)
    pre.write_bytes(b"an image")
    monkeypatch.setattr(loader, "cubin_problem", lambda path: None)
    assert loader.module("ntt/ntt").path == str(pre)
    assert loader.compiled_from_source == {("msm/prep", ())}
