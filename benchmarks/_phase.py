"""The shared shape of the per-phase asv classes: params target x variant, samples taken
through cuzk.perf (the path `cuzk gate` uses), heavy set-up memoised per process.

Names starting with "_" are not collected by asv, so `_PhaseBench` itself is not a benchmark.
"""
from asv_runner.benchmarks.mark import SkipNotImplemented

from cuzk.perf import sampler, suite, workload


class _PhaseBench:
    area = None                       # a phase name, or "proof"
    params = (suite.TARGETS, suite.variant_names())
    param_names = ["target", "opts"]
    timeout = 900
    unit = "seconds"

    def setup(self, target, opts):
        # raises workload.Unavailable (a NotImplementedError) without a GPU: asv skips
        self.w = workload.get(workload.Spec.parse_target(target, circuit=suite.CIRCUIT, opts=opts)).prepare()
        self.backend = self.w.spec.backend

    def _samples(self):
        s = sampler.sample(self.w, self.area, suite.SAMPLES[self.backend],
                           min_sample_s=suite.MIN_SAMPLE_S[self.backend])
        return s

    def track_time(self, target, opts):
        """Seconds per call: CUDA-event time on a GPU, host time on the CPU reference."""
        return {"samples": self._samples().values, "number": 1}

    def track_peak_device_bytes(self, target, opts):
        if not self.w.device:
            raise SkipNotImplemented("no device memory on the CPU reference")
        self.w.measure(self.area)
        return self.w.peak_device_bytes.get(self.area, 0)

    track_peak_device_bytes.unit = "bytes"
