"""The measuring layer shared by the asv benchmarks (benchmarks/) and `cuzk gate`.

Both take their samples through `workload.Workload` and `sampler.collect`, so asv and the
gate time the same phases the same way; the gate adds interleaving and the statistics.
"""
