import os

import pytest


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
    items.sort(key=lambda item: item.get_closest_marker("quiet_gpu") is None)
    ok, why = gpu_status()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"no GPU: {why}")
    for item in items:
        if item.get_closest_marker("gpu") is not None:     # the marker, not the keyword (tests/gpu/ is one)
            item.add_marker(skip)
