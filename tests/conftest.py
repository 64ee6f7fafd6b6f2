import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _key_cache(tmp_path_factory):
    """Keys go to a per-session cache, never the user's."""
    d = tmp_path_factory.mktemp("cuzk-cache")
    old = os.environ.get("CUZK_CACHE_DIR")
    os.environ["CUZK_CACHE_DIR"] = str(d)
    yield d
    if old is None:
        os.environ.pop("CUZK_CACHE_DIR", None)
    else:
        os.environ["CUZK_CACHE_DIR"] = old


def pytest_collection_modifyitems(config, items):
    from cuzk.backend import gpu_status
    ok, why = gpu_status()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"no GPU: {why}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
