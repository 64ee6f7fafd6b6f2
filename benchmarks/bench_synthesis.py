"""Synthesis (host code on every backend): time per call and peak memory (A2's memory story).

Params come from the registry (suite.variants_for: the toggles that touch synthesis and that host
synthesis reads), so a new optimization is measured without editing this file.
"""
from cuzk.perf import suite, workload

from ._phase import take_samples


class Synthesis:
    params = (suite.SYNTHESIS_CIRCUITS, suite.SYNTHESIS_SIZES, suite.measured_variants("synthesis"))
    param_names = ["circuit", "log_size", "opts"]
    timeout = 300
    unit = "seconds"

    def setup(self, circuit, log_size, opts):
        # no key and no backend: peakmem_ must see synthesis, not set-up
        self.w = workload.get(workload.Spec(circuit=circuit, log_size=log_size, opts=opts))

    def track_time(self, circuit, log_size, opts):
        return {"samples": take_samples(self.w, "synthesis", "cpu").values, "number": 1}

    def peakmem_synthesis(self, circuit, log_size, opts):
        self.w.measure("synthesis")


class SynthesisAtScale:
    """Synthesis of a partition at PoRep scale on the GPU backend, as the pipeline runs it: the witness
    on the host, a, b, c assigned on the device (suite.SCALE_TARGETS; no key: synthesis needs none)."""
    params = (suite.SCALE_TARGETS, suite.SCALE_VARIANTS)
    param_names = ["target", "opts"]
    timeout = 900
    unit = "seconds"

    def setup(self, target, opts):
        self.w = workload.get(workload.Spec.parse_target(target, circuit=suite.CIRCUIT, opts=opts))
        if not self.w.device:
            raise NotImplementedError(f"{target} is not a GPU target")
        self.w.ensure_backend()              # no GPU: workload.Unavailable, which asv skips

    def track_time(self, target, opts):
        return {"samples": take_samples(self.w, "synthesis", "cuda").values, "number": 1}
