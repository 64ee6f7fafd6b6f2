"""The seven phases, one module each, as CPU reference implementations.

Names are fixed (timing.PHASES); benchmarks, the gate and reports key on them.
"""
