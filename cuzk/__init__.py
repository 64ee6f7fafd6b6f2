"""cuzk: a CUDA Groth16 prover over BLS12-381, with a per-phase performance-regression suite."""
__version__ = "0.1.0"
