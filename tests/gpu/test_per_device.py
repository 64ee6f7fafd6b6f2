"""Device caches kept one per GPU (cuzk/gpu/per_device.py): what one device made is never handed to another.
The current device is faked, so this runs on the CPU."""
from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from cuzk.gpu import per_device

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def dev(monkeypatch):
    state = types.SimpleNamespace(id=0)
    monkeypatch.setattr(per_device, "current", lambda: state.id)
    return state


def test_device_cache_keeps_one_entry_per_device(dev):
    made = []

    @per_device.device_cache(maxsize=2)
    def table(x):
        made.append((dev.id, x))
        return object()
    a0 = table(1)
    assert table(1) is a0 and made == [(0, 1)]
    dev.id = 1
    a1 = table(1)
    assert a1 is not a0 and made == [(0, 1), (1, 1)], "device 1 makes its own"
    dev.id = 0
    assert table(1) is a0
    table(2), table(3)                  # maxsize per device: device 0's entry for 1 goes, device 1's stays
    assert table(1) is not a0
    dev.id = 1
    assert table(1) is a1
    table.cache_clear()
    assert table(1) is not a1
    assert table.__wrapped__(5) is not None


def test_on_device_attribute_per_device(dev):
    host = types.SimpleNamespace()
    m0 = per_device.on_device(host, "_device", lambda: ["made on 0"])
    assert per_device.on_device(host, "_device", lambda: pytest.fail("made twice")) is m0
    dev.id = 3
    m3 = per_device.on_device(host, "_device", lambda: ["made on 3"])
    assert m3 == ["made on 3"] and host._device == {0: m0, 3: m3}


def test_on_device_replaces_an_unset_field(dev):
    """A dataclass field defaulting to None (formats.zkey.ZKey._device) becomes the per-device dict."""
    host = types.SimpleNamespace(_device=None)
    assert per_device.on_device(host, "_device", lambda: 7) == 7 and host._device == {0: 7}


def test_the_device_caches_are_per_device():
    """Every cache of device arrays or device attributes in cuzk/gpu is kept per device (a second GPU in the
    process never gets the first one's tables). The device modules import CuPy at their top: they are loaded here
    in a fresh interpreter over a stand-in CuPy (nothing of it is used at import)."""
    code = """if True:
        import sys, types
        sys.modules["cupy"] = types.ModuleType("cupy")
        from cuzk.gpu import keygen, ntt
        from cuzk.gpu.msm import pippenger as msm
        for f in (ntt._power_tables, ntt._small_table, ntt._tw1_table, ntt._tw1_table_big, msm._sm_count,
                  keygen._sm_count):
            assert getattr(f, "per_device", False), f.__name__
        print("per device")
    """
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0 and p.stdout == "per device\n", p.stderr
