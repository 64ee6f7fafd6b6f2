"""Effect sizes with confidence intervals for paired timings (`cuzk ablate`), and their correction
for the many tests of one run.

Samples of two configurations taken in the same round are paired; d_i = ln(x_i / y_i). The effect
is the Hodges-Lehmann estimate (median of the Walsh averages (d_i + d_j) / 2, i <= j) and its
confidence interval is the one that inverts the exact Wilcoxon signed-rank test (the same test the
gate uses): the k-th smallest and k-th largest Walsh averages, k from the exact null distribution
of the signed-rank statistic. The p-value comes from the same distribution, so the interval at
level 1 - a excludes 0 exactly when p <= a. Ratios are exp() of these.

One run makes hundreds of such tests (a configuration against baseline in every phase, each toggle
left out of all, interactions). Each verdict is judged after the Benjamini-Hochberg correction over
all of them (false discovery rate 1 - confidence): "faster" or "slower" only where the corrected
test says so; "no effect" where the interval holds 1; "not significant after correction" where the
interval alone excludes 1. The exact test's smallest p-value is 2 / 2^n, so a run of few rounds and
many tests can flag nothing (rounds_needed says how many it takes).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from functools import lru_cache

FASTER, SLOWER = "faster", "slower"
NO_EFFECT = "no effect"                                      # the interval holds 1
NOT_AFTER_CORRECTION = "not significant after correction"    # the interval excludes 1, the corrected test does not
SIGNIFICANT = (FASTER, SLOWER)
_TOL = 1e-12          # p-values and quantiles compared with this slack on both sides, so they agree


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


def _cdf(n: int, t: int) -> float:
    """P(T+ <= t): exact up to n = 60, else the normal approximation with continuity correction."""
    if t < 0:
        return 0.0
    if n <= 60:
        cdf = _signed_rank_cdf(n)
        return cdf[min(t, len(cdf) - 1)]
    from scipy.stats import norm
    mu, sd = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    return float(norm.cdf((t + 0.5 - mu) / sd))


def critical_k(n: int, confidence: float) -> int:
    """The largest k with P(T+ <= k - 1) <= (1 - confidence) / 2; 0 when no interval is possible."""
    a2 = (1 - confidence) / 2
    if n <= 60:
        cdf = _signed_rank_cdf(n)
        k = 0
        while k < len(cdf) and cdf[k] <= a2 + _TOL:
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


def smallest_p(n: int) -> float:
    """The smallest two-sided p-value the exact test gives with n pairs (every sign alike): 2 / 2^n."""
    return min(1.0, 2 * _cdf(n, 0))


def rounds_needed(tests: int, confidence: float) -> int:
    """The fewest rounds with which one effect, alone among `tests` tests, can pass the Benjamini-Hochberg
    correction at false discovery rate 1 - confidence (its p-value must reach (1 - confidence) / tests)."""
    alpha = (1 - confidence) / max(1, tests)
    n = 1
    while smallest_p(n) > alpha + _TOL:
        n += 1
    return n


def _walsh(d: list[float]) -> list[float]:
    n = len(d)
    return sorted((d[i] + d[j]) / 2 for i in range(n) for j in range(i, n))


def hodges_lehmann(d: list[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """(estimate, low, high) of the pseudo-median of d; low/high are -inf/inf when n is too small."""
    if not d:
        raise ValueError("no samples")
    return _hl(_walsh(d), len(d), confidence)


def _hl(walsh: list[float], n: int, confidence: float) -> tuple[float, float, float]:
    m = len(walsh)
    est = (walsh[(m - 1) // 2] + walsh[m // 2]) / 2
    k = critical_k(n, confidence)
    if k < 1:
        return est, -math.inf, math.inf
    return est, walsh[k - 1], walsh[m - k]


def signed_rank_p(d: list[float]) -> float:
    """The exact two-sided p-value of the signed-rank test of d against 0, counted on the Walsh averages
    (a zero counts against both directions), so that p <= 1 - confidence exactly when hodges_lehmann's
    interval excludes 0."""
    return _p(_walsh(d), len(d))


def _p(walsh: list[float], n: int) -> float:
    neg = sum(1 for w in walsh if w <= 0)
    pos = sum(1 for w in walsh if w >= 0)
    return min(1.0, 2 * _cdf(n, min(neg, pos)))


def bh_adjust(pvalues: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (scipy.stats.false_discovery_control): a test is a discovery at
    false discovery rate q exactly when its adjusted p-value is <= q."""
    if not pvalues:
        return []
    from scipy.stats import false_discovery_control
    return [float(x) for x in false_discovery_control(pvalues, method="bh")]


@dataclass(frozen=True)
class Effect:
    ratio: float          # exp(HL estimate of the paired log ratios): < 1 faster, > 1 slower
    low: float            # confidence interval of the ratio (this test alone, at `confidence`)
    high: float
    verdict: str
    n: int
    confidence: float
    p: float = 1.0        # exact two-sided p-value of this test alone
    q: float | None = None   # Benjamini-Hochberg adjusted p-value over the run's tests (None: not corrected)

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

    def corrected(self, q: float) -> "Effect":
        """This effect judged with its adjusted p-value q: significant only where q <= 1 - confidence and
        the interval excludes 1 (the one implies the other; both are checked)."""
        if self.verdict not in SIGNIFICANT:
            return replace(self, q=q, verdict=NO_EFFECT)
        ok = q <= (1 - self.confidence) + 2 * _TOL
        return replace(self, q=q, verdict=self.verdict if ok else NOT_AFTER_CORRECTION)


def verdict_of(low_log: float, high_log: float) -> str:
    """The interval's own verdict, before any correction."""
    if high_log < 0:
        return FASTER
    if low_log > 0:
        return SLOWER
    return NO_EFFECT


def effect_from_logs(d: list[float], confidence: float) -> Effect:
    if not d:
        raise ValueError("no samples")
    if not all(math.isfinite(x) for x in d):      # a NaN sorts anywhere among the Walsh averages: "no effect"
        raise ValueError("a log ratio is not finite: not a measurement")
    walsh = _walsh(d)
    est, lo, hi = _hl(walsh, len(d), confidence)
    return Effect(math.exp(est), math.exp(lo) if lo > -math.inf else 0.0, math.exp(hi) if hi < math.inf else math.inf,
                  verdict_of(lo, hi), len(d), confidence, _p(walsh, len(d)))


def paired_effect(x: list[float], y: list[float], confidence: float = 0.95) -> Effect:
    """The effect of x against y (ratio x / y), samples paired by index (the same round); not corrected."""
    if len(x) != len(y) or not x:
        raise ValueError("need paired samples of equal, non-zero count")
    if not all(0 < v < math.inf for v in x + y):       # min() passes a NaN
        raise ValueError("timings must be positive and finite")
    return effect_from_logs([math.log(a / b) for a, b in zip(x, y)], confidence)


def correct(effects: list[Effect]) -> list[Effect]:
    """Every effect of one run judged after the Benjamini-Hochberg correction over all of them."""
    return [e.corrected(q) for e, q in zip(effects, bh_adjust([e.p for e in effects]))]
