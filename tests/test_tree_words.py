"""The tree speaks of the project alone: no development-session numbers in code, tests, kernels, the README or
the docs a user reads. Dates and commit hashes say when. docs/perf-log.md (the measurement log) is the lab
material still to be reworked, so it is not checked yet."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOT_YET = {"docs/perf-log.md"}


def _tracked() -> list[str]:
    p = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip("not a git checkout")
    return [f for f in p.stdout.splitlines()
            if f not in NOT_YET and not f.startswith(("docs/perf-data/", "docs/img/"))]


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
                 if pat.search(line) and f != "tests/test_tree_words.py"]
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
                 if ("design §" in line or "DESIGN.md" in line) and f != "tests/test_tree_words.py"]
    assert not hits, hits
    assert (ROOT / "docs" / "architecture.md").is_file()
