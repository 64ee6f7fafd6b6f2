"""What a test of a real gate run does where the runner itself made the run untrusted."""
from __future__ import annotations

import pytest


def skip_where_stolen(data: dict | None) -> None:
    """Skip, saying why, where the gate called a workload untrusted because the runner's host took the sampling
    CPU (the hypervisor's steal): the gate was right and judged nothing, so what the test asks was not measured.
    Any other verdict is left to the test."""
    for oc in (data or {}).get("outcomes") or []:
        msg = oc.get("message") or ""
        if oc.get("status") == "untrusted" and "(steal)" in msg:
            pytest.skip(f"this runner's host took the sampling CPU, so the gate judged nothing: {msg}")
