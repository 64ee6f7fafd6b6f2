"""Base against head for one phase: per-round paired log ratios, a threshold and a significance test.

Within a round, base and head samples of a phase alternate a few milliseconds apart; the
round's value is the median of its paired log ratios d = ln(head / base). Rounds (fresh
processes, order alternating) are the independent units: the effect is exp(median of the
round values) and the p-value is the exact two-sided Wilcoxon signed-rank test of them against 0.
A phase regresses when its ratio exceeds 1 + threshold AND p < alpha; it improves when the
ratio is below 1 / (1 + threshold) and p < alpha. Anything else is no significant change.
The ratio's confidence interval is the distribution-free one for a median: two order statistics of
the round values, chosen by the binomial law so that the coverage is at least CI_LEVEL.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass

REGRESSION, IMPROVEMENT, NO_CHANGE = "regression", "improvement", "no change"
CI_LEVEL = 0.95


@dataclass(frozen=True)
class Comparison:
    area: str
    base_s: float            # median of every base sample of the rounds the ratio comes from
    head_s: float            # likewise for head
    ratio: float             # head / base: exp(median of the per-round log ratios)
    p_value: float
    threshold: float
    alpha: float
    rounds: int
    verdict: str
    ci_low: float = math.nan     # the ratio's confidence interval, coverage ci_level (exact, >= CI_LEVEL)
    ci_high: float = math.nan
    ci_level: float = math.nan

    def as_dict(self) -> dict:
        return asdict(self)


def wilcoxon_p(d: list[float]) -> float:
    from scipy.stats import wilcoxon
    nz = [x for x in d if x != 0.0]
    if not nz:
        return 1.0
    return float(wilcoxon(nz, alternative="two-sided", method="exact" if len(nz) <= 50 else "auto").pvalue)


def median_ci(d: list[float], level: float = CI_LEVEL) -> tuple[float, float, float]:
    """(low, high, coverage): [d_(k), d_(n+1-k)] with the largest k whose coverage
    1 - 2 P(Bin(n, 1/2) < k) is still >= level; [min, max] where even that falls short."""
    n, xs = len(d), sorted(d)
    tail = lambda k: sum(math.comb(n, i) for i in range(k)) / 2 ** n      # P(Bin(n, 1/2) <= k - 1)
    k = 1
    while k + 1 <= (n + 1) // 2 and 1 - 2 * tail(k + 1) >= level:
        k += 1
    return xs[k - 1], xs[n - k], 1 - 2 * tail(k)


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
    lo, hi, level = median_ci(d)
    return Comparison(area, base_s, head_s, ratio, p, threshold, alpha, len(d), verdict,
                      math.exp(lo), math.exp(hi), level)


def log_ratios(base: list[float], head: list[float]) -> list[float]:
    if len(base) != len(head) or min(base + head) <= 0:
        raise ValueError("need paired positive timings")
    return [math.log(h / b) for b, h in zip(base, head)]
