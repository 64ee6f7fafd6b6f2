"""`cuzk peer`: cuzk beside sppark at a pinned commit on identical device inputs (cuzk/perf/peer.py)."""
from __future__ import annotations

import json
from pathlib import Path

from .. import environment
from ..perf import peer
from .common import EXIT_OK, CliError, check_paths, write_all


def sizes_arg(text: str) -> list[int]:
    try:
        ks = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise CliError(f"sizes must be comma-separated integers, got {text!r}") from None
    if any(not 10 <= k <= 28 for k in ks):
        raise CliError(f"sizes must be in 10..28 (log2 of the elements), got {text!r}")
    return ks


def sources_arg(items: list[str]) -> dict[str, Path]:
    """--source NAME=DIR (after $CUZK_PEER_SOURCES): a local clone holding NAME's pinned commit (a machine
    without network)."""
    out = {}
    try:
        given = [("$CUZK_PEER_SOURCES", f"{n}={d}") for n, d in environment.peer_sources().items()]
    except ValueError as e:
        raise CliError(str(e)) from e
    for where, item in given + [("--source", i) for i in items]:     # each error names where the entry came from
        name, sep, d = item.partition("=")
        if not sep or name not in peer.SOURCES:
            raise CliError(f"{where} {item!r}: give NAME=DIR with NAME one of {', '.join(peer.SOURCES)}")
        if not Path(d).is_dir():
            raise CliError(f"{where} {item!r}: {d} is not a folder")
        out[name] = Path(d)
    return out


def cmd_peer(args) -> int:
    sizes = {"msm_g1": sizes_arg(args.msm), "ntt": sizes_arg(args.ntt)}
    if not any(sizes.values()):         # an empty table and exit 0 would read as a run that measured
        raise CliError("peer: no size to measure (--msm and --ntt are both empty)")
    if args.runs < 1:
        raise CliError("--runs must be >= 1")
    mirrors = sources_arg(args.source)
    check_paths({"--json": args.json})
    try:
        rows = peer.measure_all({k: v for k, v in sizes.items() if v}, runs=args.runs, mirrors=mirrors)
    except peer.PeerUnavailable as e:
        raise CliError(f"peer: {e}") from e
    print(peer.table(rows))
    if args.json:
        doc = {"sources": {n: {"url": u, "commit": c} for n, (u, c) in peer.SOURCES.items()},
               "rows": [r.as_dict() for r in rows]}
        write_all({args.json: json.dumps(doc, indent=2) + "\n"})
    differ = [f"{r.op} 2^{r.log_n}" for r in rows if not r.equal]
    if differ:       # measured rows stand; these were not measured, and the run says so by its exit
        raise CliError(f"peer: the peer's result differs from cuzk's on the same inputs at {', '.join(differ)}")
    return EXIT_OK
