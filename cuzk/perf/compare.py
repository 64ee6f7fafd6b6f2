"""Base against head for one phase: per-round paired log ratios, a threshold and a significance test.

Within a round, base and head samples of a phase alternate a few milliseconds apart; the
round's value is the median of its paired log ratios d = ln(head / base). Rounds (fresh
processes, order alternating) are the independent units: the effect is exp(median of the
round values) and the p-value is the exact two-sided Wilcoxon signed-rank test of them against 0.
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
    base_s: float            # median over rounds of each round's base median (for the report)
    head_s: float
    ratio: float             # head / base: exp(median of the per-round log ratios)
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


def compare(area: str, d: list[float], threshold: float, alpha: float, base_s: float = math.nan,
            head_s: float = math.nan) -> Comparison:
    """d[i]: round i's log ratio ln(head / base)."""
    if len(d) < 2:
        raise ValueError(f"{area}: need >= 2 rounds, got {len(d)}")
    ratio = math.exp(statistics.median(d))
    p = wilcoxon_p(d)
    if p < alpha and ratio > 1 + threshold:
        verdict = REGRESSION
    elif p < alpha and ratio < 1 / (1 + threshold):
        verdict = IMPROVEMENT
    else:
        verdict = NO_CHANGE
    return Comparison(area, base_s, head_s, ratio, p, threshold, alpha, len(d), verdict)


def log_ratios(base: list[float], head: list[float]) -> list[float]:
    if len(base) != len(head) or min(base + head) <= 0:
        raise ValueError("need paired positive timings")
    return [math.log(h / b) for b, h in zip(base, head)]
