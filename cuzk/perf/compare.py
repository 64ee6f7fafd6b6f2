"""Base against head for one phase: paired by round, judged by a threshold and a significance test.

Each round ran one base and one head process back to back (order alternating), so the
per-round log ratio d = ln(head / base) cancels drift that hits both. The effect is
exp(median d); the p-value is the exact two-sided Wilcoxon signed-rank test of d against 0.
A phase regresses when its ratio exceeds 1 + threshold AND p < alpha; it improves when the
ratio is below 1 / (1 + threshold) and p < alpha. Anything else is no significant change.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass

REGRESSION, IMPROVEMENT, NO_CHANGE = "regression", "improvement", "no change"


@dataclass(frozen=True)
class Comparison:
    area: str
    base_s: float            # median over rounds of each base process's median
    head_s: float
    ratio: float             # head / base, exp(median per-round log ratio)
    p_value: float
    threshold: float
    alpha: float
    rounds: int
    verdict: str

    def as_dict(self) -> dict:
        return asdict(self)


def wilcoxon_p(d: list[float]) -> float:
    from scipy.stats import wilcoxon
    nz = [x for x in d if x != 0.0]
    if not nz:
        return 1.0
    return float(wilcoxon(nz, alternative="two-sided", method="exact" if len(nz) <= 50 else "auto").pvalue)


def compare(area: str, base: list[float], head: list[float], threshold: float, alpha: float) -> Comparison:
    """base[i], head[i]: the per-process medians of round i."""
    if len(base) != len(head) or len(base) < 2:
        raise ValueError(f"{area}: need >= 2 paired rounds, got {len(base)} and {len(head)}")
    if min(base + head) <= 0:
        raise ValueError(f"{area}: non-positive timing")
    d = [math.log(h / b) for b, h in zip(base, head)]
    ratio = math.exp(statistics.median(d))
    p = wilcoxon_p(d)
    if p < alpha and ratio > 1 + threshold:
        verdict = REGRESSION
    elif p < alpha and ratio < 1 / (1 + threshold):
        verdict = IMPROVEMENT
    else:
        verdict = NO_CHANGE
    return Comparison(area, statistics.median(base), statistics.median(head), ratio, p, threshold, alpha,
                      len(base), verdict)
