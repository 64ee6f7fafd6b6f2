"""The end-to-end gate tests' allowance for the runner's own noise: at most two more runs, never a pass by itself."""
from __future__ import annotations

import pytest

from runner_noise import judged, skip_where_stolen


def _doc(status: str, message: str = "") -> dict:
    return {"outcomes": [{"status": status, "message": message}]}


def _runs(docs: list, runs: list):
    """A fake gate: its k-th run returns docs[k - 1], and runs records k."""
    def one(k):
        runs.append(k)
        return ("p", docs[k - 1])
    return one


def test_a_run_untrusted_by_the_runners_work_is_run_again_at_most_twice():
    held = _doc("untrusted", "phase synthesis: in round 2, head's sampling thread was held by other work or away")
    runs = []
    run = lambda docs: _runs(docs, runs)
    assert judged(run([held, _doc("ok")])) == ("p", _doc("ok")) and runs == [1, 2]
    runs.clear()
    assert judged(run([held, held, _doc("ok")])) == ("p", _doc("ok")) and runs == [1, 2, 3]
    runs.clear()
    assert judged(run([held, held, held, _doc("ok")])) == ("p", held) and runs == [1, 2, 3]   # the third is the test's
    runs.clear()
    assert judged(run([held, held]), runs=2) == ("p", held) and runs == [1, 2]
    for first in (_doc("ok"), _doc("untrusted", "the head's worker left its session"), _doc("error", "x"), None):
        runs.clear()
        assert judged(run([first, _doc("ok")]))[1] == first and runs == [1]


def test_a_run_whose_first_words_are_the_runners_is_run_once_more_where_the_test_asks_another_rule():
    own = _doc("untrusted", "phase ntt_msm_h: the gate's own clock read x1.5")
    noise = _doc("untrusted", "phase prep_msm: in round 1, head's sampling thread was held by other work or away")
    asked = _doc("untrusted", "phase tail_msm: in round 1, base's sampling thread was held by other work or away")
    runs = []
    run = lambda docs: _runs(docs, runs)
    mine = lambda m: "the gate's own clock" in m
    assert judged(run([noise, own]), mine)[1] == own and runs == [1, 2]
    runs.clear()
    assert judged(run([own, noise]), mine)[1] == own and runs == [1]
    runs.clear()        # the rule the test asks for is a CPU rule itself: its own words end the retry
    assert judged(run([asked, noise]), lambda m: "base's sampling thread" in m)[1] == asked and runs == [1]


def test_steal_skips_and_anything_else_is_left_to_the_test():
    with pytest.raises(pytest.skip.Exception, match="host took the sampling CPU"):
        skip_where_stolen(_doc("untrusted", "held by other work or away ... the hypervisor took 60% (steal)"))
    skip_where_stolen(_doc("untrusted", "held by other work or away"))
    skip_where_stolen(None)


def test_the_gate_rules_own_messages_are_the_ones_run_again():
    """The words matched are the rules' own: a message either CPU rule writes (its side, host- or device-timed) makes
    judged run once more; one of another rule does not."""
    from cuzk.perf.foreign_work import foreign_excess, round_excess
    ar = lambda **k: {"samples": [0.01] * 3, "number": 1, **k}
    rounds = [{"base": {"areas": {"a": ar(foreign_ms=[5.0] * 3, held_ms=[5.0] * 3, away_ms=[0.0] * 3,
                                         timed_by=by)}}, "head": {"areas": {"a": ar()}}}
              for by in ("host", "device")]
    said = [foreign_excess(rounds, "a", 0.05, 0.25), round_excess(rounds[:1], "a", 0.05, 0.25),
            round_excess(rounds[1:], "a", 0.05, 0.25)]
    assert all(said) and len(set(said)) == 3, said
    for msg in said:
        runs = []
        judged(_runs([_doc("untrusted", msg), _doc("ok")], runs))
        assert runs == [1, 2], msg
