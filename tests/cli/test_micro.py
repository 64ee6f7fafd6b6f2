import os

import pytest

from cuzk.backend import gpu_status
from cuzk.micro import floor_s


def test_floors_follow_design():
    assert floor_s("ntt", 27, 0) == pytest.approx(0.030)
    assert floor_s("ntt", 26, 0) == pytest.approx(0.030 * 26 / 27 / 2)
    assert floor_s("h", 27, 0, "coeff") == pytest.approx(7 * 0.030)
    assert floor_s("fp_mul", 0, int(2.8e10)) == pytest.approx(1.0)


@pytest.mark.skipif(gpu_status()[0], reason="a GPU is present")
def test_micro_without_gpu_exits_2(capsys):
    pytest.importorskip("pyperf")
    from cuzk.cli import main
    assert main(["micro", "ntt", "--log-size", "10"]) == 2
    assert "needs a GPU" in capsys.readouterr().err


def test_msm_floor():
    assert floor_s("msm", 26, 0) == pytest.approx(0.26)


def test_msm_floor_scales_with_n():
    assert floor_s("msm", 20, 0) == pytest.approx(0.26 / 64)


def _micro(*args, cwd):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "cuzk", "micro", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_pyperf_path_on_the_cpu_reference(tmp_path):
    """Worker processes, calibrated loops, JSON that `pyperf compare_to` reads, the environment inherited."""
    pytest.importorskip("pyperf")
    import json
    import os
    import subprocess
    import sys
    outs = []
    for i in range(2):
        out = tmp_path / f"ntt{i}.json"
        p = _micro("ntt", "--backend", "cpu", "--log-size", "6", "-p", "2", "-n", "3", "-w", "0", "-o", str(out),
                   cwd=tmp_path)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "cpu_ntt_2^6: mean" in p.stdout
        outs.append(out)
    data = json.loads(outs[0].read_text())
    (bench,) = data["benchmarks"]
    runs = [r for r in bench["runs"] if "values" in r]
    assert len(runs) == 2                                   # two worker processes
    assert data["metadata"]["cuzk_backend"] == "cpu"
    loops = [{**data["metadata"], **bench.get("metadata", {}), **r["metadata"]}.get("loops", 0) for r in runs]
    assert all(n >= 1 for n in loops)                       # loop counts calibrated by pyperf (no -l given)
    q = subprocess.run([sys.executable, "-m", "pyperf", "compare_to", str(outs[0]), str(outs[1])],
                       capture_output=True, text=True)
    # one benchmark: compare_to prints the two means and their ratio, or hides an insignificant difference
    assert q.returncode == 0 and "Traceback" not in q.stderr, q.stdout + q.stderr
    assert "Mean +- std dev: [ntt0]" in q.stdout or "not significant (1): cpu_ntt_2^6" in q.stdout, q.stdout
    # --copy-env: the workers see the whole environment (pyperf's default drops most variables)
    probe = tmp_path / "env.json"
    p = subprocess.run([sys.executable, "-m", "cuzk", "micro", "intt", "--backend", "cpu", "--log-size", "4",
                        "-p", "1", "-n", "1", "-w", "0", "-l", "1", "-o", str(probe)], cwd=tmp_path,
                       env=dict(os.environ, CUDA_VISIBLE_DEVICES="7"), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    runs = [r for r in json.loads(probe.read_text())["benchmarks"][0]["runs"] if "values" in r]
    meta = {**json.loads(probe.read_text())["metadata"], **runs[0].get("metadata", {})}
    assert meta.get("cuzk_cuda_visible_devices") == "7"


def test_the_manager_process_makes_no_inputs(tmp_path, monkeypatch, capsys):
    """Only pyperf's workers make the kernel's inputs: a manager holding them (P2's tables, a 2^26 MSM's bases)
    would leave its workers less device memory than a real run has. Here the manager's own make fails, the
    workers' (their own processes) do not, and the run still reports its figure from the workers' metadata."""
    pytest.importorskip("pyperf")
    import json
    import cuzk.micro as micro
    from cuzk.cli import main

    def made_here(*a, **kw):
        raise AssertionError("the manager process made the inputs")
    monkeypatch.setattr(micro, "_make_cpu", made_here)
    monkeypatch.setattr(micro, "_make", made_here)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "m.json"
    assert main(["micro", "ntt", "--backend", "cpu", "--log-size", "4", "-p", "1", "-n", "1", "-w", "0", "-l", "1",
                 "-o", str(out)]) == 0
    assert "cpu_ntt_2^4: mean" in capsys.readouterr().out
    data = json.loads(out.read_text())
    (bench,) = data["benchmarks"]
    runs = [r for r in bench["runs"] if "values" in r]
    meta = {**data.get("metadata", {}), **bench.get("metadata", {}), **runs[0].get("metadata", {})}
    assert meta.get("cuzk_work_items") == 16


@pytest.mark.parametrize("args, msg", [([], "name a kernel"), (["msm", "--backend", "cpu"], "ntt and intt only")])
def test_micro_bad_input(args, msg, tmp_path):
    pytest.importorskip("pyperf")
    p = _micro(*args, cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.startswith("cuzk: error: micro:") and msg in p.stderr


def test_mul_names_keep_chains_and_builds_apart():
    """fp_mul results of another chain count or multiplier build get their own benchmark name."""
    from types import SimpleNamespace as NS
    from cuzk.gpu.kernel_sources import BUILDS
    from cuzk.micro import MUL_BUILDS, mul_name
    assert mul_name(NS(kernel="fp_mul", chains=4, fastmul=1)) == "fp_mul"
    assert mul_name(NS(kernel="fp_mul", chains=1, fastmul=6)) == "fp_mul_c1_b6"
    assert mul_name(NS(kernel="fr_mul", chains=4, fastmul=6)) == "fr_mul_b6"
    assert all(b == () or b in BUILDS["ff/ops"] for b in MUL_BUILDS.values())


def test_micro_fastmul_choices(capsys):
    from cuzk.cli import main
    assert main(["micro", "fp_mul", "--fastmul", "5"]) == 2      # not a build micro offers


@pytest.mark.parametrize("flag", [["--chains", "1"], ["--fastmul", "6"]])
def test_the_mul_options_on_another_kernel_are_refused_not_ignored(tmp_path, flag):
    """`micro ntt --fastmul 6` ran the NTT's own build and said nothing: an option that shapes no measurement of
    this kernel is one line, exit 2, before any worker."""
    pytest.importorskip("pyperf")
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-m", "cuzk", "micro", "ntt", "--backend", "cpu", "--log-size", "4", *flag,
                        "-p", "1", "-n", "1", "-w", "0", "-l", "1"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(err) == 1 and "ntt takes neither" in err[0] and "mean" not in p.stdout, p.stderr


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["msm", "msm_g2", "batch_add"])
def test_micro_msm_kernels_time_the_device_work(kernel, monkeypatch):
    """`cuzk micro msm/msm_g2/batch_add` time the window sums (pippenger.msm_windows, the device work of the product
    path) with the registry's options, not a device fold the product path does not run."""
    from cuzk import micro
    from cuzk.gpu.msm import pippenger as msm
    calls = []
    real = msm.msm_windows
    monkeypatch.setattr(msm, "msm_windows", lambda *a, **k: calls.append(k) or real(*a, **k))
    monkeypatch.setattr(msm, "msm_xyzz", lambda *a, **k: pytest.fail("msm_xyzz folds on the device"))
    monkeypatch.setenv("CUZK_OPT", "-C1" if kernel == "batch_add" else "")
    run, n = micro._make(kernel, 10, "coeff", 7)
    assert n == 1 << 10 and run(2) > 0 and calls
    assert "kernels" in calls[0] and "pair_levels" in calls[0]


@pytest.mark.gpu
@pytest.mark.parametrize("spec,want", [("", "r4b6dts+oz"), ("-N11", "r4b6dt+oz"), ("-N8", "r4b6ds+oz"),
                                       ("-N8,-N11", "r4b6d+oz"), ("-N12", "r4b6dtsw+oz"), ("-N4", "r4b6+oz"),
                                       ("-N4,-N12", "r4b6w+oz"), ("-N2", "r4+o"), ("-N1", "r2"), ("-N13", "r4b6dts+z"),
                                       ("-N15", "r4b6dts+o"), ("-N13,-N15", "r4b6dts"), ("-N2,-N13", "r4"),
                                       ("-N17", "r4b6dtsb+oz"), ("-N12,-N17", "r4b6dtsw+oz")])
def test_micro_ntt_and_h_run_the_backends_variant(spec, want, monkeypatch):
    """`cuzk micro ntt` and `h` time the NTT pass variant the backend picks under CUZK_OPT (N1, N2, N4, N8, N11, N12,
    N13, N15, N17)."""
    from cuzk import micro
    from cuzk.gpu import ntt
    monkeypatch.setenv("CUZK_OPT", spec)
    seen = []
    real = ntt._run
    monkeypatch.setattr(ntt, "_run", lambda *a: seen.append(a[5]) or real(*a))     # _run's variant
    for kernel in ("ntt", "h"):
        run, n = micro._make(kernel, 10, "coeff", 7)
        assert n == 1 << 10 and run(1) > 0
    assert seen and set(seen) == {want}


def test_outputs_follow_the_output_rule_before_any_work(tmp_path):
    """-o and --append are the manager's to write, by the output rule: a file where a folder belongs, an -o that
    exists, an --append that is not pyperf's, one path given twice: one line, exit 2, before any worker ran;
    --append adds runs to what was there (its earlier runs kept), through a link to its target."""
    pytest.importorskip("pyperf")
    import json
    args = ("ntt", "--backend", "cpu", "--log-size", "4", "-p", "1", "-n", "2", "-w", "0", "-l", "1")
    before = tmp_path / "first.json"
    assert _micro(*args, "-o", str(before), cwd=tmp_path).returncode == 0
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    cases = [(["-o", str(before / "x.json")], str(before / "x.json")),
             (["-o", str(before)], "exists (-o writes a new file"),
             (["--append", str(garbage)], f"{garbage}: not a pyperf JSON"),
             (["-o", str(tmp_path / "same.json"), "--append", str(tmp_path / "same.json")], "given as --append")]
    for extra, said in cases:
        p = _micro(*args, *extra, cwd=tmp_path)
        err = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(err) == 1 and said in err[0] and "mean" not in p.stdout, (extra, p.stderr)
    kept = tmp_path / "kept.json"
    kept.write_bytes(before.read_bytes())
    link = tmp_path / "link.json"
    link.symlink_to(kept)
    for _ in range(2):
        assert _micro(*args, "--append", str(link), cwd=tmp_path).returncode == 0
    (bench,) = json.loads(kept.read_text())["benchmarks"]
    assert link.is_symlink() and len([r for r in bench["runs"] if "values" in r]) == 3
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".cuzk")) == []


@pytest.mark.parametrize("extra", [["-p", "0"], ["-n", "-2"], ["--timeout", "nan"], ["--no-such-option"],
                                   ["--generator", "3"]])
def test_a_bad_option_is_one_line_not_pyperfs_usage(extra, tmp_path):
    pytest.importorskip("pyperf")
    p = _micro("ntt", "--backend", "cpu", "--log-size", "4", *extra, cwd=tmp_path)
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(err) == 1 and err[0].startswith("cuzk: error: micro:"), (extra, p.stderr)


def test_an_abbreviated_output_option_follows_the_output_rule_too(tmp_path):
    """pyperf's parser takes --out for --output and --app for --append: those would bypass the manager's output
    rule (pyperf's own 'already exists' as exit 1, an --append folder as an internal error after measuring)."""
    pytest.importorskip("pyperf")
    args = ("ntt", "--backend", "cpu", "--log-size", "4", "-p", "1", "-n", "1", "-w", "0", "-l", "1")
    kept = tmp_path / "kept.json"
    kept.write_text("earlier\n")
    for extra in (["--out", str(kept)], ["--outp", str(kept)], ["--app", str(tmp_path)]):
        p = _micro(*args, *extra, cwd=tmp_path)
        err = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(err) == 1 and err[0].startswith("cuzk: error: micro:"), (extra, p.stderr)
        assert "mean" not in p.stdout, extra
    assert kept.read_text() == "earlier\n"


@pytest.mark.parametrize("log_size", ["-1", "33", "40"])
def test_a_log_size_outside_the_field_is_refused_before_any_worker(log_size, tmp_path):
    """No domain of 2^k exists past Fr's two-adicity (2^32), and none below 2^0: one line, before a worker has
    built 2^40 inputs (hours, then memory) or failed on a negative shift (an internal error a process)."""
    pytest.importorskip("pyperf")
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-m", "cuzk", "micro", "ntt", "--backend", "cpu", "--log-size", log_size,
                        "-p", "1", "-n", "1", "-w", "0", "-l", "1"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(err) == 1 and "--log-size" in err[0] and "internal" not in err[0], p.stderr


def test_an_append_file_of_wrong_types_or_no_measurement_is_bad_input(tmp_path):
    """A pyperf JSON whose objects are of the wrong kind, or whose values are no measurement (inf, an integer past a
    float), is named as bad input before any work, not an internal error, and never carried into the file."""
    pytest.importorskip("pyperf")
    import json
    import pyperf
    from cuzk.micro import _read_suite
    args = ("ntt", "--backend", "cpu", "--log-size", "4", "-p", "1", "-n", "2", "-w", "0", "-l", "1")
    good = tmp_path / "good.json"
    assert _micro(*args, "-o", str(good), cwd=tmp_path).returncode == 0
    doc = json.loads(good.read_text())
    bad = []
    for i, poison in enumerate(("metadata", "run", "value", "big")):
        d = json.loads(json.dumps(doc))
        runs = d["benchmarks"][0]["runs"]
        if poison == "metadata":
            d["metadata"] = True
        elif poison == "run":
            runs[0] = 0
        else:
            run = next(r for r in runs if "values" in r)
            run["values"][0] = float("inf") if poison == "value" else 10 ** 400
        path = tmp_path / f"bad{i}.json"
        path.write_text(json.dumps(d))
        bad.append(path)
    for path in bad:
        got = _read_suite(str(path), pyperf)
        assert isinstance(got, str) and got.startswith(f"{path}: "), (path, got)
    p = _micro(*args, "--append", str(bad[2]), cwd=tmp_path)
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(err) == 1 and str(bad[2]) in err[0] and "mean" not in p.stdout, p.stderr


def test_an_append_gzip_is_read_no_further_than_the_size_limit(tmp_path, monkeypatch):
    """A small .gz can decompress to gigabytes: it is read through the limit on a results file and refused past it,
    naming the file, with memory bounded by that limit rather than by what the gzip unpacks to."""
    pytest.importorskip("pyperf")
    import gzip
    import tracemalloc
    import pyperf
    from cuzk import micro
    monkeypatch.setattr(micro, "MAX_RESULTS_BYTES", 1 << 20)
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * (64 << 20), 1))          # ~0.3 MB holding 64 MiB
    tracemalloc.start()
    try:
        got = micro._read_suite(str(bomb), pyperf)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(got, str) and got.startswith(f"{bomb}: ") and "more than" in got, got
    assert peak < 16 << 20, peak
    small = tmp_path / "small.json.gz"
    small.write_bytes(gzip.compress(b" " * (1 << 20)))              # at the limit: read, then judged as JSON
    got = micro._read_suite(str(small), pyperf)
    assert isinstance(got, str) and got.startswith(f"{small}: not a pyperf JSON"), got



def test_an_append_file_nested_past_the_parser_is_named_as_bad_input(tmp_path):
    """JSON nested deeper than the parser recurses is the file's fault, named as such, not an internal error."""
    pytest.importorskip("pyperf")
    import pyperf
    from cuzk.micro import _read_suite
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    got = _read_suite(str(deep), pyperf)
    assert isinstance(got, str) and got.startswith(f"{deep}: not a pyperf JSON"), got


def test_a_cpu_size_past_the_hosts_memory_is_refused_before_any_worker(tmp_path):
    """The reference's NTT holds its 2^k elements as Python ints (~320 bytes an element at its peak): 2^32 of them
    (~1.3 TB) is one line naming --log-size, not a MemoryError (an internal error) or the OOM killer."""
    pytest.importorskip("pyperf")
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-m", "cuzk", "micro", "ntt", "--backend", "cpu", "--log-size", "32",
                        "-p", "1", "-n", "1", "-w", "0", "-l", "1"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(err) == 1 and "--log-size 32 with --backend cpu" in err[0], p.stderr
    assert "1280.0 GiB" in err[0] and "host memory available" in err[0], err


def test_an_append_keeps_the_runs_another_append_landed_while_it_measured(tmp_path, monkeypatch):
    """Two `--append` to one file at once: each adds its runs to the file as it is when it writes, not as it was
    when it started, so neither's runs are lost (the slower one used to write back what it had read before
    measuring)."""
    pyperf = pytest.importorskip("pyperf")
    from cuzk import micro
    args = ("ntt", "--backend", "cpu", "--log-size", "4", "-p", "1", "-n", "2", "-w", "0", "-l", "1")
    first = tmp_path / "first.json"
    assert _micro(*args, "-o", str(first), cwd=tmp_path).returncode == 0
    (bench,) = pyperf.BenchmarkSuite.load(str(first)).get_benchmarks()
    runs = bench.get_nrun()
    target = tmp_path / "runs.json"
    target.write_bytes(first.read_bytes())

    def measured(self, name, func, *a, **k):       # meanwhile, the other append's file replaced this one
        other = pyperf.BenchmarkSuite.load(str(target))
        other.add_runs(pyperf.BenchmarkSuite.load(str(first)).get_benchmarks()[0])
        tmp = tmp_path / "other.json"
        other.dump(str(tmp))
        os.replace(tmp, target)
        return pyperf.BenchmarkSuite.load(str(first)).get_benchmarks()[0]
    monkeypatch.setattr(pyperf.Runner, "_created", set())
    monkeypatch.setattr(pyperf.Runner, "bench_time_func", measured)
    monkeypatch.setattr(micro.backends, "gpu_status", lambda: (True, ""))
    assert micro.main([*args, "--append", str(target)]) == 0
    (got,) = pyperf.BenchmarkSuite.load(str(target)).get_benchmarks()
    assert got.get_nrun() == 3 * runs               # the file's own, the other append's and this one's


def test_an_append_waits_for_one_writing_the_file_and_adds_to_what_that_one_wrote(tmp_path):
    from cuzk import micro
    target = tmp_path / "runs.json"
    target.write_text("the file read before measuring")
    _waits_for_the_other(micro, target, tmp_path)


def test_an_append_to_a_new_path_waits_for_another_creating_it(tmp_path):
    """Two appends to a path that does not exist yet: the second reads what the first wrote (it used to take no
    lock, and the slower one's file replaced the other's runs)."""
    from cuzk import micro
    target = tmp_path / "runs.json"
    _waits_for_the_other(micro, target, tmp_path)


def _waits_for_the_other(micro, target, tmp_path, through=None):
    """Another append to `target` holds the lock between its read and its rename; this one, taking the lock for
    `through` (target itself, or a link to it), must see what that one wrote."""
    import threading
    import time
    through = through or target
    inside, done = threading.Event(), []

    def other():                                    # another append, between its read and its rename
        with micro._held(str(target)):
            inside.set()
            time.sleep(0.3)
            (target.parent / "new").write_text("what the other append wrote")
            os.replace(target.parent / "new", target)
            done.append(time.monotonic())
    t = threading.Thread(target=other)
    t.start()
    assert inside.wait(10)
    with micro._held(str(through)):
        assert done and through.read_text() == "what the other append wrote"
    t.join()


def test_an_append_through_a_link_waits_for_one_writing_the_links_target(tmp_path):
    """--append LINK is written in the target's folder (the output rule): the lock is that folder's, so an append
    to the target itself is waited for (the link's folder was locked, and the slower one's runs replaced the
    other's)."""
    from cuzk import micro
    (tmp_path / "data").mkdir()
    (tmp_path / "links").mkdir()
    target = tmp_path / "data" / "runs.json"
    target.write_text("the file read before measuring")
    link = tmp_path / "links" / "runs.json"
    link.symlink_to(target)
    _waits_for_the_other(micro, target, tmp_path, through=link)


def test_an_append_with_o_in_another_folder_takes_the_folders_in_the_writers_order(tmp_path, monkeypatch):
    """-o and --append in two folders: both are locked in write_outputs' order (sorted), before the append's read.
    Holding the --append folder first and then waiting for the -o one deadlocked with a writer that holds the -o
    folder and waits for the --append one (another micro with the two folders the other way round)."""
    pyperf = pytest.importorskip("pyperf")
    import threading
    import time
    from cuzk import micro
    from cuzk.files import folder_held, write_outputs
    args = ("ntt", "--backend", "cpu", "--log-size", "4", "-p", "1", "-n", "2", "-w", "0", "-l", "1")
    first = tmp_path / "first.json"
    assert _micro(*args, "-o", str(first), cwd=tmp_path).returncode == 0
    a, b = tmp_path / "a", tmp_path / "b"        # a sorts first
    a.mkdir()
    b.mkdir()
    inside = threading.Event()

    def other():                                 # `micro -o b/.. --append a/..`: a held, then the set written
        with folder_held(str(a)):
            inside.set()
            time.sleep(0.5)
            write_outputs({b / "y.json": "y", a / "runs.json": "other"})

    def measured(self, name, func, *a_, **k):
        threading.Thread(target=other, daemon=True).start()
        assert inside.wait(10)
        return pyperf.BenchmarkSuite.load(str(first)).get_benchmarks()[0]
    monkeypatch.setattr(pyperf.Runner, "_created", set())
    monkeypatch.setattr(pyperf.Runner, "bench_time_func", measured)
    monkeypatch.setattr(micro.backends, "gpu_status", lambda: (True, ""))
    got = []
    t = threading.Thread(target=lambda: got.append(micro.main([*args, "-o", str(a / "x.json"),
                                                               "--append", str(b / "runs.json")])), daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive() and got == [0]
    assert (b / "y.json").read_text() == "y" and (a / "x.json").exists()


def test_outputs_in_every_form_pyperfs_parser_takes_follow_the_output_rule(tmp_path):
    """-o folded into short flags (-qo X, -qoX) or given as --output=X, -o=X, --append=X is the same output: the
    manager judges it before any work, never pyperf (its 'already exists' on stdout as exit 1, or a file where
    a folder belongs as an internal error after measuring)."""
    pytest.importorskip("pyperf")
    import json
    args = ("ntt", "--backend", "cpu", "--log-size", "4", "-p", "1", "-n", "1", "-w", "0", "-l", "1")
    there = tmp_path / "there.json"
    there.write_text("earlier\n")
    for extra, said in [(["-qo", str(there)], "exists"), ([f"-qo{there}"], "exists"),
                        ([f"--output={there}"], "exists"), ([f"-o={there}"], "exists"),
                        (["-qo", str(there / "x.json")], str(there / "x.json")),
                        ([f"--append={there}"], "not a pyperf JSON")]:
        p = _micro(*args, *extra, cwd=tmp_path)
        err = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(err) == 1 and said in err[0], (extra, p.stdout, p.stderr)
        assert "mean" not in p.stdout and "internal" not in p.stderr, extra
    assert there.read_text() == "earlier\n"
    new = tmp_path / "new.json"
    p = _micro(*args, "-qo", str(new), cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(new.read_text())["benchmarks"]


def test_a_profile_is_an_output_the_manager_writes(tmp_path):
    """--profile follows the output rule as -o does: a device that is no output, a folder, an existing file (pyperf
    would unmarshal it to merge: not done on a file cuzk did not write) are one line, exit 2, before any work, the
    file untouched; a write that fails (/dev/full) is one line too. A new path gets the workers' stats, through a
    link to its target, written whole by a rename (pyperf's workers merge into a temp file of the manager's)."""
    pytest.importorskip("pyperf")
    import pstats
    args = ("ntt", "--backend", "cpu", "--log-size", "4", "-p", "1", "-n", "1", "-w", "0", "-l", "1", "-q")
    notes = tmp_path / "notes.txt"
    notes.write_text("earlier\n")
    folder = tmp_path / "folder"
    folder.mkdir()
    for bad, said in [("/dev/urandom", "never an output"), (folder, "a folder"),
                      (notes, "exists (--profile writes a new file)"), (notes / "x.prof", str(notes / "x.prof"))]:
        for extra in (["--profile", str(bad)], [f"--profile={bad}"]):
            p = _micro(*args, *extra, cwd=tmp_path)
            err = p.stderr.strip().splitlines()
            assert p.returncode == 2 and len(err) == 1 and said in err[0], (extra, p.stdout, p.stderr)
            assert "mean" not in p.stdout, extra
    assert notes.read_text() == "earlier\n"
    p = _micro(*args, "--profile", "/dev/full", cwd=tmp_path)
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(err) == 1 and "/dev/full: cannot write" in err[0], p.stderr
    target = tmp_path / "runs.prof"
    link = tmp_path / "link.prof"
    link.symlink_to(target)
    p = _micro(*args, "--profile", str(link), cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert link.is_symlink() and pstats.Stats(str(target)).total_calls > 0
    before = target.read_bytes()
    p = _micro(*args, "-qo", str(tmp_path / "x.json"), "--profile", str(link), cwd=tmp_path)
    assert p.returncode == 2 and "exists (--profile writes a new file)" in p.stderr, p.stderr
    assert target.read_bytes() == before and not (tmp_path / "x.json").exists()
    assert [q.name for q in tmp_path.iterdir() if q.name.startswith(".cuzk")] == []


LONG = {"-l": "--loops", "-w": "--warmups"}


@pytest.mark.parametrize("extra", [["--pipe", "99"], ["--pipe", "-1"], ["--pipe", "0"], ["--pipe", "FILE"],
                                   ["--min-time", "nan"], ["--min-time", "inf"], ["--min-time", "-5"],
                                   ["-l", "2^-1"], ["-w", "2^-1"], ["--affinity", "abc"], ["--affinity", "99999"],
                                   ["--python", "/no/such/python"]])
def test_an_option_pyperf_takes_but_cannot_run_is_one_line_before_any_work(extra, tmp_path):
    """pyperf's parser takes a --pipe descriptor that is not open (or not a pipe open for writing), a --min-time
    that is not finite or below 0 (a calibration that never ends), a loop count of 2^-1 (0.5, which its workers
    refuse), CPUs that are not this process's, a --python that is not there: each fails later, in a worker or as
    an internal error, or runs on. cuzk says so in one line, exit 2, before any work."""
    pytest.importorskip("pyperf")
    import subprocess
    import sys
    args = ("ntt", "--backend", "cpu", "--log-size", "4", "-p", "1", "-n", "1", "-w", "0", "-l", "1", "-q")
    with open(tmp_path / "file", "w") as f:          # a regular file open for writing: not pyperf's pipe
        extra = [str(f.fileno()) if a == "FILE" else a for a in extra]
        p = subprocess.run([sys.executable, "-m", "cuzk", "micro", *args, *extra], cwd=tmp_path,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
                           pass_fds=(f.fileno(),))
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(err) == 1 and err[0].startswith(f"cuzk: error: micro: {LONG.get(extra[0], extra[0])} "), \
        (extra, p.stdout, p.stderr)
    assert "mean" not in p.stdout and (tmp_path / "file").read_text() == ""
