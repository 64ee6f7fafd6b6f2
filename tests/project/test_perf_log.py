"""docs/perf-log.md: every figure the README's GPU table cites has its table there, and every full entry it
names resolves in the git commit where the earlier entries are kept."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOG = (ROOT / "docs" / "perf-log.md").read_text()


def _readme_rows() -> list[list[str]]:
    text = (ROOT / "README.md").read_text()
    table = text.split("Current figures, one H200", 1)[1].split("\n\n", 2)[1]
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:] if line.startswith("|")]


def test_each_readme_figure_has_its_dated_table_with_a_command():
    figures = LOG.split("## Figures the README cites", 1)[1].split("\n## Entries", 1)[0]
    rows = _readme_rows()
    assert len(rows) >= 8
    for figure, value, when, _command in rows:
        date = when.split(",")[0].strip()
        tables = [t for t in figures.split("\n### ")[1:] if f"| {date} |" in t]
        assert tables, f"README figure {figure!r} ({date}): no table of that date in docs/perf-log.md"
        assert all("`" in t for t in tables), f"README figure {figure!r}: its table names no command"


def test_the_archived_entries_resolve():
    archive = re.search(r"git show ([0-9a-f]{7,40}):docs/perf-log\.md", LOG).group(1)
    p = subprocess.run(["git", "-C", str(ROOT), "show", f"{archive}:docs/perf-log.md"], capture_output=True, text=True)
    if p.returncode:
        pytest.skip(f"commit {archive} is not in this clone (a shallow clone): {p.stderr.strip()[:100]}")
    headings = set(re.findall(r"^## (.+)$", p.stdout, re.M))
    cited = re.findall(r'"## ([^"]+)"', LOG)
    assert cited and all(h in headings for h in cited), [h for h in cited if h not in headings]
    files = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", archive, "docs/perf-data"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert len(files) > 30


def test_raw_dumps_are_not_tracked_in_the_package():
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "docs/perf-data"], capture_output=True, text=True,
                             check=True).stdout.split()
    lines = sum(len((ROOT / f).read_text().splitlines()) for f in tracked if (ROOT / f).is_file())
    assert lines <= 2000, f"docs/perf-data tracks {lines} lines"
