"""Compile the kernel modules (kernels/<concept>/<name>.cu) with NVRTC through cupy.RawModule, once per process.

A module is named by its path under kernels/ without the suffix: "msm/g1" is kernels/msm/g1.cu (kernel_sources.py:
the sources, their builds and the cubin cache's names, on the host).

-arch comes from the device's compute capability (sm_90 on the H200). CuPy keeps the
compiled cubins in its on-disk kernel cache, so a second process loads without NVRTC.

First use is shown on a terminal (progress.FIRST_USE): each module load, and each of CuPy's own kernels
compiled on its first call (elementwise and reduction kernels behind cupy's operators), seconds apiece
when CuPy's cache is cold.
"""
from __future__ import annotations

import re
import sys
import threading
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

from ..progress import FIRST_USE
from .kernel_sources import BUILDS, BadCubin, cubin_path, cubin_problem, defines, kernel_dir

_modules: dict = {}
compiled_from_source: set = set()   # (name, extra) of the modules this process compiled with NVRTC (no prebuilt cubin)
load_times: dict[str, float] = {}


def arch() -> str:
    import cupy
    cc = cupy.cuda.Device().compute_capability
    return f"sm_{cc}"


def options(extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    return (f"-arch={arch()}", f"-I{kernel_dir()}", "--std=c++17", "-default-device", *defines(extra))


NOTICE_AFTER_S = 2.0     # a compile still running after this long is said on stderr (CuPy's cache hits are quicker)


@contextmanager
def _compile_notice(name: str, extra: tuple[str, ...], arch_name: str, say=None):
    """A line on stderr when an NVRTC compile takes long (the G2 modules take minutes on first use),
    and one when it ends; nothing for a quick one (CuPy's on-disk cache)."""
    say = say or (lambda msg: print(msg, file=sys.stderr, flush=True))
    what = f"kernels/{name}.cu" + (f" [{' '.join(extra)}]" if extra else "")
    t0 = time.perf_counter()
    said = threading.Event()

    def notice():
        said.set()
        say(f"cuzk: compiling {what} for {arch_name} with NVRTC (first use; CuPy caches it, "
            f"tools/build_cubins.py prebuilds it)...")
    timer = threading.Timer(NOTICE_AFTER_S, notice)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        if said.is_set():
            say(f"cuzk: compiled {what} in {time.perf_counter() - t0:.1f} s")


def module(name: str, extra: tuple[str, ...] = ()):
    """The RawModule for kernels/<name>.cu (built with the `extra` defines: one of BUILDS[name]): a
    prebuilt cubin for this exact source, defines and target when one is in the cubin cache
    (tools/build_cubins.py), else compiled by NVRTC on first use. A file under that name that is no whole
    cubin (cut short, a FIFO) is BadCubin, naming it."""
    extra = tuple(extra)
    if extra and extra not in BUILDS.get(name, ()):
        raise ValueError(f"{name} has no build {extra}; known: {BUILDS.get(name, ())}")
    mod = _modules.get((name, extra))
    if mod is None:
        import cupy
        watch_cupy_compiles()
        t0 = time.perf_counter()
        a = arch()
        pre = cubin_path(name, a, extra)
        what = f"kernels/{name}.cu" + (f" [{' '.join(extra)}]" if extra else "")
        if pre.exists():
            why = cubin_problem(pre)
            if why is not None:         # refused, not compiled instead: a measurement must not switch compiler
                raise BadCubin(pre, why)
            with FIRST_USE.step("module", f"loading {what} (prebuilt cubin)", f"loaded {what} (prebuilt cubin)"):
                mod = cupy.RawModule(path=str(pre))
        else:
            src = Path(kernel_dir(), f"{name}.cu").read_text()
            mod = cupy.RawModule(code=src, options=options(extra), backend="nvrtc")
            compiled_from_source.add((name, extra))
            how = f"{what} for {a} with NVRTC (CuPy caches it; tools/build_cubins.py prebuilds it)"
            with FIRST_USE.step("module", f"loading {what} for {a} (CuPy's cache, else NVRTC compiles it)",
                                f"loaded {what} from CuPy's cache", compiling=f"compiling {how}") as st:
                # on a terminal the step's line says it; in a log a long compile gets its notice
                with nullcontext() if FIRST_USE.live() else _compile_notice(name, extra, a):
                    mod.compile()
                if st.compiled:
                    st.done = f"compiled {how}"
        load_times[name if not extra else f"{name}[{' '.join(extra)}]"] = time.perf_counter() - t0
        _modules[(name, extra)] = mod
    return mod


_KERNEL_NAME = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)")
_watched: list = []


def watch_cupy_compiles() -> None:
    """Time each kernel module CuPy builds (its cache read, or an NVRTC compile on a miss) as a first-use
    step, once per process. CuPy's compiler module looks these functions up by name at each call, so
    replacing the attributes reaches every kernel kind (elementwise, reduction, RawModule):
    `_compile_module_with_cache` (the entry), and the compile behind a miss, `_compile_using_nvrtc_no_warning`
    in CuPy 14 and `compile_using_nvrtc` before it. A CuPy without them is left alone."""
    if _watched:
        return
    _watched.append(True)
    try:
        from cupy.cuda import compiler
    except ImportError:
        return
    for attr, timed in (("_compile_module_with_cache", _timed_load),
                        ("_compile_using_nvrtc_no_warning", _timed_compile), ("compile_using_nvrtc", _timed_compile)):
        real = getattr(compiler, attr, None)
        if callable(real):
            setattr(compiler, attr, timed(real))


def _kernel_name(source) -> str:
    m = _KERNEL_NAME.search(source) if isinstance(source, str) else None
    return m.group(1) if m else "a kernel"


def _timed_load(real):
    def load(source, *args, **kwargs):
        what = _kernel_name(source)
        with FIRST_USE.step("cupy_cached", f"CuPy loading {what} (its cache, else NVRTC compiles it)",
                            f"CuPy loaded {what} from its cache",
                            compiling=f"CuPy compiling {what} (first use; CuPy caches it)") as st:
            mod = real(source, *args, **kwargs)
            if st.kind == "cupy_cached" and st.compiled:      # its own step (not inside one of our modules)
                st.kind, st.done = "cupy", f"CuPy compiled {what} (CuPy caches it)"
            return mod
    load.__wrapped__ = real
    return load


def _timed_compile(real):
    def compile_nvrtc(source, *args, **kwargs):
        what = _kernel_name(source)
        with FIRST_USE.step("cupy", f"CuPy compiling {what} (first use; CuPy caches it)",
                            f"CuPy compiled {what} (CuPy caches it)"):
            return real(source, *args, **kwargs)
    compile_nvrtc.__wrapped__ = real
    return compile_nvrtc


def kernel(module_name: str, fn: str, extra: tuple[str, ...] = ()):
    return module(module_name, extra).get_function(fn)
