"""One whole proof (every phase after synthesis): time, energy per proof, peak device memory."""
from asv_runner.benchmarks.mark import SkipNotImplemented

from cuzk.perf import sampler, suite

from ._phase import _PhaseBench


class Proof(_PhaseBench):
    area = "proof"

    def track_energy_per_proof(self, target, opts):
        """Joules per proof from the NVML energy counter, over trusted samples only."""
        if not self.w.device:
            raise SkipNotImplemented("no energy counter on the CPU reference")
        s = sampler.sample(self.w, "proof", suite.SAMPLES["cuda"])
        if not s.energy_j:
            raise SkipNotImplemented("NVML reports no energy counter on this device")
        return {"samples": s.energy_j, "number": 1}

    track_energy_per_proof.unit = "J"
