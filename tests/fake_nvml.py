"""A stand-in for the pynvml module: the same function names, state set by the test."""
from __future__ import annotations

from dataclasses import dataclass

NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0


class NVMLError(Exception):
    pass


@dataclass
class _Proc:
    pid: int


@dataclass
class _Viol:
    referenceTime: int
    violationTime: int


@dataclass
class _Pci:
    busId: bytes


class FakeNvml:
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU

    def __init__(self, **state):
        self.state = {"sm": 1980, "mem": 2619, "temp": 40, "power_mw": 120_000, "throttle": 0x1,
                      "violations": {}, "energy_mj": 1_000_000, "pids": [], "uuids": {"GPU-abc": 3}}
        self.state.update(state)
        self.inits = self.shutdowns = 0
        self.handles = []

    # life cycle
    def nvmlInit(self):
        self.inits += 1

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlDeviceGetHandleByIndex(self, i):
        self.handles.append(("index", i))
        return ("dev", i)

    def nvmlDeviceGetHandleByUUID(self, u):
        if u not in self.state["uuids"]:
            raise NVMLError("not found")
        self.handles.append(("uuid", u))
        return ("dev", self.state["uuids"][u])

    # per-run record
    def nvmlDeviceGetName(self, h):
        return b"Fake H200"

    def nvmlDeviceGetUUID(self, h):
        return "GPU-abc"

    def nvmlDeviceGetPciInfo(self, h):
        return _Pci(b"00000000:1B:00.0")

    def nvmlSystemGetDriverVersion(self):
        return "570.1"

    def nvmlSystemGetCudaDriverVersion(self):
        return 12080

    def nvmlDeviceGetMaxClockInfo(self, h, t):
        return 1980 if t == NVML_CLOCK_SM else 2619

    def nvmlDeviceGetApplicationsClock(self, h, t):
        raise NVMLError("not supported")

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return 700_000

    def nvmlDeviceGetPersistenceMode(self, h):
        return 1

    # per-sample state
    def nvmlDeviceGetClockInfo(self, h, t):
        return self.state["sm"] if t == NVML_CLOCK_SM else self.state["mem"]

    def nvmlDeviceGetTemperature(self, h, s):
        return self.state["temp"]

    def nvmlDeviceGetPowerUsage(self, h):
        return self.state["power_mw"]

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return self.state["throttle"]

    def nvmlDeviceGetViolationStatus(self, h, policy):
        return _Viol(0, self.state["violations"].get(policy, 0))

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        return self.state["energy_mj"]

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [_Proc(p) for p in self.state["pids"]]

    def nvmlDeviceGetGraphicsRunningProcesses(self, h):
        return []
