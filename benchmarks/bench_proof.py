"""One whole proof (every phase after synthesis): time, energy per proof, peak device memory."""
from asv_runner.benchmarks.mark import SkipNotImplemented

from cuzk.perf import sampler, suite

from ._phase import _MemoryBench, _PhaseBench, _ScaleBench


class Proof(_PhaseBench):
    area = "proof"


class ProofAtScale(_ScaleBench):
    area = "proof"


class ProofDevice(_MemoryBench):
    """Peak device memory and energy per proof, in what ships."""
    area = "proof"

    def track_energy_per_proof(self, target, opts):
        """Joules per proof from the NVML energy counter, over trusted samples only."""
        s = sampler.sample(self.w, "proof", suite.SAMPLES["cuda"])
        if not s.energy_j:
            raise SkipNotImplemented("NVML reports no energy counter on this device")
        return {"samples": s.energy_j, "number": 1}

    track_energy_per_proof.unit = "J"
