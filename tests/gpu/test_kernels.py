"""Kernel sources: layout constants match the host, they ship in the wheel, and nvcc compiles them."""
import itertools
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cuzk import field as F

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels"


def _array(text, name):
    m = re.search(name + r"\[[A-Z_]+\] = \{([^}]*)\}", text)
    return sum(int(w.strip().rstrip("u"), 16) << (32 * i) for i, w in enumerate(m.group(1).split(",")))


def test_layout_constants_match_host():
    t = (KERNELS / "ff" / "layout.cuh").read_text()
    assert _array(t, "FP_MODULUS") == F.P
    assert _array(t, "FR_MODULUS") == F.R
    assert _array(t, "FP_MONT_ONE") == F.FP_MONT_R
    assert _array(t, "FR_MONT_ONE") == F.FR_MONT_R
    assert _array(t, "FP_MONT_R2") == F.FP_MONT_R ** 2 % F.P
    assert _array(t, "FR_MONT_R2") == F.FR_MONT_R ** 2 % F.R
    assert f"FP_INV32 = 0x{F.FP_INV32:08x}u" in t and f"FR_INV32 = 0x{F.FR_INV32:08x}u" in t


def test_kernels_ship_in_wheel(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                        "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {r.stderr.strip()[-200:]}")
    wheel = next(tmp_path.glob("cuzk-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for src in SOURCES + ["host/cub_sort.cu"]:
        assert f"cuzk/kernels/{src}" in names


def test_installed_package_finds_kernels():
    import cuzk.kernels
    found = {p.relative_to(cuzk.kernels.SOURCE_DIR).as_posix() for p in cuzk.kernels.sources()}
    assert {"ff/layout.cuh", "msm/g1.cu", "host/cub_sort.cu"} <= found


# Spills tolerated, with the reason. Everything else must compile with none.
SPILLS_ALLOWED = {
    "ec/ops.cu": "test kernels only (G2 formulas checked against arkworks), not on a hot path",
    "msm/g2.cu": "G2 XYZZ state over Fp2 exceeds 255 registers; 28-152 B spills, off the G1 hot path",
    "keygen/g2.cu": "G2 mixed add over Fp2 at 255 registers (the out-of-line add spills ~180 B, the loop "
                    "state saved around its calls ~140 B), as in msm_g2; small next to the additions",
    "ntt/reg.cu": "ntt_r8_dif (experimental, not the default): 16 B (4 B before N10's natural-order store) at the "
                  "128-register cap of 8 elements per thread; ntt_r8_dit and r4 spill nothing",
}


# every kernel source but host/ (the CUB shim: tests/gpu/test_cub_sort.py), as paths under kernels/
SOURCES = sorted(p.relative_to(KERNELS).as_posix() for p in KERNELS.rglob("*")
                 if p.suffix in (".cu", ".cuh") and p.relative_to(KERNELS).parts[0] != "host")


def _build_label(name: str, extra: tuple[str, ...]) -> str:
    return f"{name}.cu " + " ".join(extra)


@pytest.fixture(scope="module")
def nvcc_results(tmp_path_factory, pytestconfig):
    """Every source, and every module build (kernel_sources.BUILDS), compiled once, in parallel, remembered by
    what it compiles (tests/nvcc_checks.py): the G2 modules take over a minute each."""
    from cuzk.gpu import kernel_sources
    from nvcc_checks import Job, compile_all
    jobs = [Job(src, KERNELS / src) for src in SOURCES]
    jobs += [Job(_build_label(name, extra), KERNELS / f"{name}.cu", extra)
             for name, builds in kernel_sources.BUILDS.items() for extra in builds]
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")

    def say(line: str) -> None:           # a progress line on the terminal, past pytest's capture
        with capture.global_and_fixture_disabled():
            print(line, file=sys.stderr, flush=True)
    return compile_all(jobs, KERNELS, tmp_path_factory.mktemp("nvcc"), say=say)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("src", SOURCES)
def test_nvcc_compiles_sm90_without_spills(src, nvcc_results):
    r = nvcc_results[src]
    assert r.returncode == 0, r.stderr
    spills = re.findall(r"(\d+) bytes spill stores", r.stderr)
    if src not in SPILLS_ALLOWED:
        assert all(int(s) == 0 for s in spills), r.stderr


def test_every_subpackage_is_listed_for_install():
    """A subpackage missing from pyproject's list would vanish from a non-editable install; a listed one that
    no longer exists (a moved package) breaks `pip install` itself."""
    import tomllib
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.relative_to(ROOT).parent.parts) for p in (ROOT / "cuzk").rglob("__init__.py")
             if "__pycache__" not in p.parts}
    assert found == listed - {"cuzk.kernels"}, (found - listed, listed - found)    # kernels/ maps to cuzk.kernels


def test_cubin_key_follows_the_included_headers_only(tmp_path, monkeypatch):
    """A prebuilt cubin's name hashes its .cu, the headers it includes (transitively) and the
    defines: editing an included header renames it, adding an unrelated header does not."""
    from cuzk.gpu import kernel_sources
    (tmp_path / "a.cu").write_text('#include "x.cuh"\nint a;\n')
    (tmp_path / "x.cuh").write_text('#pragma once\n#ifdef Q\n  #include "y.cuh"\n#endif\n')
    (tmp_path / "y.cuh").write_text("int y;\n")
    monkeypatch.setattr(kernel_sources, "kernel_dir", lambda: tmp_path)
    assert [p.name for p in kernel_sources.sources("a")] == ["a.cu", "x.cuh", "y.cuh"]
    k0 = kernel_sources.source_key("a", "sm_90")
    (tmp_path / "z.cuh").write_text("int z;\n")                   # included by nothing
    assert kernel_sources.source_key("a", "sm_90") == k0
    (tmp_path / "y.cuh").write_text("int y2;\n")                  # included through x.cuh
    k1 = kernel_sources.source_key("a", "sm_90")
    assert k1 != k0 and kernel_sources.source_key("a", "sm_80") != k1
    assert kernel_sources.source_key("a", "sm_90", ("Q=1",)) != k1
    assert kernel_sources.defines(("Q=1",)) == ("-DQ=1",)


def test_cubin_key_follows_a_header_found_beside_its_includer(tmp_path, monkeypatch):
    """The preprocessor looks for a quoted include in the including file's folder before -I kernels/: a header a
    head adds there (ff/ff/mul.cuh beside ff/field.cuh) is compiled, so it renames the cubin, as its own edits do;
    the tree's own names stay as they were."""
    from cuzk.gpu import kernel_sources
    (tmp_path / "ff").mkdir()
    (tmp_path / "g1.cu").write_text('#include "ff/field.cuh"\nint g;\n')
    (tmp_path / "ff" / "field.cuh").write_text('#pragma once\n#include "ff/mul.cuh"\n')
    (tmp_path / "ff" / "mul.cuh").write_text("int mul;\n")
    monkeypatch.setattr(kernel_sources, "kernel_dir", lambda: tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in kernel_sources.sources("g1")] == \
        ["g1.cu", "ff/field.cuh", "ff/mul.cuh"]
    k0 = kernel_sources.source_key("g1", "sm_90")
    (tmp_path / "ff" / "ff").mkdir()
    (tmp_path / "ff" / "ff" / "mul.cuh").write_text("int slower_mul;\n")
    assert "ff/ff/mul.cuh" in [p.relative_to(tmp_path).as_posix() for p in kernel_sources.sources("g1")]
    assert kernel_sources.source_key("g1", "sm_90") != k0


def test_module_builds_have_their_own_key():
    """A module build (kernel_sources.BUILDS, selected by a registry toggle) has its own cubin name and its defines
    alone, and a build that is not listed is refused."""
    from cuzk.gpu import kernel_sources, loader, ntt_plan
    assert ntt_plan.R4B6_BUILD in kernel_sources.BUILDS["ntt/reg"]
    base = kernel_sources.cubin_path("ntt/reg", "sm_90")
    b6 = kernel_sources.cubin_path("ntt/reg", "sm_90", ntt_plan.R4B6_BUILD)
    assert base != b6 and b6.name.startswith("ntt_reg-sm_90-")
    assert kernel_sources.defines(ntt_plan.R4B6_BUILD) == ("-DCUZK_FASTMUL_VARIANT_FR=6",)
    assert kernel_sources.defines() == ()
    with pytest.raises(ValueError, match="no build"):
        loader.module("ntt/reg", ("CUZK_FASTMUL_VARIANT_FR=3",))


def test_msm_kernel_builds_are_listed():
    """Every build the MSM kernel toggles select (S1: the dedicated squaring, G1 only; I1: the products called; I2
    with I1: the callee on build 3) is a listed module build with a cubin name of its own; the default build is ()."""
    from cuzk.gpu import kernel_sources
    from cuzk.gpu.msm import options
    from cuzk.plans import MSM_KERNELS, msm_kernels_of as K
    seen = set()
    for group in (1, 2):
        for r in range(len(MSM_KERNELS) + 1):
            for ko in itertools.combinations(MSM_KERNELS, r):
                b = options.kernel_build(group, K(ko))
                assert b == () or b in kernel_sources.BUILDS[f"msm/g{group}"], (group, ko, b)
                seen.add((group, b))
    assert options.kernel_build(2, K({"S1"})) == ()          # G2 squares in Fp2 by products
    assert options.kernel_build(1, K({"L1"})) == ()          # L1 is a kernel name, not a build
    assert options.kernel_build(1, K({"I2"})) == ()          # I2 picks I1's callee: nothing without I1
    assert seen == {(g, ()) for g in (1, 2)} | {(g, b) for g in (1, 2) for b in kernel_sources.BUILDS[f"msm/g{g}"]}
    names = {kernel_sources.cubin_path("msm/g1", "sm_90", b) for b in ((), *kernel_sources.BUILDS["msm/g1"])}
    assert len(names) == 6
    assert kernel_sources.defines(options.kernel_build(1, K({"S1", "I1"}))) == ("-DCUZK_FASTSQR=1", "-DCUZK_FP_CALL=1")
    assert kernel_sources.defines(options.kernel_build(2, K({"S1", "I1", "I2"}))) == \
        ("-DCUZK_FP_CALL=1", "-DCUZK_FASTMUL_VARIANT_FP=3")


# Spill bytes tolerated per module build (kernel_sources.BUILDS): (functions whose name contains this, or one of
# these, bytes each, the reason). Every other kernel of a build must spill nothing.
BUILD_SPILLS_ALLOWED = {
    ("ntt/ntt", ("CUZK_FASTMUL_VARIANT_FR=6",)):
        ("ntt_pass", 48, "N3 runs only the pointwise kernels of this build (64-69 registers, no spills); r2's "
                         "pass, never launched from it, spills 40 B at its 64-register cap (512 threads, 2 blocks)"),
    ("ntt/reg", ("CUZK_FASTMUL_VARIANT_FR=6",)):
        ("_r", 96, "N2 (default off): r4 32-76 B at its 80-register cap (3 blocks a SM), measured faster "
                   "anyway (2^27 dif/dit 52.7/51.1 ms against 55.1/54.6, docs/perf-log.md, 2026-11-29); "
                   "r8 (not used by N2) 24-60 B at 128"),
    ("ntt/reg", ("CUZK_FASTMUL_VARIANT_FR=6", "CUZK_NTT_DIF2=1")):
        ("_r", 96, "N4 with N2: N2's bounds (r4's DIF 32 B, as without N4; r8 48 B, not used)"),
    ("ntt/reg", ("CUZK_FASTMUL_VARIANT_FR=6", "CUZK_NTT_DIF2=1", "CUZK_NTT_LAZY_SUB=1")):
        ("_r", 96, "N11 with N4: N4's bounds (r4's DIF 28 B, DIT 76 B)"),
    ("msm/g2", ("CUZK_FP_CALL=1",)):
        (("g2_", "_ZN4cuzk"), 128, "I1's G2 build: 4-128 B in the G2 kernels and their callees (xyzz_add_mem, "
                                   "xyzz_dbl_mem, the called product); the default msm_g2 build, not listed, spills "
                                   "more. Measured x0.52 faster anyway (2^22 G2 MSM, docs/perf-log.md, 2026-11-30)"),
    ("msm/g1", ("CUZK_FP_CALL=1", "CUZK_FASTMUL_VARIANT_FP=3")):
        ("_ZN4cuzk12xyzz_", 32, "I1 and I2 without S1 (not the default set): 4-32 B in xyzz_add_mem / xyzz_dbl_mem; "
                                "the default set (S1, I1, I2) spills nothing"),
    ("msm/g2", ("CUZK_FP_CALL=1", "CUZK_FASTMUL_VARIANT_FP=3")):
        (("g2_", "_ZN4cuzk"), 128, "I2's G2 build: 8-120 B in the G2 kernels and their callees, within I1's G2 bound"),
}

# N12's and N17's off states: the N2, N4 and N11 builds with one more define, within the same bounds
BUILD_SPILLS_ALLOWED |= {
    ("ntt/reg", build + (off,)): ("_r", 96, f"{name} with {toggle} off: {name}'s bounds")
    for build, name in ((("CUZK_FASTMUL_VARIANT_FR=6",), "N2"),
                        (("CUZK_FASTMUL_VARIANT_FR=6", "CUZK_NTT_DIF2=1"), "N4"),
                        (("CUZK_FASTMUL_VARIANT_FR=6", "CUZK_NTT_DIF2=1", "CUZK_NTT_LAZY_SUB=1"), "N11"))
    for off, toggle in (("CUZK_NTT_SM128=0", "N12"), ("CUZK_NTT_SWZ4_LUT=0", "N17"))}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_module_builds_compile_within_their_spill_bounds(nvcc_results):
    """Every kernel_sources.BUILDS entry compiles for sm_90, and spills at most what BUILD_SPILLS_ALLOWED says
    (nothing when unlisted)."""
    from cuzk.gpu import kernel_sources
    for name, builds in kernel_sources.BUILDS.items():
        for extra in builds:
            r = nvcc_results[_build_label(name, extra)]
            assert r.returncode == 0, r.stderr
            props = re.findall(r"Function properties for (\S+)\s+\d+ bytes stack frame, (\d+) bytes spill stores",
                               r.stderr)
            assert len(props) == len(re.findall(r"bytes spill stores", r.stderr)) > 0, r.stderr
            which, cap, _ = BUILD_SPILLS_ALLOWED.get((name, extra), ((), 0, ""))
            which = (which,) if isinstance(which, str) else which
            assert all(int(v) <= (cap if any(w in fn for w in which) else 0) for fn, v in props), r.stderr


def test_nvcc_check_cache_keys_follow_what_is_compiled(tmp_path):
    """A cached result is reused only for the same bytes: editing an included header, a define or the
    source gives a new key; an unrelated header does not."""
    from nvcc_checks import Job, key
    (tmp_path / "a.cu").write_text('#include "x.cuh"\nint a;\n')
    (tmp_path / "x.cuh").write_text('#pragma once\n#ifdef Q\n  #include "y.cuh"\n#endif\n')
    (tmp_path / "y.cuh").write_text("int y;\n")
    job = Job("a.cu", tmp_path / "a.cu")
    k0 = key(job, tmp_path)
    (tmp_path / "z.cuh").write_text("int z;\n")
    assert key(job, tmp_path) == k0
    (tmp_path / "y.cuh").write_text("int y2;\n")
    k1 = key(job, tmp_path)
    assert k1 != k0
    assert key(Job("a.cu Q=1", tmp_path / "a.cu", ("Q=1",)), tmp_path) != k1


def test_nvcc_check_cache_keeps_clean_compiles_only(tmp_path, monkeypatch):
    """A failed compile is compiled again next time (never cached); a clean one is read back, marked cached."""
    import nvcc_checks
    from nvcc_checks import Job, Result, compile_all
    monkeypatch.setenv("CUZK_NVCC_CHECK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(nvcc_checks, "nvcc_version", lambda: "nvcc test")
    (tmp_path / "good.cu").write_text("int g;\n")
    (tmp_path / "bad.cu").write_text("int b\n")
    calls = []

    def fake(job, include_dir, tmp):
        calls.append(job.label)
        return Result(0 if job.label == "good.cu" else 1, f"{job.label} stderr")
    monkeypatch.setattr(nvcc_checks, "_compile", fake)
    jobs = [Job("good.cu", tmp_path / "good.cu"), Job("bad.cu", tmp_path / "bad.cu")]
    lines = []
    first = compile_all(jobs, tmp_path, tmp_path, workers=1, say=lines.append)
    assert sorted(calls) == ["bad.cu", "good.cu"] and first["bad.cu"].returncode == 1
    assert any("FAILED" in line for line in lines)
    calls.clear()
    again = compile_all(jobs, tmp_path, tmp_path, workers=1, say=lines.append)
    assert calls == ["bad.cu"] and again["good.cu"].cached and again["good.cu"].stderr == "good.cu stderr"


def test_a_long_kernel_compile_is_said(monkeypatch):
    """An NVRTC compile still running after NOTICE_AFTER_S gets a line, and its end another; a quick one
    (CuPy's cache) says nothing."""
    import time
    from cuzk.gpu import loader
    monkeypatch.setattr(loader, "NOTICE_AFTER_S", 0.05)
    lines = []
    with loader._compile_notice("msm/g2", ("CUZK_FP_CALL=1",), "sm_90", say=lines.append):
        time.sleep(0.3)
    assert lines[0].startswith("cuzk: compiling kernels/msm/g2.cu [CUZK_FP_CALL=1] for sm_90 with NVRTC")
    assert lines[1].startswith("cuzk: compiled kernels/msm/g2.cu [CUZK_FP_CALL=1] in ") and len(lines) == 2
    lines.clear()
    with loader._compile_notice("ntt/ntt", (), "sm_90", say=lines.append):
        pass
    time.sleep(0.1)
    assert lines == []


def test_the_compile_checks_remember_across_sessions_not_in_the_session_key_cache():
    """The session's key cache (conftest) is a temp directory; the nvcc checks' results outlive it."""
    from nvcc_checks import cache_dir
    assert not cache_dir().resolve().is_relative_to(Path(os.environ["CUZK_CACHE_DIR"]).resolve())
