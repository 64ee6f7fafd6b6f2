"""proof_assembly: time per call (CUDA events on a GPU, host clock on the CPU reference) and peak device memory."""
from ._phase import _FullScaleBench, _MemoryBench, _PhaseBench, _ScaleBench


class ProofAssembly(_PhaseBench):
    area = "proof_assembly"


class ProofAssemblyAtScale(_ScaleBench):
    area = "proof_assembly"


class ProofAssemblyMemory(_MemoryBench):
    area = "proof_assembly"


class ProofAssemblyAtFullScale(_FullScaleBench):
    area = "proof_assembly"
