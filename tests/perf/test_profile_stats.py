import cProfile
import marshal

import pytest

from cuzk.perf.profile_stats import merged, read_stats


def _stats():
    prof = cProfile.Profile()
    prof.runcall(sorted, [3, 1, 2])
    prof.create_stats()
    return prof.stats


@pytest.mark.parametrize("data", [
    b"", b"not marshal", marshal.dumps(_stats())[:-3], marshal.dumps([1, 2]), marshal.dumps({1: 2}),
    marshal.dumps({("f.py", 1, "f"): (1, 1, 0.1, 0.1)}),                          # no callers
    marshal.dumps({("f.py", "1", "f"): (1, 1, 0.1, 0.1, {})}),                    # a line that is no number
    marshal.dumps({("f.py", 1, "f"): (1, 1, float("nan"), 0.1, {})}),
    marshal.dumps({("f.py", 1, "f"): (1, 1, 0.1, 0.1, {("g.py", 2, "g"): "x"})}),
    b"[" * 100000])
def test_a_file_of_another_shape_is_one_line_naming_it(data, tmp_path):
    path = tmp_path / "p.prof"
    path.write_bytes(data)
    got = read_stats(str(path))
    assert isinstance(got, str) and got.startswith(f"{path}: not a cProfile stats file"), got


def test_merging_sums_as_pstats_does(tmp_path):
    s = _stats()
    both = marshal.loads(merged(s, s))
    assert both.keys() == s.keys()
    assert all(both[f][1] == 2 * s[f][1] for f in s)
    assert marshal.loads(merged(None, s)) == s


@pytest.mark.parametrize("data", [b"[\xff\xff\xff\x7f", b"(\xff\xff\xff\x7f", b"{" + b"(\xff\xff\xff\x7f" * 3,
                                  b"[" * 100000, b"{" * 100000])
def test_a_length_past_the_data_is_refused_before_marshal_allocates_it(data, tmp_path):
    """marshal makes a container of the declared length before reading its items: 5 bytes would be 16 GB."""
    path = tmp_path / "bomb.prof"
    path.write_bytes(data)
    got = read_stats(str(path))
    assert isinstance(got, str) and "not a cProfile stats file" in got, got


def test_real_profiles_read_whole(tmp_path):
    import pstats
    path = tmp_path / "p.prof"
    prof = cProfile.Profile()
    prof.runcall(lambda: [sorted(range(i)) for i in range(50)])
    prof.dump_stats(str(path))
    assert read_stats(str(path)) == pstats.Stats(str(path)).stats


def test_a_profile_of_no_calls_reads_as_empty(tmp_path):
    path = tmp_path / "p.prof"
    path.write_bytes(marshal.dumps({}))
    assert read_stats(str(path)) == {}
