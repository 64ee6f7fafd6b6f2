"""Synthesis on the CPU: time and peak memory per size and optimization variant.

Params come from the registry (cuzk.opts.variants), so a new optimization is
measured alone without editing this file.
"""
from cuzk import circuits
from cuzk.opts import variants

VARIANTS = variants()


class Synthesis:
    params = (["porep_like", "mulchain"], [12, 16], list(VARIANTS))
    param_names = ["circuit", "log_size", "opts"]
    timeout = 300

    def time_synthesis(self, circuit, log_size, opts):
        circuits.build(circuit, log_size, opts=VARIANTS[opts])

    def peakmem_synthesis(self, circuit, log_size, opts):
        circuits.build(circuit, log_size, opts=VARIANTS[opts])
