"""ntt_msm_h: time per call (CUDA events on a GPU, host clock on the CPU reference) and peak device memory."""
from ._phase import _FullScaleBench, _MemoryBench, _PhaseBench, _ScaleBench


class NttMsmH(_PhaseBench):
    area = "ntt_msm_h"


class NttMsmHAtScale(_ScaleBench):
    area = "ntt_msm_h"


class NttMsmHMemory(_MemoryBench):
    area = "ntt_msm_h"


class NttMsmHAtFullScale(_FullScaleBench):
    area = "ntt_msm_h"
