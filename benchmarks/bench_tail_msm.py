"""tail_msm: time per call (CUDA events on a GPU, host clock on the CPU reference) and peak device memory."""
from ._phase import _FullScaleBench, _MemoryBench, _PhaseBench, _ScaleBench


class TailMsm(_PhaseBench):
    area = "tail_msm"


class TailMsmAtScale(_ScaleBench):
    area = "tail_msm"


class TailMsmMemory(_MemoryBench):
    area = "tail_msm"


class TailMsmAtFullScale(_FullScaleBench):
    area = "tail_msm"
