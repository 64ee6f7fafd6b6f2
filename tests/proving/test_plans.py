"""The typed plans (cuzk/plans.py): the one map from registry toggles to the fields the prover reads."""
from __future__ import annotations

import ast
from dataclasses import fields, is_dataclass, replace
from pathlib import Path

import pytest

from cuzk import plans
from cuzk.opts import REGISTRY, resolve

ROOT = Path(__file__).resolve().parents[2]
PLANS = {"msm": plans.msm, "h": plans.h, "cuda": plans.cuda, "synthesis": plans.synthesis, "handoff": plans.handoff}


def _flat(obj, prefix=""):
    out = {}
    for f in fields(obj):
        v = getattr(obj, f.name)
        out.update(_flat(v, f"{prefix}{f.name}.") if is_dataclass(v) else {f"{prefix}{f.name}": v})
    return out


def test_the_plans_defaults_are_the_registrys():
    """A plan made with no options (what gpu/ calls without a plan run) is what `default` ships."""
    d = resolve()
    assert plans.cuda(d) == plans.CudaPlan() and plans.synthesis(d) == plans.SynthesisPlan()
    assert plans.handoff(d) == plans.HandoffPlan()
    assert plans.msm(d) == plans.MsmPlan() and plans.h(d) == plans.HPlan()
    from cuzk.gpu.msm import options
    assert options.DEFAULT_PAIR_LEVELS is REGISTRY["R1"].default
    assert options.DEFAULT_PAIR_MERGES is REGISTRY["R2"].default


@pytest.mark.parametrize("code", sorted(REGISTRY))
def test_each_toggle_sets_exactly_its_own_field(code):
    """Measured alone: flipping one toggle from `default` changes one field of one plan, the one codes_read
    names, and no two toggles share a field."""
    where = plans.codes_read()[code]
    part = where.split(".", 1)[0]
    make = PLANS["cuda"] if part in ("msm", "h", "cuda") else PLANS[part]
    base = _flat(make(resolve()))
    flipped = _flat(make(resolve(f"{'-' if REGISTRY[code].default else '+'}{code}")))
    changed = [k for k in base if base[k] != flipped[k]]
    want = where if part in ("msm", "h") else where.split(".", 1)[1]
    assert changed == [want], (code, changed)


def test_every_toggle_has_one_field():
    read = plans.codes_read()
    assert set(read) == set(REGISTRY)
    assert len(set(read.values())) == len(read)


def test_msm_kernels_by_code_for_tests_and_tools():
    k = plans.msm_kernels_of({"K4", "S1"})
    assert k.plans_by_entry and k.squaring_build and not k.reduce_by_groups
    assert plans.msm_kernels_of(plans.MSM_KERNELS) == plans.MsmKernels()
    assert plans.msm_kernels_of(()) == plans.MsmKernels.none()
    with pytest.raises(ValueError, match="not MSM kernel toggles"):
        plans.msm_kernels_of({"N1"})


def test_the_ntt_variant_names_the_kernels_the_fields_choose():
    n = plans.NttPlan()
    assert n.variant == "r4b6dts+oz"
    assert replace(n, register_radix=False).variant == "r2"
    assert replace(n, build6_product=False).variant == "r4+o"
    assert replace(n, wide_exchanges=False).variant == "r4b6dtsw+oz"
    assert replace(n, swz4_whole=False).variant == "r4b6dtsb+oz"
    assert replace(n, dif_two_ops=False, odd_short_top=False, lazy_stage0=False).variant == "r4b6"


def test_a_multi_msm_plan_reads_its_own_fields():
    m = replace(plans.MsmPlan(), affine_g1=False, pair_levels=False)
    assert m.bucket_sum(1) == "xyzz" and plans.MsmPlan().bucket_sum(1) == "affine"
    assert plans.MsmPlan().bucket_sum(2) == "xyzz"
    assert m.kw(1) == {"pair_levels": False, "pair_merges": True, "kernels": plans.MsmKernels(), "bucket_sum": "xyzz"}
    assert "bucket_sum" not in m.kw(2)


# --- no code below the map spells a toggle code ---

ALLOWED = {"cuzk/opts.py", "cuzk/plans.py"}          # the registry and the map
MEASURING = ("cuzk/perf/", "cuzk/cli/")               # the tools name toggles to their users


def _spelled(path: Path, root: Path = ROOT) -> list[str]:
    codes = set(REGISTRY)
    return [f"{path.relative_to(root)}:{n.lineno}: {n.value!r}" for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in codes]


def test_no_prover_code_spells_a_toggle_code():
    bad = []
    for p in sorted((ROOT / "cuzk").rglob("*.py")):
        rel = str(p.relative_to(ROOT))
        if rel in ALLOWED or rel.startswith(MEASURING):
            continue
        bad += _spelled(p)
    assert not bad, bad


def test_the_scan_finds_a_spelled_code(tmp_path):
    """The MSM driver as it read before its plan: a kernel toggle tested by code."""
    p = tmp_path / "pippenger.py"
    p.write_text((ROOT / "cuzk" / "gpu" / "msm" / "pippenger.py").read_text() + '\nplan_by_entry = "K4" in ()\n')
    assert _spelled(p, tmp_path) == [f"pippenger.py:{len(p.read_text().splitlines())}: 'K4'"]
