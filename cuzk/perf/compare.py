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
from dataclasses import asdict, dataclass, replace

REGRESSION, IMPROVEMENT, NO_CHANGE = "regression", "improvement", "no change"
NOT_RESOLVED = "not resolved"       # no change seen, but the rounds' spread hides a slowdown of the threshold
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
    detectable: float = math.nan     # the smallest slowdown (a fraction) these rounds' spread lets the test flag
    threshold_source: str = "config"     # "noise" (derived from A/A records), "pin" or "config" (noise.py)
    threshold_basis: str = ""
    clock_ratio: float = math.nan    # where the gate's own clock decided the verdict: its ratio and p (gate.own_clock)
    clock_p: float = math.nan

    def as_dict(self) -> dict:
        return asdict(self)


def wilcoxon_p(d: list[float]) -> float:
    from scipy.stats import wilcoxon
    nz = [x for x in d if x != 0.0]
    if not nz:
        return 1.0
    if len(nz) <= 50 and len({abs(x) for x in nz}) < len(nz):
        return _tied_exact_p(nz)
    return float(wilcoxon(nz, alternative="two-sided", method="exact" if len(nz) <= 50 else "auto").pvalue)


def _tied_exact_p(nz: list[float]) -> float:
    """The exact two-sided p-value where some |d| tie: scipy's method="exact" then uses the table of untied ranks,
    which reads p too small (0.0098 for 0.0117); here the null distribution of the sum of the positive midranks,
    counted over every sign pattern (midranks doubled to integers)."""
    from scipy.stats import rankdata
    r = [round(2 * x) for x in rankdata([abs(x) for x in nz])]
    counts = {0: 1}
    for ri in r:
        nxt = dict(counts)
        for t, c in counts.items():
            nxt[t + ri] = nxt.get(t + ri, 0) + c
        counts = nxt
    total, t_obs = sum(r), sum(ri for ri, x in zip(r, nz) if x > 0)
    extreme = sum(c for t, c in counts.items() if abs(2 * t - total) >= abs(2 * t_obs - total))
    return min(1.0, extreme / 2 ** len(nz))


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
    bad = next((x for x in d if not math.isfinite(x)), None)
    if bad is not None:             # a NaN's p is NaN: it read as "not resolved" with a ratio from the others
        raise ValueError(f"{area}: a round's log ratio is {bad}: not a measurement")
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
    if len(base) != len(head) or not all(0 < x < math.inf for x in base + head):     # min() passes a NaN
        raise ValueError("need paired positive timings")
    return [math.log(h / b) for b, h in zip(base, head)]


def detectable_shift(d: list[float], alpha: float, iters: int = 48) -> float:
    """The smallest log shift delta such that these rounds, centred on their median and shifted by delta,
    give p < alpha: what this run's spread could have told apart from no change (inf where no shift can:
    too few rounds for alpha)."""
    med = statistics.median(d)
    r = [x - med for x in d]
    hi = max(abs(x) for x in r) * 2 + 1e-9            # every value positive: the test's smallest p
    if wilcoxon_p([x + hi for x in r]) >= alpha:
        return math.inf
    lo = 0.0
    for _ in range(iters):
        mid = (lo + hi) / 2
        if wilcoxon_p([x + mid for x in r]) < alpha:
            hi = mid
        else:
            lo = mid
    return hi


def resolved(c: Comparison, d: list[float]) -> Comparison:
    """c with the smallest slowdown the run could flag at its alpha; a "no change" whose spread could not
    have flagged a slowdown of its threshold becomes "not resolved"."""
    shift = detectable_shift(d, c.alpha)
    detectable = math.exp(shift) - 1 if math.isfinite(shift) else math.inf
    verdict = NOT_RESOLVED if c.verdict == NO_CHANGE and detectable > c.threshold else c.verdict
    return replace(c, detectable=detectable, verdict=verdict)
