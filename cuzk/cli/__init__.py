"""The cuzk command line, one module per subcommand (bench, keygen, verify, gate, ablate, history, opts; the
snarkjs commands in snarkjs.py); helpers they share in common.py, the parser and exit codes in main.py."""
from .main import main

__all__ = ["main"]
