"""prep_msm: time per call (CUDA events on a GPU, host clock on the CPU reference) and peak device memory."""
from ._phase import _FullScaleBench, _MemoryBench, _PhaseBench, _ScaleBench


class PrepMsm(_PhaseBench):
    area = "prep_msm"


class PrepMsmAtScale(_ScaleBench):
    area = "prep_msm"


class PrepMsmMemory(_MemoryBench):
    area = "prep_msm"


class PrepMsmAtFullScale(_FullScaleBench):
    area = "prep_msm"
