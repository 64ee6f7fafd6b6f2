"""The shared shape of the per-phase asv classes: params target x variant, samples taken
through cuzk.perf (the path `cuzk gate` uses), heavy set-up memoised per process.

Names starting with "_" are not collected by asv, so `_PhaseBench` itself is not a benchmark.
"""
import time

from cuzk.perf import sampler, suite, workload


def warm_up(w, area: str, seconds: float) -> None:
    """Untimed calls of `area` until `seconds` have passed (one at least): the first calls of a process
    pay for lazy imports, allocator growth and cold caches that its samples should not see."""
    t0 = time.perf_counter()
    w.measure(area)
    while time.perf_counter() - t0 < seconds:
        w.measure(area)


def take_samples(w, area: str, backend: str) -> sampler.SampleSet:
    """The suite's samples of one area in this process: warm-up, then suite.SAMPLES[backend] samples,
    each of as many calls as last suite.MIN_SAMPLE_S[backend] (calibrated on warm calls)."""
    warm_up(w, area, suite.WARMUP_S[backend])
    return sampler.sample(w, area, suite.SAMPLES[backend], min_sample_s=suite.MIN_SAMPLE_S[backend])


class _WorkloadBench:
    """A workload of the suite, set up once per process; params: its targets x the variants that
    can change its area."""
    area = None                       # a phase name, or "proof"
    targets = suite.TARGETS
    param_names = ["target", "opts"]
    timeout = 900
    unit = "seconds"

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.params = (cls.targets, cls.variants())
        # asv's grid is targets x variants; a point whose backend does not read the variant's toggle
        # would measure `default` again, so asv skips it before set-up (recorded as n/a)
        cls.skip_params = [(t, v) for t in cls.targets for v in cls.params[1]
                           if v not in suite.measured_variants(cls.area, t)]

    @classmethod
    def variants(cls):
        return suite.variants_for(cls.area)

    def setup(self, target, opts):
        # raises workload.Unavailable (a NotImplementedError) without a GPU: asv skips
        self.w = workload.get(workload.Spec.parse_target(target, circuit=suite.CIRCUIT, opts=opts)).prepare()
        self.backend = self.w.spec.backend



class _PhaseBench(_WorkloadBench):
    """Time per call of one phase."""

    def _samples(self):
        return take_samples(self.w, self.area, self.backend)

    def track_time(self, target, opts):
        """Seconds per call: CUDA-event time on a GPU, host time on the CPU reference."""
        return {"samples": self._samples().values, "number": 1}


class _ScaleBench(_PhaseBench):
    """Time per call of one phase at PoRep scale (a partition's circuit, its key made on the GPU), in
    what ships and in baseline: each point there costs a GPU keygen."""
    targets = suite.SCALE_TARGETS

    @classmethod
    def variants(cls):
        return suite.SCALE_VARIANTS


class _FullScaleBench(_PhaseBench):
    """Time per call of one phase of a whole partition (suite.FULL_TARGETS), what ships only. One
    set-up a run serves every phase: asv keys a setup_cache by the function that defines it, and every
    `<Phase>AtFullScale` inherits this one, so it runs once and each class reads its phase's samples."""
    targets = suite.FULL_TARGETS
    timeout = 3600

    @classmethod
    def variants(cls):
        return suite.FULL_VARIANTS

    def setup_cache(self):
        from cuzk.perf import full_scale
        return full_scale.partition_samples()

    def setup(self, cache, target, opts):
        if "unavailable" in cache:
            raise NotImplementedError(cache["unavailable"])      # no GPU here: asv skips

    def track_time(self, cache, target, opts):
        """Seconds per call (CUDA events), sampled round-robin with the partition's other phases."""
        from cuzk.perf import full_scale
        return {"samples": cache["samples"][full_scale.key(target, opts)][self.area], "number": 1}


class _MemoryBench(_WorkloadBench):
    """Peak device memory of a phase: GPU targets, the default variant (what ships)."""
    targets = suite.GPU_TARGETS
    unit = "bytes"

    @classmethod
    def variants(cls):
        return suite.MEMORY_VARIANTS

    def track_peak_device_bytes(self, target, opts):
        self.w.measure(self.area)
        if self.area not in self.w.peak_device_bytes:       # not measured: an error, never 0 bytes
            raise RuntimeError(f"{self.area} at {target}: no device memory peak was recorded")
        return self.w.peak_device_bytes[self.area]
