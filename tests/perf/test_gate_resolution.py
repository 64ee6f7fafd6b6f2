"""What a gate run could see: per phase the smallest slowdown its rounds' spread lets the test flag, and
"not resolved" (never "no change") where that exceeds the threshold."""
from __future__ import annotations

import math
import random

import pytest

from cuzk.perf import compare as cmp
from cuzk.perf import gate, report


def _rounds(sd: float, n: int = 10, shift: float = 0.0, seed: int = 3) -> list[float]:
    rng = random.Random(seed)
    return [shift + rng.gauss(0, sd) for _ in range(n)]


def test_the_detectable_slowdown_follows_the_spread():
    quiet, noisy = _rounds(0.002), _rounds(0.05)
    dq, dn = (cmp.detectable_shift(d, 0.01) for d in (quiet, noisy))
    assert 0 < dq < 0.01 < dn
    # at the detectable shift the centred rounds are flagged, a little below they are not
    for d, s in ((quiet, dq), (noisy, dn)):
        med = sorted(d)[len(d) // 2 - 1: len(d) // 2 + 1]          # the median of an even count
        r = [x - sum(med) / 2 for x in d]
        assert cmp.wilcoxon_p([x + s * 1.001 for x in r]) < 0.01 <= cmp.wilcoxon_p([x + s * 0.95 for x in r])


def test_too_few_rounds_can_never_flag():
    assert cmp.detectable_shift(_rounds(0.01, n=5), 0.01) == math.inf


@pytest.mark.parametrize("sd, verdict", [(0.002, cmp.NO_CHANGE), (0.15, cmp.NOT_RESOLVED)])
def test_no_change_is_said_only_where_the_threshold_was_resolvable(sd, verdict):
    d = _rounds(sd)
    c = cmp.resolved(cmp.compare("tail_msm", d, 0.05, 0.01), d)
    assert c.verdict == verdict
    assert (c.detectable > 0.05) == (verdict == cmp.NOT_RESOLVED)


def test_a_regression_stays_a_regression_however_noisy():
    d = _rounds(0.05, shift=math.log(1.5))
    c = cmp.resolved(cmp.compare("tail_msm", d, 0.05, 0.01), d)
    assert c.verdict == cmp.REGRESSION


def _doc(sd: float) -> dict:
    rng = random.Random(7)
    spec = {"backend": "cuda", "circuit": "porep_like", "log_size": 18, "opts": "default"}
    rounds = []
    for _ in range(10):
        f = math.exp(rng.gauss(0, sd))
        rounds.append({s: {"areas": {"tail_msm": {"samples": [0.01 * (f if s == "head" else 1)] * 3}}}
                       for s in ("base", "head")})
    return {"base": "a" * 40, "head": "b" * 40, "base_ref": "main", "head_ref": "pr",
            "config": {"rounds": 10, "samples": 3, "alpha": 0.01, "threshold": 0.05, "thresholds": {},
                       "areas": ["tail_msm"]},
            "outcomes": [{"status": "ok", "spec": spec, "rounds": rounds}]}


def test_the_report_says_what_the_run_could_see():
    quiet = report.markdown(gate.from_dict(_doc(0.002)))
    noisy = report.markdown(gate.from_dict(_doc(0.2)))
    assert "could flag" in quiet and "not resolved" not in quiet.splitlines()[0]
    first = noisy.splitlines()[0]
    assert first.startswith("## cuzk gate **PASS**") and "not resolved" in first and "`tail_msm`" in first
    assert "*not resolved*" in noisy and "no change" not in noisy.split("| `tail_msm`")[1].splitlines()[0]


def test_tied_rounds_get_the_exact_p_not_scipys_untied_table():
    """Rounds whose |log ratios| tie (quantized timings, or power's rounds drawn with replacement): scipy's
    method="exact" reads them off the table of untied ranks, 0.0098 here, and a +2% head passed alpha 0.01; the
    exact test over every sign pattern (scipy's exhaustive permutation) says 0.0117."""
    import numpy as np
    from scipy.stats import PermutationMethod, wilcoxon
    d = [0.02, 0.04, 0.03, -0.02, 0.02, 0.02, 0.0, 0.03, 0.04, 0.03, 0.02]
    assert cmp.wilcoxon_p(d) == pytest.approx(0.01171875)
    assert cmp.compare("tail_msm", d, 0.01, 0.01).verdict == cmp.NO_CHANGE
    rng = random.Random(5)
    for _ in range(200):
        d = [rng.choice([-1, 1]) * rng.choice([1, 2, 3]) * 0.01 for _ in range(rng.randint(2, 12))]
        exact = wilcoxon(d, method=PermutationMethod(n_resamples=np.inf)).pvalue
        assert cmp.wilcoxon_p(d) == pytest.approx(exact, abs=1e-12), d
    d = _rounds(0.01, n=12)                  # no ties: scipy's exact table, as before
    assert cmp.wilcoxon_p(d) == wilcoxon(d, method="exact").pvalue


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_round_that_is_no_measurement_is_an_error_not_a_verdict(bad):
    """A NaN round's p is NaN: it read "not resolved" at the ratio of the other rounds; an infinite one a
    regression of x inf."""
    d = [0.1, 0.2, 0.3, 0.15, 0.12, 0.3, 0.22, 0.18, 0.4, bad]
    with pytest.raises(ValueError, match="not a measurement"):
        cmp.compare("tail_msm", d, 0.05, 0.01)
    for base, head in (([1.0, bad], [1.0, 1.0]), ([bad, 1.0], [1.0, 1.0]), ([1.0, 1.0], [1.0, bad])):
        if bad > 0 or math.isnan(bad):
            with pytest.raises(ValueError, match="positive"):
                cmp.log_ratios(base, head)
