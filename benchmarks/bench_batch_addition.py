"""batch_addition: time per call (CUDA events on a GPU, host clock on the CPU reference) and peak device memory."""
from ._phase import _PhaseBench


class BatchAddition(_PhaseBench):
    area = "batch_addition"
