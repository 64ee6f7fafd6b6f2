import contextlib
import os

import pytest
from hypothesis import HealthCheck, settings

# no per-example deadline and no too-slow health check: one example stalled by a loaded runner (200 ms by default)
# is not a failure of the code; a test that needs a bound on an example's time says so itself
settings.register_profile("cuzk", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("cuzk")


@pytest.fixture(scope="session", autouse=True)
def _key_cache(tmp_path_factory):
    """Keys and GPU locks go to folders of this test run, never the user's. The kernel compile checks keep the user's cache
    (nvcc_checks.cache_dir, read before the override): what they remember must outlive the session."""
    import nvcc_checks
    d = tmp_path_factory.mktemp("cuzk-cache")
    old = {k: os.environ.get(k) for k in ("CUZK_CACHE_DIR", "CUZK_NVCC_CHECK_CACHE", "CUZK_LOCK_DIR")}
    os.environ["CUZK_NVCC_CHECK_CACHE"] = str(nvcc_checks.cache_dir())
    os.environ["CUZK_CACHE_DIR"] = str(d)
    # GPU locks of this run too: another test run on the machine (or a real gate) never holds ours
    locks = tmp_path_factory.mktemp("cuzk-locks")
    locks.chmod(0o700)
    os.environ["CUZK_LOCK_DIR"] = str(locks)
    yield d
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session", autouse=True)
def _ctrl_c():
    """Ctrl-C as a terminal delivers it. A shell without job control starts a background command (`cmd &`, nohup
    under a script) with SIGINT ignored, and its children inherit that: the tests of what Ctrl-C does (to cuzk's
    commands, to the compile checks) would measure the launcher. Python's own handler, here and so in every child."""
    import signal
    old = signal.getsignal(signal.SIGINT)
    if old == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def pytest_collection_modifyitems(config, items):
    from cuzk.backend import gpu_status
    # a test whose subprocess checks the GPU is quiet runs before any test here opens a CUDA context (this
    # process would then be "another process on the GPU" for the check)
    # and tests marked serial last: under xdist they wait for the others to end, so the others go first
    items.sort(key=lambda item: (item.get_closest_marker("quiet_gpu") is None,
                                 item.get_closest_marker("serial") is not None))
    ok, why = gpu_status()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"no GPU: {why}")
    for item in items:
        if item.get_closest_marker("gpu") is not None:     # the marker, not the keyword (tests/gpu/ is one)
            item.add_marker(skip)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one process where a GPU is usable (GPU tests share the device, and a quiet_gpu test needs every
    other process off it), else one worker per CPU this process may use, at most 8."""
    from cuzk.backend import gpu_status
    if gpu_status()[0]:
        return 0
    return min(len(os.sched_getaffinity(0)), 8)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist: every worker takes the same lock files (see pytest_runtest_protocol)."""
    config = node.config
    if not hasattr(config, "_cuzk_run_locks"):
        import shutil
        import tempfile
        config._cuzk_run_locks = tempfile.mkdtemp(prefix="cuzk-test-locks-")
        config.add_cleanup(lambda: shutil.rmtree(config._cuzk_run_locks, ignore_errors=True))
    node.workerinput["cuzk_run_locks"] = config._cuzk_run_locks


@contextlib.contextmanager
def run_turn(folder, alone: bool):
    """Hold the run lock of folder: shared, or exclusive where alone. A test taking it alone holds the turnstile while
    it waits, so other workers start no new test meanwhile (flock alone would let shared holders overtake it)."""
    import fcntl
    with open(os.path.join(folder, "turnstile"), "a") as gate, open(os.path.join(folder, "run"), "a") as run:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(run, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(run, fcntl.LOCK_UN)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under xdist a test marked serial (it judges CPU timing: another worker's test beside its samples fails it) runs
    with no other test beside it, set-up and teardown included; the others run side by side."""
    folder = getattr(item.config, "workerinput", {}).get("cuzk_run_locks")
    if folder is None:
        return (yield)
    with run_turn(folder, item.get_closest_marker("serial") is not None):
        return (yield)
