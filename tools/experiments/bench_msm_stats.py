"""`cuzk bench` with each G1/G2 MSM's msm.last_stats printed (window c, affine rounds, fallbacks): one process per
call, so that a key made in-process and the same key loaded from the disk cache can be compared.
    python3 tools/experiments/bench_msm_stats.py [cuzk bench args ...]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cuzk.gpu import msm as gm  # noqa: E402

_orig = gm.msm_windows


def _wrap(group, bases, inf, scalars, *a, **k):
    out = _orig(group, bases, inf, scalars, *a, **k)
    print(f"msm G{group} n={len(inf)}: {dict(gm.last_stats)}", file=sys.stderr, flush=True)
    return out


gm.msm_windows = _wrap

from cuzk.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
