"""The tree speaks of the project alone: no development-session numbers in code, tests, kernels, the README or
the docs a user reads, the measurement log included. Dates and commit hashes say when; a run is named by its
tree, not by a device case id."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOT_YET: set[str] = set()


def _tracked() -> list[str]:
    p = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip("not a git checkout")
    return [f for f in p.stdout.splitlines()
            if f not in NOT_YET and not f.startswith(("tests/data/", "docs/img/"))]


def test_no_session_numbers_in_the_tree():
    pat = re.compile(r"\bsessions? \d+|\bsession-\d+", re.I)
    hits = []
    for f in _tracked():
        path = ROOT / f
        try:
            text = path.read_text()
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        hits += [f"{f}:{i}: {line.strip()[:100]}" for i, line in enumerate(text.splitlines(), 1)
                 if pat.search(line) and f != "tests/project/test_tree_words.py"]
    assert not hits, "\n".join(hits)


def test_no_tracker_issue_numbers_in_code_or_docs():
    """Code, tools and docs say what a thing does, not which tracker issue asked for it; the measurement log alone
    may quote an old entry's heading that named one, to find it in git."""
    pat = re.compile(r"\bissues? #?\d+", re.I)
    hits = []
    for f in _tracked():
        if f in ("tests/project/test_tree_words.py", "docs/perf-log.md"):
            continue
        try:
            text = (ROOT / f).read_text()
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        hits += [f"{f}:{i}: {line.strip()[:100]}" for i, line in enumerate(text.splitlines(), 1) if pat.search(line)]
    assert not hits, "\n".join(hits)


def test_no_reference_to_a_design_document_outside_the_repo():
    """The project's own design document is docs/architecture.md; nothing cites one the repo does not hold."""
    hits = []
    for f in _tracked():
        try:
            text = (ROOT / f).read_text()
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        hits += [f"{f}:{i}" for i, line in enumerate(text.splitlines(), 1)
                 if ("design §" in line or "DESIGN.md" in line) and f != "tests/project/test_tree_words.py"]
    assert not hits, hits
    assert (ROOT / "docs" / "architecture.md").is_file()


REMOVED_DEVICE_SCRIPTS = ("tools/device_next.sh", "tools/device_call", "tools/device_final", "tools/device_commit",
                          "tools/device_ablate")


def test_no_file_cites_a_removed_device_script():
    hits = []
    for f in _tracked():
        if f == "tests/project/test_tree_words.py":
            continue
        try:
            text = (ROOT / f).read_text()
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        hits += [f"{f}:{i}: {line.strip()[:100]}" for i, line in enumerate(text.splitlines(), 1)
                 if any(s in line for s in REMOVED_DEVICE_SCRIPTS)]
    assert not hits, "\n".join(hits)


# Device runs were once labelled by case ids: a letter of these families and a number (Z67, W10, T2b). The
# optimization codes (registry, docs/optimizations.md) mostly use other letters; any that shares a family is
# exempt, so the rule stays right as the registry grows.
CASE_ID_FAMILIES = "TUVWXYZ"


def _optimization_codes() -> set[str]:
    from cuzk.opts import REGISTRY
    codes = set(REGISTRY)
    codes |= set(re.findall(r"\b[A-Z]\d{1,2}\b", (ROOT / "docs" / "optimizations.md").read_text()))
    return codes


def case_ids(text: str, codes: set[str]) -> list[str]:
    pat = re.compile(rf"(?<![.\w])[{CASE_ID_FAMILIES}]\d{{1,2}}[a-z]?\b")
    return [m.group(0) for m in pat.finditer(text) if m.group(0) not in codes]


def test_case_id_rule_catches_a_case_id():
    codes = {"W2"}                                   # a registry code of a case-id family
    assert case_ids("measured in Z67 (`bash tools/x.sh T8`), as T2b and W10 did", codes) == ["Z67", "T8", "T2b", "W10"]
    assert case_ids("W2 is on; SHF.R.U64; G1 and G2; H200", codes) == []


def test_perf_log_has_no_case_ids():
    codes = _optimization_codes()
    hits = [f"docs/perf-log.md:{i}: {cid}: {line.strip()[:90]}"
            for i, line in enumerate((ROOT / "docs" / "perf-log.md").read_text().splitlines(), 1)
            for cid in case_ids(line, codes)]
    assert not hits, "\n".join(hits)

