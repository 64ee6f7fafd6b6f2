"""batch_addition: time per call (CUDA events on a GPU, host clock on the CPU reference) and peak device memory."""
from ._phase import _FullScaleBench, _MemoryBench, _PhaseBench, _ScaleBench


class BatchAddition(_PhaseBench):
    area = "batch_addition"


class BatchAdditionAtScale(_ScaleBench):
    area = "batch_addition"


class BatchAdditionMemory(_MemoryBench):
    area = "batch_addition"


class BatchAdditionAtFullScale(_FullScaleBench):
    area = "batch_addition"
