"""A commit of the project as an importable tree, apart from the installed copy.

`git archive` extracts the commit; the package-dir mapping of its pyproject.toml (for example
cuzk.kernels -> kernels/) is laid out with symlinks, so `import cuzk` from that root finds
that commit's code and nothing else. Worker processes run with the root first on sys.path.
"""
from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tomllib
from pathlib import Path


class CheckoutError(RuntimeError):
    pass


def git(repo: str | Path, *args: str, text: bool = True) -> str | bytes:
    p = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=text)
    if p.returncode != 0:
        err = p.stderr if text else p.stderr.decode(errors="replace")
        raise CheckoutError(f"git {' '.join(args)}: {err.strip().splitlines()[-1] if err.strip() else 'failed'}")
    return p.stdout


def resolve(repo: str | Path, ref: str) -> str:
    """Full SHA of a commit-ish."""
    return git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()


def materialize(repo: str | Path, sha: str, dest: str | Path) -> Path:
    """Extract commit `sha` into `dest`; returns the import root (the directory to put on sys.path)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    data = git(repo, "archive", "--format=tar", sha, text=False)
    with tarfile.open(fileobj=io.BytesIO(data)) as tf:
        tf.extractall(dest, filter="data")
    return lay_out_packages(dest)


def lay_out_packages(tree: Path) -> Path:
    """Apply [tool.setuptools.package-dir] so the tree imports the way it installs."""
    root = tree
    pp = tree / "pyproject.toml"
    mapping = {}
    if pp.exists():
        with open(pp, "rb") as f:
            mapping = tomllib.load(f).get("tool", {}).get("setuptools", {}).get("package-dir", {})
    if "" in mapping:
        root = tree / mapping.pop("")
    for pkg, rel in sorted(mapping.items()):
        target = tree / rel
        link = root / Path(*pkg.split("."))
        if link.exists() or not target.is_dir():
            continue
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(target, link.parent), link, target_is_directory=True)
    return root
