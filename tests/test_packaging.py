"""pyproject's explicit package list matches the tree: a stale entry breaks `pip install`, a missing one
ships a wheel without that package."""
from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _listed() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])


def test_every_package_directory_is_listed_and_every_listed_one_exists():
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "cuzk").rglob("__init__.py")
             if "__pycache__" not in p.parts}
    listed = _listed() - {"cuzk.kernels"}                 # kernels/ is mapped in as cuzk.kernels (package-dir)
    assert found == listed, f"not listed: {sorted(found - listed)}; listed but absent: {sorted(listed - found)}"
    assert (ROOT / "kernels" / "__init__.py").is_file()
