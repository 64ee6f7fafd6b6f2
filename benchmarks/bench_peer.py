"""The gap to the peer, tracked across commits: cuzk's time over sppark's (at its pinned commit, fetched and built
when this runs; cuzk/perf/peer.py) for the G1 MSM and the NTT, on the same device inputs with the results checked
equal; below 1 cuzk is faster. One measurement of every point a run (asv setup_cache). A machine without a GPU,
nvcc or the peer's sources (network, or $CUZK_PEER_SOURCES) skips with the reason; a GPU that cannot run (or
CUZK_REQUIRE_GPU set) fails, as every cuda benchmark does; a peer that disagrees with cuzk fails that point."""

from cuzk.perf.suite import PEER_POINTS as POINTS


class PeerGap:
    params = POINTS
    param_names = ["op_size"]
    timeout = 3600

    def setup_cache(self):
        from pathlib import Path

        from cuzk import environment
        from cuzk.perf import full_scale, peer
        miss = full_scale._gpu_check()      # a GPU that cannot run, or CUZK_REQUIRE_GPU: a failure, never a skip
        if miss is not None:
            return miss
        sizes: dict = {}
        for p in POINTS:
            op, k = p.split(":")
            sizes.setdefault(op, []).append(int(k))
        try:
            mirrors = {n: Path(d) for n, d in environment.peer_sources().items()}
            rows = peer.measure_all(sizes, runs=5, mirrors=mirrors)
        except peer.PeerUnavailable as e:
            return {"unavailable": str(e)}
        return {f"{r.op}:{r.log_n}": r.ratio for r in rows}      # None: the results differed

    def setup(self, cache, op_size):
        if "unavailable" in cache:
            raise NotImplementedError(cache["unavailable"])      # asv skips, with the reason

    def track_ratio(self, cache, op_size):
        if cache[op_size] is None:
            raise RuntimeError(f"{op_size}: the peer's result differs from cuzk's: no ratio")   # a failed point
        return cache[op_size]
    track_ratio.unit = "cuzk / sppark"
