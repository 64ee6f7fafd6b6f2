"""snarkjs as the tests run it: found by cuzk.nodetools.find_tool (.ci/node, installed by `bash .ci/run`;
never npx, which answers for a package it lacks), and its verdict read from its own words."""
from __future__ import annotations

import os
import re

import pytest

from cuzk.nodetools import find_tool

IN_CI = os.environ.get("CI", "").lower() == "true"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def require(name: str) -> list[str]:
    """The command for a node tool; skipped without it, a failure under CI=true (.ci/run installs them)."""
    cmd, why = find_tool(name)
    if cmd is None:
        if IN_CI:
            pytest.fail(f"{name} is not installed ({why}); .ci/run must install it")
        pytest.skip(f"{name} is not installed ({why})")
    return cmd


def verdict(out: str) -> str | None:
    """What `snarkjs groth16 verify` said, in its own words: "OK!" or "Invalid proof" from its `snarkJS:`
    line; None for anything else (npm's "canceled" when snarkjs is not installed, a crash, a missing file)."""
    for line in _ANSI.sub("", out).splitlines():
        m = re.fullmatch(r"\[(?:INFO|ERROR)\]\s+snarkJS: (OK!|Invalid proof)", line.strip())
        if m:
            return m.group(1)
    return None
