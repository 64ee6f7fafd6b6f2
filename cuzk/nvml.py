"""GPU state through NVML (nvidia-ml-py, imported as pynvml). Read-only: never changes settings."""
from __future__ import annotations


def gpu_state(index: int = 0) -> dict | None:
    """Clocks, temperature, power, throttle reasons and energy, or None without NVML or a GPU."""
    try:
        import pynvml as N
        N.nvmlInit()
    except Exception:
        return None
    try:
        h = N.nvmlDeviceGetHandleByIndex(index)
        out = {"name": N.nvmlDeviceGetName(h), "driver": N.nvmlSystemGetDriverVersion()}
        reads = {
            "sm_clock_mhz": lambda: N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_SM),
            "mem_clock_mhz": lambda: N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_MEM),
            "temperature_c": lambda: N.nvmlDeviceGetTemperature(h, N.NVML_TEMPERATURE_GPU),
            "power_w": lambda: N.nvmlDeviceGetPowerUsage(h) / 1000.0,
            "throttle_reasons": lambda: N.nvmlDeviceGetCurrentClocksEventReasons(h),
            "energy_mj": lambda: N.nvmlDeviceGetTotalEnergyConsumption(h),
            "processes": lambda: len(N.nvmlDeviceGetComputeRunningProcesses(h)),
        }
        for k, f in reads.items():
            try:
                out[k] = f()
            except Exception:
                out[k] = None
        return out
    except Exception:
        return None
    finally:
        try:
            N.nvmlShutdown()
        except Exception:
            pass
