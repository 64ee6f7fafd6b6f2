"""GPU state through NVML (nvidia-ml-py, imported as pynvml). Read-only: never changes settings.

This module is the only place that talks to NVML. `Nvml` wraps one device; its `module`
argument is the NVML binding (pynvml by default), so tests pass a fake with the same
function names. Everything returned is plain data (`DeviceInfo`, `Snapshot`).
"""
from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field

# clock-event ("throttle") reason bits, as in nvml.h
THROTTLE_REASONS = {
    0x001: "gpu_idle",
    0x002: "applications_clocks_setting",
    0x004: "sw_power_cap",
    0x008: "hw_slowdown",
    0x010: "sync_boost",
    0x020: "sw_thermal_slowdown",
    0x040: "hw_thermal_slowdown",
    0x080: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}

# nvmlPerfPolicyType_t: cumulative time (ns) the clocks were held down by each policy
VIOLATION_POLICIES = {
    "power": 0,
    "thermal": 1,
    "sync_boost": 2,
    "board_limit": 3,
    "low_utilization": 4,
    "reliability": 5,
}


def reason_names(bits: int) -> list[str]:
    names = [n for b, n in THROTTLE_REASONS.items() if bits & b]
    unknown = bits & ~sum(THROTTLE_REASONS)
    if unknown:
        names.append(f"unknown_0x{unknown:x}")
    return names


class NvmlUnavailable(RuntimeError):
    """No NVML library, no driver, or no such device."""


@dataclass(frozen=True)
class DeviceInfo:
    """Read once per run."""
    index: int | None
    name: str
    uuid: str | None
    pci_bus_id: str | None
    driver: str | None
    cuda_driver: int | None
    max_sm_clock_mhz: int | None
    max_mem_clock_mhz: int | None
    app_sm_clock_mhz: int | None
    app_mem_clock_mhz: int | None
    sm_clock_mhz: int | None
    mem_clock_mhz: int | None
    power_limit_w: float | None
    persistence_mode: int | None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Snapshot:
    """Read before and after every sample."""
    t: float                          # time.monotonic()
    sm_clock_mhz: int | None
    mem_clock_mhz: int | None
    temperature_c: int | None
    power_w: float | None
    throttle_reasons: int | None      # bit set, see THROTTLE_REASONS
    violations_ns: dict = field(default_factory=dict)   # policy -> cumulative ns
    energy_mj: int | None = None      # total since driver load
    processes: tuple = ()             # pids of compute and graphics processes on the device
    failed: tuple = ()                # the guard's reads that raised: "throttle_reasons", "processes", "violation:NAME"

    def as_dict(self) -> dict:
        d = asdict(self)
        d["processes"] = list(self.processes)
        d["throttle_names"] = reason_names(self.throttle_reasons or 0)
        return d


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


class Nvml:
    """One NVML device. `module` is pynvml or a stand-in with the same API."""

    def __init__(self, module=None, handle=None, index: int | None = None):
        if module is None:
            try:
                import pynvml as module
            except ImportError as e:
                raise NvmlUnavailable(f"pynvml is not installed ({e})") from e
        self.N = module
        try:
            self.N.nvmlInit()
        except Exception as e:
            raise NvmlUnavailable(f"nvmlInit failed ({e})") from e
        self._open = True
        try:
            if handle is None:
                handle, index = self._select(index)
        except Exception as e:
            self.close()
            raise NvmlUnavailable(f"no NVML device ({e})") from e
        self.handle, self.index = handle, index

    def _select(self, index: int | None):
        """The device CUDA sees first: CUDA_VISIBLE_DEVICES may name it by index or UUID."""
        N = self.N
        if index is not None:
            return N.nvmlDeviceGetHandleByIndex(index), index
        first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
        if first.startswith(("GPU-", "MIG-")):
            return N.nvmlDeviceGetHandleByUUID(first), None
        if first.isdigit():
            return N.nvmlDeviceGetHandleByIndex(int(first)), int(first)
        return N.nvmlDeviceGetHandleByIndex(0), 0

    def close(self) -> None:
        if self._open:
            self._open = False
            try:
                self.N.nvmlShutdown()
            except Exception:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def device_count(self) -> int | None:
        """The GPUs NVML sees on the host (all of them: CUDA_VISIBLE_DEVICES does not hide any from NVML)."""
        c = self._try(self.N.nvmlDeviceGetCount)
        return None if c is None else int(c)

    def _try(self, fn, *args, default=None):
        try:
            return fn(*args)
        except Exception:
            return default

    def info(self) -> DeviceInfo:
        N, h = self.N, self.handle
        pci = self._try(N.nvmlDeviceGetPciInfo, h)
        limit = self._try(N.nvmlDeviceGetEnforcedPowerLimit, h)
        return DeviceInfo(
            index=self.index,
            name=_s(self._try(N.nvmlDeviceGetName, h, default="?")),
            uuid=_s(u) if (u := self._try(N.nvmlDeviceGetUUID, h)) is not None else None,
            pci_bus_id=_s(getattr(pci, "busId", None)) if pci is not None else None,
            driver=_s(d) if (d := self._try(N.nvmlSystemGetDriverVersion)) is not None else None,
            cuda_driver=self._try(N.nvmlSystemGetCudaDriverVersion),
            max_sm_clock_mhz=self._try(N.nvmlDeviceGetMaxClockInfo, h, N.NVML_CLOCK_SM),
            max_mem_clock_mhz=self._try(N.nvmlDeviceGetMaxClockInfo, h, N.NVML_CLOCK_MEM),
            app_sm_clock_mhz=self._try(N.nvmlDeviceGetApplicationsClock, h, N.NVML_CLOCK_SM),
            app_mem_clock_mhz=self._try(N.nvmlDeviceGetApplicationsClock, h, N.NVML_CLOCK_MEM),
            sm_clock_mhz=self._try(N.nvmlDeviceGetClockInfo, h, N.NVML_CLOCK_SM),
            mem_clock_mhz=self._try(N.nvmlDeviceGetClockInfo, h, N.NVML_CLOCK_MEM),
            power_limit_w=limit / 1000.0 if limit is not None else None,
            persistence_mode=self._try(N.nvmlDeviceGetPersistenceMode, h),
        )

    def _read(self, failed: list, name: str, fn, *args):
        """A read the sample guard judges by: one that raised is named in the snapshot, never read as 'nothing'
        (an empty process list, no clock-event reason)."""
        try:
            return fn(*args)
        except Exception:
            failed.append(name)
            return None

    def _throttle(self, failed: list):
        """The clock-event reasons by either of NVML's names for them: nvml-ml-py has the new one even where the
        driver (before R535) has only the old, and then the new one raises."""
        N, h = self.N, self.handle
        for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            fn = getattr(N, name, None)
            if fn is not None:
                try:
                    return fn(h)
                except Exception:
                    continue
        failed.append("throttle_reasons")
        return None

    def _processes(self, failed: list) -> tuple:
        N, h = self.N, self.handle
        pids = set()
        for fn in (N.nvmlDeviceGetComputeRunningProcesses, N.nvmlDeviceGetGraphicsRunningProcesses):
            got = self._read(failed, "processes", fn, h)
            pids.update(int(p.pid) for p in got or [])
        return tuple(sorted(pids))

    def snapshot(self) -> Snapshot:
        N, h = self.N, self.handle
        failed: list = []
        viol = {}
        for name, policy in VIOLATION_POLICIES.items():
            v = self._read(failed, f"violation:{name}", N.nvmlDeviceGetViolationStatus, h, policy)
            if v is not None:
                viol[name] = int(v.violationTime)
        power = self._try(N.nvmlDeviceGetPowerUsage, h)
        return Snapshot(
            t=time.monotonic(),
            sm_clock_mhz=self._try(N.nvmlDeviceGetClockInfo, h, N.NVML_CLOCK_SM),
            mem_clock_mhz=self._try(N.nvmlDeviceGetClockInfo, h, N.NVML_CLOCK_MEM),
            temperature_c=self._try(N.nvmlDeviceGetTemperature, h, N.NVML_TEMPERATURE_GPU),
            power_w=power / 1000.0 if power is not None else None,
            throttle_reasons=self._throttle(failed),
            violations_ns=viol,
            energy_mj=self._try(N.nvmlDeviceGetTotalEnergyConsumption, h),
            processes=self._processes(failed),
            failed=tuple(dict.fromkeys(failed)),
        )


def open_device(module=None, index: int | None = None) -> Nvml | None:
    """An Nvml for the CUDA device, or None where there is no NVML or no GPU."""
    try:
        return Nvml(module, index=index)
    except NvmlUnavailable:
        return None


def device_name(module=None) -> str | None:
    """The name of the CUDA device (NVML's, as gate.json and noise records hold it), or None without one."""
    dev = open_device(module)
    if dev is None:
        return None
    with dev:
        return dev.info().name


def gpu_state(index: int = 0) -> dict | None:
    """Device, clocks, temperature, power, throttle reasons and energy, or None without NVML or a GPU."""
    dev = open_device(index=index)
    if dev is None:
        return None
    with dev:
        info, snap = dev.info(), dev.snapshot()
    return {
        "name": info.name, "driver": info.driver,
        "sm_clock_mhz": snap.sm_clock_mhz, "mem_clock_mhz": snap.mem_clock_mhz,
        "temperature_c": snap.temperature_c, "power_w": snap.power_w,
        "throttle_reasons": snap.throttle_reasons, "energy_mj": snap.energy_mj,
        "processes": len(snap.processes),
    }
