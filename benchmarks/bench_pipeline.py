"""A sector proved pipelined at PoRep size (suite.PIPELINE: 10 partitions at 2^27, `cuzk bench --pipeline`):
seconds per proof, the GPU's busy fraction and the wall time, from one run a night shared by the three
(asv setup_cache); every proof of it verified, or there is no figure."""


class PipelineAtFullScale:
    timeout = 3600

    def setup_cache(self):
        from cuzk.perf import full_scale
        return full_scale.pipeline_figures()

    def setup(self, cache):
        if "unavailable" in cache:
            raise NotImplementedError(cache["unavailable"])      # no GPU here: asv skips

    def track_s_per_proof(self, cache):
        return cache["s_per_proof"]
    track_s_per_proof.unit = "seconds"

    def track_gpu_busy_fraction(self, cache):
        return cache["gpu_busy_fraction"]
    track_gpu_busy_fraction.unit = "fraction"

    def track_wall_s(self, cache):
        return cache["wall_s"]
    track_wall_s.unit = "seconds"
