"""Effect sizes with confidence intervals for paired timings (`cuzk ablate`).

Samples of two configurations taken in the same round are paired; d_i = ln(x_i / y_i). The effect
is the Hodges-Lehmann estimate (median of the Walsh averages (d_i + d_j) / 2, i <= j) and its
confidence interval is the one that inverts the exact Wilcoxon signed-rank test (the same test the
gate uses): the k-th smallest and k-th largest Walsh averages, k from the exact null distribution
of the signed-rank statistic. The interval excludes 0 exactly when scipy.stats.wilcoxon's exact
two-sided p-value is below 1 - confidence (no ties, no zeros). Ratios are exp() of these.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache

FASTER, SLOWER, NO_CHANGE = "faster", "slower", "no significant change"


@lru_cache(maxsize=None)
def _signed_rank_cdf(n: int) -> tuple[float, ...]:
    """P(T+ <= t) for t = 0 .. n(n+1)/2 under the null (exact, by counting sign patterns)."""
    m = n * (n + 1) // 2
    counts = [0] * (m + 1)
    counts[0] = 1
    for r in range(1, n + 1):
        for t in range(m, r - 1, -1):
            counts[t] += counts[t - r]
    total, acc, out = 2 ** n, 0, []
    for c in counts:
        acc += c
        out.append(acc / total)
    return tuple(out)


def critical_k(n: int, confidence: float) -> int:
    """The largest k with P(T+ <= k - 1) <= (1 - confidence) / 2; 0 when no interval is possible."""
    a2 = (1 - confidence) / 2
    if n <= 60:
        cdf = _signed_rank_cdf(n)
        k = 0
        while k < len(cdf) and cdf[k] <= a2 + 1e-12:
            k += 1
        return k
    from scipy.stats import norm       # normal approximation for large n
    mu, sd = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    return max(0, int(math.floor(mu + norm.ppf(a2) * sd + 0.5)))


def min_rounds(confidence: float) -> int:
    """The fewest paired samples that give an interval at this confidence (the exact signed-rank test's
    smallest two-sided p is 2 / 2^n)."""
    n = 1
    while critical_k(n, confidence) < 1:
        n += 1
    return n


def hodges_lehmann(d: list[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """(estimate, low, high) of the pseudo-median of d; low/high are -inf/inf when n is too small."""
    n = len(d)
    if n == 0:
        raise ValueError("no samples")
    walsh = sorted((d[i] + d[j]) / 2 for i in range(n) for j in range(i, n))
    m = len(walsh)
    est = (walsh[(m - 1) // 2] + walsh[m // 2]) / 2
    k = critical_k(n, confidence)
    if k < 1:
        return est, -math.inf, math.inf
    return est, walsh[k - 1], walsh[m - k]


@dataclass(frozen=True)
class Effect:
    ratio: float          # exp(HL estimate of the paired log ratios): < 1 faster, > 1 slower
    low: float            # confidence interval of the ratio
    high: float
    verdict: str
    n: int
    confidence: float

    def as_dict(self) -> dict:
        d = asdict(self)
        for k in ("low", "high"):
            if math.isinf(d[k]) or d[k] == 0.0:
                d[k] = None          # JSON has no infinity: "no interval at this sample count"
        return d

    def cell(self) -> str:
        lo = "-" if self.low == 0.0 else f"{self.low:.3f}"
        hi = "-" if math.isinf(self.high) else f"{self.high:.3f}"
        return f"x{self.ratio:.3f} [{lo}, {hi}]"


def verdict_of(low_log: float, high_log: float) -> str:
    if high_log < 0:
        return FASTER
    if low_log > 0:
        return SLOWER
    return NO_CHANGE


def effect_from_logs(d: list[float], confidence: float) -> Effect:
    est, lo, hi = hodges_lehmann(d, confidence)
    return Effect(math.exp(est), math.exp(lo) if lo > -math.inf else 0.0, math.exp(hi) if hi < math.inf else math.inf,
                  verdict_of(lo, hi), len(d), confidence)


def paired_effect(x: list[float], y: list[float], confidence: float = 0.95) -> Effect:
    """The effect of x against y (ratio x / y), samples paired by index (the same round)."""
    if len(x) != len(y) or not x:
        raise ValueError("need paired samples of equal, non-zero count")
    if min(x) <= 0 or min(y) <= 0:
        raise ValueError("timings must be positive")
    return effect_from_logs([math.log(a / b) for a, b in zip(x, y)], confidence)
