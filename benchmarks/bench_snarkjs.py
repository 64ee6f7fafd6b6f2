"""`snarkjs groth16 prove` against cuzk on the same .zkey/.wtns files.

The files (a porep_like circuit exported as .r1cs/.wtns, its key from cuzk's test setup written
as a snarkjs .zkey) are made once per size by cuzk.cli.bench_snarkjs.prepare and kept in the key
cache's snarkjs-bench folder: the CPU test setup takes minutes at 2^16 and more. Skipped (setup
raises NotImplementedError) when snarkjs is not installed (`npm ci` in .ci/node).

  SnarkjsProve.time_prove       the snarkjs CLI, one process per proof
  CuzkProve.time_prove_cli      `python -m cuzk prove`, one process per proof (the same work)
  CuzkResident.time_prove       the key loaded once; a/b/c from the witness, then the proof
  Ratio.track_ratio_*           snarkjs time / cuzk time, medians of 3 of each

`cuzk bench-snarkjs --log-sizes 12,14` prints the same comparison as a table.
"""
import tempfile
from pathlib import Path

from cuzk.cli import bench_snarkjs as sb

SIZES = [12, 14, 16, 18]
CIRCUIT = "porep_like"
BACKEND = "auto"
_memo: dict = {}


def _files(log_size: int) -> dict:
    try:
        sb.snarkjs_cmd()
    except sb.ToolMissing as e:
        raise NotImplementedError(f"snarkjs is not available: {e}") from e
    return sb.prepare(CIRCUIT, log_size)


class _Timed:
    """One process (or proof) per sample, seven samples, per size."""
    params = SIZES
    param_names = ["log_size"]
    number = 1
    repeat = (7, 7, 3600.0)
    warmup_time = 0
    timeout = 7200


class _WithFiles(_Timed):
    def setup(self, log_size):
        self.files = _files(log_size)
        self.out = Path(tempfile.mkdtemp(prefix="cuzk-bench-snarkjs-"))


class SnarkjsProve(_WithFiles):
    def time_prove(self, log_size):
        sb.snarkjs_prove(self.files, self.out)


class CuzkProve(_WithFiles):
    def time_prove_cli(self, log_size):
        sb.cuzk_prove_cli(self.files, self.out, BACKEND)


class CuzkResident(_Timed):
    def setup(self, log_size):
        if log_size not in _memo:               # asv re-runs setup before every sample: load once
            _memo[log_size] = sb.Resident(_files(log_size), BACKEND)
            _memo[log_size].prove()             # warm-up
        self.res = _memo[log_size]

    def time_prove(self, log_size):
        self.res.prove()


class Ratio:
    params = SIZES
    param_names = ["log_size"]
    timeout = 7200

    def setup(self, log_size):
        _files(log_size)
        key = ("ratio", log_size)
        if key not in _memo:                    # one comparison serves both tracks
            _memo[key] = sb.run([log_size], CIRCUIT, BACKEND, repeat=3)[0]
        self.row = _memo[key]
        if not self.row["verified"]:            # a proof that does not verify times nothing worth a ratio
            raise RuntimeError(f"2^{log_size}: a proof did not verify (cuzk's by snarkjs or snarkjs's by cuzk)")

    def track_ratio_cli(self, log_size):
        return self.row["ratio_cli"]

    track_ratio_cli.unit = "x"

    def track_ratio_resident(self, log_size):
        return self.row["ratio_resident"]

    track_ratio_resident.unit = "x"
