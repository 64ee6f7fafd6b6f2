"""Where the node tools are: snarkjs (the reference prover and verifier) and circom2 (circom
compiled to wasm). `.ci/run` installs both from .ci/node/package-lock.json.

Lookup order for a tool NAME: $CUZK_<NAME> (e.g. CUZK_SNARKJS, CUZK_CIRCOM2), then
<repo>/.ci/node/node_modules/.bin/NAME, <repo>/node_modules/.bin/NAME, then NAME on PATH.
The npm launchers need `node` on PATH.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _exe(p: Path | str) -> bool:
    return os.path.isfile(p) and os.access(p, os.X_OK)


def find_tool(name: str) -> tuple[list[str] | None, str]:
    """(command, why): the command list to run `name`, or None and the reason it was not found."""
    env = f"CUZK_{name.upper().replace('-', '_')}"
    if os.environ.get(env):
        exe = shutil.which(os.environ[env]) or os.environ[env]
        if not _exe(exe):
            return None, f"${env}={os.environ[env]!r} is not an executable file"
        return [exe], f"${env}"
    if shutil.which("node") is None:
        return None, "node is not on PATH"
    for cand in (REPO / ".ci" / "node" / "node_modules" / ".bin" / name, REPO / "node_modules" / ".bin" / name):
        if _exe(cand):
            return [str(cand)], str(cand)
    exe = shutil.which(name)
    if exe:
        return [exe], exe
    return None, (f"{name} not found: looked for ${env}, {REPO}/.ci/node/node_modules/.bin/{name} "
                  f"(installed by `bash .ci/run` or `npm ci` in .ci/node), {REPO}/node_modules/.bin/{name} "
                  f"and PATH")
