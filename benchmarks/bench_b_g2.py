"""b_g2: time per call (CUDA events on a GPU, host clock on the CPU reference) and peak device memory."""
from ._phase import _FullScaleBench, _MemoryBench, _PhaseBench, _ScaleBench


class BG2(_PhaseBench):
    area = "b_g2"


class BG2AtScale(_ScaleBench):
    area = "b_g2"


class BG2Memory(_MemoryBench):
    area = "b_g2"


class BG2AtFullScale(_FullScaleBench):
    area = "b_g2"
